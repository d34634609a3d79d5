//! Local servers over stdio, on every driver: the process as the operation's first leg and
//! kept across operations, the era probe, every hostile mode of the testkit's stdio server
//! ending in its own typed error inside the budget, the seed's sequence in real time, cancel
//! (fired once the server raised the signal for the state the test is about), a write to a
//! server that stopped reading cut at the budget, a dropped client's server killed at once,
//! and no process left behind.

use std::time::{Duration, Instant};

use mcp_proto::driver::LegKind;
use mcp_proto::{
    Action, Budget, Error, Event, ListKind, Outcome, ProtocolVersion, Resolution, SessionConfig,
};
use mcp_testkit::{
    PROCESS_TAG_ENV, ServerEra, StdioHostile, StdioScript, StdioSignal, StdioSignals,
    running_processes_tagged, stdio_server_command,
};

use super::support::{Driver, assert_within_budget, echo, echo_call, eventually};

/// A configuration for the testkit's stdio server with `script`, under `budget` at
/// millisecond resolution, tagged (in the child's environment) with `tag`.
fn stdio_config(script: &StdioScript, budget: Duration, tag: &str) -> SessionConfig {
    let command = stdio_server_command(script).env(PROCESS_TAG_ENV, tag);
    SessionConfig::stdio(command)
        .with_budget(Budget::from_duration(budget))
        .with_resolution(Resolution::MILLISECOND)
}

/// How long a close gives a local server that ignores EOF before SIGTERM: half the close's
/// grant (at most 2 s).
const POLITE_SHUTDOWN: Duration = Duration::from_secs(1);

/// A tag no other test uses.
fn tag(what: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    format!(
        "{what}-{}-{n}-{:?}",
        std::process::id(),
        std::thread::current().id()
    )
}

fn labels(recorder: &mcp_testkit::Recorder) -> Vec<&'static str> {
    recorder.legs().iter().map(|leg| leg.kind.label()).collect()
}

pub(super) fn a_local_server_is_started_by_the_first_operation_and_kept_for_the_next<D: Driver>() {
    let tag = tag("kept");
    let script = StdioScript::new().era(ServerEra::Legacy);
    let mut client = D::new(stdio_config(&script, Duration::from_secs(10), &tag));
    let recorder = client.observe();
    let result = client.call_tool("echo", echo("over stdio")).unwrap();
    assert_eq!(result.text(), "over stdio");
    assert_eq!(
        labels(&recorder),
        [
            "spawn",
            "server/discover",
            "initialize",
            "notifications/initialized",
            "tools/call"
        ]
    );
    assert_eq!(running_processes_tagged(&tag), 1);
    recorder.clear();
    let tools = client.list_tools().unwrap();
    assert!(tools.iter().any(|t| t.name == "echo"));
    assert_eq!(labels(&recorder), ["tools/list"]);
    recorder.clear();
    client.close().unwrap();
    assert_eq!(labels(&recorder), ["shutdown"]);
    assert_eq!(
        running_processes_tagged(&tag),
        0,
        "the server is gone after close"
    );
}

pub(super) fn a_modern_local_server_answers_its_probe_then_each_call_in_one_leg<D: Driver>() {
    let tag = tag("modern");
    let script = StdioScript::new().era(ServerEra::Modern);
    let mut client = D::new(stdio_config(&script, Duration::from_secs(10), &tag));
    let recorder = client.observe();
    assert_eq!(client.call_tool("echo", echo("m")).unwrap().text(), "m");
    assert_eq!(
        labels(&recorder),
        ["spawn", "server/discover", "tools/call"]
    );
    recorder.clear();
    assert_eq!(client.call_tool("echo", echo("n")).unwrap().text(), "n");
    assert_eq!(labels(&recorder), ["tools/call"]);
    drop(client);
}

pub(super) fn every_hostile_local_server_ends_in_its_own_typed_error_inside_the_budget<
    D: Driver,
