//! The HTTP+SSE transport of 2024-11-05 in `mcp-proto`: operations whose event stream, the
//! `endpoint` it names and the answers it carries are the fuzzer's, on a manual clock.
//!
//! The harness is a driver as `mcp_proto::driver` describes it, with the server played by the
//! fuzzer: the GET that opens the stream ([`LegKind::Events`]) gets a head the fuzzer picks
//! (mostly `200 text/event-stream`); the stream's bytes (`endpoint` events on the URL's origin
//! or any other, a second and different endpoint, garbage, answers for the right id and for
//! wrong ones, requests and notifications of the server, huge events, invalid UTF-8, noise)
//! come while the operation waits, in pieces the fuzzer cuts, and the stream may end or fail,
//! or never end; every POST is answered at once (mostly `202`, else a refusal or a transport
//! failure). With the transport on `Auto`, the URL refuses the POSTs of Streamable HTTP first,
//! so the operation must find HTTP+SSE itself. Time moves only when the operation waits, never
//! past what it asked to wait for. This module must never open a socket or read a real clock.
//!
//! Beside the operation, the harness reads the stream with its own parser
//! ([`SseParser`], the one the `sse` target checks) over exactly the bytes the operation read
//! in time, so it knows which endpoint the stream named first, whether it named another one,
//! which requests the server answered and which requests it asked, independently of the
//! operation's state.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use mcp_auth::QUOTE_LIMIT;
use mcp_proto::driver::{
    Input, Leg, LegId, LegKind, LegStatus, METHOD_HEADER, Operation, Output, TransportError,
    leg_grant,
};
use mcp_proto::sse::{SseEvent, SseParser};
use mcp_proto::{
    Action, Budget, Clock, Error, Event, HttpTransport, ManualClock, OperationDeadline, Outcome,
    Resolution, Session, SessionConfig, TransportErrorKind,
};
use serde_json::{Map, Value, json};

use crate::bytes::Bytes;

/// The body caps (and so the largest event of the stream) the sessions of [`http_sse`] are
/// configured with (the setup picks one).
pub const HTTP_SSE_BODY_CAPS: [usize; 2] = [64 * 1024, 512];
/// The most outputs the operation may hand out between two inputs of the driver.
const MAX_QUIET_OUTPUTS: usize = 2_000;
/// The most waits the operation may ask for once the input is spent (each runs to its end).
const MAX_IDLE_WAITS: usize = 10_000;
/// The most pieces one run of stream bytes is fed in.
const MAX_PIECES: usize = 512;
/// The most stream bytes one run feeds.
const MAX_FED: usize = 4 * 1024 * 1024;

/// The URL the session is configured with: the HTTP+SSE stream's, as the Python SDK serves it.
const URL: &str = "http://127.0.0.1:8000/sse";
/// How errors name the server (the URL's host and port).
const SERVER: &str = "127.0.0.1:8000";
/// The value of the `Authorization` header every request carries: no error may show it.
const SECRET: &str = "fuzz-secret-xyz";

/// The `endpoint` events' data the fuzzer picks from: the URL's origin (relative, absolute,
/// odd spellings of it), other origins (host, scheme, port, spellings that hide another host),
/// a second endpoint on the origin, and what is no URL at all.
const ENDPOINTS: [&str; 28] = [
    "/messages/?session_id=abc",
    "messages?session_id=rel",
    "http://127.0.0.1:8000/messages/?session_id=abc",
    "/other/?session_id=zzz",
    "",
    "   /messages/?session_id=abc\t",
    "?session_id=query-only",
    "HTTP://127.0.0.1:8000/upper",
    "http://127.0.0.1:08000/leading-zero-port",
    "http://0x7f.0.0.1:8000/hex-host",
    "../../../../up/and/out",
    "#fragment",
    "http://evil.example/messages",
    "https://127.0.0.1:8000/messages",
    "http://127.0.0.1:9999/m",
    "http://127.0.0.1/default-port",
    "//evil.example/scheme-relative",
    "\\\\evil.example\\backslashes",
    "http://127.0.0.1:8000@evil.example/userinfo",
    "http://localhost:8000/m",
    "http://[::1]:8000/m",
    "javascript:alert(1)",
    "data:text/plain,hi",
    "file:///etc/passwd",
    "http://",
    "http://127.0.0.1:99999/bad-port",
    "http:evil.example",
    "http://127.0.0.1:8000/\u{1F600}/%zz",
];

/// The versions an `initialize` answer names (`2024-11-05`, the transport's own, is one this client
/// refuses).
const VERSIONS: [&str; 4] = ["2025-06-18", "2025-11-25", "2024-11-05", "1999-01-01"];

/// Stream bytes that are not UTF-8, or break it halfway.
const NOT_UTF8: [&[u8]; 6] = [
    b"data: \xff\xfe\n\n",
    b"event: endp\xc3oint\ndata: /messages/\n\n",
    b"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"t\":\"\xe2\x82\"}}\n\n",
    b"\xef\xbb\xbfdata: {}\n\n",
    b"data: ok\r\n\xff\n\n",
    b"event: endpoint\ndata: /m\xc0\xaf\n\n",
];

/// Stream bytes a server sends beside its messages.
const NOISE: [&[u8]; 8] = [
    b": keepalive\n\n",
    b"retry: 1000\n\n",
    b"id: 7\n\n",
    b"event: ping\ndata: {}\n\n",
    b"\n\n\r\n",
    b"data\n\n",
    b"event: message\ndata:\n\n",
    b"data: not json\n\ndata: [1,2]\n\ndata: {\"jsonrpc\":\"2.0\"}\n\n",
];

