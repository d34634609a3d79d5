//! Tasks in the modern era (the extension `io.modelcontextprotocol/tasks`): a `tools/call`
//! the server answers with a task is polled with `tasks/get` inside the same budget, each poll
//! a leg granted what is left, until the task completes; when the budget cannot see it done,
//! the task is handed back in the operation's error, and nothing is polled after the deadline.
//! A handed-back task is resumed or cancelled under a new budget; a task waiting for input is
//! answered with `tasks/update`. And in the legacy era (2025-11-25, tasks in the core): the
//! call asks for a task when the tool requires one, the result comes with `tasks/result`, and
//! the task lives in its session.

mod support;

use std::time::Duration;

use mcp_proto::driver::LegKind;
use mcp_proto::task::{TaskEra, TaskStatus};
use mcp_proto::{
    Budget, Clock, Error, Fault, ManualClock, ProtocolVersion, Resolution, Session, SessionConfig,
};
use serde_json::{Map, Value, json};
use support::{Answer, drive};

const TASK: &str = "786512e2-9e0d-44bd-8f29-789f320fe840";

fn modern() -> SessionConfig {
    SessionConfig::new("http://mcp.example.test:8080/mcp")
        .unwrap()
        .with_protocol_version(ProtocolVersion::MODERN)
        .with_resolution(Resolution::MILLISECOND)
        .with_tasks(true)
}

/// A task as FastMCP with `fastmcp-tasks` describes it (`resultType` "task" when created,
/// "complete" when polled).
fn task(result_type: &str, status: &str, interval_ms: u64) -> Value {
    json!({
        "resultType": result_type, "taskId": TASK, "status": status,
        "statusMessage": format!("the task is {status}"),
        "createdAt": "2026-12-03T13:48:32Z", "lastUpdatedAt": "2026-12-03T13:48:32Z",
        "ttlMs": 900000, "pollIntervalMs": interval_ms,
    })
}

fn created(interval_ms: u64) -> Answer {
    Answer::Result(task("task", "working", interval_ms))
}

fn working(interval_ms: u64) -> Answer {
    Answer::Result(task("complete", "working", interval_ms))
}

fn completed() -> Answer {
    let mut done = task("complete", "completed", 5000);
    done["result"] = json!({"content": [{"type": "text", "text": "slept 2.0"}], "isError": false});
    Answer::Result(done)
}

fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

#[test]
fn a_call_that_becomes_a_task_is_polled_inside_the_budget_until_it_completes() {
    let clock = ManualClock::new();
    let mut session = Session::new(modern());
    let t0 = clock.now();
    let op = session.call_tool("slow", Map::new(), t0);
    // Every answer takes 10 ms.
    let run = drive(&mut session, op, &clock, &[0.01; 8], |kind, leg| {
        match (kind, leg) {
            (LegKind::CallTool, _) => created(5000),
            (LegKind::TaskGet, 2 | 3) => working(5000),
            (LegKind::TaskGet, _) => completed(),
            _ => unreachable!("{kind:?}"),
        }
    });
    let call = run.result.clone().unwrap().into_call().unwrap();
    assert_eq!(call.text(), "slept 2.0");
    assert_eq!(
        run.methods(),
        ["tools/call", "tasks/get", "tasks/get", "tasks/get"]
    );
    // The call declared the extension; every poll names its task, in the body and the header.
    assert_eq!(
        run.legs[0].body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"],
        json!({"io.modelcontextprotocol/tasks": {}})
    );
    for poll in &run.legs[1..] {
        assert_eq!(poll.body["method"], "tasks/get");
        assert_eq!(poll.body["params"]["taskId"], TASK);
        let headers = poll.request.headers();
        assert_eq!(headers["mcp-method"], "tasks/get");
        assert_eq!(headers["mcp-name"], TASK);
    }
    // The polls ramp from 20 ms, doubling, under the server's 5 s interval: a quick task is
    // seen done in milliseconds. Each poll is a leg granted what is left of the budget.
    let sent: Vec<Duration> = run.legs.iter().map(|leg| leg.sent_at - t0).collect();
    assert_eq!(sent, [ms(0), ms(30), ms(80), ms(170)]);
    let grants: Vec<Duration> = run.legs.iter().map(|leg| leg.grant).collect();
    let budget = Budget::DEFAULT.as_duration();
    assert_eq!(
        grants,
        sent.iter().map(|&at| budget - at).collect::<Vec<_>>()
    );
    // The caller hears of the task when it is made and when it changes, not at every poll.
    let seen: Vec<(TaskStatus, Option<&str>)> = (run.events.iter())
        .filter_map(|event| match event {
            mcp_proto::Event::TaskStatus {
                task_id,
                status,
                message,
            } if task_id == TASK => Some((*status, message.as_deref())),
            _ => None,
        })
        .collect();
    assert_eq!(
        seen,
        [
            (TaskStatus::Working, Some("the task is working")),
            (TaskStatus::Completed, Some("the task is completed")),
        ]
    );
}

