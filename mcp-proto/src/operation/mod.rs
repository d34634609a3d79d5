//! The operation state machine: one public action under one deadline, leg by leg.
//!
//! An [`Operation`] is one action (probe, a listing, a call, a read, close the session) under one
//! [`OperationDeadline`]. It decides which leg comes next, grants it what is left of the
//! budget, reads each answer by the transport's rules and ends with a typed result. It does
//! not know which driver runs it, and it never reads a clock, opens a socket or sleeps.
//!
//! This module routes: it owns the struct, [`poll_output`](Operation::poll_output), the inputs
//! (each names the leg it is about) and how an operation ends (finish, fail, cancel). Each
//! concern with state of its own lives beside it:
//!
//! | module     | its state                                 | its concern                              |
//! |------------|-------------------------------------------|------------------------------------------|
//! | `types`    | none                                      | what callers see: actions, events, ends  |
//! | `driving`  | none                                      | what drivers see: legs, outputs, inputs  |
//! | `grant`    | the deadline, the leg and timer tables    | the one grant rule, legs in and out      |
//! | `legs`     | the leg table (one slot per role)         | which legs are in flight, found by id    |
//! | `timers`   | the timer table                           | every instant something happens unasked  |
//! | `transmit` | none                                      | the request each leg carries             |
//! | `read`     | the work leg's reading (head, JSON, SSE)  | heads, bodies, the messages in them      |
//! | `answer`   | pages, skill files, the input round       | what a result means (`Meaning`)          |
//! | `era`      | none (the era lives on the operation)     | era detection: fallback, switch forward  |
//! | `authorize`| the flow, the auth leg's answer           | a 401 or 403: OAuth legs, the person     |
//! | `replies`  | answers owed to the server                | server requests and their answers        |
//! | `resume`   | the last event id, the pending resumption | streams closed before their answer       |
//! | `listen`   | the standalone stream                     | server messages outside any answer       |
//! | `stdio`    | the stdout framer the session lent        | its lines: a message, noise, too long    |
//! | `view`     | its copy of the session, what it learned  | the session, without borrowing it        |
//!
//! Request bytes come from the crate's `wire` module; what the session keeps between
//! operations from [`Session`], copied into the operation when it starts (`view`).
//!
//! Every leg is granted at one site (`grant`), whose refusal rule is one `match`, and
//! [`poll_output`](Operation::poll_output) is a loop over one step: a step either hands
//! something out or changes the operation (a refusal acted on, an authorization ended), and
//! the next step decides.
//!
#![doc = include_str!("driving.md")]

mod answer;
mod authorize;
mod close;
mod driving;
mod era;
mod failure;
mod grant;
mod legs;
mod listen;
mod read;
mod replies;
mod resume;
mod stdio;
mod timers;
mod transmit;
mod types;
mod view;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use http::{HeaderMap, StatusCode};
use serde_json::Value;

use crate::catalog::ListKind;
use crate::deadline::OperationDeadline;
use crate::error::Error;
use crate::jsonrpc::{Incoming, RequestId};
use crate::model::{Notification, ProtocolVersion, SessionInfo, SubscriptionEnd};
use crate::session::Session;
use crate::wire;
use mcp_auth::{QUOTE_LIMIT, clip};

use answer::{Answering, Meaning, Relist};
use authorize::{Authorizing, PersonAnswer, Polled};
use close::Closing;
use era::{EraState, Move};
use failure::Failure;
use grant::{Grantee, Grants, Refusal};
use legs::Role;
use listen::Listen;
use read::{Framed, Read, Reading};
use replies::Replies;
use resume::Resumption;
use stdio::{Line, Stdout};
use timers::Timer;
use view::View;

pub use driving::{
    Authorize, CANCEL_NOTICE_GRANT, DRAIN_BYTES, DRAIN_WAIT, Input, LISTEN_HEAD_WAIT, Leg, LegEnd,
    LegId, LegKind, LegReport, LegStatus, Output, ProcessExit, TransportError, TransportErrorKind,
    drain_until,
};
pub use types::{Action, DEFAULT_RETRY, Event, MAX_REISSUES, MAX_RESUMPTIONS, Outcome};

/// The next leg to build when nothing is in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Over stdio: start the server process.
    Spawn,
    /// Over HTTP: the session is needed and this operation has not got it yet: another
    /// operation is establishing it, or the session has not said yet which one will
    /// ([`Operation::handle_session`]).
    AwaitSession,
    Initialize,
    Initialized,
    Work,
}

/// Where the work starts, in the era `modern` says, knowing what `session` knows: the modern
/// era has no handshake, a live legacy session needs none; anything else needs the session's
/// handshake (over stdio, where operations run one at a time, it begins at once).
fn work_or_handshake(modern: Option<ProtocolVersion>, session: &View) -> Step {
    if modern.is_some() || session.info().is_some() {
        Step::Work
    } else if session.config().is_stdio() {
        Step::Initialize
    } else {
        Step::AwaitSession
    }
}

/// One MCP operation under one deadline. See the [module docs](self) for the driver loop.
///
/// It owns its state: it started from a copy of its [`Session`] and borrows nothing, so any
/// number of operations can be in flight on one session (each in its own task or thread);
/// what it learns about the session comes out as [`Output::Update`].
#[derive(Debug)]
pub struct Operation {
    /// What the operation knows of its session, and what it learned that the session has not
    /// seen yet.
    session: View,
    action: Action,
    /// The deadline, the legs in flight and the timers: every grant is made there.
    grants: Grants,
    next: Step,
    /// The handshake answered by `initialize`, committed to the session only once the
    /// `notifications/initialized` leg is accepted.
    pending: Option<SessionInfo>,
    reinitialized: bool,
    events: VecDeque<Event>,
    replies: Replies,
    resume: Resumption,
    listen: Listen,
    /// What the answers built up: the listing's pages, the skill's files, the input round.
    answering: Answering,
    /// The id of the `tools/call` to announce as cancelled, once the caller cancelled it.
    notice: Option<i64>,
    /// Over stdio: the server process must be ended at once before the result goes out (a
    /// message was left half-written in its stdin).
    kill: bool,
    /// Over stdio, a close: which of its steps is next.
    closing: Closing,
    /// The era the operation speaks, and whether it may still change it.
    era: EraState,
    /// The filter the server acknowledged on a subscription's stream.
    acknowledged: Option<Value>,
    /// The authorization the server asked for, while it runs and after (for a step-up).
    auth: Authorizing,
    finished: Option<Result<Outcome, Error>>,
    returned: bool,
    /// The work leg's answer, as far as it has been read.
    reading: Reading,
    /// Over stdio: the server's stdout, cut into lines.
    stdout: Stdout,
}

