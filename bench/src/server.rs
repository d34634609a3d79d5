//! The loopback server every client talks to, and how fast it is on its own.
//!
//! The server is `mcp-testkit`'s [`TestServer`]: hand-written HTTP/1.1, a thread per
//! connection, keep-alive, answers as JSON (`Content-Length`) or as an event stream (chunked).
//! It runs in a **child process** (`mcp-bench serve [--era legacy|modern]`), so that:
//!
//! * its CPU time is read apart from the clients' (`/proc/<pid>/stat`), and each case can say
//!   how much of a call the server spent;
//! * its memory (and the requests it records) never count against a client.
//!
//! A process speaks one [`Era`]: the legacy one (the `initialize` handshake and sessions,
//! `mcp-testkit`'s default) or the 2026-07-28 one (`ServerEra::Modern`: every call one
//! stateless POST, `initialize` refused). [`ServerProcess::counters`] reads, per server, the
//! TCP connections it has accepted and the requests it has received by JSON-RPC method
//! ([`Legs`]: the handshakes, the calls, a `server/discover`, a `GET` or a `DELETE`), so that
//! each case can say how many of each it cost.
//!
//! The legacy process also serves the hostile answers of the memory case (`oversize-*`) and a
//! `tools/call` that is never answered (`stall`: the overrun's server).
//!
//! [`raw_ceiling`] measures the server alone: several raw keep-alive clients post prebuilt
//! `tools/call` bytes as fast as the server answers; [`wrk_ceiling`] does the same with `wrk`
//! when it is installed.

use std::io::{self, BufRead, BufReader, Lines, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use mcp_testkit::{AnswerMode, Hostile, Script, ServerEra, TestServer};

use crate::wire::{CallLegs, Captured, SESSION_HEADER, capture_call};

/// The size of the hostile answer of the memory case.
pub const OVERSIZE: usize = 100 << 20;

/// The protocol era a server process speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// 2025-11-25 and before: the `initialize` handshake, then calls on its session.
    Legacy,
    /// 2026-07-28: no handshake, no session; every call one stateless request.
    Modern,
}

impl Era {
    /// The name on `mcp-bench serve`'s command line: `legacy`, `modern`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Legacy => "legacy",
            Self::Modern => "modern",
        }
    }

    /// The era [`Self::name`] gave `name`.
    pub fn parse(name: &str) -> Option<Self> {
        [Self::Legacy, Self::Modern]
            .into_iter()
            .find(|era| era.name() == name)
    }

    /// The servers a process of this era starts, by role: both answer formats, and in the
    /// legacy era the hostile answers of the memory case and the stalled `tools/call` of the
    /// overrun (`stall`) too.
    fn roles(self) -> &'static [&'static str] {
        match self {
            Self::Legacy => &[
                "json",
                "sse",
                "oversize-length",
                "oversize-chunked",
                "oversize-sse",
                "stall",
            ],
            Self::Modern => &["json", "sse"],
        }
    }
}

fn script(role: &str, era: Era) -> Script {
    let call = "tools/call";
    let script = match role {
        // Lists the `forecast` tool too (its `outputSchema` and matching answers): the
        // output-validation rows call it (`crate::validation`); no other case lists the tools.
        "json" => Script::new().answer_mode(AnswerMode::Json).tool(
            crate::validation::TOOL,
            Some(mcp_testkit::forecast_schema()),
            mcp_testkit::forecast_result(),
        ),
        "sse" => Script::new().answer_mode(AnswerMode::Sse),
        "oversize-length" => Script::new().hostile(call, Hostile::Oversize(OVERSIZE)),
        "oversize-chunked" => Script::new().hostile(call, Hostile::OversizeChunked(OVERSIZE)),
        "oversize-sse" => Script::new()
            .answer_mode(AnswerMode::Sse)
            .hostile(call, Hostile::Oversize(OVERSIZE)),
        // Answers the handshake, never `tools/call`: the connection is held, read until the
        // client closes it.
        "stall" => Script::new().hostile(call, Hostile::Stall),
        other => unreachable!("no server role {other}"),
    };
    match era {
        Era::Legacy => script,
        Era::Modern => script.era(ServerEra::Modern),
    }
}