/// A 2 s budget at `resolution` on a task that never ends, each answer taking 10 ms: the run,
/// and when it started.
fn never_done(resolution: Resolution) -> (support::Run, std::time::Instant) {
    let clock = ManualClock::new();
    let config = modern()
        .with_resolution(resolution)
        .with_budget(Budget::from_secs(2));
    let mut session = Session::new(config);
    let t0 = clock.now();
    let op = session.call_tool("slow", Map::new(), t0);
    let answers = |kind, _| match kind {
        LegKind::CallTool => created(500),
        _ => working(500),
    };
    (drive(&mut session, op, &clock, &[0.01; 64], answers), t0)
}

#[test]
fn a_budget_spent_while_the_task_runs_hands_the_task_back_and_polls_nothing_after_it() {
    // At either resolution: at one second, the last poll still goes out a round trip before
    // the end, not a second before it.
    for resolution in [Resolution::MILLISECOND, Resolution::SECOND] {
        let (run, t0) = never_done(resolution);
        let err = run.result.clone().unwrap_err();
        assert!(matches!(err, Error::TaskRunning { .. }), "{err:?}");
        assert_eq!(err.fault(), Fault::Budget);
        let handle = err.task().unwrap();
        assert_eq!(handle.task_id, TASK);
        assert_eq!(handle.era, TaskEra::Modern);
        assert_eq!(handle.status, TaskStatus::Working);
        assert_eq!(
            handle.status_message.as_deref(),
            Some("the task is working")
        );
        assert_eq!(handle.ttl, Some(Duration::from_secs(900)));
        assert_eq!(handle.server, "mcp.example.test:8080");
        let text = err.to_string();
        assert!(
            text.contains(TASK) && text.contains("keeps running on the server"),
            "{text}"
        );

        // The last poll was timed to be answered before the end (its answer takes 10 ms), and
        // nothing went out after it; the operation ended inside its budget.
        let end = t0 + Duration::from_secs(2);
        let last = run.legs.last().unwrap();
        assert_eq!(last.sent_at, end - ms(10), "{:?}", run.methods());
        assert!(run.elapsed <= Duration::from_secs(2), "{:?}", run.elapsed);
        // The waits between polls never exceeded the server's interval.
        for pair in run.legs.windows(2) {
            assert!(pair[1].sent_at - pair[0].sent_at <= ms(510));
        }
    }
}

#[test]
fn a_poll_that_cannot_be_answered_in_time_is_not_sent() {
    // The call's answer takes 1.995 s of a 2 s budget: a poll would take as long, so none
    // goes out, and the task is handed back at once.
    let clock = ManualClock::new();
    let mut session = Session::new(modern().with_budget(Budget::from_secs(2)));
    let op = session.call_tool("slow", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[1.995], |_, _| created(500));
    assert_eq!(run.methods(), ["tools/call"]);
    let err = run.result.unwrap_err();
    assert_eq!(err.task().map(|task| task.task_id.as_str()), Some(TASK));
}

#[test]
fn a_poll_that_runs_out_with_the_budget_hands_the_task_back() {
    let clock = ManualClock::new();
    let mut session = Session::new(modern().with_budget(Budget::from_secs(2)));
    let op = session.call_tool("slow", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[0.01], |kind, _| match kind {
        LegKind::CallTool => created(500),
        _ => Answer::Stall,
    });
    assert_eq!(run.methods(), ["tools/call", "tasks/get"]);
    let err = run.result.unwrap_err();
    assert!(matches!(err, Error::TaskRunning { .. }), "{err:?}");
}

#[test]
fn a_failed_task_is_the_server_s_error_and_a_cancelled_one_its_own() {
    let clock = ManualClock::new();
    let mut session = Session::new(modern());
    let op = session.call_tool("slow", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], |kind, _| match kind {
        LegKind::CallTool => created(10),
        _ => {
            let mut failed = task("complete", "failed", 10);
            failed["error"] = json!({"code": -32603, "message": "API rate limit exceeded"});
            Answer::Result(failed)
        }
    });
    match run.result.unwrap_err() {
        Error::JsonRpc {
            code,
            message,
            method,
            ..
        } => {
            assert_eq!(
                (code, message.as_str()),
                (-32603, "API rate limit exceeded")
            );
            assert_eq!(method, "tasks/get", "the poll that found it failed");
        }
        other => panic!("{other:?}"),
    }

    let op = session.call_tool("slow", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], |kind, _| match kind {
        LegKind::CallTool => created(10),
        _ => Answer::Result(task("complete", "cancelled", 10)),
    });
    let err = run.result.unwrap_err();
    assert!(
        matches!(&err, Error::TaskCancelled { task_id, message: Some(m), method, .. } if task_id == TASK && m == "the task is cancelled" && *method == "tools/call"),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("of the tools/call request"),
        "{err}"
    );
    assert_eq!(err.fault(), Fault::Server);
}

