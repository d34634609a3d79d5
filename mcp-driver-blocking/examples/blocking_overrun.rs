//! Measures how far past its budget an operation against a stalled server ends.
//!
//! The server answers the handshake and never answers `tools/call`. Each run is a fresh
//! client (three legs: initialize, notifications/initialized, tools/call) under a 2 s budget
//! with millisecond grants; the overrun is the wall time of the call minus the budget.
//!
//! ```text
//! cargo run --release -p mcp-driver-blocking --example blocking_overrun [runs] [budget-ms]
//! ```

use std::time::{Duration, Instant};

use mcp_driver_blocking::Client;
use mcp_proto::{Budget, Error, Resolution, SessionConfig};
use mcp_testkit::{Hostile, Script, TestServer};

fn main() {
    let mut args = std::env::args().skip(1);
    let runs: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20);
    let budget_ms: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(2000);
    let budget = Duration::from_millis(budget_ms);

    let server = TestServer::start(Script::new().hostile("tools/call", Hostile::Stall));
    let mut overruns = Vec::with_capacity(runs);
    for run in 1..=runs {
        let config = SessionConfig::new(&server.url())
            .expect("the test server's URL is valid")
            .with_budget(Budget::from_duration(budget))
            .with_resolution(Resolution::MILLISECOND)
            .with_protocol_version(mcp_proto::ProtocolVersion::LATEST);
        let client = Client::new(config);
        let started = Instant::now();
        let result = client.call_tool("echo", serde_json::Map::new());
        let elapsed = started.elapsed();
        match result {
            Err(Error::LegTimedOut { .. }) => {}
            other => panic!("run {run}: expected LegTimedOut, got {other:?}"),
        }
        let overrun = elapsed.saturating_sub(budget);
        let early = budget.saturating_sub(elapsed);
        if !early.is_zero() {
            println!("run {run:2}: ended {early:?} BEFORE the budget");
        } else {
            println!("run {run:2}: overrun {overrun:?}");
        }
        overruns.push(overrun);
    }
    overruns.sort();
    let median = if runs % 2 == 1 {
        overruns[runs / 2]
    } else {
        (overruns[runs / 2 - 1] + overruns[runs / 2]) / 2
    };
    println!(
        "budget {budget:?}, {runs} runs, resolution 1 ms: overrun median {median:?}, min {:?}, max {:?}",
        overruns[0],
        overruns[runs - 1]
    );
}
