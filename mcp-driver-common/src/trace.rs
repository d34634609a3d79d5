//! `tracing` spans (feature `tracing`, on by default): one `mcp.operation` span per
//! operation, one `mcp.leg` span per leg, its child, open from the leg's sending to its end,
//! and an event when the budget refuses a leg or the caller cancels. The state machine reports nothing to `tracing` itself; this
//! module turns what the driver sees into spans, and nothing else.
//!
//! Fields (stable):
//!
//! | span            | fields                                                                  |
//! |-----------------|-------------------------------------------------------------------------|
//! | `mcp.operation` | `server` (label), `action`, `budget_ms`, `resolution_ms`, `result` (`ok` or the error's fault: `budget`, `network`, `server`, `authorization_server`, `caller`, `cancelled`, `authorization`) |
//! | `mcp.leg`       | `number`, `method`, `grant_ms`, `end` (status code or `timeout`, `connect`, `io`, ...), `elapsed_ms` |
//!
//! No header value, token, session id, argument or result ever goes into a field.

#[cfg(feature = "tracing")]
mod on {
    use mcp_proto::driver::LegKind;
    use mcp_proto::driver::Operation;
    use mcp_proto::{Error, Fault, LegReport, Outcome};
    use tracing::field::Empty;

    pub use tracing::Span;

    /// The span of an operation that has just started.
    pub fn operation(op: &Operation, server: &str) -> Span {
        let deadline = op.deadline();
        tracing::info_span!(
            "mcp.operation",
            server,
            action = op.action().label(),
            budget_ms = deadline.total().as_millis() as u64,
            resolution_ms = deadline.resolution().unit().as_millis() as u64,
            result = Empty,
        )
    }

    /// Records how the operation ended, with an event for a refusal or a cancel.
    pub fn ended(span: &Span, result: &Result<Outcome, Error>) {
        let word = match result {
            Ok(_) => "ok",
            Err(err) => {
                match err.fault() {
                    Fault::Budget => tracing::warn!(parent: span, error = %err, "mcp.refused"),
                    Fault::Cancelled => tracing::info!(parent: span, "mcp.cancelled"),
                    Fault::Network
                    | Fault::Server
                    | Fault::AuthorizationServer
                    | Fault::Caller
                    | Fault::Authorization => {}
                }
                err.fault().as_str()
            }
        };
        span.record("result", word);
    }

    /// Whether `span` records anything (a subscriber wants it): a disabled one need not be
    /// kept.
    pub fn is_live(span: &Span) -> bool {
        !span.is_disabled()
    }

    /// The span of a leg being sent, inside its operation's.
    pub fn leg(operation: &Span, number: u32, kind: LegKind, grant: std::time::Duration) -> Span {
        tracing::info_span!(
            parent: operation,
            "mcp.leg",
            number,
            method = kind.label(),
            grant_ms = grant.as_millis() as u64,
            end = Empty,
            elapsed_ms = Empty,
        )
    }

    /// Records how a leg ended.
    pub fn leg_ended(span: &Span, report: &LegReport) {
        span.record("end", report.end.word().as_str());
        span.record("elapsed_ms", report.elapsed.as_millis() as u64);
    }

    /// An event for the person's step of an authorization: `approved` is `None` without an
    /// authorizer. The URL is not recorded (it is the person's to open, not the log's).
    pub fn authorized(operation: &Span, approved: Option<bool>) {
        let outcome = match approved {
            Some(true) => "redirected",
            Some(false) => "failed",
            None => "no-authorizer",
        };
        tracing::info!(parent: operation, outcome, "mcp.authorize");
    }
}

#[cfg(not(feature = "tracing"))]
mod on {
    use mcp_proto::driver::LegKind;
    use mcp_proto::driver::Operation;
    use mcp_proto::{Error, LegReport, Outcome};

    /// Stands for a span when the `tracing` feature is off: does nothing.
    #[derive(Debug, Clone)]
    pub struct Span;

    /// No span (feature `tracing` off).
    pub fn operation(_: &Operation, _: &str) -> Span {
        Span
    }

    /// Nothing to record (feature `tracing` off).
    pub fn ended(_: &Span, _: &Result<Outcome, Error>) {}

    /// No span records anything (feature `tracing` off).
    pub fn is_live(_: &Span) -> bool {
        false
    }

    /// No span (feature `tracing` off).
    pub fn leg(_: &Span, _: u32, _: LegKind, _: std::time::Duration) -> Span {
        Span
    }

    /// Nothing to record (feature `tracing` off).
    pub fn leg_ended(_: &Span, _: &LegReport) {}

    /// Nothing to record (feature `tracing` off).
    pub fn authorized(_: &Span, _: Option<bool>) {}
}

pub use on::*;
