//! How far past its budget an operation ends against a server that never answers.
//!
//! Starts a loopback `mcp-testkit` server whose `tools/call` stalls, then runs 20 tool calls,
//! each on a fresh client (so each is the whole operation: `initialize`,
//! `notifications/initialized`, then the stalled `tools/call`) under a 2 s budget at 1 ms
//! resolution, and prints how long past 2 s each one returned `LegTimedOut`, then the
//! median and the maximum. It also prints how late the stalled leg ended past its own grant
//! (as the observer's `LegReport` measured it): the part of the overrun that is tokio's timer
//! (1 ms wheel ticks, deadlines rounded up) rather than the grant's rounding to the unit.
//!
//! ```text
//! cargo run --release -p mcp-driver-tokio --example tokio_overrun
//! ```

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use mcp_driver_tokio::Client;
use mcp_proto::{Budget, Error, LegReport, Observer, Resolution, SessionConfig};
use mcp_testkit::{Hostile, Script, TestServer};

const RUNS: usize = 20;
const BUDGET: Duration = Duration::from_secs(2);

/// Keeps the last leg's report.
#[derive(Debug, Clone, Default)]
struct LastLeg(Arc<Mutex<Option<LegReport>>>);

impl Observer for LastLeg {
    fn leg_finished(&mut self, report: &LegReport) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(report.clone());
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let server = TestServer::start(Script::new().hostile("tools/call", Hostile::Stall));
    let config = SessionConfig::new(&server.url())?
        .with_budget(Budget::from_duration(BUDGET))
        .with_resolution(Resolution::MILLISECOND)
        .with_protocol_version(mcp_proto::ProtocolVersion::LATEST);
    println!(
        "{RUNS} tool calls against a stalled server, budget {} ms at 1 ms resolution",
        BUDGET.as_millis()
    );
    let mut overruns = Vec::with_capacity(RUNS);
    let mut lateness = Vec::with_capacity(RUNS);
    for run in 1..=RUNS {
        let client = Client::new(config.clone());
        let last = LastLeg::default();
        client.set_observer(last.clone());
        let started = Instant::now();
        let result = client.call_tool("echo", serde_json::Map::new()).await;
        let took = started.elapsed();
        match result {
            Err(Error::LegTimedOut { .. }) => {}
            other => {
                eprintln!("run {run}: expected LegTimedOut, got {other:?}");
                std::process::exit(1);
            }
        }
        let overrun = took.saturating_sub(BUDGET);
        let leg = last.0.lock().unwrap_or_else(PoisonError::into_inner).take();
        let late = leg.map_or(Duration::ZERO, |leg| leg.elapsed.saturating_sub(leg.grant));
        println!(
            "run {run:2}: returned after {:8.3} ms, overrun {:6.3} ms (last leg {:6.3} ms past its grant)",
            ms(took),
            ms(overrun),
            ms(late)
        );
        overruns.push(overrun);
        lateness.push(late);
    }
    let (median, min, max) = summary(&mut overruns);
    println!(
        "overrun past the {} ms budget: median {median:.3} ms, min {min:.3} ms, max {max:.3} ms",
        BUDGET.as_millis()
    );
    let (median, min, max) = summary(&mut lateness);
    println!(
        "stalled leg past its own grant: median {median:.3} ms, min {min:.3} ms, max {max:.3} ms"
    );
    Ok(())
}

/// Median, minimum and maximum, in milliseconds.
fn summary(samples: &mut [Duration]) -> (f64, f64, f64) {
    samples.sort();
    let n = samples.len();
    let median = (samples[(n - 1) / 2] + samples[n / 2]) / 2;
    (ms(median), ms(samples[0]), ms(samples[n - 1]))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
