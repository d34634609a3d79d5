//! The whole process against the official Rust SDK's own server: how close `mcp-call` comes to
//! the floor when the server is rmcp's (`mcp-bench serve-rmcp`: [`crate::rmcp_server`]), not
//! ours.
//!
//! For each era (2025-11-25, then 2026-07-28), `R` paired rounds (default 9,
//! `--whole-rounds`); in each round four processes run to completion, one at a time, each
//! making `N` sequential `tools/call`s of `echo` (default 8000, `--whole-calls`):
//!
//! * `mcp-call --driver blocking --url URL [--protocol 2025-11-25] --repeat N call echo
//!   '{"text":"hi"}'` (stdout to `/dev/null`; the 2026-07-28 era is `mcp-call`'s default,
//!   `--protocol auto`, whose first request is already the stateless call);
//! * the same with `--driver tokio`;
//! * the floor, `mcp-bench floor-child URL ERA N` ([`floor_child_main`]): one ureq agent, one
//!   keep-alive connection, posting the bytes `mcp-call`'s blocking driver posts;
//! * the same bytes with `--proto`: ureq's HTTP/1.1 core alone (`ureq-proto`, which the
//!   blocking driver runs itself) on one TCP connection, without ureq's call loop, pool and
//!   timers. It is a row beside the others, not the floor: the ratios stay against ureq's.
//!
//! The order of the four alternates between rounds (forward, then backward), so that neither
//! a slow start nor a slow end of a round lands on one process. Each process is timed from
//! spawn to exit (process start, the handshake in the legacy era, the `N` calls, the session's
//! `DELETE` in the legacy era, the exit). Its user and system CPU time are
//! `getrusage(RUSAGE_CHILDREN)` read before the spawn and after the reaping (one child at a
//! time: the difference is that child's), the server's CPU time `/proc/<pid>/stat` read around
//! it (10 ms ticks: ±1.25 µs a call at 8000 calls).
//!
//! Before the rounds, each process runs once with [`WARMUP_CALLS`] calls, untimed: the
//! binaries are in the page cache and every process is known to work before the clock. A
//! process that exits non-zero, or an `mcp-call` whose `--repeat` summary counts an error,
//! fails the whole run, naming it.

use std::fs::File;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mcp_proto::{ProtocolVersion, SessionConfig};

use crate::cases::Era;
use crate::overrun::Summary;
use crate::stats::process_cpu;
use crate::wire::{Captured, SESSION_HEADER, TEXT, capture_call_with, capture_modern_call_with};

/// Calls per process unless `--whole-calls` says otherwise.
pub const DEFAULT_CALLS: u32 = 8000;
/// Paired rounds unless `--whole-rounds` says otherwise: nine, as a round's ratio to the floor
/// moves by up to a tenth between rounds on a shared 2-core VM, and the median of nine moves
/// less than that of five (a round, four processes of 8000 calls, takes about five seconds).
pub const DEFAULT_ROUNDS: u32 = 9;
/// Calls of each process's untimed warm-up run.
pub const WARMUP_CALLS: u32 = 100;

/// The eras, in the order they run and are reported.
pub const ERAS: [Era; 2] = [Era::Legacy, Era::Modern];

/// The protocol version an era's rows speak.
pub fn version(era: Era) -> &'static str {
    match era {
        Era::Legacy => "2025-11-25",
        Era::Modern => "2026-07-28",
    }
}

/// One process of a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runner {
    /// `mcp-call --driver blocking`.
    Blocking,
    /// `mcp-call --driver tokio`.
    Tokio,
    /// `mcp-bench floor-child`.
    Floor,
    /// `mcp-bench floor-child ... proto`: ureq-proto alone on one TCP connection.
    FloorProto,
}

impl Runner {
    /// The four, in the order they are reported (and run in the forward rounds).
    pub const ALL: [Self; 4] = [Self::Blocking, Self::Tokio, Self::Floor, Self::FloorProto];

