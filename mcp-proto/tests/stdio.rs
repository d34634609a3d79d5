//! The stdio transport on a manual clock: the process as a leg, lines matched to requests by
//! id, the era probe, noise, overlong lines, a process that exits, cancel and close.

use std::time::Duration;

use mcp_proto::driver::LegKind;
use mcp_proto::driver::{Input, Output, ProcessExit};
use mcp_proto::{
    Budget, Clock, Era, Error, Event, ManualClock, ProtocolVersion, Session, SessionConfig,
    StdioCommand,
};
use serde_json::{Map, Value, json};

/// What the fake process does with one message written to its stdin.
type Server = Box<dyn FnMut(&Value) -> Reply>;

/// The fake process's reaction to a message.
#[derive(Default)]
struct Reply {
    /// How long it takes before writing.
    after: Duration,
    /// Bytes it writes on stdout (each chunk fed as it is).
    stdout: Vec<Vec<u8>>,
    /// It exits after writing, with this.
    exits: Option<ProcessExit>,
}

fn lines(values: &[Value]) -> Reply {
    Reply {
        stdout: values
            .iter()
            .map(|v| format!("{v}\n").into_bytes())
            .collect(),
        ..Reply::default()
    }
}

struct Run {
    /// Every leg: its label and grant in whole seconds.
    legs: Vec<(String, u64)>,
    /// The operation's reports, in the order the legs ended.
    reports: Vec<mcp_proto::LegReport>,
    events: Vec<Event>,
    result: Result<mcp_proto::Outcome, Error>,
}

/// Drives one operation against the fake process: spawn succeeds at once; every written
/// message goes to `server`; a shutdown exits at once.
fn drive(
    session: &mut Session,
    op: mcp_proto::driver::Operation,
    clock: &ManualClock,
    server: &mut Server,
) -> Run {
    let mut op = op;
    let mut legs = Vec::new();
    let mut reports = Vec::new();
    let mut events = Vec::new();
    for _ in 0..200 {
        match op.poll_output(clock.now()) {
            Output::Update(update) => session.apply(update),
            Output::Transmit(leg) => {
                legs.push((leg.kind.label().to_owned(), leg.timeout.as_secs()));
                match leg.kind {
                    LegKind::Spawn => {
                        op.handle_input(Input::Sent { leg: leg.id }, clock.now());
                    }
                    // The process ends when its stdin closes.
                    LegKind::Shutdown => {
                        op.handle_input(Input::Sent { leg: leg.id }, clock.now());
                        op.handle_input(Input::Exit(&ProcessExit::default()), clock.now());
                    }
                    LegKind::Kill => {
                        op.handle_input(Input::Exit(&ProcessExit::default()), clock.now());
                    }
                    _ => {
                        let line = leg.request.body();
                        // One message is one line: written as it is, its newline included.
                        assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
                        assert_eq!(line.last(), Some(&b'\n'));
                        let message: Value = serde_json::from_slice(line).unwrap();
                        op.handle_input(Input::Sent { leg: leg.id }, clock.now());
                        let reply = server(&message);
                        clock.advance(reply.after);
                        for chunk in &reply.stdout {
                            op.handle_input(Input::Stdout(chunk), clock.now());
                        }
                        if let Some(exit) = &reply.exits {
                            op.handle_input(Input::Exit(exit), clock.now());
                        }
                    }
                }
            }
            Output::Wait(until) | Output::AwaitSession(until) => {
                clock.set(until.max(clock.now()));
                op.handle_input(Input::Timeout, clock.now());
            }
            Output::Event(event) => events.push(event),
            Output::Request(request) => {
                op.handle_input(request.reply_from(op.session_config()), clock.now());
            }
            Output::LegEnded(report) => reports.push(report),
            Output::Authorize(_) => {
                op.handle_input(Input::NoAuthorizer, clock.now());
            }
            Output::Done(result) => {
                // Every leg handed out ends in one report, before the result.
                assert_eq!(reports.len(), legs.len(), "each leg is reported once");
                return Run {
                    legs,
                    reports,
                    events,
                    result,
                };
            }
        }
    }
    panic!("the operation did not end");
}

