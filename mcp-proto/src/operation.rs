//! The operation state machine: every transition of an MCP operation lives here.
//!
//! An [`Operation`] is one public action (probe, list tools, call a tool, close the session)
//! under one [`OperationDeadline`]. It decides which leg comes next, grants it what is left of
//! the budget, reads each answer by the transport's rules and ends with a typed result. It does
//! not know which driver runs it, and it never reads a clock, opens a socket or sleeps.
//!
//! # Driving it
//!
//! Mutate once, then drain outputs until you must wait:
//!
//! * [`poll_output`](Operation::poll_output) returns, in this order of priority: a queued
//!   [`Event`]; the final result ([`Output::Done`]); a leg to send ([`Output::Transmit`]), whose
//!   grant was read at the `now` you passed; or [`Output::Wait`] with the instant at which to
//!   call [`handle_timeout`](Operation::handle_timeout) (the end of the leg in flight, or the
//!   moment to resume a stream the server closed).
//! * For a transmitted leg, send `leg.request` under `leg.timeout` for the **whole** leg
//!   (connect, send, head and body together), then feed what came back:
//!   [`handle_response`](Operation::handle_response) with the head, then
//!   [`handle_body_chunk`](Operation::handle_body_chunk) for each chunk while it answers
//!   [`LegStatus::ReadMore`], then [`handle_body_end`](Operation::handle_body_end) if the body
//!   ended first. On [`LegStatus::Complete`], stop reading and drop the response: the answer is
//!   in (or the leg failed), and a stream the server keeps open must not hold the operation.
//! * **Between chunks**, drain `poll_output` until it returns `Wait`: it hands out the server's
//!   notifications as they arrive, and when the server sent a request on the stream (an
//!   elicitation, a `ping`) it returns a *nested* `Transmit` carrying the answer. Run that leg
//!   to completion like any other (its inputs go to it, the innermost leg), then go back to
//!   reading the outer stream. `Done` there ends the operation: drop the stream.
//! * If the transport fails, feed [`handle_transport_error`](Operation::handle_transport_error);
//!   if your timer fires, [`handle_timeout`](Operation::handle_timeout).
//! * A [`LegKind::Listen`] leg is the session's standalone stream: read it **beside** the
//!   other legs (a driver that cannot read two responses at once simply drops it) and feed it
//!   through the `handle_listen_*` inputs; drain `poll_output` after each chunk as above.
//! * On `Done`, drop everything still open, the standalone stream included.
//!
//! ```
//! use mcp_proto::{LegStatus, ManualClock, Clock, Output, Session, SessionConfig};
//! use http::{HeaderMap, StatusCode};
//!
//! let clock = ManualClock::new();
//! let mut session = Session::new(SessionConfig::new("http://127.0.0.1:8080/mcp")?);
//! let mut op = session.call_tool("echo", serde_json::Map::new(), clock.now());
//! let answers = [
//!     r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#,
//!     "", // notifications/initialized: 202, no body
//!     r#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"hi"}]}}"#,
//! ];
//! let mut answers = answers.iter();
//! let result = loop {
//!     match op.poll_output(clock.now()) {
//!         Output::Transmit(leg) => {
//!             let body = answers.next().unwrap();
//!             let status = if body.is_empty() { StatusCode::ACCEPTED } else { StatusCode::OK };
//!             if op.handle_response(status, &HeaderMap::new(), clock.now()) == LegStatus::ReadMore {
//!                 if op.handle_body_chunk(body.as_bytes(), clock.now()) == LegStatus::ReadMore {
//!                     op.handle_body_end(clock.now());
//!                 }
//!             }
//!         }
//!         Output::Event(_) => {}
//!         Output::Wait(_) => op.handle_timeout(clock.now()),
//!         Output::Done(result) => break result,
//!     }
//! };
//! assert_eq!(result?.into_call().unwrap().text(), "hi");
//! # Ok::<(), mcp_proto::Error>(())
//! ```

use std::collections::{HashSet, VecDeque};
use std::time::{Duration, Instant};

use http::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderMap, HeaderValue};
use http::{Method, StatusCode};
use serde_json::{Map, Value, json};

use crate::deadline::{Budget, OperationDeadline};
use crate::error::{Error, QUOTE_LIMIT, clip};
use crate::jsonrpc::{self, Incoming, RequestId, RpcError};
use crate::model::{self, CallToolResult, Notification, ProtocolVersion, SessionInfo, Tool};
use crate::session::{SESSION_HEADER, Session, valid_session_id};
use crate::sse::{SseError, SseEvent, SseParser};

/// How long to wait before resuming a closed stream when the server named no `retry`.
pub const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// The most times one answer's stream is resumed before the operation gives up.
pub const MAX_RESUMPTIONS: u32 = 16;
/// The grant of a best-effort `notifications/cancelled` (see [`Operation::cancel_notice`]).
pub const CANCEL_NOTICE_GRANT: Duration = Duration::from_secs(1);
/// How long the work request waits for the standalone stream's head before going out anyway.
pub const LISTEN_HEAD_WAIT: Duration = Duration::from_secs(1);

/// What an operation is for.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Action {
    /// Handshake only (or `ping` on a live session): does the server answer, and who is it?
    Probe,
    /// Every page of `tools/list`.
    ListTools,
    /// One `tools/call`.
    CallTool {
        /// The tool's name.
        name: String,
        /// Its arguments (sent as `{}` when empty).
        arguments: Map<String, Value>,
    },
    /// End the session on the server (a DELETE).
    Close,
}

