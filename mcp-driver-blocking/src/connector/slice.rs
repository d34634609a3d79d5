//! The sliced-reads step, between TCP and TLS: [`Slice`] wraps the TCP transport in
//! [`Sliced`], which ends every wait for input at the leg's end (the lane's armed end, which
//! the exchange's own time ([`crate::http1`]), counted from a little later, would pass), and
//! cuts it into slices of at most [`SLICE`].
//!
//! The slices matter where the wait is the socket's receive timeout (`SO_RCVTIMEO`, off Unix),
//! which Linux keeps on its timer wheel, whose precision shrinks with the length of the timeout
//! (a 2 s timeout fired up to ~30 ms late, a 17 s one 1.7 s late). Writes are not sliced: a
//! write that timed out may have sent part of its buffer, so it cannot be retried (requests
//! are small and are not expected to block); the leg-end thread ends a blocked one.
//!
//! This module never retries a write and never decides an MCP matter; it only ends each wait
//! for input at the leg's (or a drain's) end, in slices.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ureq::unversioned::transport::time::Duration as UreqDuration;
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector as UreqConnector, NextTimeout, Transport,
};

use crate::lanes::Shared;

/// The longest single blocking wait for input. Short enough to stay in the timer wheel's
/// finest level at any kernel tick rate (64 ticks: 64 ms at 1000 Hz), so each wait ends
/// within a tick or two of when it was asked to.
pub(crate) const SLICE: Duration = Duration::from_millis(50);

/// The chain step that wraps the TCP transport in [`Sliced`].
pub(super) struct Slice(pub(super) Arc<Shared>);

impl fmt::Debug for Slice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Slice")
    }
}

impl<In: Transport> UreqConnector<In> for Slice {
    type Out = Sliced<In>;

    fn connect(
        &self,
        _: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        Ok(chained.map(|t| Sliced(t, Arc::clone(&self.0))))
    }
}

/// `after` rounded up to a whole number of [`SLICE`]s (a zero stays zero: a transport reads
/// it as "already over").
fn whole_slices(after: Duration) -> Duration {
    let slice = SLICE.as_nanos();
    let slices = after.as_nanos().div_ceil(slice);
    u64::try_from(slices * slice).map_or(after, Duration::from_nanos)
}

/// A transport whose waits for input are cut into slices of at most [`SLICE`].
pub(crate) struct Sliced<T>(pub(super) T, pub(super) Arc<Shared>);

impl<T: fmt::Debug> fmt::Debug for Sliced<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Sliced").field(&self.0).finish()
    }
}

impl<T: Transport> Transport for Sliced<T> {
    fn buffers(&mut self) -> &mut dyn Buffers {
        self.0.buffers()
    }

    /// Writes with the leg's remaining time rounded up to a whole [`SLICE`]: the leg's end
    /// is kept by the leg-end thread (which shuts the socket down then, so a blocked write
    /// returns at once), and the write's own timeout is only its fallback. The socket re-arms
    /// its send timeout (`setsockopt`) whenever the value it is given changes, which the
    /// exact remaining time did at every write (two system calls a request); rounded, it
    /// changes once in fifty milliseconds.
    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        let timeout = match timeout.after {
            UreqDuration::Exact(after) => NextTimeout {
                after: UreqDuration::Exact(whole_slices(after)),
                ..timeout
            },
            _ => timeout,
        };
        self.0.transmit_output(amount, timeout)
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        // A per-read timeout has a meaning of its own (its expiry is an error); leave it be.
        let (UreqDuration::Exact(mut total), None) = (timeout.after, timeout.per_read) else {
            return self.0.await_input(timeout);
        };
        // A drain's end, and the leg's own end, to the microsecond (the exchange's time counts
        // from a little after the leg was handed out).
        let ends = [
            (self.1.drain_until(), ureq::Timeout::RecvBody),
            (self.1.reads_until(), timeout.reason),
        ];
        for (until, reason) in ends {
            let Some(until) = until else { continue };
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ureq::Error::Timeout(reason));
            }
            total = total.min(left);
        }
        let started = Instant::now();
        loop {
            let left = total.saturating_sub(started.elapsed());
            if left <= SLICE {
                let last = NextTimeout {
                    after: UreqDuration::Exact(left),
                    ..timeout
                };
                return self.0.await_input(last);
            }
            let slice = NextTimeout {
                after: UreqDuration::Exact(SLICE),
                ..timeout
            };
            match self.0.await_input(slice) {
                // The slice ended, the leg's time did not: wait again. A timed-out read of
                // the TCP transport consumed nothing, so the wait can simply be repeated.
                Err(ureq::Error::Timeout(_)) => {}
                other => return other,
            }
        }
    }

    fn is_open(&mut self) -> bool {
        self.0.is_open()
    }

    fn is_tls(&self) -> bool {
        self.0.is_tls()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_timeout_is_rounded_up_to_whole_slices_so_it_seldom_changes() {
        let ms = Duration::from_millis;
        assert_eq!(whole_slices(Duration::ZERO), Duration::ZERO);
        assert_eq!(whole_slices(Duration::from_nanos(1)), SLICE);
        assert_eq!(whole_slices(SLICE), SLICE);
        // Two writes a few microseconds apart, late in a 20 s grant: the same timeout, so
        // the socket's stays as it is.
        let first = ms(19_998) - Duration::from_micros(3);
        let second = first - Duration::from_micros(40);
        assert_eq!(whole_slices(first), ms(20_000));
        assert_eq!(whole_slices(second), ms(20_000));
        // Never below what is left.
        assert_eq!(whole_slices(ms(51)), ms(100));
    }
}