/// Recorded requests a server may hold before the helper thread of `mcp-bench serve` counts
/// and forgets them in the middle of a case (about a second of the fastest load).
const RECORDED_CAP: usize = 50_000;

/// Requests a server received, by label (the JSON-RPC method, `(response)`, or the HTTP
/// method of a `GET` or `DELETE`: `TestServer::rpc_methods`), each label once, in the order
/// it was first seen.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Legs(Vec<(String, u64)>);

impl Legs {
    /// Counts `n` more requests labelled `label`.
    pub fn add(&mut self, label: &str, n: u64) {
        match self.0.iter_mut().find(|(l, _)| l == label) {
            Some((_, count)) => *count += n,
            None => self.0.push((label.to_owned(), n)),
        }
    }

    /// The requests labelled `label`.
    pub fn count(&self, label: &str) -> u64 {
        self.0
            .iter()
            .find(|(l, _)| l == label)
            .map_or(0, |(_, n)| *n)
    }

    /// Every request counted.
    pub fn total(&self) -> u64 {
        self.0.iter().map(|(_, n)| n).sum()
    }

    /// Each label and its count, in the order first seen.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u64)> {
        self.0.iter().map(|(l, n)| (l.as_str(), *n))
    }

    /// What was counted since `before` (an earlier reading of the same totals).
    pub fn since(&self, before: &Self) -> Self {
        let mut out = Self::default();
        for (label, n) in self.iter() {
            let new = n.saturating_sub(before.count(label));
            if new > 0 {
                out.add(label, new);
            }
        }
        out
    }

    /// Adds `other`'s counts to these.
    pub fn merge(&mut self, other: &Self) {
        for (label, n) in other.iter() {
            self.add(label, n);
        }
    }

    /// As one word for `mcp-bench serve`'s answer: `label=count,...`, `-` when empty.
    fn to_word(&self) -> String {
        if self.0.is_empty() {
            return "-".to_owned();
        }
        let items: Vec<String> = self.iter().map(|(l, n)| format!("{l}={n}")).collect();
        items.join(",")
    }

    /// The legs [`Self::to_word`] wrote.
    fn from_word(word: &str) -> Option<Self> {
        let mut legs = Self::default();
        if word == "-" {
            return Some(legs);
        }
        for item in word.split(',') {
            let (label, n) = item.rsplit_once('=')?;
            legs.add(label, n.parse().ok()?);
        }
        Some(legs)
    }
}

/// One server of `mcp-bench serve` and the requests it has received so far.
struct Served {
    role: &'static str,
    server: TestServer,
    /// The requests already forgotten, by label.
    forgotten: Mutex<Legs>,
}

impl Served {
    /// Counts the recorded requests by label and forgets them all; returns the totals so far.
    /// A request recorded between the count and the forgetting is lost to the count: the
    /// query between two cases, when no client is running, loses none.
    fn count_legs(&self) -> Legs {
        let mut total = self
            .forgotten
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for label in self.server.rpc_methods() {
            total.add(&label, 1);
        }
        self.server.clear_requests();
        total.clone()
    }
}