/// Which request a leg carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LegKind {
    /// `initialize`.
    Initialize,
    /// `notifications/initialized`.
    Initialized,
    /// `ping` (a probe on a live session).
    Ping,
    /// One page of `tools/list` (1-based).
    ListTools {
        /// The page number.
        page: u32,
    },
    /// `tools/call`.
    CallTool,
    /// A POST answering a request the server sent on a stream.
    Respond,
    /// A GET resuming a stream the server closed before the answer (`Last-Event-ID`).
    Resume,
    /// A DELETE ending the session.
    Close,
    /// A best-effort `notifications/cancelled` after the caller cancelled a `tools/call`.
    CancelNotice,
    /// A GET opening the session's standalone stream, read in the background (see
    /// [`SessionConfig::listen`](crate::SessionConfig::listen)).
    Listen,
}

impl LegKind {
    /// The JSON-RPC method the leg carries; for legs that carry none, what the leg does:
    /// `response`, `resume` (GET), `close` (DELETE) or `listen` (GET).
    pub const fn method(self) -> &'static str {
        match self {
            Self::Initialize => "initialize",
            Self::Initialized => "notifications/initialized",
            Self::Ping => "ping",
            Self::ListTools { .. } => "tools/list",
            Self::CallTool => "tools/call",
            Self::Respond => "response",
            Self::Resume => "resume",
            Self::Close => "close",
            Self::CancelNotice => "notifications/cancelled",
            Self::Listen => "listen",
        }
    }
}

/// One HTTP request to send, with the part of the budget it may spend.
#[derive(Debug)]
#[must_use = "a leg must be sent, or the operation waits for it forever"]
pub struct Leg {
    /// The leg's number within the operation (1-based).
    pub number: u32,
    /// Which request it carries.
    pub kind: LegKind,
    /// The request, ready to send.
    pub request: http::Request<Vec<u8>>,
    /// The leg's grant: bound the **whole** leg by it. Never zero.
    pub timeout: Duration,
    /// The instant the grant ends (`now + timeout` at the poll that produced the leg).
    pub ends_at: Instant,
}

/// Something the server sent while answering, for the caller.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Event {
    /// A notification (progress, logging, list changes).
    Notification(Notification),
    /// A request from the server. It is answered by the operation itself (with the caller's
    /// registered responder, `{}` for `ping`, or error -32601); this event is for the record.
    ServerRequest {
        /// The server's id for it.
        id: RequestId,
        /// The method.
        method: String,
        /// The params, verbatim.
        params: Value,
    },
}

/// The successful result of an operation.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Outcome {
    /// What a probe found.
    Probe(SessionInfo),
    /// Every tool of every page, in order.
    Tools(Vec<Tool>),
    /// The tool's result (which may be `is_error`).
    Call(CallToolResult),
    /// The session is closed (or there was none to close).
    Closed,
}

impl Outcome {
    /// The probe's report, if this is one.
    pub fn into_probe(self) -> Option<SessionInfo> {
        match self {
            Self::Probe(info) => Some(info),
            _ => None,
        }
    }

    /// The tools, if this is a listing.
    pub fn into_tools(self) -> Option<Vec<Tool>> {
        match self {
            Self::Tools(tools) => Some(tools),
            _ => None,
        }
    }

    /// The call's result, if this is one.
    pub fn into_call(self) -> Option<CallToolResult> {
        match self {
            Self::Call(result) => Some(result),
            _ => None,
        }
    }
}

/// What the driver must do next.
#[derive(Debug)]
#[must_use]
pub enum Output {
    /// Send this leg.
    Transmit(Leg),
    /// Nothing to send: feed the leg in flight, or call `handle_timeout` at this instant.
    Wait(Instant),
    /// Hand this to the caller, then poll again.
    Event(Event),
    /// The operation is over. Polling again yields [`Error::AlreadyFinished`].
    Done(Result<Outcome, Error>),
}

/// Whether the driver should keep reading the body of the leg in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "a driver that keeps reading after Complete waits for a stream that may never end"]
pub enum LegStatus {
    /// Feed more of the body (or its end).
    ReadMore,
    /// Stop reading and drop the response: the leg is over.
    Complete,
}

/// How a leg's transport failed, as the driver saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransportError {
    /// The kind of failure.
    pub kind: TransportErrorKind,
    /// The transport's own description (clipped before it is quoted).
    pub detail: String,
}

/// The kinds of transport failure a driver reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransportErrorKind {
    /// The leg's grant ran out in the transport.
    TimedOut,
    /// No connection could be made (refused, DNS, TLS handshake).
    Connect,
    /// The connection broke while sending or reading.
    Io,
    /// The server answered with something that is not HTTP (a head that does not parse, e.g.
    /// a header value with CR or LF in it). It is the server's fault, reported as a
    /// malformed answer, not as a server that could not be reached.
    Protocol,
}

impl TransportError {
    /// A transport error of `kind` with `detail`.
    pub fn new(kind: TransportErrorKind, detail: impl Into<String>) -> Self {
        Self {
            kind,
            detail: detail.into(),
        }
    }
}

/// The next leg to build when nothing is in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Initialize,
    Initialized,
    Work,
}

#[derive(Debug)]
enum Reading {
    Head,
    Json(Vec<u8>),
    Sse {
        parser: SseParser,
        saw_message: bool,
    },
}

#[derive(Debug)]
struct InFlight {
    kind: LegKind,
    /// The request whose answer this leg reads (for a resumption: the original request).
    answers: LegKind,
    request_id: Option<i64>,
    grant: Duration,
    ends_at: Instant,
    carried_session: bool,
    status: u16,
    session_id: Option<String>,
    reading: Reading,
}

/// The session's standalone stream, read beside the operation's own legs.
#[derive(Debug)]
enum Listen {
    /// Not wanted, refused, failed or closed: the operation goes on without it.
    Off,
    /// Wanted: opened once the session is live, before the work request.
    Due,
    /// Sent, its head not in yet: the work request waits for it until `proceed_at`, so the
    /// server has the stream before the tool that may use it runs.
    Opening { proceed_at: Instant },
    /// Open and being read.
    Open(SseParser),
}

