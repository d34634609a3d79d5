//! Fuzz targets for `mcp-proto`, shared by the cargo-fuzz crate (`fuzz/`) and the stable
//! corpus replay (`tests/tests/corpus_replay.rs`).
//!
//! Each target takes arbitrary bytes, drives a part of the sans-IO client with them and
//! panics **only** when an invariant of `mcp-proto` is violated; any input whatsoever is
//! otherwise fine. The same functions run under libFuzzer on nightly (`fuzz/run.sh`) and, on
//! stable, over every committed seed and regression file in `cargo test`.
//!
//! * [`sse`]: the event-stream parser gives the same events (and the same error) however
//!   the bytes are split, and never holds an event larger than its limit.
//! * [`answer`]: the bytes are the body of the answer to each kind of leg, as JSON and as an
//!   event stream; the operation always ends with a typed result or a typed server error.
//! * [`operation`]: the bytes are a sequence of driver inputs (heads, chunks, ends, transport
//!   errors, timers, cancel, a clock stepping both ways); the operation always ends, grants
//!   follow the budget rule exactly, and nothing happens after `Done`.
//!
//! The byte layouts are documented on each function; `fuzz/seeds.py` writes the seed corpus
//! in those layouts, so keep the two in step.

use std::time::{Duration, Instant};

use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use mcp_proto::jsonrpc::RpcError;
use mcp_proto::model::accept_elicitation_with_defaults;
use mcp_proto::operation::CANCEL_NOTICE_GRANT;
use mcp_proto::sse::{SseError, SseEvent, SseParser};
use mcp_proto::{
    Action, Budget, Clock, Error, Leg, LegKind, LegStatus, ManualClock, Operation,
    OperationDeadline, Outcome, Output, Resolution, Session, SessionConfig, TransportError,
    TransportErrorKind,
};
use serde_json::{Map, Value, json};

/// The event-size limits [`sse`] picks from (its first byte's top two bits).
pub const SSE_LIMITS: [usize; 4] = [4096, 256, 16, 1];
/// The body cap of the sessions [`answer`] drives.
pub const ANSWER_BODY_CAP: usize = 8 * 1024;
/// The body cap of the sessions [`operation`] drives.
pub const OPERATION_BODY_CAP: usize = 64 * 1024;
/// The most inputs [`operation`] applies from one input.
pub const MAX_INPUTS: usize = 10_000;
/// The most body bytes [`operation`] feeds in one run.
pub const MAX_FED: usize = 8 * 1024 * 1024;

const URL: &str = "http://fuzz.test:8080/mcp";
const SESSION_ID: &str = "fuzz-session-1";

/// Reads the fuzzer's bytes front to back; reads past the end yield zeros.
#[derive(Debug)]
struct Bytes<'a> {
    data: &'a [u8],
}

impl<'a> Bytes<'a> {
    fn new(data: &'a [u8]) -> Self {
        Self { data }
    }

    fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&first, rest)) => {
                self.data = rest;
                first
            }
            None => 0,
        }
    }

    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.byte(), self.byte()])
    }

    fn take(&mut self, n: usize) -> &'a [u8] {
        let (taken, rest) = self.data.split_at(n.min(self.data.len()));
        self.data = rest;
        taken
    }

    fn rest(&mut self) -> &'a [u8] {
        self.take(usize::MAX)
    }
}

// ---------------------------------------------------------------------------------------------
// sse
// ---------------------------------------------------------------------------------------------

/// What one parse of a stream produced.
#[derive(Debug, PartialEq)]
struct Parsed {
    events: Vec<SseEvent>,
    result: Result<(), SseError>,
    last_event_id: Option<String>,
    retry: Option<Duration>,
}

fn parse_pieces<'a>(limit: usize, pieces: impl IntoIterator<Item = &'a [u8]>) -> Parsed {
    let mut parser = SseParser::new(limit);
    let mut events = Vec::new();
    let mut result = Ok(());
    for piece in pieces {
        result = parser.feed(piece, &mut events);
        if result.is_err() {
            break;
        }
    }
    if result.is_ok() {
        result = parser.finish(&mut events);
    }
    if let Err(err) = &result {
        // A failed parser stays failed, with the same error, whatever comes next.
        let mut more = Vec::new();
        assert_eq!(
            parser.feed(b"data: x\n\n", &mut more).as_ref(),
            Err(err),
            "a failed parser accepted more input"
        );
        assert_eq!(parser.finish(&mut more).as_ref(), Err(err));
        assert!(more.is_empty(), "a failed parser dispatched {more:?}");
    }
    for event in &events {
        assert!(
            event.data.len() <= limit,
            "an event of {} bytes passed a {limit}-byte limit",
            event.data.len()
        );
    }
    Parsed {
        events,
        result,
        last_event_id: parser.last_event_id().map(str::to_owned),
        retry: parser.retry(),
    }
}

