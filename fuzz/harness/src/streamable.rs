//! The Streamable HTTP side of `mcp-proto`: the event-stream parser, the answer to each kind
//! of leg, and whole operations under arbitrary driver inputs.
//!
//! Each target takes arbitrary bytes, drives a part of the sans-IO client with them and
//! panics **only** when an invariant of `mcp-proto` is violated; any input whatsoever is
//! otherwise fine. The same functions run under libFuzzer on nightly (`fuzz/run.sh`) and, on
//! stable, over every committed seed and regression file in `cargo test`.
//!
//! * [`sse`]: the event-stream parser gives the same events (and the same error) however
//!   the bytes are split, and never holds an event larger than its limit.
//! * [`answer`]: the bytes are the body of the answer to each kind of leg, as JSON and as an
//!   event stream, in three eras: a legacy operation (pinned to the newest legacy version), a
//!   modern one (pinned to 2026-07-28: a tool call, a listing, `server/discover`, a read, a
//!   prompt, both files of a skill load) and one that detects the era (its first, modern, leg;
//!   the answer may make it fall back to the handshake); the operation always ends with a
//!   typed result or a typed server error.
//! * [`operation`]: the bytes are a sequence of driver inputs (heads, chunks, ends, transport
//!   errors, timers, cancel, a clock stepping both ways), each about a leg it picks (in flight
//!   or over), in an era the setup picks (legacy-pinned, modern-pinned, detecting on a fresh
//!   session, detecting on a session a legacy server established); the operation always ends,
//!   grants follow the budget rule exactly, the legs in flight are those a model of the leg
//!   table says, every request is what its era says, and nothing happens after `Done`.
//!
//! The era rules every request is checked against (both targets, see [`Eras::check`]): a
//! modern request carries its version in `_meta` (`io.modelcontextprotocol/protocolVersion`)
//! and the same in `MCP-Protocol-Version`, its method in `Mcp-Method`, what it names (tool,
//! URI, prompt) in `Mcp-Name`, and never a session id; a legacy request carries none of that
//! and only a legacy version header (none on `initialize`); a pinned configuration never sends
//! the other era's requests; a detecting one starts in the era its session remembers (modern
//! when none) and changes era at most once per operation; GETs and DELETEs exist only in the
//! legacy era. Healthy answers follow the era of the request they answer (a modern result
//! carries `resultType: "complete"`, a modern answer no session id).
//!
//! The byte layouts are documented on each function; `fuzz/seeds.py` writes the seed corpus
//! in those layouts, so keep the two in step. Neither era nor the new actions changed an
//! existing layout: `answer` runs every input in all three eras, and `operation` reads them
//! from bits no earlier input set (so every committed seed and regression replays as before).

use std::time::{Duration, Instant};

use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use mcp_auth::Challenge;
use mcp_proto::driver::{
    CANCEL_NOTICE_GRANT, LAST_EVENT_ID_HEADER, LISTEN_HEAD_WAIT, LegKind, MAX_REISSUES,
    MAX_SESSION_ID_LEN, METHOD_HEADER, NAME_HEADER, PROTOCOL_VERSION_HEADER, SESSION_HEADER,
};
use mcp_proto::driver::{
    Input, Leg, LegId, LegStatus, Operation, Output, TransportError, leg_grant,
};
use mcp_proto::message::accept_elicitation_with_defaults;
use mcp_proto::request::{GetPrompt, ReadResource, Request as _};
use mcp_proto::sse::{SseError, SseEvent, SseParser};
use mcp_proto::{
    Action, Budget, Clock, Error, Fault, ListKind, ManualClock, OperationDeadline, Outcome,
    ProtocolVersion, Resolution, RpcError, Session, SessionConfig, TransportErrorKind,
};
use serde_json::{Map, Value, json};

use crate::bytes::Bytes;

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
pub(crate) fn ceil_to(d: Duration, unit: Duration) -> Duration {
    let unit = unit.as_nanos().max(1);
    let nanos = d.as_nanos().div_ceil(unit) * unit;
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

/// The URI the harness's `resources/read` reads.
const READ_URI: &str = "file:///fuzz/notes.txt";
/// The skill [`Action::LoadSkill`] loads: its `SKILL.md` and one more file.
const SKILL_URI: &str = "skill://fuzz/SKILL.md";
const SKILL_REF_URI: &str = "skill://fuzz/references/REF.md";
const SKILL_MD: &str =
    "---\nname: fuzz\ndescription: A skill for the fuzzer\n---\n\nRead REF.md.\n";
const SKILL_REF: &str = "Reference text.\n";

/// The skill's `skills/list` entry (sizes listed, no digest: the testkit computes no SHA-256).
fn skill_entry() -> Value {
    json!({
        "uri": SKILL_URI,
        "frontmatter": {"name": "fuzz", "description": "A skill for the fuzzer"},
        "resources": [
            {"uri": SKILL_URI, "size": SKILL_MD.len()},
            {"uri": SKILL_REF_URI, "size": SKILL_REF.len()}
        ]
    })
}

fn skill() -> mcp_proto::skills::Skill {
    let Value::Object(raw) = skill_entry() else {
        unreachable!("the entry is an object")
    };
    mcp_proto::skills::Skill {
        uri: SKILL_URI.to_owned(),
        raw,
    }
}

/// The URIs a `resources/read` of the harness may name (so a request is `Copy`).
const URIS: [&str; 3] = [READ_URI, SKILL_URI, SKILL_REF_URI];

/// Which era the harness pins, or how the client detects it (see [`operation`]'s setup).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Pinned to the newest legacy version (`ProtocolVersion::LATEST`): the handshake and
    /// sessions, as before the modern era existed.
    Legacy,
    /// Pinned to `ProtocolVersion::MODERN`: no handshake, no session, every request modern.
    Modern,
    /// The default configuration on a fresh session: the first request is modern and the
    /// answers may move the operation to the legacy era (once).
    Detecting,
    /// The default configuration on a session established on a legacy server (the modern
    /// probe refused with a plain 400, then the handshake): the operation starts legacy, on
    /// that session, and a modern error may move it to the modern era (once).
    DetectingFromLegacy,
}

impl Mode {
    fn config(self, cap: usize) -> SessionConfig {
        let config = SessionConfig::new(URL)
            .expect("the fuzz URL is valid")
            .with_body_cap(cap);
        match self {
            Self::Legacy => config.with_protocol_version(ProtocolVersion::LATEST),
            Self::Modern => config.with_protocol_version(ProtocolVersion::MODERN),
            Self::Detecting | Self::DetectingFromLegacy => config,
        }
    }

    /// Whether the operation's first request is modern.
    fn starts_modern(self) -> bool {
        matches!(self, Self::Modern | Self::Detecting)
    }

    /// Whether the operation may change era.
    fn detects(self) -> bool {
        matches!(self, Self::Detecting | Self::DetectingFromLegacy)
    }
}

/// Whether a leg's request is a modern one (it mirrors its method in `Mcp-Method`).
fn is_modern_request(leg: &Leg) -> bool {
    leg.request.headers().contains_key(METHOD_HEADER)
}

/// The eras of the requests an operation sent, as far as the harness saw them.
#[derive(Debug, Default)]
struct Eras {
    /// The era of the last request that carried a JSON-RPC method (`true`: modern).
    last: Option<bool>,
    /// How many times that era changed.
    changes: u32,
}

impl Eras {
    /// The era in force: the last request's, else the one the mode starts in.
    fn modern_now(&self, mode: Mode) -> bool {
        self.last.unwrap_or_else(|| mode.starts_modern())
    }

    /// Checks a leg against the era rules of `mode` and follows the era its request is in.
    ///
    /// A modern request carries the version in `_meta` and in `MCP-Protocol-Version`, its
    /// method in `Mcp-Method`, what it names (tool, URI, prompt) in `Mcp-Name` and never a
    /// session id; a legacy request carries none of the modern metadata and only a legacy
    /// version header. A pinned mode never sends the other era's requests; a detecting one
    /// starts where its mode says and changes era at most once per operation. GETs and
    /// DELETEs (resumption, standalone stream, close) exist only in the legacy era; the
    /// answers to the server and the cancel notice follow the era in force.
    fn check(&mut self, leg: &Leg, mode: Mode) {
        let number = leg.id.number();
        let headers = leg.request.headers();
        match leg.kind {
            LegKind::Resume | LegKind::Listen | LegKind::Close => {
                assert!(
                    !self.modern_now(mode),
                    "leg {number}: a {:?} leg in the modern era (mode {mode:?})",
                    leg.kind
                );
                assert!(!is_modern_request(leg), "leg {number}: a modern GET/DELETE");
            }
            LegKind::Respond | LegKind::CancelNotice => {
                assert!(
                    !is_modern_request(leg),
                    "leg {number}: a {:?} leg with Mcp-Method",
                    leg.kind
                );
                if self.modern_now(mode) {
                    assert!(
                        !headers.contains_key(SESSION_HEADER),
                        "leg {number}: a {:?} leg of the modern era carries a session id",
                        leg.kind
                    );
                }
            }
            LegKind::Initialized => {
                assert!(
                    !is_modern_request(leg),
                    "leg {number}: a modern initialized"
                );
                self.saw(false, mode, number);
            }
            _ => {
                let modern = is_modern_request(leg);
                if modern {
                    check_modern_request(leg);
                } else {
                    check_legacy_request(leg);
                }
                self.saw(modern, mode, number);
            }
        }
    }

    fn saw(&mut self, modern: bool, mode: Mode, number: u32) {
        match mode {
            Mode::Legacy => assert!(!modern, "leg {number}: a modern request, legacy pinned"),
            Mode::Modern => assert!(modern, "leg {number}: a legacy request, modern pinned"),
            Mode::Detecting | Mode::DetectingFromLegacy => {
                let was = self.modern_now(mode);
                if was != modern {
                    self.changes += 1;
                    assert!(
                        self.changes <= 1,
                        "leg {number}: the era changed a second time in one operation"
                    );
                }
            }
        }
        self.last = Some(modern);
    }
}

