//! The stdio server: the HTTP server's scripted answers (the same dispatch, tools, eras and
//! notifications), one JSON-RPC message per line on stdin and on stdout, with stdio's own
//! hostile modes. The `mcp-testkit-stdio` binary is a thin `main` around [`serve_stdio`];
//! [`stdio_server_command`] finds it for tests in other crates.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::fs::{self, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use mcp_proto::StdioCommand;
use serde_json::{Map, Value};

use crate::era::ServerEra;
use crate::mcp::{self, Env};
use crate::message::{Message, RpcKind};
use crate::modern::{self, Verdict};
use crate::payload::{self, Payload, Piece};
use crate::script::{Script, ServerRequest};

/// The name of the stdio server's binary target (`tests/src/bin/mcp-testkit-stdio.rs`).
pub const STDIO_SERVER_BIN: &str = "mcp-testkit-stdio";
/// The environment variable the binary reads a JSON script from (see
/// [`StdioScript::to_json`]); command-line flags apply on top of it.
pub const STDIO_SCRIPT_ENV: &str = "MCP_TESTKIT_SCRIPT";
/// The environment variable [`stdio_server_path`] takes the binary's path from, before looking
/// next to the running test binary.
pub const STDIO_SERVER_PATH_ENV: &str = "MCP_TESTKIT_STDIO_BIN";

/// The interval between two pieces of a [`StdioHostile::Trickle`] line.
pub const TRICKLE_INTERVAL: Duration = Duration::from_millis(200);
/// Bytes per piece of a [`StdioHostile::Trickle`] line.
const TRICKLE_BYTES: usize = 3;
/// A line the client writes longer than this is refused (`-32600`) and skipped to its end.
pub const MAX_INPUT_LINE: usize = 16 * 1024 * 1024;

/// The binary's usage text (`mcp-testkit-stdio --help`).
pub const STDIO_USAGE: &str = "\
mcp-testkit-stdio: a scriptable MCP test server over stdio (one JSON-RPC message per line on
stdin and stdout, log lines on stderr). Not a production server.

usage: mcp-testkit-stdio [FLAGS]

The script starts from $MCP_TESTKIT_SCRIPT (a JSON object, see --script) when it is set, then
the flags apply in order:
  --script JSON          replace the script: {\"era\":\"legacy|modern|dual\", \"toolPages\":N,
                         \"notifications\":N, \"progress\":BOOL, \"protocolVersion\":STR,
                         \"delays\":{METHOD:MS}, \"hostile\":{METHOD:MODE}, \"ignoreEof\":BOOL,
                         \"verbose\":BOOL, \"signalFile\":PATH} (every key optional; unknown
                         keys are refused)
  --preset NAME          replace the script: default | demo
  --era ERA              legacy (default) | modern | dual
  --hostile METHOD=MODE  misbehave for this JSON-RPC method (repeatable); MODE is one of
                           stall                  read the request, never answer it
                           trickle                a line that never ends, 3 bytes every 200 ms
                           huge-line:BYTES        a line of exactly BYTES bytes (streamed)
                           garbage[:LINES]        non-JSON lines before the answer (default 1)
                           exit:CODE              a word on stderr, then exit with CODE
                           notifications-first:N  N notifications/message before the answer
                           server-request[:ping|elicitation]
                                                  a request line first; the client answers
                           wrong-id               the answer's id is the request's + 1000
                           slow:MS                answer after MS milliseconds
                           stderr-flood:BYTES     BYTES of log lines on stderr, then the answer
                           stop-reading           handle it, take the first read of the next write
                                                  (never handled), then never read stdin again
                                                  (alive, the pipe fills: a wedged server)
                         METHOD * applies to every method without a mode of its own
  --delay METHOD=MS      sleep MS milliseconds before handling METHOD (repeatable)
  --notifications N      N notifications/message lines before every answer
  --tool-pages N         split tools/list into N pages
  --protocol-version V   answer initialize with V whatever the client asks
  --no-progress          no notifications/progress for calls with a progress token
  --ignore-eof           keep running after stdin closes (the client must kill it)
  --signal-file PATH     append a line to PATH for each state a test may wait for:
                         \"stalled METHOD\" (a message it will never answer) and
                         \"write-stuck\" (after stop-reading, the next write began)
  --verbose              log every message received on stderr
  --help                 this text

Exit status: 0 when stdin closes (or stdout does), CODE for exit:CODE, 2 for a bad command line.
";

/// Which kind of request a [`StdioHostile::ServerRequest`] sends before the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ServerAsk {
    /// A legacy `ping` (the client answers `{}`).
    #[default]
    Ping,
    /// An `elicitation/create` asking for a `name` (schema default `world`).
    Elicitation,
}

