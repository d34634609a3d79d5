//! Operations against the loopback test server: results, session reuse, typed errors.

mod common;

use std::time::Duration;

use common::{client, config, text_args};
use mcp_driver_blocking::Client;
use mcp_proto::{
    Action, Budget, Error, Event, LegEnd, LegKind, Outcome, Resolution, SessionConfig,
    TransportErrorKind,
};
use mcp_testkit::{AnswerMode, Hostile, NotificationReply, Script, TestServer};

const BUDGET: Duration = Duration::from_secs(10);

fn methods(server: &TestServer) -> Vec<String> {
    server.rpc_methods()
}

#[test]
fn a_tool_call_runs_the_handshake_then_the_call() {
    let server = TestServer::start(Script::new());
    let (mut client, recorder) = client(&server, BUDGET);
    let result = client.call_tool("echo", text_args("hi")).unwrap();
    assert_eq!(result.text(), "hi");
    assert!(!result.is_error);
    assert_eq!(
        methods(&server),
        ["initialize", "notifications/initialized", "tools/call"]
    );
    let legs = recorder.legs();
    let kinds: Vec<LegKind> = legs.iter().map(|l| l.kind).collect();
    assert_eq!(
        kinds,
        [LegKind::Initialize, LegKind::Initialized, LegKind::CallTool]
    );
    let numbers: Vec<u32> = legs.iter().map(|l| l.number).collect();
    assert_eq!(numbers, [1, 2, 3]);
    assert_eq!(
        recorder.ends(),
        [
            LegEnd::Status(200),
            LegEnd::Status(202),
            LegEnd::Status(200)
        ]
    );
    // The protocol's headers went out, ureq added no Accept of its own.
    let requests = server.requests();
    let call = &requests[2];
    assert_eq!(
        call.header("accept"),
        Some("application/json, text/event-stream")
    );
    assert_eq!(call.header("content-type"), Some("application/json"));
    assert!(call.header("mcp-session-id").is_some());
    assert!(call.header("mcp-protocol-version").is_some());
    assert_eq!(
        requests
            .iter()
            .filter(|r| r.headers.iter().any(|(n, _)| n == "accept"))
            .count(),
        3,
        "one Accept per request"
    );
}

#[test]
fn a_failing_tool_is_a_result_not_an_error() {
    let server = TestServer::start(Script::new());
    let (mut client, _) = client(&server, BUDGET);
    let result = client.call_tool("fail", serde_json::Map::new()).unwrap();
    assert!(result.is_error);
}

#[test]
fn tools_listing_follows_three_pages() {
    let server = TestServer::start(Script::new().tool_pages(3));
    let (mut client, recorder) = client(&server, BUDGET);
    let tools = client.list_tools().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert!(
        names.starts_with(&["echo", "add", "sleep", "fail"]),
        "{names:?}"
    );
    assert_eq!(
        methods(&server),
        [
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/list",
            "tools/list"
        ]
    );
    let pages: Vec<LegKind> = recorder.legs().iter().skip(2).map(|l| l.kind).collect();
    assert_eq!(
        pages,
        [
            LegKind::ListTools { page: 1 },
            LegKind::ListTools { page: 2 },
            LegKind::ListTools { page: 3 }
        ]
    );
    // Cursors were sent verbatim.
    let bodies: Vec<serde_json::Value> = server
        .requests()
        .iter()
        .skip(3)
        .map(|r| r.json().unwrap())
        .collect();
    assert_eq!(bodies[0]["params"]["cursor"], "page-2");
    assert_eq!(bodies[1]["params"]["cursor"], "page-3");
}

#[test]
fn probe_reports_the_handshake_then_pings_the_live_session() {
    let server = TestServer::start(Script::new());
    let (mut client, _) = client(&server, BUDGET);
    let info = client.probe().unwrap();
    assert!(info.session_id.is_some());
    assert!(!info.server.name.is_empty());
    assert_eq!(client.session().info(), Some(&info));
    let again = client.probe().unwrap();
    assert_eq!(again.session_id, info.session_id);
    assert_eq!(
        methods(&server),
        ["initialize", "notifications/initialized", "ping"]
    );
}

