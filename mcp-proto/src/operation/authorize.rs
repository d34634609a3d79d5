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
//! This module must never put a credential in an error, a trace label or a `Debug` output,
//! and never hand the token to a request for another origin (auth legs are built by the flow
//! and carry no MCP header; only MCP legs carry the token, and they all go to the configured
//! endpoint).

use std::time::Instant;

use http::header::AUTHORIZATION;
use http::{HeaderMap, StatusCode};
use mcp_auth::{AuthError, AuthFlow, AuthStep, Challenge, MAX_ANSWER_BYTES};

use super::grant::Grantee;
use super::legs::Role;
use super::timers::Timer;
use super::{Authorize, LegKind, LegStatus, Operation, Output};
use crate::error::Error;

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
    /// refusal continues its chain).
    flow: Option<AuthFlow>,
    /// Whether the flow is running: its legs go out before the work.
    running: bool,
    /// The answer to the auth leg in flight, collected until its end.
    answer: Option<AuthAnswer>,
    /// Requests sent again with a resource server's fresh DPoP nonce in this operation.
    nonce_retries: u32,
    /// The server's refusal this operation has not acted on yet: it waits for the session
    /// (another operation may be authorizing, or have a newer token) before it authorizes.
    waiting: Option<Refusal>,
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
}

impl Operation {
    /// A refusal that asks for authorization: a 401, or a 403 `insufficient_scope`. Starts (or
    /// continues) the flow and answers `true`; the leg is over.
    pub(super) fn meets_challenge(&mut self, status: StatusCode, headers: &HeaderMap) -> bool {
        if status != StatusCode::UNAUTHORIZED && status != StatusCode::FORBIDDEN {
            return false;
        }
        let Some(challenge) = Challenge::from_response(status, headers) else {
            return false;
        };
        let refused = self
            .grants
            .legs
            .get(Role::Work)
            .map_or(LegKind::Ping, |leg| leg.answers);
        // A DPoP-bound token with a stale nonce: the same request again, with the fresh one.
        if let (Some(nonce), true) = (challenge.dpop_nonce(), self.session.token().is_some()) {
            if self.auth.nonce_retries < MAX_NONCE_RETRIES {
                self.auth.nonce_retries += 1;
                self.session.set_dpop_nonce(nonce.to_owned());
                self.grants.end(Role::Work);
                return true;
            }
        }
        self.grants.end(Role::Work);
        // The token presented (if any) is not good enough any more.
        let presented = self.session.token().cloned();
        self.session.forget_token();
        if self.session.config().oauth().is_none() {
            let method = refused.request_name();
            self.fail(|server| Error::AuthorizationRequired {
                server,
                method,
                issuer: None,
                reason: "no OAuth client is configured for it".to_owned(),
            });
            return true;
        }
        // One authorization for the session at a time: what to do is decided with the session
        // in hand (`take_authorization`), since another operation may be authorizing already.
        self.auth.waiting = Some(Refusal {
            challenge,
            presented,
        });
        true
    }

    /// Acts on the refusal that waits for the session: takes the session's token when it is
    /// newer than the one refused (another operation authorized meanwhile: the request goes
    /// out again with it), else claims the authorization and starts the flow; while another
    /// operation is authorizing, it waits on.
    pub(super) fn take_authorization(&mut self, session: &mut crate::Session) {
        let Some(refusal) = self.auth.waiting.as_ref() else {
            return;
        };
        let newer = session
            .token()
            .is_some_and(|token| Some(token) != refusal.presented.as_ref());
        if newer {
            self.session.take_token(session);
        } else if !self.session.claim_authorization(session) {
            return;
        }
        self.grants.timers.stop(Timer::SessionWait);
        let Some(Refusal { challenge, .. }) = self.auth.waiting.take() else {
            return;
        };
        if !newer {
            self.start_flow(challenge);
        }
    }

