//! Measures how far past its budget an operation against a stalled server ends.
//!
//! The server answers the handshake and never answers `tools/call`. Each run is a fresh
//! client (three legs: initialize, notifications/initialized, tools/call) under a 2 s budget
//! with millisecond grants; the overrun is the wall time of the call minus the budget. It also
//! prints how late the stalled leg ended past its own grant (as the operation's `LegReport`
//! measured it): the part of the overrun that is the driver's, not the grant's rounding up to
//! the unit.
//!
//! ```text
//! cargo run --release -p mcp-driver-blocking --example blocking_overrun [runs] [budget-ms]
//! ```

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use mcp_driver_blocking::Client;
use mcp_proto::{Budget, Error, LegReport, Observer, Resolution, SessionConfig};

/// Keeps the last leg's report.
#[derive(Debug, Clone, Default)]
struct LastLeg(Arc<Mutex<Option<LegReport>>>);

impl Observer for LastLeg {
    fn leg_finished(&mut self, report: &LegReport) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(report.clone());
    }
}
use mcp_testkit::{Hostile, Script, TestServer};

fn main() {
    let mut args = std::env::args().skip(1);
    let runs: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20);
    let budget_ms: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(2000);
    let budget = Duration::from_millis(budget_ms);

    let server = TestServer::start(Script::new().hostile("tools/call", Hostile::Stall));
    let mut overruns = Vec::with_capacity(runs);
    let mut lateness = Vec::with_capacity(runs);
    for run in 1..=runs {
        let config = SessionConfig::new(&server.url())
            .expect("the test server's URL is valid")
            .with_budget(Budget::from_duration(budget))
            .with_resolution(Resolution::MILLISECOND)
            .with_protocol_version(mcp_proto::ProtocolVersion::LATEST);
        let client = Client::new(config);
        let last = LastLeg::default();
        client.set_observer(last.clone());
        let started = Instant::now();
        let result = client.call_tool("echo", serde_json::Map::new());
        let elapsed = started.elapsed();
        match result {
            Err(Error::LegTimedOut { .. }) => {}
            other => panic!("run {run}: expected LegTimedOut, got {other:?}"),
        }
        let overrun = elapsed.saturating_sub(budget);
        let leg = last.0.lock().unwrap_or_else(PoisonError::into_inner).take();
        lateness.push(leg.map_or(Duration::ZERO, |leg| leg.elapsed.saturating_sub(leg.grant)));
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
    lateness.sort();
    println!(
        "stalled leg past its own grant: median {:?}, max {:?}",
        (lateness[(runs - 1) / 2] + lateness[runs / 2]) / 2,
        lateness[runs - 1]
    );
}
