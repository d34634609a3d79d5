//! The reference client's acceptance table (REFERENCE.md §1), driven through the public API of
//! the operations on a manual clock: every row asserts the exact grant sequence.

mod support;

use std::time::Duration;

use mcp_proto::driver::LegKind;
use mcp_proto::{
    Action, Budget, Clock, Error, ManualClock, OperationDeadline, Resolution, Session,
    SessionConfig,
};
use serde_json::{Map, json};
use support::{Answer, drive, healthy, secs};

fn session() -> Session {
    Session::new(
        SessionConfig::new("http://mcp.example.test:8080/mcp")
            .unwrap()
            .with_protocol_version(mcp_proto::ProtocolVersion::LATEST),
    )
}

fn two_pages(kind: LegKind, _leg: u32) -> Answer {
    match kind {
        LegKind::List {
            of: mcp_proto::ListKind::Tools,
            page: 1,
        } => Answer::Result(json!({"tools": [{"name": "a"}], "nextCursor": "p2"})),
        LegKind::List { .. } => Answer::Result(json!({"tools": [{"name": "b"}]})),
        other => healthy(other),
    }
}

fn tool_call(durations: &[f64]) -> support::Run {
    let clock = ManualClock::new();
    let mut session = session();
    let op = session.call_tool("echo", Map::new(), clock.now());
    drive(&mut session, op, &clock, durations, |kind, _| healthy(kind))
}

#[test]
fn the_payload_leg_gets_only_what_the_handshake_left() {
    let run = tool_call(&[4.0, 2.0, 1.0]);
    assert_eq!(run.grant_secs(), [20, 16, 14]);
    assert_eq!(
        run.methods(),
        ["initialize", "notifications/initialized", "tools/call"]
    );
    assert!(run.result.is_ok());
}

#[test]
fn pages_of_a_catalogue_walk_share_the_budget() {
    let clock = ManualClock::new();
    let mut session = session();
    let op = session.list_tools(clock.now());
    let run = drive(&mut session, op, &clock, &[1.0, 0.0, 5.0, 3.0], two_pages);
    assert_eq!(run.grant_secs(), [20, 19, 19, 14]);
    let tools = run
        .result
        .unwrap()
        .into_listing::<mcp_proto::Tool>()
        .unwrap();
    let names: Vec<_> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
}

#[test]
fn a_leg_is_never_granted_zero() {
    assert_eq!(tool_call(&[19.0, 0.7]).grant_secs(), [20, 1, 1]);
}

#[test]
fn remainders_are_rounded_up_leg_by_leg() {
    assert_eq!(tool_call(&[18.5, 1.2]).grant_secs(), [20, 2, 1]);
    assert_eq!(tool_call(&[5.0, 1.0, 2.0]).grant_secs(), [20, 15, 14]);
}

#[test]
fn a_spent_budget_refuses_the_work_request_before_it_is_sent() {
    let run = tool_call(&[12.0, 9.0]);
    assert_eq!(run.grant_secs(), [20, 8]);
    assert_eq!(run.methods(), ["initialize", "notifications/initialized"]);
    match run.result {
        Err(Error::BudgetExhausted {
            server,
            budget,
            method,
            leg,
        }) => {
            assert_eq!(server, "mcp.example.test:8080");
            assert_eq!(budget, Budget::DEFAULT);
            assert_eq!(method, "tools/call");
            assert_eq!(leg, 3);
        }
        other => panic!("expected the budget error, got {other:?}"),
    }
}

#[test]
fn each_operation_opens_its_own_budget() {
    // As the reference does it: a fresh session per operation.
    let clock = ManualClock::new();
    let mut grants = Vec::new();
    for durations in [&[8.0, 0.0, 9.0][..], &[]] {
        let mut session = session();
        let op = session.call_tool("echo", Map::new(), clock.now());
        grants.extend(drive(&mut session, op, &clock, durations, |k, _| healthy(k)).grant_secs());
    }
    assert_eq!(grants, [20, 12, 12, 20, 20, 20]);
}

