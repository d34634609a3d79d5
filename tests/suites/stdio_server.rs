//! The stdio test server (`mcp-testkit-stdio`) as a child process: lines written to its stdin,
//! lines read from its stdout on a reader thread (every wait bounded, no sleep used to
//! synchronise), its exit status and stderr.

use mcp_proto::driver::Input;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use mcp_testkit::{
    STDIO_SCRIPT_ENV, ServerAsk, ServerEra, StdioHostile, StdioScript, StdioSignal, StdioSignals,
    stdio_server_command, stdio_server_path,
};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_mcp-testkit-stdio");
/// The bound on what must happen.
const WAIT: Duration = Duration::from_secs(10);
/// How long something that must not happen is watched for.
const QUIET: Duration = Duration::from_millis(500);
/// Lines longer than this are only measured by the reader, not kept.
const KEEP: usize = 1 << 20;
/// The modern version, in `_meta`.
const MODERN: &str = "2026-07-28";

/// What the reader thread saw on the child's stdout.
#[derive(Debug)]
enum Out {
    /// A complete line (without its newline).
    Line(Vec<u8>),
    /// A complete line longer than [`KEEP`]: its length and first bytes.
    Long { len: usize, head: Vec<u8> },
    /// An unfinished line of this many bytes so far.
    Partial(usize),
    /// stdout closed.
    Eof,
}

fn read_stdout(mut stdout: ChildStdout, tx: &Sender<Out>) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut line = Vec::new();
    let mut len = 0usize;
    loop {
        let n = match stdout.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for &byte in &buf[..n] {
            if byte == b'\n' {
                let out = if len <= KEEP {
                    Out::Line(std::mem::take(&mut line))
                } else {
                    Out::Long {
                        len,
                        head: std::mem::take(&mut line),
                    }
                };
                len = 0;
                if tx.send(out).is_err() {
                    return;
                }
            } else {
                len += 1;
                if len <= KEEP {
                    line.push(byte);
                } else if len == KEEP + 1 {
                    line.truncate(256);
                }
            }
        }
        if len > 0 && tx.send(Out::Partial(len)).is_err() {
            return;
        }
    }
    let _ = tx.send(Out::Eof);
}

/// A running `mcp-testkit-stdio`; killed when dropped.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    out: Receiver<Out>,
    stderr: Option<JoinHandle<String>>,
}

impl Server {
    fn start(script: &StdioScript) -> Self {
        let mut command = Command::new(BIN);
        command.args(script.to_args());
        Self::spawn(command)
    }

    fn spawn(mut command: Command) -> Self {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("the stdio server starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, out) = mpsc::channel();
        thread::spawn(move || read_stdout(stdout, &tx));
        let mut stderr = child.stderr.take().unwrap();
        let stderr = thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        Self {
            stdin: child.stdin.take(),
            child,
            out,
            stderr: Some(stderr),
        }
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    fn send(&mut self, message: &Value) {
        self.send_raw(format!("{message}\n").as_bytes());
    }

    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.message()
    }

    fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// The next thing on stdout within `within` (partial lines included).
    fn next(&self, within: Duration) -> Option<Out> {
        match self.out.recv_timeout(within) {
            Ok(out) => Some(out),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => Some(Out::Eof),
        }
    }

    /// The next complete line within [`WAIT`].
    fn line(&self) -> Vec<u8> {
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next(left) {
                Some(Out::Line(line)) => return line,
                Some(Out::Partial(_)) => {}
                other => panic!("expected a line, got {other:?}"),
            }
        }
    }

