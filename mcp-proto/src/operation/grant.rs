//! The budget's part of an operation: its deadline, the legs in flight and the timers, and the
//! one rule that grants a leg what is left of the budget or refuses it.
//!
//! Every leg and the person's authorization step are granted here, by [`Grants::grant`], and
//! nowhere else: what a leg gets is one `match` ([`leg_grant`], public so that tests check
//! grants against it), and what a refusal does is one more. A granted leg enters the leg table
//! with its end armed in the timer table ([`Grants::hand_out`], and [`Grants::hand_out_person`]
//! for the person's step); the operation reads the table, never the clock. A leg that leaves
//! the table is reported ([`LegReport`], how it ended by what the operation saw of it), so
//! every leg handed out has exactly one report. This module decides what a spent budget means
//! for each kind of leg; it never builds a request and never ends the operation (it tells the
//! operation how: [`Refusal`]).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::driving::{
    Authorize, CANCEL_NOTICE_GRANT, Leg, LegEnd, LegId, LegKind, LegReport, TransportError,
    TransportErrorKind,
};
use super::legs::{InFlight, LegTable, Role};
use super::timers::{Timer, TimerTable};
use crate::deadline::{Budget, OperationDeadline};
use crate::tls::TlsProblem;

/// What asks for a grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Grantee {
    /// A leg of this kind.
    Leg(LegKind),
    /// The person's step of an authorization (the browser), named `oauth:authorize`.
    Person,
}

/// The request the trace and errors name for the person's step.
pub(super) const PERSON_STEP: &str = "oauth:authorize";

impl Grantee {
    fn method(self) -> &'static str {
        match self {
            Self::Leg(kind) => kind.request_name(),
            Self::Person => PERSON_STEP,
        }
    }
}

/// Why nothing was granted, and so what the operation does instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refusal {
    /// The budget is spent before this request exists: the operation ends with
    /// [`Error::BudgetExhausted`](crate::Error::BudgetExhausted), naming the request and the leg
    /// it would have been; nothing of it was built or sent.
    Spent {
        budget: Budget,
        method: &'static str,
        leg: u32,
    },
    /// The leg serves a request that was already sent (a resumption's GET, an answer to a
    /// request the server sent while answering it): that request timed out.
    AwaitedLate,
    /// A close after the budget: the local server is ended at once instead ([`LegKind::Kill`]).
    KillInstead,
    /// A leg the operation goes on without: the standalone stream, or (over HTTP) the cancel
    /// notice, whose request would wait past the budget.
    Dropped,
}

/// The reports of legs that left the table, oldest first. Most operations have one report at
/// a time, taken before the next leg ends: it is kept without an allocation.
#[derive(Debug, Default)]
struct Reports {
    first: Option<LegReport>,
    later: VecDeque<LegReport>,
}

impl Reports {
    fn push(&mut self, report: LegReport) {
        match self.first {
            None if self.later.is_empty() => self.first = Some(report),
            _ => self.later.push_back(report),
        }
    }

    fn pop(&mut self) -> Option<LegReport> {
        self.first.take().or_else(|| self.later.pop_front())
    }
}

/// The deadline, the legs in flight and their timers.
#[derive(Debug)]
pub(super) struct Grants {
    deadline: OperationDeadline,
    /// The legs in flight, one per role.
    pub(super) legs: LegTable,
    /// Every instant something happens without input.
    pub(super) timers: TimerTable,
    /// How many legs were handed out (the last leg's number).
    sent: u32,
    /// Over stdio: a leg with nothing to show for a status is over as it should be.
    stdio: bool,
    /// The latest instant an input or a poll brought: a leg that leaves the table ends then.
    now: Instant,
    /// Reports of legs that left the table, oldest first.
    reports: Reports,
    /// The caller cancelled: the legs in flight end cancelled.
    cancelled: bool,
}

impl Grants {
    pub(super) fn new(deadline: OperationDeadline, stdio: bool) -> Self {
        Self {
            now: deadline.started(),
            deadline,
            legs: LegTable::default(),
            timers: TimerTable::default(),
            sent: 0,
            stdio,
            reports: Reports::default(),
            cancelled: false,
        }
    }