/// A way for the stdio server to misbehave on one JSON-RPC method (see
/// [`StdioScript::hostile`]). Written and parsed as the mode strings of `--hostile`
/// (`stall`, `huge-line:1048576`, `exit:3`...; a space may replace the colon).
///
/// ```
/// use mcp_testkit::StdioHostile;
/// assert_eq!("huge-line:64".parse::<StdioHostile>(), Ok(StdioHostile::HugeLine(64)));
/// assert_eq!("exit 3".parse::<StdioHostile>(), Ok(StdioHostile::Exit(3)));
/// assert_eq!(StdioHostile::Slow(250).to_string(), "slow:250");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StdioHostile {
    /// Read the request, never answer it (later messages are still served). Raises
    /// [`StdioSignal::Stalled`] once the request is read.
    Stall,
    /// Write the start of the answer a few bytes at a time ([`TRICKLE_INTERVAL`]), never the
    /// end of the line; nothing else is written after. Exits when stdin closes.
    Trickle,
    /// One line of exactly this many bytes (without its newline), streamed in blocks without
    /// being built in memory: a valid JSON answer (a giant text result) when it is long enough
    /// for one (89 bytes with a one-digit id), `x`s below. Later messages are served as usual.
    HugeLine(usize),
    /// This many non-JSON lines (a banner) on stdout, then the normal answer.
    Garbage(usize),
    /// Write a line on stderr, then exit with this code without answering.
    Exit(i32),
    /// This many `notifications/message` lines before the normal answer.
    NotificationsFirst(usize),
    /// A request line (id `srv-<n>`) before the answer; the server waits up to 5 s for the
    /// client's answer line, then answers the call (or, without an answer, sends a `-32000`
    /// error naming the server request).
    ServerRequest(ServerAsk),
    /// The normal answer with the id + 1000 (strings get `-wrong`).
    WrongId,
    /// The normal answer after this many milliseconds (messages arriving meanwhile wait).
    Slow(u64),
    /// This many bytes of log lines on stderr, then the normal answer: a client that does not
    /// drain the child's stderr sees the child block once the pipe is full (64 KiB on Linux).
    StderrFlood(usize),
    /// Handle the message as usual, take what one read of the client's next write gives (at
    /// most 8 KiB, never handled: it raises [`StdioSignal::WriteStuck`]), then never read
    /// stdin again, and stay alive (until killed): a busy or wedged server. The pipe fills
    /// (64 KiB on Linux) and the client's next long write cannot complete.
    StopReading,
}

impl fmt::Display for StdioHostile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stall => f.write_str("stall"),
            Self::Trickle => f.write_str("trickle"),
            Self::HugeLine(n) => write!(f, "huge-line:{n}"),
            Self::Garbage(n) => write!(f, "garbage:{n}"),
            Self::Exit(code) => write!(f, "exit:{code}"),
            Self::NotificationsFirst(n) => write!(f, "notifications-first:{n}"),
            Self::ServerRequest(ServerAsk::Ping) => f.write_str("server-request:ping"),
            Self::ServerRequest(ServerAsk::Elicitation) => {
                f.write_str("server-request:elicitation")
            }
            Self::WrongId => f.write_str("wrong-id"),
            Self::Slow(ms) => write!(f, "slow:{ms}"),
            Self::StderrFlood(n) => write!(f, "stderr-flood:{n}"),
            Self::StopReading => f.write_str("stop-reading"),
        }
    }
}

fn number<T: FromStr>(mode: &str, arg: Option<&str>) -> Result<T, String> {
    let arg = arg.ok_or_else(|| format!("the hostile mode {mode} needs a number"))?;
    arg.trim()
        .parse()
        .map_err(|_| format!("the hostile mode {mode} needs a number, not {arg:?}"))
}

impl FromStr for StdioHostile {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let (mode, arg) = match text.split_once([':', ' ']) {
            Some((mode, arg)) => (mode, Some(arg)),
            None => (text, None),
        };
        let plain = |mode: Self| match arg {
            None => Ok(mode),
            Some(_) => Err(format!("the hostile mode {text:?} takes no argument")),
        };
        match mode {
            "stall" => plain(Self::Stall),
            "trickle" => plain(Self::Trickle),
            "wrong-id" => plain(Self::WrongId),
            "stop-reading" => plain(Self::StopReading),
            "huge-line" => number(mode, arg).map(Self::HugeLine),
            "garbage" => match arg {
                None => Ok(Self::Garbage(1)),
                some => number(mode, some).map(Self::Garbage),
            },
            "exit" => number(mode, arg).map(Self::Exit),
            "notifications-first" => number(mode, arg).map(Self::NotificationsFirst),
            "slow" => number(mode, arg).map(Self::Slow),
            "stderr-flood" => number(mode, arg).map(Self::StderrFlood),
            "server-request" => match arg.map(str::trim) {
                None | Some("ping") => Ok(Self::ServerRequest(ServerAsk::Ping)),
                Some("elicitation") => Ok(Self::ServerRequest(ServerAsk::Elicitation)),
                Some(other) => Err(format!(
                    "server-request takes ping or elicitation, not {other:?}"
                )),
            },
            _ => Err(format!("unknown hostile mode {text:?}")),
        }
    }
}

/// A state the stdio server reached, which a test waits for instead of sleeping: with
/// [`StdioScript::signal_file`], the server appends one line per state to that file (the
/// signal's [`Display`](fmt::Display) form), and [`StdioSignals::raised`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StdioSignal<'a> {
    /// It read a message of this method that it will never answer ([`StdioHostile::Stall`]):
    /// the client's call is in flight, waiting for its answer.
    Stalled(&'a str),
    /// After [`StdioHostile::StopReading`], the client's next write began: the server took the
    /// first of it and will read no more, so a write longer than the pipe holds cannot end.
    WriteStuck,
}

impl fmt::Display for StdioSignal<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stalled(method) => write!(f, "stalled {method}"),
            Self::WriteStuck => f.write_str("write-stuck"),
        }
    }
}

/// One test's signal file: a fresh path in the temporary folder (not created until the server
/// raises a signal), removed when dropped. Give [`path`](Self::path) to
/// [`StdioScript::signal_file`], then wait for a state with [`raised`](Self::raised) in the
/// test's own bounded wait.
///
/// ```
/// use mcp_testkit::{StdioHostile, StdioScript, StdioSignal, StdioSignals};
///
/// let signals = StdioSignals::new("stall");
/// let script = StdioScript::new()
///     .hostile("tools/call", StdioHostile::Stall)
///     .signal_file(signals.path());
/// assert!(!signals.raised(StdioSignal::Stalled("tools/call")));
/// # let _ = script;
/// ```
#[derive(Debug)]
pub struct StdioSignals {
    path: PathBuf,
}

