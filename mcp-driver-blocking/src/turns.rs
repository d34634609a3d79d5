//! Turns on what a client's operations share one at a time: a local server process (one
//! stdout), or an HTTP+SSE session's event stream (one stream). Each operation waits for its
//! turn inside its own budget; the thing shared is kept in the slot between turns.
//!
//! Nothing here decides anything: it only hands the slot to one operation at a time.

use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Instant;

use crate::lanes::Shared;

/// What the operations of a client share, and whose turn it is.
pub(crate) struct Turns<T> {
    slot: Mutex<Slot<T>>,
    /// Signalled when a turn ends.
    ended: Condvar,
}

struct Slot<T> {
    busy: bool,
    /// What is shared, kept between operations (ended on close, or when the client is dropped).
    child: Option<T>,
}

impl<T> Default for Turns<T> {
    fn default() -> Self {
        Self {
            slot: Mutex::new(Slot {
                busy: false,
                child: None,
            }),
            ended: Condvar::new(),
        }
    }
}

impl<T> Turns<T> {
    /// Puts `shared` in the slot when no operation has the turn and the slot is empty (an
    /// operation that opened it without the turn offers it so); else it is dropped.
    pub(crate) fn offer(&self, shared: T) {
        let mut slot = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
        if !slot.busy && slot.child.is_none() {
            slot.child = Some(shared);
        }
    }

    /// Runs `run` with the process once it is this operation's turn (waiting at most until
    /// `until`, the operation's budget's end). An operation whose turn does not come in time,
    /// or that is cancelled while it waits, runs without the process: it ends at once, having
    /// sent nothing, with its own error.
    pub(crate) fn take_turn<R>(
        &self,
        until: Option<Instant>,
        shared: &Shared,
        run: impl FnOnce(&mut Option<T>) -> R,
    ) -> R {
        let mut slot = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
        while slot.busy {
            let now = Instant::now();
            let left = until.map(|end| end.saturating_duration_since(now));
            if left.is_some_and(|left| left.is_zero()) || shared.is_cancelled() {
                drop(slot);
                return run(&mut None);
            }
            slot = match left {
                Some(left) => {
                    self.ended
                        .wait_timeout(slot, left)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
                None => self
                    .ended
                    .wait(slot)
                    .unwrap_or_else(PoisonError::into_inner),
            };
        }
        slot.busy = true;
        let child = slot.child.take();
        drop(slot);
        let mut turn = Turn { turns: self, child };
        run(&mut turn.child)
    }

    /// Wakes the operations waiting for their turn (one of them was cancelled).
    pub(crate) fn wake(&self) {
        let _slot = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
        self.ended.notify_all();
    }
}

/// A turn in progress: it ends (the process back in its slot, the next waiter woken) however
/// the operation ends, a panic included.
struct Turn<'a, T> {
    turns: &'a Turns<T>,
    child: Option<T>,
}

impl<T> Drop for Turn<'_, T> {
    fn drop(&mut self) {
        let mut slot = self
            .turns
            .slot
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        slot.busy = false;
        slot.child = self.child.take();
        self.turns.ended.notify_one();
    }
}