    /// The operation was given `now` (with an input, or polled): legs leaving the table from
    /// here end then.
    pub(super) fn at(&mut self, now: Instant) {
        self.now = self.now.max(now);
    }

    /// The next report of a leg that ended.
    pub(super) fn next_report(&mut self) -> Option<LegReport> {
        self.reports.pop()
    }

    /// The leg in `role` failed in the transport as `kind` (or its grant ran out:
    /// [`TransportErrorKind::TimedOut`]); its report will say so.
    pub(super) fn failed(&mut self, role: Role, kind: TransportErrorKind) {
        if let Some(leg) = self.legs.get_mut(role) {
            leg.failure.get_or_insert(kind);
        }
    }

    /// Over stdio: the server process exited; the legs in flight were cut off by it.
    pub(super) fn exited(&mut self) {
        for leg in self.legs.iter_mut() {
            leg.exited = true;
        }
    }

    /// The caller cancelled: the legs in flight, when they leave the table (as the operation
    /// ends), are reported cancelled.
    pub(super) fn cancel(&mut self) {
        self.cancelled = true;
    }

    /// How `leg` ended, by what the operation saw of it: its failure, the process's exit
    /// (a leg that ends the process ends with it), its status (an HTTP leg dropped before its
    /// head was let go: cancelled), or over as it should be; an end at or after its grant's is
    /// its timeout, except a kill's, which has no wait to time out.
    fn end_of(&self, leg: &InFlight) -> LegEnd {
        let ends_process = matches!(
            leg.kind,
            LegKind::Shutdown | LegKind::Terminate | LegKind::Kill
        );
        let end = match leg.failure {
            _ if self.cancelled => return LegEnd::Cancelled,
            Some(kind) => return LegEnd::Transport(kind),
            None if leg.exited && !ends_process => return LegEnd::Exited,
            None if leg.status != 0 => LegEnd::Status(leg.status),
            // A stream dropped is over as it should be, as a process ended is.
            None if self.stdio || leg.kind == LegKind::Hangup => LegEnd::Done,
            None => LegEnd::Cancelled,
        };
        if matches!(leg.kind, LegKind::Kill | LegKind::Hangup) {
            end
        } else {
            end.as_of(self.now, leg.ends_at())
        }
    }

    /// The latest instant an input or a poll brought.
    pub(super) fn now(&self) -> Instant {
        self.now
    }

    /// The operation's budget, as errors name it.
    pub(super) fn budget(&self) -> Budget {
        Budget::from_duration(self.deadline.total())
    }

    /// What is left of the budget at the latest instant given, plus the one unit of
    /// resolution it may overrun by: how long work done here after an answer (a result's
    /// check) may last.
    pub(super) fn left_with_overrun(&self) -> Duration {
        let deadline = &self.deadline;
        (deadline.remaining(self.now)).saturating_add(deadline.resolution().unit())
    }

    pub(super) fn deadline(&self) -> &OperationDeadline {
        &self.deadline
    }

    /// How many legs have been handed out.
    pub(super) fn sent(&self) -> u32 {
        self.sent
    }

    /// The instant the budget ends (`now` for an operation without one that cannot wait).
    pub(super) fn end_or(&self, now: Instant) -> Instant {
        self.deadline.end().unwrap_or(now)
    }

    /// Whether a pause ending at `at` would leave nothing of the budget for what follows it.
    pub(super) fn ends_by(&self, at: Instant) -> bool {
        self.deadline.end().is_some_and(|end| at >= end)
    }

