//! The session's standalone stream: opened beside the call when asked for, tolerated when the
//! server does not offer it.

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
        .budget(Budget::from_secs(5))
        .resolution(Resolution::MILLISECOND)
        .listen(true);
    let mut client = Client::new(config);
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

#[tokio::test]
async fn close_sends_a_delete_and_the_next_operation_starts_a_new_session() {
    let server = TestServer::start(Script::new());
    let mut client = Client::new(SessionConfig::new(&server.url()).unwrap());
    client.probe().await.expect("probe");
    let first = client.session().info().and_then(|i| i.session_id.clone());
    client.close().await.expect("closed");
    assert!(client.session().info().is_none());
    client.probe().await.expect("a new session");
    let second = client.session().info().and_then(|i| i.session_id.clone());
    assert_ne!(first, second);
    let methods = server.rpc_methods();
    assert_eq!(
        methods,
        [
            "initialize",
            "notifications/initialized",
            "DELETE",
            "initialize",
            "notifications/initialized"
        ]
    );
}