fn labels(run: &Run) -> Vec<&str> {
    run.legs.iter().map(|(l, _)| l.as_str()).collect()
}

fn grants(run: &Run) -> Vec<u64> {
    run.legs.iter().map(|(_, g)| *g).collect()
}

fn result(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// A legacy stdio server: it refuses anything before `initialize` with -32600 (as the SDKs
/// do), and answers `tools/call` with `text`.
fn legacy(text: &'static str, call_takes: Duration) -> Server {
    Box::new(move |message| {
        let id = &message["id"];
        match message["method"].as_str().unwrap_or_default() {
            "server/discover" => lines(&[json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32600, "message": "not initialized"}})]),
            "initialize" => lines(&[result(
                id,
                json!({"protocolVersion": "2025-11-25", "capabilities": {},
                    "serverInfo": {"name": "legacy", "version": "1"}}),
            )]),
            "tools/call" => Reply {
                after: call_takes,
                ..lines(&[result(
                    id,
                    json!({"content": [{"type": "text", "text": text}]}),
                )])
            },
            _ => Reply::default(),
        }
    })
}

/// A modern stdio server.
fn modern() -> Server {
    Box::new(|message| {
        let id = &message["id"];
        match message["method"].as_str().unwrap_or_default() {
            "server/discover" => lines(&[result(
                id,
                json!({"supportedVersions": ["2026-07-28"], "capabilities": {}}),
            )]),
            "tools/call" => lines(&[result(
                id,
                json!({"content": [{"type": "text", "text": "m"}]}),
            )]),
            _ => Reply::default(),
        }
    })
}

fn config() -> SessionConfig {
    SessionConfig::stdio(StdioCommand::new("/opt/bin/fake-server").arg("--stdio"))
}

fn call(session: &mut Session, clock: &ManualClock, server: &mut Server) -> Run {
    let op = session.call_tool("echo", Map::new(), clock.now());
    drive(session, op, clock, server)
}

#[test]
fn a_cold_call_starts_the_process_probes_its_era_and_falls_back_inside_one_budget() {
    let clock = ManualClock::new();
    let mut session = Session::new(config());
    let mut server = legacy("hi", Duration::from_secs(3));
    let run = call(&mut session, &clock, &mut server);
    assert_eq!(
        labels(&run),
        [
            "spawn",
            "server/discover",
            "initialize",
            "notifications/initialized",
            "tools/call"
        ]
    );
    assert_eq!(run.result.unwrap().into_call().unwrap().text(), "hi");
    assert!(session.process_running());
    assert_eq!(session.era(), Some(Era::Legacy));
    // The next call: the process and the session are kept; one leg.
    let run = call(&mut session, &clock, &mut server);
    assert_eq!(labels(&run), ["tools/call"]);
    assert_eq!(grants(&run), [20]);
}

#[test]
fn the_seed_sequence_holds_over_stdio() {
    // Legs of 4 s (initialize) and 2 s (initialized): the grants are the seed's 20, 16, 14
    // after the process started (under its own grant of 20).
    let clock = ManualClock::new();
    let mut session = Session::new(config_with_budget(20));
    let mut inner = legacy("hi", Duration::ZERO);
    let mut server: Server = Box::new(move |message| {
        let mut reply = inner(message);
        match message["method"].as_str() {
            Some("initialize") => reply.after = Duration::from_secs(4),
            Some("notifications/initialized") => reply.after = Duration::from_secs(2),
            _ => {}
        }
        reply
    });
    let run = call(&mut session, &clock, &mut server);
    assert!(run.result.is_ok(), "{:?}", run.result);
    assert_eq!(grants(&run), [20, 20, 16, 14]);
}

fn config_with_budget(seconds: u64) -> SessionConfig {
    config()
        .with_protocol_version(ProtocolVersion::V2025_11_25)
        .with_budget(Budget::from_secs(seconds))
}

#[test]
fn a_modern_server_answers_the_probe_and_the_call_is_one_leg_after() {
    let clock = ManualClock::new();
    let mut session = Session::new(config());
    let mut server = modern();
    let run = call(&mut session, &clock, &mut server);
    assert_eq!(labels(&run), ["spawn", "server/discover", "tools/call"]);
    assert_eq!(run.result.unwrap().into_call().unwrap().text(), "m");
    assert_eq!(session.era(), Some(Era::Modern));
    let run = call(&mut session, &clock, &mut server);
    assert_eq!(labels(&run), ["tools/call"]);
}