/// The event stream as the harness reads it, beside the operation.
#[derive(Debug)]
struct Stream {
    /// The driver reads it: its head was read on, and neither it ended nor the operation let
    /// it go.
    open: bool,
    parser: SseParser,
    events: Vec<SseEvent>,
    /// The parser failed: nothing more is read from the stream.
    broken: bool,
    /// Where the first `endpoint` event said to POST (`Err`: it is refused, on another origin
    /// or no URL at all).
    endpoint: Option<Result<Uri, String>>,
    /// A later `endpoint` event named another endpoint than the first.
    changed: bool,
}

/// What the harness knows of one operation, independently of it.
#[derive(Debug)]
struct Run {
    op: Operation,
    action: Action,
    deadline: OperationDeadline,
    unit: Duration,
    /// The deadline's end, plus one unit: nothing may reach past it.
    limit: Instant,
    /// The session spoke HTTP+SSE when the operation started: its first leg opens the stream.
    sse_from_start: bool,
    /// Over HTTP+SSE without a stream kept from an earlier operation: its first leg opens one.
    opens_stream: bool,
    handed: u32,
    stream: Option<Stream>,
    /// How many event streams the operation opened (a second after one ended between legs).
    streams: u32,
    /// The ids of the requests the operation POSTed, with their methods, in order.
    sent: Vec<(i64, String)>,
    /// The ids the stream answered with a result (not an error) after the request went out.
    answered: HashSet<i64>,
    /// The ids of the requests the server sent on the stream.
    server_requests: Vec<Value>,
    cancelled: bool,
    /// Outputs since the driver's last input.
    quiet: usize,
    /// Waits run to their end once the input was spent.
    idle_waits: usize,
    due: u32,
    reports: crate::Reports,
    finished: bool,
}

/// The driver of one run.
#[derive(Debug)]
struct Harness<'a> {
    bytes: Bytes<'a>,
    session: Session,
    clock: ManualClock,
    cap: usize,
    auto: bool,
    fed: usize,
    /// The server sent the secret itself (then an error may quote it).
    echoed: bool,
}

