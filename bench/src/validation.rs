//! What checking a tool's result against its `outputSchema` costs a warm call (issue 46).
//!
//! Each row is the sequential case of one driver (one session, opened before the clock, one
//! `tools/call` after another on it) against the legacy server's JSON answers, calling the
//! `forecast` tool the bench's server scripts ([`mcp_testkit::forecast_schema`],
//! [`mcp_testkit::forecast_result`]): an `outputSchema` of five
//! typed properties, all required, one of them an array of objects (a date, a high, a low and
//! the conditions), and an answer of seven days that matches it, as `structuredContent` and as
//! its JSON in a text block (1,336 bytes of JSON-RPC answer). Before the clock each session
//! walks the tools listing (so that it knows the tool's schema) and makes one call, checked;
//! the rows differ only in [`OutputValidation`]:
//!
//! * `sequential unvalidated <driver>`: [`OutputValidation::Off`], the result handed over as
//!   it came;
//! * `sequential validated <driver>`: [`OutputValidation::WhenListed`] (the default), every
//!   result checked against the schema the listing declared (compiled on the first call,
//!   before the clock).
//!
//! The rows take turns window by window like the network cases; each window's calls per
//! second is kept, so that the report can say how far the windows spread.

use std::time::Duration;

use mcp_proto::schema::OutputValidation;
use mcp_proto::{CallToolResult, ProtocolVersion, SessionConfig};
use serde_json::{Map, Value};

use crate::cases::{RunCfg, measure_async, measure_sync};
use crate::server::ServerProcess;
use crate::stats::{CpuSnapshot, CpuUse, Sample, Stats};

/// The tool the rows call.
pub const TOOL: &str = "forecast";

/// The server role the rows talk to (the legacy process's JSON answers; its script lists the
/// `forecast` tool).
pub const ROLE: &str = "json";

/// Which driver runs a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Driver {
    /// `mcp-driver-blocking`, on the calling thread.
    Blocking,
    /// `mcp-driver-tokio`, on a current-thread runtime.
    Tokio,
}

impl Driver {
    /// The name in the tables.
    pub fn label(self) -> &'static str {
        match self {
            Self::Blocking => "mcp-driver-blocking",
            Self::Tokio => "mcp-driver-tokio",
        }
    }
}

/// The rows in the order they run and are reported: per driver, unvalidated then validated.
pub fn rows() -> Vec<(Driver, bool)> {
    [Driver::Blocking, Driver::Tokio]
        .into_iter()
        .flat_map(|driver| [(driver, false), (driver, true)])
        .collect()
}

/// The name of a row, as `--only` matches it: `sequential validated mcp-driver-blocking`,
/// `sequential unvalidated mcp-driver-tokio`...
pub fn row_name(driver: Driver, validated: bool) -> String {
    let checked = if validated {
        "validated"
    } else {
        "unvalidated"
    };
    format!("sequential {checked} {}", driver.label())
}

/// The arguments of every call.
pub fn arguments() -> Map<String, Value> {
    let mut arguments = Map::new();
    arguments.insert("location".to_owned(), Value::from("Lyon"));
    arguments
}

/// One measured row, its windows merged.
#[derive(Debug, Clone)]
pub struct Row {
    /// Who called.
    pub driver: Driver,
    /// Whether results were checked ([`OutputValidation::WhenListed`]) or not (`Off`).
    pub validated: bool,
    /// Every window's latencies, merged.
    pub sample: Sample,
    /// Calls per second of each window, in the order they ran.
    pub per_window: Vec<f64>,
    /// CPU spent around the windows (warm-up, listing and first call included).
    pub cpu: CpuUse,
}

impl Row {
    /// Throughput and latency of the merged windows.
    pub fn stats(&self) -> Stats {
        self.sample.stats()
    }

    /// Client CPU per call, in microseconds (warm-up and set-up shared out over every call
    /// run, warm-up included).
    pub fn client_us_per_call(&self) -> Option<f64> {
        crate::cases::per_op(self.cpu.client, self.stats().all_ops)
    }

    /// The slowest and fastest window, in calls per second.
    pub fn window_range(&self) -> (f64, f64) {
        let min = self
            .per_window
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min);
        let max = self.per_window.iter().copied().fold(0.0, f64::max);
        (min, max)
    }
}

/// Runs `rows` for `rounds` windows each (the rows taking turns, a window of
/// `cfg.duration / rounds` after its own warm-up), against `server`'s [`ROLE`];
/// `tick` is called after each window.
///
/// # Errors
/// The first failed call, listing or check.
pub fn measure(
    rows: &[(Driver, bool)],
    server: &ServerProcess,
    rounds: u32,
    cfg: RunCfg,
    mut tick: impl FnMut(),
) -> Result<Vec<Row>, String> {
    let url = server.url(ROLE).to_owned();
    let pid = Some(server.pid());
    let slice = RunCfg {
        warmup: cfg.warmup,
        duration: cfg.duration / rounds.max(1),
    };
    let mut measured: Vec<Row> = rows
        .iter()
        .map(|&(driver, validated)| Row {
            driver,
            validated,
            sample: Sample::default(),
            per_window: Vec::new(),
            cpu: CpuUse::default(),
        })
        .collect();
    for round in 0..rounds.max(1) {
        for row in &mut measured {
            let before = CpuSnapshot::take(pid);
            let window = sample(row.driver, row.validated, &url, slice)
                .map_err(|e| format!("{}: {e}", row_name(row.driver, row.validated)))?;
            let cpu = before.until(&CpuSnapshot::take(pid));
            row.per_window.push(window.stats().per_sec());
            row.sample.merge(window);
            if round == 0 {
                row.cpu = cpu;
            } else {
                row.cpu.merge(&cpu);
            }
            tick();
        }
    }
    Ok(measured)
}