>() {
    // A server that never answers is cut at a short budget; one that answers (after its
    // noise, notifications or questions) gets room for a slow machine.
    let budget_for = |mode: StdioHostile| match mode {
        StdioHostile::Stall | StdioHostile::Trickle | StdioHostile::WrongId => {
            Duration::from_secs(1)
        }
        _ => Duration::from_secs(10),
    };
    type Check = fn(&Result<mcp_proto::CallToolResult, Error>, &[Event]) -> bool;
    let rows: Vec<(StdioHostile, Check)> = vec![
        (StdioHostile::Stall, |r, _| {
            matches!(
                r,
                Err(Error::LegTimedOut {
                    method: "tools/call",
                    ..
                })
            )
        }),
        (StdioHostile::Trickle, |r, _| {
            matches!(
                r,
                Err(Error::LegTimedOut {
                    method: "tools/call",
                    ..
                })
            )
        }),
        (StdioHostile::HugeLine(8 * 1024 * 1024), |r, _| {
            matches!(
                r,
                Err(Error::AnswerTooLarge {
                    method: "tools/call",
                    ..
                })
            )
        }),
        (
            StdioHostile::Exit(3),
            |r, _| matches!(r, Err(Error::ServerExited { method: "tools/call", status: Some(3), stderr, .. }) if !stderr.is_empty()),
        ),
        (StdioHostile::WrongId, |r, _| {
            // An answer for another id is a late answer to someone else: not this call's.
            matches!(
                r,
                Err(Error::LegTimedOut {
                    method: "tools/call",
                    ..
                })
            )
        }),
        (StdioHostile::Garbage(3), |r, events| {
            r.is_ok()
                && events
                    .iter()
                    .filter(|e| matches!(e, Event::StdoutNoise { .. }))
                    .count()
                    == 3
        }),
        (StdioHostile::NotificationsFirst(200), |r, events| {
            r.is_ok()
                && events
                    .iter()
                    .filter(|e| matches!(e, Event::Notification(_)))
                    .count()
                    >= 200
        }),
        (
            StdioHostile::ServerRequest(mcp_testkit::ServerAsk::Ping),
            |r, _| r.is_ok(),
        ),
        (StdioHostile::StderrFlood(1024 * 1024), |r, _| r.is_ok()),
        (StdioHostile::Slow(100), |r, _| r.is_ok()),
    ];
    let mut failures = Vec::new();
    for (mode, check) in rows {
        let budget = budget_for(mode);
        let tag = tag("hostile");
        let script = StdioScript::new()
            .era(ServerEra::Legacy)
            .hostile("tools/call", mode);
        let mut client = D::new(
            stdio_config(&script, budget, &tag).with_protocol_version(ProtocolVersion::LATEST),
        );
        let recorder = client.observe();
        let started = Instant::now();
        let result = client.call_tool("echo", echo("x"));
        let elapsed = started.elapsed();
        eprintln!("{mode}: {result:?} after {elapsed:?}");
        if !check(&result, &recorder.events()) {
            failures.push(format!("{mode}: {result:?}"));
        }
        assert_within_budget(&mode.to_string(), elapsed, budget, Duration::from_millis(1));
        drop(client);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

pub(super) fn a_stalled_local_server_is_cut_at_the_budget_and_no_process_is_left<D: Driver>() {
    let tag = tag("stall");
    let budget = Duration::from_secs(2);
    let script = StdioScript::new()
        .era(ServerEra::Legacy)
        .hostile("tools/call", StdioHostile::Stall);
    let mut client = D::new(stdio_config(&script, budget, &tag));
    let started = Instant::now();
    let result = client.call_tool("echo", echo("x"));
    let elapsed = started.elapsed();
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
    super::assert_cut_at_budget("stall", elapsed, budget, super::MS);
    assert_eq!(
        running_processes_tagged(&tag),
        1,
        "the process is kept for the next call"
    );
    client.close().unwrap();
    assert_eq!(running_processes_tagged(&tag), 0, "closed: no process left");
}

pub(super) fn a_local_server_that_ignores_eof_is_terminated_on_close<D: Driver>() {
    let tag = tag("eof");
    let script = StdioScript::new().era(ServerEra::Legacy).ignore_eof(true);
    let mut client = D::new(stdio_config(&script, Duration::from_secs(10), &tag));
    client.call_tool("echo", echo("x")).unwrap();
    let recorder = client.observe();
    let started = Instant::now();
    client.close().unwrap();
    let took = started.elapsed();
    // The close's steps, each the operation's: stdin closed, half the close's 2 s grant for
    // the server to exit on its own, then SIGTERM, which ends it (the kill at the grant's end
    // is not needed).
    assert_eq!(labels(&recorder), ["shutdown", "terminate"]);
    assert!(took >= POLITE_SHUTDOWN, "SIGTERM came early: {took:?}");
    assert!(
        took < Duration::from_secs(2) + super::support::MARGIN,
        "{took:?}"
    );
    assert_eq!(running_processes_tagged(&tag), 0);
}

pub(super) fn a_dropped_client_kills_its_local_server_at_once<D: Driver>() {
    // A server that ignores EOF: a polite shutdown (stdin closed, then half the close's 2 s
    // grant before SIGTERM) would leave it running for a second; a drop kills it at once. A
    // cancel handle kept past the drop (a signal handler holds one to the end) changes
    // nothing: it must not keep the client, and so the server, alive.
    let tag = tag("drop");
    let script = StdioScript::new().era(ServerEra::Legacy).ignore_eof(true);
    let mut client = D::new(stdio_config(&script, Duration::from_secs(10), &tag));
    client.call_tool("echo", echo("x")).unwrap();
    let cancel = client.cancel_handle();
    assert_eq!(running_processes_tagged(&tag), 1);
    let dropped = Instant::now();
    drop(client);
    let gone = eventually(Duration::from_secs(5), &mut || {
        running_processes_tagged(&tag) == 0
    });
    let took = dropped.elapsed();
    // A cancel once the client is gone reaches nothing (and the handle lived until now).
    cancel();
    eprintln!("a dropped client's server was gone after {took:?}");
    assert!(
        gone,
        "the server outlived its client (kept by the cancel handle?)"
    );
    assert!(
        took < POLITE_SHUTDOWN / 2,
        "the server ended {took:?} after the drop: not killed at once (a polite shutdown \
         gives it {POLITE_SHUTDOWN:?} before SIGTERM)"
    );
}

pub(super) fn a_local_server_that_died_is_started_again_by_the_next_operation<D: Driver>() {
    let tag = tag("restart");
    let script = StdioScript::new()
        .era(ServerEra::Legacy)
        .hostile("tools/call", StdioHostile::Exit(7));
    let mut client = D::new(
        stdio_config(&script, Duration::from_secs(5), &tag)
            .with_protocol_version(ProtocolVersion::LATEST),
    );
    let recorder = client.observe();
    let err = client.call_tool("echo", echo("x")).unwrap_err();
    assert!(
        matches!(
            err,
            Error::ServerExited {
                status: Some(7),
                ..
            }
        ),
        "{err:?}"
    );
    recorder.clear();
    // The next operation starts a new process (which lists its tools fine).
    let tools = client.list_tools().unwrap();
    assert!(!tools.is_empty());
    assert_eq!(
        labels(&recorder),
        [
            "spawn",
            "initialize",
            "notifications/initialized",
            "tools/list"
        ]
    );
}

pub(super) fn a_program_that_is_not_there_is_the_callers_error<D: Driver>() {
    let config = SessionConfig::stdio(mcp_proto::StdioCommand::new(
        "/nonexistent/mcp-server-that-is-not-there",
    ));
    let mut client = D::new(config);
    let err = client.call_tool("echo", echo("x")).unwrap_err();
    assert!(matches!(err, Error::SpawnFailed { .. }), "{err:?}");
    assert_eq!(err.fault(), mcp_proto::Fault::Caller);
}

pub(super) fn the_seed_sequence_holds_over_stdio_in_real_time<D: Driver>() {
    // A probe of 4 s and a first page of 2 s (the second page answers at once): after the
    // process started, the grants are the seed's 20, 16, 14 (whole seconds).
    let tag = tag("seed");
    let script = StdioScript::new()
        .era(ServerEra::Modern)
        .tool_pages(2)
        .delay("server/discover", Duration::from_secs(4))
        .delay("tools/list", Duration::from_secs(2));
    let config = stdio_config(&script, Duration::from_secs(20), &tag)
        .with_resolution(Resolution::SECOND)
        .with_max_pages(3);
    let mut client = D::new(config);
    let recorder = client.observe();
    let outcome = client.run(Action::List(ListKind::Tools), Budget::from_secs(20));
    assert!(matches!(outcome, Ok(Outcome::Tools(_))), "{outcome:?}");
    let grants: Vec<u128> = recorder.grants_ms();
    let kinds: Vec<LegKind> = recorder.legs().iter().map(|l| l.kind).collect();
    assert_eq!(kinds[0], LegKind::Spawn);
    assert_eq!(grants[1..4], [20_000, 16_000, 14_000], "{kinds:?}");
}

pub(super) fn a_cancel_ends_a_local_call_at_once<D: Driver>() {
    let tag = tag("cancel");
    let signals = StdioSignals::new(&tag);
    let script = StdioScript::new()
        .era(ServerEra::Legacy)
        .hostile("tools/call", StdioHostile::Stall)
        .signal_file(signals.path());
    let mut client = D::new(stdio_config(&script, Duration::from_secs(10), &tag));
    client.probe().unwrap();
    let latency = cancel_once(
        &mut client,
        &signals,
        StdioSignal::Stalled("tools/call"),
        |c| c.call_tool("echo", echo("x")),
    );
    // The budget is 10 s: a cancel that had to wait for it would show.
    assert!(latency < Duration::from_secs(1), "{latency:?}");
}

/// While a call holds the local server (one stdout: operations take turns), another, through a
/// clone cancelled for good before it began, ends at once instead of waiting for its turn: what
/// `mcp-call bridge` asks of a host request cancelled while its watcher holds the server.
pub(super) fn a_call_cancelled_for_good_does_not_wait_for_its_turn_on_a_local_server<
    D: Driver + Sync,
>() {
    let tag = tag("for-good");
    let signals = StdioSignals::new(&tag);
    let script = StdioScript::new()
        .era(ServerEra::Legacy)
        .hostile("tools/call", StdioHostile::Stall)
        .signal_file(signals.path());
    let budget = Duration::from_secs(10);
    let mut client = D::new(stdio_config(&script, budget, &tag));
    client.probe().unwrap();
    let client = &client;
    let (release, released) = std::sync::mpsc::channel::<()>();
    let (held, stalled, result, took) = std::thread::scope(|scope| {
        // The held call is cancelled once released (its trigger returns).
        let trigger = Box::new(move || {
            let _ = released.recv();
        });
        let holder = scope.spawn(move || {
            client.call_tools_at_once(vec![("echo", echo("held"))], Some((0, trigger)))
        });
        let stalled = eventually(budget, &mut || {
            signals.raised(StdioSignal::Stalled("tools/call"))
        });
        let started = Instant::now();
        let result = client.call_cancelled_for_good("echo", echo("never sent"));
        let took = started.elapsed();
        drop(release);
        (holder.join().unwrap(), stalled, result, took)
    });
    assert!(stalled, "the held call never reached the server: {held:?}");
    assert!(matches!(result, Err(Error::Cancelled { .. })), "{result:?}");
    assert!(
        took < budget / 10,
        "waited {took:?} (its budget {budget:?})"
    );
    assert!(
        matches!(held[..], [Err(Error::Cancelled { .. })]),
        "{held:?}"
    );
}

/// Runs `call` on `client` and cancels it from another thread once the stdio server raised
/// `signal` (the state the test is about); asserts the call ended cancelled and returns how
/// long it took to return once the cancel was fired.
fn cancel_once<D: Driver>(
    client: &mut D,
    signals: &StdioSignals,
    signal: StdioSignal<'static>,
    call: impl FnOnce(&mut D) -> Result<mcp_proto::CallToolResult, Error>,
) -> Duration {
    let cancel = client.cancel_handle();
    let (result, returned, fired) = std::thread::scope(|scope| {
        let canceller = scope.spawn(move || {
            let raised = eventually(Duration::from_secs(10), &mut || signals.raised(signal));
            let fired = Instant::now();
            cancel();
            (raised, fired)
        });
        let result = call(client);
        (result, Instant::now(), canceller.join().unwrap())
    });
    let (raised, fired) = fired;
    assert!(raised, "the server never reached {signal}: {result:?}");
    assert!(matches!(result, Err(Error::Cancelled { .. })), "{result:?}");
    let latency = returned.saturating_duration_since(fired);
    eprintln!("cancelled once the server reached {signal}: returned {latency:?} after");
    latency
}

/// A call whose argument (120 KB) cannot fit in the pipe of a server that stopped reading.
fn a_long_echo() -> serde_json::Map<String, serde_json::Value> {
    echo(&"x".repeat(120 * 1024))
}

pub(super) fn a_local_server_that_stops_reading_is_cut_at_the_budget_and_ended<D: Driver>() {
    let tag = tag("noread");
    let budget = Duration::from_secs(2);
    let script = StdioScript::new()
        .era(ServerEra::Legacy)
        .hostile("notifications/initialized", StdioHostile::StopReading);
    let mut client = D::new(
        stdio_config(&script, budget, &tag).with_protocol_version(ProtocolVersion::V2025_11_25),
    );
    let recorder = client.observe();
    let started = Instant::now();
    let result = client.call_tool("echo", a_long_echo());
    let elapsed = started.elapsed();
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
    super::assert_cut_at_budget("noread", elapsed, budget, super::MS);
    // Its stdin holds half a line: the process is ended before the result, not kept.
    assert_eq!(
        running_processes_tagged(&tag),
        0,
        "the wedged server is gone"
    );
    assert_eq!(
        labels(&recorder).last(),
        Some(&"kill"),
        "{:?}",
        labels(&recorder)
    );
    // The close after it has nothing to end, and the next call starts a new process.
    let started = Instant::now();
    client.close().unwrap();
    assert!(started.elapsed() < super::support::MARGIN);
}

pub(super) fn a_cancel_reaches_a_write_to_a_server_that_stopped_reading<D: Driver>() {
    let tag = tag("noread-cancel");
    let signals = StdioSignals::new(&tag);
    let script = StdioScript::new()
        .era(ServerEra::Legacy)
        .hostile("notifications/initialized", StdioHostile::StopReading)
        .signal_file(signals.path());
    let mut client = D::new(
        stdio_config(&script, Duration::from_secs(30), &tag)
            .with_protocol_version(ProtocolVersion::V2025_11_25),
    );
    client.probe().unwrap();
    // The call's line began to arrive and the server reads no more of it: the write is stuck.
    let latency = cancel_once(&mut client, &signals, StdioSignal::WriteStuck, |c| {
        c.call_tool("echo", a_long_echo())
    });
    assert!(
        latency < Duration::from_secs(1),
        "the cancel reached the write: {latency:?} (30 s budget)"
    );
    assert_eq!(running_processes_tagged(&tag), 0);
}

pub(super) fn a_close_after_a_spent_budget_ends_the_local_server_at_once<D: Driver>() {
    // Reads everything, answers nothing: the era probe is never answered either.
    let tag = tag("spent-close");
    let budget = Duration::from_secs(2);
    let script = StdioScript::new()
        .era(ServerEra::Legacy)
        .hostile("*", StdioHostile::Stall)
        .ignore_eof(true);
    let mut client = D::new(stdio_config(&script, budget, &tag));
    let recorder = client.observe();
    let deadline = client.open_deadline();
    let started = Instant::now();
    let result = client.run_within(echo_call("x"), deadline);
    assert!(
        matches!(result, Err(Error::LegTimedOut { .. })),
        "{result:?}"
    );
    client.close_within(&deadline).unwrap();
    let elapsed = started.elapsed();
    super::assert_within_budget("spent close", elapsed, budget, super::MS);
    assert_eq!(running_processes_tagged(&tag), 0, "no process is left");
    let labels = labels(&recorder);
    assert_eq!(
        labels.iter().filter(|l| **l == "server/discover").count(),
        1,
        "the close never probes: {labels:?}"
    );
    assert_eq!(labels.last(), Some(&"kill"), "{labels:?}");
}

/// The testkit's stdio server with `script`, started the way desktop hosts start most local
/// servers: through a shell (`sh -c '<before>"$0" "$@"; true'`, the server a child of the
/// shell, not exec'd), so the client's own child is the wrapper and the real server its child.
/// `before` runs first in the same shell (a helper started in the background, say). Every
/// process of the tree carries the tag in its environment.
fn wrapped_config(
    script: &StdioScript,
    before: &str,
    budget: Duration,
    tag: &str,
) -> SessionConfig {
    let server = stdio_server_command(script);
    let command = mcp_proto::StdioCommand::new("sh")
        .args(["-c", &format!(r#"{before}"$0" "$@"; true"#)])
        .arg(server.program())
        .args(server.arguments().iter().cloned())
        .env(PROCESS_TAG_ENV, tag);
    SessionConfig::stdio(command)
        .with_budget(Budget::from_duration(budget))
        .with_resolution(Resolution::MILLISECOND)
}

/// Waits (up to 5 s: a killed process is gone in microseconds) until no process carries
/// `tag`; says how long that took, or how many are left.
fn tree_gone(tag: &str) -> Result<Duration, usize> {
    let started = Instant::now();
    if eventually(Duration::from_secs(5), &mut || {
        running_processes_tagged(tag) == 0
    }) {
        Ok(started.elapsed())
    } else {
        Err(running_processes_tagged(tag))
    }
}

pub(super) fn a_stalled_wrapped_local_server_is_ended_with_its_whole_tree_at_the_budget<
    D: Driver,
>() {
    // `sh -c 'server; true'`: the shell waits for the server, which reads every line, answers
    // none and ignores the end of its input. A kill that reached only the shell would leave
    // the server running, re-parented.
    let tag = tag("wrapped-stall");
    let budget = Duration::from_secs(2);
    let script = StdioScript::new()
        .era(ServerEra::Legacy)
        .hostile("*", StdioHostile::Stall)
        .ignore_eof(true);
    let mut client = D::new(wrapped_config(&script, "", budget, &tag));
    let recorder = client.observe();
    let deadline = client.open_deadline();
    let started = Instant::now();
    let result = client.run_within(echo_call("x"), deadline);
    assert!(
        matches!(result, Err(Error::LegTimedOut { .. })),
        "{result:?}"
    );
    assert_eq!(
        running_processes_tagged(&tag),
        2,
        "the shell and its server"
    );
    client.close_within(&deadline).unwrap();
    let elapsed = started.elapsed();
    super::assert_within_budget("wrapped stall", elapsed, budget, super::MS);
    assert_eq!(labels(&recorder).last(), Some(&"kill"));
    let gone = tree_gone(&tag);
    eprintln!("the stalled wrapped server's tree: {gone:?} after the close");
    assert!(
        gone.is_ok(),
        "{gone:?} processes of the tree left after the kill"
    );
}

pub(super) fn a_closed_wrapped_local_server_leaves_nothing_of_its_tree<D: Driver>() {
    // A well-behaved server under a shell that first started a helper of its own in the
    // background (its output elsewhere, so the server's stdout closes when the server ends).
    // The close ends the server with its input, the shell after it, and the helper with them.
    let tag = tag("wrapped-close");
    let script = StdioScript::new().era(ServerEra::Legacy);
    let helper = "sleep 600 </dev/null >/dev/null 2>&1 & ";
    let mut client = D::new(wrapped_config(
        &script,
        helper,
        Duration::from_secs(10),
        &tag,
    ));
    client.call_tool("echo", echo("x")).unwrap();
    assert_eq!(
        running_processes_tagged(&tag),
        3,
        "the shell, its helper and the server"
    );
    let recorder = client.observe();
    let started = Instant::now();
    client.close().unwrap();
    let took = started.elapsed();
    // Its input's end ends it: no SIGTERM was needed.
    assert_eq!(labels(&recorder), ["shutdown"]);
    assert!(took < POLITE_SHUTDOWN, "{took:?}");
    let gone = tree_gone(&tag);
    eprintln!("the closed wrapped server's tree: {gone:?} after a {took:?} close");
    assert!(
        gone.is_ok(),
        "{gone:?} processes of the tree left after the close"
    );
}

pub(super) fn a_dropped_client_ends_its_wrapped_local_server_s_whole_tree<D: Driver>() {
    let tag = tag("wrapped-drop");
    let script = StdioScript::new().era(ServerEra::Legacy).ignore_eof(true);
    let mut client = D::new(wrapped_config(&script, "", Duration::from_secs(10), &tag));
    client.call_tool("echo", echo("x")).unwrap();
    assert_eq!(
        running_processes_tagged(&tag),
        2,
        "the shell and its server"
    );
    drop(client);
    let gone = tree_gone(&tag);
    eprintln!("a dropped client's wrapped server's tree: {gone:?} after the drop");
    assert!(
        gone.is_ok(),
        "{gone:?} processes of the tree left after the drop"
    );
}
