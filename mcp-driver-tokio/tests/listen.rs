//! The session's standalone stream: opened beside the call when asked for, tolerated when the
//! server does not offer it. (Closing the session with a DELETE is in the suite shared with
//! the blocking driver, `tests/suites/drivers.rs` of `mcp-testkit`.)

use std::time::Duration;

use mcp_driver_tokio::Client;
use mcp_proto::{Budget, Resolution, SessionConfig};
use mcp_testkit::{Script, TestServer};
use serde_json::Map;

#[tokio::test]
async fn a_server_without_a_standalone_stream_still_answers_the_call() {
    let server = TestServer::start(Script::new());
    let config = SessionConfig::new(&server.url())
        .unwrap()
        .with_budget(Budget::from_secs(5))
        .with_resolution(Resolution::MILLISECOND)
        .with_listen(true)
        .with_protocol_version(mcp_proto::ProtocolVersion::LATEST);
    let client = Client::new(config);
    let mut args = Map::new();
    args.insert("text".into(), "hi".into());
    let result = tokio::time::timeout(Duration::from_secs(10), client.call_tool("echo", args))
        .await
        .expect("within the budget")
        .expect("the call succeeds");
    assert_eq!(result.text(), "hi");
    let methods = server.rpc_methods();
    assert!(methods.iter().any(|m| m == "GET"), "{methods:?}");
}