#[test]
fn a_task_where_none_may_be_is_an_invalid_answer() {
    // Without the extension declared, the server may not make a task.
    let clock = ManualClock::new();
    let mut session = Session::new(modern().with_tasks(false));
    let op = session.call_tool("slow", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], |_, _| created(10));
    let err = run.result.unwrap_err();
    assert!(matches!(err, Error::Malformed { .. }), "{err:?}");
    assert!(err.to_string().contains("cannot create"), "{err}");
    let call = &run.legs[0].body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"];
    assert!(call.get("extensions").is_none(), "{call}");

    // A listing cannot become a task, extension or not.
    let mut session = Session::new(modern());
    let op = session.list_tools(clock.now());
    let run = drive(&mut session, op, &clock, &[], |_, _| created(10));
    assert!(
        matches!(run.result, Err(Error::Malformed { .. })),
        "{:?}",
        run.result
    );

    // A poll answered for another task.
    let mut session = Session::new(modern());
    let op = session.call_tool("slow", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], |kind, _| match kind {
        LegKind::CallTool => created(10),
        _ => {
            let mut other = task("complete", "working", 10);
            other["taskId"] = json!("someone-else");
            Answer::Result(other)
        }
    });
    let err = run.result.unwrap_err();
    assert!(err.to_string().contains("someone-else"), "{err}");
}

#[test]
fn a_cancelled_call_cancels_its_task_on_the_server() {
    use mcp_proto::driver::{Input, Output};
    use support::{FeedAnswer, json_head};
    let clock = ManualClock::new();
    let mut session = Session::new(modern());
    let mut op = session.call_tool("slow", Map::new(), clock.now());
    // The next output that is not a report or an update (applied to the session).
    let next = |op: &mut mcp_proto::driver::Operation, session: &mut Session| loop {
        match op.poll_on(session, clock.now()) {
            Output::LegEnded(_) | Output::Event(_) => {}
            output => break output,
        }
    };
    let Output::Transmit(call) = next(&mut op, &mut session) else {
        panic!("the call goes out first")
    };
    let id: Value = serde_json::from_slice(call.request.body()).unwrap();
    let answer = json!({"jsonrpc": "2.0", "id": id["id"], "result": task("task", "working", 500)});
    let body = serde_json::to_vec(&answer).unwrap();
    let ok = http::StatusCode::OK;
    op.feed_answer(call.id, ok, &json_head(), &body, clock.now());
    // The first poll waits its 20 ms; the caller cancels before it.
    let waited = next(&mut op, &mut session);
    assert!(matches!(waited, Output::Wait(_)), "{waited:?}");
    clock.advance(ms(5));
    op.handle_input(Input::Cancel, clock.now());
    let Output::Transmit(cancel) = next(&mut op, &mut session) else {
        panic!("the task's cancel goes out")
    };
    assert_eq!(cancel.kind, LegKind::TaskCancelNotice);
    assert_eq!(cancel.timeout, mcp_proto::driver::CANCEL_NOTICE_GRANT);
    let sent: Value = serde_json::from_slice(cancel.request.body()).unwrap();
    assert_eq!(
        sent["method"], "tasks/cancel",
        "never notifications/cancelled"
    );
    assert_eq!(sent["params"]["taskId"], TASK);
    assert_eq!(cancel.request.headers()["mcp-name"], TASK);
    assert_eq!(cancel.request.headers()["mcp-method"], "tasks/cancel");
    let ack = json!({"jsonrpc": "2.0", "id": sent["id"], "result": {"resultType": "complete"}});
    let body = serde_json::to_vec(&ack).unwrap();
    op.feed_answer(cancel.id, ok, &json_head(), &body, clock.now());
    assert!(matches!(
        next(&mut op, &mut session),
        Output::Done(Err(Error::Cancelled { .. }))
    ));
}

/// The handle a 2 s budget handed back on a task that never ended.
fn handed_back() -> mcp_proto::task::TaskHandle {
    let (run, _) = never_done(Resolution::MILLISECOND);
    run.result.unwrap_err().task().unwrap().clone()
}

