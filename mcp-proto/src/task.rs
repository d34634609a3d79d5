//! Tasks: a tool call the server runs in the background, looked at by polling.
//!
//! Both eras have them. 2026-07-28 has the extension `io.modelcontextprotocol/tasks`: the
//! server alone decides to answer `tools/call` with `resultType: "task"`, and the client polls
//! `tasks/get`. 2025-11-25 has them in the core (experimental): `tools/call` with
//! `params.task`, answered with `{task: {...}}`, then `tasks/get` and `tasks/result`. This
//! module reads what the server says of a task, in either era's shape, into one `TaskState`.
//! It also holds the rule that times the next poll inside the budget (`next_poll`), and the
//! [`TaskHandle`] a caller gets back when the budget runs out while the task is still running.
//!
//! What it must never do: read a clock (time is an argument), send anything, or decide when
//! the operation ends. A malformed task is handed back as a `String` detail for the operation
//! to word. Nothing here panics on any input.

use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::jsonrpc::RpcError;
use mcp_auth::{QUOTE_LIMIT, clip};

/// The protocol era a task was created in: it decides how the task is polled and how its
/// result is fetched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskEra {
    /// 2026-07-28, the extension `io.modelcontextprotocol/tasks`: `tasks/get` carries the
    /// result, and the task id goes in the `Mcp-Name` header.
    Modern,
    /// 2025-11-25, tasks in the core: `tasks/get` for the status, `tasks/result` for the
    /// result.
    Legacy,
}

/// Where a task stands, as the server last said.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskStatus {
    /// The server is working on it.
    Working,
    /// The server waits for input from the client (an elicitation, a sampling).
    InputRequired,
    /// Done: the result is in.
    Completed,
    /// Ended with a JSON-RPC error.
    Failed,
    /// Cancelled before it was done.
    Cancelled,
}

impl TaskStatus {
    /// The status as the protocol spells it (`working`, `input_required`, ...).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::InputRequired => "input_required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Whether the task is over: nothing changes after this status.
    pub const fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }

    fn parse(status: &str) -> Option<Self> {
        Some(match status {
            "working" => Self::Working,
            "input_required" => Self::InputRequired,
            "completed" => Self::Completed,
            "failed" => Self::Failed,
            "cancelled" => Self::Cancelled,
            _ => return None,
        })
    }
}

impl std::fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a tool runs as a task, as its listing says (2025-11-25: `execution.taskSupport`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskSupport {
    /// Only as a task: a call without `params.task` is refused.
    Required,
    /// As a task when the client asks for one.
    Optional,
    /// Never as a task (also when the listing says nothing, or something unknown).
    Forbidden,
}

impl TaskSupport {
    /// What `execution.taskSupport` says, read from a tool's listing entry.
    pub(crate) fn of_tool(tool: &Map<String, Value>) -> Self {
        let support = tool.get("execution").and_then(|e| e.get("taskSupport"));
        match support.and_then(Value::as_str) {
            Some("required") => Self::Required,
            Some("optional") => Self::Optional,
            _ => Self::Forbidden,
        }
    }
}

/// A task still running on a server, handed back to the caller when the operation that
/// polled it ran out of budget. The work goes on; the operation does not. Keep the handle
/// to look again later under a new budget, or to cancel the task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskHandle {
    /// The server's label, as errors name it.
    pub server: String,
    /// The server's id of the task.
    pub task_id: String,
    /// The era the task was created in.
    pub era: TaskEra,
    /// How long after its creation the server keeps the task (`None`: no limit given).
    pub ttl: Option<Duration>,
    /// The status the server last gave.
    pub status: TaskStatus,
    /// The server's last message about the task, if any (clipped).
    pub status_message: Option<String>,
    /// 2025-11-25: the session the task belongs to (servers keep tasks per session), if the
    /// server issued one. A resume or cancel speaks in that session, without a handshake, so
    /// it must not be closed while the task is wanted.
    pub session_id: Option<String>,
    /// The tool whose call the task runs, when the call that created it handed it back (a
    /// resumed task's result is then held to that tool's `outputSchema`, as the call's would
    /// have been); `None` for a handle made from an id alone ([`TaskHandle::new`]).
    pub tool: Option<String>,
}

