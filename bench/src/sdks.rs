//! The cross-SDK client benchmark: the same `tools/call` from five clients, each in a process
//! of its own, against the same loopback server ([`ServerProcess`]).
//!
//! The clients ([`Sdk`]): `mcp-driver-blocking`, `mcp-driver-tokio` and rmcp's default client,
//! run by `mcp-bench client-child` ([`child_main`], which runs the network cases' own code,
//! [`cases::sample`]); the TypeScript SDK's `Client` over `StreamableHTTPClientTransport`
//! (`bench/peers/ts_client.mjs`, on `node`) and the Python SDK's `ClientSession` over
//! `streamable_http_client` (`bench/peers/py_client.py`, on the Python of
//! `$INTEROP_HOME/venv-mcp`). `interop/install.sh` installs both SDKs ([`Peers::find`]). The
//! cases ([`CASES`]): sequential calls on one session, 16 calls in flight on one session, and
//! cold operations that close what they open ([`Group::ColdClosed`]).
//!
//! Every client child speaks one protocol, so that each is measured the same way:
//!
//! 1. it is started as `CHILD URL CASE WARMUP_MS WINDOW_MS` (`CASE` is [`Group::name`]);
//! 2. once loaded it prints `{"ready":true,"sdk":"...","runtime":"..."}` and waits for a line
//!    on standard input: the parent reads the child's CPU time (and the server's) first, so
//!    loading the runtime and the SDK counts for neither;
//! 3. it opens what the case needs, warms up for `WARMUP_MS`, measures for `WINDOW_MS` as
//!    `mcp-bench`'s own windows do, and prints `{"latencies_us":[...],"warm_ops":N,"wall_us":W}`
//!    (one raw latency per timed operation), or `{"error":"..."}`;
//! 4. it then waits for standard input to close before it exits, so that the parent reads its
//!    CPU time (`/proc/<pid>/stat`) and peak resident set (`VmHWM`) while it still exists.
//!
//! This module never skips a client quietly: a missing peer is an error naming the install
//! step, and a child that fails, answers out of protocol or outlives its window by a minute
//! fails the run with its own words (and the end of its standard error).

use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::cases::{self, ClientKind, Group, Mode, RunCfg, per_op};
use crate::memory::vm_hwm_kib;
use crate::server::ServerProcess;
use crate::stats::{Sample, Stats, process_cpu};

/// The cases of the cross-SDK table, in the order they run and are reported.
pub const CASES: [Group; 3] = [Group::Sequential, Group::Shared(16), Group::ColdClosed];

/// How long a child may take to load (the Python SDK takes seconds on a loaded machine).
const READY_WITHIN: Duration = Duration::from_secs(60);
/// How long past its warm-up and window a child may take to answer, or to exit once told to.
const GRACE: Duration = Duration::from_secs(60);

/// One client of the cross-SDK table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sdk {
    /// `mcp-driver-blocking`, in `mcp-bench client-child`.
    Blocking,
    /// `mcp-driver-tokio`, in `mcp-bench client-child`.
    Tokio,
    /// rmcp with its default transport, in `mcp-bench client-child`.
    Rmcp,
    /// npm `@modelcontextprotocol/sdk`, in `bench/peers/ts_client.mjs`.
    TypeScript,
    /// PyPI `mcp`, in `bench/peers/py_client.py`.
    Python,
}

impl Sdk {
    /// Every client, in the order of the table.
    pub const ALL: [Self; 5] = [
        Self::Blocking,
        Self::Tokio,
        Self::Rmcp,
        Self::TypeScript,
        Self::Python,
    ];

    /// The name in the table (a Rust client's is its network cases' name).
    pub fn label(self) -> &'static str {
        match (self, self.client()) {
            (_, Some(client)) => client.label(),
            (Self::TypeScript, None) => "TypeScript SDK",
            (_, None) => "Python SDK",
        }
    }

    /// The network cases' client a Rust client child runs.
    fn client(self) -> Option<ClientKind> {
        match self {
            Self::Blocking => Some(ClientKind::Blocking),
            Self::Tokio => Some(ClientKind::Tokio),
            Self::Rmcp => Some(ClientKind::Rmcp),
            Self::TypeScript | Self::Python => None,
        }
    }

    /// The `KIND` of `mcp-bench client-child KIND ...` for the Rust clients.
    fn child_kind(self) -> Option<&'static str> {
        match self {
            Self::Blocking => Some("blocking"),
            Self::Tokio => Some("tokio"),
            Self::Rmcp => Some("rmcp"),
            Self::TypeScript | Self::Python => None,
        }
    }
}

