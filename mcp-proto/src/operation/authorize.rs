//! Authorization as legs of the operation that needed it.
//!
//! A 401 (or a 403 `insufficient_scope`) to any request of the operation starts an OAuth
//! flow ([`mcp_auth::AuthFlow`]) inside that operation: each request the flow makes
//! (resource metadata, server metadata, registration, token, refresh) is a leg like any other,
//! granted what is left of the budget and refused, with nothing sent, once the budget is
//! spent. The one step that needs a person is handed to the driver as
//! [`Output::Authorize`](super::Output::Authorize), under a grant of what is left too. When the
//! flow ends with a token, the session keeps it, every later request of the session carries it,
//! and the refused request goes out again. A request refused once more continues the same
//! chain (a step-up asks for the union of scopes; past
//! [`MAX_AUTHORIZATIONS`](mcp_auth::MAX_AUTHORIZATIONS) flows the operation gives up).
//!
//! This module keeps the authorization's state and says what each refusal, answer and poll
//! means ([`Refused`], [`Polled`]), and what came back from the person's step, in time or not
//! (a [`Failure`] when the operation must end); the operation grants the legs and the person's
//! step and ends the operation. What the flow obtains or spends goes to the session as updates
//! ([`View::remember`]), never to the store from inside a poll. It must never put a credential
//! in an error, a trace label or a `Debug` output, and never hand the token to a request for
//! another origin (auth legs are built by the flow and carry no MCP header; only MCP legs carry
//! the token, and they all go to the configured endpoint).

use std::time::Instant;

use http::{HeaderMap, StatusCode};
use mcp_auth::{AuthError, AuthFlow, AuthStep, Challenge, MAX_ANSWER_BYTES};

use super::LegKind;
use super::failure::Failure;
use super::timers::{Timer, TimerTable};
use super::view::View;
use crate::session::Session;
use mcp_auth::{QUOTE_LIMIT, clip};

/// What came back from the browser step.
pub(super) enum PersonAnswer<'a> {
    /// The URL the browser was redirected to.
    Redirect(&'a str),
    /// The caller's authorizer could not get one (its words).
    Failed(&'a str),
    /// There is no authorizer.
    NoAuthorizer,
}

/// The operation's authorization state.
#[derive(Debug, Default)]
pub(super) struct Authorizing {
    /// The flow of this operation: running, or ended with a token (kept so that the next
    /// refusal continues its chain). Boxed: it is large, and most operations never start one
    /// (every operation is moved as it starts).
    flow: Option<Box<AuthFlow>>,
    /// Whether the flow is running: its legs go out before the work.
    running: bool,
    /// The answer to the auth leg in flight, collected until its end.
    answer: Option<AuthAnswer>,
    /// Requests sent again with a resource server's fresh DPoP nonce in this operation.
    nonce_retries: u32,
    /// The server's refusal this operation has not acted on yet: it waits for the session
    /// (another operation may be authorizing, or have a newer token) before it authorizes.
    waiting: Option<Box<Refusal>>,
}

/// A refusal that asks for authorization, and the token it refused (if any).
#[derive(Debug)]
struct Refusal {
    challenge: Challenge,
    presented: Option<mcp_auth::AccessToken>,
}

/// The most times one operation sends a request again because the MCP server asked for a
/// fresh DPoP nonce (RFC 9449 9): a server that asks every time is refusing.
const MAX_NONCE_RETRIES: u32 = 2;

#[derive(Debug)]
struct AuthAnswer {
    status: StatusCode,
    headers: HeaderMap,
    body: Vec<u8>,
}

/// What a refusal of an MCP request means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refused {
    /// A DPoP-bound token met a stale nonce: the same request goes out again with the fresh one.
    Again,
    /// No OAuth client is configured: the operation ends, asking for authorization.
    Unconfigured,
    /// The refusal waits for the session: for a newer token another operation obtained, or
    /// for the claim to authorize ([`Input::Session`](super::Input::Session)).
    Waiting,
}

/// What a poll of a running authorization asks for.
#[derive(Debug)]
pub(super) enum Polled {
    /// Send this request as an auth leg of this kind.
    Send(LegKind, http::Request<Vec<u8>>),
    /// The person's step: this URL, to the caller's authorizer.
    Person(String),
    /// Nothing yet: an answer is awaited.
    Pending,
    /// The flow obtained a token, now the session's: the refused request goes out again.
    Done,
    /// The flow ended without one.
    Failed(Failure),
}