impl StdioSignals {
    /// A signal file no other one in this process shares; `name` (its letters, digits and
    /// dashes) makes it recognisable.
    pub fn new(name: &str) -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let name: String = name
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        let file = format!("mcp-testkit-signals-{}-{n}-{name}", std::process::id());
        let path = std::env::temp_dir().join(file);
        let _ = fs::remove_file(&path);
        Self { path }
    }

    /// Where the server writes its signals.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the server has raised `signal` (a whole line of the file is its text).
    pub fn raised(&self, signal: StdioSignal<'_>) -> bool {
        let wanted = signal.to_string();
        fs::read_to_string(&self.path).is_ok_and(|text| text.lines().any(|line| line == wanted))
    }
}

impl Drop for StdioSignals {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// Appends `signal` to the signal file, if there is one. A line that cannot be written is
/// dropped: the test waiting for it fails at its own bound.
fn raise(file: Option<&Path>, signal: StdioSignal<'_>) {
    let Some(path) = file else {
        return;
    };
    if let Ok(mut out) = OpenOptions::new().create(true).append(true).open(path) {
        let _ = out.write_all(format!("{signal}\n").as_bytes());
    }
}

fn era_name(era: ServerEra) -> &'static str {
    match era {
        ServerEra::Legacy => "legacy",
        ServerEra::Modern => "modern",
        ServerEra::Dual => "dual",
    }
}

fn parse_era(text: &str) -> Result<ServerEra, String> {
    match text {
        "legacy" => Ok(ServerEra::Legacy),
        "modern" => Ok(ServerEra::Modern),
        "dual" => Ok(ServerEra::Dual),
        other => Err(format!("unknown era {other:?} (legacy, modern or dual)")),
    }
}

/// What the stdio server does: the answers of a [`Script`] (era, tools, notifications,
/// progress) plus stdio's hostile modes per method. It travels to the child process as JSON
/// ([`StdioScript::to_args`], or [`STDIO_SCRIPT_ENV`]).
///
/// The server handles one message at a time, in order. A legacy server (the default) refuses
/// every request but `initialize` and `ping` before `initialize` with `-32600` "not
/// initialized", as the SDKs' stdio servers do (so a client's `server/discover` probe gets that
/// error); a modern one serves requests carrying `_meta`'s protocol version statelessly and
/// refuses `initialize` with `-32022`; a dual one chooses by the `_meta`.
///
/// ```
/// use std::time::Duration;
/// use mcp_testkit::{ServerEra, StdioHostile, StdioScript};
///
/// let script = StdioScript::new()
///     .era(ServerEra::Dual)
///     .delay("initialize", Duration::from_millis(50))
///     .hostile("tools/call", StdioHostile::HugeLine(1 << 20));
/// let json = script.to_json();
/// assert_eq!(StdioScript::from_json(&json), Ok(script.clone()));
/// let flags = ["--era", "dual", "--delay", "initialize=50", "--hostile", "tools/call=huge-line:1048576"];
/// assert_eq!(StdioScript::from_command_line(flags, None), Ok(script));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StdioScript {
    era: ServerEra,
    tool_pages: usize,
    notifications: usize,
    progress: bool,
    protocol_version: Option<String>,
    delays: BTreeMap<String, u64>,
    hostile: BTreeMap<String, StdioHostile>,
    ignore_eof: bool,
    verbose: bool,
    signal_file: Option<PathBuf>,
}

impl Default for StdioScript {
    fn default() -> Self {
        Self {
            era: ServerEra::Legacy,
            tool_pages: 1,
            notifications: 0,
            progress: true,
            protocol_version: None,
            delays: BTreeMap::new(),
            hostile: BTreeMap::new(),
            ignore_eof: false,
            verbose: false,
            signal_file: None,
        }
    }
}

impl StdioScript {
    /// The default: a legacy server with the four tools (`echo`, `add`, `sleep`, `fail`), no
    /// delays, nothing hostile, exiting when stdin closes.
    pub fn new() -> Self {
        Self::default()
    }

    /// The demo preset (like [`Script::demo`]): `initialize` delayed 300 ms,
    /// `notifications/initialized` 100 ms, no progress notifications.
    pub fn demo() -> Self {
        Self::new()
            .progress(false)
            .delay("initialize", Duration::from_millis(300))
            .delay("notifications/initialized", Duration::from_millis(100))
    }

    /// A preset by name: `default` or `demo`.
    pub fn preset(name: &str) -> Option<Self> {
        match name {
            "default" => Some(Self::new()),
            "demo" => Some(Self::demo()),
            _ => None,
        }
    }

    /// Which era(s) the server speaks (default [`ServerEra::Legacy`]).
    pub fn era(mut self, era: ServerEra) -> Self {
        self.era = era;
        self
    }

    /// Splits `tools/list` into this many pages (see [`Script::tool_pages`]).
    pub fn tool_pages(mut self, pages: usize) -> Self {
        self.tool_pages = pages.max(1);
        self
    }

    /// Writes this many `notifications/message` lines before every answer.
    pub fn notifications_before_answer(mut self, count: usize) -> Self {
        self.notifications = count;
        self
    }

    /// Whether a `tools/call` with a progress token gets `notifications/progress` lines
    /// before its answer (default on).
    pub fn progress(mut self, on: bool) -> Self {
        self.progress = on;
        self
    }

    /// Answers `initialize` with this `protocolVersion` whatever the client asked.
    pub fn protocol_version(mut self, version: impl Into<String>) -> Self {
        self.protocol_version = Some(version.into());
        self
    }

    /// Sleeps this long (whole milliseconds) before handling `method` (requests and
    /// notifications alike).
    pub fn delay(mut self, method: impl Into<String>, delay: Duration) -> Self {
        let ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        self.delays.insert(method.into(), ms);
        self
    }