    /// What `who` may have of the budget at `now` ([`leg_grant`]; the person's step gets what
    /// is left, as a leg does), or why it gets nothing: **the** refusal rule. Once the budget
    /// is spent, a leg the operation can go on (or end) without is dropped, an answer awaited
    /// to a request already sent times out, a close becomes a kill, and anything else ends the
    /// operation unsent.
    pub(super) fn grant(
        &self,
        who: Grantee,
        now: Instant,
        stdio: bool,
    ) -> Result<Duration, Refusal> {
        use Grantee::Leg;
        let granted = match who {
            Leg(kind) => leg_grant(kind, &self.deadline, now, stdio),
            Grantee::Person => self.deadline.grant(now).ok(),
        };
        if let Some(grant) = granted {
            return Ok(grant);
        }
        Err(match who {
            Leg(LegKind::CancelNotice | LegKind::TaskCancelNotice | LegKind::Listen) => {
                Refusal::Dropped
            }
            Leg(LegKind::Resume | LegKind::Respond) => Refusal::AwaitedLate,
            Leg(LegKind::Shutdown | LegKind::Terminate) => Refusal::KillInstead,
            who => Refusal::Spent {
                budget: self.budget(),
                method: who.method(),
                leg: self.sent + 1,
            },
        })
    }

    /// Puts a granted leg in the table under its role, arms its end, and hands it out.
    /// `answers` is the request whose answer the leg reads (for a resumption, the original
    /// one) and the JSON-RPC id that answer must carry.
    pub(super) fn hand_out(
        &mut self,
        kind: LegKind,
        request: http::Request<Vec<u8>>,
        grant: Duration,
        now: Instant,
        (answers, request_id): (LegKind, Option<i64>),
    ) -> Leg {
        self.at(now);
        let ends_at = now.checked_add(grant).unwrap_or(now);
        let carried_session = request.headers().contains_key(crate::wire::SESSION);
        self.sent += 1;
        let id = LegId(self.sent);
        let role = Role::of(kind);
        self.legs.insert(
            role,
            InFlight {
                id,
                kind,
                answers,
                request_id,
                grant,
                carried_session,
                sent_at: now,
                failure: None,
                exited: false,
                status: 0,
                written: false,
            },
        );
        self.timers.set(Timer::LegEnd(role), ends_at);
        Leg {
            id,
            kind,
            request,
            timeout: grant,
            ends_at,
        }
    }

    /// Arms the person's step, granted `grant` at `now`, and hands it out to show `url`.
    pub(super) fn hand_out_person(
        &mut self,
        url: String,
        grant: Duration,
        now: Instant,
    ) -> Authorize {
        let ends_at = now.checked_add(grant).unwrap_or(now);
        self.timers.set(Timer::Person, ends_at);
        Authorize {
            url,
            timeout: grant,
            ends_at,
        }
    }

    /// The operation waits for its session, at most to the budget's end (then what it waited
    /// for is refused unsent): the instant of the next timer.
    pub(super) fn await_session(&mut self, now: Instant) -> Instant {
        let end = self.end_or(now);
        self.timers.set(Timer::SessionWait, end);
        self.timers.next().unwrap_or(now)
    }

    /// Forgets the leg in `role` and stops its timer.
    pub(super) fn end(&mut self, role: Role) -> Option<InFlight> {
        self.timers.stop(Timer::LegEnd(role));
        let leg = self.legs.remove(role)?;
        self.reports.push(report(&leg, self.end_of(&leg), self.now));
        Some(leg)
    }

    /// The role of leg `id`, if it is in flight: `Ok` while its grant lasts, `Err` when an
    /// input for it came at or after its end (it times out). A leg that `failed` with a TLS
    /// handshake or a proxy that ran out of its grant is `Ok` however late that is reported
    /// (its end is stopped: it does not time out twice).
    pub(super) fn role_at(
        &mut self,
        id: LegId,
        now: Instant,
        failed: Option<&TransportError>,
    ) -> Option<Result<Role, Role>> {
        let role = self.legs.find(id)?;
        let timer = Timer::LegEnd(role);
        if failed.is_some_and(|e| {
            matches!(
                e.kind,
                TransportErrorKind::Tls(TlsProblem::TimedOut) | TransportErrorKind::ProxyTimedOut
            )
        }) {
            self.timers.stop(timer);
            return Some(Ok(role));
        }
        Some(if self.timers.is_due(timer, now) {
            Err(role)
        } else {
            Ok(role)
        })
    }

