//! Reading rules (REFERENCE.md §3), headers, ids, sessions and every error kind, driven through
//! the public API on a manual clock.

mod support;

use http::header::ACCEPT;
use mcp_proto::driver::LegKind;
use mcp_proto::driver::{Input, LegStatus, Output, TransportError};
use mcp_proto::{
    Action, Budget, Clock, Content, Error, Event, ManualClock, Resolution, Session, SessionConfig,
    TransportErrorKind,
};
use serde_json::{Map, Value, json};
use support::{Answer, PollPastReports, drive, healthy, secs};

const SERVER: &str = "mcp.example.test:8080";

fn config() -> SessionConfig {
    SessionConfig::new("http://mcp.example.test:8080/mcp")
        .unwrap()
        .with_protocol_version(mcp_proto::ProtocolVersion::LATEST)
}

/// A tool call whose `tools/call` leg is answered by `work`.
fn call_with(work: Answer) -> support::Run {
    call_with_config(config(), work)
}

fn call_with_config(config: SessionConfig, work: Answer) -> support::Run {
    let clock = ManualClock::new();
    let mut session = Session::new(config);
    let op = session.call_tool("echo", Map::new(), clock.now());
    drive(&mut session, op, &clock, &[], move |kind, _| match kind {
        LegKind::CallTool => work.clone(),
        other => healthy(other),
    })
}

fn malformed_detail(run: &support::Run) -> String {
    match &run.result {
        Err(Error::Malformed { server, detail, .. }) => {
            assert_eq!(server, SERVER);
            detail.clone()
        }
        other => panic!("expected a malformed-answer error, got {other:?}"),
    }
}

fn sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|e| format!("event: message\ndata: {e}\n\n"))
        .collect()
}

