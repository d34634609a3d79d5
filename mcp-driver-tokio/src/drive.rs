//! The tokio driver's one loop: the loop of [`mcp_proto::driver`]'s module docs, the same for
//! every operation, HTTP and stdio alike, and the same shape as the blocking driver's.
//!
//! [`Run::drive`] polls the operation and does what each output says: an update goes to the
//! session, an event and a leg's report to the caller's observer, the server's request to the
//! caller's responder (here, between polls: never inside one), a leg to the transport
//! ([`Wire::transmit`](crate::wire::Wire::transmit)), the person's step to the caller's authorizer, and a wait is one
//! `select!` on whatever comes first: a cancel, the operation's next timer, the session's
//! change (while it awaits the session), or what the transport brings ([`Wire::next`], fed
//! by [`Wire::feed`]). What differs
//! between HTTP and stdio is only how bytes move ([`HttpWire`](crate::leg::HttpWire),
//! [`StdioWire`](crate::stdio::StdioWire)). Nothing here decides anything.

use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_proto::driver::Authorize;
use mcp_proto::driver::{Input, Operation, Output};
use mcp_proto::{Clock, Error, Observer, Outcome};
use tokio::sync::futures::Notified;
use tokio::time::{Instant as TokioInstant, Sleep, sleep_until};

use crate::authorize::Authorizer;
use crate::cancel::CancelShared;
use crate::clock::TokioClock;
use crate::shell::ClientShell;
use crate::trace;
use crate::wire::Wire;
use mcp_driver_common::LegSpans;

/// One operation's run: what it needs from the client, borrowed for its duration.
pub(crate) struct Run<'a> {
    pub(crate) shell: &'a ClientShell,
    pub(crate) observer: &'a mut (dyn Observer + Send),
    pub(crate) cancel: &'a CancelShared,
    /// The cancel count the operation armed itself with when it was called.
    pub(crate) armed: u64,
    pub(crate) authorizer: Option<Arc<dyn Authorizer>>,
    /// The operation's span (feature `tracing`), parent of each leg's.
    pub(crate) span: trace::Span,
}

/// How much earlier than the operation's next instant tokio's timer is armed: its wheel's
/// tick and its rounding up, with a margin. The rest is spun through (see [`Waits::wait`]).
const TIMER_SLACK: Duration = Duration::from_millis(2);

/// What the loop waits on beside the wire: a cancel, the operation's one timer (moved to the
/// proto's next instant each time), and, while the operation awaits its session, the
/// session's next change (registered under the session's lock when the session was offered,
/// so no change is missed).
struct Waits<'p, 'a> {
    cancelled: CancelWait<'p, 'a>,
    timer: Pin<&'p mut Sleep>,
    changed: Pin<&'p mut Option<Notified<'a>>>,
    /// The operation was just given its session: if it awaits it still, it waits for the
    /// session's change.
    offered: bool,
    /// The instant being spun towards, and when (by the system's clock) the spin began.
    spin: Option<(Instant, std::time::Instant)>,
}

/// The wait for a cancel: the operation's one registration with the client's cancel (a
/// `Notified`, registered once), polled again only when the task's waker changed. Each poll
/// of a registered `Notified` locks the list of waiters; a wait a leg is one more poll, and
/// the count the cancel moves before it wakes anyone tells whether it fired.
struct CancelWait<'p, 'a> {
    notified: Pin<&'p mut Notified<'a>>,
    cancel: &'a CancelShared,
    armed: u64,
    /// The waker the registration holds.
    waker: Option<std::task::Waker>,
    /// The operation was told of the cancel: the wait is not polled again (it stays ready).
    told: bool,
}

impl CancelWait<'_, '_> {
    fn poll(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        if self.cancel.is_fired(self.armed) {
            return std::task::Poll::Ready(());
        }
        if self
            .waker
            .as_ref()
            .is_some_and(|held| held.will_wake(cx.waker()))
        {
            return std::task::Poll::Pending;
        }
        let polled = self.notified.as_mut().poll(cx);
        if polled.is_pending() {
            self.waker = Some(cx.waker().clone());
        }
        polled
    }
}