    /// Misbehaves this way for every message with this JSON-RPC method (`"*"`: every method
    /// without a mode of its own). A notification has no answer to spoil: only `stall`
    /// (nothing), `trickle`, `huge-line`, `garbage`, `exit`, `slow` and `stderr-flood` do
    /// anything there.
    pub fn hostile(mut self, method: impl Into<String>, mode: StdioHostile) -> Self {
        self.hostile.insert(method.into(), mode);
        self
    }

    /// Keeps running after stdin closes (default off: the server exits 0 at EOF), so that a
    /// client has to kill it.
    pub fn ignore_eof(mut self, on: bool) -> Self {
        self.ignore_eof = on;
        self
    }

    /// Logs every message received on stderr (default off: stderr gets a line at start, one
    /// per hostile action and one at the end).
    pub fn verbose(mut self, on: bool) -> Self {
        self.verbose = on;
        self
    }

    /// Appends a line to this file for each state a test may wait for ([`StdioSignal`]; the
    /// file is created at the first). Default none. [`StdioSignals`] gives a fresh path.
    pub fn signal_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.signal_file = Some(path.into());
        self
    }

    /// The hostile mode for `method`, if any.
    pub fn hostile_for(&self, method: &str) -> Option<StdioHostile> {
        self.hostile
            .get(method)
            .or_else(|| self.hostile.get("*"))
            .copied()
    }

    /// The method after which the server stops reading ([`StdioHostile::StopReading`]).
    fn stops_reading_after(&self) -> Option<String> {
        self.hostile
            .iter()
            .find(|(_, mode)| **mode == StdioHostile::StopReading)
            .map(|(method, _)| method.clone())
    }

    /// Whether the server keeps running after stdin closes.
    pub fn ignores_eof(&self) -> bool {
        self.ignore_eof
    }

    /// The HTTP server's script with the same answers (what the stdio server dispatches with).
    pub fn answers(&self) -> Script {
        let mut script = Script::new()
            .era(self.era)
            .tool_pages(self.tool_pages)
            .notifications_before_answer(self.notifications)
            .progress(self.progress);
        if let Some(version) = &self.protocol_version {
            script = script.protocol_version(version.clone());
        }
        script
    }

    /// The script as one line of JSON, every key present (the format of `--script` and
    /// [`STDIO_SCRIPT_ENV`]).
    pub fn to_json(&self) -> String {
        let mut map = Map::new();
        map.insert("era".into(), era_name(self.era).into());
        map.insert("toolPages".into(), self.tool_pages.into());
        map.insert("notifications".into(), self.notifications.into());
        map.insert("progress".into(), self.progress.into());
        map.insert(
            "protocolVersion".into(),
            self.protocol_version
                .clone()
                .map_or(Value::Null, Value::from),
        );
        let delays = self
            .delays
            .iter()
            .map(|(m, ms)| (m.clone(), Value::from(*ms)))
            .collect();
        map.insert("delays".into(), Value::Object(delays));
        let hostile = self
            .hostile
            .iter()
            .map(|(m, mode)| (m.clone(), Value::from(mode.to_string())))
            .collect();
        map.insert("hostile".into(), Value::Object(hostile));
        map.insert("ignoreEof".into(), self.ignore_eof.into());
        map.insert("verbose".into(), self.verbose.into());
        map.insert(
            "signalFile".into(),
            self.signal_file
                .as_ref()
                .map_or(Value::Null, |path| Value::from(path.to_string_lossy())),
        );
        Value::Object(map).to_string()
    }

    /// Reads a script written by [`StdioScript::to_json`] (or by hand: every key is optional,
    /// an unknown key is an error).
    pub fn from_json(text: &str) -> Result<Self, String> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| format!("the script is not JSON: {e}"))?;
        let Value::Object(map) = value else {
            return Err("the script must be a JSON object".to_owned());
        };
        let mut script = Self::new();
        for (key, value) in map {
            let wrong = || format!("the script's {key:?} has the wrong type: {value}");
            match key.as_str() {
                "era" => script.era = parse_era(value.as_str().ok_or_else(wrong)?)?,
                "toolPages" => {
                    let pages = value.as_u64().ok_or_else(wrong)?;
                    script = script.tool_pages(usize::try_from(pages).map_err(|_| wrong())?);
                }
                "notifications" => {
                    let n = value.as_u64().ok_or_else(wrong)?;
                    script.notifications = usize::try_from(n).map_err(|_| wrong())?;
                }
                "progress" => script.progress = value.as_bool().ok_or_else(wrong)?,
                "protocolVersion" => {
                    script.protocol_version = match &value {
                        Value::Null => None,
                        Value::String(v) => Some(v.clone()),
                        _ => return Err(wrong()),
                    }
                }
                "delays" => {
                    let Value::Object(delays) = &value else {
                        return Err(wrong());
                    };
                    for (method, ms) in delays {
                        let ms = ms.as_u64().ok_or_else(wrong)?;
                        script.delays.insert(method.clone(), ms);
                    }
                }
                "hostile" => {
                    let Value::Object(modes) = &value else {
                        return Err(wrong());
                    };
                    for (method, mode) in modes {
                        let mode = mode.as_str().ok_or_else(wrong)?.parse()?;
                        script.hostile.insert(method.clone(), mode);
                    }
                }
                "ignoreEof" => script.ignore_eof = value.as_bool().ok_or_else(wrong)?,
                "verbose" => script.verbose = value.as_bool().ok_or_else(wrong)?,
                "signalFile" => {
                    script.signal_file = match &value {
                        Value::Null => None,
                        Value::String(path) => Some(PathBuf::from(path)),
                        _ => return Err(wrong()),
                    }
                }
                _ => return Err(format!("unknown key {key:?} in the script")),
            }
        }
        Ok(script)
    }

    /// The command-line arguments that give the child this script: `--script <json>`.
    pub fn to_args(&self) -> Vec<String> {
        vec!["--script".to_owned(), self.to_json()]
    }

    /// Reads the binary's command line (without the program name): the script starts from
    /// `env_script` (the value of [`STDIO_SCRIPT_ENV`], if set), then each flag applies in
    /// order (see [`STDIO_USAGE`]). `--flag=value` and `--flag value` are both accepted.
    pub fn from_command_line<I, S>(args: I, env_script: Option<&str>) -> Result<Self, String>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut script = match env_script {
            Some(text) => Self::from_json(text).map_err(|e| format!("{STDIO_SCRIPT_ENV}: {e}"))?,
            None => Self::new(),
        };
        let mut args = args.into_iter().map(Into::into);
        while let Some(arg) = args.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((flag, value)) if flag.starts_with("--") => {
                    (flag.to_owned(), Some(value.to_owned()))
                }
                _ => (arg.clone(), None),
            };
            let mut value = || {
                inline
                    .clone()
                    .or_else(|| args.next())
                    .ok_or_else(|| format!("{flag} needs a value"))
            };
            match flag.as_str() {
                "--script" => script = Self::from_json(&value()?)?,
                "--preset" => {
                    let name = value()?;
                    script = Self::preset(&name)
                        .ok_or_else(|| format!("unknown preset {name:?} (default or demo)"))?;
                }
                "--era" => script.era = parse_era(&value()?)?,
                "--hostile" => {
                    let spec = value()?;
                    let (method, mode) = spec
                        .split_once('=')
                        .ok_or_else(|| format!("--hostile takes METHOD=MODE, not {spec:?}"))?;
                    script.hostile.insert(method.to_owned(), mode.parse()?);
                }
                "--delay" => {
                    let spec = value()?;
                    let (method, ms) = spec
                        .split_once('=')
                        .ok_or_else(|| format!("--delay takes METHOD=MS, not {spec:?}"))?;
                    let ms = ms
                        .parse()
                        .map_err(|_| format!("--delay takes METHOD=MS, not {spec:?}"))?;
                    script.delays.insert(method.to_owned(), ms);
                }
                "--notifications" => {
                    let n = value()?;
                    script.notifications = n
                        .parse()
                        .map_err(|_| format!("--notifications takes a number, not {n:?}"))?;
                }
                "--tool-pages" => {
                    let n = value()?;
                    let pages = n
                        .parse()
                        .map_err(|_| format!("--tool-pages takes a number, not {n:?}"))?;
                    script = script.tool_pages(pages);
                }
                "--protocol-version" => script.protocol_version = Some(value()?),
                "--signal-file" => script.signal_file = Some(PathBuf::from(value()?)),
                "--no-progress" if inline.is_none() => script.progress = false,
                "--ignore-eof" if inline.is_none() => script.ignore_eof = true,
                "--verbose" if inline.is_none() => script.verbose = true,
                _ => return Err(format!("unknown argument {arg:?}")),
            }
        }
        Ok(script)
    }
}