fn answer_for(id: i64, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

#[test]
fn a_status_of_300_or_more_is_an_error_and_the_body_is_not_read() {
    for status in [302, 400, 403, 500, 503] {
        let run = call_with(Answer::Raw(status, Some("text/html"), b"<html>".to_vec()));
        match run.result {
            Err(Error::HttpStatus {
                server,
                status: got,
                method,
            }) => {
                assert_eq!(
                    (server.as_str(), got, method),
                    (SERVER, status, "tools/call")
                );
            }
            other => panic!("status {status}: {other:?}"),
        }
    }
}

#[test]
fn a_401_without_oauth_configured_asks_for_authorization_and_sends_nothing_more() {
    let run = call_with(Answer::Raw(401, Some("text/html"), b"<html>".to_vec()));
    match run.result {
        Err(Error::AuthorizationRequired {
            server,
            method,
            issuer,
            ..
        }) => assert_eq!(
            (server.as_str(), method, issuer),
            (SERVER, "tools/call", None)
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(run.legs.len(), 3, "nothing is sent after the refused call");
}

#[test]
fn media_types_are_compared_without_parameters_or_case() {
    let answer = serde_json::to_vec(&answer_for(2, json!({"content": []}))).unwrap();
    for content_type in [
        "application/json; charset=utf-8",
        "Application/JSON",
        " application/json ",
    ] {
        let run = call_with(Answer::Raw(200, Some(content_type), answer.clone()));
        assert!(run.result.is_ok(), "{content_type}: {:?}", run.result);
    }
    // A missing content type counts as JSON.
    assert!(call_with(Answer::Raw(200, None, answer)).result.is_ok());
}

#[test]
fn other_media_types_are_unsupported() {
    let run = call_with(Answer::Raw(
        200,
        Some("text/html; charset=utf-8"),
        b"<html/>".to_vec(),
    ));
    match run.result {
        Err(Error::UnsupportedContentType {
            content_type,
            server,
            ..
        }) => {
            assert_eq!(content_type, "text/html");
            assert_eq!(server, SERVER);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_empty_body_is_malformed_and_names_the_status() {
    let run = call_with(Answer::Raw(200, Some("application/json"), Vec::new()));
    assert_eq!(malformed_detail(&run), "empty body with status 200");
    // A 202 to a request (not a notification) has no answer in it either.
    let run = call_with(Answer::Accepted);
    assert_eq!(malformed_detail(&run), "empty body with status 202");
}

#[test]
fn a_body_that_is_not_json_or_not_an_object_is_malformed() {
    let run = call_with(Answer::Raw(
        200,
        Some("application/json"),
        b"not json at all".to_vec(),
    ));
    assert!(malformed_detail(&run).starts_with("the body is not JSON"));
    let run = call_with(Answer::Json(json!([1, 2])));
    assert_eq!(malformed_detail(&run), "the answer is not a JSON object");
    let run = call_with(Answer::Raw(
        200,
        Some("application/json"),
        b"{\"a\":\"\xff\"}".to_vec(),
    ));
    assert!(malformed_detail(&run).starts_with("the body is not JSON"));
}

#[test]
fn an_error_is_read_before_a_result() {
    let run = call_with(Answer::Json(json!({
        "jsonrpc": "2.0", "id": 2, "result": {"content": []},
        "error": {"code": -32602, "message": "unknown tool: echo", "data": {"hint": 1}}
    })));
    assert_eq!(
        run.result.unwrap_err(),
        Error::JsonRpc {
            server: SERVER.into(),
            method: "tools/call",
            code: -32602,
            message: "unknown tool: echo".into(),
            data: Some(json!({"hint": 1})),
        }
    );
}

#[test]
fn odd_error_envelopes_are_still_errors() {
    for id in [json!(null), json!("server-error")] {
        let run = call_with(Answer::Json(
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": "x"}}),
        ));
        match run.result {
            Err(Error::JsonRpc { code, message, .. }) => {
                assert_eq!((code, message.as_str()), (0, "no message"));
            }
            other => panic!("{other:?}"),
        }
    }
    let run = call_with(Answer::Json(
        json!({"jsonrpc": "2.0", "error": {"code": -32700, "message": "parse"}}),
    ));
    assert!(matches!(
        run.result,
        Err(Error::JsonRpc { code: -32700, .. })
    ));
}

#[test]
fn neither_a_result_nor_an_error_is_malformed() {
    let run = call_with(Answer::Json(json!({"jsonrpc": "2.0", "id": 3})));
    assert_eq!(malformed_detail(&run), "neither a result nor an error");
    let run = call_with(Answer::Json(
        json!({"jsonrpc": "2.0", "id": 2, "result": "text"}),
    ));
    assert_eq!(malformed_detail(&run), "neither a result nor an error");
}

#[test]
fn a_result_json_reads_but_a_client_cannot_is_malformed_and_says_why() {
    // A number out of range: JSON, so the message is read, but no result can hold it, in a
    // tool's result (read straight) as in any other.
    for body in [
        r#"{"jsonrpc":"2.0","id":2,"result":{"content":[],"x":1e400}}"#,
        r#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"t","n":-1e999}]}}"#,
    ] {
        let run = call_with(Answer::Raw(
            200,
            Some("application/json"),
            body.as_bytes().to_vec(),
        ));
        let detail = malformed_detail(&run);
        assert!(
            detail.starts_with("the result cannot be read: number out of range"),
            "{body}: {detail}"
        );
    }
}

#[test]
fn an_answer_with_another_id_is_refused() {
    let run = call_with(Answer::Json(answer_for(1003, json!({"content": []}))));
    assert_eq!(
        malformed_detail(&run),
        "the answer's id 1003 does not match the request's id 2"
    );
    let run = call_with(Answer::Json(
        json!({"jsonrpc": "2.0", "id": "2", "result": {}}),
    ));
    assert!(malformed_detail(&run).contains("does not match"));
}

#[test]
fn a_tool_failure_is_data_not_an_error() {
    let run = call_with(Answer::Result(json!({
        "content": [{"type": "text", "text": "the tool failed"}], "isError": true
    })));
    let result = run.result.unwrap().into_call().unwrap();
    assert!(result.is_error);
    assert_eq!(result.text(), "the tool failed");
}

#[test]
fn results_keep_structured_content_and_unknown_blocks() {
    let run = call_with(Answer::Result(json!({
        "content": [{"type": "text", "text": "3"}, {"type": "resource_link", "uri": "file:///a", "name": "a"}],
        "structuredContent": {"sum": 3}
    })));
    let result = run.result.unwrap().into_call().unwrap();
    assert_eq!(result.structured_content, Some(json!({"sum": 3})));
    assert!(matches!(&result.content[1], Content::Other(v) if v["uri"] == "file:///a"));
}

#[test]
fn sse_notifications_before_the_answer_become_events() {
    let stream = sse(&[
        json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1, "total": 2}}),
        json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}}),
        answer_for(2, json!({"content": [{"type": "text", "text": "done"}]})),
    ]);
    let run = call_with(Answer::Sse(format!(
        "id: 0\ndata:\n\n: keepalive\n{stream}"
    )));
    assert_eq!(run.result.unwrap().into_call().unwrap().text(), "done");
    assert_eq!(run.events.len(), 2);
    let Event::Notification(progress) = &run.events[0] else {
        panic!("{:?}", run.events[0])
    };
    let progress = progress.progress().unwrap();
    assert_eq!((progress.progress, progress.total), (1.0, Some(2.0)));
}

