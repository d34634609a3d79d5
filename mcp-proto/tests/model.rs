//! Model-based test of one operation against a small reference model of the budget rules.
//!
//! Proptest generates a configuration (action, warm or cold session, budget, resolution,
//! number of tool pages) and a sequence of transitions: healthy answers (JSON or an event
//! stream with a notification first), error answers (HTTP statuses, 404 on a session,
//! JSON-RPC errors, bodies that are not JSON), transport errors, clock ticks (after which the
//! driver's timer fires), clock steps backwards, and cancel. Each transition is applied to the
//! real [`Operation`] and to [`Model`], a few lines of integer-millisecond arithmetic that
//! predicts every output:
//!
//! * each leg's grant is exactly `max(unit, ceil_to_unit(total - elapsed))`;
//! * a leg is refused (`BudgetExhausted`, naming the refused leg) exactly when
//!   `elapsed >= total`, and only then;
//! * a leg whose grant has ended by the time the timer fires ends with `LegTimedOut`;
//! * `Cancelled` follows a cancel (with no event left to hand out);
//! * nothing but `AlreadyFinished` follows `Done`.
//!
//! The model is deliberately independent of `mcp-proto`'s arithmetic: it works in whole
//! milliseconds on a clock that starts at zero.

use std::time::{Duration, Instant};

use http::{HeaderMap, HeaderValue, StatusCode};
use mcp_proto::driver::LegKind;
use mcp_proto::driver::{Input, LegId, LegStatus, Operation, Output, TransportError};
use mcp_proto::{
    Action, Budget, Clock, Error, Event, ManualClock, OperationDeadline, Outcome, Resolution,
    Session, SessionConfig, TransportErrorKind,
};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

const LABEL: &str = "model.test:80";

/// One transition of the driver and server.
#[derive(Debug, Clone)]
enum Step {
    /// The leg in flight gets a healthy answer (as an event stream when `sse`).
    Healthy { sse: bool },
    /// The leg in flight is answered with an error status (never 404).
    Status(u16),
    /// The leg in flight is answered 404.
    NotFound,
    /// The leg in flight is answered 200 with a JSON-RPC error envelope.
    RpcError,
    /// The leg in flight is answered 200 with a body that is not JSON.
    Garbage,
    /// The leg in flight fails in the transport.
    Transport(TransportErrorKind),
    /// The clock moves forward by this many ms; the driver's timer then fires.
    Tick(u64),
    /// The clock steps backwards by this many ms.
    Rewind(u64),
    /// The caller cancels.
    Cancel,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => any::<bool>().prop_map(|sse| Step::Healthy { sse }),
        4 => (0u64..8_000).prop_map(Step::Tick),
        1 => (0u64..40_000).prop_map(Step::Tick),
        1 => (0u64..3_000).prop_map(Step::Rewind),
        1 => prop_oneof![Just(400u16), Just(401), Just(500), Just(503), Just(302)].prop_map(Step::Status),
        1 => Just(Step::NotFound),
        1 => Just(Step::RpcError),
        1 => Just(Step::Garbage),
        1 => prop_oneof![
            Just(TransportErrorKind::TimedOut),
            Just(TransportErrorKind::Connect),
            Just(TransportErrorKind::Io),
        ].prop_map(Step::Transport),
        1 => Just(Step::Cancel),
    ]
}

fn resolution() -> impl Strategy<Value = Resolution> {
    prop_oneof![
        Just(Resolution::SECOND),
        Just(Resolution::MILLISECOND),
        (1u64..=250).prop_map(|ms| Resolution::from_unit(Duration::from_millis(ms)).unwrap()),
    ]
}

/// Which leg the model expects next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    Initialize,
    Initialized,
    Work,
}

/// A leg the model believes is in flight.
#[derive(Debug, Clone, Copy)]
struct ModelLeg {
    number: u32,
    kind: LegKind,
    grant: u64,
    ends_at: i64,
    carried_session: bool,
}