/// The event-stream parser target.
///
/// Layout: byte 0 = `LLBCCCCC` where `LL` picks the event-size limit from [`SSE_LIMITS`],
/// `B` set means "feed byte by byte", and `CCCCC` (0..=31) is the number of cut points that
/// follow as little-endian `u16`s (each taken modulo the stream length + 1). The rest is the
/// stream.
///
/// Invariants: feeding the stream in those pieces (empty ones included) yields the same
/// events, the same error or success, the same last event id and retry as feeding it whole;
/// no event's data exceeds the limit; a failed parser stays failed with the same error.
pub fn sse(data: &[u8]) {
    let mut bytes = Bytes::new(data);
    let head = bytes.byte();
    let limit = SSE_LIMITS[usize::from(head >> 6)];
    let byte_by_byte = head & 0x20 != 0;
    let cut_count = usize::from(head & 0x1f);
    let mut cuts: Vec<usize> = (0..cut_count).map(|_| usize::from(bytes.u16())).collect();
    let stream = bytes.rest();

    let whole = parse_pieces(limit, [stream]);
    let split = if byte_by_byte {
        parse_pieces(limit, stream.chunks(1))
    } else {
        for cut in &mut cuts {
            *cut %= stream.len() + 1;
        }
        cuts.sort_unstable();
        let mut pieces = Vec::with_capacity(cuts.len() + 1);
        let mut start = 0;
        for &cut in &cuts {
            pieces.push(&stream[start..cut]);
            start = cut;
        }
        pieces.push(&stream[start..]);
        parse_pieces(limit, pieces)
    };
    assert_eq!(
        whole, split,
        "splitting the stream changed what it parses to (limit {limit}, cuts {cuts:?}, byte by byte {byte_by_byte})"
    );
}

// ---------------------------------------------------------------------------------------------
// shared driving helpers
// ---------------------------------------------------------------------------------------------

/// Rounds up to the unit, independently of `mcp-proto`'s own arithmetic.
fn ceil_to(d: Duration, unit: Duration) -> Duration {
    let unit = unit.as_nanos().max(1);
    let nanos = d.as_nanos().div_ceil(unit) * unit;
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

/// The last request sent that carries an id (its kind and id): what a resumed stream answers.
type Asked = Option<(LegKind, i64)>;

/// Checks a leg's request against its kind; returns the JSON-RPC id it carries, if any.
fn check_request(leg: &Leg) -> Option<i64> {
    let request = &leg.request;
    let number = leg.number;
    match leg.kind {
        LegKind::Resume => {
            assert_eq!(
                request.method(),
                Method::GET,
                "leg {number}: a resume is a GET"
            );
            assert!(request.body().is_empty(), "leg {number}: a GET with a body");
            None
        }
        LegKind::Close => {
            assert_eq!(
                request.method(),
                Method::DELETE,
                "leg {number}: a close is a DELETE"
            );
            None
        }
        LegKind::Respond => {
            assert_eq!(request.method(), Method::POST);
            let body: Value = serde_json::from_slice(request.body())
                .unwrap_or_else(|err| panic!("leg {number}: a response that is not JSON: {err}"));
            assert!(
                body.get("method").is_none()
                    && body.get("id").is_some()
                    && (body.get("result").is_some() != body.get("error").is_some()),
                "leg {number}: not a JSON-RPC response: {body}"
            );
            None
        }
        LegKind::Initialize
        | LegKind::Initialized
        | LegKind::Ping
        | LegKind::ListTools { .. }
        | LegKind::CallTool
        | LegKind::CancelNotice => {
            assert_eq!(request.method(), Method::POST);
            let body: Value = serde_json::from_slice(request.body())
                .unwrap_or_else(|err| panic!("leg {number}: a body that is not JSON: {err}"));
            assert_eq!(
                body.get("method").and_then(Value::as_str),
                Some(leg.kind.method()),
                "leg {number} carries another method than its kind"
            );
            body.get("id").and_then(Value::as_i64)
        }
        _ => None,
    }
}

/// The result a healthy server gives to a request of `kind`.
fn healthy_result(kind: LegKind, more_pages: bool) -> Value {
    match kind {
        LegKind::Initialize => json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {"listChanged": true}},
            "serverInfo": {"name": "fuzz", "version": "1.0"}
        }),
        LegKind::ListTools { page } => {
            let mut result =
                json!({"tools": [{"name": format!("t{page}"), "inputSchema": {"type": "object"}}]});
            if more_pages {
                result["nextCursor"] = json!(format!("cursor-{page}"));
            }
            result
        }
        LegKind::CallTool => json!({"content": [{"type": "text", "text": "ok"}]}),
        _ => json!({}),
    }
}

/// A healthy server's reply to a leg of `kind` carrying `id`: status, content type, body.
/// A resumed stream answers `asked`; an event-stream answer carries a priming event, a
/// keep-alive and a notification before the answer.
fn healthy_reply(
    kind: LegKind,
    id: Option<i64>,
    asked: Asked,
    sse: bool,
    more_pages: bool,
) -> (StatusCode, Option<&'static str>, Vec<u8>) {
    let (kind, id, sse) = match kind {
        LegKind::Initialize | LegKind::Ping | LegKind::ListTools { .. } | LegKind::CallTool => {
            (kind, id, sse)
        }
        LegKind::Resume => match asked {
            Some((kind, id)) => (kind, Some(id), true),
            None => {
                return (
                    StatusCode::OK,
                    Some("text/event-stream"),
                    b": nothing to resume\n\n".to_vec(),
                );
            }
        },
        LegKind::Close => return (StatusCode::NO_CONTENT, None, Vec::new()),
        _ => return (StatusCode::ACCEPTED, None, Vec::new()),
    };
    let message = json!({"jsonrpc": "2.0", "id": id, "result": healthy_result(kind, more_pages)});
    if sse {
        let note = r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"working"}}"#;
        let body = format!(
            "id: 0\ndata:\n\n: keepalive\n\ndata: {note}\n\nevent: message\nid: 1\ndata: {message}\n\n"
        );
        (StatusCode::OK, Some("text/event-stream"), body.into_bytes())
    } else {
        (
            StatusCode::OK,
            Some("application/json"),
            message.to_string().into_bytes(),
        )
    }
}

/// Response headers: the content type, and a good session id on an `initialize` answer.
fn headers(content_type: Option<&'static str>, kind: LegKind) -> HeaderMap {
    let mut headers = HeaderMap::new();
    if let Some(content_type) = content_type {
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    }
    if kind == LegKind::Initialize {
        headers.insert("mcp-session-id", HeaderValue::from_static(SESSION_ID));
    }
    headers
}