impl Authorizing {
    /// Whether an authorization is running (its legs, or the person, come before the work).
    pub(super) fn is_running(&self) -> bool {
        self.running
    }

    /// Whether a refusal waits for the session: for a newer token another operation obtained,
    /// or for the claim to authorize.
    pub(super) fn is_waiting(&self) -> bool {
        self.waiting.is_some()
    }

    /// The wait for the session is over (the budget ended): the refused request is next.
    pub(super) fn stop_waiting(&mut self) {
        self.waiting = None;
    }

    /// The operation ended: nothing of the flow runs on.
    pub(super) fn stop(&mut self) {
        self.running = false;
        self.waiting = None;
    }

    /// The authorization server the flow is at, once known.
    pub(super) fn issuer(&self) -> Option<String> {
        self.flow
            .as_deref()
            .and_then(AuthFlow::issuer)
            .map(str::to_owned)
    }

    /// An MCP request's refusal with `status` and `headers`: `None` when it does not ask for
    /// authorization (not a 401, nor a 403 `insufficient_scope`); else what it means. The token
    /// the session presented (if any) is not good enough any more: the session forgets it.
    pub(super) fn refused(
        &mut self,
        status: StatusCode,
        headers: &HeaderMap,
        session: &mut View,
    ) -> Option<Refused> {
        if status != StatusCode::UNAUTHORIZED && status != StatusCode::FORBIDDEN {
            return None;
        }
        let challenge = Challenge::from_response(status, headers)?;
        if let (Some(nonce), true) = (challenge.dpop_nonce(), session.token().is_some()) {
            if self.nonce_retries < MAX_NONCE_RETRIES {
                self.nonce_retries += 1;
                session.set_dpop_nonce(nonce.to_owned());
                return Some(Refused::Again);
            }
        }
        let presented = session.token().cloned();
        session.forget_token();
        if session.config().oauth().is_none() {
            return Some(Refused::Unconfigured);
        }
        // One authorization for the session at a time: what to do is decided with the session
        // in hand (`take`), since another operation may be authorizing already.
        self.waiting = Some(Box::new(Refusal {
            challenge,
            presented,
        }));
        Some(Refused::Waiting)
    }

    /// Acts on the refusal that waits for `shared`, the session every operation shares: takes
    /// its token when it is newer than the one refused (another operation authorized
    /// meanwhile: the request goes out again with it), else claims the authorization and
    /// starts (or continues) the flow. `None` while another operation is authorizing (it waits
    /// on); `Some(Err)` when the flow cannot start.
    pub(super) fn take(
        &mut self,
        session: &mut View,
        shared: &mut Session,
    ) -> Option<Result<(), Failure>> {
        let refusal = self.waiting.as_ref()?;
        let newer = shared
            .token()
            .is_some_and(|token| Some(token) != refusal.presented.as_ref());
        if newer {
            session.take_token(shared);
        } else if !session.claim_authorization(shared) {
            return None;
        }
        let Refusal { challenge, .. } = *self.waiting.take()?;
        if newer {
            return Some(Ok(()));
        }
        let config = session.config();
        let Some(oauth) = config.oauth() else {
            return Some(Ok(()));
        };
        let flow = match self.flow.take() {
            Some(earlier) => Ok(Box::new(earlier.rechallenge(challenge))),
            None => AuthFlow::new(
                config.url(),
                challenge,
                oauth.client().clone(),
                oauth.store().clone(),
            )
            .map(Box::new),
        };
        Some(
            flow.map(|flow| {
                self.flow = Some(flow);
                self.running = true;
            })
            .map_err(Failure::Authorization),
        )
    }

