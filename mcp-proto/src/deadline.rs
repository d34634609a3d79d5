//! The budget rule: one deadline per operation, spent across its legs.
//!
//! An operation opens one [`OperationDeadline`] when it starts. Every leg is then granted
//! only what is left of it, rounded **up** to the [`Resolution`] and never less than one unit:
//! a zero timeout means "no timeout" in many HTTP stacks, so the leg sent with the least time
//! left would otherwise be the one leg with no bound at all. When nothing is left the leg is
//! refused and never sent. The worst-case overrun of an operation is therefore under one
//! resolution unit (under a second by default, under a millisecond at [`Resolution::MILLISECOND`]).
//!
//! This module is pure arithmetic on instants the caller passes in; it never reads a clock.
//!
//! ```
//! use mcp_proto::{Budget, OperationDeadline, Resolution};
//! use std::time::{Duration, Instant};
//!
//! let t0 = Instant::now();
//! let deadline = OperationDeadline::start(t0, Budget::DEFAULT, Resolution::SECOND);
//! assert_eq!(deadline.grant(t0), Ok(Duration::from_secs(20)));
//! // initialize took 4 s, the notification 2 s: tools/call gets what the handshake left.
//! assert_eq!(deadline.grant(t0 + Duration::from_secs(6)), Ok(Duration::from_secs(14)));
//! // 19.3 s spent: 0.7 s left is granted a whole second, never zero.
//! assert_eq!(deadline.grant(t0 + Duration::from_millis(19_300)), Ok(Duration::from_secs(1)));
//! // 20 s spent: nothing is left, the leg is refused.
//! assert!(deadline.grant(t0 + Duration::from_secs(20)).is_err());
//! ```

use std::fmt;
use std::time::{Duration, Instant};

/// The total time one operation may take, across all of its legs.
///
/// The default, 20 s, is composed rather than inherited: 15 s for the work request plus 5 s
/// for the two handshake legs in front of it. It is a wager on the shape of a healthy server,
/// not a floor under the payload leg.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Budget(Duration);

impl Budget {
    /// 20 seconds.
    pub const DEFAULT: Self = Self(Duration::from_secs(20));

    /// The largest budget this crate represents (100 years). It is not a policy clamp: it only
    /// keeps instant arithmetic from overflowing.
    pub const MAX: Self = Self(Duration::from_secs(100 * 365 * 24 * 3600));

    /// A budget of `secs` whole seconds (at most [`Budget::MAX`]).
    pub const fn from_secs(secs: u64) -> Self {
        if secs > Self::MAX.0.as_secs() {
            Self::MAX
        } else {
            Self(Duration::from_secs(secs))
        }
    }

    /// A budget of exactly `total` (at most [`Budget::MAX`]). A budget below one resolution unit,
    /// zero included, is raised to one unit when an operation starts.
    pub fn from_duration(total: Duration) -> Self {
        Self(total.min(Self::MAX.0))
    }

    /// Reads an operator's configuration value with the lenient rules of the reference client.
    ///
    /// The text is trimmed; it is used when it is a plain decimal number whose integer part is
    /// greater than zero, and that integer part is the budget in seconds. Anything else (empty,
    /// whitespace, non-numeric, zero, negative, `0.5`) falls back to [`Budget::DEFAULT`].
    /// There is no upper clamp: a long budget costs the operator who set it the wait they asked for.
    ///
    /// ```
    /// use mcp_proto::Budget;
    /// assert_eq!(Budget::from_config_str("90"), Budget::from_secs(90));
    /// assert_eq!(Budget::from_config_str(" 2.5 "), Budget::from_secs(2));
    /// for fallback in ["", "   ", "soon", "0", "-5", "0.5"] {
    ///     assert_eq!(Budget::from_config_str(fallback), Budget::DEFAULT);
    /// }
    /// ```
    pub fn from_config_str(raw: &str) -> Self {
        match parse_config_seconds(raw.trim()) {
            Some(secs) if secs > 0 => Self::from_secs(u64::try_from(secs).unwrap_or(u64::MAX)),
            _ => Self::DEFAULT,
        }
    }

    /// The budget as a duration.
    pub const fn as_duration(self) -> Duration {
        self.0
    }
}