/// An error's message must be one safe line: server text is clipped and has no controls.
fn check_message(err: &Error) {
    let text = err.to_string();
    assert!(
        !text.chars().any(char::is_control),
        "an error message carries a control character: {text:?}"
    );
    assert!(
        text.chars().count() <= 2_000,
        "an error message of {} characters",
        text.chars().count()
    );
    if let Some(server) = err.server() {
        assert_eq!(server, "fuzz.test:8080", "the error names another server");
    }
}

fn outcome_fits(action: &Action, outcome: &Outcome) -> bool {
    matches!(
        (action, outcome),
        (Action::Probe, Outcome::Probe(_))
            | (Action::ListTools, Outcome::Tools(_))
            | (Action::CallTool { .. }, Outcome::Call(_))
            | (Action::Close, Outcome::Closed)
    )
}

/// After `Done`, polling only ever says the operation already finished.
fn check_finished(op: &mut Operation<'_>, now: Instant) {
    for _ in 0..3 {
        match op.poll_output(now) {
            Output::Done(Err(Error::AlreadyFinished)) => {}
            other => panic!("polled after Done, the operation gave {other:?}"),
        }
    }
}

/// The fuzzed answer [`Driver`] gives to the first leg of its target kind.
#[derive(Debug)]
struct Fuzzed<'a> {
    target: Target,
    status: StatusCode,
    content_type: &'static str,
    body: &'a [u8],
    split: u8,
    used: bool,
}

/// A driver as the module docs of `mcp_proto::operation` describe it: it answers every leg
/// (healthily, or with the fuzzed answer), drains outputs between body chunks and runs nested
/// legs, and sleeps (moves the clock) only when told to wait.
#[derive(Debug)]
struct Driver<'s, 'a> {
    op: Operation<'s>,
    clock: ManualClock,
    asked: Asked,
    fuzzed: Option<Fuzzed<'a>>,
    waited: bool,
    outputs: usize,
}

impl Driver<'_, '_> {
    fn poll(&mut self) -> Output {
        // A few legs of healthy answers in 7-byte chunks, plus the fuzzed body byte by byte.
        let limit = 1024 + 2 * self.fuzzed.as_ref().map_or(0, |f| f.body.len());
        self.outputs += 1;
        assert!(
            self.outputs <= limit,
            "the operation did not end within {limit} outputs"
        );
        self.op.poll_output(self.clock.now())
    }

    fn run(&mut self) -> Result<Outcome, Error> {
        loop {
            match self.poll() {
                Output::Event(_) => {}
                Output::Wait(until) => {
                    // Every leg was answered to its end, so this is the wait before resuming a
                    // stream, which always ends before the deadline. (The clock only moves
                    // here, so a leg still in flight would end at or after the deadline.)
                    let end = self.op.deadline().end();
                    assert!(
                        end.is_none_or(|end| until < end),
                        "a leg is still in flight after its body ended (a wait until {until:?}, the deadline is {end:?})"
                    );
                    self.waited = true;
                    if until > self.clock.now() {
                        self.clock.set(until);
                    }
                    self.op.handle_timeout(self.clock.now());
                }
                Output::Transmit(leg) => {
                    if let Some(result) = self.run_leg(&leg) {
                        return result;
                    }
                }
                Output::Done(result) => return result,
            }
        }
    }

    /// Runs one leg to its end; `Some(result)` when the operation ended meanwhile.
    fn run_leg(&mut self, leg: &Leg) -> Option<Result<Outcome, Error>> {
        assert!(
            !leg.timeout.is_zero(),
            "leg {} was granted zero",
            leg.number
        );
        let id = check_request(leg);
        let asked = self.asked;
        if let Some(id) = id {
            self.asked = Some((leg.kind, id));
        }
        let now = self.clock.now();
        let (status, headers, body, split) = match self.fuzzed.as_mut() {
            Some(fuzzed) if !fuzzed.used && fuzzed.target.matches(leg.kind) => {
                fuzzed.used = true;
                (
                    fuzzed.status,
                    headers(Some(fuzzed.content_type), leg.kind),
                    fuzzed.body.to_vec(),
                    fuzzed.split,
                )
            }
            _ => {
                let (status, content_type, body) = healthy_reply(leg.kind, id, asked, false, false);
                (status, headers(content_type, leg.kind), body, 7)
            }
        };
        if self.op.handle_response(status, &headers, now) == LegStatus::Complete {
            return None;
        }
        let size = if split == 0 {
            body.len().max(1)
        } else {
            usize::from(split % 64) + 1
        };
        for chunk in body.chunks(size) {
            if split & 0x80 != 0 && self.op.handle_body_chunk(b"", now) == LegStatus::Complete {
                return None;
            }
            if self.op.handle_body_chunk(chunk, now) == LegStatus::Complete {
                return None;
            }
            // Between chunks: notifications out, nested legs run, until told to wait.
            loop {
                match self.poll() {
                    Output::Event(_) => {}
                    Output::Wait(_) => break,
                    Output::Done(result) => return Some(result),
                    Output::Transmit(nested) => {
                        if let Some(result) = self.run_leg(&nested) {
                            return Some(result);
                        }
                    }
                }
            }
        }
        self.op.handle_body_end(now);
        None
    }
}

