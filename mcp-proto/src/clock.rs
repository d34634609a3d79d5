//! Time as an input.
//!
//! The state machine never reads a clock: every method that needs the time takes `now: Instant`.
//! Drivers own a [`Clock`] and pass its readings in; tests own a [`ManualClock`] and step it by
//! exactly the durations a scenario describes. Both are monotonic by construction: a wall clock
//! stepped by an NTP correction mid-operation would grant a leg a budget nobody authorised.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// A source of monotonic instants.
///
/// Implementations must never go backwards in normal operation; the deadline arithmetic
/// nevertheless tolerates a clock that does (it never grants more than the budget).
pub trait Clock {
    /// The current instant.
    fn now(&self) -> Instant;
}

/// The process's monotonic clock ([`Instant::now`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct MonotonicClock;

impl Clock for MonotonicClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// A clock that moves only when told to, for exact, sleep-free tests.
///
/// Clones share one reading, so a test can hand a clone to a driver stand-in and advance the
/// original. It starts at an arbitrary instant (deadlines are differences, never absolute).
///
/// ```
/// use mcp_proto::{Clock, ManualClock};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let t0 = clock.now();
/// clock.advance(Duration::from_secs(4));
/// assert_eq!(clock.now() - t0, Duration::from_secs(4));
/// ```
#[derive(Debug, Clone)]
pub struct ManualClock {
    reading: Arc<Mutex<Instant>>,
}

impl ManualClock {
    /// A clock reading an arbitrary fixed instant well away from any platform minimum, so
    /// [`ManualClock::rewind`] has room to step backwards.
    pub fn new() -> Self {
        let base = Instant::now();
        let start = base.checked_add(Duration::from_secs(4_242)).unwrap_or(base);
        Self {
            reading: Arc::new(Mutex::new(start)),
        }
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let mut reading = self.reading.lock().unwrap_or_else(PoisonError::into_inner);
        *reading = reading.checked_add(by).unwrap_or(*reading);
    }

    /// Moves the clock backwards by `by` (as a misbehaving clock source would), saturating at
    /// the earliest representable reading.
    pub fn rewind(&self, by: Duration) {
        let mut reading = self.reading.lock().unwrap_or_else(PoisonError::into_inner);
        *reading = reading.checked_sub(by).unwrap_or(*reading);
    }

    /// Sets the clock to `at`.
    pub fn set(&self, at: Instant) {
        *self.reading.lock().unwrap_or_else(PoisonError::into_inner) = at;
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        *self.reading.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<C: Clock + ?Sized> Clock for &C {
    fn now(&self) -> Instant {
        (**self).now()
    }
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    fn now(&self) -> Instant {
        (**self).now()
    }
}