impl Harness<'_> {
    fn now(&self) -> Instant {
        self.clock.now()
    }

    /// A moment from now to `until` (exclusive when `until` is later), picked by the next
    /// byte.
    fn moment_before(&mut self, until: Instant) -> Instant {
        let now = self.now();
        let span = until.saturating_duration_since(now).as_nanos();
        let pick = u128::from(self.bytes.byte());
        let nanos = u64::try_from(span * pick / 256).unwrap_or(u64::MAX);
        now + Duration::from_nanos(nanos)
    }

    /// Runs `op` to its end; `kept`: the session's event stream an earlier operation left
    /// open, which this one reads on. Returns the stream it leaves open, if any.
    fn run(&mut self, op: Operation, sse_from_start: bool, kept: Option<Stream>) -> Option<Stream> {
        let opens_stream = sse_from_start && kept.is_none();
        let deadline = *op.deadline();
        let unit = deadline.resolution().unit();
        let limit = deadline
            .end()
            .and_then(|end| end.checked_add(unit))
            .expect("the fuzz budgets fit an Instant");
        let mut run = Run {
            action: op.action().clone(),
            op,
            deadline,
            unit,
            limit,
            sse_from_start,
            opens_stream,
            handed: 0,
            stream: kept,
            streams: 0,
            sent: Vec::new(),
            answered: HashSet::new(),
            server_requests: Vec::new(),
            cancelled: false,
            quiet: 0,
            idle_waits: 0,
            due: 0,
            reports: crate::Reports::default(),
            finished: false,
        };
        while let Some(until) = self.drain(&mut run) {
            self.wait(&mut run, until);
        }
        run.stream.filter(|stream| stream.open)
    }

    /// Polls the operation until it waits (`Some(until)`, later than now) or ends (`None`),
    /// carrying out what it hands out meanwhile: every leg answered at once, every request of
    /// the server answered by the caller's responders, every wait already due timed out.
    fn drain(&mut self, run: &mut Run) -> Option<Instant> {
        loop {
            if run.finished {
                return None;
            }
            run.quiet += 1;
            assert!(
                run.quiet < MAX_QUIET_OUTPUTS,
                "the operation handed out {MAX_QUIET_OUTPUTS} outputs without an input"
            );
            let now = self.now();
            match run.op.poll_on(&mut self.session, now) {
                Output::Update(_) => unreachable!("poll_on applies every update"),
                Output::AwaitSession(_) => panic!("a lone operation awaits its session"),
                Output::Authorize(_) => panic!("no OAuth is configured, so no authorization step"),
                Output::Event(event) => check_event(&event),
                Output::LegEnded(report) => run.reports.saw(&report, run.op.legs_sent()),
                Output::Request(request) => {
                    let end = run.deadline.end().expect("the fuzz budgets fit an Instant");
                    assert!(
                        request.ends_at <= end,
                        "a request is to be answered after the budget's end"
                    );
                    let reply = request.reply_from(run.op.session_config());
                    give(run, reply, now);
                }
                Output::Transmit(leg) => {
                    run.due = 0;
                    self.transmit(run, &leg);
                }
                Output::Wait(until) => {
                    assert!(
                        until < run.limit,
                        "a wait until {:?} past the deadline's end ({:?}) and a unit",
                        until.saturating_duration_since(run.deadline.started()),
                        run.deadline.total()
                    );
                    if until > now {
                        run.due = 0;
                        return Some(until);
                    }
                    run.due += 1;
                    assert!(
                        run.due < 100,
                        "the operation keeps waiting for what has come"
                    );
                    give(run, Input::Timeout, now);
                }
                Output::Done(result) => {
                    self.done(run, result);
                    return None;
                }
            }
        }
    }

    /// Checks a leg against the budget and the origin, and answers it.
    fn transmit(&mut self, run: &mut Run, leg: &Leg) {
        let now = self.now();
        let number = leg.id.number();
        let kind = leg.kind;
        run.handed += 1;
        assert!(
            !leg.timeout.is_zero(),
            "leg {number} ({kind:?}) was granted zero"
        );
        assert_eq!(
            leg.ends_at,
            now + leg.timeout,
            "leg {number}: its end is not now + grant"
        );
        assert!(
            !run.deadline.is_exhausted(now),
            "leg {number} ({kind:?}) handed out with the budget spent"
        );
        assert_eq!(
            Some(leg.timeout),
            leg_grant(kind, &run.deadline, now, false),
            "leg {number} ({kind:?}) sent at {:?}: its grant",
            now.saturating_duration_since(run.deadline.started())
        );
        if kind != LegKind::CancelNotice {
            let remaining = run.deadline.remaining(now);
            let expected = crate::streamable::ceil_to(remaining, run.unit).max(run.unit);
            assert_eq!(leg.timeout, expected, "leg {number} ({kind:?}): its grant");
        }
        assert!(
            leg.ends_at < run.limit,
            "leg {number} ({kind:?}) ends past the deadline's end and a unit"
        );
        if run.handed == 1 && run.opens_stream {
            assert_eq!(
                kind,
                LegKind::Events,
                "leg {number}: over HTTP+SSE the first leg opens the event stream"
            );
        }
        let uri = leg.request.uri();
        assert!(
            same_origin(uri),
            "leg {number} ({kind:?}) goes to {uri}, off the URL's origin"
        );
        match kind {
            LegKind::Events => self.open_stream(run, leg),
            // The stream dropped: a driver reports its end.
            LegKind::Hangup => {
                if let Some(stream) = run.stream.as_mut() {
                    stream.open = false;
                }
                give(run, Input::EventsEnded { error: None }, self.now());
            }
            _ => self.post(run, leg),
        }
    }

    /// The GET of the event stream: a head the fuzzer picks, or a failure to connect.
    fn open_stream(&mut self, run: &mut Run, leg: &Leg) {
        let number = leg.id.number();
        assert_eq!(
            leg.request.method(),
            Method::GET,
            "leg {number}: the stream's GET"
        );
        assert_eq!(
            leg.request.uri().to_string(),
            URL,
            "leg {number}: the stream is opened at another URL than the configured one"
        );
        assert_eq!(
            leg.request.headers().get(ACCEPT).map(HeaderValue::as_bytes),
            Some(&b"text/event-stream"[..]),
            "leg {number}: the stream's GET accepts another type"
        );
        // A stream that ended between two legs is opened again, once.
        assert!(
            run.streams < 2,
            "leg {number}: a third event stream in one operation"
        );
        run.streams += 1;
        let pick = self.bytes.byte();
        let now = self.now();
        let (status, content_type) = match pick % 16 {
            0..=9 => (200, Some("text/event-stream")),
            10 => (200, Some("text/event-stream; charset=utf-8")),
            11 => (200, Some("application/json")),
            12 => (200, None),
            13 => (404, Some("text/plain")),
            14 => (
                [401, 403, 405, 500, 502, 204, 301, 406][usize::from(pick >> 4) % 8],
                Some("text/plain"),
            ),
            _ => {
                let kind = [TransportErrorKind::Connect, TransportErrorKind::Io]
                    [usize::from(pick >> 4) % 2];
                let error = TransportError::new(kind, "connection refused");
                give(run, Input::Failed { leg: leg.id, error }, now);
                return;
            }
        };
        let headers = head(content_type);
        let status_code = StatusCode::from_u16(status).expect("a valid status");
        let read = give(
            run,
            Input::Head {
                leg: leg.id,
                status: status_code,
                headers: &headers,
            },
            now,
        );
        if status == 200 && content_type == Some("text/event-stream") {
            assert_eq!(
                read,
                LegStatus::ReadMore,
                "leg {number}: an event stream's head was not read on"
            );
        }
        let open = read == LegStatus::ReadMore;
        run.stream = Some(Stream {
            open,
            parser: SseParser::new(self.cap),
            events: Vec::new(),
            broken: false,
            endpoint: None,
            changed: false,
        });
    }

    /// A POST: to the URL itself (Streamable HTTP, refused) before the stream, then only to
    /// the endpoint the stream named first.
    fn post(&mut self, run: &mut Run, leg: &Leg) {
        let number = leg.id.number();
        let kind = leg.kind;
        assert_eq!(
            leg.request.method(),
            Method::POST,
            "leg {number} ({kind:?}): a message not POSTed"
        );
        let message: Map<String, Value> = serde_json::from_slice(leg.request.body())
            .unwrap_or_else(|err| panic!("leg {number}: a body that is not a JSON object: {err}"));
        assert_eq!(
            message.get("jsonrpc"),
            Some(&json!("2.0")),
            "leg {number}: not JSON-RPC 2.0"
        );
        let method = message.get("method").and_then(Value::as_str);
        let uri = leg.request.uri();
        let Some(stream) = run.stream.as_ref() else {
            // Streamable HTTP, before the refusals move the operation to HTTP+SSE.
            assert!(
                self.auto && !run.sse_from_start,
                "leg {number} ({kind:?}): a POST before the event stream over HTTP+SSE"
            );
            assert_eq!(
                uri.to_string(),
                URL,
                "leg {number} ({kind:?}): Streamable HTTP POSTs to another URL"
            );
            self.refuse(run, leg);
            return;
        };
        match &stream.endpoint {
            None => panic!(
                "leg {number} ({kind:?}): POSTed to {uri} before the event stream named an endpoint"
            ),
            Some(Err(why)) => panic!(
                "leg {number} ({kind:?}): POSTed to {uri} after the stream's endpoint was refused: {why}"
            ),
            Some(Ok(endpoint)) => assert_eq!(
                uri, endpoint,
                "leg {number} ({kind:?}): POSTed elsewhere than the endpoint the stream named first"
            ),
        }
        if !run.op.is_finished() {
            assert!(
                !stream.changed,
                "leg {number} ({kind:?}): POSTed after the stream named another endpoint"
            );
        }
        assert!(
            !leg.request.headers().contains_key(METHOD_HEADER),
            "leg {number} ({kind:?}): a modern request over HTTP+SSE"
        );
        if kind == LegKind::Respond {
            assert!(method.is_none(), "leg {number}: an answer with a method");
            let id = message.get("id").cloned().unwrap_or(Value::Null);
            assert!(
                run.server_requests.contains(&id),
                "leg {number}: an answer to no request of the server's: {message:?}"
            );
        } else {
            assert_eq!(
                method,
                kind.method(),
                "leg {number}: another method than its kind"
            );
            if let Some(id) = message.get("id").and_then(Value::as_i64) {
                run.sent.push((id, method.unwrap_or_default().to_owned()));
            }
        }
        let pick = self.bytes.byte();
        let now = self.now();
        let status = match pick % 16 {
            0..=11 => 202,
            12 => [200, 204][usize::from(pick >> 4) % 2],
            13 => [400, 404, 405, 413][usize::from(pick >> 4) % 4],
            14 => [500, 502, 503, 429, 401, 403, 301, 406][usize::from(pick >> 4) % 8],
            _ => {
                let kind = [
                    TransportErrorKind::Connect,
                    TransportErrorKind::Io,
                    TransportErrorKind::TimedOut,
                    TransportErrorKind::Protocol,
                ][usize::from(pick >> 4) % 4];
                let error = TransportError::new(kind, "connection reset by peer");
                give(run, Input::Failed { leg: leg.id, error }, now);
                return;
            }
        };
        let headers = head(Some("text/plain"));
        let status = StatusCode::from_u16(status).expect("a valid status");
        let read = give(
            run,
            Input::Head {
                leg: leg.id,
                status,
                headers: &headers,
            },
            now,
        );
        if status.is_success() {
            assert_eq!(
                read,
                LegStatus::Complete,
                "leg {number} ({kind:?}): a POST's body is read over HTTP+SSE"
            );
        } else if read == LegStatus::ReadMore {
            self.body(run, leg.id, b"Bad Request");
        }
    }

    /// Streamable HTTP's POST to the URL, refused (as an HTTP+SSE server does), or failed.
    fn refuse(&mut self, run: &mut Run, leg: &Leg) {
        let pick = self.bytes.byte();
        let now = self.now();
        let (status, content_type, body): (u16, _, &[u8]) = match pick % 8 {
            0..=3 => (405, "text/plain", b"Method Not Allowed"),
            4 => (404, "text/plain", b"Not Found"),
            5 => (400, "text/plain", b"Bad Request"),
            6 => match (pick >> 3) % 8 {
                0 => (500, "text/plain", b"Internal Server Error"),
                1 => (401, "text/plain", b"Unauthorized"),
                2 => (415, "text/plain", b"Unsupported Media Type"),
                3 => (403, "text/plain", b"Forbidden"),
                4 => (406, "text/plain", b"Not Acceptable"),
                5 => (404, "application/json", b"{\"detail\":\"Not Found\"}"),
                _ => (
                    400,
                    "application/json",
                    br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Bad Request: no valid session ID"}}"#,
                ),
            },
            _ => {
                let error =
                    TransportError::new(TransportErrorKind::Connect, "connection refused");
                give(run, Input::Failed { leg: leg.id, error }, now);
                return;
            }
        };
        let headers = head(Some(content_type));
        let status = StatusCode::from_u16(status).expect("a valid status");
        let read = give(
            run,
            Input::Head {
                leg: leg.id,
                status,
                headers: &headers,
            },
            now,
        );
        if read == LegStatus::ReadMore {
            self.body(run, leg.id, body);
        }
    }

    /// A whole body for a leg whose head was read on, then its end.
    fn body(&mut self, run: &mut Run, leg: LegId, body: &[u8]) {
        let now = self.now();
        if give(run, Input::Chunk { leg, bytes: body }, now) == LegStatus::ReadMore {
            give(run, Input::End { leg }, now);
        }
    }

    /// The operation waits until `until` (later than now): the stream brings something, ends
    /// or fails, the caller cancels, or nothing comes until then.
    fn wait(&mut self, run: &mut Run, until: Instant) {
        if self.bytes.is_empty() {
            // The input is spent: a stream that never ends, and says nothing more.
            run.idle_waits += 1;
            assert!(
                run.idle_waits < MAX_IDLE_WAITS,
                "the operation did not end within {MAX_IDLE_WAITS} waits once nothing came"
            );
            self.clock.set(until);
            give(run, Input::Timeout, until);
            return;
        }
        let action = self.bytes.byte();
        let bytes = match action % 16 {
            0 => {
                self.clock.set(until);
                give(run, Input::Timeout, until);
                return;
            }
            8 | 9 | 11 | 15 => {
                let pick = self.bytes.byte();
                let at = self.moment_before(until);
                self.clock.set(at);
                self.happen(run, action % 16, pick, at);
                return;
            }
            12 => {
                let _ = run.op.poll_event();
                return;
            }
            1 => {
                let len = usize::from(self.bytes.byte());
                self.bytes.take(len).to_vec()
            }
            2 => {
                let pick = self.bytes.byte();
                let data = ENDPOINTS[usize::from(pick & 0x7f) % ENDPOINTS.len()];
                event(Some("endpoint"), data.as_bytes(), pick & 0x80 != 0)
            }
            3 => {
                let flags = self.bytes.byte();
                Self::answer(run, flags, None)
            }
            4 => {
                let flags = self.bytes.byte();
                stray_answer(run, flags)
            }
            5 => {
                let pick = self.bytes.byte();
                server_message(run, pick)
            }
            6 => {
                let pick = self.bytes.byte();
                self.huge_event(pick)
            }
            7 => NOT_UTF8[usize::from(self.bytes.byte()) % NOT_UTF8.len()].to_vec(),
            10 => NOISE[usize::from(self.bytes.byte()) % NOISE.len()].to_vec(),
            13 => {
                let len = usize::from(self.bytes.byte() % 64);
                let data = self.bytes.take(len).to_vec();
                event(Some("endpoint"), &data, false)
            }
            _ => {
                let flags = self.bytes.byte();
                let cut = self.bytes.byte();
                Self::answer(run, flags, Some(cut))
            }
        };
        let at = self.moment_before(until);
        let split = self.bytes.byte();
        self.clock.set(at);
        self.feed(run, &bytes, split);
    }

    /// What happens to the stream or the operation at `at`, other than bytes.
    fn happen(&mut self, run: &mut Run, what: u8, pick: u8, at: Instant) {
        // A driver reports nothing more of a leg the operation no longer has.
        let live = |run: &Run| run.stream.as_ref().is_some_and(|s| s.open);
        match what {
            // The server closes the stream.
            8 if live(run) => {
                if let Some(stream) = run.stream.as_mut() {
                    stream.open = false;
                    give(run, Input::EventsEnded { error: None }, at);
                }
            }
            // The stream's connection breaks.
            9 if live(run) => {
                if let Some(stream) = run.stream.as_mut() {
                    stream.open = false;
                    let kind = [
                        TransportErrorKind::Io,
                        TransportErrorKind::Protocol,
                        TransportErrorKind::TimedOut,
                    ][usize::from(pick) % 3];
                    let error = TransportError::new(kind, "connection reset by peer");
                    give(run, Input::EventsEnded { error: Some(error) }, at);
                }
            }
            // The caller cancels.
            11 => {
                if !run.op.is_finished() {
                    run.cancelled = true;
                }
                give(run, Input::Cancel, at);
            }
            // Time passes, nothing comes (or the stream was already gone).
            _ => {
                give(run, Input::Timeout, at);
            }
        }
    }

    /// Feeds `bytes` as the stream's next bytes, now, in pieces `split` picks (`% 4 == 0`:
    /// whole; else `(split >> 2) + 1` bytes each, in at most [`MAX_PIECES`] pieces), draining
    /// the operation after each piece.
    fn feed(&mut self, run: &mut Run, bytes: &[u8], split: u8) {
        let size = match split % 4 {
            0 => bytes.len(),
            _ => usize::from(split >> 2) + 1,
        }
        .max(bytes.len().div_ceil(MAX_PIECES))
        .max(1);
        // The server sends the secret itself: an error may quote it from now on.
        let echoes = contains(bytes, SECRET.as_bytes());
        for chunk in bytes.chunks(size) {
            if run.finished || self.fed >= MAX_FED {
                return;
            }
            let now = self.now();
            let finished = run.op.is_finished();
            let Some(mut stream) = run.stream.take() else {
                return;
            };
            if !stream.open {
                run.stream = Some(stream);
                return;
            }
            self.fed += chunk.len();
            self.echoed |= echoes;
            // The session's stream: read by whatever operation runs, for as long as it lasts
            // (the leg that opened it is over once it named its endpoint).
            read_along(&mut stream, chunk, finished, run);
            give(run, Input::Events(chunk), now);
            run.stream = Some(stream);
            if self.drain(run).is_none() {
                return;
            }
        }
    }

    /// A healthy answer (or error) to a request the operation sent, as a `message` event:
    /// flags `0x01` an error, `0x02` to the first request instead of the last, `0x04` more
    /// pages, `0x08` a notification first, `0x10` typed `message` explicitly, `0x60` the
    /// version an `initialize` answer names, `0x80` CRLF line ends. With `cut`, the data is
    /// spread over two `data:` lines at that offset.
    fn answer(run: &Run, flags: u8, cut: Option<u8>) -> Vec<u8> {
        let asked = if flags & 0x02 != 0 {
            run.sent.first()
        } else {
            run.sent.last()
        };
        let Some((id, method)) = asked else {
            return Vec::new();
        };
        let message = if flags & 0x01 != 0 {
            json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32603, "message": "internal error", "data": {"why": "fuzz"}}})
        } else {
            let result = match method.as_str() {
                "initialize" => json!({
                    "protocolVersion": VERSIONS[usize::from(flags >> 5 & 3)],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "fuzz-sse", "version": "1.0"}
                }),
                "tools/list" => {
                    let mut result = json!({"tools": [{"name": format!("t{id}"),
                        "inputSchema": {"type": "object"}}]});
                    if flags & 0x04 != 0 {
                        result["nextCursor"] = json!(format!("cursor-{id}"));
                    }
                    result
                }
                "tools/call" => json!({"content": [{"type": "text", "text": "over sse"}]}),
                _ => json!({}),
            };
            json!({"jsonrpc": "2.0", "id": id, "result": result})
        };
        let crlf = flags & 0x80 != 0;
        let kind = (flags & 0x10 != 0).then_some("message");
        let data = message.to_string();
        let mut bytes = Vec::new();
        if flags & 0x08 != 0 {
            let note = json!({"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "data": "working"}});
            bytes.extend(event(None, note.to_string().as_bytes(), crlf));
        }
        match cut {
            None => bytes.extend(event(kind, data.as_bytes(), crlf)),
            Some(cut) => {
                let at = usize::from(cut) % (data.len() + 1);
                let (first, second) = data.split_at(at);
                let newline = if crlf { "\r\n" } else { "\n" };
                if let Some(kind) = kind {
                    bytes.extend(format!("event: {kind}{newline}").into_bytes());
                }
                bytes.extend(
                    format!("data: {first}{newline}data: {second}{newline}{newline}").into_bytes(),
                );
            }
        }
        bytes
    }

    /// An event larger than the cap (or nearly), ended or not: `pick & 7` its size in
    /// quarters of the cap, `0x40` an `endpoint` event, `0x80` ended.
    fn huge_event(&self, pick: u8) -> Vec<u8> {
        let size = self.cap / 4 * (usize::from(pick & 7) + 1);
        let mut bytes = Vec::with_capacity(size + 32);
        if pick & 0x40 != 0 {
            bytes.extend_from_slice(b"event: endpoint\n");
        }
        bytes.extend_from_slice(b"data: ");
        bytes.resize(bytes.len() + size, b'x');
        if pick & 0x80 != 0 {
            bytes.extend_from_slice(b"\n\n");
        }
        bytes
    }

    /// The operation ended: in time, typed, and only with a result the stream gave.
    fn done(&mut self, run: &mut Run, result: Result<Outcome, Error>) {
        let now = self.now();
        run.finished = true;
        assert!(
            now < run.limit,
            "Done {:?} after the deadline's end and a unit",
            now.saturating_duration_since(run.limit)
        );
        run.reports.all(run.op.legs_sent());
        match &result {
            Ok(outcome) => {
                assert!(
                    crate::streamable::outcome_fits(&run.action, outcome),
                    "{:?} ended with {outcome:?}",
                    run.action
                );
                assert!(!run.cancelled, "a cancelled operation succeeded");
                assert!(
                    run.stream.as_ref().is_some_and(|s| s.endpoint.is_some()),
                    "a result, and the stream never named an endpoint"
                );
                let (id, method) = run.sent.last().expect("a result without a request");
                assert!(
                    run.answered.contains(id),
                    "a result for request {id} ({method}), which the stream never answered"
                );
            }
            Err(err) => check_error(err, self.echoed),
        }
        crate::streamable::check_finished(&mut run.op, now);
    }
}

