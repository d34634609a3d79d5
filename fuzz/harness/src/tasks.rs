//! Tasks in `mcp-proto`, both eras, over Streamable HTTP on a manual clock: a tool call the
//! server turns into a task, a handed-back task resumed, a handle cancelled, with every answer
//! about the task picked by the fuzzer.
//!
//! The harness is the driver and the server. The handshake and the listing (2025-11-25) are
//! answered healthily at once; each `tools/call` and `tasks/*` leg gets, after a delay the bytes
//! pick, a result built from task-shaped pieces, a JSON-RPC error, a transport failure, a stall,
//! raw junk, an HTTP status or the caller's cancel. What it checks is that the budget rules and
//! the task's identity hold around a task (see [`tasks`]), not only that nothing panics. It
//! never opens a socket or reads a real clock.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use base64::Engine as _;
use http::{HeaderMap, HeaderValue, StatusCode};
use mcp_auth::{QUOTE_LIMIT, clip};
use mcp_proto::driver::{CANCEL_NOTICE_GRANT, LegKind, METHOD_HEADER, NAME_HEADER, SESSION_HEADER};
use mcp_proto::driver::{
    Input, Leg, LegStatus, Operation, Output, ServerRequest, TransportError, leg_grant,
};
use mcp_proto::message::accept_elicitation_with_defaults;
use mcp_proto::task::{TaskEra, TaskHandle};
use mcp_proto::{
    Action, Budget, Clock, Error, Event, ManualClock, Outcome, ProtocolVersion, Resolution,
    Session, SessionConfig, TransportErrorKind,
};
use serde_json::{Map, Value, json};

use crate::bytes::Bytes;
use crate::streamable::{ceil_to, check_finished};

const URL: &str = "http://fuzz.test:8080/mcp";
const LABEL: &str = "fuzz.test:8080";
/// The tool every call names.
const TOOL: &str = "research";
/// The ids a created task may get: plain, one a header carries in Base64, one like an option.
/// The first is also the handle's a resume or a cancel starts from.
const TASK_IDS: [&str; 4] = ["786512e2-9e0d", " t\u{e2}che\t1 ", "-t", "786512e2-9e0d"];
/// The most outputs one run may hand out before it counts as never ending.
const MAX_OUTPUTS: usize = 20_000;
/// Poll intervals and TTLs a task is described with (as JSON; `null` leaves it out): zero,
/// negative, huge, fractional, a string, plain, the largest integer.
const NUMBERS: &str = r#"[null, 0, -5, 1e300, 12.5, "100", 50, 18446744073709551615]"#;
/// The statuses a task is described with: the five the protocol defines, a bogus one, and the
/// two a long task spends most of its life in.
const STATUSES: [&str; 8] = [
    "working",
    "input_required",
    "completed",
    "failed",
    "cancelled",
    "done?",
    "working",
    "completed",
];
const ELICIT: &str = "elicitation/create";
/// The input requests a task waiting for input asks, by key (`c` is one nobody answers).
const INPUT_KEYS: [&[(&str, &str)]; 4] = [
    &[("a", ELICIT)],
    &[("b", ELICIT)],
    &[("a", ELICIT), ("b", ELICIT)],
    &[("a", ELICIT), ("c", "sampling/createMessage")],
];

/// The last answer a work leg was given: the leg's kind, and the result fed (`None`: an
/// error, junk, a status or a failure).
type Fed = (LegKind, Option<Map<String, Value>>);

/// One run: the operation, its clock, and what the harness knows independently of it.
struct Harness<'a> {
    bytes: Bytes<'a>,
    session: Session,
    op: Operation,
    clock: ManualClock,
    era: TaskEra,
    action: Action,
    responder: bool,
    /// The legacy server's `tasks.requests.tools.call`, and the tool's `taskSupport`.
    declared: bool,
    support: Option<&'static str>,
    unit: Duration,
    end: Instant,
    /// The deadline's end plus one unit: nothing may reach it.
    limit: Instant,
    /// The task the server created (or the handle's), and (2025-11-25) its session.
    task: Option<String>,
    task_session: Option<String>,
    /// The session id the last `initialize` answer issued, and how many were issued.
    session_id: Option<String>,
    sessions: u32,
    last: Option<Fed>,
    cancelled: bool,
    cancel_at_wait: bool,
    task_cancels: u32,
    /// How often each input request key was asked of the caller; not counted once a result
    /// with `resultType: "input_required"` (a request's own input round) was fed.
    asked: HashMap<String, u32>,
    own_round: bool,
    reports: crate::Reports,
}

