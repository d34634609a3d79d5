//! Operations in flight together on one session: each owns its state and its budget, one
//! handshake serves them all, a lost session is re-established once, request ids never repeat.
//!
//! The stand-in here plays a driver that interleaves operations by hand on a manual clock:
//! what each operation learns is applied to the one session, and the operations that await
//! the session are handed it after every update and every operation's end.

mod support;
use support::FeedAnswer;

use std::collections::HashSet;

use http::{HeaderMap, HeaderValue, StatusCode};
use mcp_proto::driver::LegKind;
use mcp_proto::driver::{Input, Leg, Operation, Output, TransportError};
use mcp_proto::{Clock, Error, ManualClock, Outcome, Session, TransportErrorKind};
use serde_json::{Map, Value, json};
use support::{PollPastReports, config, json_head, live_session, secs};

/// Drains `op` until it hands out a leg, must wait, or ends (past its events and the legs'
/// reports); its updates go to `session`, and an operation that awaits the session is handed
/// it once before it waits.
fn settle(op: &mut Operation, session: &mut Session, clock: &ManualClock) -> Output {
    loop {
        match op.poll_on(session, clock.now()) {
            Output::Event(_) | Output::LegEnded(_) => {}
            Output::Request(request) => {
                op.handle_input(request.reply_from(op.session_config()), clock.now());
            }
            other => return other,
        }
    }
}

fn leg(output: Output) -> Leg {
    match output {
        Output::Transmit(leg) => leg,
        other => panic!("expected a leg, got {other:?}"),
    }
}

fn id_of(leg: &Leg) -> Value {
    serde_json::from_slice::<Value>(leg.request.body()).unwrap()["id"].clone()
}

fn session_header(leg: &Leg) -> Option<&str> {
    leg.request
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap())
}

/// Answers `leg` of `op` with a JSON `result` (status 200), the session id `session_id` on
/// an `initialize`.
fn answer(op: &mut Operation, leg: &Leg, result: Value, session_id: &str, clock: &ManualClock) {
    let mut head = json_head();
    if leg.kind == LegKind::Initialize {
        head.insert("mcp-session-id", HeaderValue::from_str(session_id).unwrap());
    }
    let body = json!({"jsonrpc": "2.0", "id": id_of(leg), "result": result}).to_string();
    let now = clock.now();
    op.feed_answer(leg.id, StatusCode::OK, &head, body.as_bytes(), now);
}

fn initialize_result() -> Value {
    json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
        "serverInfo": {"name": "shared", "version": "1"}})
}

fn call_result(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}

fn accept(op: &mut Operation, leg: &Leg, clock: &ManualClock) {
    let _ = op.handle_input(
        Input::Head {
            leg: leg.id,
            status: StatusCode::ACCEPTED,
            headers: &HeaderMap::new(),
        },
        clock.now(),
    );
}

fn not_found(op: &mut Operation, leg: &Leg, clock: &ManualClock) {
    let _ = op.handle_input(
        Input::Head {
            leg: leg.id,
            status: StatusCode::NOT_FOUND,
            headers: &HeaderMap::new(),
        },
        clock.now(),
    );
}

fn done(output: Output) -> Result<Outcome, Error> {
    match output {
        Output::Done(result) => result,
        other => panic!("expected the end, got {other:?}"),
    }
}

/// Runs `op`'s handshake on a fresh session (`initialize`, then
/// `notifications/initialized`), handing out the leg after it.
fn handshake(op: &mut Operation, session: &mut Session, clock: &ManualClock, id: &str) -> Leg {
    let init = leg(settle(op, session, clock));
    assert_eq!(init.kind, LegKind::Initialize);
    handshake_rest(op, session, clock, &init, id)
}

/// The rest of a handshake whose `initialize` leg `init` is in flight; returns the leg after.
fn handshake_rest(
    op: &mut Operation,
    session: &mut Session,
    clock: &ManualClock,
    init: &Leg,
    id: &str,
) -> Leg {
    answer(op, init, initialize_result(), id, clock);
    let initialized = leg(settle(op, session, clock));
    assert_eq!(initialized.kind, LegKind::Initialized);
    accept(op, &initialized, clock);
    leg(settle(op, session, clock))
}

/// A new session with two tool calls: the first has sent `initialize` (its leg is returned),
/// the second waits for that handshake.
fn one_establishing_one_waiting(clock: &ManualClock) -> (Session, Operation, Leg, Operation) {
    let mut session = Session::new(config());
    let mut first = session.call_tool("echo", Map::new(), clock.now());
    let mut second = session.call_tool("echo", Map::new(), clock.now());
    let init = leg(settle(&mut first, &mut session, clock));
    assert_eq!(init.kind, LegKind::Initialize);
    assert!(matches!(
        settle(&mut second, &mut session, clock),
        Output::AwaitSession(_)
    ));
    (session, first, init, second)
}

