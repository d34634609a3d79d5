//! What the bridge listens for between the host's requests: the list changes the upstream's
//! handshake declared, the resources the host subscribed to (`resources/subscribe`), and, for
//! a legacy upstream whose requests the host answers, the session's stream they come on.
//!
//! One subscription at a time runs (the watcher), each under a budget of its own, one after
//! another. A legacy upstream is sent the host's `resources/subscribe` itself (the runner
//! relays it as a request, and its answer answers the host); its updates come on the
//! session's stream, which the watcher holds, and the resources the host subscribed to are
//! the filter of what reaches it. A modern upstream (2026-07-28) is told the resources in the
//! subscription's own request (`subscriptions/listen`): a change of them cancels the one that
//! runs, the next asks for the new set at once, and the host's `resources/subscribe` is
//! answered when the upstream acknowledged the resource (or refused with the reason).
//!
//! A local upstream (stdio) has one stdout, which an operation holds for its whole life:
//! there the watcher listens only while no host request runs. A host request cancels it, and
//! waits until it has ended; the last one to end has it started again. So what a local
//! upstream sends between the host's requests reaches the host when it is sent, not with the
//! next request.
//!
//! This module holds the state and the rules; the runner starts the loop on its driver. It
//! never writes to the host.

use std::collections::BTreeSet;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use mcp_proto::Subscription;
use serde_json::Value;

use super::locked;
use crate::driver::Cancel;

/// How many subscriptions in a row may fail before the watcher gives up (an upstream that
/// refuses them), and the pause after each failure.
pub(super) const TRIES: u32 = 3;
pub(super) const PAUSE: Duration = Duration::from_secs(1);

/// Who waits for the upstream to take a subscription to a resource.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Waiter {
    /// The host's `resources/subscribe` `id`, answered with `{}` or an error (`modern`: the
    /// host speaks the modern era in it).
    Request { id: Value, modern: bool },
    /// The host's `subscriptions/listen` `id`, acknowledged once each resource it asks for
    /// was taken or refused.
    Listen { id: Value },
}

/// A host's subscription to a resource of a modern upstream, waiting for the subscription
/// that acknowledges it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Pending {
    pub(super) uri: String,
    pub(super) waiter: Waiter,
    /// The generation that asks for it: an acknowledgment of an older one does not answer it.
    generation: u64,
}

#[derive(Default)]
struct State {
    /// The upstream speaks the modern era: the resources are part of the subscription.
    modern: bool,
    /// The host's subscriptions the upstream has not acknowledged yet (modern upstream).
    pending: Vec<Pending>,
    /// The list changes the upstream declared, once its handshake was answered.
    declared: Option<Subscription>,
    /// Listen even with nothing to hear: the stream carries the upstream's requests.
    hold: bool,
    /// The resources the host subscribed to.
    resources: BTreeSet<String>,
    /// Counts the changes of what is wanted: a subscription of an older one is restarted.
    generation: u64,
    /// A watcher loop runs.
    running: bool,
    /// The subscription under way: its generation and cancel.
    current: Option<(u64, Cancel)>,
    /// A modern upstream acknowledged the subscription under way: what it sends from now on
    /// reaches the host.
    acknowledged: bool,
    /// The host is gone: no subscription starts again.
    stopping: bool,
}

impl State {
    /// What a subscription asks for now; `None` when there is nothing to listen for.
    fn wanted(&self) -> Option<Subscription> {
        let mut subscription = self.declared.clone()?;
        if self.modern {
            subscription.resource_subscriptions = self.resources.iter().cloned().collect();
        }
        let hold = self.hold || !self.resources.is_empty();
        (hold || subscription != Subscription::default()).then_some(subscription)
    }

    /// Whether a loop should start now.
    fn should_start(&self) -> bool {
        !self.running && !self.stopping && self.wanted().is_some()
    }

    /// The pending subscriptions `answered` says are answered (`Some(taken)`), out of the
    /// state; the refused ones' URIs are no longer asked for.
    fn settle(&mut self, answered: impl Fn(&Pending) -> Option<bool>) -> Vec<(Pending, bool)> {
        let mut settled = Vec::new();
        let mut waiting = Vec::new();
        for pending in std::mem::take(&mut self.pending) {
            match answered(&pending) {
                Some(taken) => settled.push((pending, taken)),
                None => waiting.push(pending),
            }
        }
        self.pending = waiting;
        for (pending, taken) in &settled {
            if !taken {
                self.resources.remove(&pending.uri);
            }
        }
        settled
    }