impl Operation {
    /// An operation for `action` under `deadline`, starting from what `session` knows (see
    /// [`Session::start`]).
    pub(crate) fn new(session: &mut Session, action: Action, deadline: OperationDeadline) -> Self {
        let stdio = session.config().is_stdio();
        // A local server started anew may be another build of it (upgraded, or another
        // program on the PATH): its era is found again, not remembered.
        let restarting = stdio && !session.process_running() && action != Action::Close;
        let era = EraState::starting(session, &action, restarting);
        let modern = era.modern();
        // Closing a session that has no id on the server (or no session at all, as in the
        // modern era) sends nothing; over stdio, closing no process does nothing.
        let nothing_to_close = action == Action::Close
            && if stdio {
                !session.process_running()
            } else {
                session.info().and_then(|i| i.session_id.as_ref()).is_none()
            };
        if nothing_to_close {
            session.reset();
        }
        let (known, framer) = session.lend();
        let view = View::of(known);
        let stdout = Stdout::lent(framer, view.config().body_cap());
        // The modern era has no handshake: the work goes out first. Over stdio a process
        // comes first, when none runs.
        let next = if restarting {
            Step::Spawn
        } else if stdio && action == Action::Close {
            // The process is ended, whether its handshake was done or not.
            Step::Work
        } else {
            work_or_handshake(modern, &view)
        };
        let listen = Listen::for_operation(session.config(), &action, modern.is_some());
        let answering = Answering::for_action(&action);
        let mut op = Self {
            session: view,
            action,
            grants: Grants::new(deadline, stdio),
            next,
            pending: None,
            reinitialized: false,
            events: VecDeque::new(),
            replies: Replies::default(),
            resume: Resumption::default(),
            listen,
            answering,
            notice: None,
            kill: false,
            closing: Closing::default(),
            era,
            acknowledged: None,
            auth: Authorizing::default(),
            finished: None,
            returned: false,
            reading: Reading::default(),
            stdout,
        };
        if nothing_to_close {
            // Ended before it began, as every operation ends: the stdout framer (with any
            // partial line the last operation left) goes back to the session.
            op.finish(Ok(Outcome::Closed));
        }
        op.handle_session(session);
        op
    }

    /// Whether the operation waits for its session: it needs one and has not got it (or the
    /// server refused it and another operation may be authorizing for the session).
    fn awaits_session(&self) -> bool {
        (self.next == Step::AwaitSession || self.auth.is_waiting()) && !self.is_finished()
    }

    /// [`Input::Session`]: what `session` holds now, for an operation that awaits it.
    fn handle_session(&mut self, session: &mut Session) {
        if !self.awaits_session() {
            return;
        }
        if self.auth.is_waiting() {
            if let Some(started) = self.auth.take(&mut self.session, session) {
                self.grants.timers.stop(Timer::SessionWait);
                if let Err(error) = started {
                    let method = self.next_leg_kind().request_name();
                    self.fail(method, Failure::Authorization(error));
                }
            }
            return;
        }
        if !self.session.take_session(session) {
            return;
        }
        self.grants.timers.stop(Timer::SessionWait);
        self.next = if self.session.info().is_some() {
            Step::Work
        } else {
            Step::Initialize
        };
    }

    /// The configuration of the session the operation runs on (its transport, its label).
    pub fn session_config(&self) -> &crate::SessionConfig {
        self.session.config()
    }

    /// The operation's deadline.
    pub fn deadline(&self) -> &OperationDeadline {
        self.grants.deadline()
    }

    /// What the operation is for.
    pub fn action(&self) -> &Action {
        &self.action
    }

    /// How many legs have been handed to the driver so far.
    pub fn legs_sent(&self) -> u32 {
        self.grants.sent()
    }

    /// True once the result is ready (it may not have been polled yet, and a cancel notice
    /// may still go out before it).
    pub fn is_finished(&self) -> bool {
        self.finished.is_some() || self.returned
    }

    /// Whether leg `id` is still in flight: a driver that reads several legs at once drops a
    /// leg the operation no longer has (its grant ran out, or the operation let it go) after
    /// any input.
    pub fn is_in_flight(&self, id: LegId) -> bool {
        self.grants.legs.find(id).is_some()
    }

    /// The next thing the driver must do. See the [module docs](self).
    pub fn poll_output(&mut self, now: Instant) -> Output {
        self.grants.at(now);
        loop {
            if let Some(output) = self.step(now) {
                return output;
            }
        }
    }

    /// One step towards the next output: the output, or `None` when the step changed the
    /// operation (a leg refused, the authorization ended) and the next step decides.
    fn step(&mut self, now: Instant) -> Option<Output> {
        if let Some(update) = self.session.next_update() {
            return Some(Output::Update(update));
        }
        if let Some(event) = self.events.pop_front() {
            return Some(Output::Event(event));
        }
        if let Some(report) = self.grants.next_report() {
            return Some(Output::LegEnded(report));
        }
        if self.is_finished() {
            return self.poll_finished(now);
        }
        if self.replies.is_owed() && !self.grants.legs.is_busy(Role::Reply) {
            return self.transmit(LegKind::Respond, now, None);
        }
        if self.grants.legs.is_busy(Role::Work) {
            return Some(self.wait(now));
        }
        if self.auth.is_waiting() || self.next == Step::AwaitSession {
            // Inside the budget: at its end, what it waited for (the handshake, the refused
            // request) is refused unsent.
            let end = self.grants.end_or(now);
            self.grants.timers.set(Timer::SessionWait, end);
            return Some(Output::AwaitSession(
                self.grants.timers.next().unwrap_or(now),
            ));
        }
        if self.auth.is_running() {
            return self.authorization_step(now);
        }
        if self.is_live() && self.listen.is_due() {
            return self.transmit(LegKind::Listen, now, None);
        }
        if self.grants.timers.is_armed(Timer::ListenHead)
            || self.grants.timers.is_armed(Timer::ResumePause)
            || self.grants.timers.is_armed(Timer::CloseStep)
        {
            return Some(self.wait(now));
        }
        let kind = if self.resume.is_pending() {
            LegKind::Resume
        } else {
            self.next_leg_kind()
        };
        self.transmit(kind, now, None)
    }

