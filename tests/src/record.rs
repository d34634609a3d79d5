//! An [`Observer`] that keeps every leg report and event a client gives it, for assertions.
//!
//! Clones share one record: hand a clone to the client (`set_observer(recorder.clone())`) and
//! read the original after the operation.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use mcp_proto::{Event, LegEnd, LegReport, Observer};

/// Keeps every leg report and event; clones share the record.
#[derive(Debug, Clone, Default)]
pub struct Recorder {
    legs: Arc<Mutex<Vec<LegReport>>>,
    events: Arc<Mutex<Vec<Event>>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Recorder {
    /// Every leg reported so far, in order.
    pub fn legs(&self) -> Vec<LegReport> {
        lock(&self.legs).clone()
    }

    /// How each leg ended.
    pub fn ends(&self) -> Vec<LegEnd> {
        lock(&self.legs).iter().map(|l| l.end).collect()
    }

    /// Each leg's grant in milliseconds.
    pub fn grants_ms(&self) -> Vec<u128> {
        lock(&self.legs)
            .iter()
            .map(|l| l.grant.as_millis())
            .collect()
    }

    /// Every event reported so far, in order.
    pub fn events(&self) -> Vec<Event> {
        lock(&self.events).clone()
    }

    /// How many events were reported.
    pub fn event_count(&self) -> usize {
        lock(&self.events).len()
    }

    /// Forgets everything recorded so far.
    pub fn clear(&self) {
        lock(&self.legs).clear();
        lock(&self.events).clear();
    }
}

impl Observer for Recorder {
    fn leg_finished(&mut self, report: &LegReport) {
        lock(&self.legs).push(report.clone());
    }

    fn event(&mut self, event: &Event) {
        lock(&self.events).push(event.clone());
    }
}