#[test]
fn an_operation_can_move_to_another_thread() {
    fn send<T: Send + 'static>() {}
    send::<Operation>();
    send::<Session>();
}

#[test]
fn sixty_four_calls_on_a_new_session_send_one_handshake() {
    let clock = ManualClock::new();
    let mut session = Session::new(config());
    let mut ops: Vec<Operation> = (0..64)
        .map(|_| session.call_tool("echo", Map::new(), clock.now()))
        .collect();
    // The first claims the handshake; the other 63 wait for it, having sent nothing.
    let first = leg(settle(&mut ops[0], &mut session, &clock));
    assert_eq!(first.kind, LegKind::Initialize);
    assert!(session.is_establishing());
    for op in &mut ops[1..] {
        assert!(matches!(
            settle(op, &mut session, &clock),
            Output::AwaitSession(_)
        ));
    }
    clock.advance(secs(2.0));
    let mut calls = vec![handshake_rest(
        &mut ops[0],
        &mut session,
        &clock,
        &first,
        "s-1",
    )];
    assert_eq!(session.info().unwrap().session_id.as_deref(), Some("s-1"));
    assert!(!session.is_establishing());
    // The session is live: every waiting operation takes it and sends its call on it, under
    // what is left of its own budget (2 s of 20 gone while it waited).
    for op in &mut ops[1..] {
        let call = leg(settle(op, &mut session, &clock));
        assert_eq!(call.kind, LegKind::CallTool);
        assert_eq!(session_header(&call), Some("s-1"));
        assert_eq!(call.timeout, secs(18.0));
        calls.push(call);
    }
    let ids: HashSet<String> = calls.iter().map(|c| id_of(c).to_string()).collect();
    assert_eq!(ids.len(), 64, "every request id is the session's own");
    for (op, call) in ops.iter_mut().zip(&calls) {
        answer(op, call, call_result("hi"), "", &clock);
        let result = done(settle(op, &mut session, &clock));
        assert_eq!(result.unwrap().into_call().unwrap().text(), "hi");
    }
}

#[test]
fn a_session_lost_under_a_burst_is_re_established_once() {
    let clock = ManualClock::new();
    let mut session = live_session(config(), &clock);
    let mut ops: Vec<Operation> = (0..8)
        .map(|_| session.call_tool("echo", Map::new(), clock.now()))
        .collect();
    let calls: Vec<Leg> = ops
        .iter_mut()
        .map(|op| leg(settle(op, &mut session, &clock)))
        .collect();
    assert!(calls.iter().all(|c| session_header(c) == Some("session-1")));
    // The server forgot the session: every call is answered 404.
    for (op, call) in ops.iter_mut().zip(&calls) {
        not_found(op, call, &clock);
    }
    // The first to learn it re-establishes; the seven others wait for that one.
    let init = leg(settle(&mut ops[0], &mut session, &clock));
    assert_eq!(init.kind, LegKind::Initialize);
    for op in &mut ops[1..] {
        assert!(matches!(
            settle(op, &mut session, &clock),
            Output::AwaitSession(_)
        ));
    }
    clock.advance(secs(1.0));
    let resent = handshake_rest(&mut ops[0], &mut session, &clock, &init, "s-2");
    assert_eq!(session_header(&resent), Some("s-2"));
    // No second handshake: each resends its call on the new session.
    for op in &mut ops[1..] {
        let again = leg(settle(op, &mut session, &clock));
        assert_eq!(again.kind, LegKind::CallTool);
        assert_eq!(session_header(&again), Some("s-2"));
        answer(op, &again, call_result("again"), "", &clock);
        assert!(done(settle(op, &mut session, &clock)).is_ok());
    }
}

#[test]
fn a_late_404_on_an_old_session_does_not_forget_the_new_one() {
    let clock = ManualClock::new();
    let mut session = live_session(config(), &clock);
    let mut slow = session.call_tool("slow", Map::new(), clock.now());
    let mut quick = session.call_tool("quick", Map::new(), clock.now());
    let slow_call = leg(settle(&mut slow, &mut session, &clock));
    let quick_call = leg(settle(&mut quick, &mut session, &clock));
    // The quick one learns first, and re-establishes.
    not_found(&mut quick, &quick_call, &clock);
    let init = leg(settle(&mut quick, &mut session, &clock));
    let resent = handshake_rest(&mut quick, &mut session, &clock, &init, "s-2");
    answer(&mut quick, &resent, call_result("ok"), "", &clock);
    assert!(done(settle(&mut quick, &mut session, &clock)).is_ok());
    // The slow one's 404 is about the old session: the new one stays, and it resends on it.
    not_found(&mut slow, &slow_call, &clock);
    let again = leg(settle(&mut slow, &mut session, &clock));
    assert_eq!(again.kind, LegKind::CallTool);
    assert_eq!(session_header(&again), Some("s-2"));
    assert_eq!(session.info().unwrap().session_id.as_deref(), Some("s-2"));
}

