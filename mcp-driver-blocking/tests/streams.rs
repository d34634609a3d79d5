//! Stream features the state machine drives and this driver carries: a request from the
//! server answered while its stream is read (a nested leg), a cancel during the pause before
//! resuming a stream, the cancel notice.
//!
//! The nested-leg test scripts the testkit to send a server request on the answer stream
//! ([`Script::server_request`]). Resuming with a GET, closing with a DELETE and a cancel that
//! sends nothing more are in the suite shared with the tokio driver, `tests/suites/drivers.rs`
//! of `mcp-testkit`.

mod common;

use std::thread;
use std::time::{Duration, Instant};

use common::{Recorder, client, config, text_args};
use mcp_driver_blocking::Client;
use mcp_proto::driver::LegKind;
use mcp_proto::message::accept_elicitation_with_defaults;
use mcp_proto::{Error, Event, LegEnd};
use mcp_testkit::{Hostile, Script, ServerRequest, TestServer};

/// A server whose `tools/call` answer stream first asks the client to elicit a name, waits for
/// the client's answer (a separate POST), then answers the call (with an error if no answer
/// came within 5 s).
fn eliciting_server() -> TestServer {
    TestServer::start(Script::new().server_request(ServerRequest::elicit_name("srv-1", "Ada")))
}

#[test]
fn a_request_from_the_server_is_answered_while_its_stream_is_read() {
    let server = eliciting_server();
    let config = config(&server, Duration::from_secs(10))
        .respond_to("elicitation/create", |params| {
            Ok(accept_elicitation_with_defaults(params))
        });
    let client = Client::new(config);
    let recorder = Recorder::default();
    client.set_observer(recorder.clone());
    let result = client.call_tool("echo", text_args("hello")).unwrap();
    assert_eq!(result.text(), "hello");
    assert_eq!(
        server.rpc_methods(),
        [
            "initialize",
            "notifications/initialized",
            "tools/call",
            "(response)"
        ]
    );
    let answers = server.client_responses();
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!(answers[0]["id"], "srv-1");
    assert_eq!(
        answers[0]["result"]["content"]["name"], "Ada",
        "the elicited name reached the server"
    );
    let kinds: Vec<LegKind> = recorder.legs().iter().map(|l| l.kind).collect();
    assert_eq!(
        kinds,
        [
            LegKind::Initialize,
            LegKind::Initialized,
            LegKind::Respond,
            LegKind::CallTool
        ],
        "the nested answer ends before the stream that carried the request"
    );
    assert!(recorder.events().iter().any(|e| matches!(
        e,
        Event::ServerRequest { method, .. } if method == "elicitation/create"
    )));
}

#[test]
fn a_cancel_during_the_pause_before_resuming_ends_at_once() {
    let server = TestServer::start(Script::new().hostile(
        "tools/call",
        Hostile::CloseAfterPriming { retry_ms: 10_000 },
    ));
    let (client, recorder) = client(&server, Duration::from_secs(30));
    let handle = client.cancel_handle();
    let (err, latency) = thread::scope(|scope| {
        let canceller = scope.spawn(|| {
            // The call's stream closed after its priming event: the 10 s pause has begun.
            common::wait_until(|| recorder.legs().iter().any(|l| l.kind == LegKind::CallTool));
            let at = Instant::now();
            handle.cancel();
            at
        });
        let err = client.call_tool("echo", text_args("x")).unwrap_err();
        let returned = Instant::now();
        (
            err,
            returned.saturating_duration_since(canceller.join().unwrap()),
        )
    });
    eprintln!("cancel while waiting to resume: returned {latency:?} after cancel()");
    assert!(matches!(err, Error::Cancelled { .. }), "{err:?}");
    assert!(latency < Duration::from_secs(1), "{latency:?}");
}

#[test]
fn a_cancelled_call_can_be_followed_by_a_cancel_notice() {
    let server = TestServer::start(Script::new().hostile("tools/call", Hostile::Stall));
    let client = Client::new(config(&server, Duration::from_secs(30)).with_cancel_notice(true));
    let recorder = Recorder::default();
    client.set_observer(recorder.clone());
    client.probe().unwrap();
    let handle = client.cancel_handle();
    let (err, latency) = thread::scope(|scope| {
        let canceller = scope.spawn(|| {
            // The server holds the call: it is in flight, so the cancel must announce it.
            common::wait_until(|| server.count("tools/call") == 1);
            let at = Instant::now();
            handle.cancel();
            at
        });
        let err = client.call_tool("echo", text_args("x")).unwrap_err();
        (
            err,
            Instant::now().saturating_duration_since(canceller.join().unwrap()),
        )
    });
    eprintln!("cancel with notice: returned {latency:?} after cancel()");
    assert!(matches!(err, Error::Cancelled { .. }), "{err:?}");
    assert!(latency < Duration::from_secs(1), "{latency:?}");
    assert_eq!(
        server.rpc_methods(),
        [
            "initialize",
            "notifications/initialized",
            "tools/call",
            "notifications/cancelled"
        ]
    );
    let call_id = server.requests()[2].rpc_id.clone().unwrap();
    let notice = server.requests()[3].json().unwrap();
    assert_eq!(notice["params"]["requestId"], call_id);
    let legs = recorder.legs();
    let last = legs.last().unwrap();
    assert_eq!(last.kind, LegKind::CancelNotice);
    assert_eq!(last.end, LegEnd::Status(202));
    assert_eq!(legs[legs.len() - 2].end, LegEnd::Cancelled);
}