/// The body of `mcp-bench serve [--era legacy|modern]`: starts one server per role of the era
/// (default legacy), prints `role url` lines and an empty line, then serves until standard
/// input closes. Each line it reads on standard input is answered with one line of
/// `role connections-accepted legs` triples (totals since the start; `legs` is
/// `label=count,...` or `-`; see [`ServerProcess::counters`]).
///
/// The servers record every request. They are counted by label, and the records forgotten,
/// when a query comes (between cases, when no client is running, so the count is exact), and
/// by a helper thread when more than [`RECORDED_CAP`] pile up, so that a long case does not
/// grow the server's memory without bound.
///
/// # Errors
/// A bad command line, or a server that cannot start.
pub fn serve_main(args: &[String]) -> io::Result<()> {
    let era = match args {
        [] => Era::Legacy,
        [flag, name] if flag == "--era" => Era::parse(name)
            .ok_or_else(|| io::Error::other(format!("no era {name:?} (legacy or modern)")))?,
        _ => {
            return Err(io::Error::other(
                "usage: mcp-bench serve [--era legacy|modern]",
            ));
        }
    };
    let servers: Vec<Served> = era
        .roles()
        .iter()
        .map(|role| {
            Ok(Served {
                role,
                server: TestServer::try_start(script(role, era))?,
                forgotten: Mutex::new(Legs::default()),
            })
        })
        .collect::<io::Result<_>>()?;
    let mut out = io::stdout().lock();
    for served in &servers {
        writeln!(out, "{} {}", served.role, served.server.url())?;
    }
    writeln!(out)?;
    out.flush()?;
    drop(out);
    let stop = Arc::new(AtomicBool::new(false));
    thread::scope(|scope| {
        scope.spawn(|| {
            while !stop.load(Ordering::SeqCst) {
                thread::sleep(Duration::from_millis(200));
                for served in &servers {
                    if served
                        .server
                        .wait_for_requests(RECORDED_CAP, Duration::ZERO)
                    {
                        served.count_legs();
                    }
                }
            }
        });
        // Each line on stdin asks for the counters, by role; EOF stops.
        for line in io::stdin().lock().lines() {
            if line.is_err() {
                break;
            }
            let mut out = io::stdout().lock();
            for served in &servers {
                let legs = served.count_legs().to_word();
                let accepted = served.server.connections_accepted();
                let _ = write!(out, "{} {accepted} {legs} ", served.role);
            }
            let _ = writeln!(out);
            let _ = out.flush();
        }
        stop.store(true, Ordering::SeqCst);
    });
    for served in &servers {
        served.server.shutdown();
    }
    Ok(())
}

/// What one server of the child process has received since it started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counters {
    /// TCP connections accepted.
    pub connections: u64,
    /// Requests, by label.
    pub legs: Legs,
}

impl Counters {
    /// `initialize` requests: handshakes begun.
    pub fn initialize(&self) -> u64 {
        self.legs.count("initialize")
    }
}

/// A serving child process of `mcp-bench` (`serve`, `serve-rmcp`): started with its
/// arguments, its `ROLE URL` lines read up to the blank one. Dropping it closes its standard
/// input, which stops it (killed after 5 s if it does not).
#[derive(Debug)]
pub(crate) struct Serving {
    child: Child,
    stdin: Option<ChildStdin>,
    /// What it writes after its URLs (the counters `serve` answers with).
    lines: Lines<BufReader<ChildStdout>>,
    urls: Vec<(String, String)>,
}

impl Serving {
    /// Starts `exe` with `args` and waits for `roles` URLs.
    pub(crate) fn spawn(exe: &std::path::Path, args: &[&str], roles: usize) -> io::Result<Self> {
        let mut child = Command::new(exe)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let stdout: ChildStdout = child
            .stdout
            .take()
            .ok_or_else(|| io::Error::other("no stdout"))?;
        let stdin = child.stdin.take();
        let mut lines = BufReader::new(stdout).lines();
        let mut urls = Vec::new();
        for line in lines.by_ref() {
            let line = line?;
            if line.is_empty() {
                break;
            }
            if let Some((role, url)) = line.split_once(' ') {
                urls.push((role.to_owned(), url.to_owned()));
            }
        }
        if urls.len() != roles {
            let _ = child.kill();
            let _ = child.wait();
            let what = args.first().copied().unwrap_or_default();
            return Err(io::Error::other(format!(
                "the {what} process did not start"
            )));
        }
        Ok(Self {
            child,
            stdin,
            lines,
            urls,
        })
    }

    /// The URL of the server playing `role`.
    pub(crate) fn url(&self, role: &str) -> Option<&str> {
        (self.urls.iter())
            .find(|(r, _)| r == role)
            .map(|(_, url)| url.as_str())
    }

