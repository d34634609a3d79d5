//! The operations' futures are `Send`, so they can be spawned on a multi-thread runtime, and
//! small, so moving one (into `block_on`, into a task) copies little.
//!
//! What the operations do (results, the session, typed errors, the budget in real time) is in
//! the suite shared with the blocking driver, `tests/suites/drivers.rs` of `mcp-testkit`, which
//! runs them on both a multi-thread and a current-thread runtime.

mod common;

use common::echo;
use mcp_driver_tokio::{CancelHandle, Client};
use mcp_proto::{Action, Budget};

fn assert_send<T: Send>(_: &T) {}

#[test]
fn operation_futures_and_handles_are_send() {
    fn assert_send_sync_clone<T: Send + Sync + Clone + 'static>() {}
    assert_send_sync_clone::<CancelHandle>();
    let client = Client::connect("http://127.0.0.1:9/mcp").expect("valid URL");
    assert_send(&client);
    {
        let probe = client.probe();
        assert_send(&probe);
    }
    {
        let list = client.list_tools();
        assert_send(&list);
    }
    {
        let call = client.call_tool("echo", echo("hi"));
        assert_send(&call);
    }
    {
        let close = client.close();
        assert_send(&close);
    }
    {
        let run = client.run(Action::Probe, Budget::from_secs(1));
        assert_send(&run);
    }
}

/// An operation's future is moved at least once before it runs (into `block_on`, or into a
/// spawned task), and every move copies all of it. The operation and its driving loop live on
/// the heap, so the future holds little more than its arguments: 1.4-1.6 KB in debug and
/// release builds, where it was 8.8-9 KB (a copy of 18k instructions a warm call through
/// `block_on`, a sixth of the call).
#[test]
fn an_operation_s_future_is_small_to_move() {
    let client = Client::connect("http://127.0.0.1:9/mcp").expect("valid URL");
    let call = client.call_tool("echo", echo("hi"));
    assert!(
        std::mem::size_of_val(&call) < 4096,
        "{} bytes",
        std::mem::size_of_val(&call)
    );
    let run = client.run(Action::Probe, Budget::from_secs(1));
    assert!(
        std::mem::size_of_val(&run) < 4096,
        "{} bytes",
        std::mem::size_of_val(&run)
    );
}
