//! The operation's task: a `tools/call` the server answered with a task (or one an earlier
//! operation handed back, resumed), polled with `tasks/get` inside the same budget until it is
//! done, or handed back when the budget cannot see it done. In the legacy era (2025-11-25) a
//! task that is over, or waits for input, is then asked for its result with `tasks/result`
//! (the server's requests for input come on that answer's stream); a legacy call asks for a
//! task only when the tool requires one ([`legacy_call_is_task`]).
//!
//! Polls ramp up like FastMCP's own client: the first after 20 ms, each wait twice the last,
//! capped at the server's `pollIntervalMs` (or one second when it gives none), and never
//! below 20 ms, so a hostile `0` cannot spin the client. A quick task is seen done in
//! milliseconds, and a long one is polled at the server's cadence. A wait never crosses the
//! budget's end: when the interval ends too close to it, the last poll is timed to be answered
//! before the end ([`task::next_poll`]). When not even that fits, the task is handed back at
//! once.
//!
//! This part keeps the task's state and decides when the next poll goes out. It never grants
//! a leg, never reads a clock and never ends the operation: what it reads becomes a
//! [`Seen`], and a spent budget a [`Failure`] the operation acts on.

use std::collections::{BTreeSet, VecDeque};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::driving::LegKind;
use super::failure::Failure;
use super::grant::Grants;
use super::legs::InFlight;
use super::types::{Event, Outcome};
use super::view::View;
use crate::config::SessionConfig;
use crate::deadline::Budget;
use crate::model::CallToolResult;
use crate::task::{
    self, DEFAULT_POLL_INTERVAL, TaskEra, TaskHandle, TaskPayload, TaskState, TaskStatus,
    TaskSupport,
};
use mcp_auth::{QUOTE_LIMIT, clip};

/// The shortest wait between two polls, and the first one.
const MIN_POLL_WAIT: Duration = Duration::from_millis(20);

/// The least a poll's answer is expected to take.
const MIN_ANSWER: Duration = Duration::from_millis(1);

/// The least room the last poll leaves for `tasks/cancel` when a task the budget cannot see
/// done is cancelled.
const CANCEL_ROOM: Duration = Duration::from_millis(25);

/// The operation's task, once the server made one.
#[derive(Debug, Default)]
pub(super) struct Tasking {
    live: Option<Box<Live>>,
}

#[derive(Debug)]
struct Live {
    /// What the server last said of it (its payload taken).
    task: TaskState,
    era: TaskEra,
    /// The next wait, before the server's interval caps it.
    backoff: Duration,
    next: Next,
    /// The keys of the task's requests for input already answered (a poll may show them
    /// again before the server took the answers in: they are not asked twice).
    answered: BTreeSet<String>,
    /// The legacy session it belongs to.
    session_id: Option<String>,
    /// The tool whose call it runs, when known (handed back with it).
    tool: Option<String>,
}

/// What the task waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    /// The next poll, at this instant.
    At(Instant),
    /// `tasks/result` (legacy era): the task is over, or waits for input.
    Fetch,
    /// `tasks/update` (modern era): the caller's answers to the task's requests for input
    /// (the reply timer holds it until they are in).
    Update,
    /// The answer to the request in flight: `tasks/get`, `tasks/result` or `tasks/update`.
    Answer(LegKind),
    /// Nothing: no poll can be answered inside the budget; the task is handed back.
    HandBack,
}

impl Next {
    /// The request about the task this is (or awaits the answer of).
    const fn request(self) -> LegKind {
        match self {
            Self::Answer(kind) => kind,
            Self::Fetch => LegKind::TaskResult,
            Self::Update => LegKind::TaskUpdate,
            Self::At(_) | Self::HandBack => LegKind::TaskGet,
        }
    }
}

