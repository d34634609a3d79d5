//! Structured results (issue 46) on every driver, against the test server's scripted tools
//! ([`Script::tool`]): a result that breaks its tool's `outputSchema`, one without
//! `structuredContent`, a schema that refers to the network, a schema whose `$ref`s cost 2^40
//! evaluations if followed naively (refused by the work bound, a mismatch of rule `work`), and `call_tool_as::<T>` reading a result into a type or
//! saying why it cannot. Results are checked with `OutputValidation::Always`: the listing is
//! walked first, inside the call's budget.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use mcp_proto::request::Unreadable;
use mcp_proto::schema::{OutputProblem, OutputValidation, SchemaError};
use mcp_proto::{Error, Fault};
use mcp_testkit::{Script, TestServer};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::support::{Driver, args, config};

/// The budget of these calls: generous, and the bound the hostile schema must end within.
const BUDGET: Duration = Duration::from_secs(5);

/// A weather tool's schema, as the Python SDK derives it from a return annotation.
fn weather_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "temperature": {"type": "number"},
            "conditions": {"type": "string"},
            "humidity": {"type": "number"},
        },
        "required": ["temperature", "conditions", "humidity"],
    })
}

/// A tool result carrying `structured` (and its JSON as text, as SDKs send it).
fn structured_result(structured: Value) -> Value {
    json!({
        "content": [{"type": "text", "text": structured.to_string()}],
        "structuredContent": structured,
    })
}

/// A client of `server` that checks every result (the listing walked first).
fn checking_client<D: Driver>(server: &TestServer) -> D {
    D::new(config(server, BUDGET).with_output_validation(OutputValidation::Always))
}

/// What a weather tool returns.
#[derive(Debug, Deserialize, PartialEq)]
struct Weather {
    temperature: f64,
    conditions: String,
    humidity: f64,
}

/// A type the weather tool's result is not.
#[derive(Debug, Deserialize)]
#[allow(dead_code)]
struct Wind {
    speed: f64,
}

pub(crate) fn a_result_breaking_its_schema_is_output_invalid_naming_place_and_rule<D: Driver>() {
    let server = TestServer::start(Script::new().tool(
        "weather",
        Some(weather_schema()),
        structured_result(json!({"temperature": "warm", "conditions": "sunny", "humidity": 40})),
    ));
    let mut client = checking_client::<D>(&server);
    let err = client.call_tool("weather", args(&[])).unwrap_err();
    assert_eq!(err.kind(), "output_invalid");
    assert_eq!(err.fault(), Fault::Server);
    let Error::OutputInvalid {
        tool,
        problem,
        result,
        ..
    } = err
    else {
        panic!("not OutputInvalid: {err:?}");
    };
    assert_eq!(tool, "weather");
    let OutputProblem::Mismatch(mismatch) = *problem else {
        panic!("not a mismatch: {problem:?}");
    };
    assert_eq!(mismatch.instance_path, "/temperature");
    assert_eq!(mismatch.rule, "type");
    // The result is still there, as the server sent it.
    let structured = result
        .structured_content
        .expect("the result's structuredContent");
    assert_eq!(structured["temperature"], "warm");
    // Always: the listing was walked inside the call, before it.
    assert_eq!(
        server.rpc_methods(),
        [
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/call"
        ]
    );
}

pub(crate) fn a_result_without_the_structured_content_its_tool_declares_is_missing<D: Driver>() {
    let server = TestServer::start(Script::new().tool(
        "weather",
        Some(weather_schema()),
        json!({"content": [{"type": "text", "text": "21.5 degrees, sunny"}]}),
    ));
    let mut client = checking_client::<D>(&server);
    match client.call_tool("weather", args(&[])) {
        Err(Error::OutputInvalid {
            problem, result, ..
        }) => {
            assert_eq!(*problem, OutputProblem::Missing);
            assert_eq!(result.text(), "21.5 degrees, sunny");
        }
        other => panic!("not OutputInvalid(Missing): {other:?}"),
    }
}