/// Establishes `session` with a healthy probe, so the next operation starts on a live session.
fn establish(session: &mut Session, clock: &ManualClock) {
    let mut driver = Driver {
        op: session.probe(clock.now()),
        clock: clock.clone(),
        asked: None,
        fuzzed: None,
        waited: false,
        outputs: 0,
    };
    let result = driver.run();
    assert!(
        matches!(result, Ok(Outcome::Probe(_))),
        "a healthy probe failed: {result:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// answer
// ---------------------------------------------------------------------------------------------

/// The statuses [`answer`] and [`operation`] pick from for their "unusual status" byte.
const STATUSES: [u16; 28] = [
    200, 201, 202, 204, 206, 299, 100, 101, 199, 301, 302, 304, 307, 400, 401, 403, 404, 405, 406,
    409, 413, 415, 422, 429, 500, 502, 503, 599,
];

fn status_from(byte: u8) -> StatusCode {
    let code = if byte < 160 {
        200
    } else {
        STATUSES[usize::from(byte - 160) % STATUSES.len()]
    };
    StatusCode::from_u16(code).unwrap_or(StatusCode::OK)
}

/// Which leg [`answer`] feeds the fuzzed body to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Initialize,
    Initialized,
    ListTools,
    CallTool,
    Ping,
}

impl Target {
    const ALL: [Self; 5] = [
        Self::Initialize,
        Self::Initialized,
        Self::ListTools,
        Self::CallTool,
        Self::Ping,
    ];

    fn matches(self, kind: LegKind) -> bool {
        matches!(
            (self, kind),
            (Self::Initialize, LegKind::Initialize)
                | (Self::Initialized, LegKind::Initialized)
                | (Self::ListTools, LegKind::ListTools { .. })
                | (Self::CallTool, LegKind::CallTool)
                | (Self::Ping, LegKind::Ping)
        )
    }
}

/// The answer-decoding target.
///
/// Layout: byte 0 picks the status (below 160: 200; otherwise one of a list of unusual
/// statuses), byte 1 the chunking (0: one chunk; otherwise chunks of `byte % 64 + 1` bytes,
/// with an empty chunk before each when its top bit is set). The rest is the body.
///
/// For each kind of leg (initialize, notifications/initialized, tools/list, tools/call,
/// ping), as `application/json` and as `text/event-stream`, an operation is driven to that
/// leg with healthy answers, the leg is answered with the fuzzed status and body (then the
/// body's end), and any later legs (nested answers to server requests, a resumed stream,
/// further pages) healthily. Invariants: the operation reaches `Done` within a bounded number
/// of outputs, and no leg is left in flight once its body ended (a wait is only ever a
/// resumption's, before the deadline); the result fits the action, or is an error a server can
/// cause (never a transport, cancel, caller or expired-session error, and a spent budget only
/// after a resumption wait); its message is one clipped line; nothing follows `Done`.
pub fn answer(data: &[u8]) {
    let mut bytes = Bytes::new(data);
    let status = status_from(bytes.byte());
    let split = bytes.byte();
    let body = bytes.rest();
    for target in Target::ALL {
        for content_type in ["application/json", "text/event-stream"] {
            answer_one(target, content_type, status, split, body);
        }
    }
}

fn answer_one(
    target: Target,
    content_type: &'static str,
    status: StatusCode,
    split: u8,
    body: &[u8],
) {
    let clock = ManualClock::new();
    let config = SessionConfig::new(URL)
        .expect("the fuzz URL is valid")
        .body_cap(ANSWER_BODY_CAP);
    let mut session = Session::new(config);
    if target == Target::Ping {
        establish(&mut session, &clock);
    }
    let action = match target {
        Target::Ping => Action::Probe,
        Target::ListTools => Action::ListTools,
        Target::Initialize | Target::Initialized | Target::CallTool => Action::CallTool {
            name: "echo".to_owned(),
            arguments: Map::new(),
        },
    };
    let deadline = OperationDeadline::start(clock.now(), Budget::DEFAULT, Resolution::SECOND);
    let mut driver = Driver {
        op: session.start(action.clone(), deadline),
        clock: clock.clone(),
        asked: None,
        fuzzed: Some(Fuzzed {
            target,
            status,
            content_type,
            body,
            split,
            used: false,
        }),
        waited: false,
        outputs: 0,
    };
    let result = driver.run();
    let context = format!("{target:?} leg answered {status} as {content_type}");
    match &result {
        Ok(outcome) => assert!(
            outcome_fits(&action, outcome),
            "{context}: {outcome:?} for {action:?}"
        ),
        Err(err) => {
            check_message(err);
            match err {
                // A server may ask for a resumption wait that the budget cannot cover: that is
                // the request timing out, at once.
                Error::LegTimedOut { .. } => {}
                Error::BudgetExhausted { .. } if driver.waited => {}
                Error::BudgetExhausted { .. }
                | Error::Unreachable { .. }
                | Error::Cancelled { .. }
                | Error::SessionExpired { .. }
                | Error::InvalidUrl { .. }
                | Error::InvalidHeader { .. }
                | Error::AlreadyFinished => panic!("{context}: an answer caused {err:?}"),
                _ => {}
            }
        }
    }
    assert!(
        driver.fuzzed.as_ref().is_some_and(|f| f.used),
        "{context}: ended before the target leg: {result:?}"
    );
    check_finished(&mut driver.op, clock.now());
}

// ---------------------------------------------------------------------------------------------
// operation
// ---------------------------------------------------------------------------------------------

/// Body fragments [`operation`] picks from: JSON and event-stream pieces of real answers.
const FRAGMENTS: [&[u8]; 40] = [
    br#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"f","version":"1"}}}"#,
    br#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"hi"}]}}"#,
    br#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object"}}],"nextCursor":"c2"}}"#,
    br#"{"jsonrpc":"2.0","id":3,"result":{"tools":[]}}"#,
    br#"{"jsonrpc":"2.0","id":2,"result":{}}"#,
    br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}"#,
    br#"{"jsonrpc":"2.0","id":"x","error":{"code":-32000,"message":"line\nbreak","data":[1]}}"#,
    br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1,"total":2}}"#,
    br#"{"jsonrpc":"2.0","id":"srv-1","method":"roots/list"}"#,
    br#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"1999-01-01"}}"#,
    b"{\"jsonrpc\":",
    b"\"2.0\",\"id\":",
    b"2,\"result\":",
    b"{\"content\":[]}}",
    b"}",
    b"[",
    b"null",
    b"\"\\u0000\"",
    b"99999999999999999999999",
    b"{\"a\":",
    b"\xff\xfe",
    b"\xe2\x82",
    b"\xac",
    b"data: ",
    b"data:",
    b"event: message\n",
    b"id: 0\ndata:\n\n",
    b"id: 7b0a1c2e-0000-4000-8000-000000000001\n",
    b": keepalive\n\n",
    b"retry: 1000\n",
    b"\n",
    b"\r\n",
    b"\r",
    b"\n\n",
    b"\xef\xbb\xbf",
    b"data: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[]}}\n\n",
    b"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n",
    b"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":\"2025-11-25\"}}\r\n\r\n",
    b"data: not json\n\n",
    b"data: [1,2]\n\n",
];

