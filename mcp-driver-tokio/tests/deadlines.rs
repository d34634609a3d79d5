//! The budget in real time: timeouts, grants, cancellation and dropped futures.

mod common;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use common::{Recorder, cancel_once_seen, client, config, echo, eventually};
use mcp_driver_tokio::Client;
use mcp_proto::{Budget, Error, LegEnd, LegKind, Resolution, TransportErrorKind};
use mcp_testkit::{Hostile, Script, TestServer};

/// A client with a 2 s budget at millisecond resolution.
fn two_second_client(server: &TestServer) -> Client {
    Client::new(config(server).budget(Budget::from_secs(2)))
}

/// Runs one tool call against a server that misbehaves on `tools/call` and checks it ends with
/// `LegTimedOut` about when the 2 s budget ends.
async fn times_out_with_the_budget(mode: Hostile) {
    let server = TestServer::start(Script::new().hostile("tools/call", mode.clone()));
    let mut client = two_second_client(&server);
    let recorder = Recorder::default();
    client.set_observer(recorder.clone());
    let started = Instant::now();
    let err = client
        .call_tool("echo", echo("x"))
        .await
        .expect_err("the server never answers");
    let took = started.elapsed();
    match &err {
        Error::LegTimedOut { method, grant, .. } => {
            assert_eq!(*method, "tools/call");
            assert!(*grant <= Duration::from_secs(2), "{grant:?}");
        }
        other => panic!("{mode:?}: expected LegTimedOut, got {other:?}"),
    }
    assert!(
        took > Duration::from_millis(1500) && took < Duration::from_millis(3500),
        "{mode:?}: took {took:?}"
    );
    let last = recorder.legs().pop().expect("reported");
    assert_eq!(last.kind, LegKind::CallTool);
    assert_eq!(last.end, LegEnd::Transport(TransportErrorKind::TimedOut));
    eprintln!(
        "{mode:?}: operation took {} ms for a 2000 ms budget (last grant {} ms, elapsed {} ms)",
        took.as_millis(),
        last.grant.as_millis(),
        last.elapsed.as_millis()
    );
}

#[tokio::test]
async fn a_stalled_server_ends_with_the_budget() {
    times_out_with_the_budget(Hostile::Stall).await;
}

#[tokio::test]
async fn a_trickling_server_ends_with_the_budget() {
    times_out_with_the_budget(Hostile::Trickle).await;
}

#[tokio::test]
async fn an_endless_event_stream_ends_with_the_budget() {
    times_out_with_the_budget(Hostile::EndlessSse).await;
}

#[tokio::test]
async fn grants_follow_the_seed_sequence() {
    let server = TestServer::start(
        Script::new()
            .delay("initialize", Duration::from_millis(400))
            .delay("notifications/initialized", Duration::from_millis(200)),
    );
    let mut client = two_second_client(&server);
    let recorder = Recorder::default();
    client.set_observer(recorder.clone());
    client.call_tool("echo", echo("seed")).await.expect("call");
    let legs = recorder.legs();
    let grants: Vec<u128> = legs.iter().map(|l| l.grant.as_millis()).collect();
    let elapsed: Vec<u128> = legs.iter().map(|l| l.elapsed.as_millis()).collect();
    eprintln!("seed sequence: grants {grants:?} ms, elapsed {elapsed:?} ms");
    assert_eq!(grants.len(), 3);
    for (got, want) in grants.iter().zip([2000u128, 1600, 1400]) {
        assert!(
            got.abs_diff(want) <= 150,
            "grants {grants:?} ms, want about [2000, 1600, 1400]"
        );
    }
}

