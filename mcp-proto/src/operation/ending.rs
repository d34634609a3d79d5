//! How an operation ends: its result, held until what must follow it is over, then handed out
//! once.
//!
//! What follows a result: over stdio, the kill of a process that a half-written message left
//! unusable, the `notifications/cancelled` of a `tools/call` given up on, and the
//! `tasks/cancel` of a task whose call the caller cancelled. [`Ending`] keeps
//! the result, the kill and the notice owed, says which goes out next ([`After`]), and decides
//! when a call given up on is announced. The operation's own ends are here too (`finish`,
//! `fail`, `give_up_call`): they set the result and stop what the operation had in flight,
//! keeping only an answer to the server on its way over HTTP. It never grants or builds a
//! leg.

use super::failure::Failure;
use super::legs::{LegTable, Role};
use super::listen::Listen;
use super::{Action, LegKind, Operation, Outcome};
use crate::config::SessionConfig;
use crate::error::Error;

/// What goes out next once the operation has its result.
#[derive(Debug)]
pub(super) enum After {
    /// A leg: over stdio the kill that ends the server process at once ([`LegKind::Kill`]),
    /// or the `notifications/cancelled` of the call given up on ([`LegKind::CancelNotice`]).
    Leg(LegKind),
    /// A leg still in flight must end first.
    Wait,
    /// The result (or, polled again, that it was already handed out).
    Done(Result<Outcome, Error>),
}

/// The operation's result and what must follow it.
#[derive(Debug, Default)]
pub(super) struct Ending {
    result: Option<Result<Outcome, Error>>,
    /// Whether the result was handed out.
    returned: bool,
    /// Over stdio: the server process must be ended at once before the result goes out (a
    /// message was left half-written in its stdin, or a close ran out of budget).
    kill: bool,
    /// The id of the `tools/call` to announce as cancelled.
    notice: Option<i64>,
    /// The task to cancel (`tasks/cancel`): the one the cancelled call became, or one the
    /// spent budget ends (when configured so).
    task_cancel: Option<String>,
}

impl Ending {
    /// True once the result is ready (it may not have been handed out yet).
    pub(super) fn is_finished(&self) -> bool {
        self.result.is_some() || self.returned
    }

    /// The operation ended with `result` (its first end: later ones change nothing); `kill`
    /// when the server process must be ended before it goes out.
    pub(super) fn end(&mut self, result: Result<Outcome, Error>, kill: bool) {
        if !self.is_finished() {
            self.kill = kill;
            self.result = Some(result);
        }
    }

    /// A close after the budget: the process is ended at once.
    pub(super) fn kill_now(&mut self) {
        self.kill = true;
    }

    /// The request `awaited` (its kind and JSON-RPC id) is given up on: `cancelled` by the
    /// caller, else its grant ran out. A `tools/call` that was sent is announced where the
    /// transport needs it: over stdio always (there is no stream to close, and the server
    /// would work on); over HTTP after a cancel in the `legacy` era when `config` asks
    /// ([`SessionConfig::with_cancel_notice`]); in the modern era closing the call's stream is
    /// the cancellation. A modern subscription (`subscriptions/listen`, the only one with an
    /// id) is announced over stdio however it ends, its budget's end included: the server
    /// would hold it, and send each notification on it, for the life of the process. The
    /// server never works on a request that was not sent.
    pub(super) fn give_up(
        &mut self,
        (kind, call): (LegKind, Option<i64>),
        config: &SessionConfig,
        legacy: bool,
        cancelled: bool,
    ) {
        let announced = match kind {
            LegKind::CallTool => {
                config.is_stdio() || (cancelled && config.cancel_notice() && legacy)
            }
            LegKind::Subscribe => config.is_stdio(),
            _ => false,
        };
        if announced {
            self.notice = call;
        }
    }

    /// The task `id`, if any, is to be cancelled: `tasks/cancel` follows.
    pub(super) fn cancel_task(&mut self, id: Option<String>) {
        if id.is_some() {
            self.task_cancel = id;
        }
    }

    /// Takes the task's cancel owed, to send it: the task's id, if one was.
    pub(super) fn take_task_cancel(&mut self) -> Option<String> {
        self.task_cancel.take()
    }

    /// Takes the notice owed, to send it.
    pub(super) fn take_notice(&mut self) -> Option<i64> {
        self.notice.take()
    }

    /// The notice (or the task's cancel) is not sent (the budget refused it).
    pub(super) fn drop_notice(&mut self) {
        self.notice = None;
        self.task_cancel = None;
    }

    /// What goes out next, the result last, once the legs that must end first (the work, the
    /// notice, an answer to the server unless the caller cancelled) are out of `legs`.
    pub(super) fn after(&mut self, legs: &LegTable) -> After {
        // An answer to the server's request still on its way over HTTP is waited for (its
        // head, inside the budget and at most a cancel notice's grant past the result): the
        // server may not have it whole yet, and a leg cut mid-way loses it. The operation's
        // end keeps it in flight only when the caller did not cancel (`Grants::clear`).
        let busy = [Role::Notice, Role::Work, Role::Reply]
            .into_iter()
            .any(|role| legs.is_busy(role));
        if std::mem::take(&mut self.kill) {
            // The process is ended: no notice can reach it.
            self.drop_notice();
            return After::Leg(LegKind::Kill);
        }
        if self.task_cancel.is_some() {
            return After::Leg(LegKind::TaskCancelNotice);
        }
        if self.notice.is_some() {
            return After::Leg(LegKind::CancelNotice);
        }
        if busy {
            return After::Wait;
        }
        match self.result.take() {
            Some(result) => {
                self.returned = true;
                After::Done(result)
            }
            None => After::Done(Err(Error::AlreadyFinished)),
        }
    }
}

/// Ending an operation: its result set, and what it still has in flight stopped.
impl Operation {
    /// The request awaited is given up on (`cancelled`, else it ran out): see `ending`.
    pub(super) fn give_up_call(&mut self, cancelled: bool) {
        // A task goes on without its call: a cancelled one is cancelled on the server too.
        let task = self.answering.task.task_id().filter(|_| cancelled);
        self.ending.cancel_task(task.map(str::to_owned));
        let (kind, call, _) = self.awaited();
        let (config, legacy) = (self.session.config(), self.progress.era.modern().is_none());
        self.ending.give_up((kind, call), config, legacy, cancelled);
    }

    /// Ends the operation with `result` (the first end counts): legs, timers, the flow, a
    /// resumption and the stream stop, and the session gets back what it lent.
    pub(super) fn finish(&mut self, result: Result<Outcome, Error>) {
        // A message cut off mid-line leaves the process unusable: it is ended at once.
        let kill = self.session.config().is_stdio() && self.grants.legs.any_half_written();
        if !self.is_finished() {
            // A close forgets the session, whether the server heard it or not.
            if self.progress.action == Action::Close {
                self.session.reset();
            }
            self.session.hand_back(self.stdout.hand_back());
        }
        // Over HTTP an answer to the server on its way stays, unless the caller cancelled.
        self.grants.clear();
        self.auth.stop();
        self.resume.abandon();
        self.responses.listen = Listen::Off;
        self.ending.end(result, kill);
    }

    /// Ends the operation with `failure`, about the request `method`.
    pub(super) fn fail(&mut self, method: &'static str, failure: Failure) {
        let failure = self.answering.task.hand_back(failure, self.grants.budget());
        let error = failure.into_error(self.session.config().label().to_owned(), method);
        self.finish(Err(error));
    }
}
