//! A tool's result held to its `outputSchema`: checked when the session read a listing that
//! declares one (the default), after a listing walked inside the same budget when the caller
//! asks for every result to be checked, never when it asks for none; a result that breaks the
//! promise is an error naming the server, the tool, the place and the rule, the result inside.

mod support;

use mcp_proto::driver::LegKind;
use mcp_proto::schema::{OutputProblem, OutputValidation, SchemaError};
use mcp_proto::{Clock, Error, Fault, ManualClock, ProtocolVersion, Session, SessionConfig};
use serde_json::{Map, Value, json};
use support::{Answer, drive};

/// A weather tool as the Python SDK derives it from a return annotation (2020-12, no
/// `$schema`), and server-everything's `get-structured-content` (draft-07, `$schema` set).
fn listing() -> Answer {
    Answer::Result(json!({"tools": [
        {"name": "weather", "inputSchema": {"type": "object"}, "outputSchema": {
            "type": "object",
            "properties": {"temperature": {"type": "number"}, "conditions": {"type": "string"}},
            "required": ["temperature", "conditions"],
        }},
        {"name": "get-structured-content", "inputSchema": {"type": "object"}, "outputSchema": {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {"temperature": {"type": "number"}, "humidity": {"type": "number"}},
            "required": ["temperature", "humidity"],
            "additionalProperties": false,
        }},
        {"name": "remote", "inputSchema": {"type": "object"},
            "outputSchema": {"$ref": "https://schemas.example.test/weather.json"}},
        {"name": "echo", "inputSchema": {"type": "object"}},
    ]}))
}

fn server(structured: Value) -> impl FnMut(LegKind, u32) -> Answer {
    move |kind, _| match kind {
        LegKind::List { .. } => listing(),
        LegKind::CallTool => Answer::Result(json!({
            "content": [{"type": "text", "text": structured.to_string()}],
            "structuredContent": structured,
        })),
        other => support::healthy(other),
    }
}

fn config(validation: OutputValidation) -> SessionConfig {
    support::config().with_output_validation(validation)
}

/// A session that walked the listing already (with `validation` configured).
fn listed(validation: OutputValidation, clock: &ManualClock) -> Session {
    let mut session = Session::new(config(validation));
    let op = session.list_tools(clock.now());
    let run = drive(&mut session, op, clock, &[], server(json!({})));
    assert!(run.result.is_ok(), "{:?}", run.result);
    session
}

fn call(session: &mut Session, clock: &ManualClock, tool: &str, answer: Value) -> support::Run {
    let op = session.call_tool(tool, Map::new(), clock.now());
    drive(session, op, clock, &[], server(answer))
}

#[test]
fn a_result_that_matches_its_listed_schema_is_handed_over() {
    let clock = ManualClock::new();
    let mut session = listed(OutputValidation::default(), &clock);
    let run = call(
        &mut session,
        &clock,
        "weather",
        json!({"temperature": 21.5, "conditions": "sunny"}),
    );
    // Checked without a leg more: the listing was read already.
    assert_eq!(run.methods(), ["tools/call"]);
    let result = run.result.unwrap().into_call().unwrap();
    assert_eq!(result.structured_content.unwrap()["conditions"], "sunny");
}

#[test]
fn a_mismatch_names_the_server_the_tool_the_place_and_the_rule_and_keeps_the_result() {
    let clock = ManualClock::new();
    let mut session = listed(OutputValidation::WhenListed, &clock);
    let sent = json!({"temperature": "warm", "conditions": "sunny"});
    let run = call(&mut session, &clock, "weather", sent.clone());
    let error = run.result.unwrap_err();
    let message = error.to_string();
    let Error::OutputInvalid {
        server,
        tool,
        problem,
        result,
    } = &error
    else {
        panic!("not an output error: {error:?}")
    };
    assert_eq!(server, "mcp.example.test:8080");
    assert_eq!(tool, "weather");
    let OutputProblem::Mismatch(mismatch) = problem.as_ref() else {
        panic!("{problem:?}")
    };
    assert_eq!(mismatch.instance_path, "/temperature");
    assert_eq!(mismatch.rule, "type");
    assert_eq!(result.structured_content.as_ref(), Some(&sent));
    assert_eq!(error.fault(), Fault::Server);
    assert_eq!(error.kind(), "output_invalid");
    assert!(
        message.contains("\"mcp.example.test:8080\"")
            && message.contains("\"weather\"")
            && message.contains("/temperature (type)"),
        "{message}"
    );
}

