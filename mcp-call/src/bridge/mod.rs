//! `mcp-call bridge`: a stdio MCP server for a host that only starts local servers (a desktop
//! app), in front of whichever server `mcp-call` reaches. Each host request is one operation on
//! the upstream under its own budget (`--timeout`), opened when the request arrives: every leg
//! under it (the handshake, pages, OAuth refresh, era fallback, a task's polls), and a spent
//! budget answers the host with an error that names the budget and the server before the host
//! gives up. Host requests run side by side on the one upstream session; the host's
//! `notifications/cancelled` cancels its operation (and no answer follows, as the protocol
//! says); the upstream's progress reaches the host under the host's token; the upstream's
//! requests (elicitation, sampling, roots) are asked of the host when it declared it answers
//! them (`ask`: a request to a legacy host, an input round for a modern one). The list changes
//! and the resources the host subscribed to are listened for between its requests (`watch`),
//! and a modern host's own subscriptions get what they asked for (`listen`). The tools
//! `--tool`/`--ignore-tool` hide are left out of the host's `tools/list`, and its `tools/call`
//! of one is refused here, the upstream never asked.
//! EOF on stdin (or SIGINT, SIGTERM, SIGHUP) cancels what is in
//! flight and closes the upstream session within the close's grant; a local upstream's whole
//! process tree with it.
//!
//! What each line means and what each outcome answers is `host`'s; this module moves lines
//! and runs operations. It must never write anything but whole MCP messages to stdout (logs and
//! `--trace` go to stderr), and never leave an operation running once the host is gone.

mod ask;
mod host;
mod listen;
mod watch;

use std::io::{BufRead, Write};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use mcp_proto::request::{OneRequest, SubscribeResource, UnsubscribeResource};
use mcp_proto::{Action, Error, Observer, Outcome, RpcError, SessionConfig};
use serde_json::Value;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use crate::driver::{Cancel, Client};
use crate::filter::ToolFilter;
use crate::report::Reporter;
use ask::{Answering, Asks, Retry};
use host::{FromHost, HostAnswers, Plan};
use listen::Listens;
use watch::{After, Waiter, Watch};

/// The longest line read from the host (a request is small; a host that sends more is
/// answered with an error, and the line skipped).
const LINE_LIMIT: usize = 16 * 1024 * 1024;

/// Serves the host on stdin and stdout until stdin ends. The client is made by `build` from
/// `config` when the host's first request comes (its handshake says which of the upstream's
/// requests it answers, and so what the upstream is told the client can do). `label` names the
/// upstream in errors; `sentence` says what went wrong in one sentence, as every command does.
/// `tools` says which of the upstream's tools the host sees and may call.
pub(crate) fn serve(
    config: SessionConfig,
    build: impl FnOnce(SessionConfig, Reporter) -> Result<Client, String>,
    label: &str,
    sentence: fn(&Error, &str) -> String,
    reporter: Reporter,
    login: Option<mcp_proto::Budget>,
    tools: ToolFilter,
) -> u8 {
    let (inbox, mut inputs) = unbounded_channel();
    let (budget, local) = (config.budget().as_duration(), config.is_stdio());
    let bridge = Bridge::new(
        label,
        sentence,
        budget,
        local,
        reporter.clone(),
        inbox.clone(),
        tools,
    );
    read_stdin(Arc::clone(&bridge), inbox.clone());
    // Ctrl-C at a terminal, or the host's SIGTERM or SIGHUP: the end of the host, as EOF is.
    // A local upstream runs in a process group of its own, so the terminal's Ctrl-C does not
    // reach it: the bridge ends it (what is in flight cancelled, the upstream closed within
    // the close's grant) before it exits. Unhandled, the signal would end the bridge at once
    // and leave a local upstream that ignores the end of its input running.
    let _ = ctrlc::set_handler(move || {
        let _ = inbox.send(Input::Eof);
    });
    // Until the host's first request: what it sends before is answered here, or dropped.
    let first = loop {
        match inputs.blocking_recv() {
            Some(Input::Message(FromHost::Request { id, method, params })) => {
                break (id, method, params);
            }
            Some(Input::Message(message)) => {
                let _ = bridge.dispatch(message);
            }
            Some(Input::TooLong) => too_long(&bridge),
            Some(Input::Rewatch | Input::Run(_)) => {}
            Some(Input::Eof) | None => return crate::code::OK,
        }
    };
    // What the host answers, from its handshake or (2026-07-28) its first request's `_meta`.
    let answers = HostAnswers::declared(&first.2);
    let modern = first.1 == "server/discover" || host::is_modern(&first.2);
    bridge.asks.host_modern.store(modern, Ordering::SeqCst);
    let mut client = match build(bridge.answering(config, answers), reporter) {
        Ok(client) => client,
        Err(message) => {
            eprintln!("mcp-call: {message}");
            return crate::code::USAGE;
        }
    };
    // `--login`: the server is asked once under the login's budget, so that a person can
    // approve in the browser (the URL is on stderr) before the host's request is answered.
    if let Some(budget) = login {
        match client.run_under(Action::Probe, budget) {
            Ok(_) => eprintln!("mcp-call bridge: {label} answers; serving the host"),
            Err(err) => eprintln!("mcp-call bridge: {}", sentence(&err, label)),
        }
    }
    let first = FromHost::Request {
        id: first.0,
        method: first.1,
        params: first.2,
    };
    serve_loop(&bridge, client, first, inputs);
    crate::code::OK
}