/// Reads `chunk` of the stream as the operation does (`finished`: its result was ready
/// before), and notes what it says: the endpoints, the answers, the server's requests.
fn read_along(stream: &mut Stream, chunk: &[u8], finished: bool, run: &mut Run) {
    if stream.broken {
        return;
    }
    let fed = stream.parser.feed(chunk, &mut stream.events);
    for event in std::mem::take(&mut stream.events) {
        match event.event.as_deref() {
            None | Some("message") if !event.data.trim().is_empty() => {
                heard_message(run, event.data.as_bytes());
            }
            Some("endpoint") if !finished => {
                let named = resolve(&event.data);
                match &stream.endpoint {
                    None => stream.endpoint = Some(named),
                    Some(Ok(first)) if named.as_ref().ok() != Some(first) => stream.changed = true,
                    Some(_) => {}
                }
            }
            _ => {}
        }
    }
    if fed.is_err() {
        stream.broken = true;
    }
}

/// One `message` event, read as JSON-RPC: a result for a request sent, or a server request.
fn heard_message(run: &mut Run, data: &[u8]) {
    let Ok(Value::Object(message)) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let id = message.get("id");
    if let Some(Value::String(_)) = message.get("method") {
        let id = match id {
            Some(Value::Number(n)) => n.as_i64().map(Value::from),
            Some(Value::String(s)) => Some(Value::from(s.as_str())),
            _ => None,
        };
        if let Some(id) = id {
            run.server_requests.push(id);
        }
        return;
    }
    if message.contains_key("error") || !message.contains_key("result") {
        return;
    }
    if let Some(id) = id.and_then(Value::as_i64) {
        if run.sent.iter().any(|(sent, _)| *sent == id) {
            run.answered.insert(id);
        }
    }
}

