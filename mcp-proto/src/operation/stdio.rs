//! The stdio transport's side of an operation: the server's one stdout, cut into lines, each
//! read as a message, as noise, or as a line past the cap.
//!
//! Over stdio a leg is one line written to the server's stdin: the leg's request body, its
//! newline included (write it as it is). A notification, an answer to a server request or a
//! cancel notice is over once written ([`Input::Sent`](super::Input::Sent)); a request waits
//! for the line on stdout whose id is its own, under its grant. Lines arrive on one stream for
//! everything ([`Input::Stdout`](super::Input::Stdout)): [`Stdout`] frames them and hands each
//! back as a [`Line`]. The operation routes them: an answer to a request that already timed
//! out is dropped by its id ([`answers`]), notifications become events, a legacy server's
//! requests are answered, and a line that is not JSON-RPC at all is skipped and reported
//! ([`Event::StdoutNoise`](super::Event::StdoutNoise)): the spec forbids such lines, real
//! servers print banners, and skipping keeps them usable while the caller still sees what was
//! skipped. A line past the body cap ends the awaited request
//! ([`Error::AnswerTooLarge`](crate::Error::AnswerTooLarge)) and is skipped to its end with
//! bounded memory.
//!
//! The process itself is a leg too ([`LegKind::Spawn`](super::LegKind::Spawn)): an operation
//! that finds no process running starts one, under a grant from its budget, and a process that
//! exits ends the request awaiting it with [`Error::ServerExited`](crate::Error::ServerExited)
//! (its stderr's last words quoted); the next operation starts it again. A message whose
//! writing did not complete (its grant ran out while the server was not reading, or the caller
//! cancelled) may have left part of a line that no later message can follow: the operation
//! then ends the process at once ([`LegKind::Kill`](super::LegKind::Kill)) before it hands out
//! its result. This module never reads a pipe or a clock, and decides nothing about the
//! operation: it frames and classifies.

use super::read::decode;
use crate::jsonrpc::{self, Incoming, RequestId};
use crate::transport::{Framed, LineFramer};
use mcp_auth::{QUOTE_LIMIT, clip};

/// One line the server wrote on its stdout.
#[derive(Debug)]
pub(super) enum Line {
    /// A JSON-RPC message: a request, a notification or a response.
    Message(Incoming),
    /// Not JSON-RPC at all (clipped): skipped, and reported.
    Noise(String),
    /// A line past the body cap, skipped to its end.
    TooLong,
}

/// The server's stdout: the session's framer, with any partial line the last operation left,
/// lent to this operation and handed back when it ends.
#[derive(Debug)]
pub(super) struct Stdout {
    framer: LineFramer,
    /// Whether the framer is the session's (it goes back); else a fresh one of this operation.
    lent: bool,
}

impl Stdout {
    /// The stdout an operation starts with: the session's `framer` when it lent one, else a
    /// fresh one with lines of at most `cap` bytes.
    pub(super) fn lent(framer: Option<LineFramer>, cap: usize) -> Self {
        Self {
            lent: framer.is_some(),
            framer: framer.unwrap_or_else(|| LineFramer::new(cap)),
        }
    }

    /// The next bytes the server wrote, as they came (any split): the lines they completed,
    /// in order.
    pub(super) fn feed(&mut self, chunk: &[u8]) -> Vec<Line> {
        let mut framed = Vec::new();
        self.framer.feed(chunk, &mut framed);
        framed
            .into_iter()
            .map(|item| match item {
                Framed::Line(line) => match decode(&line).map(jsonrpc::classify) {
                    Ok(Incoming::Neither) | Err(_) => {
                        Line::Noise(clip(&String::from_utf8_lossy(&line), QUOTE_LIMIT))
                    }
                    Ok(message) => Line::Message(message),
                },
                Framed::TooLong => Line::TooLong,
            })
            .collect()
    }

    /// The process started or exited: a partial line it left is gone with it.
    pub(super) fn restart(&mut self) {
        self.framer.reset();
    }

    /// The operation ended: the framer (and any partial line in it) for the session, when it
    /// was the session's.
    pub(super) fn hand_back(&mut self) -> Option<LineFramer> {
        std::mem::take(&mut self.lent)
            .then(|| std::mem::replace(&mut self.framer, LineFramer::new(0)))
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
