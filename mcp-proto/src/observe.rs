//! What a driver reports to its caller while an operation runs: each leg's grant and how long
//! it really took, and the server's events as they arrive.
//!
//! This is plain data and a trait; drivers call it, the state machine never does. It exists so
//! that both drivers report in the same shape and a tool like `mcp-call --trace` works with either.

use std::fmt;
use std::time::Duration;

use crate::operation::{Event, LegKind, TransportErrorKind};

/// How one leg ended, as the driver measured it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegReport {
    /// The leg's number within the operation (1-based).
    pub number: u32,
    /// Which request it carried.
    pub kind: LegKind,
    /// Its grant.
    pub grant: Duration,
    /// Wall time from sending to the end of reading, measured by the driver's clock.
    pub elapsed: Duration,
    /// How it ended.
    pub end: LegEnd,
}

/// One line for traces, the same in every tool that prints legs:
/// `leg=2 method=tools/call granted_ms=19000 elapsed_ms=12 status=200`.
///
/// ```
/// use mcp_proto::{LegEnd, LegKind, LegReport};
/// use std::time::Duration;
/// let report = LegReport {
///     number: 3,
///     kind: LegKind::Resume,
///     grant: Duration::from_secs(14),
///     elapsed: Duration::from_millis(250),
///     end: LegEnd::Status(200),
/// };
/// assert_eq!(report.to_string(), "leg=3 method=resume granted_ms=14000 elapsed_ms=250 status=200");
/// ```
impl fmt::Display for LegReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "leg={} method={} granted_ms={} elapsed_ms={} status={}",
            self.number,
            self.kind.label(),
            self.grant.as_millis(),
            self.elapsed.as_millis(),
            self.end.word()
        )
    }
}

/// How a leg ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LegEnd {
    /// A response head arrived with this status (the body may still have been refused).
    Status(u16),
    /// The transport failed.
    Transport(TransportErrorKind),
    /// The caller cancelled the operation while the leg was in flight.
    Cancelled,
    /// Over stdio: the leg is over as it should be (its line was written, and a request's
    /// answer came; a process started or ended).
    Done,
    /// Over stdio: the server process exited while the leg was in flight.
    Exited,
}

impl LegEnd {
    /// How a driver reports a leg whose last input came at `now`: `self`, unless that was at
    /// or after the leg's end, in which case the operation took the input as the leg's
    /// timeout and the report says so. Drivers call this instead of deciding lateness.
    pub fn as_of(self, now: std::time::Instant, ends_at: std::time::Instant) -> Self {
        if now >= ends_at {
            Self::Transport(TransportErrorKind::TimedOut)
        } else {
            self
        }
    }

    /// One word for traces: the status code, or `timeout`, `connect`, `protocol`, `io`,
    /// `declined`, `tls`, `proxy`, `cancelled`; over stdio `ok` or `exited`.
    pub fn word(&self) -> String {
        match self {
            Self::Status(code) => code.to_string(),
            Self::Transport(TransportErrorKind::TimedOut) => "timeout".to_owned(),
            Self::Transport(TransportErrorKind::Connect) => "connect".to_owned(),
            Self::Transport(TransportErrorKind::Protocol) => "protocol".to_owned(),
            Self::Transport(TransportErrorKind::Declined) => "declined".to_owned(),
            Self::Transport(TransportErrorKind::Tls(_)) => "tls".to_owned(),
            Self::Transport(TransportErrorKind::Proxy) => "proxy".to_owned(),
            Self::Transport(_) => "io".to_owned(),
            Self::Cancelled => "cancelled".to_owned(),
            Self::Done => "ok".to_owned(),
            Self::Exited => "exited".to_owned(),
        }
    }
}

/// Receives what a driver reports. Both methods default to doing nothing.
pub trait Observer {
    /// A leg ended.
    fn leg_finished(&mut self, report: &LegReport) {
        let _ = report;
    }

    /// The server sent an event (a notification or a request) while answering.
    fn event(&mut self, event: &Event) {
        let _ = event;
    }
}

/// Ignores everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoObserver;

impl Observer for NoObserver {}