/// A delay of `pick² / 16` ms: fine near zero, up to about four seconds.
fn delay(pick: u8) -> Duration {
    Duration::from_millis(u64::from(pick) * u64::from(pick) / 16)
}

/// The text a header carries, decoded from the modern `=?base64?...?=` form when so encoded.
fn header_text(headers: &HeaderMap, name: &str) -> Option<String> {
    let raw = headers.get(name)?.to_str().ok()?;
    let encoded = raw
        .strip_prefix("=?base64?")
        .and_then(|r| r.strip_suffix("?="));
    let Some(encoded) = encoded else {
        return Some(raw.to_owned());
    };
    let decoded = base64::engine::general_purpose::STANDARD.decode(encoded);
    String::from_utf8(decoded.ok()?).ok()
}

/// A JSON-RPC answer (`member`: `result` or `error`) to the request `body`, under its id.
fn rpc(body: &Value, member: &str, value: impl Into<Value>) -> Vec<u8> {
    let id = body.get("id").cloned().unwrap_or(Value::Null);
    let mut answer = Map::from_iter([("jsonrpc".to_owned(), json!("2.0")), ("id".to_owned(), id)]);
    answer.insert(member.to_owned(), value.into());
    Value::Object(answer).to_string().into_bytes()
}

/// The input requests of the key set `pick`, each naming its key in its message.
fn input_requests(pick: u8) -> Value {
    let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
    let ask = |&(key, method): &(&str, &str)| {
        let params = json!({"message": key, "requestedSchema": schema});
        (key.to_owned(), json!({"method": method, "params": params}))
    };
    Value::Object(INPUT_KEYS[usize::from(pick & 3)].iter().map(ask).collect())
}