/// What the runner's threads and tasks share.
struct Bridge {
    label: String,
    reporter: Reporter,
    sentence: fn(&Error, &str) -> String,
    /// Each request's budget: the longest the host is waited for when it is asked.
    budget: Duration,
    /// Held while a line is written, so lines from parallel operations never interleave.
    out: Mutex<()>,
    /// The host's requests in flight, and what the bridge asked the host (the upstream's
    /// requests, relayed) and waits for.
    asks: Asks,
    /// The dispatcher's inbox, for what the bridge itself decides (the list changes to watch).
    inbox: UnboundedSender<Input>,
    /// What the bridge listens for between the host's requests.
    watch: Watch,
    /// A modern host's subscriptions.
    listens: Listens,
    /// Numbers the operations the bridge runs for itself (a resource a modern host's
    /// subscription names, subscribed to on a legacy upstream).
    next_silent: std::sync::atomic::AtomicU64,
    /// The upstream offers resource subscriptions: the host's are relayed.
    subscribable: std::sync::atomic::AtomicBool,
    /// Whether the host answers any of the upstream's requests.
    host_answers: std::sync::atomic::AtomicBool,
    /// The tools the host sees and may call.
    tools: ToolFilter,
}

/// An operation a host request runs, and what its outcome answers.
struct Job {
    id: Value,
    action: Action,
    /// The handshake: the probe's outcome answers in this version.
    initialize: Option<&'static str>,
    /// A modern host's `server/discover`: the probe's outcome answers it.
    discover: bool,
    /// The host speaks the modern era in this request: the result carries `resultType`.
    modern: bool,
    /// The token the host asked progress under: the upstream's progress goes to it.
    progress: Option<Value>,
    /// A legacy upstream's `resources/subscribe` (true) or `resources/unsubscribe` of this
    /// URI, and who waits for it: once taken, the watcher's filter changes. For a host's
    /// subscription (`Waiter::Listen`) the operation answers no request of the host's.
    subscribes: Option<(String, bool, Waiter)>,
}

impl Job {
    /// The same, a legacy upstream's `resources/subscribe` or `resources/unsubscribe`.
    fn subscribing(mut self, subscribes: (String, bool, Waiter)) -> Self {
        self.subscribes = Some(subscribes);
        self
    }
}

/// What one host request's operation reports to: `--trace` and the rest of what every
/// command shows (the reporter), and the upstream's progress, relayed to the host under its
/// token when it asked for it.
struct Relay {
    reporter: Reporter,
    bridge: Arc<Bridge>,
    progress: Option<Value>,
    /// The watcher's: its acknowledgments answer the host's subscriptions.
    watcher: bool,
}

impl Observer for Relay {
    fn leg_finished(&mut self, report: &mcp_proto::LegReport) {
        self.reporter.leg_finished(report);
    }

    fn event(&mut self, event: &mcp_proto::Event) {
        self.reporter.event(event);
        let mcp_proto::Event::Notification(notification) = event else {
            return;
        };
        let (method, params) = (&notification.method, &notification.params);
        // A modern host hears only what one of its subscriptions asked for, on it.
        if self.bridge.asks.host_modern.load(Ordering::SeqCst) {
            for line in self.bridge.listens.lines(method, params) {
                self.bridge.send(&line);
            }
        } else {
            // A list's change, whichever operation's stream it came on.
            if let Some(line) = host::list_changed_line(method) {
                self.bridge.send(&line);
            }
            // An update of a resource the host subscribed to.
            if let Some((uri, line)) = host::resource_updated(method, params)
                && self.bridge.watch.is_subscribed(&uri)
            {
                self.bridge.send(&line);
            }
        }
        // A modern upstream took the watcher's subscription: the host's wait for it is over.
        if self.watcher && notification.method == "notifications/subscriptions/acknowledged" {
            let acknowledged = params.get("notifications").unwrap_or(&Value::Null);
            let granted = mcp_proto::Subscription::from_filter(acknowledged);
            let answered = self
                .bridge
                .watch
                .acknowledged(&granted.resource_subscriptions);
            self.bridge.answer_subscriptions(answered);
            // The host's subscriptions that waited for the upstream to listen.
            for line in self.bridge.listens.unheard_settled(true) {
                self.bridge.send(&line);
            }
        }
        if let (Some(token), Some(_)) = (&self.progress, notification.progress()) {
            self.bridge
                .send(&host::progress_line(token, &notification.params));
        }
    }
}