    /// The name in the tables.
    pub fn label(self) -> &'static str {
        match self {
            Self::Blocking => "mcp-call --driver blocking",
            Self::Tokio => "mcp-call --driver tokio",
            Self::Floor => "floor: bare ureq (mcp-bench floor-child)",
            Self::FloorProto => "bare ureq-proto (mcp-bench floor-child --proto)",
        }
    }
}

/// The name `--only` matches: `whole 2025-11-25 mcp-call --driver tokio`.
pub fn row_name(era: Era, runner: Runner) -> String {
    format!("whole {} {}", version(era), runner.label())
}

/// Every row, in the order they are reported.
pub fn rows() -> Vec<(Era, Runner)> {
    ERAS.into_iter()
        .flat_map(|era| Runner::ALL.map(|runner| (era, runner)))
        .collect()
}

/// The rows `selected` keeps, plus the floor of every era with a row kept (the "× floor"
/// column needs it), in report order.
pub fn with_floors(selected: &[(Era, Runner)]) -> Vec<(Era, Runner)> {
    rows()
        .into_iter()
        .filter(|(era, runner)| {
            selected.contains(&(*era, *runner))
                || (*runner == Runner::Floor && selected.iter().any(|(e, _)| e == era))
        })
        .collect()
}

/// What the rows run against and with, found before anything is measured.
#[derive(Debug, Clone)]
pub struct Setup {
    /// `mcp-bench serve-rmcp`'s endpoint.
    pub url: String,
    /// Its process id (for its CPU time).
    pub server_pid: u32,
    /// `mcp-call`, next to `mcp-bench`.
    pub mcp_call: PathBuf,
    /// `mcp-bench` itself (the floor's binary).
    pub exe: PathBuf,
    /// Calls per process.
    pub calls: u32,
}

/// One process, run to completion.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProcessRun {
    /// From spawn to exit.
    pub wall: Duration,
    /// The process's user CPU time.
    pub user: Duration,
    /// The process's system CPU time.
    pub system: Duration,
    /// The server's CPU time meanwhile (`None` when `/proc` could not be read).
    pub server: Option<Duration>,
    /// The process's voluntary context switches (each a wait: mostly for the server's answer).
    pub voluntary_switches: i64,
}

/// The runs of one row, one per round, in round order.
#[derive(Debug, Clone, PartialEq)]
pub struct WholeRow {
    /// The era.
    pub era: Era,
    /// The process.
    pub runner: Runner,
    /// Calls per run.
    pub calls: u32,
    /// One per round.
    pub runs: Vec<ProcessRun>,
}

impl WholeRow {
    fn per_call(&self, d: Duration) -> f64 {
        d.as_secs_f64() * 1e6 / f64::from(self.calls)
    }

    /// Calls/s of each round.
    pub fn rates(&self) -> Vec<f64> {
        self.runs
            .iter()
            .map(|r| f64::from(self.calls) / r.wall.as_secs_f64())
            .collect()
    }

    /// Median, min and max calls/s over the rounds.
    pub fn rate(&self) -> Option<Summary> {
        Summary::of(&self.rates())
    }

    /// The median over rounds of this row's calls/s divided by `floor`'s in the same round.
    pub fn times_floor(&self, floor: &Self) -> Option<f64> {
        let ratios: Vec<f64> = self
            .rates()
            .iter()
            .zip(floor.rates())
            .map(|(a, b)| a / b)
            .collect();
        Summary::of(&ratios).map(|s| s.median)
    }

    /// Median user CPU µs per call.
    pub fn user_us(&self) -> Option<f64> {
        self.median(|r| Some(self.per_call(r.user)))
    }

    /// Median system CPU µs per call.
    pub fn system_us(&self) -> Option<f64> {
        self.median(|r| Some(self.per_call(r.system)))
    }

    /// Median server CPU µs per call.
    pub fn server_us(&self) -> Option<f64> {
        self.median(|r| r.server.map(|d| self.per_call(d)))
    }

    /// Median voluntary context switches per call.
    pub fn switches_per_call(&self) -> Option<f64> {
        self.median(|r| Some(r.voluntary_switches as f64 / f64::from(self.calls)))
    }