    /// The next step of the running flow at `now`; while the person's step runs (its timer in
    /// `timers`), its redirect is awaited. What the flow obtained or spent goes to the session
    /// as updates; a token becomes the session's.
    pub(super) fn poll(&mut self, now: Instant, session: &mut View, timers: &TimerTable) -> Polled {
        if timers.is_armed(Timer::Person) {
            return Polled::Pending;
        }
        let wall = session.time_of_day(now);
        let step = match (self.flow.as_mut(), session.entropy()) {
            (Some(flow), Some(entropy)) => flow.poll(now, wall, entropy),
            _ => AuthStep::Failed(AuthError::Misuse {
                detail: "no entropy source: the driver must give the session one (Session::set_entropy)",
            }),
        };
        self.remember(session);
        match step {
            AuthStep::Send(auth) => Polled::Send(LegKind::Auth(auth.kind), auth.request),
            AuthStep::Authorize { url } => Polled::Person(url.into()),
            AuthStep::Pending => Polled::Pending,
            AuthStep::Done(token) => {
                self.running = false;
                session.set_token(token);
                Polled::Done
            }
            AuthStep::Failed(AuthError::AuthorizationRequired { issuer, .. }) => {
                self.running = false;
                let reason = "a person must approve in a browser and no authorizer is configured";
                Polled::Failed(Failure::AuthorizationRequired {
                    issuer: Some(issuer),
                    reason: reason.to_owned(),
                })
            }
            AuthStep::Failed(error) => {
                self.running = false;
                Polled::Failed(Failure::Authorization(error))
            }
        }
    }

    /// An auth leg's head: kept until its body ends.
    pub(super) fn head(&mut self, status: StatusCode, headers: &HeaderMap) {
        self.answer = Some(AuthAnswer {
            status,
            headers: headers.clone(),
            body: Vec::new(),
        });
    }

    /// A chunk of an auth leg's body, read up to one byte past the cap (the flow refuses a
    /// longer answer). True when the leg is over.
    pub(super) fn chunk(&mut self, bytes: &[u8]) -> bool {
        let Some(answer) = self.answer.as_mut() else {
            return true;
        };
        let room = (MAX_ANSWER_BYTES + 1).saturating_sub(answer.body.len());
        answer
            .body
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
        answer.body.len() > MAX_ANSWER_BYTES
    }

    /// An auth leg is over: its answer goes to the flow.
    pub(super) fn end(&mut self, session: &mut View) {
        let (Some(answer), Some(flow)) = (self.answer.take(), self.flow.as_mut()) else {
            return;
        };
        flow.handle_response(answer.status, &answer.headers, &answer.body);
        self.remember(session);
    }

    /// What came back from the person's step, after
    /// [`Output::Authorize`](super::Output::Authorize); `now` is when (none for an answer given
    /// at once). Ignored when no step is awaited (its timer in `timers`); at or after the
    /// step's end, whatever came back, the budget ran out. A redirect or no authorizer at all
    /// go to the flow; the authorizer's failure ends the operation (its finish stops the flow).
    pub(super) fn answered(
        &mut self,
        answer: &PersonAnswer<'_>,
        now: Option<Instant>,
        timers: &mut TimerTable,
    ) -> Option<Failure> {
        if !timers.is_armed(Timer::Person) {
            return None;
        }
        let late = now.is_some_and(|now| timers.is_due(Timer::Person, now));
        timers.stop(Timer::Person);
        if late {
            return Some(self.ran_out());
        }
        self.person(answer)
    }

    /// The person's step did not end within the budget.
    pub(super) fn ran_out(&self) -> Failure {
        self.unapproved("the authorization was not approved within the operation's budget")
    }

    fn person(&mut self, answer: &PersonAnswer<'_>) -> Option<Failure> {
        if let PersonAnswer::Failed(detail) = answer {
            let detail = clip(detail, QUOTE_LIMIT);
            return Some(self.unapproved(&format!("the authorizer failed: {detail}")));
        }
        let flow = self.flow.as_mut()?;
        match answer {
            PersonAnswer::Redirect(url) => flow.handle_redirect(url),
            _ => flow.handle_no_authorizer(),
        }
        None
    }

    /// The person's step ended without a redirect, for `reason`: the operation asks for
    /// authorization that no one gave.
    fn unapproved(&self, reason: &str) -> Failure {
        Failure::AuthorizationRequired {
            issuer: self.issuer(),
            reason: reason.to_owned(),
        }
    }

    /// Passes on what the flow asks to remember or forget, as session updates: the driver
    /// writes them to the store when it applies them, never inside a poll.
    fn remember(&mut self, session: &mut View) {
        let changes = self
            .flow
            .as_deref_mut()
            .map(AuthFlow::take_changes)
            .unwrap_or_default();
        for change in changes {
            session.remember(change);
        }
    }
}
