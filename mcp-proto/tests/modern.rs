//! The modern era (2026-07-28): no handshake and no session, every request carries its version
//! and the client's capabilities in `_meta` and mirrors its version, method and name in
//! headers; a tool call is one leg; a `-32022` moves the operation to a version both speak,
//! once, inside the same budget.

mod support;

use mcp_proto::driver::Input;
use mcp_proto::driver::LegKind;
use mcp_proto::message::accept_elicitation_with_defaults;
use mcp_proto::{Clock, Error, ManualClock, ProtocolVersion, Session, SessionConfig};
use serde_json::{Map, json};
use support::{Answer, PollPastReports, drive, refused};

fn modern() -> SessionConfig {
    SessionConfig::new("http://mcp.example.test:8080/mcp")
        .unwrap()
        .with_client_info("tester", "9.9")
        .with_protocol_version(ProtocolVersion::MODERN)
}

fn unsupported(supported: &[&str]) -> Answer {
    let data = json!({"supported": supported, "requested": "2026-07-28"});
    refused(-32022, "Unsupported protocol version", Some(data))
}

fn called() -> Answer {
    Answer::Result(json!({"resultType": "complete", "content": [{"type": "text", "text": "hi"}]}))
}

#[test]
fn a_tool_call_is_one_leg_that_says_everything_about_itself() {
    let clock = ManualClock::new();
    let config = modern().respond_to("elicitation/create", |p| {
        Ok(accept_elicitation_with_defaults(p))
    });
    let mut session = Session::new(config);
    let mut arguments = Map::new();
    arguments.insert("text".into(), json!("hi"));
    let op = session.call_tool("echo", arguments, clock.now());
    let run = drive(&mut session, op, &clock, &[0.5], |_, _| called());
    assert_eq!(
        run.result.clone().unwrap().into_call().unwrap().text(),
        "hi"
    );
    assert_eq!(run.methods(), ["tools/call"], "no handshake");
    assert_eq!(run.grant_secs(), [20]);
    let leg = &run.legs[0];
    let headers = leg.request.headers();
    assert_eq!(headers["mcp-protocol-version"], "2026-07-28");
    assert_eq!(headers["mcp-method"], "tools/call");
    assert_eq!(headers["mcp-name"], "echo");
    assert!(headers.get("mcp-session-id").is_none());
    assert_eq!(leg.body["params"]["arguments"], json!({"text": "hi"}));
    assert_eq!(
        leg.body["params"]["_meta"],
        json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
            "io.modelcontextprotocol/clientInfo": {"name": "tester", "version": "9.9"},
        })
    );
    assert!(session.info().is_none(), "the modern era has no session");
}

#[test]
fn names_a_header_cannot_carry_go_out_in_base64() {
    let clock = ManualClock::new();
    let mut session = Session::new(modern());
    let op = session.call_tool("grüßen", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], |_, _| called());
    assert!(run.result.is_ok());
    assert_eq!(
        run.legs[0].request.headers()["mcp-name"],
        "=?base64?Z3LDvMOfZW4=?="
    );
}

#[test]
fn an_unsupported_version_is_retried_once_with_one_both_speak_inside_the_budget() {
    let clock = ManualClock::new();
    let mut session = Session::new(modern());
    let op = session.call_tool("echo", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[3.0, 1.0], |_, leg| {
        if leg == 1 {
            unsupported(&["2026-07-28", "2025-11-25"])
        } else {
            called()
        }
    });
    assert!(run.result.is_ok(), "{:?}", run.result);
    assert_eq!(run.methods(), ["tools/call", "tools/call"]);
    assert_eq!(
        run.grant_secs(),
        [20, 17],
        "the retry spends the same budget"
    );
    assert_ne!(run.legs[0].body["id"], run.legs[1].body["id"], "a new id");
    assert_eq!(
        run.legs[1].request.headers()["mcp-protocol-version"],
        "2026-07-28"
    );

    // Refused again: the server's error, not a loop.
    let op = session.call_tool("echo", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], |_, _| {
        unsupported(&["2026-07-28"])
    });
    assert!(
        matches!(run.result, Err(Error::JsonRpc { code: -32022, .. })),
        "{:?}",
        run.result
    );
    assert_eq!(run.legs.len(), 2);

    // Nothing modern in common: no retry.
    let op = session.call_tool("echo", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], |_, _| {
        unsupported(&["2025-11-25", "1999-01-01"])
    });
    assert!(matches!(
        run.result,
        Err(Error::JsonRpc { code: -32022, .. })
    ));
    assert_eq!(run.legs.len(), 1);
}

