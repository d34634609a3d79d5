//! The end of each blocked leg, kept to the microsecond by one thread for the whole process.
//!
//! On Unix a read ends at the leg's end on the lane's own thread (`connector::socket::Socket` polls
//! until then); what else blocks on a socket (a write to a server that stopped reading, a read
//! elsewhere, where the wait is the kernel's socket timeout, checked milliseconds apart) is
//! ended from here. Each lane arms its leg's end here before it blocks, and disarms it when
//! the blocking call returns; one thread
//! (spawned on the first arm, living as long as the process) waits for the earliest armed end
//! and shuts that lane's sockets down then, so the blocked call returns at once. The operation
//! reads what the read brought at or after the leg's end as the leg's timeout: nothing here
//! decides that, and nothing here may block a lane for longer than a map update.
//!
//! One thread for the process, not one per client: a client made per operation (a cold call)
//! would otherwise pay for a thread's start and end each time. Each lane has a slot in the
//! watch, taken when the lane is made: arming is a write to it under the watch's lock (no map
//! update, no allocation), and the thread looks through the slots for the earliest end. The
//! thread is woken only when a lane arms an end earlier than the one it waits for, so a leg
//! that is over costs the thread at most one wake-up, with nothing to do.

use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::time::{Duration, Instant};

/// What a leg end reaches: the lane whose sockets it shuts down.
pub(crate) trait Lane: Send + Sync {
    /// Shuts every live socket of the lane down, so a call blocked on one returns at once.
    fn shut_down_sockets(&self);
}

/// How long before a leg's end the thread stops waiting and spins (looks at the clock,
/// yielding) instead: a wait's wake-up comes a few hundred microseconds late under load, a
/// look at the clock does not.
const SPIN: Duration = Duration::from_millis(1);

/// A lane's side: its slot in the watch.
pub(crate) struct LegEnd {
    slot: usize,
}

/// A lane's armed end, and whether the last one came.
struct Slot {
    /// When the lane's sockets are shut down, unless the leg is over first.
    at: Option<Instant>,
    /// The leg's end came and shut the sockets down.
    fired: bool,
    /// The lane whose sockets are shut down (dangling once the lane is gone).
    lane: Weak<dyn Lane>,
}

/// The lane of a free slot.
struct Gone;

impl Lane for Gone {
    fn shut_down_sockets(&self) {}
}

impl LegEnd {
    /// `lane`'s leg end, not armed: a slot of its own in the watch.
    pub(crate) fn of(lane: Weak<dyn Lane>) -> Self {
        let slot = Slot {
            at: None,
            fired: false,
            lane,
        };
        let mut ends = WATCH.lock();
        let slot = match ends.free.pop() {
            Some(free) => {
                ends.slots[free] = slot;
                free
            }
            None => {
                ends.slots.push(slot);
                ends.slots.len() - 1
            }
        };
        Self { slot }
    }

    /// The leg about to block on the lane's sockets ends at `at` (`None`: it is over).
    pub(crate) fn arm(&self, at: Option<Instant>) {
        // Started before the lock is taken (the thread takes it first thing).
        let watch = Watch::get();
        let mut ends = WATCH.lock();
        let slot = &mut ends.slots[self.slot];
        if slot.at == at {
            return;
        }
        slot.at = at;
        let Some(at) = at else {
            return;
        };
        slot.fired = false;
        if ends.looks_at.is_none_or(|look| at < look) {
            ends.looks_at = Some(at);
            // Without the thread, the exchange's own limit still ends the leg, a few
            // milliseconds late.
            if let Some(watch) = watch {
                watch.changed.notify_one();
            }
        }
    }

    /// Whether the leg in flight reached its end, which shut the lane's sockets down.
    pub(crate) fn fired(&self) -> bool {
        WATCH.lock().slots[self.slot].fired
    }

    /// The lane is gone: its slot is free for the next lane.
    pub(crate) fn forget(&self) {
        let mut ends = WATCH.lock();
        ends.slots[self.slot] = Slot {
            at: None,
            fired: false,
            lane: Weak::<Gone>::new(),
        };
        ends.free.push(self.slot);
    }
}

/// The process's thread and the ends it waits for.
struct Watch {
    ends: Mutex<Ends>,
    changed: Condvar,
}

struct Ends {
    /// Every lane's slot, free ones included (listed in `free`).
    slots: Vec<Slot>,
    free: Vec<usize>,
    /// When the thread looks next (`None`: when woken).
    looks_at: Option<Instant>,
}

impl Ends {
    /// The earliest armed end, and its slot.
    fn earliest(&self) -> Option<(Instant, usize)> {
        (self.slots.iter().enumerate())
            .filter_map(|(index, slot)| slot.at.map(|at| (at, index)))
            .min()
    }
}

static WATCH: Watch = Watch {
    ends: Mutex::new(Ends {
        slots: Vec::new(),
        free: Vec::new(),
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

    /// The thread: waits for the earliest armed end, then fires it: the lane's sockets are
    /// shut down under the watch's lock, so the lane's next arm (its next leg) waits until
    /// the shutdown is done and is never reached by it.
    fn run(&self) {
        let mut ends = self.lock();
        loop {
            let Some((at, index)) = ends.earliest() else {
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
            let slot = &mut ends.slots[index];
            slot.at = None;
            slot.fired = true;
            let lane = slot.lane.upgrade();
            if let Some(lane) = &lane {
                lane.shut_down_sockets();
            }
            // The lane may be dropped with this last reference: its `forget` takes the lock.
            drop(ends);
            drop(lane);
            ends = self.lock();
        }
    }
}
