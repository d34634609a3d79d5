//! Reading beside the operation's thread: the session's standalone stream, and while it is
//! open every body of the operation, each on a thread of its own feeding one channel.
//!
//! The blocking driver reads one body at a time on the operation's thread. The standalone
//! stream (a `GET` kept open beside the call, on which a server asks for roots, input or a
//! sample while its tool runs) cannot be read that way: the call's answer may wait for the
//! answer to a request that comes only there. So once the operation opens that stream, its
//! bytes (and those of every body read after it) are read by threads that do only that:
//! each reads its body a chunk at a time and hands the chunks to the operation's thread in
//! order, which feeds them to the operation as the one-body path does. The operation's thread
//! still sends every request and decides nothing new.
//!
//! What it must never do: outlive its operation. The stream runs on a lane of its own (its own
//! HTTP client and sockets), armed at its leg's end; when the operation ends, [`Pumps`] is dropped,
//! which shuts down the sockets of that lane and of the operation's lane (a read blocked on
//! either returns at once) and closes the channel (a thread with something to hand over ends).
//! A thread still resolving a name ends with that lookup, which the leg's grant bounds.

use std::io::{self, Read};
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::time::{Duration, Instant};

use mcp_proto::driver::{Input, Leg, LegId, LegStatus, Operation, TransportError};
use mcp_proto::{Clock, MonotonicClock};

use crate::bodies::{Body, CHUNK};
use crate::exchange::{body_error, request_error};
use crate::lanes::{Lane, Shared};
use crate::leg_end::Lane as _;

/// How many chunks a thread may read ahead of the operation.
const AHEAD: usize = 8;
/// The longest the operation's thread waits on the channel before it looks for a cancel.
const SLICE: Duration = Duration::from_millis(10);

/// What a reading thread hands over for its leg (or for the session's HTTP+SSE event stream,
/// which is no leg's: `crate::events`).
pub(crate) enum Heard {
    /// The stream's response head (its body follows).
    Head(http::response::Parts),
    /// The next bytes of a body.
    Chunk(Vec<u8>),
    /// The body ended.
    End,
    /// The request or a read failed.
    Failed(TransportError),
}

/// The threads reading for one operation, and the channel they hand over on.
pub(crate) struct Pumps {
    sender: SyncSender<(Option<LegId>, Heard)>,
    receiver: Receiver<(Option<LegId>, Heard)>,
    /// The operation's lane: shut down when the operation ends, so that no body read on a
    /// thread outlives it.
    work: Arc<Shared>,
    /// The standalone stream's lane, while it is read.
    listen: Option<Arc<Shared>>,
}

impl Pumps {
    /// Pumps for an operation whose lane is `work`.
    pub(crate) fn new(work: Arc<Shared>) -> Self {
        let (sender, receiver) = mpsc::sync_channel(AHEAD);
        Self {
            sender,
            receiver,
            work,
            listen: None,
        }
    }

    /// Sends the standalone stream's `leg` on `lane` (a lane of its own) and reads its body,
    /// both on a thread: its head and its bytes come through [`wait`](Self::wait).
    pub(crate) fn listen(&mut self, mut lane: Lane, leg: Leg) {
        self.listen = Some(Arc::clone(lane.shared()));
        let sender = self.sender.clone();
        let spawned = std::thread::Builder::new()
            .name("mcp-listen".into())
            .spawn(move || {
                let (http, shared, _) = lane.parts();
                shared.begin_leg();
                shared.leg_ends_at(Some(leg.ends_at));
                let id = leg.id;
                match http.send(leg.request, leg.timeout) {
                    Ok(response) => {
                        let (head, body) = response.into_parts();
                        if sender.send((Some(id), Heard::Head(head))).is_ok() {
                            read_to_end(id, body, &sender);
                        }
                    }
                    Err(err) => {
                        let error = request_error(err, shared.connect_failed());
                        let _ = sender.send((Some(id), Heard::Failed(error)));
                    }
                }
                shared.leg_ends_at(None);
            });
        if let Err(err) = spawned {
            let error = TransportError::new(
                mcp_proto::TransportErrorKind::Io,
                format!("the standalone stream's thread could not start: {err}"),
            );
            let _ = self.sender.try_send((Some(leg.id), Heard::Failed(error)));
        }
    }

