//! Cancelling from another thread in each state a blocking leg can be in: waiting for the
//! response head, reading a trickling body, reading a slow tool's progress stream. The socket
//! shutdown must reach each of them at once. And a cancel for good, which reaches the
//! operation whether it fired before the operation began or while it ran, and every later one.
//!
//! The budget in real time (stalls, trickles, endless and kept-open streams, the seed
//! sequence, a spent budget, `run`'s own budget) and the cancel of a stalled call are in the
//! suite shared with the tokio driver, `tests/suites/drivers.rs` of `mcp-testkit`.

mod common;

use std::thread;
use std::time::{Duration, Instant};

use common::{client, config, sleep_args, text_args};
use mcp_driver_blocking::Client;
use mcp_proto::{Error, LegEnd};
use mcp_testkit::{AnswerMode, Hostile, Script, TestServer};

/// Runs `tools/call` of `tool` against `script`, cancels it from another thread once `ready`
/// says the call is in the state the test is about, and returns how long the call took to
/// return once `cancel()` was called.
fn cancel_latency(
    script: Script,
    ready: fn(&TestServer, &common::Recorder) -> bool,
    progress: bool,
    tool: &str,
    args: serde_json::Map<String, serde_json::Value>,
) -> Duration {
    let server = TestServer::start(script);
    let client = Client::new(config(&server, Duration::from_secs(30)).with_progress(progress));
    let recorder = common::Recorder::default();
    client.set_observer(recorder.clone());
    client.probe().unwrap();
    let handle = client.cancel_handle();
    let (err, returned, cancelled_at) = thread::scope(|scope| {
        let canceller = scope.spawn(|| {
            common::wait_until(|| ready(&server, &recorder));
            let at = Instant::now();
            handle.cancel();
            at
        });
        let err = client.call_tool(tool, args).unwrap_err();
        let returned = Instant::now();
        (err, returned, canceller.join().unwrap())
    });
    assert!(
        matches!(
            err,
            Error::Cancelled {
                method: "tools/call",
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(recorder.ends().last(), Some(&LegEnd::Cancelled));
    if progress {
        assert!(
            !recorder.events().is_empty(),
            "progress arrived before the cancel"
        );
    }
    // The client is usable afterwards: the cancel does not reach the next operation.
    server.update_script(Script::clear_hostile);
    assert_eq!(
        client.call_tool("echo", text_args("after")).unwrap().text(),
        "after"
    );
    returned.saturating_duration_since(cancelled_at)
}

#[test]
fn cancel_ends_a_leg_waiting_for_its_head() {
    let latency = cancel_latency(
        Script::new().hostile("tools/call", Hostile::Stall),
        // The server holds the request: the leg waits for its head.
        |server, _| server.count("tools/call") == 1,
        false,
        "echo",
        text_args("x"),
    );
    eprintln!("cancel while waiting for the head: returned {latency:?} after cancel()");
    assert!(latency < Duration::from_secs(1), "{latency:?}");
}

#[test]
fn cancel_ends_a_leg_reading_a_trickling_body() {
    let latency = cancel_latency(
        Script::new().hostile("tools/call", Hostile::Trickle),
        // The server sent the head and the body's first tick: the leg reads a body.
        |server, _| server.ticks_sent() >= 1,
        false,
        "echo",
        text_args("x"),
    );
    eprintln!("cancel while reading a trickle: returned {latency:?} after cancel()");
    assert!(latency < Duration::from_secs(1), "{latency:?}");
}

#[test]
fn cancel_ends_a_slow_tool_streaming_progress() {
    let latency = cancel_latency(
        Script::new().answer_mode(AnswerMode::Sse),
        // Progress at 1 s and 2 s, the answer at 3 s: the cancel lands once the first came.
        |_, recorder| !recorder.events().is_empty(),
        true,
        "sleep",
        sleep_args(3_000),
    );
    eprintln!("cancel while a slow tool streams progress: returned {latency:?} after cancel()");
    assert!(latency < Duration::from_secs(1), "{latency:?}");
}

#[test]
fn a_cancel_between_operations_leaves_the_pooled_connection_open() {
    // A cancel shuts down every socket of the client, but only while an operation runs.
    let server = TestServer::start(Script::new());
    let (client, _) = client(&server, Duration::from_secs(5));
    let handle = client.cancel_handle();
    handle.cancel();
    assert_eq!(
        client.call_tool("echo", text_args("a")).unwrap().text(),
        "a"
    );
    handle.clone().cancel();
    assert_eq!(client.list_tools().unwrap().len(), 4);
    assert_eq!(server.connections_accepted(), 1);
}

/// The cancel `mcp-call bridge` lost: fired after the request's clone was made, before its
/// operation began. For good, it ends the call at once without a word to the server, and every
/// later call on that clone; the client (another clone) goes on.
#[test]
fn a_cancel_for_good_before_the_call_ends_it_at_once_having_sent_nothing() {
    let server = TestServer::start(Script::new());
    let (client, _) = client(&server, Duration::from_secs(30));
    let request = client.clone();
    request.cancel_handle().cancel_for_good();
    let started = Instant::now();
    let err = request
        .call_tool("echo", text_args("never sent"))
        .unwrap_err();
    let took = started.elapsed();
    assert!(matches!(err, Error::Cancelled { .. }), "{err:?}");
    // The budget is 30 s: a cancel that had to wait for it would show.
    assert!(took < Duration::from_secs(3), "{took:?} of a 30 s budget");
    let later = request.list_tools().unwrap_err();
    assert!(matches!(later, Error::Cancelled { .. }), "{later:?}");
    assert_eq!(server.rpc_methods(), Vec::<String>::new());
    assert_eq!(server.connections_accepted(), 0);
    assert_eq!(
        client.call_tool("echo", text_args("sent")).unwrap().text(),
        "sent"
    );
}

/// The bridge's order: a request's operation is handed to a thread, and its clone cancelled
/// for good right after, before or after the thread began it. Against a server that holds
/// every call, the call ends cancelled each time, never at its budget.
#[test]
fn a_cancel_for_good_racing_the_call_s_start_ends_it_whichever_comes_first() {
    let server = TestServer::start(Script::new().hostile("tools/call", Hostile::Stall));
    let (client, _) = client(&server, Duration::from_secs(30));
    client.probe().unwrap();
    for _ in 0..10 {
        let request = client.clone();
        let cancel = request.cancel_handle();
        let started = Instant::now();
        let call = thread::spawn(move || request.call_tool("echo", text_args("x")));
        cancel.cancel_for_good();
        let result = call.join().unwrap();
        assert!(matches!(result, Err(Error::Cancelled { .. })), "{result:?}");
        let took = started.elapsed();
        assert!(took < Duration::from_secs(10), "{took:?} of a 30 s budget");
    }
}

/// Fired while the call runs, a cancel for good ends it as `cancel` does, and the clone's next
/// call ends at once, unsent: the server heard of the first call only.
#[test]
fn a_cancel_for_good_in_flight_ends_the_call_and_every_later_one() {
    let server = TestServer::start(Script::new().hostile("tools/call", Hostile::Stall));
    let (client, _) = client(&server, Duration::from_secs(30));
    client.probe().unwrap();
    let request = client.clone();
    let cancel = request.cancel_handle();
    let (err, returned, fired) = thread::scope(|scope| {
        let canceller = scope.spawn(|| {
            common::wait_until(|| server.count("tools/call") == 1);
            let fired = Instant::now();
            cancel.cancel_for_good();
            fired
        });
        let err = request.call_tool("echo", text_args("x")).unwrap_err();
        (err, Instant::now(), canceller.join().unwrap())
    });
    let took = returned.saturating_duration_since(fired);
    assert!(
        matches!(
            err,
            Error::Cancelled {
                method: "tools/call",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(took < Duration::from_secs(3), "{took:?} of a 30 s budget");
    server.update_script(Script::clear_hostile);
    let later = request.call_tool("echo", text_args("y")).unwrap_err();
    assert!(matches!(later, Error::Cancelled { .. }), "{later:?}");
    assert_eq!(server.count("tools/call"), 1);
    assert_eq!(
        client.call_tool("echo", text_args("z")).unwrap().text(),
        "z"
    );
}
