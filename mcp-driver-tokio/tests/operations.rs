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