/// A modern request: the version in `_meta` and its header, the method, name and no session.
fn check_modern_request(leg: &Leg) {
    let number = leg.id.number();
    let headers = leg.request.headers();
    let method = leg.kind.method();
    assert!(
        matches!(
            leg.kind,
            LegKind::Discover
                | LegKind::List { .. }
                | LegKind::CallTool
                | LegKind::Request(ReadResource::METHOD)
                | LegKind::Request(GetPrompt::METHOD)
        ),
        "leg {number}: a modern {:?} request",
        leg.kind
    );
    assert!(
        !headers.contains_key(SESSION_HEADER),
        "leg {number}: a modern request carries a session id"
    );
    let body: Value = serde_json::from_slice(leg.request.body()).unwrap_or_default();
    let meta = body
        .pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
        .and_then(Value::as_str);
    assert!(
        meta.and_then(ProtocolVersion::parse)
            .is_some_and(ProtocolVersion::is_modern),
        "leg {number}: a modern request whose _meta names no modern version: {meta:?}"
    );
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    assert_eq!(
        header(PROTOCOL_VERSION_HEADER),
        meta,
        "leg {number}: MCP-Protocol-Version differs from _meta"
    );
    assert_eq!(
        header(METHOD_HEADER),
        method,
        "leg {number}: Mcp-Method differs from the method"
    );
    let named = match leg.kind {
        LegKind::CallTool | LegKind::Request(GetPrompt::METHOD) => body.pointer("/params/name"),
        LegKind::Request(ReadResource::METHOD) => body.pointer("/params/uri"),
        _ => None,
    };
    assert_eq!(
        header(NAME_HEADER),
        named.and_then(Value::as_str),
        "leg {number}: Mcp-Name differs from what the request names"
    );
}

/// A legacy request: no modern metadata, only a legacy version header.
fn check_legacy_request(leg: &Leg) {
    let number = leg.id.number();
    let headers = leg.request.headers();
    assert!(
        leg.kind != LegKind::Discover,
        "leg {number}: server/discover in the legacy era"
    );
    assert!(
        !headers.contains_key(NAME_HEADER),
        "leg {number}: a legacy request with Mcp-Name"
    );
    let body: Value = serde_json::from_slice(leg.request.body()).unwrap_or_default();
    assert!(
        body.pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
            .is_none(),
        "leg {number}: a legacy request with a modern _meta"
    );
    if let Some(version) = headers.get(PROTOCOL_VERSION_HEADER) {
        let version = version.to_str().ok().and_then(ProtocolVersion::parse);
        assert!(
            leg.kind != LegKind::Initialize && version.is_some_and(|v| !v.is_modern()),
            "leg {number}: a legacy {:?} request with version header {version:?}",
            leg.kind
        );
    }
}

/// A request that carries an id, as far as a healthy answer needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Asked {
    kind: LegKind,
    id: i64,
    /// It went out in the modern era (its answer carries `resultType`).
    modern: bool,
    /// The URI a `resources/read` names (one of [`URIS`]).
    uri: Option<&'static str>,
}

impl Asked {
    fn of(leg: &Leg, id: i64) -> Self {
        let body: Value = serde_json::from_slice(leg.request.body()).unwrap_or_default();
        let uri = body.pointer("/params/uri").and_then(Value::as_str);
        Self {
            kind: leg.kind,
            id,
            modern: is_modern_request(leg),
            uri: URIS.into_iter().find(|u| Some(*u) == uri),
        }
    }
}

/// Checks a leg's request against its kind; returns the JSON-RPC id it carries, if any.
fn check_request(leg: &Leg) -> Option<i64> {
    let request = &leg.request;
    let number = leg.id.number();
    match leg.kind {
        LegKind::Resume => {
            assert_eq!(
                request.method(),
                Method::GET,
                "leg {number}: a resume is a GET"
            );
            assert!(request.body().is_empty(), "leg {number}: a GET with a body");
            assert!(
                request.headers().contains_key(LAST_EVENT_ID_HEADER),
                "leg {number}: a resume without the id of the last event"
            );
            None
        }
        LegKind::Listen => {
            assert_eq!(
                request.method(),
                Method::GET,
                "leg {number}: the standalone stream is a GET"
            );
            assert!(request.body().is_empty(), "leg {number}: a GET with a body");
            assert!(
                !request.headers().contains_key(LAST_EVENT_ID_HEADER),
                "leg {number}: the standalone stream resumes another stream"
            );
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
        | LegKind::Discover
        | LegKind::List { .. }
        | LegKind::CallTool
        | LegKind::Request(ReadResource::METHOD)
        | LegKind::Request(GetPrompt::METHOD)
        | LegKind::CancelNotice => {
            assert_eq!(request.method(), Method::POST);
            let body: Value = serde_json::from_slice(request.body())
                .unwrap_or_else(|err| panic!("leg {number}: a body that is not JSON: {err}"));
            assert!(
                leg.kind.method().is_some(),
                "leg {number}: a {:?} leg names no method",
                leg.kind
            );
            assert_eq!(
                body.get("method").and_then(Value::as_str),
                leg.kind.method(),
                "leg {number} carries another method than its kind"
            );
            body.get("id").and_then(Value::as_i64)
        }
        _ => None,
    }
}

/// The result a healthy server gives to `asked`; a modern one says it is complete.
fn healthy_result(asked: Asked, more_pages: bool) -> Value {
    let mut result = match asked.kind {
        LegKind::Initialize => json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {"listChanged": true}},
            "serverInfo": {"name": "fuzz", "version": "1.0"}
        }),
        LegKind::Discover => json!({
            "supportedVersions": [ProtocolVersion::MODERN.as_str()],
            "capabilities": {"tools": {"listChanged": true}},
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fuzz", "version": "1.0"}}
        }),
        LegKind::List { of, page } => {
            let entry = match of {
                ListKind::Tools => {
                    json!({"name": format!("t{page}"), "inputSchema": {"type": "object"}})
                }
                ListKind::Skills => skill_entry(),
                ListKind::Prompts => json!({"name": format!("p{page}")}),
                _ => {
                    json!({"uri": format!("file:///r{page}"), "name": "r", "uriTemplate": "file:///{x}"})
                }
            };
            let mut result = json!({ of.member(): [entry] });
            if more_pages {
                result["nextCursor"] = json!(format!("cursor-{page}"));
            }
            result
        }
        LegKind::CallTool => json!({"content": [{"type": "text", "text": "ok"}]}),
        LegKind::Request(ReadResource::METHOD) => {
            let uri = asked.uri.unwrap_or(READ_URI);
            let text = match uri {
                SKILL_URI => SKILL_MD,
                SKILL_REF_URI => SKILL_REF,
                _ => "notes",
            };
            json!({"contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}]})
        }
        LegKind::Request(GetPrompt::METHOD) => json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]
        }),
        _ => json!({}),
    };
    if asked.modern {
        result["resultType"] = json!("complete");
    }
    result
}

