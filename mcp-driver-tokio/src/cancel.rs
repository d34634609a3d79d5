//! Cancelling the operation in flight from elsewhere.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::Notify;
use tokio::sync::futures::Notified;

/// What a [`CancelHandle`] and its client share.
#[derive(Debug, Default)]
pub(crate) struct CancelShared {
    /// How many times `cancel` was called. An operation remembers the count it started with
    /// and is cancelled once the count moves.
    fired: AtomicU64,
    /// Wakes the operation waiting on a leg.
    notify: Notify,
}

impl CancelShared {
    /// The count an operation starting now arms itself with.
    pub(crate) fn arm(&self) -> u64 {
        self.fired.load(Ordering::SeqCst)
    }

    /// True once `cancel` was called after the operation armed with `armed`.
    pub(crate) fn is_fired(&self, armed: u64) -> bool {
        self.fired.load(Ordering::SeqCst) != armed
    }

    /// A wait for the next `cancel`, for an operation to register (`enable`) once, right after
    /// arming: `cancel` moves the count before it wakes the waiters, so a wait that completes
    /// always finds the operation fired, and a `cancel` between arming and registering is
    /// seen by [`is_fired`](Self::is_fired). One registration per operation, not one per wait:
    /// each registration locks the waiter list twice.
    pub(crate) fn waiter(&self) -> Notified<'_> {
        self.notify.notified()
    }
}

/// Cancels the operations a [`Client`](crate::Client) value has in flight, from any task or
/// thread.
///
/// [`cancel`](Self::cancel) ends them promptly with
/// [`Error::Cancelled`](mcp_proto::Error::Cancelled): the requests in flight are dropped (their
/// connections closed) and nothing more is sent (except the optional `notifications/cancelled`,
/// see [`SessionConfig::with_cancel_notice`](mcp_proto::SessionConfig::with_cancel_notice)).
/// Fired while no operation is in flight, it does nothing, to that client's later operations
/// either. Clones of the handle cancel the same client value; a clone of the **client** has a
/// handle of its own, so an operation run through its own clone can be cancelled alone while
/// the others on the session go on.
///
/// ```no_run
/// # async fn demo(mut client: mcp_driver_tokio::Client) {
/// let handle = client.cancel_handle();
/// tokio::spawn(async move {
///     tokio::time::sleep(std::time::Duration::from_millis(500)).await;
///     handle.cancel();
/// });
/// let result = client.call_tool("slow", serde_json::Map::new()).await;
/// assert!(matches!(result, Err(mcp_proto::Error::Cancelled { .. })));
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct CancelHandle {
    shared: Arc<CancelShared>,
}

impl CancelHandle {
    pub(crate) fn new(shared: Arc<CancelShared>) -> Self {
        Self { shared }
    }

    /// Cancels the operations in flight on this client value, if there are any.
    pub fn cancel(&self) {
        self.shared.fired.fetch_add(1, Ordering::SeqCst);
        self.shared.notify.notify_waiters();
    }
}