    /// The next line, which must be JSON.
    fn message(&self) -> Value {
        let line = self.line();
        serde_json::from_slice(&line)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&line)))
    }

    /// Nothing but partial lines on stdout for [`QUIET`]; gives the longest partial line seen.
    fn quiet(&self) -> usize {
        let deadline = Instant::now() + QUIET;
        let mut partial = 0;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return partial;
            }
            match self.next(left) {
                None => return partial,
                Some(Out::Partial(n)) => partial = partial.max(n),
                Some(other) => panic!("expected nothing, got {other:?}"),
            }
        }
    }

    /// Waits (bounded) for stdout to close and the process to end: its status and stderr.
    fn exit(&mut self) -> (ExitStatus, String) {
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next(left) {
                Some(Out::Eof) => break,
                Some(_) => {}
                None => panic!("the server did not close its stdout within {WAIT:?}"),
            }
        }
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "the server did not exit");
            thread::sleep(Duration::from_millis(5));
        };
        let stderr = self.stderr.take().unwrap().join().unwrap();
        (status, stderr)
    }

    fn handshake(&mut self) -> Value {
        let answer = self.request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "stdio-suite", "version": "1"}}),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        answer
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn echo(text: &str) -> Value {
    json!({"name": "echo", "arguments": {"text": text}})
}

fn meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "stdio-suite", "version": "1"}})
}

fn text(answer: &Value) -> &str {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {answer}"))
}

/// Waits (bounded by [`WAIT`]) for a state of the server: true once `reached` holds.
fn eventually(reached: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + WAIT;
    while !reached() {
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(5));
    }
    true
}

fn legacy_with(method: &str, mode: StdioHostile) -> Server {
    let mut server = Server::start(&StdioScript::new().hostile(method, mode));
    server.handshake();
    server
}

#[test]
fn a_legacy_handshake_then_calls_and_a_clean_exit_at_eof() {
    let mut server = Server::start(&StdioScript::new());
    let init = server.handshake();
    assert_eq!(init["id"], 1);
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(init["result"]["serverInfo"]["name"], "mcp-testkit");
    let list = server.request(2, "tools/list", json!({}));
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["echo", "add", "sleep", "fail"]);
    let call = server.request(3, "tools/call", echo("hi"));
    assert_eq!((call["id"].clone(), text(&call)), (json!(3), "hi"));
    assert!(call["result"].get("resultType").is_none(), "{call}");
    let sum = server.request(
        4,
        "tools/call",
        json!({"name": "add", "arguments": {"a": 2, "b": 3}}),
    );
    assert_eq!(text(&sum), "5");
    assert_eq!(server.request(5, "ping", json!({}))["result"], json!({}));
    server.close_stdin();
    let (status, stderr) = server.exit();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("stdin closed; exiting"), "{stderr}");
}

#[test]
fn a_call_with_a_progress_token_gets_progress_lines_before_its_answer() {
    let mut server = Server::start(&StdioScript::new());
    server.handshake();
    let mut params = echo("p");
    params["_meta"] = json!({"progressToken": "tok"});
    let first = server.request(2, "tools/call", params);
    assert_eq!(first["method"], "notifications/progress");
    assert_eq!(first["params"]["progressToken"], "tok");
    assert_eq!(server.message()["params"]["progress"], 2);
    assert_eq!(server.message()["params"]["progress"], 3);
    assert_eq!(text(&server.message()), "p");
}

#[test]
fn a_modern_server_answers_discover_and_stateless_calls_and_refuses_initialize() {
    let mut server = Server::start(&StdioScript::new().era(ServerEra::Modern));
    let discover = server.request(1, "server/discover", json!({"_meta": meta()}));
    assert_eq!(discover["result"]["supportedVersions"], json!([MODERN]));
    assert_eq!(discover["result"]["resultType"], "complete");
    let mut params = echo("m");
    params["_meta"] = meta();
    let call = server.request(2, "tools/call", params);
    assert_eq!(text(&call), "m");
    assert_eq!(call["result"]["resultType"], "complete");
    let init = server.request(
        3,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "old", "version": "1"}}),
    );
    assert_eq!(init["error"]["code"], -32022, "{init}");
    assert_eq!(init["error"]["data"]["supported"], json!([MODERN]));
    let bare = server.request(4, "tools/call", echo("no meta"));
    assert_eq!(bare["error"]["code"], -32020, "{bare}");
}

