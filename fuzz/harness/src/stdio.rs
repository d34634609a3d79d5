//! The stdio transport of `mcp-proto`: operations on a local server's process, whose stdout
//! is the fuzzer's, on a manual clock.
//!
//! The harness is the driver the operation's module docs describe, with the process played by
//! the fuzzer: a spawn starts it (or fails), a written line is taken whole (or the write
//! blocks until the leg's end, or the pipe is found closed), and while the operation waits the
//! process writes any bytes on stdout, in any pieces, or exits, at any moment before the wait
//! ends; time moves only as far as the operation asked to wait. Several operations run one
//! after the other on one session, so late answers, partial lines and a dead process carry
//! over to the next. This module must never start a process or read a real clock.

use std::collections::HashSet;
use std::time::Duration;

use mcp_auth::QUOTE_LIMIT;
use mcp_proto::driver::LegKind;
use mcp_proto::driver::{
    Input, Leg, LegId, Operation, Output, ProcessExit, TransportError, leg_grant,
};
use mcp_proto::request::{GetPrompt, ReadResource};
use mcp_proto::{
    Action, Budget, Clock, Error, Event, ListKind, ManualClock, Outcome, ProtocolVersion,
    Resolution, Session, SessionConfig, StdioCommand, TransportErrorKind,
};
use serde_json::{Map, Value, json};

use crate::bytes::Bytes;

/// The body caps the sessions of [`stdio`] are configured with (the setup picks one).
pub const STDIO_BODY_CAPS: [usize; 2] = [64 * 1024, 512];
/// The most outputs one operation of [`stdio`] may hand out.
const MAX_OUTPUTS: usize = 20_000;
/// The most stdout bytes one run feeds.
const MAX_STDOUT: usize = 4 * 1024 * 1024;

/// What the harness knows of the fake process, independently of the operation.
#[derive(Debug, Default)]
struct Process {
    running: bool,
    /// The bytes of the line being written on stdout (up to the cap and a byte), and whether
    /// the line is already longer than that.
    line: Vec<u8>,
    overlong: bool,
    /// Request ids answered (a result or an error) on a complete line of at most the cap,
    /// since the process started.
    answered: HashSet<i64>,
}

impl Process {
    fn start(&mut self) {
        *self = Self {
            running: true,
            ..Self::default()
        };
    }

    fn exit(&mut self) {
        *self = Self::default();
    }

    /// Whether the next byte on stdout starts a line.
    fn at_line_start(&self) -> bool {
        self.line.is_empty() && !self.overlong
    }

    /// Follows the bytes written on stdout as the lines they make.
    fn wrote(&mut self, chunk: &[u8], cap: usize) {
        for &byte in chunk {
            if byte != b'\n' {
                if self.line.len() > cap {
                    self.overlong = true;
                    self.line.clear();
                }
                if !self.overlong {
                    self.line.push(byte);
                }
                continue;
            }
            let mut line = std::mem::take(&mut self.line);
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            if !std::mem::take(&mut self.overlong) && line.len() <= cap {
                if let Ok(Value::Object(message)) = serde_json::from_slice::<Value>(&line) {
                    let answer = message.contains_key("result") || message.contains_key("error");
                    if let (true, Some(id)) = (answer, message.get("id").and_then(Value::as_i64)) {
                        self.answered.insert(id);
                    }
                }
            }
        }
    }
}

/// A request line the operation wrote and awaits the answer to.
#[derive(Debug, Clone)]
struct Written {
    leg: LegId,
    id: i64,
    method: String,
    modern: bool,
}

/// The driver of one run: the session, the clock, the process, and what was checked so far.
#[derive(Debug)]
struct Harness<'a> {
    bytes: Bytes<'a>,
    session: Session,
    clock: ManualClock,
    process: Process,
    cap: usize,
    era: Era,
    /// Every request id the session's operations wrote (unique over the session's life).
    ids: HashSet<i64>,
    /// The ids of the requests the fake process sent (the operation answers them).
    server_requests: HashSet<String>,
    fed: usize,
    /// What the process wrote after the operation reading it ended, for the next one.
    unread: Vec<u8>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Era {
    Detecting,
    Legacy,
    Modern,
}