impl Harness<'_> {
    fn now(&self) -> Instant {
        self.clock.now()
    }

    fn run(&mut self) {
        let mut due = 0;
        for _ in 0..MAX_OUTPUTS {
            let now = self.now();
            match self.op.poll_on(&mut self.session, now) {
                Output::Update(_) => unreachable!("poll_on applies every update"),
                Output::Event(Event::TaskStatus { task_id, .. }) => {
                    assert_eq!(Some(&task_id), self.task.as_ref(), "another task's status");
                }
                Output::Event(_) => {}
                Output::LegEnded(report) => self.reports.saw(&report, self.op.legs_sent()),
                Output::Request(request) => {
                    self.request(&request);
                    let reply = request.reply_from(self.op.session_config());
                    self.op.handle_input(reply, now);
                }
                Output::Transmit(leg) => {
                    due = 0;
                    self.transmit(leg);
                }
                // Every leg is answered as it is handed out: a wait is for a poll, or for the
                // caller's answers, never for a leg.
                Output::Wait(until) => {
                    assert!(until <= self.end, "a wait past the deadline's end");
                    if std::mem::take(&mut self.cancel_at_wait) && !self.op.is_finished() {
                        let at = now + until.saturating_duration_since(now) / 2;
                        self.clock.set(at);
                        self.cancelled = true;
                        self.op.handle_input(Input::Cancel, at);
                    } else if until <= now {
                        due += 1;
                        assert!(due < 100, "the operation keeps waiting for what has come");
                        self.op.handle_input(Input::Timeout, now);
                    } else {
                        due = 0;
                        self.clock.set(until);
                        self.op.handle_input(Input::Timeout, until);
                    }
                }
                Output::AwaitSession(_) => panic!("a lone operation awaits its session"),
                Output::Authorize(_) => _ = self.op.handle_input(Input::NoAuthorizer, now),
                Output::Done(result) => {
                    self.reports.all(self.op.legs_sent());
                    self.done(result);
                    let now = self.now();
                    check_finished(&mut self.op, now);
                    return;
                }
            }
        }
        panic!("the operation did not end within {MAX_OUTPUTS} outputs");
    }

    /// The caller is asked one of the task's input requests (its message names its key).
    fn request(&mut self, request: &ServerRequest) {
        assert!(self.responder, "asked {} with no responder", request.method);
        assert!(request.ends_at <= self.end, "asked past the deadline's end");
        let key = request.params["message"].as_str().unwrap_or("?").to_owned();
        let count = self.asked.entry(key.clone()).or_default();
        *count += 1;
        assert!(*count == 1 || self.own_round, "{key} asked {count} times");
    }

    fn transmit(&mut self, leg: Leg) {
        let (now, number, kind) = (self.now(), leg.id.number(), leg.kind);
        let remaining = self.op.deadline().remaining(now);
        assert!(
            !remaining.is_zero(),
            "leg {number} ({kind:?}) past the deadline's end"
        );
        let notice = matches!(kind, LegKind::CancelNotice | LegKind::TaskCancelNotice);
        // The budget rule, in the harness's own arithmetic: what a leg sent now gets.
        let budget_rule = ceil_to(remaining, self.unit).max(self.unit);
        if notice {
            assert!(self.cancelled, "leg {number}: a notice without a cancel");
            // The notice's cap is a policy: taken from its one definition, so this check
            // follows it; it may only ever take from what a leg would get, never add.
            assert_eq!(
                Some(leg.timeout),
                leg_grant(kind, self.op.deadline(), now, false),
                "leg {number} ({kind:?}): its grant"
            );
            assert!(
                leg.timeout <= budget_rule.min(CANCEL_NOTICE_GRANT),
                "leg {number} ({kind:?}): granted {:?}, more than a leg or the cap",
                leg.timeout
            );
        } else {
            assert_eq!(
                leg.timeout, budget_rule,
                "leg {number} ({kind:?}): its grant"
            );
        }
        assert_eq!(leg.ends_at, now + leg.timeout, "leg {number}: its end");
        assert!(leg.ends_at < self.limit, "leg {number} ends past the limit");
        let body: Value = serde_json::from_slice(leg.request.body()).unwrap_or(Value::Null);
        if kind
            .method()
            .is_some_and(|method| method.starts_with("tasks/"))
        {
            self.check_task_request(&leg, &body);
        }
        match kind {
            LegKind::CallTool
            | LegKind::TaskGet
            | LegKind::TaskUpdate
            | LegKind::TaskResult
            | LegKind::TaskCancel => {
                if kind == LegKind::CallTool && self.era == TaskEra::Legacy {
                    let asks = body.pointer("/params/task").is_some();
                    let should = self.declared && self.support == Some("required");
                    assert_eq!(asks, should, "leg {number}: params.task");
                }
                self.answer(&leg, &body);
            }
            LegKind::Initialize => {
                self.sessions += 1;
                let id = format!("fuzz-session-{}", self.sessions);
                self.session_id = Some(id.clone());
                let mut tasks = json!({});
                if self.declared {
                    tasks = json!({"requests": {"tools": {"call": {}}}, "cancel": {}});
                }
                let result = json!({"protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}, "tasks": tasks},
                    "serverInfo": {"name": "fuzz-tasks", "version": "1"}});
                self.feed(&leg, 200, &rpc(&body, "result", result), Some(&id));
            }
            LegKind::List { .. } => {
                let mut tool = json!({"name": TOOL, "inputSchema": {"type": "object"}});
                if let Some(support) = self.support {
                    tool["execution"] = json!({"taskSupport": support});
                }
                let mut result = json!({"tools": [tool]});
                if self.era == TaskEra::Modern {
                    result["resultType"] = json!("complete");
                }
                self.feed(&leg, 200, &rpc(&body, "result", result), None);
            }
            LegKind::TaskCancelNotice => {
                self.task_cancels += 1;
                assert_eq!(self.task_cancels, 1, "the task was cancelled twice");
                let ack = json!({"resultType": "complete"});
                self.feed(&leg, 200, &rpc(&body, "result", ack), None);
            }
            _ => self.feed(&leg, 202, b"", None),
        }
    }

    /// A `tasks/*` request names the task the server created (or the handle's) in its params,
    /// and in `Mcp-Name` (modern), and speaks in the task's session (legacy).
    fn check_task_request(&self, leg: &Leg, body: &Value) {
        let (number, kind, task) = (leg.id.number(), leg.kind, self.task.as_deref());
        assert!(task.is_some(), "leg {number} ({kind:?}) with no task");
        assert_eq!(body["method"].as_str(), kind.method(), "leg {number}");
        let named = body.pointer("/params/taskId").and_then(Value::as_str);
        assert_eq!(named, task, "leg {number} ({kind:?}): params.taskId");
        let headers = leg.request.headers();
        if self.era == TaskEra::Modern {
            let name = header_text(headers, NAME_HEADER);
            assert_eq!(name.as_deref(), task, "leg {number} ({kind:?}): Mcp-Name");
            let method = header_text(headers, METHOD_HEADER);
            assert_eq!(method.as_deref(), kind.method(), "leg {number}: Mcp-Method");
            assert_ne!(kind, LegKind::TaskResult, "a modern tasks/result");
        } else {
            let session = header_text(headers, SESSION_HEADER);
            assert_eq!(
                session, self.task_session,
                "leg {number}: not the task's session"
            );
            assert_ne!(kind, LegKind::TaskUpdate, "a legacy tasks/update");
        }
    }

    /// A work leg's answer, as the bytes pick (a stall once they are spent).
    fn answer(&mut self, leg: &Leg, body: &Value) {
        let wait = delay(self.bytes.byte());
        let pick = match self.bytes.is_empty() {
            true => 12,
            false => self.bytes.byte() % 16,
        };
        if wait >= leg.timeout || pick == 12 {
            self.clock.set(leg.ends_at);
            self.op.handle_input(Input::Timeout, leg.ends_at);
            return;
        }
        self.clock.advance(wait);
        let now = self.now();
        self.last = Some((leg.kind, None));
        match pick {
            0..=9 => {
                let result = self.task_result(leg.kind, body);
                self.cancel_at_wait = pick == 9;
                self.last = Some((leg.kind, Some(result.clone())));
                self.feed(leg, 200, &rpc(body, "result", result), None);
            }
            10 => {
                let p = self.bytes.byte();
                let codes = [-32603, -32602, -32601, -32600, -32020, -32022, -32000, 1];
                let code = codes[usize::from(p % 8)];
                let mut error = json!({"code": code, "message": "no such task"});
                if code == -32022 {
                    error["data"] = json!({"supported": ["2025-11-25"]});
                }
                let request = if p & 0x08 == 0 { body } else { &Value::Null };
                self.feed(leg, 200, &rpc(request, "error", error), None);
            }
            11 => {
                use TransportErrorKind::{Connect, Io, Protocol, TimedOut};
                let kind = [Connect, Io, Protocol, TimedOut][usize::from(self.bytes.byte() % 4)];
                let error = TransportError::new(kind, "connection reset by peer");
                self.op
                    .handle_input(Input::Failed { leg: leg.id, error }, now);
            }
            13 => {
                let len = usize::from(self.bytes.byte());
                let junk = self.bytes.take(len);
                self.feed(leg, 200, junk, None);
            }
            14 => {
                let status = [404, 500, 400, 202][usize::from(self.bytes.byte() % 4)];
                self.feed(leg, status, b"", None);
            }
            _ => {
                self.cancelled = true;
                self.op.handle_input(Input::Cancel, now);
            }
        }
    }

    /// A result built from task-shaped pieces: status, flags and numbers bytes (see [`tasks`]).
    fn task_result(&mut self, kind: LegKind, body: &Value) -> Map<String, Value> {
        let (s, flags, n) = (self.bytes.byte(), self.bytes.byte(), self.bytes.byte());
        let (status, call) = (STATUSES[usize::from(s & 7)], kind == LegKind::CallTool);
        let (legacy, other_shape) = (self.era == TaskEra::Legacy, flags & 0x80 != 0);
        let id = match (flags & 3, call) {
            (0, true) => json!(TASK_IDS[usize::from(s >> 6)]),
            (0, false) => json!(self.task.as_deref().unwrap_or(TASK_IDS[0])),
            (1, _) => json!("someone-else"),
            (2, _) => Value::Null,
            _ => json!(7),
        };
        let message = (s & 0x20 != 0).then(|| format!("{status} \u{1b}[31mnow"));
        let content = json!([{"type": "text", "text": "done"}]);
        let error = json!({"code": -32603, "message": "the source is down"});
        let (payload, good, bad) = match status {
            "completed" => ("result", json!({"content": content}), json!("done")),
            "failed" => ("error", error, json!(42)),
            "input_required" => ("inputRequests", input_requests(s >> 3), json!([1])),
            _ => ("result", Value::Null, Value::Null),
        };
        let payload_value = match flags >> 5 & 3 {
            0 => good,
            1 => bad,
            _ => Value::Null,
        };
        let numbers: Vec<Value> = serde_json::from_str(NUMBERS).unwrap_or_default();
        let number = |pick: u8| numbers.get(usize::from(pick)).cloned().unwrap_or_default();
        let (ttl, interval) = match legacy != other_shape {
            true => ("ttl", "pollInterval"),
            false => ("ttlMs", "pollIntervalMs"),
        };
        let fields = [
            ("taskId", id.clone()),
            ("status", json!(status)),
            ("statusMessage", json!(message)),
            (interval, number(n & 7)),
            (ttl, number(n >> 3 & 7)),
            (payload, payload_value),
        ];
        let present = fields.into_iter().filter(|(_, value)| !value.is_null());
        let task: Map<String, Value> = present.map(|(k, v)| (k.to_owned(), v)).collect();
        let result_type = match flags >> 2 & 7 {
            3 => "task",
            4 => "complete",
            5 => "",
            6 => "input_required",
            7 => "x",
            _ if call => "task",
            _ => "complete",
        };
        let mut result = match (legacy, kind, other_shape) {
            // A legacy call's task comes under `task`; its result with `tasks/result`.
            (true, LegKind::CallTool, false) => Map::from_iter([("task".to_owned(), task.into())]),
            (true, LegKind::TaskResult, false) => {
                let related = json!({"io.modelcontextprotocol/related-task": {"taskId": id}});
                let done = json!({"content": content, "_meta": related});
                done.as_object().cloned().unwrap_or_default()
            }
            _ => task,
        };
        if !legacy && !result_type.is_empty() {
            self.own_round |= result_type == "input_required";
            result.insert("resultType".to_owned(), json!(result_type));
        }
        // The task the server created, as far as the harness can tell.
        let created = match self.era {
            TaskEra::Modern => result_type == "task",
            _ => result.contains_key("task") && body.pointer("/params/task").is_some(),
        };
        if let (true, Some(id)) = (call && created, id.as_str()) {
            self.task = Some(id.to_owned());
            self.task_session.clone_from(&self.session_id);
        }
        result
    }

    /// Feeds a whole answer to `leg` as a driver does: the head (a body is JSON), the body,
    /// its end.
    fn feed(&mut self, leg: &Leg, status: u16, body: &[u8], session: Option<&str>) {
        let (now, leg) = (self.now(), leg.id);
        let mut headers = HeaderMap::new();
        if !body.is_empty() {
            let json = HeaderValue::from_static("application/json");
            headers.insert(http::header::CONTENT_TYPE, json);
        }
        if let Some(value) = session.and_then(|v| HeaderValue::from_str(v).ok()) {
            headers.insert(SESSION_HEADER, value);
        }
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
        let head = Input::Head {
            leg,
            status,
            headers: &headers,
        };
        if self.op.handle_input(head, now) == LegStatus::ReadMore
            && self.op.handle_input(Input::Chunk { leg, bytes: body }, now) == LegStatus::ReadMore
        {
            self.op.handle_input(Input::End { leg }, now);
        }
    }

    fn done(&mut self, result: Result<Outcome, Error>) {
        assert!(self.now() < self.limit, "Done past the limit");
        let fed = self.last.clone();
        if self.cancelled {
            let cancelled = matches!(result, Err(Error::Cancelled { .. }));
            assert!(cancelled, "cancelled, and ended with {result:?}");
        }
        match result {
            Ok(Outcome::Call(_)) => {
                let call = matches!(self.action, Action::CallTool { .. } | Action::ResumeTask(_));
                assert!(call, "a call's result for {:?}", self.action);
                let Some((kind, Some(fed))) = fed else {
                    panic!("a call's result after {fed:?}, which was no result")
                };
                match (&self.task, self.era) {
                    (Some(task), TaskEra::Modern) => assert!(
                        kind == LegKind::TaskGet
                            && fed.get("status") == Some(&json!("completed"))
                            && fed.get("taskId") == Some(&json!(task)),
                        "a call's result after {kind:?} {fed:?}, not its task's completed status"
                    ),
                    (Some(_), _) => assert_eq!(kind, LegKind::TaskResult, "a call's result"),
                    (None, _) => assert_eq!(kind, LegKind::CallTool, "a call's result"),
                }
            }
            Ok(Outcome::TaskCancelRequested(id)) => {
                let Action::CancelTask(handle) = &self.action else {
                    panic!("a cancel acknowledged for {:?}", self.action)
                };
                assert_eq!(id, handle.task_id);
                let acknowledged = matches!(fed, Some((LegKind::TaskCancel, Some(_))));
                assert!(acknowledged, "a cancel acknowledged after {fed:?}");
            }
            Ok(other) => panic!("{:?} ended with {other:?}", self.action),
            Err(err) => self.check_error(&err),
        }
    }

    fn check_error(&self, err: &Error) {
        let text = err.to_string();
        assert!(
            !text.chars().any(char::is_control),
            "a control character: {text:?}"
        );
        assert!(
            text.chars().count() <= 2_000,
            "an error of {} bytes",
            text.len()
        );
        if let Some(server) = err.server() {
            assert_eq!(server, LABEL, "the error names another server");
        }
        match err {
            Error::TaskRunning { .. } => {
                let handle = err.task().expect("a running task's handle");
                let cancel = matches!(self.action, Action::CancelTask(_));
                assert!(!cancel, "a cancel handed back {handle:?}");
                assert_eq!(Some(&handle.task_id), self.task.as_ref(), "another task");
                assert_eq!(handle.era, self.era, "handed back in another era");
                assert_eq!(handle.server, LABEL);
                assert_eq!(handle.session_id, self.task_session, "in another session");
            }
            Error::TaskCancelled { task_id, .. } => {
                let quoted = self.task.as_deref().map(|task| clip(task, QUOTE_LIMIT));
                assert_eq!(Some(task_id), quoted.as_ref(), "another task was cancelled");
            }
            Error::AlreadyFinished | Error::InvalidUrl { .. } | Error::InvalidHeader { .. } => {
                panic!("an operation ended with a caller error: {err:?}")
            }
            _ => {}
        }
    }
}