    /// What is wanted changed: the subscription under way is cancelled (the loop starts the
    /// next one). True when no loop runs and one should start.
    fn changed(&mut self) -> bool {
        self.generation += 1;
        if let Some((_, cancel)) = &self.current {
            cancel.cancel_for_good();
        }
        self.should_start()
    }
}

/// The watcher's state, shared by the dispatcher, the host requests' operations and the loop.
pub(super) struct Watch {
    state: Mutex<State>,
    /// The upstream is local (stdio): the watcher yields to the host's requests.
    pub(super) local: bool,
    /// Signalled when the subscription under way has ended, for the host requests waiting for
    /// the upstream's stdout: a thread's wait ([`Self::wait_turn`]) and a task's
    /// ([`Self::wait_turn_async`]).
    ended: Condvar,
    ended_async: tokio::sync::Notify,
}

impl Watch {
    pub(super) fn new(local: bool) -> Self {
        Self {
            state: Mutex::default(),
            local,
            ended: Condvar::new(),
            ended_async: tokio::sync::Notify::new(),
        }
    }

    /// The upstream answered the handshake declaring `changes` (`hold`: listen even for
    /// nothing but its requests), in the modern era or not. True when the loop should start.
    pub(super) fn declare(&self, changes: Subscription, hold: bool, modern: bool) -> bool {
        let mut state = locked(&self.state);
        if state.declared.is_some() {
            return false;
        }
        state.declared = Some(changes);
        state.hold = hold;
        state.modern = modern;
        state.changed()
    }

    /// Whether the upstream speaks the modern era (known once its handshake was answered).
    pub(super) fn upstream_modern(&self) -> bool {
        locked(&self.state).modern
    }

    /// The host subscribed to `uri` (or, with `on` false, unsubscribed) and, for a legacy
    /// upstream, the upstream took it: its updates reach the host from now on. True when the
    /// loop should start.
    pub(super) fn resource(&self, uri: &str, on: bool) -> bool {
        let mut state = locked(&self.state);
        let changed = match on {
            true => state.resources.insert(uri.to_owned()),
            false => state.resources.remove(uri),
        };
        match state.modern {
            true => changed && state.changed(),
            false => state.should_start(),
        }
    }

    /// A modern upstream: `waiter` subscribes to `uri`, told once a subscription asking for
    /// it is acknowledged ([`Self::acknowledged`]) or fails. True when the loop should start.
    pub(super) fn subscribe_pending(&self, uri: &str, waiter: Waiter) -> bool {
        let mut state = locked(&self.state);
        state.resources.insert(uri.to_owned());
        let start = state.changed();
        let generation = state.generation;
        state.pending.push(Pending {
            uri: uri.to_owned(),
            waiter,
            generation,
        });
        start
    }

    /// The subscription under way was acknowledged with these resources: the pending
    /// subscriptions it asked for are answered (true: taken; false: the upstream left it
    /// out, and it is no longer asked for).
    pub(super) fn acknowledged(&self, granted: &[String]) -> Vec<(Pending, bool)> {
        let mut state = locked(&self.state);
        let Some(current) = state.current.as_ref().map(|(generation, _)| *generation) else {
            return Vec::new();
        };
        state.acknowledged = true;
        state.settle(|pending| {
            (pending.generation <= current).then(|| granted.contains(&pending.uri))
        })
    }

    /// The list changes the upstream declared (none before its handshake was answered).
    pub(super) fn declared(&self) -> Subscription {
        locked(&self.state).declared.clone().unwrap_or_default()
    }

    /// Whether what the upstream sends reaches the bridge now: a legacy upstream's stream
    /// (its head is not seen), or a modern one's acknowledged subscription. A modern host's
    /// subscription is acknowledged only then, so that a change the host causes right after
    /// is not lost.
    pub(super) fn is_heard(&self) -> bool {
        let state = locked(&self.state);
        !state.modern || state.acknowledged
    }

    /// Whether the host subscribed to `uri`: its updates are relayed.
    pub(super) fn is_subscribed(&self, uri: &str) -> bool {
        locked(&self.state).resources.contains(uri)
    }