#[test]
fn an_sse_stream_without_an_answer_is_malformed() {
    let run = call_with(Answer::Sse(": only a comment\n\ndata:\n\n".into()));
    assert_eq!(
        malformed_detail(&run),
        "the event stream carried no message"
    );
    let note = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {}});
    let run = call_with(Answer::Sse(sse(&[note])));
    assert_eq!(
        malformed_detail(&run),
        "the event stream carried no response to the request"
    );
    let run = call_with(Answer::Sse("data: not json\n\n".into()));
    assert!(malformed_detail(&run).starts_with("an event's data is not JSON"));
}

#[test]
fn reading_stops_as_soon_as_the_answer_is_in() {
    let clock = ManualClock::new();
    let mut session = Session::new(config());
    // Establish the session first.
    let op = session.probe(clock.now());
    assert!(
        drive(&mut session, op, &clock, &[], |k, _| healthy(k))
            .result
            .is_ok()
    );
    let mut op = session.call_tool("echo", Map::new(), clock.now());
    let Output::Transmit(leg) = op.poll_past_reports(clock.now()) else {
        panic!()
    };
    let id = serde_json::from_slice::<Value>(leg.request.body()).unwrap()["id"].clone();
    let mut headers = http::HeaderMap::new();
    headers.insert("content-type", "text/event-stream".parse().unwrap());
    assert_eq!(
        op.handle_input(
            Input::Head {
                leg: leg.id,
                status: http::StatusCode::OK,
                headers: &headers
            },
            clock.now()
        ),
        LegStatus::ReadMore
    );
    let answer = format!(
        "data: {}\n\n: keepalive\n",
        json!({"jsonrpc": "2.0", "id": id, "result": {"content": []}})
    );
    assert_eq!(
        op.handle_input(
            Input::Chunk {
                leg: leg.id,
                bytes: answer.as_bytes()
            },
            clock.now()
        ),
        LegStatus::Complete
    );
    // The stream stays open, the driver stops reading: the result is ready without an end of body.
    assert!(matches!(
        op.poll_past_reports(clock.now()),
        Output::Done(Ok(_))
    ));
    assert!(matches!(
        op.poll_past_reports(clock.now()),
        Output::Done(Err(Error::AlreadyFinished))
    ));
}

