//! The network cases: every client calls the tool `echo` on the same loopback server.
//!
//! * **Sequential** ([`Group::Sequential`]): one session, opened before the clock starts, and
//!   one `tools/call` after another on it.
//! * **Cold** ([`Group::Cold`]): each operation is a new client and a new session: handshake
//!   (`initialize`, `notifications/initialized`) and the call, then the client is dropped
//!   (rmcp's is closed with `cancel().await`, which is how it ends its worker; that sends its
//!   session `DELETE`).
//! * **Cold, closed** ([`Group::ColdClosed`], the cross-SDK table's cold case): the same, and
//!   every client ends its session with a `DELETE` before it goes (the drivers' `close`), as
//!   the other SDKs' clients do when they close.
//! * **In flight** ([`Group::InFlight`]): `n` tasks on a 2-worker tokio runtime, each with its
//!   own client and session, each calling in a loop.
//! * **Shared** ([`Group::Shared`]): `n` tasks on a 2-worker tokio runtime sharing **one**
//!   client and session, opened (one call made and checked) before the tasks start, each task
//!   calling in a loop on it: a clone of the `mcp_driver_tokio::Client` (clones share one
//!   session), rmcp's one `RunningService` behind an `Arc` (its calls take `&self`), one
//!   hyper-util client and one handshake for the floor. The server counts the `initialize`
//!   requests of every case ([`Measurement::legs`]), which shows that the tasks shared
//!   one handshake. The blocking driver shares its client the same way, between `n` threads.
//!
//! Each case talks to one [`Target`]: `mcp-bench serve`'s HTTP server in the legacy era (every
//! group above), the same server in the 2026-07-28 era (sequential and cold: a call is one
//! stateless POST, no handshake, no session; the drivers pinned to
//! [`ProtocolVersion::MODERN`], the floors posting the modern call's captured bytes), or the
//! testkit's stdio server (`mcp-testkit-stdio`, legacy era), a process the client starts:
//! sequential calls on a kept process, and cold operations that spawn it, make one call and
//! close it (stdin closed, the exit awaited).
//!
//! Each operation is timed on its own (p50, p99); calls/s is operations over the wall time of
//! the measured window, after a warm-up. The clients ([`ClientKind`]):
//!
//! * `mcp-driver-blocking` and its floor, a bare `ureq` agent posting the same bytes and
//!   reading the whole body (no JSON parsing), on the calling thread; over stdio the floor is
//!   a bare `std::process` child: the same lines written to its stdin, one line read back per
//!   request (no JSON parsing);
//! * `mcp-driver-tokio` and its floor, a bare `hyper-util` legacy client (plain
//!   `HttpConnector`, Nagle off) posting the same bytes and collecting the body; over stdio a
//!   bare `tokio::process` child, as the blocking floor;
//! * `rmcp` with its default transport (`StreamableHttpClientTransport::from_uri`, whose
//!   reqwest client keeps **no idle connection**: every request opens one), and `rmcp` over a
//!   pooled `reqwest::Client` (`with_client`), to separate the SDK from its pool setting; over
//!   stdio rmcp's `TokioChildProcess`. rmcp speaks no 2026-07-28 era: it runs no modern case.
//!
//! Sequential and cold async cases run on a current-thread tokio runtime.

use std::borrow::Cow;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use mcp_proto::{ProtocolVersion, SessionConfig, StdioCommand};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};

pub use crate::server::Era;
use crate::server::{Legs, ServerProcess};
use crate::stats::{CpuSnapshot, CpuUse, Sample, Stats, comm_of};
use crate::wire::{
    CallLegs, Captured, SESSION_HEADER, TEXT, TOOL, arguments, capture_call, capture_modern_call,
    capture_stdio_call,
};

/// How long each case warms up and then measures.
#[derive(Debug, Clone, Copy)]
pub struct RunCfg {
    /// Untimed operations before the measured window.
    pub warmup: Duration,
    /// The measured window.
    pub duration: Duration,
}

/// Which client runs a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientKind {
    /// `mcp-driver-blocking`.
    Blocking,
    /// `mcp-driver-tokio`.
    Tokio,
    /// rmcp with `StreamableHttpClientTransport::from_uri` (its default reqwest client); over
    /// stdio, `TokioChildProcess`.
    Rmcp,
    /// rmcp over a pooled `reqwest::Client::new()`.
    RmcpPooled,
    /// A bare ureq agent: the floor of the blocking driver.
    UreqFloor,
    /// A bare hyper-util legacy client: the floor of the tokio driver.
    HyperFloor,
    /// A bare `std::process` child written to and read from line by line: the blocking
    /// driver's floor over stdio.
    PipeFloor,
    /// A bare `tokio::process` child written to and read from line by line: the tokio
    /// driver's (and rmcp's) floor over stdio.
    TokioPipeFloor,
    /// The blocking pipe floor with one `poll(2)` on stdout (with a timeout, as a bounded wait
    /// needs) before each read: a row beside the floor, not a floor. It prices what a client
    /// that must end a wait at an instant pays on a pipe, which has no timeout of its own.
    PolledPipe,
}

impl ClientKind {
    /// The name in the tables.
    pub fn label(self) -> &'static str {
        match self {
            Self::Blocking => "mcp-driver-blocking",
            Self::Tokio => "mcp-driver-tokio",
            Self::Rmcp => "rmcp (default client)",
            Self::RmcpPooled => "rmcp (pooled reqwest)",
            Self::UreqFloor => "floor: bare ureq POST",
            Self::HyperFloor => "floor: bare hyper-util POST",
            Self::PipeFloor => "floor: bare std::process pipes",
            Self::TokioPipeFloor => "floor: bare tokio::process pipes",
            Self::PolledPipe => "bare std::process pipes, poll(2) before each read",
        }
    }

    /// The name in the tables of a case against `target` (rmcp's stdio client is
    /// `TokioChildProcess`).
    pub fn label_for(self, target: Target) -> &'static str {
        match (self, target) {
            (Self::Rmcp, Target::Stdio) => "rmcp (TokioChildProcess)",
            _ => self.label(),
        }
    }

    /// The bare floor this client is compared to against `target`: the blocking driver's is
    /// ureq's (over stdio `std::process`), every other client's hyper-util's (over stdio
    /// `tokio::process`).
    pub fn floor(self, target: Target) -> Self {
        let blocking = matches!(
            self,
            Self::Blocking | Self::UreqFloor | Self::PipeFloor | Self::PolledPipe
        );
        match (blocking, target) {
            (true, Target::Http(..)) => Self::UreqFloor,
            (false, Target::Http(..)) => Self::HyperFloor,
            (true, Target::Stdio) => Self::PipeFloor,
            (false, Target::Stdio) => Self::TokioPipeFloor,
        }
    }

    /// Whether the client is itself a floor.
    pub fn is_floor(self) -> bool {
        matches!(
            self,
            Self::UreqFloor | Self::HyperFloor | Self::PipeFloor | Self::TokioPipeFloor
        )
    }
}

