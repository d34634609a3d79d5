//! What a driver passes on to its caller while an operation runs: each leg's report (its grant,
//! how long it took, how it ended: the operation's [`Output::LegEnded`]) and the server's
//! events as they arrive.
//!
//! A trait only; drivers call it, the state machine never does. The reports are the
//! operation's, so both drivers report in the same shape and a tool like `mcp-call --trace`
//! works with either.
//!
//! [`Output::LegEnded`]: crate::driver::Output::LegEnded

use crate::operation::{Event, LegReport};

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