#[test]
fn an_answer_larger_than_the_cap_is_refused() {
    let three_mib = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{{\"pad\":\"{}\"}}}}",
        "x".repeat(3 << 20)
    );
    let run = call_with(Answer::Raw(
        200,
        Some("application/json"),
        three_mib.clone().into_bytes(),
    ));
    assert_eq!(
        run.result.unwrap_err(),
        Error::AnswerTooLarge {
            server: SERVER.into(),
            method: "tools/call",
            limit: 2 << 20
        }
    );
    let run = call_with(Answer::Sse(format!("data: {three_mib}\n\n")));
    assert!(matches!(
        run.result,
        Err(Error::AnswerTooLarge { limit: 2097152, .. })
    ));
    // The cap is configurable.
    let run = call_with_config(
        config().with_body_cap(4 << 20),
        Answer::Raw(200, Some("application/json"), three_mib.into_bytes()),
    );
    assert!(run.result.is_ok(), "{:?}", run.result);
    let small = config().with_body_cap(16);
    let run = call_with_config(small, Answer::Result(json!({"content": []})));
    assert!(matches!(
        run.result,
        Err(Error::AnswerTooLarge {
            limit: 16,
            method: "initialize",
            ..
        })
    ));
}

#[test]
fn a_declared_length_over_the_cap_is_refused_before_reading() {
    let clock = ManualClock::new();
    let mut session = Session::new(config());
    let mut op = session.probe(clock.now());
    let Output::Transmit(leg) = op.poll_past_reports(clock.now()) else {
        panic!()
    };
    let mut headers = http::HeaderMap::new();
    headers.insert("content-type", "application/json".parse().unwrap());
    headers.insert("content-length", "3145728".parse().unwrap());
    assert_eq!(
        op.handle_input(
            Input::Head {
                leg: leg.id,
                status: http::StatusCode::OK,
                headers: &headers
            },
            clock.now()
        ),
        LegStatus::Complete
    );
    assert!(matches!(
        op.poll_past_reports(clock.now()),
        Output::Done(Err(Error::AnswerTooLarge { .. }))
    ));
}

#[test]
fn every_leg_carries_the_transport_headers() {
    let clock = ManualClock::new();
    let mut session = Session::new(config().with_header("Authorization", "Bearer t").unwrap());
    let op = session.call_tool("echo", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], |k, _| healthy(k));
    for leg in &run.legs {
        let h = leg.request.headers();
        assert_eq!(leg.request.method(), http::Method::POST);
        assert_eq!(leg.request.uri(), "http://mcp.example.test:8080/mcp");
        assert_eq!(h[ACCEPT], "application/json, text/event-stream");
        assert_eq!(h["content-type"], "application/json");
        assert_eq!(h["authorization"], "Bearer t");
    }
    let [init, initialized, call] = &run.legs[..] else {
        panic!()
    };
    assert!(init.request.headers().get("mcp-session-id").is_none());
    assert!(init.request.headers().get("mcp-protocol-version").is_none());
    for leg in [initialized, call] {
        assert_eq!(leg.request.headers()["mcp-session-id"], "session-1");
        assert_eq!(leg.request.headers()["mcp-protocol-version"], "2025-06-18");
    }
    assert_eq!(init.body["params"]["protocolVersion"], "2025-11-25");
    assert_eq!(init.body["params"]["capabilities"], json!({}));
    assert_eq!(
        initialized.body,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized", "params": {}})
    );
    assert_eq!(
        call.body["params"],
        json!({"name": "echo", "arguments": {}})
    );
}

#[test]
fn protocol_headers_cannot_be_overridden_by_extra_headers() {
    for name in [
        "Accept",
        "content-type",
        "Mcp-Session-Id",
        "MCP-Protocol-Version",
    ] {
        assert!(
            matches!(
                config().with_header(name, "x"),
                Err(Error::InvalidHeader { .. })
            ),
            "{name}"
        );
    }
    assert!(matches!(
        config().with_header("X-Ok", "a\nb"),
        Err(Error::InvalidHeader { .. })
    ));
    assert!(matches!(
        SessionConfig::new("ftp://x/mcp"),
        Err(Error::InvalidUrl { .. })
    ));
    assert!(matches!(
        SessionConfig::new("not a url"),
        Err(Error::InvalidUrl { .. })
    ));
}