#[test]
fn a_late_answer_is_dropped_by_its_id_and_noise_is_skipped_and_reported() {
    let clock = ManualClock::new();
    let mut session = Session::new(config_with_budget(5));
    // The first call's answer comes after its budget; it arrives during the second call.
    let mut late: Option<Value> = None;
    let mut calls = 0;
    let mut server: Server = Box::new(move |message| {
        let id = &message["id"];
        match message["method"].as_str().unwrap_or_default() {
            "initialize" => lines(&[result(
                id,
                json!({"protocolVersion": "2025-11-25", "capabilities": {},
                    "serverInfo": {"name": "s", "version": "1"}}),
            )]),
            "tools/call" => {
                calls += 1;
                let mine = result(
                    id,
                    json!({"content": [{"type": "text", "text": format!("call {calls}")}]}),
                );
                if calls == 1 {
                    late = Some(mine);
                    Reply::default()
                } else {
                    let mut out = vec![b"Server listening on stdio\n".to_vec()];
                    out.push(format!("{}\n", late.take().unwrap()).into_bytes());
                    out.push(
                        format!(
                            "{}\n",
                            json!({"jsonrpc": "2.0", "method": "notifications/message",
                                "params": {"level": "info", "data": "working"}})
                        )
                        .into_bytes(),
                    );
                    out.push(format!("{mine}\n").into_bytes());
                    Reply {
                        stdout: out,
                        ..Reply::default()
                    }
                }
            }
            _ => Reply::default(),
        }
    });
    let first = call(&mut session, &clock, &mut server);
    assert!(
        matches!(
            first.result,
            Err(Error::LegTimedOut {
                method: "tools/call",
                ..
            })
        ),
        "{:?}",
        first.result
    );
    let second = call(&mut session, &clock, &mut server);
    assert_eq!(second.result.unwrap().into_call().unwrap().text(), "call 2");
    assert!(second.events.iter().any(|e| matches!(e,
        Event::StdoutNoise { line } if line == "Server listening on stdio")));
    assert!(
        second
            .events
            .iter()
            .any(|e| matches!(e, Event::Notification(n) if n.method == "notifications/message"))
    );
}

#[test]
fn an_overlong_line_ends_the_request_with_its_own_error_and_the_next_line_is_read() {
    let clock = ManualClock::new();
    let config = config_with_budget(20).with_body_cap(1024);
    let mut session = Session::new(config);
    let mut server = legacy("ok", Duration::ZERO);
    let mut huge_once = true;
    let mut server: Server = Box::new(move |message| {
        if message["method"] == "tools/call" && huge_once {
            huge_once = false;
            let mut chunk = vec![b'x'; 4096];
            chunk.push(b'\n');
            return Reply {
                stdout: vec![vec![b'{'; 600], chunk],
                ..Reply::default()
            };
        }
        server(message)
    });
    let run = call(&mut session, &clock, &mut server);
    assert!(
        matches!(run.result, Err(Error::AnswerTooLarge { limit: 1024, .. })),
        "{:?}",
        run.result
    );
    let run = call(&mut session, &clock, &mut server);
    assert_eq!(run.result.unwrap().into_call().unwrap().text(), "ok");
}