/// Where the `mcp-testkit-stdio` binary is: [`STDIO_SERVER_PATH_ENV`] when set, else next to
/// the running executable, or one folder up (a test binary runs from `target/<profile>/deps/`,
/// the binary is built into `target/<profile>/`).
///
/// The binary must have been built by then. A `cargo test` (or `cargo build`) at the workspace
/// root builds it, the testkit being a default member with its own integration tests; a
/// narrower one (`cargo test -p mcp-driver-tokio`) does not, and must be preceded by
/// `cargo build -p mcp-testkit --bin mcp-testkit-stdio` (which also rebuilds a stale one).
/// Nothing is built on demand. The error says where it looked and what to run.
pub fn stdio_server_path() -> Result<PathBuf, String> {
    let name = format!("{STDIO_SERVER_BIN}{}", std::env::consts::EXE_SUFFIX);
    if let Some(path) = std::env::var_os(STDIO_SERVER_PATH_ENV) {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!(
                "{STDIO_SERVER_PATH_ENV} names {}, which is not a file",
                path.display()
            ))
        };
    }
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find the running executable ({e}) to look for {name}"))?;
    let mut tried = Vec::new();
    for dir in exe.ancestors().skip(1).take(2) {
        let candidate = dir.join(&name);
        if candidate.is_file() {
            return Ok(candidate);
        }
        tried.push(candidate.display().to_string());
    }
    Err(format!(
        "the stdio test server {name} is not built (looked for {}); build it first with \
         `cargo build -p mcp-testkit --bin {STDIO_SERVER_BIN}` (a `cargo test` at the workspace \
         root builds it), or set {STDIO_SERVER_PATH_ENV} to its path",
        tried.join(" and ")
    ))
}

/// The command that runs the stdio test server with this script: the binary found by
/// [`stdio_server_path`] and `--script <json>`.
///
/// # Panics
///
/// When the binary is not built, with [`stdio_server_path`]'s message (what to run).
///
/// ```no_run
/// use mcp_proto::SessionConfig;
/// use mcp_testkit::{StdioHostile, StdioScript, stdio_server_command};
///
/// let script = StdioScript::new().hostile("tools/call", StdioHostile::Stall);
/// let config = SessionConfig::stdio(stdio_server_command(&script));
/// # let _ = config;
/// ```
pub fn stdio_server_command(script: &StdioScript) -> StdioCommand {
    let path = stdio_server_path().unwrap_or_else(|e| panic!("{e}"));
    StdioCommand::new(path.to_string_lossy()).args(script.to_args())
}

/// One line the client wrote, or a line too long to keep.
#[derive(Debug)]
enum Input {
    Line(Vec<u8>),
    TooLong,
}