#[test]
fn a_refusal_without_a_json_rpc_error_is_reported_by_its_status() {
    let clock = ManualClock::new();
    let mut session = Session::new(modern());
    for answer in [
        Answer::Raw(400, Some("text/plain"), b"Bad Request: no session".to_vec()),
        Answer::Raw(400, Some("application/json"), b"{\"oops\": 1}".to_vec()),
        Answer::Raw(404, Some("application/json"), b"not json".to_vec()),
    ] {
        let op = session.call_tool("echo", Map::new(), clock.now());
        let run = drive(&mut session, op, &clock, &[], move |_, _| answer.clone());
        assert!(
            matches!(
                run.result,
                Err(Error::HttpStatus {
                    status: 400 | 404,
                    ..
                })
            ),
            "{:?}",
            run.result
        );
    }
    // A modern 404 with a JSON-RPC error says what it is.
    let body = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "Method not found"}});
    let op = session.call_tool("echo", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], move |_, _| {
        Answer::Raw(404, Some("application/json"), body.to_string().into_bytes())
    });
    assert!(matches!(
        run.result,
        Err(Error::JsonRpc {
            code: -32601,
            method: "tools/call",
            ..
        })
    ));
}

#[test]
fn a_probe_is_server_discover_and_a_close_sends_nothing() {
    let clock = ManualClock::new();
    let mut session = Session::new(modern());
    let op = session.probe(clock.now());
    let run = drive(&mut session, op, &clock, &[], |_, _| {
        Answer::Result(json!({
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}},
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern", "version": "2"}}
        }))
    });
    assert_eq!(run.methods(), ["server/discover"]);
    assert_eq!(
        run.legs[0].request.headers()["mcp-method"],
        "server/discover"
    );
    assert!(run.legs[0].request.headers().get("mcp-name").is_none());
    let info = run.result.unwrap().into_probe().unwrap();
    assert_eq!(info.protocol_version, ProtocolVersion::V2026_07_28);
    assert_eq!(
        (info.server.name.as_str(), info.server.version.as_str()),
        ("modern", "2")
    );
    assert_eq!(info.capabilities, json!({"tools": {}}));
    assert_eq!(info.session_id, None);

    let op = session.close(clock.now());
    let run = drive(&mut session, op, &clock, &[], |_, _| {
        unreachable!("nothing is sent")
    });
    assert!(run.legs.is_empty());
    assert!(run.result.is_ok());
}