/// How the model expects the operation to end.
#[derive(Debug, Clone, PartialEq)]
enum Expected {
    Success,
    BudgetExhausted {
        leg: u32,
        method: &'static str,
    },
    LegTimedOut {
        method: &'static str,
        grant: u64,
    },
    Unreachable {
        method: &'static str,
    },
    HttpStatus {
        method: &'static str,
        status: u16,
    },
    /// A 401 without OAuth configured.
    AuthorizationRequired {
        method: &'static str,
    },
    JsonRpc {
        method: &'static str,
    },
    Malformed {
        method: &'static str,
    },
    SessionExpired {
        method: &'static str,
    },
    Cancelled {
        method: &'static str,
    },
}

/// The reference model: budget arithmetic in whole milliseconds, the handshake, pages.
#[derive(Debug)]
struct Model {
    action: Action,
    total: u64,
    unit: u64,
    /// Milliseconds since the deadline opened (negative after a step backwards).
    now: i64,
    next: Next,
    /// Whether the session already carries an id (a warm session, or a handshake answered).
    has_session: bool,
    pages_done: u32,
    pages_total: u32,
    reinitialized: bool,
    in_flight: Option<ModelLeg>,
    /// Legs over whose reports have not been polled yet: their numbers and grants.
    reports: std::collections::VecDeque<(u32, u64)>,
    /// The end, decided but not yet returned by a poll.
    ending: Option<Expected>,
    returned: bool,
    legs_sent: u32,
    events: usize,
}

impl Model {
    fn elapsed(&self) -> u64 {
        u64::try_from(self.now.max(0)).unwrap()
    }

    /// The grant of a leg sent now, or `None` when the budget is spent.
    fn grant(&self) -> Option<u64> {
        let remaining = self.total.saturating_sub(self.elapsed());
        (remaining > 0).then(|| remaining.div_ceil(self.unit) * self.unit)
    }

    fn finished(&self) -> bool {
        self.ending.is_some() || self.returned
    }

    fn next_kind(&self) -> LegKind {
        match self.next {
            Next::Initialize => LegKind::Initialize,
            Next::Initialized => LegKind::Initialized,
            Next::Work => match self.action {
                Action::Probe => LegKind::Ping,
                Action::List(mcp_proto::ListKind::Tools) => LegKind::List {
                    of: mcp_proto::ListKind::Tools,
                    page: self.pages_done + 1,
                },
                _ => LegKind::CallTool,
            },
        }
    }

    /// The leg in flight is over: its report comes next (after the events already due).
    fn leg_over(&mut self) {
        if let Some(leg) = self.in_flight.take() {
            self.reports.push_back((leg.number, leg.grant));
        }
    }

    /// The leg in flight ends with `expected` (when the operation has not ended already).
    fn end(&mut self, expected: Expected) {
        self.leg_over();
        if !self.finished() {
            self.ending = Some(expected);
        }
    }

    fn healthy(&mut self, leg: ModelLeg, sse: bool) {
        self.leg_over();
        if sse && leg.kind != LegKind::Initialized {
            // The stream carries a notification before the answer.
            self.events += 1;
        }
        match leg.kind {
            LegKind::Initialize => {
                self.next = Next::Initialized;
                self.has_session = true;
            }
            LegKind::Initialized => {
                if self.action == Action::Probe {
                    self.end(Expected::Success);
                } else {
                    self.next = Next::Work;
                }
            }
            LegKind::List { .. } => {
                self.pages_done += 1;
                if self.pages_done == self.pages_total {
                    self.end(Expected::Success);
                }
            }
            _ => self.end(Expected::Success),
        }
    }

    fn not_found(&mut self, leg: ModelLeg) {
        let method = named(leg.kind);
        if !leg.carried_session {
            self.end(Expected::HttpStatus {
                method,
                status: 404,
            });
        } else if self.reinitialized {
            self.end(Expected::SessionExpired { method });
        } else {
            self.reinitialized = true;
            self.leg_over();
            self.next = Next::Initialize;
            self.has_session = false;
            self.pages_done = 0;
        }
    }
}

/// The real operation, its clock, and what the driver needs to answer its legs.
struct Real<'s> {
    op: Operation,
    /// The session the operation runs on (its updates applied as a driver would).
    session: &'s mut Session,
    clock: ManualClock,
    /// The instant the model's zero stands for (the deadline's start).
    started: Instant,
    /// The request id of the leg in flight.
    id: Option<i64>,
    /// The leg in flight (after it ended: the last one, whose inputs are then ignored).
    leg: Option<LegId>,
}