    /// The request whose answer is being read or awaited (the work leg in flight, or the one a
    /// pending resumption serves, else the next one): its kind, JSON-RPC id and grant.
    fn awaited(&self) -> (LegKind, Option<i64>, Duration) {
        match (self.grants.legs.get(Role::Work), self.resume.awaited()) {
            (Some(leg), _) => (leg.answers, leg.request_id, leg.grant),
            (None, Some(awaited)) => awaited,
            (None, None) => (self.next_leg_kind(), None, Duration::ZERO),
        }
    }

    /// Routes what the work leg's reading framed: each message where it belongs (a server's
    /// request or notification; the answer, after which nothing more is read), then acts on
    /// what followed them.
    fn framed(&mut self, framed: Framed, now: Instant) -> LegStatus {
        self.resume.saw_event_id(self.reading.last_event_id());
        for message in framed.messages {
            if let Some(answer) = self.server_message(message) {
                self.read_answer(answer);
                return LegStatus::Complete;
            }
        }
        // Named after the request whose answer was awaited (a resumption's GET serves it).
        let answers = self.awaited().0;
        let method = answers.request_name();
        match framed.then {
            Read::More => return LegStatus::ReadMore,
            Read::Over => {}
            Read::Again => {
                self.grants.end(Role::Work);
            }
            Read::Closed => {
                self.grants.end(Role::Work);
                self.finish(Ok(Outcome::Closed));
            }
            Read::SessionLost => self.session_lost(answers),
            Read::Accepted => {
                self.grants.end(Role::Work);
                self.handshake_confirmed();
            }
            // Nothing a modern server would say: perhaps a legacy server refused the modern
            // request.
            Read::Refused(status) => {
                if !self.fell_back_after(status) {
                    self.fail(method, Failure::Status(status));
                }
            }
            Read::EndedEarly { .. } if self.schedule_resumption(now) => {}
            // The server closed the subscription's stream: it is over.
            Read::EndedEarly { .. } if answers == LegKind::Subscribe => {
                self.subscription_ended(true);
            }
            Read::EndedEarly { saw_message } => {
                let detail = if saw_message {
                    "the event stream carried no response to the request"
                } else {
                    "the event stream carried no message"
                };
                self.fail(method, Failure::Malformed(detail.to_owned()));
            }
            Read::Failed(failure) => self.fail(method, failure),
        }
        LegStatus::Complete
    }

    /// The awaited request did not get its answer within the budget: it timed out (the server
    /// was asked, so this is not a refused leg).
    fn fail_awaited_timed_out(&mut self) {
        let (kind, _, grant) = self.awaited();
        let method = kind.request_name();
        self.fail(method, Failure::TimedOut(grant));
    }

    /// The handshake in force: committed to the session, or answered and not yet confirmed.
    fn handshake(&self) -> Option<&SessionInfo> {
        self.pending.as_ref().or_else(|| self.session.info())
    }

    /// Grants the leg `kind` what is left of the budget, builds its request and hands it out;
    /// `built` is the request an authorization flow made for an auth leg. A refused leg is
    /// never built: `None`, the refusal acted on.
    fn transmit(
        &mut self,
        kind: LegKind,
        now: Instant,
        built: Option<http::Request<Vec<u8>>>,
    ) -> Option<Output> {
        let grant = self.grant(Grantee::Leg(kind), now)?;
        let config = self.session.config();
        let (request, answers) = match kind {
            LegKind::Resume => {
                let (answers, request_id, _) = self.resume.take()?;
                let last_event_id = self.resume.last_event_id();
                let request = config.wire().get(self.handshake(), last_event_id);
                (request, (answers, request_id))
            }
            LegKind::Respond => {
                let body = self.replies.pop_body()?;
                let request = config.wire().post(body, self.handshake());
                (request, (kind, None))
            }
            LegKind::Listen => {
                self.listen = Listen::Opening;
                (config.wire().get(self.session.info(), None), (kind, None))
            }
            LegKind::CancelNotice => {
                let body = wire::cancelled(self.notice.take()?);
                (config.wire().post(body, self.handshake()), (kind, None))
            }
            LegKind::Auth(_) => (built?, (kind, None)),
            _ => {
                // A new request opens a new answer stream: an event id of an earlier stream
                // must never be used to resume this one.
                self.resume.forget_stream();
                let (request, request_id) = transmit::Request {
                    session: &self.session,
                    action: &self.action,
                    handshake: self.pending.as_ref().or_else(|| self.session.info()),
                    modern: self.era.modern(),
                    paging: &self.answering.paging,
                    loading: &self.answering.loading,
                    input: self.answering.input.as_ref(),
                }
                .build(kind);
                (request, (kind, request_id))
            }
        };
        let leg = self.hand_out(kind, request, grant, now, answers);
        if kind == LegKind::Listen {
            // The work waits for the stream's head, at most this long.
            let head_wait = now.checked_add(LISTEN_HEAD_WAIT).unwrap_or(now);
            self.grants
                .timers
                .set(Timer::ListenHead, head_wait.min(leg.ends_at));
        }
        Some(Output::Transmit(leg))
    }

