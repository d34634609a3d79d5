//! What only the tokio driver has, in real (or paused) time: the `notifications/cancelled`
//! notice after a cancel, cancelling by dropping the future, and tokio's paused clock driving
//! the grants. And a cancel for good (the blocking driver's tests hold the same three cases),
//! which reaches the operation whether it fired before the operation was first polled or
//! while it ran, and every later one.
//!
//! The budget in real time (stalls, trickles, endless and kept-open streams, the seed
//! sequence, a spent budget, resumption) and the cancel handle without a notice are in the
//! suite shared with the blocking driver, `tests/suites/drivers.rs` of `mcp-testkit`.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Recorder, cancel_once, client, config, echo, eventually};
use mcp_driver_tokio::Client;
use mcp_proto::driver::LegKind;
use mcp_proto::{Budget, Error, LegEnd};
use mcp_testkit::{Hostile, Script, TestServer};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_tool_call_can_be_announced_to_the_server() {
    let server = Arc::new(TestServer::start(
        Script::new().hostile("tools/call", Hostile::Stall),
    ));
    let mut client = Client::new(config(&server).with_cancel_notice(true));
    let recorder = Recorder::default();
    client.set_observer(recorder.clone());
    cancelled_call(&server, &mut client, "tools/call").await;
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
    let mut client = Client::new(config(&server).with_cancel_notice(false));
    cancelled_call(&server, &mut client, "tools/call").await;
    // Nothing more arrives (a bounded wait for a fourth request that must not come).
    assert!(!server.wait_for_requests(4, Duration::from_millis(500)));
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
    let mut client = Client::new(config(&server).with_cancel_notice(true));
    cancelled_call(&server, &mut client, "initialize").await;
    assert!(!server.wait_for_requests(2, Duration::from_millis(300)));
    assert_eq!(server.rpc_methods(), ["initialize"]);
    assert!(client.session().info().is_none());
}

#[tokio::test]
async fn dropping_the_future_closes_the_request_in_flight() {
    let server = TestServer::start(Script::new().hostile("tools/call", Hostile::Stall));
    let client = client(&server);
    let open_before = {
        let call = client.call_tool("echo", echo("x"));
        tokio::pin!(call);
        // Once the server holds the call (the leg waits for its head), drop it.
        let reached = async {
            let reached = eventually(Duration::from_secs(5), || server.rpc_methods().len() == 3);
            assert!(reached.await, "the call never reached the server");
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
    let client = Client::new(config(&server).with_budget(Budget::from_secs(20)));
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
    let client = Client::new(config(&server).with_cancel_notice(true));
    let recorder = Recorder::default();
    client.set_observer(recorder.clone());
    // The call's stream closed after its priming event (its leg reported): the pause began.
    let canceller = tokio::spawn(cancel_once(client.cancel_handle(), move || {
        recorder
            .legs()
            .iter()
            .any(|leg| leg.kind == LegKind::CallTool)
    }));
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

/// Calls `echo` on `server`, whose `stalled` request never answers, cancels the call from
/// another task once that request has arrived, and checks it ended as `Cancelled` on it.
async fn cancelled_call(server: &Arc<TestServer>, client: &mut Client, stalled: &'static str) {
    // The server holds the request: the leg waits for its head.
    let held = Arc::clone(server);
    let canceller = tokio::spawn(cancel_once(client.cancel_handle(), move || {
        held.count(stalled) == 1
    }));
    let err = client
        .call_tool("echo", echo("x"))
        .await
        .expect_err("cancelled");
    canceller.await.expect("canceller");
    assert!(
        matches!(&err, Error::Cancelled { method, .. } if *method == stalled),
        "{err:?}"
    );
}

/// The cancel `mcp-call bridge` lost: fired after the request's clone was made, before its
/// operation was first polled. For good, it ends the call at once without a word to the
/// server, and every later call on that clone; the client (another clone) goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_for_good_before_the_call_ends_it_at_once_having_sent_nothing() {
    let server = TestServer::start(Script::new());
    let client = Client::new(config(&server).with_budget(Budget::from_secs(30)));
    let request = client.clone();
    request.cancel_handle().cancel_for_good();
    let started = Instant::now();
    let err = request
        .call_tool("echo", echo("never sent"))
        .await
        .expect_err("cancelled");
    let took = started.elapsed();
    assert!(matches!(err, Error::Cancelled { .. }), "{err:?}");
    // The budget is 30 s: a cancel that had to wait for it would show (a tenth of it leaves
    // a slow machine room).
    assert!(took < Duration::from_secs(3), "{took:?} of a 30 s budget");
    let later = request.list_tools().await.expect_err("cancelled");
    assert!(matches!(later, Error::Cancelled { .. }), "{later:?}");
    assert_eq!(server.rpc_methods(), Vec::<String>::new());
    assert_eq!(server.connections_accepted(), 0);
    let sent = client.call_tool("echo", echo("sent")).await.expect("sent");
    assert_eq!(sent.text(), "sent");
}

/// The bridge's order: a request's operation is spawned on a task, and its clone cancelled for
/// good right after, before or after the task first polled it. Against a server that holds
/// every call, the call ends cancelled each time, never at its budget.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_for_good_racing_the_call_s_start_ends_it_whichever_comes_first() {
    let server = TestServer::start(Script::new().hostile("tools/call", Hostile::Stall));
    let client = Client::new(config(&server).with_budget(Budget::from_secs(30)));
    client.probe().await.expect("the handshake");
    for _ in 0..10 {
        let request = client.clone();
        let cancel = request.cancel_handle();
        let started = Instant::now();
        let call = tokio::spawn(async move { request.call_tool("echo", echo("x")).await });
        cancel.cancel_for_good();
        let result = call.await.expect("the task ran");
        assert!(matches!(result, Err(Error::Cancelled { .. })), "{result:?}");
        let took = started.elapsed();
        assert!(took < Duration::from_secs(10), "{took:?} of a 30 s budget");
    }
}

/// Fired while the call runs, a cancel for good ends it as `cancel` does, and the clone's next
/// call ends at once, unsent: the server heard of the first call only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_for_good_in_flight_ends_the_call_and_every_later_one() {
    let server = Arc::new(TestServer::start(
        Script::new().hostile("tools/call", Hostile::Stall),
    ));
    let client = Client::new(config(&server).with_budget(Budget::from_secs(30)));
    client.probe().await.expect("the handshake");
    let request = client.clone();
    let cancel = request.cancel_handle();
    let held = Arc::clone(&server);
    let canceller = tokio::spawn(async move {
        assert!(
            eventually(Duration::from_secs(5), || held.count("tools/call") == 1).await,
            "the call never reached the server"
        );
        let fired = Instant::now();
        cancel.cancel_for_good();
        fired
    });
    let err = request
        .call_tool("echo", echo("x"))
        .await
        .expect_err("cancelled");
    let took = canceller.await.expect("canceller").elapsed();
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
    let later = request
        .call_tool("echo", echo("y"))
        .await
        .expect_err("cancelled");
    assert!(matches!(later, Error::Cancelled { .. }), "{later:?}");
    assert_eq!(server.count("tools/call"), 1);
    let answered = client.call_tool("echo", echo("z")).await.expect("answered");
    assert_eq!(answered.text(), "z");
}
