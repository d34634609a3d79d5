//! The client: a session with one server and the loop that drives its operations.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use mcp_proto::{
    Action, Budget, CallToolResult, Clock, Error, GetPromptResult, Input, ListKind, Listing,
    Observer, OperationDeadline, Outcome, Output, Prompt, ReadResourceResult, Resource,
    ResourceTemplate, Session, SessionConfig, SessionInfo, Tool,
};
use serde_json::{Map, Value};
use tokio::sync::Notify;
use tokio::sync::futures::Notified;
use tokio::time::Instant as TokioInstant;

use crate::Network;
use crate::authorize::{Authorizer, OsEntropy};
use crate::cancel::{CancelHandle, CancelShared};
use crate::clock::TokioClock;
use crate::leg::{self, Handshakes, Http, InFlight};
use crate::trace;
use mcp_driver_common::{SessionGuard, SharedObserver};

/// A session with one MCP server, driven on tokio.
///
/// Each async method is **one** operation: one `Send` future under one deadline opened when it
/// is first polled, spent across its legs (the handshake when the session is not live yet,
/// then the work). The session is kept between operations, so a second operation on a live
/// session sends no second handshake; a session the server has forgotten (404) is
/// re-established inside the operation that found out, by `mcp-proto`.
///
/// The methods take `&self`, and the client is `Clone + Send + Sync`: any number of
/// operations can be in flight on one session at once, from one task (`join!`) or from many
/// (each with a clone). They share the session: on a new legacy session one of them runs the
/// handshake and the others wait for it inside their own budgets, so N concurrent calls send
/// **one** `initialize`; a session lost under a burst is re-established once. Every operation
/// keeps its own budget. Over stdio the operations take turns (one server process, one
/// stdout), each still under its own budget from the moment it was first polled.
///
/// Every leg `mcp-proto` hands out is sent as it says and read beside the others in flight:
/// answers to requests the server sends on a stream, the standalone stream
/// ([`SessionConfig::with_listen`]), a stream resumed with a `GET` at the moment the state
/// machine names, the cancel notice ([`SessionConfig::with_cancel_notice`]).
///
/// Dropping an operation's future cancels it: the requests in flight are dropped and their
/// connections closed. The session stays usable (a handshake interrupted this way is not
/// committed, and an operation waiting for it starts it again).
///
/// Three calls at once on one session:
///
/// ```no_run
/// # async fn demo() -> Result<(), mcp_proto::Error> {
/// let client = mcp_driver_tokio::Client::connect("https://tools.example.org/mcp")?;
/// let calls = ["a", "b", "c"].map(|text| {
///     let client = client.clone(); // the same session, a cancel handle of its own
///     let mut args = serde_json::Map::new();
///     args.insert("text".into(), text.into());
///     tokio::spawn(async move { client.call_tool("echo", args).await })
/// });
/// for call in calls {
///     println!("{}", call.await.expect("the task ran")?.text());
/// }
/// # Ok(())
/// # }
/// ```
///
/// See the [crate docs](crate) for more.
pub struct Client {
    shared: Arc<Shared>,
    /// This client value's cancel handle: a clone gets its own.
    cancel: Arc<CancelShared>,
}

/// What every clone of a client shares: the session and what its operations go through.
struct Shared {
    /// The session, locked only to start an operation, apply what one learned, or hand it the
    /// session it waits for: never across an await.
    session: Mutex<Session>,
    /// Wakes the operations that wait for the session when it changed (an update applied, an
    /// operation ended).
    changed: Notify,
    http: Http,
    handshakes: Handshakes,
    observer: SharedObserver,
    authorizer: Mutex<Option<Arc<dyn Authorizer>>>,
    /// Over stdio: the server process, kept between operations (ended on close; killed when
    /// the last clone is dropped). Locked for a whole operation: stdio operations take turns.
    child: tokio::sync::Mutex<Option<crate::stdio::Child>>,
}

impl Shared {
    fn session(&self) -> MutexGuard<'_, Session> {
        self.session.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("session", &*self.shared.session())
            .finish_non_exhaustive()
    }
}

impl Clone for Client {
    /// Another handle on the same session (no second handshake), with a cancel handle of its
    /// own: [`cancel_handle`](Client::cancel_handle) on the clone cancels only the operations
    /// run through the clone.
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
            cancel: Arc::new(CancelShared::default()),
        }
    }
}

/// Wakes the operations waiting for the session when an operation ends, whichever way (its
/// claim on the handshake ends with it). Declared before the operation, so it runs after the
/// operation is dropped.
struct Ended<'a>(&'a Shared);