impl Default for Budget {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl fmt::Display for Budget {
    /// `20-second`, `2.5-second`, `0.5-second`: the form used in the budget-exhausted message.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-second", format_seconds(self.0))
    }
}

/// Formats a duration as seconds without trailing zeros (`20`, `2.5`, `0.001`).
pub(crate) fn format_seconds(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        return d.as_secs().to_string();
    }
    let text = format!("{}.{:09}", d.as_secs(), d.subsec_nanos());
    text.trim_end_matches('0').to_owned()
}

/// The integer part of a numeric config value: an optional sign, digits, an optional fraction
/// and an optional exponent. `None` when the text is not such a number.
fn parse_config_seconds(text: &str) -> Option<i128> {
    let bytes = text.as_bytes();
    let mut i = 0;
    if matches!(bytes.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let digits_start = i;
    while bytes.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    let int_digits = i - digits_start;
    let mut frac_digits = 0;
    if bytes.get(i) == Some(&b'.') {
        i += 1;
        while bytes.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
            frac_digits += 1;
        }
    }
    if int_digits + frac_digits == 0 {
        return None;
    }
    if matches!(bytes.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(bytes.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let exp_start = i;
        while bytes.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == exp_start {
            return None;
        }
    }
    if i != bytes.len() {
        return None;
    }
    // The grammar above only admits finite decimal numbers, so the parse cannot yield NaN.
    let value: f64 = text.parse().ok()?;
    if !value.is_finite() {
        return Some(i128::MAX);
    }
    Some(value.trunc().clamp(i128::MIN as f64, i128::MAX as f64) as i128)
}

/// The unit grants are rounded up to.
///
/// The default, one second, reproduces the reference client's numbers exactly. A finer unit
/// shrinks the worst-case overrun of an operation (which is always under one unit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Resolution(Duration);

impl Resolution {
    /// Whole seconds (the default).
    pub const SECOND: Self = Self(Duration::from_secs(1));
    /// Whole milliseconds, the finest resolution supported.
    pub const MILLISECOND: Self = Self(Duration::from_millis(1));

    /// A custom unit: `None` below one millisecond or above one hour.
    pub fn from_unit(unit: Duration) -> Option<Self> {
        (Duration::from_millis(1)..=Duration::from_secs(3600))
            .contains(&unit)
            .then_some(Self(unit))
    }

    /// The unit.
    pub const fn unit(self) -> Duration {
        self.0
    }
}

impl Default for Resolution {
    fn default() -> Self {
        Self::SECOND
    }
}

/// Why a leg was refused: the operation's budget is spent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exhausted {
    /// The operation's total (after raising to the floor).
    pub total: Duration,
}

/// One operation's deadline: opened once, read before every leg.
///
/// It is a value handed down to the legs, never state shared between operations: a second
/// operation opens its own deadline with a full budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OperationDeadline {
    started: Instant,
    total: Duration,
    resolution: Resolution,
}

impl OperationDeadline {
    /// Opens a deadline at `now`. A budget below one resolution unit is raised to one unit, so
    /// a deadline is never exhausted the instant it opens.
    pub fn start(now: Instant, budget: Budget, resolution: Resolution) -> Self {
        Self {
            started: now,
            total: budget.as_duration().max(resolution.unit()),
            resolution,
        }
    }

    /// The instant the deadline was opened.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// The instant the budget is spent (`None` only if it is beyond what `Instant` represents).
    pub fn end(&self) -> Option<Instant> {
        self.started.checked_add(self.total)
    }

    /// The operation's total, after raising to the floor.
    pub fn total(&self) -> Duration {
        self.total
    }

    /// The unit grants are rounded to.
    pub fn resolution(&self) -> Resolution {
        self.resolution
    }

