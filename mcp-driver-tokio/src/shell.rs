//! This driver's side of the client shell (`mcp_driver_common::shell`): the shell's type, and
//! the signal that wakes the operations waiting for the session, tokio's [`Notify`]. It
//! waits for nothing itself: the operations await [`Changed::notified`].

use std::sync::Arc;

use mcp_driver_common::shell::{SessionSignal, Shell};
use tokio::sync::Notify;
use tokio::sync::futures::Notified;

use crate::authorize::Authorizer;

/// The session, locked only to start an operation, apply what one learned, or hand it the
/// session it waits for (never across an await), and what wakes the operations waiting for it.
pub(crate) type ClientShell = Shell<Arc<dyn Authorizer>, Changed>;

/// Wakes the operations that wait for the session when it changed (an update applied, an
/// operation ended).
#[derive(Debug, Default)]
pub(crate) struct Changed(Notify);

impl Changed {
    /// The session's next change, for an operation to register (`enable`) under the session's
    /// lock before it lets go, so that no change is missed.
    pub(crate) fn notified(&self) -> Notified<'_> {
        self.0.notified()
    }
}

impl SessionSignal for Changed {
    fn notify_all(&self) {
        self.0.notify_waiters();
    }
}
