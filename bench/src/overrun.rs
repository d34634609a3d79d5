//! How far past its budget an operation against a stalled server ends: the project's promise
//! (one deadline per operation, overrun under a millisecond at millisecond resolution) as a
//! recorded figure.
//!
//! The server (`mcp-bench serve`'s `stall` endpoint, legacy era; over stdio
//! `mcp-testkit-stdio --hostile tools/call=stall`) answers the handshake and never answers
//! `tools/call`. Every run is one `call_tool("echo", {})` under a [`BUDGET`] of 2 s at 1 ms
//! resolution, and must end as a spent budget ends (`Error::LegTimedOut` in the operation,
//! exit [`MCP_CALL_LEG_TIMED_OUT`] from `mcp-call`). For each driver it measures:
//!
//! * **inside the operation** ([`Place::Inside`]): a fresh client in this process (so each run
//!   is the whole operation: `initialize`, `notifications/initialized`, the stalled
//!   `tools/call`), `SessionConfig::new(url)?.with_budget(2 s).with_resolution(ms)
//!   .with_protocol_version(LATEST)`; the overrun is the wall time of `call_tool` minus the
//!   budget. An `Observer` keeps the stalled leg's `LegReport`: how late that leg ended past
//!   its own grant, the driver's own lateness (the rest of the overrun is the grant's
//!   rounding up to the unit: a grant is the budget left rounded up to 1 ms, so the last leg
//!   ends up to 1 ms after the budget by arithmetic alone);
//! * **the whole process** ([`Place::ProcessHttp`], [`Place::ProcessStdio`]): the real
//!   `mcp-call --driver D --timeout 2 --resolution ms call echo '{}'` binary (found next to
//!   `mcp-bench`), against `--url` the stall endpoint or `--stdio` the stalled stdio server,
//!   timed from spawn to exit: process start, runtime start, the operation, and the exit (no
//!   `DELETE` once the budget is spent, a local server killed at once).
//!
//! What it must never do: run two of its runs at once, or beside any other case (the runs
//! take turns row by row, one at a time, after every other section: a busy core shows up
//! as lateness), or let a run that ended any other way than a spent budget into the figures:
//! such a run fails the whole run, naming what it got.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use mcp_proto::{
    Budget, Error, LegEnd, LegReport, Observer, ProtocolVersion, Resolution, SessionConfig,
    TransportErrorKind,
};

/// The budget of every run.
pub const BUDGET: Duration = Duration::from_secs(2);

/// Runs per row unless `--overrun-runs` says otherwise.
pub const DEFAULT_RUNS: usize = 20;

/// The exit code of `mcp-call` for an operation whose stalled leg used up what was left of the
/// budget: 4, "a leg timed out" (README, `mcp-call`'s exit codes). Exit 3 is a leg refused
/// for want of budget, which a stall at the last leg never gives.
pub const MCP_CALL_LEG_TIMED_OUT: i32 = 4;

/// The driver a row measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Driver {
    /// `mcp-driver-blocking`.
    Blocking,
    /// `mcp-driver-tokio`.
    Tokio,
}

impl Driver {
    /// Both, in the order they are reported.
    pub const ALL: [Self; 2] = [Self::Blocking, Self::Tokio];

    /// The name `mcp-call --driver` takes.
    pub fn name(self) -> &'static str {
        match self {
            Self::Blocking => "blocking",
            Self::Tokio => "tokio",
        }
    }

    /// The name in the tables.
    pub fn label(self) -> &'static str {
        match self {
            Self::Blocking => "mcp-driver-blocking",
            Self::Tokio => "mcp-driver-tokio",
        }
    }
}

/// Where a row's overrun is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Around `call_tool`, in this process, over HTTP.
    Inside,
    /// `mcp-call` from spawn to exit, over HTTP.
    ProcessHttp,
    /// `mcp-call` from spawn to exit, its stdio server started and killed by it.
    ProcessStdio,
}

impl Place {
    /// The three, in the order they are reported.
    pub const ALL: [Self; 3] = [Self::Inside, Self::ProcessHttp, Self::ProcessStdio];