#[test]
fn a_second_operation_reuses_the_session_without_a_second_handshake() {
    let server = TestServer::start(Script::new());
    let (mut client, _) = client(&server, BUDGET);
    client.call_tool("echo", text_args("one")).unwrap();
    let tools = client.list_tools().unwrap();
    assert!(!tools.is_empty());
    let sum = client
        .run(
            Action::CallTool {
                name: "add".into(),
                arguments: serde_json::from_str(r#"{"a": 2, "b": 3}"#).unwrap(),
            },
            Budget::from_secs(5),
        )
        .unwrap()
        .into_call()
        .unwrap();
    assert_eq!(sum.text(), "5");
    assert_eq!(
        methods(&server),
        [
            "initialize",
            "notifications/initialized",
            "tools/call",
            "tools/list",
            "tools/call"
        ]
    );
    // One session, and the pool carried all five legs on one connection.
    let sessions: std::collections::HashSet<_> = server
        .requests()
        .iter()
        .filter_map(|r| r.header("mcp-session-id").map(str::to_owned))
        .collect();
    assert_eq!(sessions.len(), 1);
    assert_eq!(server.connections_accepted(), 1);
}

#[test]
fn a_404_after_the_server_expired_the_session_reinitializes_and_succeeds() {
    let server = TestServer::start(Script::new());
    let (mut client, recorder) = client(&server, BUDGET);
    client.call_tool("echo", text_args("one")).unwrap();
    let first = client.session().info().unwrap().session_id.clone();
    server.expire_sessions();
    let result = client.call_tool("echo", text_args("two")).unwrap();
    assert_eq!(result.text(), "two");
    assert_eq!(
        methods(&server),
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
    assert_ne!(client.session().info().unwrap().session_id, first);
    assert_eq!(recorder.ends()[3], LegEnd::Status(404));
}

#[test]
fn event_stream_answers_carry_notifications_to_the_observer() {
    let server = TestServer::start(
        Script::new()
            .answer_mode(AnswerMode::Sse)
            .notifications_before_answer(3)
            .event_ids(true),
    );
    let (mut client, recorder) = client(&server, BUDGET);
    let result = client.call_tool("echo", text_args("streamed")).unwrap();
    assert_eq!(result.text(), "streamed");
    let notifications = recorder
        .events()
        .iter()
        .filter(|e| matches!(e, Event::Notification(n) if n.method == "notifications/message"))
        .count();
    // Three before each answered request (initialize and tools/call).
    assert_eq!(notifications, 6);
}

#[test]
fn many_notifications_before_the_answer_all_reach_the_observer() {
    let server =
        TestServer::start(Script::new().hostile("tools/call", Hostile::ManyNotifications(500)));
    let (mut client, recorder) = client(&server, BUDGET);
    let result = client.call_tool("echo", text_args("x")).unwrap();
    assert_eq!(result.text(), "x");
    assert_eq!(recorder.events().len(), 500);
}

#[test]
fn notification_replies_other_than_202_are_accepted() {
    for reply in [NotificationReply::OkWithBody, NotificationReply::OkEmpty] {
        let server = TestServer::start(Script::new().notification_reply(reply));
        let (mut client, _) = client(&server, BUDGET);
        assert_eq!(
            client.call_tool("echo", text_args("ok")).unwrap().text(),
            "ok"
        );
    }
}

#[test]
fn sessionless_servers_work() {
    let server = TestServer::start(Script::new().sessions(false));
    let (mut client, _) = client(&server, BUDGET);
    assert_eq!(
        client.call_tool("echo", text_args("ok")).unwrap().text(),
        "ok"
    );
    assert!(client.session().info().unwrap().session_id.is_none());
}

#[test]
fn connect_uses_the_default_configuration() {
    let server = TestServer::start(Script::new());
    let mut client = Client::connect(&server.url()).unwrap();
    assert_eq!(client.session().config().default_budget(), Budget::DEFAULT);
    assert_eq!(
        client.session().config().default_resolution(),
        Resolution::SECOND
    );
    assert_eq!(client.list_tools().unwrap().len(), 4);
    assert!(matches!(
        Client::connect("ftp://example.org/"),
        Err(Error::InvalidUrl { .. })
    ));
}

/// Runs one `tools/call` of `echo` against a server with `script` and returns its error.
fn call_error(script: Script, config_for: impl FnOnce(SessionConfig) -> SessionConfig) -> Error {
    let server = TestServer::start(script);
    let mut client = Client::new(config_for(config(&server, BUDGET)));
    client
        .call_tool("echo", text_args("x"))
        .expect_err("the hostile server must end the operation with an error")
}

#[test]
fn hostile_statuses_end_in_http_status_errors() {
    for code in [401, 403, 500, 503] {
        let err = call_error(
            Script::new().hostile("tools/call", Hostile::Status(code)),
            |c| c,
        );
        assert!(
            matches!(err, Error::HttpStatus { status, method: "tools/call", .. } if status == code),
            "{err:?}"
        );
    }
    // A 404 to a request that carried no session is a status, not a lost session.
    let err = call_error(
        Script::new().hostile("initialize", Hostile::Status(404)),
        |c| c,
    );
    assert!(
        matches!(
            err,
            Error::HttpStatus {
                status: 404,
                method: "initialize",
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn a_redirect_is_reported_not_followed() {
    let server = TestServer::start(Script::new().hostile("tools/call", Hostile::Redirect));
    let (mut client, _) = client(&server, BUDGET);
    let err = client.call_tool("echo", text_args("x")).unwrap_err();
    assert!(
        matches!(err, Error::HttpStatus { status: 302, .. }),
        "{err:?}"
    );
    assert_eq!(server.rpc_methods().len(), 3);
}

#[test]
fn hostile_bodies_end_in_their_own_typed_errors() {
    let err = call_error(Script::new().hostile("tools/call", Hostile::Html), |c| c);
    assert!(
        matches!(&err, Error::UnsupportedContentType { content_type, .. } if content_type == "text/html"),
        "{err:?}"
    );
    for hostile in [
        Hostile::NotJson,
        Hostile::EmptyBody,
        Hostile::WrongId,
        Hostile::InvalidUtf8,
        Hostile::DeepNesting(10_000),
    ] {
        let err = call_error(Script::new().hostile("tools/call", hostile.clone()), |c| c);
        assert!(
            matches!(
                err,
                Error::Malformed {
                    method: "tools/call",
                    ..
                }
            ),
            "{hostile:?}: {err:?}"
        );
    }
    let err = call_error(
        Script::new().hostile(
            "tools/call",
            Hostile::ErrorEnvelope {
                code: -32001,
                message: "no\r\nway".into(),
            },
        ),
        |c| c,
    );
    assert!(
        matches!(&err, Error::JsonRpc { code: -32001, message, .. } if message == "no way"),
        "{err:?}"
    );
}

#[test]
fn oversize_answers_end_in_answer_too_large() {
    const CAP: usize = 64 * 1024;
    for (script, what) in [
        (
            Script::new().hostile("tools/call", Hostile::Oversize(4 * 1024 * 1024)),
            "JSON with a Content-Length",
        ),
        (
            Script::new().hostile("tools/call", Hostile::OversizeChunked(4 * 1024 * 1024)),
            "chunked JSON",
        ),
        (
            Script::new()
                .answer_mode(AnswerMode::Sse)
                .hostile("tools/call", Hostile::Oversize(4 * 1024 * 1024)),
            "one giant event",
        ),
    ] {
        let server = TestServer::start(script);
        let mut client = Client::new(config(&server, BUDGET).body_cap(CAP));
        let started = std::time::Instant::now();
        let err = client.call_tool("echo", text_args("x")).unwrap_err();
        assert!(
            matches!(
                err,
                Error::AnswerTooLarge {
                    limit: CAP,
                    method: "tools/call",
                    ..
                }
            ),
            "{what}: {err:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(5), "{what}");
    }
}

#[test]
fn handshake_failures_are_typed() {
    let err = call_error(Script::new().protocol_version("1999-01-01"), |c| c);
    assert!(
        matches!(&err, Error::UnsupportedProtocolVersion { version, .. } if version == "1999-01-01"),
        "{err:?}"
    );
    let err = call_error(Script::new().session_id_header(&b"has space"[..]), |c| c);
    assert!(
        matches!(
            err,
            Error::Malformed {
                method: "initialize",
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn listings_that_do_not_end_are_stopped() {
    let server = TestServer::start(Script::new().tool_pages(3).repeated_cursor(true));
    let (mut client, _) = client(&server, BUDGET);
    assert!(matches!(
        client.list_tools(),
        Err(Error::RepeatedCursor { .. })
    ));

    let server = TestServer::start(Script::new().endless_listing(true));
    let mut client = Client::new(config(&server, BUDGET).max_pages(5));
    assert!(matches!(
        client.list_tools(),
        Err(Error::TooManyPages { pages: 5, .. })
    ));
    assert_eq!(
        server
            .rpc_methods()
            .iter()
            .filter(|m| *m == "tools/list")
            .count(),
        5
    );
}

#[test]
fn a_closed_port_is_unreachable_with_a_connect_failure() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    for scheme in ["http", "https"] {
        let url = format!("{scheme}://127.0.0.1:{port}/mcp");
        let mut client = Client::new(
            SessionConfig::new(&url)
                .unwrap()
                .budget(Budget::from_secs(5)),
        );
        let recorder = common::Recorder::default();
        client.set_observer(recorder.clone());
        let err = client.probe().unwrap_err();
        assert!(
            matches!(
                err,
                Error::Unreachable {
                    method: "initialize",
                    ..
                }
            ),
            "{scheme}: {err:?}"
        );
        assert_eq!(
            recorder.ends(),
            [LegEnd::Transport(TransportErrorKind::Connect)],
            "{scheme}"
        );
    }
}

#[test]
fn an_https_url_speaking_to_a_plain_http_server_fails_in_tls() {
    // The TLS handshake meets an HTTP server: a connect-phase failure, not a panic.
    let server = TestServer::start(Script::new());
    let url = format!("https://127.0.0.1:{}/mcp", server.port());
    let mut client = Client::new(
        SessionConfig::new(&url)
            .unwrap()
            .budget(Budget::from_secs(5)),
    );
    let recorder = common::Recorder::default();
    client.set_observer(recorder.clone());
    let err = client.probe().unwrap_err();
    assert!(matches!(err, Error::Unreachable { .. }), "{err:?}");
    assert_eq!(
        recorder.ends(),
        [LegEnd::Transport(TransportErrorKind::Connect)]
    );
}

#[test]
fn run_returns_the_outcome_of_its_action() {
    let server = TestServer::start(Script::new().tool_pages(2));
    let (mut client, _) = client(&server, BUDGET);
    let outcome = client.run(Action::ListTools, Budget::from_secs(3)).unwrap();
    assert!(matches!(outcome, Outcome::Tools(ref tools) if tools.len() >= 4));
    let outcome = client.run(Action::Probe, Budget::from_secs(3)).unwrap();
    assert!(matches!(outcome, Outcome::Probe(_)));
}
