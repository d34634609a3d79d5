//! Era detection (the default: no version pinned): the modern request goes first; a refusal no
//! modern server would give means a legacy server, and the handshake follows inside the same
//! budget; the session remembers the era; a remembered era that fails is detected again, once
//! per operation, never in a loop.

mod support;

use mcp_proto::driver::LegKind;
use mcp_proto::{Clock, Era, Error, ManualClock, ProtocolVersion, Session, SessionConfig};
use serde_json::{Map, Value, json};
use support::{Answer, drive, first_then_healthy, healthy, refused};

fn detecting() -> Session {
    Session::new(SessionConfig::new("http://mcp.example.test:8080/mcp").unwrap())
}

fn error_400(code: i64, data: Value) -> Answer {
    refused(code, "refused", Some(data))
}

/// What the TypeScript SDK's legacy server answers a request without a session.
fn no_session() -> Answer {
    refused(-32000, "Bad Request: No valid session ID provided", None)
}

fn is_modern(run: &support::Run, leg: usize) -> bool {
    run.legs[leg].request.headers().contains_key("mcp-method")
}

#[test]
fn a_modern_server_answers_the_first_request_in_one_leg() {
    let clock = ManualClock::new();
    let mut session = detecting();
    assert_eq!(session.era(), None);
    let op = session.call_tool("echo", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], |kind, _| healthy(kind));
    assert!(run.result.is_ok(), "{:?}", run.result);
    assert_eq!(run.methods(), ["tools/call"]);
    assert!(is_modern(&run, 0));
    assert_eq!(
        run.legs[0].body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(session.era(), Some(Era::Modern));
    assert!(session.info().is_none());
}

#[test]
fn a_legacy_server_gets_the_handshake_inside_the_same_budget() {
    for refusal in [
        no_session(),
        Answer::Raw(400, Some("text/plain"), b"Bad Request".to_vec()),
        Answer::Raw(400, None, Vec::new()),
        Answer::Raw(405, Some("text/plain"), b"Method Not Allowed".to_vec()),
    ] {
        let clock = ManualClock::new();
        let mut session = detecting();
        let op = session.call_tool("echo", Map::new(), clock.now());
        // 20 s: the refused modern attempt takes 2.5 s, the handshake 4 s, the call the rest.
        let run = drive(
            &mut session,
            op,
            &clock,
            &[2.5, 3.0, 1.0],
            first_then_healthy(refusal.clone()),
        );
        assert!(run.result.is_ok(), "{refusal:?}: {:?}", run.result);
        assert_eq!(
            run.methods(),
            [
                "tools/call",
                "initialize",
                "notifications/initialized",
                "tools/call"
            ],
            "{refusal:?}"
        );
        assert!(is_modern(&run, 0) && !is_modern(&run, 1) && !is_modern(&run, 3));
        assert_eq!(
            run.grant_secs(),
            [20, 18, 15, 14],
            "one budget across both eras"
        );
        assert_eq!(session.era(), Some(Era::Legacy));
        assert!(session.info().is_some());

        // The era is remembered: the next operation reuses the live legacy session.
        let op = session.call_tool("echo", Map::new(), clock.now());
        let run = drive(&mut session, op, &clock, &[], |kind, _| healthy(kind));
        assert!(run.result.is_ok());
        assert_eq!(run.methods(), ["tools/call"]);
        assert!(!is_modern(&run, 0));
        assert_eq!(run.legs[0].request.headers()["mcp-session-id"], "session-1");
    }
}

#[test]
fn a_fallback_the_budget_cannot_pay_for_is_refused_before_it_is_sent() {
    let clock = ManualClock::new();
    let mut session = detecting();
    let op = session.call_tool("echo", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[20.0], |_, _| no_session());
    let Err(Error::BudgetExhausted { method, leg, .. }) = run.result else {
        panic!("{:?}", run.result)
    };
    assert_eq!((method, leg), ("initialize", 2));
    assert_eq!(run.legs.len(), 1, "nothing sent after the budget ran out");
    assert_eq!(
        session.era(),
        Some(Era::Legacy),
        "the era was learnt all the same"
    );
}

#[test]
fn a_modern_error_is_not_a_legacy_server() {
    let clock = ManualClock::new();
    let mut session = detecting();
    let op = session.call_tool("echo", Map::new(), clock.now());
    let missing = json!({"requiredCapabilities": {"sampling": {}}});
    let run = drive(&mut session, op, &clock, &[], |_, _| {
        error_400(-32021, missing.clone())
    });
    let Err(Error::JsonRpc { code, .. }) = run.result else {
        panic!("{:?}", run.result)
    };
    assert_eq!(code, -32021);
    assert_eq!(run.legs.len(), 1, "no fallback");
}