/// The folder `interop/install.sh` installs the peers into: `$INTEROP_HOME`, by default
/// `~/.cache/mcp-interop` (as the install script and the interop rows read it).
pub fn default_interop_home() -> PathBuf {
    match std::env::var_os("INTEROP_HOME") {
        Some(home) if !home.is_empty() => home.into(),
        _ => {
            let home = std::env::var_os("HOME").unwrap_or_default();
            Path::new(&home).join(".cache/mcp-interop")
        }
    }
}

/// Where the two foreign SDKs and their client scripts are.
#[derive(Debug, Clone)]
pub struct Peers {
    interop_home: PathBuf,
    node: PathBuf,
    python: PathBuf,
    scripts: PathBuf,
}

impl Peers {
    /// The peers `interop/install.sh` installed under `interop_home`, run by the scripts of
    /// `bench/peers/`.
    ///
    /// # Errors
    /// When `node`, the TypeScript SDK or the Python SDK's venv is missing: the message names
    /// what is missing and the install step (`interop/install.sh`), since a row is never
    /// skipped for a missing peer.
    pub fn find(interop_home: &Path) -> Result<Self, String> {
        let install = format!(
            "run interop/install.sh (it installs the pinned SDKs into INTEROP_HOME={}), \
             or pass --no-sdks to leave the cross-SDK table out",
            interop_home.display()
        );
        let sdk = interop_home.join("npm/node_modules/@modelcontextprotocol/sdk/package.json");
        if !sdk.is_file() {
            return Err(format!(
                "the TypeScript SDK is missing ({} does not exist): {install}",
                sdk.display()
            ));
        }
        let python = interop_home.join("venv-mcp/bin/python");
        if !python.is_file() {
            return Err(format!(
                "the Python SDK is missing ({} does not exist): {install}",
                python.display()
            ));
        }
        let node_runs = Command::new("node")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !node_runs {
            return Err(format!(
                "`node --version` does not run: the TypeScript SDK needs Node.js on PATH; {install}"
            ));
        }
        Ok(Self {
            interop_home: interop_home.to_owned(),
            node: "node".into(),
            python,
            scripts: Path::new(env!("CARGO_MANIFEST_DIR")).join("peers"),
        })
    }

    /// The command starting `sdk`'s client child; `exe` is this `mcp-bench`.
    fn command(&self, sdk: Sdk, exe: &Path) -> Command {
        let mut command = match sdk.child_kind() {
            Some(kind) => {
                let mut command = Command::new(exe);
                command.args(["client-child", kind]);
                command
            }
            None if sdk == Sdk::TypeScript => {
                let mut command = Command::new(&self.node);
                command.arg(self.scripts.join("ts_client.mjs"));
                command
            }
            None => {
                let mut command = Command::new(&self.python);
                command.arg(self.scripts.join("py_client.py"));
                command
            }
        };
        command.env("INTEROP_HOME", &self.interop_home);
        command
    }
}

/// What one client child measured in one case.
#[derive(Debug, Clone)]
pub struct SdkRun {
    /// The client.
    pub sdk: Sdk,
    /// The case.
    pub group: Group,
    /// The server's answer format.
    pub mode: Mode,
    /// Throughput and latency.
    pub stats: Stats,
    /// What the child said it runs: the SDK and its version, the runtime.
    pub version: String,
    /// CPU time of the child from its start signal to its answer (warm-up included).
    pub client_cpu: Option<Duration>,
    /// CPU time of the server meanwhile.
    pub server_cpu: Option<Duration>,
    /// The child's peak resident set (`VmHWM`), loading included, KiB.
    pub peak_kib: Option<u64>,
    /// TCP connections the server accepted during the case.
    pub connections: Option<u64>,
}

