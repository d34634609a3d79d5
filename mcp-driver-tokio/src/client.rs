//! The client: a session with one server and the loop that drives its operations.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full};

use mcp_proto::{
    Action, Budget, CallToolResult, Clock, Error, Leg, LegEnd, LegKind, LegReport, LegStatus,
    NoObserver, Observer, Operation, OperationDeadline, Outcome, Output, Session, SessionConfig,
    SessionInfo, Tool, TransportError, TransportErrorKind,
};
use serde_json::{Map, Value};
use tokio::time::Instant as TokioInstant;

use crate::cancel::{CancelHandle, CancelShared};
use crate::clock::TokioClock;
use crate::leg::{self, Frame, Http};
use crate::listen::{self, Delivery, Listening};

/// A session with one MCP server, driven on tokio.
///
/// Each async method is **one** operation: one `Send` future under one deadline opened when it
/// is first polled, spent across its legs (the handshake when the session is not live yet,
/// then the work). The session is kept between operations, so a second operation on a live
/// session sends no second handshake; a session the server has forgotten (404) is
/// re-established inside the operation that found out, by `mcp-proto`.
///
/// Every leg `mcp-proto` hands out is sent as it says: answers to requests the server sends on
/// a stream are sent as nested legs while the stream is read, and a stream the server closed
/// before its answer is resumed with a `GET` at the moment the state machine names.
///
/// Dropping an operation's future cancels it: the request in flight is dropped and its
/// connection closed. The session stays usable (a handshake interrupted this way is not
/// committed, and the next operation starts it again).
///
/// See the [crate docs](crate) for an example.
pub struct Client {
    session: Session,
    http: Http,
    observer: Box<dyn Observer + Send>,
    cancel: Arc<CancelShared>,
    cancel_notice: bool,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("session", &self.session)
            .field("cancel_notice", &self.cancel_notice)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client for the server `config` describes. Nothing is sent until the first operation;
    /// no runtime is needed to build it.
    pub fn new(config: SessionConfig) -> Self {
        Self {
            session: Session::new(config),
            http: leg::http_client(),
            observer: Box::new(NoObserver),
            cancel: Arc::new(CancelShared::default()),
            cancel_notice: false,
        }
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

    /// Receives a [`LegReport`] for every leg (its grant, how long it took by tokio's clock, and
    /// how it ended) and every event the server sends while answering. Replaces the previous
    /// observer; the default ignores everything.
    pub fn set_observer(&mut self, observer: impl Observer + Send + 'static) {
        self.observer = Box::new(observer);
    }

    /// A handle that cancels this client's operation in flight from another task.
    pub fn cancel_handle(&self) -> CancelHandle {
        CancelHandle::new(Arc::clone(&self.cancel))
    }

    /// Whether a `tools/call` cancelled through a [`CancelHandle`] is followed by the
    /// `notifications/cancelled` naming its request id that `mcp-proto` builds
    /// ([`Operation::cancel_notice`](mcp_proto::Operation::cancel_notice)). Off by default.
    ///
    /// The notice is best effort, under its own grant of
    /// [`CANCEL_NOTICE_GRANT`](mcp_proto::operation::CANCEL_NOTICE_GRANT) (one second), its
    /// answer not read; it is reported to the observer as a leg of kind
    /// [`LegKind::CancelNotice`]. The operation returns [`Error::Cancelled`] once the notice is
    /// answered or its grant is over. It is not sent when the future is dropped (nothing is
    /// left to send it), nor when the call had not been sent yet.
    pub fn set_cancel_notice(&mut self, on: bool) {
        self.cancel_notice = on;
    }

    /// A probe under the configured budget: the handshake on a new session (reporting the
    /// negotiated version and the server's info), a `ping` on a live one.
    ///
    /// # Errors
    /// Whatever ends the operation, as [`mcp_proto::Error`] says.
    pub async fn probe(&mut self) -> Result<SessionInfo, Error> {
        match self.run(Action::Probe, self.default_budget()).await? {
            Outcome::Probe(info) => Ok(info),
            other => unreachable!("mcp-proto answered a probe with {other:?}"),
        }
    }

    /// Every page of `tools/list` under the configured budget, the tools in order.
    ///
    /// # Errors
    /// Whatever ends the operation, as [`mcp_proto::Error`] says.
    pub async fn list_tools(&mut self) -> Result<Vec<Tool>, Error> {
        match self.run(Action::ListTools, self.default_budget()).await? {
            Outcome::Tools(tools) => Ok(tools),
            other => unreachable!("mcp-proto answered a listing with {other:?}"),
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
        let action = Action::CallTool {
            name: name.to_owned(),
            arguments,
        };
        match self.run(action, self.default_budget()).await? {
            Outcome::Call(result) => Ok(result),
            other => unreachable!("mcp-proto answered a tool call with {other:?}"),
        }
    }

    /// Ends the session on the server (a `DELETE`, under a small budget of its own: the
    /// configured budget, at most 2 s) and forgets it; the next operation starts a new one.
    /// Nothing is sent when there is no live session id. A server that does not allow it
    /// (405) or already forgot the session (404) counts as closed.
    ///
    /// # Errors
    /// Whatever ends the operation, as [`mcp_proto::Error`] says.
    pub async fn close(&mut self) -> Result<(), Error> {
        let budget = self.default_budget().min(Budget::from_secs(2));
        self.run(Action::Close, budget).await.map(|_| ())
    }

    /// Runs `action` as one operation under `budget` (instead of the configured one), with
    /// the configured resolution. The deadline opens when the future is first polled.
    ///
    /// # Errors
    /// Whatever ends the operation, as [`mcp_proto::Error`] says.
    pub async fn run(&mut self, action: Action, budget: Budget) -> Result<Outcome, Error> {
        let resolution = self.session.config().default_resolution();
        let Self {
            session,
            http,
            observer,
            cancel,
            cancel_notice,
        } = self;
        let armed = cancel.arm();
        let clock = TokioClock;
        let deadline = OperationDeadline::start(clock.now(), budget, resolution);
        let mut op = session.start(action, deadline);
        let mut driver = Driver {
            http,
            observer: observer.as_mut(),
            cancel,
            armed,
            cancel_notice: *cancel_notice,
            done: None,
            listening: None,
        };
        loop {
            if let Some(result) = driver.done.take() {
                return result;
            }
            match op.poll_output(clock.now()) {
                Output::Transmit(leg) if leg.kind == LegKind::Listen => {
                    driver.listening = Some(Listening::start(driver.http, leg, clock.now()));
                }
                Output::Transmit(leg) => driver.leg(&mut op, leg).await,
                Output::Event(event) => driver.observer.event(&event),
                Output::Wait(until) => driver.wait(&mut op, until).await,
                Output::Done(result) => return result,
            }
        }
    }

    fn default_budget(&self) -> Budget {
        self.session.config().default_budget()
    }
}

/// What one operation's loop borrows from its client.
struct Driver<'c> {
    http: &'c Http,
    observer: &'c mut (dyn Observer + Send),
    cancel: &'c CancelShared,
    armed: u64,
    cancel_notice: bool,
    /// The result, when the operation ended while a leg's body was being read.
    done: Option<Result<Outcome, Error>>,
    /// The session's standalone stream, when the operation opened one.
    listening: Option<Listening>,
}

/// What a wait beside the standalone stream gave.
enum Step<T> {
    Own(T),
    Listen(Delivery),
}

impl Driver<'_> {
    /// Sends one leg, bounded as a whole by its grant and raced against the cancel handle,
    /// and reports how it ended.
    async fn leg(&mut self, op: &mut Operation<'_>, leg: Leg) {
        let clock = TokioClock;
        let (cancel, armed) = (self.cancel, self.armed);
        let Leg {
            number,
            kind,
            request,
            timeout,
            ends_at,
        } = leg;
        let started = clock.now();
        let sent = !cancel.is_fired(armed);
        let end = if sent {
            let until = TokioInstant::from_std(ends_at);
            tokio::select! {
                biased;
                () = cancel.fired(armed) => LegEnd::Cancelled,
                ended = tokio::time::timeout_at(until, self.exchange(op, request)) => {
                    ended.unwrap_or_else(|_| timed_out(op, timeout))
                }
            }
        } else {
            // Cancelled between legs: this one is never sent.
            LegEnd::Cancelled
        };
        // The request or response, if any, was dropped with the select: the leg is over.
        self.report(number, kind, timeout, started, end);
        if end == LegEnd::Cancelled {
            op.cancel();
            if sent {
                self.announce_cancel(op).await;
            }
        }
    }