/// The configuration of a row: the legacy era's latest version, results checked or not.
fn config(url: &str, validated: bool) -> Result<SessionConfig, String> {
    let when = if validated {
        OutputValidation::WhenListed
    } else {
        OutputValidation::Off
    };
    SessionConfig::new(url)
        .map(|c| {
            c.with_protocol_version(ProtocolVersion::LATEST)
                .with_output_validation(when)
        })
        .map_err(|e| e.to_string())
}

/// The first call's result must carry the seven days.
fn check_first(result: &CallToolResult) -> Result<(), String> {
    let days = result
        .structured_content
        .as_ref()
        .and_then(|s| s.get("days"))
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    if days == 7 && !result.is_error {
        Ok(())
    } else {
        Err(format!(
            "the forecast answered {:?}",
            result.structured_content
        ))
    }
}

/// The listing must declare the tool's `outputSchema` (or the validated row checks nothing).
fn check_listed(tools: &[mcp_proto::Tool]) -> Result<(), String> {
    let declared = tools
        .iter()
        .find(|t| t.name == TOOL)
        .and_then(|t| t.raw.get("outputSchema"))
        .is_some();
    if declared {
        Ok(())
    } else {
        Err(format!(
            "the listing declares no {TOOL} with an outputSchema"
        ))
    }
}

/// One window of one row: a session opened (listing walked, one call checked) before the
/// clock, then calls one after another.
///
/// # Errors
/// The first failed call, listing or check.
pub fn sample(driver: Driver, validated: bool, url: &str, cfg: RunCfg) -> Result<Sample, String> {
    let config = config(url, validated)?;
    match driver {
        Driver::Blocking => {
            let client = mcp_driver_blocking::Client::new(config);
            let listing = client.list_tools().map_err(|e| e.to_string())?;
            check_listed(&listing.items)?;
            let first = client
                .call_tool(TOOL, arguments())
                .map_err(|e| e.to_string())?;
            check_first(&first)?;
            measure_sync(cfg, || {
                client
                    .call_tool(TOOL, arguments())
                    .map(drop)
                    .map_err(|e| e.to_string())
            })
        }
        Driver::Tokio => {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            runtime.block_on(async {
                let client = mcp_driver_tokio::Client::new(config);
                let listing = client.list_tools().await.map_err(|e| e.to_string())?;
                check_listed(&listing.items)?;
                let first = client
                    .call_tool(TOOL, arguments())
                    .await
                    .map_err(|e| e.to_string())?;
                check_first(&first)?;
                measure_async(cfg, async || {
                    client
                        .call_tool(TOOL, arguments())
                        .await
                        .map(drop)
                        .map_err(|e| e.to_string())
                })
                .await
            })
        }
    }
}

/// The Markdown table of the rows: per driver, calls/s without and with the check, their
/// ratio, the windows' spread, p50 and client CPU per call.
pub fn table(rows: &[Row]) -> String {
    let mut out = String::from(
        "| driver | validation | calls/s | windows (min–max calls/s) | p50 µs | p99 µs \
         | client CPU µs/call | other load (cores) |\n|---|---|---:|---:|---:|---:|---:|---:|\n",
    );
    for row in rows {
        let stats = row.stats();
        let (min, max) = row.window_range();
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        out.push_str(&format!(
            "| {} | {} | {:.0} | {:.0}–{:.0} | {:.0} | {:.0} | {} | {} |\n",
            row.driver.label(),
            if row.validated { "WhenListed" } else { "Off" },
            stats.per_sec(),
            min,
            max,
            us(stats.p50),
            us(stats.p99),
            row.client_us_per_call()
                .map_or_else(|| "–".to_owned(), |v| format!("{v:.1}")),
            row.cpu
                .other_cores()
                .map_or_else(|| "–".to_owned(), |v| format!("{v:.2}")),
        ));
    }
    for driver in [Driver::Blocking, Driver::Tokio] {
        let find = |validated: bool| {
            rows.iter()
                .find(|r| r.driver == driver && r.validated == validated)
        };
        if let (Some(off), Some(on)) = (find(false), find(true)) {
            let (off_stats, on_stats) = (off.stats(), on.stats());
            let ratio = on_stats.per_sec() / off_stats.per_sec();
            let p50 = on_stats.p50.as_secs_f64() * 1e6 - off_stats.p50.as_secs_f64() * 1e6;
            let cpu = on
                .client_us_per_call()
                .zip(off.client_us_per_call())
                .map_or_else(|| "–".to_owned(), |(a, b)| format!("{:+.1}", a - b));
            out.push_str(&format!(
                "\n{}: validated / unvalidated = {ratio:.3} (calls/s); p50 {p50:+.1} µs; \
                 client CPU {cpu} µs per call.\n",
                driver.label()
            ));
        }
    }
    out
}