#[test]
fn a_legacy_server_refuses_discover_before_initialize_as_the_sdks_do() {
    let mut server = Server::start(&StdioScript::new());
    let refused = server.request(0, "server/discover", json!({"_meta": meta()}));
    assert_eq!(refused["id"], 0);
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert_eq!(refused["error"]["message"], "not initialized");
    let mut params = echo("early");
    params["_meta"] = meta();
    let early = server.request(1, "tools/call", params);
    assert_eq!(early["error"]["message"], "not initialized");
    // ping is served before the handshake; after it, discover is an unknown method.
    assert_eq!(server.request(2, "ping", json!({}))["result"], json!({}));
    server.handshake();
    let unknown = server.request(3, "server/discover", json!({"_meta": meta()}));
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
}

#[test]
fn a_dual_server_serves_both_eras_by_the_meta() {
    let mut server = Server::start(&StdioScript::new().era(ServerEra::Dual));
    let discover = server.request(1, "server/discover", json!({"_meta": meta()}));
    assert_eq!(discover["result"]["supportedVersions"], json!([MODERN]));
    let init = server.handshake();
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    let legacy = server.request(2, "tools/call", echo("old"));
    assert_eq!(text(&legacy), "old");
    assert!(legacy["result"].get("resultType").is_none());
    let mut params = echo("new");
    params["_meta"] = meta();
    let modern = server.request(3, "tools/call", params);
    assert_eq!(modern["result"]["resultType"], "complete");
}

#[test]
fn stall_reads_the_request_and_never_answers_it_but_serves_the_next() {
    let mut server = legacy_with("tools/call", StdioHostile::Stall);
    server.send(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": echo("x")}));
    assert_eq!(server.quiet(), 0);
    let ping = server.request(8, "ping", json!({}));
    assert_eq!(ping["id"], 8);
    server.close_stdin();
    let (status, stderr) = server.exit();
    assert!(status.success());
    assert!(stderr.contains("stalling: tools/call"), "{stderr}");
}

/// A server misbehaving `mode` on `method`, raising its signals in a fresh file, past its
/// handshake and a `ping` (id 2) it answered.
fn signalling(method: &str, mode: StdioHostile) -> (Server, StdioSignals) {
    let signals = StdioSignals::new(method);
    let script = StdioScript::new()
        .hostile(method, mode)
        .signal_file(signals.path());
    let mut server = Server::start(&script);
    server.handshake();
    assert_eq!(server.request(2, "ping", json!({}))["id"], 2);
    (server, signals)
}

#[test]
fn a_stall_is_signalled_once_its_request_is_read() {
    let (mut server, signals) = signalling("tools/call", StdioHostile::Stall);
    assert!(!signals.raised(StdioSignal::Stalled("tools/call")));
    server.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": echo("x")}));
    assert!(eventually(
        || signals.raised(StdioSignal::Stalled("tools/call"))
    ));
    assert_eq!(server.quiet(), 0, "the stalled call is never answered");
}

#[test]
fn stop_reading_signals_once_the_next_write_begins_and_never_reads_it() {
    // The message it stops after (the ping) is handled as usual.
    let (mut server, signals) = signalling("ping", StdioHostile::StopReading);
    assert!(
        !signals.raised(StdioSignal::WriteStuck),
        "nothing was written since"
    );
    // A line far longer than the pipe holds, written on a thread of its own: it cannot end.
    let mut stdin = server.stdin.take().expect("stdin is open");
    let writer = thread::spawn(move || {
        let params = echo(&"x".repeat(256 * 1024));
        let line = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params});
        stdin.write_all(format!("{line}\n").as_bytes())
    });
    assert!(eventually(|| signals.raised(StdioSignal::WriteStuck)));
    assert_eq!(
        server.quiet(),
        0,
        "the call is never read, so never answered"
    );
    assert!(!writer.is_finished(), "the write ended: the server read it");
    // Killed, the server's end of the pipe closes and the write fails.
    drop(server);
    assert!(writer.join().unwrap().is_err());
}

#[test]
fn trickle_writes_a_line_that_grows_and_never_ends_until_stdin_closes() {
    let mut server = legacy_with("tools/call", StdioHostile::Trickle);
    server.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": echo("x")}));
    // 200 ms per 3 bytes: within QUIET, a partial line, never a complete one.
    let first = server.quiet();
    let second = server.quiet();
    assert!(first > 0 && second > first, "{first} then {second}");
    server.close_stdin();
    let (status, _) = server.exit();
    assert!(status.success());
}

