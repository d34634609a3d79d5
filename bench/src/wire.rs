//! What goes over the wire: the exact requests `mcp-proto` builds (so the bare-HTTP floors send
//! the same bytes as the drivers), and the canned `tools/list` answers fed through `mcp-proto`
//! without any I/O by the parsing benchmarks.

use std::time::Instant;

use http::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
use http::{Request, StatusCode};
use mcp_proto::driver::LegKind;
use mcp_proto::driver::{Input, LegId, LegStatus, Operation, Output};
use mcp_proto::{
    Clock, ManualClock, Outcome, ProtocolVersion, Session, SessionConfig, StdioCommand,
};
use serde_json::{Map, Value, json};

/// The tool every network case calls.
pub const TOOL: &str = "echo";
/// The text it echoes.
pub const TEXT: &str = "hi";
/// The session-id header (lower case, as `http` spells header names).
pub const SESSION_HEADER: &str = "mcp-session-id";

/// The arguments of every call: `{"text": "hi"}`.
pub fn arguments() -> Map<String, Value> {
    let mut arguments = Map::new();
    arguments.insert("text".to_owned(), Value::from(TEXT));
    arguments
}

/// One request as bytes and headers, reusable: each send clones it.
#[derive(Debug, Clone)]
pub struct Captured {
    /// `POST`, `GET` or `DELETE`.
    pub method: http::Method,
    /// The endpoint.
    pub uri: http::Uri,
    /// Every header `mcp-proto` set (the session id is a placeholder until [`Self::session`]).
    pub headers: HeaderMap,
    /// The body, verbatim.
    pub body: bytes::Bytes,
}

impl Captured {
    fn from_request(request: Request<Vec<u8>>) -> Self {
        let (parts, body) = request.into_parts();
        Self {
            method: parts.method,
            uri: parts.uri,
            headers: parts.headers,
            body: body.into(),
        }
    }

    /// The same request carrying the session id `id` (no change when it carries none).
    pub fn session(&self, id: &str) -> Self {
        let mut out = self.clone();
        if let (true, Ok(value)) = (
            out.headers.contains_key(SESSION_HEADER),
            HeaderValue::from_str(id),
        ) {
            out.headers.insert(SESSION_HEADER, value);
        }
        out
    }

    /// As an `http::Request` with `body` for its body type.
    pub fn to_request<B>(&self, body: B) -> Request<B> {
        let mut request = Request::new(body);
        *request.method_mut() = self.method.clone();
        *request.uri_mut() = self.uri.clone();
        *request.headers_mut() = self.headers.clone();
        request
    }
}

/// The three requests of a cold `tools/call` of [`TOOL`] in the legacy era, exactly as
/// `mcp-proto` builds them for the endpoint `url` (or, over stdio, the three lines it writes).
#[derive(Debug, Clone)]
pub struct CallLegs {
    /// `initialize` (no session id).
    pub initialize: Captured,
    /// `notifications/initialized` (session id placeholder).
    pub initialized: Captured,
    /// `tools/call` (session id placeholder). On a live session this is the only leg.
    pub call: Captured,
}

impl CallLegs {
    /// The legs of a legacy call, checked to be exactly the handshake's two and the call.
    fn from_legs(legs: Vec<(LegKind, Captured)>) -> Self {
        let kinds: Vec<LegKind> = legs.iter().map(|(kind, _)| *kind).collect();
        assert_eq!(
            kinds,
            [LegKind::Initialize, LegKind::Initialized, LegKind::CallTool]
        );
        let mut legs = legs.into_iter().map(|(_, captured)| captured);
        let (Some(initialize), Some(initialized), Some(call)) =
            (legs.next(), legs.next(), legs.next())
        else {
            unreachable!("three legs were checked above");
        };
        Self {
            initialize,
            initialized,
            call,
        }
    }
}

/// Captures the legs of one legacy `tools/call` by driving `mcp-proto` with canned answers.
///
/// # Panics
/// If `url` is not a valid endpoint or `mcp-proto` asks for other legs than the three of a
/// cold call (it would mean the bench no longer sends what the drivers send).
pub fn capture_call(url: &str) -> CallLegs {
    let config = SessionConfig::new(url)
        .expect("a valid endpoint")
        .with_protocol_version(ProtocolVersion::LATEST);
    capture_call_with(config)
}

/// [`capture_call`] for a configuration of the caller's (pinned to a legacy version): the
/// legs `config` makes `mcp-proto` send, its client info and options included.
///
/// # Panics
/// As [`capture_call`].
pub fn capture_call_with(config: SessionConfig) -> CallLegs {
    CallLegs::from_legs(capture(config))
}