/// What a case measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// One call after another on a live session.
    Sequential,
    /// A new client and session per operation.
    Cold,
    /// A new client and session per operation, the session ended (`DELETE`) after the call.
    ColdClosed,
    /// `n` operations in flight at once, each task with its own client.
    InFlight(usize),
    /// `n` operations in flight at once, the `n` tasks sharing one client and session.
    Shared(usize),
}

impl Group {
    /// The name in case names and on a peer's command line: `sequential`, `cold`,
    /// `cold-closed`, `in-flight-N`, `shared-N`.
    pub fn name(self) -> String {
        match self {
            Self::Sequential => "sequential".to_owned(),
            Self::Cold => "cold".to_owned(),
            Self::ColdClosed => "cold-closed".to_owned(),
            Self::InFlight(n) => format!("in-flight-{n}"),
            Self::Shared(n) => format!("shared-{n}"),
        }
    }

    /// The group [`Self::name`] gave `name`.
    pub fn parse(name: &str) -> Option<Self> {
        let count = |prefix: &str| name.strip_prefix(prefix)?.parse().ok();
        match name {
            "sequential" => Some(Self::Sequential),
            "cold" => Some(Self::Cold),
            "cold-closed" => Some(Self::ColdClosed),
            _ => count("in-flight-")
                .map(Self::InFlight)
                .or_else(|| count("shared-").map(Self::Shared)),
        }
    }
}

/// The answer format of the server a case runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `application/json` with a `Content-Length`.
    Json,
    /// `text/event-stream`, chunked, ended after the answer.
    Sse,
}

impl Mode {
    /// The name in the tables.
    pub fn label(self) -> &'static str {
        match self {
            Self::Json => "JSON",
            Self::Sse => "SSE",
        }
    }

    /// The server role serving this mode.
    pub fn role(self) -> &'static str {
        match self {
            Self::Json => "json",
            Self::Sse => "sse",
        }
    }
}

/// What a case's client talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// `mcp-bench serve`'s HTTP server speaking this era, answering in this format.
    Http(Era, Mode),
    /// The testkit's stdio server (`mcp-testkit-stdio`, legacy era): a process the client
    /// starts, one JSON-RPC message per line each way.
    Stdio,
}

impl Target {
    /// The answer format in the tables: `JSON`, `SSE`, or `stdio`.
    pub fn label(self) -> &'static str {
        match self {
            Self::Http(_, mode) => mode.label(),
            Self::Stdio => "stdio",
        }
    }

    /// The era spoken.
    pub fn era(self) -> Era {
        match self {
            Self::Http(era, _) => era,
            Self::Stdio => Era::Legacy,
        }
    }

    /// The start of the case names of this target: none for the legacy HTTP server (the
    /// names the cases had before there were others), `modern ` for the 2026-07-28 one.
    fn prefix(self) -> &'static str {
        match self {
            Self::Http(Era::Modern, _) => "modern ",
            _ => "",
        }
    }
}

/// The name of a case, as `--only` matches it and the logs print it:
/// `sequential JSON mcp-driver-tokio`, `modern cold SSE floor: bare ureq POST`,
/// `sequential stdio rmcp (TokioChildProcess)`...
pub fn case_name(group: Group, target: Target, client: ClientKind) -> String {
    format!(
        "{}{} {} {}",
        target.prefix(),
        group.name(),
        target.label(),
        client.label_for(target)
    )
}

/// Where a case's client goes, found: what [`sample`] takes.
#[derive(Debug, Clone, Copy)]
pub enum Endpoint<'a> {
    /// The HTTP server at `url`, speaking `era`.
    Http {
        /// The MCP endpoint.
        url: &'a str,
        /// The era its server speaks (the drivers are pinned to it, the floors send its bytes).
        era: Era,
    },
    /// The stdio server binary at this path, which the client starts.
    Stdio(&'a Path),
}

/// The servers of a run: the legacy HTTP server process (always: the cross-SDK, ceiling and
/// memory cases use it too), the modern one and the stdio server's binary when a case needs
/// them.
#[derive(Debug)]
pub struct Servers {
    /// `mcp-bench serve --era legacy`.
    pub legacy: ServerProcess,
    /// `mcp-bench serve --era modern`.
    pub modern: Option<ServerProcess>,
    /// `mcp-testkit-stdio`.
    pub stdio: Option<PathBuf>,
}

impl Servers {
    /// The HTTP server process of `era`.
    fn http(&mut self, era: Era) -> Result<&mut ServerProcess, String> {
        match era {
            Era::Legacy => Ok(&mut self.legacy),
            Era::Modern => self
                .modern
                .as_mut()
                .ok_or_else(|| "no modern server process was started".to_owned()),
        }
    }
}

/// One measured case (possibly several windows of it, merged).
#[derive(Debug, Clone)]
pub struct Measurement {
    /// What was measured.
    pub group: Group,
    /// What the client talked to.
    pub target: Target,
    /// Who measured it.
    pub client: ClientKind,
    /// Throughput and latency (of `sample`).
    pub stats: Stats,
    /// The raw latencies.
    pub sample: Sample,
    /// CPU spent meanwhile.
    pub cpu: CpuUse,
    /// TCP connections the server accepted during the case (warm-up and set-up included);
    /// `None` over stdio.
    pub connections: Option<u64>,
    /// The requests the server received during the case, by JSON-RPC method (warm-up and
    /// set-up included): the `initialize` requests are its handshakes. `None` over stdio
    /// (the servers are the client's own children, counted by no one).
    pub legs: Option<Legs>,
    /// Measured windows merged into this one (each opens its clients anew).
    pub windows: u32,
}