#[test]
fn huge_line_is_exactly_its_size_streamed_without_the_memory() {
    const SIZE: usize = 64 << 20;
    let mut server = legacy_with("tools/call", StdioHostile::HugeLine(SIZE));
    server.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": echo("x")}));
    let deadline = Instant::now() + WAIT;
    let (len, head) = loop {
        match server.next(deadline.saturating_duration_since(Instant::now())) {
            Some(Out::Partial(_)) => {}
            Some(Out::Long { len, head }) => break (len, head),
            other => panic!("expected a huge line, got {other:?}"),
        }
    };
    assert_eq!(len, SIZE);
    assert!(
        head.starts_with(br#"{"jsonrpc":"2.0","id":2,"result":{"content":"#),
        "{}",
        String::from_utf8_lossy(&head)
    );
    #[cfg(target_os = "linux")]
    {
        let status = std::fs::read_to_string(format!("/proc/{}/status", server.child.id()))
            .expect("the server is still running");
        let peak_kib: usize = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmHWM");
        assert!(
            peak_kib * 1024 < SIZE / 4,
            "peak resident memory {peak_kib} KiB for a line of {SIZE} bytes"
        );
    }
    // The stream is still in step: the next answer is the next line.
    assert_eq!(server.request(3, "ping", json!({}))["id"], 3);
}

#[test]
fn a_short_huge_line_is_still_one_json_answer_of_that_size() {
    let mut server = legacy_with("tools/call", StdioHostile::HugeLine(1000));
    server.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": echo("x")}));
    let line = server.line();
    assert_eq!(line.len(), 1000);
    let answer: Value = serde_json::from_slice(&line).unwrap();
    assert_eq!(answer["id"], 2);
}

#[test]
fn garbage_lines_come_before_the_answer() {
    let mut server = legacy_with("tools/call", StdioHostile::Garbage(2));
    server.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": echo("g")}));
    for _ in 0..2 {
        let line = server.line();
        assert!(serde_json::from_slice::<Value>(&line).is_err());
        assert!(String::from_utf8_lossy(&line).contains("banner"));
    }
    assert_eq!(text(&server.message()), "g");
}

#[test]
fn exit_mid_call_leaves_its_status_and_last_words() {
    let mut server = legacy_with("tools/call", StdioHostile::Exit(3));
    server.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": echo("x")}));
    let (status, stderr) = server.exit();
    assert_eq!(status.code(), Some(3));
    assert!(
        stderr.contains("hostile exit: leaving with status 3 while handling tools/call"),
        "{stderr}"
    );
}

#[test]
fn notifications_first_come_before_the_answer() {
    let mut server = legacy_with("tools/call", StdioHostile::NotificationsFirst(3));
    server.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": echo("n")}));
    for i in 1..=3 {
        let note = server.message();
        assert_eq!(note["method"], "notifications/message");
        assert_eq!(note["params"]["data"], format!("notification {i}"));
    }
    assert_eq!(text(&server.message()), "n");
}

#[test]
fn a_server_request_is_answered_by_the_client_before_the_call_is() {
    for (ask, method) in [
        (ServerAsk::Ping, "ping"),
        (ServerAsk::Elicitation, "elicitation/create"),
    ] {
        let mut server = legacy_with("tools/call", StdioHostile::ServerRequest(ask));
        server.send(
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": echo("after")}),
        );
        let request = server.message();
        assert_eq!(request["method"], method);
        assert_eq!(request["id"], "srv-1");
        // Another message meanwhile is served after the call.
        server.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}));
        assert_eq!(server.quiet(), 0);
        let result = match ask {
            ServerAsk::Ping => json!({}),
            ServerAsk::Elicitation => json!({"action": "accept", "content": {"name": "world"}}),
        };
        server.send(&json!({"jsonrpc": "2.0", "id": "srv-1", "result": result}));
        assert_eq!(text(&server.message()), "after");
        assert_eq!(server.message()["id"], 3);
    }
}