/// What the dispatcher got from the stdin thread (the host's answers to the bridge's own
/// requests are taken there, and never come here).
enum Input {
    Message(FromHost),
    /// What the bridge listens for changed (the upstream's handshake was answered, the host
    /// subscribed), or the last host request on a local upstream ended: the watcher starts
    /// if it should and does not run.
    Rewatch,
    /// An operation the bridge runs for itself.
    Run(Box<Job>),
    /// A line longer than [`LINE_LIMIT`], skipped.
    TooLong,
    Eof,
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Bridge {
    /// The bridge before the host's first request: `budget` is each request's, `local` says
    /// the upstream is (its watcher yields to the host's requests); what the bridge decides
    /// itself goes to `inbox`.
    fn new(
        label: &str,
        sentence: fn(&Error, &str) -> String,
        budget: Duration,
        local: bool,
        reporter: Reporter,
        inbox: UnboundedSender<Input>,
        tools: ToolFilter,
    ) -> Arc<Self> {
        Arc::new(Self {
            label: label.to_owned(),
            reporter,
            sentence,
            budget,
            out: Mutex::new(()),
            asks: Asks::default(),
            inbox,
            watch: Watch::new(local),
            listens: Listens::default(),
            next_silent: std::sync::atomic::AtomicU64::new(1),
            subscribable: std::sync::atomic::AtomicBool::new(false),
            host_answers: std::sync::atomic::AtomicBool::new(false),
            tools,
        })
    }

    /// Writes one message to the host, flushed.
    fn send(&self, line: &str) {
        let _turn = locked(&self.out);
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{line}").and_then(|()| stdout.flush());
    }

    /// `config`, answering the upstream's requests the host answers, by asking it. The
    /// session's standalone stream is opened too: servers send such requests outside any
    /// answer as well.
    fn answering(
        self: &Arc<Self>,
        mut config: SessionConfig,
        answers: HostAnswers,
    ) -> SessionConfig {
        for method in answers.methods() {
            let bridge = Arc::clone(self);
            config = config.respond_to(method, move |params| bridge.ask_host(method, params));
        }
        // The upstream's requests outside any answer come on the session's standalone stream,
        // which the watcher holds (one GET for the session, not one beside each operation).
        self.host_answers
            .store(answers.methods().next().is_some(), Ordering::SeqCst);
        config.with_url_elicitation(answers.url_elicitation)
    }

    /// Asks the host `method` with `params` (an upstream's request, relayed) and waits for
    /// its answer, until the end of the operation's budget at most.
    fn ask_host(&self, method: &str, params: &Value) -> Result<Value, RpcError> {
        (self.asks).ask(method, params, self.budget, |line| self.send(line))
    }

    /// What `message` asks for: answered here at once, or a job to run.
    fn dispatch(&self, message: FromHost) -> Option<Job> {
        match message {
            FromHost::Request { id, method, params } => {
                // The retry of an input round: the operation that asked goes on.
                match self.asks.retry(&id, &params) {
                    Retry::No => {}
                    Retry::Taken => return None,
                    Retry::InFlight => {
                        self.in_flight_already(&id);
                        return None;
                    }
                    Retry::Unknown => {
                        let message = "Invalid params: the requestState names no input round \
                            of this bridge (its request's budget ended)";
                        let error = host::refusal(host::code::INVALID_PARAMS, message);
                        self.send(&host::response(&id, Err(error)));
                        return None;
                    }
                }
                let progress = host::progress_token(&params);
                let modern = host::is_modern(&params);
                let job = |action, initialize, discover| Job {
                    id: id.clone(),
                    action,
                    initialize,
                    discover,
                    modern,
                    progress,
                    subscribes: None,
                };
                match host::plan(&method, &params) {
                    Plan::Answer(result) => {
                        let result = host::in_era(result, modern);
                        self.send(&host::response(&id, Ok(result)));
                    }
                    Plan::Refuse { code, message } => {
                        self.send(&host::response(&id, Err(host::refusal(code, &message))));
                    }
                    Plan::Initialize { version } => {
                        return Some(job(Action::Probe, Some(version), false));
                    }
                    Plan::Discover => return Some(job(Action::Probe, None, true)),
                    Plan::Listen { filter } => self.listen(&id, &filter, modern),
                    Plan::Subscribe { uri, on } => {
                        let waiter = Waiter::Request {
                            id: id.clone(),
                            modern,
                        };
                        let subscription = self.subscribe(&method, uri, on, waiter)?;
                        return Some(job(subscription.0, None, false).subscribing(subscription.1));
                    }
                    Plan::Forward(action) => {
                        // A hidden tool's call is refused here: the upstream is not asked.
                        let hidden = match &action {
                            Action::CallTool { name, .. } => {
                                (self.tools.hides(name)).map(|why| host::filtered(name, &why))
                            }
                            _ => None,
                        };
                        match hidden {
                            Some(error) => self.send(&host::response(&id, Err(error))),
                            None => return Some(job(action, None, false)),
                        }
                    }
                }
            }
            FromHost::Cancelled { request_id } => {
                self.asks.cancel(&request_id);
                self.listens.close(&request_id);
            }
            FromHost::Invalid { id, code, message } => {
                self.send(&host::response(&id, Err(host::refusal(code, &message))));
            }
            FromHost::Response { id, answer } => self.asks.answered(&id, answer),
            FromHost::Notification { .. } => {}
        }
        None
    }

    /// Registers `job`'s operation, with the cancel of the client clone it runs on and the
    /// deadline it runs under, unless a request with its id is still running (the host broke
    /// the protocol: this one is refused, the first goes on).
    fn begin(
        &self,
        job: &Job,
        cancel: Cancel,
        deadline: mcp_proto::OperationDeadline,
    ) -> Option<Arc<Answering>> {
        let answering = Arc::new(Answering::new(job.id.clone(), job.modern, deadline, cancel));
        if !self.asks.begin(&job.id, &answering) {
            self.in_flight_already(&job.id);
            return None;
        }
        Some(answering)
    }

    fn in_flight_already(&self, id: &Value) {
        let message = format!("Invalid Request: request {id} is already in flight");
        let error = host::refusal(host::code::INVALID_REQUEST, &message);
        self.send(&host::response(id, Err(error)));
    }

    /// The observer of `job`'s operation (`watcher`: the watcher's).
    fn relay(self: &Arc<Self>, progress: Option<Value>, watcher: bool) -> Relay {
        Relay {
            reporter: self.reporter.clone(),
            bridge: Arc::clone(self),
            progress,
            watcher,
        }
    }

    /// Answers the host's subscriptions a modern upstream took (or left out, or failed to).
    fn answer_subscriptions(&self, answered: Vec<(watch::Pending, bool)>) {
        for (pending, taken) in answered {
            self.subscription_settled(&pending.waiter, &pending.uri, taken);
        }
    }

    /// The upstream took (or refused) the subscription to `uri` `waiter` waits for: the
    /// host's request is answered, or its subscription acknowledged once nothing is left.
    fn subscription_settled(&self, waiter: &Waiter, uri: &str, taken: bool) {
        match waiter {
            Waiter::Request { id, modern } => {
                let answer = match taken {
                    true => Ok(host::in_era(serde_json::json!({}), *modern)),
                    false => {
                        let message = format!(
                            "the upstream {} did not take the subscription to {uri}",
                            self.label
                        );
                        Err(host::refusal(host::code::INTERNAL, &message))
                    }
                };
                self.send(&host::response(id, answer));
            }
            Waiter::Listen { id } => {
                if let Some(line) = self.listens.settled(id, uri, taken) {
                    self.send(&line);
                }
            }
        }
    }

    /// The host's `resources/subscribe` (`on`) or `resources/unsubscribe` of `uri`, which
    /// `waiter` is: for a legacy upstream, the operation that sends it and what it subscribes
    /// (its answer answers the host); for a modern one, `None`: the watcher's next
    /// subscription is told, and the host answered at its acknowledgment (at once for an end).
    fn subscribe(
        &self,
        method: &str,
        uri: String,
        on: bool,
        waiter: Waiter,
    ) -> Option<(Action, (String, bool, Waiter))> {
        let Waiter::Request { id, modern } = &waiter else {
            return None;
        };
        if !self.subscribable.load(Ordering::SeqCst) {
            let message = format!(
                "Method not found: {method} (the upstream offers no resource subscriptions)"
            );
            let error = host::refusal(host::code::METHOD_NOT_FOUND, &message);
            self.send(&host::response(id, Err(error)));
            return None;
        }
        if !self.watch.upstream_modern() {
            let request = match on {
                true => OneRequest::new(&SubscribeResource { uri: uri.clone() }),
                false => OneRequest::new(&UnsubscribeResource { uri: uri.clone() }),
            };
            return Some((Action::Request(request), (uri, on, waiter)));
        }
        let (id, modern) = (id.clone(), *modern);
        let start = match on {
            true => self.watch.subscribe_pending(&uri, waiter),
            false => self.watch.resource(&uri, false),
        };
        if start {
            let _ = self.inbox.send(Input::Rewatch);
        }
        if !on {
            let answer = host::in_era(serde_json::json!({}), modern);
            self.send(&host::response(&id, Ok(answer)));
        }
        None
    }

    /// The watcher's subscription of `generation` ended (`failed`: with an error) after
    /// `lasted`: the host's subscriptions it failed to take are refused, and what the watcher
    /// does next. When it gives up, the host's subscriptions that waited for the upstream to
    /// listen are acknowledged without what it would have sent.
    fn watched(
        &self,
        generation: u64,
        failed: bool,
        lasted: Duration,
        failures: &mut u32,
    ) -> After {
        let (counts, refused) = self.watch.ended(generation, failed);
        self.answer_subscriptions(refused);
        if !counts {
            return After::Next;
        }
        let after = watch::after(failed, lasted, failures);
        if after == After::Stop {
            self.answer_subscriptions(self.watch.gave_up());
            for line in self.listens.unheard_settled(false) {
                self.send(&line);
            }
        }
        after
    }

    /// A modern host's `subscriptions/listen` `id` asking for `filter`: acknowledged at once,
    /// or once the upstream took the resources it names (a legacy upstream is sent
    /// `resources/subscribe` for each, by operations of the bridge's own).
    fn listen(&self, id: &Value, filter: &mcp_proto::Subscription, modern: bool) {
        let subscribable = self.subscribable.load(Ordering::SeqCst);
        let declared = self.watch.declared();
        let heard = self.watch.is_heard();
        let opened = (self.listens).open(
            id,
            filter,
            &declared,
            subscribable,
            |uri| self.watch.is_subscribed(uri),
            heard,
        );
        if let Some(line) = opened.acknowledged {
            self.send(&line);
        }
        for uri in opened.subscribe {
            let waiter = Waiter::Listen { id: id.clone() };
            if self.watch.upstream_modern() {
                if self.watch.subscribe_pending(&uri, waiter) {
                    let _ = self.inbox.send(Input::Rewatch);
                }
                continue;
            }
            let n = self.next_silent.fetch_add(1, Ordering::Relaxed);
            let request = OneRequest::new(&SubscribeResource { uri: uri.clone() });
            let job = Job {
                id: Value::from(format!("mcp-call-bridge-subscribe-{n}")),
                action: Action::Request(request),
                initialize: None,
                discover: false,
                modern,
                progress: None,
                subscribes: Some((uri, true, waiter)),
            };
            let _ = self.inbox.send(Input::Run(Box::new(job)));
        }
    }

    /// The job's operation ended with `outcome`: its answer goes to the host request it
    /// answers (the host's retry after an input round), unless the host cancelled it.
    fn finish(&self, job: &Job, answering: &Answering, outcome: Result<Outcome, Error>, sse: bool) {
        // A legacy upstream took the host's subscription (or its end): the filter follows,
        // before the host hears of it.
        if let (Ok(_), Some((uri, on, _))) = (&outcome, &job.subscribes)
            && self.watch.resource(uri, *on)
        {
            let _ = self.inbox.send(Input::Rewatch);
        }
        let to = self.asks.finish(answering);
        // The last host request on a local upstream ended: the watcher listens again.
        if self.watch.local && self.asks.is_idle() && self.watch.idle() {
            let _ = self.inbox.send(Input::Rewatch);
        }
        // A host's subscription waited for this one: it is told, and no request answered.
        if let Some((uri, _, waiter @ Waiter::Listen { .. })) = &job.subscribes {
            self.subscription_settled(waiter, uri, outcome.is_ok());
            return;
        }
        let Some(to) = to else {
            return;
        };
        let deadline = answering.deadline();
        if let (Ok(Outcome::Probe(info)), true) =
            (&outcome, job.initialize.is_some() || job.discover)
        {
            // A legacy session's standalone stream also carries the requests the upstream
            // sends outside any answer: it is held when the host answers them.
            let legacy = !info.protocol_version.is_modern();
            let hold = legacy && self.host_answers.load(Ordering::SeqCst);
            let changes = host::list_changes(&info.capabilities).unwrap_or_default();
            // Over HTTP+SSE nothing is listened for between the host's requests.
            let subscribable = host::subscribable(&info.capabilities) && !sse;
            self.subscribable.store(subscribable, Ordering::SeqCst);
            if self.watch.declare(changes, hold, !legacy) {
                let _ = self.inbox.send(Input::Rewatch);
            }
        }
        // Over HTTP+SSE the host is not offered resource subscriptions (see `subscribable`).
        let outcome = outcome.map(|outcome| match outcome {
            Outcome::Probe(mut info) if sse => {
                let resources = info.capabilities.get_mut("resources");
                if let Some(resources) = resources.and_then(Value::as_object_mut) {
                    resources.remove("subscribe");
                }
                Outcome::Probe(info)
            }
            outcome => outcome,
        });
        let answer = match (outcome, job.initialize) {
            (Ok(Outcome::Probe(info)), Some(version)) => {
                Ok(host::initialize_result(&info, version))
            }
            (Ok(Outcome::Probe(info)), None) if job.discover => Ok(host::discover_result(&info)),
            (Ok(Outcome::Tools(tools)), _) => {
                let visible = Outcome::Tools(self.tools.visible(tools));
                Ok(host::result_of(visible, job.modern))
            }
            (Ok(outcome), _) => Ok(host::result_of(outcome, job.modern)),
            (Err(err), _) => {
                let sentence = (self.sentence)(&err, &self.label);
                let spent = deadline.is_exhausted(std::time::Instant::now());
                let budget = spent.then(|| deadline.total());
                Err(host::error_of(&err, sentence, &self.label, budget))
            }
        };
        self.send(&host::response(&to, answer));
    }

    /// The host is gone: every operation still running is cancelled (nobody reads its answer).
    fn cancel_all(&self) {
        self.watch.stop();
        self.asks.cancel_all();
    }
}

/// Reads the host's lines on a thread of its own. The host's answers to the bridge's own
/// requests go straight to whoever waits for them (an operation may be blocked on one); the
/// rest come out of the receiver, then `Eof`.
fn read_stdin(bridge: Arc<Bridge>, inputs: UnboundedSender<Input>) {
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut line = Vec::new();
        loop {
            line.clear();
            let read =
                std::io::Read::take(&mut stdin, LINE_LIMIT as u64 + 1).read_until(b'\n', &mut line);
            let input = match read {
                Ok(0) | Err(_) => break,
                Ok(_) if line.len() > LINE_LIMIT && line.last() != Some(&b'\n') => {
                    // Skip the rest of the line.
                    let mut rest = Vec::new();
                    if !matches!(stdin.read_until(b'\n', &mut rest), Ok(n) if n > 0) {
                        break;
                    }
                    Input::TooLong
                }
                Ok(_) => match host::read(&line) {
                    Some(FromHost::Response { id, answer }) => {
                        bridge.asks.answered(&id, answer);
                        continue;
                    }
                    Some(message) => Input::Message(message),
                    None => continue,
                },
            };
            if inputs.send(input).is_err() {
                return;
            }
        }
        let _ = inputs.send(Input::Eof);
    });
}