/// Filler patterns for big chunks (to reach the body cap with few input bytes).
const FILLERS: [&[u8]; 6] = [
    b"a",
    b" ",
    b"data: xxxxxxxxxxxxxxxx\n",
    b"{\"a\":[",
    b": keepalive\n\n",
    b"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n",
];

/// Content types [`operation`] picks from, and whether each is read as JSON.
const CONTENT_TYPES: [(Option<&str>, bool); 8] = [
    (None, true),
    (Some("application/json"), true),
    (Some("Application/JSON; charset=utf-8"), true),
    (Some("text/event-stream"), false),
    (Some("text/event-stream; charset=UTF-8"), false),
    (Some("text/html"), false),
    (Some(""), true),
    (Some("application/problem+json"), false),
];

const SESSION_IDS: [Option<&[u8]>; 6] = [
    None,
    Some(b"sess-1"),
    Some(b"sess-2"),
    Some(b""),
    Some(b"bad id"),
    Some(b"\xc3\xa9t\xc3\xa9"),
];

const CONTENT_LENGTHS: [Option<&str>; 7] = [
    None,
    Some("0"),
    Some("120"),
    Some("65537"),
    Some("99999999999999999999999"),
    Some("abc"),
    Some(" 12 "),
];

const DETAILS: [&str; 4] = [
    "",
    "connection reset by peer",
    "line one\r\nline two \u{1b}[31mred",
    "a very long reason that goes on and on and on and on and on and on and on and on and on and on and on and on and on and on and on and on and on and on and on and on and on and on and on and on",
];

/// The longest the clock may be stepped backwards in total in one run.
const MAX_REWIND: Duration = Duration::from_secs(120);

/// A leg the harness saw transmitted.
#[derive(Debug, Clone, Copy)]
struct Sent {
    kind: LegKind,
    id: Option<i64>,
    ends_at: Instant,
    /// A healthy answer ran it to its end.
    answered: bool,
}

/// The state of one [`operation`] run: the operation, its clock and what the checks track.
struct Harness<'s> {
    op: Operation<'s>,
    clock: ManualClock,
    started: Instant,
    total: Duration,
    unit: Duration,
    progress: bool,
    /// The legs sent since the last one that was not nested, innermost last (an answer to a
    /// server request on top of the stream it came on): the legs that may be in flight.
    stack: Vec<Sent>,
    asked: Asked,
    /// The ids of every `tools/call` sent.
    calls: Vec<i64>,
    transmits: u32,
    /// `Done` was returned once.
    done: bool,
    /// Bytes of a JSON body fed to the leg being read, while one is being read as JSON.
    json_fed: Option<usize>,
    /// The next `Done` must be this kind of error.
    expect: Option<&'static str>,
    fed: usize,
    rewound: Duration,
}