impl SdkRun {
    /// Client CPU per operation (warm-up included, as the network cases count it), µs: also
    /// the CPU ms per 1000 calls.
    pub fn client_us_per_op(&self) -> Option<f64> {
        per_op(self.client_cpu, self.stats.all_ops)
    }

    /// Server CPU per operation, µs (as [`Self::client_us_per_op`]).
    pub fn server_us_per_op(&self) -> Option<f64> {
        per_op(self.server_cpu, self.stats.all_ops)
    }

    /// New TCP connections per operation (warm-up included).
    pub fn connections_per_op(&self) -> Option<f64> {
        let ops = self.stats.all_ops;
        (ops > 0).then(|| self.connections.map(|c| c as f64 / ops as f64))?
    }
}

/// A started client child; dropping it ends it (killed if it has not exited by then).
struct ClientChild {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Option<thread::JoinHandle<String>>,
}

impl ClientChild {
    fn spawn(mut command: Command) -> io::Result<Self> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let stdin = child.stdin.take();
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| io::Error::other("no stdout"))?;
        let mut stderr = child
            .stderr
            .take()
            .ok_or_else(|| io::Error::other("no stderr"))?;
        let (send, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        // Read to the end, so that a chatty child never blocks on a full pipe.
        let stderr = thread::spawn(move || {
            let mut text = Vec::new();
            let _ = stderr.read_to_end(&mut text);
            String::from_utf8_lossy(&text).into_owned()
        });
        Ok(Self {
            child,
            stdin,
            lines,
            stderr: Some(stderr),
        })
    }

    /// The next line of the child's standard output, within `within`.
    fn line(&self, within: Duration, what: &str) -> Result<String, String> {
        self.lines.recv_timeout(within).map_err(|err| match err {
            RecvTimeoutError::Timeout => format!("no {what} after {} s", within.as_secs()),
            RecvTimeoutError::Disconnected => format!("it exited before its {what}"),
        })
    }

    fn tell(&mut self, line: &str) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("its stdin is closed")?;
        writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("it stopped reading its stdin: {e}"))
    }

    /// Closes its standard input (which ends it) and waits for it, up to [`GRACE`].
    fn finish(&mut self) -> Result<(), String> {
        drop(self.stdin.take());
        let deadline = Instant::now() + GRACE;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) if status.success() => return Ok(()),
                Ok(Some(status)) => return Err(format!("it exited with {status}")),
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(10)),
                Ok(None) => return Err("it did not exit once its stdin closed".to_owned()),
                Err(err) => return Err(err.to_string()),
            }
        }
    }

    /// The end of what it wrote on its standard error (once it has exited or been killed).
    fn stderr_tail(&mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let text = self
            .stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        let lines: Vec<&str> = text.lines().rev().take(5).collect();
        let tail: Vec<&str> = lines.into_iter().rev().collect();
        clip(&tail.join(" | "), 600)
    }
}

impl Drop for ClientChild {
    fn drop(&mut self) {
        drop(self.stdin.take());
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_owned(),
    }
}

/// Reads a child's `ready` line: what it runs (`sdk on runtime`).
///
/// # Errors
/// A line that is not the `ready` object, or an `error` object (its text).
pub fn parse_ready(line: &str) -> Result<String, String> {
    let value = parse_line(line)?;
    if value["ready"] != true {
        return Err(format!("expected the ready line, got {}", clip(line, 200)));
    }
    let text = |key: &str| value[key].as_str().unwrap_or("?").to_owned();
    Ok(format!("{} on {}", text("sdk"), text("runtime")))
}

/// Reads a child's result line as a sample.
///
/// # Errors
/// An `error` object (its text), or a line that is not a result.
pub fn parse_result(line: &str) -> Result<Sample, String> {
    let value = parse_line(line)?;
    let (Some(latencies), Some(warm_ops), Some(wall_us)) = (
        value["latencies_us"].as_array(),
        value["warm_ops"].as_u64(),
        value["wall_us"].as_f64(),
    ) else {
        return Err(format!("expected the result line, got {}", clip(line, 200)));
    };
    let latencies = latencies
        .iter()
        .map(|us| us.as_f64().filter(|us| *us >= 0.0).map(micros))
        .collect::<Option<Vec<_>>>()
        .ok_or("a latency is not a number of µs")?;
    if latencies.is_empty() {
        return Err("no operation was timed".to_owned());
    }
    Ok(Sample::new(latencies, micros(wall_us.max(0.0)), warm_ops))
}

