//! The Markdown tables of `BENCHMARKS.md`, and criterion's estimates read back from disk.

use std::fmt::Write as _;
use std::path::Path;

use crate::cases::{ClientKind, Era, Group, Measurement, Mode, Target, case_name};
use crate::memory::MemoryRun;
use crate::overrun::{OverrunRow, Place};
use crate::sdks::SdkRun;
use crate::whole::{Runner, WholeRow};

/// One row of the server-ceiling table.
#[derive(Debug, Clone, PartialEq)]
pub struct CeilingRow {
    /// The answer format.
    pub mode: Mode,
    /// Who loaded the server (`raw xN`, `wrk -c16`).
    pub load: String,
    /// The server's calls/s.
    pub per_sec: f64,
    /// Server CPU per call, µs (when measured).
    pub server_us: Option<f64>,
    /// Client (load generator) CPU per call, µs (when measured).
    pub client_us: Option<f64>,
}

fn us(d: std::time::Duration) -> String {
    format!("{:.0}", d.as_secs_f64() * 1e6)
}

fn opt(value: Option<f64>, decimals: usize) -> String {
    value.map_or_else(|| "–".to_owned(), |v| format!("{v:.decimals$}"))
}

fn ratio(a: f64, b: Option<f64>) -> Option<f64> {
    b.filter(|b| *b > 0.0).map(|b| a / b)
}

/// The calls/s of `client` in the same case as `m`.
fn rate_of(all: &[Measurement], m: &Measurement, client: ClientKind) -> Option<f64> {
    all.iter()
        .find(|o| o.group == m.group && o.target == m.target && o.client == client)
        .map(|o| o.stats.per_sec())
}

/// The servers whose cases share a table: the legacy HTTP server (whichever answer format),
/// the modern one, the stdio server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Legacy,
    Modern,
    Stdio,
}

impl Family {
    fn of(target: Target) -> Self {
        match target {
            Target::Http(Era::Legacy, _) => Self::Legacy,
            Target::Http(Era::Modern, _) => Self::Modern,
            Target::Stdio => Self::Stdio,
        }
    }
}

/// The title of the table of `group` against `family`'s server.
fn table_title(family: Family, group: Group) -> String {
    match (family, group) {
        (Family::Legacy, _) => group_title(group),
        (Family::Modern, Group::Sequential) => {
            "2026-07-28 era: sequential `tools/call`, each one stateless POST (no handshake, \
             no session)"
                .to_owned()
        }
        (Family::Modern, Group::Cold) => {
            "2026-07-28 era: cold operations: new client, one call".to_owned()
        }
        (Family::Stdio, Group::Sequential) => {
            "stdio: sequential `tools/call` on a kept server process".to_owned()
        }
        (Family::Stdio, Group::Cold) => {
            "stdio: cold operations: spawn, handshake + call, close (stdin closed, exit awaited)"
                .to_owned()
        }
        (Family::Modern, _) => format!("2026-07-28 era: {}", group_title(group)),
        (Family::Stdio, _) => format!("stdio: {}", group_title(group)),
    }
}

/// What the server saw per operation: the total, then each JSON-RPC method (`GET`, `DELETE`
/// for those) in the order first seen, its count after it unless it is one:
/// `3: initialize + notifications/initialized + tools/call`.
fn legs_cell(m: &Measurement) -> String {
    let Some(per_op) = m.legs_per_op() else {
        return "–".to_owned();
    };
    let whole = |v: f64| (v - v.round()).abs() < 0.005;
    let number = |v: f64| {
        if whole(v) {
            format!("{v:.0}")
        } else {
            format!("{v:.2}")
        }
    };
    let total: f64 = per_op.iter().map(|(_, v)| v).sum();
    let parts: Vec<String> = per_op
        .iter()
        .filter(|(_, v)| *v >= 0.005)
        .map(|(label, v)| {
            if whole(*v) && v.round() == 1.0 {
                label.clone()
            } else {
                format!("{label} ×{}", number(*v))
            }
        })
        .collect();
    format!("{}: {}", number(total), parts.join(" + "))
}