    /// Where the session's event stream hands its bytes over while this operation runs.
    pub(crate) fn sink(&self) -> SyncSender<(Option<LegId>, Heard)> {
        self.sender.clone()
    }

    /// Reads `body` on a thread of its own: its bytes come through [`wait`](Self::wait).
    pub(crate) fn pump(&mut self, body: Body) {
        let sender = self.sender.clone();
        let Body { id, reader, .. } = body;
        let spawned = std::thread::Builder::new()
            .name("mcp-body".into())
            .spawn(move || read_to_end(id, reader, &sender));
        if let Err(err) = spawned {
            let error = TransportError::new(
                mcp_proto::TransportErrorKind::Io,
                format!("the body's reading thread could not start: {err}"),
            );
            let _ = self.sender.try_send((Some(id), Heard::Failed(error)));
        }
    }

    /// Feeds `op` the next thing a thread hands over, or [`Input::Timeout`] once `until` has
    /// come. Waits in short slices, so that the loop sees a cancel soon.
    pub(crate) fn wait(&self, op: &mut Operation, until: Instant) {
        let clock = MonotonicClock;
        let slice = until.saturating_duration_since(clock.now()).min(SLICE);
        match self.receiver.recv_timeout(slice) {
            Ok((Some(id), heard)) => {
                // What comes for a leg the operation let go is dropped.
                if op.is_in_flight(id) {
                    feed(op, id, heard, clock.now());
                }
            }
            // The session's event stream: whatever runs on the session hears it.
            Ok((None, heard)) => {
                let now = clock.now();
                let _: LegStatus = match heard {
                    Heard::Chunk(bytes) => op.handle_input(Input::Events(&bytes), now),
                    Heard::Failed(error) => {
                        op.handle_input(Input::EventsEnded { error: Some(error) }, now)
                    }
                    Heard::End | Heard::Head(_) => {
                        op.handle_input(Input::EventsEnded { error: None }, now)
                    }
                };
            }
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {
                let now = clock.now();
                if now >= until {
                    op.handle_input(Input::Timeout, now);
                }
            }
        }
    }
}

impl Drop for Pumps {
    /// The operation is over: every socket a thread may be blocked on is shut down (the
    /// operation's lane loses its idle connections with them), and the channel closes.
    fn drop(&mut self) {
        self.work.shut_down_sockets();
        if let Some(listen) = &self.listen {
            listen.shut_down_sockets();
        }
    }
}

/// Feeds one handed-over thing of leg `id` to `op`.
fn feed(op: &mut Operation, id: LegId, heard: Heard, now: Instant) {
    let _: LegStatus = match heard {
        Heard::Head(head) => op.handle_input(Input::head(id, &head), now),
        Heard::Chunk(bytes) => op.handle_input(
            Input::Chunk {
                leg: id,
                bytes: &bytes,
            },
            now,
        ),
        Heard::End => op.handle_input(Input::End { leg: id }, now),
        Heard::Failed(error) => op.handle_input(Input::Failed { leg: id, error }, now),
    };
}

/// Reads `reader` to its end (or its failure), handing each chunk over; stops when no one
/// takes what it hands over any more.
fn read_to_end(id: LegId, reader: impl Read, sender: &SyncSender<(Option<LegId>, Heard)>) {
    read_chunks(reader, |heard| sender.send((Some(id), heard)).is_ok());
}

/// Reads `reader` a chunk at a time, handing each over (`hand_over` false: no one takes it
/// any more, stop), then its end or failure. The one reading loop of the threads that read
/// beside an operation (its bodies, the session's HTTP+SSE stream).
pub(crate) fn read_chunks(mut reader: impl Read, mut hand_over: impl FnMut(Heard) -> bool) {
    let mut buf = vec![0; CHUNK];
    loop {
        let heard = match reader.read(&mut buf) {
            Ok(0) => Heard::End,
            Ok(n) => Heard::Chunk(buf[..n].to_vec()),
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => Heard::Failed(body_error(err)),
        };
        let last = !matches!(heard, Heard::Chunk(_));
        if !hand_over(heard) || last {
            return;
        }
    }
}