/// Captures the one request of a `tools/call` in the 2026-07-28 era (stateless: the version
/// and the client's capabilities in `_meta`, the `MCP-Protocol-Version`, `Mcp-Method` and
/// `Mcp-Name` headers), exactly as `mcp-proto` builds it for `url` when pinned to
/// [`ProtocolVersion::MODERN`]. It carries no session: every call sends these very bytes.
///
/// # Panics
/// If `url` is not a valid endpoint or `mcp-proto` sends anything but the call (a handshake,
/// a probe): the modern floors would then not send what the drivers send.
pub fn capture_modern_call(url: &str) -> Captured {
    let config = SessionConfig::new(url)
        .expect("a valid endpoint")
        .with_protocol_version(ProtocolVersion::MODERN);
    capture_modern_call_with(config)
}

/// [`capture_modern_call`] for a configuration of the caller's (pinned to
/// [`ProtocolVersion::MODERN`]): the request `config` makes `mcp-proto` send, its client info
/// and options included.
///
/// # Panics
/// As [`capture_modern_call`].
pub fn capture_modern_call_with(config: SessionConfig) -> Captured {
    let mut legs = capture(config);
    let kinds: Vec<LegKind> = legs.iter().map(|(kind, _)| *kind).collect();
    assert_eq!(kinds, [LegKind::CallTool], "a modern call is one leg");
    legs.remove(0).1
}

/// Captures the three lines (`initialize`, `notifications/initialized`, `tools/call`, each
/// ending in its newline) that `mcp-proto` writes to a stdio server's stdin for one legacy
/// `tools/call`; the process's own steps (spawn, close) are left out.
///
/// # Panics
/// If `mcp-proto` writes other lines than those three.
pub fn capture_stdio_call(command: StdioCommand) -> CallLegs {
    let config = SessionConfig::stdio(command).with_protocol_version(ProtocolVersion::LATEST);
    CallLegs::from_legs(capture(config))
}

/// Drives one `tools/call` of `config` through `mcp-proto` with canned answers, and returns
/// the requests it sent (over stdio the lines it wrote), in order, with their kinds. The steps
/// of a stdio process's life (spawn, shutdown...) are carried out and left out.
fn capture(config: SessionConfig) -> Vec<(LegKind, Captured)> {
    let stdio = config.is_stdio();
    let mut session = Session::new(config);
    let clock = ManualClock::new();
    let mut op = session.call_tool(TOOL, arguments(), clock.now());
    let mut legs = Vec::new();
    loop {
        match op.poll_output(clock.now()) {
            Output::Transmit(leg) => {
                let (kind, leg_id) = (leg.kind, leg.id);
                let process_step = matches!(
                    kind,
                    LegKind::Spawn | LegKind::Shutdown | LegKind::Terminate | LegKind::Kill
                );
                let id = request_id(leg.request.body());
                if !process_step {
                    legs.push((kind, Captured::from_request(leg.request)));
                }
                let answer = match kind {
                    LegKind::Initialize => Some(initialize_result()),
                    LegKind::CallTool => Some(json!({"content": [{"type": "text", "text": TEXT}]})),
                    _ => None,
                };
                if stdio {
                    op.handle_input(Input::Sent { leg: leg_id }, clock.now());
                    if let Some(result) = answer {
                        let mut line = serde_json::to_vec(
                            &json!({"jsonrpc": "2.0", "id": id, "result": result}),
                        )
                        .expect("a Value serialises");
                        line.push(b'\n');
                        op.handle_input(Input::Stdout(&line), clock.now());
                    }
                } else {
                    feed(&mut op, &clock, leg_id, kind, id, answer);
                }
            }
            Output::Update(update) => session.apply(update),
            Output::Authorize(_) => {
                op.handle_input(Input::NoAuthorizer, clock.now());
            }
            Output::Event(_) | Output::LegEnded(_) => {}
            Output::Request(request) => {
                op.handle_input(request.reply_from(op.session_config()), clock.now());
            }
            Output::Wait(_) | Output::AwaitSession(_) => {
                op.handle_input(Input::Timeout, clock.now());
            }
            Output::Done(result) => {
                result.expect("the canned call succeeds");
                break;
            }
        }
    }
    legs
}

fn initialize_result() -> Value {
    json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "canned", "version": "1.0"}
    })
}