impl std::fmt::Debug for Harness<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Harness")
            .field("total", &self.total)
            .field("unit", &self.unit)
            .field("stack", &self.stack)
            .field("transmits", &self.transmits)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl Harness<'_> {
    fn now(&self) -> Instant {
        self.clock.now()
    }

    /// One `poll_output`, checked.
    fn poll(&mut self) -> Output {
        let now = self.now();
        let output = self.op.poll_output(now);
        if self.done {
            assert!(
                matches!(output, Output::Done(Err(Error::AlreadyFinished))),
                "after Done the operation gave {output:?}"
            );
            return output;
        }
        match &output {
            Output::Transmit(leg) => {
                assert!(
                    self.expect.is_none(),
                    "expected {:?} but the operation transmitted {leg:?}",
                    self.expect
                );
                let id = self.check_leg(leg, now);
                self.transmits += 1;
                assert_eq!(self.op.legs_sent(), self.transmits, "legs_sent() miscounts");
                if leg.kind != LegKind::Respond {
                    // Only an answer to a server request nests; anything else is sent alone.
                    self.stack.clear();
                }
                self.stack.push(Sent {
                    kind: leg.kind,
                    id,
                    ends_at: leg.ends_at,
                    answered: false,
                });
                if let Some(id) = id {
                    self.asked = Some((leg.kind, id));
                    if leg.kind == LegKind::CallTool {
                        self.calls.push(id);
                    }
                }
                self.json_fed = None;
            }
            Output::Wait(until) => {
                let end = self.started + self.total;
                assert!(
                    self.stack.iter().any(|leg| leg.ends_at == *until) || *until <= end,
                    "a wait until {until:?} is neither a leg's end ({:?}) nor within the deadline ({end:?})",
                    self.stack
                );
                assert!(
                    self.expect.is_none(),
                    "expected {:?} but the operation waits",
                    self.expect
                );
            }
            Output::Event(_) => {}
            Output::Done(result) => {
                self.done = true;
                assert!(self.op.is_finished(), "Done, yet not finished");
                match result {
                    Ok(outcome) => assert!(
                        outcome_fits(self.op.action(), outcome),
                        "{outcome:?} for {:?}",
                        self.op.action()
                    ),
                    Err(err) => {
                        check_message(err);
                        self.check_error(err, now);
                    }
                }
                if let Some(expected) = self.expect {
                    let got = match result {
                        Err(Error::Cancelled { .. }) => "Cancelled",
                        Err(Error::AnswerTooLarge { .. }) => "AnswerTooLarge",
                        _ => "something else",
                    };
                    assert_eq!(got, expected, "the operation ended with {result:?}");
                }
            }
        }
        output
    }

    fn check_leg(&self, leg: &Leg, now: Instant) -> Option<i64> {
        assert!(
            !leg.timeout.is_zero(),
            "leg {} was granted zero",
            leg.number
        );
        assert_eq!(leg.number, self.transmits + 1, "legs are numbered in order");
        let elapsed = now.saturating_duration_since(self.started);
        assert!(
            elapsed < self.total,
            "leg {} was sent {elapsed:?} into a {:?} budget",
            leg.number,
            self.total
        );
        assert!(
            leg.timeout <= ceil_to(self.total, self.unit),
            "leg {} was granted {:?}, beyond the {:?} budget rounded up to {:?}",
            leg.number,
            leg.timeout,
            self.total,
            self.unit
        );
        let expected = ceil_to(self.total - elapsed, self.unit).max(self.unit);
        assert_eq!(
            leg.timeout, expected,
            "leg {} sent {elapsed:?} into a {:?} budget at a {:?} unit",
            leg.number, self.total, self.unit
        );
        assert_eq!(
            leg.ends_at,
            now + leg.timeout,
            "the leg's end is not now + grant"
        );
        if let Some(id) = leg.request.headers().get("mcp-session-id") {
            let id = id.as_bytes();
            assert!(
                !id.is_empty() && id.len() <= 256 && id.iter().all(|b| (0x21..=0x7e).contains(b)),
                "an invalid session id was echoed: {id:?}"
            );
        }
        let id = check_request(leg);
        if leg.kind == LegKind::CallTool {
            let body: Value = serde_json::from_slice(leg.request.body()).unwrap_or_default();
            let token = body.pointer("/params/_meta/progressToken");
            if self.progress {
                assert_eq!(token.and_then(Value::as_i64), id, "the progress token");
            } else {
                assert!(token.is_none(), "a progress token nobody asked for");
            }
        }
        id
    }

    fn check_error(&self, err: &Error, now: Instant) {
        let elapsed = now.saturating_duration_since(self.started);
        match err {
            Error::BudgetExhausted { budget, leg, .. } => {
                assert!(
                    elapsed >= self.total,
                    "refused {elapsed:?} into a {:?} budget",
                    self.total
                );
                assert_eq!(*leg, self.transmits + 1, "the refused leg's number");
                assert_eq!(
                    budget.as_duration(),
                    self.total,
                    "the refusal names the budget"
                );
            }
            Error::AlreadyFinished | Error::InvalidUrl { .. } | Error::InvalidHeader { .. } => {
                panic!("an operation ended with a caller error: {err:?}")
            }
            _ => {}
        }
    }

    /// A response head from the dictionaries: content type and session id from `flags`,
    /// content length from `length_pick`.
    fn head(&mut self, status: StatusCode, flags: u8, length_pick: u8) {
        let (content_type, json) = CONTENT_TYPES[usize::from(flags & 7)];
        let mut map = HeaderMap::new();
        if let Some(content_type) = content_type {
            map.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
        }
        if flags >> 3 == 31 {
            // A session id just over the longest accepted.
            map.insert(
                "mcp-session-id",
                HeaderValue::from_str(&"s".repeat(257)).expect("visible ASCII"),
            );
        } else if let Some(id) = SESSION_IDS[usize::from(flags >> 3) % SESSION_IDS.len()] {
            if let Ok(value) = HeaderValue::from_bytes(id) {
                map.insert("mcp-session-id", value);
            }
        }
        if let Some(length) = CONTENT_LENGTHS[usize::from(length_pick) % CONTENT_LENGTHS.len()] {
            map.insert(CONTENT_LENGTH, HeaderValue::from_static(length));
        }
        let _ = self.head_with(status, &map, json);
    }

    fn head_with(&mut self, status: StatusCode, map: &HeaderMap, json: bool) -> LegStatus {
        let read = self.op.handle_response(status, map, self.now());
        if read == LegStatus::ReadMore {
            assert!(status.is_success(), "a {status} head asked for the body");
            self.json_fed = json.then_some(0);
        } else if self.op.is_finished() {
            self.json_fed = None;
        }
        read
    }

    fn chunk(&mut self, chunk: &[u8]) -> LegStatus {
        if self.fed.saturating_add(chunk.len()) > MAX_FED {
            return LegStatus::ReadMore;
        }
        self.fed += chunk.len();
        let read = self.op.handle_body_chunk(chunk, self.now());
        if let Some(fed) = self.json_fed.as_mut() {
            *fed += chunk.len();
            let fed = *fed;
            if read == LegStatus::ReadMore {
                assert!(
                    fed <= OPERATION_BODY_CAP,
                    "{fed} bytes of a JSON body were buffered under a {OPERATION_BODY_CAP}-byte cap"
                );
            } else {
                assert!(
                    fed > OPERATION_BODY_CAP,
                    "a JSON body leg completed after only {fed} bytes, before its end"
                );
                self.expect = Some("AnswerTooLarge");
                self.json_fed = None;
            }
        }
        read
    }

    fn end(&mut self) {
        self.op.handle_body_end(self.now());
        self.json_fed = None;
    }

    fn timeout(&mut self) {
        let now = self.now();
        self.op.handle_timeout(now);
        if self.stack.iter().any(|leg| now >= leg.ends_at) {
            self.json_fed = None;
        }
    }

    fn cancel(&mut self) {
        let was_finished = self.op.is_finished();
        self.op.cancel();
        assert!(
            self.op.is_finished(),
            "a cancelled operation is not finished"
        );
        if !was_finished {
            self.expect = Some("Cancelled");
        }
        self.json_fed = None;
        // The optional notice for the server: only about a tools/call that was sent.
        let now = self.now();
        if let Some(notice) = self.op.cancel_notice(now) {
            assert_eq!(notice.kind, LegKind::CancelNotice);
            assert_eq!(notice.timeout, CANCEL_NOTICE_GRANT);
            assert_eq!(notice.ends_at, now + CANCEL_NOTICE_GRANT);
            let body: Value = serde_json::from_slice(notice.request.body()).unwrap_or_default();
            assert_eq!(body["method"], "notifications/cancelled");
            let id = body.pointer("/params/requestId").and_then(Value::as_i64);
            assert!(
                id.is_some_and(|id| self.calls.contains(&id)),
                "a cancel notice about {id:?}, not a tools/call that was sent ({:?})",
                self.calls
            );
        }
    }

    /// Answers the innermost leg not yet answered as a healthy server would, through the
    /// checked inputs.
    fn healthy(&mut self, flags: u8) {
        let Some(top) = self.stack.iter_mut().rev().find(|leg| !leg.answered) else {
            return;
        };
        let (kind, id) = (top.kind, top.id);
        let (status, content_type, body) =
            healthy_reply(kind, id, self.asked, flags & 1 != 0, flags & 2 != 0);
        let json = content_type.is_none_or(|c| c == "application/json");
        let ended = match self.head_with(status, &headers(content_type, kind), json) {
            // A leg whose answer is not read ends at its head; any other leg that answers
            // Complete here was already reading a body (the head went nowhere).
            LegStatus::Complete => body.is_empty(),
            LegStatus::ReadMore => {
                if self.chunk(&body) == LegStatus::ReadMore {
                    if flags & 4 != 0 {
                        // The body does not end (yet): the leg stays in flight.
                        return;
                    }
                    self.end();
                }
                true
            }
        };
        if ended {
            if let Some(top) = self.stack.iter_mut().rev().find(|leg| !leg.answered) {
                top.answered = true;
            }
        }
    }
}