    /// What `who` is granted at `now`; `None` when it is refused, the refusal acted on: the
    /// one place where a spent budget changes the operation.
    fn grant(&mut self, who: Grantee, now: Instant) -> Option<Duration> {
        let stdio = self.session.config().is_stdio();
        match self.grants.grant(who, now, stdio) {
            Ok(grant) => Some(grant),
            Err(Refusal::Spent {
                budget,
                method,
                leg,
            }) => {
                self.fail(method, Failure::Spent { budget, leg });
                None
            }
            // The request was sent and its answer did not come within the budget: that is
            // the request timing out, not a request the server never saw.
            Err(Refusal::AwaitedLate) => {
                self.fail_awaited_timed_out();
                None
            }
            // A close after the budget: the local server is ended at once, nothing waits.
            Err(Refusal::KillInstead) => {
                self.finish(Ok(Outcome::Closed));
                self.kill = true;
                None
            }
            // The operation goes on without it (or, for the notice, ends without it).
            Err(Refusal::Dropped) => {
                match who {
                    Grantee::Leg(LegKind::Listen) => self.listen = Listen::Off,
                    _ => self.notice = None,
                }
                None
            }
        }
    }

    /// Puts the token on an MCP request and frames it for the transport, then enters the leg.
    fn hand_out(
        &mut self,
        kind: LegKind,
        mut request: http::Request<Vec<u8>>,
        grant: Duration,
        now: Instant,
        answers: (LegKind, Option<i64>),
    ) -> Leg {
        if !matches!(kind, LegKind::Auth(_)) {
            self.session.present_token(&mut request, now);
        }
        // Over stdio a message is a line: the transport's framing is decided here, once.
        if self.session.config().is_stdio() && !request.body().is_empty() {
            request.body_mut().push(b'\n');
        }
        if Role::of(kind) == Role::Work {
            self.reading.restart();
        }
        self.grants.hand_out(kind, request, grant, now, answers)
    }

    /// [`poll_output`](Self::poll_output) for a driver that runs this operation alone on
    /// `session` (one at a time): what the operation learns is applied to `session`, and an
    /// operation that awaits its session is handed it, so this never returns
    /// [`Output::Update`]. It returns `Wait` for the session only while another operation on
    /// it holds what this one waits for. A driver with several operations in flight at once
    /// must also wake the others when an update was applied (see the [module docs](self)).
    pub fn poll_on(&mut self, session: &mut Session, now: Instant) -> Output {
        loop {
            match self.poll_output(now) {
                Output::Update(update) => session.apply(update),
                Output::AwaitSession(until) => {
                    self.handle_session(session);
                    if self.awaits_session() {
                        return Output::AwaitSession(until);
                    }
                }
                output => return output,
            }
        }
    }

    /// The next queued event, for a driver that only wants events (legs are only handed out
    /// by [`poll_output`](Self::poll_output)).
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Tells the operation what came (see [`Input`]): the one way a driver feeds it. For a
    /// head or a chunk, the answer says whether to read on ([`LegStatus::ReadMore`]); for
    /// any other input it is [`LegStatus::Complete`]. Drain
    /// [`poll_output`](Self::poll_output) after every input.
    pub fn handle_input(&mut self, input: Input<'_>, now: Instant) -> LegStatus {
        self.grants.at(now);
        match input {
            Input::Head {
                leg,
                status,
                headers,
            } => return self.handle_response(leg, status, headers, now),
            Input::Chunk { leg, bytes } => return self.handle_body_chunk(leg, bytes, now),
            Input::End { leg } => self.handle_body_end(leg, now),
            Input::Failed { leg, error } => self.handle_transport_error(leg, error, now),
            Input::Sent { leg } => self.handle_sent(leg, now),
            Input::Stdout(bytes) => self.handle_stdout(bytes, now),
            Input::Exit(exit) => self.handle_exit(exit, now),
            Input::Timeout => self.handle_timeout(now),
            Input::Session(session) => self.handle_session(session),
            Input::Redirect(url) => self.person_answered(PersonAnswer::Redirect(url), Some(now)),
            Input::AuthorizerFailed(detail) => {
                self.person_answered(PersonAnswer::Failed(detail), Some(now));
            }
            Input::NoAuthorizer => self.person_answered(PersonAnswer::NoAuthorizer, None),
            Input::Cancel => self.cancel(),
        }
        LegStatus::Complete
    }

    fn handle_response(
        &mut self,
        id: LegId,
        status: StatusCode,
        headers: &HeaderMap,
        now: Instant,
    ) -> LegStatus {
        let Some(role) = self.in_time(id, now) else {
            return LegStatus::Complete;
        };
        if let Some(leg) = self.grants.legs.get_mut(role) {
            leg.status = status.as_u16();
        }
        match role {
            Role::Work if self.is_auth_leg() => {
                self.auth.head(status, headers);
                LegStatus::ReadMore
            }
            Role::Work => {
                let Some(leg) = self.grants.legs.get(Role::Work) else {
                    return LegStatus::Complete;
                };
                let context = read::Context {
                    session: &mut self.session,
                    auth: &mut self.auth,
                    era: &self.era,
                };
                let read = self.reading.head(leg, status, headers, context);
                self.framed(Framed::then(read), now)
            }
            Role::Reply if !status.is_success() => {
                // Any 2xx, with or without a body, means the server has the answer.
                let method = self.awaited().0.request_name();
                let status = status.as_u16();
                self.fail(method, Failure::Status(status));
                LegStatus::Complete
            }
            Role::Listen => {
                self.grants.timers.stop(Timer::ListenHead);
                let cap = self.session.config().body_cap();
                if self.listen.head(status, headers, cap) {
                    return LegStatus::ReadMore;
                }
                self.listen_off();
                LegStatus::Complete
            }
            Role::Reply | Role::Notice => {
                self.grants.end(role);
                LegStatus::Complete
            }
        }
    }

    fn handle_body_chunk(&mut self, id: LegId, chunk: &[u8], now: Instant) -> LegStatus {
        let Some(role) = self.in_time(id, now) else {
            return LegStatus::Complete;
        };
        match role {
            Role::Work if self.is_auth_leg() => {
                if !self.auth.chunk(chunk) {
                    return LegStatus::ReadMore;
                }
                self.auth_end();
                LegStatus::Complete
            }
            Role::Work => {
                let framed = self.reading.chunk(chunk);
                self.framed(framed, now)
            }
            Role::Listen => {
                let (messages, broken) = self.listen.chunk(chunk);
                for message in messages {
                    // Responses belong on the stream of their request; nothing to do here.
                    let _ = self.server_message(message);
                }
                if !broken {
                    return LegStatus::ReadMore;
                }
                self.listen_off();
                LegStatus::Complete
            }
            // Their bodies are not read: the leg ended with its head.
            Role::Reply | Role::Notice => LegStatus::Complete,
        }
    }