/// What an error names as the leg's request.
fn named(kind: LegKind) -> &'static str {
    kind.method().unwrap_or("DELETE")
}

impl Real<'_> {
    /// The instant `ms` milliseconds from the model's zero (negative: before it).
    fn at(&self, ms: i64) -> Instant {
        let offset = Duration::from_millis(ms.unsigned_abs());
        if ms >= 0 {
            self.started + offset
        } else {
            self.started - offset
        }
    }

    fn answer(&mut self, kind: LegKind, status: u16, content_type: Option<&str>, body: &[u8]) {
        let now = self.clock.now();
        let mut headers = HeaderMap::new();
        if let Some(content_type) = content_type {
            headers.insert("content-type", HeaderValue::from_str(content_type).unwrap());
        }
        if kind == LegKind::Initialize {
            headers.insert("mcp-session-id", HeaderValue::from_static("s-1"));
        }
        let status = StatusCode::from_u16(status).unwrap();
        let Some(leg) = self.leg else { return };
        if self.op.handle_input(
            Input::Head {
                leg,
                status,
                headers: &headers,
            },
            now,
        ) == LegStatus::ReadMore
            && self.op.handle_input(Input::Chunk { leg, bytes: body }, now) == LegStatus::ReadMore
        {
            self.op.handle_input(Input::End { leg }, now);
        }
    }

    fn healthy(&mut self, kind: LegKind, sse: bool, more_pages: bool) {
        let result = match kind {
            LegKind::Initialized => return self.answer(kind, 202, None, b""),
            LegKind::Initialize => json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "model", "version": "1"}
            }),
            LegKind::List {
                of: mcp_proto::ListKind::Tools,
                page,
            } => {
                let mut result = json!({"tools": [{"name": format!("tool-{page}")}]});
                if more_pages {
                    result["nextCursor"] = json!(format!("cursor-{page}"));
                }
                result
            }
            LegKind::CallTool => json!({"content": [{"type": "text", "text": "done"}]}),
            _ => json!({}),
        };
        let message = json!({"jsonrpc": "2.0", "id": self.id, "result": result});
        if sse {
            let note = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "working"}});
            let body = format!(": keepalive\n\nid: 1\ndata: {note}\n\nid: 2\ndata: {message}\n\n");
            self.answer(kind, 200, Some("text/event-stream"), body.as_bytes());
        } else {
            self.answer(
                kind,
                200,
                Some("application/json"),
                message.to_string().as_bytes(),
            );
        }
    }
}