impl Measurement {
    /// Client CPU per operation, in microseconds (CPU read around the whole case, warm-up
    /// included, so it is shared out over every operation run, warm-up included).
    pub fn client_us_per_op(&self) -> Option<f64> {
        per_op(self.cpu.client, self.stats.all_ops)
    }

    /// Server CPU per operation, in microseconds (as [`Self::client_us_per_op`]).
    pub fn server_us_per_op(&self) -> Option<f64> {
        per_op(self.cpu.server, self.stats.all_ops)
    }

    /// Adds another window of the same case.
    pub fn merge(&mut self, other: Self) {
        self.sample.merge(other.sample);
        self.stats = self.sample.stats();
        self.cpu.merge(&other.cpu);
        self.connections = self.connections.zip(other.connections).map(|(a, b)| a + b);
        self.legs = match (self.legs.take(), other.legs) {
            (Some(mut legs), Some(other)) => {
                legs.merge(&other);
                Some(legs)
            }
            _ => None,
        };
        self.windows += other.windows;
    }

    /// `initialize` requests per measured window: the handshakes one run of the case made
    /// (1 when every task shared one session).
    pub fn initialize_per_window(&self) -> Option<f64> {
        (self.windows > 0).then_some(())?;
        let initialize = self.legs.as_ref()?.count("initialize");
        Some(initialize as f64 / f64::from(self.windows))
    }

    /// The requests the server saw per operation, by JSON-RPC method (`GET`, `DELETE` for
    /// those), in the order first seen: what one operation cost on the wire.
    pub fn legs_per_op(&self) -> Option<Vec<(String, f64)>> {
        let ops = self.stats.all_ops;
        (ops > 0).then_some(())?;
        let legs = self.legs.as_ref()?;
        Some(
            legs.iter()
                .map(|(label, n)| (label.to_owned(), n as f64 / ops as f64))
                .collect(),
        )
    }

    /// New TCP connections per operation (0 when every call reused one).
    pub fn connections_per_op(&self) -> Option<f64> {
        let ops = self.stats.all_ops;
        (ops > 0).then(|| self.connections.map(|c| c as f64 / ops as f64))?
    }
}

/// `cpu` shared out over `ops` operations, in microseconds.
pub(crate) fn per_op(cpu: Option<Duration>, ops: u64) -> Option<f64> {
    (ops > 0).then_some(())?;
    Some(cpu?.as_secs_f64() * 1e6 / ops as f64)
}

/// Runs one case and reads the CPU counters around it (and, for an HTTP server, its
/// connections and requests).
///
/// # Errors
/// The first failed operation, or a target this run has no server for.
pub fn run_case(
    group: Group,
    target: Target,
    client: ClientKind,
    servers: &mut Servers,
    cfg: RunCfg,
) -> Result<Measurement, String> {
    let (sample, cpu, counted) = match target {
        Target::Http(era, mode) => {
            let server = servers.http(era)?;
            let url = server.url(mode.role()).to_owned();
            let server_pid = Some(server.pid());
            // Read between cases, when no client runs: the server's counts are exact then.
            let counters_before = server.counters(mode.role());
            let before = CpuSnapshot::take(server_pid);
            let endpoint = Endpoint::Http { url: &url, era };
            let sample = sample(group, client, endpoint, cfg)?;
            let cpu = before.until(&CpuSnapshot::take(server_pid));
            let counted = server.counters(mode.role()).zip(counters_before);
            (sample, cpu, counted)
        }
        Target::Stdio => {
            let path = servers
                .stdio
                .clone()
                .ok_or("the stdio server's binary was not found")?;
            // The server processes are the client's children: their CPU is theirs.
            let comm = comm_of(&path);
            let before = CpuSnapshot::children_before(&comm);
            let sample = sample(group, client, Endpoint::Stdio(&path), cfg)?;
            let cpu = before.until(&CpuSnapshot::children_after(&comm));
            (sample, cpu, None)
        }
    };
    let connections = counted
        .as_ref()
        .map(|(after, before)| after.connections.saturating_sub(before.connections));
    let legs = counted.map(|(after, before)| after.legs.since(&before.legs));
    Ok(Measurement {
        group,
        target,
        client,
        stats: sample.stats(),
        sample,
        cpu,
        connections,
        legs,
        windows: 1,
    })
}

/// Runs one case of `client` against `endpoint` and times each operation: the measurement
/// alone, with no counter read around it (what [`run_case`] and a client child process of
/// the cross-SDK table share).
///
/// # Errors
/// The first failed operation, or a case this client cannot run: the floors end no session,
/// so they run no [`Group::ColdClosed`]; rmcp speaks no 2026-07-28 era; over stdio only the
/// sequential and cold cases run, and only the drivers, their pipe floors and rmcp.
pub fn sample(
    group: Group,
    client: ClientKind,
    endpoint: Endpoint<'_>,
    cfg: RunCfg,
) -> Result<Sample, String> {
    let cannot = |why: &str| Err(format!("{} {why}", client.label()));
    let (url, era) = match endpoint {
        Endpoint::Stdio(path) => {
            return match (group, client) {
                (
                    Group::Sequential,
                    ClientKind::Blocking | ClientKind::PipeFloor | ClientKind::PolledPipe,
                ) => stdio_sequential_sync(client, path, cfg),
                (Group::Cold, ClientKind::Blocking | ClientKind::PipeFloor) => {
                    stdio_cold_sync(client, path, cfg)
                }
                (
                    Group::Sequential | Group::Cold,
                    ClientKind::Tokio | ClientKind::TokioPipeFloor | ClientKind::Rmcp,
                ) => current_thread()?.block_on(stdio_async(group, client, path, cfg)),
                _ => cannot(&format!("runs no {} case over stdio", group.name())),
            };
        }
        Endpoint::Http { url, era } => (url, era),
    };
    let closed = group == Group::ColdClosed;
    match (group, client) {
        (_, ClientKind::PipeFloor | ClientKind::TokioPipeFloor | ClientKind::PolledPipe) => {
            cannot("speaks only stdio")
        }
        (_, ClientKind::Rmcp | ClientKind::RmcpPooled) if era == Era::Modern => {
            cannot("speaks no 2026-07-28 era")
        }
        (Group::ColdClosed, ClientKind::UreqFloor | ClientKind::HyperFloor) => {
            cannot("ends no session: it runs no cold-closed case")
        }
        (Group::Sequential, ClientKind::Blocking | ClientKind::UreqFloor) => {
            sequential_sync(client, url, era, cfg)
        }
        (Group::Sequential, _) => {
            current_thread()?.block_on(sequential_async(client, url, era, cfg))
        }
        (Group::Cold | Group::ColdClosed, ClientKind::Blocking | ClientKind::UreqFloor) => {
            cold_sync(client, url, era, cfg, closed)
        }
        (Group::Cold | Group::ColdClosed, _) => {
            current_thread()?.block_on(cold_async(client, url, era, cfg, closed))
        }
        (Group::Shared(n), ClientKind::Blocking) => shared_sync(url, era, n, cfg),
        (Group::InFlight(n), _) => two_workers()?.block_on(in_flight(client, url, era, n, cfg)),
        (Group::Shared(n), _) => two_workers()?.block_on(shared(client, url, era, n, cfg)),
    }
}