    /// True when a loop should start now (none runs and something is wanted): after the
    /// last host request ended, over stdio.
    pub(super) fn idle(&self) -> bool {
        locked(&self.state).should_start()
    }

    /// The loop is about to start: false when one runs already (or nothing is wanted).
    pub(super) fn start(&self) -> bool {
        let mut state = locked(&self.state);
        let start = state.should_start();
        state.running |= start;
        start
    }

    /// The loop's next subscription, under `cancel` (of a client clone made for it alone: it
    /// is cancelled for good, begun or not), and its generation; `None` ends the loop: the host is gone, nothing is wanted, or (`busy`, over
    /// stdio) a host request runs. Decided under the lock a yielding request reads.
    pub(super) fn next(
        &self,
        cancel: &Cancel,
        busy: impl Fn() -> bool,
    ) -> Option<(Subscription, u64)> {
        let mut state = locked(&self.state);
        let wanted = state
            .wanted()
            .filter(|_| !(state.stopping || (self.local && busy())));
        let Some(subscription) = wanted else {
            state.running = false;
            return None;
        };
        state.current = Some((state.generation, cancel.clone()));
        Some((subscription, state.generation))
    }

    /// The subscription of `generation` ended (`failed`: with an error). True when it ended
    /// on its own (what is wanted did not change meanwhile), so the end counts; and the
    /// pending subscriptions it failed to take, refused (no longer asked for).
    pub(super) fn ended(&self, generation: u64, failed: bool) -> (bool, Vec<(Pending, bool)>) {
        let mut state = locked(&self.state);
        state.current = None;
        self.ended.notify_all();
        self.ended_async.notify_waiters();
        state.acknowledged = false;
        let own = state.generation == generation;
        let refused = match own && failed {
            true => state.settle(|pending| (pending.generation <= generation).then_some(false)),
            false => Vec::new(),
        };
        (own, refused)
    }

    /// The loop gave up (the upstream keeps refusing): nothing starts it again but a change,
    /// and the pending subscriptions are refused.
    pub(super) fn gave_up(&self) -> Vec<(Pending, bool)> {
        let mut state = locked(&self.state);
        state.running = false;
        state.settle(|_| Some(false))
    }

    /// A host request is about to run on a local upstream, whose stdout the subscription under
    /// way holds: it is cancelled, and the request waits until it has ended, or until `until`
    /// (the request's deadline: its operation then ends with its budget spent). Returns at
    /// once when none runs, and always over HTTP. Blocks the calling thread.
    pub(super) fn wait_turn(&self, until: Option<Instant>) {
        let mut state = locked(&self.state);
        while self.yield_locked(&mut state) {
            state = match until.map(|until| until.saturating_duration_since(Instant::now())) {
                Some(left) if left.is_zero() => return,
                Some(left) => (self.ended.wait_timeout(state, left))
                    .map_or_else(|poisoned| poisoned.into_inner().0, |(state, _)| state),
                None => (self.ended.wait(state)).unwrap_or_else(PoisonError::into_inner),
            };
        }
    }

    /// [`Self::wait_turn`] for a task: the same wait, without blocking its thread.
    pub(super) async fn wait_turn_async(&self, until: Option<Instant>) {
        loop {
            // Registered before the look, so that an end between the two is not missed.
            let mut ended = std::pin::pin!(self.ended_async.notified());
            ended.as_mut().enable();
            if !self.yield_locked(&mut locked(&self.state)) {
                return;
            }
            match until {
                Some(until) => {
                    let until = tokio::time::Instant::from_std(until);
                    if tokio::time::timeout_at(until, ended).await.is_err() {
                        return;
                    }
                }
                None => ended.await,
            }
        }
    }

    /// The subscription under way is cancelled for a host request on a local upstream. True
    /// while it runs; false once none runs, and always over HTTP.
    fn yield_locked(&self, state: &mut MutexGuard<'_, State>) -> bool {
        if !self.local {
            return false;
        }
        state.generation += 1;
        let Some((_, cancel)) = &state.current else {
            return false;
        };
        cancel.cancel_for_good();
        true
    }

    /// The host is gone: the subscription under way is cancelled, and none starts again.
    pub(super) fn stop(&self) {
        let mut state = locked(&self.state);
        state.stopping = true;
        state.pending.clear();
        // Its end does not count: the loop ends without a pause.
        state.generation += 1;
        if let Some((_, cancel)) = &state.current {
            cancel.cancel_for_good();
        }
    }
}

