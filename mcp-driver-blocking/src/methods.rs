//! The [`Client`]'s public methods: each one line over the shell (`mcp-driver-common`) or one
//! operation ([`Client::operate`](crate::Client)). What an operation does is documented once,
//! on its [`Action`]; the methods here say what they return and when their deadline opens
//! (when the method is called).
//!
//! This module never decides anything about an operation and holds no MCP method of its own:
//! a one-request method is [`request`](Client::request) with the request's type from
//! [`mcp_proto::request`].

use std::sync::Arc;

use mcp_auth::AccessToken;
use mcp_driver_common::SessionGuard;
use mcp_driver_common::shell::typed;
use mcp_proto::request::{OneRequest, Request};
use mcp_proto::task::TaskHandle;
use mcp_proto::{
    Action, Budget, CallToolResult, Clock, Error, Listed, Listing, MonotonicClock, Observer,
    OperationDeadline, Outcome, SessionConfig, SessionInfo, Tool,
};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::{Authorizer, CancelHandle, Client, Network};

impl Client {
    /// A client for the server `config` describes. Nothing is sent until the first
    /// operation.
    ///
    /// The driver answers every status to the state machine (404 re-initializes, 202
    /// accepts a notification, 401 and 500 are typed errors), follows no redirect (a 3xx is
    /// reported, not followed), adds no `Accept` of its own and caps no body (the state
    /// machine caps what it reads). It trusts the operating system's store (and
    /// `SSL_CERT_FILE`, `SSL_CERT_DIR`) and takes an HTTP `CONNECT` proxy from the
    /// environment (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, `NO_PROXY`):
    /// [`Network::default`]. SOCKS proxies are not supported. To add a CA or set a proxy,
    /// use [`with_network`](Self::with_network).
    pub fn new(config: SessionConfig) -> Self {
        // The default network adds no CA of the caller's, so it cannot fail (unreadable
        // `SSL_CERT_FILE`/`SSL_CERT_DIR` entries are skipped).
        Self::with_network(config, &Network::default())
            .unwrap_or_else(|_| unreachable!("the default network adds no CA of the caller's"))
    }

    /// A client for the endpoint at `url` with the default configuration (a 20 s budget per
    /// operation, whole-second grants). Sends nothing.
    ///
    /// # Errors
    /// [`Error::InvalidUrl`] when `url` is not an `http` or `https` URL with a host.
    pub fn connect(url: &str) -> Result<Self, Error> {
        SessionConfig::new(url).map(Self::new)
    }