#[test]
fn a_server_that_exits_mid_call_is_named_with_its_last_words_and_restarted_next_time() {
    let clock = ManualClock::new();
    let mut session = Session::new(config_with_budget(20));
    let mut inner = legacy("back", Duration::ZERO);
    let mut exits_once = true;
    let mut server: Server = Box::new(move |message| {
        if message["method"] == "tools/call" && exits_once {
            exits_once = false;
            return Reply {
                exits: Some(ProcessExit {
                    status: Some(3),
                    stderr: "panic: out of cheese\n".to_owned(),
                }),
                ..Reply::default()
            };
        }
        inner(message)
    });
    let run = call(&mut session, &clock, &mut server);
    match &run.result {
        Err(
            err @ Error::ServerExited {
                method,
                status,
                stderr,
                ..
            },
        ) => {
            assert_eq!((*method, *status), ("tools/call", Some(3)));
            assert_eq!(stderr, "panic: out of cheese");
            assert!(err.to_string().contains("stdio:fake-server"), "{err}");
        }
        other => panic!("{other:?}"),
    }
    // The trace says which legs were over and which one the exit cut off.
    let ends: Vec<String> = run
        .reports
        .iter()
        .map(|r| format!("{} {}", r.kind.label(), r.end.word()))
        .collect();
    assert_eq!(
        ends[ends.len() - 2..],
        ["notifications/initialized ok", "tools/call exited"]
    );
    assert!(!session.process_running());
    let run = call(&mut session, &clock, &mut server);
    assert_eq!(labels(&run)[..2], ["spawn", "initialize"]);
    assert_eq!(run.result.unwrap().into_call().unwrap().text(), "back");
}

#[test]
fn a_cancelled_call_over_stdio_is_announced_in_both_eras() {
    for pinned in [ProtocolVersion::V2025_11_25, ProtocolVersion::MODERN] {
        let clock = ManualClock::new();
        let mut session = Session::new(config().with_protocol_version(pinned));
        let mut op = session.call_tool("slow", Map::new(), clock.now());
        let mut written = Vec::new();
        let mut server = legacy("never", Duration::ZERO);
        let result = loop {
            match op.poll_output(clock.now()) {
                Output::Transmit(leg) => {
                    written.push(leg.kind);
                    op.handle_input(Input::Sent { leg: leg.id }, clock.now());
                    if leg.kind == LegKind::CallTool {
                        op.handle_input(Input::Cancel, clock.now());
                    } else if leg.kind != LegKind::Spawn && leg.kind != LegKind::CancelNotice {
                        let message: Value = serde_json::from_slice(leg.request.body()).unwrap();
                        for chunk in server(&message).stdout {
                            op.handle_input(Input::Stdout(&chunk), clock.now());
                        }
                    }
                }
                Output::Done(result) => break result,
                Output::Wait(until) | Output::AwaitSession(until) => {
                    clock.set(until);
                    op.handle_input(Input::Timeout, clock.now());
                }
                _ => {}
            }
        };
        assert!(matches!(result, Err(Error::Cancelled { .. })), "{result:?}");
        assert_eq!(written.last(), Some(&LegKind::CancelNotice), "{pinned:?}");
    }
}

#[test]
fn closing_ends_the_process_and_closing_none_sends_nothing() {
    let clock = ManualClock::new();
    let mut session = Session::new(config_with_budget(20));
    let mut server = legacy("x", Duration::ZERO);
    let op = session.close(clock.now());
    let run = drive(&mut session, op, &clock, &mut server);
    assert!(run.legs.is_empty());
    assert!(run.result.is_ok());
    let _ = call(&mut session, &clock, &mut server);
    let op = session.close(clock.now());
    let run = drive(&mut session, op, &clock, &mut server);
    assert_eq!(labels(&run), ["shutdown"]);
    assert_eq!(grants(&run), [2]);
    assert!(!session.process_running());
}

/// A close as the stand-in saw it: each step handed out with the time it went out at, each
/// report's end, and the result.
type Closed = (
    Vec<(LegKind, Duration)>,
    Vec<String>,
    Result<mcp_proto::Outcome, Error>,
);

/// Closes a running process that exits on the step `exits_on` (never, with `None`).
fn close_a_process_that_exits_on(exits_on: Option<LegKind>) -> Closed {
    let clock = ManualClock::new();
    let mut session = Session::new(config_with_budget(20));
    let _ = call(&mut session, &clock, &mut legacy("x", Duration::ZERO));
    let mut op = session.close(clock.now());
    let started = clock.now();
    let (mut steps, mut ends) = (Vec::new(), Vec::new());
    for _ in 0..50 {
        match op.poll_output(clock.now()) {
            Output::Transmit(leg) => {
                steps.push((leg.kind, clock.now() - started));
                if leg.kind != LegKind::Kill {
                    op.handle_input(Input::Sent { leg: leg.id }, clock.now());
                }
                if leg.kind == LegKind::Kill || exits_on == Some(leg.kind) {
                    op.handle_input(Input::Exit(&ProcessExit::default()), clock.now());
                }
            }
            Output::Wait(until) => {
                clock.set(until);
                op.handle_input(Input::Timeout, clock.now());
            }
            Output::LegEnded(report) => ends.push(report.end.word()),
            Output::Update(update) => session.apply(update),
            Output::Done(result) => {
                assert!(!session.process_running());
                return (steps, ends, result);
            }
            other => panic!("{other:?}"),
        }
    }
    panic!("the close did not end");
}

