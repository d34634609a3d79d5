//! The end of each blocked leg, kept to the microsecond by one thread for the whole process.
//!
//! A read blocked on a server that never answers returns at ureq's own timeout, which it
//! checks milliseconds apart. To end the leg at its grant's end instead, each lane arms its
//! leg's end here before it blocks, and disarms it when the blocking call returns; one thread
//! (spawned on the first arm, living as long as the process) waits for the earliest armed end
//! and shuts that lane's sockets down then, so the blocked call returns at once. The operation
//! reads what the read brought at or after the leg's end as the leg's timeout: nothing here
//! decides that, and nothing here may block a lane for longer than a map update.
//!
//! One thread for the process, not one per client: a client made per operation (a cold call)
//! would otherwise pay for a thread's start and end each time. The thread is woken only when
//! a lane arms an end earlier than the one it waits for; ends that are disarmed leave the
//! map at once, so a leg that is over costs the thread at most one wake-up, with nothing to do.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::time::{Duration, Instant};

/// What a leg end reaches: the lane whose sockets it shuts down.
pub(crate) trait Lane: Send + Sync {
    /// The lane's leg end.
    fn leg_end(&self) -> &LegEnd;
    /// Shuts every live socket of the lane down, so a call blocked on one returns at once.
    fn shut_down_sockets(&self);
}

/// How long before a leg's end the thread stops waiting and spins (looks at the clock,
/// yielding) instead: a wait's wake-up comes a few hundred microseconds late under load, a
/// look at the clock does not.
const SPIN: Duration = Duration::from_millis(1);

/// A lane's side: its armed end, and whether the last one came.
pub(crate) struct LegEnd {
    /// The lane's key in the watch's map, unique in the process.
    id: u64,
    /// The lane whose sockets are shut down.
    lane: Weak<dyn Lane>,
    state: Mutex<Armed>,
}

#[derive(Default)]
struct Armed {
    /// When the lane's sockets are shut down, unless the leg is over first.
    at: Option<Instant>,
    /// The leg's end came and shut the sockets down.
    fired: bool,
}

impl LegEnd {
    /// `lane`'s leg end, not armed.
    pub(crate) fn of(lane: Weak<dyn Lane>) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        Self {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            lane,
            state: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Armed> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The leg about to block on the lane's sockets ends at `at` (`None`: it is over).
    pub(crate) fn arm(&self, at: Option<Instant>) {
        let before = {
            let mut state = self.lock();
            if at.is_some() {
                state.fired = false;
            }
            std::mem::replace(&mut state.at, at)
        };
        if before == at {
            return;
        }
        let Some(watch) = Watch::get() else {
            // Without the thread, ureq's own timeout still ends the leg, a few milliseconds
            // late.
            return;
        };
        let mut ends = watch.lock();
        if let Some(before) = before {
            ends.armed.remove(&(before, self.id));
        }
        if let Some(at) = at {
            ends.armed.insert((at, self.id), Weak::clone(&self.lane));
            if ends.looks_at.is_none_or(|look| at < look) {
                ends.looks_at = Some(at);
                watch.changed.notify_one();
            }
        }
    }

    /// Whether the leg in flight reached its end, which shut the lane's sockets down.
    pub(crate) fn fired(&self) -> bool {
        self.lock().fired
    }

    /// The lane is gone: its end, if armed, leaves the map.
    pub(crate) fn forget(&self) {
        let Some(at) = self.lock().at.take() else {
            return;
        };
        WATCH.lock().armed.remove(&(at, self.id));
    }

    /// Called by the thread when `at` came: if it is still the lane's armed end, the lane's
    /// sockets are shut down, under this leg end's lock, so the lane's next arm (its next leg)
    /// waits until the shutdown is done and is never reached by it.
    fn fire(&self, lane: &dyn Lane, at: Instant) {
        let mut state = self.lock();
        if state.at != Some(at) {
            return;
        }
        state.at = None;
        state.fired = true;
        lane.shut_down_sockets();
    }
}

/// The process's thread and the ends it waits for.
struct Watch {
    ends: Mutex<Ends>,
    changed: Condvar,
}

struct Ends {
    /// Every armed end, earliest first, with its lane.
    armed: BTreeMap<(Instant, u64), Weak<dyn Lane>>,
    /// When the thread looks next (`None`: when woken).
    looks_at: Option<Instant>,
}

static WATCH: Watch = Watch {
    ends: Mutex::new(Ends {
        armed: BTreeMap::new(),
        looks_at: None,
    }),
    changed: Condvar::new(),
};

/// Whether the thread runs: started by the first arm, `false` if it could not be.
static STARTED: OnceLock<bool> = OnceLock::new();

impl Watch {
    /// The watch, its thread started on the first call (`None` if it could not be).
    fn get() -> Option<&'static Self> {
        let started = STARTED.get_or_init(|| {
            std::thread::Builder::new()
                .name("mcp-leg-end".into())
                .spawn(|| WATCH.run())
                .is_ok()
        });
        started.then_some(&WATCH)
    }

    fn lock(&self) -> MutexGuard<'_, Ends> {
        self.ends.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The thread: waits for the earliest armed end, then fires it.
    fn run(&self) {
        let mut ends = self.lock();
        loop {
            let Some((&(at, id), _)) = ends.armed.first_key_value() else {
                ends.looks_at = None;
                ends = self
                    .changed
                    .wait(ends)
                    .unwrap_or_else(PoisonError::into_inner);
                continue;
            };
            let now = Instant::now();
            if now + SPIN < at {
                ends.looks_at = Some(at - SPIN);
                ends = self
                    .changed
                    .wait_timeout(ends, at - now - SPIN)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
                continue;
            }
            if now < at {
                ends.looks_at = Some(now);
                drop(ends);
                std::thread::yield_now();
                ends = self.lock();
                continue;
            }
            let lane = ends.armed.remove(&(at, id));
            drop(ends);
            if let Some(lane) = lane.and_then(|lane| lane.upgrade()) {
                lane.leg_end().fire(&*lane, at);
            }
            ends = self.lock();
        }
    }
}
