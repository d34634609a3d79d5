//! A request the server sends on the stream of an answer is answered with a nested leg while
//! the stream is read. The test server (`mcp-testkit`) is scripted to send it
//! ([`Script::server_request`]): on a `tools/call` answer stream, it sends the request, waits
//! for the client's answer (a separate POST), then sends the result and keeps the stream open.

mod common;

use std::time::Duration;

use common::{Recorder, config, echo};
use mcp_driver_tokio::Client;
use mcp_proto::driver::LegKind;
use mcp_proto::{Event, LegEnd};
use mcp_testkit::{AnswerMode, Script, ServerRequest, TestServer};
use serde_json::json;

/// A server whose `tools/call` answer stream first sends `request`, waits for the client's
/// answer, then sends the result and keeps the stream open.
fn start(request: ServerRequest) -> TestServer {
    TestServer::start(
        Script::new()
            .server_request(request)
            .answer_mode_for("tools/call", AnswerMode::SseKeepOpen),
    )
}

#[tokio::test]
async fn a_server_ping_on_the_stream_is_answered_with_a_nested_leg() {
    let server = start(ServerRequest::ping("srv-1"));
    let client = Client::new(config(&server));
    let recorder = Recorder::default();
    client.set_observer(recorder.clone());
    let result = tokio::time::timeout(Duration::from_secs(10), client.call_tool("echo", echo("x")))
        .await
        .expect("within 10 s")
        .expect("the call");
    // Without the client's answer the server would have answered the call with an error.
    assert_eq!(result.text(), "x");

    let seen = server.requests();
    assert_eq!(seen.len(), 4, "{seen:?}");
    assert_eq!(
        server.rpc_methods(),
        [
            "initialize",
            "notifications/initialized",
            "tools/call",
            "(response)"
        ],
        "{seen:?}"
    );
    assert_eq!(
        seen[3].json(),
        Some(json!({"jsonrpc": "2.0", "id": "srv-1", "result": {}}))
    );

    let mut legs = recorder.legs();
    legs.sort_by_key(|l| l.number);
    let kinds: Vec<(u32, LegKind)> = legs.iter().map(|l| (l.number, l.kind)).collect();
    // The answer is read beside the stream it was sent from: which of the two the driver
    // finishes first is a race (the server sends the result once it has the answer's body,
    // maybe before its 202 is read). Either way every leg is reported, under its number.
    assert_eq!(
        kinds,
        [
            (1, LegKind::Initialize),
            (2, LegKind::Initialized),
            (3, LegKind::CallTool),
            (4, LegKind::Respond)
        ]
    );
    assert_eq!(legs[2].end, LegEnd::Status(200));
    assert!(
        matches!(legs[3].end, LegEnd::Status(202) | LegEnd::Cancelled),
        "the answer was accepted, or still in flight when the call's result ended the operation: {:?}",
        legs[3].end
    );
    assert!(legs[3].grant <= legs[2].grant);
    let events = recorder.events();
    assert!(
        matches!(&events[..], [Event::ServerRequest { method, .. }] if method == "ping"),
        "{events:?}"
    );
}

#[tokio::test]
async fn an_elicitation_is_answered_by_the_registered_responder() {
    let server = start(ServerRequest::elicit_name(7, "Ada"));
    let config = config(&server).respond_to("elicitation/create", |params| {
        Ok(mcp_proto::message::accept_elicitation_with_defaults(params))
    });
    let client = Client::new(config);
    let result = tokio::time::timeout(Duration::from_secs(10), client.call_tool("echo", echo("x")))
        .await
        .expect("within 10 s")
        .expect("the call");
    assert_eq!(result.text(), "x");
    let seen = server.requests();
    assert_eq!(
        seen[0].json().expect("JSON")["params"]["capabilities"],
        json!({"elicitation": {}}),
        "the capability is declared"
    );
    assert_eq!(
        server.client_responses(),
        [
            json!({"jsonrpc": "2.0", "id": 7, "result": {"action": "accept", "content": {"name": "Ada"}}})
        ]
    );
    assert_eq!(seen[3].json(), Some(server.client_responses()[0].clone()));
}