impl TaskHandle {
    /// The handle of the task `task_id` on `server` (its label), created in `era`, for a
    /// caller that kept only the id: its status is taken as working, its TTL as unknown, until
    /// a look at it says otherwise.
    pub fn new(server: impl Into<String>, task_id: impl Into<String>, era: TaskEra) -> Self {
        Self {
            server: server.into(),
            task_id: task_id.into(),
            era,
            ttl: None,
            status: TaskStatus::Working,
            status_message: None,
            session_id: None,
            tool: None,
        }
    }
}

/// What the server said of a task in one answer: a task just created, or one poll of it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TaskState {
    /// The server's id of the task.
    pub(crate) id: String,
    /// Where it stands.
    pub(crate) status: TaskStatus,
    /// The server's message, clipped.
    pub(crate) status_message: Option<String>,
    /// How long the server keeps it (`None`: unlimited, or not said).
    pub(crate) ttl: Option<Duration>,
    /// How long to wait before the next poll, as the server suggests.
    pub(crate) poll_interval: Option<Duration>,
    /// What came with the status: a result, an error, requests for input.
    pub(crate) payload: TaskPayload,
}

/// What came with a task's status.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TaskPayload {
    /// Nothing (working, cancelled; or a legacy completed task, whose result is fetched with
    /// `tasks/result`).
    None,
    /// The server's requests for input, by key (modern `input_required`).
    Input(Map<String, Value>),
    /// The result of the request the task runs (modern `completed`).
    Result(Map<String, Value>),
    /// The JSON-RPC error the task ended with (modern `failed`).
    Error(RpcError),
}

impl TaskState {
    /// The handle of this task on `server`, for a caller whose budget ran out.
    pub(crate) fn handle(
        &self,
        server: &str,
        era: TaskEra,
        session_id: Option<String>,
        tool: Option<String>,
    ) -> TaskHandle {
        TaskHandle {
            session_id,
            tool,
            server: server.to_owned(),
            task_id: self.id.clone(),
            era,
            ttl: self.ttl,
            status: self.status,
            status_message: self.status_message.clone(),
        }
    }
}

/// Whether a result is a task created in place of the request's own result: in the modern
/// era `resultType: "task"`, in the legacy era an object under `task`.
pub(crate) fn is_created_task(result: &Map<String, Value>, era: TaskEra) -> bool {
    match era {
        TaskEra::Modern => result.get("resultType").and_then(Value::as_str) == Some("task"),
        TaskEra::Legacy => matches!(result.get("task"), Some(Value::Object(_))),
    }
}

/// Reads a task just created (a `CreateTaskResult`), in the shape of `era`.
pub(crate) fn read_created(
    mut result: Map<String, Value>,
    era: TaskEra,
) -> Result<TaskState, String> {
    match era {
        TaskEra::Modern => read_polled(result, era),
        TaskEra::Legacy => match result.remove("task") {
            Some(Value::Object(task)) => read_polled(task, era),
            _ => Err("the created task has no \"task\" object".to_owned()),
        },
    }
}