fn too_long(bridge: &Bridge) {
    let message = format!("Invalid Request: a line longer than {LINE_LIMIT} bytes");
    let error = host::refusal(host::code::INVALID_REQUEST, &message);
    bridge.send(&host::response(&Value::Null, Err(error)));
}

/// Dispatches the host's messages until it is gone, then cancels what still runs, waits for
/// it and closes the upstream: the one serve loop over both drivers. Each host request (and the
/// list changes' watcher) runs on a clone of the client with its own cancel and observer, on
/// a thread of its own (blocking driver) or a task on the runtime's workers (tokio driver).
fn serve_loop(bridge: &Arc<Bridge>, client: Client, first: FromHost, mut inputs: Inputs) {
    let mut running = Vec::new();
    let mut next = Some(Input::Message(first));
    while let Some(input) = next.take().or_else(|| inputs.blocking_recv()) {
        let started = match input {
            Input::Message(message) => match bridge.dispatch(message) {
                Some(job) => run(&client, bridge, job),
                None => None,
            },
            Input::TooLong => {
                too_long(bridge);
                None
            }
            Input::Rewatch => watch(&client, bridge),
            Input::Run(job) => run(&client, bridge, *job),
            Input::Eof => break,
        };
        running.extend(started);
        running.retain(|work: &Running| !work.is_finished());
    }
    bridge.cancel_all();
    match client {
        Client::Blocking(client) => {
            for work in running {
                if let Running::Thread(thread) = work {
                    let _ = thread.join();
                }
            }
            let _ = client.close();
        }
        Client::Tokio(runtime, client) => runtime.block_on(async {
            for work in running {
                if let Running::Task(task) = work {
                    let _ = task.await;
                }
            }
            let _ = client.close().await;
        }),
    }
}