/// A stream closed before its answer, to be resumed with a GET.
#[derive(Debug)]
struct Resumption {
    at: Instant,
    ready: bool,
    answers: LegKind,
    request_id: Option<i64>,
    /// The grant of the request whose answer is awaited.
    grant: Duration,
}

/// One MCP operation under one deadline. See the [module docs](self) for the driver loop.
#[derive(Debug)]
pub struct Operation<'s> {
    session: &'s mut Session,
    action: Action,
    deadline: OperationDeadline,
    next: Step,
    legs_sent: u32,
    /// The legs in flight, innermost last: a stream being read, and at most one answer to a
    /// server request nested inside it.
    legs: Vec<InFlight>,
    /// The handshake answered by `initialize`, committed to the session only once the
    /// `notifications/initialized` leg is accepted.
    pending: Option<SessionInfo>,
    reinitialized: bool,
    events: VecDeque<Event>,
    /// Answers to server requests, waiting to be sent.
    replies: VecDeque<(RequestId, Result<Value, RpcError>)>,
    resume: Option<Resumption>,
    resumptions: u32,
    listen: Listen,
    last_event_id: Option<String>,
    /// The id of the `tools/call` in flight when the caller cancelled.
    cancelled_call: Option<i64>,
    finished: Option<Result<Outcome, Error>>,
    returned: bool,
    tools: Vec<Tool>,
    cursor: Option<String>,
    cursors_seen: HashSet<String>,
    pages: u32,
    scratch: Vec<SseEvent>,
}

impl<'s> Operation<'s> {
    pub(crate) fn new(
        session: &'s mut Session,
        action: Action,
        deadline: OperationDeadline,
    ) -> Self {
        let next = if session.info().is_some() {
            Step::Work
        } else {
            Step::Initialize
        };
        // Closing a session that has no id on the server sends nothing.
        let nothing_to_close =
            action == Action::Close && session.info().and_then(|i| i.session_id.as_ref()).is_none();
        if nothing_to_close {
            session.reset();
        }
        // Server-initiated requests come while a tool runs: only a call opens the stream, so a
        // listing before it does not leave a dropped stream the server still counts as open.
        let listen = if session.config().wants_listen() && matches!(action, Action::CallTool { .. })
        {
            Listen::Due
        } else {
            Listen::Off
        };
        Self {
            session,
            action,
            deadline,
            next,
            legs_sent: 0,
            legs: Vec::new(),
            pending: None,
            reinitialized: false,
            events: VecDeque::new(),
            replies: VecDeque::new(),
            resume: None,
            resumptions: 0,
            listen,
            last_event_id: None,
            cancelled_call: None,
            finished: nothing_to_close.then_some(Ok(Outcome::Closed)),
            returned: false,
            tools: Vec::new(),
            cursor: None,
            cursors_seen: HashSet::new(),
            pages: 0,
            scratch: Vec::new(),
        }
    }

    /// The operation's deadline.
    pub fn deadline(&self) -> &OperationDeadline {
        &self.deadline
    }

    /// What the operation is for.
    pub fn action(&self) -> &Action {
        &self.action
    }

    /// How many legs have been handed to the driver so far.
    pub fn legs_sent(&self) -> u32 {
        self.legs_sent
    }

    /// True once the result is ready (it may not have been polled yet).
    pub fn is_finished(&self) -> bool {
        self.finished.is_some() || self.returned
    }

    /// The next thing the driver must do. See the [module docs](self).
    pub fn poll_output(&mut self, now: Instant) -> Output {
        if let Some(event) = self.events.pop_front() {
            return Output::Event(event);
        }
        if let Some(result) = self.finished.take() {
            self.returned = true;
            return Output::Done(result);
        }
        if self.returned {
            return Output::Done(Err(Error::AlreadyFinished));
        }
        if !self.replies.is_empty() && self.legs.len() <= 1 {
            // An answer to a server request goes out at once: nested inside the leg in flight
            // (the driver runs it to its end, then returns to that leg) or on its own.
            return self.transmit(LegKind::Respond, now);
        }
        if let Some(top) = self.legs.last() {
            return Output::Wait(top.ends_at);
        }
        let live =
            self.next == Step::Work && self.pending.is_none() && self.session.info().is_some();
        if live && matches!(self.listen, Listen::Due) {
            if let Some(leg) = self.transmit_listen(now) {
                return Output::Transmit(leg);
            }
        }
        if let Listen::Opening { proceed_at } = self.listen {
            if now < proceed_at {
                return Output::Wait(proceed_at);
            }
        }
        if let Some(resume) = &self.resume {
            if !resume.ready {
                return Output::Wait(resume.at);
            }
            return self.transmit(LegKind::Resume, now);
        }
        let kind = self.next_leg_kind();
        self.transmit(kind, now)
    }