#[tokio::test]
async fn a_spent_budget_sends_nothing_more() {
    // Half-second grants: a 600 ms budget grants initialize a whole second, initialize takes
    // 700 ms, and nothing is left for notifications/initialized.
    let server = TestServer::start(Script::new().delay("initialize", Duration::from_millis(700)));
    let resolution = Resolution::from_unit(Duration::from_millis(500)).expect("valid unit");
    let config = config(&server)
        .resolution(resolution)
        .budget(Budget::from_duration(Duration::from_millis(600)));
    let mut client = Client::new(config);
    let err = client
        .call_tool("echo", echo("x"))
        .await
        .expect_err("budget spent");
    match err {
        Error::BudgetExhausted { method, leg, .. } => {
            assert_eq!(method, "notifications/initialized");
            assert_eq!(leg, 2);
        }
        other => panic!("expected BudgetExhausted, got {other:?}"),
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(server.rpc_methods(), ["initialize"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cancel_handle_ends_the_operation_promptly() {
    let server = Arc::new(TestServer::start(
        Script::new().hostile("tools/call", Hostile::Stall),
    ));
    let mut client = client(&server);
    let recorder = Recorder::default();
    client.set_observer(recorder.clone());
    let handle = client.cancel_handle();
    let fired_at = Arc::new(Mutex::new(None));
    let fired = Arc::clone(&fired_at);
    let seen = Arc::clone(&server);
    let canceller = tokio::spawn(async move {
        assert!(
            eventually(Duration::from_secs(2), || seen.rpc_methods().len() == 3).await,
            "the call never reached the server"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        // The stalled call's connection, plus any idle one in the client's pool.
        let open = seen.open_connections();
        *fired.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
        handle.cancel();
        open
    });
    let err = client
        .call_tool("echo", echo("x"))
        .await
        .expect_err("cancelled");
    let done = Instant::now();
    let open_before = canceller.await.expect("canceller");
    let fired = fired_at
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .expect("fired");
    let latency = done - fired;
    eprintln!("cancel latency: {} us", latency.as_micros());
    match err {
        Error::Cancelled { method, .. } => assert_eq!(method, "tools/call"),
        other => panic!("expected Cancelled, got {other:?}"),
    }
    assert!(latency < Duration::from_secs(1), "latency {latency:?}");
    let last = recorder.legs().pop().expect("reported");
    assert_eq!(last.kind, LegKind::CallTool);
    assert_eq!(last.end, LegEnd::Cancelled);
    // The stalled request's connection was dropped: the server sees it close.
    assert!(open_before >= 1);
    assert!(
        eventually(Duration::from_secs(2), || server.open_connections()
            < open_before)
        .await,
        "still {} open connection(s), {open_before} before the cancel",
        server.open_connections()
    );
    // The client goes on, and the handle does not cancel later operations.
    server.update_script(Script::clear_hostile);
    assert_eq!(
        client
            .call_tool("echo", echo("after"))
            .await
            .expect("after")
            .text(),
        "after"
    );
    // No notifications/cancelled by default.
    assert!(
        !server
            .rpc_methods()
            .iter()
            .any(|m| m == "notifications/cancelled")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_tool_call_can_be_announced_to_the_server() {
    let server = Arc::new(TestServer::start(
        Script::new().hostile("tools/call", Hostile::Stall),
    ));
    let mut client = client(&server);
    let recorder = Recorder::default();
    client.set_observer(recorder.clone());
    client.set_cancel_notice(true);
    let canceller = tokio::spawn(cancel_once_seen(
        Arc::clone(&server),
        client.cancel_handle(),
        "tools/call",
        Duration::from_millis(100),
    ));
    let err = client
        .call_tool("echo", echo("x"))
        .await
        .expect_err("cancelled");
    canceller.await.expect("canceller");
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
    // The notice was sent (and answered) before the operation returned.
    assert_eq!(
        server.rpc_methods(),
        [
            "initialize",
            "notifications/initialized",
            "tools/call",
            "notifications/cancelled"
        ]
    );
    let legs = recorder.legs();
    let notice_leg = legs.last().expect("reported");
    assert_eq!(notice_leg.kind, LegKind::CancelNotice);
    assert_eq!(notice_leg.end, LegEnd::Status(202));
    assert_eq!(notice_leg.grant, Duration::from_secs(1));
    let requests = server.requests();
    let call = requests
        .iter()
        .find(|r| r.rpc_method.as_deref() == Some("tools/call"))
        .expect("the call");
    let notice = requests
        .iter()
        .find(|r| r.rpc_method.as_deref() == Some("notifications/cancelled"))
        .expect("the notice");
    let body = notice.json().expect("JSON");
    assert_eq!(
        body["params"]["requestId"],
        call.rpc_id.clone().expect("an id")
    );
    assert!(body["params"]["reason"].is_string());
    assert!(body.get("id").is_none(), "a notification has no id");
    assert_eq!(
        notice.header("mcp-session-id"),
        call.header("mcp-session-id")
    );
    assert_eq!(
        notice.header("mcp-protocol-version"),
        call.header("mcp-protocol-version")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_announcement_when_it_is_disabled() {
    let server = Arc::new(TestServer::start(
        Script::new().hostile("tools/call", Hostile::Stall),
    ));
    let mut client = client(&server);
    client.set_cancel_notice(true);
    client.set_cancel_notice(false);
    let canceller = tokio::spawn(cancel_once_seen(
        Arc::clone(&server),
        client.cancel_handle(),
        "tools/call",
        Duration::from_millis(100),
    ));
    let err = client
        .call_tool("echo", echo("x"))
        .await
        .expect_err("cancelled");
    canceller.await.expect("canceller");
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
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        server.rpc_methods(),
        ["initialize", "notifications/initialized", "tools/call"]
    );
}

#[tokio::test]
async fn cancelling_a_handshake_leg_sends_no_announcement() {
    let server = Arc::new(TestServer::start(
        Script::new().hostile("initialize", Hostile::Stall),
    ));
    let mut client = client(&server);
    client.set_cancel_notice(true);
    let canceller = tokio::spawn(cancel_once_seen(
        Arc::clone(&server),
        client.cancel_handle(),
        "initialize",
        Duration::from_millis(100),
    ));
    let err = client
        .call_tool("echo", echo("x"))
        .await
        .expect_err("cancelled");
    canceller.await.expect("canceller");
    assert!(
        matches!(
            err,
            Error::Cancelled {
                method: "initialize",
                ..
            }
        ),
        "{err:?}"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(server.rpc_methods(), ["initialize"]);
    assert!(client.session().info().is_none());
}

#[tokio::test]
async fn dropping_the_future_closes_the_request_in_flight() {
    let server = TestServer::start(Script::new().hostile("tools/call", Hostile::Stall));
    let mut client = client(&server);
    let open_before = {
        let call = client.call_tool("echo", echo("x"));
        tokio::pin!(call);
        // Once the call reached the server, 100 ms more, then drop it.
        let reached = async {
            let reached = eventually(Duration::from_secs(5), || server.rpc_methods().len() == 3);
            assert!(reached.await, "the call never reached the server");
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        tokio::select! {
            result = &mut call => panic!("the stalled call finished: {result:?}"),
            () = reached => {}
        }
        assert_eq!(
            server.rpc_methods(),
            ["initialize", "notifications/initialized", "tools/call"]
        );
        // The stalled call's connection, plus any idle one in the client's pool.
        server.open_connections()
        // The call's future is dropped here.
    };
    assert!(open_before >= 1);
    let dropped_at = Instant::now();
    assert!(
        eventually(Duration::from_secs(2), || server.open_connections()
            < open_before)
        .await,
        "the server still sees {} open connection(s), {open_before} before the drop",
        server.open_connections()
    );
    eprintln!(
        "server saw the connection closed {} ms after the drop",
        dropped_at.elapsed().as_millis()
    );
    // The session survives: the next operation skips the handshake.
    server.update_script(Script::clear_hostile);
    assert_eq!(
        client
            .call_tool("echo", echo("again"))
            .await
            .expect("again")
            .text(),
        "again"
    );
    assert_eq!(
        server.rpc_methods(),
        [
            "initialize",
            "notifications/initialized",
            "tools/call",
            "tools/call"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn paused_tokio_time_drives_the_grants() {
    // Under paused time tokio jumps to the next timer whenever it would wait for I/O, so a
    // stalled initialize times out at exactly its 20 s grant by tokio's clock, in real
    // milliseconds: the proto's instants and tokio's timers are one clock.
    let server = TestServer::start(Script::new().hostile_all(Hostile::Stall));
    let mut client = Client::new(config(&server).budget(Budget::from_secs(20)));
    let recorder = Recorder::default();
    client.set_observer(recorder.clone());
    let real = Instant::now();
    let virtual_start = tokio::time::Instant::now();
    let err = client.probe().await.expect_err("stalled");
    let virtual_elapsed = virtual_start.elapsed();
    assert!(
        matches!(err, Error::LegTimedOut { method: "initialize", grant, .. } if grant == Duration::from_secs(20)),
        "{err:?}"
    );
    assert!(
        virtual_elapsed >= Duration::from_secs(20),
        "{virtual_elapsed:?}"
    );
    assert!(
        virtual_elapsed < Duration::from_millis(20_050),
        "{virtual_elapsed:?}"
    );
    assert!(
        real.elapsed() < Duration::from_secs(10),
        "{:?}",
        real.elapsed()
    );
    let leg = recorder.legs().pop().expect("reported");
    assert_eq!(leg.grant, Duration::from_secs(20));
    assert!(leg.elapsed >= Duration::from_secs(20), "{leg:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_while_waiting_to_resume_ends_at_once_and_announces() {
    let server = Arc::new(TestServer::start(
        Script::new().hostile("tools/call", Hostile::CloseAfterPriming { retry_ms: 5_000 }),
    ));
    let mut client = client(&server);
    client.set_cancel_notice(true);
    let canceller = tokio::spawn(cancel_once_seen(
        Arc::clone(&server),
        client.cancel_handle(),
        "tools/call",
        Duration::from_millis(200),
    ));
    let err = client
        .call_tool("echo", echo("x"))
        .await
        .expect_err("cancelled");
    let latency = canceller.await.expect("canceller").elapsed();
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
}

#[tokio::test]
async fn a_resumption_that_would_outlast_the_budget_ends_at_once() {
    // The server asks for a 5 s retry; the 1 s budget cannot cover it, so the call ends as
    // the tools/call leg's timeout as soon as the stream closes, without idling and without a GET.
    let server = TestServer::start(
        Script::new().hostile("tools/call", Hostile::CloseAfterPriming { retry_ms: 5_000 }),
    );
    let mut client = Client::new(config(&server).budget(Budget::from_secs(1)));
    let started = Instant::now();
    let err = client.call_tool("echo", echo("x")).await.expect_err("ends");
    let took = started.elapsed();
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
    assert!(took < Duration::from_millis(900), "{took:?}");
    assert!(!server.rpc_methods().iter().any(|m| m == "GET"));
}