/// The host's messages, as the stdin reader and the bridge itself send them.
type Inputs = UnboundedReceiver<Input>;

/// An operation under way for the host: on a thread of its own, or a task on the runtime.
enum Running {
    Thread(std::thread::JoinHandle<()>),
    Task(tokio::task::JoinHandle<()>),
}

impl Running {
    fn is_finished(&self) -> bool {
        match self {
            Self::Thread(thread) => thread.is_finished(),
            Self::Task(task) => task.is_finished(),
        }
    }
}

/// Starts `job`'s operation on a clone of the client (its own cancel, its own observer),
/// unless a request with its id runs already; it answers the host when it ends. The clone is
/// the request's alone, so the host's cancel (or its end) cancels it for good: from the
/// moment the request is registered, before the thread or task has begun the operation (it
/// may wait for the watcher to let go of a local upstream first) as well as after.
fn run(client: &Client, bridge: &Arc<Bridge>, job: Job) -> Option<Running> {
    let relay = bridge.relay(job.progress.clone(), false);
    let bridge = Arc::clone(bridge);
    match client {
        Client::Blocking(client) => {
            let worker = client.with_observer(relay);
            let deadline = worker.open_deadline();
            let answering =
                bridge.begin(&job, Cancel::Blocking(worker.cancel_handle()), deadline)?;
            Some(Running::Thread(std::thread::spawn(move || {
                // A local upstream's stdout is the watcher's until it has ended.
                bridge.watch.wait_turn(deadline.end());
                let outcome =
                    answering.scope_thread(|| worker.run_within(job.action.clone(), deadline));
                // What a handshake relays depends on the transport it found.
                let probe = job.initialize.is_some() || job.discover;
                let sse = probe && worker.session().speaks_sse();
                bridge.finish(&job, &answering, outcome, sse);
            })))
        }
        Client::Tokio(runtime, client) => {
            let worker = client.with_observer(relay);
            let deadline = worker.open_deadline();
            let answering = bridge.begin(&job, Cancel::Tokio(worker.cancel_handle()), deadline)?;
            Some(Running::Task(runtime.spawn(async move {
                // A local upstream's stdout is the watcher's until it has ended.
                bridge.watch.wait_turn_async(deadline.end()).await;
                let operation = worker.run_within(job.action.clone(), deadline);
                let outcome = Arc::clone(&answering).scope_task(operation).await;
                let probe = job.initialize.is_some() || job.discover;
                let sse = probe && worker.session().speaks_sse();
                bridge.finish(&job, &answering, outcome, sse);
            })))
        }
    }
}