    /// The name in the tables.
    pub fn label(self) -> &'static str {
        match self {
            Self::Inside => "inside the operation",
            Self::ProcessHttp => "whole process over HTTP",
            Self::ProcessStdio => "whole process over stdio",
        }
    }
}

impl Place {
    /// The place in the row's name for `--only`: the table's label, but "the `mcp-call`
    /// process" where the table says "whole process", so that `--only whole` takes the
    /// whole-process rows against rmcp's server ([`crate::whole`]) and not these.
    pub fn name(self) -> &'static str {
        match self {
            Self::Inside => self.label(),
            Self::ProcessHttp => "mcp-call process over HTTP",
            Self::ProcessStdio => "mcp-call process over stdio",
        }
    }
}

/// The name `--only` matches: `overrun mcp-driver-tokio mcp-call process over stdio`.
pub fn row_name(driver: Driver, place: Place) -> String {
    format!("overrun {} {}", driver.label(), place.name())
}

/// Every row, in the order they run (taking turns) and are reported.
pub fn rows() -> Vec<(Driver, Place)> {
    Driver::ALL
        .into_iter()
        .flat_map(|driver| Place::ALL.map(|place| (driver, place)))
        .collect()
}

/// Median, minimum and maximum of some milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// The median (the mean of the two middle values of an even count).
    pub median: f64,
    /// The smallest.
    pub min: f64,
    /// The largest.
    pub max: f64,
}

impl Summary {
    /// The summary of `samples`; `None` when there are none.
    pub fn of(samples: &[f64]) -> Option<Self> {
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let (first, last) = (sorted.first()?, sorted.last()?);
        Some(Self {
            median: (sorted[(n - 1) / 2] + sorted[n / 2]) / 2.0,
            min: *first,
            max: *last,
        })
    }
}

/// The measured runs of one row, in milliseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct OverrunRow {
    /// The driver.
    pub driver: Driver,
    /// Where it was measured.
    pub place: Place,
    /// Each run's end past the budget (negative if it ended before it).
    pub overruns_ms: Vec<f64>,
    /// Inside the operation: each run's stalled leg past its own grant; empty otherwise.
    pub lateness_ms: Vec<f64>,
}

impl OverrunRow {
    /// An empty row.
    pub fn new(driver: Driver, place: Place) -> Self {
        Self {
            driver,
            place,
            overruns_ms: Vec::new(),
            lateness_ms: Vec::new(),
        }
    }

    /// Median, min and max of the overruns.
    pub fn overrun(&self) -> Option<Summary> {
        Summary::of(&self.overruns_ms)
    }

    /// Median, min and max of the stalled leg's lateness (inside the operation only).
    pub fn lateness(&self) -> Option<Summary> {
        Summary::of(&self.lateness_ms)
    }
}

/// What the rows run against, found before anything is measured.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The stall endpoint of `mcp-bench serve`.
    pub stall_url: String,
    /// `mcp-call` (when a whole-process row is selected).
    pub mcp_call: Option<PathBuf>,
    /// `mcp-testkit-stdio` (when a row over stdio is selected).
    pub stdio_server: Option<PathBuf>,
}

/// `mcp-call` next to `exe` (the running `mcp-bench`); the error names the build step.
pub fn mcp_call_path(exe: &Path) -> Result<PathBuf, String> {
    let name = format!("mcp-call{}", std::env::consts::EXE_SUFFIX);
    let path = exe.with_file_name(&name);
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "the overrun's whole-process rows need {} (not found): build it with \
             `cargo build --release --bins` (bench/run.sh does)",
            path.display()
        ))
    }
}