impl Drop for Ended<'_> {
    fn drop(&mut self) {
        self.0.changed.notify_waiters();
    }
}

impl Client {
    /// A client for the server `config` describes. Nothing is sent until the first operation;
    /// building it needs no runtime (the operations do). It trusts the operating system's
    /// store (and `SSL_CERT_FILE`, `SSL_CERT_DIR`) and takes an HTTP `CONNECT` proxy from the
    /// environment (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, `NO_PROXY`):
    /// [`Network::default`]. To add a CA or set a proxy, use [`with_network`](Self::with_network).
    pub fn new(config: SessionConfig) -> Self {
        // The default network adds no CA of the caller's, so it cannot fail.
        Self::with_network(config, &Network::default())
            .unwrap_or_else(|_| unreachable!("the default network adds no CA of the caller's"))
    }

    /// A client for the server `config` describes, whose connections trust and tunnel as
    /// `network` says: the system's store plus the CAs it adds, its proxy (or the
    /// environment's). The same [`Network`] gives the same behaviour, and the same errors
    /// ([`Error::Tls`], [`Error::Proxy`]), on the blocking driver.
    ///
    /// # Errors
    /// [`Error::InvalidCertificates`] when a CA it adds cannot be read or holds no certificate.
    pub fn with_network(config: SessionConfig, network: &Network) -> Result<Self, Error> {
        let (http, handshakes) = leg::http_client_for(network)?;
        let mut session = Session::new(config);
        session.set_entropy(Box::new(OsEntropy));
        let shared = Shared {
            session: Mutex::new(session),
            changed: Notify::new(),
            http,
            handshakes,
            observer: SharedObserver::default(),
            authorizer: Mutex::new(None),
            child: tokio::sync::Mutex::new(None),
        };
        Ok(Self {
            shared: Arc::new(shared),
            cancel: Arc::new(CancelShared::default()),
        })
    }

    /// A client for the endpoint at `url` with the default configuration (a 20 s budget per
    /// operation, whole-second grants). Sends nothing.
    ///
    /// # Errors
    /// [`Error::InvalidUrl`] when `url` is not an `http` or `https` URL with a host.
    pub fn connect(url: &str) -> Result<Self, Error> {
        SessionConfig::new(url).map(Self::new)
    }

