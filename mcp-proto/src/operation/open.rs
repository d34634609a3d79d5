//! An operation assembled from its parts, as it starts: what the session lends it (its view,
//! the stdout framer), its era and first step (`progress`), its deadline and timers
//! (`grant`), and every other part empty.
//!
//! Only the operation's constructor uses this, and no part imports it: it is where the parts
//! meet once, so that none of them has to know the others.

use std::collections::VecDeque;

use super::answer::Answering;
use super::authorize::Authorizing;
use super::ending::Ending;
use super::grant::Grants;
use super::legs::Role;
use super::listen::Listen;
use super::progress::{Progress, Start};
use super::replies::Replies;
use super::responses::Responses;
use super::resume::Resumption;
use super::stdio::Stdout;
use super::view::View;
use super::{Action, Event, LegId, LegKind, Outcome, Output};
use crate::deadline::OperationDeadline;
use crate::session::Session;
use std::time::{Duration, Instant};

/// One MCP operation under one deadline. See the [driver docs](crate::driver) for the driver loop.
///
/// It owns its state: it started from a copy of its [`Session`] and borrows nothing, so any
/// number of operations can be in flight on one session (each in its own task or thread);
/// what it learns about the session comes out as [`Output::Update`](super::Output::Update).
#[derive(Debug)]
pub struct Operation {
    /// Its copy of the session, and what it learned that the session has not seen yet.
    pub(super) session: View,
    /// The deadline, the legs in flight and the timers: every grant is made there.
    pub(super) grants: Grants,
    /// Its action, its era, and where it stands on the way to its work.
    pub(super) progress: Progress,
    /// What the caller sees next, oldest first.
    pub(super) events: VecDeque<Event>,
    pub(super) replies: Replies,
    pub(super) resume: Resumption,
    /// The work leg's response as far as it has been read, and the standalone stream.
    pub(super) responses: Responses,
    /// What the answers built up: the listing's pages, the skill's files, the input round.
    pub(super) answering: Answering,
    /// The authorization the server asked for, while it runs and after (for a step-up).
    pub(super) auth: Authorizing,
    /// Over stdio: the server's stdout, and a close's next step.
    pub(super) stdout: Stdout,
    /// The result, and what must follow it.
    pub(super) ending: Ending,
}

/// The operation for `action` under `deadline`, starting from what `session` knows. A close
/// with nothing to close is over at once; an operation that needs its session is offered it.
pub(super) fn operation(
    session: &mut Session,
    action: Action,
    deadline: OperationDeadline,
) -> Operation {
    let start = Start::of(session, &action);
    let (view, stdout) = start.lend(session);
    let config = view.config();
    let listen = Listen::for_operation(config, &action, start.era.modern().is_some());
    let nothing_to_close = start.nothing_to_close;
    let mut op = Operation {
        grants: Grants::new(deadline, config.is_stdio()),
        responses: Responses::new(listen),
        stdout,
        answering: Answering::for_action(&action),
        progress: start.progress(action, &view),
        session: view,
        events: VecDeque::new(),
        replies: Replies::default(),
        resume: Resumption::default(),
        auth: Authorizing::default(),
        ending: Ending::default(),
    };
    if nothing_to_close {
        // Ended before it began, as every operation ends (the stdout framer goes back).
        op.finish(Ok(Outcome::Closed));
    }
    op.handle_session(session);
    op
}

/// What a driver or a caller may ask of an operation at any time: plain reads of its parts.
impl Operation {
    /// An operation for `action` under `deadline`, starting from what `session` knows (see
    /// [`Session::start`]), its parts assembled here.
    pub(crate) fn new(session: &mut Session, action: Action, deadline: OperationDeadline) -> Self {
        operation(session, action, deadline)
    }

    /// The configuration of the session the operation runs on (its transport, its label).
    pub fn session_config(&self) -> &crate::SessionConfig {
        self.session.config()
    }

    /// The operation's deadline.
    pub fn deadline(&self) -> &OperationDeadline {
        self.grants.deadline()
    }

    /// What the operation is for.
    pub fn action(&self) -> &Action {
        &self.progress.action
    }

    /// How many legs have been handed to the driver so far.
    pub fn legs_sent(&self) -> u32 {
        self.grants.sent()
    }

    /// True once the result is ready (it may not have been polled yet, and a cancel notice
    /// may still go out before it).
    pub fn is_finished(&self) -> bool {
        self.ending.is_finished()
    }

    /// Whether leg `id` is still in flight: a driver that reads several legs at once drops a
    /// leg the operation no longer has (its grant ran out, or the operation let it go) after
    /// any input.
    pub fn is_in_flight(&self, id: LegId) -> bool {
        self.grants.legs.find(id).is_some()
    }
}

/// The operation's plain reads that its routing (`mod.rs`) asks.
impl Operation {
    pub(super) fn wait(&self, now: Instant) -> Output {
        Output::Wait(self.grants.timers.next().unwrap_or(now))
    }

    /// The next leg when nothing is in flight and nothing holds it back.
    pub(super) fn next_kind(&self) -> LegKind {
        let page = self.answering.next_page();
        // What a close ends: a local server (step by step), or the HTTP+SSE stream.
        let (sse, stdio) = (self.session.speaks_sse(), self.session.config().is_stdio());
        let close = match sse {
            true => LegKind::Hangup,
            false => self.stdout.closing.next_kind(),
        };
        match self.progress.next_kind(page, close, stdio || sse) {
            // The call became a task: it is polled from now on.
            LegKind::CallTool | LegKind::TaskGet if self.answering.task.is_live() => {
                self.answering.task.request()
            }
            LegKind::Subscribe => (self.answering.next_resource_subscribe(&self.progress))
                .unwrap_or(LegKind::Subscribe),
            kind => kind,
        }
    }

    /// The request whose answer is being read or awaited (the work leg in flight, or the one a
    /// pending resumption serves, else the next one): its kind, JSON-RPC id and grant.
    pub(super) fn awaited(&self) -> (LegKind, Option<i64>, Duration) {
        match (self.grants.legs.get(Role::Work), self.resume.awaited()) {
            (Some(leg), _) => (leg.answers, leg.request_id, leg.grant),
            (None, Some(awaited)) => awaited,
            (None, None) => (self.next_kind(), None, Duration::ZERO),
        }
    }

    /// Whether it waits for its session (to establish it, or for another's authorization).
    pub(super) fn awaits_session(&self) -> bool {
        (self.progress.awaits_session() || self.auth.is_waiting()) && !self.is_finished()
    }
}