#[test]
fn request_ids_are_unique_across_operations() {
    let clock = ManualClock::new();
    let mut session = Session::new(config());
    let mut ids = Vec::new();
    for _ in 0..3 {
        let op = session.call_tool("echo", Map::new(), clock.now());
        let run = drive(&mut session, op, &clock, &[], |k, _| healthy(k));
        ids.extend(
            run.legs
                .iter()
                .filter_map(|l| l.body.get("id").and_then(Value::as_i64)),
        );
    }
    assert_eq!(ids, [1, 2, 3, 4]);
}

#[test]
fn an_expired_session_is_reinitialized_inside_the_same_budget() {
    let clock = ManualClock::new();
    let mut session = Session::new(config());
    let op = session.probe(clock.now());
    assert!(
        drive(&mut session, op, &clock, &[], |k, _| healthy(k))
            .result
            .is_ok()
    );

    let op = session.call_tool("echo", Map::new(), clock.now());
    let run = drive(
        &mut session,
        op,
        &clock,
        &[3.0, 2.0, 1.0, 1.0],
        |kind, leg| match (kind, leg) {
            (LegKind::CallTool, 1) => Answer::Raw(404, None, Vec::new()),
            (other, _) => healthy(other),
        },
    );
    assert_eq!(
        run.methods(),
        [
            "tools/call",
            "initialize",
            "notifications/initialized",
            "tools/call"
        ]
    );
    assert_eq!(run.grant_secs(), [20, 17, 15, 14]);
    assert!(run.result.is_ok());
    assert!(
        run.legs[1]
            .request
            .headers()
            .get("mcp-session-id")
            .is_none()
    );
}

#[test]
fn a_session_lost_twice_in_one_operation_is_given_up() {
    let clock = ManualClock::new();
    let mut session = Session::new(config());
    let op = session.probe(clock.now());
    assert!(
        drive(&mut session, op, &clock, &[], |k, _| healthy(k))
            .result
            .is_ok()
    );
    let op = session.call_tool("echo", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], |kind, _| match kind {
        LegKind::CallTool => Answer::Raw(404, None, Vec::new()),
        other => healthy(other),
    });
    assert_eq!(run.methods().len(), 4);
    assert!(matches!(run.result, Err(Error::SessionExpired { .. })));
    // A 404 on initialize itself (no session id sent) is not a lost session: the URL
    // speaks neither transport (the GET for HTTP+SSE got a 404 too).
    let mut fresh = Session::new(config());
    let op = fresh.probe(clock.now());
    let run = drive(&mut fresh, op, &clock, &[], |_, _| {
        Answer::Raw(404, None, Vec::new())
    });
    assert!(
        matches!(
            run.result,
            Err(Error::NoTransport {
                initialize: 404,
                ..
            })
        ),
        "{:?}",
        run.result
    );
}

