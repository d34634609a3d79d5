//! One budget per operation, in real time: stalls, trickles, open streams, cancels, grants.
//!
//! Bounds are generous (CI machines are slow); the numbers measured are printed with
//! `--nocapture`.

mod common;

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use common::{client, config, sleep_args, text_args};
use mcp_driver_blocking::Client;
use mcp_proto::{Budget, Error, LegEnd, Resolution, TransportErrorKind};
use mcp_testkit::{AnswerMode, Hostile, Script, TestServer};

const TWO_SECONDS: Duration = Duration::from_secs(2);

/// Asserts a stalled or trickling `tools/call` under a 2 s budget ends in `LegTimedOut`
/// after the budget and within budget + one unit + a generous margin.
fn assert_leg_times_out(hostile: Hostile) {
    let server = TestServer::start(Script::new().hostile("tools/call", hostile.clone()));
    let (mut client, recorder) = client(&server, TWO_SECONDS);
    let started = Instant::now();
    let err = client.call_tool("echo", text_args("x")).unwrap_err();
    let elapsed = started.elapsed();
    eprintln!("{hostile:?}: ended after {elapsed:?} (budget 2 s): {err}");
    assert!(
        matches!(
            err,
            Error::LegTimedOut {
                method: "tools/call",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(elapsed > Duration::from_millis(1500), "{elapsed:?}");
    assert!(elapsed < Duration::from_millis(3500), "{elapsed:?}");
    assert_eq!(
        recorder.ends().last(),
        Some(&LegEnd::Transport(TransportErrorKind::TimedOut))
    );
}

#[test]
fn a_stalled_server_ends_in_leg_timed_out_at_the_budget() {
    assert_leg_times_out(Hostile::Stall);
}

#[test]
fn a_trickling_server_cannot_stretch_the_leg_past_its_grant() {
    assert_leg_times_out(Hostile::Trickle);
}

#[test]
fn a_stalled_handshake_leg_times_out_too() {
    let server =
        TestServer::start(Script::new().hostile("notifications/initialized", Hostile::Stall));
    let (mut client, _) = client(&server, Duration::from_secs(1));
    let started = Instant::now();
    let err = client.probe().unwrap_err();
    assert!(
        matches!(
            err,
            Error::LegTimedOut {
                method: "notifications/initialized",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(started.elapsed() < Duration::from_millis(2500));
}

#[test]
fn an_endless_event_stream_is_cut_at_the_budget_and_its_events_reported() {
    let server = TestServer::start(Script::new().hostile("tools/call", Hostile::EndlessSse));
    let (mut client, recorder) = client(&server, Duration::from_secs(1));
    let started = Instant::now();
    let err = client.call_tool("echo", text_args("x")).unwrap_err();
    assert!(matches!(err, Error::LegTimedOut { .. }), "{err:?}");
    assert!(started.elapsed() < Duration::from_millis(2500));
    assert!(!recorder.events().is_empty());
}

#[test]
fn a_stream_kept_open_after_the_answer_returns_at_once() {
    let server = TestServer::start(Script::new().answer_mode(AnswerMode::SseKeepOpen));
    let (mut client, _) = client(&server, Duration::from_secs(20));
    let started = Instant::now();
    let result = client.call_tool("echo", text_args("open")).unwrap();
    let elapsed = started.elapsed();
    eprintln!("SSE kept open: the call returned after {elapsed:?} (budget 20 s)");
    assert_eq!(result.text(), "open");
    assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
    // The driver dropped the streams: the server sees every connection close.
    let deadline = Instant::now() + Duration::from_secs(3);
    while server.open_connections() > 0 && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(server.open_connections(), 0);
    // And the session still works for the next operation.
    assert_eq!(
        client.call_tool("echo", text_args("again")).unwrap().text(),
        "again"
    );
}

/// Runs `tools/call` of `tool` against `script`, cancels it from another thread `after` the
/// call started, and returns how long the call took to return once `cancel()` was called.
fn cancel_latency(
    script: Script,
    after: Duration,
    progress: bool,
    tool: &str,
    args: serde_json::Map<String, serde_json::Value>,
) -> Duration {
    let server = TestServer::start(script);
    let mut client = Client::new(config(&server, Duration::from_secs(30)).progress(progress));
    let recorder = common::Recorder::default();
    client.set_observer(recorder.clone());
    client.probe().unwrap();
    let handle = client.cancel_handle();
    let (tx, rx) = mpsc::channel();
    let canceller = thread::spawn(move || {
        thread::sleep(after);
        let at = Instant::now();
        handle.cancel();
        tx.send(at).unwrap();
    });
    let err = client.call_tool(tool, args).unwrap_err();
    let returned = Instant::now();
    let cancelled_at = rx.recv().unwrap();
    canceller.join().unwrap();
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
        Duration::from_millis(300),
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
        Duration::from_millis(300),
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
        // Progress at 1 s and 2 s, the answer at 3 s: the cancel lands between the first two.
        Duration::from_millis(1500),
        true,
        "sleep",
        sleep_args(3_000),
    );
    eprintln!("cancel while a slow tool streams progress: returned {latency:?} after cancel()");
    assert!(latency < Duration::from_secs(1), "{latency:?}");
}

#[test]
fn a_cancel_between_operations_does_nothing() {
    let server = TestServer::start(Script::new());
    let (mut client, _) = client(&server, Duration::from_secs(5));
    let handle = client.cancel_handle();
    handle.cancel();
    assert_eq!(
        client.call_tool("echo", text_args("a")).unwrap().text(),
        "a"
    );
    handle.clone().cancel();
    assert_eq!(client.list_tools().unwrap().len(), 4);
    // Cancelling idle did not even close the pooled connection.
    assert_eq!(server.connections_accepted(), 1);
}

#[test]
fn a_spent_budget_sends_nothing_more() {
    // Whole-second grants: 1.5 s left is granted 2 s, so initialize (1.6 s) succeeds inside
    // its grant but spends the whole budget; the notification is refused, never sent.
    let server = TestServer::start(Script::new().delay("initialize", Duration::from_millis(1600)));
    let mut client =
        Client::new(config(&server, Duration::from_millis(1500)).resolution(Resolution::SECOND));
    let recorder = common::Recorder::default();
    client.set_observer(recorder.clone());
    let err = client.call_tool("echo", text_args("x")).unwrap_err();
    assert!(
        matches!(
            err,
            Error::BudgetExhausted {
                method: "notifications/initialized",
                leg: 2,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(recorder.grants_ms(), [2000]);
    thread::sleep(Duration::from_millis(200));
    assert_eq!(server.rpc_methods(), ["initialize"]);
}

#[test]
fn the_seed_sequence_grants_what_the_handshake_left() {
    let server = TestServer::start(
        Script::new()
            .delay("initialize", Duration::from_millis(400))
            .delay("notifications/initialized", Duration::from_millis(200)),
    );
    let (mut client, recorder) = client(&server, TWO_SECONDS);
    client.call_tool("echo", text_args("seed")).unwrap();
    let grants = recorder.grants_ms();
    eprintln!("seed sequence grants (ms): {grants:?}");
    assert_eq!(grants.len(), 3);
    for (grant, want) in grants.iter().zip([2000u128, 1600, 1400]) {
        assert!(grant.abs_diff(want) <= 150, "{grants:?}");
    }
    let elapsed: Vec<u128> = recorder
        .legs()
        .iter()
        .map(|l| l.elapsed.as_millis())
        .collect();
    eprintln!("seed sequence legs took (ms): {elapsed:?}");
    assert!(elapsed[0] >= 400 && elapsed[1] >= 200, "{elapsed:?}");
}

#[test]
fn run_takes_its_own_budget() {
    let server = TestServer::start(Script::new().hostile("tools/call", Hostile::Stall));
    let (mut client, _) = client(&server, Duration::from_secs(60));
    client.probe().unwrap();
    let started = Instant::now();
    let err = client
        .run(
            mcp_proto::Action::CallTool {
                name: "echo".into(),
                arguments: text_args("x"),
            },
            Budget::from_duration(Duration::from_millis(500)),
        )
        .unwrap_err();
    assert!(matches!(err, Error::LegTimedOut { .. }), "{err:?}");
    assert!(started.elapsed() < Duration::from_millis(2000));
}