    fn handle_body_end(&mut self, id: LegId, now: Instant) {
        let Some(role) = self.in_time(id, now) else {
            return;
        };
        match role {
            Role::Work if self.is_auth_leg() => self.auth_end(),
            Role::Work => {
                let status = self.grants.legs.get(role).map_or(0, |leg| leg.status);
                let framed = self.reading.end(status, self.era.modern().is_some());
                self.framed(framed, now);
            }
            Role::Listen => self.listen_off(),
            Role::Reply | Role::Notice => {
                self.grants.end(role);
            }
        }
    }

    /// Over stdio: the message of leg `id` was written to the server's stdin (for a
    /// [`LegKind::Spawn`] leg: the process started). A notification or an answer is over
    /// then; a request now awaits its answer on stdout.
    fn handle_sent(&mut self, id: LegId, now: Instant) {
        let Some(role) = self.in_time(id, now) else {
            return;
        };
        let Some(kind) = self.grants.legs.get(role).map(|leg| leg.kind) else {
            return;
        };
        match kind {
            LegKind::Spawn => {
                self.grants.end(role);
                self.session.process_started();
                self.stdout.restart();
                self.next = work_or_handshake(self.era.modern(), &self.session);
            }
            LegKind::Initialized => {
                self.grants.end(role);
                self.handshake_confirmed();
            }
            LegKind::Respond | LegKind::CancelNotice => {
                self.grants.end(role);
            }
            // A step of a close: the wait for the exit begins (or goes on, after a SIGTERM).
            LegKind::Shutdown | LegKind::Terminate => {
                let ends_at = self.grants.end(role).map_or(now, |leg| leg.ends_at);
                if let Some(at) = self.closing.done(kind, now, ends_at) {
                    self.grants.timers.set(Timer::CloseStep, at);
                }
            }
            // A request: its answer comes on stdout. A kill: its end is the exit.
            _ => {
                if let Some(leg) = self.grants.legs.get_mut(role) {
                    leg.written = true;
                }
            }
        }
    }

    /// Over stdio: the next bytes the server wrote on its stdout, each line it completed
    /// routed (see `stdio`).
    fn handle_stdout(&mut self, chunk: &[u8], now: Instant) {
        let lines = self.stdout.feed(chunk);
        // A leg whose grant has ended by now times out before any line is read for it.
        let work = self.grants.legs.get(Role::Work).map(|leg| leg.id);
        if let (false, Some(id)) = (lines.is_empty(), work) {
            let _ = self.in_time(id, now);
        }
        for line in lines {
            let awaiting = self.grants.legs.get(Role::Work).and_then(|leg| {
                let method = leg.answers.request_name();
                leg.request_id.map(|id| (id, method))
            });
            match line {
                Line::Noise(line) => self.events.push_back(Event::StdoutNoise { line }),
                Line::TooLong => {
                    if let Some((_, method)) = awaiting {
                        let cap = self.session.config().body_cap();
                        self.fail(method, Failure::TooLarge(cap));
                    }
                }
                Line::Message(_) if self.is_finished() => {}
                Line::Message(message) => {
                    // A response: the awaited request's, or one that came too late for its own.
                    let Some(answer) = self.server_message(message) else {
                        continue;
                    };
                    if awaiting.is_some_and(|(id, _)| stdio::answers(&answer, id)) {
                        self.read_answer(answer);
                    }
                }
            }
        }
    }

    /// Over stdio: the server process ended (or closed its stdout). A request awaiting its
    /// answer fails with [`Error::ServerExited`]; a close is complete.
    fn handle_exit(&mut self, exit: &ProcessExit, now: Instant) {
        self.session.process_exited();
        self.stdout.restart();
        self.grants.exited();
        let work = self.grants.legs.get(Role::Work);
        let kind = work.map(|leg| leg.kind);
        let ends_process = matches!(
            kind,
            Some(LegKind::Shutdown | LegKind::Terminate | LegKind::Kill)
        );
        if self.closing.is_underway() || ends_process {
            // A kill after the result (a half-written message) leaves the result as it was.
            self.grants.end(Role::Work);
            self.grants.timers.stop(Timer::CloseStep);
            self.finish(Ok(Outcome::Closed));
            return;
        }
        let Some((id, method)) = work.map(|leg| (leg.id, leg.answers.request_name())) else {
            return;
        };
        if self.in_time(id, now).is_some() {
            let (status, stderr) = (exit.status, clip(&exit.stderr, QUOTE_LIMIT));
            self.fail(method, Failure::Exited { status, stderr });
        }
    }

    fn handle_transport_error(&mut self, id: LegId, error: TransportError, now: Instant) {
        if error.kind == TransportErrorKind::Tls(crate::tls::TlsProblem::TimedOut) {
            if let Some(role) = self.grants.legs.find(id) {
                self.grants.timers.stop(Timer::LegEnd(role));
                self.leg_failed(role, Some(&error));
            }
            return;
        }
        let Some(role) = self.in_time(id, now) else {
            return;
        };
        self.leg_failed(role, Some(&error));
    }

    /// Every timer due by `now` expires.
    fn handle_timeout(&mut self, now: Instant) {
        for timer in Timer::ALL {
            if !self.grants.timers.is_due(timer, now) {
                continue;
            }
            self.expire(timer);
        }
    }

