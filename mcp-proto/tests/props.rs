//! Property tests: the budget rule holds for any leg durations, budgets and resolutions, and
//! the event-stream parser gives the same events however the bytes are split.

mod support;
use support::FeedAnswer;

use std::time::Duration;

use http::{HeaderMap, HeaderValue, StatusCode};
use mcp_proto::driver::LegKind;
use mcp_proto::driver::{Input, Output};
use mcp_proto::sse::SseParser;
use mcp_proto::{
    Action, Budget, Clock, Error, ManualClock, OperationDeadline, Resolution, Session,
    SessionConfig,
};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Rounds up to the unit, independently of the crate's own arithmetic.
fn ceil_to(d: Duration, unit: Duration) -> Duration {
    let n = d.as_nanos().div_ceil(unit.as_nanos()) * unit.as_nanos();
    Duration::from_nanos(n as u64)
}

fn resolution() -> impl Strategy<Value = Resolution> {
    prop_oneof![
        Just(Resolution::SECOND),
        Just(Resolution::MILLISECOND),
        (1u64..=250).prop_map(|ms| Resolution::from_unit(Duration::from_millis(ms)).unwrap()),
    ]
}

/// One step of the clock between legs: forward by the leg's duration, or (rarely) backwards.
fn step() -> impl Strategy<Value = i64> {
    prop_oneof![8 => 0i64..30_000, 1 => -5_000i64..0]
}

fn answer(kind: LegKind, id: &Value) -> (u16, Vec<u8>) {
    let result = match kind {
        LegKind::Initialize => {
            json!({"protocolVersion": "2025-06-18", "serverInfo": {"name": "p", "version": "1"}})
        }
        LegKind::Initialized => return (202, Vec::new()),
        LegKind::List {
            of: mcp_proto::ListKind::Tools,
            page,
        } => {
            json!({"tools": [{"name": format!("t{page}")}], "nextCursor": format!("c{page}")})
        }
        _ => json!({"content": []}),
    };
    (
        200,
        serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "result": result})).unwrap(),
    )
}

struct Observed {
    /// (elapsed since start when sent, grant) per leg.
    legs: Vec<(Duration, Duration)>,
    refused_at: Option<Duration>,
    total_elapsed: Duration,
    result: Result<mcp_proto::Outcome, Error>,
}