impl Live {
    /// A task first seen in `era` (in the legacy `session_id`), its first request's answer
    /// awaited.
    fn new(
        task: TaskState,
        era: TaskEra,
        session_id: Option<String>,
        tool: Option<String>,
    ) -> Box<Self> {
        Box::new(Self {
            task,
            era,
            backoff: MIN_POLL_WAIT,
            next: Next::Answer(LegKind::TaskGet),
            answered: BTreeSet::new(),
            session_id,
            tool,
        })
    }
}

/// The event that reports `task` as the server described it.
fn status_event(task: &TaskState) -> Event {
    Event::TaskStatus {
        task_id: task.id.clone(),
        status: task.status,
        message: task.status_message.clone(),
    }
}

/// What an answer about the task means for the operation.
#[derive(Debug)]
pub(super) enum Seen {
    /// The task runs on: the next poll is timed.
    Running,
    /// It is done: the call's result.
    Done(Outcome),
    /// It failed, or what the server said of it is not a task.
    Failed(Failure),
    /// It waits for input: these requests (by key) are asked of the caller, and
    /// `tasks/update` carries the answers.
    Input(Map<String, Value>),
}

/// What holds the next leg of an operation with a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Hold {
    /// Nothing: the operation has no task, or it awaits a poll's answer.
    No,
    /// The poll is due: `tasks/get` goes out now.
    Poll,
    /// The poll is due at this instant.
    Until(Instant),
    /// The task is handed back: the operation ends.
    HandBack,
}

/// When an answer came, as the task's timing needs it.
#[derive(Debug, Clone, Copy)]
pub(super) struct When {
    now: Instant,
    /// The budget's end (`None`: beyond what an instant holds).
    end: Option<Instant>,
    /// How long the request took to be answered: what the next poll is expected to take.
    answer_takes: Duration,
}

impl When {
    /// The answer to `leg` came at the operation's latest instant.
    /// (The round trip as measured, at least a millisecond; not rounded to the resolution,
    /// which would waste up to a unit of the budget at its end.)
    /// When the configuration cancels a task the budget cannot see done, the last poll
    /// leaves room for the cancel too: twice the round trip, at least [`CANCEL_ROOM`] (a
    /// real network's round trips vary by more than one).
    pub(super) fn after(leg: &InFlight, grants: &Grants, config: &SessionConfig) -> Self {
        let now = grants.now();
        let round_trip = (now.saturating_duration_since(leg.sent_at)).max(MIN_ANSWER);
        let room = match config.cancels_spent_tasks() {
            true => (round_trip * 2).max(CANCEL_ROOM),
            false => Duration::ZERO,
        };
        Self {
            now,
            end: grants.deadline().end(),
            answer_takes: round_trip + room,
        }
    }
}

/// Whether a legacy (2025-11-25) `tools/call` of `name` on `session` asks for a task: when
/// tasks are configured, the server runs calls as tasks (`tasks.requests.tools.call`) and the
/// tool requires it (or allows it, when configured so). `None`: the server would, and no tools
/// listing said what this tool allows (the listing is walked first).
pub(super) fn legacy_call_is_task(session: &View, name: &str) -> Option<bool> {
    // The configuration first: without tasks configured, no capability is looked up.
    if !session.config().tasks() {
        return Some(false);
    }
    let capabilities = session.info().map(|info| &info.capabilities);
    let declared = capabilities
        .and_then(|caps| caps.get("tasks"))
        .and_then(|tasks| tasks.get("requests"))
        .and_then(|requests| requests.get("tools"))
        .and_then(|tools| tools.get("call"))
        .is_some_and(Value::is_object);
    if !declared {
        return Some(false);
    }
    Some(match session.task_support(name)? {
        TaskSupport::Required => true,
        TaskSupport::Optional => session.config().optional_tasks(),
        _ => false,
    })
}

impl Tasking {
    /// Whether the server made a task that is not over.
    pub(super) fn is_live(&self) -> bool {
        self.live.is_some()
    }