/// One operation as the harness follows it.
#[derive(Debug)]
struct Run {
    op: Operation,
    action: Action,
    unit: Duration,
    /// The deadline's end, plus one unit: nothing may reach past it.
    limit: std::time::Instant,
    /// The request written last (and its answer, if the process gave one).
    last_request: Option<Written>,
    /// The process exited while a message of this operation was in flight.
    exited_in_flight: bool,
    cancelled: bool,
    outputs: usize,
    reports: crate::Reports,
}

impl Harness<'_> {
    fn now(&self) -> std::time::Instant {
        self.clock.now()
    }

    /// A moment from `now` to `until`, picked by the next byte (`now` when `until` has come).
    /// The arithmetic may round up to `until` itself: an input at the very end of a wait,
    /// which a driver may report too (a process that exits as a leg's grant ends).
    fn moment_before(&mut self, until: std::time::Instant) -> std::time::Instant {
        let now = self.now();
        let span = until.saturating_duration_since(now);
        let pick = u32::from(self.bytes.byte());
        now + span.mul_f64(f64::from(pick) / 256.0)
    }

    fn stdout(&mut self, run: &mut Run, chunk: &[u8]) {
        if !self.process.running || self.fed >= MAX_STDOUT {
            return;
        }
        self.fed += chunk.len();
        self.process.wrote(chunk, self.cap);
        if run.op.is_finished() {
            // A driver reads no more for an operation that ended: what the process wrote
            // waits in the pipe for the next one.
            self.unread.extend_from_slice(chunk);
        } else {
            run.op.handle_input(Input::Stdout(chunk), self.now());
        }
    }

    fn exit(&mut self, run: &mut Run, exit: &ProcessExit) {
        let in_flight = run
            .last_request
            .as_ref()
            .is_some_and(|w| run.op.is_in_flight(w.leg));
        self.process.exit();
        self.unread.clear();
        run.op.handle_input(Input::Exit(exit), self.now());
        if in_flight && !run.op.is_finished() {
            run.exited_in_flight = true;
        }
    }

    fn run(&mut self, op: Operation) {
        let deadline = *op.deadline();
        let unit = deadline.resolution().unit();
        let limit = deadline
            .end()
            .and_then(|end| end.checked_add(unit))
            .expect("the fuzz budgets fit an Instant");
        let mut run = Run {
            action: op.action().clone(),
            op,
            unit,
            limit,
            last_request: None,
            exited_in_flight: false,
            cancelled: false,
            outputs: 0,
            reports: crate::Reports::default(),
        };
        let mut due = 0;
        loop {
            run.outputs += 1;
            assert!(
                run.outputs < MAX_OUTPUTS,
                "the operation did not end within {MAX_OUTPUTS} outputs"
            );
            let now = self.now();
            let output = run.op.poll_on(&mut self.session, now);
            if run.exited_in_flight {
                assert!(
                    matches!(
                        output,
                        Output::Done(_) | Output::Event(_) | Output::LegEnded(_)
                    ),
                    "the process exited while a message was in flight, and the operation went on: {output:?}"
                );
            }
            match output {
                Output::Update(_) => unreachable!("poll_on applies every update"),
                Output::Event(event) => check_event(&event),
                Output::LegEnded(report) => run.reports.saw(&report, run.op.legs_sent()),
                Output::Authorize(_) => panic!("an authorization over stdio"),
                Output::Request(request) => {
                    assert!(request.ends_at <= run.op.deadline().end().unwrap());
                    run.op
                        .handle_input(request.reply_from(run.op.session_config()), now);
                }
                Output::Transmit(leg) => {
                    due = 0;
                    self.transmit(&mut run, leg);
                }
                Output::Wait(until) | Output::AwaitSession(until) => {
                    assert!(
                        until < run.limit,
                        "a wait until {:?} past the deadline's end",
                        until.saturating_duration_since(deadline.started())
                    );
                    if until <= now {
                        due += 1;
                        assert!(due < 100, "the operation keeps waiting for what has come");
                        run.op.handle_input(Input::Timeout, now);
                    } else {
                        due = 0;
                        self.wait(&mut run, until);
                    }
                }
                Output::Done(result) => {
                    run.reports.all(run.op.legs_sent());
                    self.done(&mut run, result);
                    return;
                }
            }
        }
    }

    fn transmit(&mut self, run: &mut Run, leg: Leg) {
        let now = self.now();
        let deadline = *run.op.deadline();
        let number = leg.id.number();
        assert!(!leg.timeout.is_zero(), "leg {number} was granted zero");
        assert_eq!(
            leg.ends_at,
            now + leg.timeout,
            "leg {number}: its end is not now + grant"
        );
        let at =
            |instant: std::time::Instant| instant.saturating_duration_since(deadline.started());
        // A kill, and a cancel notice once the budget is spent, are carried out at once: their
        // grant of a unit only bounds a driver that never reports back.
        if !matches!(leg.kind, LegKind::Kill | LegKind::CancelNotice) || !deadline.is_exhausted(now)
        {
            assert!(
                leg.ends_at < run.limit,
                "leg {number} ({:?}) sent at {:?} for {:?} ends past the deadline's end ({:?}) and a unit",
                leg.kind,
                at(now),
                leg.timeout,
                deadline.total()
            );
        }
        if matches!(leg.kind, LegKind::CancelNotice | LegKind::Kill) {
            // Their grants are a policy (the notice's cap, a kill's unit, what each gets with
            // the budget spent): taken from its one definition, so this check follows it.
            assert_eq!(
                Some(leg.timeout),
                leg_grant(leg.kind, &deadline, now, true),
                "leg {number} ({:?}) sent at {:?}: its grant",
                leg.kind,
                at(now)
            );
        }
        if !matches!(
            leg.kind,
            LegKind::CancelNotice | LegKind::Kill | LegKind::Shutdown
        ) {
            let remaining = deadline.remaining(now);
            assert!(
                !remaining.is_zero(),
                "leg {number} ({:?}) sent with the budget spent",
                leg.kind
            );
            let expected = crate::streamable::ceil_to(remaining, run.unit).max(run.unit);
            assert_eq!(
                leg.timeout, expected,
                "leg {number} ({:?}): its grant",
                leg.kind
            );
        }
        match leg.kind {
            LegKind::Spawn => {
                assert!(!self.process.running, "a spawn while the process runs");
                if self.bytes.byte() % 8 == 7 {
                    let error = TransportError::new(
                        TransportErrorKind::Connect,
                        "No such file or directory (os error 2)",
                    );
                    run.op
                        .handle_input(Input::Failed { leg: leg.id, error }, now);
                } else {
                    let at = self.moment_before(leg.ends_at);
                    self.clock.set(at);
                    self.process.start();
                    self.unread.clear();
                    run.op.handle_input(Input::Sent { leg: leg.id }, at);
                }
            }
            LegKind::Shutdown => {
                let at = self.moment_before(leg.ends_at);
                self.clock.set(at);
                self.process.exit();
                self.unread.clear();
                run.op
                    .handle_input(Input::Exit(&ProcessExit::default()), at);
            }
            LegKind::Kill => {
                self.process.exit();
                self.unread.clear();
                run.op
                    .handle_input(Input::Exit(&ProcessExit::default()), now);
            }
            _ => self.write(run, leg),
        }
    }

    /// A message written to the process's stdin.
    fn write(&mut self, run: &mut Run, leg: Leg) {
        let now = self.now();
        let number = leg.id.number();
        assert!(
            self.process.running,
            "leg {number} ({:?}) written to no process",
            leg.kind
        );
        let line = leg.request.body();
        assert_eq!(
            line.last(),
            Some(&b'\n'),
            "leg {number}: a line without its newline"
        );
        assert_eq!(
            line.iter().filter(|&&b| b == b'\n').count(),
            1,
            "leg {number}: a message of more than one line"
        );
        let message: Map<String, Value> = serde_json::from_slice(line)
            .unwrap_or_else(|err| panic!("leg {number}: a line that is not a JSON object: {err}"));
        assert_eq!(
            message.get("jsonrpc"),
            Some(&json!("2.0")),
            "leg {number}: not JSON-RPC 2.0"
        );
        let method = message.get("method").and_then(Value::as_str);
        let modern = message
            .get("params")
            .and_then(|p| p.pointer("/_meta/io.modelcontextprotocol~1protocolVersion"))
            .is_some();
        match leg.kind {
            LegKind::Respond => {
                assert!(method.is_none(), "leg {number}: an answer with a method");
                let id = message.get("id").map(|id| match id {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                });
                assert!(
                    id.is_some_and(|id| self.server_requests.contains(&id)),
                    "leg {number}: an answer to no request of the server's: {message:?}"
                );
                assert!(
                    message.contains_key("result") != message.contains_key("error"),
                    "leg {number}: an answer with neither or both of result and error"
                );
            }
            kind => {
                assert_eq!(
                    method,
                    kind.method(),
                    "leg {number}: another method than its kind"
                );
                match self.era {
                    Era::Legacy => assert!(
                        !modern && kind != LegKind::Discover,
                        "leg {number}: a modern request from a legacy-pinned session"
                    ),
                    Era::Modern => assert!(
                        kind != LegKind::Initialize && kind != LegKind::Initialized,
                        "leg {number}: a handshake from a modern-pinned session"
                    ),
                    Era::Detecting => {}
                }
            }
        }
        if let Some(id) = message.get("id").and_then(Value::as_i64) {
            if leg.kind != LegKind::Respond {
                assert!(
                    self.ids.insert(id),
                    "leg {number}: request id {id} was used before on this session"
                );
                run.last_request = Some(Written {
                    leg: leg.id,
                    id,
                    method: method.unwrap_or_default().to_owned(),
                    modern,
                });
            }
        }
        let pick = self.bytes.byte();
        if leg.kind == LegKind::CancelNotice {
            // Written at once or not at all.
            if pick % 4 == 3 {
                let full = TransportError::new(TransportErrorKind::Declined, "stdin is full");
                run.op.handle_input(
                    Input::Failed {
                        leg: leg.id,
                        error: full,
                    },
                    now,
                );
            } else {
                run.op.handle_input(Input::Sent { leg: leg.id }, now);
            }
            return;
        }
        match pick % 16 {
            // The process stopped reading: the pipe is found closed, it is gone.
            15 => {
                let exit = ProcessExit {
                    status: Some(1),
                    stderr: String::new(),
                };
                self.exit(run, &exit);
            }
            // The write blocks until the leg's end.
            14 => {
                self.clock.set(leg.ends_at);
                run.op.handle_input(Input::Timeout, leg.ends_at);
            }
            13 => {
                let at = self.moment_before(leg.ends_at);
                self.clock.set(at);
                run.op.handle_input(Input::Sent { leg: leg.id }, at);
            }
            _ => {
                run.op.handle_input(Input::Sent { leg: leg.id }, now);
            }
        }
    }

    /// The operation waits until `until` (later than now): the process writes, exits, or
    /// stays silent until then.
    fn wait(&mut self, run: &mut Run, until: std::time::Instant) {
        if !self.unread.is_empty() {
            let unread = std::mem::take(&mut self.unread);
            run.op.handle_input(Input::Stdout(&unread), self.now());
            return;
        }
        if self.bytes.is_empty() {
            self.clock.set(until);
            run.op.handle_input(Input::Timeout, until);
            return;
        }
        let op = self.bytes.byte();
        match op % 10 {
            0 => {
                self.clock.set(until);
                run.op.handle_input(Input::Timeout, until);
            }
            1 => {
                let at = self.moment_before(until);
                let len = usize::from(self.bytes.byte());
                let chunk = self.bytes.take(len);
                self.clock.set(at);
                self.stdout(run, chunk);
            }
            2 => {
                let flags = self.bytes.byte();
                let at = self.moment_before(until);
                self.clock.set(at);
                self.answer(run, flags);
            }
            3 => {
                let flags = self.bytes.byte();
                let at = self.moment_before(until);
                self.clock.set(at);
                self.stray_answer(run, flags);
            }
            4 => {
                let status = self.bytes.byte();
                let len = usize::from(self.bytes.byte() % 64);
                let stderr = String::from_utf8_lossy(self.bytes.take(len)).into_owned();
                let at = self.moment_before(until);
                if self.process.running {
                    self.clock.set(at);
                    let exit = ProcessExit {
                        status: (status < 200).then_some(i32::from(status)),
                        stderr: stderr.repeat(usize::from(status % 8) + 1),
                    };
                    self.exit(run, &exit);
                }
            }
            5 => {
                let at = self.moment_before(until);
                self.clock.set(at);
                run.cancelled = true;
                run.op.handle_input(Input::Cancel, at);
            }
            6 => {
                let pick = self.bytes.byte();
                let at = self.moment_before(until);
                self.clock.set(at);
                let line = self.server_message(pick);
                self.stdout(run, &line);
            }
            7 => {
                // A line longer than the cap, ended or not.
                let pick = self.bytes.byte();
                let at = self.moment_before(until);
                self.clock.set(at);
                let mut line = vec![b'x'; self.cap / 4 * (usize::from(pick % 8) + 1)];
                if pick & 0x80 != 0 {
                    line.push(b'\n');
                }
                for piece in line.chunks(usize::from(pick >> 3 & 0x0f) * 97 + 1) {
                    self.stdout(run, piece);
                }
            }
            8 => {
                // A banner, a log line, a blank line, half a message.
                let pick = self.bytes.byte();
                let at = self.moment_before(until);
                self.clock.set(at);
                let noise: &[u8] = match pick % 6 {
                    0 => b"Server listening on stdio\n",
                    1 => b"\x1b[32mINFO\x1b[0m started\r\n",
                    2 => b"\n\r\n   \n",
                    3 => b"{\"jsonrpc\":\"2.0\",",
                    4 => b"[1, 2, 3]\n",
                    _ => b"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"Parse error\"}}\n",
                };
                self.stdout(run, noise);
            }
            _ => {
                let _ = run.op.poll_event();
            }
        }
    }

    /// A healthy answer (or error) to the request awaited, as one line (in one or two pieces,
    /// perhaps after a notification): flags `0x01` an error, `0x02` a legacy server's
    /// refusal of the probe, `0x04` more pages, `0x08` a notification first, `0x10` in two
    /// pieces, `0x60` the initialize answer's version.
    fn answer(&mut self, run: &mut Run, flags: u8) {
        let Some(written) = run.last_request.clone() else {
            return;
        };
        if !run.op.is_in_flight(written.leg) || !self.process.running {
            return;
        }
        let id = written.id;
        let message = if flags & 0x01 != 0 {
            json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32603, "message": "internal error", "data": {"why": "fuzz"}}})
        } else if flags & 0x02 != 0 && written.method == "server/discover" {
            json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": "Method not found: server/discover"}})
        } else {
            json!({"jsonrpc": "2.0", "id": id, "result": healthy_result(&written, flags)})
        };
        let mut bytes = Vec::new();
        if flags & 0x08 != 0 {
            bytes.extend_from_slice(
                br#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"working"}}"#,
            );
            bytes.push(b'\n');
        }
        bytes.extend_from_slice(message.to_string().as_bytes());
        bytes.push(b'\n');
        let clean_start = self.process.at_line_start();
        let fits = bytes.len() <= self.cap;
        if flags & 0x10 != 0 {
            let (first, second) = bytes.split_at(bytes.len() / 2);
            self.stdout(run, first);
            self.stdout(run, second);
        } else {
            self.stdout(run, &bytes);
        }
        if clean_start && fits && !run.op.is_finished() {
            assert!(
                !run.op.is_in_flight(written.leg),
                "the answer to request {id} ({}) came on a line of its own, and the request still waits",
                written.method
            );
        }
    }

    /// An answer no request of this operation awaits: to an earlier request, to one never
    /// sent, with a string id, with no id at all.
    fn stray_answer(&mut self, run: &mut Run, flags: u8) {
        let known: Vec<i64> = {
            let mut ids: Vec<i64> = self.ids.iter().copied().collect();
            ids.sort_unstable();
            ids
        };
        let awaited = run.last_request.as_ref().map(|w| w.id);
        let id = match flags % 4 {
            0 => known
                .iter()
                .copied()
                .find(|id| Some(*id) != awaited)
                .map_or(json!(9_999), |id| json!(id)),
            1 => json!(awaited.unwrap_or(0) + 1),
            2 => json!(awaited.map_or_else(|| "1".to_owned(), |id| id.to_string())),
            _ => json!(-1),
        };
        let line = format!(
            "{}\n",
            json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "stray"}]}})
        );
        self.stdout(run, line.as_bytes());
    }

    /// A notification or a request of the server's, as one line.
    fn server_message(&mut self, pick: u8) -> Vec<u8> {
        let id = format!("s-{}", self.server_requests.len());
        let message = match pick % 5 {
            0 => json!({"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": 1, "progress": 1, "total": 2}}),
            1 => json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
            2 => json!({"jsonrpc": "2.0", "id": id, "method": "ping"}),
            3 => json!({"jsonrpc": "2.0", "id": id, "method": "roots/list"}),
            _ => json!({"jsonrpc": "2.0", "id": id, "method": "elicitation/create",
                "params": {"message": "Name?", "requestedSchema": {"type": "object",
                    "properties": {"name": {"type": "string", "default": "fuzz"}}}}}),
        };
        if message.get("id").is_some() {
            self.server_requests.insert(id);
        }
        format!("{message}\n").into_bytes()
    }

    fn done(&mut self, run: &mut Run, result: Result<Outcome, Error>) {
        let now = self.now();
        assert!(
            now < run.limit,
            "Done {:?} after the deadline's end and a unit",
            now.saturating_duration_since(run.limit)
        );
        match &result {
            Ok(outcome) => {
                assert!(
                    crate::streamable::outcome_fits(&run.action, outcome),
                    "{:?} ended with {outcome:?}",
                    run.action
                );
                assert!(!run.cancelled, "a cancelled operation succeeded");
                if run.action != Action::Close {
                    let written = run
                        .last_request
                        .as_ref()
                        .expect("a result without a request");
                    assert!(
                        self.process.answered.contains(&written.id),
                        "a result for request {} ({}), which the process never answered on a line of its own",
                        written.id,
                        written.method
                    );
                }
            }
            Err(err) => check_error(err),
        }
        assert_eq!(
            self.session.process_running(),
            self.process.running,
            "the session and the harness disagree on whether the process runs"
        );
        crate::streamable::check_finished(&mut run.op, now);
    }
}