/// Runs an operation with a driver that enforces each grant: a leg that would take longer than
/// its grant times out at the grant, as a real driver's timer makes it.
fn run(budget_ms: u64, resolution: Resolution, steps: &[i64], list: bool) -> Observed {
    let clock = ManualClock::new();
    let t0 = clock.now();
    let mut session = Session::new(
        SessionConfig::new("http://p.test/mcp")
            .unwrap()
            .with_protocol_version(mcp_proto::ProtocolVersion::LATEST)
            .with_max_pages(1000),
    );
    let action = if list {
        Action::List(mcp_proto::ListKind::Tools)
    } else {
        Action::CallTool {
            name: "x".into(),
            arguments: Map::new(),
        }
    };
    let deadline = OperationDeadline::start(
        t0,
        Budget::from_duration(Duration::from_millis(budget_ms)),
        resolution,
    );
    let mut op = session.start(action, deadline);
    let mut steps = steps.iter().copied();
    let mut legs = Vec::new();
    let mut refused_at = None;
    let mut reported = Vec::new();
    // The furthest the clock has been: elapsed is measured against it, as wall time would be.
    let mut furthest = t0;
    let result = loop {
        match op.poll_output(clock.now()) {
            Output::Update(update) => session.apply(update),
            Output::Authorize(_) => {
                op.handle_input(Input::NoAuthorizer, clock.now());
            }
            Output::Event(_) => {}
            Output::Request(request) => {
                op.handle_input(request.reply_from(op.session_config()), clock.now());
            }
            Output::LegEnded(report) => reported.push((report.number, report.grant)),
            Output::Wait(until) | Output::AwaitSession(until) => {
                clock.set(until);
                op.handle_input(Input::Timeout, clock.now());
            }
            Output::Done(result) => {
                if let Err(Error::BudgetExhausted { .. }) = result {
                    refused_at = Some(clock.now().saturating_duration_since(t0));
                }
                break result;
            }
            Output::Transmit(leg) => {
                legs.push((clock.now().saturating_duration_since(t0), leg.timeout));
                let id = serde_json::from_slice::<Value>(leg.request.body()).unwrap()["id"].clone();
                let step = steps.next().unwrap_or(0);
                if step < 0 {
                    clock.rewind(Duration::from_millis(step.unsigned_abs()));
                } else {
                    let spent = Duration::from_millis(step as u64);
                    if spent >= leg.timeout {
                        clock.advance(leg.timeout);
                        furthest = furthest.max(clock.now());
                        op.handle_input(Input::Timeout, clock.now());
                        continue;
                    }
                    clock.advance(spent);
                }
                furthest = furthest.max(clock.now());
                let (status, body) = answer(leg.kind, &id);
                let mut headers = HeaderMap::new();
                headers.insert("content-type", HeaderValue::from_static("application/json"));
                let now = clock.now();
                let status = StatusCode::from_u16(status).unwrap();
                op.feed_answer(leg.id, status, &headers, &body, now);
            }
        }
    };
    // Every leg handed out was reported once, with its grant, before the result.
    reported.sort_unstable();
    let handed: Vec<Duration> = legs.iter().map(|(_, grant)| *grant).collect();
    let grants: Vec<Duration> = reported.iter().map(|(_, grant)| *grant).collect();
    assert_eq!(grants, handed, "one report per leg");
    // Nothing is ever transmitted once the operation has ended.
    for _ in 0..3 {
        assert!(matches!(
            op.poll_output(clock.now()),
            Output::Done(Err(Error::AlreadyFinished))
        ));
    }
    Observed {
        legs,
        refused_at,
        total_elapsed: furthest.saturating_duration_since(t0),
        result,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn grants_obey_the_budget_rule(
        budget_ms in 0u64..60_000,
        resolution in resolution(),
        steps in proptest::collection::vec(0i64..30_000, 0..60),
        list in any::<bool>(),
    ) {
        let unit = resolution.unit();
        let total = Duration::from_millis(budget_ms).max(unit);
        let seen = run(budget_ms, resolution, &steps, list);
        let mut previous = Duration::MAX;
        for &(sent_at, grant) in &seen.legs {
            let remaining = total.saturating_sub(sent_at);
            prop_assert!(!grant.is_zero(), "a zero grant");
            prop_assert!(remaining > Duration::ZERO, "a leg was sent with nothing left");
            prop_assert!(grant <= ceil_to(remaining, unit).max(unit), "grant {grant:?} > remaining {remaining:?} rounded up");
            prop_assert!(grant <= previous, "grants increased: {previous:?} then {grant:?}");
            previous = grant;
        }
        if let Some(at) = seen.refused_at {
            prop_assert!(at >= total, "refused at {at:?} with {total:?} budget");
        }
        prop_assert!(seen.total_elapsed < total + unit, "operation took {:?} for a {total:?} budget", seen.total_elapsed);
        if seen.result.is_ok() {
            prop_assert!(seen.refused_at.is_none());
        }
    }

    #[test]
    fn a_clock_that_steps_backwards_never_yields_more_than_the_budget(
        budget_ms in 1u64..60_000,
        resolution in resolution(),
        steps in proptest::collection::vec(step(), 0..60),
    ) {
        let unit = resolution.unit();
        let total = Duration::from_millis(budget_ms).max(unit);
        let seen = run(budget_ms, resolution, &steps, true);
        for &(_, grant) in &seen.legs {
            prop_assert!(!grant.is_zero());
            prop_assert!(grant <= ceil_to(total, unit), "grant {grant:?} beyond the budget {total:?}");
        }
    }

    #[test]
    fn the_deadline_refuses_exactly_when_nothing_is_left(
        budget_ms in 0u64..100_000,
        elapsed_ms in 0u64..200_000,
        resolution in resolution(),
    ) {
        let t0 = std::time::Instant::now();
        let d = OperationDeadline::start(t0, Budget::from_duration(Duration::from_millis(budget_ms)), resolution);
        let now = t0 + Duration::from_millis(elapsed_ms);
        let remaining = d.total().saturating_sub(Duration::from_millis(elapsed_ms));
        prop_assert_eq!(d.is_exhausted(now), remaining.is_zero());
        match d.grant(now) {
            Ok(grant) => {
                prop_assert!(!remaining.is_zero());
                prop_assert!(grant >= resolution.unit());
                prop_assert!(grant < remaining + resolution.unit());
            }
            Err(_) => prop_assert!(remaining.is_zero()),
        }
    }
}

#[derive(Debug, Clone)]
struct EventSpec {
    event: Option<String>,
    id: Option<String>,
    data_lines: Vec<String>,
    comment: bool,
}

fn event_spec() -> impl Strategy<Value = EventSpec> {
    (
        proptest::option::of("[a-z]{1,8}"),
        proptest::option::of("[a-zA-Z0-9-]{1,8}"),
        proptest::collection::vec("[ -~é€]{0,20}", 0..4),
        any::<bool>(),
    )
        .prop_map(|(event, id, data_lines, comment)| EventSpec {
            event,
            id,
            data_lines,
            comment,
        })
}

fn encode(events: &[EventSpec], newline: &str) -> Vec<u8> {
    let mut out = String::new();
    for e in events {
        if e.comment {
            out.push_str(": keepalive");
            out.push_str(newline);
        }
        if let Some(t) = &e.event {
            out.push_str(&format!("event: {t}{newline}"));
        }
        if let Some(id) = &e.id {
            out.push_str(&format!("id: {id}{newline}"));
        }
        for line in &e.data_lines {
            out.push_str(&format!("data: {line}{newline}"));
        }
        out.push_str(newline);
    }
    out.into_bytes()
}

fn parse_in_pieces(bytes: &[u8], cuts: &[usize]) -> Vec<mcp_proto::sse::SseEvent> {
    let mut parser = SseParser::new(1 << 20);
    let mut events = Vec::new();
    let mut start = 0;
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    cuts.sort_unstable();
    for cut in cuts {
        parser.feed(&bytes[start..cut], &mut events).unwrap();
        start = cut;
    }
    parser.feed(&bytes[start..], &mut events).unwrap();
    parser.finish(&mut events).unwrap();
    events
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn sse_events_do_not_depend_on_how_the_bytes_are_split(
        events in proptest::collection::vec(event_spec(), 0..8),
        newline in prop_oneof![Just("\n"), Just("\r\n"), Just("\r")],
        cuts in proptest::collection::vec(any::<usize>(), 0..16),
    ) {
        let bytes = encode(&events, newline);
        let whole = parse_in_pieces(&bytes, &[]);
        let split = parse_in_pieces(&bytes, &cuts);
        prop_assert_eq!(&whole, &split);
        // And the events are the ones encoded: those with data, data lines joined by \n.
        let expected: Vec<String> = events.iter().filter(|e| !e.data_lines.is_empty()).map(|e| e.data_lines.join("\n")).collect();
        let got: Vec<String> = whole.iter().map(|e| e.data.clone()).collect();
        prop_assert_eq!(got, expected);
    }

    #[test]
    fn byte_by_byte_equals_whole(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let mut whole_parser = SseParser::new(256);
        let mut whole = Vec::new();
        let whole_result = whole_parser.feed(&bytes, &mut whole).and_then(|()| whole_parser.finish(&mut whole));
        let mut split_parser = SseParser::new(256);
        let mut split = Vec::new();
        let mut split_result = Ok(());
        for b in &bytes {
            split_result = split_parser.feed(std::slice::from_ref(b), &mut split);
            if split_result.is_err() { break; }
        }
        if split_result.is_ok() {
            split_result = split_parser.finish(&mut split);
        }
        prop_assert_eq!(whole_result.is_ok(), split_result.is_ok());
        if whole_result.is_ok() {
            prop_assert_eq!(whole, split);
        }
    }
}