/// Checks one real output against the model's prediction, and moves the model on.
fn check_poll(real: &mut Real<'_>, model: &mut Model) -> Result<bool, TestCaseError> {
    let now = real.clock.now();
    // What the operation learns about its session is the driver's to apply, not a step of
    // the model.
    let output = real.op.poll_on(real.session, now);
    prop_assert!(
        !matches!(output, Output::AwaitSession(_)),
        "a lone operation awaits its session"
    );
    if model.events > 0 {
        prop_assert!(
            matches!(output, Output::Event(Event::Notification(_))),
            "expected an event, got {output:?}"
        );
        model.events -= 1;
        return Ok(true);
    }
    if let Some((number, grant)) = model.reports.pop_front() {
        let Output::LegEnded(report) = &output else {
            return Err(TestCaseError::fail(format!(
                "expected the report of leg {number}, got {output:?}"
            )));
        };
        prop_assert_eq!(report.number, number);
        prop_assert_eq!(report.grant, Duration::from_millis(grant));
        return Ok(true);
    }
    if model.returned {
        prop_assert!(
            matches!(output, Output::Done(Err(Error::AlreadyFinished))),
            "after Done: {output:?}"
        );
        return Ok(false);
    }
    if let Some(expected) = model.ending.take() {
        model.returned = true;
        let Output::Done(result) = output else {
            return Err(TestCaseError::fail(format!(
                "expected Done({expected:?}), got {output:?}"
            )));
        };
        check_result(&result, &expected, model)?;
        return Ok(false);
    }
    if let Some(leg) = model.in_flight {
        let Output::Wait(until) = output else {
            return Err(TestCaseError::fail(format!(
                "expected a wait for the leg in flight, got {output:?}"
            )));
        };
        prop_assert_eq!(until, real.at(leg.ends_at), "the wait is the leg's end");
        return Ok(false);
    }
    let kind = model.next_kind();
    match model.grant() {
        None => {
            model.returned = true;
            let Output::Done(result) = output else {
                return Err(TestCaseError::fail(format!(
                    "{} ms into a {} ms budget the model refuses; got {output:?}",
                    model.elapsed(),
                    model.total
                )));
            };
            let expected = Expected::BudgetExhausted {
                leg: model.legs_sent + 1,
                method: named(kind),
            };
            check_result(&result, &expected, model)?;
            Ok(false)
        }
        Some(grant) => {
            let Output::Transmit(leg) = output else {
                return Err(TestCaseError::fail(format!(
                    "{} ms into a {} ms budget the model sends {kind:?} with {grant} ms; got {output:?}",
                    model.elapsed(),
                    model.total
                )));
            };
            prop_assert_eq!(leg.kind, kind);
            prop_assert_eq!(
                leg.timeout,
                Duration::from_millis(grant),
                "grant at {} ms of {} ms (unit {} ms)",
                model.elapsed(),
                model.total,
                model.unit
            );
            prop_assert_eq!(leg.id.number(), model.legs_sent + 1);
            let carried_session = leg.request.headers().contains_key("mcp-session-id");
            prop_assert_eq!(
                carried_session,
                model.has_session,
                "a {:?} leg and the session header",
                kind
            );
            let body: Value = serde_json::from_slice(leg.request.body()).unwrap();
            real.id = body.get("id").and_then(Value::as_i64);
            real.leg = Some(leg.id);
            model.legs_sent += 1;
            model.in_flight = Some(ModelLeg {
                number: leg.id.number(),
                kind,
                grant,
                ends_at: model.now + i64::try_from(grant).unwrap(),
                carried_session,
            });
            Ok(false)
        }
    }
}

fn check_result(
    result: &Result<Outcome, Error>,
    expected: &Expected,
    model: &Model,
) -> Result<(), TestCaseError> {
    let ok = match (expected, result) {
        (Expected::Success, Ok(outcome)) => match (&model.action, outcome) {
            (Action::Probe, Outcome::Probe(_)) | (Action::CallTool { .. }, Outcome::Call(_)) => {
                true
            }
            (Action::List(mcp_proto::ListKind::Tools), Outcome::Tools(tools)) => {
                tools.len() == usize::try_from(model.pages_total).unwrap()
            }
            _ => false,
        },
        (
            Expected::BudgetExhausted { leg, method },
            Err(Error::BudgetExhausted {
                server,
                budget,
                method: m,
                leg: l,
            }),
        ) => {
            server == LABEL
                && budget.as_duration() == Duration::from_millis(model.total)
                && m == method
                && l == leg
        }
        (
            Expected::LegTimedOut { method, grant },
            Err(Error::LegTimedOut {
                method: m,
                grant: g,
                ..
            }),
        ) => m == method && *g == Duration::from_millis(*grant),
        (Expected::Unreachable { method }, Err(Error::Unreachable { method: m, .. }))
        | (Expected::JsonRpc { method }, Err(Error::JsonRpc { method: m, .. }))
        | (Expected::Malformed { method }, Err(Error::Malformed { method: m, .. }))
        | (Expected::SessionExpired { method }, Err(Error::SessionExpired { method: m, .. }))
        | (Expected::Cancelled { method }, Err(Error::Cancelled { method: m, .. }))
        | (
            Expected::AuthorizationRequired { method },
            Err(Error::AuthorizationRequired { method: m, .. }),
        ) => m == method,
        (
            Expected::HttpStatus { method, status },
            Err(Error::HttpStatus {
                method: m,
                status: s,
                ..
            }),
        ) => m == method && s == status,
        _ => false,
    };
    prop_assert!(ok, "expected {expected:?}, got {result:?}");
    Ok(())
}

/// Polls until the operation must wait (a leg in flight) or has ended, checking each output.
fn settle(real: &mut Real<'_>, model: &mut Model) -> Result<(), TestCaseError> {
    for _ in 0..16 {
        if !check_poll(real, model)? && (model.in_flight.is_some() || model.returned) {
            return Ok(());
        }
    }
    Err(TestCaseError::fail("the operation did not settle"))
}