    /// Time spent since the deadline opened. A clock that reads earlier than the start counts
    /// as nothing spent, so a backwards step never yields more than the budget.
    pub fn elapsed(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.started)
    }

    /// What is left of the budget at `now`; zero once spent.
    pub fn remaining(&self, now: Instant) -> Duration {
        self.total.saturating_sub(self.elapsed(now))
    }

    /// True once nothing is left: spending exactly the budget counts as spent.
    pub fn is_exhausted(&self, now: Instant) -> bool {
        self.remaining(now).is_zero()
    }

    /// The deadline of what follows this operation at `now` (its close): what is left of
    /// it, at most `at_most`. When more than `at_most` is left, a new deadline of `at_most`
    /// opens at `now`; otherwise this one is kept, so what follows ends with it, and a spent
    /// deadline stays spent: what follows gets no leg at all.
    pub fn remainder(&self, now: Instant, at_most: Budget) -> Self {
        if self.remaining(now) > at_most.as_duration() {
            Self::start(now, at_most, self.resolution)
        } else {
            *self
        }
    }

    /// The timeout to grant a leg that starts at `now`: what is left, rounded up to the
    /// resolution unit, and never less than one unit. Refused only when nothing is left.
    ///
    /// The grant always satisfies `unit <= grant <= ceil_to_unit(remaining)` and
    /// `grant < remaining + unit`, so a leg that uses all of its grant ends the operation at
    /// most one unit (exclusive) past its budget. That is the arithmetic's bound; what a real
    /// operation overruns by also includes how precisely the driver's timer fires (a few
    /// milliseconds on a loaded machine).
    pub fn grant(&self, now: Instant) -> Result<Duration, Exhausted> {
        let remaining = self.remaining(now);
        if remaining.is_zero() {
            return Err(Exhausted { total: self.total });
        }
        Ok(ceil_to_unit(remaining, self.resolution.unit()).max(self.resolution.unit()))
    }
}

/// Rounds `d` up to a whole number of `unit`s.
fn ceil_to_unit(d: Duration, unit: Duration) -> Duration {
    let unit_nanos = unit.as_nanos().max(1);
    let nanos = d.as_nanos().div_ceil(unit_nanos) * unit_nanos;
    let secs = u64::try_from(nanos / 1_000_000_000).unwrap_or(u64::MAX);
    // The remainder of a division by 10^9 always fits in u32.
    let subsec = (nanos % 1_000_000_000) as u32;
    Duration::new(secs, subsec)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn rounding_up_keeps_exact_values_and_raises_fractions() {
        let u = Duration::from_secs(1);
        assert_eq!(ceil_to_unit(secs(16.0), u), secs(16.0));
        assert_eq!(ceil_to_unit(secs(2.6), u), secs(3.0));
        assert_eq!(ceil_to_unit(secs(0.001), u), secs(1.0));
        assert_eq!(
            ceil_to_unit(Duration::from_nanos(1_000_001), Duration::from_millis(1)),
            Duration::from_millis(2)
        );
    }

    #[test]
    fn config_values_follow_the_reference_rules() {
        let cases = [
            ("", 20),
            ("   ", 20),
            ("soon", 20),
            ("0", 20),
            ("-5", 20),
            ("0.5", 20),
            ("2.5", 2),
            ("90", 90),
            (" 90 ", 90),
            ("1e3", 1000),
            ("+7", 7),
            ("7.", 7),
            (".5", 20),
            ("12abc", 20),
            ("inf", 20),
            ("NaN", 20),
            ("1e999", Budget::MAX.as_duration().as_secs()),
            ("[1,2]", 20),
            ("0x1A", 20),
        ];
        for (raw, want) in cases {
            assert_eq!(
                Budget::from_config_str(raw).as_duration(),
                Duration::from_secs(want),
                "config value {raw:?}"
            );
        }
    }

    #[test]
    fn budget_display_names_fractional_seconds() {
        assert_eq!(Budget::DEFAULT.to_string(), "20-second");
        assert_eq!(Budget::from_duration(secs(2.5)).to_string(), "2.5-second");
        assert_eq!(
            Budget::from_duration(Duration::from_millis(1)).to_string(),
            "0.001-second"
        );
    }

    #[test]
    fn resolution_bounds() {
        assert!(Resolution::from_unit(Duration::from_micros(999)).is_none());
        assert_eq!(
            Resolution::from_unit(Duration::from_millis(1)),
            Some(Resolution::MILLISECOND)
        );
        assert!(Resolution::from_unit(Duration::from_secs(3601)).is_none());
    }
}