#[test]
fn a_listing_pages_with_its_metadata_on_every_page() {
    let clock = ManualClock::new();
    let mut session = Session::new(modern());
    let op = session.list_tools(clock.now());
    let run = drive(
        &mut session,
        op,
        &clock,
        &[1.0, 1.0],
        |kind, _| match kind {
            LegKind::List {
                of: mcp_proto::ListKind::Tools,
                page: 1,
            } => Answer::Result(
                json!({"resultType": "complete", "tools": [{"name": "a"}], "nextCursor": "c2", "ttlMs": 1000, "cacheScope": "public"}),
            ),
            _ => Answer::Result(json!({"tools": [{"name": "b"}]})),
        },
    );
    let tools = run
        .result
        .clone()
        .unwrap()
        .into_listing::<mcp_proto::Tool>()
        .unwrap();
    assert_eq!(tools.len(), 2);
    assert_eq!(run.grant_secs(), [20, 19]);
    assert_eq!(run.legs[1].body["params"]["cursor"], "c2");
    for leg in &run.legs {
        assert_eq!(leg.request.headers()["mcp-method"], "tools/list");
        assert_eq!(
            leg.body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
    }
}

fn input_required(state: Option<&str>) -> Answer {
    let mut result = json!({"resultType": "input_required", "inputRequests": {
        "confirm": {"method": "elicitation/create", "params": {
            "message": "Sure?", "requestedSchema": {"type": "object", "properties": {
                "confirmed": {"type": "boolean", "default": true}}}}}}});
    if let Some(state) = state {
        result["requestState"] = json!(state);
    }
    Answer::Result(result)
}

#[test]
fn a_request_for_more_input_is_answered_and_the_request_retried_in_the_same_budget() {
    let clock = ManualClock::new();
    let config = modern().respond_to("elicitation/create", |p| {
        Ok(accept_elicitation_with_defaults(p))
    });
    let mut session = Session::new(config);
    let state = "opaque \u{2603} state, \"quoted\" / not to be touched";
    let op = session.call_tool("ask", Map::new(), clock.now());
    let run = drive(
        &mut session,
        op,
        &clock,
        &[2.0, 1.0],
        move |_, leg| match leg {
            1 => input_required(Some(state)),
            _ => called(),
        },
    );
    assert!(run.result.is_ok(), "{:?}", run.result);
    assert_eq!(run.methods(), ["tools/call", "tools/call"]);
    assert_eq!(
        run.grant_secs(),
        [20, 18],
        "the round spends the same budget"
    );
    let (first, retry) = (&run.legs[0].body, &run.legs[1].body);
    assert_ne!(first["id"], retry["id"], "a new id");
    assert!(first["params"].get("inputResponses").is_none());
    assert_eq!(
        retry["params"]["inputResponses"],
        json!({"confirm": {"action": "accept", "content": {"confirmed": true}}})
    );
    assert_eq!(
        retry["params"]["requestState"],
        json!(state),
        "echoed exactly"
    );
    assert_eq!(retry["params"]["name"], "ask");
    assert!(
        matches!(&run.events[..], [mcp_proto::Event::ServerRequest { method, .. }] if method == "elicitation/create"),
        "{:?}",
        run.events
    );

    // No state from the server: none in the retry.
    let op = session.call_tool("ask", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], |_, leg| match leg {
        1 => input_required(None),
        _ => called(),
    });
    assert!(run.result.is_ok());
    assert!(run.legs[1].body["params"].get("requestState").is_none());
    assert!(run.legs[1].body["params"].get("inputResponses").is_some());

    // A server that never stops asking is asked a bounded number of times.
    let op = session.call_tool("ask", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], |_, _| {
        input_required(Some("again"))
    });
    let Err(Error::Malformed { detail, .. }) = run.result else {
        panic!("{:?}", run.result)
    };
    assert!(detail.contains("asked for more input"), "{detail}");
    assert_eq!(run.legs.len(), 9);
}

#[test]
fn a_round_that_spends_the_budget_leaves_the_next_one_refused_unsent() {
    let clock = ManualClock::new();
    let config = modern().respond_to("elicitation/create", |p| {
        Ok(accept_elicitation_with_defaults(p))
    });
    let mut session = Session::new(config);
    let op = session.call_tool("ask", Map::new(), clock.now());
    // The question comes back at the end of the 20 s budget.
    let run = drive(&mut session, op, &clock, &[20.0], |_, _| {
        input_required(Some("s"))
    });
    let Err(Error::BudgetExhausted { method, leg, .. }) = run.result else {
        panic!("{:?}", run.result)
    };
    assert_eq!((method, leg), ("tools/call", 2));
    assert_eq!(run.legs.len(), 1, "the round with the answer was not sent");
}

#[test]
fn a_request_for_input_nobody_answers_is_declined_or_ends_the_operation_saying_which() {
    let clock = ManualClock::new();
    let mut session = Session::new(modern());
    // An elicitation without a responder: the spec's refusal, `decline`, and the retry.
    let op = session.call_tool("ask", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], |_, n| match n {
        1 => input_required(None),
        _ => called(),
    });
    assert!(run.result.is_ok(), "{:?}", run.result);
    assert_eq!(
        run.legs[1].body["params"]["inputResponses"],
        json!({"confirm": {"action": "decline"}})
    );

    // Sampling has no refusal: the operation ends, naming it, and nothing is retried.
    let op = session.call_tool("ask", Map::new(), clock.now());
    let sampling = Answer::Result(json!({"resultType": "input_required", "inputRequests": {
        "draft": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 10}}}}));
    let run = drive(&mut session, op, &clock, &[], move |_, _| sampling.clone());
    let Err(Error::Malformed { detail, .. }) = run.result else {
        panic!("{:?}", run.result)
    };
    assert!(detail.contains("sampling/createMessage"), "{detail}");
    assert_eq!(run.legs.len(), 1, "not retried without the answer");
}