#[test]
fn a_close_hands_out_each_step_of_ending_the_process_inside_its_grant() {
    let secs = Duration::from_secs;
    // A server that ends when its stdin closes: one step.
    let (steps, _, result) = close_a_process_that_exits_on(Some(LegKind::Shutdown));
    assert_eq!(steps, [(LegKind::Shutdown, secs(0))]);
    assert!(matches!(result, Ok(mcp_proto::Outcome::Closed)));
    // One that ends on SIGTERM: half the close's 2 s grant for it to exit on its own first.
    let (steps, _, result) = close_a_process_that_exits_on(Some(LegKind::Terminate));
    assert_eq!(
        steps,
        [(LegKind::Shutdown, secs(0)), (LegKind::Terminate, secs(1))]
    );
    assert!(matches!(result, Ok(mcp_proto::Outcome::Closed)));
    // One that ignores both: killed at the grant's end, and not a moment later.
    let (steps, ends, result) = close_a_process_that_exits_on(None);
    assert_eq!(
        steps,
        [
            (LegKind::Shutdown, secs(0)),
            (LegKind::Terminate, secs(1)),
            (LegKind::Kill, secs(2))
        ]
    );
    assert_eq!(ends, ["ok", "ok", "ok"]);
    assert!(matches!(result, Ok(mcp_proto::Outcome::Closed)));
}

