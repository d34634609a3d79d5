//! The operation state machine: one public action under one deadline, leg by leg.
//!
//! An [`Operation`] is one action (probe, a listing, a call, a read, close the session) under one
//! [`OperationDeadline`]. It decides which leg comes next, grants it what is left of the
//! budget, reads each answer by the transport's rules and ends with a typed result. It does
//! not know which driver runs it, and it never reads a clock, opens a socket or sleeps.
//!
//! This module is the only one that writes `impl Operation` (its constructor and its plain reads
//! are `open`'s), and it only routes; the parts beside it own their state and return decisions. The
//! parts, what each holds and what it is for, are mapped once, in the [crate docs](crate).
//!
//! How a driver drives it is the public [`driver`](crate::driver) module's documentation.

mod answer;
mod authorize;
mod close;
mod driving;
mod ending;
mod era;
mod failure;
mod grant;
mod input;
mod introduce;
mod leg_kind;
mod legs;
mod listen;
mod open;
mod output;
mod paging;
mod progress;
mod read;
mod replies;
mod responses;
mod resume;
mod stdio;
mod tasking;
mod timers;
mod transmit;
mod types;
mod view;

use std::time::{Duration, Instant};

use crate::session::Session;

use authorize::{PersonAnswer, Polled};
use ending::After;
use failure::Failure;
use grant::{Grantee, Refusal};
use legs::Role;
use listen::Listen;
use read::Heard;
use responses::Piece;
use tasking::Hold;
use timers::Timer;
use transmit::HttpRequest;

pub use driving::{
    Authorize, CANCEL_NOTICE_GRANT, DRAIN_BYTES, DRAIN_WAIT, Input, LISTEN_HEAD_WAIT, Leg, LegEnd,
    LegId, LegKind, LegReport, LegStatus, Output, ProcessExit, ReplyId, ServerRequest,
    TransportError, TransportErrorKind, drain_until,
};
pub use grant::leg_grant;
pub use open::Operation;
pub use types::{Action, DEFAULT_RETRY, Event, Listed, MAX_REISSUES, MAX_RESUMPTIONS, Outcome};

impl Operation {
    /// The next thing the driver must do. See the [module docs](crate::driver).
    pub fn poll_output(&mut self, now: Instant) -> Output {
        self.grants.at(now);
        loop {
            // What is queued first, each returned where it is built (no move of an output).
            if let Some(update) = self.session.next_update() {
                return Output::Update(update);
            }
            if let Some(event) = self.events.pop_front() {
                self.session.heard(&event);
                return Output::Event(event);
            }
            if let Some(report) = self.grants.next_report() {
                return Output::LegEnded(report);
            }
            if let Some(output) = self.step(now) {
                return output;
            }
        }
    }