/// Reads the client's lines on a thread of their own, so the server can wait for one with a
/// deadline (a server request's answer, a trickle's next tick). The channel closes at EOF.
/// After a line whose method is `stop_after` ([`StdioHostile::StopReading`]) it takes one read
/// of the next write (never sent on: it only tells, in `signal_file`, that the write began),
/// then reads nothing more, ever, and keeps the channel open.
fn spawn_reader(
    input: impl Read + Send + 'static,
    stop_after: Option<String>,
    signal_file: Option<PathBuf>,
) -> Receiver<Input> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut reader = BufReader::new(input);
        loop {
            let mut line = Vec::new();
            let cap = MAX_INPUT_LINE as u64 + 1;
            let read = Read::take(&mut reader, cap).read_until(b'\n', &mut line);
            let input = match read {
                Ok(0) => break,
                Ok(_) if line.last() != Some(&b'\n') && line.len() > MAX_INPUT_LINE => {
                    if reader.skip_until(b'\n').is_err() {
                        break;
                    }
                    Input::TooLong
                }
                Ok(_) => {
                    while matches!(line.last(), Some(b'\n' | b'\r')) {
                        line.pop();
                    }
                    Input::Line(line)
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            let stops = match (&input, &stop_after) {
                (Input::Line(line), Some(method)) => serde_json::from_slice::<Value>(line)
                    .is_ok_and(|v| v.get("method").and_then(Value::as_str) == Some(method)),
                _ => false,
            };
            if tx.send(input).is_err() {
                break;
            }
            if stops {
                if reader.fill_buf().is_ok_and(|next| !next.is_empty()) {
                    raise(signal_file.as_deref(), StdioSignal::WriteStuck);
                }
                loop {
                    thread::park();
                }
            }
        }
    });
    rx
}

/// What happens after a message.
enum Control {
    Continue,
    Exit(i32),
}

struct StdioServer<'a, W: Write, L: Write> {
    script: &'a StdioScript,
    answers: Script,
    out: W,
    log: L,
    lines: Receiver<Input>,
    backlog: VecDeque<Input>,
    initialized: bool,
    asked: u64,
}