pub(crate) fn a_schema_referring_to_the_network_is_refused_and_never_fetched<D: Driver>() {
    // A reference the test can watch: a listener on loopback that must accept nothing.
    let watched = TcpListener::bind("127.0.0.1:0").expect("a loopback listener");
    watched
        .set_nonblocking(true)
        .expect("a non-blocking listener");
    let local = format!("http://{}/s.json", watched.local_addr().unwrap());
    let server = TestServer::start(
        Script::new()
            .tool(
                "remote",
                Some(json!({"$ref": "https://example.com/s.json"})),
                structured_result(json!({"temperature": 1})),
            )
            .tool(
                "nearby",
                Some(json!({"$ref": local})),
                structured_result(json!({"temperature": 1})),
            ),
    );
    let mut client = checking_client::<D>(&server);
    for (tool, host) in [("remote", "example.com"), ("nearby", "127.0.0.1")] {
        match client.call_tool(tool, args(&[])) {
            Err(Error::OutputInvalid { problem, .. }) => match *problem {
                OutputProblem::Schema(SchemaError::ExternalRef { reference }) => {
                    assert!(reference.contains(host), "{tool}: {reference}");
                }
                other => panic!("{tool}: not ExternalRef: {other:?}"),
            },
            other => panic!("{tool}: not OutputInvalid: {other:?}"),
        }
    }
    match watched.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("the referenced URL was fetched: {other:?}"),
    }
}

/// A schema within every size bound whose `$defs` chain doubles the work with each link:
/// `dN` is `allOf` two `$ref`s to `dN-1`, 40 links: 2^40 evaluations if followed naively.
fn doubling_chain(links: usize) -> Value {
    let mut defs = serde_json::Map::new();
    defs.insert("d0".to_owned(), json!({"type": "number"}));
    for n in 1..=links {
        let previous = format!("#/$defs/d{}", n - 1);
        defs.insert(
            format!("d{n}"),
            json!({"allOf": [{"$ref": previous}, {"$ref": previous}]}),
        );
    }
    json!({
        "type": "object",
        "properties": {"temperature": {"$ref": format!("#/$defs/d{links}")}},
        "$defs": defs,
    })
}

pub(crate) fn a_schema_costing_two_to_the_forty_ends_in_a_typed_error_inside_the_budget<
    D: Driver,
>() {
    let server = TestServer::start(Script::new().tool(
        "weather",
        Some(doubling_chain(40)),
        structured_result(json!({"temperature": 21.5})),
    ));
    let mut client = checking_client::<D>(&server);
    let started = Instant::now();
    let outcome = client.call_tool("weather", args(&[]));
    let elapsed = started.elapsed();
    println!("a 2^40 schema ended after {elapsed:?}");
    assert!(
        elapsed < BUDGET,
        "the call took {elapsed:?}, its budget {BUDGET:?}"
    );
    match outcome {
        Err(Error::OutputInvalid { problem, .. }) => match *problem {
            // Counted before it is run (OutputSchema::MAX_WORK): refused unchecked.
            OutputProblem::Mismatch(mismatch) => assert_eq!(mismatch.rule, "work"),
            other => panic!("not a work mismatch: {other:?}"),
        },
        other => panic!("not OutputInvalid: {other:?}"),
    }
}

pub(crate) fn call_tool_as_reads_a_result_into_a_type_or_says_why_not<D: Driver>() {
    let weather = json!({"temperature": 21.5, "conditions": "sunny", "humidity": 40});
    let server = TestServer::start(
        Script::new()
            .tool(
                "weather",
                Some(weather_schema()),
                structured_result(weather.clone()),
            )
            .tool(
                "plain",
                None,
                json!({"content": [{"type": "text", "text": "hi"}]}),
            ),
    );
    let mut client = checking_client::<D>(&server);
    let read: Weather = client.call_tool_as("weather", args(&[])).unwrap();
    assert_eq!(
        read,
        Weather {
            temperature: 21.5,
            conditions: "sunny".to_owned(),
            humidity: 40.0
        }
    );

    // Valid for its schema, but not a Wind: the caller's type is wrong (the caller's fault).
    let err = client
        .call_tool_as::<Wind>("weather", args(&[]))
        .unwrap_err();
    assert_eq!(err.kind(), "unreadable_result");
    assert_eq!(err.fault(), Fault::Caller);
    match err {
        Error::UnreadableResult {
            tool,
            type_name,
            reason: Unreadable::Type(why),
            result,
            ..
        } => {
            assert_eq!(tool, "weather");
            assert!(type_name.ends_with("Wind"), "{type_name}");
            assert!(why.contains("speed"), "{why}");
            assert_eq!(result.structured_content, Some(weather));
        }
        other => panic!("not UnreadableResult(Type): {other:?}"),
    }

    // A tool that declares no schema and sends nothing structured: the server's side.
    let err = client
        .call_tool_as::<Weather>("plain", args(&[]))
        .unwrap_err();
    assert_eq!(err.fault(), Fault::Server);
    assert!(
        matches!(
            err,
            Error::UnreadableResult {
                reason: Unreadable::NoStructuredContent,
                ..
            }
        ),
        "{err:?}"
    );
}