/// Reads one poll's answer (a `tasks/get` result) in the shape of `era`: the fields of a
/// task (in the legacy era, also those of a created task's `task` object).
pub(crate) fn read_polled(mut task: Map<String, Value>, era: TaskEra) -> Result<TaskState, String> {
    let id = match task.remove("taskId") {
        Some(Value::String(id)) if !id.is_empty() => id,
        Some(Value::String(_)) => return Err("the task's \"taskId\" is empty".to_owned()),
        Some(_) => return Err("the task's \"taskId\" is not a string".to_owned()),
        None => return Err("the task has no \"taskId\"".to_owned()),
    };
    let status = match task.get("status").and_then(Value::as_str) {
        Some(status) => TaskStatus::parse(status).ok_or_else(|| {
            format!(
                "the task's status \"{}\" is not one the protocol defines",
                clip(status, QUOTE_LIMIT)
            )
        })?,
        None => return Err("the task has no \"status\" string".to_owned()),
    };
    let status_message = task
        .get("statusMessage")
        .and_then(Value::as_str)
        .map(|message| clip(message, QUOTE_LIMIT));
    let (ttl_key, interval_key) = match era {
        TaskEra::Modern => ("ttlMs", "pollIntervalMs"),
        TaskEra::Legacy => ("ttl", "pollInterval"),
    };
    let ttl = millis(task.get(ttl_key), ttl_key)?;
    let poll_interval = millis(task.get(interval_key), interval_key)?;
    let payload = match (era, status) {
        (TaskEra::Modern, TaskStatus::Completed) => match task.remove("result") {
            Some(Value::Object(result)) => TaskPayload::Result(result),
            _ => return Err("a completed task has no \"result\" object".to_owned()),
        },
        (TaskEra::Modern, TaskStatus::Failed) => match task.get("error") {
            Some(error @ Value::Object(_)) => TaskPayload::Error(RpcError::read(error)),
            Some(_) => return Err("a failed task's \"error\" is not an object".to_owned()),
            None => return Err("a failed task has no \"error\"".to_owned()),
        },
        (TaskEra::Modern, TaskStatus::InputRequired) => match task.remove("inputRequests") {
            Some(Value::Object(requests)) => TaskPayload::Input(requests),
            None => TaskPayload::Input(Map::new()),
            Some(_) => return Err("the task's \"inputRequests\" is not an object".to_owned()),
        },
        _ => TaskPayload::None,
    };
    Ok(TaskState {
        id,
        status,
        status_message,
        ttl,
        poll_interval,
        payload,
    })
}

/// A duration in milliseconds: absent or `null` is `None`; a negative, fractional or huge
/// number is read as well as it can be (fractions dropped, at most a day).
fn millis(value: Option<&Value>, key: &str) -> Result<Option<Duration>, String> {
    /// The longest a server's interval or TTL is taken as: a day (beyond it, no budget cares).
    const CAP_MS: f64 = 86_400_000.0;
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(number)) => {
            let ms = number.as_f64().unwrap_or(0.0).clamp(0.0, CAP_MS);
            // `ms` is finite and in 0..=CAP_MS: the cast is exact enough and cannot wrap.
            Ok(Some(Duration::from_millis(ms as u64)))
        }
        Some(_) => Err(format!("the task's \"{key}\" is not a number")),
    }
}

/// The longest wait between two polls when the server suggests no interval.
pub(crate) const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(1);