    /// The whole of one outer leg: the request, the head, then the body frame by frame until
    /// the operation has its answer. Between frames, the operation's outputs are drained:
    /// events go to the observer, and an answer to a request the server sent on the stream is
    /// sent as a nested leg before reading on.
    async fn exchange(&mut self, op: &mut Operation<'_>, request: Request<Vec<u8>>) -> LegEnd {
        let http = self.http;
        let mut sending = std::pin::pin!(http.request(request.map(|b| Full::new(Bytes::from(b)))));
        let sent = loop {
            let step = tokio::select! {
                biased;
                sent = &mut sending => Step::Own(sent),
                delivery = listen::next(&mut self.listening) => Step::Listen(delivery),
            };
            match step {
                Step::Own(sent) => break sent,
                // The operation ended while this leg waited (an answer to a server request
                // failed): the leg is abandoned.
                Step::Listen(delivery) => {
                    if !self.on_listen(op, delivery, true).await {
                        return LegEnd::Cancelled;
                    }
                }
            }
        };
        let (head, mut body) = match leg::sent(op, sent) {
            Ok(response) => response,
            Err(end) => return end,
        };
        let end = LegEnd::Status(head.status.as_u16());
        if op.handle_response(head.status, &head.headers, TokioClock.now()) == LegStatus::Complete {
            return end;
        }
        loop {
            let step = tokio::select! {
                biased;
                frame = body.frame() => Step::Own(frame),
                delivery = listen::next(&mut self.listening) => Step::Listen(delivery),
            };
            let more = match step {
                Step::Own(frame) => match leg::feed_frame(op, frame) {
                    // `body` drops here: unless it was read to its end, hyper closes the
                    // connection rather than pool it, so a stream kept open ends with the leg.
                    Frame::Over(transport) => {
                        if transport.is_none() {
                            leg::drain_rest(&mut body).await;
                        }
                        return transport.unwrap_or(end);
                    }
                    Frame::ReadMore => self.drain(op).await,
                },
                Step::Listen(delivery) => self.on_listen(op, delivery, true).await,
            };
            if !more {
                return end;
            }
        }
    }