#[test]
fn a_reused_session_skips_the_handshake_and_still_opens_a_full_budget() {
    let clock = ManualClock::new();
    let mut session = session();
    let first = session.call_tool("echo", Map::new(), clock.now());
    assert_eq!(
        drive(&mut session, first, &clock, &[8.0, 0.0, 9.0], |k, _| {
            healthy(k)
        })
        .grant_secs(),
        [20, 12, 12]
    );
    let second = session.call_tool("echo", Map::new(), clock.now());
    let run = drive(&mut session, second, &clock, &[], |k, _| healthy(k));
    assert_eq!(run.grant_secs(), [20]);
    assert_eq!(run.methods(), ["tools/call"]);
}

#[test]
fn a_fast_operation_is_unaffected() {
    assert_eq!(tool_call(&[]).grant_secs(), [20, 20, 20]);
}

#[test]
fn a_remainder_is_rounded_up_not_truncated() {
    let clock = ManualClock::new();
    let t0 = clock.now();
    let deadline = OperationDeadline::start(t0, Budget::from_secs(10), Resolution::SECOND);
    assert_eq!(deadline.grant(t0 + secs(7.4)), Ok(secs(3.0)));

    // The same through an operation: a 10 s budget, initialize spends 7.4 s.
    let mut session = Session::new(
        SessionConfig::new("http://mcp.example.test/mcp")
            .unwrap()
            .with_protocol_version(mcp_proto::ProtocolVersion::LATEST)
            .with_budget(Budget::from_secs(10)),
    );
    let op = session.call_tool("echo", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[7.4], |k, _| healthy(k));
    assert_eq!(run.grant_secs(), [10, 3, 3]);
}

#[test]
fn a_zero_budget_is_raised_to_the_floor_and_not_exhausted_at_once() {
    let clock = ManualClock::new();
    let t0 = clock.now();
    let deadline = OperationDeadline::start(t0, Budget::from_secs(0), Resolution::SECOND);
    assert_eq!(deadline.total(), secs(1.0));
    assert!(!deadline.is_exhausted(t0));
    assert!(
        deadline.is_exhausted(t0 + secs(1.0)),
        "spending exactly the budget is spent"
    );
    assert!(!deadline.is_exhausted(t0 + secs(0.999)));

    let mut session = session();
    let op = session.start(Action::Probe, deadline);
    let run = drive(&mut session, op, &clock, &[], |k, _| healthy(k));
    assert_eq!(run.grant_secs(), [1, 1]);
    assert!(run.result.is_ok());
}

#[test]
fn exhaustion_is_exact_at_the_budget() {
    let clock = ManualClock::new();
    let t0 = clock.now();
    let deadline = OperationDeadline::start(t0, Budget::DEFAULT, Resolution::SECOND);
    assert!(!deadline.is_exhausted(t0 + secs(19.9)));
    assert_eq!(deadline.grant(t0 + secs(19.9)), Ok(secs(1.0)));
    assert!(deadline.is_exhausted(t0 + secs(20.0)));
    assert!(deadline.grant(t0 + secs(20.0)).is_err());
    assert!(deadline.grant(t0 + secs(25.0)).is_err());
}

#[test]
fn millisecond_resolution_shrinks_the_overrun() {
    let clock = ManualClock::new();
    let mut session = Session::new(
        SessionConfig::new("http://mcp.example.test/mcp")
            .unwrap()
            .with_protocol_version(mcp_proto::ProtocolVersion::LATEST)
            .with_budget(Budget::from_secs(2))
            .with_resolution(Resolution::MILLISECOND),
    );
    let op = session.call_tool("echo", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[0.4, 0.2], |k, _| healthy(k));
    assert_eq!(
        run.grants(),
        [
            Duration::from_millis(2000),
            Duration::from_millis(1600),
            Duration::from_millis(1400)
        ]
    );
}
