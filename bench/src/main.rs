//! `mcp-bench`: runs the network, server-ceiling, memory, whole-process and overrun cases, reads
//! the criterion parsing results, and prints the Markdown tables of `BENCHMARKS.md`.
//!
//! ```text
//! mcp-bench run [--secs S] [--rounds N] [--warmup-ms MS] [--only TEXT] [--criterion DIR]
//!               [--out FILE] [--no-ceiling] [--no-network] [--no-memory]
//!               [--interop-home DIR] [--no-sdks] [--no-overrun] [--overrun-runs N]
//!               [--whole-calls N] [--whole-rounds R]
//! mcp-bench serve [--era legacy|modern]
//!                                     # the server process of one era (used by `run`)
//! mcp-bench serve-rmcp                # rmcp's own StreamableHttpService, tool echo (used by `run`)
//! mcp-bench floor-child [--proto] URL legacy|modern N
//!                                     # N bare calls posting mcp-call's bytes (used by `run`)
//! mcp-bench memory-child DRIVER URL   # one call, then its peak RSS (used by `run`)
//! mcp-bench client-child KIND URL CASE WARMUP_MS WINDOW_MS
//!                                     # a Rust client of the cross-SDK table (used by `run`)
//! ```
//!
//! Each network case is measured for `S` seconds (default 2) in `N` windows (default 4): the
//! cases take turns window by window, each window after its own warm-up (default 300 ms).
//! Each case of the cross-SDK table runs in a client process of its own, one window of `S`
//! seconds after one warm-up; the TypeScript and Python SDKs are those `interop/install.sh`
//! installed into `--interop-home` (default `$INTEROP_HOME`, else `~/.cache/mcp-interop`), and
//! the run fails at once, naming that step, when they are missing (`--no-sdks` leaves the
//! table out). `--only TEXT` keeps the cases whose name (`sequential JSON mcp-driver-tokio`,
//! `in-flight-16 SSE rmcp (default client)`, `shared-256 JSON floor: bare hyper-util POST`,
//! `sdks cold-closed SSE Python SDK`...) contains `TEXT`: handy under `perf`, or to run one
//! group (`--only shared-`, `--only sdks`, `--only modern`, `--only stdio`, `--only overrun`,
//! `--only whole`). The server ceiling's rows are named `server ceiling` and the memory rows
//! `memory blocking oversize-sse`...: with `--only`, they run only when it names them too.
//!
//! The output-validation rows (after the network cases, with them: `--no-network` leaves them
//! out too) make sequential calls of the legacy server's `forecast` tool, whose listing
//! declares an `outputSchema`, with results checked (`OutputValidation::WhenListed`, after a
//! listing walked before the clock) and unchecked (`Off`), for both drivers, taking turns
//! window by window like the network cases; they are named `sequential validated
//! mcp-driver-blocking`, `sequential unvalidated mcp-driver-tokio`... (so `--only sequential`
//! and `--only validated` take them).
//!
//! The overrun (last, after every other section, its runs one at a time) calls a stalled
//! server `N` times per row (default 20, `--overrun-runs`) under a 2 s budget: inside the
//! operation, and as the whole `mcp-call` process (over HTTP and over stdio), for both drivers;
//! its rows are named `overrun mcp-driver-tokio inside the operation`, `overrun
//! mcp-driver-blocking mcp-call process over stdio`... (so `--only stdio` takes its two stdio
//! rows too; `--no-overrun` leaves it out). It runs
//! `mcp-call` from the folder of `mcp-bench` (`cargo build --release --bins` builds it): the run
//! fails at once, naming that step, when a whole-process row is selected and it is missing.
//!
//! The whole-process rows (after the memory cases, before the overrun, their processes one at
//! a time) measure `mcp-call` against the official Rust SDK's own server: `serve-rmcp` (rmcp
//! 3.11's `StreamableHttpService`, JSON answers for 2026-07-28 requests, a session's answers
//! as event streams in 2025-11-25). For each era (2025-11-25, then 2026-07-28), `R` paired
//! rounds (default 9, `--whole-rounds`) each run four processes to completion, in an order
//! alternating between rounds: `mcp-call --driver blocking --url URL [--protocol 2025-11-25]
//! --repeat N call echo '{"text":"hi"}'` (default N 8000, `--whole-calls`), the same with
//! `--driver tokio`, the floor `floor-child URL ERA N` (one ureq agent and connection
//! posting the bytes `mcp-call`'s blocking driver posts), and `floor-child --proto URL ERA N`
//! (the same bytes with ureq's HTTP/1.1 core alone, ureq-proto, on one TCP connection). Each is timed from spawn to exit,
//! with its user and system CPU time and the server's; the table gives per row the median
//! calls/s over the rounds, the median per-round ratio to the same round's floor, and CPU µs
//! per call. Its rows are named `whole 2025-11-25 mcp-call --driver tokio`, `whole 2026-07-28
//! floor: bare ureq (mcp-bench floor-child)`... (`--only whole` takes them all; a selected
//! client row brings its era's floor along). It runs `mcp-call` from the folder of
//! `mcp-bench` too, and fails at once, naming the build step, when it is missing.
//!
//! The 2026-07-28 era's cases talk to a second server process (`serve --era modern`); the
//! stdio cases start `mcp-testkit-stdio`, which `bench/run.sh` builds next to `mcp-bench`
//! (or wherever `MCP_TESTKIT_STDIO_BIN` points): the run fails at once, naming the build
//! step, when a stdio case is selected and the binary is missing.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use mcp_bench::cases::{
    ClientKind, Era, Group, Measurement, Mode, RunCfg, Servers, Target, case_name, run_case,
};
use mcp_bench::memory::{self, MemoryRun};
use mcp_bench::overrun::{self, OverrunRow, Place};
use mcp_bench::report::{self, CeilingRow, Check};
use mcp_bench::rmcp_server;
use mcp_bench::sdks::{self, Peers, Sdk, SdkRun};
use mcp_bench::server::{self, ServerProcess};
use mcp_bench::stats::{CpuSnapshot, load_average};
use mcp_bench::validation;
use mcp_bench::whole::{self, WholeRow};
use mcp_proto::SessionConfig;

