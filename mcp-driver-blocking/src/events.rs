//! An HTTP+SSE session's event stream, kept by the client between operations ([`EventStream`]):
//! the body of the GET that opened it, read by a thread of its own that hands each chunk to
//! the operation that runs on the session (through its [`Pumps`](crate::pump::Pumps)' channel),
//! and holds the next one while none runs.
//!
//! The state machine decides when a stream is opened, what its bytes mean and when it is
//! dropped (a hangup, the session's word that it is gone); this module only reads and hands
//! over. What it must never do: outlive the client, or hand a chunk over twice. Dropping an
//! [`EventStream`] shuts its connection down (a blocked read returns at once) and lets its
//! thread end.

use std::io::{self, Read};
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use mcp_proto::driver::LegId;

use crate::lanes::Shared;
use crate::leg_end::Lane as _;
use crate::pump::{Heard, read_chunks};

/// Where the stream's thread hands its chunks: the running operation's channel (`None` is the
/// session's stream in it, no leg's).
type Sink = SyncSender<(Option<LegId>, Heard)>;

/// The session's event stream, read on a thread of its own.
pub(crate) struct EventStream {
    link: Arc<Link>,
    /// The lane whose socket carries the stream: shut down when the stream is dropped.
    lane: Arc<Shared>,
}

#[derive(Default)]
struct Link {
    state: Mutex<LinkState>,
    /// Signalled when a sink is attached or the stream is dropped.
    changed: Condvar,
}

#[derive(Default)]
struct LinkState {
    /// The running operation's sink, and the number of the attach that put it there.
    sink: Option<(u64, Sink)>,
    attached: u64,
    dropped: bool,
}

impl EventStream {
    /// Reads `body` (the GET's, on `lane`) on a thread of its own from now on.
    pub(crate) fn read(body: impl Read + Send + 'static, lane: Arc<Shared>) -> io::Result<Self> {
        let link = Arc::new(Link::default());
        let reading = Arc::clone(&link);
        std::thread::Builder::new()
            .name("mcp-sse".into())
            .spawn(move || read(body, &reading))?;
        Ok(Self { link, lane })
    }

    /// Hands the stream's chunks to `sink` (the operation that now runs), from the next one
    /// on (one held while no operation ran included).
    pub(crate) fn attach(&self, sink: Sink) {
        let mut state = self.link.lock();
        state.attached += 1;
        state.sink = Some((state.attached, sink));
        self.link.changed.notify_all();
    }
}

impl Drop for EventStream {
    fn drop(&mut self) {
        let mut state = self.link.lock();
        state.dropped = true;
        state.sink = None;
        self.link.changed.notify_all();
        drop(state);
        self.lane.shut_down_sockets();
    }
}

impl Link {
    fn lock(&self) -> std::sync::MutexGuard<'_, LinkState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands `heard` to the running operation, waiting while none runs; false once the stream
    /// was dropped.
    fn hand_over(&self, mut heard: Heard) -> bool {
        let mut state = self.lock();
        loop {
            if state.dropped {
                return false;
            }
            let Some((attached, sink)) = state.sink.clone() else {
                state = self
                    .changed
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
                continue;
            };
            drop(state);
            match sink.send((None, heard)) {
                Ok(()) => return true,
                // That operation is over: the chunk waits for the next one.
                Err(returned) => {
                    heard = returned.0.1;
                    state = self.lock();
                    if state.sink.as_ref().is_some_and(|(n, _)| *n == attached) {
                        state.sink = None;
                    }
                }
            }
        }
    }
}

/// The stream's thread: each chunk handed over in order; its end or failure last.
fn read(body: impl Read, link: &Link) {
    read_chunks(body, |heard| link.hand_over(heard));
}