    /// Feeds what the standalone stream delivered to the operation. With `drain` (a leg of
    /// the operation is in flight), drains its outputs too, so an elicitation there is answered
    /// here; without, the caller's loop polls the operation next. False when it is over.
    async fn on_listen(&mut self, op: &mut Operation<'_>, delivery: Delivery, drain: bool) -> bool {
        let now = TokioClock.now();
        let report = |end| (end, true);
        let (end, over) = match delivery {
            Delivery::Head(Ok(response)) => {
                let (head, body) = response.into_parts();
                let end = LegEnd::Status(head.status.as_u16());
                if op.handle_listen_response(head.status, &head.headers, now) == LegStatus::ReadMore
                {
                    if let Some(listening) = &mut self.listening {
                        listening.read_body(body);
                    }
                    (end, false)
                } else {
                    report(end)
                }
            }
            Delivery::Head(Err(err)) => {
                op.handle_listen_end(now);
                report(LegEnd::Transport(leg::kind_of(&err)))
            }
            Delivery::Frame(Some(Ok(frame))) => match frame.data_ref().filter(|d| !d.is_empty()) {
                Some(data) if op.handle_listen_chunk(data, now) == LegStatus::Complete => {
                    report(LegEnd::Status(200))
                }
                _ => (LegEnd::Status(200), false),
            },
            Delivery::Frame(None) => {
                op.handle_listen_end(now);
                report(LegEnd::Status(200))
            }
            Delivery::Frame(Some(Err(_))) => {
                op.handle_listen_end(now);
                report(LegEnd::Transport(TransportErrorKind::Io))
            }
            Delivery::TimedOut => {
                op.handle_listen_end(now);
                report(LegEnd::Transport(TransportErrorKind::TimedOut))
            }
        };
        if over {
            if let Some(listening) = self.listening.take() {
                let started = listening.started;
                self.report(
                    listening.number,
                    LegKind::Listen,
                    listening.grant,
                    started,
                    end,
                );
            }
        }
        !drain || self.drain(op).await
    }