/// The title of a group's table.
pub fn group_title(group: Group) -> String {
    match group {
        Group::Sequential => "Sequential `tools/call` on a reused session".to_owned(),
        Group::Cold => "Cold operations: new client and session, handshake + call".to_owned(),
        Group::ColdClosed => {
            "Cold operations, closed: new client and session, handshake + call + DELETE".to_owned()
        }
        Group::InFlight(1) => "1 operation in flight (one task; 2-worker runtime)".to_owned(),
        Group::InFlight(n) => {
            format!("{n} operations in flight ({n} tasks, a client and session each)")
        }
        Group::Shared(n) => {
            format!("{n} operations in flight on one session ({n} tasks, one client)")
        }
    }
}

/// Each of `items` once, in the order it first appears.
fn in_order<T: PartialEq>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut once = Vec::new();
    for item in items {
        if !once.contains(&item) {
            once.push(item);
        }
    }
    once
}

/// One table per group and server (the legacy HTTP server, the modern one, the stdio
/// server), in the order they first appear. The tables of the shared groups
/// ([`Group::Shared`]) have one column more: the `initialize` requests per window, the
/// handshakes the tasks sharing one client made between them; the cold tables and the modern
/// ones (HTTP) have one column more too: the requests the server saw per operation, by method.
pub fn network_tables(all: &[Measurement]) -> String {
    let mut out = String::new();
    for (family, group) in in_order(all.iter().map(|m| (Family::of(m.target), m.group))) {
        let shared = matches!(group, Group::Shared(_));
        let cold = matches!(group, Group::Cold | Group::ColdClosed);
        let legs = family != Family::Stdio && (cold || family == Family::Modern);
        let _ = writeln!(out, "#### {}\n", table_title(family, group));
        out.push_str(
            "| mode | client | calls/s | p50 µs | p99 µs | × floor | × rmcp | × rmcp pooled \
             | client CPU µs/call | server CPU µs/call | new conns/call | other load (cores) |",
        );
        if shared {
            out.push_str(" initialize requests / window |");
        }
        if legs {
            out.push_str(" requests / op (the server saw) |");
        }
        out.push_str("\n|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
        if shared {
            out.push_str("--:|");
        }
        if legs {
            out.push_str("---|");
        }
        out.push('\n');
        let rows = all
            .iter()
            .filter(|m| m.group == group && Family::of(m.target) == family);
        for m in rows {
            let rate = m.stats.per_sec();
            let floor = if m.client.is_floor() {
                None
            } else {
                ratio(rate, rate_of(all, m, m.client.floor(m.target)))
            };
            let rmcp = ratio(rate, rate_of(all, m, ClientKind::Rmcp));
            let pooled = ratio(rate, rate_of(all, m, ClientKind::RmcpPooled));
            let _ = write!(
                out,
                "| {} | {} | {:.0} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                m.target.label(),
                m.client.label_for(m.target),
                rate,
                us(m.stats.p50),
                us(m.stats.p99),
                opt(floor, 2),
                opt(rmcp, 2),
                opt(pooled, 2),
                opt(m.client_us_per_op(), 1),
                opt(m.server_us_per_op(), 1),
                opt(m.connections_per_op(), 2),
                opt(m.cpu.other_cores(), 2),
            );
            if shared {
                let per_window = m.initialize_per_window();
                let whole = per_window.is_some_and(|v| v.fract() == 0.0);
                let _ = write!(out, " {} |", opt(per_window, if whole { 0 } else { 2 }));
            }
            if legs {
                let _ = write!(out, " {} |", legs_cell(m));
            }
            out.push('\n');
        }
        out.push('\n');
    }
    out
}

/// The cross-SDK tables: one per case, in the order the cases first appear, then the line
/// naming what each client said it runs (SDK and version, runtime).
pub fn sdk_tables(runs: &[SdkRun]) -> String {
    let mut out = String::new();
    for group in in_order(runs.iter().map(|r| r.group)) {
        let _ = writeln!(out, "#### {}\n", group_title(group));
        out.push_str(
            "| mode | client | calls/s | p50 µs | p99 µs | client CPU ms / 1000 calls \
             | server CPU ms / 1000 calls | peak RSS MiB | new conns/call |\n\
             |---|---|--:|--:|--:|--:|--:|--:|--:|\n",
        );
        for run in runs.iter().filter(|r| r.group == group) {
            let _ = writeln!(
                out,
                "| {} | {} | {:.0} | {} | {} | {} | {} | {} | {} |",
                run.mode.label(),
                run.sdk.label(),
                run.stats.per_sec(),
                us(run.stats.p50),
                us(run.stats.p99),
                opt(run.client_us_per_op(), 1),
                opt(run.server_us_per_op(), 1),
                opt(run.peak_kib.map(|k| k as f64 / 1024.0), 1),
                opt(run.connections_per_op(), 2),
            );
        }
        out.push('\n');
    }
    let named = in_order(
        runs.iter()
            .map(|run| format!("{}: {}", run.sdk.label(), run.version)),
    );
    let _ = writeln!(
        out,
        "Clients as they reported themselves: {}.",
        named.join("; ")
    );
    out
}

/// The server-ceiling table.
pub fn ceiling_table(rows: &[CeilingRow]) -> String {
    let mut out = String::from(
        "| mode | load | server calls/s | server CPU µs/call | load generator CPU µs/call |\n\
         |---|---|--:|--:|--:|\n",
    );
    for row in rows {
        let _ = writeln!(
            out,
            "| {} | {} | {:.0} | {} | {} |",
            row.mode.label(),
            row.load,
            row.per_sec,
            opt(row.server_us, 1),
            opt(row.client_us, 1),
        );
    }
    out
}

/// One parsing benchmark read from criterion's output.
#[derive(Debug, Clone, PartialEq)]
pub struct ParseRow {
    /// The criterion group, e.g. `parse-1MiB-json`.
    pub group: String,
    /// The function, e.g. `mcp-proto`.
    pub function: String,
    /// Bytes per iteration.
    pub bytes: u64,
    /// Median time per iteration, ns.
    pub median_ns: f64,
}

impl ParseRow {
    /// Throughput in MB/s (10^6 bytes per second).
    pub fn mb_per_sec(&self) -> f64 {
        self.bytes as f64 / self.median_ns * 1e3
    }
}

/// Reads every `<group>/<function>/new/{estimates,benchmark}.json` under `dir` whose group
/// starts with `parse-`.
pub fn read_criterion(dir: &Path) -> Vec<ParseRow> {
    let mut rows = Vec::new();
    let Ok(groups) = std::fs::read_dir(dir) else {
        return rows;
    };
    for group in groups.flatten() {
        let group_name = group.file_name().to_string_lossy().into_owned();
        if !group_name.starts_with("parse-") {
            continue;
        }
        let Ok(functions) = std::fs::read_dir(group.path()) else {
            continue;
        };
        for function in functions.flatten() {
            let new = function.path().join("new");
            let read = |name: &str| -> Option<serde_json::Value> {
                serde_json::from_slice(&std::fs::read(new.join(name)).ok()?).ok()
            };
            let (Some(estimates), Some(benchmark)) =
                (read("estimates.json"), read("benchmark.json"))
            else {
                continue;
            };
            let median = estimates["median"]["point_estimate"].as_f64();
            let bytes = benchmark["throughput"]["Bytes"].as_u64();
            if let (Some(median_ns), Some(bytes)) = (median, bytes) {
                rows.push(ParseRow {
                    group: group_name.clone(),
                    function: function.file_name().to_string_lossy().into_owned(),
                    bytes,
                    median_ns,
                });
            }
        }
    }
    rows.sort_by(|a, b| (&a.group, &a.function).cmp(&(&b.group, &b.function)));
    rows
}

/// Median ns of each `sansio-call/<form>` criterion benchmark under `dir`.
pub fn read_sansio(dir: &Path) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    for form in ["json", "sse"] {
        let path = dir
            .join("sansio-call")
            .join(form)
            .join("new/estimates.json");
        let median = std::fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
            .and_then(|v| v["median"]["point_estimate"].as_f64());
        if let Some(ns) = median {
            out.push((form.to_owned(), ns));
        }
    }
    out
}

