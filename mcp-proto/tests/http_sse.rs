//! The HTTP+SSE transport of 2024-11-05: the operation's event stream (a GET read beside the
//! other legs) names the endpoint, every message is POSTed there, and every answer comes on
//! the stream, matched by id; found by the spec's fallback from a refused `initialize` POST, or
//! configured; ended typed inside the budget when the stream misbehaves.

mod support;

use std::time::Duration;

use http::{HeaderMap, StatusCode};
use mcp_proto::driver::{Input, LegId, LegKind, LegStatus, Output};
use mcp_proto::{
    Budget, Clock, Error, HttpTransport, ManualClock, Outcome, Resolution, Session, SessionConfig,
};
use serde_json::{Map, Value, json};
use support::{json_head, sse_head};

const URL: &str = "http://127.0.0.1:8000/sse";

/// What the stand-in server does.
#[derive(Clone)]
struct Server {
    /// The `endpoint` event's data (`None`: the stream never names one).
    endpoint: Option<&'static str>,
    /// Whether a POST to the URL itself (Streamable HTTP) is refused with this status.
    refuses_post: u16,
    /// Whether the stream ends right after the endpoint.
    closes: bool,
    /// A second `endpoint` event, right after the first.
    second_endpoint: Option<&'static str>,
    /// The server's own request, sent on the stream before the answer to `tools/call`.
    asks: Option<Value>,
    /// How long each leg takes before its answer.
    delay: Duration,
    /// The session's stream ended before the operation (the driver feeds that first).
    ended_before: bool,
    /// The endpoint answers this many POSTs 404 (a server that restarted) before it knows
    /// the session again.
    forgets: std::cell::Cell<u32>,
}

impl Default for Server {
    fn default() -> Self {
        Self {
            endpoint: Some("/messages/?session_id=abc"),
            refuses_post: 405,
            closes: false,
            second_endpoint: None,
            asks: None,
            delay: Duration::from_millis(100),
            ended_before: false,
            forgets: std::cell::Cell::new(0),
        }
    }
}

/// One leg as sent.
#[derive(Debug)]
struct Sent {
    kind: LegKind,
    method: http::Method,
    uri: String,
    grant: Duration,
    body: Value,
}

struct Run {
    result: Result<Outcome, Error>,
    legs: Vec<Sent>,
}

impl Run {
    /// The call's text (the result must be a call's).
    fn text(&self) -> String {
        let result = self.result.as_ref().expect("a result").clone();
        result.into_call().expect("a call's result").text()
    }

    fn labels(&self) -> Vec<&'static str> {
        self.legs.iter().map(|leg| leg.kind.label()).collect()
    }
}

fn head(leg: LegId, status: StatusCode, headers: &HeaderMap) -> Input<'_> {
    Input::Head {
        leg,
        status,
        headers,
    }
}

fn event(kind: &str, data: &str) -> Vec<u8> {
    format!("event: {kind}\ndata: {data}\n\n").into_bytes()
}

