//! Subscriptions: `subscriptions/listen` (modern era) or the session's GET stream (legacy
//! era), read for as long as the operation's budget lasts. Notifications are events; the
//! budget running out ends the subscription normally; the server may end it sooner.

mod support;

use http::{HeaderMap, HeaderValue, StatusCode};
use mcp_proto::driver::LegKind;
use mcp_proto::driver::{Input, LegStatus, Output};
use mcp_proto::{
    Clock, Event, ManualClock, Outcome, ProtocolVersion, Session, SessionConfig, Subscription,
};
use serde_json::{Value, json};
use support::{Answer, config, drive, live_session};

fn modern() -> Session {
    Session::new(
        SessionConfig::new("http://mcp.example.test:8080/mcp")
            .unwrap()
            .with_protocol_version(ProtocolVersion::MODERN),
    )
}

fn tools_changed() -> Subscription {
    Subscription {
        tools_list_changed: true,
        resource_subscriptions: vec!["file:///config.json".into()],
        ..Subscription::default()
    }
}

const ACKNOWLEDGED: &str = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/acknowledged\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":1},\"notifications\":{\"toolsListChanged\":true}}}\n\n";
const CHANGED: &str = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":1}}}\n\n";

#[test]
fn a_modern_subscription_lasts_its_budget_and_its_end_is_not_an_error() {
    let clock = ManualClock::new();
    let mut session = modern();
    let mut op = session.subscribe(tools_changed(), clock.now());
    let Output::Transmit(leg) = op.poll_output(clock.now()) else {
        panic!("the subscription goes out first")
    };
    assert_eq!(leg.kind, LegKind::Subscribe);
    assert_eq!(leg.request.method(), http::Method::POST);
    assert_eq!(leg.request.headers()["mcp-method"], "subscriptions/listen");
    let body: serde_json::Value = serde_json::from_slice(leg.request.body()).unwrap();
    assert_eq!(
        body["params"]["notifications"],
        json!({"toolsListChanged": true, "resourceSubscriptions": ["file:///config.json"]})
    );
    assert_eq!(leg.timeout.as_secs(), 20, "the whole budget");
    let mut head = HeaderMap::new();
    head.insert(
        "content-type",
        HeaderValue::from_static("text/event-stream"),
    );
    let now = clock.now();
    assert_eq!(
        op.handle_input(
            Input::Head {
                leg: leg.id,
                status: StatusCode::OK,
                headers: &head
            },
            now
        ),
        LegStatus::ReadMore
    );
    let stream = format!("{ACKNOWLEDGED}{CHANGED}");
    assert_eq!(
        op.handle_input(
            Input::Chunk {
                leg: leg.id,
                bytes: stream.as_bytes()
            },
            now
        ),
        LegStatus::ReadMore
    );
    let mut events = Vec::new();
    let mut reports = Vec::new();
    let result = loop {
        match op.poll_output(clock.now()) {
            Output::Update(update) => session.apply(update),
            Output::Authorize(_) => {
                op.handle_input(Input::NoAuthorizer, clock.now());
            }
            Output::Event(event) => events.push(event),
            Output::Request(request) => {
                op.handle_input(request.reply_from(op.session_config()), clock.now());
            }
            Output::LegEnded(report) => reports.push(report),
            Output::Wait(until) | Output::AwaitSession(until) => {
                // The stream stays open: the budget ends it.
                clock.set(until);
                op.handle_input(Input::Timeout, clock.now());
            }
            Output::Done(result) => break result,
            Output::Transmit(leg) => panic!("nothing more is sent: {:?}", leg.kind),
        }
    };
    let Ok(Outcome::Subscription(end)) = result else {
        panic!("{result:?}")
    };
    assert!(!end.by_server);
    assert_eq!(end.acknowledged, Some(json!({"toolsListChanged": true})));
    // The stream was read to the budget's end: its leg's report says it ran out.
    let ends: Vec<String> = reports.iter().map(|r| r.end.word()).collect();
    assert_eq!(ends, ["timeout"], "{reports:?}");
    let methods: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::Notification(n) => Some(n.method.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        methods,
        [
            "notifications/subscriptions/acknowledged",
            "notifications/tools/list_changed"
        ]
    );
}