#[test]
fn an_initialize_answer_naming_a_modern_version_is_not_spoken() {
    let clock = ManualClock::new();
    let config = SessionConfig::new("http://mcp.example.test/mcp")
        .unwrap()
        .with_protocol_version(ProtocolVersion::LATEST);
    let mut session = Session::new(config);
    let op = session.probe(clock.now());
    let run = drive(&mut session, op, &clock, &[], |_, _| {
        Answer::Result(json!({"protocolVersion": "2026-07-28", "capabilities": {},
            "serverInfo": {"name": "s", "version": "1"}}))
    });
    assert!(
        matches!(run.result, Err(Error::UnsupportedProtocolVersion { .. })),
        "{:?}",
        run.result
    );
}

#[test]
fn annotated_arguments_are_mirrored_in_headers_and_invalid_tools_left_out() {
    let clock = ManualClock::new();
    let mut session = Session::new(modern());
    let op = session.list_tools(clock.now());
    let run = drive(&mut session, op, &clock, &[], |_, _| {
        Answer::Result(json!({"tools": [
            {"name": "sql", "inputSchema": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "priority": {"type": "integer", "x-mcp-header": "Priority"},
                "query": {"type": "string"}}}},
            {"name": "broken", "inputSchema": {"type": "object", "properties": {
                "a": {"type": "string", "x-mcp-header": "Same"},
                "b": {"type": "string", "x-mcp-header": "same"}}}}
        ]}))
    });
    let tools = run
        .result
        .clone()
        .unwrap()
        .into_listing::<mcp_proto::Tool>()
        .unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["sql"], "the invalid tool is left out");
    assert!(
        matches!(&run.events[..], [mcp_proto::Event::ToolRejected { name, reason }]
            if name == "broken" && reason.contains("twice")),
        "{:?}",
        run.events
    );

    let mut arguments = Map::new();
    arguments.insert("region".into(), json!("Zürich"));
    arguments.insert("priority".into(), json!(7));
    arguments.insert("query".into(), json!("SELECT 1"));
    let op = session.call_tool("sql", arguments, clock.now());
    let run = drive(&mut session, op, &clock, &[], |_, _| called());
    assert!(run.result.is_ok());
    let headers = run.legs[0].request.headers();
    assert_eq!(headers["mcp-param-region"], "=?base64?WsO8cmljaA==?=");
    assert_eq!(headers["mcp-param-priority"], "7");
    assert!(headers.get("mcp-param-query").is_none());
}

#[test]
fn a_broken_answer_stream_is_sent_again_as_a_new_request() {
    let clock = ManualClock::new();
    let mut session = Session::new(modern());
    let op = session.call_tool("echo", Map::new(), clock.now());
    // The first stream carries a notification and an event id, then ends without the answer.
    let broken = "id: 1\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n";
    let run = drive(&mut session, op, &clock, &[1.0], |_, n| {
        if n == 1 {
            Answer::Sse(broken.to_owned())
        } else {
            called()
        }
    });
    assert!(run.result.is_ok(), "{:?}", run.result);
    assert_eq!(
        run.methods(),
        ["tools/call", "tools/call"],
        "no resumption GET"
    );
    assert_ne!(run.legs[0].body["id"], run.legs[1].body["id"]);
    assert!(run.legs[1].request.headers().get("last-event-id").is_none());
    assert_eq!(run.grant_secs(), [20, 19], "the same budget");
}

#[test]
fn a_request_whose_streams_keep_breaking_is_sent_again_at_most_twice() {
    let clock = ManualClock::new();
    let mut session = Session::new(modern());
    let op = session.call_tool("echo", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], |_, _| {
        Answer::Sse(": nothing\n\n".to_owned())
    });
    assert!(
        matches!(run.result, Err(Error::Malformed { .. })),
        "{:?}",
        run.result
    );
    assert_eq!(run.legs.len(), 1 + mcp_proto::driver::MAX_REISSUES as usize);
}