    /// The id of the task, for the poll's request.
    pub(super) fn task_id(&self) -> Option<&str> {
        self.live.as_deref().map(|live| live.task.id.as_str())
    }

    /// The task an operation resumes (a handle an earlier one handed back): its first poll is
    /// the operation's work, and awaits its answer from the start.
    pub(super) fn resumed(handle: &TaskHandle) -> Self {
        let task = TaskState {
            id: handle.task_id.clone(),
            status: handle.status,
            status_message: handle.status_message.clone(),
            ttl: handle.ttl,
            poll_interval: None,
            payload: TaskPayload::None,
        };
        Self {
            live: Some(Live::new(
                task,
                handle.era,
                handle.session_id.clone(),
                handle.tool.clone(),
            )),
        }
    }

    /// The server answered the call with a task just created.
    pub(super) fn created(
        &mut self,
        result: Map<String, Value>,
        (era, session_id, tool): (TaskEra, Option<String>, Option<String>),
        when: When,
        events: &mut VecDeque<Event>,
    ) -> Seen {
        match task::read_created(result, era) {
            Ok(task) => {
                events.push_back(status_event(&task));
                self.live = Some(Live::new(task, era, session_id, tool));
                self.schedule(when);
                Seen::Running
            }
            Err(detail) => Seen::Failed(Failure::Malformed(detail)),
        }
    }

    /// A poll's answer: the call's result when the task is done, the next poll when it is not.
    pub(super) fn polled(
        &mut self,
        result: Map<String, Value>,
        when: When,
        events: &mut VecDeque<Event>,
    ) -> Seen {
        let Some(live) = self.live.as_deref_mut() else {
            return Seen::Failed(Failure::Malformed("a task poll without a task".to_owned()));
        };
        let mut task = match task::read_polled(result, live.era) {
            Ok(task) => task,
            Err(detail) => return Seen::Failed(Failure::Malformed(detail)),
        };
        if task.id != live.task.id {
            let detail = format!(
                "the poll of task \"{}\" was answered for task \"{}\"",
                clip(&live.task.id, QUOTE_LIMIT),
                clip(&task.id, QUOTE_LIMIT)
            );
            return Seen::Failed(Failure::Malformed(detail));
        }
        let payload = std::mem::replace(&mut task.payload, TaskPayload::None);
        let (status, message) = (task.status, task.status_message.clone());
        if (status, &message) != (live.task.status, &live.task.status_message) {
            events.push_back(status_event(&task));
        }
        live.task = task;
        // A legacy task's result, and the requests it waits on, come with `tasks/result`.
        let fetch = matches!(status, TaskStatus::Completed | TaskStatus::Failed)
            || (status == TaskStatus::InputRequired && live.era == TaskEra::Legacy);
        if fetch && matches!(payload, TaskPayload::None) {
            live.next = Next::Fetch;
            return Seen::Running;
        }
        // What the task asks that was not answered yet goes to the caller; then
        // `tasks/update` carries the answers.
        if let TaskPayload::Input(mut requests) = payload {
            requests.retain(|key, _| !live.answered.contains(key));
            if requests.is_empty() {
                self.schedule(when);
                return Seen::Running;
            }
            live.next = Next::Update;
            return Seen::Input(requests);
        }
        if !status.is_terminal() {
            self.schedule(when);
            return Seen::Running;
        }
        let id = self
            .live
            .take()
            .map(|live| live.task.id)
            .unwrap_or_default();
        match payload {
            TaskPayload::Result(result) => match CallToolResult::from_result(result) {
                Ok(call) => Seen::Done(Outcome::Call(call)),
                Err(detail) => Seen::Failed(Failure::Malformed(detail)),
            },
            TaskPayload::Error(error) => Seen::Failed(Failure::JsonRpc {
                code: error.code,
                message: clip(&error.message, QUOTE_LIMIT),
                data: error.data,
            }),
            _ => Seen::Failed(Failure::TaskCancelled {
                task_id: id,
                message,
            }),
        }
    }