/// The baseline every parsing row is compared to.
pub const PARSE_BASELINE: &str = "serde_json-value";

/// The parsing table: each function's MB/s and its ratio to the baseline of its group.
pub fn parse_table(rows: &[ParseRow]) -> String {
    let mut out = String::from(
        "| answer | parser | bytes fed | median ms | MB/s | × serde_json Value |\n\
         |---|---|--:|--:|--:|--:|\n",
    );
    for row in rows {
        let baseline = rows
            .iter()
            .find(|r| r.group == row.group && r.function == PARSE_BASELINE)
            .map(ParseRow::mb_per_sec);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.2} | {:.0} | {} |",
            row.group.trim_start_matches("parse-"),
            row.function,
            row.bytes,
            row.median_ns / 1e6,
            row.mb_per_sec(),
            opt(ratio(row.mb_per_sec(), baseline), 2),
        );
    }
    out
}

/// The memory table; `cap_kib` is the configured body cap.
pub fn memory_table(runs: &[MemoryRun], cap_kib: u64) -> String {
    let baseline = |driver: &str| {
        runs.iter()
            .find(|r| r.driver == driver && r.role == "json")
            .map(|r| r.peak_kib)
    };
    let mut out = String::from(
        "| driver | server answer | peak RSS (VmHWM) MiB | above baseline MiB | limit (cap + 16 MiB) | call took ms | how the call ended |\n\
         |---|---|--:|--:|--:|--:|---|\n",
    );
    let limit = (cap_kib + 16 * 1024) as f64 / 1024.0;
    for run in runs {
        let above = baseline(&run.driver).map(|b| run.peak_kib.saturating_sub(b) as f64 / 1024.0);
        let answer = match run.role.as_str() {
            "json" => "normal echo answer (baseline)",
            "oversize-length" => "100 MiB JSON, Content-Length",
            "oversize-chunked" => "100 MiB JSON, chunked",
            "oversize-sse" => "100 MiB SSE event, chunked",
            other => other,
        };
        let _ = writeln!(
            out,
            "| {} | {} | {:.1} | {} | {:.0} | {:.1} | {} |",
            run.driver,
            answer,
            run.peak_kib as f64 / 1024.0,
            opt(above, 1),
            limit,
            run.millis,
            run.outcome.replace('|', "\\|"),
        );
    }
    out
}

