//! The stdio transport's side of an operation: the server's one stdout, cut into lines and
//! each read as a message, as noise, or as a line past the cap; what a line written means; and
//! the process's end.
//!
//! Over stdio a leg is one line written to the server's stdin: the leg's request body, its
//! newline included (write it as it is). A notification, an answer to a server request or a
//! cancel notice is over once written ([`Input::Sent`](super::Input::Sent)); a request waits
//! for the line on stdout whose id is its own, under its grant. Lines arrive on one stream for
//! everything ([`Input::Stdout`](super::Input::Stdout)): an answer to a request that already
//! timed out is dropped by its id ([`answers`]), notifications become events, a legacy
//! server's requests are answered, and a line that is not JSON-RPC at all is skipped and
//! reported ([`Event::StdoutNoise`]): the spec forbids such lines, real servers print banners,
//! and skipping keeps them usable while the caller still sees what was skipped. A line past
//! the body cap ends the awaited request
//! ([`Error::AnswerTooLarge`](crate::Error::AnswerTooLarge)) and is skipped to its end with
//! bounded memory.
//!
//! The process itself is a leg too ([`LegKind::Spawn`]): an operation that finds no process
//! running starts one, under a grant from its budget, and a process that exits ends the
//! request awaiting it with [`Error::ServerExited`](crate::Error::ServerExited) (its stderr's
//! last words quoted); the next operation starts it again. A message whose writing did not
//! complete (its grant ran out while the server was not reading, or the caller cancelled) may
//! have left part of a line that no later message can follow: the operation then ends the
//! process at once ([`LegKind::Kill`]) before it hands out its result.
//!
//! [`Stdout`] holds the framer the session lent and hands back, line by line, what the
//! operation must do ([`Heard`]); the legs that are over leave the leg table here. This module
//! never reads a pipe or a clock, and never ends the operation.

use std::collections::VecDeque;
use std::time::Instant;

use super::close::Closing;
use super::failure::Failure;
use super::grant::Grants;
use super::legs::{LegTable, Role};
use super::read::{Heard, keep_for, read_message};
use super::replies::Replies;
use super::timers::Timer;
use super::view::View;
use super::{Event, LegId, LegKind, Outcome, ProcessExit};
use crate::config::SessionConfig;
use crate::jsonrpc::{Incoming, RequestId, ResultAs};
use crate::sse::SseError;
use crate::transport::{Framed, Framer};
use mcp_auth::{QUOTE_LIMIT, clip};

/// What the lines are read against: the operation's other parts, borrowed for one line.
pub(super) struct Lines<'a> {
    /// The server's own messages go there, and their events (and the noise) to `events`.
    pub(super) replies: &'a mut Replies,
    pub(super) events: &'a mut VecDeque<Event>,
    pub(super) config: &'a SessionConfig,
    /// The work leg in flight, if any: the request whose answer a response may be.
    pub(super) legs: &'a LegTable,
    /// Whether the operation has its result: no message matters any more.
    pub(super) finished: bool,
}

/// The server's stdout: the session's framer, with any partial line the last operation left,
/// lent to this operation and handed back when it ends. Over HTTP+SSE, the session's event
/// stream, read the same way (each `message` event is a line) and lent the same way.
#[derive(Debug)]
pub(super) struct Stdout {
    /// The session's framer, with the lines cut and not read yet.
    framer: Framer,
    /// Whether the framer is the session's (it goes back); else a fresh one of this operation.
    lent: bool,
    /// A close of the process: which of its steps is next.
    pub(super) closing: Closing,
}

impl Stdout {
    /// The stdout an operation starts with: the session's `framer` when it lent one, else a
    /// fresh one with lines of at most `cap` bytes.
    pub(super) fn lent(framer: Option<Framer>, cap: usize) -> Self {
        Self {
            lent: framer.is_some(),
            framer: framer.unwrap_or_else(|| Framer::lines(cap)),
            closing: Closing::default(),
        }
    }