/// Options of `mcp-bench run`.
#[derive(Debug)]
struct Options {
    cfg: RunCfg,
    rounds: u32,
    only: Option<String>,
    criterion: Option<PathBuf>,
    out: Option<PathBuf>,
    ceiling: bool,
    network: bool,
    memory: bool,
    /// `None` with `--no-sdks`: the folder `interop/install.sh` installs the SDKs into.
    interop_home: Option<PathBuf>,
    /// `false` with `--no-overrun`.
    overrun: bool,
    /// Runs per overrun row (`--overrun-runs`).
    overrun_runs: usize,
    /// Calls per process of the whole-process rows (`--whole-calls`).
    whole_calls: u32,
    /// Paired rounds of the whole-process rows (`--whole-rounds`).
    whole_rounds: u32,
}

fn parse_options(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        cfg: RunCfg {
            warmup: Duration::from_millis(300),
            duration: Duration::from_secs(2),
        },
        rounds: 4,
        only: None,
        criterion: None,
        out: None,
        ceiling: true,
        network: true,
        memory: true,
        interop_home: Some(sdks::default_interop_home()),
        overrun: true,
        overrun_runs: overrun::DEFAULT_RUNS,
        whole_calls: whole::DEFAULT_CALLS,
        whole_rounds: whole::DEFAULT_ROUNDS,
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut value = || args.next().cloned().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--secs" => {
                let secs: f64 = value()?.parse().map_err(|_| "--secs takes seconds")?;
                options.cfg.duration = Duration::from_secs_f64(secs);
            }
            "--warmup-ms" => {
                let ms: u64 = value()?.parse().map_err(|_| "--warmup-ms takes ms")?;
                options.cfg.warmup = Duration::from_millis(ms);
            }
            "--rounds" => {
                options.rounds = value()?.parse().map_err(|_| "--rounds takes a count")?;
                options.rounds = options.rounds.max(1);
            }
            "--only" => options.only = Some(value()?),
            "--criterion" => options.criterion = Some(value()?.into()),
            "--out" => options.out = Some(value()?.into()),
            "--no-ceiling" => options.ceiling = false,
            "--no-network" => options.network = false,
            "--no-memory" => options.memory = false,
            "--interop-home" => options.interop_home = Some(value()?.into()),
            "--no-sdks" => options.interop_home = None,
            "--no-overrun" => options.overrun = false,
            "--overrun-runs" => {
                let runs: usize = value()?
                    .parse()
                    .map_err(|_| "--overrun-runs takes a count")?;
                options.overrun_runs = runs.max(1);
            }
            "--whole-calls" => {
                let calls: u32 = value()?
                    .parse()
                    .map_err(|_| "--whole-calls takes a count")?;
                options.whole_calls = calls.max(1);
            }
            "--whole-rounds" => {
                let rounds: u32 = value()?
                    .parse()
                    .map_err(|_| "--whole-rounds takes a count")?;
                options.whole_rounds = rounds.max(1);
            }
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(options)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("serve") => server::serve_main(&args[1..]).map_err(|e| e.to_string()),
        Some("serve-rmcp") => rmcp_server::serve_main(&args[1..]).map_err(|e| e.to_string()),
        Some("floor-child") => whole::floor_child_main(&args[1..]),
        Some("memory-child") if args.len() == 3 => {
            memory::child_main(&args[1], &args[2]).map_err(|e| e.to_string())
        }
        Some("client-child") => sdks::child_main(&args[1..]),
        Some("run") => parse_options(&args[1..]).and_then(|o| run(&o)),
        _ => Err(
            "usage: mcp-bench run [options] | serve [--era legacy|modern] | serve-rmcp \
                  | memory-child DRIVER URL | client-child KIND URL CASE WARMUP_MS WINDOW_MS \
                  | floor-child [--proto] URL legacy|modern N"
                .to_owned(),
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("mcp-bench: {err}");
            ExitCode::FAILURE
        }
    }
}