    /// Stops `timer`; a leg's end fails that leg. A pause that ended needs nothing more:
    /// `poll_output` sends what it held back.
    fn expire(&mut self, timer: Timer) {
        self.grants.timers.stop(timer);
        match timer {
            Timer::LegEnd(role) => self.leg_failed(role, None),
            Timer::Person => {
                self.person_failed(
                    "the authorization was not approved within the operation's budget",
                );
            }
            // The budget ended while another operation established the session (the
            // handshake is next) or authorized for it (the refused request is): the budget
            // check refuses it.
            Timer::SessionWait if self.auth.is_waiting() => self.auth.stop_waiting(),
            Timer::SessionWait => self.next = Step::Initialize,
            // The process did not exit in time: the close's next step goes out.
            Timer::CloseStep => self.closing.wait_over(),
            Timer::ResumePause | Timer::ListenHead => {}
        }
    }

    /// [`Input::Cancel`].
    fn cancel(&mut self) {
        if self.is_finished() {
            return;
        }
        let interrupted = self.awaited().0;
        self.give_up_call(true);
        self.events.clear();
        self.grants.cancel();
        let method = interrupted.request_name();
        self.fail(method, Failure::Cancelled);
    }

    /// The `tools/call` awaited is given up on (`cancelled` by the caller, else its grant ran
    /// out): `notifications/cancelled` follows, under its own grant, where the transport needs
    /// one. Over stdio, always: there is no stream to close, and the server would work on.
    /// Over HTTP, after a cancel in the legacy era when configured
    /// ([`SessionConfig::with_cancel_notice`](crate::SessionConfig::with_cancel_notice)); in
    /// the modern era closing the call's stream is the cancellation. Only a call that was sent
    /// is announced: the server never works on anything else.
    fn give_up_call(&mut self, cancelled: bool) {
        let (kind, request_id, _) = self.awaited();
        let config = self.session.config();
        let announced = config.is_stdio()
            || (cancelled && config.cancel_notice() && self.era.modern().is_none());
        if kind == LegKind::CallTool && announced {
            self.notice = request_id;
        }
    }

    fn poll_finished(&mut self, now: Instant) -> Option<Output> {
        if std::mem::take(&mut self.kill) {
            // The process is ended: no notice can reach it.
            self.notice = None;
            return self.transmit(LegKind::Kill, now, None);
        }
        if self.notice.is_some() {
            return self.transmit(LegKind::CancelNotice, now, None);
        }
        if self.grants.legs.is_busy(Role::Notice) || self.grants.legs.is_busy(Role::Work) {
            return Some(self.wait(now));
        }
        Some(match self.finished.take() {
            Some(result) => {
                self.returned = true;
                Output::Done(result)
            }
            None => Output::Done(Err(Error::AlreadyFinished)),
        })
    }

    fn wait(&self, now: Instant) -> Output {
        Output::Wait(self.grants.timers.next().unwrap_or(now))
    }

    /// The role of leg `id` if it is in flight and its grant has not ended by `now`; a leg
    /// whose input comes at or after its end times out here.
    fn in_time(&mut self, id: LegId, now: Instant) -> Option<Role> {
        match self.grants.role_at(id, now)? {
            Ok(role) => Some(role),
            Err(late) => {
                self.expire(Timer::LegEnd(late));
                None
            }
        }
    }

    /// The leg in `role` failed: in the transport (`error`), or its grant ran out (`None`).
    /// The standalone stream and the cancel notice are dropped quietly; any other leg's
    /// failure ends the operation.
    fn leg_failed(&mut self, role: Role, error: Option<&TransportError>) {
        let kind = error.map_or(TransportErrorKind::TimedOut, |error| error.kind);
        self.grants.failed(role, kind);
        if role == Role::Work && error.is_none() {
            self.give_up_call(false);
        }
        match role {
            Role::Listen => self.listen_off(),
            Role::Notice => {
                self.grants.end(Role::Notice);
            }
            // A subscription lasts as long as the budget: its end is the subscription's.
            Role::Work
                if error.is_none_or(|e| e.kind == TransportErrorKind::TimedOut)
                    && self.awaited().0 == LegKind::Subscribe =>
            {
                self.subscription_ended(false);
            }
            // A server process that did not start.
            Role::Work
                if self
                    .grants
                    .legs
                    .get(Role::Work)
                    .is_some_and(|l| l.kind == LegKind::Spawn) =>
            {
                self.fail("spawn", Failure::spawn(error));
            }
            // A modern answer stream that broke mid-way lost its request: it is sent again.
            Role::Work
                if error.is_some_and(|e| e.kind == TransportErrorKind::Io)
                    && self.reading.is_streaming()
                    && self.era.modern().is_some()
                    && self.reissue() => {}
            Role::Work | Role::Reply => {
                let (method, grant) = self.failed_request(role);
                let error = error.cloned();
                self.fail(method, Failure::Transport { grant, error });
            }
        }
    }

    /// What an error about the leg in `role` names, and that leg's grant: for the work leg,
    /// the request whose answer it reads; for any other, the request it serves (the one whose
    /// answer the operation awaits).
    fn failed_request(&self, role: Role) -> (&'static str, Duration) {
        let leg = self.grants.legs.get(role);
        let grant = leg.map_or(Duration::ZERO, |leg| leg.grant);
        let method = match leg {
            Some(leg) if role == Role::Work => leg.answers.request_name(),
            _ => self.awaited().0.request_name(),
        };
        (method, grant)
    }

    fn finish(&mut self, result: Result<Outcome, Error>) {
        let first = self.finished.is_none() && !self.returned;
        if first {
            // A message cut off mid-line leaves the process unusable: it is ended at once.
            self.kill = self.session.config().is_stdio() && self.grants.legs.any_half_written();
            // A close forgets the session, whether the server heard it or not.
            if self.action == Action::Close {
                self.session.reset();
            }
            self.session.hand_back(self.stdout.hand_back());
        }
        self.grants.clear();
        self.auth.stop();
        self.resume.abandon();
        self.listen = Listen::Off;
        if self.finished.is_none() && !self.returned {
            self.finished = Some(result);
        }
    }

    /// Ends the operation with `failure`, about the request `method`.
    fn fail(&mut self, method: &'static str, failure: Failure) {
        let error = failure.into_error(self.label(), method);
        self.finish(Err(error));
    }

    fn label(&self) -> String {
        self.session.config().label().to_owned()
    }