/// A healthy server's reply to a leg of `kind` that asked `asked` (its own request, if it
/// carries an id; `last`, the last request that did, for a resumption): status, content type,
/// body. An event-stream answer carries a priming event, a keep-alive and a notification
/// before the answer; the standalone stream carries no answer (with `more_pages`, a `ping`
/// request of the server's).
fn healthy_reply(
    kind: LegKind,
    asked: Option<Asked>,
    last: Option<Asked>,
    sse: bool,
    more_pages: bool,
) -> (StatusCode, Option<&'static str>, Vec<u8>) {
    let (asked, sse) = match kind {
        LegKind::Initialize
        | LegKind::Ping
        | LegKind::Discover
        | LegKind::List { .. }
        | LegKind::CallTool
        | LegKind::Request(ReadResource::METHOD)
        | LegKind::Request(GetPrompt::METHOD) => (asked, sse),
        LegKind::Resume => match last {
            Some(last) => (Some(last), true),
            None => {
                return (
                    StatusCode::OK,
                    Some("text/event-stream"),
                    b": nothing to resume\n\n".to_vec(),
                );
            }
        },
        LegKind::Close => return (StatusCode::NO_CONTENT, None, Vec::new()),
        LegKind::Listen => {
            // The standalone stream: a priming event and a keep-alive, and (with `more`) a
            // request of the server's outside any answer.
            let mut body = b"id: 0\ndata:\n\n: listening\n\n".to_vec();
            if more_pages {
                body.extend_from_slice(
                    br#"data: {"jsonrpc":"2.0","id":"listen-1","method":"ping"}"#,
                );
                body.extend_from_slice(b"\n\n");
            }
            return (StatusCode::OK, Some("text/event-stream"), body);
        }
        _ => return (StatusCode::ACCEPTED, None, Vec::new()),
    };
    let (id, result) = match asked {
        Some(asked) => (Some(asked.id), healthy_result(asked, more_pages)),
        None => (None, json!({})),
    };
    let message = json!({"jsonrpc": "2.0", "id": id, "result": result});
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

/// The media type of a head, lower case, without parameters (empty when absent).
fn media_type(headers: &HeaderMap) -> String {
    let raw = headers.get(CONTENT_TYPE).map_or(&b""[..], |v| v.as_bytes());
    String::from_utf8_lossy(raw)
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// Whether an answer with `status` and `headers` asks for authorization: `mcp-auth`'s reading
/// of a challenge, the one the operation acts on (any 401; a 403 only with an
/// `insufficient_scope` challenge, which no answer of these targets carries). With no OAuth
/// configured, as in every session here, such an answer to a request ends the operation with
/// [`Error::AuthorizationRequired`] ([`Fault::Authorization`]): no one here can authorize.
fn asks_authorization(status: StatusCode, headers: &HeaderMap) -> bool {
    Challenge::from_response(status, headers).is_some()
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

pub(crate) fn outcome_fits(action: &Action, outcome: &Outcome) -> bool {
    if let (Action::Request(request), Outcome::Answer(answer)) = (action, outcome) {
        return answer.method() == request.method();
    }
    matches!(
        (action, outcome),
        (Action::Probe, Outcome::Probe(_))
            | (Action::List(ListKind::Tools), Outcome::Tools(_))
            | (Action::List(ListKind::Skills), Outcome::Skills(_))
            | (Action::CallTool { .. }, Outcome::Call(_))
            | (Action::LoadSkill(_), Outcome::Skill(_))
            | (Action::Close, Outcome::Closed)
    )
}

/// After `Done`, polling only ever says the operation already finished.
pub(crate) fn check_finished(op: &mut Operation, now: Instant) {
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
    /// The answer, once given, asked for authorization ([`asks_authorization`]).
    challenged: bool,
}

/// A driver as the module docs of `mcp_proto::driver` describe it, one response at a time:
/// it answers every leg (healthily, in the era of its request, or with the fuzzed answer),
/// drains outputs between body chunks and runs the legs handed out meanwhile (answers to
/// server requests) to their end before reading on, declines the standalone stream, and
/// sleeps (moves the clock) only when told to wait. As a `legacy_server` it refuses every
/// modern request with a plain `400`, as a legacy server without a session does.
#[derive(Debug)]
struct Driver<'s, 'a> {
    op: Operation,
    /// The session the operation runs on: what it learns is applied as a driver would.
    session: &'s mut Session,
    clock: ManualClock,
    mode: Mode,
    eras: Eras,
    legacy_server: bool,
    asked: Option<Asked>,
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
        next_output(&mut self.op, self.session, self.clock.now())
    }

    fn run(&mut self) -> Result<Outcome, Error> {
        loop {
            match self.poll() {
                Output::Update(_) => unreachable!("next_output applies updates"),
                Output::Request(_) => unreachable!("next_output answers requests"),
                Output::Authorize(_) => panic!("no OAuth is configured, so no authorization step"),
                Output::Event(_) | Output::LegEnded(_) => {}
                Output::Wait(until) | Output::AwaitSession(until) => {
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
                    self.op.handle_input(Input::Timeout, self.clock.now());
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
        assert!(!leg.timeout.is_zero(), "{} was granted zero", leg.id);
        let own = check_request(leg).map(|id| Asked::of(leg, id));
        self.eras.check(leg, self.mode);
        let last = self.asked;
        if own.is_some() {
            self.asked = own;
        }
        let now = self.clock.now();
        if leg.kind == LegKind::Listen {
            // This driver reads one response at a time: it declines the standalone stream.
            let declined =
                TransportError::new(TransportErrorKind::Declined, "one response at a time");
            self.op.handle_input(
                Input::Failed {
                    leg: leg.id,
                    error: declined,
                },
                now,
            );
            return None;
        }
        let (status, headers, body, split) = match self.fuzzed.as_mut() {
            Some(fuzzed) if !fuzzed.used && fuzzed.target.matches(leg) => {
                fuzzed.used = true;
                let fed = headers(Some(fuzzed.content_type), leg.kind);
                fuzzed.challenged = asks_authorization(fuzzed.status, &fed);
                (fuzzed.status, fed, fuzzed.body.to_vec(), fuzzed.split)
            }
            _ if self.legacy_server && is_modern_request(leg) => (
                StatusCode::BAD_REQUEST,
                headers(Some("text/plain"), leg.kind),
                b"Bad Request: no valid session id".to_vec(),
                0,
            ),
            _ => {
                let (status, content_type, body) = healthy_reply(leg.kind, own, last, false, false);
                (status, headers(content_type, leg.kind), body, 7)
            }
        };
        if self.op.handle_input(
            Input::Head {
                leg: leg.id,
                status,
                headers: &headers,
            },
            now,
        ) == LegStatus::Complete
        {
            return None;
        }
        let size = if split == 0 {
            body.len().max(1)
        } else {
            usize::from(split % 64) + 1
        };
        for chunk in body.chunks(size) {
            if split & 0x80 != 0
                && self.op.handle_input(
                    Input::Chunk {
                        leg: leg.id,
                        bytes: b"",
                    },
                    now,
                ) == LegStatus::Complete
            {
                return None;
            }
            if self.op.handle_input(
                Input::Chunk {
                    leg: leg.id,
                    bytes: chunk,
                },
                now,
            ) == LegStatus::Complete
            {
                return None;
            }
            // Between chunks: notifications out, nested legs run, until told to wait.
            loop {
                match self.poll() {
                    Output::Update(_) => unreachable!("next_output applies updates"),
                    Output::Request(_) => unreachable!("next_output answers requests"),
                    Output::Authorize(_) => {
                        panic!("no OAuth is configured, so no authorization step")
                    }
                    Output::Event(_) | Output::LegEnded(_) => {}
                    Output::Wait(_) | Output::AwaitSession(_) => break,
                    Output::Done(result) => return Some(result),
                    Output::Transmit(nested) => {
                        if let Some(result) = self.run_leg(&nested) {
                            return Some(result);
                        }
                    }
                }
            }
        }
        self.op.handle_input(Input::End { leg: leg.id }, now);
        None
    }
}

/// The next output of `op` that is not about its session: what it learns is applied to
/// `session`, and, alone on its session, an operation that awaits the session gets it at once.
/// The caller's responders answer every request the server asks of the caller, as a driver
/// does between polls; each is asked to be answered within the budget.
fn next_output(op: &mut Operation, session: &mut Session, now: Instant) -> Output {
    loop {
        let output = op.poll_on(session, now);
        assert!(
            !matches!(output, Output::AwaitSession(_)),
            "a lone operation awaits its session"
        );
        let Output::Request(request) = output else {
            return output;
        };
        assert!(
            op.deadline().end().is_none_or(|end| request.ends_at <= end),
            "a request is to be answered after the budget's end"
        );
        op.handle_input(request.reply_from(op.session_config()), now);
    }
}

/// Establishes `session` with a healthy probe, so the next operation starts on a live session
/// (in the modern era: one whose era is known). In [`Mode::DetectingFromLegacy`] the server is
/// a legacy one: the modern probe is refused and the handshake establishes a legacy session.
fn establish(session: &mut Session, clock: &ManualClock, mode: Mode) {
    let legacy_server = mode == Mode::DetectingFromLegacy;
    let op = session.probe(clock.now());
    let mut driver = Driver {
        op,
        session,
        clock: clock.clone(),
        mode: if legacy_server { Mode::Detecting } else { mode },
        eras: Eras::default(),
        legacy_server,
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
    /// `server/discover`, a modern probe.
    Discover,
    ReadResource,
    GetPrompt,
    /// The first file of a skill being loaded (`SKILL.md`, verified against the listing).
    SkillFile,
    /// The second file of a skill being loaded, after `SKILL.md` was read and verified.
    SkillReference,
}

impl Target {
    /// The legs of a legacy operation (pinned to the newest legacy version).
    const LEGACY: [Self; 5] = [
        Self::Initialize,
        Self::Initialized,
        Self::ListTools,
        Self::CallTool,
        Self::Ping,
    ];

    /// The legs of a modern operation (pinned to the modern version).
    const MODERN: [Self; 7] = [
        Self::CallTool,
        Self::ListTools,
        Self::Discover,
        Self::ReadResource,
        Self::GetPrompt,
        Self::SkillFile,
        Self::SkillReference,
    ];

    /// The first leg of an operation that detects the era (a modern request).
    const DETECTING: [Self; 3] = [Self::CallTool, Self::ListTools, Self::Discover];

    fn matches(self, leg: &Leg) -> bool {
        let uri = || {
            serde_json::from_slice::<Value>(leg.request.body())
                .ok()
                .and_then(|body| {
                    body.pointer("/params/uri")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                })
        };
        match (self, leg.kind) {
            (Self::Initialize, LegKind::Initialize)
            | (Self::Initialized, LegKind::Initialized)
            | (Self::ListTools, LegKind::List { .. })
            | (Self::CallTool, LegKind::CallTool)
            | (Self::Ping, LegKind::Ping)
            | (Self::Discover, LegKind::Discover)
            | (Self::ReadResource, LegKind::Request(ReadResource::METHOD))
            | (Self::GetPrompt, LegKind::Request(GetPrompt::METHOD)) => true,
            (Self::SkillFile, LegKind::Request(ReadResource::METHOD)) => {
                uri().as_deref() == Some(SKILL_URI)
            }
            (Self::SkillReference, LegKind::Request(ReadResource::METHOD)) => {
                uri().as_deref() == Some(SKILL_REF_URI)
            }
            _ => false,
        }
    }

    /// The action that reaches this leg.
    fn action(self) -> Action {
        match self {
            Self::Ping | Self::Discover => Action::Probe,
            Self::ListTools => Action::List(ListKind::Tools),
            Self::Initialize | Self::Initialized | Self::CallTool => Action::CallTool {
                name: "echo".to_owned(),
                arguments: Map::new(),
            },
            Self::ReadResource => Action::Request(ReadResource::new(READ_URI).into()),
            Self::GetPrompt => Action::Request(GetPrompt::new("greet", Map::new()).into()),
            Self::SkillFile | Self::SkillReference => Action::LoadSkill(skill()),
        }
    }
}

/// The answer-decoding target.
///
/// Layout: byte 0 picks the status (below 160: 200; otherwise one of a list of unusual
/// statuses), byte 1 the chunking (0: one chunk; otherwise chunks of `byte % 64 + 1` bytes,
/// with an empty chunk before each when its top bit is set). The rest is the body. Every
/// input runs in all three eras below (the layout has no era byte).
///
/// The fuzzed answer goes, as `application/json` and as `text/event-stream`, to each leg of
/// * a **legacy** operation (pinned to `ProtocolVersion::LATEST`): initialize,
///   notifications/initialized, tools/list, tools/call, ping on a live session;
/// * a **modern** operation (pinned to `ProtocolVersion::MODERN`): tools/call, tools/list,
///   server/discover (a probe), resources/read, prompts/get, and the first and the second
///   file of a skill load (each `resources/read` verified against the listing);
/// * a **detecting** operation (the default configuration, a fresh session): its first leg,
///   a modern tools/call, tools/list or server/discover, whose answer may move it to the
///   legacy era (a refusal with `400`/`404`/`405`, `-32022` naming legacy versions, method
///   not found on the probe) and the handshake that follows.
///
/// The operation is driven to that leg with healthy answers, the leg is answered with the
/// fuzzed status and body (then the body's end), and any later legs (nested answers to server
/// requests, a resumed stream or a reissued modern request, further pages, the request again
/// after `input_required` or `-32022`, the relisting after `-32020`, the handshake after a
/// fallback) healthily, in the era of their request (a modern answer carries
/// `resultType: "complete"` and no session id). The modern and detecting sessions answer
/// `elicitation/create` (accepting the defaults), so an `input_required` round can succeed.
/// Invariants: the operation reaches `Done` within a bounded number of outputs, and no leg is
/// left in flight once its body ended (a wait is only ever a resumption's, before the
/// deadline); every request follows the era rules ([`Eras::check`]: a pinned era never sends
/// the other's requests, a detecting one changes era at most once); the result fits the
/// action, or is an error a server can cause (never a transport, cancel, caller or
/// expired-session error, and a spent budget only after a resumption wait); whose fault it is
/// ([`Error::fault`]) is the authorization's exactly when the answer asked for authorization
/// (a 401, read as `mcp-auth`'s [`Challenge`] reads it: no OAuth is configured here, so the
/// operation ends with [`Error::AuthorizationRequired`]), and otherwise the server's, but for
/// the request timing out or the budget running out over a resumption wait; its message is
/// one clipped line; nothing follows `Done`.
pub fn answer(data: &[u8]) {
    let mut bytes = Bytes::new(data);
    let status = status_from(bytes.byte());
    let split = bytes.byte();
    let body = bytes.rest();
    let runs = [
        (Mode::Legacy, &Target::LEGACY[..]),
        (Mode::Modern, &Target::MODERN[..]),
        (Mode::Detecting, &Target::DETECTING[..]),
    ];
    for (mode, targets) in runs {
        for &target in targets {
            for content_type in ["application/json", "text/event-stream"] {
                answer_one(mode, target, content_type, status, split, body);
            }
        }
    }
}

fn answer_one(
    mode: Mode,
    target: Target,
    content_type: &'static str,
    status: StatusCode,
    split: u8,
    body: &[u8],
) {
    let clock = ManualClock::new();
    let mut config = mode.config(ANSWER_BODY_CAP);
    if mode != Mode::Legacy {
        config = config.respond_to("elicitation/create", |params| {
            Ok(accept_elicitation_with_defaults(params))
        });
    }
    let mut session = Session::new(config);
    if target == Target::Ping {
        establish(&mut session, &clock, mode);
    }
    let action = target.action();
    let deadline = OperationDeadline::start(clock.now(), Budget::DEFAULT, Resolution::SECOND);
    let op = session.start(action.clone(), deadline);
    let mut driver = Driver {
        op,
        session: &mut session,
        clock: clock.clone(),
        mode,
        eras: Eras::default(),
        legacy_server: false,
        asked: None,
        fuzzed: Some(Fuzzed {
            target,
            status,
            content_type,
            body,
            split,
            used: false,
            challenged: false,
        }),
        waited: false,
        outputs: 0,
    };
    let result = driver.run();
    let context = format!("{mode:?} {target:?} leg answered {status} as {content_type}");
    let challenged = driver.fuzzed.as_ref().is_some_and(|f| f.challenged);
    match &result {
        Ok(outcome) => {
            assert!(
                outcome_fits(&action, outcome),
                "{context}: {outcome:?} for {action:?}"
            );
            assert!(
                !challenged,
                "{context}: a refusal that asks for authorization, and {outcome:?}"
            );
        }
        Err(err) => {
            check_message(err);
            if let Some(method) = error_method(err) {
                assert!(
                    ERROR_METHODS.contains(&method),
                    "{context}: an error names {method:?}, not a request: {err:?}"
                );
            }
            // Whose fault it is, as `Error::fault` (the one table) says: the authorization's
            // exactly when the answer asked for it (no one here can authorize); else the
            // server's, but for the request timing out or the budget running out over a wait
            // the server asked for.
            let fault = err.fault();
            assert_eq!(
                fault == Fault::Authorization,
                challenged,
                "{context}: whose fault {err:?} is: {fault:?}"
            );
            match err {
                // A server may ask for a resumption wait that the budget cannot cover: that is
                // the request timing out, at once.
                Error::LegTimedOut { .. } => {}
                // The answer asked for authorization (checked above).
                Error::AuthorizationRequired { .. } => {}
                Error::BudgetExhausted { .. } if driver.waited => {}
                Error::BudgetExhausted { .. }
                | Error::Unreachable { .. }
                | Error::Cancelled { .. }
                | Error::SessionExpired { .. }
                | Error::InvalidUrl { .. }
                | Error::InvalidHeader { .. }
                | Error::AlreadyFinished => panic!("{context}: an answer caused {err:?}"),
                // Anything else that is not the server's is not an answer's doing.
                _ => assert_eq!(fault, Fault::Server, "{context}: whose fault {err:?} is"),
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

/// What the operation does with a leg. The operation keeps at most one leg of each role in
/// flight, and inputs go to the leg they name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Its own request (handshake, work, resumption, close): its answer is read.
    Work,
    /// An answer to a server request: only its head is looked at.
    Reply,
    /// The standalone stream, read beside the others; it never ends the operation.
    Listen,
    /// The cancel notice, after the result is ready.
    Notice,
}

impl Role {
    fn of(kind: LegKind) -> Self {
        match kind {
            LegKind::Respond => Self::Reply,
            LegKind::Listen => Self::Listen,
            LegKind::CancelNotice => Self::Notice,
            _ => Self::Work,
        }
    }

    /// Whether the operation waits on a leg of this role, so that its running out (or its
    /// failing) ends the operation.
    fn is_awaited(self) -> bool {
        matches!(self, Self::Work | Self::Reply)
    }
}

/// A leg the harness saw transmitted, and what it knows of it.
#[derive(Debug, Clone, Copy)]
struct Sent {
    id: LegId,
    kind: LegKind,
    role: Role,
    /// The JSON-RPC id its request carries.
    request_id: Option<i64>,
    /// Its request, when it carries an id (for a healthy answer).
    asked: Option<Asked>,
    /// Its request is a modern one.
    modern: bool,
    /// Its head said `text/event-stream` (and was read).
    sse: bool,
    ends_at: Instant,
    /// In flight. The harness follows the operation's leg table exactly: a leg ends by its own
    /// inputs, its timer, a lost session (answers to the server go with it) or the end of the
    /// operation (all but the cancel notice, and an answer to the server still waiting for its
    /// head when the operation did not end by a cancel: see `kept`).
    open: bool,
    /// An answer to the server kept in flight past the operation's result (its head is waited
    /// for, at most [`CANCEL_NOTICE_GRANT`] past the result): its end, its failure or a cancel
    /// changes nothing but the leg.
    kept: bool,
    /// Its head was read (`ReadMore`): its body is being read.
    reading: bool,
    /// A healthy answer ran it to its end.
    answered: bool,
    /// Its request carried the session's id.
    carried_session: bool,
    /// Its head was a `400` to a request that carried the session's id: its body is read to
    /// learn whether it says the session is gone (then the operation starts over on a new one,
    /// as after a `404`), whatever its media type.
    refusal: bool,
}

/// What the operation must do with an input about a leg, decided before it is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    /// The leg is no longer in flight: the input is ignored.
    Ignored,
    /// The input comes at or after the leg's end: the leg times out.
    Late,
    /// The input is read.
    Live,
}

/// The state of one [`operation`] run: the operation, its clock and what the checks track.
struct Harness<'s> {
    op: Operation,
    /// The session the operation runs on: what it learns is applied as a driver would.
    session: &'s mut Session,
    clock: ManualClock,
    started: Instant,
    /// The latest instant the operation was given (with an input or a poll): what it knows
    /// of the time, however far the clock stepped back since.
    latest: Instant,
    total: Duration,
    unit: Duration,
    progress: bool,
    /// The era the session is pinned to, or how it detects it.
    mode: Mode,
    /// The eras of the requests sent so far.
    eras: Eras,
    /// The broken modern streams the operation chose to send again after an I/O error.
    reissues: u32,
    /// The session follows a cancelled call with `notifications/cancelled`.
    notice: bool,
    /// Every leg sent, in order (`legs[n - 1]` is leg `n`).
    legs: Vec<Sent>,
    /// The last request sent that carries an id: what a resumed stream answers.
    asked: Option<Asked>,
    /// The ids of every `tools/call` sent.
    calls: Vec<i64>,
    transmits: u32,
    /// `Done` was returned once.
    done: bool,
    /// The operation's reports of its legs, checked.
    reports: crate::Reports,
    /// The leg whose JSON body is being read, and the bytes of it fed so far.
    json_fed: Option<(usize, usize)>,
    /// The next `Done` must be this kind of error.
    expect: Option<&'static str>,
    /// `cancel()` ended the operation.
    cancelled: bool,
    /// The harness saw the operation finished (the legs it keeps were decided then).
    finish_seen: bool,
    /// The call a cancel notice must name, when the harness is sure one is owed.
    owed_notice: Option<i64>,
    /// The harness is sure no cancel notice may go out.
    no_notice: bool,
    notice_sent: bool,
    /// When the work request stops waiting for the standalone stream's head.
    listen_head: Option<Instant>,
    fed: usize,
    rewound: Duration,
}

impl std::fmt::Debug for Harness<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Harness")
            .field("total", &self.total)
            .field("unit", &self.unit)
            .field("in_flight", &self.in_flight())
            .field("transmits", &self.transmits)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

/// The request an error names: a JSON-RPC method the operation sends, or `DELETE`.
const ERROR_METHODS: [&str; 11] = [
    "initialize",
    "notifications/initialized",
    "ping",
    "server/discover",
    "tools/list",
    "skills/list",
    "tools/call",
    "resources/read",
    "prompts/get",
    "DELETE",
    // A refused `initialize` is followed by the GET for HTTP+SSE (the spec's fallback).
    "GET (the HTTP+SSE event stream)",
];

/// The request named in `err`, for the errors that name one.
fn error_method(err: &Error) -> Option<&'static str> {
    match err {
        Error::BudgetExhausted { method, .. }
        | Error::LegTimedOut { method, .. }
        | Error::Unreachable { method, .. }
        | Error::HttpStatus { method, .. }
        | Error::UnsupportedContentType { method, .. }
        | Error::Malformed { method, .. }
        | Error::JsonRpc { method, .. }
        | Error::AnswerTooLarge { method, .. }
        | Error::SessionExpired { method, .. }
        | Error::Cancelled { method, .. } => Some(method),
        _ => None,
    }
}

/// Checks the session id a request echoes.
fn check_session_header(leg: &Leg) {
    if let Some(id) = leg.request.headers().get("mcp-session-id") {
        let id = id.as_bytes();
        assert!(
            !id.is_empty()
                && id.len() <= MAX_SESSION_ID_LEN
                && id.iter().all(|b| (0x21..=0x7e).contains(b)),
            "an invalid session id was echoed: {id:?}"
        );
    }
}

impl Harness<'_> {
    fn now(&self) -> Instant {
        self.clock.now()
    }

    /// Gives the operation `input` now.
    fn input(&mut self, input: Input<'_>) -> LegStatus {
        let now = self.now();
        self.latest = self.latest.max(now);
        self.op.handle_input(input, now)
    }

    /// The legs in flight: `(number, kind)`.
    fn in_flight(&self) -> Vec<(u32, LegKind)> {
        self.legs
            .iter()
            .filter(|leg| leg.open)
            .map(|leg| (leg.id.number(), leg.kind))
            .collect()
    }

    /// One `poll_output`, checked.
    fn poll(&mut self) -> Output {
        let now = self.now();
        self.latest = self.latest.max(now);
        let output = next_output(&mut self.op, self.session, now);
        if self.done {
            assert!(
                matches!(output, Output::Done(Err(Error::AlreadyFinished))),
                "after Done the operation gave {output:?}"
            );
            return output;
        }
        match &output {
            Output::Update(_) => unreachable!("next_output applies updates"),
            Output::Request(_) => unreachable!("next_output answers requests"),
            Output::Authorize(_) => panic!("no OAuth is configured, so no authorization step"),
            Output::Transmit(leg) => self.transmitted(leg, now),
            Output::Wait(until) | Output::AwaitSession(until) => {
                let end = self.started + self.total;
                let leg_end = self
                    .legs
                    .iter()
                    .any(|leg| leg.open && leg.ends_at == *until);
                let listen_head = self.listen_head == Some(*until)
                    && self
                        .legs
                        .iter()
                        .any(|leg| leg.open && leg.role == Role::Listen && !leg.reading);
                assert!(
                    leg_end || listen_head || *until <= end,
                    "a wait until {until:?} is neither the end of a leg in flight ({:?}) nor within the deadline ({end:?})",
                    self.in_flight()
                );
                if let Some(expected) = self.expect {
                    // Only the cancel notice may hold the result back, until its end, and an
                    // answer to the server waiting for its head.
                    let notice_end = self
                        .legs
                        .iter()
                        .any(|leg| leg.open && leg.role == Role::Notice && leg.ends_at == *until);
                    let reply_end = self
                        .legs
                        .iter()
                        .any(|leg| leg.open && leg.kept && leg.ends_at == *until);
                    assert!(
                        (expected == "Cancelled" && notice_end) || reply_end,
                        "expected {expected:?} but the operation waits until {until:?} (in flight: {:?})",
                        self.in_flight()
                    );
                }
            }
            Output::Event(_) => {}
            Output::LegEnded(report) => self.reports.saw(report, self.op.legs_sent()),
            Output::Done(result) => {
                self.done = true;
                self.reports.all(self.op.legs_sent());
                assert!(self.op.is_finished(), "Done, yet not finished");
                match result {
                    Ok(outcome) => assert!(
                        outcome_fits(self.op.action(), outcome),
                        "{outcome:?} for {:?}",
                        self.op.action()
                    ),
                    Err(err) => {
                        check_message(err);
                        self.check_error(err);
                    }
                }
                if let Some(expected) = self.expect {
                    let got = match result {
                        Err(Error::Cancelled { .. }) => "Cancelled",
                        Err(Error::AnswerTooLarge { .. }) => "AnswerTooLarge",
                        Err(Error::LegTimedOut { .. }) => "LegTimedOut",
                        Err(Error::Unreachable { .. }) => "Unreachable",
                        Err(Error::Malformed { .. }) => "Malformed",
                        Err(Error::AuthorizationRequired { .. }) => "AuthorizationRequired",
                        _ => "something else",
                    };
                    assert_eq!(got, expected, "the operation ended with {result:?}");
                }
                if let Some(call) = self.owed_notice {
                    // The notice is granted when its turn comes, at this poll: over HTTP it
                    // is dropped only if the budget is spent by then.
                    let left = self.op.deadline().remaining(now);
                    assert!(
                        self.notice_sent
                            || leg_grant(LegKind::CancelNotice, self.op.deadline(), now, false)
                                .is_none(),
                        "the cancelled tools/call {call} ended without its cancel notice, with {left:?} of the budget left"
                    );
                }
                for leg in &mut self.legs {
                    leg.open = false;
                }
                self.json_fed = None;
            }
        }
        self.sync();
        output
    }

    /// Checks a leg handed out and starts following it.
    fn transmitted(&mut self, leg: &Leg, now: Instant) {
        let role = Role::of(leg.kind);
        assert_eq!(
            leg.id.number(),
            self.transmits + 1,
            "legs are numbered in order"
        );
        let request_id = if role == Role::Notice {
            self.check_notice(leg, now);
            None
        } else {
            assert!(
                self.expect.is_none(),
                "expected {:?} but the operation transmitted {leg:?}",
                self.expect
            );
            self.check_leg(leg, now)
        };
        self.eras.check(leg, self.mode);
        self.transmits += 1;
        assert_eq!(self.op.legs_sent(), self.transmits, "legs_sent() miscounts");
        if let Some(busy) = self.legs.iter().find(|sent| sent.open && sent.role == role) {
            panic!(
                "{} ({:?}) was handed out while {} ({:?}) of the same role is in flight",
                leg.id, leg.kind, busy.id, busy.kind
            );
        }
        if role == Role::Listen {
            self.listen_head = now.checked_add(LISTEN_HEAD_WAIT);
        }
        let asked = request_id.map(|id| Asked::of(leg, id));
        self.legs.push(Sent {
            id: leg.id,
            kind: leg.kind,
            role,
            request_id,
            asked,
            modern: is_modern_request(leg),
            sse: false,
            ends_at: leg.ends_at,
            open: true,
            kept: false,
            reading: false,
            answered: false,
            carried_session: leg.request.headers().contains_key("mcp-session-id"),
            refusal: false,
        });
        if let Some(id) = request_id {
            self.asked = asked;
            if leg.kind == LegKind::CallTool {
                self.calls.push(id);
            }
        }
    }

    fn check_leg(&self, leg: &Leg, now: Instant) -> Option<i64> {
        let number = leg.id.number();
        assert!(!leg.timeout.is_zero(), "leg {number} was granted zero");
        let elapsed = now.saturating_duration_since(self.started);
        assert!(
            elapsed < self.total,
            "leg {number} was sent {elapsed:?} into a {:?} budget",
            self.total
        );
        assert!(
            leg.timeout <= ceil_to(self.total, self.unit),
            "leg {number} was granted {:?}, beyond the {:?} budget rounded up to {:?}",
            leg.timeout,
            self.total,
            self.unit
        );
        let expected = ceil_to(self.total - elapsed, self.unit).max(self.unit);
        assert_eq!(
            leg.timeout, expected,
            "leg {number} sent {elapsed:?} into a {:?} budget at a {:?} unit",
            self.total, self.unit
        );
        assert_eq!(
            leg.ends_at,
            now + leg.timeout,
            "the leg's end is not now + grant"
        );
        check_session_header(leg);
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

    /// The cancel notice: only when the session sends them, once, after a cancel that
    /// interrupted a `tools/call` that was sent, under the notice's grant. What that grant is
    /// comes from its one definition in `mcp-proto` ([`leg_grant`]: what is left of the budget,
    /// at most [`CANCEL_NOTICE_GRANT`]), so a change of that rule changes this check with it;
    /// what no rule may change is checked on its own: over HTTP, never with the budget spent,
    /// never granted zero, nor more than the cap or than a leg sent then would get.
    fn check_notice(&mut self, leg: &Leg, now: Instant) {
        assert!(self.notice, "a cancel notice, but the session sends none");
        assert!(self.cancelled, "a cancel notice without a cancel");
        assert!(!self.notice_sent, "a second cancel notice");
        assert!(
            !self.no_notice,
            "a cancel notice after a cancel that interrupted no tools/call"
        );
        self.notice_sent = true;
        let elapsed = now.saturating_duration_since(self.started);
        assert!(
            elapsed < self.total,
            "a cancel notice over HTTP sent {elapsed:?} into a {:?} budget",
            self.total
        );
        let budget_rule = ceil_to(self.total - elapsed, self.unit).max(self.unit);
        assert!(
            !leg.timeout.is_zero()
                && leg.timeout <= CANCEL_NOTICE_GRANT
                && leg.timeout <= budget_rule,
            "a cancel notice sent {elapsed:?} into a {:?} budget was granted {:?}",
            self.total,
            leg.timeout
        );
        assert_eq!(
            Some(leg.timeout),
            leg_grant(LegKind::CancelNotice, self.op.deadline(), now, false),
            "the cancel notice's grant, {elapsed:?} into a {:?} budget",
            self.total
        );
        assert_eq!(
            leg.ends_at,
            now + leg.timeout,
            "the notice's end is not now + grant"
        );
        check_session_header(leg);
        assert_eq!(check_request(leg), None, "a notification with an id");
        let body: Value = serde_json::from_slice(leg.request.body()).unwrap_or_default();
        assert_eq!(body["method"], "notifications/cancelled");
        let id = body.pointer("/params/requestId").and_then(Value::as_i64);
        assert!(
            id.is_some_and(|id| self.calls.contains(&id)),
            "a cancel notice about {id:?}, not a tools/call that was sent ({:?})",
            self.calls
        );
        if let Some(owed) = self.owed_notice {
            assert_eq!(id, Some(owed), "the cancel notice names another call");
        }
    }

    fn check_error(&self, err: &Error) {
        if let Some(method) = error_method(err) {
            assert!(
                ERROR_METHODS.contains(&method),
                "an error names {method:?}, not a request: {err:?}"
            );
        }
        match err {
            Error::BudgetExhausted { budget, leg, .. } => {
                // The refusal may have been decided at an earlier poll, before the clock
                // stepped back: it must have come once the budget was spent by an instant the
                // operation was given.
                let elapsed = self.latest.saturating_duration_since(self.started);
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

    /// The leg an input's selector names: 0 is the innermost leg in flight (the last one
    /// sent that is still in flight, else the last one sent); `k` is the `k`-th most recent
    /// leg sent (wrapping around), in flight or not. `None` before the first leg.
    fn pick(&self, selector: u8) -> Option<usize> {
        let last = self.legs.len().checked_sub(1)?;
        if selector == 0 {
            return Some(self.legs.iter().rposition(|leg| leg.open).unwrap_or(last));
        }
        Some(last - (usize::from(selector) - 1) % self.legs.len())
    }

    fn fate(&self, i: usize) -> Fate {
        let leg = &self.legs[i];
        if !leg.open {
            Fate::Ignored
        } else if self.now() >= leg.ends_at {
            Fate::Late
        } else {
            Fate::Live
        }
    }

    /// Leg `i` is over.
    fn close(&mut self, i: usize) {
        self.legs[i].open = false;
        if self.json_fed.is_some_and(|(leg, _)| leg == i) {
            self.json_fed = None;
        }
    }

    /// An operation that finished has no leg in flight but its cancel notice and, unless a
    /// cancel ended it, an answer to the server still waiting for its head (kept until at most
    /// [`CANCEL_NOTICE_GRANT`] past the result). Then the legs the harness follows are the
    /// legs the operation has in flight (all those it thinks are, and the last few sent).
    fn sync(&mut self) {
        if self.op.is_finished() && !self.finish_seen {
            self.finish_seen = true;
            let most = self.latest.checked_add(CANCEL_NOTICE_GRANT);
            for leg in &mut self.legs {
                if leg.open && leg.role == Role::Reply && !self.cancelled {
                    leg.kept = true;
                    leg.ends_at = most.map_or(leg.ends_at, |most| leg.ends_at.min(most));
                }
            }
        }
        if self.op.is_finished() {
            for i in 0..self.legs.len() {
                if self.legs[i].role != Role::Notice && !self.legs[i].kept {
                    self.close(i);
                }
            }
        }
        let recent = self.legs.len().saturating_sub(8);
        for (i, leg) in self.legs.iter().enumerate() {
            if leg.open || i >= recent {
                assert_eq!(
                    self.op.is_in_flight(leg.id),
                    leg.open,
                    "{} ({:?}): the operation and the harness disagree on whether it is in flight",
                    leg.id,
                    leg.kind
                );
            }
        }
    }

    /// An input about a leg no longer in flight changed nothing.
    fn ignored(&self, i: usize, read: Option<LegStatus>, was_finished: bool, what: &str) {
        let id = self.legs[i].id;
        if let Some(read) = read {
            assert_eq!(
                read,
                LegStatus::Complete,
                "{what} for {id}, no longer in flight, was read"
            );
        }
        assert_eq!(
            self.op.is_finished(),
            was_finished,
            "{what} for {id}, no longer in flight, changed the operation"
        );
    }

    /// An input came at or after the end of leg `i`, in flight: the leg timed out (the
    /// operation decides lateness, not the driver).
    fn ran_out(&mut self, i: usize, read: Option<LegStatus>, what: &str) {
        let Sent { id, role, kept, .. } = self.legs[i];
        if let Some(read) = read {
            assert_eq!(
                read,
                LegStatus::Complete,
                "{what} for {id} after its end was read"
            );
        }
        self.close(i);
        if role.is_awaited() && !kept {
            assert!(
                self.op.is_finished(),
                "{what} for {id} after its end, and the operation goes on"
            );
            self.expect = Some("LegTimedOut");
        }
    }

    /// A response head from the dictionaries for leg `i`: content type and session id from
    /// `flags`, content length from `length_pick`.
    fn head(&mut self, i: usize, status: StatusCode, flags: u8, length_pick: u8) {
        let (content_type, json) = CONTENT_TYPES[usize::from(flags & 7)];
        let mut map = HeaderMap::new();
        if let Some(content_type) = content_type {
            map.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
        }
        if flags >> 3 == 31 {
            // A session id just over the longest accepted.
            map.insert(
                "mcp-session-id",
                HeaderValue::from_str(&"s".repeat(MAX_SESSION_ID_LEN + 1)).expect("visible ASCII"),
            );
        } else if let Some(id) = SESSION_IDS[usize::from(flags >> 3) % SESSION_IDS.len()] {
            if let Ok(value) = HeaderValue::from_bytes(id) {
                map.insert("mcp-session-id", value);
            }
        }
        if let Some(length) = CONTENT_LENGTHS[usize::from(length_pick) % CONTENT_LENGTHS.len()] {
            map.insert(CONTENT_LENGTH, HeaderValue::from_static(length));
        }
        let _ = self.head_with(i, status, &map, json);
    }

    fn head_with(
        &mut self,
        i: usize,
        status: StatusCode,
        map: &HeaderMap,
        json: bool,
    ) -> LegStatus {
        let fate = self.fate(i);
        let was_finished = self.op.is_finished();
        let Sent {
            id,
            kind,
            role,
            reading,
            carried_session,
            ..
        } = self.legs[i];
        let read = self.input(Input::Head {
            leg: id,
            status,
            headers: map,
        });
        match fate {
            Fate::Ignored => self.ignored(i, Some(read), was_finished, "a head"),
            Fate::Late => self.ran_out(i, Some(read), "a head"),
            Fate::Live => match read {
                LegStatus::ReadMore => {
                    // A refusal is read only when a modern server may have explained it with a
                    // JSON-RPC error (the operation speaks or may still detect the modern era).
                    // A refused `initialize` is read too: without a modern error it means the
                    // URL may speak HTTP+SSE (the spec's fallback), with one it does not.
                    let explainable = (self.mode != Mode::Legacy || kind == LegKind::Initialize)
                        && role == Role::Work
                        && status.is_client_error()
                        && media_type(map) == "application/json";
                    // A 400 to a request that carried the session's id is read to learn whether
                    // it says the session is gone (mcp-proto's says_session_is_gone).
                    let refusal = role == Role::Work
                        && status == StatusCode::BAD_REQUEST
                        && carried_session
                        && !reading;
                    assert!(
                        status.is_success() || explainable || refusal,
                        "a {status} head asked for the body"
                    );
                    assert!(
                        matches!(role, Role::Work | Role::Listen),
                        "the head of {id} ({role:?}) asked for its body"
                    );
                    assert!(!reading, "a second head of {id} asked for the body");
                    self.legs[i].reading = true;
                    self.legs[i].refusal = refusal;
                    // A refusal's body is collected under the cap whatever its media type.
                    self.legs[i].sse = media_type(map) == "text/event-stream" && !refusal;
                    if role == Role::Work && (json || refusal) {
                        self.json_fed = Some((i, 0));
                    }
                }
                LegStatus::Complete => {
                    // A second head of a work leg goes nowhere; any other head that is not
                    // read ends its leg.
                    if role != Role::Work || !reading {
                        self.close(i);
                    }
                    let first_work_head = role == Role::Work && !reading && kind != LegKind::Close;
                    if first_work_head && asks_authorization(status, map) {
                        // No OAuth is configured: the operation ends asking for authorization
                        // (whatever the era: the refusal is read before anything else).
                        assert!(
                            self.op.is_finished(),
                            "{id} was refused with {status}, and the operation goes on"
                        );
                        self.expect = Some("AuthorizationRequired");
                    } else if self.mode == Mode::Modern
                        && role == Role::Work
                        && !reading
                        && status.is_client_error()
                        && media_type(map) == "application/json"
                    {
                        // A modern operation reads every refusal a modern server explains,
                        // unless the length it announces is over the cap.
                        let declared = map
                            .get(CONTENT_LENGTH)
                            .and_then(|v| v.to_str().ok())
                            .and_then(|v| v.trim().parse::<u64>().ok());
                        assert!(
                            declared.is_some_and(|n| n > OPERATION_BODY_CAP as u64),
                            "a modern request's {status} JSON refusal was not read"
                        );
                        self.expect = Some("AnswerTooLarge");
                    }
                    // A lost session (404 to a request that carried one), or a refusal that
                    // means a legacy server (400, 404 or 405 while detecting the era): the
                    // operation starts over.
                    let start_over = role == Role::Work
                        && !reading
                        && matches!(status.as_u16(), 400 | 404 | 405)
                        && !self.op.is_finished();
                    if start_over {
                        assert!(
                            self.mode != Mode::Modern,
                            "a modern-pinned operation started over after a {status}"
                        );
                        // The attempt is gone: the answers to its server's requests and its
                        // standalone stream go with it.
                        for j in 0..self.legs.len() {
                            if matches!(self.legs[j].role, Role::Reply | Role::Listen) {
                                self.close(j);
                            }
                        }
                        self.listen_head = None;
                    }
                }
            },
        }
        self.sync();
        read
    }

    fn chunk(&mut self, i: usize, chunk: &[u8]) -> LegStatus {
        if self.fed.saturating_add(chunk.len()) > MAX_FED {
            return LegStatus::ReadMore;
        }
        self.fed += chunk.len();
        let fate = self.fate(i);
        let was_finished = self.op.is_finished();
        let Sent {
            id, role, reading, ..
        } = self.legs[i];
        let read = self.input(Input::Chunk {
            leg: id,
            bytes: chunk,
        });
        match fate {
            Fate::Ignored => self.ignored(i, Some(read), was_finished, "a chunk"),
            Fate::Late => self.ran_out(i, Some(read), "a chunk"),
            Fate::Live => {
                if let Some((_, fed)) = self.json_fed.as_mut().filter(|(leg, _)| *leg == i) {
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
                    }
                }
                match role {
                    Role::Work | Role::Listen if reading => {
                        if read == LegStatus::Complete {
                            self.close(i);
                            if role == Role::Work {
                                self.answered_work(i);
                            }
                        }
                    }
                    // A work leg's body before its head goes nowhere; the standalone stream
                    // is dropped; the body of an answer or a notice is not read.
                    Role::Listen => {
                        assert_eq!(
                            read,
                            LegStatus::Complete,
                            "{id}: a body before its head was read"
                        );
                        self.close(i);
                    }
                    Role::Work | Role::Reply | Role::Notice => {
                        assert_eq!(
                            read,
                            LegStatus::Complete,
                            "{id} ({role:?}): a body that is not read was read"
                        );
                    }
                }
            }
        }
        self.sync();
        read
    }

    fn end(&mut self, i: usize) {
        let fate = self.fate(i);
        let was_finished = self.op.is_finished();
        let Sent {
            id, role, reading, ..
        } = self.legs[i];
        self.input(Input::End { leg: id });
        match fate {
            Fate::Ignored => self.ignored(i, None, was_finished, "a body end"),
            Fate::Late => self.ran_out(i, None, "a body end"),
            // A work leg's end before its head goes nowhere; any other end ends its leg.
            Fate::Live => {
                if role != Role::Work || reading {
                    self.close(i);
                }
                if role == Role::Work && reading {
                    self.answered_work(i);
                }
            }
        }
        self.sync();
    }

    /// The work leg's answer was read (its stream completed, or its body ended) and the
    /// operation may go on. Detecting the era, the answer may have moved it to the other era
    /// (a refusal read from the body, `-32022`, a modern error to a legacy request), which
    /// starts the attempt over and drops the answers to the server and the standalone stream;
    /// the harness cannot tell from the bytes it fed, so it takes the operation's word on
    /// those two roles only, and only here. Pinned to an era, nothing is dropped, but after a
    /// `400` that may have said the session is gone (leg `i`'s `refusal`: then the operation
    /// starts over on a new session, as after a `404`), the same word is taken.
    fn answered_work(&mut self, i: usize) {
        if (!self.mode.detects() && !self.legs[i].refusal) || self.op.is_finished() {
            return;
        }
        for j in 0..self.legs.len() {
            let leg = self.legs[j];
            if leg.open
                && matches!(leg.role, Role::Reply | Role::Listen)
                && !self.op.is_in_flight(leg.id)
            {
                self.close(j);
                if leg.role == Role::Listen {
                    self.listen_head = None;
                }
            }
        }
    }

    fn transport_error(&mut self, i: usize, kind: TransportErrorKind, detail: &str) {
        let fate = self.fate(i);
        let was_finished = self.op.is_finished();
        let Sent {
            id,
            role,
            modern,
            sse,
            reading,
            ..
        } = self.legs[i];
        self.input(Input::Failed {
            leg: id,
            error: TransportError::new(kind, detail),
        });
        match fate {
            Fate::Ignored => self.ignored(i, None, was_finished, "a transport error"),
            Fate::Late => self.ran_out(i, None, "a transport error"),
            Fate::Live => {
                self.close(i);
                // A modern answer stream that broke lost its request: it may go out again.
                let reissuable = role == Role::Work
                    && kind == TransportErrorKind::Io
                    && modern
                    && reading
                    && sse;
                if reissuable && !self.op.is_finished() {
                    self.reissues += 1;
                    assert!(
                        self.reissues <= MAX_REISSUES,
                        "a broken modern stream was sent again {} times",
                        self.reissues
                    );
                } else if role.is_awaited() && !was_finished {
                    assert!(
                        self.op.is_finished(),
                        "{id} ({role:?}) failed, and the operation goes on"
                    );
                    self.expect = Some(match kind {
                        TransportErrorKind::TimedOut => "LegTimedOut",
                        TransportErrorKind::Protocol => "Malformed",
                        _ => "Unreachable",
                    });
                } else {
                    // The standalone stream is dropped; a notice is best-effort.
                    assert_eq!(
                        self.op.is_finished(),
                        was_finished,
                        "{id} ({role:?}) failed and that ended the operation"
                    );
                }
            }
        }
        self.sync();
    }

    fn timeout(&mut self) {
        let now = self.now();
        self.input(Input::Timeout);
        for i in 0..self.legs.len() {
            let leg = self.legs[i];
            if leg.open && leg.ends_at <= now {
                self.close(i);
                if leg.role.is_awaited() && !leg.kept {
                    assert!(
                        self.op.is_finished(),
                        "{} ran out at its end, and the operation goes on",
                        leg.id
                    );
                    self.expect = Some("LegTimedOut");
                }
            }
        }
        self.sync();
    }

    fn cancel(&mut self) {
        let was_finished = self.op.is_finished();
        // The call a cancel interrupts, when the harness is sure: the last work leg is in
        // flight and carries (or resumes) a tools/call, or carries another request.
        let work = self
            .legs
            .iter()
            .rev()
            .find(|leg| leg.role == Role::Work)
            .filter(|leg| leg.open);
        // A modern call is cancelled by closing its stream: no notice is owed for it.
        let interrupted = work.map(|leg| match leg.kind {
            LegKind::CallTool if leg.modern => None,
            LegKind::CallTool => leg.request_id,
            LegKind::Resume => self
                .asked
                .filter(|asked| asked.kind == LegKind::CallTool)
                .map(|asked| asked.id),
            _ => None,
        });
        self.input(Input::Cancel);
        assert!(
            self.op.is_finished(),
            "a cancelled operation is not finished"
        );
        if !was_finished {
            self.expect = Some("Cancelled");
            self.cancelled = true;
            match interrupted {
                Some(Some(call)) if self.notice => self.owed_notice = Some(call),
                Some(None) => self.no_notice = true,
                _ => {}
            }
        }
        // After the result, a cancel stops only the wait for an answer's head.
        for i in 0..self.legs.len() {
            if self.legs[i].kept {
                self.close(i);
            }
        }
        self.sync();
    }

    /// Answers leg `i` as a healthy server would, through the checked inputs.
    fn healthy(&mut self, i: usize, flags: u8) {
        let Sent { kind, asked, .. } = self.legs[i];
        let (status, content_type, body) =
            healthy_reply(kind, asked, self.asked, flags & 1 != 0, flags & 2 != 0);
        let json = content_type.is_none_or(|c| c == "application/json");
        let ended = match self.head_with(i, status, &headers(content_type, kind), json) {
            // A leg whose answer is not read ends at its head; any other leg that answers
            // Complete here was already reading a body (the head went nowhere).
            LegStatus::Complete => body.is_empty(),
            LegStatus::ReadMore => {
                if self.chunk(i, &body) == LegStatus::ReadMore {
                    if flags & 4 != 0 {
                        // The body does not end (yet): the leg stays in flight.
                        return;
                    }
                    self.end(i);
                }
                true
            }
        };
        if ended {
            self.legs[i].answered = true;
        }
    }
}

/// Picks the operation's kind, budget and resolution from the first bytes.
fn setup(bytes: &mut Bytes<'_>) -> (Action, u8, Budget, Resolution, u32, Mode) {
    let pick = bytes.byte();
    let action = match (pick & 0x40 != 0, pick % 4) {
        (false, 0) => Action::Probe,
        (false, 1) => Action::List(ListKind::Tools),
        (false, 2) => Action::CallTool {
            name: "echo".to_owned(),
            arguments: Map::new(),
        },
        (false, _) => Action::Close,
        (true, 0) => Action::Request(ReadResource::new(READ_URI).into()),
        (true, 1) => Action::Request(GetPrompt::new("greet", Map::new()).into()),
        (true, 2) => Action::LoadSkill(skill()),
        (true, _) => Action::List(ListKind::Skills),
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
    let pages_pick = bytes.byte();
    let max_pages = u32::from(pages_pick % 8) + 1;
    let mode = match (pages_pick >> 3) % 4 {
        0 => Mode::Legacy,
        1 => Mode::Modern,
        2 => Mode::Detecting,
        _ => Mode::DetectingFromLegacy,
    };
    (action, pick, budget, resolution, max_pages, mode)
}

/// The whole-operation target.
///
/// Layout: four setup bytes, then inputs. Setup: the action byte (`% 4` = probe, list tools,
/// call tool, close, or with `0x40` set: read a resource, get a prompt, load a skill (two
/// files), list skills; `0x04` asks for progress; `0x08` registers responders for
/// `elicitation/create` (accept with defaults) and `roots/list` (an error); `0x10` turns the
/// cancel notice on; `0x20` opens the standalone stream during a call; `0x80` starts on a
/// live session, established by a healthy probe); the budget byte (below 240: `% 30 + 1`
/// seconds, else `(b - 240) * 61` ms); the resolution byte (`% 4` = second, second,
/// millisecond, `(b >> 2) + 1` ms); the page byte: the page ceiling (`% 8 + 1`) and the era
/// (`(b >> 3) % 4`): 0 pinned to the newest legacy version (every input written before the
/// modern era), 1 pinned to the modern version, 2 detecting (the default configuration) on a
/// fresh session, 3 detecting on a session a legacy server established (its modern probe
/// refused with a plain 400, then the handshake), so the operation starts legacy, on that
/// session, and may turn modern. Each input is an opcode byte and its operands. The opcode's low
/// four bits say what the input is; for an input about a leg (2 to 9), the high four bits say
/// which leg: 0 the innermost leg in flight (the last sent that is still in flight), `k` the
/// `k`-th most recent leg sent, in flight or not (wrapping around). Before the first leg,
/// such an input is skipped (its operands are still read).
///
/// | op | input |
/// |---|---|
/// | 0, 1 | `poll_output(now)` |
/// | 2 | head: status byte (below 160: 200, below 224: unusual list, else a `u16`: `% 500 + 100`), header byte (`& 7` content type, `>> 3` session id), content-length byte |
/// | 3 | a healthy answer to the leg (with selector 0: the innermost leg in flight not yet answered): flags (`1` SSE, `2` more pages, or a server request on the standalone stream, `4` no body end) |
/// | 4, 5 | body chunk from the fragment dictionary (index byte) |
/// | 6 | raw body chunk: length byte, then that many bytes |
/// | 7 | big chunk: `(b % 64 + 1)` KiB of a filler (second byte) |
/// | 8 | body end |
/// | 9 | transport error: kind byte (`0x80` set: `0x40` ? declined : protocol; else `% 3`: timed out, connect, I/O), detail (`>> 2`) |
/// | 10 | `handle_timeout(now)` |
/// | 11 | `cancel()` |
/// | 12 | clock forward `u16` ms |
/// | 13 | clock backward `u16 % 10_000` ms (at most 120 s in all) |
/// | 14 | clock to the innermost leg's end, then `handle_timeout` |
/// | 15 | `poll_event()` |
///
/// Invariants: the operation reaches `Done` (after the input, at most [`MAX_INPUTS`] of them,
/// a few timer firings at advancing time end it); after `Done` polling only yields
/// `AlreadyFinished` and no event comes out; every grant is exactly
/// `max(unit, ceil_to_unit(total - elapsed))`, so never zero and never beyond the budget
/// rounded up; a refusal comes only once the budget is spent (by the latest instant the
/// operation was given: it may have decided before the clock stepped back) and nothing is sent
/// after it; a cancel before the end ends it with `Cancelled`; a cancel notice goes out only
/// when the session sends them, once, naming a `tools/call` that was sent (the one in flight
/// when the cancel came), granted as `mcp-proto`'s one rule for it says ([`leg_grant`]: what
/// is left, at most [`CANCEL_NOTICE_GRANT`]), never with the budget spent; a notice owed is
/// missing only if the budget was spent when its turn came; a work leg's first head that asks
/// for authorization (a 401) ends the operation with `AuthorizationRequired`, in every era,
/// unread; a JSON body never buffers more than the cap, and
/// overflowing it ends with `AnswerTooLarge`; never two legs of one role in flight; an input
/// about a leg no longer in flight changes nothing; an input at or after a leg's end, or its
/// timer, times it out (`LegTimedOut` for the request and the answers to the server; the
/// standalone stream and the notice are just dropped); a transport error ends the operation
/// with its kind's error, except on the standalone stream and the notice; a `Wait` is the end
/// of a leg in flight, the end of the wait for the standalone stream's head, or within the
/// deadline; requests match their kind and echo only valid session ids; errors name a request
/// the operation sends; error messages are one clipped line.
///
/// Per era: every request follows the era rules of the module docs (checked on every leg). A
/// modern-pinned operation reads the body of every `4xx` JSON refusal of its request that
/// does not ask for authorization (a modern server explains a refusal with a JSON-RPC
/// error), never starts over, never sends a
/// GET or a DELETE, and has nothing to close. A `400`, `404` or `405` head that does not end
/// the operation starts the attempt over (a lost session, or the fallback to the handshake
/// while detecting): the answers to the server and the standalone stream go with it. A
/// legacy-pinned operation never reads a `4xx` body; a detecting one may.
///
/// Where the model is weaker than exact, and why: (1) detecting the era, an answer read from a
/// body or a stream may move the operation to the other era and start the attempt over;
/// the harness does not decode what it fed, so after a work leg's answer was read (and only
/// then) it takes the operation's word on whether the answers to the server and the
/// standalone stream are still in flight (pinned to an era, nothing is dropped there and the
/// model stays exact); (2) a modern answer stream that broke (an I/O error once its event
/// stream was being read) may be sent again as a new request instead of ending the operation;
/// the harness allows that only for such a leg and checks that it saw it at most
/// [`MAX_REISSUES`] times (the operation also reissues a stream that ends without its answer,
/// which the harness does not count, since that end may carry the answer).
pub fn operation(data: &[u8]) {
    let mut bytes = Bytes::new(data);
    let (action, pick, budget, resolution, max_pages, mode) = setup(&mut bytes);
    let clock = ManualClock::new();
    let progress = pick & 0x04 != 0;
    let notice = pick & 0x10 != 0;
    let mut config = mode
        .config(OPERATION_BODY_CAP)
        .with_max_pages(max_pages)
        .with_progress(progress)
        .with_cancel_notice(notice)
        .with_listen(pick & 0x20 != 0);
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
    if pick & 0x80 != 0 || mode == Mode::DetectingFromLegacy {
        establish(&mut session, &clock, mode);
    }
    let started = clock.now();
    let deadline = OperationDeadline::start(started, budget, resolution);
    let unit = resolution.unit();
    let op = session.start(action, deadline);
    let mut h = Harness {
        op,
        session: &mut session,
        clock: clock.clone(),
        started,
        latest: started,
        total: budget.as_duration().max(unit),
        unit,
        progress,
        mode,
        eras: Eras::default(),
        reissues: 0,
        notice,
        legs: Vec::new(),
        asked: None,
        calls: Vec::new(),
        transmits: 0,
        done: false,
        reports: crate::Reports::default(),
        json_fed: None,
        expect: None,
        cancelled: false,
        finish_seen: false,
        owed_notice: None,
        no_notice: false,
        notice_sent: false,
        listen_head: None,
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
    let op = bytes.byte();
    let leg = h.pick(op >> 4);
    match op % 16 {
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
            if let Some(i) = leg {
                h.head(i, status, flags, length);
            }
        }
        3 => {
            let flags = bytes.byte();
            let leg = if op >> 4 == 0 {
                h.legs.iter().rposition(|leg| leg.open && !leg.answered)
            } else {
                leg
            };
            if let Some(i) = leg {
                h.healthy(i, flags);
            }
        }
        4 | 5 => {
            let fragment = FRAGMENTS[usize::from(bytes.byte()) % FRAGMENTS.len()];
            if let Some(i) = leg {
                let _ = h.chunk(i, fragment);
            }
        }
        6 => {
            let len = usize::from(bytes.byte());
            let raw = bytes.take(len);
            if let Some(i) = leg {
                let _ = h.chunk(i, raw);
            }
        }
        7 => {
            let kib = usize::from(bytes.byte() % 64) + 1;
            let filler = FILLERS[usize::from(bytes.byte()) % FILLERS.len()];
            if let Some(i) = leg {
                let big: Vec<u8> = filler.iter().copied().cycle().take(kib * 1024).collect();
                let _ = h.chunk(i, &big);
            }
        }
        8 => {
            if let Some(i) = leg {
                h.end(i);
            }
        }
        9 => {
            let pick = bytes.byte();
            let kind = match (pick & 0x80 != 0, pick & 0x40 != 0) {
                (true, true) => TransportErrorKind::Declined,
                (true, false) => TransportErrorKind::Protocol,
                _ => match pick % 3 {
                    0 => TransportErrorKind::TimedOut,
                    1 => TransportErrorKind::Connect,
                    _ => TransportErrorKind::Io,
                },
            };
            let detail = DETAILS[usize::from(pick >> 2) % DETAILS.len()];
            if let Some(i) = leg {
                h.transport_error(i, kind, detail);
            }
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
            if let Some(top) = h.legs.iter().rev().find(|leg| leg.open) {
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
            Output::Update(_) => unreachable!("next_output applies updates"),
            Output::Request(_) => unreachable!("next_output answers requests"),
            Output::Authorize(_) => panic!("no OAuth is configured, so no authorization step"),
            Output::Done(_) => break,
            Output::Event(_) | Output::LegEnded(_) => continue,
            Output::Transmit(leg) => {
                // The driver's timer fires at the end of the grant.
                h.clock.advance(leg.timeout);
                h.timeout();
            }
            Output::Wait(until) | Output::AwaitSession(until) => {
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