/// The network cases in the order they run and are reported: the legacy HTTP server's
/// sequential and cold cases, the same against the 2026-07-28 server (the drivers and their
/// floors: rmcp speaks no such era), the stdio server's (the drivers, their pipe floors,
/// rmcp's `TokioChildProcess`), then the legacy server's in-flight and shared cases.
fn network_cases() -> Vec<(Group, Target, ClientKind)> {
    use ClientKind::{
        Blocking, HyperFloor, PipeFloor, PolledPipe, Rmcp, RmcpPooled, Tokio, TokioPipeFloor,
        UreqFloor,
    };
    let all = [Blocking, UreqFloor, Tokio, HyperFloor, Rmcp, RmcpPooled];
    let modern = [Blocking, UreqFloor, Tokio, HyperFloor];
    let stdio = [Blocking, PipeFloor, PolledPipe, Tokio, TokioPipeFloor, Rmcp];
    let mut cases = Vec::new();
    for (era, clients) in [(Era::Legacy, &all[..]), (Era::Modern, &modern[..])] {
        for group in [Group::Sequential, Group::Cold] {
            for mode in [Mode::Json, Mode::Sse] {
                for client in clients {
                    cases.push((group, Target::Http(era, mode), *client));
                }
            }
        }
    }
    for group in [Group::Sequential, Group::Cold] {
        for client in stdio {
            // The polled pipe prices a wait per call: a warm call's, not a start's.
            if client == PolledPipe && group == Group::Cold {
                continue;
            }
            cases.push((group, Target::Stdio, client));
        }
    }
    let in_flight = [1, 16, 256].map(Group::InFlight);
    let shared = [16, 256].map(Group::Shared);
    for group in in_flight.into_iter().chain(shared) {
        for mode in [Mode::Json, Mode::Sse] {
            for client in [Tokio, HyperFloor, Rmcp, RmcpPooled] {
                cases.push((group, Target::Http(Era::Legacy, mode), client));
            }
        }
    }
    cases
}

/// The name `--only` matches for the server-ceiling rows.
const CEILING: &str = "server ceiling";

/// Whether the case or row called `name` runs: `--only`'s text is part of its name, or there
/// is no `--only`.
fn selected(only: Option<&str>, name: &str) -> bool {
    only.is_none_or(|only| name.contains(only))
}

/// The cases of the cross-SDK table in the order they run and are reported, `--only` applied.
fn sdk_cases(only: Option<&str>) -> Vec<(Mode, Group, Sdk)> {
    let mut cases = Vec::new();
    for mode in [Mode::Json, Mode::Sse] {
        for group in sdks::CASES {
            for sdk in Sdk::ALL {
                let name = format!("sdks {} {} {}", group.name(), mode.label(), sdk.label());
                if selected(only, &name) {
                    cases.push((mode, group, sdk));
                }
            }
        }
    }
    cases
}