    fn median(&self, value: impl Fn(&ProcessRun) -> Option<f64>) -> Option<f64> {
        let values: Option<Vec<f64>> = self.runs.iter().map(value).collect();
        Summary::of(&values?).map(|s| s.median)
    }
}

/// The command line of `runner` making `calls` calls against `setup`'s server in `era`.
pub fn command(runner: Runner, era: Era, setup: &Setup, calls: u32) -> Command {
    let calls = calls.to_string();
    match runner {
        Runner::Blocking | Runner::Tokio => {
            let driver = if runner == Runner::Blocking {
                "blocking"
            } else {
                "tokio"
            };
            let mut command = Command::new(&setup.mcp_call);
            command.args(["--driver", driver, "--url", &setup.url]);
            if era == Era::Legacy {
                command.args(["--protocol", version(era)]);
            }
            command.args(["--repeat", &calls, "call", "echo", r#"{"text":"hi"}"#]);
            command
        }
        Runner::Floor | Runner::FloorProto => {
            let mut command = Command::new(&setup.exe);
            command.arg("floor-child");
            if runner == Runner::FloorProto {
                command.arg("--proto");
            }
            command.args([&setup.url, era.name(), &calls]);
            command
        }
    }
}

/// CPU time of the reaped children of this process so far: (user, system, voluntary context
/// switches).
fn children_usage() -> Result<(Duration, Duration, i64), String> {
    use nix::sys::resource::{UsageWho, getrusage};
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).map_err(|e| format!("getrusage: {e}"))?;
    let time = |t: nix::sys::time::TimeVal| {
        Duration::from_secs(u64::try_from(t.tv_sec()).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t.tv_usec()).unwrap_or(0))
    };
    Ok((
        time(usage.user_time()),
        time(usage.system_time()),
        usage.voluntary_context_switches(),
    ))
}

/// Runs one process to completion; fails when it exits non-zero or, for `mcp-call`, its
/// `--repeat` summary counts an error.
fn run_one(runner: Runner, era: Era, setup: &Setup, calls: u32) -> Result<ProcessRun, String> {
    let stderr_path = std::env::temp_dir().join(format!(
        "mcp-bench-whole-{}-{}.stderr",
        std::process::id(),
        era.name()
    ));
    let stderr =
        File::create(&stderr_path).map_err(|e| format!("{}: {e}", stderr_path.display()))?;
    let mut command = command(runner, era, setup, calls);
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr);
    let server_pid = setup.server_pid.to_string();
    let (user_before, system_before, switches_before) = children_usage()?;
    let server_before = process_cpu(&server_pid);
    let started = Instant::now();
    let status = command
        .spawn()
        .and_then(|mut child| child.wait())
        .map_err(|e| format!("{}: {e}", runner.label()))?;
    let wall = started.elapsed();
    let server_after = process_cpu(&server_pid);
    let (user_after, system_after, switches_after) = children_usage()?;
    let mut said = String::new();
    let _ = File::open(&stderr_path).and_then(|mut f| f.read_to_string(&mut said));
    let _ = std::fs::remove_file(&stderr_path);
    let summary_errors = said
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("summary: "))
        .and_then(|l| {
            l.split_whitespace()
                .find_map(|w| w.strip_prefix("errors="))
                .map(str::to_owned)
        });
    let repeat_failed = matches!(runner, Runner::Blocking | Runner::Tokio)
        && summary_errors.as_deref() != Some("0");
    if !status.success() || repeat_failed {
        return Err(format!(
            "{} exited with {status}: {}",
            runner.label(),
            said.trim()
        ));
    }
    Ok(ProcessRun {
        wall,
        user: user_after.saturating_sub(user_before),
        system: system_after.saturating_sub(system_before),
        server: server_before
            .zip(server_after)
            .map(|(before, after)| after.saturating_sub(before)),
        voluntary_switches: switches_after - switches_before,
    })
}