/// What the watcher does once a subscription ended.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum After {
    /// The next one, at once.
    Next,
    /// The next one after [`PAUSE`].
    Pause,
    /// None: the upstream keeps refusing them.
    Stop,
}

/// What follows a subscription that ended on its own, `failed` (an error) or not, after
/// `lasted`: one that failed, or ended before the pause (a server that ends each at once must
/// not be asked again in a tight loop), counts in `failures` and is followed by a pause, and
/// the [`TRIES`]th in a row by none. One that lasted resets the count.
pub(super) fn after(failed: bool, lasted: Duration, failures: &mut u32) -> After {
    let failed = failed || lasted < PAUSE;
    *failures = if failed { *failures + 1 } else { 0 };
    match (failed, *failures >= TRIES) {
        (false, _) => After::Next,
        (true, false) => After::Pause,
        (true, true) => After::Stop,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cancel() -> Cancel {
        let client = mcp_driver_blocking::Client::connect("http://127.0.0.1:9/mcp").unwrap();
        Cancel::Blocking(client.cancel_handle())
    }

    fn tools() -> Subscription {
        Subscription {
            tools_list_changed: true,
            ..Subscription::default()
        }
    }

    #[test]
    fn the_watcher_listens_for_the_declared_changes_and_the_host_s_resources() {
        let watch = Watch::new(false);
        // Nothing before the handshake; a resource before it is kept for then.
        assert!(!watch.resource("a://1", true));
        assert!(watch.declare(tools(), false, true));
        assert!(watch.start());
        assert!(!watch.start(), "one loop at most");
        let (subscription, first) = watch.next(&cancel(), || false).unwrap();
        assert_eq!(subscription.resource_subscriptions, ["a://1"]);
        assert!(subscription.tools_list_changed);
        assert!(watch.is_subscribed("a://1") && !watch.is_subscribed("a://2"));
        // A new resource restarts the subscription: its end does not count.
        assert!(!watch.resource("a://2", true), "the loop runs: it restarts");
        assert!(!watch.ended(first, true).0);
        let (subscription, second) = watch.next(&cancel(), || false).unwrap();
        assert_eq!(subscription.resource_subscriptions, ["a://1", "a://2"]);
        assert!(watch.ended(second, false).0, "an end of its own counts");
        // Subscribing twice changes nothing.
        assert!(!watch.resource("a://2", true));
        watch.stop();
        assert!(watch.next(&cancel(), || false).is_none());
        assert!(!watch.idle() && !watch.start());
    }

    #[test]
    fn with_nothing_to_hear_nothing_runs_until_the_host_subscribes() {
        let watch = Watch::new(false);
        assert!(!watch.declare(Subscription::default(), false, false));
        assert!(!watch.start());
        let first = watch.resource("a://1", true);
        assert!(first, "the first resource starts it");
        assert!(watch.start());
        // A legacy upstream was sent resources/subscribe itself: the stream is held, its
        // subscription asks for no resource, and a second one does not restart it.
        let (subscription, generation) = watch.next(&cancel(), || false).unwrap();
        assert!(subscription.resource_subscriptions.is_empty());
        assert!(!watch.resource("a://2", true));
        assert!(!watch.resource("a://1", false) && !watch.resource("a://2", false));
        assert!(watch.ended(generation, false).0);
        assert!(watch.next(&cancel(), || false).is_none(), "nothing left");
        // A legacy upstream whose requests the host answers: its stream is held anyway.
        let held = Watch::new(false);
        assert!(held.declare(Subscription::default(), true, false));
    }

    #[test]
    fn over_stdio_the_watcher_yields_to_the_host_s_requests() {
        let watch = Watch::new(true);
        assert!(watch.declare(tools(), false, true));
        assert!(watch.start());
        let (_, generation) = watch.next(&cancel(), || false).unwrap();
        // A request cancels it and waits for its end, at most until its own deadline.
        let start = Instant::now();
        watch.wait_turn(Some(start + Duration::from_millis(50)));
        assert!(
            start.elapsed() >= Duration::from_millis(50),
            "it still runs"
        );
        // A request waiting goes on when it ends: told, not looking again later (a missed
        // signal would hold it to its deadline).
        let far = Duration::from_secs(60);
        std::thread::scope(|scope| {
            let waiting = scope.spawn(|| watch.wait_turn(Some(Instant::now() + far)));
            std::thread::sleep(Duration::from_millis(20));
            assert!(!watch.ended(generation, true).0);
            waiting.join().unwrap();
        });
        assert!(start.elapsed() < far / 2, "the end let the request go");
        watch.wait_turn(None);
        // While a request runs no subscription starts; after the last, one starts again.
        assert!(watch.next(&cancel(), || true).is_none());
        assert!(watch.idle() && watch.start());
        assert!(watch.next(&cancel(), || false).is_some());
        // Over HTTP a request does not touch it.
        let http = Watch::new(false);
        assert!(http.declare(tools(), false, true) && http.start());
        assert!(http.next(&cancel(), || true).is_some());
        http.wait_turn(None);
    }

    #[test]
    fn a_task_waiting_for_the_watcher_goes_on_when_its_subscription_ends() {
        let watch = std::sync::Arc::new(Watch::new(true));
        assert!(watch.declare(tools(), false, true) && watch.start());
        let (_, generation) = watch.next(&cancel(), || false).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let far = Duration::from_secs(60);
        let start = Instant::now();
        runtime.block_on(async {
            let short = Some(Instant::now() + Duration::from_millis(50));
            watch.wait_turn_async(short).await;
            assert!(
                start.elapsed() >= Duration::from_millis(50),
                "it still runs"
            );
            let waiter = std::sync::Arc::clone(&watch);
            let waiting = tokio::spawn(async move {
                waiter.wait_turn_async(Some(Instant::now() + far)).await;
            });
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert!(!watch.ended(generation, true).0);
            waiting.await.unwrap();
        });
        assert!(start.elapsed() < far / 2, "the end let the task go");
    }

    #[test]
    fn a_modern_upstream_s_acknowledgment_answers_the_host_s_subscriptions() {
        let watch = Watch::new(false);
        assert!(watch.declare(tools(), false, true));
        assert!(watch.start());
        let (_, first) = watch.next(&cancel(), || false).unwrap();
        // Two subscriptions restart it; the old one's acknowledgment answers neither.
        let request = |id: u64, modern| Waiter::Request {
            id: json!(id),
            modern,
        };
        assert!(!watch.subscribe_pending("a://1", request(1, false)));
        assert!(!watch.subscribe_pending("a://2", request(2, true)));
        assert!(watch.acknowledged(&["a://1".to_owned()]).is_empty());
        assert!(!watch.ended(first, true).0);
        let (subscription, second) = watch.next(&cancel(), || false).unwrap();
        assert_eq!(subscription.resource_subscriptions, ["a://1", "a://2"]);
        // The upstream takes one and leaves the other out: no longer asked for.
        let answered = watch.acknowledged(&["a://1".to_owned()]);
        let answers: Vec<_> = (answered.iter())
            .map(|(pending, taken)| (pending.waiter.clone(), *taken))
            .collect();
        assert_eq!(
            answers,
            [(request(1, false), true), (request(2, true), false)]
        );
        assert!(watch.is_subscribed("a://1") && !watch.is_subscribed("a://2"));
        // A subscription that fails refuses what waits for it.
        let listen = Waiter::Listen { id: json!("l-1") };
        assert!(!watch.subscribe_pending("a://3", listen));
        assert!(!watch.ended(second, true).0);
        let (_, third) = watch.next(&cancel(), || false).unwrap();
        let (counts, refused) = watch.ended(third, true);
        assert!(counts);
        assert_eq!(refused.len(), 1);
        assert!(!refused[0].1 && !watch.is_subscribed("a://3"));
    }

    #[test]
    fn failures_in_a_row_pause_the_watcher_and_the_third_stops_it() {
        let mut failures = 0;
        let long = PAUSE * 2;
        assert_eq!(after(true, long, &mut failures), After::Pause);
        // An end before the pause is a failure too: no tight loop on a server that ends each.
        assert_eq!(after(false, PAUSE / 2, &mut failures), After::Pause);
        assert_eq!(after(true, long, &mut failures), After::Stop);
        let mut failures = 2;
        assert_eq!(after(false, long, &mut failures), After::Next);
        assert_eq!(failures, 0, "one that lasted resets the count");
    }
}