#[test]
fn an_operation_waiting_for_the_session_ends_with_its_own_budget() {
    let clock = ManualClock::new();
    let mut session = Session::new(config());
    let mut establishing = session.call_tool("echo", Map::new(), clock.now());
    let init = leg(settle(&mut establishing, &mut session, &clock));
    clock.advance(secs(5.0));
    // Started 5 s later with a 20 s budget: its budget ends at 25 s, the first's at 20 s.
    let mut waiting = session.call_tool("echo", Map::new(), clock.now());
    let Output::AwaitSession(until) = settle(&mut waiting, &mut session, &clock) else {
        panic!("it waits for the session")
    };
    assert_eq!(until, waiting.deadline().end().unwrap());
    clock.set(until);
    waiting.handle_input(Input::Timeout, clock.now());
    match done(settle(&mut waiting, &mut session, &clock)) {
        Err(Error::BudgetExhausted { method, leg, .. }) => {
            assert_eq!((method, leg), ("initialize", 1), "it sent nothing");
        }
        other => panic!("{other:?}"),
    }
    // The first is unaffected: its `initialize` is still in flight.
    assert!(establishing.is_in_flight(init.id));
}

#[test]
fn when_the_establishing_operation_fails_a_waiting_one_takes_over() {
    let clock = ManualClock::new();
    let (mut session, mut first, init, mut second) = one_establishing_one_waiting(&clock);
    let refused = TransportError::new(TransportErrorKind::Connect, "connection refused");
    first.handle_input(
        Input::Failed {
            leg: init.id,
            error: refused,
        },
        clock.now(),
    );
    assert!(matches!(
        done(settle(&mut first, &mut session, &clock)),
        Err(Error::Unreachable { .. })
    ));
    assert!(
        !session.is_establishing(),
        "the claim ends with the operation"
    );
    let call = handshake(&mut second, &mut session, &clock, "s-1");
    assert_eq!(call.kind, LegKind::CallTool);
}

#[test]
fn a_dropped_operation_releases_its_claim() {
    let clock = ManualClock::new();
    let (mut session, first, _, mut second) = one_establishing_one_waiting(&clock);
    // A driver whose task was cancelled drops the operation mid-handshake.
    drop(first);
    assert!(!session.is_establishing());
    let init = leg(settle(&mut second, &mut session, &clock));
    assert_eq!(init.kind, LegKind::Initialize);
}

#[test]
fn operations_keep_their_own_budgets_and_a_cancel_stays_with_its_operation() {
    let clock = ManualClock::new();
    let mut session = live_session(config(), &clock);
    let mut early = session.call_tool("a", Map::new(), clock.now());
    let early_call = leg(settle(&mut early, &mut session, &clock));
    clock.advance(secs(12.0));
    let mut late = session.call_tool("b", Map::new(), clock.now());
    let late_call = leg(settle(&mut late, &mut session, &clock));
    assert_eq!(
        (early_call.timeout, late_call.timeout),
        (secs(20.0), secs(20.0))
    );
    assert_eq!(late_call.ends_at - early_call.ends_at, secs(12.0));
    late.handle_input(Input::Cancel, clock.now());
    assert!(matches!(
        done(settle(&mut late, &mut session, &clock)),
        Err(Error::Cancelled { .. })
    ));
    // The other runs on, and ends at its own budget's end, not the cancelled one's.
    clock.set(early_call.ends_at);
    early.handle_input(Input::Timeout, clock.now());
    assert!(matches!(
        done(settle(&mut early, &mut session, &clock)),
        Err(Error::LegTimedOut { .. })
    ));
}

#[test]
fn the_handshake_claim_ends_only_once_the_session_is_live() {
    let clock = ManualClock::new();
    let (mut session, mut first, init, mut second) = one_establishing_one_waiting(&clock);
    answer(&mut first, &init, initialize_result(), "s-1", &clock);
    let initialized = leg(settle(&mut first, &mut session, &clock));
    accept(&mut first, &initialized, &clock);
    // The handshake is committed in the first operation, but its update has not reached the
    // session yet: the second must not take the claim and send a second `initialize`.
    second.handle_input(Input::Session(&mut session), clock.now());
    assert!(matches!(
        second.poll_past_reports(clock.now()),
        Output::AwaitSession(_)
    ));
    assert!(session.is_establishing());
    // Once the update is applied, the session is live and the second sends its call on it.
    let call = leg(settle(&mut first, &mut session, &clock));
    assert_eq!(call.kind, LegKind::CallTool);
    let second_call = leg(settle(&mut second, &mut session, &clock));
    assert_eq!(second_call.kind, LegKind::CallTool);
    assert_eq!(session_header(&second_call), Some("s-1"));
}