/// Answers the leg in flight: `Some(result)` as a JSON-RPC result for `id`, `None` as a 202.
fn feed(
    op: &mut Operation,
    clock: &ManualClock,
    leg: LegId,
    kind: LegKind,
    id: Option<i64>,
    result: Option<Value>,
) {
    let mut headers = HeaderMap::new();
    if kind == LegKind::Initialize {
        headers.insert(SESSION_HEADER, HeaderValue::from_static("placeholder"));
    }
    let Some(result) = result else {
        let _ = op.handle_input(
            Input::Head {
                leg,
                status: StatusCode::ACCEPTED,
                headers: &headers,
            },
            clock.now(),
        );
        return;
    };
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    let body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
        .expect("a Value serialises");
    if op.handle_input(
        Input::Head {
            leg,
            status: StatusCode::OK,
            headers: &headers,
        },
        clock.now(),
    ) == LegStatus::ReadMore
        && op.handle_input(Input::Chunk { leg, bytes: &body }, clock.now()) == LegStatus::ReadMore
    {
        op.handle_input(Input::End { leg }, clock.now());
    }
}

/// The numeric `"id"` of a JSON-RPC request body, found without parsing the whole body.
pub fn request_id(body: &[u8]) -> Option<i64> {
    let key = b"\"id\":";
    let at = body.windows(key.len()).position(|w| w == key)? + key.len();
    let digits: Vec<u8> = body[at..]
        .iter()
        .copied()
        .skip_while(|b| *b == b' ')
        .take_while(u8::is_ascii_digit)
        .collect();
    std::str::from_utf8(&digits).ok()?.parse().ok()
}

/// The bytes reserved for the id in a canned answer: the id is written left-aligned and
/// padded with spaces, which JSON allows after a value.
const ID_SLOT: usize = 20;

/// A canned `tools/list` answer of a given size, whose id can be rewritten in place.
#[derive(Debug, Clone)]
pub struct ListAnswer {
    /// The JSON-RPC answer (exactly the requested size).
    pub json: Vec<u8>,
    /// The same answer as one `event: message` of an event stream.
    pub sse: Vec<u8>,
    /// Where the id slot starts in `json`.
    id_at: usize,
    /// Tools in the answer.
    pub tools: usize,
}

/// The `n`th tool of a canned catalogue: about 420 bytes, a realistic schema.
fn catalogue_tool(n: usize) -> Value {
    json!({
        "name": format!("tool-{n:05}"),
        "title": format!("Tool number {n}"),
        "description": format!(
            "Runs operation {n} on the given path. Returns a summary of what changed, \
             the number of items touched and any warnings raised on the way."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Where to run, relative to the root"},
                "count": {"type": "integer", "minimum": 0, "maximum": 1000},
                "flags": {"type": "array", "items": {"type": "string"}},
                "dryRun": {"type": "boolean", "default": false}
            },
            "required": ["path"]
        },
        "annotations": {"readOnlyHint": n.is_multiple_of(2)}
    })
}

impl ListAnswer {
    /// An answer of exactly `size` bytes (the last tool that fits, then spaces).
    ///
    /// # Panics
    /// If `size` is too small for the envelope.
    pub fn new(size: usize) -> Self {
        let head = format!("{{\"jsonrpc\":\"2.0\",\"id\":{}", " ".repeat(ID_SLOT));
        let id_at = head.len() - ID_SLOT;
        let mut json = head.into_bytes();
        json.extend_from_slice(b",\"result\":{\"tools\":[");
        let tail = b"]}}";
        let mut tools = 0;
        loop {
            let entry = serde_json::to_vec(&catalogue_tool(tools + 1)).expect("serialises");
            let comma = usize::from(tools > 0);
            if json.len() + comma + entry.len() + tail.len() > size {
                break;
            }
            if comma == 1 {
                json.push(b',');
            }
            json.extend_from_slice(&entry);
            tools += 1;
        }
        json.extend_from_slice(tail);
        assert!(json.len() <= size, "{size} bytes cannot hold the envelope");
        json.resize(size, b' ');
        let mut answer = Self {
            json,
            sse: Vec::new(),
            id_at,
            tools,
        };
        answer.set_id(1);
        answer
    }

    /// Writes `id` into the id slot of both forms.
    pub fn set_id(&mut self, id: i64) {
        let mut slot = id.to_string().into_bytes();
        slot.resize(ID_SLOT, b' ');
        self.json[self.id_at..self.id_at + ID_SLOT].copy_from_slice(&slot);
        self.sse.clear();
        self.sse.extend_from_slice(b"event: message\ndata: ");
        self.sse.extend_from_slice(&self.json);
        self.sse.extend_from_slice(b"\n\n");
    }
}

