//! The session's standalone stream on every driver: the `GET` a call opens beside itself,
//! read while the call runs (the blocking driver reads it on a thread of its own), and cut
//! with the operation: at its end and by a cancel, nothing of it left open. The test server's
//! stream here never ends (`Hostile::Trickle` on `GET`); what a server asks on such a stream
//! is answered in the interop matrix (server-everything's roots, the TypeScript SDK's
//! interactive task).

use std::thread;
use std::time::{Duration, Instant};

use mcp_proto::Error;
use mcp_testkit::{Hostile, Script, TestServer};

use crate::support::{Driver, config, echo, eventually};

/// A server whose standalone stream opens and never ends.
fn endless_stream(script: Script) -> TestServer {
    TestServer::start(script.hostile("GET", Hostile::Trickle))
}

pub(crate) fn the_standalone_stream_is_opened_beside_the_call_and_cut_with_it<D: Driver>() {
    let server = endless_stream(Script::new());
    let mut client = D::new(config(&server, Duration::from_secs(10)).with_listen(true));
    let started = Instant::now();
    let result = client.call_tool("echo", echo("beside"));
    assert_eq!(result.expect("the call answers").text(), "beside");
    // Answered at once, not at the stream's end (it has none) nor at the budget's.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(
        server.rpc_methods().iter().any(|m| m == "GET"),
        "the stream was never opened: {:?}",
        server.rpc_methods()
    );
    // The stream ends with the operation: at most the pooled connection stays.
    assert!(
        client.wait_until(Duration::from_secs(5), &mut || server.open_connections()
            <= 1),
        "still {} connection(s) open after the call",
        server.open_connections()
    );
}

pub(crate) fn a_cancel_cuts_the_standalone_stream_with_the_call<D: Driver>() {
    let server = endless_stream(Script::new().hostile("tools/call", Hostile::Stall));
    let mut client = D::new(config(&server, Duration::from_secs(30)).with_listen(true));
    let cancel = client.cancel_handle();
    let (result, latency) = thread::scope(|scope| {
        let canceller = scope.spawn(|| {
            // The stream and the stalled call both reached the server.
            let reached = eventually(Duration::from_secs(10), &mut || {
                let methods = server.rpc_methods();
                methods.iter().any(|m| m == "GET") && methods.iter().any(|m| m == "tools/call")
            });
            let fired = Instant::now();
            cancel();
            (reached, fired)
        });
        let result = client.call_tool("echo", echo("never"));
        let returned = Instant::now();
        let (reached, fired) = canceller.join().unwrap();
        assert!(
            reached,
            "the call never reached the server: {:?}",
            server.rpc_methods()
        );
        (result, returned.saturating_duration_since(fired))
    });
    assert!(matches!(result, Err(Error::Cancelled { .. })), "{result:?}");
    assert!(latency < Duration::from_secs(1), "latency {latency:?}");
    assert!(
        client.wait_until(Duration::from_secs(5), &mut || server.open_connections()
            <= 1),
        "still {} connection(s) open after the cancel",
        server.open_connections()
    );
}