    /// The next queued event, for a driver that only wants events (a nested answer leg is
    /// only handed out by [`poll_output`](Self::poll_output)).
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Feeds the response head of the innermost leg in flight.
    pub fn handle_response(
        &mut self,
        status: StatusCode,
        headers: &HeaderMap,
        _now: Instant,
    ) -> LegStatus {
        let cap = self.session.config().answer_cap();
        let depth = self.legs.len();
        let Some(leg) = self.legs.last_mut() else {
            return LegStatus::Complete;
        };
        if !matches!(leg.reading, Reading::Head) {
            return LegStatus::Complete;
        }
        leg.status = status.as_u16();
        let (kind, carried_session) = (leg.kind, leg.carried_session);
        if kind == LegKind::Close {
            // 404: already gone; 405: the server does not end sessions on request.
            self.legs.pop();
            self.session.reset();
            if status.is_success()
                || status == StatusCode::NOT_FOUND
                || status == StatusCode::METHOD_NOT_ALLOWED
            {
                self.finish(Ok(Outcome::Closed));
            } else {
                self.fail(|server| Error::HttpStatus {
                    server,
                    method: kind.method(),
                    status: status.as_u16(),
                });
            }
            return LegStatus::Complete;
        }
        if status == StatusCode::NOT_FOUND && carried_session && depth == 1 {
            self.session_lost(kind);
            return LegStatus::Complete;
        }
        if !status.is_success() {
            self.fail(|server| Error::HttpStatus {
                server,
                method: kind.method(),
                status: status.as_u16(),
            });
            return LegStatus::Complete;
        }
        if matches!(kind, LegKind::Initialized | LegKind::Respond) {
            // A notification's or a response's answer is not read: 202 without a body is the
            // norm, and any 2xx, with or without a body, is accepted.
            self.legs.pop();
            if kind == LegKind::Initialized {
                self.handshake_confirmed();
            }
            return LegStatus::Complete;
        }
        if kind == LegKind::Initialize {
            if let Some(raw) = headers.get(SESSION_HEADER) {
                if !valid_session_id(raw.as_bytes()) {
                    let shown = clip(&String::from_utf8_lossy(raw.as_bytes()), QUOTE_LIMIT);
                    self.fail(|server| Error::Malformed {
                        server,
                        method: kind.method(),
                        detail: format!(
                            "the session id \"{shown}\" is not 1 to 256 visible ASCII characters, so it is not echoed"
                        ),
                    });
                    return LegStatus::Complete;
                }
                leg.session_id = Some(String::from_utf8_lossy(raw.as_bytes()).into_owned());
            }
        }
        let declared_length = headers
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        let media_type = headers
            .get(CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .map(|v| {
                v.split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase()
            })
            .unwrap_or_default();
        let method = leg.answers.method();
        match media_type.as_str() {
            "" | "application/json" => {
                if declared_length.is_some_and(|n| n > cap as u64) {
                    self.fail(|server| Error::AnswerTooLarge {
                        server,
                        method,
                        limit: cap,
                    });
                    return LegStatus::Complete;
                }
                // Reserve what the server announced (never past the cap): no regrowth.
                let reserve = declared_length.map_or(0, |n| n.min(cap as u64) as usize);
                leg.reading = Reading::Json(Vec::with_capacity(reserve));
            }
            "text/event-stream" => {
                leg.reading = Reading::Sse {
                    parser: SseParser::new(cap),
                    saw_message: false,
                };
            }
            other => {
                let content_type = clip(other, QUOTE_LIMIT);
                self.fail(|server| Error::UnsupportedContentType {
                    server,
                    method,
                    content_type,
                });
                return LegStatus::Complete;
            }
        }
        LegStatus::ReadMore
    }

    /// Feeds the next chunk of the body of the innermost leg in flight.
    pub fn handle_body_chunk(&mut self, chunk: &[u8], _now: Instant) -> LegStatus {
        let cap = self.session.config().answer_cap();
        let Some(leg) = self.legs.last_mut() else {
            return LegStatus::Complete;
        };
        let method = leg.answers.method();
        let mut events = std::mem::take(&mut self.scratch);
        let fed = match &mut leg.reading {
            Reading::Head => return LegStatus::Complete,
            Reading::Json(buffer) => {
                if buffer.len().saturating_add(chunk.len()) > cap {
                    self.fail(|server| Error::AnswerTooLarge {
                        server,
                        method,
                        limit: cap,
                    });
                    return LegStatus::Complete;
                }
                buffer.extend_from_slice(chunk);
                return LegStatus::ReadMore;
            }
            Reading::Sse { parser, .. } => {
                let fed = parser.feed(chunk, &mut events);
                if let Some(id) = parser.last_event_id() {
                    if self.last_event_id.as_deref() != Some(id) {
                        self.last_event_id = Some(id.to_owned());
                    }
                }
                fed
            }
        };
        let status = self.take_stream_events(&mut events, fed, cap);
        self.scratch = events;
        status
    }

    /// Tells the operation the body of the innermost leg in flight ended.
    pub fn handle_body_end(&mut self, now: Instant) {
        let cap = self.session.config().answer_cap();
        let Some(leg) = self.legs.last_mut() else {
            return;
        };
        let method = leg.answers.method();
        match &mut leg.reading {
            Reading::Head => {}
            Reading::Json(buffer) => {
                let buffer = std::mem::take(buffer);
                let status = leg.status;
                self.read_json_answer(&buffer, status);
            }
            Reading::Sse { parser, .. } => {
                let mut events = std::mem::take(&mut self.scratch);
                let fed = parser.finish(&mut events);
                if let Some(id) = parser.last_event_id() {
                    self.last_event_id = Some(id.to_owned());
                }
                let status = self.take_stream_events(&mut events, fed, cap);
                self.scratch = events;
                if status == LegStatus::Complete {
                    return;
                }
                if self.schedule_resumption(now) {
                    return;
                }
                let saw_message = matches!(
                    self.legs.last().map(|l| &l.reading),
                    Some(Reading::Sse {
                        saw_message: true,
                        ..
                    })
                );
                let detail = if saw_message {
                    "the event stream carried no response to the request"
                } else {
                    "the event stream carried no message"
                };
                self.fail(|server| Error::Malformed {
                    server,
                    method,
                    detail: detail.to_owned(),
                });
            }
        }
    }

    /// Feeds the response head of the standalone stream ([`LegKind::Listen`]). Anything but a
    /// 2xx event stream means the server does not offer one: the operation goes on without it.
    pub fn handle_listen_response(
        &mut self,
        status: StatusCode,
        headers: &HeaderMap,
        _now: Instant,
    ) -> LegStatus {
        if self.is_finished() || !matches!(self.listen, Listen::Opening { .. }) {
            return LegStatus::Complete;
        }
        let is_stream = headers
            .get(CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).to_ascii_lowercase())
            .is_some_and(|v| v.split(';').next().unwrap_or("").trim() == "text/event-stream");
        if !status.is_success() || !is_stream {
            self.listen = Listen::Off;
            return LegStatus::Complete;
        }
        self.listen = Listen::Open(SseParser::new(self.session.config().answer_cap()));
        LegStatus::ReadMore
    }