    /// Starts (or continues) this operation's flow on the server's `challenge`.
    fn start_flow(&mut self, challenge: Challenge) {
        let config = self.session.config();
        let Some(oauth) = config.oauth() else {
            return;
        };
        let flow = match self.auth.flow.take() {
            Some(earlier) => Ok(earlier.rechallenge(challenge)),
            None => AuthFlow::new(
                config.url(),
                challenge,
                oauth.client().clone(),
                oauth.store().clone(),
            ),
        };
        match flow {
            Ok(flow) => {
                self.auth.flow = Some(flow);
                self.auth.running = true;
            }
            Err(error) => self.fail(|server| Error::Authorization { server, error }),
        }
    }

    /// The next step of a running authorization: a leg, the browser step or a wait; `None`
    /// when the step changed the operation (the flow ended, or the budget refused its leg)
    /// and the operation steps on.
    pub(super) fn poll_authorization(&mut self, now: Instant) -> Option<Output> {
        // The browser step was handed out (its timer runs): its redirect is awaited.
        if self.grants.timers.is_armed(Timer::Person) {
            return Some(self.wait(now));
        }
        let wall = self.session.time_of_day(now);
        let (Some(flow), Some(entropy)) = (self.auth.flow.as_mut(), self.session.entropy()) else {
            self.auth.running = false;
            let error = AuthError::Misuse {
                detail: "no entropy source: the driver must give the session one (Session::set_entropy)",
            };
            self.fail(|server| Error::Authorization { server, error });
            return None;
        };
        let step = flow.poll(now, wall, entropy);
        self.remember_credentials();
        match step {
            AuthStep::Send(request) => {
                self.transmit(LegKind::Auth(request.kind), now, Some(request.request))
            }
            AuthStep::Authorize { url } => {
                let timeout = self.grant(Grantee::Person, now)?;
                let ends_at = now.checked_add(timeout).unwrap_or(now);
                self.grants.timers.set(Timer::Person, ends_at);
                Some(Output::Authorize(Authorize {
                    url: url.into(),
                    timeout,
                    ends_at,
                }))
            }
            AuthStep::Pending => Some(self.wait(now)),
            AuthStep::Done(token) => {
                self.session.set_token(token);
                self.auth.running = false;
                None
            }
            AuthStep::Failed(error) => {
                self.auth.running = false;
                let method = self.refused_request();
                match error {
                    AuthError::AuthorizationRequired { issuer, .. } => {
                        self.fail(|server| Error::AuthorizationRequired {
                            server,
                            method,
                            issuer: Some(issuer),
                            reason:
                                "a person must approve in a browser and no authorizer is configured"
                                    .to_owned(),
                        });
                    }
                    error => self.fail(|server| Error::Authorization { server, error }),
                }
                None
            }
        }
    }