    /// The process id (for its CPU time).
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        // Closing stdin asks the server to stop; wait a moment, then make sure.
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The server child process. Dropping it stops it.
#[derive(Debug)]
pub struct ServerProcess {
    era: Era,
    serving: Serving,
}

impl ServerProcess {
    /// Starts `exe serve --era ERA` and waits for its URLs.
    pub fn spawn(exe: &std::path::Path, era: Era) -> io::Result<Self> {
        let serving = Serving::spawn(exe, &["serve", "--era", era.name()], era.roles().len())?;
        Ok(Self { era, serving })
    }

    /// The era its servers speak.
    pub fn era(&self) -> Era {
        self.era
    }

    /// The URL of the server playing `role` (`json`, `sse`, `oversize-chunked`...).
    ///
    /// # Panics
    /// For a role the process does not serve.
    pub fn url(&self, role: &str) -> &str {
        (self.serving.url(role)).unwrap_or_else(|| panic!("no server for {role}"))
    }

    /// The process id (for its CPU time).
    pub fn pid(&self) -> u32 {
        self.serving.pid()
    }

    /// What the server playing `role` has received so far; `None` when the server process
    /// did not answer. Read it when no client is running (between cases): the counts are
    /// exact then.
    pub fn counters(&mut self, role: &str) -> Option<Counters> {
        let stdin = self.serving.stdin.as_mut()?;
        writeln!(stdin).ok()?;
        stdin.flush().ok()?;
        let line = self.serving.lines.next()?.ok()?;
        let mut words = line.split_whitespace();
        while let Some(word) = words.next() {
            let connections = words.next()?;
            let legs = words.next()?;
            if word == role {
                return Some(Counters {
                    connections: connections.parse().ok()?,
                    legs: Legs::from_word(legs)?,
                });
            }
        }
        None
    }

    /// TCP connections the server playing `role` has accepted so far.
    pub fn connections(&mut self, role: &str) -> Option<u64> {
        self.counters(role).map(|c| c.connections)
    }

    /// `initialize` requests (handshakes) the server playing `role` has received so far
    /// (as [`Self::counters`]).
    pub fn initialize_requests(&mut self, role: &str) -> Option<u64> {
        self.counters(role).map(|c| c.initialize())
    }
}

/// The address in an `http://host:port/path` URL.
///
/// # Panics
/// If the URL has no socket address.
pub fn addr_of(url: &str) -> SocketAddr {
    let rest = url.strip_prefix("http://").expect("an http URL");
    let hostport = rest.split('/').next().unwrap_or(rest);
    hostport.parse().expect("an IP address and a port")
}

/// A raw HTTP/1.1 keep-alive connection sending prebuilt requests.
#[derive(Debug)]
pub struct RawConn {
    stream: TcpStream,
    buf: Vec<u8>,
}

/// A response as [`RawConn`] read it.
#[derive(Debug)]
pub struct RawResponse {
    /// The status code.
    pub status: u16,
    /// The `Mcp-Session-Id` header, if any.
    pub session: Option<String>,
    /// Bytes of the whole response (head and body).
    pub len: usize,
}

impl RawConn {
    /// Connects to `addr` with Nagle off.
    pub fn connect(addr: SocketAddr) -> io::Result<Self> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        Ok(Self {
            stream,
            buf: Vec::with_capacity(64 * 1024),
        })
    }

    /// Sends `bytes` (a whole request) and reads one response.
    pub fn exchange(&mut self, bytes: &[u8]) -> io::Result<RawResponse> {
        self.stream.write_all(bytes)?;
        self.read_response()
    }

    fn fill(&mut self) -> io::Result<()> {
        let mut chunk = [0u8; 16 * 1024];
        let n = self.stream.read(&mut chunk)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(())
    }

