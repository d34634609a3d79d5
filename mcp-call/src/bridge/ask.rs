//! The upstream's requests (elicitation, sampling, roots), asked of the host: which host
//! request each operation answers, and how the host is asked in the era it speaks.
//!
//! A legacy host (it sent `initialize`) gets a JSON-RPC request of the bridge's own and
//! answers it. A host speaking 2026-07-28 is never sent a request: the operation's answer to
//! its request becomes an input round (`resultType: "input_required"`, the upstream's request
//! under one key of `inputRequests`, a `requestState` naming the round), and the host's retry
//! (a new request, `inputResponses` under the same key, the same `requestState`) carries the
//! answer back to the operation still running upstream, and becomes the request the
//! operation answers. Either way the host is waited for until the operation's deadline,
//! never past it.
//!
//! The operation's responder is the session's (one for every operation), and runs on the
//! operation's own thread (blocking driver) or task (tokio driver): [`Answering::scope_thread`]
//! and [`Answering::scope_task`] tell it which host request it serves. Nothing here writes to stdout itself.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use mcp_proto::{OperationDeadline, RpcError};
use serde_json::{Value, json};

use super::host;
use super::locked;
use crate::driver::Cancel;

/// The prefix of the `requestState` of the bridge's input rounds.
const ROUND_PREFIX: &str = "mcp-call-bridge-round-";

/// One host request's operation: what cancels it, until when it runs, and which host request
/// its answer goes to.
pub(super) struct Answering {
    /// The host speaks the 2026-07-28 era in this request: it is asked in input rounds.
    modern: bool,
    deadline: OperationDeadline,
    /// The cancel of the client clone the operation runs on (its own), fired for good: the
    /// host's cancel may come before the operation's thread or task has begun it.
    cancel: Cancel,
    /// The host request the operation's answer goes to: the one that started it, or the
    /// host's retry after an input round. `None` while a round waits for the retry, and once
    /// answered.
    to: Mutex<Option<Value>>,
    /// The host cancelled the request: no answer is sent.
    cancelled: AtomicBool,
    /// While the operation waits for the host's answer to what it was asked: where a cancel
    /// ends the wait.
    asking: Mutex<Option<mpsc::Sender<Answer>>>,
}

/// What ends a wait for the host's answer.
enum Answer {
    /// The host's result or error object.
    Host(Result<Value, Value>),
    /// Nobody waits for it any more: the host cancelled its request (false) or is gone (true).
    Dropped { host_gone: bool },
}

thread_local! {
    /// The blocking driver's: the operation running on this thread.
    static ON_THREAD: RefCell<Option<Arc<Answering>>> = const { RefCell::new(None) };
}

tokio::task_local! {
    /// The tokio driver's: the operation this task runs.
    static ON_TASK: Arc<Answering>;
}

impl Answering {
    pub(super) fn new(
        id: Value,
        modern: bool,
        deadline: OperationDeadline,
        cancel: Cancel,
    ) -> Self {
        Self {
            modern,
            deadline,
            cancel,
            to: Mutex::new(Some(id)),
            cancelled: AtomicBool::new(false),
            asking: Mutex::new(None),
        }
    }

    pub(super) fn deadline(&self) -> OperationDeadline {
        self.deadline
    }

    /// The host no longer wants the answer: the operation is cancelled (begun or not: it
    /// ends at once either way) and nothing is sent.
    pub(super) fn cancel(&self) {
        // Under the wait's lock: an ask that has not registered its wait yet sees the cancel
        // when it does, one that has is woken (the operation cannot see the cancel while it
        // waits for the host).
        let mut asking = locked(&self.asking);
        self.cancelled.store(true, Ordering::SeqCst);
        self.cancel.cancel_for_good();
        if let Some(waiting) = asking.take() {
            let _ = waiting.send(Answer::Dropped { host_gone: false });
        }
    }

    /// Registers the wait for the host's answer, where a cancel ends it; false when the host
    /// cancelled the request already.
    fn wait_on(&self, answer: &mpsc::Sender<Answer>) -> bool {
        let mut asking = locked(&self.asking);
        if self.cancelled.load(Ordering::SeqCst) {
            return false;
        }
        *asking = Some(answer.clone());
        true
    }

