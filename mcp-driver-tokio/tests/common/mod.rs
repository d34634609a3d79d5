//! Helpers shared by the test binaries (each uses a subset).
#![allow(dead_code)]

use std::time::Duration;

use mcp_driver_tokio::{CancelHandle, Client};
use mcp_proto::{Resolution, SessionConfig};
use mcp_testkit::TestServer;
use serde_json::{Map, Value};

/// A configuration for `server` with millisecond grants.
pub(crate) fn config(server: &TestServer) -> SessionConfig {
    SessionConfig::new(&server.url())
        .expect("the test server's URL is valid")
        .with_resolution(Resolution::MILLISECOND)
        .with_protocol_version(mcp_proto::ProtocolVersion::LATEST)
}

/// A client for `server` with millisecond grants and the default 20 s budget.
pub(crate) fn client(server: &TestServer) -> Client {
    Client::new(config(server))
}

/// Tool arguments from pairs.
pub(crate) fn args(pairs: &[(&str, Value)]) -> Map<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

/// `{"text": text}`, the echo tool's arguments.
pub(crate) fn echo(text: &str) -> Map<String, Value> {
    args(&[("text", Value::from(text))])
}

#[allow(unused_imports)] // not every test binary records legs
pub(crate) use mcp_testkit::Recorder;

/// Polls `condition` every 10 ms until it holds or `within` is over.
pub(crate) async fn eventually(within: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let end = tokio::time::Instant::now() + within;
    loop {
        if condition() {
            return true;
        }
        if tokio::time::Instant::now() >= end {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Fires `handle` once `ready` says the operation is in the state the test is about (polled
/// every 10 ms, at most 5 s); returns when it fired.
pub(crate) async fn cancel_once(
    handle: CancelHandle,
    ready: impl FnMut() -> bool,
) -> std::time::Instant {
    assert!(
        eventually(Duration::from_secs(5), ready).await,
        "the awaited state never came"
    );
    let fired = std::time::Instant::now();
    handle.cancel();
    fired
}
