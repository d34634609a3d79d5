//! Operations that succeed: what they return and what the server saw.

mod common;

use std::time::{Duration, Instant};

use common::{Recorder, args, client, config, echo};
use mcp_driver_tokio::{CancelHandle, Client};
use mcp_proto::{Action, Budget, Event, LegEnd, LegKind, Outcome, ProtocolVersion};
use mcp_testkit::{AnswerMode, Hostile, NotificationReply, Script, TestServer};
use serde_json::Value;

fn assert_send<T: Send>(_: &T) {}

#[test]
fn operation_futures_and_handles_are_send() {
    fn assert_send_sync_clone<T: Send + Sync + Clone + 'static>() {}
    assert_send_sync_clone::<CancelHandle>();
    let mut client = Client::connect("http://127.0.0.1:9/mcp").expect("valid URL");
    assert_send(&client);
    {
        let probe = client.probe();
        assert_send(&probe);
    }
    {
        let list = client.list_tools();
        assert_send(&list);
    }
    {
        let call = client.call_tool("echo", echo("hi"));
        assert_send(&call);
    }
    {
        let run = client.run(Action::Probe, Budget::from_secs(1));
        assert_send(&run);
    }
}

#[test]
fn connect_refuses_unusable_urls() {
    for url in ["ftp://example.org/mcp", "not a url", "http:///mcp"] {
        let err = Client::connect(url).expect_err(url);
        assert!(
            matches!(err, mcp_proto::Error::InvalidUrl { .. }),
            "{url}: {err:?}"
        );
    }
}

#[tokio::test]
async fn a_tool_call_is_three_legs_and_returns_the_result() {
    let server = TestServer::start(Script::new());
    let mut client = client(&server);
    let recorder = Recorder::default();
    client.set_observer(recorder.clone());

    let result = client.call_tool("echo", echo("hi")).await.expect("call");
    assert_eq!(result.text(), "hi");
    assert!(!result.is_error);
    assert_eq!(
        server.rpc_methods(),
        ["initialize", "notifications/initialized", "tools/call"]
    );

    let legs = recorder.legs();
    let kinds: Vec<LegKind> = legs.iter().map(|l| l.kind).collect();
    assert_eq!(
        kinds,
        [LegKind::Initialize, LegKind::Initialized, LegKind::CallTool]
    );
    let ends: Vec<LegEnd> = legs.iter().map(|l| l.end).collect();
    assert_eq!(
        ends,
        [
            LegEnd::Status(200),
            LegEnd::Status(202),
            LegEnd::Status(200)
        ]
    );
    assert_eq!(legs.iter().map(|l| l.number).collect::<Vec<_>>(), [1, 2, 3]);
    for leg in &legs {
        assert!(leg.elapsed <= leg.grant, "{leg:?}");
    }

    // The request carried what the protocol needs.
    let requests = server.requests();
    let call = requests.last().expect("recorded");
    assert_eq!(call.method, "POST");
    assert_eq!(call.path, "/mcp");
    assert_eq!(call.header("content-type"), Some("application/json"));
    assert!(call.header("mcp-session-id").is_some());
    assert!(call.header("mcp-protocol-version").is_some());
    let body = call.json().expect("JSON body");
    assert_eq!(body["params"]["name"], "echo");
    assert_eq!(body["params"]["arguments"]["text"], "hi");
}

#[tokio::test]
async fn tool_results_with_is_error_are_results() {
    let server = TestServer::start(Script::new());
    let mut client = client(&server);
    let result = client.call_tool("fail", args(&[])).await.expect("call");
    assert!(result.is_error);
    let sum = client
        .call_tool("add", args(&[("a", 2.into()), ("b", 3.into())]))
        .await
        .expect("add");
    assert_eq!(sum.text(), "5");
}

#[tokio::test]
async fn a_listing_walks_every_page() {
    let server = TestServer::start(Script::new().tool_pages(3));
    let mut client = client(&server);
    let tools = client.list_tools().await.expect("listing");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["echo", "add", "sleep", "fail"]);
    assert_eq!(
        server.rpc_methods(),
        [
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/list",
            "tools/list"
        ]
    );
    let cursors: Vec<Value> = server
        .requests()
        .iter()
        .filter(|r| r.rpc_method.as_deref() == Some("tools/list"))
        .map(|r| r.json().expect("JSON")["params"]["cursor"].clone())
        .collect();
    assert_eq!(cursors, [Value::Null, "page-2".into(), "page-3".into()]);
}

#[tokio::test]
async fn a_probe_reports_the_handshake_then_pings() {
    let server = TestServer::start(Script::new());
    let mut client = client(&server);
    assert!(client.session().info().is_none());
    let info = client.probe().await.expect("probe");
    assert_eq!(info.server.name, "mcp-testkit");
    assert_eq!(info.protocol_version, ProtocolVersion::LATEST);
    assert!(info.session_id.is_some());
    assert_eq!(client.session().info(), Some(&info));

    let again = client.probe().await.expect("second probe");
    assert_eq!(again, info);
    assert_eq!(
        server.rpc_methods(),
        ["initialize", "notifications/initialized", "ping"]
    );
}

#[tokio::test]
async fn a_second_operation_reuses_the_session() {
    let server = TestServer::start(Script::new());
    let mut client = client(&server);
    client.call_tool("echo", echo("one")).await.expect("first");
    let tools = client.list_tools().await.expect("second");
    assert_eq!(tools.len(), 4);
    let outcome = client
        .run(
            Action::CallTool {
                name: "echo".into(),
                arguments: echo("three"),
            },
            Budget::from_secs(5),
        )
        .await
        .expect("third");
    assert_eq!(outcome.into_call().expect("a call").text(), "three");
    assert_eq!(
        server.rpc_methods(),
        [
            "initialize",
            "notifications/initialized",
            "tools/call",
            "tools/list",
            "tools/call"
        ]
    );
    // One session id throughout.
    let ids: Vec<String> = server
        .requests()
        .iter()
        .skip(1)
        .filter_map(|r| r.header("mcp-session-id").map(str::to_owned))
        .collect();
    assert_eq!(ids.len(), 4);
    assert!(ids.iter().all(|id| id == &ids[0]));
}