#[test]
fn a_header_mismatch_refreshes_the_listing_and_calls_once_more() {
    let clock = ManualClock::new();
    let mut session = Session::new(modern());
    let mut arguments = Map::new();
    arguments.insert("region".into(), json!("eu-west"));
    let op = session.call_tool("deploy", arguments.clone(), clock.now());
    let mismatch = refused(-32020, "Header mismatch: Mcp-Param-Region missing", None);
    let listing = json!({"tools": [{"name": "deploy", "inputSchema": {"type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}}]});
    let run = drive(&mut session, op, &clock, &[], |kind, n| match (kind, n) {
        (LegKind::CallTool, 1) => mismatch.clone(),
        (LegKind::List { .. }, _) => Answer::Result(listing.clone()),
        _ => called(),
    });
    assert!(run.result.is_ok(), "{:?}", run.result);
    assert_eq!(run.methods(), ["tools/call", "tools/list", "tools/call"]);
    assert!(
        run.legs[0]
            .request
            .headers()
            .get("mcp-param-region")
            .is_none()
    );
    assert_eq!(run.legs[2].request.headers()["mcp-param-region"], "eu-west");

    // A second mismatch in one operation is the server's answer.
    let op = session.call_tool("deploy", arguments, clock.now());
    let run = drive(&mut session, op, &clock, &[], |kind, _| match kind {
        LegKind::CallTool => mismatch.clone(),
        _ => Answer::Result(listing.clone()),
    });
    assert!(
        matches!(run.result, Err(Error::JsonRpc { code: -32020, .. })),
        "{:?}",
        run.result
    );
    assert_eq!(run.methods(), ["tools/call", "tools/list", "tools/call"]);
}

#[test]
fn a_cancelled_modern_call_sends_no_notice() {
    let clock = ManualClock::new();
    let mut session = Session::new(modern().with_cancel_notice(true));
    let mut op = session.call_tool("echo", Map::new(), clock.now());
    let mcp_proto::driver::Output::Transmit(leg) = op.poll_past_reports(clock.now()) else {
        panic!("the call goes out first")
    };
    assert_eq!(leg.kind, LegKind::CallTool);
    op.handle_input(Input::Cancel, clock.now());
    // Closing the call's stream is the cancellation: straight to the result.
    assert!(matches!(
        op.poll_past_reports(clock.now()),
        mcp_proto::driver::Output::Done(Err(Error::Cancelled { .. }))
    ));
}

#[test]
fn a_one_request_method_takes_an_input_round_only_when_its_row_allows_and_mirrors_its_name() {
    use mcp_proto::request::{Complete, CompletionRef, GetPrompt};
    let clock = ManualClock::new();
    let config = modern().respond_to("elicitation/create", |p| {
        Ok(accept_elicitation_with_defaults(p))
    });
    let mut session = Session::new(config);
    let got = json!({"resultType": "complete", "messages": []});
    let op = session.request(GetPrompt::new("greet", Map::new()), clock.now());
    let run = drive(&mut session, op, &clock, &[], |_, leg| match leg {
        1 => input_required(Some("s")),
        _ => Answer::Result(got.clone()),
    });
    let answer = run.result.clone().map(mcp_proto::Outcome::into_answer);
    assert!(
        matches!(&answer, Ok(Some(a)) if a.result["messages"] == json!([])),
        "{answer:?}"
    );
    assert_eq!(run.methods(), ["prompts/get", "prompts/get"]);
    assert_eq!(run.legs[0].request.headers()["mcp-name"], "greet");
    assert_eq!(run.legs[1].body["params"]["requestState"], "s");

    // The spec allows no input round on a completion: the first one is the server's error.
    let complete = Complete::new(CompletionRef::Prompt("greet".into()), "who", "");
    let op = session.request(complete, clock.now());
    let run = drive(&mut session, op, &clock, &[], |_, _| input_required(None));
    let Err(Error::Malformed { method, detail, .. }) = &run.result else {
        panic!("{:?}", run.result)
    };
    assert_eq!(*method, "completion/complete");
    assert!(detail.contains("request for input"), "{detail}");
    assert_eq!(run.methods(), ["completion/complete"]);
    assert!(run.legs[0].request.headers().get("mcp-name").is_none());
}