    /// Runs `work` (the operation, on this thread) with its responder knowing this request.
    pub(super) fn scope_thread<T>(self: &Arc<Self>, work: impl FnOnce() -> T) -> T {
        ON_THREAD.with(|on| *on.borrow_mut() = Some(Arc::clone(self)));
        let done = work();
        ON_THREAD.with(|on| *on.borrow_mut() = None);
        done
    }

    /// Runs `work` (the operation, on this task) with its responder knowing this request.
    pub(super) async fn scope_task<F: std::future::Future>(self: Arc<Self>, work: F) -> F::Output {
        ON_TASK.scope(self, work).await
    }

    /// The operation the calling thread or task runs for a host request, if any (the list
    /// changes' watcher runs for none).
    fn current() -> Option<Arc<Self>> {
        (ON_TASK.try_with(Arc::clone).ok()).or_else(|| ON_THREAD.with(|on| on.borrow().clone()))
    }
}

/// A round a modern host was answered with and whose retry is awaited.
struct Round {
    /// The key of `inputRequests` the upstream's request went under.
    key: String,
    answer: mpsc::Sender<Answer>,
    answering: Arc<Answering>,
}

/// The host's requests in flight, and the bridge's own requests and rounds the host has not
/// answered yet.
#[derive(Default)]
pub(super) struct Asks {
    /// The host's requests whose operations run, by id (as JSON text).
    in_flight: Mutex<HashMap<String, Arc<Answering>>>,
    /// Requests sent to a legacy host, by id: where its answer goes.
    requests: Mutex<HashMap<String, mpsc::Sender<Answer>>>,
    /// Input rounds of a modern host, by `requestState`.
    rounds: Mutex<HashMap<String, Round>>,
    next: AtomicU64,
    /// The host spoke the 2026-07-28 era first (`server/discover`): a request of the upstream
    /// outside any of the host's requests cannot reach it.
    pub(super) host_modern: AtomicBool,
}

/// What the host's message is, for [`Asks::retry`].
pub(super) enum Retry {
    /// Not a retry of an input round: a request of its own.
    No,
    /// The retry of a round the bridge holds: the operation goes on, and answers this request.
    Taken,
    /// A `requestState` the bridge does not hold (its round ended with its budget): refused.
    Unknown,
    /// The retry's id is in flight already: refused as such.
    InFlight,
}

/// Where the host's answer to what it was asked is awaited.
enum Asked {
    Round(String),
    Request(String),
}

impl Asks {
    /// Registers `answering` as the operation that answers the host's request `id`, unless a
    /// request with that id is in flight already (the host broke the protocol: this one is
    /// refused, the first goes on). True when it may run.
    pub(super) fn begin(&self, id: &Value, answering: &Arc<Answering>) -> bool {
        let mut in_flight = locked(&self.in_flight);
        let key = id.to_string();
        if in_flight.contains_key(&key) {
            return false;
        }
        in_flight.insert(key, Arc::clone(answering));
        true
    }

    /// Whether none of the host's requests is in flight.
    pub(super) fn is_idle(&self) -> bool {
        locked(&self.in_flight).is_empty()
    }

    /// The host cancelled its request `id`: its operation is cancelled, and answers nothing.
    pub(super) fn cancel(&self, id: &Value) {
        if let Some(answering) = locked(&self.in_flight).get(&id.to_string()) {
            answering.cancel();
        }
    }

    /// The host is gone: every operation still running is cancelled, and every wait for the
    /// host's answer ends.
    pub(super) fn cancel_all(&self) {
        for answering in locked(&self.in_flight).values() {
            answering.cancel();
        }
        let gone = || Answer::Dropped { host_gone: true };
        for waiting in locked(&self.requests).values() {
            let _ = waiting.send(gone());
        }
        for round in locked(&self.rounds).values() {
            let _ = round.answer.send(gone());
        }
    }

    /// `answering`'s operation ended: the host request its answer goes to, now out of
    /// flight; `None` when the host cancelled it or an input round still waits for the
    /// host's retry (nothing is sent).
    pub(super) fn finish(&self, answering: &Answering) -> Option<Value> {
        let to = locked(&answering.to).take()?;
        locked(&self.in_flight).remove(&to.to_string());
        (!answering.cancelled.load(Ordering::SeqCst)).then_some(to)
    }