    /// The session: its configuration and, while it is live, what the handshake established.
    ///
    /// The guard holds the session's lock, which every operation on this client (and its
    /// clones) takes briefly at its start and as it learns: read what you need and drop it;
    /// never hold it across an `.await`.
    pub fn session(&self) -> SessionGuard<'_> {
        SessionGuard::new(self.shared.session())
    }

    /// Presents `token` on every request from now on (one kept from an earlier run, say):
    /// no authorization is needed until the server refuses it.
    pub fn set_token(&self, token: mcp_proto::mcp_auth::AccessToken) {
        self.shared.session().set_token(token);
    }

    /// Receives a [`LegReport`](mcp_proto::LegReport) for every leg (its grant, how long it
    /// took by tokio's clock, and how it ended) and every event the server sends while
    /// answering, from every operation on the session (one report at a time). Replaces the
    /// previous observer; the default ignores everything.
    pub fn set_observer(&self, observer: impl Observer + Send + 'static) {
        self.shared.observer.set(Box::new(observer));
    }

    /// Lets authorizations that need a person go through `authorizer` (see
    /// [`SessionConfig::with_oauth`]). Without one, an operation whose authorization reaches
    /// the browser step ends at once with [`Error::AuthorizationRequired`]. One authorization
    /// at a time per session: the other operations the server refused meanwhile wait for its
    /// token, each inside its own budget, rather than asking a person again.
    pub fn set_authorizer(&self, authorizer: impl Authorizer + 'static) {
        *self
            .shared
            .authorizer
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(authorizer));
    }

    /// A handle that cancels, from another task, the operations this client value has in
    /// flight (a clone has a handle of its own: give each operation that must be cancelled on
    /// its own a clone).
    pub fn cancel_handle(&self) -> CancelHandle {
        CancelHandle::new(Arc::clone(&self.cancel))
    }

    /// A probe under the configured budget: the handshake on a new session (reporting the
    /// negotiated version and the server's info), a `ping` on a live one.
    ///
    /// # Errors
    /// Whatever ends the operation, as [`mcp_proto::Error`] says.
    pub async fn probe(&self) -> Result<SessionInfo, Error> {
        match self.operate(Action::Probe, None).await? {
            Outcome::Probe(info) => Ok(info),
            other => unreachable!("mcp-proto answered a probe with {other:?}"),
        }
    }

    /// Every page of `tools/list` under the configured budget, the tools in order.
    ///
    /// # Errors
    /// Whatever ends the operation, as [`mcp_proto::Error`] says.
    pub async fn list_tools(&self) -> Result<Listing<Tool>, Error> {
        match self.operate(Action::List(ListKind::Tools), None).await? {
            Outcome::Tools(tools) => Ok(tools),
            other => unreachable!("mcp-proto answered a listing with {other:?}"),
        }
    }

    /// Every page of `resources/list` under the configured budget.
    ///
    /// # Errors
    /// Whatever ends the operation, as [`mcp_proto::Error`] says.
    pub async fn list_resources(&self) -> Result<Listing<Resource>, Error> {
        match self
            .operate(Action::List(ListKind::Resources), None)
            .await?
        {
            Outcome::Resources(resources) => Ok(resources),
            other => unreachable!("mcp-proto answered a listing with {other:?}"),
        }
    }

    /// Every page of `resources/templates/list` under the configured budget.
    ///
    /// # Errors
    /// Whatever ends the operation, as [`mcp_proto::Error`] says.
    pub async fn list_resource_templates(&self) -> Result<Listing<ResourceTemplate>, Error> {
        match self
            .operate(Action::List(ListKind::ResourceTemplates), None)
            .await?
        {
            Outcome::ResourceTemplates(templates) => Ok(templates),
            other => unreachable!("mcp-proto answered a listing with {other:?}"),
        }
    }

    /// Every page of `prompts/list` under the configured budget.
    ///
    /// # Errors
    /// Whatever ends the operation, as [`mcp_proto::Error`] says.
    pub async fn list_prompts(&self) -> Result<Listing<Prompt>, Error> {
        match self.operate(Action::List(ListKind::Prompts), None).await? {
            Outcome::Prompts(prompts) => Ok(prompts),
            other => unreachable!("mcp-proto answered a listing with {other:?}"),
        }
    }

    /// One `resources/read` of `uri` under the configured budget.
    ///
    /// # Errors
    /// Whatever ends the operation, as [`mcp_proto::Error`] says.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, Error> {
        match self
            .operate(
                Action::ReadResource {
                    uri: uri.to_owned(),
                },
                None,
            )
            .await?
        {
            Outcome::Resource(result) => Ok(result),
            other => unreachable!("mcp-proto answered a read with {other:?}"),
        }
    }

    /// One `prompts/get` of `name` with `arguments` under the configured budget.
    ///
    /// # Errors
    /// Whatever ends the operation, as [`mcp_proto::Error`] says.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<GetPromptResult, Error> {
        let get = self.operate(
            Action::GetPrompt {
                name: name.to_owned(),
                arguments,
            },
            None,
        );
        match get.await? {
            Outcome::Prompt(result) => Ok(result),
            other => unreachable!("mcp-proto answered a prompt with {other:?}"),
        }
    }

    /// One `tools/call` of `name` under the configured budget. A tool that answers
    /// `isError: true` is a result, not an error.
    ///
    /// # Errors
    /// Whatever ends the operation, as [`mcp_proto::Error`] says.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<CallToolResult, Error> {
        let call = self.operate(
            Action::CallTool {
                name: name.to_owned(),
                arguments,
            },
            None,
        );
        match call.await? {
            Outcome::Call(result) => Ok(result),
            other => unreachable!("mcp-proto answered a tool call with {other:?}"),
        }
    }

    /// Ends the session on the server (a `DELETE`, under a small budget of its own: the
    /// configured budget, at most [`SessionConfig::CLOSE_BUDGET_CAP`]) and forgets it; the
    /// next operation starts a new one. Nothing is sent when there is no live session id. A
    /// server that does not allow it (405) or already forgot the session (404) counts as
    /// closed.
    ///
    /// # Errors
    /// Whatever ends the operation, as [`mcp_proto::Error`] says.
    pub async fn close(&self) -> Result<(), Error> {
        self.operate(Action::Close, None).await.map(|_| ())
    }

    /// Ends the session inside what `spent` (the deadline of the operation it follows, from
    /// [`open_deadline`](Self::open_deadline)) leaves, at most the close budget: what the
    /// operator waits for ends with that operation's budget. Once `spent` is spent nothing
    /// waits: no `DELETE` is sent ([`Error::BudgetExhausted`]; the server's idle timeout ends a
    /// legacy session), and a local server is killed at once. The session is forgotten either
    /// way. See [`Session::close_within`](mcp_proto::Session::close_within).
    ///
    /// ```no_run
    /// # async fn demo(client: mcp_driver_tokio::Client) {
    /// let deadline = client.open_deadline();
    /// let result = client.run_within(mcp_proto::Action::Probe, deadline).await;
    /// // However the probe ended, the close fits in the same budget.
    /// let _ = client.close_within(&deadline).await;
    /// # }
    /// ```
    ///
    /// # Errors
    /// Whatever ends the operation, as [`mcp_proto::Error`] says.
    pub async fn close_within(&self, spent: &OperationDeadline) -> Result<(), Error> {
        let deadline = spent.remainder(TokioClock.now(), SessionConfig::CLOSE_BUDGET_CAP);
        self.operate(Action::Close, Some(deadline))
            .await
            .map(|_| ())
    }

    /// Opens a deadline now (by tokio's clock) under the configured budget and resolution,
    /// for [`run_within`](Self::run_within): the caller holds the operation's deadline, and
    /// can give what follows it (its close) only what it leaves.
    pub fn open_deadline(&self) -> OperationDeadline {
        let session = self.shared.session();
        let config = session.config();
        OperationDeadline::start(TokioClock.now(), config.budget(), config.resolution())
    }

    /// Runs `action` as one operation under `budget` (instead of the configured one), with
    /// the configured resolution. The deadline opens when the future is first polled.
    ///
    /// # Errors
    /// Whatever ends the operation, as [`mcp_proto::Error`] says.
    pub async fn run(&self, action: Action, budget: Budget) -> Result<Outcome, Error> {
        let resolution = self.shared.session().config().resolution();
        let deadline = OperationDeadline::start(TokioClock.now(), budget, resolution);
        self.operate(action, Some(deadline)).await
    }

    /// Runs `action` as one operation under `deadline`, which the caller opened (with
    /// [`open_deadline`](Self::open_deadline), or earlier, to count time spent before the
    /// call).
    ///
    /// # Errors
    /// Whatever ends the operation, as [`mcp_proto::Error`] says.
    pub async fn run_within(
        &self,
        action: Action,
        deadline: OperationDeadline,
    ) -> Result<Outcome, Error> {
        self.operate(action, Some(deadline)).await
    }

    /// Runs `action` as one operation under `deadline` (one the session opens at the first
    /// poll when `None`) and
    /// drives it to its end: the loop of the proto's
    /// module docs. Every leg in flight is read in one `select!`, beside the proto's next
    /// timer, the cancel handle and, while the operation waits for its session, the session's
    /// changes.
    async fn operate(
        &self,
        action: Action,
        deadline: Option<OperationDeadline>,
    ) -> Result<Outcome, Error> {
        let clock = TokioClock;
        let shared = &*self.shared;
        let cancel = &*self.cancel;
        let armed = cancel.arm();
        let cancelled = cancel.waiter();
        tokio::pin!(cancelled);
        cancelled.as_mut().enable();
        let mut reporting = shared.observer.reporter();
        let observer: &mut (dyn Observer + Send) = &mut reporting;
        let authorizer = shared
            .authorizer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        // The deadline opens at the first poll, whatever the operation waits for first.
        let opened = clock.now();
        let (server, stdio, deadline) = {
            let session = shared.session();
            let config = session.config();
            let stdio = match config.transport() {
                mcp_proto::Transport::Stdio(command) => Some(command.clone()),
                _ => None,
            };
            let deadline = deadline.unwrap_or_else(|| session.deadline_for(&action, opened));
            (config.label().to_owned(), stdio, deadline)
        };
        // Declared before the operation: it wakes the waiting ones after the operation is gone.
        let _ended = Ended(shared);
        let start = |now: Instant| {
            let mut session = shared.session();
            session.set_time_of_day(now, std::time::SystemTime::now());
            session.start(action, deadline)
        };
        if let Some(command) = stdio {
            // One server process, one stdout: stdio operations take turns, each waiting for
            // its turn inside its budget. One whose turn never came (its budget ran out, or it
            // was cancelled) runs without the process: it ends at once, having sent nothing.
            let turn = tokio::select! {
                biased;
                () = &mut cancelled => None,
                turn = async {
                    match deadline.end() {
                        Some(end) => tokio::time::timeout_at(TokioInstant::from_std(end), shared.child.lock()).await.ok(),
                        None => Some(shared.child.lock().await),
                    }
                } => turn,
            };
            let mut no_process = None;
            let mut turn = turn;
            let child = match turn.as_deref_mut() {
                Some(child) => child,
                None => &mut no_process,
            };
            let mut op = start(clock.now());
            let span = trace::operation(&op, &server);
            let run = crate::stdio::StdioRun {
                child,
                session: &shared.session,
                command,
                observer,
                cancel,
                armed,
                span: span.clone(),
            };
            let result = run.drive(&mut op).await;
            trace::ended(&span, &result);
            return result;
        }
        // One clock reading per wake-up: the inputs it brought, the legs pruned after them and
        // the outputs drained before the next wait all happen "now".
        let mut now = clock.now();
        let mut op = start(now);
        let span = trace::operation(&op, &server);
        let mut legs: Vec<InFlight> = Vec::new();
        // One timer for the whole operation, moved to the proto's next instant each time.
        let timer = tokio::time::sleep_until(TokioInstant::from_std(now));
        tokio::pin!(timer);
        // While the operation waits for its session: the session's next change.
        let mut changed = std::pin::pin!(None::<Notified<'_>>);
        // Whether the operation was just given its session (and the session's next change
        // registered, under its lock): if it awaits it still, it waits for that change.
        let mut offered = false;
        loop {
            // Mutate, then drain until the operation must wait.
            let until = loop {
                if cancel.is_fired(armed) && !op.is_finished() {
                    now = clock.now();
                    op.handle_input(Input::Cancel, now);
                    leg::cancel_all(&mut legs, observer, now);
                }
                let output = op.poll_output(now);
                offered &= matches!(output, Output::AwaitSession(_));
                match output {
                    Output::Update(update) => {
                        shared.session().apply(update);
                        shared.changed.notify_waiters();
                    }
                    Output::Transmit(leg) => {
                        legs.push(InFlight::start(&shared.http, leg, now, &span))
                    }
                    Output::Event(event) => {
                        observer.event(&event);
                        // The observer's time is not the operation's: read the clock again.
                        now = clock.now();
                    }
                    Output::AwaitSession(until) if offered => break until,
                    Output::AwaitSession(_) => {
                        // Under the session's lock: give it the session, and register for the
                        // session's next change before letting go, so no change is missed.
                        let mut session = shared.session();
                        op.handle_input(Input::Session(&mut session), now);
                        changed.set(Some(shared.changed.notified()));
                        if let Some(notified) = changed.as_mut().as_pin_mut() {
                            notified.enable();
                        }
                        offered = true;
                    }
                    Output::Wait(until) => break until,
                    Output::Authorize(step) => {
                        // `None`: cancelled meanwhile (the loop's next turn cancels the operation).
                        let redirect = match authorizer.as_deref() {
                            // The person's time ends with the step; a cancel ends it sooner.
                            Some(authorizer) => tokio::select! {
                                biased;
                                () = &mut cancelled, if !op.is_finished() => None,
                                redirect = tokio::time::timeout_at(
                                    TokioInstant::from_std(step.ends_at),
                                    authorizer.authorize(&step),
                                ) => Some(Some(redirect.unwrap_or_else(|_| {
                                    Err("no redirect before the budget ran out".to_owned())
                                }))),
                            },
                            None => Some(None),
                        };
                        trace::authorized(
                            &span,
                            redirect
                                .as_ref()
                                .and_then(|r| r.as_ref().map(Result::is_ok)),
                        );
                        now = clock.now();
                        match redirect {
                            Some(Some(Ok(url))) => {
                                op.handle_input(Input::Redirect(&url), now);
                            }
                            Some(Some(Err(detail))) => {
                                op.handle_input(Input::AuthorizerFailed(&detail), now);
                            }
                            Some(None) => {
                                op.handle_input(Input::NoAuthorizer, now);
                            }
                            None => {}
                        }
                    }
                    Output::Done(result) => {
                        leg::drop_all(&mut legs, observer, now);
                        trace::ended(&span, &result);
                        return result;
                    }
                }
            };
            let cancellable = !op.is_finished();
            let waits_for_session = std::mem::take(&mut offered);
            let until = TokioInstant::from_std(until);
            if timer.deadline() != until {
                timer.as_mut().reset(until);
            }
            tokio::select! {
                biased;
                // Once fired, the operation is cancelled (and so finished) before the next wait:
                // this branch is never polled again.
                () = &mut cancelled, if cancellable => {
                    now = clock.now();
                }
                () = &mut timer => {
                    now = clock.now();
                    leg::handshake_timeouts(&mut op, &mut legs, &shared.handshakes, observer, now);
                    op.handle_input(Input::Timeout, now);
                }
                () = async { if let Some(n) = changed.as_mut().as_pin_mut() { n.await } }, if waits_for_session => {
                    changed.set(None);
                    now = clock.now();
                }
                (index, delivery) = leg::next(&mut legs) => {
                    now = leg::feed(&mut op, &mut legs, index, delivery, observer).await;
                }
            }
            // Legs the operation no longer has (expired, dropped, or over with it) go now.
            leg::prune(&op, &mut legs, observer, now);
        }
    }
}