    /// Drains the operation's outputs while its stream is read. False when the operation is
    /// over (its result is kept for the loop): stop reading.
    async fn drain(&mut self, op: &mut Operation<'_>) -> bool {
        loop {
            match op.poll_output(TokioClock.now()) {
                Output::Wait(_) => return true,
                Output::Event(event) => self.observer.event(&event),
                Output::Transmit(nested) => self.nested(op, nested).await,
                Output::Done(result) => {
                    self.done = Some(result);
                    return false;
                }
            }
        }
    }

    /// A leg sent while an outer stream is read (an answer to a server request), bounded by
    /// its own grant (and, as it runs inside it, by the outer leg's).
    async fn nested(&mut self, op: &mut Operation<'_>, leg: Leg) {
        let started = TokioClock.now();
        let until = TokioInstant::from_std(leg.ends_at);
        let end = tokio::time::timeout_at(until, leaf(self.http, op, leg.request))
            .await
            .unwrap_or_else(|_| timed_out(op, leg.timeout));
        self.report(leg.number, leg.kind, leg.timeout, started, end);
    }

    /// Waits until `until` (a stream's resumption, or the standalone stream's head the work
    /// request waits for), raced against the cancel handle and beside the standalone stream.
    /// Returns after anything happens: the loop polls the operation again.
    async fn wait(&mut self, op: &mut Operation<'_>, until: std::time::Instant) {
        let (cancel, armed) = (self.cancel, self.armed);
        let step = tokio::select! {
            biased;
            () = cancel.fired(armed) => None,
            () = tokio::time::sleep_until(TokioInstant::from_std(until)) => Some(Step::Own(())),
            delivery = listen::next(&mut self.listening) => Some(Step::Listen(delivery)),
        };
        match step {
            None => {
                op.cancel();
                self.announce_cancel(op).await;
            }
            Some(Step::Own(())) => op.handle_timeout(TokioClock.now()),
            Some(Step::Listen(delivery)) => {
                self.on_listen(op, delivery, false).await;
            }
        }
    }

    /// Sends the operation's `notifications/cancelled`, when enabled and a `tools/call` was
    /// interrupted: best effort, under its own grant, the answer not read.
    async fn announce_cancel(&mut self, op: &Operation<'_>) {
        if !self.cancel_notice {
            return;
        }
        let started = TokioClock.now();
        let Some(notice) = op.cancel_notice(started) else {
            return;
        };
        let until = TokioInstant::from_std(notice.ends_at);
        let request = notice.request.map(|body| Full::new(Bytes::from(body)));
        let end = match tokio::time::timeout_at(until, self.http.request(request)).await {
            Ok(Ok(response)) => LegEnd::Status(response.status().as_u16()),
            Ok(Err(err)) => LegEnd::Transport(leg::kind_of(&err)),
            Err(_) => LegEnd::Transport(TransportErrorKind::TimedOut),
        };
        self.report(notice.number, notice.kind, notice.timeout, started, end);
    }

    fn report(
        &mut self,
        number: u32,
        kind: LegKind,
        grant: Duration,
        started: Instant,
        end: LegEnd,
    ) {
        self.observer.leg_finished(&LegReport {
            number,
            kind,
            grant,
            elapsed: TokioClock.now().saturating_duration_since(started),
            end,
        });
    }
}

/// A nested leg: the request and its head, and its body if the operation reads one.
async fn leaf(http: &Http, op: &mut Operation<'_>, request: Request<Vec<u8>>) -> LegEnd {
    let (head, mut body) = match leg::send(http, op, request).await {
        Ok(response) => response,
        Err(end) => return end,
    };
    let end = LegEnd::Status(head.status.as_u16());
    if op.handle_response(head.status, &head.headers, TokioClock.now()) == LegStatus::Complete {
        return end;
    }
    loop {
        if let Frame::Over(transport) = leg::read_frame(op, &mut body).await {
            return transport.unwrap_or(end);
        }
    }
}

/// Tells the operation the leg's grant ran out in the transport.
fn timed_out(op: &mut Operation<'_>, grant: Duration) -> LegEnd {
    let detail = format!("the leg's grant of {} ms ran out", grant.as_millis());
    let error = TransportError::new(TransportErrorKind::TimedOut, detail);
    op.handle_transport_error(error, TokioClock.now());
    LegEnd::Transport(TransportErrorKind::TimedOut)
}