#[test]
fn a_version_error_naming_only_legacy_versions_leads_to_the_handshake() {
    let clock = ManualClock::new();
    let mut session = detecting();
    let op = session.call_tool("echo", Map::new(), clock.now());
    let legacy_only = json!({"supported": ["2025-11-25"], "requested": "2026-07-28"});
    let run = drive(
        &mut session,
        op,
        &clock,
        &[],
        first_then_healthy(error_400(-32022, legacy_only)),
    );
    assert!(run.result.is_ok(), "{:?}", run.result);
    assert_eq!(
        run.methods(),
        [
            "tools/call",
            "initialize",
            "notifications/initialized",
            "tools/call"
        ]
    );
    assert_eq!(session.era(), Some(Era::Legacy));
}

#[test]
fn a_probe_answered_method_not_found_falls_back_to_the_handshake() {
    let clock = ManualClock::new();
    let mut session = detecting();
    let op = session.probe(clock.now());
    let not_found = Answer::Json(json!({"jsonrpc": "2.0", "id": 1,
        "error": {"code": -32601, "message": "Method not found"}}));
    let run = drive(&mut session, op, &clock, &[], first_then_healthy(not_found));
    let info = run.result.clone().unwrap().into_probe().unwrap();
    assert_eq!(info.protocol_version, ProtocolVersion::V2025_06_18);
    assert_eq!(
        run.methods(),
        ["server/discover", "initialize", "notifications/initialized"]
    );
}

#[test]
fn a_legacy_server_that_became_modern_is_detected_again() {
    let clock = ManualClock::new();
    let mut session = detecting();
    // First learnt as legacy.
    let op = session.call_tool("echo", Map::new(), clock.now());
    let run = drive(
        &mut session,
        op,
        &clock,
        &[],
        first_then_healthy(no_session()),
    );
    assert!(run.result.is_ok());
    assert_eq!(session.era(), Some(Era::Legacy));

    // The server is upgraded: the legacy request is refused the modern way.
    let op = session.call_tool("echo", Map::new(), clock.now());
    let mismatch = refused(-32020, "Header mismatch: Mcp-Method missing", None);
    let run = drive(&mut session, op, &clock, &[], first_then_healthy(mismatch));
    assert!(run.result.is_ok(), "{:?}", run.result);
    assert_eq!(run.methods(), ["tools/call", "tools/call"]);
    assert!(!is_modern(&run, 0) && is_modern(&run, 1));
    assert_eq!(session.era(), Some(Era::Modern));
    assert!(session.info().is_none(), "the legacy session is forgotten");
}

#[test]
fn an_era_changes_at_most_once_per_operation() {
    let clock = ManualClock::new();
    let mut session = detecting();
    // A server that refuses everything: the modern request without a modern error, then the
    // handshake with a modern error. The operation ends instead of going round.
    let op = session.call_tool("echo", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], |kind, _| match kind {
        LegKind::Initialize => error_400(
            -32022,
            json!({"supported": ["2026-07-28"], "requested": "2025-11-25"}),
        ),
        _ => no_session(),
    });
    assert!(run.result.is_err());
    assert_eq!(run.methods(), ["tools/call", "initialize"]);
}

#[test]
fn a_pinned_modern_version_never_falls_back() {
    let clock = ManualClock::new();
    let config = SessionConfig::new("http://mcp.example.test:8080/mcp")
        .unwrap()
        .with_protocol_version(ProtocolVersion::MODERN);
    let mut session = Session::new(config);
    let op = session.call_tool("echo", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], |_, _| {
        Answer::Raw(400, Some("text/plain"), b"Bad Request".to_vec())
    });
    assert!(
        matches!(run.result, Err(Error::HttpStatus { status: 400, .. })),
        "{:?}",
        run.result
    );
    assert_eq!(run.legs.len(), 1);
}

#[test]
fn a_pinned_legacy_version_never_tries_the_modern_request() {
    let clock = ManualClock::new();
    let config = SessionConfig::new("http://mcp.example.test:8080/mcp")
        .unwrap()
        .with_protocol_version(ProtocolVersion::V2025_06_18);
    let mut session = Session::new(config);
    let op = session.call_tool("echo", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], |kind, _| healthy(kind));
    assert!(run.result.is_ok());
    assert_eq!(
        run.methods(),
        ["initialize", "notifications/initialized", "tools/call"]
    );
    assert_eq!(run.legs[0].body["params"]["protocolVersion"], "2025-06-18");
}

#[test]
fn a_json_rpc_error_under_404_is_a_modern_refusal_not_a_legacy_server() {
    let clock = ManualClock::new();
    let mut session = detecting();
    let read = mcp_proto::request::ReadResource::new("file:///nowhere");
    let op = session.request(read, clock.now());
    let body = json!({"jsonrpc": "2.0", "id": 1,
        "error": {"code": -32602, "message": "Resource not found"}});
    let run = drive(&mut session, op, &clock, &[], |_, _| {
        Answer::Raw(404, Some("application/json"), body.to_string().into_bytes())
    });
    assert!(
        matches!(run.result, Err(Error::JsonRpc { code: -32602, .. })),
        "{:?}",
        run.result
    );
    assert_eq!(run.methods(), ["resources/read"], "no fallback");
}