    /// The answer to `tasks/result` (legacy era): the result of the call the task ran (its
    /// error comes as the request's own JSON-RPC error).
    pub(super) fn fetched(&mut self, result: Map<String, Value>) -> Seen {
        self.live = None;
        match CallToolResult::from_result(result) {
            Ok(call) => Seen::Done(Outcome::Call(call)),
            Err(detail) => Seen::Failed(Failure::Malformed(detail)),
        }
    }

    /// The server acknowledged `tasks/update` with the answers to `keys`: they are not asked
    /// again, and the task is polled again soon (the ramp starts over).
    pub(super) fn updated<'k>(&mut self, keys: impl Iterator<Item = &'k String>, when: When) {
        if let Some(live) = self.live.as_deref_mut() {
            live.answered.extend(keys.cloned());
            live.backoff = MIN_POLL_WAIT;
        }
        self.schedule(when);
    }

    /// The request about the task that goes out next: `tasks/get`, `tasks/result` once a
    /// legacy task is over or waits for input, `tasks/update` with the caller's answers.
    pub(super) fn request(&self) -> LegKind {
        self.live
            .as_deref()
            .map_or(LegKind::TaskGet, |live| live.next.request())
    }

    /// What holds the next leg at `now`; a due poll is handed out (it awaits its answer next).
    pub(super) fn hold(&mut self, now: Instant) -> Hold {
        let Some(live) = self.live.as_deref_mut() else {
            return Hold::No;
        };
        match live.next {
            Next::Answer(_) => Hold::No,
            Next::HandBack => Hold::HandBack,
            Next::At(at) if at > now => Hold::Until(at),
            due => {
                live.next = Next::Answer(due.request());
                Hold::Poll
            }
        }
    }

    /// `failure` as the operation ends with it: a budget spent (or a poll that ran out with
    /// it) while the task runs hands the task back ([`Failure::TaskRunning`]); any other
    /// failure is kept as it is.
    pub(super) fn hand_back(&mut self, failure: Failure, budget: Budget) -> Failure {
        let spent = matches!(
            failure,
            Failure::Spent { .. } | Failure::TimedOut(_) | Failure::Transport { error: None, .. }
        );
        match spent.then(|| self.running(budget)).flatten() {
            Some(running) => running,
            None => failure,
        }
    }

    /// The task handed back as the operation's failure, if one runs (it is forgotten here).
    pub(super) fn running(&mut self, budget: Budget) -> Option<Failure> {
        self.end_now(budget, false).map(|(failure, _)| failure)
    }

    /// The task ends the operation now, no poll fitting in what is left: handed back, or
    /// (`cancel`) to be cancelled on the server, its id returned for `tasks/cancel`.
    pub(super) fn end_now(
        &mut self,
        budget: Budget,
        cancel: bool,
    ) -> Option<(Failure, Option<String>)> {
        let live = self.live.take()?;
        let cancelled = cancel.then(|| live.task.id.clone());
        let failure = Failure::TaskRunning {
            task: Box::new(live.task),
            era: live.era,
            session_id: live.session_id,
            budget,
            cancel_sent: cancel,
            tool: live.tool,
        };
        Some((failure, cancelled))
    }

    /// Times the next poll after an answer at `when`.
    fn schedule(&mut self, when: When) {
        let Some(live) = self.live.as_deref_mut() else {
            return;
        };
        let ceiling = (live.task.poll_interval)
            .unwrap_or(DEFAULT_POLL_INTERVAL)
            .max(MIN_POLL_WAIT);
        let wait = live.backoff.min(ceiling);
        live.backoff = (live.backoff * 2).min(ceiling);
        live.next = match task::next_poll(when.now, wait, when.end, when.answer_takes) {
            Some(at) => Next::At(at),
            None => Next::HandBack,
        };
    }
}