/// Gives the operation `input` at `at`, as the driver.
fn give(run: &mut Run, input: Input<'_>, at: Instant) -> LegStatus {
    run.quiet = 0;
    run.op.handle_input(input, at)
}

/// Where an `endpoint` event's data points, resolved against the URL and held to its origin.
fn resolve(data: &str) -> Result<Uri, String> {
    let base = url::Url::parse(URL).expect("the fuzz URL parses");
    let joined = base
        .join(data.trim())
        .map_err(|err| format!("{data:?} is no URL: {err}"))?;
    if joined.origin() != base.origin() {
        return Err(format!("{data:?} is on another origin"));
    }
    joined
        .as_str()
        .parse()
        .map_err(|err| format!("{data:?} is no URI: {err}"))
}

/// Whether `uri` is on the configured URL's origin: scheme, host and port.
fn same_origin(uri: &Uri) -> bool {
    uri.scheme_str()
        .is_some_and(|s| s.eq_ignore_ascii_case("http"))
        && uri.host() == Some("127.0.0.1")
        && uri.port_u16() == Some(8000)
}

fn head(content_type: Option<&'static str>) -> HeaderMap {
    let mut headers = HeaderMap::new();
    if let Some(content_type) = content_type {
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    }
    headers
}

/// One event: its type (`None`: the default), one `data:` line, a blank line.
fn event(kind: Option<&str>, data: &[u8], crlf: bool) -> Vec<u8> {
    let newline: &[u8] = if crlf { b"\r\n" } else { b"\n" };
    let mut bytes = Vec::with_capacity(data.len() + 32);
    if let Some(kind) = kind {
        bytes.extend_from_slice(b"event: ");
        bytes.extend_from_slice(kind.as_bytes());
        bytes.extend_from_slice(newline);
    }
    bytes.extend_from_slice(b"data: ");
    bytes.extend_from_slice(data);
    bytes.extend_from_slice(newline);
    bytes.extend_from_slice(newline);
    bytes
}