/// The title of the overrun table for `runs` runs a row.
pub fn overrun_title(runs: usize) -> String {
    format!(
        "Overrun past a {} s budget (stalled server, 1 ms resolution, {runs} run{})",
        crate::overrun::BUDGET.as_secs_f64(),
        if runs == 1 { "" } else { "s" }
    )
}

/// The overrun table: per driver and place, the overrun's median, min and max (ms), and
/// inside the operation the stalled leg's lateness past its own grant (median, max).
pub fn overrun_table(rows: &[OverrunRow]) -> String {
    let mut out = String::from(
        "| driver | where measured | median ms | min ms | max ms \
         | stalled leg past its grant: median ms | stalled leg past its grant: max ms |\n\
         |---|---|--:|--:|--:|--:|--:|\n",
    );
    for row in rows {
        let overrun = row.overrun();
        let lateness = row.lateness();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            row.driver.label(),
            row.place.label(),
            opt(overrun.map(|s| s.median), 2),
            opt(overrun.map(|s| s.min), 2),
            opt(overrun.map(|s| s.max), 2),
            opt(lateness.map(|s| s.median), 2),
            opt(lateness.map(|s| s.max), 2),
        );
    }
    out
}

/// The title of the whole-process table for `calls` calls a process.
pub fn whole_title(calls: u32) -> String {
    format!(
        "Whole process against rmcp's own server: `mcp-call --repeat {calls}` beside a bare client"
    )
}

