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

/// Waits until `ready` holds (polling every 5 ms): the state a test is about, as the server
/// or the client's observer signals it, never a guess at how long it takes to get there.
/// Panics after 10 s.
pub(crate) fn wait_until(ready: impl Fn() -> bool) {
    let give_up = std::time::Instant::now() + Duration::from_secs(10);
    while !ready() {
        assert!(
            std::time::Instant::now() < give_up,
            "the awaited state never came"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
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