/// Runs `rounds` paired rounds of `rows` (each era's rows together, the eras in turn), one
/// process at a time, after one untimed warm-up run of each; `progress` is called after each
/// round.
///
/// # Errors
/// The first process that exited non-zero, or an `mcp-call` whose summary counts an error.
pub fn measure(
    rows: &[(Era, Runner)],
    setup: &Setup,
    rounds: u32,
    mut progress: impl FnMut(Era, u32),
) -> Result<Vec<WholeRow>, String> {
    let mut out: Vec<WholeRow> = rows
        .iter()
        .map(|(era, runner)| WholeRow {
            era: *era,
            runner: *runner,
            calls: setup.calls,
            runs: Vec::new(),
        })
        .collect();
    for era in ERAS {
        let of_era: Vec<usize> = (0..out.len()).filter(|i| out[*i].era == era).collect();
        for i in &of_era {
            let row = &out[*i];
            run_one(row.runner, era, setup, WARMUP_CALLS)
                .map_err(|e| format!("{}, warm-up: {e}", row_name(era, row.runner)))?;
        }
        for round in 0..rounds {
            let mut order = of_era.clone();
            if round % 2 == 1 {
                order.reverse();
            }
            for i in order {
                let row = &mut out[i];
                let run = run_one(row.runner, era, setup, setup.calls).map_err(|e| {
                    format!("{}, round {}: {e}", row_name(era, row.runner), round + 1)
                })?;
                row.runs.push(run);
            }
            progress(era, round + 1);
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------- the floor

/// The `User-Agent` `mcp-driver-blocking` sends (its version is the workspace's, as is this
/// crate's).
const USER_AGENT: &str = concat!("mcp-driver-blocking/", env!("CARGO_PKG_VERSION"));

/// The configuration `mcp-call` runs `call` with against `url` in `era` (`setup.rs`'s
/// `configure` and `with_features` with no flags but `--protocol`, stderr not a terminal):
/// its client info, the tasks extension declared, no progress token; pinned to the era's
/// version. Only what shapes the bytes matters here: the budget does not.
pub fn mcp_call_config(url: &str, era: Era) -> Result<SessionConfig, String> {
    let version = match era {
        Era::Legacy => ProtocolVersion::LATEST,
        Era::Modern => ProtocolVersion::MODERN,
    };
    Ok(SessionConfig::new(url)
        .map_err(|e| format!("{url}: {e}"))?
        .with_client_info("mcp-call", env!("CARGO_PKG_VERSION"))
        .with_tasks(true)
        .with_protocol_version(version))
}

/// A `tools/call` whose JSON-RPC id changes from call to call, as `mcp-call --repeat`'s do
/// (one session, ids counting up): the captured request split around its id.
#[derive(Debug, Clone)]
pub struct CallTemplate {
    request: Captured,
    before_id: Vec<u8>,
    after_id: Vec<u8>,
    first_id: u64,
}

impl CallTemplate {
    /// The template of `call`, whose body carries `"id":<digits>` once.
    ///
    /// # Errors
    /// When the body has no numeric id, or more than one.
    pub fn new(call: Captured) -> Result<Self, String> {
        let body = &call.body[..];
        let key = b"\"id\":";
        let mut found = body
            .windows(key.len())
            .enumerate()
            .filter(|(_, w)| w == key)
            .map(|(at, _)| at + key.len());
        let (Some(at), None) = (found.next(), found.next()) else {
            return Err("the captured call has no single \"id\"".to_owned());
        };
        let digits = body[at..].iter().take_while(|b| b.is_ascii_digit()).count();
        let first_id = std::str::from_utf8(&body[at..at + digits])
            .ok()
            .and_then(|d| d.parse().ok())
            .ok_or("the captured call's id is not a number")?;
        Ok(Self {
            before_id: body[..at].to_vec(),
            after_id: body[at + digits..].to_vec(),
            request: call,
            first_id,
        })
    }

    /// The same template carrying the session id `session`.
    pub fn session(mut self, session: &str) -> Self {
        self.request = self.request.session(session);
        self
    }

    /// The body of the `k`th call (from 0): the captured one's id plus `k`.
    pub fn body(&self, k: u64, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(&self.before_id);
        out.extend_from_slice((self.first_id + k).to_string().as_bytes());
        out.extend_from_slice(&self.after_id);
    }

    /// The request, for a body of the caller's.
    pub fn request<'a>(&self, body: &'a [u8]) -> http::Request<&'a [u8]> {
        self.request.to_request(body)
    }
}

/// What the floor posts in `era` against `url`, captured from `mcp-proto` configured as
/// `mcp-call` is ([`mcp_call_config`]): the handshake's two requests in the legacy era, and
/// the call.
#[derive(Debug, Clone)]
pub struct FloorRequests {
    /// `initialize` and `notifications/initialized` (session id placeholder), legacy only.
    pub handshake: Option<(Captured, Captured)>,
    /// The call.
    pub call: CallTemplate,
}

impl FloorRequests {
    /// Captures them.
    ///
    /// # Errors
    /// A bad URL, or a call without a single numeric id.
    pub fn capture(url: &str, era: Era) -> Result<Self, String> {
        let config = mcp_call_config(url, era)?;
        Ok(match era {
            Era::Legacy => {
                let legs = capture_call_with(config);
                Self {
                    handshake: Some((legs.initialize, legs.initialized)),
                    call: CallTemplate::new(legs.call)?,
                }
            }
            Era::Modern => Self {
                handshake: None,
                call: CallTemplate::new(capture_modern_call_with(config))?,
            },
        })
    }
}

/// The `DELETE` that ends the session `call` carries, as `mcp-proto` sends it when `mcp-call`
/// closes: no body, the session id and the protocol version, nothing else of the call's.
pub fn delete_of(call: &Captured) -> Captured {
    let mut headers = http::HeaderMap::new();
    for name in [SESSION_HEADER, "mcp-protocol-version"] {
        if let Some(value) = call.headers.get(name) {
            headers.insert(http::header::HeaderName::from_static(name), value.clone());
        }
    }
    Captured {
        method: http::Method::DELETE,
        uri: call.uri.clone(),
        headers,
        body: bytes::Bytes::new(),
    }
}

/// The floor's agent: ureq configured as `mcp-driver-blocking` configures its own in what
/// shapes the bytes on the wire (its `User-Agent`, no `Accept` of ureq's, no proxy, statuses
/// not errors, no redirects), with one connection kept alive for the whole run.
fn floor_agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .accept("")
        .user_agent(USER_AGENT)
        .proxy(None)
        .build()
        .new_agent()
}

