//! The blocking driver's one loop: the loop of [`mcp_proto::driver`]'s module docs, the same
//! for every operation, HTTP and stdio alike, and the same shape as the tokio driver's.
//!
//! [`Driver::drive`] polls the operation and does what each output says: an update goes to
//! the session, an event and a leg's report to the caller's observer, the server's request to
//! the caller's responder (here, between polls: never inside one), a leg to the transport
//! ([`Wire::transmit`]), the person's step to the caller's authorizer, a wait to the transport
//! again ([`Wire::wait`]: read what comes, or sleep to the instant). What differs between HTTP
//! and stdio is only how bytes move ([`HttpWire`](crate::leg::HttpWire),
//! [`StdioWire`](crate::stdio::StdioWire)). Nothing here decides anything.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use mcp_driver_common::shell::SessionSignal;
use mcp_proto::driver::Authorize;
use mcp_proto::driver::{Input, Leg, Operation, Output};
use mcp_proto::{Clock, Error, MonotonicClock, Observer, Outcome, Session};

use crate::lanes::Shared;
use crate::trace;
use mcp_driver_common::LegSpans;

/// The caller's authorizer, shared by the operations of a client (one person's step at a
/// time).
pub(crate) type SharedAuthorizer = std::sync::Arc<Mutex<Box<dyn crate::Authorizer>>>;

/// The signal the operations waiting for the session wait on: a condition variable that
/// counts its waiters, so that the end of every operation (which wakes them) costs no system
/// call when none waits, which is nearly always.
#[derive(Debug, Default)]
pub(crate) struct SessionChanged {
    changed: Condvar,
    /// How many operations wait: counted under the session's lock, before the wait releases it.
    waiting: AtomicUsize,
}

impl SessionChanged {
    /// Waits (releasing `session`) until woken or `timeout` has passed. A change made after
    /// this call took the lock and before it waits is not missed: the waker reads the count
    /// after its own change, which the lock orders after this count.
    fn wait_timeout<'a>(
        &self,
        session: MutexGuard<'a, Session>,
        timeout: Duration,
    ) -> MutexGuard<'a, Session> {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let session = self
            .changed
            .wait_timeout(session, timeout)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        session
    }
}

impl SessionSignal for SessionChanged {
    fn notify_all(&self) {
        if self.waiting.load(Ordering::SeqCst) > 0 {
            self.changed.notify_all();
        }
    }
}

/// How long the wait for the authorizer's answer goes before it looks for a cancel again.
const AUTHORIZER_SLICE: Duration = Duration::from_millis(20);

/// How bytes move for an operation: its legs on the wire, and what comes back.
pub(crate) trait Wire {
    /// Carries `leg` out and feeds what it brings at once: over HTTP the request and its
    /// head, over stdio its line written (or its step of the process's life done). A cancel
    /// cuts it short; the loop passes the cancel on.
    fn transmit(&mut self, op: &mut Operation, leg: Leg);

    /// Nothing to send: feeds the next thing that comes (a chunk of the body being read, the
    /// server's stdout, its exit), or gives [`Input::Timeout`] once `until` has come. A cancel
    /// cuts it short.
    fn wait(&mut self, op: &mut Operation, until: Instant);
}

/// Runs one operation: what it needs from the client, borrowed for its duration.
pub(crate) struct Driver<'a> {
    pub(crate) shared: &'a Shared,
    /// The session, and its other operations' news.
    pub(crate) client: &'a crate::ClientShared,
    pub(crate) observer: &'a mut dyn Observer,
    /// The caller's authorizer, for the step of an authorization that needs a person.
    pub(crate) authorizer: Option<SharedAuthorizer>,
    /// The operation's span (feature `tracing`), parent of each leg's.
    pub(crate) span: trace::Span,
}