fn run(options: &Options) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    // Before anything is measured: a missing SDK fails the run now, naming the install step.
    let sdk_cases = match &options.interop_home {
        Some(_) if options.network => sdk_cases(options.only.as_deref()),
        _ => Vec::new(),
    };
    let peers = match &options.interop_home {
        Some(home) if !sdk_cases.is_empty() => Some(Peers::find(home)?),
        _ => None,
    };
    let cases: Vec<_> = if options.network {
        network_cases()
            .into_iter()
            .filter(|(group, target, client)| {
                selected(
                    options.only.as_deref(),
                    &case_name(*group, *target, *client),
                )
            })
            .collect()
    } else {
        Vec::new()
    };
    // Before anything is measured too: a stdio case without the stdio server's binary.
    let stdio = if cases.iter().any(|(_, target, _)| *target == Target::Stdio) {
        Some(mcp_testkit::stdio_server_path().map_err(|e| {
            format!("the stdio cases need the stdio server (bench/run.sh builds it): {e}")
        })?)
    } else {
        None
    };
    // And the overrun's binaries: `mcp-call` and the stdio server.
    let overrun_rows: Vec<_> = if options.overrun {
        overrun::rows()
            .into_iter()
            .filter(|(driver, place)| {
                selected(options.only.as_deref(), &overrun::row_name(*driver, *place))
            })
            .collect()
    } else {
        Vec::new()
    };
    let mcp_call = if overrun_rows
        .iter()
        .any(|(_, place)| *place != Place::Inside)
    {
        Some(overrun::mcp_call_path(&exe)?)
    } else {
        None
    };
    // And the whole-process rows' `mcp-call` (their floor is this binary).
    let whole_rows = whole::with_floors(
        &whole::rows()
            .into_iter()
            .filter(|(era, runner)| {
                selected(options.only.as_deref(), &whole::row_name(*era, *runner))
            })
            .collect::<Vec<_>>(),
    );
    let whole_mcp_call = if whole_rows.is_empty() {
        None
    } else {
        Some(whole::mcp_call_path(&exe)?)
    };
    let overrun_stdio = if overrun_rows
        .iter()
        .any(|(_, place)| *place == Place::ProcessStdio)
    {
        Some(mcp_testkit::stdio_server_path().map_err(|e| {
            format!("the overrun over stdio needs the stdio server (bench/run.sh builds it): {e}")
        })?)
    } else {
        None
    };
    let load_before = load_average();
    let legacy = ServerProcess::spawn(&exe, Era::Legacy).map_err(|e| format!("server: {e}"))?;
    let modern = if cases
        .iter()
        .any(|(_, target, _)| target.era() == Era::Modern)
    {
        Some(ServerProcess::spawn(&exe, Era::Modern).map_err(|e| format!("modern server: {e}"))?)
    } else {
        None
    };
    let mut servers = Servers {
        legacy,
        modern,
        stdio,
    };
    let mut out = String::new();
    let mut checks: Vec<Check> = Vec::new();

    let mut ceiling = Vec::new();
    if options.ceiling && selected(options.only.as_deref(), CEILING) {
        ceiling = measure_ceiling(&servers.legacy, options.cfg.duration)?;
    }

    let mut measured: Vec<Measurement> = Vec::new();
    if !cases.is_empty() {
        // Every case runs `rounds` windows, the cases taking turns, so that a change of load
        // on the machine spreads over all of them instead of landing on a few.
        let slice = RunCfg {
            warmup: options.cfg.warmup,
            duration: options.cfg.duration / options.rounds,
        };
        for round in 1..=options.rounds {
            eprint!("network cases, round {round}/{}: ", options.rounds);
            for (i, (group, target, client)) in cases.iter().copied().enumerate() {
                let name = case_name(group, target, client);
                let m = run_case(group, target, client, &mut servers, slice)
                    .map_err(|e| format!("{name}: {e}"))?;
                match measured.get_mut(i) {
                    Some(total) => total.merge(m),
                    None => measured.push(m),
                }
                eprint!(".");
            }
            eprintln!();
        }
        for m in &measured {
            let legs = m.legs_per_op().map(|legs| {
                legs.iter()
                    .map(|(label, n)| format!("{label} {n:.2}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            });
            eprintln!(
                "{:<62}{:>9.0} calls/s  p50 {:>6.0} µs  p99 {:>6.0} µs  conns/call {:.3}  \
                 initialize/window {:.1}  other load {:.2}  per op: {}",
                case_name(m.group, m.target, m.client),
                m.stats.per_sec(),
                m.stats.p50.as_secs_f64() * 1e6,
                m.stats.p99.as_secs_f64() * 1e6,
                m.connections_per_op().unwrap_or(f64::NAN),
                m.initialize_per_window().unwrap_or(f64::NAN),
                m.cpu.other_cores().unwrap_or(0.0),
                legs.unwrap_or_else(|| "–".to_owned()),
            );
        }
        checks.extend(report::network_checks(&measured));
    }

    let validation_rows: Vec<_> = if options.network {
        validation::rows()
            .into_iter()
            .filter(|(driver, validated)| {
                selected(
                    options.only.as_deref(),
                    &validation::row_name(*driver, *validated),
                )
            })
            .collect()
    } else {
        Vec::new()
    };
    let mut validated = Vec::new();
    if !validation_rows.is_empty() {
        eprint!(
            "output validation, {} rounds of {} rows: ",
            options.rounds,
            validation_rows.len()
        );
        validated = validation::measure(
            &validation_rows,
            &servers.legacy,
            options.rounds,
            options.cfg,
            || eprint!("."),
        )?;
        eprintln!();
        for row in &validated {
            let stats = row.stats();
            let windows: Vec<String> = row.per_window.iter().map(|w| format!("{w:.0}")).collect();
            eprintln!(
                "{:<62}{:>9.0} calls/s  p50 {:>6.0} µs  p99 {:>6.0} µs  client CPU {:.1} µs/call  \
                 windows: {}",
                validation::row_name(row.driver, row.validated),
                stats.per_sec(),
                stats.p50.as_secs_f64() * 1e6,
                stats.p99.as_secs_f64() * 1e6,
                row.client_us_per_call().unwrap_or(f64::NAN),
                windows.join(" "),
            );
        }
    }

    let mut sdk_runs: Vec<SdkRun> = Vec::new();
    if let Some(peers) = &peers {
        eprint!("cross-SDK cases, a client process each: ");
        for (mode, group, sdk) in sdk_cases.iter().copied() {
            let run = sdks::run_one(
                peers,
                &exe,
                sdk,
                group,
                mode,
                &mut servers.legacy,
                options.cfg,
            )?;
            eprint!(".");
            sdk_runs.push(run);
        }
        eprintln!();
        for run in &sdk_runs {
            eprintln!(
                "sdks {:<33}{:>9.0} calls/s  p50 {:>6.0} µs  p99 {:>6.0} µs  CPU {:>6.1} µs/call  \
                 peak {:>6.1} MiB",
                format!(
                    "{} {} {}",
                    run.group.name(),
                    run.mode.label(),
                    run.sdk.label()
                ),
                run.stats.per_sec(),
                run.stats.p50.as_secs_f64() * 1e6,
                run.stats.p99.as_secs_f64() * 1e6,
                run.client_us_per_op().unwrap_or(f64::NAN),
                run.peak_kib.map_or(f64::NAN, |k| k as f64 / 1024.0),
            );
        }
    }

    let cap_kib = (SessionConfig::DEFAULT_BODY_CAP / 1024) as u64;
    let mut memory_runs: Vec<MemoryRun> = Vec::new();
    if options.memory {
        for driver in ["blocking", "tokio"] {
            for role in [
                "json",
                "oversize-length",
                "oversize-chunked",
                "oversize-sse",
            ] {
                if !selected(options.only.as_deref(), &format!("memory {driver} {role}")) {
                    continue;
                }
                let run = memory::measure(&exe, driver, role, servers.legacy.url(role))
                    .map_err(|e| e.to_string())?;
                eprintln!(
                    "memory {driver} {role}: {} KiB ({})",
                    run.peak_kib, run.outcome
                );
                memory_runs.push(run);
            }
        }
        checks.extend(
            report::memory_checks(&memory_runs, cap_kib)
                .into_iter()
                .filter(|c| c.what.contains("blocking")),
        );
    }

    // When nothing else runs: the whole processes against rmcp's server, one at a time.
    let mut whole_runs: Vec<WholeRow> = Vec::new();
    if let Some(mcp_call) = whole_mcp_call {
        let server =
            rmcp_server::RmcpServerProcess::spawn(&exe).map_err(|e| format!("rmcp server: {e}"))?;
        let setup = whole::Setup {
            url: server.url().to_owned(),
            server_pid: server.pid(),
            mcp_call,
            exe: exe.clone(),
            calls: options.whole_calls,
        };
        eprint!(
            "whole processes against rmcp's server, {} rounds of {} processes of {} calls: ",
            options.whole_rounds,
            whole_rows.len(),
            options.whole_calls
        );
        whole_runs = whole::measure(&whole_rows, &setup, options.whole_rounds, |era, round| {
            eprint!("{}:{round} ", whole::version(era));
        })?;
        eprintln!();
        drop(server);
        for row in &whole_runs {
            let floor = whole_runs
                .iter()
                .find(|f| f.era == row.era && f.runner == whole::Runner::Floor);
            let rates: Vec<String> = row.rates().iter().map(|r| format!("{r:.0}")).collect();
            let fmt = |v: Option<f64>| v.map_or_else(|| "–".to_owned(), |v| format!("{v:.1}"));
            eprintln!(
                "{:<62}{:>9.0} calls/s  x floor {}  user {} µs/call  sys {} µs/call  \
                 server {} µs/call  waits/call {}  rounds: {}",
                whole::row_name(row.era, row.runner),
                row.rate().map_or(f64::NAN, |s| s.median),
                floor
                    .and_then(|f| row.times_floor(f))
                    .map_or_else(|| "–".to_owned(), |v| format!("{v:.3}")),
                fmt(row.user_us()),
                fmt(row.system_us()),
                fmt(row.server_us()),
                row.switches_per_call()
                    .map_or_else(|| "–".to_owned(), |v| format!("{v:.2}")),
                rates.join(" "),
            );
        }
    }

    // Last, when nothing else runs: the runs one at a time.
    let mut overrun_runs: Vec<OverrunRow> = Vec::new();
    if !overrun_rows.is_empty() {
        let setup = overrun::Setup {
            stall_url: servers.legacy.url("stall").to_owned(),
            mcp_call,
            stdio_server: overrun_stdio,
        };
        let runs = options.overrun_runs;
        eprint!(
            "overrun, {runs} rounds of {} runs of {} s: ",
            overrun_rows.len(),
            overrun::BUDGET.as_secs_f64()
        );
        overrun_runs = overrun::measure(&overrun_rows, &setup, runs, |_| eprint!("."))?;
        eprintln!();
        for row in &overrun_runs {
            let fmt = |s: Option<overrun::Summary>| {
                s.map_or_else(
                    || "–".to_owned(),
                    |s| {
                        format!(
                            "median {:.3} ms, min {:.3}, max {:.3}",
                            s.median, s.min, s.max
                        )
                    },
                )
            };
            eprintln!(
                "{:<62}overrun {}  stalled leg past its grant {}",
                overrun::row_name(row.driver, row.place),
                fmt(row.overrun()),
                fmt(row.lateness()),
            );
        }
        checks.extend(report::overrun_checks(&overrun_runs));
    }
    drop(servers);
    let load_after = load_average();

    let parse_rows = options
        .criterion
        .as_deref()
        .map(report::read_criterion)
        .unwrap_or_default();
    let parse_checks = report::parse_checks(&parse_rows);

    // ------------------------------------------------------------------ the document part
    out.push_str("### Machine and load\n\n");
    out.push_str(&machine_section(load_before, load_after, &measured));
    if !checks.is_empty() || !parse_checks.is_empty() {
        out.push_str("\n### Targets\n\n");
        let mut all = parse_checks.clone();
        all.splice(0..0, checks.iter().cloned());
        out.push_str(&report::checks_table(&all));
    }
    if !ceiling.is_empty() {
        out.push_str("\n### The server on its own\n\n");
        out.push_str(&report::ceiling_table(&ceiling));
    }
    if !measured.is_empty() {
        out.push_str("\n### Network cases\n\n");
        out.push_str(&report::network_tables(&measured));
    }
    if !validated.is_empty() {
        out.push_str(
            "\n### Output validation: a warm `tools/call` with and without the `outputSchema` check\n\n",
        );
        out.push_str(&validation::table(&validated));
    }
    if !sdk_runs.is_empty() {
        out.push_str("### Across SDKs: the same calls from five clients, a process each\n\n");
        out.push_str(&report::sdk_tables(&sdk_runs));
    }
    if !parse_rows.is_empty() {
        out.push_str("### Parsing a `tools/list` answer\n\n");
        out.push_str(&report::parse_table(&parse_rows));
    }
    let sansio = options
        .criterion
        .as_deref()
        .map(report::read_sansio)
        .unwrap_or_default();
    if !sansio.is_empty() {
        let costs: Vec<String> = sansio
            .iter()
            .map(|(form, ns)| format!("{:.2} µs with {} answer", ns / 1e3, form.to_uppercase()))
            .collect();
        out.push_str(&format!(
            "\n`mcp-proto` alone (criterion `sansio-call`: one `tools/call` on a live session, \
             canned answer, no I/O): {}.\n",
            costs.join(", ")
        ));
    }
    if !memory_runs.is_empty() {
        out.push_str("\n### Memory: one call facing a 100 MiB answer (cap 2 MiB)\n\n");
        out.push_str(&report::memory_table(&memory_runs, cap_kib));
    }
    if !whole_runs.is_empty() {
        let _ = write!(
            out,
            "\n### {}\n\n",
            report::whole_title(options.whole_calls)
        );
        out.push_str(&report::whole_table(
            &whole_runs,
            options.whole_calls,
            options.whole_rounds,
        ));
    }
    if !overrun_runs.is_empty() {
        let _ = write!(
            out,
            "\n### {}\n\n",
            report::overrun_title(options.overrun_runs)
        );
        out.push_str(&report::overrun_table(&overrun_runs));
    }
    match &options.out {
        Some(path) => std::fs::write(path, out).map_err(|e| e.to_string())?,
        None => print!("{out}"),
    }
    Ok(())
}

fn measure_ceiling(server: &ServerProcess, duration: Duration) -> Result<Vec<CeilingRow>, String> {
    let pid = Some(server.pid());
    let mut rows = Vec::new();
    for mode in [Mode::Json, Mode::Sse] {
        let url = server.url(mode.role());
        for clients in [1, 4, 16] {
            let before = CpuSnapshot::take(pid);
            let per_sec = server::raw_ceiling(url, clients, duration)
                .map_err(|e| format!("raw ceiling: {e}"))?;
            let cpu = before.until(&CpuSnapshot::take(pid));
            let calls = per_sec * duration.as_secs_f64();
            let per_call = |d: Option<Duration>| d.map(|d| d.as_secs_f64() * 1e6 / calls);
            eprintln!(
                "server ceiling {} raw x{clients}: {per_sec:.0} calls/s",
                mode.label()
            );
            rows.push(CeilingRow {
                mode,
                load: format!("{clients} raw keep-alive client thread(s)"),
                per_sec,
                server_us: per_call(cpu.server),
                client_us: per_call(cpu.client),
            });
        }
        let secs = Duration::from_secs(duration.as_secs().max(2));
        let before = CpuSnapshot::take(pid);
        if let Some(per_sec) = server::wrk_ceiling(url, 16, secs) {
            let cpu = before.until(&CpuSnapshot::take(pid));
            let calls = per_sec * secs.as_secs_f64();
            eprintln!(
                "server ceiling {} wrk -c16: {per_sec:.0} calls/s",
                mode.label()
            );
            rows.push(CeilingRow {
                mode,
                load: "wrk -t1 -c16 (keep-alive)".to_owned(),
                per_sec,
                server_us: cpu.server.map(|d| d.as_secs_f64() * 1e6 / calls),
                client_us: None,
            });
        }
    }
    Ok(rows)
}

fn machine_section(before: Option<f64>, after: Option<f64>, measured: &[Measurement]) -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|l| l.trim_start_matches([' ', '\t', ':']).to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();
    let others: Vec<f64> = measured
        .iter()
        .filter_map(|m| m.cpu.other_cores())
        .collect();
    let mean_other = (!others.is_empty()).then(|| others.iter().sum::<f64>() / others.len() as f64);
    let max_other = others
        .iter()
        .copied()
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
    let fmt = |v: Option<f64>| v.map_or_else(|| "–".to_owned(), |v| format!("{v:.2}"));
    format!(
        "* CPU: {model}, {cores} cores; kernel {kernel}\n\
         * load average (1 min) before the run: {}, after it: {} (the run's own threads count)\n\
         * CPU used by *other* processes while the network cases ran (cores, from /proc/stat \
         minus this run's client and server): mean {}, max {}\n",
        fmt(before),
        fmt(after),
        fmt(mean_other),
        fmt(max_other),
    )
}