fn apply(real: &mut Real<'_>, model: &mut Model, step: &Step) {
    let leg = model.in_flight;
    // The kind the real driver answers: the leg in flight, or (after the end) the last one.
    let kind = leg.map_or(LegKind::CallTool, |l| l.kind);
    match *step {
        Step::Healthy { sse } => {
            let more = model.pages_done + 1 < model.pages_total;
            real.healthy(kind, sse, more);
            if let Some(leg) = leg {
                model.healthy(leg, sse);
            }
        }
        Step::Status(status) => {
            real.answer(kind, status, Some("application/json"), b"{}");
            if let Some(leg) = leg {
                let method = named(leg.kind);
                model.end(if status == 401 {
                    // No OAuth configured: the refusal needs someone to authorize.
                    Expected::AuthorizationRequired { method }
                } else {
                    Expected::HttpStatus { method, status }
                });
            }
        }
        Step::NotFound => {
            real.answer(kind, 404, None, b"");
            if let Some(leg) = leg {
                model.not_found(leg);
            }
        }
        Step::RpcError | Step::Garbage => {
            let body = if matches!(step, Step::RpcError) {
                json!({"jsonrpc": "2.0", "id": real.id, "error": {"code": -32000, "message": "no"}})
                    .to_string()
            } else {
                "this is not json".to_owned()
            };
            real.answer(kind, 200, Some("application/json"), body.as_bytes());
            if let Some(leg) = leg {
                let method = named(leg.kind);
                if leg.kind == LegKind::Initialized {
                    // A notification's answer is not read: any 2xx is accepted.
                    model.healthy(leg, false);
                } else if matches!(step, Step::RpcError) {
                    model.end(Expected::JsonRpc { method });
                } else {
                    model.end(Expected::Malformed { method });
                }
            }
        }
        Step::Transport(transport) => {
            let Some(id) = real.leg else { return };
            real.op.handle_input(
                Input::Failed {
                    leg: id,
                    error: TransportError::new(transport, "simulated"),
                },
                real.clock.now(),
            );
            if let Some(leg) = leg {
                let method = named(leg.kind);
                model.end(if transport == TransportErrorKind::TimedOut {
                    Expected::LegTimedOut {
                        method,
                        grant: leg.grant,
                    }
                } else {
                    Expected::Unreachable { method }
                });
            }
        }
        Step::Tick(ms) => {
            real.clock.advance(Duration::from_millis(ms));
            model.now += i64::try_from(ms).unwrap();
            // The driver's timer fires (early or late, it is the operation that decides).
            real.op.handle_input(Input::Timeout, real.clock.now());
            if let Some(leg) = leg {
                if model.now >= leg.ends_at {
                    model.end(Expected::LegTimedOut {
                        method: named(leg.kind),
                        grant: leg.grant,
                    });
                }
            }
        }
        Step::Rewind(ms) => {
            real.clock.rewind(Duration::from_millis(ms));
            model.now -= i64::try_from(ms).unwrap();
        }
        Step::Cancel => {
            real.op.handle_input(Input::Cancel, real.clock.now());
            if !model.finished() {
                let method = leg.map_or_else(|| named(model.next_kind()), |l| named(l.kind));
                model.events = 0;
                model.end(Expected::Cancelled { method });
            }
        }
    }
}