impl Driver<'_> {
    /// Drives `op` to its end over `wire` and returns its result.
    pub(crate) fn drive(
        &mut self,
        op: &mut Operation,
        wire: &mut impl Wire,
    ) -> Result<Outcome, Error> {
        let clock = MonotonicClock;
        let mut spans = LegSpans::default();
        // What the operation handed out while it was given its session (under the lock).
        let mut next = None;
        loop {
            if self.shared.is_cancelled() && !op.is_finished() {
                op.handle_input(Input::Cancel, clock.now());
                self.shared.settle();
            }
            let output = next.take().unwrap_or_else(|| op.poll_output(clock.now()));
            match output {
                Output::Update(update) => self.client.shell.apply(update),
                Output::Event(event) => self.observer.event(&event),
                // The responder runs first, then the clock is read.
                Output::Request(request) => {
                    op.handle_input(request.reply_from(op.session_config()), clock.now());
                }
                Output::LegEnded(report) => spans.ended(&report, self.observer),
                Output::Transmit(leg) => {
                    spans.sent(&leg, &self.span);
                    wire.transmit(op, leg);
                }
                Output::Authorize(step) => self.authorize(op, &step),
                Output::AwaitSession(_) => next = self.await_session(op),
                Output::Wait(until) => wire.wait(op, until),
                Output::Done(result) => {
                    trace::ended(&self.span, &result);
                    return result;
                }
            }
        }
    }

    /// Waits for the session another operation establishes: hands `op` the session, and
    /// while it still awaits it, waits (under the session's lock, so no change is missed)
    /// until the session changes, the operation is cancelled, or the instant it names (its
    /// budget's end). Returns what the operation handed out once it stopped waiting.
    fn await_session(&mut self, op: &mut Operation) -> Option<Output> {
        let mut session = self.client.shell.session();
        loop {
            let now = MonotonicClock.now();
            op.handle_input(Input::Session(&mut session), now);
            let until = match op.poll_output(now) {
                Output::AwaitSession(until) => until,
                Output::Update(update) => {
                    session.apply(update);
                    self.client.shell.changed().notify_all();
                    continue;
                }
                output => return Some(output),
            };
            if self.shared.is_cancelled() {
                return None;
            }
            if now >= until {
                drop(session);
                op.handle_input(Input::Timeout, now);
                return None;
            }
            session = self
                .client
                .shell
                .changed()
                .wait_timeout(session, until - now);
        }
    }

    /// Hands the person's step to the caller's authorizer and feeds back its redirect; without
    /// an authorizer (or when it fails) the operation is told at once. The authorizer runs on
    /// a thread of its own, so that the step's end (the operation's timer) and a cancel bound
    /// it whatever it does: one that never returns is left to finish on its own, its answer
    /// dropped.
    fn authorize(&mut self, op: &mut Operation, step: &Authorize) {
        let Some(authorizer) = self.authorizer.clone() else {
            trace::authorized(&self.span, None);
            op.handle_input(Input::NoAuthorizer, MonotonicClock.now());
            return;
        };
        let (answer, answered) = std::sync::mpsc::channel();
        let asked = step.clone();
        std::thread::spawn(move || {
            let redirect = authorizer
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .authorize(&asked);
            let _ = answer.send(redirect);
        });
        loop {
            let now = MonotonicClock.now();
            if now >= step.ends_at {
                trace::authorized(&self.span, Some(false));
                op.handle_input(Input::Timeout, now);
                return;
            }
            if self.shared.is_cancelled() {
                // The loop passes the cancel on.
                return;
            }
            match answered.recv_timeout((step.ends_at - now).min(AUTHORIZER_SLICE)) {
                Ok(redirect) => {
                    trace::authorized(&self.span, Some(redirect.is_ok()));
                    match redirect {
                        Ok(url) => {
                            op.handle_input(Input::Redirect(&url), MonotonicClock.now());
                        }
                        Err(detail) => {
                            op.handle_input(Input::AuthorizerFailed(&detail), MonotonicClock.now());
                        }
                    }
                    return;
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    // The authorizer panicked: the caller's code failed.
                    let failed = "the authorizer panicked";
                    op.handle_input(Input::AuthorizerFailed(failed), MonotonicClock.now());
                    return;
                }
            }
        }
    }
}