#[test]
fn a_handed_back_task_is_resumed_under_a_new_budget_until_it_completes() {
    let handle = handed_back();
    // A new session, even one that does not ask for tasks: the polls declare the extension
    // (the server refuses them otherwise), and no call is made again.
    let clock = ManualClock::new();
    let mut session = Session::new(modern().with_tasks(false));
    let t0 = clock.now();
    let op = session.resume_task(handle, t0);
    let run = drive(&mut session, op, &clock, &[0.01; 8], |kind, leg| {
        match (kind, leg) {
            (LegKind::TaskGet, 1) => working(50),
            (LegKind::TaskGet, _) => completed(),
            _ => unreachable!("{kind:?}"),
        }
    });
    let call = run.result.clone().unwrap().into_call().unwrap();
    assert_eq!(call.text(), "slept 2.0");
    assert_eq!(run.methods(), ["tasks/get", "tasks/get"]);
    for poll in &run.legs {
        assert_eq!(poll.body["params"]["taskId"], TASK);
        assert_eq!(poll.request.headers()["mcp-name"], TASK);
        assert_eq!(
            poll.body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"],
            json!({"io.modelcontextprotocol/tasks": {}})
        );
    }
    // The first poll goes out at once; the next one after the ramp's first 20 ms.
    let sent: Vec<Duration> = run.legs.iter().map(|leg| leg.sent_at - t0).collect();
    assert_eq!(sent, [ms(0), ms(30)]);
    let budget = Budget::DEFAULT.as_duration();
    assert_eq!(run.legs[0].grant, budget, "the new budget, whole");
}

#[test]
fn a_resumed_task_s_result_is_held_to_its_tool_s_output_schema() {
    // The handle names the tool its call ran; a session that listed the tool's schema checks
    // the result the task ends with as it would have checked the call's.
    let handle = handed_back();
    assert_eq!(handle.tool.as_deref(), Some("slow"));
    let clock = ManualClock::new();
    let mut session = Session::new(modern());
    let op = session.list_tools(clock.now());
    let listed = drive(&mut session, op, &clock, &[0.01], |_, _| {
        Answer::Result(
            json!({"tools": [{"name": "slow", "inputSchema": {"type": "object"},
            "outputSchema": {"type": "object", "required": ["seconds"]}}]}),
        )
    });
    assert!(listed.result.is_ok(), "{:?}", listed.result);
    let op = session.resume_task(handle.clone(), clock.now());
    let run = drive(&mut session, op, &clock, &[0.01], |_, _| completed());
    let err = run.result.unwrap_err();
    let Error::OutputInvalid { tool, problem, .. } = &err else {
        panic!("not an output error: {err:?}")
    };
    assert_eq!(tool, "slow");
    assert_eq!(**problem, mcp_proto::schema::OutputProblem::Missing);
    // A handle made from an id alone names no tool: its result is handed over unchecked.
    let bare = mcp_proto::task::TaskHandle::new(&handle.server, TASK, TaskEra::Modern);
    let op = session.resume_task(bare, clock.now());
    let run = drive(&mut session, op, &clock, &[0.01], |_, _| completed());
    assert!(run.result.is_ok(), "{:?}", run.result);
}

#[test]
fn a_resumed_task_that_outlives_its_budget_too_is_handed_back_again_with_its_news() {
    let handle = handed_back();
    let clock = ManualClock::new();
    let mut session = Session::new(modern().with_budget(Budget::from_secs(1)));
    let t0 = clock.now();
    let op = session.resume_task(handle, t0);
    let run = drive(&mut session, op, &clock, &[0.01; 64], |_, _| {
        let mut news = task("complete", "working", 200);
        news["statusMessage"] = json!("page 3 of 9");
        Answer::Result(news)
    });
    let err = run.result.unwrap_err();
    let again = err.task().unwrap();
    assert_eq!(again.task_id, TASK);
    assert_eq!(again.status_message.as_deref(), Some("page 3 of 9"));
    assert!(run.elapsed <= Duration::from_secs(1), "{:?}", run.elapsed);
    let last = run.legs.last().unwrap();
    assert!(last.sent_at + ms(10) <= t0 + Duration::from_secs(1));
}