    /// Asks the host `method` with `params` on behalf of the operation this thread or task
    /// runs, and waits for its answer until that operation's deadline (`budget` when none
    /// runs). `send` writes one line to the host.
    pub(super) fn ask(
        &self,
        method: &str,
        params: &Value,
        budget: Duration,
        send: impl Fn(&str),
    ) -> Result<Value, RpcError> {
        let answering = Answering::current();
        let now = Instant::now();
        let until = (answering.as_ref()).map_or(now + budget, |a| now + a.deadline.remaining(now));
        let n = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let (answer, answered) = mpsc::channel();
        let current = answering.clone();
        if answering.as_ref().is_some_and(|a| !a.wait_on(&answer)) {
            return Err(dropped(method, false));
        }
        let asked = match answering {
            Some(answering) if answering.modern => {
                let Some(id) = locked(&answering.to).take() else {
                    locked(&answering.asking).take();
                    return Err(refused(method, "the host's request was answered already"));
                };
                // Answered: until the retry, the host has nothing in flight to cancel.
                locked(&self.in_flight).remove(&id.to_string());
                let state = format!("{ROUND_PREFIX}{n}");
                let key = format!("input-{n}");
                let result = host::input_required(&key, method, params, &state);
                locked(&self.rounds).insert(
                    state.clone(),
                    Round {
                        key,
                        answer,
                        answering,
                    },
                );
                send(&host::response(&id, Ok(result)));
                Asked::Round(state)
            }
            None if self.host_modern.load(Ordering::SeqCst) => {
                return Err(refused(
                    method,
                    "the host speaks 2026-07-28, where it is asked only in an answer to one of its requests",
                ));
            }
            _ => {
                let id = format!("mcp-call-bridge-{n}");
                locked(&self.requests).insert(id.clone(), answer);
                send(&host::request_line(&id, method, params));
                Asked::Request(id)
            }
        };
        // On the tokio driver's workers the wait gives its worker's other tasks to another
        // one: the host's other requests go on while it answers this one.
        let on_workers = tokio::runtime::Handle::try_current().is_ok_and(|runtime| {
            runtime.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread
        });
        let wait = || answered.recv_timeout(until.saturating_duration_since(Instant::now()));
        let got = if on_workers {
            tokio::task::block_in_place(wait)
        } else {
            wait()
        };
        if let Some(answering) = current {
            locked(&answering.asking).take();
        }
        let host_gone = matches!(got, Ok(Answer::Dropped { host_gone: true }));
        match asked {
            Asked::Round(state) => drop(locked(&self.rounds).remove(&state)),
            Asked::Request(id) => {
                locked(&self.requests).remove(&id);
                // Nobody waits for the host's answer any more: it is told, as a server
                // cancels its own request, so that it stops asking the person.
                if !host_gone && !matches!(got, Ok(Answer::Host(_))) {
                    send(&host::cancelled_line(
                        &id,
                        "the request that asked it is over",
                    ));
                }
            }
        }
        match got {
            Ok(Answer::Host(Ok(result))) => Ok(result),
            Ok(Answer::Host(Err(error))) => Err(host::rpc_error(&error)),
            Ok(Answer::Dropped { host_gone }) => Err(dropped(method, host_gone)),
            Err(_) => Err(RpcError {
                code: host::code::TIMEOUT,
                message: format!("the host did not answer {method} within the request's budget"),
                data: None,
            }),
        }
    }

    /// The host's answer to the bridge's request `id`, to whoever waits for it (none: a late
    /// or unknown answer, dropped).
    pub(super) fn answered(&self, id: &Value, answer: Result<Value, Value>) {
        let Some(id) = id.as_str() else {
            return;
        };
        if let Some(waiting) = locked(&self.requests).remove(id) {
            let _ = waiting.send(Answer::Host(answer));
        }
    }

