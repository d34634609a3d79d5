//! Cancelling a client value's operations from elsewhere: those in flight
//! ([`CancelHandle::cancel`]), or those and every later one ([`CancelHandle::cancel_for_good`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tokio::sync::Notify;
use tokio::sync::futures::Notified;

/// What a [`CancelHandle`] and its client share.
#[derive(Debug, Default)]
pub(crate) struct CancelShared {
    /// How many times `cancel` was called. An operation remembers the count it started with
    /// and is cancelled once the count moves.
    fired: AtomicU64,
    /// Set by `cancel_for_good`: every operation is fired, whatever count it armed with, so
    /// one that starts later ends as it starts.
    for_good: AtomicBool,
    /// Wakes the operation waiting on a leg.
    notify: Notify,
}

impl CancelShared {
    /// The count an operation starting now arms itself with.
    pub(crate) fn arm(&self) -> u64 {
        self.fired.load(Ordering::SeqCst)
    }

    /// True once `cancel` was called after the operation armed with `armed`, or
    /// `cancel_for_good` at any time.
    pub(crate) fn is_fired(&self, armed: u64) -> bool {
        self.fired.load(Ordering::SeqCst) != armed || self.is_fired_for_good()
    }

    /// True once `cancel_for_good` was called: for a wait that knows no armed count (the
    /// turn on a local server), looked at after its [`waiter`](Self::waiter) was made, so that
    /// a later `cancel_for_good` wakes the wait instead.
    pub(crate) fn is_fired_for_good(&self) -> bool {
        self.for_good.load(Ordering::SeqCst)
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
/// [`cancel_for_good`](Self::cancel_for_good) also cancels every operation the client value
/// starts later: for a cancel that may come before the operation it is meant for has begun.
/// An operation started on another task (`tokio::spawn`) begins only when that task first
/// polls it, and [`cancel`](Self::cancel) fired before then is lost; the operation would run
/// to the end of its budget. Give such an operation a clone of its own and cancel that clone
/// for good: its operation ends with `Cancelled` whenever it begins, having sent nothing if it
/// had not begun. The blocking driver's `CancelHandle` has the same two methods.
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

    /// Cancels the operations in flight on this client value, as [`cancel`](Self::cancel)
    /// does, and every operation it starts from now on, which ends as it begins with
    /// [`Error::Cancelled`](mcp_proto::Error::Cancelled), having sent nothing. There is no
    /// undo: the client value is done (its clones, and the session, are not; close the session
    /// through one of them).
    ///
    /// A cancel made before the operation is even polled reaches it:
    ///
    /// ```
    /// # let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    /// # runtime.block_on(async {
    /// // Nothing listens there: a call that went out would end `Unreachable` instead.
    /// let client = mcp_driver_tokio::Client::connect("http://127.0.0.1:9/mcp")?;
    /// let request = client.clone(); // this request's own, so the cancel stays its own
    /// let cancel = request.cancel_handle();
    /// let call = tokio::spawn(async move { request.call_tool("slow", serde_json::Map::new()).await });
    /// cancel.cancel_for_good(); // the task may not have begun: the call is cancelled all the same
    /// let result = call.await.expect("the task ran");
    /// assert!(matches!(result, Err(mcp_proto::Error::Cancelled { .. })));
    /// # Ok::<(), mcp_proto::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn cancel_for_good(&self) {
        self.shared.for_good.store(true, Ordering::SeqCst);
        self.cancel();
    }
}