/// The result a healthy server gives to `written`; a modern one says it is complete.
fn healthy_result(written: &Written, flags: u8) -> Value {
    let page = written.id;
    let mut result = match written.method.as_str() {
        "initialize" => {
            let version = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]
                [usize::from(flags >> 5 & 3)];
            json!({"protocolVersion": version, "capabilities": {"tools": {}},
                "serverInfo": {"name": "fuzz-stdio", "version": "1.0"}})
        }
        "server/discover" => json!({
            "supportedVersions": [ProtocolVersion::MODERN.as_str()],
            "capabilities": {"tools": {}},
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fuzz-stdio", "version": "1.0"}}
        }),
        "tools/list" => {
            let mut result =
                json!({"tools": [{"name": format!("t{page}"), "inputSchema": {"type": "object"}}]});
            if flags & 0x04 != 0 {
                result["nextCursor"] = json!(format!("cursor-{page}"));
            }
            result
        }
        "tools/call" => json!({"content": [{"type": "text", "text": "ok"}]}),
        "resources/read" => {
            json!({"contents": [{"uri": "file:///fuzz/notes.txt", "mimeType": "text/plain", "text": "notes"}]})
        }
        "prompts/get" => {
            json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]})
        }
        _ => json!({}),
    };
    if written.modern {
        result["resultType"] = json!("complete");
    }
    result
}