fn micros(us: f64) -> Duration {
    Duration::from_secs_f64(us / 1e6)
}

/// A line as JSON, an `error` object turned into its text.
fn parse_line(line: &str) -> Result<Value, String> {
    let value: Value =
        serde_json::from_str(line).map_err(|_| format!("not a JSON line: {}", clip(line, 200)))?;
    match value["error"].as_str() {
        Some(error) => Err(clip(error, 400)),
        None => Ok(value),
    }
}

/// Runs `sdk`'s client child in `group` against the server playing `mode`, and reads its CPU
/// time, its peak memory, and the server's CPU time and connections around it.
///
/// # Errors
/// Whatever stopped the child, in a sentence naming the client and the case.
pub fn run_one(
    peers: &Peers,
    exe: &Path,
    sdk: Sdk,
    group: Group,
    mode: Mode,
    server: &mut ServerProcess,
    cfg: RunCfg,
) -> Result<SdkRun, String> {
    let mut command = peers.command(sdk, exe);
    command.args([
        server.url(mode.role()).to_owned(),
        group.name(),
        cfg.warmup.as_millis().to_string(),
        cfg.duration.as_millis().max(1).to_string(),
    ]);
    let case = format!("{} ({} {})", sdk.label(), group.name(), mode.label());
    let program = command.get_program().to_string_lossy().into_owned();
    // Read while no client runs: the server's counts are exact then.
    let counters_before = server.counters(mode.role());
    let mut child =
        ClientChild::spawn(command).map_err(|e| format!("{case}: cannot start {program}: {e}"))?;
    let server_pid = server.pid().to_string();
    let measured = (|| {
        let version = parse_ready(&child.line(READY_WITHIN, "ready line")?)?;
        let pid = child.child.id().to_string();
        let (client_before, server_before) = (process_cpu(&pid), process_cpu(&server_pid));
        child.tell("go")?;
        let answer = child.line(cfg.warmup + cfg.duration + GRACE, "result line")?;
        let (client_after, server_after) = (process_cpu(&pid), process_cpu(&server_pid));
        let peak_kib = vm_hwm_kib(&pid);
        let sample = parse_result(&answer)?;
        child.finish()?;
        let spent = |a: Option<Duration>, b: Option<Duration>| Some(b?.saturating_sub(a?));
        Ok::<_, String>(SdkRun {
            sdk,
            group,
            mode,
            stats: sample.stats(),
            version,
            client_cpu: spent(client_before, client_after),
            server_cpu: spent(server_before, server_after),
            peak_kib,
            connections: None,
        })
    })();
    let mut run = measured.map_err(|err| {
        let tail = child.stderr_tail();
        let tail = if tail.is_empty() {
            String::new()
        } else {
            format!("; its stderr ends: {tail}")
        };
        format!("{case}: {err}{tail}")
    })?;
    let counted = server.counters(mode.role()).zip(counters_before);
    run.connections =
        counted.map(|(after, before)| after.connections.saturating_sub(before.connections));
    Ok(run)
}