/// Picks the operation's kind, budget and resolution from the first bytes.
fn setup(bytes: &mut Bytes<'_>) -> (Action, u8, Budget, Resolution, u32) {
    let pick = bytes.byte();
    let action = match pick % 4 {
        0 => Action::Probe,
        1 => Action::ListTools,
        2 => Action::CallTool {
            name: "echo".to_owned(),
            arguments: Map::new(),
        },
        _ => Action::Close,
    };
    let budget_pick = bytes.byte();
    let budget = if budget_pick < 240 {
        Budget::from_secs(u64::from(budget_pick % 30) + 1)
    } else {
        // Sub-second budgets, zero included (raised to one unit).
        Budget::from_duration(Duration::from_millis(u64::from(budget_pick - 240) * 61))
    };
    let resolution_pick = bytes.byte();
    let resolution = match resolution_pick % 4 {
        0 | 1 => Resolution::SECOND,
        2 => Resolution::MILLISECOND,
        _ => Resolution::from_unit(Duration::from_millis(u64::from(resolution_pick >> 2) + 1))
            .unwrap_or(Resolution::SECOND),
    };
    let max_pages = u32::from(bytes.byte() % 8) + 1;
    (action, pick, budget, resolution, max_pages)
}

/// The whole-operation target.
///
/// Layout: four setup bytes, then inputs. Setup: the action byte (`% 4` = probe, list tools,
/// call tool, close; `0x04` asks for progress; `0x08` registers responders for
/// `elicitation/create` (accept with defaults) and `roots/list` (an error); `0x80` starts on a
/// live session); the budget byte (below 240: `% 30 + 1` seconds, else `(b - 240) * 61` ms);
/// the resolution byte (`% 4` = second, second, millisecond, `(b >> 2) + 1` ms); the page
/// ceiling byte (`% 8 + 1`). Each input is an opcode byte (`% 16`) and its operands:
///
/// | op | input |
/// |---|---|
/// | 0, 1 | `poll_output(now)` |
/// | 2 | head: status byte (below 160: 200, below 224: unusual list, else a `u16`: `% 500 + 100`), header byte (`& 7` content type, `>> 3` session id), content-length byte |
/// | 3 | a healthy answer to the innermost leg: flags (`1` SSE, `2` more pages, `4` no body end) |
/// | 4, 5 | body chunk from the fragment dictionary (index byte) |
/// | 6 | raw body chunk: length byte, then that many bytes |
/// | 7 | big chunk: `(b % 64 + 1)` KiB of a filler (second byte) |
/// | 8 | body end |
/// | 9 | transport error: kind byte (`% 3`), detail (`>> 2`) |
/// | 10 | `handle_timeout(now)` |
/// | 11 | `cancel()` (and `cancel_notice`) |
/// | 12 | clock forward `u16` ms |
/// | 13 | clock backward `u16 % 10_000` ms (at most 120 s in all) |
/// | 14 | clock to the innermost leg's end, then `handle_timeout` |
/// | 15 | `poll_event()` |
///
/// Invariants: the operation reaches `Done` (after the input, at most [`MAX_INPUTS`] of them,
/// a few timer firings at advancing time end it); after `Done` polling only yields
/// `AlreadyFinished` and no event comes out; every grant is exactly
/// `max(unit, ceil_to_unit(total - elapsed))`, so never zero and never beyond the budget
/// rounded up; a refusal comes only once the budget is spent and nothing is sent after it; a
/// cancel before the end ends it with `Cancelled`, and a cancel notice only names a
/// `tools/call` that was sent; a JSON body never buffers more than the cap, and overflowing it
/// ends with `AnswerTooLarge`; a `Wait` is the end of a leg that may be in flight or a
/// resumption within the deadline; requests match their kind and echo only valid session ids;
/// error messages are one clipped line.
pub fn operation(data: &[u8]) {
    let mut bytes = Bytes::new(data);
    let (action, pick, budget, resolution, max_pages) = setup(&mut bytes);
    let clock = ManualClock::new();
    let progress = pick & 0x04 != 0;
    let mut config = SessionConfig::new(URL)
        .expect("the fuzz URL is valid")
        .body_cap(OPERATION_BODY_CAP)
        .max_pages(max_pages)
        .progress(progress);
    if pick & 0x08 != 0 {
        config = config
            .respond_to("elicitation/create", |params| {
                Ok(accept_elicitation_with_defaults(params))
            })
            .respond_to("roots/list", |_| {
                Err(RpcError {
                    code: -32000,
                    message: "no roots here".to_owned(),
                    data: None,
                })
            });
    }
    let mut session = Session::new(config);
    if pick & 0x80 != 0 {
        establish(&mut session, &clock);
    }
    let started = clock.now();
    let deadline = OperationDeadline::start(started, budget, resolution);
    let unit = resolution.unit();
    let mut h = Harness {
        op: session.start(action, deadline),
        clock: clock.clone(),
        started,
        total: budget.as_duration().max(unit),
        unit,
        progress,
        stack: Vec::new(),
        asked: None,
        calls: Vec::new(),
        transmits: 0,
        done: false,
        json_fed: None,
        expect: None,
        fed: 0,
        rewound: Duration::ZERO,
    };
    let mut inputs = 0;
    while !bytes.is_empty() && inputs < MAX_INPUTS {
        inputs += 1;
        apply(&mut h, &mut bytes);
    }
    finish(&mut h);
}