/// The whole-process table: its caption (the server, its configuration, the method), then per
/// era and process the median calls/s over the rounds (and their range), the median of the
/// per-round ratios to the same round's floor, and CPU per call (medians over the rounds).
pub fn whole_table(rows: &[WholeRow], calls: u32, rounds: u32) -> String {
    let mut out = format!(
        "Server: rmcp 3.11's own `StreamableHttpService` (`mcp-bench serve-rmcp`: the tool \
         `echo`, rmcp's `ServerHandler`, hyper's HTTP/1.1 server with keep-alive on 127.0.0.1, \
         a multi-threaded tokio runtime), configured with {}. Each row is one process making \
         N = {calls} sequential `tools/call`s of `echo` on one keep-alive connection (in \
         2025-11-25 after its handshake, the session's `DELETE` last) and exiting; the floor \
         (`mcp-bench floor-child`) posts the same requests as `mcp-call`'s blocking driver \
         (headers, body, ids counting up) through one ureq agent, reads each whole answer and \
         checks it echoes, and does nothing else; `bare ureq-proto` (`floor-child --proto`) \
         posts the same bytes with ureq's HTTP/1.1 core alone (`ureq-proto`, which the \
         blocking driver runs itself) on one TCP connection, one write a request: a row \
         beside the others, not the floor. R = {rounds} paired rounds per era: in each \
         round the era's four processes run to completion one at a time, in an order that \
         alternates between rounds (after one untimed warm-up run of each). calls/s = N / wall \
         time from spawn to exit, median over the rounds (min–max beside it); × floor = the \
         median over the rounds of the row's calls/s over the same round's floor's; CPU per \
         call: the process's user and system time (`getrusage(RUSAGE_CHILDREN)` around its \
         reaping) and the server's (`/proc/<pid>/stat`, 10 ms ticks), medians over the \
         rounds; waits per call: the process's voluntary context switches.\n\n\
         | era | process | calls/s (median) | rounds min–max | × floor | user µs/call \
         | system µs/call | server CPU µs/call | waits/call |\n\
         |---|---|--:|--:|--:|--:|--:|--:|--:|\n",
        crate::rmcp_server::CONFIG_LABEL
    );
    for row in rows {
        let rate = row.rate();
        let floor = rows
            .iter()
            .find(|f| f.era == row.era && f.runner == Runner::Floor);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {}–{} | {} | {} | {} | {} | {} |",
            crate::whole::version(row.era),
            row.runner.label(),
            opt(rate.map(|s| s.median), 0),
            opt(rate.map(|s| s.min), 0),
            opt(rate.map(|s| s.max), 0),
            opt(floor.and_then(|f| row.times_floor(f)), 2),
            opt(row.user_us(), 1),
            opt(row.system_us(), 1),
            opt(row.server_us(), 1),
            opt(row.switches_per_call(), 2),
        );
    }
    out
}

/// The checks of the overrun target: the median overrun inside the operation under 1 ms, for
/// each driver.
pub fn overrun_checks(rows: &[OverrunRow]) -> Vec<Check> {
    rows.iter()
        .filter(|row| row.place == Place::Inside)
        .filter_map(|row| {
            let median = row.overrun()?.median;
            Some(Check {
                what: format!(
                    "overrun median inside the operation, {}",
                    row.driver.label()
                ),
                measured: format!("{median:.2} ms"),
                target: "< 1.00 ms".to_owned(),
                met: median < 1.0,
            })
        })
        .collect()
}

/// One target check for the summary.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// What is checked.
    pub what: String,
    /// The measured value.
    pub measured: String,
    /// The target.
    pub target: String,
    /// Whether it is met.
    pub met: bool,
}

/// The summary of the targets.
pub fn checks_table(checks: &[Check]) -> String {
    let mut out = String::from("| target | measured | required | met |\n|---|--:|--:|---|\n");
    for c in checks {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            c.what,
            c.measured,
            c.target,
            if c.met { "yes" } else { "**no**" }
        );
    }
    out
}