#[test]
fn a_draft_07_schema_is_held_to_its_own_dialect() {
    let clock = ManualClock::new();
    let mut session = listed(OutputValidation::WhenListed, &clock);
    let good = json!({"temperature": 22.5, "humidity": 65});
    let run = call(&mut session, &clock, "get-structured-content", good);
    assert!(run.result.is_ok(), "{:?}", run.result);
    let extra = json!({"temperature": 22.5, "humidity": 65, "wind": 3});
    let run = call(&mut session, &clock, "get-structured-content", extra);
    let Err(Error::OutputInvalid { problem, .. }) = run.result else {
        panic!("{:?}", run.result)
    };
    let OutputProblem::Mismatch(mismatch) = *problem else {
        panic!("{problem:?}")
    };
    assert_eq!(mismatch.rule, "additionalProperties");
}

#[test]
fn a_missing_structured_content_is_refused_unless_the_tool_failed() {
    let clock = ManualClock::new();
    let mut session = listed(OutputValidation::WhenListed, &clock);
    let op = session.call_tool("weather", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], |kind, _| match kind {
        LegKind::CallTool => Answer::Result(json!({"content": [{"type": "text", "text": "21"}]})),
        other => support::healthy(other),
    });
    let Err(Error::OutputInvalid { problem, .. }) = run.result else {
        panic!("{:?}", run.result)
    };
    assert_eq!(*problem, OutputProblem::Missing);
    let op = session.call_tool("weather", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], |kind, _| match kind {
        LegKind::CallTool => Answer::Result(json!({
            "content": [{"type": "text", "text": "no such city"}], "isError": true,
        })),
        other => support::healthy(other),
    });
    assert!(run.result.unwrap().into_call().unwrap().is_error);
}

#[test]
fn a_network_reference_is_never_fetched_and_refuses_the_result() {
    let clock = ManualClock::new();
    let mut session = listed(OutputValidation::WhenListed, &clock);
    let run = call(&mut session, &clock, "remote", json!({"temperature": 1}));
    let Err(Error::OutputInvalid { problem, .. }) = &run.result else {
        panic!("{:?}", run.result)
    };
    let OutputProblem::Schema(SchemaError::ExternalRef { reference }) = problem.as_ref() else {
        panic!("{problem:?}")
    };
    assert_eq!(reference, "https://schemas.example.test/weather.json");
    // Nothing but the call went out: the reference was not followed.
    assert_eq!(run.methods(), ["tools/call"]);
}

#[test]
fn a_tool_the_listing_declared_nothing_for_and_a_session_without_a_listing_pass_unchecked() {
    let clock = ManualClock::new();
    let mut session = listed(OutputValidation::WhenListed, &clock);
    let run = call(&mut session, &clock, "echo", json!("anything"));
    assert!(run.result.is_ok(), "{:?}", run.result);

    let mut session = Session::new(config(OutputValidation::WhenListed));
    let run = call(
        &mut session,
        &clock,
        "weather",
        json!({"temperature": "warm"}),
    );
    assert!(run.result.is_ok(), "{:?}", run.result);
    assert_eq!(
        run.methods(),
        ["initialize", "notifications/initialized", "tools/call"]
    );
}

#[test]
fn always_walks_the_listing_first_inside_the_budget_then_checks() {
    let clock = ManualClock::new();
    let mut session = Session::new(config(OutputValidation::Always));
    let run = call(
        &mut session,
        &clock,
        "weather",
        json!({"temperature": "warm"}),
    );
    assert_eq!(
        run.methods(),
        [
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/call"
        ]
    );
    assert!(
        matches!(run.result, Err(Error::OutputInvalid { .. })),
        "{:?}",
        run.result
    );
    // One budget for all four legs: each is granted what the ones before left.
    let grants = run.grants();
    assert!(
        grants.windows(2).all(|pair| pair[1] <= pair[0]),
        "{grants:?}"
    );
    // The listing is the session's now: the next call is one leg.
    let run = call(
        &mut session,
        &clock,
        "weather",
        json!({"temperature": 3, "conditions": "fog"}),
    );
    assert_eq!(run.methods(), ["tools/call"]);
    assert!(run.result.is_ok(), "{:?}", run.result);
}

#[test]
fn always_walks_the_listing_in_the_modern_era_too() {
    let clock = ManualClock::new();
    let config = SessionConfig::new("http://mcp.example.test:8080/mcp")
        .unwrap()
        .with_protocol_version(ProtocolVersion::MODERN)
        .with_output_validation(OutputValidation::Always);
    let mut session = Session::new(config);
    let run = call(
        &mut session,
        &clock,
        "weather",
        json!({"temperature": "warm"}),
    );
    assert_eq!(run.methods(), ["tools/list", "tools/call"]);
    assert!(
        matches!(run.result, Err(Error::OutputInvalid { .. })),
        "{:?}",
        run.result
    );
}