/// An answer no request awaits (`flags % 6`): to an earlier request, to one never sent, with
/// the id as a string, a negative one, a null id; or an error with a null id.
fn stray_answer(run: &Run, flags: u8) -> Vec<u8> {
    let last = run.sent.last().map(|(id, _)| *id);
    let result = json!({"content": [{"type": "text", "text": "stray"}]});
    let message = match flags % 6 {
        0 => {
            let earlier = run
                .sent
                .iter()
                .map(|(id, _)| *id)
                .find(|id| Some(*id) != last);
            json!({"jsonrpc": "2.0", "id": earlier.unwrap_or(9_999), "result": result})
        }
        1 => json!({"jsonrpc": "2.0", "id": last.unwrap_or(0) + 1, "result": result}),
        2 => json!({"jsonrpc": "2.0", "id": last.unwrap_or(1).to_string(), "result": result}),
        3 => json!({"jsonrpc": "2.0", "id": -1, "result": result}),
        4 => json!({"jsonrpc": "2.0", "id": null, "result": result}),
        _ => json!({"jsonrpc": "2.0", "id": null,
            "error": {"code": -32700, "message": "Parse error"}}),
    };
    event(None, message.to_string().as_bytes(), flags & 0x80 != 0)
}

/// A notification or a request of the server's (`pick % 7`), as a `message` event.
fn server_message(run: &Run, pick: u8) -> Vec<u8> {
    let id = format!("s-{}", run.server_requests.len());
    let message = match pick % 7 {
        0 => json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": 1, "progress": 1, "total": 2}}),
        1 => json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
        2 => json!({"jsonrpc": "2.0", "id": id, "method": "ping"}),
        3 => json!({"jsonrpc": "2.0", "id": id, "method": "roots/list"}),
        4 => json!({"jsonrpc": "2.0", "id": id, "method": "elicitation/create",
            "params": {"message": "Name?", "requestedSchema": {"type": "object",
                "properties": {"name": {"type": "string", "default": "fuzz"}}}}}),
        // A request whose id is the client's own request's.
        5 => json!({"jsonrpc": "2.0", "id": run.sent.last().map_or(1, |(id, _)| *id),
            "method": "ping"}),
        _ => json!({"jsonrpc": "2.0", "method": "notifications/message",
            "params": {"level": "error", "logger": "fuzz", "data": {"line\nbreak": "\u{1b}[31m"}}}),
    };
    event(None, message.to_string().as_bytes(), pick & 0x80 != 0)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn check_event(event: &Event) {
    if let Event::StdoutNoise { line } = event {
        assert!(
            line.chars().count() <= QUOTE_LIMIT + 1,
            "a noise event of {} characters",
            line.chars().count()
        );
        assert!(
            !line.chars().any(char::is_control),
            "a noise event with a control character: {line:?}"
        );
    }
}

/// Errors this transport can never end with.
const IMPOSSIBLE: [&str; 9] = [
    "already_finished",
    "spawn_failed",
    "server_exited",
    "invalid_url",
    "invalid_header",
    "invalid_certificates",
    "tls",
    "proxy",
    "authorization",
];

fn check_error(err: &Error, echoed: bool) {
    let text = err.to_string();
    assert!(
        !IMPOSSIBLE.contains(&err.kind()),
        "an error of kind {} over HTTP+SSE: {text}",
        err.kind()
    );
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
        assert_eq!(server, SERVER, "the error names another server");
    }
    if !echoed {
        assert!(
            !text.contains(SECRET),
            "an error shows the Authorization header's value: {text}"
        );
        let debug = format!("{err:?}");
        assert!(
            !debug.contains(SECRET),
            "an error's Debug shows the Authorization header's value: {debug}"
        );
    }
}