#[test]
fn wrong_id_answers_with_another_id() {
    let mut server = legacy_with("tools/call", StdioHostile::WrongId);
    let answer = server.request(2, "tools/call", echo("w"));
    assert_eq!(answer["id"], 1002);
    assert_eq!(text(&answer), "w");
}

#[test]
fn slow_answers_after_its_delay_and_keeps_the_order() {
    let mut server = legacy_with("tools/call", StdioHostile::Slow(300));
    let sent = Instant::now();
    server.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": echo("s")}));
    server.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}));
    let answer = server.message();
    assert!(sent.elapsed() >= Duration::from_millis(300));
    assert_eq!(text(&answer), "s");
    assert_eq!(server.message()["id"], 3);
}

#[test]
fn stderr_flood_writes_past_a_pipe_buffer_before_the_answer() {
    // 1 MiB: far past a pipe's buffer, so the answer comes only because stderr is drained.
    let mut server = legacy_with("tools/call", StdioHostile::StderrFlood(1 << 20));
    assert_eq!(text(&server.request(2, "tools/call", echo("f"))), "f");
    server.close_stdin();
    let (status, stderr) = server.exit();
    assert!(status.success());
    assert!(stderr.len() >= 1 << 20, "{} bytes", stderr.len());
}

#[test]
fn a_mode_for_every_method_yields_to_a_method_of_its_own() {
    let script = StdioScript::new()
        .hostile("*", StdioHostile::WrongId)
        .hostile("tools/call", StdioHostile::Garbage(1));
    let mut server = Server::start(&script);
    assert_eq!(server.handshake()["id"], 1001);
    server.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": echo("own")}));
    assert!(serde_json::from_slice::<Value>(&server.line()).is_err());
    let answer = server.message();
    assert_eq!((answer["id"].clone(), text(&answer)), (json!(2), "own"));
}

#[test]
fn ignore_eof_keeps_running_after_stdin_closes_until_killed() {
    let mut server = Server::start(&StdioScript::new().ignore_eof(true));
    assert_eq!(server.request(1, "ping", json!({}))["id"], 1);
    server.close_stdin();
    assert_eq!(server.quiet(), 0);
    assert!(server.child.try_wait().unwrap().is_none(), "it exited");
    server.child.kill().unwrap();
    let (status, stderr) = server.exit();
    assert!(!status.success());
    assert!(stderr.contains("ignoring it (ignore-eof)"), "{stderr}");
}

#[test]
fn the_environment_gives_the_script_and_flags_apply_on_top() {
    let mut command = Command::new(BIN);
    command
        .env(
            STDIO_SCRIPT_ENV,
            StdioScript::new().era(ServerEra::Modern).to_json(),
        )
        .args([
            "--notifications",
            "1",
            "--hostile",
            "server/discover=wrong-id",
        ]);
    let mut server = Server::spawn(command);
    let note = server.request(1, "server/discover", json!({"_meta": meta()}));
    assert_eq!(note["method"], "notifications/message");
    let discover = server.message();
    assert_eq!(discover["id"], 1001);
    assert_eq!(discover["result"]["supportedVersions"], json!([MODERN]));
}

