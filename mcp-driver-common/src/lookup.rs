//! Name lookups a leg can walk away from, and the bound on the ones it walked away from.
//!
//! The system resolver (`getaddrinfo`) cannot be cancelled: when a DNS server does not answer,
//! a lookup returns only when the resolver gives up (glibc: `timeout x attempts`, 5 s x 2 by
//! default). A lookup on tokio's blocking pool therefore holds the runtime's shutdown (and with
//! it a `#[tokio::main]` or `mcp-call`) until then, long after the leg that asked for it ended.
//!
//! Here each lookup runs on a plain, detached [`std::thread`] that nothing joins: the caller
//! waits for its answer ([`Lookup`] is a `Future`, and [`Lookup::wait_until`] waits with a
//! deadline on the caller's thread) and may stop waiting at any time (drop it); the thread
//! ends when the resolver returns and its answer goes nowhere. A process exits without waiting
//! for it.
//!
//! # What bounds the abandoned lookups
//! * Lookups of the same name in flight at once share one thread (the name compared without
//!   case): a burst of connections to one server costs one thread, however long its DNS server
//!   stays silent.
//! * At most [`MAX_LOOKUPS`] names are looked up at once in the whole process. A lookup of
//!   another name past that is refused at once with [`LookupsBusy`] (an [`io::Error`] of kind
//!   [`io::ErrorKind::ResourceBusy`] wrapping it), which the driver reports as a server that
//!   could not be reached: reaching the cap means that many lookups are already waiting on a
//!   DNS server that does not answer, so one more would only wait too.
//!
//! The caller must bound its wait itself (a leg's grant): nothing here times out.

use std::fmt;
use std::future::Future;
use std::io;
use std::net::{IpAddr, ToSocketAddrs};
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

/// The most names looked up at once in the process (threads blocked in the system resolver,
/// whether a leg still waits for them or not).
pub const MAX_LOOKUPS: usize = 16;

/// The names being looked up now, each with the answer its thread will leave.
static IN_FLIGHT: Mutex<Vec<(String, Arc<Slot>)>> = Mutex::new(Vec::new());

/// Why a lookup was not started: [`MAX_LOOKUPS`] other names are being looked up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LookupsBusy;

impl fmt::Display for LookupsBusy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{MAX_LOOKUPS} name lookups are already in progress in this process, each waiting for a DNS server that has not answered, so this one was not started"
        )
    }
}

impl std::error::Error for LookupsBusy {}

/// What a lookup's thread leaves: the addresses, or the resolver's error (kind and words,
/// rebuilt for each waiter).
type Answer = Result<Arc<[IpAddr]>, (io::ErrorKind, String)>;

#[derive(Default)]
struct Slot {
    state: Mutex<State>,
    done: Condvar,
}

#[derive(Default)]
struct State {
    answer: Option<Answer>,
    wakers: Vec<Waker>,
}

/// A lookup in flight: a `Future` of its addresses (with port 0), or [`wait_until`](Self::wait_until)
/// from a blocking thread. Dropping it abandons the lookup (its thread runs on to the
/// resolver's answer, then ends).
pub struct Lookup(Arc<Slot>);

impl fmt::Debug for Lookup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Lookup")
    }
}

/// Starts looking up `host` (a name, not an address: the caller uses an address as it is),
/// or joins the lookup of the same name already in flight.
///
/// # Errors
/// [`LookupsBusy`] (as an [`io::Error`] of kind `ResourceBusy`) when [`MAX_LOOKUPS`] other
/// names are in flight; the operating system's error when no thread can be started.
pub fn lookup(host: &str) -> io::Result<Lookup> {
    let mut in_flight = IN_FLIGHT.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, slot)) = in_flight
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(host))
    {
        return Ok(Lookup(Arc::clone(slot)));
    }
    if in_flight.len() >= MAX_LOOKUPS {
        return Err(io::Error::new(io::ErrorKind::ResourceBusy, LookupsBusy));
    }
    let slot = Arc::new(Slot::default());
    let (name, theirs) = (host.to_owned(), Arc::clone(&slot));
    std::thread::Builder::new()
        .name("mcp-lookup".to_owned())
        .spawn(move || resolve(&name, &theirs))?;
    in_flight.push((host.to_owned(), Arc::clone(&slot)));
    Ok(Lookup(slot))
}

