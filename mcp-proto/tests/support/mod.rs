//! A driver stand-in: it plays the server with canned answers and moves a `ManualClock` by
//! each leg's scripted duration, so scenarios run exactly and without sleeping.
#![allow(dead_code, unreachable_pub)]

use std::collections::VecDeque;
use std::time::Duration;

use http::{HeaderMap, HeaderValue, StatusCode};
use mcp_proto::driver::LegKind;
use mcp_proto::driver::{Input, LegId, LegStatus, Operation, Output, TransportError};
use mcp_proto::{Clock, Event, LegReport, ManualClock, Outcome, Session};
use serde_json::{Value, json};

/// Polls past the legs' reports (tests that step an operation by hand and look at what it hands
/// out next, not at its account of the legs), answering the server's requests with the
/// caller's responders as a driver does.
pub trait PollPastReports {
    fn poll_past_reports(&mut self, now: std::time::Instant) -> Output;
}

impl PollPastReports for Operation {
    fn poll_past_reports(&mut self, now: std::time::Instant) -> Output {
        loop {
            match self.poll_output(now) {
                Output::LegEnded(_) => {}
                Output::Request(request) => {
                    self.handle_input(request.reply_from(self.session_config()), now);
                }
                output => return output,
            }
        }
    }
}

/// Feeds a whole answer to a leg the way a driver does: the head, then the body while the
/// operation reads on, then its end.
pub trait FeedAnswer {
    fn feed_answer(
        &mut self,
        leg: LegId,
        status: StatusCode,
        headers: &HeaderMap,
        body: &[u8],
        now: std::time::Instant,
    );
}

impl FeedAnswer for Operation {
    fn feed_answer(
        &mut self,
        leg: LegId,
        status: StatusCode,
        headers: &HeaderMap,
        body: &[u8],
        now: std::time::Instant,
    ) {
        let head = Input::Head {
            leg,
            status,
            headers,
        };
        if self.handle_input(head, now) == LegStatus::ReadMore
            && self.handle_input(Input::Chunk { leg, bytes: body }, now) == LegStatus::ReadMore
        {
            self.handle_input(Input::End { leg }, now);
        }
    }
}

pub fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

/// What the stand-in server does with one leg.
#[derive(Debug, Clone)]
pub enum Answer {
    /// A JSON-RPC result for the request's own id, as `application/json`.
    Result(Value),
    /// A whole JSON body (verbatim) with status 200.
    Json(Value),
    /// 202 without a body.
    Accepted,
    /// Status, content type and raw body bytes.
    Raw(u16, Option<&'static str>, Vec<u8>),
    /// An SSE body (verbatim text), status 200.
    Sse(String),
    /// The transport fails.
    Transport(TransportError),
    /// The leg's grant runs out (the stand-in's timer fires at the leg's end).
    Stall,
}

/// The answer a healthy server gives to `kind`, for request id `id`.
pub fn healthy(kind: LegKind) -> Answer {
    match kind {
        LegKind::Initialize => Answer::Result(json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "canned", "version": "1.0"}
        })),
        LegKind::Initialized => Answer::Accepted,
        LegKind::Ping => Answer::Result(json!({})),
        LegKind::List { .. } => {
            Answer::Result(json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}))
        }
        LegKind::CallTool => Answer::Result(json!({"content": [{"type": "text", "text": "hi"}]})),
        _ => Answer::Accepted,
    }
}

/// A refusal a modern (or any) server explains: `400` with a JSON-RPC error envelope whose id
/// is `null`, as servers send when they could not read the request.
pub fn refused(code: i64, message: &str, data: Option<Value>) -> Answer {
    let mut error = json!({"code": code, "message": message});
    if let Some(data) = data {
        error["data"] = data;
    }
    let body = json!({"jsonrpc": "2.0", "id": null, "error": error});
    Answer::Raw(400, Some("application/json"), body.to_string().into_bytes())
}

/// Answers the first leg with `first` and every later one as a healthy server would.
pub fn first_then_healthy(first: Answer) -> impl FnMut(LegKind, u32) -> Answer {
    move |kind, n| if n == 1 { first.clone() } else { healthy(kind) }
}

/// One leg as the stand-in saw it.
#[derive(Debug, Clone)]
pub struct SeenLeg {
    pub number: u32,
    pub kind: LegKind,
    pub grant: Duration,
    pub request: http::Request<Vec<u8>>,
    pub body: Value,
    /// When it was handed out.
    pub sent_at: std::time::Instant,
}