fn apply(h: &mut Harness<'_>, bytes: &mut Bytes<'_>) {
    match bytes.byte() % 16 {
        0 | 1 => {
            let _ = h.poll();
        }
        2 => {
            let pick = bytes.byte();
            let status = match pick {
                0..160 => StatusCode::OK,
                160..224 => status_from(pick),
                _ => StatusCode::from_u16(bytes.u16() % 500 + 100).unwrap_or(StatusCode::OK),
            };
            let flags = bytes.byte();
            let length = bytes.byte();
            h.head(status, flags, length);
        }
        3 => {
            let flags = bytes.byte();
            h.healthy(flags);
        }
        4 | 5 => {
            let fragment = FRAGMENTS[usize::from(bytes.byte()) % FRAGMENTS.len()];
            let _ = h.chunk(fragment);
        }
        6 => {
            let len = usize::from(bytes.byte());
            let raw = bytes.take(len);
            let _ = h.chunk(raw);
        }
        7 => {
            let kib = usize::from(bytes.byte() % 64) + 1;
            let filler = FILLERS[usize::from(bytes.byte()) % FILLERS.len()];
            let big: Vec<u8> = filler.iter().copied().cycle().take(kib * 1024).collect();
            let _ = h.chunk(&big);
        }
        8 => h.end(),
        9 => {
            let pick = bytes.byte();
            let kind = match pick % 3 {
                0 => TransportErrorKind::TimedOut,
                1 => TransportErrorKind::Connect,
                _ => TransportErrorKind::Io,
            };
            let detail = DETAILS[usize::from(pick >> 2) % DETAILS.len()];
            h.op.handle_transport_error(TransportError::new(kind, detail), h.now());
            h.json_fed = None;
        }
        10 => h.timeout(),
        11 => h.cancel(),
        12 => h
            .clock
            .advance(Duration::from_millis(u64::from(bytes.u16()))),
        13 => {
            let back = Duration::from_millis(u64::from(bytes.u16() % 10_000))
                .min(MAX_REWIND.saturating_sub(h.rewound));
            h.rewound += back;
            h.clock.rewind(back);
        }
        14 => {
            if let Some(top) = h.stack.last() {
                if top.ends_at > h.now() {
                    h.clock.set(top.ends_at);
                }
            }
            h.timeout();
        }
        _ => {
            if h.op.poll_event().is_some() {
                assert!(!h.done, "an event came out after Done");
            }
        }
    }
}

/// Ends the run: timers fire at advancing time until `Done`, which must come quickly.
fn finish(h: &mut Harness<'_>) {
    let mut rounds = 0;
    loop {
        match h.poll() {
            Output::Done(_) => break,
            Output::Event(_) => continue,
            Output::Transmit(leg) => {
                // The driver's timer fires at the end of the grant.
                h.clock.advance(leg.timeout);
                h.timeout();
            }
            Output::Wait(until) => {
                if until > h.now() {
                    h.clock.set(until);
                }
                h.timeout();
            }
        }
        rounds += 1;
        assert!(
            rounds <= 8,
            "the operation did not end after {rounds} timer firings ({h:?})"
        );
    }
    check_finished(&mut h.op, h.clock.now());
    h.done = true;
    let _ = h.poll();
    assert!(h.op.poll_event().is_none(), "an event came out after Done");
}
