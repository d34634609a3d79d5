//! What `mcp-driver-blocking` and `mcp-driver-tokio` share, so that both verify, trace and
//! report alike: written once here rather than twice there.
//!
//! * [`network`]: the connection policy, [`Network`](network::Network): the CAs added to the
//!   system's, which proxy carries a request, the `CONNECT` request and the reading of the
//!   proxy's answer, and the sentences a failed tunnel is reported in. The drivers re-export
//!   `Network`, so their callers need no import of this crate.
//! * [`lookup`]: name lookups on detached threads a leg can walk away from, at most
//!   [`MAX_LOOKUPS`](lookup::MAX_LOOKUPS) names at once in the process.
//! * [`tls`]: the rustls configuration a [`Network`](network::Network) asks for (the
//!   system's trust store, added CAs, the fallback roots) and the typed reading of a TLS
//!   failure.
//! * [`trace`]: the `tracing` spans of an operation and its legs (feature `tracing`).
//! * [`OsEntropy`]: the operating system's random source, for authorizations.
//! * [`StderrTail`]: the last lines a local (stdio) server wrote on stderr, for its error.
//! * [`shell`]: the client shell both drivers wear (the session and what its operations share,
//!   the opening of a deadline, the typed reading of an outcome), under both `Client`s'
//!   public methods.
//! * [`process`]: a local server's command line (on Unix, in a process group of its own), the
//!   steps of its end sent to that whole group, the rule that ends it at once (the kill leg's,
//!   and a dropped client's), and the end of what it left behind once it exited.
//! * [`LegSpans`]: the span of each leg in flight, closed with the operation's report of it.
//! * [`SharedObserver`]: a client's observer, reached by every operation in flight on it.
//! * [`SessionGuard`]: a client's session, lent to its caller under the session's lock.
//!
//! This crate holds no MCP policy (that is `mcp-proto`'s), only the connection's, and does no
//! I/O on a transport (that is each driver's, blocking or async): it must never depend on
//! tokio or ureq. Apart from [`network::Network`], which both drivers re-export, it is not
//! meant to be used directly.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod lookup;
pub mod network;
pub mod process;
pub mod shell;
pub mod tls;
pub mod trace;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

/// Random bytes from the operating system (`getrandom`), for PKCE verifiers, `state`, DPoP
/// keys and `jti`s. The state machines never read a random source themselves.
#[derive(Debug, Clone, Copy, Default)]
pub struct OsEntropy;

impl mcp_auth::Entropy for OsEntropy {
    fn fill(&mut self, buf: &mut [u8]) {
        // Without an OS random source nothing secret can be made: better to stop than to
        // hand out guessable values.
        if let Err(err) = getrandom::fill(buf) {
            panic!("the operating system's random source failed: {err}");
        }
    }
}

/// A client's session, locked while this guard lives (what `Client::session` returns on both
/// drivers). Every operation on the client takes the same lock briefly at its start and as it
/// learns: read what you need and drop the guard (never hold it across an `.await`).
pub struct SessionGuard<'a>(std::sync::MutexGuard<'a, mcp_proto::Session>);

impl<'a> SessionGuard<'a> {
    /// Lends the session `guard` holds.
    pub fn new(guard: std::sync::MutexGuard<'a, mcp_proto::Session>) -> Self {
        Self(guard)
    }
}

impl std::ops::Deref for SessionGuard<'_> {
    type Target = mcp_proto::Session;

    fn deref(&self) -> &mcp_proto::Session {
        &self.0
    }
}

impl std::fmt::Debug for SessionGuard<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// A client's observer, shared by the operations in flight on its session: each report goes
/// to it alone (under a lock held for that report only), whichever operation makes it.
pub struct SharedObserver(Mutex<Box<dyn mcp_proto::Observer + Send>>);

impl Default for SharedObserver {
    /// One that ignores everything.
    fn default() -> Self {
        Self(Mutex::new(Box::new(mcp_proto::NoObserver)))
    }
}

impl std::fmt::Debug for SharedObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedObserver")
    }
}

impl SharedObserver {
    /// One that reports to `observer`.
    pub fn new(observer: impl mcp_proto::Observer + Send + 'static) -> Self {
        Self(Mutex::new(Box::new(observer)))
    }

    /// Replaces the observer.
    pub fn set(&self, observer: Box<dyn mcp_proto::Observer + Send>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = observer;
    }