/// The checks of the network targets: each driver ≥ 0.9× its floor on sequential calls and
/// cold operations, against every server (both eras over HTTP, both answer formats; stdio),
/// and ≥ 2× rmcp (default client) on sequential calls to the legacy HTTP server.
pub fn network_checks(all: &[Measurement]) -> Vec<Check> {
    let mut checks = Vec::new();
    for m in all
        .iter()
        .filter(|m| matches!(m.group, Group::Sequential | Group::Cold))
    {
        if !matches!(m.client, ClientKind::Blocking | ClientKind::Tokio) {
            continue;
        }
        let rate = m.stats.per_sec();
        let name = case_name(m.group, m.target, m.client);
        let floor = m.client.floor(m.target);
        if let Some(r) = ratio(rate, rate_of(all, m, floor)) {
            checks.push(Check {
                what: format!("{name} vs {}", floor.label()),
                measured: format!("{r:.2}×"),
                target: "≥ 0.90×".to_owned(),
                met: r >= 0.9,
            });
        }
        let legacy_sequential =
            m.group == Group::Sequential && matches!(m.target, Target::Http(Era::Legacy, _));
        if let (true, Some(r)) = (
            legacy_sequential,
            ratio(rate, rate_of(all, m, ClientKind::Rmcp)),
        ) {
            checks.push(Check {
                what: format!("{name} vs rmcp (default client)"),
                measured: format!("{r:.2}×"),
                target: "≥ 2.00×".to_owned(),
                met: r >= 2.0,
            });
        }
    }
    checks
}

/// The checks of the parsing target: mcp-proto ≥ 0.8× serde_json's Value.
pub fn parse_checks(rows: &[ParseRow]) -> Vec<Check> {
    rows.iter()
        .filter(|r| r.function == "mcp-proto")
        .filter_map(|r| {
            let baseline = rows
                .iter()
                .find(|b| b.group == r.group && b.function == PARSE_BASELINE)?;
            let x = r.mb_per_sec() / baseline.mb_per_sec();
            Some(Check {
                what: format!(
                    "parsing {} through mcp-proto vs serde_json Value",
                    r.group.trim_start_matches("parse-")
                ),
                measured: format!("{x:.2}×"),
                target: "≥ 0.80×".to_owned(),
                met: x >= 0.8,
            })
        })
        .collect()
}

