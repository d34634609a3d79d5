//! Hostile servers end in their own typed errors, decided by mcp-proto.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Recorder, client, config, echo};
use mcp_driver_tokio::Client;
use mcp_proto::{Error, LegEnd, TransportErrorKind};
use mcp_testkit::{AnswerMode, Hostile, Script, TestServer};

/// The error a tool call ends with against `script`, with a 5 s budget and a 64 KiB body cap.
async fn call_error(script: Script) -> Error {
    let server = TestServer::start(script);
    let mut client = Client::new(
        config(&server)
            .budget(mcp_proto::Budget::from_secs(5))
            .body_cap(64 * 1024),
    );
    client
        .call_tool("echo", echo("x"))
        .await
        .expect_err("the server misbehaves")
}

fn on_call(mode: Hostile) -> Script {
    Script::new().hostile("tools/call", mode)
}

#[tokio::test]
async fn an_oversize_answer_is_refused() {
    const MIB: usize = 1024 * 1024;
    for script in [
        on_call(Hostile::Oversize(MIB)),
        on_call(Hostile::OversizeChunked(MIB)),
        on_call(Hostile::Oversize(MIB)).answer_mode(AnswerMode::Sse),
    ] {
        let started = Instant::now();
        let err = call_error(script.clone()).await;
        assert!(
            matches!(err, Error::AnswerTooLarge { method: "tools/call", limit, .. } if limit == 64 * 1024),
            "{script:?}: {err:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(2));
    }
}

#[tokio::test]
async fn malformed_answers_are_malformed() {
    for mode in [
        Hostile::WrongId,
        Hostile::InvalidUtf8,
        Hostile::NotJson,
        Hostile::EmptyBody,
        Hostile::DeepNesting(1_000),
    ] {
        let err = call_error(on_call(mode.clone())).await;
        assert!(
            matches!(
                err,
                Error::Malformed {
                    method: "tools/call",
                    ..
                }
            ),
            "{mode:?}: {err:?}"
        );
    }
}

#[tokio::test]
async fn statuses_and_redirects_are_http_status_errors() {
    for (mode, status) in [
        (Hostile::Redirect, 302),
        (Hostile::Status(503), 503),
        (Hostile::Status(401), 401),
        (Hostile::Status(500), 500),
    ] {
        let err = call_error(on_call(mode.clone())).await;
        assert!(
            matches!(err, Error::HttpStatus { method: "tools/call", status: s, .. } if s == status),
            "{mode:?}: {err:?}"
        );
    }
    let err = call_error(Script::new().hostile("initialize", Hostile::Status(404))).await;
    assert!(
        matches!(
            err,
            Error::HttpStatus {
                method: "initialize",
                status: 404,
                ..
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_redirect_is_not_followed() {
    let server = TestServer::start(on_call(Hostile::Redirect));
    let mut client = client(&server);
    let err = client.call_tool("echo", echo("x")).await.expect_err("302");
    assert!(
        matches!(err, Error::HttpStatus { status: 302, .. }),
        "{err:?}"
    );
    assert_eq!(
        server.rpc_methods(),
        ["initialize", "notifications/initialized", "tools/call"]
    );
}

#[tokio::test]
async fn an_html_page_is_an_unsupported_content_type() {
    let err = call_error(on_call(Hostile::Html)).await;
    match err {
        Error::UnsupportedContentType { content_type, .. } => assert_eq!(content_type, "text/html"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_json_rpc_error_is_reported_with_its_code() {
    let err = call_error(on_call(Hostile::ErrorEnvelope {
        code: -32042,
        message: "no such thing".into(),
    }))
    .await;
    match err {
        Error::JsonRpc { code, message, .. } => {
            assert_eq!(code, -32042);
            assert_eq!(message, "no such thing");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn an_unknown_protocol_version_is_refused() {
    let err = call_error(Script::new().protocol_version("1999-01-01")).await;
    assert!(
        matches!(&err, Error::UnsupportedProtocolVersion { version, .. } if version == "1999-01-01"),
        "{err:?}"
    );
}

#[tokio::test]
async fn an_overlong_session_id_is_not_echoed() {
    let server = TestServer::start(Script::new().session_id_header("s".repeat(300)));
    let mut client = client(&server);
    let err = client
        .call_tool("echo", echo("x"))
        .await
        .expect_err("bad id");
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
    assert_eq!(server.rpc_methods(), ["initialize"]);
}

#[tokio::test]
async fn listings_that_do_not_end_are_stopped() {
    let server = TestServer::start(Script::new().repeated_cursor(true));
    let err = client(&server).list_tools().await.expect_err("loop");
    assert!(matches!(err, Error::RepeatedCursor { .. }), "{err:?}");

    let server = TestServer::start(Script::new().endless_listing(true));
    let mut client = Client::new(config(&server).max_pages(5));
    let err = client.list_tools().await.expect_err("endless");
    assert!(
        matches!(err, Error::TooManyPages { pages: 5, .. }),
        "{err:?}"
    );
    let pages = server
        .rpc_methods()
        .iter()
        .filter(|m| *m == "tools/list")
        .count();
    assert_eq!(pages, 5);
}

#[tokio::test]
async fn a_refused_connection_is_unreachable() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr").port()
    };
    let mut client = Client::connect(&format!("http://127.0.0.1:{port}/mcp")).expect("valid URL");
    let recorder = Recorder::default();
    client.set_observer(recorder.clone());
    let err = client.probe().await.expect_err("nobody listens");
    match &err {
        Error::Unreachable { method, reason, .. } => {
            assert_eq!(*method, "initialize");
            assert!(!reason.is_empty());
        }
        other => panic!("{other:?}"),
    }
    eprintln!("{err}");
    let legs = recorder.legs();
    assert_eq!(legs.len(), 1);
    assert_eq!(legs[0].end, LegEnd::Transport(TransportErrorKind::Connect));
}

#[tokio::test]
async fn a_session_lost_twice_in_one_operation_is_expired() {
    let server = Arc::new(TestServer::start(
        Script::new().delay("notifications/initialized", Duration::from_millis(300)),
    ));
    let mut client = client(&server);
    client.probe().await.expect("first handshake");
    server.expire_sessions();
    // Expire the re-established session too, while its notifications/initialized is delayed.
    let expirer = {
        let server = Arc::clone(&server);
        std::thread::spawn(move || {
            let end = Instant::now() + Duration::from_secs(5);
            while Instant::now() < end {
                let inits = server
                    .rpc_methods()
                    .iter()
                    .filter(|m| *m == "initialize")
                    .count();
                if inits == 2 {
                    std::thread::sleep(Duration::from_millis(50));
                    server.expire_sessions();
                    return true;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            false
        })
    };
    let err = client
        .call_tool("echo", echo("x"))
        .await
        .expect_err("lost twice");
    assert!(expirer.join().expect("expirer"));
    assert!(matches!(err, Error::SessionExpired { .. }), "{err:?}");
    assert_eq!(
        server.rpc_methods(),
        [
            "initialize",
            "notifications/initialized",
            "tools/call",
            "initialize",
            "notifications/initialized"
        ]
    );
}

#[tokio::test]
async fn a_stream_closed_after_priming_is_resumed_with_a_get() {
    let server = TestServer::start(on_call(Hostile::CloseAfterPriming { retry_ms: 150 }));
    let mut client = client(&server);
    let recorder = Recorder::default();
    client.set_observer(recorder.clone());
    let result = client
        .call_tool("echo", echo("resumed"))
        .await
        .expect("resumed");
    assert_eq!(result.text(), "resumed");
    assert_eq!(
        server.rpc_methods(),
        [
            "initialize",
            "notifications/initialized",
            "tools/call",
            "GET"
        ]
    );
    let get = server.requests().pop().expect("the GET");
    assert_eq!(get.header("last-event-id"), Some("ev-1"));
    let legs = recorder.legs();
    let resume = legs.last().expect("reported");
    assert_eq!(resume.kind, mcp_proto::LegKind::Resume);
    assert_eq!(resume.end, LegEnd::Status(200));
    // The driver waited the server's retry before resuming.
    let call = server
        .requests()
        .into_iter()
        .find(|r| r.rpc_method.as_deref() == Some("tools/call"))
        .expect("the call");
    assert!(get.received_at - call.received_at >= Duration::from_millis(150));
}