    /// Whether the handshake is done and committed, so the work (and the standalone stream)
    /// may go out.
    fn is_live(&self) -> bool {
        self.next == Step::Work && self.pending.is_none() && self.session.info().is_some()
    }

    fn next_leg_kind(&self) -> LegKind {
        match self.next {
            Step::Spawn => LegKind::Spawn,
            Step::AwaitSession => LegKind::Initialize,
            Step::Work if self.era.probes_first() => LegKind::Discover,
            Step::Initialize => LegKind::Initialize,
            Step::Initialized => LegKind::Initialized,
            Step::Work => match self.action {
                Action::Probe if self.era.modern().is_some() => LegKind::Discover,
                Action::Probe => LegKind::Ping,
                Action::List(of) => LegKind::List {
                    of,
                    page: self.answering.paging.next_page(),
                },
                Action::CallTool { .. } if self.answering.relist == Relist::Walking => {
                    LegKind::List {
                        of: ListKind::Tools,
                        page: self.answering.paging.next_page(),
                    }
                }
                Action::CallTool { .. } => LegKind::CallTool,
                Action::ReadResource { .. } | Action::LoadSkill(_) => LegKind::ReadResource,
                Action::GetPrompt { .. } => LegKind::GetPrompt,
                Action::Subscribe(_) => LegKind::Subscribe,
                Action::Close if self.session.config().is_stdio() => self.closing.next_kind(),
                Action::Close => LegKind::Close,
            },
        }
    }

    /// A 404 to a request that carried a session id: the session is gone. Start a new one and
    /// resend, inside the same deadline, once; a second loss ends the operation.
    fn session_lost(&mut self, kind: LegKind) {
        if self.reinitialized {
            self.fail(kind.request_name(), Failure::SessionExpired);
            return;
        }
        self.reinitialized = true;
        self.session.reset();
        let next = work_or_handshake(None, &self.session);
        self.start_over(next);
    }

    /// Abandons the attempt in flight (a lost session, another era) and starts again at
    /// `next`, inside the same deadline: the legs in flight, a pending resumption, answers owed
    /// to the server, the last round's input and the listing's cursors (they may belong to
    /// what was lost) are dropped; the standalone stream is dropped and, when the configuration
    /// wants one and the era has it, opened again on the new session.
    fn start_over(&mut self, next: Step) {
        self.grants.end(Role::Work);
        self.grants.end(Role::Reply);
        self.resume.abandon();
        self.replies.clear();
        self.answering.restart();
        self.pending = None;
        self.next = next;
        self.listen_off();
        self.listen = Listen::for_operation(
            self.session.config(),
            &self.action,
            self.era.modern().is_some(),
        );
    }

    /// The next step of a running authorization: a leg, the person's step or a wait; `None`
    /// when the step changed the operation (the flow ended, or the budget refused its leg).
    fn authorization_step(&mut self, now: Instant) -> Option<Output> {
        // The person's step was handed out (its timer runs): its redirect is awaited.
        if self.grants.timers.is_armed(Timer::Person) {
            return Some(self.wait(now));
        }
        match self.auth.poll(now, &mut self.session) {
            Polled::Send(request) => {
                self.transmit(LegKind::Auth(request.kind), now, Some(request.request))
            }
            Polled::Person(url) => {
                let timeout = self.grant(Grantee::Person, now)?;
                let ends_at = now.checked_add(timeout).unwrap_or(now);
                self.grants.timers.set(Timer::Person, ends_at);
                Some(Output::Authorize(Authorize {
                    url,
                    timeout,
                    ends_at,
                }))
            }
            Polled::Pending => Some(self.wait(now)),
            Polled::Done => None,
            Polled::Failed(error) => {
                let method = self.next_leg_kind().request_name();
                match error {
                    mcp_auth::AuthError::AuthorizationRequired { issuer, .. } => {
                        let reason =
                            "a person must approve in a browser and no authorizer is configured";
                        let (issuer, reason) = (Some(issuer), reason.to_owned());
                        self.fail(method, Failure::AuthorizationRequired { issuer, reason });
                    }
                    error => self.fail(method, Failure::Authorization(error)),
                }
                None
            }
        }
    }

    /// Whether the work leg in flight is an auth leg.
    fn is_auth_leg(&self) -> bool {
        self.grants
            .legs
            .get(Role::Work)
            .is_some_and(|leg| matches!(leg.kind, LegKind::Auth(_)))
    }

    /// An auth leg is over: its answer goes to the flow.
    fn auth_end(&mut self) {
        self.grants.end(Role::Work);
        self.auth.end(&mut self.session);
    }

    /// What came back from the person's step, after [`Output::Authorize`]; `now` is when
    /// (none for an answer given at once). Ignored when no step is awaited; at or after the
    /// step's end, whatever came back, the budget ran out.
    fn person_answered(&mut self, answer: PersonAnswer<'_>, now: Option<Instant>) {
        if !self.grants.timers.is_armed(Timer::Person) {
            return;
        }
        if now.is_some_and(|now| self.grants.timers.is_due(Timer::Person, now)) {
            self.expire(Timer::Person);
            return;
        }
        self.grants.timers.stop(Timer::Person);
        self.auth.person(&answer);
        if let PersonAnswer::Failed(detail) = answer {
            let detail = clip(detail, QUOTE_LIMIT);
            self.person_failed(&format!("the authorizer failed: {detail}"));
        }
    }

    /// The person's step ended without a redirect, for `reason`.
    fn person_failed(&mut self, reason: &str) {
        let method = self.next_leg_kind().request_name();
        let issuer = self.auth.issuer();
        let reason = reason.to_owned();
        self.fail(method, Failure::AuthorizationRequired { issuer, reason });
    }