    /// Feeds the next chunk of the standalone stream. Requests in it are answered (drain
    /// `poll_output` afterwards), notifications become events; a stream that breaks the
    /// rules is dropped without ending the operation.
    pub fn handle_listen_chunk(&mut self, chunk: &[u8], _now: Instant) -> LegStatus {
        if self.is_finished() {
            return LegStatus::Complete;
        }
        let Listen::Open(parser) = &mut self.listen else {
            return LegStatus::Complete;
        };
        let mut events = std::mem::take(&mut self.scratch);
        if parser.feed(chunk, &mut events).is_err() {
            self.listen = Listen::Off;
        }
        for event in events.drain(..) {
            if event.data.trim().is_empty() {
                continue;
            }
            let Ok(Value::Object(message)) = serde_json::from_str::<Value>(&event.data) else {
                self.listen = Listen::Off;
                break;
            };
            match jsonrpc::classify(message) {
                Incoming::Request { id, method, params } => self.server_request(id, method, params),
                Incoming::Notification { method, params } => {
                    self.events
                        .push_back(Event::Notification(Notification { method, params }));
                }
                // Responses belong on the stream of their request; nothing to do here.
                _ => {}
            }
        }
        events.clear();
        self.scratch = events;
        if matches!(self.listen, Listen::Open(_)) {
            LegStatus::ReadMore
        } else {
            LegStatus::Complete
        }
    }

    /// Tells the operation the standalone stream ended or failed; the operation goes on.
    pub fn handle_listen_end(&mut self, _now: Instant) {
        self.listen = Listen::Off;
    }

    /// Tells the operation the innermost leg in flight failed in the transport.
    pub fn handle_transport_error(&mut self, error: TransportError, _now: Instant) {
        let Some(leg) = self.legs.last() else {
            return;
        };
        let (method, grant) = (leg.answers.method(), leg.grant);
        match error.kind {
            TransportErrorKind::TimedOut => self.fail(|server| Error::LegTimedOut {
                server,
                method,
                grant,
            }),
            TransportErrorKind::Protocol => {
                let detail = format!(
                    "the HTTP answer could not be parsed: {}",
                    clip(&error.detail, QUOTE_LIMIT)
                );
                self.fail(|server| Error::Malformed {
                    server,
                    method,
                    detail,
                });
            }
            TransportErrorKind::Connect | TransportErrorKind::Io => {
                let reason = clip(&error.detail, QUOTE_LIMIT);
                self.fail(|server| Error::Unreachable {
                    server,
                    method,
                    reason,
                });
            }
        }
    }

    /// Tells the operation a timer fired: a leg whose grant ended by `now` has timed out, and
    /// a stream due to be resumed by `now` may be resumed.
    pub fn handle_timeout(&mut self, now: Instant) {
        if let Some(leg) = self.legs.iter().find(|leg| now >= leg.ends_at) {
            let (method, grant) = (leg.answers.method(), leg.grant);
            self.fail(|server| Error::LegTimedOut {
                server,
                method,
                grant,
            });
            return;
        }
        if let Some(resume) = &mut self.resume {
            if self.legs.is_empty() && now >= resume.at {
                resume.ready = true;
            }
        }
    }

    /// Cancels the operation: the next poll returns [`Error::Cancelled`]. The driver must drop
    /// any request in flight. Does nothing once the operation has finished.
    pub fn cancel(&mut self) {
        if self.is_finished() {
            return;
        }
        let outer = self.legs.first();
        let method = match (outer, &self.resume) {
            (Some(leg), _) => leg.answers.method(),
            (None, Some(resume)) => resume.answers.method(),
            (None, None) => self.next_leg_kind().method(),
        };
        self.cancelled_call = match (outer, &self.resume) {
            (Some(leg), _) if leg.answers == LegKind::CallTool => leg.request_id,
            (None, Some(resume)) if resume.answers == LegKind::CallTool => resume.request_id,
            _ => None,
        };
        self.events.clear();
        self.finish(Err(Error::Cancelled {
            server: self.label(),
            method,
        }));
    }

    /// After [`cancel`](Self::cancel) interrupted a `tools/call`, the `notifications/cancelled`
    /// that tells the server to stop working on it, under a grant of its own of
    /// [`CANCEL_NOTICE_GRANT`] (the operation's budget is over). Sending it is optional and
    /// best-effort: the operation does not read its answer. `None` when no call was interrupted.
    pub fn cancel_notice(&self, now: Instant) -> Option<Leg> {
        let id = self.cancelled_call?;
        let mut params = Map::new();
        params.insert("requestId".to_owned(), Value::from(id));
        params.insert("reason".to_owned(), Value::from("cancelled by the caller"));
        let body = jsonrpc::notification(LegKind::CancelNotice.method(), params);
        let request = self.session.post(body, self.session.info());
        Some(Leg {
            number: self.legs_sent + 1,
            kind: LegKind::CancelNotice,
            request,
            timeout: CANCEL_NOTICE_GRANT,
            ends_at: now.checked_add(CANCEL_NOTICE_GRANT).unwrap_or(now),
        })
    }

    fn label(&self) -> String {
        self.session.config().label().to_owned()
    }

    fn next_leg_kind(&self) -> LegKind {
        match self.next {
            Step::Initialize => LegKind::Initialize,
            Step::Initialized => LegKind::Initialized,
            Step::Work => match self.action {
                Action::Probe => LegKind::Ping,
                Action::ListTools => LegKind::ListTools {
                    page: self.pages + 1,
                },
                Action::CallTool { .. } => LegKind::CallTool,
                Action::Close => LegKind::Close,
            },
        }
    }