fn run(
    action: Action,
    warm: bool,
    budget_ms: u64,
    resolution: Resolution,
    pages_total: u32,
    steps: &[Step],
) -> Result<(), TestCaseError> {
    let clock = ManualClock::new();
    let mut session = Session::new(
        SessionConfig::new("http://model.test/mcp")
            .unwrap()
            .with_protocol_version(mcp_proto::ProtocolVersion::LATEST)
            // The model's statuses are Streamable HTTP's (`tests/http_sse.rs` has the fallback).
            .with_http_transport(mcp_proto::HttpTransport::StreamableHttp),
    );
    if warm {
        // A healthy probe first: the operation under test starts on a live session.
        let op = session.probe(clock.now());
        let mut probe = Real {
            op,
            session: &mut session,
            clock: clock.clone(),
            started: clock.now(),
            id: None,
            leg: None,
        };
        loop {
            match probe.op.poll_output(clock.now()) {
                Output::Update(update) => probe.session.apply(update),
                Output::Transmit(leg) => {
                    let body: Value =
                        serde_json::from_slice(leg.request.body()).unwrap_or(Value::Null);
                    probe.id = body.get("id").and_then(Value::as_i64);
                    probe.leg = Some(leg.id);
                    probe.healthy(leg.kind, false, false);
                }
                Output::Done(result) => {
                    prop_assert!(result.is_ok());
                    break;
                }
                Output::LegEnded(_) => {}
                other => return Err(TestCaseError::fail(format!("warm-up: {other:?}"))),
            }
        }
    }
    let unit = u64::try_from(resolution.unit().as_millis()).unwrap();
    let started = clock.now();
    let deadline = OperationDeadline::start(
        started,
        Budget::from_duration(Duration::from_millis(budget_ms)),
        resolution,
    );
    let mut model = Model {
        action: action.clone(),
        total: budget_ms.max(unit),
        unit,
        now: 0,
        next: if warm { Next::Work } else { Next::Initialize },
        has_session: warm,
        pages_done: 0,
        pages_total,
        reinitialized: false,
        in_flight: None,
        reports: std::collections::VecDeque::new(),
        ending: None,
        returned: false,
        legs_sent: 0,
        events: 0,
    };
    let op = session.start(action, deadline);
    let mut real = Real {
        op,
        session: &mut session,
        clock,
        started,
        id: None,
        leg: None,
    };
    for step in steps {
        settle(&mut real, &mut model)?;
        apply(&mut real, &mut model, step);
    }
    // Then the driver's timer ends whatever is still in flight.
    for _ in 0..8 {
        settle(&mut real, &mut model)?;
        if model.returned {
            break;
        }
        if let Some(leg) = model.in_flight {
            let wait = u64::try_from((leg.ends_at - model.now).max(0)).unwrap();
            apply(&mut real, &mut model, &Step::Tick(wait));
        }
    }
    prop_assert!(model.returned, "the operation did not end");
    for _ in 0..3 {
        settle(&mut real, &mut model)?;
    }
    Ok(())
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        Just(Action::Probe),
        Just(Action::List(mcp_proto::ListKind::Tools)),
        Just(Action::CallTool {
            name: "echo".to_owned(),
            arguments: Map::new(),
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(768))]

    #[test]
    fn an_operation_follows_the_budget_model(
        action in action(),
        warm in any::<bool>(),
        budget_ms in prop_oneof![3 => 0u64..30_000, 1 => 0u64..1_500],
        resolution in resolution(),
        pages_total in 1u32..4,
        steps in proptest::collection::vec(step(), 0..40),
    ) {
        run(action, warm, budget_ms, resolution, pages_total, &steps)?;
    }
}

/// A few fixed runs, so a change in the model or the crate shows in a readable failure.
#[test]
fn fixed_scenarios_follow_the_model() {
    let call = Action::CallTool {
        name: "echo".to_owned(),
        arguments: Map::new(),
    };
    let healthy = Step::Healthy { sse: false };
    // 20 s budget: 4 s, 2 s, then the work leg gets 14 s.
    run(
        call.clone(),
        false,
        20_000,
        Resolution::SECOND,
        1,
        &[
            Step::Tick(4_000),
            healthy.clone(),
            Step::Tick(2_000),
            healthy.clone(),
            Step::Tick(1_000),
            healthy.clone(),
        ],
    )
    .unwrap();
    // The budget runs out between legs: the refusal names leg 2.
    run(
        call.clone(),
        false,
        1_500,
        Resolution::MILLISECOND,
        1,
        &[Step::Tick(1_499), healthy.clone(), Step::Tick(1)],
    )
    .unwrap();
    // A 404 on a carried session re-initialises once inside the same budget.
    run(
        Action::List(mcp_proto::ListKind::Tools),
        true,
        10_000,
        Resolution::SECOND,
        2,
        &[
            Step::NotFound,
            healthy.clone(),
            healthy.clone(),
            Step::Healthy { sse: true },
            healthy.clone(),
        ],
    )
    .unwrap();
    // Cancel mid-leg, after a clock step backwards.
    run(
        call,
        false,
        5_000,
        Resolution::SECOND,
        1,
        &[Step::Rewind(2_000), healthy, Step::Cancel],
    )
    .unwrap();
}