fn current_thread() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())
}

fn two_workers() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())
}

/// Times `op` after `cfg.warmup` of untimed runs, for `cfg.duration`.
pub(crate) fn measure_sync(
    cfg: RunCfg,
    mut op: impl FnMut() -> Result<(), String>,
) -> Result<Sample, String> {
    let warm_end = Instant::now() + cfg.warmup;
    let mut warm_ops = 0;
    while Instant::now() < warm_end {
        op()?;
        warm_ops += 1;
    }
    let mut latencies = Vec::with_capacity(1 << 16);
    let start = Instant::now();
    let end = start + cfg.duration;
    loop {
        let t = Instant::now();
        op()?;
        let done = Instant::now();
        latencies.push(done - t);
        if done >= end {
            return Ok(Sample::new(latencies, done - start, warm_ops));
        }
    }
}

/// [`measure_sync`] for an async operation.
pub(crate) async fn measure_async(
    cfg: RunCfg,
    mut op: impl AsyncFnMut() -> Result<(), String>,
) -> Result<Sample, String> {
    let warm_end = Instant::now() + cfg.warmup;
    let mut warm_ops = 0;
    while Instant::now() < warm_end {
        op().await?;
        warm_ops += 1;
    }
    let mut latencies = Vec::with_capacity(1 << 16);
    let start = Instant::now();
    let end = start + cfg.duration;
    loop {
        let t = Instant::now();
        op().await?;
        let done = Instant::now();
        latencies.push(done - t);
        if done >= end {
            return Ok(Sample::new(latencies, done - start, warm_ops));
        }
    }
}

/// The drivers' configuration for the HTTP server at `url`, pinned to its era's version: the
/// legacy era's latest (rmcp's client and the legacy server speak it), or the modern one.
fn config(url: &str, era: Era) -> Result<SessionConfig, String> {
    let version = match era {
        Era::Legacy => ProtocolVersion::LATEST,
        Era::Modern => ProtocolVersion::MODERN,
    };
    SessionConfig::new(url)
        .map(|c| c.with_protocol_version(version))
        .map_err(|e| e.to_string())
}

/// The drivers' configuration for the stdio server at `path`: legacy era, pinned as over HTTP
/// (a configuration that pins none would first probe with `server/discover`, which a legacy
/// stdio server refuses).
fn stdio_config(path: &Path) -> SessionConfig {
    SessionConfig::stdio(stdio_command(path)).with_protocol_version(ProtocolVersion::LATEST)
}

fn stdio_command(path: &Path) -> StdioCommand {
    StdioCommand::new(path.to_string_lossy())
}

/// What a floor sends, captured once before the clock: the handshake's legs and the call in
/// the legacy era, the one stateless call in the modern era.
#[expect(
    clippy::large_enum_variant,
    reason = "one per case, built before the clock and never moved in the measured loop"
)]
enum FloorLegs {
    Legacy(CallLegs),
    Modern(Captured),
}

impl FloorLegs {
    fn capture(url: &str, era: Era) -> Self {
        match era {
            Era::Legacy => Self::Legacy(capture_call(url)),
            Era::Modern => Self::Modern(capture_modern_call(url)),
        }
    }
}

fn check_text(text: &str) -> Result<(), String> {
    if text == TEXT {
        Ok(())
    } else {
        Err(format!("the echo answered {text:?}"))
    }
}

// ---------------------------------------------------------------- blocking side

fn ureq_agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .new_agent()
}

/// Posts `request` with ureq and reads the whole body; returns the status and session id.
fn ureq_send(agent: &ureq::Agent, request: &Captured) -> Result<(u16, Option<String>), String> {
    let mut response = agent
        .run(request.to_request(&request.body[..]))
        .map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    let session = header(response.headers(), SESSION_HEADER);
    response
        .body_mut()
        .read_to_vec()
        .map_err(|e| e.to_string())?;
    Ok((status, session))
}

fn header(headers: &http::HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// The handshake with bare requests; returns the `tools/call` carrying the session.
fn ureq_handshake(agent: &ureq::Agent, legs: &CallLegs) -> Result<Captured, String> {
    let (status, session) = ureq_send(agent, &legs.initialize)?;
    let session = session.ok_or("no session id")?;
    let (accepted, _) = ureq_send(agent, &legs.initialized.session(&session))?;
    if status != 200 || accepted != 202 {
        return Err(format!("handshake answered {status} then {accepted}"));
    }
    Ok(legs.call.session(&session))
}

/// What a new floor client does before its first call: the handshake in the legacy era
/// (returns the call carrying the session), nothing in the modern era (the call as captured).
fn ureq_open<'a>(agent: &ureq::Agent, legs: &'a FloorLegs) -> Result<Cow<'a, Captured>, String> {
    match legs {
        FloorLegs::Legacy(legs) => ureq_handshake(agent, legs).map(Cow::Owned),
        FloorLegs::Modern(call) => Ok(Cow::Borrowed(call)),
    }
}