    /// What an operation reports through.
    pub fn reporter(&self) -> Reporter<'_> {
        Reporter(self)
    }
}

/// An operation's way to the client's [`SharedObserver`].
#[derive(Debug)]
pub struct Reporter<'a>(&'a SharedObserver);

impl mcp_proto::Observer for Reporter<'_> {
    fn leg_finished(&mut self, report: &mcp_proto::LegReport) {
        let mut observer = self.0.0.lock().unwrap_or_else(PoisonError::into_inner);
        observer.leg_finished(report);
    }

    fn event(&mut self, event: &mcp_proto::Event) {
        let mut observer = self.0.0.lock().unwrap_or_else(PoisonError::into_inner);
        observer.event(event);
    }
}

/// Whether `err` is the peer closing the connection (an end, an abort, a reset): how a body
/// delimited by the connection's close ends, and why a kept connection is not kept. Both
/// drivers read a body's end by this one rule.
pub fn closed_by_peer(err: &std::io::Error) -> bool {
    matches!(
        err.kind(),
        std::io::ErrorKind::UnexpectedEof
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
}

/// What a headless authorizer reads off the authorization endpoint's answer: the redirect's
/// `Location`, or why there is none (the words are the authorizer's, for the caller's log).
pub fn redirect_location(
    status: http::StatusCode,
    headers: &http::HeaderMap,
) -> Result<String, String> {
    if !status.is_redirection() {
        return Err(format!(
            "the authorization endpoint answered {} instead of a redirect",
            status.as_u16()
        ));
    }
    headers
        .get(http::header::LOCATION)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
        .ok_or_else(|| "the authorization endpoint's redirect has no Location".to_owned())
}

/// The tail of a local server's stderr: the last [`StderrTail::BYTES`] bytes it wrote, shared
/// between the thread (or task) that reads the pipe and the driver that quotes it.
#[derive(Debug, Clone, Default)]
pub struct StderrTail(Arc<Mutex<VecDeque<u8>>>);

impl StderrTail {
    /// How much of stderr is kept.
    pub const BYTES: usize = 4 * 1024;
    /// How many of its last lines an error quotes.
    pub const LINES: usize = 5;

    /// Keeps `bytes` the server wrote, dropping the oldest past [`BYTES`](Self::BYTES).
    pub fn push(&self, bytes: &[u8]) {
        let mut tail = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        tail.extend(bytes);
        let excess = tail.len().saturating_sub(Self::BYTES);
        tail.drain(..excess);
    }

    /// The last [`LINES`](Self::LINES) non-blank lines, joined by newlines.
    pub fn last_lines(&self) -> String {
        let bytes: Vec<u8> = {
            let tail = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            tail.iter().copied().collect()
        };
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        lines[lines.len().saturating_sub(Self::LINES)..].join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_last_lines_within_its_bytes() {
        let tail = StderrTail::default();
        for i in 0..2000 {
            tail.push(format!("line {i}\n\n").as_bytes());
        }
        assert_eq!(
            tail.last_lines(),
            "line 1995\nline 1996\nline 1997\nline 1998\nline 1999"
        );
        assert!(tail.0.lock().unwrap().len() <= StderrTail::BYTES);
    }
}

/// The `mcp.leg` spans (feature `tracing`) of the legs in flight: each opens when its leg is
/// handed out and closes with the operation's report of it, which also goes to the observer.
/// The report is the operation's ([`mcp_proto::driver::Output::LegEnded`]); this only carries it.
#[derive(Debug, Default)]
pub struct LegSpans {
    open: Vec<(u32, trace::Span)>,
}

impl LegSpans {
    /// `leg` was handed out: its span opens inside the operation's.
    pub fn sent(&mut self, leg: &mcp_proto::driver::Leg, operation: &trace::Span) {
        let span = trace::leg(operation, leg.id.number(), leg.kind, leg.timeout);
        // A span no subscriber records is not kept (nor is anything allocated for it).
        if trace::is_live(&span) {
            self.open.push((leg.id.number(), span));
        }
    }

    /// The operation reported a leg's end: its span records it and closes, and `observer`
    /// gets the report.
    pub fn ended(&mut self, report: &mcp_proto::LegReport, observer: &mut dyn mcp_proto::Observer) {
        if let Some(at) = self.open.iter().position(|(n, _)| *n == report.number) {
            let (_, span) = self.open.swap_remove(at);
            trace::leg_ended(&span, report);
        }
        observer.leg_finished(report);
    }
}
