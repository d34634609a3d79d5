//! Streams the server closed before their answer: remembered where they stopped (the last
//! event id), paused for the server's `retry`, and resumed with a GET carrying
//! `Last-Event-ID`, inside the same budget, at most [`MAX_RESUMPTIONS`] times.
//!
//! A resumption is never scheduled when the pause would end at or past the deadline: the
//! answer cannot come in time, and the operation says so at once instead of idling. This
//! module plans, ends the broken stream's leg and arms the pause ([`Resumed`]); the operation
//! grants the resumption's leg.

use std::time::{Duration, Instant};

use super::grant::Grants;
use super::legs::{InFlight, Role};
use super::timers::Timer;
use super::{DEFAULT_RETRY, LegKind, MAX_REISSUES, MAX_RESUMPTIONS};

/// What becomes of a work stream that ended before its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Resumed {
    /// It is resumed after a pause, or its request goes out again: the leg is over.
    Later,
    /// The pause would spend the rest of the budget and leave nothing for the GET: the
    /// awaited request times out now rather than idle until the deadline.
    TooLate,
    /// It cannot be resumed.
    Not,
}

/// Where the work stream stopped, and the resumption waiting to go out.
#[derive(Debug, Default)]
pub(super) struct Resumption {
    last_event_id: Option<String>,
    count: u32,
    awaited: Option<Awaited>,
    /// How many times a broken modern answer stream sent its request again.
    reissues: u32,
}

/// The request whose answer a resumed stream is to carry.
#[derive(Debug, Clone, Copy)]
pub(super) struct Awaited {
    answers: LegKind,
    request_id: Option<i64>,
    /// The grant of the request whose answer is awaited.
    grant: Duration,
}

impl Resumption {
    /// Remembers the id of the last event the work stream carried. An id a header cannot
    /// carry makes the stream unresumable from there: resuming from an older id would replay
    /// what was already handled, and resuming without one would restart the stream.
    pub(super) fn saw_event_id(&mut self, id: Option<&str>) {
        let Some(id) = id else {
            return;
        };
        if self.last_event_id.as_deref() == Some(id) {
            return;
        }
        self.last_event_id = http::HeaderValue::from_str(id)
            .is_ok()
            .then(|| id.to_owned());
    }

    pub(super) fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// A new request opens a new stream: an earlier stream's event id must never resume it.
    pub(super) fn forget_stream(&mut self) {
        self.last_event_id = None;
    }

    pub(super) fn is_pending(&self) -> bool {
        self.awaited.is_some()
    }

    /// The request a pending resumption serves: its kind, id and grant.
    pub(super) fn awaited(&self) -> Option<(LegKind, Option<i64>, Duration)> {
        self.awaited.map(|a| (a.answers, a.request_id, a.grant))
    }

    /// Takes the pending resumption to send it.
    pub(super) fn take(&mut self) -> Option<(LegKind, Option<i64>, Duration)> {
        let awaited = self.awaited.take()?;
        self.count += 1;
        Some((awaited.answers, awaited.request_id, awaited.grant))
    }

    pub(super) fn abandon(&mut self) {
        self.awaited = None;
    }
}

impl Resumption {
    /// The work stream `leg` ended at `now` without its answer; `retry` is what the stream
    /// asked for, if anything. If it carried an event id, the server may have closed it on
    /// purpose (protocol 2025-11-25) and will answer on a resumed stream: the instant the
    /// pause for the server's `retry` ends, and what the resumed stream is to carry. `None`
    /// when the stream cannot be resumed.
    fn plan(
        &self,
        leg: &InFlight,
        retry: Option<Duration>,
        now: Instant,
    ) -> Option<(Instant, Awaited)> {
        let resumable = leg.request_id.is_some()
            && self.last_event_id.is_some()
            && self.count < MAX_RESUMPTIONS;
        if !resumable {
            return None;
        }
        let retry = retry.unwrap_or(DEFAULT_RETRY);
        let awaited = Awaited {
            answers: leg.answers,
            request_id: leg.request_id,
            grant: leg.grant,
        };
        Some((now.checked_add(retry).unwrap_or(now), awaited))
    }

    /// The work stream ended at `now` without its answer (`retry`: what it asked for): in the
    /// `modern` era its request goes out again, in the legacy era it is resumed after a pause
    /// (its leg ends, the pause's timer is armed), when it can be.
    pub(super) fn after_early_end(
        &mut self,
        grants: &mut Grants,
        retry: Option<Duration>,
        now: Instant,
        modern: bool,
    ) -> Resumed {
        if modern {
            return if self.reissue(grants) {
                Resumed::Later
            } else {
                Resumed::Not
            };
        }
        let work = grants.legs.get(Role::Work);
        let Some((at, awaited)) = work.and_then(|leg| self.plan(leg, retry, now)) else {
            return Resumed::Not;
        };
        if grants.ends_by(at) {
            return Resumed::TooLate;
        }
        grants.end(Role::Work);
        self.awaited = Some(awaited);
        grants.timers.set(Timer::ResumePause, at);
        Resumed::Later
    }

    /// A modern answer stream broke before its answer (or ended without it): the work leg in
    /// flight is over and its request goes out again (see [`Resumption::reissues`]). Returns
    /// whether it will.
    pub(super) fn reissue(&mut self, grants: &mut Grants) -> bool {
        if !grants.legs.is_busy(Role::Work) || !self.reissues() {
            return false;
        }
        grants.end(Role::Work);
        true
    }

    /// The modern era has no resumption: a stream that broke before its answer lost the
    /// request, which goes out again as a new request (a new id, a new leg, the same budget),
    /// at most [`MAX_REISSUES`] times. Returns whether it may once more.
    fn reissues(&mut self) -> bool {
        if self.reissues >= MAX_REISSUES {
            return false;
        }
        self.reissues += 1;
        true
    }
}