    /// Over HTTP+SSE: the operation opens the session's event stream (events of at most
    /// `cap` bytes): nothing of a stream before it carries over, and the framer goes to the
    /// session when the operation ends.
    pub(super) fn reopen(&mut self, cap: usize) {
        self.framer = Framer::events(cap);
        self.lent = true;
    }

    fn reset(&mut self) {
        self.framer.reset();
    }

    /// Whether lines are cut and not read yet (an earlier operation left them: the session's
    /// stream brought them after its result).
    pub(super) fn has_pending(&self) -> bool {
        self.framer.has_pending()
    }

    /// The next bytes the server wrote, as they came (any split): true when they completed a
    /// line, to read with [`Stdout::next`].
    pub(super) fn feed(&mut self, chunk: &[u8]) -> bool {
        self.framer.feed(chunk)
    }

    /// Reads the lines framed, in order, until one the operation must act on: the answer to
    /// the awaited request, or a line past the cap while a request awaits its answer. `None`
    /// once every line is read.
    pub(super) fn next(&mut self, ctx: Lines<'_>) -> Option<Heard> {
        while let Some(item) = self.framer.next() {
            // An operation that has its result acts on nothing more. Over HTTP+SSE what is
            // left is the next operation's (the session's stream goes on); over stdio it is
            // skipped, its noise still reported.
            if ctx.finished && self.framer.keeps_unread() {
                self.framer.put_back(item);
                return None;
            }
            let awaited = ctx.legs.get(Role::Work).and_then(|leg| leg.request_id);
            let line = match item {
                Framed::Line(line) => line,
                Framed::TooLong if awaited.is_some() => {
                    return Some(Heard::Failed(Failure::TooLarge(ctx.config.body_cap())));
                }
                Framed::TooLong => continue,
                Framed::Endpoint(_) | Framed::Broken(_) if ctx.finished => continue,
                // Over HTTP+SSE: where messages go, held to the URL's origin.
                Framed::Endpoint(data) => {
                    let endpoint = crate::transport::resolve_endpoint(ctx.config.url(), &data);
                    return Some(Heard::Endpoint(endpoint));
                }
                // Nothing more can be read from the stream, and every answer comes on it.
                Framed::Broken(SseError::EventTooLarge { .. }) => {
                    return Some(Heard::Failed(Failure::TooLarge(ctx.config.body_cap())));
                }
                Framed::Broken(error) => {
                    return Some(Heard::Failed(Failure::Malformed(format!(
                        "the event stream broke its format: {error}"
                    ))));
                }
            };
            let keep = ctx
                .legs
                .get(Role::Work)
                .map_or(ResultAs::Value, |leg| keep_for(leg.answers));
            let message = match read_message(&line, keep) {
                Ok(Incoming::Neither) | Err(_) => {
                    let line = clip(&String::from_utf8_lossy(&line), QUOTE_LIMIT);
                    ctx.events.push_back(Event::StdoutNoise { line });
                    continue;
                }
                Ok(message) => message,
            };
            if ctx.finished {
                continue;
            }
            // A response: the awaited request's, or one that came too late for its own.
            let answer = ctx.replies.take(message, ctx.config, ctx.events);
            if let (Some(answer), Some(awaited)) = (answer, awaited) {
                if answers(&answer, awaited) {
                    return Some(Heard::Answer(answer));
                }
            }
        }
        None
    }

    /// The leg in `role` was carried out at `now`: its message written (for a spawn: the
    /// process started). A notification, an answer, a notice or a close's step is over then
    /// (a step's wait for the exit begins); a request awaits its answer on stdout.
    pub(super) fn sent(&mut self, role: Role, now: Instant, grants: &mut Grants) -> Heard {
        let Some(leg) = grants.legs.get_mut(role) else {
            return Heard::Over;
        };
        let kind = leg.kind;
        match kind {
            LegKind::Spawn
            | LegKind::Initialized
            | LegKind::Respond
            | LegKind::CancelNotice
            | LegKind::Shutdown
            | LegKind::Terminate => {}
            // A request: its answer comes on stdout. A kill: its end is the exit.
            _ => {
                leg.written = true;
                return Heard::Over;
            }
        }
        let ends_at = grants.end(role).map_or(now, |leg| leg.ends_at());
        match kind {
            LegKind::Spawn => {
                // A fresh process has no partial line.
                self.reset();
                Heard::Started
            }
            LegKind::Initialized => Heard::Accepted,
            // A step of a close: the wait for the exit begins (or goes on, after a SIGTERM).
            LegKind::Shutdown | LegKind::Terminate => {
                if let Some(at) = self.closing.done(kind, now, ends_at) {
                    grants.timers.set(Timer::CloseStep, at);
                }
                Heard::Over
            }
            _ => Heard::Over,
        }
    }