    /// Grants the next leg what is left of the budget and hands it out, or refuses it.
    fn transmit(&mut self, kind: LegKind, now: Instant) -> Output {
        let timeout = match self.deadline.grant(now) {
            Ok(grant) => grant,
            Err(_) if matches!(kind, LegKind::Respond | LegKind::Resume) => {
                // The request these legs serve was sent and its answer did not come within the
                // budget: that is the request timing out, not a request the server never saw.
                let (method, grant) = self.request_being_answered();
                self.fail(|server| Error::LegTimedOut {
                    server,
                    method,
                    grant,
                });
                return self.poll_output(now);
            }
            Err(exhausted) => {
                // The check sits before the request is built: nothing of this leg exists.
                self.returned = true;
                self.legs.clear();
                return Output::Done(Err(Error::BudgetExhausted {
                    server: self.label(),
                    budget: Budget::from_duration(exhausted.total),
                    method: kind.method(),
                    leg: self.legs_sent + 1,
                }));
            }
        };
        let ends_at = now.checked_add(timeout).unwrap_or(now);
        let (request, request_id, answers) = match kind {
            LegKind::Respond => {
                let Some((id, reply)) = self.replies.pop_front() else {
                    return Output::Wait(ends_at);
                };
                (self.build_reply(&id, reply), None, LegKind::Respond)
            }
            LegKind::Resume => {
                let Some(resume) = self.resume.take() else {
                    return Output::Wait(ends_at);
                };
                self.resumptions += 1;
                (self.build_resume(), resume.request_id, resume.answers)
            }
            _ => {
                // A new request opens a new answer stream: an event id of an earlier stream
                // must never be used to resume this one.
                self.last_event_id = None;
                let (request, id) = self.build_request(kind);
                (request, id, kind)
            }
        };
        let carried_session = request.headers().contains_key(SESSION_HEADER);
        self.legs_sent += 1;
        self.legs.push(InFlight {
            kind,
            answers,
            request_id,
            grant: timeout,
            ends_at,
            carried_session,
            status: 0,
            session_id: None,
            reading: Reading::Head,
        });
        Output::Transmit(Leg {
            number: self.legs_sent,
            kind,
            request,
            timeout,
            ends_at,
        })
    }

    /// The method and grant of the request whose answer is being read or awaited.
    fn request_being_answered(&self) -> (&'static str, Duration) {
        match (self.legs.first(), &self.resume) {
            (Some(leg), _) => (leg.answers.method(), leg.grant),
            (None, Some(resume)) => (resume.answers.method(), resume.grant),
            (None, None) => (self.next_leg_kind().method(), Duration::ZERO),
        }
    }

    fn handshake(&self) -> Option<&SessionInfo> {
        self.pending.as_ref().or_else(|| self.session.info())
    }

