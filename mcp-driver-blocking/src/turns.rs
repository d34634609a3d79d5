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
    /// How many operations wait for their turn: a turn's end signals only when one does (a
    /// signal is a system call, and a client's operations on a local server mostly come one
    /// after another, none waiting).
    waiting: usize,
    /// What is shared, kept between operations (ended on close, or when the client is dropped).
    child: Option<T>,
}

impl<T> Default for Turns<T> {
    fn default() -> Self {
        Self {
            slot: Mutex::new(Slot {
                busy: false,
                waiting: 0,
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
            slot.waiting += 1;
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
            slot.waiting -= 1;
        }
        slot.busy = true;
        let child = slot.child.take();
        drop(slot);
        let mut turn = Turn { turns: self, child };
        run(&mut turn.child)
    }

    /// How many operations wait for their turn.
    #[cfg(test)]
    pub(crate) fn waiting(&self) -> usize {
        self.slot
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .waiting
    }

    /// Wakes the operations waiting for their turn (one of them was cancelled).
    pub(crate) fn wake(&self) {
        let slot = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.waiting > 0 {
            self.ended.notify_all();
        }
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
        if slot.waiting > 0 {
            self.turns.ended.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    /// A turn's end wakes the operation waiting for the next one (it is counted), and not at
    /// its budget's end.
    #[test]
    fn a_turn_s_end_hands_the_slot_to_the_one_waiting() {
        let turns = Arc::new(Turns::<u32>::default());
        turns.offer(7);
        let (held, holding) = std::sync::mpsc::channel();
        let first = {
            let turns = Arc::clone(&turns);
            std::thread::spawn(move || {
                turns.take_turn(None, &Shared::for_lane(), |child| {
                    held.send(()).unwrap();
                    std::thread::sleep(Duration::from_millis(100));
                    *child = child.map(|n| n + 1);
                });
            })
        };
        holding.recv().unwrap();
        let started = Instant::now();
        let until = started + Duration::from_secs(30);
        let got = turns.take_turn(Some(until), &Shared::for_lane(), |child| *child);
        assert_eq!(got, Some(8), "the slot as the first turn left it");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        first.join().unwrap();
        // No one waits: a turn ends without a signal, and the next takes it at once.
        assert_eq!(
            turns.take_turn(None, &Shared::for_lane(), |child| *child),
            Some(8)
        );
    }
}