#[test]
fn a_task_is_cancelled_by_its_handle_and_the_acknowledgement_ends_the_operation() {
    let handle = handed_back();
    let clock = ManualClock::new();
    let mut session = Session::new(modern().with_tasks(false));
    let op = session.cancel_task(handle.clone(), clock.now());
    let run = drive(&mut session, op, &clock, &[0.01], |kind, _| {
        assert_eq!(kind, LegKind::TaskCancel);
        Answer::Result(json!({"resultType": "complete"}))
    });
    assert_eq!(
        run.result.clone().unwrap(),
        mcp_proto::Outcome::TaskCancelRequested(TASK.to_owned())
    );
    assert_eq!(run.methods(), ["tasks/cancel"]);
    let cancel = &run.legs[0];
    assert_eq!(cancel.body["params"]["taskId"], TASK);
    assert_eq!(cancel.request.headers()["mcp-name"], TASK);
    assert_eq!(cancel.request.headers()["mcp-method"], "tasks/cancel");

    // A server that knows no such task says so, and the error names the request.
    let op = session.cancel_task(handle, clock.now());
    let run = drive(&mut session, op, &clock, &[0.01], |_, _| {
        support::refused(-32602, "unknown task", None)
    });
    match run.result.unwrap_err() {
        Error::JsonRpc { code, method, .. } => assert_eq!((code, method), (-32602, "tasks/cancel")),
        other => panic!("{other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// 2025-11-25: tasks in the core
// ---------------------------------------------------------------------------------------------

const LEGACY_TASK: &str = "88e7c13a8c3bbec63d67e17206648ffe";

fn legacy() -> SessionConfig {
    SessionConfig::new("http://mcp.example.test:8080/mcp")
        .unwrap()
        .with_protocol_version(ProtocolVersion::V2025_11_25)
        .with_resolution(Resolution::MILLISECOND)
        .with_tasks(true)
}

/// A legacy task as server-everything describes it (`ttl`, `pollInterval`).
fn legacy_task(status: &str, message: &str) -> Value {
    json!({
        "taskId": LEGACY_TASK, "status": status, "statusMessage": message,
        "createdAt": "2026-12-03T16:40:00Z", "lastUpdatedAt": "2026-12-03T16:40:01Z",
        "ttl": 300000, "pollInterval": 1000,
    })
}

/// server-everything 2026.8.31: tasks for tools/call, and one tool that requires them.
fn legacy_server(kind: LegKind, polls: &mut u32) -> Answer {
    match kind {
        LegKind::Initialize => Answer::Result(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}, "tasks": {"cancel": {}, "list": {}, "requests": {"tools": {"call": {}}}}},
            "serverInfo": {"name": "mcp-servers/everything", "version": "2.0.0"}
        })),
        LegKind::List { .. } => Answer::Result(json!({"tools": [
            {"name": "echo", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "forbidden"}},
            {"name": "simulate-research-query", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"}},
        ]})),
        LegKind::CallTool => {
            Answer::Result(json!({"task": legacy_task("working", "Gathering sources...")}))
        }
        LegKind::TaskGet => {
            *polls += 1;
            match *polls {
                1 => Answer::Result(legacy_task("working", "Analyzing content...")),
                _ => Answer::Result(legacy_task("completed", "Generating report...")),
            }
        }
        LegKind::TaskResult => Answer::Result(json!({
            "content": [{"type": "text", "text": "# Research Report: rust"}],
            "_meta": {"io.modelcontextprotocol/related-task": {"taskId": LEGACY_TASK}}
        })),
        other => support::healthy(other),
    }
}

#[test]
fn a_legacy_tool_that_requires_a_task_is_called_as_one_polled_and_its_result_fetched() {
    let clock = ManualClock::new();
    let mut session = Session::new(legacy());
    let op = session.call_tool("simulate-research-query", Map::new(), clock.now());
    let mut polls = 0;
    let run = drive(&mut session, op, &clock, &[0.01; 16], |kind, _| {
        legacy_server(kind, &mut polls)
    });
    let call = run.result.clone().unwrap().into_call().unwrap();
    assert_eq!(call.text(), "# Research Report: rust");
    // The tools are walked first (did the tool require a task?), inside the same budget.
    assert_eq!(
        run.methods(),
        [
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/call",
            "tasks/get",
            "tasks/get",
            "tasks/result"
        ]
    );
    let call = &run.legs[3].body;
    assert_eq!(call["params"]["task"], json!({}), "{call}");
    for leg in &run.legs[4..] {
        assert_eq!(leg.body["params"]["taskId"], LEGACY_TASK, "{}", leg.body);
        assert_eq!(leg.request.headers()["mcp-session-id"], "session-1");
    }

    // The session remembers the listing: the next call of a tool that needs no task is one
    // leg, without `task`.
    let op = session.call_tool("echo", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], |kind, _| {
        support::healthy(kind)
    });
    assert_eq!(run.methods(), ["tools/call"]);
    assert!(run.legs[0].body["params"].get("task").is_none());
}