/// The lookup's thread: asks the resolver, takes the name off the list, leaves the answer and
/// wakes whoever still waits.
fn resolve(host: &str, slot: &Arc<Slot>) {
    let answer = (host, 0)
        .to_socket_addrs()
        .map(|addrs| addrs.map(|addr| addr.ip()).collect::<Arc<[IpAddr]>>())
        .map_err(|err| (err.kind(), err.to_string()));
    IN_FLIGHT
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .retain(|(_, other)| !Arc::ptr_eq(other, slot));
    let wakers = {
        let mut state = slot.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.answer = Some(answer);
        std::mem::take(&mut state.wakers)
    };
    slot.done.notify_all();
    wakers.into_iter().for_each(Waker::wake);
}

fn rebuilt(answer: &Answer) -> io::Result<Vec<IpAddr>> {
    match answer {
        Ok(addrs) => Ok(addrs.to_vec()),
        Err((kind, words)) => Err(io::Error::new(*kind, words.clone())),
    }
}

impl Lookup {
    /// Waits on this thread for the answer until `deadline`; `None` when it did not come by
    /// then (the lookup goes on without a waiter: drop this to abandon it).
    pub fn wait_until(&self, deadline: Instant) -> Option<io::Result<Vec<IpAddr>>> {
        let mut state = self.0.state.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(answer) = &state.answer {
                return Some(rebuilt(answer));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            state = self
                .0
                .done
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

impl Future for Lookup {
    type Output = io::Result<Vec<IpAddr>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.0.state.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(answer) = &state.answer {
            return Poll::Ready(rebuilt(answer));
        }
        if !state.wakers.iter().any(|w| w.will_wake(cx.waker())) {
            state.wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }
}

/// How many names are being looked up now (threads in the resolver, waited for or not).
pub fn in_flight() -> usize {
    IN_FLIGHT
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// The list is the process's: the test that fills it to the cap runs alone.
    static SERIAL: Mutex<()> = Mutex::new(());

    #[test]
    fn a_name_is_looked_up_on_a_thread_and_waited_for_with_a_deadline() {
        let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
        let found = lookup("localhost")
            .unwrap()
            .wait_until(Instant::now() + Duration::from_secs(30))
            .expect("localhost within 30 s")
            .unwrap();
        assert!(!found.is_empty() && found.iter().all(IpAddr::is_loopback));
    }

    #[test]
    fn a_deadline_already_past_returns_without_waiting() {
        let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
        let pending = lookup("localhost").unwrap();
        let started = Instant::now();
        // Either the answer was already in, or none: never a wait.
        let _ = pending.wait_until(Instant::now() - Duration::from_millis(1));
        assert!(started.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn the_cap_refuses_new_names_but_joins_a_name_in_flight() {
        let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
        // A lookup an earlier test left running (`localhost`, not waited for) leaves the list
        // when its thread answers: had it been counted into the cap below, its leaving would
        // make room for the name that must be refused (a loaded machine's CI run saw it).
        let until = Instant::now() + Duration::from_secs(30);
        while !IN_FLIGHT.lock().unwrap().is_empty() {
            assert!(Instant::now() < until, "an earlier lookup never answered");
            std::thread::sleep(Duration::from_millis(5));
        }
        // Fill the list by hand with slots no thread will answer, then look past the cap.
        let mut ours = Vec::new();
        {
            let mut in_flight = IN_FLIGHT.lock().unwrap();
            while in_flight.len() < MAX_LOOKUPS {
                let slot = Arc::new(Slot::default());
                let name = format!("stuck-{}.invalid", in_flight.len());
                in_flight.push((name, Arc::clone(&slot)));
                ours.push(slot);
            }
        }
        let err = lookup("another.invalid").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::ResourceBusy);
        assert!(err.get_ref().is_some_and(|e| e.is::<LookupsBusy>()));
        assert!(err.to_string().contains("16 name lookups"), "{err}");
        // A name already in flight is joined, not refused, and gets its answer.
        let name = IN_FLIGHT.lock().unwrap().last().unwrap().0.to_uppercase();
        let joined = lookup(&name).unwrap();
        let slot = Arc::clone(ours.last().unwrap());
        resolve_with(&slot, Ok(Arc::from([IpAddr::from([127, 0, 0, 9])])));
        assert_eq!(
            joined
                .wait_until(Instant::now() + Duration::from_secs(5))
                .unwrap()
                .unwrap(),
            [IpAddr::from([127, 0, 0, 9])]
        );
        for slot in &ours {
            resolve_with(slot, Err((io::ErrorKind::Other, "gone".to_owned())));
        }
    }

    /// What the thread does once the resolver answered.
    fn resolve_with(slot: &Arc<Slot>, answer: Answer) {
        IN_FLIGHT
            .lock()
            .unwrap()
            .retain(|(_, other)| !Arc::ptr_eq(other, slot));
        slot.state.lock().unwrap().answer = Some(answer);
        slot.done.notify_all();
    }
}