/// The checks of the memory target: peak ≤ cap + 16 MiB for every hostile answer.
pub fn memory_checks(runs: &[MemoryRun], cap_kib: u64) -> Vec<Check> {
    let limit = cap_kib + 16 * 1024;
    runs.iter()
        .filter(|r| r.role != "json")
        .map(|r| Check {
            what: format!("peak RSS, {} driver, {}", r.driver, r.role),
            measured: format!("{:.1} MiB", r.peak_kib as f64 / 1024.0),
            target: format!("≤ {:.0} MiB", limit as f64 / 1024.0),
            met: r.peak_kib <= limit,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::server::Legs;
    use crate::stats::{CpuUse, Sample};

    fn measured(group: Group, client: ClientKind, initialize: u64, windows: u32) -> Measurement {
        let mut legs = Legs::default();
        legs.add("initialize", initialize);
        let sample = Sample::new(
            vec![Duration::from_micros(100); 10],
            Duration::from_secs(1),
            0,
        );
        Measurement {
            group,
            target: Target::Http(Era::Legacy, Mode::Json),
            client,
            stats: sample.stats(),
            sample,
            cpu: CpuUse::default(),
            connections: Some(1),
            legs: Some(legs),
            windows,
        }
    }

    #[test]
    fn the_overrun_table_and_its_targets() {
        use crate::overrun::{Driver, OverrunRow, Place};
        let row = |driver, place, overruns: &[f64], lateness: &[f64]| OverrunRow {
            driver,
            place,
            overruns_ms: overruns.to_vec(),
            lateness_ms: lateness.to_vec(),
        };
        let rows = [
            row(
                Driver::Blocking,
                Place::Inside,
                &[0.5, 0.8, 0.25, 1.5],
                &[0.125, 0.25, 0.0, 1.0],
            ),
            row(
                Driver::Blocking,
                Place::ProcessHttp,
                &[12.0, 9.5, 30.0],
                &[],
            ),
            row(Driver::Tokio, Place::Inside, &[1.25, 0.75, 1.5], &[0.0; 3]),
            row(Driver::Tokio, Place::ProcessStdio, &[], &[]),
        ];
        assert_eq!(
            overrun_title(20),
            "Overrun past a 2 s budget (stalled server, 1 ms resolution, 20 runs)"
        );
        assert!(overrun_title(1).ends_with(", 1 run)"));
        let table = overrun_table(&rows);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(
            lines[0],
            "| driver | where measured | median ms | min ms | max ms \
             | stalled leg past its grant: median ms | stalled leg past its grant: max ms |"
        );
        assert_eq!(lines[1], "|---|---|--:|--:|--:|--:|--:|");
        assert_eq!(
            &lines[2..],
            [
                "| mcp-driver-blocking | inside the operation | 0.65 | 0.25 | 1.50 | 0.19 | 1.00 |",
                "| mcp-driver-blocking | whole process over HTTP | 12.00 | 9.50 | 30.00 | – | – |",
                "| mcp-driver-tokio | inside the operation | 1.25 | 0.75 | 1.50 | 0.00 | 0.00 |",
                "| mcp-driver-tokio | whole process over stdio | – | – | – | – | – |",
            ]
        );
        let checks = overrun_checks(&rows);
        assert_eq!(
            checks,
            [
                Check {
                    what: "overrun median inside the operation, mcp-driver-blocking".to_owned(),
                    measured: "0.65 ms".to_owned(),
                    target: "< 1.00 ms".to_owned(),
                    met: true,
                },
                Check {
                    what: "overrun median inside the operation, mcp-driver-tokio".to_owned(),
                    measured: "1.25 ms".to_owned(),
                    target: "< 1.00 ms".to_owned(),
                    met: false,
                },
            ]
        );
        assert!(checks_table(&checks).contains(
            "| overrun median inside the operation, mcp-driver-tokio | 1.25 ms | < 1.00 ms | **no** |"
        ));
    }

    #[test]
    fn the_cross_sdk_tables_give_each_client_its_cpu_and_peak_memory() {
        use crate::sdks::{Sdk, SdkRun};
        let run = |sdk: Sdk, group: Group, version: &str| SdkRun {
            sdk,
            group,
            mode: Mode::Json,
            // 10 timed calls in 1 s after 10 untimed: 20 calls share the CPU time.
            stats: Sample::new(
                vec![Duration::from_micros(100); 10],
                Duration::from_secs(1),
                10,
            )
            .stats(),
            version: version.to_owned(),
            client_cpu: Some(Duration::from_millis(50)),
            server_cpu: Some(Duration::from_millis(2)),
            peak_kib: Some(130 * 1024),
            connections: Some(20),
        };
        let runs = [
            run(Sdk::TypeScript, Group::Sequential, "sdk 1.32.2 on node v20"),
            run(Sdk::Python, Group::Sequential, "mcp 2.3.0 on CPython 3.11"),
            run(Sdk::TypeScript, Group::ColdClosed, "sdk 1.32.2 on node v20"),
        ];
        let tables = sdk_tables(&runs);
        assert_eq!(tables.matches("#### ").count(), 2, "one table per case");
        let row = tables
            .lines()
            .find(|l| l.starts_with("| JSON | TypeScript SDK"))
            .unwrap();
        assert_eq!(
            row,
            "| JSON | TypeScript SDK | 10 | 100 | 100 | 2500.0 | 100.0 | 130.0 | 1.00 |"
        );
        assert!(tables.ends_with(
            "Clients as they reported themselves: TypeScript SDK: sdk 1.32.2 on node v20; \
             Python SDK: mcp 2.3.0 on CPython 3.11.\n"
        ));
    }

    #[test]
    fn each_server_has_its_tables_and_the_floor_targets_cover_them_all() {
        let on = |target: Target, group: Group, client: ClientKind, legs: &[(&str, u64)]| {
            let mut m = measured(group, client, 0, 1);
            m.target = target;
            let mut counted = Legs::default();
            for (label, n) in legs {
                counted.add(label, *n);
            }
            m.legs = (target != Target::Stdio).then_some(counted);
            m
        };
        let modern = Target::Http(Era::Modern, Mode::Sse);
        let legacy = Target::Http(Era::Legacy, Mode::Json);
        // 10 operations each (see `measured`).
        let cold_legacy = [
            ("initialize", 10),
            ("notifications/initialized", 10),
            ("tools/call", 10),
        ];
        let all = [
            on(legacy, Group::Cold, ClientKind::Tokio, &cold_legacy),
            on(legacy, Group::Cold, ClientKind::HyperFloor, &cold_legacy),
            on(
                modern,
                Group::Cold,
                ClientKind::Tokio,
                &[("tools/call", 10)],
            ),
            on(
                modern,
                Group::Cold,
                ClientKind::HyperFloor,
                &[("tools/call", 20)],
            ),
            on(Target::Stdio, Group::Sequential, ClientKind::Blocking, &[]),
            on(Target::Stdio, Group::Sequential, ClientKind::PipeFloor, &[]),
            on(Target::Stdio, Group::Sequential, ClientKind::Rmcp, &[]),
        ];
        let tables = network_tables(&all);
        let titles: Vec<&str> = tables.lines().filter(|l| l.starts_with("#### ")).collect();
        assert_eq!(
            titles,
            [
                "#### Cold operations: new client and session, handshake + call",
                "#### 2026-07-28 era: cold operations: new client, one call",
                "#### stdio: sequential `tools/call` on a kept server process",
            ]
        );
        assert!(tables.contains("| 3: initialize + notifications/initialized + tools/call |\n"));
        assert!(tables.contains("| SSE | mcp-driver-tokio |"));
        assert!(tables.contains(" | 1: tools/call |\n"));
        assert!(tables.contains(" | 2: tools/call ×2 |\n"));
        let stdio = tables.split_once("#### stdio").unwrap().1;
        assert!(!stdio.contains("requests / op"), "no counts over stdio");
        assert!(stdio.contains("| stdio | rmcp (TokioChildProcess) |"));
        let checks: Vec<String> = network_checks(&all).into_iter().map(|c| c.what).collect();
        assert_eq!(
            checks,
            [
                "cold JSON mcp-driver-tokio vs floor: bare hyper-util POST",
                "modern cold SSE mcp-driver-tokio vs floor: bare hyper-util POST",
                "sequential stdio mcp-driver-blocking vs floor: bare std::process pipes",
            ]
        );
    }

    #[test]
    fn shared_tables_say_how_many_handshakes_a_window_made() {
        let all = [
            measured(Group::InFlight(16), ClientKind::Tokio, 64, 4),
            measured(Group::Shared(16), ClientKind::Tokio, 4, 4),
            measured(Group::Shared(16), ClientKind::Rmcp, 6, 4),
        ];
        let tables = network_tables(&all);
        let (per_task, shared) = tables
            .split_once("#### 16 operations in flight on one")
            .unwrap();
        assert!(per_task.contains("(16 tasks, a client and session each)"));
        assert!(
            !per_task.contains("initialize"),
            "the per-task table is unchanged"
        );
        assert!(shared.starts_with(" session (16 tasks, one client)"));
        assert!(shared.contains("| other load (cores) | initialize requests / window |\n"));
        assert!(shared.contains("|--:|--:|\n"));
        let rows: Vec<&str> = shared.lines().filter(|l| l.starts_with("| JSON")).collect();
        assert!(rows[0].ends_with(" | 1 |"), "{}", rows[0]);
        assert!(rows[1].ends_with(" | 1.50 |"), "{}", rows[1]);
        for line in shared.lines().filter(|l| l.starts_with('|')) {
            assert_eq!(line.matches('|').count(), 14, "13 columns: {line}");
        }
    }
}