fn ureq_call(agent: &ureq::Agent, call: &Captured) -> Result<(), String> {
    match ureq_send(agent, call)? {
        (200, _) => Ok(()),
        (status, _) => Err(format!("the call answered {status}")),
    }
}

/// Sequential calls on one blocking client, opened (one call made and checked) before the
/// clock; `config` says where to.
fn sequential_blocking(config: SessionConfig, cfg: RunCfg) -> Result<Sample, String> {
    let stdio = config.is_stdio();
    let client = mcp_driver_blocking::Client::new(config);
    let first = client
        .call_tool(TOOL, arguments())
        .map_err(|e| e.to_string())?;
    check_text(&first.text())?;
    let sample = measure_sync(cfg, || {
        client
            .call_tool(TOOL, arguments())
            .map(drop)
            .map_err(|e| e.to_string())
    });
    if stdio {
        // Ends the kept process (stdin closed, its exit awaited) rather than killing it.
        client.close().map_err(|e| format!("close: {e}"))?;
    }
    sample
}

fn sequential_sync(client: ClientKind, url: &str, era: Era, cfg: RunCfg) -> Result<Sample, String> {
    match client {
        ClientKind::Blocking => sequential_blocking(config(url, era)?, cfg),
        _ => {
            let agent = ureq_agent();
            let legs = FloorLegs::capture(url, era);
            let call = ureq_open(&agent, &legs)?;
            measure_sync(cfg, || ureq_call(&agent, &call))
        }
    }
}

/// Cold operations of the blocking driver, each a new client for `config` that makes one
/// call; `closed`: each client is closed after its call.
fn cold_blocking(config: &SessionConfig, cfg: RunCfg, closed: bool) -> Result<Sample, String> {
    measure_sync(cfg, || {
        let client = mcp_driver_blocking::Client::new(config.clone());
        client
            .call_tool(TOOL, arguments())
            .map_err(|e| e.to_string())?;
        if closed {
            client.close().map_err(|e| format!("close: {e}"))?;
        }
        Ok(())
    })
}

/// Cold operations on the calling thread; `closed`: each session is ended after its call.
fn cold_sync(
    client: ClientKind,
    url: &str,
    era: Era,
    cfg: RunCfg,
    closed: bool,
) -> Result<Sample, String> {
    match client {
        ClientKind::Blocking => cold_blocking(&config(url, era)?, cfg, closed),
        _ => {
            let legs = FloorLegs::capture(url, era);
            measure_sync(cfg, || {
                let agent = ureq_agent();
                let call = ureq_open(&agent, &legs)?;
                ureq_call(&agent, &call)
            })
        }
    }
}

// ---------------------------------------------------------------- stdio, blocking side

/// A bare stdio server process: the blocking drivers' floor. Lines are written to its stdin
/// as they are (one `write` each, as the drivers write them), one line is read back per
/// request, checked to carry a `result` and not parsed; its stderr goes nowhere.
struct Pipe {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    stdout: BufReader<std::process::ChildStdout>,
    line: Vec<u8>,
    /// Whether each read waits in `poll(2)` first ([`ClientKind::PolledPipe`]).
    polled: bool,
}

/// How a pipe floor starts the stdio server at `path`: stdin and stdout piped, stderr to
/// nowhere (as rmcp's is here: the server logs a line at its start and one at its end).
fn server_command(path: &Path) -> std::process::Command {
    let mut command = std::process::Command::new(path);
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    command
}

/// The error of a server that would not start.
fn not_started(path: &Path, err: &std::io::Error) -> String {
    format!("cannot start {}: {err}", path.display())
}

/// What a pipe floor makes of the server's exit once its stdin closed: it must exit 0.
fn exited(status: std::io::Result<std::process::ExitStatus>) -> Result<(), String> {
    match status {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(format!("the server exited with {status}")),
        Err(err) => Err(err.to_string()),
    }
}

impl Pipe {
    /// Starts the server at `path` and makes the handshake (`initialize` answered,
    /// `notifications/initialized` written).
    fn open(path: &Path, legs: &CallLegs) -> Result<Self, String> {
        let mut child = server_command(path)
            .spawn()
            .map_err(|e| not_started(path, &e))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut pipe = Self {
            child,
            stdin,
            stdout: BufReader::new(stdout),
            line: Vec::with_capacity(1024),
            polled: false,
        };
        pipe.exchange(&legs.initialize.body)?;
        pipe.write(&legs.initialized.body)?;
        Ok(pipe)
    }

    fn write(&mut self, line: &[u8]) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("stdin is closed")?;
        stdin.write_all(line).map_err(|e| format!("write: {e}"))
    }

    /// Writes a request's line and reads its answer's.
    fn exchange(&mut self, line: &[u8]) -> Result<(), String> {
        self.write(line)?;
        self.line.clear();
        if self.polled && self.stdout.buffer().is_empty() {
            wait_readable(self.stdout.get_ref())?;
        }
        self.stdout
            .read_until(b'\n', &mut self.line)
            .map_err(|e| format!("read: {e}"))?;
        answered(&self.line)
    }

    /// Closes its stdin and waits for it to exit, as a driver's close does.
    fn close(mut self) -> Result<(), String> {
        drop(self.stdin.take());
        exited(self.child.wait())
    }
}