/// How the parsing benchmark feeds an answer body: in chunks of this size (the blocking
/// driver's read size).
pub const FEED_CHUNK: usize = 16 * 1024;

/// A live `mcp-proto` session on a [`ManualClock`] that lists tools from a canned answer:
/// `tools/list` driven through the state machine exactly as a driver would, minus the I/O.
#[derive(Debug)]
pub struct ListDriver {
    session: Session,
    clock: ManualClock,
    answer: ListAnswer,
    sse: bool,
}

impl ListDriver {
    /// A driver whose session is established (canned handshake), answering every listing with
    /// `answer` as JSON, or as an event stream when `sse`.
    pub fn new(answer: ListAnswer, sse: bool) -> Self {
        let config = SessionConfig::new("http://127.0.0.1:9/mcp")
            .expect("a valid endpoint")
            .with_body_cap(answer.sse.len() * 2)
            .with_protocol_version(ProtocolVersion::LATEST);
        let mut session = Session::new(config);
        let clock = ManualClock::new();
        {
            let mut op = session.probe(clock.now());
            loop {
                match op.poll_output(clock.now()) {
                    Output::Transmit(leg) => {
                        let id = request_id(leg.request.body());
                        let answer = (leg.kind == LegKind::Initialize).then(initialize_result);
                        feed(&mut op, &clock, leg.id, leg.kind, id, answer);
                    }
                    Output::Update(update) => session.apply(update),
                    Output::Authorize(_) => {
                        op.handle_input(Input::NoAuthorizer, clock.now());
                    }
                    Output::Event(_) | Output::LegEnded(_) => {}
                    Output::Request(request) => {
                        op.handle_input(request.reply_from(op.session_config()), clock.now());
                    }
                    Output::Wait(_) | Output::AwaitSession(_) => {
                        op.handle_input(Input::Timeout, clock.now());
                    }
                    Output::Done(result) => {
                        result.expect("the canned handshake succeeds");
                        break;
                    }
                }
            }
        }
        Self {
            session,
            clock,
            answer,
            sse,
        }
    }

    /// The body bytes one listing feeds.
    pub fn body_len(&self) -> usize {
        if self.sse {
            self.answer.sse.len()
        } else {
            self.answer.json.len()
        }
    }

    /// Lists the tools once; returns how many came back.
    ///
    /// # Panics
    /// If the listing fails (the canned answer no longer satisfies `mcp-proto`).
    pub fn list(&mut self) -> usize {
        let now: Instant = self.clock.now();
        let mut op = self.session.list_tools(now);
        let Output::Transmit(leg) = op.poll_output(now) else {
            panic!("a listing starts with its request");
        };
        let id = request_id(leg.request.body()).expect("tools/list carries an id");
        self.answer.set_id(id);
        let (content_type, body) = if self.sse {
            ("text/event-stream", &self.answer.sse)
        } else {
            ("application/json", &self.answer.json)
        };
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
        if op.handle_input(
            Input::Head {
                leg: leg.id,
                status: StatusCode::OK,
                headers: &headers,
            },
            now,
        ) == LegStatus::ReadMore
        {
            let mut complete = false;
            for chunk in body.chunks(FEED_CHUNK) {
                if op.handle_input(
                    Input::Chunk {
                        leg: leg.id,
                        bytes: chunk,
                    },
                    now,
                ) == LegStatus::Complete
                {
                    complete = true;
                    break;
                }
            }
            if !complete {
                op.handle_input(Input::End { leg: leg.id }, now);
            }
        }
        loop {
            match op.poll_output(now) {
                // A legacy listing also teaches the session which tools run as tasks.
                Output::Event(_) | Output::LegEnded(_) | Output::Update(_) => {}
                Output::Done(Ok(Outcome::Tools(tools))) => return tools.len(),
                other => panic!("the canned listing did not succeed: {other:?}"),
            }
        }
    }

    /// The JSON answer (what `serde_json` parses in the baseline).
    pub fn json(&self) -> &[u8] {
        &self.answer.json
    }

    /// Tools in the answer.
    pub fn tools(&self) -> usize {
        self.answer.tools
    }
}

/// A live `mcp-proto` session on a [`ManualClock`] whose `tools/call` is answered with a
/// canned echo result: the state machine's own CPU cost per call, without any I/O.
#[derive(Debug)]
pub struct CallDriver {
    session: Session,
    clock: ManualClock,
    sse: bool,
}

impl CallDriver {
    /// A driver whose session is established; answers come as JSON, or as an event stream
    /// when `sse`.
    pub fn new(sse: bool) -> Self {
        let list = ListDriver::new(ListAnswer::new(4096), false);
        Self {
            session: list.session,
            clock: list.clock,
            sse,
        }
    }