fn check_event(event: &Event) {
    if let Event::StdoutNoise { line } = event {
        assert!(
            line.chars().count() <= QUOTE_LIMIT + 1,
            "a noise line of {} characters",
            line.chars().count()
        );
        assert!(
            !line.chars().any(char::is_control),
            "a noise line with a control character: {line:?}"
        );
    }
}

fn check_error(err: &Error) {
    let text = err.to_string();
    assert!(
        !text.chars().any(char::is_control),
        "an error message carries a control character: {text:?}"
    );
    assert!(
        text.chars().count() <= 2_000,
        "an error message of {} characters",
        text.chars().count()
    );
    if let Some(server) = err.server() {
        assert_eq!(server, "stdio:server", "the error names another server");
    }
    if let Error::ServerExited { stderr, .. } = err {
        assert!(
            stderr.chars().count() <= QUOTE_LIMIT + 1,
            "stderr quoted in {} characters",
            stderr.chars().count()
        );
    }
}

fn budget(pick: u8) -> Budget {
    if pick < 240 {
        Budget::from_secs(u64::from(pick % 30) + 1)
    } else {
        // Sub-second budgets, zero included (raised to one unit).
        Budget::from_duration(Duration::from_millis(u64::from(pick - 240) * 61))
    }
}

fn resolution(pick: u8) -> Resolution {
    match pick % 4 {
        0 | 1 => Resolution::SECOND,
        2 => Resolution::MILLISECOND,
        _ => Resolution::from_unit(Duration::from_millis(u64::from(pick >> 2) + 1))
            .unwrap_or(Resolution::SECOND),
    }
}