    fn read_response(&mut self) -> io::Result<RawResponse> {
        self.buf.clear();
        let head_end = loop {
            if let Some(at) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
            self.fill()?;
        };
        let head = String::from_utf8_lossy(&self.buf[..head_end]).into_owned();
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let header = |name: &str| {
            head.lines().find_map(|line| {
                let (n, v) = line.split_once(':')?;
                n.trim()
                    .eq_ignore_ascii_case(name)
                    .then(|| v.trim().to_owned())
            })
        };
        let session = header(SESSION_HEADER);
        let chunked = header("transfer-encoding").is_some_and(|v| v.contains("chunked"));
        if chunked {
            while !self.buf[head_end..].ends_with(b"0\r\n\r\n") {
                self.fill()?;
            }
        } else {
            let length: usize = header("content-length")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            while self.buf.len() < head_end + length {
                self.fill()?;
            }
        }
        Ok(RawResponse {
            status,
            session,
            len: self.buf.len(),
        })
    }
}

/// `request` serialised as HTTP/1.1 bytes for `host`.
pub fn request_bytes(request: &Captured, host: &str) -> Vec<u8> {
    let path = request
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    let mut out = format!("{} {path} HTTP/1.1\r\nhost: {host}\r\n", request.method).into_bytes();
    for (name, value) in &request.headers {
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(format!("content-length: {}\r\n\r\n", request.body.len()).as_bytes());
    out.extend_from_slice(&request.body);
    out
}

/// Opens a session on the server at `url` over `conn`; returns the `tools/call` request bytes
/// that carry it.
pub fn raw_session(conn: &mut RawConn, url: &str, legs: &CallLegs) -> io::Result<Vec<u8>> {
    let host = url
        .strip_prefix("http://")
        .and_then(|r| r.split('/').next())
        .unwrap_or("127.0.0.1");
    let init = conn.exchange(&request_bytes(&legs.initialize, host))?;
    let session = init
        .session
        .ok_or_else(|| io::Error::other("no session id"))?;
    let initialized = conn.exchange(&request_bytes(&legs.initialized.session(&session), host))?;
    if init.status != 200 || initialized.status != 202 {
        return Err(io::Error::other("the handshake failed"));
    }
    Ok(request_bytes(&legs.call.session(&session), host))
}

/// The server's calls/s with `clients` raw keep-alive connections (one thread each) posting
/// `tools/call` for `duration`.
pub fn raw_ceiling(url: &str, clients: usize, duration: Duration) -> io::Result<f64> {
    let legs = capture_call(url);
    let addr = addr_of(url);
    let mut conns = Vec::new();
    for _ in 0..clients {
        let mut conn = RawConn::connect(addr)?;
        let call = raw_session(&mut conn, url, &legs)?;
        conns.push((conn, call));
    }
    let done = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let end = start + duration;
    let handles: Vec<_> = conns
        .into_iter()
        .map(|(mut conn, call)| {
            let done = Arc::clone(&done);
            thread::spawn(move || -> io::Result<()> {
                let mut n = 0;
                while Instant::now() < end {
                    let response = conn.exchange(&call)?;
                    if response.status != 200 {
                        return Err(io::Error::other(format!("status {}", response.status)));
                    }
                    n += 1;
                }
                done.fetch_add(n, Ordering::SeqCst);
                Ok(())
            })
        })
        .collect();
    for handle in handles {
        handle
            .join()
            .map_err(|_| io::Error::other("a raw client panicked"))??;
    }
    Ok(done.load(Ordering::SeqCst) as f64 / start.elapsed().as_secs_f64())
}

/// The server's calls/s measured by `wrk` (one thread, `connections` keep-alive connections)
/// posting `tools/call` for `duration`; `None` when `wrk` is not installed or failed.
pub fn wrk_ceiling(url: &str, connections: usize, duration: Duration) -> Option<f64> {
    let legs = capture_call(url);
    let mut conn = RawConn::connect(addr_of(url)).ok()?;
    // One session for every connection: the server accepts it on any of them.
    let call = raw_session(&mut conn, url, &legs).ok()?;
    let text = String::from_utf8_lossy(&call).into_owned();
    let (head, body) = text.split_once("\r\n\r\n")?;
    let mut lua = String::from("wrk.method = \"POST\"\n");
    lua.push_str(&format!("wrk.body = {}\n", lua_string(body)));
    for line in head.lines().skip(1) {
        let (name, value) = line.split_once(": ")?;
        if name == "host" || name == "content-length" {
            continue;
        }
        lua.push_str(&format!(
            "wrk.headers[{}] = {}\n",
            lua_string(name),
            lua_string(value)
        ));
    }
    let script = std::env::temp_dir().join(format!("mcp-bench-wrk-{}.lua", std::process::id()));
    std::fs::write(&script, lua).ok()?;
    let output = Command::new("wrk")
        .args(["-t1", &format!("-c{connections}")])
        .arg(format!("-d{}s", duration.as_secs().max(1)))
        .arg("-s")
        .arg(&script)
        .arg(url)
        .output();
    let _ = std::fs::remove_file(&script);
    let output = output.ok()?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if stdout.contains("Non-2xx") {
        return None;
    }
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("Requests/sec:"))
        .and_then(|v| v.trim().parse().ok())
}