    /// The request the authorization is for: the one the server refused, sent again after it.
    fn refused_request(&self) -> &'static str {
        self.next_leg_kind().request_name()
    }

    /// Whether the work leg in flight is an auth leg.
    pub(super) fn is_auth_leg(&self) -> bool {
        self.grants
            .legs
            .get(Role::Work)
            .is_some_and(|leg| matches!(leg.kind, LegKind::Auth(_)))
    }

    /// An auth leg's head: kept until its body ends.
    pub(super) fn auth_head(&mut self, status: StatusCode, headers: &HeaderMap) -> LegStatus {
        self.auth.answer = Some(AuthAnswer {
            status,
            headers: headers.clone(),
            body: Vec::new(),
        });
        LegStatus::ReadMore
    }

    /// A chunk of an auth leg's body: read up to one byte past the cap (the flow refuses a
    /// longer answer), then the leg is over.
    pub(super) fn auth_chunk(&mut self, chunk: &[u8]) -> LegStatus {
        let Some(answer) = self.auth.answer.as_mut() else {
            return LegStatus::Complete;
        };
        let room = (MAX_ANSWER_BYTES + 1).saturating_sub(answer.body.len());
        answer
            .body
            .extend_from_slice(&chunk[..chunk.len().min(room)]);
        if answer.body.len() > MAX_ANSWER_BYTES {
            self.auth_end();
            return LegStatus::Complete;
        }
        LegStatus::ReadMore
    }

    /// An auth leg's body ended: its answer goes to the flow.
    pub(super) fn auth_end(&mut self) {
        self.grants.end(Role::Work);
        let (Some(answer), Some(flow)) = (self.auth.answer.take(), self.auth.flow.as_mut()) else {
            return;
        };
        flow.handle_response(answer.status, &answer.headers, &answer.body);
        self.remember_credentials();
    }

    /// Passes on what the flow asks to remember or forget, as session updates: the driver
    /// writes them to the store when it applies them, never inside this poll.
    fn remember_credentials(&mut self) {
        let changes = self
            .auth
            .flow
            .as_mut()
            .map(AuthFlow::take_changes)
            .unwrap_or_default();
        for change in changes {
            self.session.remember(change);
        }
    }

    /// What came back from the browser step, after [`Output::Authorize`]; `now` is when (none
    /// for an answer given at once). Ignored when no step is awaited; at or after the step's
    /// end, whatever came back, the budget ran out.
    pub(super) fn person_answered(&mut self, answer: PersonAnswer<'_>, now: Option<Instant>) {
        if !self.grants.timers.is_armed(Timer::Person) {
            return;
        }
        if now.is_some_and(|now| self.grants.timers.is_due(Timer::Person, now)) {
            self.expire(Timer::Person);
            return;
        }
        self.grants.timers.stop(Timer::Person);
        let Some(flow) = self.auth.flow.as_mut() else {
            return;
        };
        match answer {
            PersonAnswer::Redirect(url) => flow.handle_redirect(url),
            PersonAnswer::NoAuthorizer => flow.handle_no_authorizer(),
            PersonAnswer::Failed(detail) => {
                let detail = mcp_auth::clip(detail, mcp_auth::QUOTE_LIMIT);
                self.person_failed(&format!("the authorizer failed: {detail}"));
            }
        }
    }

    /// The budget ran out while the person had the authorization URL.
    pub(super) fn person_timed_out(&mut self) {
        self.person_failed("the authorization was not approved within the operation's budget");
    }

    /// The browser step ended without a redirect, for `reason`.
    fn person_failed(&mut self, reason: &str) {
        self.auth.running = false;
        let method = self.refused_request();
        let issuer = self
            .auth
            .flow
            .as_ref()
            .and_then(AuthFlow::issuer)
            .map(str::to_owned);
        let reason = reason.to_owned();
        self.fail(|server| Error::AuthorizationRequired {
            server,
            method,
            issuer,
            reason,
        });
    }

    /// Puts the session's token on an MCP request (never on an auth leg: those go to other
    /// endpoints, built by the flow): `Authorization`, and for a DPoP-bound token a fresh
    /// proof of possession for this request (with the server's last nonce).
    pub(super) fn present_token(&mut self, request: &mut http::Request<Vec<u8>>, now: Instant) {
        let wall = self.session.time_of_day(now);
        let Some((token, nonce, entropy)) = self.session.presenting() else {
            return;
        };
        let method = request.method().clone();
        let url = request.uri().to_string();
        let headers = match entropy {
            Some(entropy) => token.authorization_headers(&method, &url, nonce, wall, entropy),
            // Without a random source no proof can be made; a bearer token needs none.
            None if !token.is_dpop_bound() => {
                Ok(vec![(AUTHORIZATION, token.authorization_header())])
            }
            None => return,
        };
        // A proof that cannot be made (an unusable URL) leaves the request without it: the
        // server's refusal then says so.
        for (name, value) in headers.unwrap_or_default() {
            request.headers_mut().insert(name, value);
        }
    }

    /// Remembers a fresh DPoP nonce a response of the MCP server carried.
    pub(super) fn note_dpop_nonce(&mut self, headers: &HeaderMap) {
        if let Some(nonce) = headers.get("dpop-nonce").and_then(|v| v.to_str().ok()) {
            if self
                .session
                .token()
                .is_some_and(mcp_auth::AccessToken::is_dpop_bound)
            {
                self.session.set_dpop_nonce(nonce.to_owned());
            }
        }
    }
}
