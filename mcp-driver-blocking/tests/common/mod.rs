//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::time::Duration;

use mcp_driver_blocking::Client;
use mcp_proto::{Budget, Resolution, SessionConfig};
use mcp_testkit::TestServer;
use serde_json::{Map, Value};

#[allow(unused_imports)] // not every test binary records legs
pub(crate) use mcp_testkit::Recorder;

/// A configuration for `server` with `budget` at millisecond resolution.
pub(crate) fn config(server: &TestServer, budget: Duration) -> SessionConfig {
    SessionConfig::new(&server.url())
        .expect("the test server's URL is valid")
        .with_budget(Budget::from_duration(budget))
        .with_resolution(Resolution::MILLISECOND)
        .with_protocol_version(mcp_proto::ProtocolVersion::LATEST)
}

/// A client for `server` with `budget` at millisecond resolution, reporting to a recorder.
pub(crate) fn client(server: &TestServer, budget: Duration) -> (Client, Recorder) {
    let client = Client::new(config(server, budget));
    let recorder = Recorder::default();
    client.set_observer(recorder.clone());
    (client, recorder)
}

/// `{"text": text}`.
pub(crate) fn text_args(text: &str) -> Map<String, Value> {
    let mut args = Map::new();
    args.insert("text".into(), Value::from(text));
    args
}

/// `{"ms": ms}`.
pub(crate) fn sleep_args(ms: u64) -> Map<String, Value> {
    let mut args = Map::new();
    args.insert("ms".into(), Value::from(ms));
    args
}