    /// [`poll_output`](Self::poll_output) for a driver that runs this operation alone on
    /// `session` (one at a time): what the operation learns is applied to `session`, and an
    /// operation that awaits its session is handed it, so this never returns
    /// [`Output::Update`]. It returns `Wait` for the session only while another operation on
    /// it holds what this one waits for. A driver with several operations in flight at once
    /// must also wake the others when an update was applied (see the [module docs](crate::driver)).
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
        let event = self.events.pop_front();
        event.inspect(|event| self.session.heard(event))
    }

    /// Tells the operation what came (see [`Input`]): the one way a driver feeds it. For a
    /// head or a chunk, the answer says whether to read on ([`LegStatus::ReadMore`]); for
    /// any other input it is [`LegStatus::Complete`]. Drain
    /// [`poll_output`](Self::poll_output) after every input.
    pub fn handle_input(&mut self, input: Input<'_>, now: Instant) -> LegStatus {
        self.grants.at(now);
        let heard = match input {
            Input::Head {
                leg,
                status,
                headers,
            } => self.response(leg, Piece::Head(status, headers), now),
            Input::Chunk { leg, bytes } => self.response(leg, Piece::Chunk(bytes), now),
            Input::End { leg } => self.response(leg, Piece::End, now),
            Input::Failed { leg, error } => match self.in_time(leg, now, Some(&error)) {
                Some(role) => self.read(role, Piece::Failed(Some(&error)), now),
                None => Heard::Over,
            },
            Input::Sent { leg } => match self.in_time(leg, now, None) {
                Some(role) => self.stdout.sent(role, now, &mut self.grants),
                None => Heard::Over,
            },
            Input::Stdout(bytes) | Input::Events(bytes) => self.stdout(bytes, now),
            Input::Exit(exit) => {
                let ended = (self.stdout).exited(exit, &mut self.session, &mut self.grants);
                self.cut_off(ended, now)
            }
            Input::EventsEnded { error } => {
                let parts = (
                    &mut self.session,
                    &mut self.grants,
                    self.ending.is_finished(),
                );
                let ended = self.stdout.stream_ended(error.as_ref(), parts);
                self.cut_off(ended, now)
            }
            Input::Timeout => {
                for timer in Timer::ALL {
                    if self.grants.timers.is_due(timer, now) {
                        self.expire(timer, now);
                    }
                }
                Heard::Over
            }
            Input::Session(session) => self.handle_session(session),
            Input::Redirect(url) => self.person(&PersonAnswer::Redirect(url), Some(now)),
            Input::AuthorizerFailed(why) => self.person(&PersonAnswer::Failed(why), Some(now)),
            Input::NoAuthorizer => self.person(&PersonAnswer::NoAuthorizer, None),
            Input::Reply { to, answer } => self.reply(to, answer),
            // The operation has its result: a cancel stops only the wait for an answer to
            // the server on its way.
            Input::Cancel if self.is_finished() => {
                self.grants.end(Role::Reply);
                Heard::Over
            }
            Input::Cancel => {
                self.give_up_call(true);
                self.events.clear();
                self.grants.cancel();
                Heard::Failed(Failure::Cancelled)
            }
        };
        self.act(heard)
    }

    /// One step towards the next output: the output, or `None` when the step changed the
    /// operation (a leg refused, the authorization ended) and the next step decides.
    ///
    /// The order of the checks is the policy; the first that applies decides:
    /// 0. What the session's stream brought before the operation ran, left unread, is read.
    /// 1. Finished: what the ending still owes (a cancel notice, a step of a close, a kill), a
    ///    wait for it, or the result.
    /// 2. A server's request the caller answers is handed out (with the time left).
    /// 3. An answer owed to the server goes out, when none is in flight (over HTTP+SSE, once
    ///    the stream named the endpoint).
    /// 4. The work leg is in flight: wait.
    /// 5. Another operation establishes the session (or authorizes for it): wait for it.
    /// 6. An authorization runs: its next request, the person's step, a wait, or its end.
    /// 7. The session's standalone stream is due: it is opened.
    /// 8. A wait holds the next request back (the pause before a resumption, the standalone
    ///    stream's head, a process's exit in a close, the caller's answers to an input round).
    /// 9. A task is polled: wait for its next poll, or hand it back when none fits the budget.
    /// 10. The action's next request (a resumption first), granted what is left, or refused.
    fn step(&mut self, now: Instant) -> Option<Output> {
        if self.stdout.has_pending() && !self.is_finished() {
            self.stdout(&[], now);
            return None;
        }
        if self.is_finished() {
            return match self.ending.after(&self.grants.legs) {
                After::Leg(kind) => self.transmit(kind, now, None),
                After::Wait => Some(self.wait(now)),
                After::Done(result) => Some(Output::Done(result)),
            };
        }
        if let Some(request) = self.replies.hand_out(self.grants.end_or(now)) {
            return Some(Output::Request(request));
        }
        self.replies.hold_input(&mut self.grants, now);
        let (owed, postable) = (self.replies.is_owed(), self.session.can_post());
        if owed && postable && !self.grants.legs.is_busy(Role::Reply) {
            return self.transmit(LegKind::Respond, now, None);
        }
        if self.grants.legs.is_busy(Role::Work) {
            return Some(self.wait(now));
        }
        if self.awaits_session() {
            return Some(Output::AwaitSession(self.grants.await_session(now)));
        }
        if self.auth.is_running() {
            return match self.auth.poll(now, &mut self.session, &self.grants.timers) {
                Polled::Send(kind, request) => self.transmit(kind, now, Some(request)),
                Polled::Person(url) => {
                    let grant = self.grant(Grantee::Person, now)?;
                    let authorize = self.grants.hand_out_person(url, grant, now);
                    Some(Output::Authorize(authorize))
                }
                Polled::Pending => Some(self.wait(now)),
                Polled::Done => None,
                Polled::Failed(failure) => {
                    self.fail(self.next_kind().request_name(), failure);
                    None
                }
            };
        }
        if self.progress.may_listen(&self.session) && self.responses.listen.is_due() {
            return self.transmit(LegKind::Listen, now, None);
        }
        if self.grants.timers.holds_back() {
            return Some(self.wait(now));
        }
        match self.answering.task.hold(now) {
            Hold::Until(at) => {
                self.grants.timers.set(Timer::TaskPoll, at);
                return Some(self.wait(now));
            }
            // No poll could be answered inside the budget any more: the task is handed back.
            // (Cancelled on the server instead, when configured so: `tasks/cancel` fits.)
            Hold::HandBack => {
                let cancels = self.session.config().cancels_spent_tasks();
                if let Some((running, id)) =
                    self.answering.task.end_now(self.grants.budget(), cancels)
                {
                    self.fail(LegKind::TaskGet.request_name(), running);
                    self.ending.cancel_task(id);
                }
                return None;
            }
            Hold::No | Hold::Poll => {}
        }
        self.answering
            .list_before_call(&self.progress, &self.session);
        let kind = if self.resume.is_pending() {
            LegKind::Resume
        } else {
            self.next_kind()
        };
        // Over HTTP+SSE the session's stream is the subscription: heard until the budget ends.
        if kind == LegKind::Subscribe && self.session.speaks_sse() {
            (self.grants.timers).set(Timer::Listening, self.grants.end_or(now));
            return Some(self.wait(now));
        }
        self.transmit(kind, now, None)
    }

    /// Grants the leg `kind` what is left of the budget and hands it out (`flow`: an auth leg's
    /// request, made by the flow); a refused leg is never built: `None`, the refusal acted on.
    fn transmit(
        &mut self,
        kind: LegKind,
        now: Instant,
        flow: Option<HttpRequest>,
    ) -> Option<Output> {
        let grant = self.grant(Grantee::Leg(kind), now)?;
        let leg = transmit::Sources {
            session: &mut self.session,
            progress: &self.progress,
            answering: &self.answering,
            resume: &mut self.resume,
            replies: &mut self.replies,
            ending: &mut self.ending,
            grants: &mut self.grants,
            responses: &mut self.responses,
            stdout: &mut self.stdout,
        }
        .hand_out(kind, flow, grant, now)?;
        Some(Output::Transmit(leg))
    }

    /// What `who` is granted at `now`; `None` when it is refused, the refusal acted on: the
    /// one place where a spent budget changes the operation.
    fn grant(&mut self, who: Grantee, now: Instant) -> Option<Duration> {
        let stdio = self.session.config().is_stdio();
        match self.grants.grant(who, now, stdio) {
            Ok(grant) => return Some(grant),
            Err(Refusal::Spent {
                budget,
                method,
                leg,
            }) => self.fail(method, Failure::Spent { budget, leg }),
            // The request was sent and its answer did not come within the budget: that is
            // the request timing out, not a request the server never saw.
            Err(Refusal::AwaitedLate) => {
                self.act(Heard::TimedOut);
            }
            // A close after the budget: the local server is ended at once, nothing waits.
            Err(Refusal::KillInstead) => {
                self.finish(Ok(Outcome::Closed));
                self.ending.kill_now();
            }
            // The operation goes on without it (or, for the notice, ends without it).
            Err(Refusal::Dropped) if who == Grantee::Leg(LegKind::Listen) => {
                self.responses.listen = Listen::Off;
            }
            Err(Refusal::Dropped) => self.ending.drop_notice(),
        }
        None
    }

    /// The role of leg `id` if it is in flight and its grant has not ended by `now` (or see
    /// [`Grants::role_at`] for one that failed with `error`); a late one times out here.
    fn in_time(&mut self, id: LegId, now: Instant, error: Option<&TransportError>) -> Option<Role> {
        match self.grants.role_at(id, now, error)? {
            Ok(role) => Some(role),
            Err(late) => {
                self.expire(Timer::LegEnd(late), now);
                None
            }
        }
    }

    /// A piece of the response to leg `id`, if it is in flight and in time (`responses`).
    fn response(&mut self, id: LegId, piece: Piece<'_>, now: Instant) -> Heard {
        match self.in_time(id, now, None) {
            Some(role) => self.read(role, piece, now),
            None => Heard::Over,
        }
    }

    /// The process exited, or the HTTP+SSE stream ended: what that means (`ended`: the leg it
    /// cut off and what to do), unless that leg's grant ended first. A notice not yet written
    /// (owed before, or just now by a call whose grant ended first) has nothing left to reach:
    /// it is not sent.
    fn cut_off(&mut self, (leg, heard): (Option<LegId>, Heard), now: Instant) -> Heard {
        let in_time = leg.is_none_or(|leg| self.in_time(leg, now, None).is_some());
        self.ending.drop_notice();
        if in_time { heard } else { Heard::Over }
    }

    /// What became of the leg in `role`, read by the part of its role (`responses`).
    fn read(&mut self, role: Role, piece: Piece<'_>, now: Instant) -> Heard {
        let parts = responses::Parts {
            grants: &mut self.grants,
            session: &mut self.session,
            auth: &mut self.auth,
            era: &self.progress.era,
            replies: &mut self.replies,
            events: &mut self.events,
            resume: &mut self.resume,
            now,
        };
        self.responses.read(role, piece, parts)
    }

    /// Over stdio: the next bytes on the server's stdout, each line read (`stdio`), acted on;
    /// over HTTP+SSE, the next bytes of the session's event stream, read the same way.
    fn stdout(&mut self, chunk: &[u8], now: Instant) -> Heard {
        let work = self.grants.legs.get(Role::Work).map(|leg| leg.id);
        // A leg whose grant has ended by now times out before any line is read for it.
        if let (true, Some(id)) = (self.stdout.feed(chunk), work) {
            let _ = self.in_time(id, now, None);
        }
        loop {
            let lines = stdio::Lines {
                replies: &mut self.replies,
                events: &mut self.events,
                config: self.session.config(),
                legs: &self.grants.legs,
                finished: self.ending.is_finished(),
            };
            let Some(heard) = self.stdout.next(lines) else {
                return Heard::Over;
            };
            self.act(heard);
        }
    }

    /// Acts on what a part heard; a failure names the request awaited (a GET, the one it resumes).
    fn act(&mut self, heard: Heard) -> LegStatus {
        let method = self.awaited().0.request_name();
        self.act_as(heard, method)
    }

    /// [`act`](Self::act), a failure naming `method` (awaited before an answer ended its leg).
    fn act_as(&mut self, heard: Heard, method: &'static str) -> LegStatus {
        match heard {
            Heard::More => return LegStatus::ReadMore,
            Heard::Over | Heard::EndedEarly(_) => {}
            Heard::Answer(answer) => {
                let Some(leg) = self.grants.end(Role::Work) else {
                    return LegStatus::Complete;
                };
                let when = tasking::When::after(&leg, &self.grants, self.session.config());
                let context = answer::Context {
                    progress: &mut self.progress,
                    session: &mut self.session,
                    events: &mut self.events,
                    replies: &mut self.replies,
                    session_id: self.responses.reading.take_session_id(),
                    when,
                };
                let meaning = self.answering.answer(&leg, answer, context);
                return self.act_as(meaning.into(), method);
            }
            Heard::Started => self.progress.spawned(&mut self.session),
            Heard::Endpoint(at) => {
                let heard = self
                    .progress
                    .endpoint(at, &mut self.session, &mut self.grants);
                return self.act_as(heard, method);
            }
            Heard::Accepted => {
                if let Some(outcome) = self.progress.confirm(&mut self.session) {
                    self.finish(Ok(outcome));
                }
            }
            Heard::Done(outcome) => {
                let left = self.grants.left_with_overrun();
                let checked = output::check(outcome, &self.progress.action, &self.session, left);
                self.finish(checked);
            }
            Heard::Moved(moved) => {
                if self.progress.era.moved(moved, &mut self.session) {
                    self.start_over();
                }
            }
            // A request that carried a session id was told the session is gone (404, or a 400
            // saying so): a new session, once, in the budget (never for a legacy task: it is
            // gone with its session).
            Heard::SessionLost(_)
                if (self.progress)
                    .lose_session(&mut self.session, self.answering.task.is_live()) =>
            {
                self.start_over();
            }
            Heard::SessionLost(status) => self.fail(method, Failure::SessionExpired(status)),
            Heard::StreamLost if self.progress.lose_session(&mut self.session, false) => {
                self.start_over();
            }
            Heard::StreamLost => self.fail(method, Failure::stream_closed("")),
            // Nothing a modern server would say: perhaps a legacy server refused the request.
            Heard::Refused(status) => {
                match self.progress.era.after_refusal(status, self.awaited().0) {
                    Some(moved) => return self.act_as(Heard::Moved(moved), method),
                    None => self.fail(method, Failure::Status(status)),
                }
            }
            Heard::SubscriptionEnded { by_server } => {
                let end = self.replies.subscription_end(by_server);
                self.finish(Ok(Outcome::Subscription(end)));
            }
            // The answer cannot come in time: the request (which was sent) timed out.
            Heard::TimedOut => self.fail(method, Failure::TimedOut(self.awaited().2)),
            Heard::Failed(failure) => self.fail(method, failure),
        }
        LegStatus::Complete
    }

    /// Starts again after a lost session or another era, in the same budget, dropping what may
    /// belong to what was lost (legs, resumption, replies, input, cursors, the stream).
    fn start_over(&mut self) {
        self.grants.end(Role::Work);
        self.grants.end(Role::Reply);
        self.resume.abandon();
        self.replies.clear();
        self.answering.restart();
        self.progress.start_over(&self.session);
        let (config, progress) = (self.session.config(), &self.progress);
        let modern = progress.era.modern().is_some();
        let listen = &mut self.responses.listen;
        listen.restart(&mut self.grants, config, &progress.action, modern);
    }

    /// Stops `timer` and acts on it (a pause that ended needs nothing: the next poll sends).
    fn expire(&mut self, timer: Timer, now: Instant) {
        self.grants.timers.stop(timer);
        match timer {
            // A `tools/call` given up on may be announced.
            Timer::LegEnd(role) => {
                if role == Role::Work {
                    self.give_up_call(false);
                }
                let heard = self.read(role, Piece::Failed(None), now);
                self.act(heard);
            }
            Timer::Person => self.fail(self.next_kind().request_name(), self.auth.ran_out()),
            // The budget ended while another operation established the session or authorized
            // for it: the handshake (or the refused request) is next, and is refused.
            Timer::SessionWait if self.auth.is_waiting() => self.auth.stop_waiting(),
            Timer::SessionWait => self.progress.stop_waiting(),
            // The process did not exit in time: the close's next step goes out.
            Timer::CloseStep => self.stdout.closing.wait_over(),
            // The caller did not answer in time: the request goes out without the answers,
            // and is refused (the budget is spent).
            Timer::Reply => self.replies.give_up_input(),
            Timer::Listening => {
                let end = self.replies.subscription_end(false);
                self.finish(Ok(Outcome::Subscription(end)));
            }
            Timer::ResumePause | Timer::ListenHead | Timer::TaskPoll => {}
        }
    }

    /// [`Input::Session`]: what `session` holds now, for an operation that awaits it.
    fn handle_session(&mut self, session: &mut Session) -> Heard {
        if !self.awaits_session() {
            return Heard::Over;
        }
        if self.auth.is_waiting() {
            if let Some(started) = self.auth.take(&mut self.session, session) {
                self.grants.timers.stop(Timer::SessionWait);
                if let Err(failure) = started {
                    self.fail(self.next_kind().request_name(), failure);
                }
            }
        } else if self.session.take_session(session) {
            self.grants.timers.stop(Timer::SessionWait);
            self.progress.took_session(&self.session);
        }
        Heard::Over
    }

    /// [`Input::Reply`]: the caller's answer to the request asked under `to` (see `replies`;
    /// an input round's answer, see `input`).
    fn reply(&mut self, to: ReplyId, answer: Result<serde_json::Value, crate::RpcError>) -> Heard {
        match self.replies.answered(to, answer) {
            Some(input) if !self.is_finished() => {
                let (replies, timers) = (&self.replies, &mut self.grants.timers);
                self.answering.input.answered(input, replies, timers)
            }
            _ => Heard::Over,
        }
    }

    /// What came back from the person's step at `now` (see `authorize`).
    fn person(&mut self, answer: &PersonAnswer<'_>, now: Option<Instant>) -> Heard {
        if let Some(failure) = self.auth.answered(answer, now, &mut self.grants.timers) {
            self.fail(self.next_kind().request_name(), failure);
        }
        Heard::Over
    }
}