impl Drop for Pipe {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Waits until `stdout` is readable, as a client bounding its wait does: one `poll(2)` with a
/// timeout (20 s, a budget's; never reached here).
fn wait_readable(stdout: &std::process::ChildStdout) -> Result<(), String> {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd;
    let mut fds = [PollFd::new(stdout.as_fd(), PollFlags::POLLIN)];
    poll(&mut fds, PollTimeout::from(20_000u16)).map_err(|e| format!("poll: {e}"))?;
    Ok(())
}

/// Whether a line a floor read is an answer with a result (a cheap look, no parsing).
fn answered(line: &[u8]) -> Result<(), String> {
    let key = b"\"result\":";
    if line.ends_with(b"\n") && line.windows(key.len()).any(|w| w == key) {
        Ok(())
    } else {
        Err(format!(
            "the stdio server answered {:?}",
            String::from_utf8_lossy(&line[..line.len().min(200)])
        ))
    }
}

fn stdio_sequential_sync(client: ClientKind, path: &Path, cfg: RunCfg) -> Result<Sample, String> {
    match client {
        ClientKind::Blocking => sequential_blocking(stdio_config(path), cfg),
        _ => {
            let legs = capture_stdio_call(stdio_command(path));
            let mut pipe = Pipe::open(path, &legs)?;
            pipe.polled = client == ClientKind::PolledPipe;
            pipe.exchange(&legs.call.body)?;
            let sample = measure_sync(cfg, || pipe.exchange(&legs.call.body))?;
            pipe.close()?;
            Ok(sample)
        }
    }
}

/// Cold stdio operations on the calling thread: the server started, the handshake and one
/// call, the server closed (stdin closed, its exit awaited).
fn stdio_cold_sync(client: ClientKind, path: &Path, cfg: RunCfg) -> Result<Sample, String> {
    match client {
        ClientKind::Blocking => cold_blocking(&stdio_config(path), cfg, true),
        _ => {
            let legs = capture_stdio_call(stdio_command(path));
            measure_sync(cfg, || {
                let mut pipe = Pipe::open(path, &legs)?;
                pipe.exchange(&legs.call.body)?;
                pipe.close()
            })
        }
    }
}

// ---------------------------------------------------------------- async side

type Hyper = HyperClient<HttpConnector, Full<Bytes>>;
type RmcpClient = RunningService<RoleClient, ()>;

fn hyper_client() -> Hyper {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    HyperClient::builder(TokioExecutor::new())
        .pool_timer(TokioTimer::new())
        .build(connector)
}

/// Posts `request` with hyper and collects the whole body; returns the status and session id.
async fn hyper_send(client: &Hyper, request: &Captured) -> Result<(u16, Option<String>), String> {
    let response = client
        .request(request.to_request(Full::new(request.body.clone())))
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    let session = header(response.headers(), SESSION_HEADER);
    response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?;
    Ok((status, session))
}

async fn hyper_handshake(client: &Hyper, legs: &CallLegs) -> Result<Captured, String> {
    let (status, session) = hyper_send(client, &legs.initialize).await?;
    let session = session.ok_or("no session id")?;
    let (accepted, _) = hyper_send(client, &legs.initialized.session(&session)).await?;
    if status != 200 || accepted != 202 {
        return Err(format!("handshake answered {status} then {accepted}"));
    }
    Ok(legs.call.session(&session))
}

/// [`ureq_open`] for hyper-util.
async fn hyper_open<'a>(client: &Hyper, legs: &'a FloorLegs) -> Result<Cow<'a, Captured>, String> {
    match legs {
        FloorLegs::Legacy(legs) => hyper_handshake(client, legs).await.map(Cow::Owned),
        FloorLegs::Modern(call) => Ok(Cow::Borrowed(call)),
    }
}

async fn hyper_call(client: &Hyper, call: &Captured) -> Result<(), String> {
    match hyper_send(client, call).await? {
        (200, _) => Ok(()),
        (status, _) => Err(format!("the call answered {status}")),
    }
}

async fn rmcp_connect(url: &str, pooled: bool) -> Result<RmcpClient, String> {
    let served = if pooled {
        let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
        ().serve(StreamableHttpClientTransport::with_client(
            reqwest::Client::new(),
            config,
        ))
        .await
    } else {
        ().serve(StreamableHttpClientTransport::from_uri(url.to_owned()))
            .await
    };
    served.map_err(|e| format!("rmcp handshake: {e}"))
}

/// rmcp's stdio client: `TokioChildProcess` starting the server at `path` (its stderr going
/// nowhere, as the floors'), then the handshake.
async fn rmcp_stdio(path: &Path) -> Result<RmcpClient, String> {
    let (transport, _) = TokioChildProcess::builder(tokio::process::Command::new(path))
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("rmcp {}", not_started(path, &e)))?;
    ().serve(transport)
        .await
        .map_err(|e| format!("rmcp handshake: {e}"))
}

async fn rmcp_call(client: &RmcpClient) -> Result<String, String> {
    let params = CallToolRequestParams::new(TOOL).with_arguments(arguments());
    let result = client
        .call_tool(params)
        .await
        .map_err(|e| format!("rmcp call: {e}"))?;
    let text = result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .unwrap_or_default();
    Ok(text)
}

/// A tokio client for `config` whose session is open (one call made and checked).
async fn tokio_open(config: SessionConfig) -> Result<mcp_driver_tokio::Client, String> {
    let client = mcp_driver_tokio::Client::new(config);
    let first = client
        .call_tool(TOOL, arguments())
        .await
        .map_err(|e| e.to_string())?;
    check_text(&first.text())?;
    Ok(client)
}

async fn tokio_call(client: &mcp_driver_tokio::Client) -> Result<(), String> {
    client
        .call_tool(TOOL, arguments())
        .await
        .map(drop)
        .map_err(|e| e.to_string())
}

/// An async client with a live session, or another task's handle on one ([`Live::share`]).
#[expect(
    clippy::large_enum_variant,
    reason = "one per task, built once and never moved in the measured loop"
)]
enum Live {
    Tokio(mcp_driver_tokio::Client),
    /// rmcp's service: its calls take `&self`, so the tasks sharing it hold an `Arc` each.
    Rmcp(Arc<RmcpClient>),
    Hyper(Hyper, Captured),
}