    fn build_request(&mut self, kind: LegKind) -> (http::Request<Vec<u8>>, Option<i64>) {
        match kind {
            LegKind::Initialized => {
                let body = jsonrpc::notification(kind.method(), Map::new());
                return (self.session.post(body, self.handshake()), None);
            }
            LegKind::Close => {
                let request = self
                    .session
                    .request(Method::DELETE, Vec::new(), self.handshake());
                return (request, None);
            }
            _ => {}
        }
        let id = self.session.take_request_id();
        let handshake = self.handshake();
        let config = self.session.config();
        let params = match (kind, &self.action) {
            (LegKind::Initialize, _) => {
                let client = config.client();
                object(json!({
                    "protocolVersion": self.session.offered_version().as_str(),
                    "capabilities": config.capabilities(),
                    "clientInfo": {"name": client.name, "version": client.version},
                }))
            }
            (LegKind::ListTools { .. }, _) => match &self.cursor {
                Some(cursor) => object(json!({ "cursor": cursor })),
                None => Map::new(),
            },
            (LegKind::CallTool, Action::CallTool { name, arguments }) => {
                // Serialised from borrowed fields: no copy of the arguments, no `Value` tree.
                #[derive(serde::Serialize)]
                struct Meta {
                    #[serde(rename = "progressToken")]
                    progress_token: i64,
                }
                #[derive(serde::Serialize)]
                struct CallParams<'a> {
                    name: &'a str,
                    arguments: &'a Map<String, Value>,
                    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
                    meta: Option<Meta>,
                }
                let params = CallParams {
                    name,
                    arguments,
                    meta: config
                        .wants_progress()
                        .then_some(Meta { progress_token: id }),
                };
                let body = jsonrpc::request_with(id, kind.method(), &params);
                return (self.session.post(body, handshake), Some(id));
            }
            _ => Map::new(),
        };
        let body = jsonrpc::request_with(id, kind.method(), &params);
        let info = if kind == LegKind::Initialize {
            None
        } else {
            handshake
        };
        (self.session.post(body, info), Some(id))
    }

    fn build_reply(
        &self,
        id: &RequestId,
        reply: Result<Value, RpcError>,
    ) -> http::Request<Vec<u8>> {
        let message = match reply {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id.to_value(), "result": result}),
            Err(error) => {
                let mut object = json!({"code": error.code, "message": error.message});
                if let Some(data) = error.data {
                    object["data"] = data;
                }
                json!({"jsonrpc": "2.0", "id": id.to_value(), "error": object})
            }
        };
        let body = serde_json::to_vec(&message).unwrap_or_default();
        self.session.post(body, self.handshake())
    }

    fn build_resume(&self) -> http::Request<Vec<u8>> {
        let mut request = self
            .session
            .request(Method::GET, Vec::new(), self.handshake());
        if let Some(id) = &self.last_event_id {
            if let Ok(value) = HeaderValue::from_str(id) {
                request.headers_mut().insert("last-event-id", value);
            }
        }
        request
    }

    fn finish(&mut self, result: Result<Outcome, Error>) {
        self.legs.clear();
        self.resume = None;
        self.listen = Listen::Off;
        if self.finished.is_none() && !self.returned {
            self.finished = Some(result);
        }
    }

    fn fail(&mut self, error: impl FnOnce(String) -> Error) {
        let error = error(self.label());
        self.finish(Err(error));
    }

    /// A stream that ended without the answer after an event with an id: the server may have
    /// closed it on purpose (protocol 2025-11-25) and will answer on a resumed stream. Waits
    /// the server's `retry` (never past the deadline), then resumes with a GET.
    fn schedule_resumption(&mut self, now: Instant) -> bool {
        let Some(leg) = self.legs.last() else {
            return false;
        };
        let resumable = self.legs.len() == 1
            && leg.request_id.is_some()
            && self.last_event_id.is_some()
            && self.resumptions < MAX_RESUMPTIONS;
        if !resumable {
            return false;
        }
        let retry = match &leg.reading {
            Reading::Sse { parser, .. } => parser.retry().unwrap_or(DEFAULT_RETRY),
            _ => DEFAULT_RETRY,
        };
        let at = now.checked_add(retry).unwrap_or(now);
        let (answers, grant) = (leg.answers, leg.grant);
        if self.deadline.end().is_some_and(|end| at >= end) {
            // Waiting would spend the rest of the budget and leave nothing for the GET: the
            // answer cannot arrive in time, so say so now rather than idle until the deadline.
            self.fail(|server| Error::LegTimedOut {
                server,
                method: answers.method(),
                grant,
            });
            return true;
        }
        self.resume = Some(Resumption {
            at,
            ready: false,
            answers,
            request_id: leg.request_id,
            grant,
        });
        self.legs.pop();
        true
    }

    /// A 404 to a request that carried a session id: the session is gone. Start a new one and
    /// resend, inside the same deadline, once; a second loss ends the operation.
    fn session_lost(&mut self, kind: LegKind) {
        if self.reinitialized {
            self.fail(|server| Error::SessionExpired {
                server,
                method: kind.method(),
            });
            return;
        }
        self.reinitialized = true;
        self.legs.clear();
        self.resume = None;
        self.replies.clear();
        self.session.reset();
        self.pending = None;
        self.next = Step::Initialize;
        // Cursors may belong to the lost session: walk the listing again from the start.
        self.tools.clear();
        self.cursor = None;
        self.cursors_seen.clear();
        self.pages = 0;
    }

    fn handshake_confirmed(&mut self) {
        let Some(info) = self.pending.take() else {
            return;
        };
        self.session.establish(info.clone());
        if self.action == Action::Probe {
            self.finish(Ok(Outcome::Probe(info)));
        } else {
            self.next = Step::Work;
        }
    }

    fn take_stream_events(
        &mut self,
        events: &mut Vec<SseEvent>,
        fed: Result<(), SseError>,
        cap: usize,
    ) -> LegStatus {
        let Some(method) = self.legs.last().map(|l| l.answers.method()) else {
            return LegStatus::Complete;
        };
        // Events completed before a parse error are still handled: an answer that arrived
        // before the stream went bad is a good answer.
        let mut complete = false;
        for event in events.drain(..) {
            if complete || self.legs.is_empty() {
                continue;
            }
            complete = self.read_stream_event(&event) == LegStatus::Complete;
        }
        if complete || self.legs.is_empty() {
            return LegStatus::Complete;
        }
        match fed {
            Ok(()) => LegStatus::ReadMore,
            Err(SseError::EventTooLarge { .. }) => {
                self.fail(|server| Error::AnswerTooLarge {
                    server,
                    method,
                    limit: cap,
                });
                LegStatus::Complete
            }
            Err(err) => {
                let detail = err.to_string();
                self.fail(|server| Error::Malformed {
                    server,
                    method,
                    detail,
                });
                LegStatus::Complete
            }
        }
    }

    fn read_stream_event(&mut self, event: &SseEvent) -> LegStatus {
        let Some(method) = self.legs.last().map(|l| l.answers.method()) else {
            return LegStatus::Complete;
        };
        if event.data.trim().is_empty() {
            // A priming event (an id and empty data) or a keep-alive.
            return LegStatus::ReadMore;
        }
        let message = match serde_json::from_str::<Value>(&event.data) {
            Ok(Value::Object(message)) => message,
            Ok(_) => {
                self.fail(|server| Error::Malformed {
                    server,
                    method,
                    detail: "an event's data is not a JSON object".to_owned(),
                });
                return LegStatus::Complete;
            }
            Err(err) => {
                let detail = format!(
                    "an event's data is not JSON: {}",
                    clip(&err.to_string(), QUOTE_LIMIT)
                );
                self.fail(|server| Error::Malformed {
                    server,
                    method,
                    detail,
                });
                return LegStatus::Complete;
            }
        };
        if let Some(Reading::Sse { saw_message, .. }) = self.legs.last_mut().map(|l| &mut l.reading)
        {
            *saw_message = true;
        }
        match jsonrpc::classify(message) {
            Incoming::Notification { method, params } => {
                self.events
                    .push_back(Event::Notification(Notification { method, params }));
                LegStatus::ReadMore
            }
            Incoming::Request { id, method, params } => {
                self.server_request(id, method, params);
                LegStatus::ReadMore
            }
            Incoming::Neither => LegStatus::ReadMore,
            answer @ (Incoming::Result { .. } | Incoming::Error { .. }) => {
                self.read_answer(answer);
                LegStatus::Complete
            }
        }
    }

    /// Queues the answer to a request the server sent, and reports the request.
    fn server_request(&mut self, id: RequestId, method: String, params: Value) {
        let reply = self
            .session
            .config()
            .answer_server_request(&method, &params);
        self.replies.push_back((id.clone(), reply));
        self.events
            .push_back(Event::ServerRequest { id, method, params });
    }

    /// Grants and builds the standalone stream's GET; `None` when the budget has nothing left
    /// (the operation's own next leg then reports that).
    fn transmit_listen(&mut self, now: Instant) -> Option<Leg> {
        let Ok(timeout) = self.deadline.grant(now) else {
            self.listen = Listen::Off;
            return None;
        };
        let ends_at = now.checked_add(timeout).unwrap_or(now);
        self.listen = Listen::Opening {
            proceed_at: now
                .checked_add(LISTEN_HEAD_WAIT)
                .unwrap_or(now)
                .min(ends_at),
        };
        self.legs_sent += 1;
        let request = self
            .session
            .request(Method::GET, Vec::new(), self.session.info());
        Some(Leg {
            number: self.legs_sent,
            kind: LegKind::Listen,
            request,
            timeout,
            ends_at,
        })
    }

    fn read_json_answer(&mut self, body: &[u8], status: u16) {
        let Some(method) = self.legs.last().map(|l| l.answers.method()) else {
            return;
        };
        let malformed = |detail: String| {
            move |server| Error::Malformed {
                server,
                method,
                detail,
            }
        };
        if body.iter().all(u8::is_ascii_whitespace) {
            self.fail(malformed(format!("empty body with status {status}")));
            return;
        }
        let message = match serde_json::from_slice::<Value>(body) {
            Ok(Value::Object(message)) => message,
            Ok(_) => {
                self.fail(malformed("the answer is not a JSON object".to_owned()));
                return;
            }
            Err(err) => {
                self.fail(malformed(format!(
                    "the body is not JSON: {}",
                    clip(&err.to_string(), QUOTE_LIMIT)
                )));
                return;
            }
        };
        match jsonrpc::classify(message) {
            answer @ (Incoming::Result { .. } | Incoming::Error { .. }) => self.read_answer(answer),
            Incoming::Request { .. } | Incoming::Notification { .. } | Incoming::Neither => {
                self.fail(malformed("neither a result nor an error".to_owned()));
            }
        }
    }

    /// A response arrived for the leg in flight: check it and move on.
    fn read_answer(&mut self, answer: Incoming) {
        let Some(leg) = self.legs.pop() else {
            return;
        };
        let kind = leg.answers;
        let malformed = |detail: String| {
            move |server| Error::Malformed {
                server,
                method: kind.method(),
                detail,
            }
        };
        let result = match answer {
            // Error envelopes are accepted whatever their id: servers send `null`, none, or
            // a string of their own when they could not read the request at all.
            Incoming::Error { error, .. } => {
                let message = clip(&error.message, QUOTE_LIMIT);
                self.fail(|server| Error::JsonRpc {
                    server,
                    method: kind.method(),
                    code: error.code,
                    message,
                    data: error.data,
                });
                return;
            }
            Incoming::Result { id, result } => {
                let expected = leg.request_id.map(RequestId::Number);
                if id != expected {
                    let got = id.map_or_else(|| "none".to_owned(), |id| id.to_string());
                    let want = expected.map_or_else(|| "none".to_owned(), |id| id.to_string());
                    self.fail(malformed(format!(
                        "the answer's id {got} does not match the request's id {want}"
                    )));
                    return;
                }
                match result {
                    Value::Object(result) => result,
                    _ => {
                        self.fail(malformed("neither a result nor an error".to_owned()));
                        return;
                    }
                }
            }
            _ => return,
        };
        match kind {
            LegKind::Initialize => self.read_initialize(&result, leg.session_id),
            LegKind::Ping => match self.session.info().cloned() {
                Some(info) => self.finish(Ok(Outcome::Probe(info))),
                None => self.fail(malformed(
                    "ping answered on a session that is not live".to_owned(),
                )),
            },
            LegKind::ListTools { .. } => self.read_tools_page(result),
            LegKind::CallTool => match CallToolResult::from_result(&result) {
                Ok(call) => self.finish(Ok(Outcome::Call(call))),
                Err(detail) => self.fail(malformed(detail)),
            },
            _ => {}
        }
    }

    fn read_initialize(&mut self, result: &Map<String, Value>, session_id: Option<String>) {
        let Some(version) = result.get("protocolVersion").and_then(Value::as_str) else {
            self.fail(|server| Error::Malformed {
                server,
                method: LegKind::Initialize.method(),
                detail: "the initialize result has no protocolVersion".to_owned(),
            });
            return;
        };
        let Some(protocol_version) = ProtocolVersion::parse(version) else {
            let version = clip(version, model::LABEL_LIMIT);
            self.fail(|server| Error::UnsupportedProtocolVersion { server, version });
            return;
        };
        self.pending = Some(SessionInfo {
            protocol_version,
            server: model::server_info(result.get("serverInfo")),
            capabilities: result
                .get("capabilities")
                .cloned()
                .unwrap_or_else(|| Value::Object(Map::new())),
            instructions: result
                .get("instructions")
                .and_then(Value::as_str)
                .map(str::to_owned),
            session_id,
        });
        self.next = Step::Initialized;
    }

    fn read_tools_page(&mut self, mut result: Map<String, Value>) {
        let method = LegKind::ListTools { page: 0 }.method();
        let Some(Value::Array(entries)) = result.remove("tools") else {
            self.fail(|server| Error::Malformed {
                server,
                method,
                detail: "the result has no \"tools\" array".to_owned(),
            });
            return;
        };
        self.tools
            .extend(entries.into_iter().filter_map(Tool::from_entry));
        self.pages += 1;
        let next_cursor = result
            .get("nextCursor")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty());
        let Some(cursor) = next_cursor else {
            let tools = std::mem::take(&mut self.tools);
            self.finish(Ok(Outcome::Tools(tools)));
            return;
        };
        if !self.cursors_seen.insert(cursor.to_owned()) {
            let cursor = clip(cursor, QUOTE_LIMIT);
            self.fail(|server| Error::RepeatedCursor { server, cursor });
            return;
        }
        let ceiling = self.session.config().page_ceiling();
        if self.pages >= ceiling {
            self.fail(|server| Error::TooManyPages {
                server,
                pages: ceiling,
            });
            return;
        }
        self.cursor = Some(cursor.to_owned());
    }
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}