/// `text` as one word for `mcp-call --stdio`, which splits its value like a POSIX shell: as it
/// is when it holds nothing the shell reads specially, else in single quotes.
pub fn shell_word(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c));
    if plain {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// The value of `mcp-call --stdio` that starts the stalled stdio server at `server`.
pub fn stdio_command(server: &Path) -> String {
    format!(
        "{} --hostile tools/call=stall",
        shell_word(&server.to_string_lossy())
    )
}

/// The arguments of `mcp-call` for one whole-process run of `driver` against `server` (`--url
/// URL` or `--stdio COMMAND`).
pub fn mcp_call_args(driver: Driver, server: [&str; 2]) -> Vec<String> {
    let budget = BUDGET.as_secs_f64().to_string();
    let mut args = vec!["--driver", driver.name()];
    args.extend(server);
    args.extend(["--timeout", &budget, "--resolution", "ms"]);
    args.extend(["call", "echo", "{}"]);
    args.into_iter().map(str::to_owned).collect()
}

/// Runs `runs` runs of each of `rows`, taking turns (one run of each row, then the next
/// round), one at a time; `progress` is called after each round.
///
/// # Errors
/// The first run that did not end as a spent budget ends, or could not run.
pub fn measure(
    rows: &[(Driver, Place)],
    setup: &Setup,
    runs: usize,
    mut progress: impl FnMut(usize),
) -> Result<Vec<OverrunRow>, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    let mut out: Vec<OverrunRow> = rows.iter().map(|(d, p)| OverrunRow::new(*d, *p)).collect();
    for round in 1..=runs {
        for row in &mut out {
            let name = row_name(row.driver, row.place);
            let (took, late) = match row.place {
                Place::Inside => {
                    let (took, late) = inside(row.driver, &setup.stall_url, &runtime)
                        .map_err(|e| format!("{name}, run {round}: {e}"))?;
                    (took, Some(late))
                }
                Place::ProcessHttp | Place::ProcessStdio => {
                    let took = whole_process(row.driver, row.place, setup)
                        .map_err(|e| format!("{name}, run {round}: {e}"))?;
                    (took, None)
                }
            };
            row.overruns_ms.push(ms(took) - ms(BUDGET));
            if let Some(late) = late {
                row.lateness_ms.push(ms(late));
            }
        }
        progress(round);
    }
    Ok(out)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Keeps the report of the last leg that ended in a timeout: the stalled one.
#[derive(Debug, Clone, Default)]
struct StalledLeg(Arc<Mutex<Option<LegReport>>>);

impl Observer for StalledLeg {
    fn leg_finished(&mut self, report: &LegReport) {
        if report.end == LegEnd::Transport(TransportErrorKind::TimedOut) {
            *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(report.clone());
        }
    }
}

impl StalledLeg {
    /// How late the stalled leg ended past its grant.
    fn lateness(&self) -> Result<Duration, String> {
        let leg = self.0.lock().unwrap_or_else(PoisonError::into_inner).take();
        leg.map(|leg| leg.elapsed.saturating_sub(leg.grant))
            .ok_or_else(|| "no leg was reported timed out".to_owned())
    }
}

fn config(url: &str) -> Result<SessionConfig, String> {
    Ok(SessionConfig::new(url)
        .map_err(|e| format!("{url}: {e}"))?
        .with_budget(Budget::from_duration(BUDGET))
        .with_resolution(Resolution::MILLISECOND)
        .with_protocol_version(ProtocolVersion::LATEST))
}

/// The result a run must end with.
fn expect_timed_out<T: std::fmt::Debug>(result: Result<T, Error>) -> Result<(), String> {
    match result {
        Err(Error::LegTimedOut { .. }) => Ok(()),
        other => Err(format!("expected LegTimedOut, got {other:?}")),
    }
}

/// One run inside the operation: the call's wall time and the stalled leg's lateness.
fn inside(
    driver: Driver,
    url: &str,
    runtime: &tokio::runtime::Runtime,
) -> Result<(Duration, Duration), String> {
    let config = config(url)?;
    let stalled = StalledLeg::default();
    let arguments = serde_json::Map::new();
    let took = match driver {
        Driver::Blocking => {
            let client = mcp_driver_blocking::Client::new(config);
            client.set_observer(stalled.clone());
            let started = Instant::now();
            let result = client.call_tool("echo", arguments);
            let took = started.elapsed();
            expect_timed_out(result)?;
            took
        }
        Driver::Tokio => runtime.block_on(async {
            let client = mcp_driver_tokio::Client::new(config);
            client.set_observer(stalled.clone());
            let started = Instant::now();
            let result = client.call_tool("echo", arguments).await;
            let took = started.elapsed();
            expect_timed_out(result).map(|()| took)
        })?,
    };
    Ok((took, stalled.lateness()?))
}

/// One run of `mcp-call`: from spawn to exit.
fn whole_process(driver: Driver, place: Place, setup: &Setup) -> Result<Duration, String> {
    let mcp_call = setup.mcp_call.as_deref().ok_or("mcp-call was not found")?;
    let stdio;
    let server = match place {
        Place::ProcessStdio => {
            let path = setup
                .stdio_server
                .as_deref()
                .ok_or("the stdio server was not found")?;
            stdio = stdio_command(path);
            ["--stdio", stdio.as_str()]
        }
        _ => ["--url", setup.stall_url.as_str()],
    };
    let mut command = Command::new(mcp_call);
    command
        .args(mcp_call_args(driver, server))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let started = Instant::now();
    let status = command
        .spawn()
        .and_then(|mut child| child.wait())
        .map_err(|e| format!("{}: {e}", mcp_call.display()))?;
    let took = started.elapsed();
    if status.code() == Some(MCP_CALL_LEG_TIMED_OUT) {
        Ok(took)
    } else {
        Err(format!(
            "mcp-call exited with {status}, not {MCP_CALL_LEG_TIMED_OUT} (a leg timed out)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_is_median_min_and_max() {
        assert_eq!(Summary::of(&[]), None);
        let odd = Summary::of(&[0.9, 0.2, 0.5]).unwrap();
        assert_eq!((odd.median, odd.min, odd.max), (0.5, 0.2, 0.9));
        let even = Summary::of(&[0.75, -0.25, 1.0, 0.25]).unwrap();
        assert_eq!(
            (even.median, even.min, even.max),
            (0.5, -0.25, 1.0),
            "the mean of the two middle values; an early end stays negative"
        );
        let one = Summary::of(&[3.0]).unwrap();
        assert_eq!((one.median, one.min, one.max), (3.0, 3.0, 3.0));
    }

    #[test]
    fn rows_are_named_for_only() {
        let rows = rows();
        assert_eq!(rows.len(), 6);
        assert_eq!(
            row_name(rows[0].0, rows[0].1),
            "overrun mcp-driver-blocking inside the operation"
        );
        assert_eq!(
            row_name(Driver::Tokio, Place::ProcessStdio),
            "overrun mcp-driver-tokio mcp-call process over stdio"
        );
        assert!(
            rows.iter()
                .all(|(d, p)| !row_name(*d, *p).contains("whole")),
            "`--only whole` is the whole-process rows against rmcp's server"
        );
        assert!(
            rows.iter()
                .all(|(d, p)| row_name(*d, *p).starts_with("overrun "))
        );
    }

    #[test]
    fn mcp_call_gets_the_budget_and_the_server() {
        assert_eq!(
            mcp_call_args(Driver::Tokio, ["--url", "http://127.0.0.1:9/mcp"]).join(" "),
            "--driver tokio --url http://127.0.0.1:9/mcp --timeout 2 --resolution ms call echo {}"
        );
        assert_eq!(
            stdio_command(Path::new("/w/target/release/mcp-testkit-stdio")),
            "/w/target/release/mcp-testkit-stdio --hostile tools/call=stall"
        );
        assert_eq!(
            stdio_command(Path::new("/my dir/it's")),
            r"'/my dir/it'\''s' --hostile tools/call=stall"
        );
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn a_missing_mcp_call_names_the_build() {
        let err = mcp_call_path(Path::new("/nonexistent/dir/mcp-bench")).unwrap_err();
        assert!(err.contains("/nonexistent/dir/mcp-call"), "{err}");
        assert!(err.contains("cargo build --release --bins"), "{err}");
    }
}
