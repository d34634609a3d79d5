//! The stdio transport's side of an operation: the process as a leg, one shared stdout cut
//! into lines and matched to requests by id, and the process's end.
//!
//! Over stdio a leg is one line written to the server's stdin: the leg's request body, its
//! newline included (write it as it is). A notification, an answer to a
//! server request or a cancel notice is over once written ([`Operation::handle_sent`]); a
//! request waits for the line on stdout whose id is its own, under its grant. Lines arrive on
//! one stream for everything ([`Operation::handle_stdout`]): an answer to a request that
//! already timed out is dropped by its id, notifications become events, a legacy server's
//! requests are answered, and a line that is not JSON-RPC at all is skipped and reported
//! ([`Event::StdoutNoise`]): the spec forbids such lines, real servers print banners, and
//! skipping keeps them usable while the caller still sees what was skipped. A line past the
//! body cap ends the awaited request ([`Error::AnswerTooLarge`]) and is skipped to its end
//! with bounded memory.
//!
//! The process itself is a leg too ([`LegKind::Spawn`]): an operation that finds no process
//! running starts one, under a grant from its budget, and a process that exits ends the
//! request awaiting it with [`Error::ServerExited`] (its stderr's last words quoted); the next
//! operation starts it again. A message whose writing did not complete (its grant ran out
//! while the server was not reading, or the caller cancelled) may have left part of a line
//! that no later message can follow: the operation then ends the process at once
//! ([`LegKind::Kill`]) before it hands out its result. This module never reads a pipe or a
//! clock.

use std::time::Instant;

use super::failure::Failure;
use super::legs::Role;
use super::read::decode;
use super::{Event, LegId, LegKind, Operation, ProcessExit};
use crate::jsonrpc::{self, Incoming, RequestId};
use crate::transport::Framed;
use mcp_auth::{QUOTE_LIMIT, clip};

impl Operation {
    /// Over stdio: the message of leg `id` was written to the server's stdin (for a
    /// [`LegKind::Spawn`] leg: the process started). A notification or an answer is over
    /// then; a request now awaits its answer on stdout.
    pub(super) fn handle_sent(&mut self, id: LegId, now: Instant) {
        let Some(role) = self.in_time(id, now) else {
            return;
        };
        let Some(kind) = self.grants.legs.get(role).map(|leg| leg.kind) else {
            return;
        };
        match kind {
            LegKind::Spawn => {
                self.grants.end(role);
                self.session.process_started();
                self.next = super::work_or_handshake(self.era.modern(), &self.session);
            }
            LegKind::Initialized => {
                self.grants.end(role);
                self.handshake_confirmed();
            }
            LegKind::Respond | LegKind::CancelNotice => {
                self.grants.end(role);
            }
            // A step of a close: the wait for the exit begins (or goes on, after a SIGTERM).
            LegKind::Shutdown | LegKind::Terminate => {
                let ends_at = self.grants.end(role).map_or(now, |leg| leg.ends_at);
                if let Some(at) = self.closing.done(kind, now, ends_at) {
                    self.grants.timers.set(super::timers::Timer::CloseStep, at);
                }
            }
            // A request: its answer comes on stdout. A kill: its end is the exit.
            _ => {
                if let Some(leg) = self.grants.legs.get_mut(role) {
                    leg.written = true;
                }
            }
        }
    }

    /// Over stdio: the next bytes the server wrote on its stdout, as they came (any split).
    /// Feed them whenever they arrive, also while no leg awaits an answer.
    pub(super) fn handle_stdout(&mut self, chunk: &[u8], now: Instant) {
        let mut framed = Vec::new();
        self.session.framer().feed(chunk, &mut framed);
        for item in framed {
            // A leg whose grant has ended by now times out before any line is read for it.
            if let Some(id) = self.grants.legs.get(Role::Work).map(|leg| leg.id) {
                let _ = self.in_time(id, now);
            }
            match item {
                Framed::Line(line) => self.stdio_line(&line),
                Framed::TooLong => self.stdio_line_too_long(),
            }
        }
    }

    /// Over stdio: the server process ended (or closed its stdout). A request awaiting its
    /// answer fails with [`Error::ServerExited`]; a shutdown is complete.
    pub(super) fn handle_exit(&mut self, exit: &ProcessExit, now: Instant) {
        self.session.process_exited();
        self.grants.exited();
        let work = self.grants.legs.get(Role::Work);
        let kind = work.map(|leg| leg.kind);
        if self.closing.is_underway()
            || matches!(
                kind,
                Some(LegKind::Shutdown | LegKind::Terminate | LegKind::Kill)
            )
        {
            // A kill after the result (a half-written message) leaves the result as it was.
            self.grants.end(Role::Work);
            self.grants.timers.stop(super::timers::Timer::CloseStep);
            self.finish(Ok(super::Outcome::Closed));
            return;
        }
        let Some(leg) = work else {
            return;
        };
        let (id, method) = (leg.id, leg.answers.request_name());
        if self.in_time(id, now).is_none() {
            return;
        }
        let (status, stderr) = (exit.status, clip(&exit.stderr, QUOTE_LIMIT));
        self.fail(method, Failure::Exited { status, stderr });
    }

    fn stdio_line(&mut self, line: &[u8]) {
        let message = match decode(line).map(jsonrpc::classify) {
            Ok(Incoming::Neither) | Err(_) => {
                self.noise(line);
                return;
            }
            Ok(message) => message,
        };
        if self.is_finished() {
            return;
        }
        let Some(answer) = self.server_message(message) else {
            return;
        };
        // A response: the awaited request's, or one that came too late for its own.
        let awaited = self
            .grants
            .legs
            .get(Role::Work)
            .and_then(|leg| leg.request_id);
        let Some(awaited) = awaited else {
            return;
        };
        let ours = match &answer {
            Incoming::Result { id, .. } => *id == Some(RequestId::Number(awaited)),
            // An error naming no request (one the server could not read) is the awaited one's.
            Incoming::Error { id, .. } => id.is_none() || *id == Some(RequestId::Number(awaited)),
            _ => false,
        };
        if ours {
            self.read_answer(answer);
        }
    }

    fn noise(&mut self, line: &[u8]) {
        let line = clip(&String::from_utf8_lossy(line), QUOTE_LIMIT);
        self.events.push_back(Event::StdoutNoise { line });
    }

    fn stdio_line_too_long(&mut self) {
        let cap = self.session.config().body_cap();
        let awaiting = self
            .grants
            .legs
            .get(Role::Work)
            .filter(|leg| leg.request_id.is_some())
            .map(|leg| leg.answers.request_name());
        if let Some(method) = awaiting {
            self.fail(method, Failure::TooLarge(cap));
        }
    }
}