#[test]
fn a_bad_command_line_exits_2_with_the_usage() {
    let output = Command::new(BIN)
        .args(["--hostile", "tools/call=explode"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("unknown hostile mode"), "{stderr}");
    assert!(stderr.contains("usage: mcp-testkit-stdio"), "{stderr}");
    let help = Command::new(BIN).arg("--help").output().unwrap();
    assert!(help.status.success());
    assert!(String::from_utf8_lossy(&help.stdout).contains("--ignore-eof"));
}

#[test]
fn the_helper_finds_the_binary_and_builds_its_command() {
    let found = stdio_server_path().unwrap();
    assert_eq!(
        found.canonicalize().unwrap(),
        Path::new(BIN).canonicalize().unwrap()
    );
    let script = StdioScript::new().hostile("tools/call", StdioHostile::WrongId);
    let command = stdio_server_command(&script);
    assert_eq!(Path::new(command.program()), found);
    assert_eq!(command.arguments(), script.to_args());
    let mut child = Command::new(command.program());
    child.args(command.arguments());
    let mut server = Server::spawn(child);
    server.handshake();
    assert_eq!(server.request(2, "tools/call", echo("h"))["id"], 1002);
}

/// The core's stdio operation against the real binary, through a minimal blocking driver
/// written here (the real drivers are not this suite's business): every leg written as one
/// line, every stdout line fed back, the process's end reported with its status and stderr.
mod core {
    use super::*;
    use mcp_proto::driver::LegKind;
    use mcp_proto::driver::{Operation, Output, ProcessExit};
    use mcp_proto::{Budget, Era, Error, Event, Outcome, Session, SessionConfig, StdioCommand};
    use serde_json::Map;

    struct Run {
        legs: Vec<&'static str>,
        events: Vec<Event>,
        result: Result<Outcome, Error>,
    }

    /// A session with the stdio server, and the process it runs.
    struct Client {
        command: StdioCommand,
        session: Session,
        process: Option<Server>,
    }

    impl Client {
        fn new(script: &StdioScript, seconds: u64) -> Self {
            Self::with(script, |config| {
                config.with_budget(Budget::from_secs(seconds))
            })
        }

        fn with(script: &StdioScript, f: impl FnOnce(SessionConfig) -> SessionConfig) -> Self {
            let command = stdio_server_command(script);
            let config = f(SessionConfig::stdio(command.clone()));
            Self {
                command,
                session: Session::new(config),
                process: None,
            }
        }

        fn call(&mut self, text: &str) -> Run {
            let mut args = Map::new();
            args.insert("text".into(), text.into());
            let op = self.session.call_tool("echo", args, Instant::now());
            drive(&mut self.session, op, &self.command, &mut self.process)
        }

        fn close(&mut self) -> Run {
            let op = self.session.close(Instant::now());
            drive(&mut self.session, op, &self.command, &mut self.process)
        }
    }

    fn ended(server: &mut Server) -> ProcessExit {
        let (status, stderr) = server.exit();
        ProcessExit {
            status: status.code(),
            stderr,
        }
    }

    fn drive(
        session: &mut Session,
        mut op: Operation,
        command: &StdioCommand,
        process: &mut Option<Server>,
    ) -> Run {
        let (mut legs, mut events) = (Vec::new(), Vec::new());
        loop {
            let now = Instant::now();
            match op.poll_output(now) {
                Output::Update(update) => session.apply(update),
                Output::Transmit(leg) => {
                    legs.push(leg.kind.label());
                    match leg.kind {
                        LegKind::Spawn => {
                            let mut child = Command::new(command.program());
                            child.args(command.arguments());
                            *process = Some(Server::spawn(child));
                            op.handle_input(Input::Sent { leg: leg.id }, Instant::now());
                        }
                        LegKind::Shutdown => {
                            let server = process.as_mut().expect("a process to shut down");
                            server.close_stdin();
                            let exit = ended(server);
                            *process = None;
                            op.handle_input(Input::Exit(&exit), Instant::now());
                        }
                        _ => {
                            let server = process.as_mut().expect("a running process");
                            // The body is the line, newline included.
                            server.send_raw(leg.request.body());
                            op.handle_input(Input::Sent { leg: leg.id }, Instant::now());
                        }
                    }
                }
                Output::Wait(until) | Output::AwaitSession(until) => {
                    let left = until.saturating_duration_since(now);
                    let Some(server) = process.as_mut() else {
                        thread::sleep(left);
                        op.handle_input(Input::Timeout, Instant::now());
                        continue;
                    };
                    match server.next(left) {
                        Some(Out::Line(mut line)) => {
                            line.push(b'\n');
                            op.handle_input(Input::Stdout(&line), Instant::now());
                        }
                        Some(Out::Eof) => {
                            let exit = ended(server);
                            *process = None;
                            op.handle_input(Input::Exit(&exit), Instant::now());
                        }
                        Some(Out::Partial(_) | Out::Long { .. }) => {}
                        None => {
                            op.handle_input(Input::Timeout, Instant::now());
                        }
                    }
                }
                Output::Event(event) => events.push(event),
                Output::Request(request) => {
                    op.handle_input(request.reply_from(op.session_config()), Instant::now());
                }
                Output::LegEnded(_) => {}
                Output::Authorize(_) => {
                    op.handle_input(Input::NoAuthorizer, Instant::now());
                }
                Output::Done(result) => {
                    return Run {
                        legs,
                        events,
                        result,
                    };
                }
            }
        }
    }

    fn text(run: Run) -> String {
        match run.result {
            Ok(outcome) => outcome.into_call().expect("a call's outcome").text(),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn a_legacy_server_refuses_the_probe_and_the_core_falls_back_to_the_handshake() {
        let mut client = Client::new(&StdioScript::new(), 10);
        let run = client.call("hi");
        assert_eq!(
            run.legs,
            [
                "spawn",
                "server/discover",
                "initialize",
                "notifications/initialized",
                "tools/call"
            ]
        );
        assert_eq!(text(run), "hi");
        assert_eq!(client.session.era(), Some(Era::Legacy));
        let run = client.call("again");
        assert_eq!(run.legs, ["tools/call"]);
        assert_eq!(text(run), "again");
        let run = client.close();
        assert_eq!(run.legs, ["shutdown"]);
        assert!(run.result.is_ok(), "{:?}", run.result.err());
        assert!(client.process.is_none());
    }

    #[test]
    fn a_modern_server_answers_the_probe_and_the_call_follows() {
        let mut client = Client::new(&StdioScript::new().era(ServerEra::Modern), 10);
        let run = client.call("m");
        assert_eq!(run.legs, ["spawn", "server/discover", "tools/call"]);
        assert_eq!(text(run), "m");
        assert_eq!(client.session.era(), Some(Era::Modern));
    }

    #[test]
    fn a_banner_is_noise_and_notifications_are_events() {
        let script = StdioScript::new()
            .hostile("tools/call", StdioHostile::Garbage(1))
            .notifications_before_answer(1);
        let mut client = Client::new(&script, 10);
        let run = client.call("n");
        assert!(
            run.events
                .iter()
                .any(|e| matches!(e, Event::StdoutNoise { line } if line.contains("banner"))),
            "{:?}",
            run.events
        );
        assert!(
            run.events.iter().any(
                |e| matches!(e, Event::Notification(n) if n.method == "notifications/message")
            )
        );
        assert_eq!(text(run), "n");
    }

    #[test]
    fn a_server_that_exits_mid_call_is_named_with_its_status_and_last_words() {
        let script = StdioScript::new().hostile("tools/call", StdioHostile::Exit(3));
        let mut client = Client::new(&script, 10);
        let run = client.call("x");
        match run.result {
            Err(Error::ServerExited {
                method,
                status,
                stderr,
                ..
            }) => {
                assert_eq!((method, status), ("tools/call", Some(3)));
                assert!(stderr.contains("hostile exit"), "{stderr}");
            }
            other => panic!("{other:?}"),
        }
        assert!(!client.session.process_running());
    }

    #[test]
    fn a_stalled_call_times_out_at_the_budget() {
        let script = StdioScript::new().hostile("tools/call", StdioHostile::Stall);
        let mut client = Client::new(&script, 2);
        let started = Instant::now();
        let run = client.call("x");
        assert!(
            matches!(
                run.result,
                Err(Error::LegTimedOut {
                    method: "tools/call",
                    ..
                })
            ),
            "{:?}",
            run.result
        );
        assert!(started.elapsed() < Duration::from_secs(3));
    }

    #[test]
    fn a_line_past_the_cap_ends_the_call_with_its_own_error() {
        let script = StdioScript::new().hostile("tools/call", StdioHostile::HugeLine(4096));
        let mut client = Client::with(&script, |config| {
            config
                .with_budget(Budget::from_secs(10))
                .with_body_cap(1024)
        });
        let run = client.call("x");
        assert!(
            matches!(run.result, Err(Error::AnswerTooLarge { limit: 1024, .. })),
            "{:?}",
            run.result
        );
    }
}