fn budget(pick: u8) -> Budget {
    if pick < 200 {
        Budget::from_secs(u64::from(pick % 5) + 1)
    } else {
        // Sub-second and short budgets, zero included (raised to one unit).
        Budget::from_duration(Duration::from_millis(u64::from(pick - 200) * 50))
    }
}

fn resolution(pick: u8) -> Resolution {
    match pick % 4 {
        0 | 1 => Resolution::MILLISECOND,
        2 => Resolution::SECOND,
        _ => Resolution::from_unit(Duration::from_millis(u64::from(pick >> 2) + 1))
            .unwrap_or(Resolution::MILLISECOND),
    }
}

fn start(session: &mut Session, pick: u8, now: Instant) -> Operation {
    match pick % 3 {
        0 => session.call_tool("echo", Map::new(), now),
        1 => session.list_tools(now),
        _ => session.probe(now),
    }
}

/// The HTTP+SSE target.
///
/// Layout: three setup bytes, then for each operation an action byte followed by the bytes
/// its legs and waits consume. Setup: byte 0 = `...ONRCA`: `A` the transport (`Auto`, the
/// URL refusing the POSTs of Streamable HTTP first; else `Sse` pinned), `C` the body cap
/// (0: 64 KiB, 1: 512 bytes: the largest event), `R` a responder for `roots/list`, `N` the
/// cancel notice on, `O` a second operation on the session (else one); byte 1 the budget
/// (below 200: `% 5 + 1` s, else `(b - 200) * 50` ms, zero raised to a unit), byte 2 the
/// resolution (`% 4`: ms, ms, s, `(b >> 2) + 1` ms). The action byte (`% 3`): call a tool,
/// list tools, probe.
///
/// Each leg handed out takes a byte. The stream's GET (`% 16`): 0-9 `200 text/event-stream`,
/// 10 the same with a charset, 11 `200 application/json`, 12 `200` without a type, 13 `404`,
/// 14 a status from `[401, 403, 405, 500, 502, 204, 301, 406]` (`b >> 4`), 15 a failure to
/// connect. A POST to the endpoint (`% 16`): 0-11 `202`, 12 `200`/`204`, 13 a `4xx`, 14 a
/// `5xx`, `429`, `401`, `403`, `301` or `406`, 15 a transport failure. A POST to the URL
/// itself (Streamable HTTP, under `Auto`, `% 8`): 0-3 `405`, 4 `404`, 5 `400`, 6 another
/// refusal (`b >> 3`: 500, 401, 415, 403, 406, a JSON 404, a JSON-RPC 400), 7 a failure to
/// connect.
///
/// Each time the operation waits, the next byte (`% 16`) says what comes before the wait
/// ends; the stream's bytes are followed by a moment byte (when, before the wait's end) and a
/// split byte (`% 4 == 0` whole, else pieces of `(b >> 2) + 1` bytes, the operation drained
/// after each): 0 nothing (the wait ends); 1 raw bytes (a length byte, the bytes); 2 an
/// `endpoint` event (a byte: `ENDPOINTS[(b & 0x7f) % len]`, `0x80` CRLF); 3 a healthy answer
/// (flags, see `Harness::answer`); 4 an answer no request awaits (flags); 5 a request or a
/// notification of the server's (a byte); 6 an event of up to twice the cap (a byte); 7 bytes
/// that are not UTF-8 (a byte); 8 the stream ends, 9 it breaks, 11 the caller cancels, 15
/// time passes (each: a byte, then a moment byte); 10 noise (comments, `retry`, `id`, other
/// event types, data that is not JSON-RPC; a byte); 12 `poll_event()`; 13 an `endpoint`
/// event of raw bytes (a length byte `% 64`, the bytes); 14 a healthy answer spread over two
/// `data:` lines (flags, a cut byte). Once the input is spent the stream stays open and
/// silent: every wait runs to its end.
///
/// Invariants: every operation ends (`Done`) within a bounded number of outputs, before its
/// deadline's end plus one unit on the manual clock, and nothing it asks for (a wait, a leg's
/// end, a request to the caller) reaches past that; every leg is granted
/// `max(unit, ceil_to_unit(remaining))` (a cancel notice what `driver::leg_grant` says), never
/// zero, and none is handed out with the budget spent; every leg goes to the URL's origin
/// (scheme, host, port); over HTTP+SSE the first leg is the GET of the URL itself, accepting
/// `text/event-stream`, and an event stream's head is read on; no POST goes out before the
/// stream named an endpoint, every POST goes to the first endpoint it named, none (but what
/// ends the operation) after it named another, none after it named one on another origin;
/// POSTs before the stream only under `Auto`, to the URL; over HTTP+SSE no request is modern,
/// a `2xx` POST is never read, an answer to the server names a request the server sent on the
/// stream; a result only after the stream answered the last request with a result of its id,
/// never after a cancel, and of the action's kind; an error is typed (no kind this transport
/// cannot have), names the server, is one clipped line, and never shows the
/// `Authorization` header's value (unless the server sent it); noise events are clipped; every
/// leg reported once; after `Done`, only `AlreadyFinished`.
pub fn http_sse(data: &[u8]) {
    let mut bytes = Bytes::new(data);
    let setup = bytes.byte();
    let budget = budget(bytes.byte());
    let resolution = resolution(bytes.byte());
    let auto = setup & 0x01 != 0;
    let cap = HTTP_SSE_BODY_CAPS[usize::from(setup >> 1 & 1)];
    let transport = if auto {
        HttpTransport::Auto
    } else {
        HttpTransport::Sse
    };
    let mut config = SessionConfig::new(URL)
        .expect("the fuzz URL is valid")
        .with_header("Authorization", &format!("Bearer {SECRET}"))
        .expect("the secret is a valid header")
        .with_http_transport(transport)
        .with_budget(budget)
        .with_resolution(resolution)
        .with_body_cap(cap)
        .with_cancel_notice(setup & 0x08 != 0);
    if setup & 0x04 != 0 {
        config = config.respond_to("roots/list", |_| Ok(json!({"roots": []})));
    }
    let operations = if setup & 0x10 != 0 { 2 } else { 1 };
    let mut harness = Harness {
        bytes,
        session: Session::new(config),
        clock: ManualClock::new(),
        cap,
        auto,
        fed: 0,
        echoed: false,
    };
    let mut kept = None;
    for _ in 0..operations {
        let pick = harness.bytes.byte();
        let now = harness.now();
        let sse_from_start = harness.session.speaks_sse();
        if !auto {
            assert!(sse_from_start, "a session pinned to HTTP+SSE forgot it");
        }
        // A driver keeps the stream only while the session says it is open.
        let open = harness.session.event_stream_open();
        let op = start(&mut harness.session, pick, now);
        kept = harness.run(op, sse_from_start, kept.filter(|_| open));
    }
}