/// The body of `mcp-bench client-child KIND URL CASE WARMUP_MS WINDOW_MS`: one Rust client
/// (`blocking`, `tokio` or `rmcp`) speaking the protocol of the module doc.
///
/// # Errors
/// Bad arguments, or standard output closed; a failed case is reported on standard output.
pub fn child_main(args: &[String]) -> Result<(), String> {
    let [kind, url, case, warmup_ms, window_ms] = args else {
        return Err("usage: mcp-bench client-child KIND URL CASE WARMUP_MS WINDOW_MS".to_owned());
    };
    let (sdk, client) = Sdk::ALL
        .into_iter()
        .find(|sdk| sdk.child_kind() == Some(kind.as_str()))
        .and_then(|sdk| Some((sdk, sdk.client()?)))
        .ok_or(format!("no client kind {kind} (blocking, tokio, rmcp)"))?;
    let group = Group::parse(case).ok_or(format!("no case {case}"))?;
    let ms = |v: &str| {
        v.parse()
            .map(Duration::from_millis)
            .map_err(|_| format!("{v} is not ms"))
    };
    let cfg = RunCfg {
        warmup: ms(warmup_ms)?,
        duration: ms(window_ms)?,
    };
    let version = match sdk {
        Sdk::Rmcp => format!("rmcp {}", locked_version("rmcp").unwrap_or("?")),
        _ => format!("{} {}", sdk.label(), env!("CARGO_PKG_VERSION")),
    };
    let say = |line: Value| {
        let mut out = io::stdout().lock();
        writeln!(out, "{line}")
            .and_then(|()| out.flush())
            .map_err(|e| e.to_string())
    };
    say(json!({"ready": true, "sdk": version, "runtime": "Rust (release build)"}))?;
    let mut start = String::new();
    if io::stdin()
        .read_line(&mut start)
        .map_err(|e| e.to_string())?
        == 0
    {
        return Ok(());
    }
    let endpoint = cases::Endpoint::Http {
        url,
        era: cases::Era::Legacy,
    };
    match cases::sample(group, client, endpoint, cfg) {
        Ok(sample) => {
            let us: Vec<f64> = sample
                .latencies
                .iter()
                .map(|d| d.as_secs_f64() * 1e6)
                .collect();
            let wall_us = sample.wall.as_secs_f64() * 1e6;
            say(json!({"latencies_us": us, "warm_ops": sample.warm_ops, "wall_us": wall_us}))?;
        }
        Err(error) => say(json!({ "error": error }))?,
    }
    // Stay until told to go: the parent reads this process's CPU time and peak memory now.
    let _ = io::stdin().read_to_end(&mut Vec::new());
    Ok(())
}

/// The version of `package` in the workspace's `Cargo.lock`, as this binary was built.
fn locked_version(package: &str) -> Option<&'static str> {
    let lock = include_str!("../../Cargo.lock");
    let entry = format!("name = \"{package}\"\nversion = \"");
    let at = lock.find(&entry)? + entry.len();
    lock[at..].split('"').next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_line_is_a_sample_of_its_raw_latencies() {
        let sample =
            parse_result(r#"{"latencies_us":[100.0,300.5,200],"warm_ops":7,"wall_us":2000000}"#)
                .unwrap();
        assert_eq!(sample.latencies.len(), 3);
        assert_eq!(sample.warm_ops, 7);
        let stats = sample.stats();
        assert_eq!(stats.p50, Duration::from_micros(200));
        assert_eq!(stats.all_ops, 10);
        assert!((stats.per_sec() - 1.5).abs() < 1e-9);
    }

    #[test]
    fn a_child_that_reports_an_error_fails_with_its_words() {
        let err = parse_result(r#"{"error":"the echo answered \"ho\""}"#).unwrap_err();
        assert_eq!(err, r#"the echo answered "ho""#);
        assert!(
            parse_ready(r#"{"error":"no SDK"}"#)
                .unwrap_err()
                .contains("no SDK")
        );
        let err = parse_result(r#"{"ready":true}"#).unwrap_err();
        assert!(err.contains("expected the result line"), "{err}");
        assert!(
            parse_result("Traceback (most recent")
                .unwrap_err()
                .contains("not a JSON")
        );
        let none = r#"{"latencies_us":[],"warm_ops":0,"wall_us":0}"#;
        assert!(parse_result(none).unwrap_err().contains("no operation"));
    }

    #[test]
    fn the_ready_line_names_the_sdk_and_its_runtime() {
        let line = r#"{"ready":true,"sdk":"mcp 2.3.0","runtime":"CPython 3.11.7"}"#;
        assert_eq!(parse_ready(line).unwrap(), "mcp 2.3.0 on CPython 3.11.7");
    }

    #[test]
    fn missing_peers_name_the_install_step() {
        let home = std::env::temp_dir().join(format!("mcp-bench-no-peers-{}", std::process::id()));
        let err = Peers::find(&home).unwrap_err();
        assert!(err.contains("TypeScript SDK is missing"), "{err}");
        assert!(err.contains("interop/install.sh"), "{err}");
    }

    #[test]
    fn the_rmcp_version_comes_from_the_lock_file() {
        let version = locked_version("rmcp").unwrap();
        assert!(version.starts_with("3."), "{version}");
    }
}