    /// Whether the host's request `id` with `params` retries an input round: then its
    /// `inputResponses` go to the operation waiting for them, and the operation's answer to
    /// `id`.
    pub(super) fn retry(&self, id: &Value, params: &Value) -> Retry {
        let Some(state) = params.get("requestState").and_then(Value::as_str) else {
            return Retry::No;
        };
        let Some(round) = locked(&self.rounds).remove(state) else {
            return Retry::Unknown;
        };
        if !self.begin(id, &round.answering) {
            // The host reused the id of a request still in flight: the round stays open.
            locked(&self.rounds).insert(state.to_owned(), round);
            return Retry::InFlight;
        }
        *locked(&round.answering.to) = Some(id.clone());
        let answer = match params.pointer(&format!("/inputResponses/{}", round.key)) {
            Some(answer) => Ok(answer.clone()),
            None => Err(json!({"code": host::code::INVALID_PARAMS,
                "message": "the host's retry carries no answer to the request it was asked"})),
        };
        let _ = round.answer.send(Answer::Host(answer));
        Retry::Taken
    }
}

/// The error the upstream's request gets when nobody waits for the host's answer any more.
fn dropped(method: &str, host_gone: bool) -> RpcError {
    let why = match host_gone {
        true => "the host is gone",
        false => "the host cancelled the request it was asked for",
    };
    RpcError {
        code: host::code::INTERNAL,
        message: format!("the bridge no longer asks the host {method}: {why}"),
        data: None,
    }
}