    /// The server process ended (or closed its stdout) as `exit` says: `session` knows it, its
    /// partial line is gone, and the legs in flight were cut off by it. A close (underway, or
    /// a leg that ends the process) is complete; a request awaiting its answer fails with
    /// [`Error::ServerExited`](crate::Error::ServerExited), unless its leg ran out first.
    /// Returns the leg whose grant must still last for that, and what the operation must do.
    pub(super) fn exited(
        &mut self,
        exit: &ProcessExit,
        session: &mut View,
        grants: &mut Grants,
    ) -> (Option<LegId>, Heard) {
        session.process_exited();
        self.reset();
        grants.exited();
        let work = grants.legs.get(Role::Work);
        let ends_process = work.is_some_and(|leg| {
            matches!(
                leg.kind,
                LegKind::Shutdown | LegKind::Terminate | LegKind::Kill
            )
        });
        if self.closing.is_underway() || ends_process {
            // A kill after the result (a half-written message) leaves the result as it was.
            grants.end(Role::Work);
            grants.timers.stop(Timer::CloseStep);
            return (None, Heard::Done(Outcome::Closed));
        }
        let Some(id) = work.map(|leg| leg.id) else {
            return (None, Heard::Over);
        };
        let (status, stderr) = (exit.status, clip(&exit.stderr, QUOTE_LIMIT));
        (Some(id), Heard::Failed(Failure::Exited { status, stderr }))
    }

    /// The operation ended: the framer (and any partial line in it) for the session, when it
    /// was the session's.
    pub(super) fn hand_back(&mut self) -> Option<Framer> {
        if !std::mem::take(&mut self.lent) {
            return None;
        }
        let mut framer = std::mem::replace(&mut self.framer, Framer::lines(0));
        framer.end_of_operation();
        Some(framer)
    }

    /// Over HTTP+SSE: the session's event stream ended (`error`: how, when it broke). The
    /// session knows it (the server's session is gone with it). A hangup is complete; a
    /// request awaiting its answer, or the stream's leg awaiting its endpoint, fails; an
    /// operation between its legs goes on over a new stream (once). Returns the leg whose
    /// grant must still last for that, and what the operation must do.
    pub(super) fn stream_ended(
        &mut self,
        error: Option<&super::TransportError>,
        (session, grants, finished): (&mut View, &mut Grants, bool),
    ) -> (Option<LegId>, Heard) {
        session.close_stream();
        self.reset();
        let work = grants.legs.get(Role::Work).map(|leg| (leg.id, leg.kind));
        if let Some((_, LegKind::Hangup)) = work {
            grants.end(Role::Work);
            return (None, Heard::Done(Outcome::Closed));
        }
        match work {
            _ if finished => (None, Heard::Over),
            // Between two legs (or before the first): the next goes on a new stream.
            None => (None, Heard::StreamLost),
            Some((id, _)) => {
                let how = error.map_or_else(String::new, |e| {
                    format!(" ({})", clip(&e.detail, QUOTE_LIMIT))
                });
                (Some(id), Heard::Failed(Failure::stream_closed(&how)))
            }
        }
    }
}

/// Whether the response `answer` is the one the request with JSON-RPC id `awaited` waits for:
/// it carries that id, or it is an error naming no request (one the server could not read).
pub(super) fn answers(answer: &Incoming, awaited: i64) -> bool {
    let awaited = Some(RequestId::Number(awaited));
    match answer {
        Incoming::Result { id, .. } => *id == awaited,
        Incoming::Error { id, .. } => id.is_none() || *id == awaited,
        _ => false,
    }
}