/// Drives `op` against `server` by the clock, as a driver does: the session's stream (opened
/// by an `Events` leg, kept between operations) is fed as `Input::Events` beside the POSTs
/// (each answered 202, its answer then sent on the stream).
fn drive(
    session: &mut Session,
    mut op: mcp_proto::driver::Operation,
    clock: &ManualClock,
    server: &Server,
) -> Run {
    let mut legs = Vec::new();
    let mut held: Option<Value> = None;
    let stream = |op: &mut mcp_proto::driver::Operation, bytes: &[u8], now| {
        op.handle_input(Input::Events(bytes), now);
    };
    if server.ended_before {
        op.handle_input(Input::EventsEnded { error: None }, clock.now());
    }
    let mut outputs = 0;
    loop {
        outputs += 1;
        let output = op.poll_on(session, clock.now());
        assert!(outputs < 1000, "the operation did not end: {output:?}");
        match output {
            Output::Transmit(leg) => {
                let body = serde_json::from_slice(leg.request.body()).unwrap_or(Value::Null);
                legs.push(Sent {
                    kind: leg.kind,
                    method: leg.request.method().clone(),
                    uri: leg.request.uri().to_string(),
                    grant: leg.timeout,
                    body: body.clone(),
                });
                clock.advance(server.delay);
                let now = clock.now();
                if leg.kind == LegKind::Events {
                    assert_eq!(leg.request.uri().to_string(), URL);
                    assert_eq!(leg.request.headers()["accept"], "text/event-stream");
                    let status = op.handle_input(head(leg.id, StatusCode::OK, &sse_head()), now);
                    assert_eq!(status, LegStatus::ReadMore);
                    if let Some(endpoint) = server.endpoint {
                        stream(&mut op, &event("endpoint", endpoint), now);
                    }
                    if let Some(endpoint) = server.second_endpoint {
                        stream(&mut op, &event("endpoint", endpoint), now);
                    }
                    if server.closes {
                        op.handle_input(Input::EventsEnded { error: None }, now);
                    }
                    continue;
                }
                if leg.kind == LegKind::Hangup {
                    op.handle_input(Input::EventsEnded { error: None }, now);
                    continue;
                }
                if server.forgets.get() > 0 {
                    server.forgets.set(server.forgets.get() - 1);
                    let none = HeaderMap::new();
                    op.handle_input(head(leg.id, StatusCode::NOT_FOUND, &none), now);
                    continue;
                }
                if *leg.request.uri() == URL {
                    // Streamable HTTP: this server does not take POSTs here.
                    let none = HeaderMap::new();
                    let status = StatusCode::from_u16(server.refuses_post).unwrap();
                    let refusal = head(leg.id, status, &none);
                    if op.handle_input(refusal, now) == LegStatus::ReadMore {
                        op.handle_input(
                            Input::Chunk {
                                leg: leg.id,
                                bytes: b"Method Not Allowed",
                            },
                            now,
                        );
                        op.handle_input(Input::End { leg: leg.id }, now);
                    }
                    continue;
                }
                assert_eq!(
                    op.handle_input(head(leg.id, StatusCode::ACCEPTED, &json_head()), now),
                    LegStatus::Complete,
                    "a POST's body is never read over HTTP+SSE"
                );
                let send = |op: &mut mcp_proto::driver::Operation, message: &Value| {
                    stream(op, &event("message", &message.to_string()), now);
                };
                // The answer to the server's own request: the call it held is answered now.
                if body.get("method").is_none() {
                    if let Some(call) = held.take() {
                        send(&mut op, &call);
                    }
                    continue;
                }
                let Some(id) = body.get("id") else {
                    continue;
                };
                let method = body["method"].as_str().unwrap_or_default();
                let result = match method {
                    "initialize" => {
                        json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                        "serverInfo": {"name": "sse-stand-in", "version": "1"}})
                    }
                    "tools/call" => json!({"content": [{"type": "text", "text": "over sse"}]}),
                    "tools/list" => {
                        json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]})
                    }
                    _ => json!({}),
                };
                let answer = json!({"jsonrpc": "2.0", "id": id, "result": result});
                match (&server.asks, method) {
                    (Some(asks), "tools/call") => {
                        send(&mut op, asks);
                        held = Some(answer);
                    }
                    _ => send(&mut op, &answer),
                }
            }
            Output::Wait(until) => {
                if until > clock.now() {
                    clock.set(until);
                }
                op.handle_input(Input::Timeout, clock.now());
            }
            Output::Request(request) => {
                op.handle_input(request.reply_from(op.session_config()), clock.now());
            }
            Output::Done(result) => return Run { result, legs },
            Output::Event(_) | Output::LegEnded(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
}

fn sse_config() -> SessionConfig {
    SessionConfig::new(URL)
        .unwrap()
        .with_resolution(Resolution::MILLISECOND)
        .with_http_transport(HttpTransport::Sse)
}

fn call(session: &mut Session, clock: &ManualClock) -> mcp_proto::driver::Operation {
    session.call_tool("echo", Map::new(), clock.now())
}

#[test]
fn a_configured_sse_session_opens_its_stream_then_posts_to_the_endpoint() {
    let clock = ManualClock::new();
    let mut session = Session::new(sse_config());
    let op = call(&mut session, &clock);
    let run = drive(&mut session, op, &clock, &Server::default());
    assert_eq!(run.text(), "over sse");
    assert_eq!(
        run.labels(),
        [
            "sse",
            "initialize",
            "notifications/initialized",
            "tools/call"
        ]
    );
    assert_eq!(run.legs[0].method, http::Method::GET);
    for leg in &run.legs[1..] {
        assert_eq!(leg.method, http::Method::POST);
        assert_eq!(leg.uri, "http://127.0.0.1:8000/messages/?session_id=abc");
    }
    // One budget, spent across the legs: each granted what is left (20 s, 100 ms a leg).
    let grants: Vec<u128> = run.legs.iter().map(|l| l.grant.as_millis()).collect();
    assert_eq!(grants, [20_000, 19_900, 19_800, 19_700]);
    // The stream and its session are the session's: the next operation is one POST.
    assert!(session.info().is_some());
    assert!(session.speaks_sse() && session.event_stream_open());
    let op = call(&mut session, &clock);
    let run = drive(&mut session, op, &clock, &Server::default());
    assert_eq!(run.text(), "over sse");
    assert_eq!(run.labels(), ["tools/call"]);
    assert_eq!(
        run.legs[0].uri,
        "http://127.0.0.1:8000/messages/?session_id=abc"
    );
}

