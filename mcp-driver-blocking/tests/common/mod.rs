//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcp_driver_blocking::Client;
use mcp_proto::{Budget, Event, LegEnd, LegReport, Observer, Resolution, SessionConfig};
use mcp_testkit::TestServer;
use serde_json::{Map, Value};

/// Records every leg report and event, shareable with the test after the client takes it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Recorder {
    legs: Arc<Mutex<Vec<LegReport>>>,
    events: Arc<Mutex<Vec<Event>>>,
}

impl Recorder {
    pub(crate) fn legs(&self) -> Vec<LegReport> {
        self.legs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn ends(&self) -> Vec<LegEnd> {
        self.legs().iter().map(|l| l.end).collect()
    }

    pub(crate) fn events(&self) -> Vec<Event> {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Observer for Recorder {
    fn leg_finished(&mut self, report: &LegReport) {
        self.legs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(report.clone());
    }

    fn event(&mut self, event: &Event) {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(event.clone());
    }
}

/// A configuration for `server` with `budget` at millisecond resolution.
pub(crate) fn config(server: &TestServer, budget: Duration) -> SessionConfig {
    SessionConfig::new(&server.url())
        .expect("the test server's URL is valid")
        .budget(Budget::from_duration(budget))
        .resolution(Resolution::MILLISECOND)
}

/// A client for `server` with `budget` at millisecond resolution, reporting to a recorder.
pub(crate) fn client(server: &TestServer, budget: Duration) -> (Client, Recorder) {
    let mut client = Client::new(config(server, budget));
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