    /// Drops every leg and timer: the operation ended. Over HTTP, unless the caller cancelled,
    /// an answer to the server still waiting for its head stays in flight (see `ending`), for
    /// what is left of its grant but at most [`CANCEL_NOTICE_GRANT`] more: the result is in
    /// hand, and a server that does not answer the answer holds it back no longer than a
    /// cancel's notice would.
    pub(super) fn clear(&mut self) {
        let waiting = |leg: &InFlight| leg.status == 0 && leg.failure.is_none();
        let kept = (self.legs.get(Role::Reply))
            .filter(|leg| !self.stdio && !self.cancelled && waiting(leg))
            .and(self.timers.get(Timer::LegEnd(Role::Reply)))
            .map(|end| {
                (self.now.checked_add(CANCEL_NOTICE_GRANT)).map_or(end, |most| end.min(most))
            });
        for role in Role::ALL {
            if !(kept.is_some() && role == Role::Reply) {
                self.end(role);
            }
        }
        self.timers.clear();
        if let Some(end) = kept {
            self.timers.set(Timer::LegEnd(Role::Reply), end);
        }
        // A leg handed out after a cancel (its notice) is not the cancelled one.
        self.cancelled = false;
    }
}

/// What a leg of `kind` is granted when it is handed out at `now` under `deadline` (over
/// stdio when `stdio`), or `None` when it is refused: the one grant rule of every operation.
///
/// A leg gets what is left of the budget, rounded up to the resolution and never less than
/// one unit ([`OperationDeadline::grant`]); the cancel notice ([`LegKind::CancelNotice`], and
/// [`LegKind::TaskCancelNotice`] for a cancelled call's task) what is left but at most
/// [`CANCEL_NOTICE_GRANT`]; a kill one unit (it does not wait: the unit only bounds a driver
/// that never reports the exit). Once the budget is spent, over stdio the cancel notice still
/// gets one unit (the driver writes it only if the server's stdin takes it at once); every
/// other leg, the notice over HTTP included, is refused.
///
/// A driver needs none of this: each [`Leg`] carries its grant. It is public so that tests
/// and fuzz targets check the grants an operation hands out against the rule itself, and
/// follow it when it changes instead of keeping a copy that goes stale.
pub fn leg_grant(
    kind: LegKind,
    deadline: &OperationDeadline,
    now: Instant,
    stdio: bool,
) -> Option<Duration> {
    let unit = deadline.resolution().unit();
    match (kind, deadline.grant(now)) {
        // Ending what runs (a process, the session's stream) takes no time, and must happen.
        (LegKind::Kill | LegKind::Hangup, _) => Some(unit),
        (LegKind::CancelNotice | LegKind::TaskCancelNotice, Ok(left)) => {
            Some(left.min(CANCEL_NOTICE_GRANT))
        }
        (_, Ok(left)) => Some(left),
        (LegKind::CancelNotice, Err(_)) if stdio => Some(unit.min(CANCEL_NOTICE_GRANT)),
        (_, Err(_)) => None,
    }
}