#[test]
fn a_legacy_call_asks_for_no_task_when_tasks_are_off_or_the_server_runs_none() {
    let clock = ManualClock::new();
    let mut session = Session::new(legacy().with_tasks(false));
    let op = session.call_tool("simulate-research-query", Map::new(), clock.now());
    let mut polls = 0;
    let run = drive(&mut session, op, &clock, &[], |kind, _| match kind {
        LegKind::CallTool => support::healthy(kind),
        other => legacy_server(other, &mut polls),
    });
    assert_eq!(
        run.methods(),
        ["initialize", "notifications/initialized", "tools/call"]
    );
    assert!(run.legs[2].body["params"].get("task").is_none());

    // A server that declares no tasks: no listing first, no task asked.
    let mut session = Session::new(legacy());
    let op = session.call_tool("simulate-research-query", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], |kind, _| {
        support::healthy(kind)
    });
    assert_eq!(
        run.methods(),
        ["initialize", "notifications/initialized", "tools/call"]
    );
}

#[test]
fn a_legacy_task_is_handed_back_with_its_session_and_resumed_in_it_without_a_handshake() {
    let clock = ManualClock::new();
    let mut session = Session::new(legacy().with_budget(Budget::from_secs(2)));
    let op = session.call_tool("simulate-research-query", Map::new(), clock.now());
    let run = drive(
        &mut session,
        op,
        &clock,
        &[0.01; 64],
        |kind, _| match kind {
            LegKind::TaskGet => Answer::Result(legacy_task("working", "Analyzing content...")),
            other => legacy_server(other, &mut 0),
        },
    );
    let err = run.result.unwrap_err();
    let handle = err.task().unwrap().clone();
    assert_eq!(handle.era, TaskEra::Legacy);
    assert_eq!(handle.task_id, LEGACY_TASK);
    assert_eq!(handle.session_id.as_deref(), Some("session-1"));
    assert_eq!(handle.ttl, Some(Duration::from_secs(300)));
    assert!(run.elapsed <= Duration::from_secs(2), "{:?}", run.elapsed);

    // Another process: a new session resumes in the task's own, with no handshake.
    let mut again = Session::new(legacy());
    let op = again.resume_task(handle.clone(), clock.now());
    let mut polls = 1;
    let run = drive(&mut again, op, &clock, &[0.01; 8], |kind, _| {
        legacy_server(kind, &mut polls)
    });
    assert_eq!(run.methods(), ["tasks/get", "tasks/result"]);
    for leg in &run.legs {
        assert_eq!(leg.request.headers()["mcp-session-id"], "session-1");
        assert_eq!(leg.request.headers()["mcp-protocol-version"], "2025-11-25");
    }
    let call = run.result.unwrap().into_call().unwrap();
    assert_eq!(call.text(), "# Research Report: rust");

    // Its cancel too.
    let mut other = Session::new(legacy());
    let op = other.cancel_task(handle, clock.now());
    let run = drive(&mut other, op, &clock, &[], |_, _| {
        Answer::Result(legacy_task("cancelled", "Client cancelled task execution."))
    });
    assert_eq!(run.methods(), ["tasks/cancel"]);
    assert_eq!(run.legs[0].request.headers()["mcp-session-id"], "session-1");
    assert_eq!(run.legs[0].body["params"]["taskId"], LEGACY_TASK);
    assert!(matches!(
        run.result,
        Ok(mcp_proto::Outcome::TaskCancelRequested(_))
    ));
}