/// When the next poll goes out: `now` is when the last answer came, `interval` the wait the
/// server's interval allows, `end` the budget's end (`None`: beyond what an instant holds),
/// `answer_takes` how long a poll takes to be answered (the last one's round trip).
///
/// A poll at `now + interval` is kept if its answer can come before `end`. Otherwise the last
/// poll goes out at `end - answer_takes`, if that is not in the past; else there is none
/// (`None`: the task is handed back now). A wait never crosses the budget's end, and a poll is
/// never sent that cannot be answered within what is left, as far as the last round trip tells.
pub(crate) fn next_poll(
    now: Instant,
    interval: Duration,
    end: Option<Instant>,
    answer_takes: Duration,
) -> Option<Instant> {
    let at = now.checked_add(interval);
    let Some(end) = end else {
        return Some(at.unwrap_or(now));
    };
    let latest = end
        .checked_sub(answer_takes)
        .filter(|&latest| latest >= now)?;
    Some(at.map_or(latest, |at| at.min(latest)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => unreachable!("a test object"),
        }
    }

    /// What FastMCP 4.1 with `fastmcp-tasks` 4.1.4 answered to a task-optional tool called
    /// with the extension declared (recorded on loopback).
    fn fastmcp_created() -> Map<String, Value> {
        object(json!({
            "taskId": "b_wpNR-P9N8D9h4Z7T95L5ijRh_MX_V2kAG5aw2xKsU",
            "status": "working",
            "createdAt": "2026-12-03T13:48:32.856429+00:00",
            "lastUpdatedAt": "2026-12-03T13:48:32.856429+00:00",
            "ttlMs": 900000,
            "pollIntervalMs": 5000,
            "resultType": "task",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "tasks-peer", "version": "4.1.4"}}
        }))
    }

    #[test]
    fn a_modern_created_task_is_read_as_the_server_sent_it() {
        let result = fastmcp_created();
        assert!(is_created_task(&result, TaskEra::Modern));
        assert!(!is_created_task(&result, TaskEra::Legacy));
        let task = read_created(result, TaskEra::Modern).unwrap();
        assert_eq!(task.id, "b_wpNR-P9N8D9h4Z7T95L5ijRh_MX_V2kAG5aw2xKsU");
        assert_eq!(task.status, TaskStatus::Working);
        assert_eq!(task.ttl, Some(Duration::from_secs(900)));
        assert_eq!(task.poll_interval, Some(Duration::from_secs(5)));
        assert_eq!(task.payload, TaskPayload::None);
    }

    #[test]
    fn a_modern_poll_carries_the_result_the_error_or_the_input_requests() {
        // FastMCP's completed poll, recorded on loopback.
        let completed = object(json!({
            "taskId": "t", "status": "completed", "ttlMs": 900000, "pollIntervalMs": 5000,
            "resultType": "complete",
            "result": {"content": [{"type": "text", "text": "slept 2.0"}], "isError": false}
        }));
        let task = read_polled(completed, TaskEra::Modern).unwrap();
        let TaskPayload::Result(result) = task.payload else {
            panic!("no result: {:?}", task.payload);
        };
        assert_eq!(result["content"][0]["text"], "slept 2.0");

        let failed = object(json!({
            "taskId": "t", "status": "failed", "ttlMs": null, "statusMessage": "rate limit",
            "error": {"code": -32603, "message": "API rate limit exceeded"}
        }));
        let task = read_polled(failed, TaskEra::Modern).unwrap();
        assert_eq!(task.ttl, None);
        assert_eq!(task.status_message.as_deref(), Some("rate limit"));
        assert!(matches!(
            task.payload,
            TaskPayload::Error(RpcError { code: -32603, .. })
        ));

        let input = object(json!({
            "taskId": "t", "status": "input_required", "ttlMs": 1000,
            "inputRequests": {"name": {"method": "elicitation/create", "params": {}}}
        }));
        let task = read_polled(input, TaskEra::Modern).unwrap();
        let TaskPayload::Input(requests) = task.payload else {
            panic!("no input requests");
        };
        assert!(requests.contains_key("name"));
    }

    #[test]
    fn a_legacy_created_task_is_the_object_under_task() {
        let result = object(json!({
            "task": {"taskId": "abc", "status": "working", "createdAt": "x", "lastUpdatedAt": "x",
                     "ttl": 60000, "pollInterval": 250}
        }));
        assert!(is_created_task(&result, TaskEra::Legacy));
        assert!(!is_created_task(&result, TaskEra::Modern));
        let task = read_created(result, TaskEra::Legacy).unwrap();
        assert_eq!(task.id, "abc");
        assert_eq!(task.ttl, Some(Duration::from_secs(60)));
        assert_eq!(task.poll_interval, Some(Duration::from_millis(250)));
        // A legacy completed task's result comes from `tasks/result`, not with its status.
        let polled = object(json!({"taskId": "abc", "status": "completed", "ttl": null}));
        let task = read_polled(polled, TaskEra::Legacy).unwrap();
        assert_eq!(task.payload, TaskPayload::None);
    }

    #[test]
    fn a_malformed_task_is_a_detail_not_a_panic() {
        let cases = [
            (json!({"status": "working"}), "no \"taskId\""),
            (json!({"taskId": 7, "status": "working"}), "not a string"),
            (json!({"taskId": "", "status": "working"}), "empty"),
            (json!({"taskId": "t"}), "no \"status\""),
            (
                json!({"taskId": "t", "status": "sleeping"}),
                "\"sleeping\" is not one",
            ),
            (
                json!({"taskId": "t", "status": "working", "pollIntervalMs": "5s"}),
                "\"pollIntervalMs\" is not a number",
            ),
            (
                json!({"taskId": "t", "status": "completed"}),
                "no \"result\" object",
            ),
            (
                json!({"taskId": "t", "status": "failed", "error": 3}),
                "not an object",
            ),
            (
                json!({"taskId": "t", "status": "input_required", "inputRequests": []}),
                "not an object",
            ),
        ];
        for (task, want) in cases {
            let detail = read_polled(object(task.clone()), TaskEra::Modern).unwrap_err();
            assert!(detail.contains(want), "{task}: {detail}");
        }
        let detail = read_created(object(json!({"task": "t"})), TaskEra::Legacy).unwrap_err();
        assert!(detail.contains("no \"task\" object"), "{detail}");
        // A hostile status is clipped before it is quoted.
        let long = "x".repeat(10_000);
        let detail = read_polled(
            object(json!({"taskId": "t", "status": long})),
            TaskEra::Modern,
        )
        .unwrap_err();
        assert!(detail.len() < 1_000, "{} bytes", detail.len());
    }

    #[test]
    fn odd_durations_are_read_without_wrapping() {
        let task = |interval: Value| {
            let state = read_polled(
                object(json!({"taskId": "t", "status": "working", "pollIntervalMs": interval})),
                TaskEra::Modern,
            );
            state.unwrap().poll_interval
        };
        assert_eq!(task(json!(-5)), Some(Duration::ZERO));
        assert_eq!(task(json!(1.9)), Some(Duration::from_millis(1)));
        assert_eq!(task(json!(1e300)), Some(Duration::from_secs(86_400)));
        assert_eq!(task(json!(null)), None);
    }

    #[test]
    fn the_next_poll_never_waits_past_the_budget() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let ms = Duration::from_millis;
        let end = t0 + s(20);
        // Plenty of budget: the server's interval.
        assert_eq!(next_poll(t0, s(5), Some(end), ms(10)), Some(t0 + s(5)));
        // The interval would end within a round trip of the end: the last poll is timed to be
        // answered before it.
        assert_eq!(
            next_poll(t0 + s(15), s(5), Some(end), ms(10)),
            Some(end - ms(10))
        );
        assert_eq!(
            next_poll(t0 + s(18), s(5), Some(end), ms(10)),
            Some(end - ms(10))
        );
        // Exactly at the latest instant: still a poll, the last.
        assert_eq!(
            next_poll(end - ms(10), s(5), Some(end), ms(10)),
            Some(end - ms(10))
        );
        // Less left than a round trip: no poll at all.
        assert_eq!(next_poll(end - ms(9), s(5), Some(end), ms(10)), None);
        assert_eq!(next_poll(end, s(5), Some(end), ms(10)), None);
        // A round trip longer than the whole budget.
        assert_eq!(next_poll(t0, s(1), Some(end), s(30)), None);
        // An interval of zero polls at once.
        assert_eq!(next_poll(t0, Duration::ZERO, Some(end), ms(10)), Some(t0));
        // A budget whose end no instant holds: the interval alone.
        assert_eq!(next_poll(t0, s(5), None, ms(10)), Some(t0 + s(5)));
    }

    #[test]
    fn a_handle_keeps_what_the_caller_needs_to_look_again() {
        let task = read_created(fastmcp_created(), TaskEra::Modern).unwrap();
        let handle = task.handle("tasks-peer", TaskEra::Modern, None, None);
        assert_eq!(handle.server, "tasks-peer");
        assert_eq!(handle.task_id, task.id);
        assert_eq!(handle.status, TaskStatus::Working);
        assert_eq!(handle.ttl, Some(Duration::from_secs(900)));
        assert!(!handle.status.is_terminal());
        assert!(TaskStatus::Cancelled.is_terminal());
        assert_eq!(TaskStatus::InputRequired.to_string(), "input_required");
    }
}