fn report(leg: &InFlight, end: LegEnd, now: Instant) -> LegReport {
    LegReport {
        number: leg.id.number(),
        kind: leg.kind,
        grant: leg.grant,
        elapsed: now.saturating_duration_since(leg.sent_at),
        end,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deadline::Resolution;

    fn grants(budget_ms: u64, t0: Instant) -> Grants {
        let budget = Budget::from_duration(Duration::from_millis(budget_ms));
        Grants::new(
            OperationDeadline::start(t0, budget, Resolution::MILLISECOND),
            false,
        )
    }

    #[test]
    fn reports_come_out_oldest_first_however_they_were_kept() {
        let report = |number| LegReport {
            number,
            kind: LegKind::CallTool,
            grant: Duration::from_secs(1),
            elapsed: Duration::ZERO,
            end: LegEnd::Done,
        };
        let mut reports = Reports::default();
        reports.push(report(1));
        reports.push(report(2));
        assert_eq!(reports.pop().map(|r| r.number), Some(1));
        // The first place is free again, but an older report waits: the new one queues.
        reports.push(report(3));
        let numbers: Vec<u32> = std::iter::from_fn(|| reports.pop())
            .map(|r| r.number)
            .collect();
        assert_eq!(numbers, [2, 3]);
        reports.push(report(4));
        assert_eq!(reports.pop().map(|r| r.number), Some(4));
        assert!(reports.pop().is_none());
    }

    #[test]
    fn one_rule_refuses_each_kind_of_leg_its_own_way_once_the_budget_is_spent() {
        let t0 = Instant::now();
        let g = grants(100, t0);
        let late = t0 + Duration::from_millis(100);
        let leg = |kind| Grantee::Leg(kind);
        assert!(matches!(
            g.grant(leg(LegKind::CallTool), late, false),
            Err(Refusal::Spent {
                method: "tools/call",
                leg: 1,
                ..
            })
        ));
        assert!(matches!(
            g.grant(Grantee::Person, late, false),
            Err(Refusal::Spent {
                method: PERSON_STEP,
                ..
            })
        ));
        assert_eq!(
            g.grant(leg(LegKind::Resume), late, false),
            Err(Refusal::AwaitedLate)
        );
        assert_eq!(
            g.grant(leg(LegKind::Respond), late, false),
            Err(Refusal::AwaitedLate)
        );
        assert_eq!(
            g.grant(leg(LegKind::Shutdown), late, true),
            Err(Refusal::KillInstead)
        );
        assert_eq!(
            g.grant(leg(LegKind::Listen), late, false),
            Err(Refusal::Dropped)
        );
        for notice in [LegKind::CancelNotice, LegKind::TaskCancelNotice] {
            assert_eq!(g.grant(leg(notice), late, false), Err(Refusal::Dropped));
        }
        let unit = Duration::from_millis(1);
        assert_eq!(g.grant(leg(LegKind::CancelNotice), late, true), Ok(unit));
        assert_eq!(g.grant(leg(LegKind::Kill), late, true), Ok(unit));
    }

    #[test]
    fn a_leg_gets_what_is_left_and_the_notice_no_more_than_its_cap() {
        let t0 = Instant::now();
        let g = grants(20_000, t0);
        let now = t0 + Duration::from_millis(5_000);
        let left = Duration::from_millis(15_000);
        assert_eq!(
            g.grant(Grantee::Leg(LegKind::CallTool), now, false),
            Ok(left)
        );
        assert_eq!(g.grant(Grantee::Person, now, false), Ok(left));
        assert_eq!(
            g.grant(Grantee::Leg(LegKind::CancelNotice), now, false),
            Ok(CANCEL_NOTICE_GRANT)
        );
    }

    #[test]
    fn a_notice_with_less_than_its_cap_left_gets_what_is_left_and_none_once_it_is_spent() {
        let t0 = Instant::now();
        let g = grants(20_000, t0);
        let at = |ms| t0 + Duration::from_millis(ms);
        for notice in [LegKind::CancelNotice, LegKind::TaskCancelNotice] {
            // 384 ms left: the notice cannot have the cap, only what a leg would get.
            assert_eq!(
                g.grant(Grantee::Leg(notice), at(19_616), false),
                Ok(Duration::from_millis(384))
            );
            assert_eq!(
                leg_grant(notice, g.deadline(), at(19_616), false),
                Some(Duration::from_millis(384))
            );
            assert_eq!(leg_grant(notice, g.deadline(), at(20_000), false), None);
        }
        // The rule the operation follows is the public one, for every kind of leg.
        for kind in [LegKind::CallTool, LegKind::Respond, LegKind::Kill] {
            for ms in [0, 19_616, 20_000, 25_000] {
                assert_eq!(
                    g.grant(Grantee::Leg(kind), at(ms), true).ok(),
                    leg_grant(kind, g.deadline(), at(ms), true),
                    "{kind:?} at {ms} ms"
                );
            }
        }
    }
}