#[tokio::test]
async fn a_lost_session_is_reinitialized_within_the_operation() {
    let server = TestServer::start(Script::new());
    let mut client = client(&server);
    client.call_tool("echo", echo("one")).await.expect("first");
    let old = client.session().info().and_then(|i| i.session_id.clone());
    server.expire_sessions();

    let result = client.call_tool("echo", echo("two")).await.expect("second");
    assert_eq!(result.text(), "two");
    assert_eq!(
        server.rpc_methods(),
        [
            "initialize",
            "notifications/initialized",
            "tools/call",
            "tools/call",
            "initialize",
            "notifications/initialized",
            "tools/call"
        ]
    );
    let new = client.session().info().and_then(|i| i.session_id.clone());
    assert!(new.is_some());
    assert_ne!(new, old);
}

#[tokio::test]
async fn sse_answers_are_read_and_events_reported() {
    let server = TestServer::start(
        Script::new()
            .answer_mode(AnswerMode::Sse)
            .notifications_before_answer(2)
            .event_ids(true),
    );
    let mut client = client(&server);
    let recorder = Recorder::default();
    client.set_observer(recorder.clone());
    let result = client
        .call_tool("echo", echo("streamed"))
        .await
        .expect("call");
    assert_eq!(result.text(), "streamed");
    let events = recorder.events();
    // Two notifications before each of the two answers (initialize and tools/call).
    assert_eq!(events.len(), 4, "{events:?}");
    for event in &events {
        match event {
            Event::Notification(n) => assert_eq!(n.method, "notifications/message"),
            other => panic!("unexpected event {other:?}"),
        }
    }
}

#[tokio::test]
async fn many_notifications_arrive_through_the_observer() {
    let server =
        TestServer::start(Script::new().hostile("tools/call", Hostile::ManyNotifications(50)));
    let mut client = client(&server);
    let recorder = Recorder::default();
    client.set_observer(recorder.clone());
    let result = client
        .call_tool("echo", echo("after many"))
        .await
        .expect("call");
    assert_eq!(result.text(), "after many");
    assert_eq!(recorder.events().len(), 50);
}

#[tokio::test]
async fn an_event_stream_kept_open_after_the_answer_returns_at_once() {
    let server =
        TestServer::start(Script::new().answer_mode_for("tools/call", AnswerMode::SseKeepOpen));
    let mut client = client(&server);
    client.probe().await.expect("handshake");
    let started = Instant::now();
    let result = client.call_tool("echo", echo("open")).await.expect("call");
    let took = started.elapsed();
    assert_eq!(result.text(), "open");
    assert!(took < Duration::from_millis(500), "took {took:?}");
    // The client goes on.
    assert_eq!(
        client
            .call_tool("echo", echo("next"))
            .await
            .expect("next")
            .text(),
        "next"
    );
}

#[tokio::test]
async fn a_stream_kept_open_is_closed_once_answered() {
    // The first leg runs on the first connection (the pool is empty), its stream is kept open
    // by the server and dropped by the driver once answered: the second leg needs a second
    // connection, and the first one closes.
    let server =
        TestServer::start(Script::new().answer_mode_for("initialize", AnswerMode::SseKeepOpen));
    let mut client = client(&server);
    let started = Instant::now();
    client.probe().await.expect("probe");
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.connections_accepted(), 2);
    assert!(
        common::eventually(Duration::from_secs(2), || server.open_connections() == 1).await,
        "{} connections open",
        server.open_connections()
    );
}

#[tokio::test]
async fn notification_replies_other_than_202_are_accepted() {
    for reply in [NotificationReply::OkWithBody, NotificationReply::OkEmpty] {
        let server = TestServer::start(Script::new().notification_reply(reply));
        let mut client = client(&server);
        assert_eq!(
            client
                .call_tool("echo", echo("x"))
                .await
                .expect("call")
                .text(),
            "x",
            "{reply:?}"
        );
    }
}

#[tokio::test]
async fn a_server_without_sessions_works() {
    let server = TestServer::start(Script::new().sessions(false));
    let mut client = client(&server);
    let info = client.probe().await.expect("probe");
    assert_eq!(info.session_id, None);
    assert_eq!(client.list_tools().await.expect("list").len(), 4);
}

#[tokio::test]
async fn run_returns_the_outcome_for_each_action() {
    let server = TestServer::start(Script::new());
    let mut client = Client::new(config(&server));
    let budget = Budget::from_secs(5);
    assert!(matches!(
        client.run(Action::Probe, budget).await,
        Ok(Outcome::Probe(_))
    ));
    assert!(matches!(
        client.run(Action::ListTools, budget).await,
        Ok(Outcome::Tools(_))
    ));
}

#[tokio::test]
async fn cancelling_with_nothing_in_flight_does_nothing_to_later_operations() {
    let server = TestServer::start(Script::new());
    let mut client = client(&server);
    let handle = client.cancel_handle();
    handle.cancel();
    handle.clone().cancel();
    assert_eq!(
        client
            .call_tool("echo", echo("fine"))
            .await
            .expect("call")
            .text(),
        "fine"
    );
    handle.cancel();
    assert_eq!(client.list_tools().await.expect("list").len(), 4);
}