    /// Calls the tool once; returns the length of the text answered.
    ///
    /// # Panics
    /// If the call fails.
    pub fn call(&mut self) -> usize {
        let now: Instant = self.clock.now();
        let mut op = self.session.call_tool(TOOL, arguments(), now);
        let Output::Transmit(leg) = op.poll_output(now) else {
            panic!("a call starts with its request");
        };
        let id = request_id(leg.request.body()).expect("tools/call carries an id");
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"{TEXT}"}}],"isError":false}}}}"#
        );
        let (content_type, body) = if self.sse {
            (
                "text/event-stream",
                format!("event: message\ndata: {body}\n\n"),
            )
        } else {
            ("application/json", body)
        };
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
        if op.handle_input(
            Input::Head {
                leg: leg.id,
                status: StatusCode::OK,
                headers: &headers,
            },
            now,
        ) == LegStatus::ReadMore
            && op.handle_input(
                Input::Chunk {
                    leg: leg.id,
                    bytes: body.as_bytes(),
                },
                now,
            ) == LegStatus::ReadMore
        {
            op.handle_input(Input::End { leg: leg.id }, now);
        }
        loop {
            match op.poll_output(now) {
                Output::Event(_) | Output::LegEnded(_) => {}
                Output::Done(Ok(Outcome::Call(result))) => return result.text().len(),
                other => panic!("the canned call did not succeed: {other:?}"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_captured_call_is_what_the_drivers_send() {
        let legs = capture_call("http://127.0.0.1:1234/mcp");
        let body: Value = serde_json::from_slice(&legs.call.body).unwrap();
        assert_eq!(body["method"], "tools/call");
        assert_eq!(body["params"]["name"], TOOL);
        assert_eq!(body["params"]["arguments"]["text"], TEXT);
        assert_eq!(legs.call.session("abc").headers[SESSION_HEADER], "abc");
        assert!(!legs.initialize.headers.contains_key(SESSION_HEADER));
        assert_eq!(request_id(&legs.initialize.body), Some(1));
    }

    #[test]
    fn the_captured_modern_call_is_one_stateless_post() {
        let call = capture_modern_call("http://127.0.0.1:1234/mcp");
        assert_eq!(call.method, http::Method::POST);
        assert!(!call.headers.contains_key(SESSION_HEADER), "no session");
        assert_eq!(call.headers["mcp-protocol-version"], "2026-07-28");
        assert_eq!(call.headers["mcp-method"], "tools/call");
        assert_eq!(call.headers["mcp-name"], TOOL);
        let body: Value = serde_json::from_slice(&call.body).unwrap();
        assert_eq!(body["method"], "tools/call");
        assert_eq!(
            body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
    }

    #[test]
    fn the_captured_stdio_lines_are_the_handshake_and_the_call() {
        let legs = capture_stdio_call(StdioCommand::new("/bin/true"));
        for (leg, method) in [
            (&legs.initialize, "initialize"),
            (&legs.initialized, "notifications/initialized"),
            (&legs.call, "tools/call"),
        ] {
            assert!(leg.body.ends_with(b"\n"), "{method}: one line");
            assert_eq!(leg.body.iter().filter(|b| **b == b'\n').count(), 1);
            let message: Value = serde_json::from_slice(&leg.body).unwrap();
            assert_eq!(message["method"], method);
        }
    }

    #[test]
    fn canned_answers_have_the_exact_size_and_parse() {
        let mut answer = ListAnswer::new(64 * 1024);
        assert_eq!(answer.json.len(), 64 * 1024);
        answer.set_id(12345);
        let value: Value = serde_json::from_slice(&answer.json).unwrap();
        assert_eq!(value["id"], 12345);
        assert_eq!(
            value["result"]["tools"].as_array().unwrap().len(),
            answer.tools
        );
    }

    #[test]
    fn canned_calls_go_through_the_state_machine() {
        for sse in [false, true] {
            let mut driver = CallDriver::new(sse);
            assert_eq!(driver.call(), TEXT.len());
            assert_eq!(driver.call(), TEXT.len());
        }
    }

    #[test]
    fn listings_go_through_the_state_machine_in_both_forms() {
        for sse in [false, true] {
            let mut driver = ListDriver::new(ListAnswer::new(100 * 1024), sse);
            let tools = driver.tools();
            assert!(tools > 100);
            assert_eq!(driver.list(), tools);
            assert_eq!(driver.list(), tools, "the session is reused");
        }
    }
}
