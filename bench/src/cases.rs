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
//!   requests of every case ([`Measurement::initialize`]), which shows that the tasks shared
//!   one handshake. The blocking driver shares its client the same way, between `n` threads.
//!
//! Each operation is timed on its own (p50, p99); calls/s is operations over the wall time of
//! the measured window, after a warm-up. The clients ([`ClientKind`]):
//!
//! * `mcp-driver-blocking` and its floor, a bare `ureq` agent posting the same bytes and
//!   reading the whole body (no JSON parsing), on the calling thread;
//! * `mcp-driver-tokio` and its floor, a bare `hyper-util` legacy client (plain
//!   `HttpConnector`, Nagle off) posting the same bytes and collecting the body;
//! * `rmcp` with its default transport (`StreamableHttpClientTransport::from_uri`, whose
//!   reqwest client keeps **no idle connection**: every request opens one), and `rmcp` over a
//!   pooled `reqwest::Client` (`with_client`), to separate the SDK from its pool setting.
//!
//! Sequential and cold async cases run on a current-thread tokio runtime.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use mcp_proto::SessionConfig;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use crate::server::ServerProcess;
use crate::stats::{CpuSnapshot, CpuUse, Sample, Stats};
use crate::wire::{CallLegs, Captured, SESSION_HEADER, TEXT, TOOL, arguments, capture_call};

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
    /// rmcp with `StreamableHttpClientTransport::from_uri` (its default reqwest client).
    Rmcp,
    /// rmcp over a pooled `reqwest::Client::new()`.
    RmcpPooled,
    /// A bare ureq agent: the floor of the blocking driver.
    UreqFloor,
    /// A bare hyper-util legacy client: the floor of the tokio driver.
    HyperFloor,
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
        }
    }

    /// The bare-HTTP floor this client is compared to.
    pub fn floor(self) -> Self {
        match self {
            Self::Blocking | Self::UreqFloor => Self::UreqFloor,
            _ => Self::HyperFloor,
        }
    }

    /// Whether the client is itself a floor.
    pub fn is_floor(self) -> bool {
        matches!(self, Self::UreqFloor | Self::HyperFloor)
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

/// One measured case (possibly several windows of it, merged).
#[derive(Debug, Clone)]
pub struct Measurement {
    /// What was measured.
    pub group: Group,
    /// The answer format.
    pub mode: Mode,
    /// Who measured it.
    pub client: ClientKind,
    /// Throughput and latency (of `sample`).
    pub stats: Stats,
    /// The raw latencies.
    pub sample: Sample,
    /// CPU spent meanwhile.
    pub cpu: CpuUse,
    /// TCP connections the server accepted during the case (warm-up and set-up included).
    pub connections: Option<u64>,
    /// `initialize` requests (handshakes) the server received during the case (warm-up and
    /// set-up included).
    pub initialize: Option<u64>,
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
        self.initialize = self.initialize.zip(other.initialize).map(|(a, b)| a + b);
        self.windows += other.windows;
    }

    /// `initialize` requests per measured window: the handshakes one run of the case made
    /// (1 when every task shared one session).
    pub fn initialize_per_window(&self) -> Option<f64> {
        (self.windows > 0).then_some(())?;
        Some(self.initialize? as f64 / f64::from(self.windows))
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

/// Runs one case and reads the CPU counters around it.
pub fn run_case(
    group: Group,
    mode: Mode,
    client: ClientKind,
    server: &mut ServerProcess,
    cfg: RunCfg,
) -> Result<Measurement, String> {
    let url = server.url(mode.role()).to_owned();
    let url = url.as_str();
    let server_pid = Some(server.pid());
    // Read between cases, when no client runs: the server's counts are exact then.
    let counters_before = server.counters(mode.role());
    let before = CpuSnapshot::take(server_pid);
    let sample = sample(group, client, url, cfg)?;
    let cpu = before.until(&CpuSnapshot::take(server_pid));
    let counted = server.counters(mode.role()).zip(counters_before);
    let connections =
        counted.map(|(after, before)| after.connections.saturating_sub(before.connections));
    let initialize =
        counted.map(|(after, before)| after.initialize.saturating_sub(before.initialize));
    Ok(Measurement {
        group,
        mode,
        client,
        stats: sample.stats(),
        sample,
        cpu,
        connections,
        initialize,
        windows: 1,
    })
}

/// Runs one case of `client` against the server at `url` and times each operation: the
/// measurement alone, with no counter read around it (what [`run_case`] and a client child
/// process of the cross-SDK table share).
///
/// # Errors
/// The first failed operation, or a case this client cannot run (the floors end no session,
/// so they run no [`Group::ColdClosed`]).
pub fn sample(group: Group, client: ClientKind, url: &str, cfg: RunCfg) -> Result<Sample, String> {
    let closed = group == Group::ColdClosed;
    match (group, client) {
        (Group::ColdClosed, ClientKind::UreqFloor | ClientKind::HyperFloor) => Err(format!(
            "{} ends no session: it runs no cold-closed case",
            client.label()
        )),
        (Group::Sequential, ClientKind::Blocking | ClientKind::UreqFloor) => {
            sequential_sync(client, url, cfg)
        }
        (Group::Sequential, _) => current_thread()?.block_on(sequential_async(client, url, cfg)),
        (Group::Cold | Group::ColdClosed, ClientKind::Blocking | ClientKind::UreqFloor) => {
            cold_sync(client, url, cfg, closed)
        }
        (Group::Cold | Group::ColdClosed, _) => {
            current_thread()?.block_on(cold_async(client, url, cfg, closed))
        }
        (Group::Shared(n), ClientKind::Blocking) => shared_sync(url, n, cfg),
        (Group::InFlight(n), _) => two_workers()?.block_on(in_flight(client, url, n, cfg)),
        (Group::Shared(n), _) => two_workers()?.block_on(shared(client, url, n, cfg)),
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
fn measure_sync(cfg: RunCfg, mut op: impl FnMut() -> Result<(), String>) -> Result<Sample, String> {
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
async fn measure_async(
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

fn config(url: &str) -> Result<SessionConfig, String> {
    // The legacy era, pinned: rmcp's client and the bench server speak it.
    SessionConfig::new(url)
        .map(|c| c.with_protocol_version(mcp_proto::ProtocolVersion::LATEST))
        .map_err(|e| e.to_string())
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

fn ureq_call(agent: &ureq::Agent, call: &Captured) -> Result<(), String> {
    match ureq_send(agent, call)? {
        (200, _) => Ok(()),
        (status, _) => Err(format!("the call answered {status}")),
    }
}

fn sequential_sync(client: ClientKind, url: &str, cfg: RunCfg) -> Result<Sample, String> {
    match client {
        ClientKind::Blocking => {
            let client = mcp_driver_blocking::Client::new(config(url)?);
            let first = client
                .call_tool(TOOL, arguments())
                .map_err(|e| e.to_string())?;
            check_text(&first.text())?;
            measure_sync(cfg, || {
                client
                    .call_tool(TOOL, arguments())
                    .map(drop)
                    .map_err(|e| e.to_string())
            })
        }
        _ => {
            let agent = ureq_agent();
            let call = ureq_handshake(&agent, &capture_call(url))?;
            measure_sync(cfg, || ureq_call(&agent, &call))
        }
    }
}

/// Cold operations on the calling thread; `closed`: each session is ended after its call.
fn cold_sync(client: ClientKind, url: &str, cfg: RunCfg, closed: bool) -> Result<Sample, String> {
    match client {
        ClientKind::Blocking => {
            let config = config(url)?;
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
        _ => {
            let legs = capture_call(url);
            measure_sync(cfg, || {
                let agent = ureq_agent();
                let call = ureq_handshake(&agent, &legs)?;
                ureq_call(&agent, &call)
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
    /// A client of `kind` for `url` whose session is open (one call made and checked).
    async fn open(kind: ClientKind, url: &str) -> Result<Self, String> {
        match kind {
            ClientKind::Tokio => {
                let client = mcp_driver_tokio::Client::new(config(url)?);
                let first = client
                    .call_tool(TOOL, arguments())
                    .await
                    .map_err(|e| e.to_string())?;
                check_text(&first.text())?;
                Ok(Self::Tokio(client))
            }
            ClientKind::Rmcp | ClientKind::RmcpPooled => {
                let client = rmcp_connect(url, kind == ClientKind::RmcpPooled).await?;
                check_text(&rmcp_call(&client).await?)?;
                Ok(Self::Rmcp(Arc::new(client)))
            }
            ClientKind::HyperFloor => {
                let client = hyper_client();
                let call = hyper_handshake(&client, &capture_call(url)).await?;
                hyper_call(&client, &call).await?;
                Ok(Self::Hyper(client, call))
            }
            other => Err(format!("{} is not an async client", other.label())),
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
            Self::Tokio(client) => client
                .call_tool(TOOL, arguments())
                .await
                .map(drop)
                .map_err(|e| e.to_string()),
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

async fn sequential_async(client: ClientKind, url: &str, cfg: RunCfg) -> Result<Sample, String> {
    let live = Live::open(client, url).await?;
    let sample = measure_async(cfg, async || live.call().await).await;
    live.close().await;
    sample
}

/// Cold async operations; `closed`: each session is ended after its call (rmcp's always is:
/// `cancel` is how its worker ends).
async fn cold_async(
    client: ClientKind,
    url: &str,
    cfg: RunCfg,
    closed: bool,
) -> Result<Sample, String> {
    let config = config(url)?;
    let legs = capture_call(url);
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
            let call = hyper_handshake(&client, &legs).await?;
            hyper_call(&client, &call).await
        }
    })
    .await
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
fn shared_sync(url: &str, n: usize, cfg: RunCfg) -> Result<Sample, String> {
    let client = mcp_driver_blocking::Client::new(config(url)?);
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
async fn in_flight(kind: ClientKind, url: &str, n: usize, cfg: RunCfg) -> Result<Sample, String> {
    run_tasks(n, cfg, || {
        let url = url.to_owned();
        async move { Live::open(kind, &url).await }
    })
    .await
}

/// `n` tasks sharing one client and session, opened before they start ([`Group::Shared`]).
async fn shared(kind: ClientKind, url: &str, n: usize, cfg: RunCfg) -> Result<Sample, String> {
    let live = Live::open(kind, url).await?;
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