impl Live {
    /// A client of `kind` for the HTTP server at `url`, speaking `era`, whose session is open
    /// (one call made and checked; in the modern era there is no session: the call is made).
    async fn open(kind: ClientKind, url: &str, era: Era) -> Result<Self, String> {
        match kind {
            ClientKind::Tokio => Ok(Self::Tokio(tokio_open(config(url, era)?).await?)),
            ClientKind::Rmcp | ClientKind::RmcpPooled => {
                let client = rmcp_connect(url, kind == ClientKind::RmcpPooled).await?;
                check_text(&rmcp_call(&client).await?)?;
                Ok(Self::Rmcp(Arc::new(client)))
            }
            ClientKind::HyperFloor => {
                let client = hyper_client();
                let legs = FloorLegs::capture(url, era);
                let call = hyper_open(&client, &legs).await?.into_owned();
                hyper_call(&client, &call).await?;
                Ok(Self::Hyper(client, call))
            }
            other => Err(format!("{} is not an async HTTP client", other.label())),
        }
    }

    /// Another handle on this client and its session, for another task: no new client, no
    /// new handshake (a clone of the tokio `Client`, of rmcp's `Arc`, of the hyper-util
    /// client and its session's request). Close every handle ([`Live::close`]).
    fn share(&self) -> Self {
        match self {
            Self::Tokio(client) => Self::Tokio(client.clone()),
            Self::Rmcp(client) => Self::Rmcp(Arc::clone(client)),
            Self::Hyper(client, call) => Self::Hyper(client.clone(), call.clone()),
        }
    }

    async fn call(&self) -> Result<(), String> {
        match self {
            Self::Tokio(client) => tokio_call(client).await,
            Self::Rmcp(client) => rmcp_call(client).await.map(drop),
            Self::Hyper(client, call) => hyper_call(client, call).await,
        }
    }

    /// Lets the handle go; the last handle on an rmcp service ends it (`cancel().await`, which
    /// sends the session `DELETE`), so close the shared handles before their origin.
    async fn close(self) {
        if let Self::Rmcp(client) = self
            && let Some(client) = Arc::into_inner(client)
        {
            let _ = client.cancel().await;
        }
    }
}

async fn sequential_async(
    client: ClientKind,
    url: &str,
    era: Era,
    cfg: RunCfg,
) -> Result<Sample, String> {
    let live = Live::open(client, url, era).await?;
    let sample = measure_async(cfg, async || live.call().await).await;
    live.close().await;
    sample
}

/// Cold async operations; `closed`: each session is ended after its call (rmcp's always is:
/// `cancel` is how its worker ends).
async fn cold_async(
    client: ClientKind,
    url: &str,
    era: Era,
    cfg: RunCfg,
    closed: bool,
) -> Result<Sample, String> {
    let config = config(url, era)?;
    let legs = FloorLegs::capture(url, era);
    measure_async(cfg, async || match client {
        ClientKind::Tokio => {
            let client = mcp_driver_tokio::Client::new(config.clone());
            client
                .call_tool(TOOL, arguments())
                .await
                .map_err(|e| e.to_string())?;
            if closed {
                client.close().await.map_err(|e| format!("close: {e}"))?;
            }
            Ok(())
        }
        ClientKind::Rmcp | ClientKind::RmcpPooled => {
            let client = rmcp_connect(url, client == ClientKind::RmcpPooled).await?;
            let called = rmcp_call(&client).await.map(drop);
            let _ = client.cancel().await;
            called
        }
        _ => {
            let client = hyper_client();
            let call = hyper_open(&client, &legs).await?;
            hyper_call(&client, &call).await
        }
    })
    .await
}

// ---------------------------------------------------------------- stdio, async side

/// [`Pipe`] on `tokio::process`: the tokio driver's (and rmcp's) floor over stdio.
struct TokioPipe {
    child: tokio::process::Child,
    stdin: Option<tokio::process::ChildStdin>,
    stdout: tokio::io::BufReader<tokio::process::ChildStdout>,
    line: Vec<u8>,
}

impl TokioPipe {
    /// Starts the server at `path` and makes the handshake.
    async fn open(path: &Path, legs: &CallLegs) -> Result<Self, String> {
        let mut child = tokio::process::Command::from(server_command(path))
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| not_started(path, &e))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut pipe = Self {
            child,
            stdin,
            stdout: tokio::io::BufReader::new(stdout),
            line: Vec::with_capacity(1024),
        };
        pipe.exchange(&legs.initialize.body).await?;
        pipe.write(&legs.initialized.body).await?;
        Ok(pipe)
    }

    async fn write(&mut self, line: &[u8]) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("stdin is closed")?;
        stdin
            .write_all(line)
            .await
            .map_err(|e| format!("write: {e}"))
    }

    async fn exchange(&mut self, line: &[u8]) -> Result<(), String> {
        self.write(line).await?;
        self.line.clear();
        self.stdout
            .read_until(b'\n', &mut self.line)
            .await
            .map_err(|e| format!("read: {e}"))?;
        answered(&self.line)
    }

    async fn close(mut self) -> Result<(), String> {
        drop(self.stdin.take());
        exited(self.child.wait().await)
    }
}

/// The stdio cases of the async clients (tokio driver, its pipe floor, rmcp) on the current
/// runtime: sequential calls on one kept process, opened before the clock and closed after
/// it; or cold operations, each starting the server, making the handshake and one call, and
/// closing it (stdin closed, its exit awaited; rmcp's `cancel`, which does the same).
async fn stdio_async(
    group: Group,
    client: ClientKind,
    path: &Path,
    cfg: RunCfg,
) -> Result<Sample, String> {
    let legs = capture_stdio_call(stdio_command(path));
    let cold = group == Group::Cold;
    match client {
        ClientKind::Tokio if cold => {
            let config = stdio_config(path);
            measure_async(cfg, async || {
                let client = mcp_driver_tokio::Client::new(config.clone());
                tokio_call(&client).await?;
                client.close().await.map_err(|e| format!("close: {e}"))
            })
            .await
        }
        ClientKind::Tokio => {
            let client = tokio_open(stdio_config(path)).await?;
            let sample = measure_async(cfg, async || tokio_call(&client).await).await?;
            client.close().await.map_err(|e| format!("close: {e}"))?;
            Ok(sample)
        }
        ClientKind::Rmcp if cold => {
            measure_async(cfg, async || {
                let client = rmcp_stdio(path).await?;
                let called = rmcp_call(&client).await.map(drop);
                let _ = client.cancel().await;
                called
            })
            .await
        }
        ClientKind::Rmcp => {
            let client = rmcp_stdio(path).await?;
            check_text(&rmcp_call(&client).await?)?;
            let sample = measure_async(cfg, async || rmcp_call(&client).await.map(drop)).await;
            let _ = client.cancel().await;
            sample
        }
        _ if cold => {
            measure_async(cfg, async || {
                let mut pipe = TokioPipe::open(path, &legs).await?;
                pipe.exchange(&legs.call.body).await?;
                pipe.close().await
            })
            .await
        }
        _ => {
            let mut pipe = TokioPipe::open(path, &legs).await?;
            pipe.exchange(&legs.call.body).await?;
            let sample = measure_async(cfg, async || pipe.exchange(&legs.call.body).await).await?;
            pipe.close().await?;
            Ok(sample)
        }
    }
}