#[test]
fn the_server_may_end_a_subscription_with_its_result() {
    let clock = ManualClock::new();
    let mut session = modern();
    let op = session.subscribe(tools_changed(), clock.now());
    let done = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"resultType\":\"complete\"}}\n\n";
    let run = drive(&mut session, op, &clock, &[], |_, _| {
        Answer::Sse(format!("{ACKNOWLEDGED}{CHANGED}{done}"))
    });
    let Ok(Outcome::Subscription(end)) = &run.result else {
        panic!("{:?}", run.result)
    };
    assert!(end.by_server);
    assert_eq!(run.events.len(), 2);
    assert_eq!(run.methods(), ["subscriptions/listen"]);
}

#[test]
fn a_legacy_subscription_is_the_session_s_stream() {
    let clock = ManualClock::new();
    let mut session = live_session(config(), &clock);
    let op = session.subscribe(Subscription::default(), clock.now());
    let run = drive(&mut session, op, &clock, &[], |_, _| {
        Answer::Sse(CHANGED.to_owned())
    });
    let Ok(Outcome::Subscription(end)) = &run.result else {
        panic!("{:?}", run.result)
    };
    assert!(end.by_server, "the server closed the stream");
    assert_eq!(run.legs.len(), 1);
    let leg = &run.legs[0];
    assert_eq!(leg.request.method(), http::Method::GET);
    assert_eq!(leg.request.headers()["mcp-session-id"], "session-1");
    assert_eq!(run.events.len(), 1);
}

#[test]
fn a_legacy_subscription_subscribes_each_resource_before_its_stream_opens() {
    let clock = ManualClock::new();
    let mut session = live_session(config(), &clock);
    let subscription = Subscription {
        resources_list_changed: true,
        resource_subscriptions: vec!["file:///a.txt".into(), "file:///b.txt".into()],
        ..Subscription::default()
    };
    let op = session.subscribe(subscription, clock.now());
    let updated = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/updated\",\"params\":{\"uri\":\"file:///a.txt\"}}\n\n";
    let run = drive(
        &mut session,
        op,
        &clock,
        &[1.0, 1.0],
        |kind, _| match kind {
            LegKind::ResourceSubscribe { .. } => Answer::Result(json!({})),
            _ => Answer::Sse(updated.to_owned()),
        },
    );
    let Ok(Outcome::Subscription(end)) = &run.result else {
        panic!("{:?}", run.result)
    };
    assert!(end.by_server, "the server closed the stream");
    assert_eq!(
        run.methods(),
        [
            "resources/subscribe",
            "resources/subscribe",
            "subscriptions/listen"
        ]
    );
    let uris: Vec<&Value> = run.legs[..2]
        .iter()
        .map(|l| &l.body["params"]["uri"])
        .collect();
    assert_eq!(uris, [&json!("file:///a.txt"), &json!("file:///b.txt")]);
    for leg in &run.legs[..2] {
        assert_eq!(leg.request.method(), http::Method::POST);
        assert_eq!(leg.request.headers()["mcp-session-id"], "session-1");
    }
    // Each leg is granted what the ones before it left.
    assert_eq!(run.grant_secs(), [20, 19, 18]);
    assert_eq!(run.legs[2].request.method(), http::Method::GET);
    assert_eq!(run.events.len(), 1);
}

#[test]
fn a_legacy_server_that_cannot_subscribe_to_a_resource_ends_the_subscription_with_its_error() {
    let clock = ManualClock::new();
    let mut session = live_session(config(), &clock);
    let subscription = Subscription {
        resource_subscriptions: vec!["file:///a.txt".into()],
        ..Subscription::default()
    };
    let op = session.subscribe(subscription, clock.now());
    let run = drive(&mut session, op, &clock, &[], |_, _| {
        Answer::Json(
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "Method not found"}}),
        )
    });
    let Err(error) = &run.result else {
        panic!("{:?}", run.result)
    };
    assert!(error.to_string().contains("resources/subscribe"), "{error}");
    assert_eq!(run.methods(), ["resources/subscribe"], "no stream opens");
}