impl<'a> Waits<'_, 'a> {
    /// Whether to spin on towards `until`: for at most twice [`TIMER_SLACK`] of the system's
    /// clock, so that a clock that does not move (tokio's paused time in tests) falls back to
    /// the timer, which moves it.
    fn spin(&mut self, until: Instant) -> bool {
        let now = std::time::Instant::now();
        match self.spin {
            Some((towards, from)) if towards == until => {
                now.saturating_duration_since(from) < TIMER_SLACK * 2
            }
            _ => {
                self.spin = Some((until, now));
                true
            }
        }
    }

    /// Gives `op` the session, under its lock, registering for its next change before letting
    /// go.
    fn offer(&mut self, shell: &'a ClientShell, op: &mut Operation, now: Instant) {
        let mut session = shell.session();
        op.handle_input(Input::Session(&mut session), now);
        self.changed.set(Some(shell.changed().notified()));
        if let Some(notified) = self.changed.as_mut().as_pin_mut() {
            notified.enable();
        }
        self.offered = true;
    }

    /// Waits until `until` for whatever comes first (a cancel, the timer, the session's
    /// change, what the wire brings), feeds it, and drops what the operation let go. Returns
    /// the instant it woke at.
    ///
    /// tokio's timer has a 1 ms wheel and rounds its deadlines up, so a leg's end would come up
    /// to a few milliseconds late: it is armed [`TIMER_SLACK`] early, and the rest is spun
    /// through (the wire still read, the task yielding between looks at the clock), so the
    /// operation hears of `until` within microseconds of it.
    async fn wait(&mut self, op: &mut Operation, wire: &mut impl Wire, until: Instant) -> Instant {
        let clock = TokioClock;
        let (cancellable, waits_for_session) =
            (!self.cancelled.told, std::mem::take(&mut self.offered));
        let early = until.checked_sub(TIMER_SLACK).unwrap_or(until);
        let late = clock.now() >= early;
        let spinning = late && self.spin(until);
        // Past the early instant and done spinning (the clock does not move: tokio's time is
        // paused), the timer is armed at the instant itself.
        let armed = TokioInstant::from_std(if late { until } else { early });
        if !spinning && self.timer.deadline() != armed {
            self.timer.as_mut().reset(armed);
        }
        let changed = &mut self.changed;
        // What woke the wait, and whether the operation's instant may have come with it (a
        // cancel or the session's change is acted on first).
        let (now, timed) = tokio::select! {
            biased;
            // Once fired, the operation is told before the next wait (finished, it still
            // stops waiting for an answer to the server): this branch is not polled again.
            () = std::future::poll_fn(|cx| self.cancelled.poll(cx)), if cancellable => (clock.now(), false),
            () = self.timer.as_mut(), if !spinning => (clock.now(), true),
            () = async { if let Some(n) = changed.as_mut().as_pin_mut() { n.await } }, if waits_for_session => {
                changed.set(None);
                (clock.now(), false)
            }
            came = wire.next() => (wire.feed(op, came).await, true),
            () = tokio::task::yield_now(), if spinning => (clock.now(), true),
        };
        if timed && now >= until {
            wire.at_timer(op, now);
            op.handle_input(Input::Timeout, now);
        }
        // Legs the operation no longer has (expired, dropped, or over with it) go now.
        wire.prune(op);
        now
    }
}

impl Run<'_> {
    /// Drives `op` to its end over `wire` and returns its result.
    pub(crate) async fn drive(
        mut self,
        op: &mut Operation,
        wire: &mut impl Wire,
    ) -> Result<Outcome, Error> {
        let clock = TokioClock;
        let (cancel, armed, shell) = (self.cancel, self.armed, self.shell);
        // One clock reading per wake-up: the inputs it brought, the legs pruned after them and
        // the outputs drained before the next wait all happen "now".
        let mut now = clock.now();
        let (cancelled, timer) = (cancel.waiter(), sleep_until(TokioInstant::from_std(now)));
        tokio::pin!(cancelled, timer);
        cancelled.as_mut().enable();
        let changed = std::pin::pin!(None::<Notified<'_>>);
        let mut waits = Waits {
            cancelled: CancelWait {
                notified: cancelled,
                cancel,
                armed,
                waker: None,
                told: false,
            },
            timer,
            changed,
            offered: false,
            spin: None,
        };
        let mut spans = LegSpans::default();
        loop {
            if !waits.cancelled.told && cancel.is_fired(armed) {
                waits.cancelled.told = true;
                now = clock.now();
                op.handle_input(Input::Cancel, now);
                wire.prune(op);
            }
            let output = op.poll_output(now);
            waits.offered &= matches!(output, Output::AwaitSession(_));
            match output {
                Output::Update(update) => shell.apply(update),
                Output::Event(event) => {
                    self.observer.event(&event);
                    // The observer's time is not the operation's: read the clock again.
                    now = clock.now();
                }
                Output::Request(request) => {
                    let reply = request.reply_from(op.session_config());
                    now = clock.now();
                    op.handle_input(reply, now);
                }
                Output::LegEnded(report) => spans.ended(&report, self.observer),
                Output::Transmit(leg) => {
                    spans.sent(&leg, &self.span);
                    now = wire.transmit(op, leg, now).await;
                }
                Output::Authorize(step) => now = self.authorize(op, &step, &mut waits).await,
                Output::AwaitSession(until) if waits.offered => {
                    now = waits.wait(op, wire, until).await
                }
                Output::AwaitSession(_) => waits.offer(shell, op, now),
                Output::Wait(until) => now = waits.wait(op, wire, until).await,
                Output::Done(result) => {
                    trace::ended(&self.span, &result);
                    return result;
                }
            }
        }
    }

    /// Hands the person's step to the caller's authorizer and feeds back its redirect. The
    /// step ends at the instant the operation named, its own timer's: then the operation is
    /// told the time came ([`Input::Timeout`]), as the blocking driver tells it; a cancel ends
    /// it sooner (the loop's next turn passes the cancel on). Without an authorizer the
    /// operation is told at once. Returns the instant after.
    async fn authorize(
        &mut self,
        op: &mut Operation,
        step: &Authorize,
        waits: &mut Waits<'_, '_>,
    ) -> Instant {
        let Some(authorizer) = self.authorizer.as_deref() else {
            trace::authorized(&self.span, None);
            let now = TokioClock.now();
            op.handle_input(Input::NoAuthorizer, now);
            return now;
        };
        let redirect = tokio::select! {
            biased;
            () = std::future::poll_fn(|cx| waits.cancelled.poll(cx)), if !waits.cancelled.told => return TokioClock.now(),
            redirect = tokio::time::timeout_at(
                TokioInstant::from_std(step.ends_at),
                authorizer.authorize(step),
            ) => redirect,
        };
        trace::authorized(&self.span, Some(matches!(redirect, Ok(Ok(_)))));
        let now = TokioClock.now();
        let _ = match redirect {
            Ok(Ok(url)) => op.handle_input(Input::Redirect(&url), now),
            Ok(Err(detail)) => op.handle_input(Input::AuthorizerFailed(&detail), now),
            Err(_) => op.handle_input(Input::Timeout, now),
        };
        now
    }
}