fn write_line(out: &mut dyn Write, bytes: &[u8]) -> io::Result<()> {
    out.write_all(bytes)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// Serves MCP over these streams with this script until `input` ends (or `output` breaks),
/// and gives the process's exit status: 0 at EOF, `CODE` for [`StdioHostile::Exit`]. With
/// [`StdioScript::ignore_eof`] it never returns after EOF. `log` gets the log lines (stderr
/// in the binary).
pub fn serve_stdio(
    script: &StdioScript,
    input: impl Read + Send + 'static,
    output: impl Write,
    log: impl Write,
) -> i32 {
    let mut server = StdioServer {
        script,
        answers: script.answers(),
        out: output,
        log,
        lines: spawn_reader(
            input,
            script.stops_reading_after(),
            script.signal_file.clone(),
        ),
        backlog: VecDeque::new(),
        initialized: false,
        asked: 0,
    };
    server.run()
}

impl<W: Write, L: Write> StdioServer<'_, W, L> {
    fn say(&mut self, text: &str) {
        let _ = writeln!(self.log, "{STDIO_SERVER_BIN}: {text}");
        let _ = self.log.flush();
    }

    fn line(&mut self, bytes: &[u8]) -> io::Result<()> {
        write_line(&mut self.out, bytes)
    }

    fn run(&mut self) -> i32 {
        let era = era_name(self.script.era);
        self.say(&format!("serving MCP over stdio ({era} era)"));
        loop {
            let next = match self.backlog.pop_front() {
                Some(input) => Some(input),
                None => self.lines.recv().ok(),
            };
            let Some(input) = next else {
                return self.end_of_input();
            };
            match self.handle(input) {
                Ok(Control::Continue) => {}
                Ok(Control::Exit(code)) => return code,
                Err(e) => {
                    self.say(&format!("stdout is closed ({e}); exiting"));
                    return 0;
                }
            }
        }
    }

    fn end_of_input(&mut self) -> i32 {
        if self.script.ignore_eof {
            self.say("stdin closed; ignoring it (ignore-eof): kill me to stop me");
            loop {
                thread::park();
            }
        }
        self.say("stdin closed; exiting");
        0
    }

    fn handle(&mut self, input: Input) -> io::Result<Control> {
        let line = match input {
            Input::Line(line) => line,
            Input::TooLong => {
                let too_long = format!("line longer than {MAX_INPUT_LINE} bytes");
                self.line(&mcp::error_envelope(&Value::Null, -32600, &too_long))?;
                return Ok(Control::Continue);
            }
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(Control::Continue);
        }
        let Ok(value) = serde_json::from_slice::<Value>(&line) else {
            self.say("a line that is not JSON; answered with a parse error");
            self.line(&mcp::error_envelope(&Value::Null, -32700, "parse error"))?;
            return Ok(Control::Continue);
        };
        let msg = Message::classify(&value);
        let label = msg.label();
        if self.script.verbose {
            let id = msg.id.as_ref().map(Value::to_string).unwrap_or_default();
            self.say(&format!("<- {label} {id}"));
        }
        match msg.kind {
            RpcKind::Batch => {
                let body = mcp::error_envelope(&Value::Null, -32600, "batches are not supported");
                self.line(&body)?;
                return Ok(Control::Continue);
            }
            RpcKind::Invalid => {
                self.line(&mcp::error_envelope(
                    &msg.answer_id(),
                    -32600,
                    "invalid request",
                ))?;
                return Ok(Control::Continue);
            }
            // An answer nobody waits for (a server request's comes while it is awaited).
            RpcKind::Response => return Ok(Control::Continue),
            RpcKind::Request | RpcKind::Notification => {}
        }
        if let Some(&ms) = self.script.delays.get(&label) {
            thread::sleep(Duration::from_millis(ms));
        }
        let hostile = self.script.hostile_for(&label);
        match hostile {
            Some(StdioHostile::Exit(code)) => {
                let _ = self.out.flush();
                self.say(&format!(
                    "hostile exit: leaving with status {code} while handling {label}"
                ));
                return Ok(Control::Exit(code));
            }
            Some(StdioHostile::Stall) => {
                self.say(&format!("stalling: {label} is never answered"));
                raise(
                    self.script.signal_file.as_deref(),
                    StdioSignal::Stalled(&label),
                );
                return Ok(Control::Continue);
            }
            Some(StdioHostile::Trickle) => return self.trickle(&msg),
            Some(StdioHostile::HugeLine(size)) => {
                self.say(&format!("a line of {size} bytes for {label}"));
                self.huge_line(&msg.answer_id(), size)?;
                return Ok(Control::Continue);
            }
            Some(StdioHostile::Slow(ms)) => thread::sleep(Duration::from_millis(ms)),
            Some(StdioHostile::StderrFlood(bytes)) => self.flood(bytes),
            Some(StdioHostile::Garbage(lines)) => {
                for i in 1..=lines {
                    let text =
                        format!("{STDIO_SERVER_BIN} banner {i}/{lines}: this line is not JSON-RPC");
                    self.line(text.as_bytes())?;
                }
            }
            _ => {}
        }
        if msg.kind == RpcKind::Request {
            self.answer(&msg, hostile)?;
        }
        Ok(Control::Continue)
    }

    /// Answers a request as the script says, after its notifications and server request.
    fn answer(&mut self, msg: &Message, hostile: Option<StdioHostile>) -> io::Result<()> {
        let id = match hostile {
            Some(StdioHostile::WrongId) => mcp::wrong_id(&msg.answer_id()),
            _ => msg.answer_id(),
        };
        let modern = match modern::judge(&self.answers, None, msg) {
            Verdict::Refuse(_, body) => return self.line(&body),
            Verdict::Modern => true,
            Verdict::Legacy => false,
        };
        let method = msg.method.as_deref().unwrap_or("");
        if !modern && !self.initialized && !matches!(method, "initialize" | "ping") {
            return self.line(&mcp::error_envelope(&id, -32600, "not initialized"));
        }
        let extra = match hostile {
            Some(StdioHostile::NotificationsFirst(n)) => n,
            _ => 0,
        };
        let notifications = self
            .answers
            .notifications_before_answer
            .saturating_add(extra);
        for i in 1..=notifications {
            self.line(&mcp::log_notification(i))?;
        }
        if let Some(StdioHostile::ServerRequest(ask)) = hostile {
            if let Some(unanswered) = self.ask(ask)? {
                return self.line(&mcp::error_envelope(&id, -32000, &unanswered));
            }
        }
        let sleep = |d: Duration| {
            thread::sleep(d);
            true
        };
        let out = &mut self.out;
        let mut progress = |bytes: &[u8]| write_line(out, bytes);
        let mut env = Env {
            script: &self.answers,
            sleep: &sleep,
            progress: Some(&mut progress),
            modern,
        };
        let answer = mcp::answer(msg, &id, &mut env)?;
        self.line(&answer)?;
        if method == "initialize" && !modern {
            self.initialized = true;
        }
        Ok(())
    }

    /// Sends a server request and waits for the client's answer line: `Some(reason)` when none
    /// came in time. Other lines read meanwhile are handled afterwards, in order.
    fn ask(&mut self, ask: ServerAsk) -> io::Result<Option<String>> {
        self.asked += 1;
        let id = format!("srv-{}", self.asked);
        let request = match ask {
            ServerAsk::Ping => ServerRequest::ping(id),
            ServerAsk::Elicitation => ServerRequest::elicit_name(id, "world"),
        };
        self.line(&serde_json::to_vec(request.message()).unwrap_or_default())?;
        let timeout = request.timeout();
        let deadline = Instant::now() + timeout;
        let unanswered = |why: &str| {
            Some(format!(
                "no answer to the server request {} {why}",
                payload::id_json(request.id())
            ))
        };
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(unanswered(&format!("within {timeout:?}")));
            }
            match self.lines.recv_timeout(left) {
                Ok(Input::Line(line)) => {
                    let answered = serde_json::from_slice::<Value>(&line)
                        .map(|v| Message::classify(&v))
                        .is_ok_and(|m| {
                            m.kind == RpcKind::Response && m.id.as_ref() == Some(request.id())
                        });
                    if answered {
                        return Ok(None);
                    }
                    self.backlog.push_back(Input::Line(line));
                }
                Ok(other) => self.backlog.push_back(other),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    return Ok(unanswered("(stdin closed)"));
                }
            }
        }
    }

    /// At least `bytes` bytes of log lines on stderr.
    fn flood(&mut self, bytes: usize) {
        let line = format!("{STDIO_SERVER_BIN}: stderr flood {}\n", "~".repeat(100));
        let mut written = 0;
        while written < bytes {
            if self.log.write_all(line.as_bytes()).is_err() {
                return;
            }
            written += line.len();
        }
        let _ = self.log.flush();
    }

    /// One line of exactly `size` bytes (and its newline), in blocks.
    fn huge_line(&mut self, id: &Value, size: usize) -> io::Result<()> {
        let json = payload::oversize_payload(id, 0).len();
        let line = if size as u64 >= json {
            payload::oversize_payload(id, size)
        } else {
            Payload(vec![Piece::Repeat(b'x', size)])
        };
        let out = &mut self.out;
        line.for_each_chunk(&mut |chunk| out.write_all(chunk))?;
        self.line(b"")
    }

    /// The start of the answer, [`TRICKLE_BYTES`] at a time, forever; lines read meanwhile are
    /// dropped (no answer can follow an unfinished line). Ends when stdin closes.
    fn trickle(&mut self, msg: &Message) -> io::Result<Control> {
        self.say(&format!(
            "trickling: the answer to {} never ends",
            msg.label()
        ));
        let prefix = payload::text_answer_prefix(&msg.answer_id());
        let mut sent = 0;
        loop {
            let end = (sent + TRICKLE_BYTES).min(prefix.len());
            if sent < end {
                self.out.write_all(&prefix[sent..end])?;
                sent = end;
            } else {
                self.out.write_all(&[b'x'; TRICKLE_BYTES])?;
            }
            self.out.flush()?;
            let tick = Instant::now() + TRICKLE_INTERVAL;
            loop {
                let left = tick.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                match self.lines.recv_timeout(left) {
                    Ok(_) | Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => {
                        return Ok(Control::Exit(self.end_of_input()));
                    }
                }
            }
        }
    }
}