/// The tasks target.
///
/// Layout: two setup bytes, then the answers of the legs. Byte 0 = `NTTUQAAE`: `E` the era
/// (0: 2026-07-28, 1: 2025-11-25); `AA` the action (0 and 3: call a tool; 1: resume a handle,
/// 2: cancel one, of task `TASK_IDS[0]`, in session `fuzz-session-0` in the legacy era); `Q` an
/// elicitation responder registered; `U` the resolution (0: ms, 1: s); legacy only: `TT` the
/// tool's `execution.taskSupport` in the listing (`required`, `optional`, none, `forbidden`),
/// `N` the server declares no `tasks.requests.tools.call`. Byte 1: the budget, `200 + 20 * b`
/// ms. The handshake, the listing and the cancel notices are answered healthily at once, each
/// `initialize` with a new session id.
///
/// Each `tools/call` or `tasks/*` leg reads a delay byte (`b² / 16` ms; at or past the grant
/// the leg stalls) and a pick `% 16` (a stall once the bytes are spent): 0-9 a result from
/// three bytes (below), 9 with the caller's cancel at the next wait; 10 a JSON-RPC error (byte:
/// `% 8` the code, `0x08` a null id); 11 a transport failure (byte: its kind); 12 a stall until
/// the leg's end; 13 raw junk (a length byte, those bytes) as a JSON body; 14 an HTTP status
/// (byte `% 4`: 404, 500, 400, 202); 15 the caller cancels. The result's bytes: status
/// `IIMKKSSS` (`SSS` of [`STATUSES`], `KK` of [`INPUT_KEYS`], `M` a status message, `II` the
/// created id of [`TASK_IDS`]); flags `OPPRRRDD` (`DD` the task id: the task's, another, none,
/// a number; `RRR` the `resultType`: natural thrice, `task`, `complete`, none,
/// `input_required`, a bogus one; `PP` the result, error or input requests: as they should be,
/// malformed, absent twice; `O` the other shape: a flat legacy call answer, a task-shaped
/// `tasks/result`, modern numbers under the legacy names); numbers `..TTTIII` (interval and
/// TTL of [`NUMBERS`]).
///
/// Invariants: the operation ends within [`MAX_OUTPUTS`] outputs, before the deadline's end
/// plus one unit, with a typed result, then only `AlreadyFinished`; every leg is handed out
/// with budget left, granted `max(unit, ceil_to_unit(remaining))` (a notice at most
/// [`CANCEL_NOTICE_GRANT`], only after a cancel, the task's once), within that limit; every
/// wait, and every request asked of the caller, ends by the deadline's end; a legacy call asks
/// for a task exactly when the server declares tasks for calls and the tool requires one; every
/// `tasks/*` request names the task the server created (or the handle's) in `params.taskId`,
/// modern also in `Mcp-Name`, legacy in the task's own session; status events are that task's;
/// `TaskRunning` hands back only that task, in its era and session, never from a cancel; a
/// call's result comes only after the task's `completed` status with its id (modern) or a
/// `tasks/result` answer (legacy), or from the call itself when no task was made; a cancel is
/// acknowledged only for the handle; a cancelled operation ends `Cancelled`; an input request
/// key is asked of the caller at most once per task, and only with a responder; every leg is
/// reported once before the result; errors name this server, without control characters.
pub fn tasks(data: &[u8]) {
    let mut bytes = Bytes::new(data);
    let setup = bytes.byte();
    let budget = Budget::from_duration(Duration::from_millis(200 + 20 * u64::from(bytes.byte())));
    let era = [TaskEra::Modern, TaskEra::Legacy][usize::from(setup & 1)];
    let version = [ProtocolVersion::MODERN, ProtocolVersion::V2025_11_25][usize::from(setup & 1)];
    let resolution = [Resolution::MILLISECOND, Resolution::SECOND][usize::from(setup >> 4 & 1)];
    let responder = setup & 0x08 != 0;
    let Ok(config) = SessionConfig::new(URL) else {
        unreachable!("the fuzz URL is valid")
    };
    let mut config = (config.with_protocol_version(version).with_budget(budget))
        .with_resolution(resolution)
        .with_cancel_notice(true)
        .with_tasks(true);
    if responder {
        config = config.respond_to(ELICIT, |params| {
            Ok(accept_elicitation_with_defaults(params))
        });
    }
    let mut session = Session::new(config);
    let clock = ManualClock::new();
    let mut handle = TaskHandle::new(LABEL, TASK_IDS[0], era);
    if era == TaskEra::Legacy {
        handle.session_id = Some("fuzz-session-0".to_owned());
    }
    let now = clock.now();
    let op = match setup >> 1 & 3 {
        1 => session.resume_task(handle.clone(), now),
        2 => session.cancel_task(handle.clone(), now),
        _ => session.call_tool(TOOL, Map::new(), now),
    };
    let deadline = *op.deadline();
    let unit = deadline.resolution().unit();
    let end = deadline.end().expect("the fuzz budgets fit an Instant");
    let handed = !matches!(op.action(), Action::CallTool { .. });
    let mut harness = Harness {
        bytes,
        action: op.action().clone(),
        op,
        session,
        clock,
        era,
        responder,
        declared: setup & 0x80 == 0,
        support: [Some("required"), Some("optional"), None, Some("forbidden")]
            [usize::from(setup >> 5 & 3)],
        unit,
        end,
        limit: end + unit,
        task: handed.then(|| handle.task_id.clone()),
        task_session: handle.session_id.filter(|_| handed),
        session_id: None,
        sessions: 0,
        last: None,
        cancelled: false,
        cancel_at_wait: false,
        task_cancels: 0,
        asked: HashMap::new(),
        own_round: false,
        reports: crate::Reports::default(),
    };
    harness.run();
}