fn lua_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_counted_by_method_across_forgetting() {
        let served = Served {
            role: "json",
            server: TestServer::try_start(script("json", Era::Legacy)).unwrap(),
            forgotten: Mutex::new(Legs::default()),
        };
        let url = served.server.url();
        let legs = capture_call(&url);
        let mut conn = RawConn::connect(addr_of(&url)).unwrap();
        let call = raw_session(&mut conn, &url, &legs).unwrap();
        assert_eq!(conn.exchange(&call).unwrap().status, 200);
        let counted = served.count_legs();
        assert_eq!(counted.count("initialize"), 1);
        assert_eq!(counted.total(), 3, "handshake and call: {counted:?}");
        assert!(
            served.server.requests().is_empty(),
            "the records are forgotten"
        );
        assert_eq!(served.count_legs(), counted, "the counts are kept");
        raw_session(&mut conn, &url, &legs).unwrap();
        let later = served.count_legs();
        assert_eq!(later.count("initialize"), 2);
        let since = later.since(&counted);
        let order: Vec<(&str, u64)> = since.iter().collect();
        assert_eq!(
            order,
            [("initialize", 1), ("notifications/initialized", 1)],
            "only the new handshake, in the order it came"
        );
        assert_eq!(Legs::from_word(&later.to_word()), Some(later));
        assert_eq!(Legs::from_word("-"), Some(Legs::default()));
        served.server.shutdown();
    }

    #[test]
    fn the_stall_server_answers_the_handshake_and_never_the_call() {
        assert!(Era::Legacy.roles().contains(&"stall"));
        let server = TestServer::try_start(script("stall", Era::Legacy)).unwrap();
        let url = server.url();
        let mut conn = RawConn::connect(addr_of(&url)).unwrap();
        let call = raw_session(&mut conn, &url, &capture_call(&url)).unwrap();
        conn.stream
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let err = conn.exchange(&call).unwrap_err();
        assert!(
            matches!(
                err.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ),
            "no answer, the connection held: {err:?}"
        );
        drop(conn);
        server.shutdown();
    }

    #[test]
    fn a_modern_server_answers_the_stateless_call_and_refuses_the_handshake() {
        let server = TestServer::try_start(script("sse", Era::Modern)).unwrap();
        let url = server.url();
        let host = url
            .strip_prefix("http://")
            .unwrap()
            .split('/')
            .next()
            .unwrap();
        let mut conn = RawConn::connect(addr_of(&url)).unwrap();
        let call = request_bytes(&crate::wire::capture_modern_call(&url), host);
        assert_eq!(conn.exchange(&call).unwrap().status, 200);
        assert_eq!(
            conn.exchange(&call).unwrap().status,
            200,
            "no session to end"
        );
        let legacy = capture_call(&url);
        let refused = conn
            .exchange(&request_bytes(&legacy.initialize, host))
            .unwrap();
        assert_eq!(refused.status, 400);
        server.shutdown();
    }
}