/// Starts the watcher (one at most, see `watch`): subscriptions one after another, each
/// under a budget of its own, until the host is gone, nothing is wanted, a host request runs
/// on a local upstream, or they keep failing. Each subscription runs on a clone of its own,
/// cancelled for good (see [`watch::Watch::next`]): the host's end, or a change of what is
/// wanted, may come before it has begun.
///
/// Not over HTTP+SSE: its one stream carries everything, and a subscription would hold it (the
/// operations on such a session take turns) for its whole budget, keeping the host's requests
/// waiting. What the upstream sends between them is read with the next one.
fn watch(client: &Client, bridge: &Arc<Bridge>) -> Option<Running> {
    let relay = bridge.relay(None, true);
    let bridge = Arc::clone(bridge);
    let sse = match client {
        Client::Blocking(client) => client.session().speaks_sse(),
        Client::Tokio(_, client) => client.session().speaks_sse(),
    };
    if sse || !bridge.watch.start() {
        return None;
    }
    let busy = {
        let bridge = Arc::clone(&bridge);
        move || !bridge.asks.is_idle()
    };
    match client {
        Client::Blocking(client) => {
            let worker = client.with_observer(relay);
            Some(Running::Thread(std::thread::spawn(move || {
                let mut failures = 0;
                loop {
                    let subscriber = worker.clone();
                    let cancel = Cancel::Blocking(subscriber.cancel_handle());
                    let Some((subscription, generation)) = bridge.watch.next(&cancel, &busy) else {
                        return;
                    };
                    let began = std::time::Instant::now();
                    let action = Action::Subscribe(subscription);
                    let ended = subscriber.run_within(action, subscriber.open_deadline());
                    let lasted = began.elapsed();
                    match bridge.watched(generation, ended.is_err(), lasted, &mut failures) {
                        After::Next => {}
                        After::Pause => std::thread::sleep(watch::PAUSE),
                        After::Stop => return,
                    }
                }
            })))
        }
        Client::Tokio(runtime, client) => {
            let worker = client.with_observer(relay);
            Some(Running::Task(runtime.spawn(async move {
                let mut failures = 0;
                loop {
                    let subscriber = worker.clone();
                    let cancel = Cancel::Tokio(subscriber.cancel_handle());
                    let Some((subscription, generation)) = bridge.watch.next(&cancel, &busy) else {
                        return;
                    };
                    let began = std::time::Instant::now();
                    let action = Action::Subscribe(subscription);
                    let ended = subscriber
                        .run_within(action, subscriber.open_deadline())
                        .await;
                    let lasted = began.elapsed();
                    match bridge.watched(generation, ended.is_err(), lasted, &mut failures) {
                        After::Next => {}
                        After::Pause => tokio::time::sleep(watch::PAUSE).await,
                        After::Stop => return,
                    }
                }
            })))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use mcp_driver_common::network::Network;
    use mcp_proto::{Budget, Resolution, Subscription};
    use mcp_testkit::{Hostile, Script, TestServer};
    use serde_json::json;

    use super::*;
    use crate::driver::{DriverKind, Threads};

    /// How the host lets go of its request.
    #[derive(Debug, Clone, Copy)]
    enum LetGo {
        /// `notifications/cancelled` naming it.
        Cancelled,
        /// EOF on stdin, SIGTERM: the host is gone.
        Gone,
    }

    /// The window the bridge once lost a cancel in, held open for certain: on a local upstream
    /// a host request's operation begins only once the watcher's subscription has ended. The
    /// host lets go of the request while the watcher still holds the upstream; once the
    /// watcher lets go, the operation ends at once, having sent nothing (the upstream holds
    /// every call: a cancel lost would show as the request's whole budget).
    fn a_request_let_go_before_its_operation_began_ends_at_once_unsent(
        kind: DriverKind,
        let_go: LetGo,
    ) {
        let server = TestServer::start(Script::new().hostile("tools/call", Hostile::Stall));
        let budget = Duration::from_secs(30);
        let config = SessionConfig::new(&server.url())
            .unwrap()
            .with_budget(Budget::from_duration(budget))
            .with_resolution(Resolution::MILLISECOND);
        let reporter = Reporter::new(false, None, false, config.budget());
        let network = Network::default();
        let client = Client::with_threads(
            kind,
            config.clone(),
            &network,
            reporter.clone(),
            Threads::Workers,
        )
        .unwrap();
        let (inbox, _inputs) = unbounded_channel();
        let sentence = |err: &Error, _: &str| err.to_string();
        // Said to be local (the watcher's yield is all that differs): the watcher holds the
        // upstream under a cancel of its own.
        let tools = ToolFilter::default();
        let bridge = Bridge::new("test", sentence, budget, true, reporter, inbox, tools);
        assert!(bridge.watch.declare(Subscription::default(), true, false));
        assert!(bridge.watch.start());
        let watcher = mcp_driver_blocking::Client::connect("http://127.0.0.1:9/mcp").unwrap();
        let watcher = Cancel::Blocking(watcher.cancel_handle());
        let (_, generation) = bridge.watch.next(&watcher, || false).unwrap();

        let call = FromHost::Request {
            id: json!(7),
            method: "tools/call".into(),
            params: json!({"name": "echo", "arguments": {"text": "x"}}),
        };
        let job = bridge.dispatch(call).expect("a call to run");
        let running = run(&client, &bridge, job).expect("registered");
        match let_go {
            LetGo::Cancelled => {
                let _ = bridge.dispatch(FromHost::Cancelled {
                    request_id: json!(7),
                });
            }
            LetGo::Gone => bridge.cancel_all(),
        }
        let released = Instant::now();
        bridge.watch.ended(generation, false);
        match (running, &client) {
            (Running::Thread(thread), _) => thread.join().unwrap(),
            (Running::Task(task), Client::Tokio(runtime, _)) => runtime.block_on(task).unwrap(),
            (Running::Task(_), Client::Blocking(_)) => unreachable!("a task on the tokio driver"),
        }
        let took = released.elapsed();
        assert!(
            took < budget / 3,
            "{kind:?} {let_go:?}: {took:?} of {budget:?}"
        );
        assert!(
            server.rpc_methods().is_empty(),
            "{:?}",
            server.rpc_methods()
        );
        assert!(bridge.asks.is_idle());
    }

    #[test]
    fn a_request_the_host_cancelled_before_its_operation_began_ends_at_once_unsent() {
        for kind in [DriverKind::Blocking, DriverKind::Tokio] {
            a_request_let_go_before_its_operation_began_ends_at_once_unsent(kind, LetGo::Cancelled);
        }
    }

    #[test]
    fn a_request_whose_host_went_before_its_operation_began_ends_at_once_unsent() {
        for kind in [DriverKind::Blocking, DriverKind::Tokio] {
            a_request_let_go_before_its_operation_began_ends_at_once_unsent(kind, LetGo::Gone);
        }
    }
}
