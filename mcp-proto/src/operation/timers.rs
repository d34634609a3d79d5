//! The operation's one timer table: every instant at which something happens without input.
//!
//! Each slot is one timer: the end of each kind of leg in flight (its grant), the pause before
//! a closed stream is resumed, the wait for the standalone stream's head that holds the work
//! request back, the person's step, the wait for the session, the waits between a local
//! server's close steps, the wait for the caller's answers to an input round, and the wait for
//! a task's next poll. [`Output::Wait`](super::Output::Wait) is the table's minimum, and
//! [`Input::Timeout`](super::Input::Timeout) expires whatever is due.
//! The table stores instants only; what an expiry means is decided by the operation.

use std::time::Instant;

use super::legs::Role;

/// One timer of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Timer {
    /// The grant of the leg in flight in this role ends.
    LegEnd(Role),
    /// The pause before resuming a stream the server closed before its answer is over.
    ResumePause,
    /// The work request stops waiting for the standalone stream's head.
    ListenHead,
    /// The end of the wait for a person's authorization (the rest of the budget).
    Person,
    /// The end of the wait for the session another operation establishes (the budget's end).
    SessionWait,
    /// Over stdio, a close: the end of the wait for the process to exit before the next step.
    CloseStep,
    /// The end of the wait for the caller's answers to an input round (the budget's end).
    Reply,
    /// The next poll of the task the call became.
    TaskPoll,
    /// Over HTTP+SSE, a subscription: the session's stream is listened to until the budget's
    /// end, which ends it.
    Listening,
}

impl Timer {
    const COUNT: usize = Role::COUNT + 8;

    /// Every timer, in the order they are expired when several are due at once: leg ends
    /// first (a leg that ran out fails before anything it gates proceeds).
    pub(super) const ALL: [Self; Self::COUNT] = [
        Self::LegEnd(Role::Work),
        Self::LegEnd(Role::Reply),
        Self::LegEnd(Role::Listen),
        Self::LegEnd(Role::Notice),
        Self::ResumePause,
        Self::ListenHead,
        Self::Person,
        Self::SessionWait,
        Self::CloseStep,
        Self::Reply,
        Self::TaskPoll,
        Self::Listening,
    ];

    const fn index(self) -> usize {
        match self {
            Self::LegEnd(role) => role.index(),
            Self::ResumePause => Role::COUNT,
            Self::ListenHead => Role::COUNT + 1,
            Self::Person => Role::COUNT + 2,
            Self::SessionWait => Role::COUNT + 3,
            Self::CloseStep => Role::COUNT + 4,
            Self::Reply => Role::COUNT + 5,
            Self::TaskPoll => Role::COUNT + 6,
            Self::Listening => Role::COUNT + 7,
        }
    }
}

/// When each timer fires, if it is armed.
#[derive(Debug, Default)]
pub(super) struct TimerTable {
    at: [Option<Instant>; Timer::COUNT],
}

impl TimerTable {
    pub(super) fn set(&mut self, timer: Timer, at: Instant) {
        self.at[timer.index()] = Some(at);
    }

    pub(super) fn get(&self, timer: Timer) -> Option<Instant> {
        self.at[timer.index()]
    }

    pub(super) fn stop(&mut self, timer: Timer) {
        self.at[timer.index()] = None;
    }

    pub(super) fn is_armed(&self, timer: Timer) -> bool {
        self.get(timer).is_some()
    }

    /// Whether `timer` is armed and due by `now`.
    pub(super) fn is_due(&self, timer: Timer, now: Instant) -> bool {
        self.get(timer).is_some_and(|at| at <= now)
    }

    /// Whether a wait holds the next leg back: the pause before a resumption, the work's
    /// wait for the standalone stream's head, the wait for a process to exit in a close, or
    /// the wait for the caller's answers to an input round.
    pub(super) fn holds_back(&self) -> bool {
        [
            Timer::ResumePause,
            Timer::ListenHead,
            Timer::CloseStep,
            Timer::Reply,
            Timer::Listening,
        ]
        .into_iter()
        .any(|timer| self.is_armed(timer))
    }

    /// The earliest armed timer.
    pub(super) fn next(&self) -> Option<Instant> {
        self.at.iter().flatten().min().copied()
    }

    pub(super) fn clear(&mut self) {
        self.at = [None; Timer::COUNT];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_table_waits_for_its_earliest_timer_and_expires_by_slot() {
        let t0 = Instant::now();
        let mut table = TimerTable::default();
        assert_eq!(table.next(), None);
        table.set(Timer::LegEnd(Role::Work), t0 + Duration::from_secs(20));
        table.set(Timer::ListenHead, t0 + Duration::from_secs(1));
        table.set(Timer::LegEnd(Role::Listen), t0 + Duration::from_secs(19));
        assert_eq!(table.next(), Some(t0 + Duration::from_secs(1)));
        assert!(table.is_due(Timer::ListenHead, t0 + Duration::from_secs(1)));
        assert!(!table.is_due(Timer::LegEnd(Role::Work), t0 + Duration::from_secs(19)));
        table.stop(Timer::ListenHead);
        assert_eq!(table.next(), Some(t0 + Duration::from_secs(19)));
        table.clear();
        assert!(!table.is_armed(Timer::LegEnd(Role::Work)));
    }
}