#[test]
fn off_hands_over_whatever_the_server_sent() {
    let clock = ManualClock::new();
    let mut session = listed(OutputValidation::Off, &clock);
    let run = call(
        &mut session,
        &clock,
        "weather",
        json!({"temperature": "warm"}),
    );
    let result = run.result.unwrap().into_call().unwrap();
    assert_eq!(
        result.structured_content,
        Some(json!({"temperature": "warm"}))
    );
}

#[test]
fn a_result_reads_into_the_caller_s_type_or_says_why_not() {
    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Weather {
        temperature: f64,
        conditions: String,
    }
    let clock = ManualClock::new();
    let mut session = listed(OutputValidation::WhenListed, &clock);
    let run = call(
        &mut session,
        &clock,
        "weather",
        json!({"temperature": 4, "conditions": "rain"}),
    );
    let result = run.result.unwrap().into_call().unwrap();
    let weather: Weather = result.structured().unwrap();
    assert_eq!(
        weather,
        Weather {
            temperature: 4.0,
            conditions: "rain".into()
        }
    );
    #[derive(serde::Deserialize, Debug)]
    struct Wrong {
        #[allow(dead_code)]
        wind: u32,
    }
    let error = result.structured::<Wrong>().unwrap_err();
    assert!(error.to_string().contains("wind"), "{error}");
}

#[test]
fn a_server_that_says_its_tools_changed_has_its_schemas_listed_anew() {
    let clock = ManualClock::new();
    let mut session = listed(OutputValidation::Always, &clock);
    // The call's answer (an event stream) says the tools changed before the result.
    let changed = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
    let result = json!({"jsonrpc": "2.0", "id": 3, "result": {
        "content": [], "structuredContent": {"temperature": 3, "conditions": "fog"},
    }});
    let op = session.call_tool("weather", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], |kind, _| match kind {
        LegKind::CallTool => Answer::Sse(format!("data: {changed}\n\ndata: {result}\n\n")),
        other => support::healthy(other),
    });
    assert_eq!(run.legs[0].body["id"], 3, "the answer is to this call");
    assert!(run.result.is_ok(), "{:?}", run.result);
    // The schemas the old listing declared are not trusted any more: the next call lists the
    // tools again first, inside its budget, and checks against what they declare now.
    let run = call(
        &mut session,
        &clock,
        "weather",
        json!({"temperature": "warm", "conditions": "fog"}),
    );
    assert_eq!(run.methods(), ["tools/list", "tools/call"]);
    assert!(
        matches!(run.result, Err(Error::OutputInvalid { .. })),
        "{:?}",
        run.result
    );
}

#[test]
fn a_check_that_would_outlast_the_budget_is_not_run_and_blames_the_budget() {
    // At millisecond resolution a result that comes 2 ms before the budget's end may be
    // checked for 3 ms (what is left, and the one unit the budget may overrun by): 100,000
    // readings held to `type` take more than that, so the result is handed back unchecked in
    // the error, the budget's fault. The same result early in the budget is checked and passes.
    let readings: Vec<u32> = (0..100_000).collect();
    let schema = json!({"type": "object",
        "properties": {"readings": {"type": "array", "items": {"type": "number"}}}});
    let answer = json!({"readings": readings});
    let serve = |answer: Value| {
        let schema = schema.clone();
        move |kind, _| match kind {
            LegKind::List { .. } => Answer::Result(json!({"tools": [
                {"name": "meter", "inputSchema": {"type": "object"}, "outputSchema": schema}]})),
            LegKind::CallTool => Answer::Result(json!({
                "content": [], "structuredContent": answer})),
            other => support::healthy(other),
        }
    };
    let config = support::config()
        .with_budget(mcp_proto::Budget::from_secs(1))
        .with_resolution(mcp_proto::Resolution::MILLISECOND);
    let clock = ManualClock::new();
    let mut session = Session::new(config);
    let op = session.list_tools(clock.now());
    assert!(
        drive(&mut session, op, &clock, &[], serve(answer.clone()))
            .result
            .is_ok()
    );

    let op = session.call_tool("meter", Map::new(), clock.now());
    let late = drive(&mut session, op, &clock, &[0.998], serve(answer.clone()));
    let error = late.result.unwrap_err();
    let Error::OutputInvalid {
        problem, result, ..
    } = &error
    else {
        panic!("not an output error: {error:?}")
    };
    assert_eq!(
        **problem,
        OutputProblem::Unchecked {
            left: std::time::Duration::from_millis(3)
        }
    );
    assert_eq!(result.structured_content.as_ref(), Some(&answer));
    assert_eq!(error.fault(), Fault::Budget);
    assert!(
        error
            .to_string()
            .contains("could not be checked in the 0.003 s left"),
        "{error}"
    );

    let op = session.call_tool("meter", Map::new(), clock.now());
    let early = drive(&mut session, op, &clock, &[0.1], serve(answer.clone()));
    assert!(early.result.is_ok(), "{:?}", early.result);
}