fn start(session: &mut Session, pick: u8, now: std::time::Instant) -> Operation {
    match pick % 7 {
        0 => session.probe(now),
        1 => session.list_tools(now),
        2 => session.request(ReadResource::new("file:///fuzz/notes.txt"), now),
        3 => session.request(GetPrompt::new("greet", Map::new()), now),
        4 => session.list(ListKind::Tools, now),
        5 => session.close(now),
        _ => session.call_tool("echo", Map::new(), now),
    }
}

/// The stdio target.
///
/// Layout: three setup bytes, then for each operation an action byte followed by the inputs
/// of that operation. Setup: byte 0 = `.ORNCEE`: `EE` the era (0 and 3 detecting, the
/// default, probing with `server/discover`; 1 pinned to the newest legacy version; 2 pinned
/// to the modern one), `C` the body cap (0: 64 KiB, 1: 512 bytes), `N` the cancel notice on,
/// `R` responders for `roots/list` and `elicitation/create`, `O` two more operations (else one
/// more); byte 1 the budget (below 240: `% 30 + 1` s, else `(b - 240) * 61` ms), byte 2 the
/// resolution (`% 4`: s, s, ms, `(b >> 2) + 1` ms). The action byte (`% 7`): probe, list
/// tools, read a resource, get a prompt, list tools, close, call a tool.
///
/// Each time the operation hands out a leg, the next byte says how it goes: a spawn fails
/// (`% 8 == 7`) or starts the process at a moment before its end (next byte); a written
/// line (`% 16`) is found closed (15: the process is gone), blocks until the leg's end (14),
/// is taken at a later moment (13, next byte) or at once; a cancel notice is refused
/// (`% 4 == 3`) or taken. Each time the operation waits, the next byte (`% 10`) says what
/// happens before the wait ends, at a moment a further byte picks: 0 nothing (the wait
/// ends); 1 stdout bytes (a length byte, then those bytes); 2 a healthy answer to the request
/// awaited (flags: see `Harness::answer`); 3 an answer with an id no request awaits; 4 the
/// process exits (status byte, stderr length and bytes); 5 `cancel()`; 6 a notification or a
/// request of the server's; 7 a line past the cap, in pieces, ended or not; 8 noise (a
/// banner, colours, blank lines, half a message, a parse error); 9 `poll_event()`. Once the
/// input is spent, the process stays silent and every wait runs to its end.
///
/// Invariants: every operation ends (`Done`) before its deadline's end plus one unit on the
/// manual clock, and nothing it asks for (a wait, a leg's end) reaches past that; every leg
/// is granted `max(unit, ceil_to_unit(remaining))`, never zero, and none is sent with the
/// budget spent, but for a cancel notice and a kill, granted what `mcp-proto`'s one rule says
/// (`driver::leg_grant`: a notice what is left, at most `CANCEL_NOTICE_GRANT`, or one unit
/// once the budget is spent; a kill one unit), and a shutdown, which at least stays inside the
/// limit; a
/// spawn only when no process runs, a line only to a running one; every message is one line
/// of JSON-RPC 2.0, its method its leg's, a pinned era's requests are of that era; request
/// ids are unique over the session's life; the answers to the server's requests name one of
/// them; an answer on a line of its own ends the wait for its request at once; a result
/// comes only for a request the process answered, and never after a cancel; a process that
/// exits while a message is in flight ends the operation before it waits or sends again;
/// noise lines and errors are clipped and carry no control characters; the session knows
/// whether the process runs; after `Done`, polling only yields `AlreadyFinished`.
pub fn stdio(data: &[u8]) {
    let mut bytes = Bytes::new(data);
    let setup = bytes.byte();
    let budget = budget(bytes.byte());
    let resolution = resolution(bytes.byte());
    let era = match setup & 3 {
        1 => Era::Legacy,
        2 => Era::Modern,
        _ => Era::Detecting,
    };
    let cap = STDIO_BODY_CAPS[usize::from(setup >> 2 & 1)];
    let mut config = SessionConfig::stdio(StdioCommand::new("/fuzz/bin/server").arg("--stdio"))
        .with_budget(budget)
        .with_resolution(resolution)
        .with_body_cap(cap)
        .with_cancel_notice(setup & 0x08 != 0);
    config = match era {
        Era::Legacy => config.with_protocol_version(ProtocolVersion::LATEST),
        Era::Modern => config.with_protocol_version(ProtocolVersion::MODERN),
        Era::Detecting => config,
    };
    if setup & 0x10 != 0 {
        config = config
            .respond_to("roots/list", |_| Ok(json!({"roots": []})))
            .respond_to("elicitation/create", |params| {
                Ok(mcp_proto::message::accept_elicitation_with_defaults(params))
            });
    }
    let operations = if setup & 0x20 != 0 { 3 } else { 2 };
    let mut harness = Harness {
        bytes,
        session: Session::new(config),
        clock: ManualClock::new(),
        process: Process::default(),
        cap,
        era,
        ids: HashSet::new(),
        server_requests: HashSet::new(),
        fed: 0,
        unread: Vec::new(),
    };
    for _ in 0..operations {
        let pick = harness.bytes.byte();
        let now = harness.now();
        let op = start(&mut harness.session, pick, now);
        harness.run(op);
    }
}