#[derive(Debug)]
pub struct Run {
    pub legs: Vec<SeenLeg>,
    /// The operation's report of each leg, in the order they ended.
    pub reports: Vec<LegReport>,
    pub events: Vec<Event>,
    /// The methods of the server's requests the caller was asked, in order.
    pub requests: Vec<String>,
    pub result: Result<Outcome, mcp_proto::Error>,
    pub elapsed: Duration,
}

impl Run {
    pub fn grants(&self) -> Vec<Duration> {
        self.legs.iter().map(|l| l.grant).collect()
    }
    pub fn grant_secs(&self) -> Vec<u64> {
        self.legs.iter().map(|l| l.grant.as_secs()).collect()
    }
    pub fn methods(&self) -> Vec<&'static str> {
        self.legs.iter().map(|l| l.kind.label()).collect()
    }
}

/// Drives `op` to the end. Each leg takes the next of `durations` (zero once they run out)
/// and is answered by `answer(kind, leg number)`. A duration at or past the leg's grant is
/// spent as the acceptance table counts it: the answer arrives just inside the grant and the
/// rest passes before the next poll (the table is about what the budget grants, not about
/// late answers, which `Answer::Stall` and the lateness tests cover); a session id header `session-1` comes with
/// every initialize answer. Between body chunks the stand-in drains `poll_output` as a driver
/// must, running nested legs (answers to server requests) to completion.
pub fn drive(
    session: &mut Session,
    op: Operation,
    clock: &ManualClock,
    durations: &[f64],
    answer: impl FnMut(LegKind, u32) -> Answer,
) -> Run {
    let mut stand_in = StandIn {
        session,
        clock,
        durations: durations.iter().map(|&s| secs(s)).collect(),
        answer: Box::new(answer),
        legs: Vec::new(),
        reports: Vec::new(),
        events: Vec::new(),
        requests: Vec::new(),
    };
    let started = clock.now();
    let mut op = op;
    let mut steps = 0;
    let result = loop {
        steps += 1;
        assert!(steps < 10_000, "the operation did not end");
        // Alone on its session: what the operation learns goes to the session as it comes.
        match op.poll_on(stand_in.session, clock.now()) {
            Output::Event(event) => stand_in.events.push(event),
            Output::Request(request) => {
                stand_in.requests.push(request.method.clone());
                op.handle_input(request.reply_from(op.session_config()), clock.now());
            }
            Output::LegEnded(report) => stand_in.reports.push(report),
            Output::Update(_) => unreachable!("poll_on applies the updates"),
            Output::AwaitSession(_) => panic!("a lone operation waits for its session"),
            Output::Wait(until) => {
                clock.set(until.max(clock.now()));
                op.handle_input(Input::Timeout, clock.now());
            }
            Output::Done(result) => break result,
            // No one to authorize here.
            Output::Authorize(_) => {
                op.handle_input(Input::NoAuthorizer, clock.now());
            }
            Output::Transmit(leg) => {
                if let Some(result) = stand_in.run_leg(&mut op, leg) {
                    break result;
                }
            }
        }
    };
    // Every leg handed out ends in exactly one report, before the result (an operation driven
    // from the middle also reports the legs handed out before).
    let mut reported: Vec<u32> = stand_in.reports.iter().map(|r| r.number).collect();
    reported.sort_unstable();
    let before = reported.len();
    reported.dedup();
    assert_eq!(reported.len(), before, "a leg was reported twice");
    for leg in &stand_in.legs {
        assert!(
            reported.contains(&leg.number),
            "leg {} was not reported",
            leg.number
        );
    }
    Run {
        legs: stand_in.legs,
        reports: stand_in.reports,
        events: stand_in.events,
        requests: stand_in.requests,
        result,
        elapsed: clock.now() - started,
    }
}

struct StandIn<'a> {
    session: &'a mut Session,
    clock: &'a ManualClock,
    durations: VecDeque<Duration>,
    answer: Box<dyn FnMut(LegKind, u32) -> Answer + 'a>,
    legs: Vec<SeenLeg>,
    reports: Vec<LegReport>,
    events: Vec<Event>,
    requests: Vec<String>,
}

