//! The lanes an operation's legs run in: a lane's HTTP client, body buffer and cancel state
//! ([`Lane`], [`Shared`]), a client value's lanes ([`Lanes`]: the idle ones and every one), and
//! cancelling the operations in flight on them from another thread ([`CancelHandle`]), or
//! those and every later one.
//!
//! A blocked socket read cannot be woken by a flag, so cancelling must reach the socket.
//! The client's connector ([`crate::connector`]) hands the TCP step a `register_shutdown`
//! callback of its own, which it calls with a weak handle to every socket it opens (straight
//! after the TCP connect, before any TLS handshake). The handles are kept here, weakly, for as
//! long as their sockets live: in use, or idle in the lane's pool ([`crate::http1`]).
//!
//! [`CancelHandle::cancel`] sets a flag and shuts down **every** live socket of the client
//! (`shutdown(Both)`), which makes a read or write blocked on any of them return at once. That
//! includes the one the leg in flight uses, whether it was opened for this leg or reused from
//! the pool. Idle pooled sockets are closed as collateral; the next operation opens a new one.
//! The driver checks the flag before each leg and after every blocking call, and ends the
//! operation with [`Error::Cancelled`](mcp_proto::Error::Cancelled).
//!
//! [`CancelHandle::cancel_for_good`] also marks the client value's lanes: an operation that
//! begins on them later finds its flag set as it begins ([`Lanes::begin_operation`]), before
//! it sends anything.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Instant;

use ureq::unversioned::transport::ShutdownHandle;

use crate::leg_end::{self, LegEnd};

/// The state a client shares with its cancel handles and its connector.
pub(crate) struct Shared {
    /// Set by `cancel()` while an operation is in flight; cleared when an operation starts (set
    /// instead, when the client value was cancelled for good) and when it ends, so a cancel
    /// between operations reaches none of them.
    cancelled: AtomicBool,
    /// Set by the connector when the connector chain failed during the current leg.
    connect_failed: AtomicBool,
    inner: Mutex<Inner>,
    /// While the rest of an answered body is drained: when to give up (see `leg::drain`).
    drain_until: Mutex<Option<Instant>>,
    /// The end of the grant of the leg whose reads are next (what [`Shared::leg_ends_at`]
    /// armed): a wait for input on the lane's sockets ends then, on the lane's own thread. The
    /// leg-end watch holds the same instant, but behind the process-wide lock every lane's
    /// arm takes; this copy is read before every wait.
    reads_until: Mutex<Option<Instant>>,
    /// Wakes a driver waiting (to resume a stream) when the operation is cancelled.
    woken: Condvar,
    /// Over stdio: what wakes the operation's thread waiting on the server's stdout (see
    /// [`crate::stdout`]) when a cancel comes.
    waker: Mutex<Option<Arc<dyn Wake>>>,
    /// The end of the grant of the leg in flight (see [`crate::leg_end`]).
    leg_end: LegEnd,
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.leg_end.forget();
    }
}

impl leg_end::Lane for Shared {
    /// Shuts every live socket of the lane down (a blocked read or write on one returns at
    /// once); sockets that are gone are forgotten.
    fn shut_down_sockets(&self) {
        self.lock().shut_down_sockets();
    }
}

/// Something an operation's thread waits on, which a cancel must wake.
pub(crate) trait Wake: Send + Sync {
    /// Wakes the waiting thread.
    fn wake(&self);
}

#[derive(Default)]
struct Inner {
    /// True while an operation runs.
    active: bool,
    /// Every socket this client opened that may still be alive.
    sockets: Vec<Weak<dyn ShutdownHandle>>,
}