    /// A response arrived for the work leg: check it and act on what it means.
    fn read_answer(&mut self, answer: Incoming) {
        let Some(leg) = self.grants.end(Role::Work) else {
            return;
        };
        let method = leg.answers.request_name();
        let result = match answer {
            // Error envelopes are accepted whatever their id: servers send `null`, none, or
            // a string of their own when they could not read the request at all.
            Incoming::Error { error, .. } => {
                let modern = self.era.modern();
                if self.answering.relist_after(error.code, leg.answers, modern) {
                    return;
                }
                let stdio = self.session.config().is_stdio();
                let (code, data) = (error.code, error.data.as_ref());
                let moved = self
                    .era
                    .reconsider(code, data, leg.status, leg.answers, stdio);
                if self.era_moved(moved) {
                    return;
                }
                let message = clip(&error.message, QUOTE_LIMIT);
                self.fail(
                    method,
                    Failure::JsonRpc {
                        code: error.code,
                        message,
                        data: error.data,
                    },
                );
                return;
            }
            Incoming::Result { id, result } => {
                let expected = leg.request_id.map(RequestId::Number);
                let detail = match result {
                    Value::Object(result) if id == expected => Ok(result),
                    _ if id != expected => {
                        let shown = |id: Option<RequestId>| {
                            id.map_or_else(|| "none".to_owned(), |id| id.to_string())
                        };
                        let (got, want) = (shown(id), shown(expected));
                        Err(format!(
                            "the answer's id {got} does not match the request's id {want}"
                        ))
                    }
                    _ => Err("neither a result nor an error".to_owned()),
                };
                match detail {
                    Ok(result) => result,
                    Err(detail) => {
                        self.fail(method, Failure::Malformed(detail));
                        return;
                    }
                }
            }
            _ => return,
        };
        if leg.answers != LegKind::Initialize {
            // The handshake's era is confirmed once it is committed.
            self.era_confirmed();
        }
        let context = answer::Context {
            action: &self.action,
            modern: self.era.modern(),
            probe_first: self.era.probes_first(),
            session: &mut self.session,
            events: &mut self.events,
            session_id: self.reading.take_session_id(),
        };
        match self.answering.read(leg.answers, result, context) {
            Meaning::Finish(outcome) => self.finish(Ok(outcome)),
            Meaning::Handshake(info) => {
                self.pending = Some(info);
                self.next = Step::Initialized;
            }
            Meaning::Probed => self.era.probed(),
            Meaning::More => {}
            Meaning::SubscriptionEnded => self.subscription_ended(true),
            Meaning::Failed(failure) => self.fail(method, failure),
        }
    }

    /// `notifications/initialized` was accepted: the handshake is committed to the session.
    fn handshake_confirmed(&mut self) {
        let Some(info) = self.pending.take() else {
            return;
        };
        self.session.establish(info.clone());
        self.era_confirmed();
        if self.action == Action::Probe {
            self.finish(Ok(Outcome::Probe(info)));
        } else {
            self.next = Step::Work;
        }
    }

    /// A request of this era was answered: the era is the server's, and the session keeps it.
    fn era_confirmed(&mut self) {
        let era = self.era.confirm();
        self.session.set_era(era);
    }

    /// Acts on what an answer did to the era (`None`: nothing); true when the operation moved
    /// and the request goes out again.
    fn era_moved(&mut self, moved: Option<Move>) -> bool {
        let Some(moved) = moved else {
            return false;
        };
        self.era_confirmed();
        match moved {
            Move::Retry => {}
            Move::ToLegacy => self.start_over(work_or_handshake(None, &self.session)),
            Move::ToModern => {
                self.session.reset();
                self.session.release_claim();
                self.start_over(Step::Work);
            }
        }
        true
    }

    /// A refusal with HTTP `status` that carried no modern error: in an operation still
    /// detecting its era, perhaps a legacy server's. True when the operation fell back.
    fn fell_back_after(&mut self, status: u16) -> bool {
        let moved = self.era.after_refusal(status);
        self.era_moved(moved)
    }

    /// The work stream ended without its answer: it is resumed after a pause (legacy) or
    /// sent again (modern) when it can be; a pause that would end with the budget ends the
    /// awaited request now, as timed out. False when the stream cannot be resumed.
    fn schedule_resumption(&mut self, now: Instant) -> bool {
        if self.era.modern().is_some() {
            return self.reissue();
        }
        let plan = self.grants.legs.get(Role::Work);
        let retry = self.reading.retry();
        let Some((at, awaited)) = plan.and_then(|leg| self.resume.plan(leg, retry, now)) else {
            return false;
        };
        if self.grants.ends_by(at) {
            // Waiting would spend the rest of the budget and leave nothing for the GET: the
            // answer cannot arrive in time, so say so now rather than idle until the deadline.
            self.fail_awaited_timed_out();
            return true;
        }
        self.grants.end(Role::Work);
        self.resume.pause(awaited);
        self.grants.timers.set(Timer::ResumePause, at);
        true
    }

    /// A modern answer stream broke before its answer: its request goes out again (see
    /// `resume`). Returns whether it will.
    fn reissue(&mut self) -> bool {
        if !self.grants.legs.is_busy(Role::Work) || !self.resume.reissue() {
            return false;
        }
        self.grants.end(Role::Work);
        true
    }

    /// Drops the standalone stream; the operation goes on without it.
    fn listen_off(&mut self) {
        self.listen = Listen::Off;
        self.grants.timers.stop(Timer::ListenHead);
        self.grants.end(Role::Listen);
    }

    /// Handles what the server sends of its own on a stream (a notification becomes an event,
    /// a request is answered) and gives back anything else (a response, or neither).
    fn server_message(&mut self, message: Incoming) -> Option<Incoming> {
        match message {
            Incoming::Notification { method, params } => {
                if method == "notifications/subscriptions/acknowledged" {
                    self.acknowledged = params.get("notifications").cloned();
                }
                self.events
                    .push_back(Event::Notification(Notification { method, params }));
                None
            }
            Incoming::Request { id, method, params } => {
                let reply = self
                    .session
                    .config()
                    .answer_server_request(&method, &params);
                self.replies.owe(id.clone(), reply);
                self.events
                    .push_back(Event::ServerRequest { id, method, params });
                None
            }
            other => Some(other),
        }
    }

    /// The subscription is over: the server ended it (`by_server`), or the budget did.
    fn subscription_ended(&mut self, by_server: bool) {
        let end = SubscriptionEnd {
            acknowledged: self.acknowledged.take(),
            by_server,
        };
        self.finish(Ok(Outcome::Subscription(end)));
    }
}
