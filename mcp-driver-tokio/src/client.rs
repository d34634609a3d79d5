//! The client: a session with one server and the loop that drives its operations.

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use mcp_proto::{
    Action, Budget, CallToolResult, Clock, Error, GetPromptResult, ListKind, Listing, Network,
    NoObserver, Observer, Operation, OperationDeadline, Outcome, Output, Prompt,
    ReadResourceResult, Resource, ResourceTemplate, Session, SessionConfig, SessionInfo, Tool,
};
use serde_json::{Map, Value};
use tokio::time::Instant as TokioInstant;

use crate::authorize::{Authorizer, OsEntropy};
use crate::cancel::{CancelHandle, CancelShared};
use crate::clock::TokioClock;
use crate::leg::{self, Handshakes, Http, InFlight};
use crate::trace;

/// A session with one MCP server, driven on tokio.
///
/// Each async method is **one** operation: one `Send` future under one deadline opened when it
/// is first polled, spent across its legs (the handshake when the session is not live yet,
/// then the work). The session is kept between operations, so a second operation on a live
/// session sends no second handshake; a session the server has forgotten (404) is
/// re-established inside the operation that found out, by `mcp-proto`.
///
/// Every leg `mcp-proto` hands out is sent as it says and read beside the others in flight:
/// answers to requests the server sends on a stream, the standalone stream
/// ([`SessionConfig::with_listen`]), a stream resumed with a `GET` at the moment the state
/// machine names, the cancel notice ([`SessionConfig::with_cancel_notice`]).
///
/// Dropping an operation's future cancels it: the requests in flight are dropped and their
/// connections closed. The session stays usable (a handshake interrupted this way is not
/// committed, and the next operation starts it again).
///
/// See the [crate docs](crate) for an example.
pub struct Client {
    session: Session,
    http: Http,
    handshakes: Handshakes,
    observer: Box<dyn Observer + Send>,
    authorizer: Option<Arc<dyn Authorizer>>,
    cancel: Arc<CancelShared>,
    /// Over stdio: the server process, kept between operations (ended on close; killed when
    /// the client is dropped).
    child: Option<crate::stdio::Child>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("session", &self.session)
            .finish_non_exhaustive()
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
        Ok(Self {
            session,
            http,
            handshakes,
            observer: Box::new(NoObserver),
            authorizer: None,
            child: None,
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
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Presents `token` on every request from now on (one kept from an earlier run, say):
    /// no authorization is needed until the server refuses it.
    pub fn set_token(&mut self, token: mcp_proto::mcp_auth::AccessToken) {
        self.session.set_token(token);
    }

    /// Receives a [`LegReport`](mcp_proto::LegReport) for every leg (its grant, how long it
    /// took by tokio's clock, and how it ended) and every event the server sends while
    /// answering. Replaces the previous observer; the default ignores everything.
    pub fn set_observer(&mut self, observer: impl Observer + Send + 'static) {
        self.observer = Box::new(observer);
    }

    /// Lets authorizations that need a person go through `authorizer` (see
    /// [`SessionConfig::with_oauth`]). Without one, an operation whose authorization reaches
    /// the browser step ends at once with [`Error::AuthorizationRequired`].
    pub fn set_authorizer(&mut self, authorizer: impl Authorizer + 'static) {
        self.authorizer = Some(Arc::new(authorizer));
    }

    /// A handle that cancels this client's operation in flight from another task.
    pub fn cancel_handle(&self) -> CancelHandle {
        CancelHandle::new(Arc::clone(&self.cancel))
    }

    /// A probe under the configured budget: the handshake on a new session (reporting the
    /// negotiated version and the server's info), a `ping` on a live one.
    ///
    /// # Errors
    /// Whatever ends the operation, as [`mcp_proto::Error`] says.
    pub async fn probe(&mut self) -> Result<SessionInfo, Error> {
        match self.operate(Session::probe).await? {
            Outcome::Probe(info) => Ok(info),
            other => unreachable!("mcp-proto answered a probe with {other:?}"),
        }
    }

    /// Every page of `tools/list` under the configured budget, the tools in order.
    ///
    /// # Errors
    /// Whatever ends the operation, as [`mcp_proto::Error`] says.
    pub async fn list_tools(&mut self) -> Result<Listing<Tool>, Error> {
        match self.operate(Session::list_tools).await? {
            Outcome::Tools(tools) => Ok(tools),
            other => unreachable!("mcp-proto answered a listing with {other:?}"),
        }
    }

    /// Every page of `resources/list` under the configured budget.
    ///
    /// # Errors
    /// Whatever ends the operation, as [`mcp_proto::Error`] says.
    pub async fn list_resources(&mut self) -> Result<Listing<Resource>, Error> {
        match self
            .operate(|s, now| s.list(ListKind::Resources, now))
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
    pub async fn list_resource_templates(&mut self) -> Result<Listing<ResourceTemplate>, Error> {
        match self
            .operate(|s, now| s.list(ListKind::ResourceTemplates, now))
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
    pub async fn list_prompts(&mut self) -> Result<Listing<Prompt>, Error> {
        match self
            .operate(|s, now| s.list(ListKind::Prompts, now))
            .await?
        {
            Outcome::Prompts(prompts) => Ok(prompts),
            other => unreachable!("mcp-proto answered a listing with {other:?}"),
        }
    }

    /// One `resources/read` of `uri` under the configured budget.
    ///
    /// # Errors
    /// Whatever ends the operation, as [`mcp_proto::Error`] says.
    pub async fn read_resource(&mut self, uri: &str) -> Result<ReadResourceResult, Error> {
        match self.operate(|s, now| s.read_resource(uri, now)).await? {
            Outcome::Resource(result) => Ok(result),
            other => unreachable!("mcp-proto answered a read with {other:?}"),
        }
    }

    /// One `prompts/get` of `name` with `arguments` under the configured budget.
    ///
    /// # Errors
    /// Whatever ends the operation, as [`mcp_proto::Error`] says.
    pub async fn get_prompt(
        &mut self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<GetPromptResult, Error> {
        let get = self.operate(move |s, now| s.get_prompt(name, arguments, now));
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
        &mut self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<CallToolResult, Error> {
        let call = self.operate(move |session, now| session.call_tool(name, arguments, now));
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
    pub async fn close(&mut self) -> Result<(), Error> {
        self.operate(Session::close).await.map(|_| ())
    }

    /// Runs `action` as one operation under `budget` (instead of the configured one), with
    /// the configured resolution. The deadline opens when the future is first polled.
    ///
    /// # Errors
    /// Whatever ends the operation, as [`mcp_proto::Error`] says.
    pub async fn run(&mut self, action: Action, budget: Budget) -> Result<Outcome, Error> {
        let resolution = self.session.config().resolution();
        self.operate(|session, now| {
            session.start(action, OperationDeadline::start(now, budget, resolution))
        })
        .await
    }

    /// Starts an operation with `start` and drives it to its end: the loop of the proto's
    /// module docs. Every leg in flight is read in one `select!`, beside the proto's next
    /// timer and the cancel handle.
    async fn operate(
        &mut self,
        start: impl for<'s> FnOnce(&'s mut Session, Instant) -> Operation<'s>,
    ) -> Result<Outcome, Error> {
        let clock = TokioClock;
        let server = self.session.config().label().to_owned();
        let Self {
            session,
            http,
            handshakes,
            observer,
            authorizer,
            cancel,
            child,
        } = self;
        let observer: &mut (dyn Observer + Send) = observer.as_mut();
        if let mcp_proto::Transport::Stdio(command) = session.config().transport().clone() {
            let now = clock.now();
            session.set_time_of_day(now, std::time::SystemTime::now());
            let mut op = start(session, now);
            let span = trace::operation(&op, &server);
            let run = crate::stdio::StdioRun {
                child,
                command,
                observer,
                cancel,
                span: span.clone(),
            };
            let result = run.drive(&mut op).await;
            trace::ended(&span, &result);
            return result;
        }
        let armed = cancel.arm();
        let cancelled = cancel.waiter();
        tokio::pin!(cancelled);
        cancelled.as_mut().enable();
        // One clock reading per wake-up: the inputs it brought, the legs pruned after them and
        // the outputs drained before the next wait all happen "now".
        let mut now = clock.now();
        session.set_time_of_day(now, std::time::SystemTime::now());
        let mut op = start(session, now);
        let span = trace::operation(&op, &server);
        let mut legs: Vec<InFlight> = Vec::new();
        // One timer for the whole operation, moved to the proto's next instant each time.
        let timer = tokio::time::sleep_until(TokioInstant::from_std(now));
        tokio::pin!(timer);
        loop {
            // Mutate, then drain until the operation must wait.
            let until = loop {
                if cancel.is_fired(armed) && !op.is_finished() {
                    op.cancel();
                    now = clock.now();
                    leg::cancel_all(&mut legs, observer, now);
                }
                match op.poll_output(now) {
                    Output::Transmit(leg) => legs.push(InFlight::start(http, leg, now, &span)),
                    Output::Event(event) => {
                        observer.event(&event);
                        // The observer's time is not the operation's: read the clock again.
                        now = clock.now();
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
                            Some(Some(Ok(url))) => op.handle_redirect(&url, now),
                            Some(Some(Err(detail))) => op.handle_authorizer_failure(&detail, now),
                            Some(None) => op.decline_authorization(),
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
                    leg::handshake_timeouts(&mut op, &mut legs, handshakes, observer, now);
                    op.handle_timeout(now);
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