/// What one task of an in-flight case measured: it warms up until `warm_end`, then times
/// every call it starts before `end`.
struct TaskRun {
    warm_end: Instant,
    end: Instant,
    latencies: Vec<Duration>,
    warm_ops: u64,
    last_done: Instant,
}

impl TaskRun {
    /// A task whose warm-up starts now.
    fn starting_now(cfg: RunCfg) -> Self {
        let warm_end = Instant::now() + cfg.warmup;
        Self {
            warm_end,
            end: warm_end + cfg.duration,
            latencies: Vec::with_capacity(4096),
            warm_ops: 0,
            last_done: warm_end,
        }
    }

    /// When the next call starts, or `None` once the window is over: no call starts after it.
    fn next_start(&self) -> Option<Instant> {
        Some(Instant::now()).filter(|t| *t < self.end)
    }

    /// Counts the call that started at `t` and ended at `done`.
    fn record(&mut self, t: Instant, done: Instant) {
        if t >= self.warm_end {
            self.latencies.push(done - t);
            self.last_done = done;
        } else {
            self.warm_ops += 1;
        }
    }

    /// The tasks' runs as one sample, or the first failure: its wall time runs from the first
    /// task's end of warm-up to the last task's last call.
    fn merged(runs: impl IntoIterator<Item = Result<Self, String>>) -> Result<Sample, String> {
        let mut latencies = Vec::new();
        let mut warm_ops = 0;
        let mut window: Option<(Instant, Instant)> = None;
        let mut failure = None;
        for run in runs {
            match run {
                Ok(run) => {
                    latencies.extend(run.latencies);
                    warm_ops += run.warm_ops;
                    let (first, last) = window.get_or_insert((run.warm_end, run.last_done));
                    *first = (*first).min(run.warm_end);
                    *last = (*last).max(run.last_done);
                }
                Err(err) => failure = Some(err),
            }
        }
        if let Some(err) = failure {
            return Err(err);
        }
        let (first, last) = window.ok_or("no task ran")?;
        Ok(Sample::new(latencies, last - first, warm_ops))
    }
}

/// `n` threads sharing one blocking client and its session, opened (one call made and
/// checked) before they start ([`Group::Shared`] for the blocking driver).
fn shared_sync(url: &str, era: Era, n: usize, cfg: RunCfg) -> Result<Sample, String> {
    let client = mcp_driver_blocking::Client::new(config(url, era)?);
    let first = client
        .call_tool(TOOL, arguments())
        .map_err(|e| e.to_string())?;
    check_text(&first.text())?;
    let barrier = std::sync::Barrier::new(n);
    let runs: Vec<Result<TaskRun, String>> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..n)
            .map(|_| {
                let client = client.clone();
                let barrier = &barrier;
                scope.spawn(move || {
                    barrier.wait();
                    let mut run = TaskRun::starting_now(cfg);
                    while let Some(t) = run.next_start() {
                        client
                            .call_tool(TOOL, arguments())
                            .map_err(|e| e.to_string())?;
                        run.record(t, Instant::now());
                    }
                    Ok(run)
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|thread| {
                thread
                    .join()
                    .unwrap_or_else(|_| Err("a thread panicked".to_owned()))
            })
            .collect()
    });
    TaskRun::merged(runs)
}

/// `n` tasks, each with its own client and session ([`Group::InFlight`]).
async fn in_flight(
    kind: ClientKind,
    url: &str,
    era: Era,
    n: usize,
    cfg: RunCfg,
) -> Result<Sample, String> {
    run_tasks(n, cfg, || {
        let url = url.to_owned();
        async move { Live::open(kind, &url, era).await }
    })
    .await
}

/// `n` tasks sharing one client and session, opened before they start ([`Group::Shared`]).
async fn shared(
    kind: ClientKind,
    url: &str,
    era: Era,
    n: usize,
    cfg: RunCfg,
) -> Result<Sample, String> {
    let live = Live::open(kind, url, era).await?;
    let sample = run_tasks(n, cfg, || std::future::ready(Ok(live.share()))).await;
    live.close().await;
    sample
}

/// Runs `n` tasks on the current runtime, each calling in a loop on the client its `open`
/// future gives it: every task waits for the others to have their client, then warms up for
/// `cfg.warmup` and measures for `cfg.duration`. The sample's wall time runs from the first
/// task's end of warm-up to the last task's last call.
async fn run_tasks<F>(n: usize, cfg: RunCfg, mut open: impl FnMut() -> F) -> Result<Sample, String>
where
    F: Future<Output = Result<Live, String>> + Send + 'static,
{
    let barrier = Arc::new(tokio::sync::Barrier::new(n + 1));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..n {
        let barrier = Arc::clone(&barrier);
        let opening = open();
        tasks.spawn(async move {
            let opened = opening.await;
            // Every task reaches the barrier, even a failed one, or the others wait forever.
            barrier.wait().await;
            let live = opened?;
            let mut run = TaskRun::starting_now(cfg);
            while let Some(t) = run.next_start() {
                if let Err(err) = live.call().await {
                    live.close().await;
                    return Err(err);
                }
                run.record(t, Instant::now());
            }
            live.close().await;
            Ok::<_, String>(run)
        });
    }
    barrier.wait().await;
    let mut runs = Vec::with_capacity(n);
    while let Some(joined) = tasks.join_next().await {
        runs.push(joined.map_err(|e| e.to_string()).and_then(|r| r));
    }
    TaskRun::merged(runs)
}