#[test]
fn a_failed_legacy_task_is_the_error_its_result_request_answers() {
    let clock = ManualClock::new();
    let mut session = Session::new(legacy());
    let op = session.call_tool("simulate-research-query", Map::new(), clock.now());
    let run = drive(
        &mut session,
        op,
        &clock,
        &[0.01; 16],
        |kind, _| match kind {
            LegKind::TaskGet => Answer::Result(legacy_task("failed", "the source is down")),
            LegKind::TaskResult => Answer::Json(json!({
                "jsonrpc": "2.0", "id": 6, "error": {"code": -32603, "message": "the source is down"}
            })),
            other => legacy_server(other, &mut 0),
        },
    );
    match run.result.unwrap_err() {
        Error::JsonRpc { code, method, .. } => assert_eq!((code, method), (-32603, "tasks/result")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_task_waiting_for_input_is_answered_once_per_request_with_tasks_update() {
    let clock = ManualClock::new();
    let config = modern().respond_to("elicitation/create", |params| {
        assert_eq!(params["message"], "Who is asking?");
        Ok(json!({"action": "accept", "content": {"name": "Ada"}}))
    });
    let mut session = Session::new(config);
    let op = session.call_tool("ask", Map::new(), clock.now());
    let asking = || {
        let mut waiting = task("complete", "input_required", 500);
        waiting["inputRequests"] = json!({"name": {"method": "elicitation/create", "params": {
            "mode": "form", "message": "Who is asking?",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}
        }}});
        Answer::Result(waiting)
    };
    let run = drive(&mut session, op, &clock, &[0.01; 16], |kind, leg| {
        match (kind, leg) {
            (LegKind::CallTool, _) => created(500),
            // The server has not taken the answer in yet: the same key again.
            (LegKind::TaskGet, 2 | 4) => asking(),
            (LegKind::TaskUpdate, _) => Answer::Result(json!({"resultType": "complete"})),
            (LegKind::TaskGet, _) => completed(),
            _ => unreachable!("{kind:?}"),
        }
    });
    assert_eq!(
        run.methods(),
        [
            "tools/call",
            "tasks/get",
            "tasks/update",
            "tasks/get",
            "tasks/get"
        ]
    );
    assert_eq!(run.requests, ["elicitation/create"], "asked once");
    let update = &run.legs[2];
    assert_eq!(update.body["params"]["taskId"], TASK);
    assert_eq!(
        update.body["params"]["inputResponses"],
        json!({"name": {"action": "accept", "content": {"name": "Ada"}}})
    );
    assert_eq!(update.request.headers()["mcp-name"], TASK);
    assert_eq!(update.request.headers()["mcp-method"], "tasks/update");
    // The polls after it carry no answers, and the first comes soon (the ramp starts over).
    assert!(run.legs[3].body["params"].get("inputResponses").is_none());
    assert_eq!(run.legs[3].sent_at - run.legs[2].sent_at, ms(30));
    let call = run.result.unwrap().into_call().unwrap();
    assert_eq!(call.text(), "slept 2.0");
}

#[test]
fn a_task_waiting_for_input_nobody_answers_is_declined_and_polled_on() {
    let clock = ManualClock::new();
    let mut session = Session::new(modern());
    let op = session.call_tool("ask", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[0.01; 16], |kind, leg| {
        match (kind, leg) {
            (LegKind::CallTool, _) => created(500),
            (LegKind::TaskGet, 2) => {
                let mut waiting = task("complete", "input_required", 500);
                waiting["inputRequests"] =
                    json!({"k1": {"method": "elicitation/create", "params": {"message": "?"}}});
                Answer::Result(waiting)
            }
            (LegKind::TaskUpdate, _) => Answer::Result(json!({})),
            _ => completed(),
        }
    });
    assert_eq!(
        run.legs[2].body["params"]["inputResponses"],
        json!({"k1": {"action": "decline"}})
    );
    assert!(run.result.is_ok(), "{:?}", run.result);
}

#[test]
fn a_task_the_budget_cannot_see_done_is_cancelled_before_the_end_when_configured() {
    let clock = ManualClock::new();
    let config = modern()
        .with_budget(Budget::from_secs(2))
        .with_cancel_spent_tasks(true);
    let mut session = Session::new(config);
    let t0 = clock.now();
    let op = session.call_tool("slow", Map::new(), t0);
    let run = drive(
        &mut session,
        op,
        &clock,
        &[0.01; 64],
        |kind, _| match kind {
            LegKind::CallTool => created(500),
            LegKind::TaskCancelNotice => Answer::Result(json!({"resultType": "complete"})),
            _ => working(500),
        },
    );
    let end = t0 + Duration::from_secs(2);
    // The last poll leaves room for the cancel (two round trips of 10 ms, at least 25 ms), and
    // the cancel goes out before the end, naming the task.
    let (cancel, poll) = (&run.legs[run.legs.len() - 1], &run.legs[run.legs.len() - 2]);
    assert_eq!(
        cancel.kind,
        LegKind::TaskCancelNotice,
        "{:?}",
        run.methods()
    );
    assert_eq!(poll.sent_at, end - ms(35));
    assert_eq!(cancel.sent_at, end - ms(25));
    assert_eq!(cancel.grant, ms(25));
    assert_eq!(cancel.body["params"]["taskId"], TASK);
    let err = run.result.unwrap_err();
    assert!(
        matches!(
            err,
            Error::TaskRunning {
                cancel_sent: true,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("asked to cancel"), "{err}");
    assert!(run.elapsed <= Duration::from_secs(2), "{:?}", run.elapsed);

    // Off (the default): handed back, nothing cancelled.
    let (run, _) = never_done(Resolution::MILLISECOND);
    assert!(!run.methods().contains(&"tasks/cancel"));
    assert!(matches!(
        run.result,
        Err(Error::TaskRunning {
            cancel_sent: false,
            ..
        })
    ));
}

#[test]
fn a_legacy_tool_that_may_run_as_a_task_is_called_as_one_only_when_configured() {
    let clock = ManualClock::new();
    let answers = |kind: LegKind, polls: &mut u32| match kind {
        LegKind::List { .. } => Answer::Result(json!({"tools": [
            {"name": "sleep", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "optional"}},
        ]})),
        LegKind::CallTool => Answer::Result(json!({"task": legacy_task("working", "")})),
        other => legacy_server(other, polls),
    };
    for optional in [false, true] {
        let mut session = Session::new(legacy().with_optional_tasks(optional));
        let op = session.call_tool("sleep", Map::new(), clock.now());
        let mut polls = 1;
        let run = drive(&mut session, op, &clock, &[0.01; 16], |kind, _| {
            answers(kind, &mut polls)
        });
        let call = run
            .legs
            .iter()
            .find(|leg| leg.kind == LegKind::CallTool)
            .unwrap();
        assert_eq!(call.body["params"].get("task").is_some(), optional);
        if optional {
            assert!(
                run.methods().contains(&"tasks/result"),
                "{:?}",
                run.methods()
            );
            assert!(run.result.is_ok(), "{:?}", run.result);
        }
    }
}

#[test]
fn a_poll_interval_that_changes_caps_the_next_wait_from_then_on() {
    let clock = ManualClock::new();
    let mut session = Session::new(modern());
    let t0 = clock.now();
    let op = session.call_tool("slow", Map::new(), t0);
    let run = drive(&mut session, op, &clock, &[0.01; 8], |kind, leg| {
        match (kind, leg) {
            (LegKind::CallTool, _) => created(50),
            (LegKind::TaskGet, 2) => working(50),
            // The server asks for quicker polls, then slower ones.
            (LegKind::TaskGet, 3) => working(30),
            (LegKind::TaskGet, 4) => working(200),
            _ => completed(),
        }
    });
    assert!(run.result.is_ok(), "{:?}", run.result);
    // Waits: 20 ms, 40 ms (the ramp), 30 ms (capped at the new 30 ms), then 30 ms again
    // (the ramp goes on from the cap, under the new 200 ms).
    let sent: Vec<Duration> = run.legs.iter().map(|leg| leg.sent_at - t0).collect();
    assert_eq!(sent, [ms(0), ms(30), ms(80), ms(120), ms(160)]);
}

#[test]
fn a_legacy_task_whose_session_is_lost_is_not_polled_in_another_session() {
    // The poll is answered 404: the session is gone, and the task with it (the server keeps
    // tasks per session). No new handshake, no poll in a new session, no handle to a task in
    // a session that is gone: the server's answer ends the operation, and the session is
    // forgotten.
    let clock = ManualClock::new();
    let mut session = Session::new(legacy());
    let op = session.call_tool("simulate-research-query", Map::new(), clock.now());
    let run = drive(
        &mut session,
        op,
        &clock,
        &[0.01; 16],
        |kind, _| match kind {
            LegKind::TaskGet => Answer::Raw(404, None, Vec::new()),
            other => legacy_server(other, &mut 0),
        },
    );
    assert_eq!(
        run.methods(),
        [
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/call",
            "tasks/get"
        ]
    );
    match run.result.unwrap_err() {
        Error::SessionExpired { method, .. } => assert_eq!(method, "tasks/get"),
        other => panic!("{other:?}"),
    }
    assert!(session.info().is_none(), "the lost session is forgotten");

    // A handle resumed in its session, from another process: the same.
    let mut handle =
        mcp_proto::task::TaskHandle::new("mcp.example.test:8080", LEGACY_TASK, TaskEra::Legacy);
    handle.session_id = Some("session-1".to_owned());
    let mut again = Session::new(legacy());
    let op = again.resume_task(handle.clone(), clock.now());
    let run = drive(&mut again, op, &clock, &[0.01; 8], |kind, _| match kind {
        LegKind::TaskGet => Answer::Raw(404, None, Vec::new()),
        other => legacy_server(other, &mut 0),
    });
    assert_eq!(run.methods(), ["tasks/get"]);
    assert!(
        matches!(run.result, Err(Error::SessionExpired { .. })),
        "{:?}",
        run.result
    );

    // And its cancel: nothing to cancel in a new session.
    let mut other = Session::new(legacy());
    let op = other.cancel_task(handle, clock.now());
    let run = drive(&mut other, op, &clock, &[0.01; 8], |kind, _| match kind {
        LegKind::TaskCancel => Answer::Raw(404, None, Vec::new()),
        other => legacy_server(other, &mut 0),
    });
    assert_eq!(run.methods(), ["tasks/cancel"]);
    assert!(
        matches!(
            run.result,
            Err(Error::SessionExpired {
                method: "tasks/cancel",
                ..
            })
        ),
        "{:?}",
        run.result
    );
}