    /// The session: its configuration and, while it lives, what the handshake established.
    /// The guard holds the session's lock, which every operation on this client (and its
    /// clones) takes briefly: read what you need and drop it.
    pub fn session(&self) -> SessionGuard<'_> {
        self.shared.shell.guard()
    }

    /// Presents `token` on every request from now on (one kept from an earlier run, say): no
    /// authorization is needed until the server refuses it.
    pub fn set_token(&self, token: AccessToken) {
        self.shared.shell.session().set_token(token);
    }

    /// Reports every leg ([`LegReport`](mcp_proto::LegReport): its grant, the time it took,
    /// how it ended) and every event the server sends while answering to `observer`, for
    /// every operation on the session, one report at a time. Replaces the previous observer;
    /// the default ignores everything.
    ///
    /// The observer runs on the operation's thread, between reads: keep it quick, its time is
    /// spent from the budget.
    pub fn set_observer(&self, observer: impl Observer + Send + 'static) {
        self.shared.shell.set_observer(Box::new(observer));
    }

    /// A clone of this client (the same session, a cancel handle of its own) whose operations
    /// report to `observer` instead of the session's: for a caller that must tell one
    /// operation's events from another's (a bridge relaying each call's progress).
    #[must_use]
    pub fn with_observer(&self, observer: impl Observer + Send + 'static) -> Self {
        let mut clone = self.clone();
        clone.observer = Some(Arc::new(mcp_driver_common::SharedObserver::new(observer)));
        clone
    }

    /// Lets authorizations that need a person go through `authorizer` (see
    /// [`SessionConfig::with_oauth`]). Without one, an operation whose authorization reaches
    /// the browser step ends at once with [`Error::AuthorizationRequired`]. One authorization
    /// at a time per session: the other operations the server refused meanwhile wait for its
    /// token, each inside its own budget.
    pub fn set_authorizer(&self, authorizer: impl Authorizer + 'static) {
        let shared = Arc::new(std::sync::Mutex::new(Box::new(authorizer) as Box<_>));
        self.shared.shell.set_authorizer(shared);
    }

    /// A handle that cancels, from another thread, the operations this client value has in
    /// flight (a clone has a handle of its own: give each thread that must be cancelled on its
    /// own a clone), or those and every later one
    /// ([`cancel_for_good`](CancelHandle::cancel_for_good), for a cancel that may come before
    /// the operation has begun).
    pub fn cancel_handle(&self) -> CancelHandle {
        CancelHandle::new(Arc::clone(&self.lanes))
    }

    /// Checks the server answers ([`Action::Probe`]): the handshake on a new session, a `ping`
    /// on a live one. Returns what the handshake established.
    ///
    /// # Errors
    /// Whatever ends the operation, as [`Error`] says.
    pub fn probe(&self) -> Result<SessionInfo, Error> {
        self.operate(Action::Probe, None).map(typed)
    }

    /// Every tool, page by page (`tools/list`), under one budget: `list::<Tool>()`.
    ///
    /// # Errors
    /// Whatever ends the operation, as [`Error`] says.
    pub fn list_tools(&self) -> Result<Listing<Tool>, Error> {
        self.list::<Tool>()
    }

    /// Every entry of the listing of `E` ([`Tool`], [`Resource`](mcp_proto::Resource),
    /// [`ResourceTemplate`](mcp_proto::ResourceTemplate), [`Prompt`](mcp_proto::Prompt)),
    /// page by page, under one budget ([`Action::List`]).
    ///
    /// # Errors
    /// Whatever ends the operation, as [`Error`] says.
    pub fn list<E: Listed>(&self) -> Result<Listing<E>, Error> {
        self.operate(Action::List(E::KIND), None).map(typed)
    }

    /// Calls the tool `name` with `arguments` ([`Action::CallTool`]; sent as `{}` when
    /// empty), the handshake included when the session is new. A tool that fails
    /// (`isError: true`) is `Ok` with [`CallToolResult::is_error`] set.
    ///
    /// # Errors
    /// Whatever ends the operation, as [`Error`] says: the call itself did not complete.
    pub fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<CallToolResult, Error> {
        let call = Action::CallTool {
            name: name.to_owned(),
            arguments,
        };
        self.operate(call, None).map(typed)
    }

    /// Calls the tool `name` like [`call_tool`](Self::call_tool) and reads its
    /// `structuredContent` as `T`: for a tool whose output shape the caller knows (checked
    /// against the tool's `outputSchema` first, when the session knows it: see
    /// [`SessionConfig::with_output_validation`](mcp_proto::SessionConfig::with_output_validation)).
    ///
    /// # Errors
    /// Whatever ends the operation, as [`Error`] says; [`Error::OutputInvalid`] when the
    /// result breaks its schema; [`Error::UnreadableResult`] when the tool failed, sent
    /// nothing structured, or sent something that is not a `T` (both hold the result).
    pub fn call_tool_as<T: DeserializeOwned>(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<T, Error> {
        let result = self.call_tool(name, arguments)?;
        self.shared.shell.structured(name, result)
    }

    /// One request of the table of one-request methods ([`mcp_proto::request`]: a request
    /// type of that module, or one of yours implementing [`Request`]) under one budget, its
    /// result read into its type.
    ///
    /// # Errors
    /// Whatever ends the operation, as [`Error`] says; [`Error::Malformed`] when the result
    /// is not what `R` answers.
    pub fn request<R: Request>(&self, request: R) -> Result<R::Output, Error> {
        let action = Action::Request(OneRequest::new(&request));
        let outcome = self.operate(action, None)?;
        self.shared.shell.answer::<R>(outcome)
    }

    /// Polls `task` (handed back by a call whose budget ran out:
    /// [`Error::TaskRunning`]) until it is done, under a new budget ([`Action::ResumeTask`]),
    /// and returns the call's result; hands it back again when this budget runs out too.
    ///
    /// # Errors
    /// Whatever ends the operation, as [`Error`] says.
    pub fn resume_task(&self, task: &TaskHandle) -> Result<CallToolResult, Error> {
        self.operate(Action::ResumeTask(task.clone()), None)
            .map(typed)
    }

    /// Asks the server to cancel `task` ([`Action::CancelTask`]). `Ok` once the server
    /// acknowledged it: cancelling is cooperative, and the task may still end otherwise.
    ///
    /// # Errors
    /// Whatever ends the operation, as [`Error`] says (a JSON-RPC error when the server knows
    /// no such task).
    pub fn cancel_task(&self, task: &TaskHandle) -> Result<(), Error> {
        self.operate(Action::CancelTask(task.clone()), None)
            .map(|_| ())
    }

    /// Ends the session on the server and forgets it ([`Action::Close`]), under the close
    /// budget (the configured budget, at most [`SessionConfig::CLOSE_BUDGET_CAP`]); over
    /// stdio, the server process is ended within it.
    ///
    /// # Errors
    /// Whatever ends the operation, as [`Error`] says.
    pub fn close(&self) -> Result<(), Error> {
        self.operate(Action::Close, None).map(|_| ())
    }

    /// Ends the session inside what `spent` (the deadline of the operation it follows, from
    /// [`open_deadline`](Self::open_deadline)) leaves, at most the close budget: once `spent`
    /// is spent nothing waits (see [`Session::close_within`](mcp_proto::Session::close_within)).
    ///
    /// ```no_run
    /// # let client = mcp_driver_blocking::Client::connect("http://127.0.0.1:8080/mcp")?;
    /// let deadline = client.open_deadline();
    /// let result = client.run_within(mcp_proto::Action::Probe, deadline);
    /// // However the probe ended, the close fits in the same budget.
    /// let _ = client.close_within(&deadline);
    /// # Ok::<(), mcp_proto::Error>(())
    /// ```
    ///
    /// # Errors
    /// Whatever ends the operation, as [`Error`] says.
    pub fn close_within(&self, spent: &OperationDeadline) -> Result<(), Error> {
        let now = MonotonicClock.now();
        let deadline = spent.remainder(now, SessionConfig::CLOSE_BUDGET_CAP);
        self.operate(Action::Close, Some(deadline)).map(|_| ())
    }

    /// Opens a deadline now under the configured budget and resolution, for
    /// [`run_within`](Self::run_within): the caller holds the operation's deadline, and can
    /// give what follows it (its close) only what it leaves.
    pub fn open_deadline(&self) -> OperationDeadline {
        self.shared.shell.open_deadline(MonotonicClock.now())
    }

    /// Runs `action` as one operation under `budget` (instead of the configured one), with
    /// grants rounded to the configured resolution. The deadline opens when the method is
    /// called.
    ///
    /// # Errors
    /// Whatever ends the operation, as [`Error`] says.
    pub fn run(&self, action: Action, budget: Budget) -> Result<Outcome, Error> {
        let deadline = self
            .shared
            .shell
            .deadline_under(budget, MonotonicClock.now());
        self.operate(action, Some(deadline))
    }

    /// Runs `action` as one operation under `deadline`, which the caller opened (with
    /// [`open_deadline`](Self::open_deadline), or earlier, to count time spent before the
    /// call).
    ///
    /// # Errors
    /// Whatever ends the operation, as [`Error`] says.
    pub fn run_within(
        &self,
        action: Action,
        deadline: OperationDeadline,
    ) -> Result<Outcome, Error> {
        self.operate(action, Some(deadline))
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("session", &*self.shared.shell.session())
            .finish_non_exhaustive()
    }
}