impl Inner {
    /// Shuts every live socket down (a blocked read or write on one returns at once);
    /// sockets that are gone are forgotten.
    fn shut_down_sockets(&mut self) {
        self.sockets.retain(|socket| match socket.upgrade() {
            Some(socket) => {
                socket.shutdown();
                true
            }
            None => false,
        });
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// True once the operation in flight was cancelled.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }

    /// Marks an operation as running until the guard drops: cancelled from the start when
    /// `for_good` is set.
    fn begin_operation(self: &Arc<Self>, for_good: &AtomicBool) -> OperationGuard {
        let mut inner = self.lock();
        inner.active = true;
        // Read under the lane's lock: a cancel for good that set it after this read finds the
        // lane active (it takes the lock next), and cancels the operation as one in flight.
        let cancelled = for_good.load(Ordering::SeqCst);
        self.cancelled.store(cancelled, Ordering::SeqCst);
        OperationGuard {
            shared: Arc::clone(self),
        }
    }

    /// Bounds every wait for input by `until` (None: by the leg's grant only).
    /// The operation took the cancel: from here on nothing is cancelled again (the legs it
    /// still hands out, its cancel notice, are sent), as after the operation ended.
    pub(crate) fn settle(&self) {
        let mut inner = self.lock();
        inner.active = false;
        self.cancelled.store(false, Ordering::SeqCst);
    }

    pub(crate) fn set_drain(&self, until: Option<Instant>) {
        *self
            .drain_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = until;
    }

    /// The bound set by [`Self::set_drain`].
    pub(crate) fn drain_until(&self) -> Option<Instant> {
        *self
            .drain_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Over stdio: a cancel wakes the operation's thread through `waker` (the stdout it
    /// waits on).
    pub(crate) fn set_waker(&self, waker: Arc<dyn Wake>) {
        *self.waker.lock().unwrap_or_else(PoisonError::into_inner) = Some(waker);
    }

    /// Forgets the previous leg's connect failure.
    pub(crate) fn begin_leg(&self) {
        self.connect_failed.store(false, Ordering::SeqCst);
    }

    /// True when the connector chain failed during the current leg.
    pub(crate) fn connect_failed(&self) -> bool {
        self.connect_failed.load(Ordering::SeqCst)
    }

    /// Records that the connector chain failed during the current leg.
    pub(crate) fn set_connect_failed(&self) {
        self.connect_failed.store(true, Ordering::SeqCst);
    }

    fn cancel(&self) {
        let mut inner = self.lock();
        if !inner.active {
            return;
        }
        self.cancelled.store(true, Ordering::SeqCst);
        self.woken.notify_all();
        if let Some(stdout) = self
            .waker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
        {
            stdout.wake();
        }
        // Under the lock: the operation settles the cancel (`settle`, which takes it) only
        // once every socket is shut down, so a leg it sends after the cancel (its cancel
        // notice, a task's cancel) is never cut by this one.
        inner.shut_down_sockets();
    }

    /// A lane's cancel state, whose legs end on time ([`Self::leg_ends_at`]).
    pub(crate) fn for_lane() -> Arc<Self> {
        Arc::new_cyclic(|lane| Self {
            cancelled: AtomicBool::default(),
            connect_failed: AtomicBool::default(),
            inner: Mutex::default(),
            drain_until: Mutex::default(),
            reads_until: Mutex::default(),
            woken: Condvar::default(),
            waker: Mutex::default(),
            leg_end: LegEnd::of(Weak::clone(lane) as Weak<dyn leg_end::Lane>),
        })
    }

    /// The leg about to block on the lane's sockets ends at `at` (`None`: it is over): its
    /// sockets are shut down then, if it still runs.
    pub(crate) fn leg_ends_at(&self, at: Option<Instant>) {
        *self
            .reads_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = at;
        self.leg_end.arm(at);
    }

    /// When a wait for input on the lane's sockets ends: the end of the leg armed last.
    pub(crate) fn reads_until(&self) -> Option<Instant> {
        *self
            .reads_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the leg in flight reached its end, which shut the lane's sockets down.
    pub(crate) fn leg_ended(&self) -> bool {
        self.leg_end.fired()
    }

    /// Sleeps until `until` or until the operation is cancelled, whichever comes first.
    pub(crate) fn sleep_until(&self, until: Instant) {
        let mut inner = self.lock();
        loop {
            let now = Instant::now();
            if self.is_cancelled() || now >= until {
                return;
            }
            inner = self
                .woken
                .wait_timeout(inner, until - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Records a new socket. If the operation was cancelled meanwhile (the TCP connect itself
    /// cannot be interrupted), the socket is shut down at once.
    pub(crate) fn register(&self, socket: Weak<dyn ShutdownHandle>) {
        let mut inner = self.lock();
        inner.sockets.retain(|s| s.strong_count() > 0);
        if self.is_cancelled() {
            if let Some(socket) = socket.upgrade() {
                socket.shutdown();
            }
        }
        inner.sockets.push(socket);
    }
}

/// Ends the "operation running" window when dropped (also on a panic).
pub(crate) struct OperationGuard {
    shared: Arc<Shared>,
}

impl Drop for OperationGuard {
    fn drop(&mut self) {
        let mut inner = self.shared.lock();
        inner.active = false;
        self.shared.cancelled.store(false, Ordering::SeqCst);
    }
}

/// One operation's way to the server: an HTTP client (and the connections it keeps), the cancel
/// state of the operation it runs, and the body buffer. A client value runs each operation in
/// flight on a lane of its own, and keeps the idle ones for the next operations.
pub(crate) struct Lane {
    http: crate::http1::Http,
    shared: Arc<Shared>,
    kept: crate::bodies::Kept,
}

impl Lane {
    pub(crate) fn new(http: crate::http1::Http, shared: Arc<Shared>) -> Self {
        Self {
            http,
            shared,
            kept: crate::bodies::Kept::default(),
        }
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    pub(crate) fn parts(&mut self) -> (&crate::http1::Http, &Shared, &mut crate::bodies::Kept) {
        (&self.http, &self.shared, &mut self.kept)
    }
}

/// A client value's lanes: the idle ones, and the cancel state of every one (for its
/// [`CancelHandle`]).
pub(crate) struct Lanes {
    /// Boxed: a lane (its HTTP client's state) is large, and each operation takes one out
    /// and puts it back (a move of a pointer instead of a copy of the lane, twice a call).
    #[allow(clippy::vec_box)]
    idle: Mutex<Vec<Box<Lane>>>,
    every: Mutex<Vec<Arc<Shared>>>,
    /// Set by [`CancelHandle::cancel_for_good`]: every operation begins cancelled.
    for_good: AtomicBool,
    /// The client's shared state: a cancel also wakes an operation waiting for the session.
    /// Weak: a cancel handle kept after every client value is gone (a signal handler's) must
    /// not keep the client, and so its local server, alive.
    client: Weak<crate::ClientShared>,
}

impl Lanes {
    pub(crate) fn new(client: &Arc<crate::ClientShared>) -> Self {
        Self {
            idle: Mutex::new(Vec::new()),
            every: Mutex::new(Vec::new()),
            for_good: AtomicBool::new(false),
            client: Arc::downgrade(client),
        }
    }

    /// An idle lane, or a new one from `new_lane`; it comes back when the guard drops.
    pub(crate) fn take(&self, new_lane: impl FnOnce() -> Lane) -> LaneGuard<'_> {
        let idle = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let lane = idle.unwrap_or_else(|| {
            let lane = Box::new(new_lane());
            self.every
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(Arc::clone(&lane.shared));
            lane
        });
        LaneGuard {
            lanes: self,
            lane: Some(lane),
        }
    }

    /// The client value these lanes belong to is gone (no operation runs through it any
    /// more): their kept connections close now, not when the last cancel handle drops.
    pub(crate) fn forget(&self) {
        (self.idle.lock().unwrap_or_else(PoisonError::into_inner)).clear();
        (self.every.lock().unwrap_or_else(PoisonError::into_inner)).clear();
    }

    /// Marks an operation as running on `lane` (one of these lanes) until the guard drops;
    /// from then on a cancel reaches it, and one for good has already.
    pub(crate) fn begin_operation(&self, lane: &Lane) -> OperationGuard {
        lane.shared.begin_operation(&self.for_good)
    }

    fn cancel(&self) {
        let every = self
            .every
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        for shared in every {
            shared.cancel();
        }
        // Under the session's lock, so an operation between its check and its wait cannot
        // miss it; likewise an operation waiting for its turn on a stdio server or on an
        // HTTP+SSE session's stream. A client that is gone has no operation to wake.
        if let Some(client) = self.client.upgrade() {
            client.shell.wake_waiters();
            client.stdio.wake();
            client.events.wake();
        }
    }
}

/// A lane in use; back to the idle ones when dropped.
pub(crate) struct LaneGuard<'a> {
    lanes: &'a Lanes,
    lane: Option<Box<Lane>>,
}

impl std::ops::Deref for LaneGuard<'_> {
    type Target = Lane;

    fn deref(&self) -> &Lane {
        self.lane
            .as_ref()
            .unwrap_or_else(|| unreachable!("taken only on drop"))
    }
}

impl std::ops::DerefMut for LaneGuard<'_> {
    fn deref_mut(&mut self) -> &mut Lane {
        self.lane
            .as_mut()
            .unwrap_or_else(|| unreachable!("taken only on drop"))
    }
}

impl Drop for LaneGuard<'_> {
    fn drop(&mut self) {
        if let Some(lane) = self.lane.take() {
            self.lanes
                .idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(lane);
        }
    }
}

/// Cancels the operations a [`Client`](crate::Client) is running, from any thread.
///
/// Get one with [`Client::cancel_handle`](crate::Client::cancel_handle); clones of the handle
/// cancel the same client value (a clone of the client has a handle of its own).
/// [`cancel`](Self::cancel) ends the operations in flight on that client value with
/// [`Error::Cancelled`](mcp_proto::Error::Cancelled) by shutting down their sockets, so a leg
/// blocked on the network returns at once. A cancel while no operation runs does nothing,
/// and never reaches a later operation.
///
/// [`cancel_for_good`](Self::cancel_for_good) also cancels every operation the client value
/// starts later: for a cancel that may come before the operation it is meant for has begun.
/// An operation handed to another thread begins only when that thread calls it, and
/// [`cancel`](Self::cancel) fired before then is lost; the operation would run to the end of
/// its budget. Give such an operation a clone of its own and cancel that clone for good: its
/// operation ends with `Cancelled` whenever it begins, having sent nothing if it had not
/// begun. The tokio driver's `CancelHandle` has the same two methods.
///
/// The shutdown reaches every socket of those operations' lanes, idle pooled ones included
/// (they are closed; the next operation connects again). By default nothing more is sent;
/// see [`SessionConfig::with_cancel_notice`](mcp_proto::SessionConfig::with_cancel_notice) to
/// tell the server.
///
/// ```no_run
/// # fn main() -> Result<(), mcp_proto::Error> {
/// let client = mcp_driver_blocking::Client::connect("http://127.0.0.1:8080/mcp")?;
/// let cancel = client.cancel_handle();
/// std::thread::spawn(move || {
///     std::thread::sleep(std::time::Duration::from_secs(1));
///     cancel.cancel();
/// });
/// let mut arguments = serde_json::Map::new();
/// arguments.insert("ms".into(), 60_000.into());
/// let result = client.call_tool("sleep", arguments);
/// assert!(matches!(result, Err(mcp_proto::Error::Cancelled { .. })));
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct CancelHandle {
    lanes: Arc<Lanes>,
}

impl CancelHandle {
    /// The handle on the operations of the client value whose lanes these are.
    pub(crate) fn new(lanes: Arc<Lanes>) -> Self {
        Self { lanes }
    }

    /// Cancels the operations in flight, if any.
    ///
    /// Returns immediately; each operation's thread sees the cancel as soon as its blocking
    /// call returns, which the socket shutdown makes immediate. One limit: name resolution
    /// and a TCP connect in progress cannot be interrupted (they are bounded by the leg's
    /// grant); the socket is shut down the moment the connect completes.
    pub fn cancel(&self) {
        self.lanes.cancel();
    }

    /// Cancels the operations in flight on this client value, as [`cancel`](Self::cancel)
    /// does, and every operation it starts from now on, which ends as it begins with
    /// [`Error::Cancelled`](mcp_proto::Error::Cancelled), having sent nothing. There is no
    /// undo: the client value is done (its clones, and the session, are not; close the session
    /// through one of them).
    ///
    /// A cancel made before the operation's thread even calls it reaches it:
    ///
    /// ```
    /// // Nothing listens there: a call that went out would end `Unreachable` instead.
    /// let client = mcp_driver_blocking::Client::connect("http://127.0.0.1:9/mcp")?;
    /// let request = client.clone(); // this request's own, so the cancel stays its own
    /// let cancel = request.cancel_handle();
    /// let (go, ready) = std::sync::mpsc::channel::<()>();
    /// let call = std::thread::spawn(move || {
    ///     let _ = ready.recv(); // the thread is held back: the call has not begun
    ///     request.call_tool("slow", serde_json::Map::new())
    /// });
    /// cancel.cancel_for_good();
    /// drop(go);
    /// let result = call.join().expect("the thread ran");
    /// assert!(matches!(result, Err(mcp_proto::Error::Cancelled { .. })));
    /// # Ok::<(), mcp_proto::Error>(())
    /// ```
    pub fn cancel_for_good(&self) {
        self.lanes.for_good.store(true, Ordering::SeqCst);
        self.lanes.cancel();
    }
}

impl fmt::Debug for CancelHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancelHandle").finish_non_exhaustive()
    }
}