/// How the floor posts: through one ureq agent (ureq's call loop, pool and timers around its
/// HTTP/1.1 core), or with that core alone (`ureq-proto`) on one TCP connection, the core the
/// blocking driver runs itself.
enum Poster {
    Agent(ureq::Agent),
    Proto(ProtoConnection),
}

/// Sends `request`, reads the whole answer into `buf`; returns the status and the session id
/// header. A request without a body (the `DELETE`) is sent as the blocking driver sends it:
/// with no body at all, not an empty one.
fn post(
    poster: &mut Poster,
    request: http::Request<&[u8]>,
    buf: &mut Vec<u8>,
) -> Result<(u16, Option<String>), String> {
    let agent = match poster {
        Poster::Agent(agent) => agent,
        Poster::Proto(connection) => return connection.post(request, buf),
    };
    let mut response = match request.body().is_empty() {
        true => agent.run(request.map(|_| ())),
        false => agent.run(request),
    }
    .map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    let session = session_of(response.headers());
    buf.clear();
    response
        .body_mut()
        .as_reader()
        .read_to_end(buf)
        .map_err(|e| e.to_string())?;
    Ok((status, session))
}

fn session_of(headers: &http::HeaderMap) -> Option<String> {
    headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// One keep-alive TCP connection driven with `ureq-proto`: each request written whole and sent
/// in one write, the answer read with the input kept between reads; nothing else.
struct ProtoConnection {
    tcp: std::net::TcpStream,
    output: Vec<u8>,
    input: Vec<u8>,
    /// The input not read yet: `input[used..filled]`.
    used: usize,
    filled: usize,
}

impl ProtoConnection {
    fn open(url: &str) -> Result<Self, String> {
        let uri: http::Uri = url.parse().map_err(|e| format!("{url}: {e}"))?;
        let host = uri.host().ok_or_else(|| format!("{url}: no host"))?;
        let port = uri.port_u16().unwrap_or(80);
        let tcp = std::net::TcpStream::connect((host, port)).map_err(|e| format!("{url}: {e}"))?;
        tcp.set_nodelay(true).map_err(|e| e.to_string())?;
        Ok(Self {
            tcp,
            output: vec![0; 16 * 1024],
            input: vec![0; 64 * 1024],
            used: 0,
            filled: 0,
        })
    }

    /// Reads more input after what is left unread; the server's close (or a head that fills
    /// the buffer) is an error.
    fn fill(&mut self) -> Result<(), String> {
        // What is left unread moves to the front: the room after it is the buffer's rest.
        self.input.copy_within(self.used..self.filled, 0);
        (self.used, self.filled) = (0, self.filled - self.used);
        let read = self
            .tcp
            .read(&mut self.input[self.filled..])
            .map_err(|e| e.to_string())?;
        if read == 0 {
            return Err("the server closed the connection".into());
        }
        self.filled += read;
        Ok(())
    }

    fn post(
        &mut self,
        request: http::Request<&[u8]>,
        buf: &mut Vec<u8>,
    ) -> Result<(u16, Option<String>), String> {
        use std::io::Write as _;
        use ureq_proto::client::{Call, RecvResponseResult, SendRequestResult};
        let error = |e: ureq_proto::Error| e.to_string();
        let (parts, body) = request.into_parts();
        let mut call = Call::new(http::Request::from_parts(parts, ())).map_err(error)?;
        if !body.is_empty() {
            call.header(http::header::CONTENT_LENGTH, body.len())
                .map_err(error)?;
        }
        call.header(http::header::USER_AGENT, USER_AGENT)
            .map_err(error)?;
        let mut call = call.proceed();
        let mut written = call.write(&mut self.output).map_err(error)?;
        let mut answer = match call.proceed().map_err(error)? {
            Some(SendRequestResult::SendBody(mut send)) => {
                let (_, amount) = send
                    .write(body, &mut self.output[written..])
                    .map_err(error)?;
                written += amount;
                send.proceed().ok_or("the body did not fit the output")?
            }
            Some(SendRequestResult::RecvResponse(answer)) => answer,
            _ => return Err("no request to send".into()),
        };
        self.tcp
            .write_all(&self.output[..written])
            .map_err(|e| e.to_string())?;
        let head = loop {
            if self.used < self.filled {
                let (amount, head) = answer
                    .try_response(&self.input[self.used..self.filled], false)
                    .map_err(error)?;
                self.used += amount;
                if let Some(head) = head {
                    break head;
                }
            }
            self.fill()?;
        };
        buf.clear();
        if let Some(RecvResponseResult::RecvBody(mut reading)) = answer.proceed() {
            while !reading.can_proceed() {
                let (amount, produced) = reading
                    .read(&self.input[self.used..self.filled], &mut self.output)
                    .map_err(error)?;
                self.used += amount;
                buf.extend_from_slice(&self.output[..produced]);
                // Nothing taken: what is in (none, or a chunk's size line cut short) needs more.
                if amount == 0 && produced == 0 {
                    self.fill()?;
                }
            }
        }
        Ok((head.status().as_u16(), session_of(head.headers())))
    }
}

/// Whether an answer carries the echoed text as `"text":"hi"` (a JSON body or an event's data).
fn echoed(body: &[u8]) -> bool {
    let needle = format!("\"text\":\"{TEXT}\"");
    body.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// The body of `mcp-bench floor-child URL ERA N`: a bare client posting what `mcp-call`'s
/// blocking driver posts for `N` warm `tools/call`s of `echo` in `ERA` (`legacy`: 2025-11-25,
/// `modern`: 2026-07-28), one after another on one ureq agent and one keep-alive connection;
/// prints nothing per call.
///
/// The same headers, the same body shape, the same era as `mcp-call --repeat N call echo
/// '{"text":"hi"}'` (`--protocol 2025-11-25` for `legacy`): the requests are captured from
/// `mcp-proto` configured as `mcp-call` configures it ([`mcp_call_config`]: client info
/// `mcp-call`, the tasks extension declared in the modern `_meta`), sent through an agent
/// that adds what the blocking driver's adds (`User-Agent: mcp-driver-blocking/...`, `Host`,
/// `Content-Length`), their ids counting up call after call as `mcp-call`'s do. In the legacy
/// era the handshake (`initialize`, then `notifications/initialized` with the session id)
/// comes first and the session's `DELETE` last, as `mcp-call` sends them; in the modern era
/// every call is the one stateless POST, its version and capabilities in `_meta` and the
/// `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers. What it leaves out is the
/// client: no state machine, no deadline, no JSON parsing of the answer (each whole answer is
/// read and checked to hold the echoed text), no output.
///
/// # Errors
/// A bad command line, or the first request that fails, answers another status than the
/// protocol's, or does not echo the text.
pub fn floor_child_main(args: &[String]) -> Result<(), String> {
    let usage = || "usage: mcp-bench floor-child [--proto] URL legacy|modern N".to_owned();
    let (url, era, n, proto) = match args {
        [url, era, n] => (url, era, n, false),
        [proto, url, era, n] if proto == "--proto" => (url, era, n, true),
        _ => return Err(usage()),
    };
    let era = Era::parse(era).ok_or_else(usage)?;
    let n: u64 = n.parse().map_err(|_| usage())?;
    let FloorRequests { handshake, call } = FloorRequests::capture(url, era)?;
    let mut agent = match proto {
        true => Poster::Proto(ProtoConnection::open(url)?),
        false => Poster::Agent(floor_agent()),
    };
    let mut buf = Vec::with_capacity(16 * 1024);
    let (call, delete) = match handshake {
        Some((initialize, initialized)) => {
            let (status, session) = post(
                &mut agent,
                initialize.to_request(&initialize.body[..]),
                &mut buf,
            )?;
            let session = match (status, session) {
                (200, Some(session)) => session,
                (status, _) => {
                    return Err(format!("initialize answered {status} without a session"));
                }
            };
            let initialized = initialized.session(&session);
            let (status, _) = post(
                &mut agent,
                initialized.to_request(&initialized.body[..]),
                &mut buf,
            )?;
            if status != 202 {
                return Err(format!("notifications/initialized answered {status}"));
            }
            let call = call.session(&session);
            let delete = delete_of(&call.request);
            (call, Some(delete))
        }
        None => (call, None),
    };
    let mut body = Vec::with_capacity(call.before_id.len() + call.after_id.len() + 20);
    for k in 0..n {
        call.body(k, &mut body);
        let (status, _) = post(&mut agent, call.request(&body), &mut buf)?;
        if status != 200 {
            return Err(format!("call {} answered {status}", k + 1));
        }
        if !echoed(&buf) {
            return Err(format!(
                "call {} did not echo {TEXT:?}: {}",
                k + 1,
                String::from_utf8_lossy(&buf)
            ));
        }
    }
    if let Some(delete) = delete {
        let (status, _) = post(&mut agent, delete.to_request(&[][..]), &mut buf)?;
        if !(200..300).contains(&status) {
            return Err(format!("DELETE answered {status}"));
        }
    }
    Ok(())
}

/// `mcp-call` next to `exe`, for the whole-process rows; the error names the build step.
pub fn mcp_call_path(exe: &Path) -> Result<PathBuf, String> {
    crate::overrun::mcp_call_path(exe).map_err(|_| {
        format!(
            "the whole-process rows need {} (not found): build it with \
             `cargo build --release --bins` (bench/run.sh does)",
            exe.with_file_name(format!("mcp-call{}", std::env::consts::EXE_SUFFIX))
                .display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_named_for_only_and_keep_their_floor() {
        assert_eq!(rows().len(), 8);
        assert_eq!(
            row_name(Era::Legacy, Runner::Tokio),
            "whole 2025-11-25 mcp-call --driver tokio"
        );
        let kept = with_floors(&[(Era::Modern, Runner::Blocking)]);
        assert_eq!(
            kept,
            [
                (Era::Modern, Runner::Blocking),
                (Era::Modern, Runner::Floor)
            ]
        );
    }

    #[test]
    fn the_floor_posts_what_mcp_call_posts() {
        let url = "http://127.0.0.1:9/mcp";
        let modern = FloorRequests::capture(url, Era::Modern).unwrap();
        assert!(modern.handshake.is_none());
        let mut body = Vec::new();
        modern.call.body(0, &mut body);
        let text = String::from_utf8(body.clone()).unwrap();
        assert_eq!(
            text,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},"io.modelcontextprotocol/clientInfo":{"name":"mcp-call","version":"0.1.0"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#
                .replace("0.1.0", env!("CARGO_PKG_VERSION")),
            "what mcp-call 2026-07-28 posted, captured on the wire"
        );
        modern.call.body(9, &mut body);
        assert!(String::from_utf8_lossy(&body).contains(r#""id":10,"#));
        let headers = &modern.call.request.headers;
        assert_eq!(headers["mcp-protocol-version"], "2026-07-28");
        assert_eq!(headers["mcp-method"], "tools/call");
        assert_eq!(headers["mcp-name"], "echo");

        let legacy = FloorRequests::capture(url, Era::Legacy).unwrap();
        let (initialize, initialized) = legacy.handshake.unwrap();
        assert_eq!(
            String::from_utf8_lossy(&initialize.body),
            r#"{"id":1,"jsonrpc":"2.0","method":"initialize","params":{"capabilities":{},"clientInfo":{"name":"mcp-call","version":"0.1.0"},"protocolVersion":"2025-11-25"}}"#
                .replace("0.1.0", env!("CARGO_PKG_VERSION"))
        );
        assert_eq!(
            String::from_utf8_lossy(&initialized.body),
            r#"{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}"#
        );
        let call = legacy.call.session("s-1");
        call.body(0, &mut body);
        assert_eq!(
            String::from_utf8_lossy(&body),
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#,
            "the first call after initialize's id 1"
        );
        assert_eq!(call.request.headers[SESSION_HEADER], "s-1");
        let delete = delete_of(&call.request);
        assert_eq!(delete.method, http::Method::DELETE);
        assert!(delete.body.is_empty());
        let names: Vec<&str> = delete.headers.keys().map(|k| k.as_str()).collect();
        assert_eq!(names, ["mcp-session-id", "mcp-protocol-version"]);
    }

    #[test]
    fn an_answer_echoes_as_json_or_as_an_event() {
        assert!(echoed(
            br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}"#
        ));
        assert!(echoed(
            b"data: \nid: 0/0\nretry: 3000\n\ndata: {\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}\n\n"
        ));
        assert!(!echoed(br#"{"content":[{"type":"text","text":"ho"}]}"#));
    }

    #[test]
    fn ratios_to_the_floor_are_per_round() {
        let run = |ms: u64| ProcessRun {
            wall: Duration::from_millis(ms),
            user: Duration::from_millis(ms / 2),
            system: Duration::from_millis(ms / 4),
            server: None,
            voluntary_switches: 0,
        };
        let row = |runner, walls: &[u64]| WholeRow {
            era: Era::Modern,
            runner,
            calls: 1000,
            runs: walls.iter().map(|ms| run(*ms)).collect(),
        };
        let client = row(Runner::Blocking, &[200, 400, 1000]);
        let floor = row(Runner::Floor, &[100, 400, 500]);
        // Per round: 0.5, 1.0, 0.5: the median of the ratios, not the ratio of the medians.
        assert_eq!(client.times_floor(&floor), Some(0.5));
        assert_eq!(client.rate().unwrap().median, 2500.0);
        assert_eq!(client.user_us(), Some(200.0));
        assert_eq!(client.server_us(), None);
    }
}