/// The environment variable [`running_processes_tagged`] looks for: give a test's child
/// processes `MCP_TESTKIT_TAG=<tag>` (e.g. with `StdioCommand::env`, or `mcp-call --env`).
pub const PROCESS_TAG_ENV: &str = "MCP_TESTKIT_TAG";

/// How many running processes (zombies excluded) carry [`PROCESS_TAG_ENV`]`=tag` in their
/// environment: a test's check that no server it started is left behind. Linux only (it
/// reads `/proc`); elsewhere 0.
pub fn running_processes_tagged(tag: &str) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let needle = format!("{PROCESS_TAG_ENV}={tag}");
    entries
        .flatten()
        .filter(|entry| {
            let path = entry.path();
            let environ = std::fs::read(path.join("environ")).unwrap_or_default();
            let tagged = environ
                .split(|b| *b == 0)
                .any(|var| var == needle.as_bytes());
            // A zombie keeps its /proc entry (state Z) but is not running.
            let running = std::fs::read_to_string(path.join("stat"))
                .ok()
                .and_then(|stat| {
                    stat.rsplit(')')
                        .next()
                        .map(|s| !s.trim_start().starts_with('Z'))
                })
                .unwrap_or(false);
            tagged && running
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_modes_read_what_they_write() {
        let modes = [
            StdioHostile::Stall,
            StdioHostile::Trickle,
            StdioHostile::HugeLine(10),
            StdioHostile::Garbage(2),
            StdioHostile::Exit(-1),
            StdioHostile::NotificationsFirst(3),
            StdioHostile::ServerRequest(ServerAsk::Ping),
            StdioHostile::ServerRequest(ServerAsk::Elicitation),
            StdioHostile::WrongId,
            StdioHostile::Slow(5),
            StdioHostile::StderrFlood(1024),
            StdioHostile::StopReading,
        ];
        for mode in modes {
            assert_eq!(mode.to_string().parse::<StdioHostile>(), Ok(mode));
        }
        assert_eq!("garbage".parse(), Ok(StdioHostile::Garbage(1)));
        assert_eq!(
            "server-request".parse(),
            Ok(StdioHostile::ServerRequest(ServerAsk::Ping))
        );
        assert!("exit".parse::<StdioHostile>().is_err());
        assert!("stall:3".parse::<StdioHostile>().is_err());
        assert!("explode".parse::<StdioHostile>().is_err());
    }

    #[test]
    fn scripts_travel_as_json_and_flags_apply_over_the_environment() {
        let script = StdioScript::demo()
            .era(ServerEra::Modern)
            .tool_pages(3)
            .notifications_before_answer(2)
            .protocol_version("2025-06-18")
            .hostile("ping", StdioHostile::Garbage(4))
            .ignore_eof(true)
            .verbose(true)
            .signal_file("/tmp/signals");
        assert_eq!(
            StdioScript::from_json(&script.to_json()),
            Ok(script.clone())
        );
        let from_env = StdioScript::from_command_line(
            ["--era=dual", "--no-progress"],
            Some(&script.to_json()),
        )
        .unwrap();
        assert_eq!(
            from_env,
            script.clone().era(ServerEra::Dual).progress(false)
        );
        assert_eq!(
            StdioScript::from_command_line(script.to_args(), None),
            Ok(script)
        );
        assert!(StdioScript::from_command_line(["--bogus"], None).is_err());
        assert!(StdioScript::from_command_line(["--era"], None).is_err());
        assert!(StdioScript::from_json(r#"{"eras":"modern"}"#).is_err());
        assert_eq!(
            StdioScript::from_command_line(["--preset", "demo"], None),
            Ok(StdioScript::demo())
        );
    }

    #[test]
    fn a_huge_line_has_exactly_its_size_and_is_json_when_it_can_be() {
        for size in [0, 5, 88, 89, 90, 70_000, 200_000] {
            let (tx, rx) = mpsc::channel();
            drop(tx);
            let script = StdioScript::new();
            let mut server = StdioServer {
                script: &script,
                answers: script.answers(),
                out: Vec::new(),
                log: Vec::new(),
                lines: rx,
                backlog: VecDeque::new(),
                initialized: false,
                asked: 0,
            };
            server.huge_line(&Value::from(7), size).unwrap();
            let out = server.out;
            assert_eq!(out.len(), size + 1, "size {size}");
            assert_eq!(out.last(), Some(&b'\n'));
            if size as u64 >= payload::oversize_payload(&Value::from(7), 0).len() {
                let answer: Value = serde_json::from_slice(&out).unwrap();
                assert_eq!(answer["id"], 7);
            }
        }
    }
}