#[test]
fn a_session_id_that_is_not_visible_ascii_is_never_echoed() {
    let clock = ManualClock::new();
    for bad in [&b"abc def"[..], b"a\tb", &[b'x'; 257], b"caf\xc3\xa9"] {
        let mut session = Session::new(config());
        let mut op = session.probe(clock.now());
        let Output::Transmit(leg) = op.poll_past_reports(clock.now()) else {
            panic!()
        };
        let mut headers = http::HeaderMap::new();
        headers.insert(
            "mcp-session-id",
            http::HeaderValue::from_bytes(bad).unwrap(),
        );
        assert_eq!(
            op.handle_input(
                Input::Head {
                    leg: leg.id,
                    status: http::StatusCode::OK,
                    headers: &headers
                },
                clock.now()
            ),
            LegStatus::Complete
        );
        match op.poll_past_reports(clock.now()) {
            Output::Done(Err(Error::Malformed { detail, .. })) => {
                assert!(detail.contains("session id"))
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn an_unsupported_protocol_version_ends_the_operation() {
    let clock = ManualClock::new();
    let mut session = Session::new(config());
    let op = session.probe(clock.now());
    let run = drive(&mut session, op, &clock, &[], |kind, _| match kind {
        LegKind::Initialize => {
            Answer::Result(json!({"protocolVersion": "2024-11-05", "serverInfo": {"name": "old"}}))
        }
        other => healthy(other),
    });
    assert_eq!(run.methods(), ["initialize"]);
    assert_eq!(
        run.result.unwrap_err(),
        Error::UnsupportedProtocolVersion {
            server: SERVER.into(),
            version: "2024-11-05".into()
        }
    );
    assert!(session.info().is_none(), "nothing is committed");
}

#[test]
fn a_probe_reports_the_version_and_the_server() {
    let clock = ManualClock::new();
    let mut session = Session::new(config());
    let op = session.probe(clock.now());
    let run = drive(&mut session, op, &clock, &[], |kind, _| match kind {
        LegKind::Initialize => Answer::Result(json!({
            "protocolVersion": "2025-03-26",
            "serverInfo": {"name": format!("n{}", "a".repeat(300)), "version": "9"}
        })),
        other => healthy(other),
    });
    let info = run.result.unwrap().into_probe().unwrap();
    assert_eq!(info.protocol_version.as_str(), "2025-03-26");
    assert_eq!(
        info.server.name.chars().count(),
        101,
        "cut at 100 plus an ellipsis"
    );
    assert_eq!(info.session_id.as_deref(), Some("session-1"));
    // On a live session a probe is one ping.
    let op = session.probe(clock.now());
    let run = drive(&mut session, op, &clock, &[], |k, _| healthy(k));
    assert_eq!(run.methods(), ["ping"]);
    assert!(run.result.is_ok());
}

#[test]
fn the_listing_sends_cursors_and_ends_at_fifty_pages() {
    let clock = ManualClock::new();
    let mut session = Session::new(config());
    let op = session.list_tools(clock.now());
    let run = drive(&mut session, op, &clock, &[], |kind, _| match kind {
        LegKind::List {
            of: mcp_proto::ListKind::Tools,
            page,
        } => Answer::Result(
            json!({"tools": [{"name": format!("t{page}")}, "not an object"], "nextCursor": format!("c{page}")}),
        ),
        other => healthy(other),
    });
    assert_eq!(
        run.result.as_ref().unwrap_err(),
        &Error::TooManyPages {
            server: SERVER.into(),
            pages: 50
        }
    );
    let pages: Vec<_> = run
        .legs
        .iter()
        .filter(|l| l.kind.label() == "tools/list")
        .collect();
    assert_eq!(pages.len(), 50, "a 51st request is never sent");
    assert_eq!(pages[0].body["params"], json!({}));
    assert_eq!(pages[1].body["params"], json!({"cursor": "c1"}));
}

#[test]
fn a_repeated_cursor_ends_the_walk() {
    let clock = ManualClock::new();
    let mut session = Session::new(config());
    let op = session.list_tools(clock.now());
    let run = drive(&mut session, op, &clock, &[], |kind, _| match kind {
        LegKind::List { .. } => Answer::Result(json!({"tools": [], "nextCursor": "same"})),
        other => healthy(other),
    });
    assert_eq!(
        run.result.as_ref().unwrap_err(),
        &Error::RepeatedCursor {
            server: SERVER.into(),
            cursor: "same".into()
        }
    );
    assert_eq!(run.methods().len(), 4);
}

#[test]
fn an_empty_cursor_or_missing_tools_array() {
    let clock = ManualClock::new();
    let mut session = Session::new(config());
    let op = session.list_tools(clock.now());
    let run = drive(&mut session, op, &clock, &[], |kind, _| match kind {
        LegKind::List { .. } => Answer::Result(json!({"tools": [{"name": "a"}], "nextCursor": ""})),
        other => healthy(other),
    });
    assert_eq!(
        run.result
            .unwrap()
            .into_listing::<mcp_proto::Tool>()
            .unwrap()
            .len(),
        1
    );
    let op = session.list_tools(clock.now());
    let run = drive(&mut session, op, &clock, &[], |_, _| {
        Answer::Result(json!({"items": []}))
    });
    assert_eq!(malformed_detail(&run), "the result has no \"tools\" array");
}

#[test]
fn transport_failures_and_stalls_have_their_own_kinds() {
    let run = call_with(Answer::Transport(TransportError::new(
        TransportErrorKind::Connect,
        "connection refused",
    )));
    assert_eq!(
        run.result.unwrap_err(),
        Error::Unreachable {
            server: SERVER.into(),
            method: "tools/call",
            reason: "connection refused".into()
        }
    );
    let run = call_with(Answer::Transport(TransportError::new(
        TransportErrorKind::TimedOut,
        "timeout",
    )));
    assert!(
        matches!(run.result, Err(Error::LegTimedOut { method: "tools/call", grant, .. }) if grant == secs(20.0))
    );
    let run = call_with(Answer::Stall);
    let err = run.result.unwrap_err();
    assert!(matches!(err, Error::LegTimedOut { .. }));
    assert_eq!(
        err.to_string(),
        "MCP server \"mcp.example.test:8080\" did not finish answering tools/call within the 20 s granted to that leg"
    );
    assert_eq!(
        run.elapsed,
        secs(20.0),
        "the stall ends exactly at the grant"
    );
}

#[test]
fn cancelling_ends_the_operation_with_its_own_error() {
    let clock = ManualClock::new();
    let mut session = Session::new(config());
    let mut op = session.call_tool("echo", Map::new(), clock.now());
    let Output::Transmit(_leg) = op.poll_past_reports(clock.now()) else {
        panic!()
    };
    op.handle_input(Input::Cancel, clock.now());
    match op.poll_past_reports(clock.now()) {
        Output::Done(Err(err @ Error::Cancelled { .. })) => {
            assert_eq!(
                err.to_string(),
                "the initialize request to MCP server \"mcp.example.test:8080\" was cancelled by the caller"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(session.info().is_none());
}

#[test]
fn server_text_in_errors_is_clipped_and_folded() {
    let long = format!("line\r\nbreak\u{1b}{}", "y".repeat(400));
    let run = call_with(Answer::Json(
        json!({"jsonrpc": "2.0", "id": 2, "error": {"code": 1, "message": long}}),
    ));
    let Err(Error::JsonRpc { message, .. }) = run.result else {
        panic!()
    };
    assert!(message.starts_with("line break y"));
    assert_eq!(message.chars().count(), 201);
    assert!(!message.chars().any(char::is_control));
}

#[test]
fn the_budget_error_names_the_budget_and_the_server() {
    let clock = ManualClock::new();
    let mut session = Session::new(
        config()
            .with_budget(Budget::from_duration(secs(2.5)))
            .with_resolution(Resolution::MILLISECOND),
    );
    let op = session.start(
        Action::List(mcp_proto::ListKind::Tools),
        mcp_proto::OperationDeadline::start(
            clock.now(),
            Budget::from_duration(secs(2.5)),
            Resolution::MILLISECOND,
        ),
    );
    let run = drive(&mut session, op, &clock, &[2.6], |k, _| healthy(k));
    assert_eq!(run.legs.len(), 1);
    assert_eq!(
        run.result.unwrap_err().to_string(),
        "The 2.5-second operation budget for MCP server \"mcp.example.test:8080\" ran out before the notifications/initialized request was sent, so the server was not asked. This is the budget the caller set, not a server that did not answer."
    );
}
