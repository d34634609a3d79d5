//! Starting operations: the [`Session`]'s constructor for each public action, each one action
//! under one deadline opened at `now` (the configured budget, or the close's, or a deadline the
//! caller opened). Nothing here decides how an operation runs: that is the operation's.

use std::time::Instant;

use serde_json::{Map, Value};

use crate::catalog::ListKind;
use crate::deadline::OperationDeadline;
use crate::model::Subscription;
use crate::operation::{Action, Operation};
use crate::request::OneRequest;
use crate::session::Session;

impl Session {
    /// Starts a probe under the configured budget: a handshake that reports the negotiated
    /// version and server info (on a live session, a `ping` that proves the session answers).
    pub fn probe(&mut self, now: Instant) -> Operation {
        self.start(Action::Probe, self.default_deadline(now))
    }

    /// Starts a walk of every page of `tools/list` under the configured budget.
    pub fn list_tools(&mut self, now: Instant) -> Operation {
        self.list(ListKind::Tools, now)
    }

    /// Starts a walk of every page of the listing `of` (tools, resources, resource templates
    /// or prompts) under the configured budget: one operation, however many pages.
    pub fn list(&mut self, of: ListKind, now: Instant) -> Operation {
        self.start(Action::List(of), self.default_deadline(now))
    }

    /// Starts one request of the table of one-request methods ([`crate::request`]) under the
    /// configured budget: `session.request(request, now)` with a request type of that
    /// module. It ends with
    /// [`Outcome::Answer`](crate::Outcome::Answer); read that with
    /// [`Answer::read`](crate::request::Answer::read).
    pub fn request(&mut self, request: impl Into<OneRequest>, now: Instant) -> Operation {
        self.start(Action::Request(request.into()), self.default_deadline(now))
    }

    /// Starts a subscription that lasts the configured budget (see [`Action::Subscribe`]): its
    /// notifications come as events, and the budget running out ends it normally.
    pub fn subscribe(&mut self, subscription: Subscription, now: Instant) -> Operation {
        self.start(Action::Subscribe(subscription), self.default_deadline(now))
    }

    /// Starts a `tools/call` of `name` under the configured budget. Empty arguments are sent
    /// as `{}`.
    pub fn call_tool(
        &mut self,
        name: impl Into<String>,
        arguments: Map<String, Value>,
        now: Instant,
    ) -> Operation {
        let action = Action::CallTool {
            name: name.into(),
            arguments,
        };
        self.start(action, self.default_deadline(now))
    }

    /// Starts polling `task` (a handle an earlier operation handed back with
    /// [`Error::TaskRunning`](crate::Error::TaskRunning)) under the configured budget, until
    /// it is done: the call's result, or the task handed back again when this budget runs out
    /// too. The polls speak the task's era, and declare the tasks extension whatever
    /// [`SessionConfig::with_tasks`](crate::SessionConfig::with_tasks) says.
    ///
    /// The handle must come from a session to the same server: the task id means nothing to
    /// another one (it answers with an error).
    pub fn resume_task(&mut self, task: crate::task::TaskHandle, now: Instant) -> Operation {
        self.start(Action::ResumeTask(task), self.default_deadline(now))
    }

    /// Starts a `tasks/cancel` of `task` under the configured budget. The server's
    /// acknowledgement ends it ([`Outcome::TaskCancelRequested`](crate::Outcome)); cancelling
    /// is cooperative, so the task may still end otherwise.
    pub fn cancel_task(&mut self, task: crate::task::TaskHandle, now: Instant) -> Operation {
        self.start(Action::CancelTask(task), self.default_deadline(now))
    }

    /// Ends the session on the server: a DELETE with the session header, under a small
    /// budget of its own (the configured budget, at most
    /// [`CLOSE_BUDGET_CAP`](crate::SessionConfig::CLOSE_BUDGET_CAP)). A 405 (the server does
    /// not allow it) or a 404 (already gone) counts as closed. The session is forgotten
    /// either way. Without a live session id nothing is sent.
    pub fn close(&mut self, now: Instant) -> Operation {
        let deadline = self.deadline_for(&Action::Close, now);
        self.start(Action::Close, deadline)
    }

    /// Ends the session inside what `spent` (the deadline of the operation the close follows)
    /// leaves at `now`, at most [`CLOSE_BUDGET_CAP`](crate::SessionConfig::CLOSE_BUDGET_CAP):
    /// the close is part of what the operator waits for, so it must not outlive the budget.
    /// With budget left it is [`close`](Self::close) under that rest. Once `spent` is spent,
    /// nothing waits: over HTTP no `DELETE` is sent (the operation ends with
    /// [`Error::BudgetExhausted`](crate::Error::BudgetExhausted); a legacy session then expires by the server's idle
    /// timeout), and over stdio the server process is ended at once ([`LegKind::Kill`](crate::driver::LegKind::Kill)). The
    /// session is forgotten either way.
    pub fn close_within(&mut self, spent: &OperationDeadline, now: Instant) -> Operation {
        let deadline = spent.remainder(now, crate::SessionConfig::CLOSE_BUDGET_CAP);
        self.start(Action::Close, deadline)
    }

    /// The deadline an operation for `action` opens at `now` under the configuration: the
    /// configured budget, or for [`Action::Close`] the close budget (the configured budget, at
    /// most [`CLOSE_BUDGET_CAP`](crate::SessionConfig::CLOSE_BUDGET_CAP)). A driver that must
    /// wait before it may start an operation (its turn on a stdio server) opens it at the
    /// call and starts the operation with it once its turn has come.
    pub fn deadline_for(&self, action: &Action, now: Instant) -> OperationDeadline {
        let config = self.config();
        let budget = match action {
            Action::Close => config.budget().min(crate::SessionConfig::CLOSE_BUDGET_CAP),
            _ => config.budget(),
        };
        OperationDeadline::start(now, budget, config.resolution())
    }

    /// The deadline of an operation opened at `now` under `budget` (the caller's, instead of
    /// the configured one), at the configured resolution.
    pub fn deadline_under(&self, budget: crate::Budget, now: Instant) -> OperationDeadline {
        OperationDeadline::start(now, budget, self.config().resolution())
    }

    /// Starts `action` under a deadline the caller opened (for a budget other than the
    /// configured one, or a deadline opened earlier than the operation).
    pub fn start(&mut self, action: Action, deadline: OperationDeadline) -> Operation {
        Operation::new(self, action, deadline)
    }
}