#[test]
fn a_stream_that_ended_between_operations_is_reopened_inside_the_next_budget() {
    let clock = ManualClock::new();
    let mut session = Session::new(sse_config());
    let op = call(&mut session, &clock);
    assert!(
        drive(&mut session, op, &clock, &Server::default())
            .result
            .is_ok()
    );
    // The server closed the stream while no operation ran: the driver tells the next one.
    let op = call(&mut session, &clock);
    let server = Server {
        ended_before: true,
        ..Server::default()
    };
    let run = drive(&mut session, op, &clock, &server);
    assert_eq!(run.text(), "over sse");
    assert_eq!(
        run.labels(),
        [
            "sse",
            "initialize",
            "notifications/initialized",
            "tools/call"
        ]
    );
    let grants: Vec<u128> = run.legs.iter().map(|l| l.grant.as_millis()).collect();
    assert_eq!(grants, [20_000, 19_900, 19_800, 19_700], "one budget");
}

#[test]
fn an_endpoint_that_forgot_the_session_gets_a_new_stream_once() {
    let clock = ManualClock::new();
    let mut session = Session::new(sse_config());
    let op = call(&mut session, &clock);
    assert!(
        drive(&mut session, op, &clock, &Server::default())
            .result
            .is_ok()
    );
    // The server restarted: its endpoint answers 404 to the old session.
    let op = call(&mut session, &clock);
    let server = Server {
        forgets: std::cell::Cell::new(1),
        ..Server::default()
    };
    let run = drive(&mut session, op, &clock, &server);
    assert_eq!(run.text(), "over sse");
    assert_eq!(
        run.labels(),
        [
            "tools/call",
            "sse",
            "initialize",
            "notifications/initialized",
            "tools/call"
        ]
    );
    // Forgotten again on the new stream: the operation gives up (once per operation).
    let op = call(&mut session, &clock);
    let server = Server {
        forgets: std::cell::Cell::new(5),
        ..Server::default()
    };
    let run = drive(&mut session, op, &clock, &server);
    let err = run.result.as_ref().unwrap_err();
    assert!(
        matches!(err, Error::SessionExpired { status: 404, .. }),
        "{err:?}"
    );
}

#[test]
fn a_url_that_refuses_the_initialize_post_is_reached_over_sse_in_the_same_budget() {
    let clock = ManualClock::new();
    let config = SessionConfig::new(URL)
        .unwrap()
        .with_resolution(Resolution::MILLISECOND);
    let mut session = Session::new(config);
    let op = call(&mut session, &clock);
    let run = drive(&mut session, op, &clock, &Server::default());
    assert_eq!(run.text(), "over sse");
    // The modern request, then the legacy `initialize` (both refused), then the GET.
    assert_eq!(
        run.labels(),
        [
            "tools/call",
            "initialize",
            "sse",
            "initialize",
            "notifications/initialized",
            "tools/call"
        ]
    );
    assert_eq!(run.legs[2].grant, Duration::from_millis(19_800));
    // The session remembers, and keeps the stream: the next call is one POST.
    assert!(session.speaks_sse());
    let op = call(&mut session, &clock);
    let run = drive(&mut session, op, &clock, &Server::default());
    assert_eq!(run.labels(), ["tools/call"]);
}