fn refused(method: &str, why: &str) -> RpcError {
    RpcError {
        code: host::code::METHOD_NOT_FOUND,
        message: format!("the bridge cannot ask the host {method}: {why}"),
        data: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_proto::{Budget, Resolution};

    fn answering(id: Value, modern: bool, budget: Duration) -> Arc<Answering> {
        let client = mcp_driver_blocking::Client::connect("http://127.0.0.1:9/mcp").unwrap();
        let deadline = OperationDeadline::start(
            Instant::now(),
            Budget::from_duration(budget),
            Resolution::MILLISECOND,
        );
        Arc::new(Answering::new(
            id,
            modern,
            deadline,
            Cancel::Blocking(client.cancel_handle()),
        ))
    }

    /// Asks the host on a thread running `answering`'s operation; the lines it sent come out
    /// of the receiver, its answer from the handle.
    fn ask_on_thread(
        asks: &Arc<Asks>,
        answering: Option<Arc<Answering>>,
    ) -> (
        mpsc::Receiver<Value>,
        std::thread::JoinHandle<Result<Value, RpcError>>,
    ) {
        let (lines, sent) = mpsc::channel();
        let asks = Arc::clone(asks);
        let thread = std::thread::spawn(move || {
            let ask = || {
                asks.ask(
                    "elicitation/create",
                    &json!({"message": "Who is there?"}),
                    Duration::from_secs(5),
                    |line| lines.send(serde_json::from_str(line).unwrap()).unwrap(),
                )
            };
            match answering {
                Some(answering) => answering.scope_thread(ask),
                None => ask(),
            }
        });
        (sent, thread)
    }

    #[test]
    fn a_modern_host_is_asked_in_an_input_round_and_its_retry_gets_the_answer() {
        let asks = Arc::new(Asks::default());
        let op = answering(json!(7), true, Duration::from_secs(5));
        assert!(asks.begin(&json!(7), &op));
        let (sent, thread) = ask_on_thread(&asks, Some(Arc::clone(&op)));
        let line = sent.recv_timeout(Duration::from_secs(5)).unwrap();
        // The host's request 7 is answered with the round.
        assert_eq!(line["id"], 7);
        let result = &line["result"];
        assert_eq!(result["resultType"], "input_required");
        let (key, request) = result["inputRequests"]
            .as_object()
            .unwrap()
            .iter()
            .next()
            .unwrap();
        assert_eq!(
            request,
            &json!({"method": "elicitation/create", "params": {"message": "Who is there?"}})
        );
        let state = result["requestState"].as_str().unwrap().to_owned();
        // Answered: request 7 is no longer in flight, and its id may be used again.
        assert!(asks.begin(
            &json!(7),
            &answering(json!(7), true, Duration::from_secs(1))
        ));
        // The retry, a new request, carries the answer under the same key.
        let retry = json!({"name": "knock", "requestState": state,
            "inputResponses": {key.as_str(): {"action": "accept", "content": {"name": "Ada"}}}});
        assert!(matches!(asks.retry(&json!(8), &retry), Retry::Taken));
        assert_eq!(
            thread.join().unwrap().unwrap(),
            json!({"action": "accept", "content": {"name": "Ada"}})
        );
        // The operation's answer goes to the retry; a second retry of the round is refused.
        assert_eq!(asks.finish(&op), Some(json!(8)));
        assert!(matches!(asks.retry(&json!(9), &retry), Retry::Unknown));
        assert!(matches!(
            asks.retry(&json!(9), &json!({"name": "x"})),
            Retry::No
        ));
    }

    #[test]
    fn an_input_round_waits_no_longer_than_the_operation_s_budget() {
        let asks = Arc::new(Asks::default());
        let op = answering(json!("a"), true, Duration::from_millis(300));
        let began = Instant::now();
        let (sent, thread) = ask_on_thread(&asks, Some(Arc::clone(&op)));
        let line = sent.recv_timeout(Duration::from_secs(5)).unwrap();
        let err = thread.join().unwrap().unwrap_err();
        // The ask's own 5 s never applies: the operation's 300 ms does.
        assert!(
            began.elapsed() < Duration::from_secs(3),
            "{:?}",
            began.elapsed()
        );
        assert_eq!(err.code, host::code::TIMEOUT);
        // The operation's end answers nothing (the host's request was answered by the
        // round), and the late retry is refused.
        assert_eq!(asks.finish(&op), None);
        let retry = json!({"requestState": line["result"]["requestState"], "inputResponses": {}});
        assert!(matches!(asks.retry(&json!("b"), &retry), Retry::Unknown));
    }

    #[test]
    fn a_legacy_host_is_sent_a_request_and_a_modern_one_never_outside_its_requests() {
        let asks = Arc::new(Asks::default());
        let (sent, thread) = ask_on_thread(&asks, None);
        let line = sent.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(line["method"], "elicitation/create");
        asks.answered(&line["id"], Ok(json!({"action": "decline"})));
        assert_eq!(
            thread.join().unwrap().unwrap(),
            json!({"action": "decline"})
        );

        asks.host_modern.store(true, Ordering::SeqCst);
        let (sent, thread) = ask_on_thread(&asks, None);
        let err = thread.join().unwrap().unwrap_err();
        assert_eq!(err.code, host::code::METHOD_NOT_FOUND);
        assert!(sent.try_recv().is_err(), "nothing reaches the host");
    }

    #[test]
    fn a_cancelled_request_is_answered_with_nothing() {
        let asks = Asks::default();
        let op = answering(json!(1), false, Duration::from_secs(5));
        assert!(asks.begin(&json!(1), &op));
        assert!(!asks.begin(&json!(1), &op), "an id in flight is refused");
        asks.cancel(&json!(1));
        assert_eq!(asks.finish(&op), None);
        assert!(asks.begin(&json!(1), &op), "out of flight once ended");
    }

    #[test]
    fn a_cancel_or_the_host_s_end_ends_the_wait_and_the_host_is_told() {
        let asks = Arc::new(Asks::default());
        let op = answering(json!(4), false, Duration::from_secs(30));
        assert!(asks.begin(&json!(4), &op));
        let began = Instant::now();
        let (sent, thread) = ask_on_thread(&asks, Some(Arc::clone(&op)));
        let asked = sent.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(asked["method"], "elicitation/create");
        // The host cancels the request that asked: the wait ends, not the 30 s budget.
        asks.cancel(&json!(4));
        let err = thread.join().unwrap().unwrap_err();
        assert!(
            began.elapsed() < Duration::from_secs(10),
            "{:?}",
            began.elapsed()
        );
        assert_eq!(err.code, host::code::INTERNAL);
        let told = sent.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(told["method"], "notifications/cancelled");
        assert_eq!(told["params"]["requestId"], asked["id"]);

        // The host gone: a wait outside its requests (the watcher's) ends too, unannounced.
        let (sent, thread) = ask_on_thread(&asks, None);
        sent.recv_timeout(Duration::from_secs(5)).unwrap();
        asks.cancel_all();
        assert!(thread.join().unwrap().is_err());
        assert!(sent.try_recv().is_err(), "nothing more is written");
    }
}