impl StandIn<'_> {
    /// Runs one leg; `Some(result)` when the operation ended while a nested leg ran.
    fn run_leg(
        &mut self,
        op: &mut Operation,
        leg: mcp_proto::driver::Leg,
    ) -> Option<Result<Outcome, mcp_proto::Error>> {
        assert!(!leg.timeout.is_zero(), "a leg was granted zero");
        let body: Value = serde_json::from_slice(leg.request.body()).unwrap_or(Value::Null);
        let id = body.get("id").cloned();
        self.legs.push(SeenLeg {
            number: leg.id.number(),
            kind: leg.kind,
            grant: leg.timeout,
            request: leg.request,
            body,
            sent_at: self.clock.now(),
        });
        let spent = self.durations.pop_front().unwrap_or_default();
        let reply = (self.answer)(leg.kind, leg.id.number());
        if let Answer::Stall = reply {
            // The leg's grant runs out before anything arrives.
            self.clock.advance(leg.timeout);
            op.handle_input(Input::Timeout, self.clock.now());
            return None;
        }
        let inside = spent.min(leg.timeout.saturating_sub(Duration::from_nanos(1)));
        self.clock.advance(inside);
        let result = self.feed(op, leg.id, leg.kind, id, reply);
        self.clock.advance(spent - inside);
        result
    }

    fn feed(
        &mut self,
        op: &mut Operation,
        leg: LegId,
        kind: LegKind,
        id: Option<Value>,
        reply: Answer,
    ) -> Option<Result<Outcome, mcp_proto::Error>> {
        let now = self.clock.now();
        let mut headers = HeaderMap::new();
        if kind == LegKind::Initialize {
            headers.insert("mcp-session-id", HeaderValue::from_static("session-1"));
        }
        let (status, content_type, body): (u16, Option<&str>, Vec<u8>) = match reply {
            Answer::Result(result) => (
                200,
                Some("application/json"),
                serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "result": result})).unwrap(),
            ),
            Answer::Json(body) => (
                200,
                Some("application/json"),
                serde_json::to_vec(&body).unwrap(),
            ),
            Answer::Accepted => (202, None, Vec::new()),
            Answer::Raw(status, content_type, body) => (status, content_type, body),
            Answer::Sse(text) => (200, Some("text/event-stream"), text.into_bytes()),
            Answer::Transport(err) => {
                op.handle_input(Input::Failed { leg, error: err }, now);
                return None;
            }
            Answer::Stall => unreachable!("handled by the caller"),
        };
        if let Some(content_type) = content_type {
            headers.insert("content-type", HeaderValue::from_str(content_type).unwrap());
        }
        let status = StatusCode::from_u16(status).unwrap();
        if op.handle_input(
            Input::Head {
                leg,
                status,
                headers: &headers,
            },
            now,
        ) == LegStatus::Complete
        {
            return None;
        }
        // Feed the body in small chunks, draining outputs between them as a driver must.
        for chunk in body.chunks(7) {
            let status = op.handle_input(Input::Chunk { leg, bytes: chunk }, self.clock.now());
            if status == LegStatus::Complete {
                return None;
            }
            loop {
                match op.poll_on(self.session, self.clock.now()) {
                    Output::Update(_) => unreachable!("poll_on applies the updates"),
                    Output::Event(event) => self.events.push(event),
                    Output::Request(request) => {
                        self.requests.push(request.method.clone());
                        op.handle_input(request.reply_from(op.session_config()), self.clock.now());
                    }
                    Output::LegEnded(report) => self.reports.push(report),
                    Output::Wait(_) | Output::AwaitSession(_) => break,
                    Output::Authorize(_) => {
                        op.handle_input(Input::NoAuthorizer, self.clock.now());
                    }
                    Output::Done(result) => return Some(result),
                    Output::Transmit(nested) => {
                        if let Some(result) = self.run_leg(op, nested) {
                            return Some(result);
                        }
                    }
                }
            }
        }
        op.handle_input(Input::End { leg }, self.clock.now());
        None
    }
}

/// A configuration for the stand-in server, with the defaults but the legacy era pinned (the
/// stand-in speaks it; `tests/era.rs` covers detection).
pub fn config() -> mcp_proto::SessionConfig {
    mcp_proto::SessionConfig::new("http://mcp.example.test:8080/mcp")
        .unwrap()
        .with_protocol_version(mcp_proto::ProtocolVersion::LATEST)
}

/// A session whose handshake (served by the stand-in) is done.
pub fn live_session(config: mcp_proto::SessionConfig, clock: &ManualClock) -> mcp_proto::Session {
    let mut session = mcp_proto::Session::new(config);
    let op = session.probe(clock.now());
    assert!(
        drive(&mut session, op, clock, &[], |k, _| healthy(k))
            .result
            .is_ok()
    );
    session
}

/// A response head with `content-type: application/json`.
pub fn json_head() -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    headers
}

/// A response head with `content-type: text/event-stream`.
pub fn sse_head() -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        "content-type",
        HeaderValue::from_static("text/event-stream"),
    );
    headers
}