#[test]
fn a_program_that_cannot_start_is_the_callers_error() {
    let clock = ManualClock::new();
    let mut session = Session::new(config());
    let mut op = session.call_tool("echo", Map::new(), clock.now());
    let result = loop {
        match op.poll_output(clock.now()) {
            Output::Transmit(leg) => {
                assert_eq!(leg.kind, LegKind::Spawn);
                op.handle_input(
                    Input::Failed {
                        leg: leg.id,
                        error: mcp_proto::driver::TransportError::new(
                            mcp_proto::TransportErrorKind::Connect,
                            "No such file or directory (os error 2)",
                        ),
                    },
                    clock.now(),
                );
            }
            Output::Done(result) => break result,
            _ => {}
        }
    };
    match result {
        Err(err @ Error::SpawnFailed { .. }) => {
            assert_eq!(err.fault(), mcp_proto::Fault::Caller);
            assert!(err.to_string().contains("No such file"), "{err}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_stdio_call_that_ran_out_of_time_is_announced_as_cancelled() {
    let clock = ManualClock::new();
    let mut session = Session::new(config_with_budget(3));
    let mut server = legacy("never", Duration::ZERO);
    let mut stalls: Server = Box::new(move |message| {
        if message["method"] == "tools/call" {
            return Reply::default();
        }
        server(message)
    });
    let mut op = session.call_tool("slow", Map::new(), clock.now());
    let mut written = Vec::new();
    let result = loop {
        match op.poll_output(clock.now()) {
            Output::Transmit(leg) => {
                written.push((leg.kind, leg.timeout.as_secs()));
                op.handle_input(Input::Sent { leg: leg.id }, clock.now());
                if !matches!(leg.kind, LegKind::Spawn | LegKind::CancelNotice) {
                    let message: Value = serde_json::from_slice(leg.request.body()).unwrap();
                    for chunk in stalls(&message).stdout {
                        op.handle_input(Input::Stdout(&chunk), clock.now());
                    }
                }
                if leg.kind == LegKind::CancelNotice {
                    let message: Value = serde_json::from_slice(leg.request.body()).unwrap();
                    assert_eq!(message["method"], "notifications/cancelled");
                }
            }
            Output::Wait(until) | Output::AwaitSession(until) => {
                clock.set(until);
                op.handle_input(Input::Timeout, clock.now());
            }
            Output::Done(result) => break result,
            _ => {}
        }
    };
    assert!(
        matches!(
            result,
            Err(Error::LegTimedOut {
                method: "tools/call",
                ..
            })
        ),
        "{result:?}"
    );
    assert_eq!(written.last(), Some(&(LegKind::CancelNotice, 1)));
}

/// Whether the process exits exactly at the end of the call's grant: its exit reported at
/// that instant instead of the timeout, or just after the timeout, before the next poll.
#[derive(Debug, Clone, Copy)]
enum ExitsAtTheEnd {
    InsteadOfTheTimeout,
    AfterTheTimeout,
}

#[test]
fn a_process_that_exits_as_its_call_runs_out_is_sent_no_cancel_notice() {
    for exits in [
        ExitsAtTheEnd::InsteadOfTheTimeout,
        ExitsAtTheEnd::AfterTheTimeout,
    ] {
        let clock = ManualClock::new();
        let mut session = Session::new(config_with_budget(3));
        let mut server = legacy("never", Duration::ZERO);
        let mut op = session.call_tool("slow", Map::new(), clock.now());
        let mut written = Vec::new();
        let result = loop {
            match op.poll_output(clock.now()) {
                Output::Transmit(leg) => {
                    written.push(leg.kind);
                    op.handle_input(Input::Sent { leg: leg.id }, clock.now());
                    if !matches!(leg.kind, LegKind::Spawn | LegKind::CancelNotice) {
                        let message: Value = serde_json::from_slice(leg.request.body()).unwrap();
                        if message["method"] != "tools/call" {
                            for chunk in server(&message).stdout {
                                op.handle_input(Input::Stdout(&chunk), clock.now());
                            }
                        }
                    }
                }
                Output::Wait(until) | Output::AwaitSession(until) => {
                    clock.set(until);
                    let exit = ProcessExit::default();
                    match exits {
                        _ if !written.contains(&LegKind::CallTool) => {
                            op.handle_input(Input::Timeout, clock.now());
                        }
                        ExitsAtTheEnd::InsteadOfTheTimeout => {
                            op.handle_input(Input::Exit(&exit), clock.now());
                        }
                        ExitsAtTheEnd::AfterTheTimeout => {
                            op.handle_input(Input::Timeout, clock.now());
                            op.handle_input(Input::Exit(&exit), clock.now());
                        }
                    }
                }
                Output::Done(result) => break result,
                _ => {}
            }
        };
        // The call ran out first: it timed out. The process that would be told is gone, so
        // no line is written to it.
        assert!(
            matches!(
                result,
                Err(Error::LegTimedOut {
                    method: "tools/call",
                    ..
                })
            ),
            "{exits:?}: {result:?}"
        );
        assert_eq!(written.last(), Some(&LegKind::CallTool), "{exits:?}");
    }
}

#[test]
fn a_restarted_local_server_has_its_era_found_again() {
    // First a legacy build; after it exits, a modern build of the same command answers.
    let clock = ManualClock::new();
    let mut session = Session::new(config());
    let mut legacy_build = legacy("old", Duration::ZERO);
    let mut modern_build = modern();
    let mut upgraded = false;
    let mut server: Server = Box::new(move |message| {
        if upgraded {
            return modern_build(message);
        }
        if message["method"] == "tools/call" {
            upgraded = true;
            return Reply {
                exits: Some(ProcessExit::default()),
                ..Reply::default()
            };
        }
        legacy_build(message)
    });
    let first = call(&mut session, &clock, &mut server);
    assert!(
        matches!(first.result, Err(Error::ServerExited { .. })),
        "{:?}",
        first.result
    );
    assert_eq!(session.era(), Some(Era::Legacy));
    let second = call(&mut session, &clock, &mut server);
    assert_eq!(labels(&second), ["spawn", "server/discover", "tools/call"]);
    assert_eq!(second.result.unwrap().into_call().unwrap().text(), "m");
    assert_eq!(session.era(), Some(Era::Modern));
}

/// A legacy server whose stdin stops being read once the handshake is done: the write of
/// `tools/call` never completes. Drives one call to its end: the legs and the result.
fn call_a_server_that_stops_reading(
    session: &mut Session,
    clock: &ManualClock,
    cancel_after: Option<Duration>,
) -> (Vec<LegKind>, Result<mcp_proto::Outcome, Error>) {
    let mut server = legacy("never", Duration::ZERO);
    let mut op = session.call_tool("echo", Map::new(), clock.now());
    let mut legs = Vec::new();
    loop {
        match op.poll_output(clock.now()) {
            Output::Update(update) => session.apply(update),
            Output::Transmit(leg) => {
                legs.push(leg.kind);
                match leg.kind {
                    LegKind::Spawn => {
                        op.handle_input(Input::Sent { leg: leg.id }, clock.now());
                    }
                    LegKind::Kill => {
                        op.handle_input(Input::Exit(&ProcessExit::default()), clock.now());
                    }
                    // Never written: the pipe is full and the server does not read.
                    LegKind::CallTool => {
                        if let Some(after) = cancel_after {
                            clock.advance(after);
                            op.handle_input(Input::Cancel, clock.now());
                        }
                    }
                    _ => {
                        op.handle_input(Input::Sent { leg: leg.id }, clock.now());
                        let message: Value = serde_json::from_slice(leg.request.body()).unwrap();
                        for chunk in server(&message).stdout {
                            op.handle_input(Input::Stdout(&chunk), clock.now());
                        }
                    }
                }
            }
            Output::Wait(until) | Output::AwaitSession(until) => {
                clock.set(until.max(clock.now()));
                op.handle_input(Input::Timeout, clock.now());
            }
            Output::Done(result) => return (legs, result),
            _ => {}
        }
    }
}

#[test]
fn a_message_left_half_written_ends_the_process_at_once_before_the_result() {
    let clock = ManualClock::new();
    let mut session = Session::new(config_with_budget(2));
    let started = clock.now();
    let (legs, result) = call_a_server_that_stops_reading(&mut session, &clock, None);
    assert!(
        matches!(
            result,
            Err(Error::LegTimedOut {
                method: "tools/call",
                ..
            })
        ),
        "{result:?}"
    );
    // No notice (no line can follow half of one): the process is killed, then the result.
    assert_eq!(legs.last(), Some(&LegKind::Kill), "{legs:?}");
    assert!(!legs.contains(&LegKind::CancelNotice));
    assert_eq!(
        clock.now() - started,
        Duration::from_secs(2),
        "nothing waits after the budget"
    );
    assert!(
        !session.process_running(),
        "the next operation starts it again"
    );
    // A cancel while the write hangs: the same.
    let mut session = Session::new(config_with_budget(20));
    let (legs, result) =
        call_a_server_that_stops_reading(&mut session, &clock, Some(Duration::from_secs(1)));
    assert!(matches!(result, Err(Error::Cancelled { .. })), "{result:?}");
    assert_eq!(legs.last(), Some(&LegKind::Kill), "{legs:?}");
    assert!(!session.process_running());
}

#[test]
fn a_close_never_probes_and_after_a_spent_budget_ends_the_process_at_once() {
    // The era is not known yet: the first call's server/discover stalls until the budget ends.
    let clock = ManualClock::new();
    let stalls = |session: &mut Session| {
        let mut silent: Server = Box::new(|_| Reply::default());
        let op = session.call_tool("echo", Map::new(), clock.now());
        let deadline = *op.deadline();
        let run = drive(session, op, &clock, &mut silent);
        assert_eq!(labels(&run), ["spawn", "server/discover"]);
        assert!(
            matches!(run.result, Err(Error::LegTimedOut { .. })),
            "{:?}",
            run.result
        );
        deadline
    };
    let mut session = Session::new(config().with_budget(Budget::from_secs(2)));
    let spent = stalls(&mut session);
    assert!(session.process_running());
    let mut silent: Server = Box::new(|_| Reply::default());
    let before = clock.now();
    let op = session.close_within(&spent, clock.now());
    let run = drive(&mut session, op, &clock, &mut silent);
    assert_eq!(labels(&run), ["kill"], "no probe, no polite wait");
    assert!(matches!(run.result, Ok(mcp_proto::Outcome::Closed)));
    assert_eq!(clock.now(), before);
    assert!(!session.process_running());
    // A close of its own (budget left): a shutdown under the close's grant, still no probe.
    let mut session = Session::new(config().with_budget(Budget::from_secs(2)));
    let _ = stalls(&mut session);
    let op = session.close(clock.now());
    let run = drive(&mut session, op, &clock, &mut silent);
    assert_eq!(labels(&run), ["shutdown"]);
    assert_eq!(grants(&run), [2]);
}

#[test]
fn a_line_the_server_left_unfinished_is_read_on_by_the_next_operation_even_after_an_empty_close() {
    let clock = ManualClock::new();
    let config = config_with_budget(5).with_protocol_version(ProtocolVersion::MODERN);
    let mut session = Session::new(config);
    // Closing a session whose process never started sends nothing, and must still give the
    // session back what the operations after it read stdout with.
    let op = session.close(clock.now());
    let closed = drive(&mut session, op, &clock, &mut modern());
    assert!(closed.legs.is_empty() && closed.result.is_ok());
    // The first call's answer comes in one read with the start of a line the server does not
    // finish while that call runs.
    let mut first: Server = Box::new(|message| {
        let answer = result(
            &message["id"],
            json!({"content": [{"type": "text", "text": "one"}]}),
        );
        Reply {
            stdout: vec![format!("{answer}\nlog: half a line ").into_bytes()],
            ..Reply::default()
        }
    });
    let one = call(&mut session, &clock, &mut first);
    assert!(one.result.is_ok(), "{:?}", one.result);
    // What the server writes next ends that line: it is noise, not the second call's answer,
    // however much its end looks like one.
    let run = call(&mut session, &clock, &mut modern());
    assert!(
        run.events.iter().any(|e| matches!(
            e,
            Event::StdoutNoise { line } if line.starts_with("log: half a line {")
        )),
        "{:?}",
        run.events
    );
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
}

/// Over stdio there is no stream to close: a modern subscription that ends with its budget,
/// or is cancelled, is ended on the server with `notifications/cancelled` naming its request
/// (2026-07-28 cancellation), within the one unit past the budget. Otherwise the server keeps
/// every subscription it was ever sent, and sends each notification once for each.
#[test]
fn a_modern_subscription_over_stdio_is_cancelled_on_the_server_when_it_ends() {
    for cancelled in [false, true] {
        let clock = ManualClock::new();
        let mut session = Session::new(config().with_budget(Budget::from_secs(3)));
        let mut server = modern();
        let subscription = mcp_proto::Subscription {
            tools_list_changed: true,
            ..Default::default()
        };
        let mut op = session.subscribe(subscription, clock.now());
        let mut listen = None;
        let mut written = Vec::new();
        let result = loop {
            match op.poll_output(clock.now()) {
                Output::Update(update) => session.apply(update),
                Output::Transmit(leg) => {
                    op.handle_input(Input::Sent { leg: leg.id }, clock.now());
                    if leg.kind == LegKind::Spawn {
                        continue;
                    }
                    let message: Value = serde_json::from_slice(leg.request.body()).unwrap();
                    written.push(message.clone());
                    if message["method"] == "subscriptions/listen" {
                        listen = Some(message["id"].clone());
                        if cancelled {
                            op.handle_input(Input::Cancel, clock.now());
                            continue;
                        }
                    }
                    for chunk in server(&message).stdout {
                        op.handle_input(Input::Stdout(&chunk), clock.now());
                    }
                }
                Output::Wait(until) | Output::AwaitSession(until) => {
                    clock.set(until.max(clock.now()));
                    op.handle_input(Input::Timeout, clock.now());
                }
                Output::Done(result) => break result,
                _ => {}
            }
        };
        assert_eq!(result.is_ok(), !cancelled, "{result:?}");
        let notice = written.last().unwrap();
        assert_eq!(notice["method"], "notifications/cancelled", "{written:?}");
        assert_eq!(notice["params"]["requestId"], listen.unwrap());
    }
}