#[test]
fn a_url_pinned_to_streamable_http_never_falls_back() {
    let clock = ManualClock::new();
    let config = SessionConfig::new(URL)
        .unwrap()
        .with_http_transport(HttpTransport::StreamableHttp);
    let mut session = Session::new(config);
    let op = call(&mut session, &clock);
    let run = drive(&mut session, op, &clock, &Server::default());
    let err = run.result.as_ref().unwrap_err();
    assert!(
        matches!(
            err,
            Error::HttpStatus {
                status: 405,
                method: "initialize",
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(run.labels(), ["tools/call", "initialize"]);
    assert!(!session.speaks_sse());
}

#[test]
fn a_stream_that_never_names_its_endpoint_ends_at_the_budget() {
    let clock = ManualClock::new();
    let config = sse_config().with_budget(Budget::from_secs(3));
    let mut session = Session::new(config);
    let start = clock.now();
    let op = call(&mut session, &clock);
    let server = Server {
        endpoint: None,
        ..Server::default()
    };
    let run = drive(&mut session, op, &clock, &server);
    let err = run.result.as_ref().unwrap_err();
    assert_eq!(
        run.labels(),
        ["sse"],
        "nothing is POSTed without an endpoint"
    );
    assert!(
        err.to_string()
            .contains("answering GET (the HTTP+SSE event stream)"),
        "{err}"
    );
    assert!(
        matches!(
            err,
            Error::LegTimedOut { .. } | Error::BudgetExhausted { .. }
        ),
        "{err:?}"
    );
    assert_eq!(
        clock.now() - start,
        Duration::from_secs(3),
        "ended at the budget, not later"
    );
}

#[test]
fn an_endpoint_on_another_origin_is_refused_before_anything_is_posted() {
    for endpoint in [
        "http://evil.example/messages",
        "https://127.0.0.1:8000/messages",
        "http://127.0.0.1:9999/m",
    ] {
        let clock = ManualClock::new();
        let mut session = Session::new(sse_config());
        let op = call(&mut session, &clock);
        let server = Server {
            endpoint: Some(endpoint),
            ..Server::default()
        };
        let run = drive(&mut session, op, &clock, &server);
        let err = run.result.as_ref().unwrap_err();
        assert_eq!(err.kind(), "malformed", "{err}");
        assert!(err.to_string().contains("another origin"), "{err}");
        assert_eq!(run.labels(), ["sse"]);
    }
}

#[test]
fn a_stream_that_closes_before_any_post_is_reopened_once_then_fails_at_once() {
    let clock = ManualClock::new();
    let mut session = Session::new(sse_config());
    let start = clock.now();
    let op = call(&mut session, &clock);
    let server = Server {
        closes: true,
        ..Server::default()
    };
    let run = drive(&mut session, op, &clock, &server);
    let err = run.result.as_ref().unwrap_err();
    assert!(
        err.to_string().contains("closed the HTTP+SSE event stream"),
        "{err}"
    );
    // Ended before the first POST: opened again once, ended again: nothing was POSTed.
    assert_eq!(
        run.labels(),
        ["sse", "sse"],
        "nothing is POSTed on a stream that is gone"
    );
    assert!(
        clock.now() - start < Duration::from_secs(1),
        "at once, not at the budget"
    );
}

#[test]
fn a_server_request_on_the_stream_is_answered_by_a_post_to_the_endpoint() {
    let clock = ManualClock::new();
    let config = sse_config().respond_to("roots/list", |_| {
        Ok(json!({"roots": [{"uri": "file:///tmp"}]}))
    });
    let mut session = Session::new(config);
    let op = call(&mut session, &clock);
    let server = Server {
        asks: Some(json!({"jsonrpc": "2.0", "id": 7, "method": "roots/list"})),
        ..Server::default()
    };
    let run = drive(&mut session, op, &clock, &server);
    assert!(run.result.is_ok(), "{:?}", run.result);
    let response = run
        .legs
        .iter()
        .find(|l| l.kind == LegKind::Respond)
        .expect("the answer");
    assert_eq!(
        response.uri,
        "http://127.0.0.1:8000/messages/?session_id=abc"
    );
    assert_eq!(response.body["id"], 7);
    assert_eq!(response.body["result"]["roots"][0]["uri"], "file:///tmp");
}

#[test]
fn a_listing_walks_over_sse_and_a_close_drops_the_stream() {
    let clock = ManualClock::new();
    let mut session = Session::new(sse_config());
    let op = session.list_tools(clock.now());
    let run = drive(&mut session, op, &clock, &Server::default());
    assert!(run.result.is_ok(), "{:?}", run.result);
    assert_eq!(
        run.labels(),
        [
            "sse",
            "initialize",
            "notifications/initialized",
            "tools/list"
        ]
    );
    let op = session.close(clock.now());
    let run = drive(&mut session, op, &clock, &Server::default());
    assert!(
        matches!(run.result, Ok(Outcome::Closed)),
        "{:?}",
        run.result
    );
    assert_eq!(
        run.labels(),
        ["hangup"],
        "the stream is the session: it is dropped"
    );
    assert!(!session.event_stream_open() && session.info().is_none());
    // Closed already: nothing to drop.
    let op = session.close(clock.now());
    let run = drive(&mut session, op, &clock, &Server::default());
    assert!(matches!(run.result, Ok(Outcome::Closed)) && run.legs.is_empty());
}

#[test]
fn a_subscription_listens_to_the_session_stream_until_the_budget_ends() {
    let clock = ManualClock::new();
    let mut session = Session::new(sse_config().with_budget(Budget::from_secs(3)));
    let start = clock.now();
    let subscription = mcp_proto::Subscription {
        resource_subscriptions: vec!["file:///a".to_owned()],
        ..mcp_proto::Subscription::default()
    };
    let op = session.subscribe(subscription, clock.now());
    let run = drive(&mut session, op, &clock, &Server::default());
    assert!(
        matches!(&run.result, Ok(Outcome::Subscription(end)) if !end.by_server),
        "{:?}",
        run.result
    );
    // The resource subscribed to by a POST; then no leg: the stream is the subscription.
    assert_eq!(
        run.labels(),
        [
            "sse",
            "initialize",
            "notifications/initialized",
            "resources/subscribe"
        ]
    );
    assert_eq!(
        clock.now() - start,
        Duration::from_secs(3),
        "the budget ends it"
    );
    assert!(session.event_stream_open(), "the stream lives on");
}

/// Polls until the operation waits, the legs it hands out meanwhile collected.
fn until_wait(
    op: &mut mcp_proto::driver::Operation,
    session: &mut Session,
    clock: &ManualClock,
) -> Vec<mcp_proto::driver::Leg> {
    let mut legs = Vec::new();
    loop {
        match op.poll_on(session, clock.now()) {
            Output::Wait(_) => return legs,
            Output::Transmit(leg) => legs.push(leg),
            Output::Event(_) | Output::LegEnded(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[test]
fn a_server_request_before_the_endpoint_is_answered_once_the_endpoint_is_named() {
    // Found by the http_sse fuzz target (fuzz/regressions/http_sse/
    // answer-to-a-server-request-posted-before-the-endpoint): the answer went out at once,
    // POSTed to the URL itself, before the stream said where messages go.
    let clock = ManualClock::new();
    let mut session = Session::new(sse_config());
    let mut op = call(&mut session, &clock);
    let Output::Transmit(stream) = op.poll_on(&mut session, clock.now()) else {
        panic!("the stream first")
    };
    assert_eq!(stream.kind, LegKind::Events);
    let now = clock.now();
    let status = op.handle_input(head(stream.id, StatusCode::OK, &sse_head()), now);
    assert_eq!(status, LegStatus::ReadMore);
    let ping = event("message", r#"{"jsonrpc":"2.0","id":"s-1","method":"ping"}"#);
    op.handle_input(Input::Events(&ping), now);
    let early = until_wait(&mut op, &mut session, &clock);
    assert!(
        early.is_empty(),
        "POSTed before the endpoint: {:?}",
        early
            .iter()
            .map(|leg| (leg.kind.label(), leg.request.uri().to_string()))
            .collect::<Vec<_>>()
    );
    let endpoint = event("endpoint", "/messages/?session_id=abc");
    op.handle_input(Input::Events(&endpoint), now);
    let legs = until_wait(&mut op, &mut session, &clock);
    let answer = (legs.iter().find(|leg| leg.kind == LegKind::Respond))
        .expect("the answer to the ping, now that it has somewhere to go");
    assert_eq!(
        answer.request.uri().to_string(),
        "http://127.0.0.1:8000/messages/?session_id=abc"
    );
    let body: Value = serde_json::from_slice(answer.request.body()).unwrap();
    assert_eq!(body["id"], "s-1");
    assert_eq!(body["result"], json!({}));
}

#[test]
fn a_stream_that_names_a_second_endpoint_is_not_used_again() {
    // Found by the http_sse fuzz target (fuzz/regressions/http_sse/
    // a-second-endpoint-leaves-the-stream-in-use): the operation failed, and the next one
    // POSTed on the stream that had changed its word.
    let clock = ManualClock::new();
    let mut session = Session::new(sse_config());
    let op = call(&mut session, &clock);
    let server = Server {
        second_endpoint: Some("/elsewhere/?session_id=xyz"),
        ..Server::default()
    };
    let run = drive(&mut session, op, &clock, &server);
    let err = run.result.as_ref().unwrap_err();
    assert!(
        err.to_string().contains("a second, different endpoint"),
        "{err}"
    );
    assert!(!session.event_stream_open(), "the stream is given up");
    let op = call(&mut session, &clock);
    let run = drive(&mut session, op, &clock, &Server::default());
    assert_eq!(run.text(), "over sse");
    assert_eq!(run.labels()[0], "sse", "a new stream");
}
