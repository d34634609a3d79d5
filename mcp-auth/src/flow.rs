//! [`AuthFlow`]: one authorization, from a server's challenge to an access token, as a
//! state machine.
//!
//! All transitions live here; the rules they apply live beside it (`discovery`,
//! `registration`, `authorize`, `token`). The flow does not know which driver runs it, and it
//! never reads a clock, a socket or a random source: time and randomness come in through
//! [`poll`](AuthFlow::poll), answers through the `handle_*` inputs.
//!
//! ```text
//!  challenge ─► resource metadata ─(404: next candidate; none left: 2025-03-26 server)─┐
//!                   │ resource checked, issuer chosen                                 │
//!                   ▼                                                                 ▼
//!              server metadata ─(404: next candidate; none left: default endpoints*)──┘
//!                   │ issuer checked, PKCE S256 advertised
//!                   ▼
//!              identity: pre-registered │ metadata document │ stored registration │ register
//!                   │
//!                   ├─► refresh (401 with a stored refresh token) ─► Done
//!                   │        └─ refused ─┐
//!                   ▼                    ▼
//!              Authorize { url } ─► redirect checked (state, iss) ─► token ─► Done
//!
//!  * only for a server that published no resource metadata (2025-03-26)
//!
//!  A grant without a person (`ClientConfig::with_grant`) leaves after server metadata (no
//!  PKCE needed) and never meets a browser:
//!
//!              server metadata ─┬─► client credentials ───────────────────────► Done
//!                               ├─► jwt-bearer (the workload's assertion) ────► Done
//!                               └─► token exchange at the IdP ─► jwt-bearer ──► Done
//!                                   (ID token → ID-JAG)          (ID-JAG)
//! ```
//!
//! With DPoP ([`Dpop`](crate::Dpop)), every request to the token endpoint carries a proof of
//! the flow's key; a `400 use_dpop_nonce` with a `DPoP-Nonce` header sends the same request
//! once more with the nonce in its proof (inside `handle_response`/`poll`, once per request).
//!
//! # Driving it
//!
//! Mutate once, then poll until the flow asks for something:
//!
//! * [`poll`](AuthFlow::poll) returns [`AuthStep::Send`] with a request built at that poll
//!   (so the operation can grant it what is left of its budget, as a leg); feed its answer
//!   with [`handle_response`](AuthFlow::handle_response), the **whole** body, capped by the
//!   driver at [`MAX_ANSWER_BYTES`] (a longer body is refused as malformed).
//! * [`AuthStep::Authorize`] needs a person: give the URL to the caller's authorizer (a
//!   browser and a loopback listener) and feed the redirect URL it received with
//!   [`handle_redirect`](AuthFlow::handle_redirect); a caller without one calls
//!   [`handle_no_authorizer`](AuthFlow::handle_no_authorizer) and the flow ends with
//!   [`AuthError::AuthorizationRequired`].
//! * [`AuthStep::Done`] carries the token to retry the request with; [`AuthStep::Failed`] the
//!   reason. Both repeat on later polls.
//! * After every input and poll, take what the flow asks to remember or forget
//!   ([`take_changes`](AuthFlow::take_changes): a registration, tokens, a spent refresh
//!   token) and apply it to the store outside the poll: the flow reads the store, never
//!   writes it.
//! * When the retried request meets another challenge (a 403 `insufficient_scope`, or a 401),
//!   continue the same operation's chain with [`rechallenge`](AuthFlow::rechallenge): scopes
//!   accumulate, and past [`MAX_AUTHORIZATIONS`] the chain ends with a typed error.
//!
//! A transport failure or a spent budget is the operation's to report: drop the flow.

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderMap, Method, Request, StatusCode};
use url::Url;

use crate::authorize::{
    AuthorizationRequest, Expected, PendingAuthorization, authorization_url, read_redirect,
};
use crate::challenge::{Challenge, ChallengeKind, DPOP_NONCE};
use crate::config::{ClientConfig, Dpop, GrantKind, MachineAuth, TokenEndpointAuth};
use crate::discovery::{
    ServerMetadata, read_resource_metadata, read_server_metadata, resource_metadata_candidates,
    server_metadata_candidates,
};
use crate::entropy::{self, Entropy, Pkce};
use crate::error::{AuthError, quote};
use crate::jwt::{PrivateKey, ProofTarget, client_assertion, dpop_proof};
use crate::registration::{
    RegistrationRequest, oauth_error, pre_registered_method, read_registration,
};
use crate::secret::Secret;
use crate::store::{ClientCredentials, ClientSource, CredentialChange, CredentialStore, TokenSet};
use crate::token::{
    AccessToken, GrantForm, Proofs, TokenType, read_id_jag, read_token_answer, token_request,
};

/// The most authorizations (flows) one operation makes before it gives up: the first, and two
/// step-ups or retries (the conformance suite's `auth/scope-retry-limit` allows three).
pub const MAX_AUTHORIZATIONS: u32 = 3;

/// The longest answer body a flow reads. Drivers stop reading there; a longer body is refused.
pub const MAX_ANSWER_BYTES: usize = 256 * 1024;

/// What an [`AuthRequest`] is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AuthRequestKind {
    /// GET of Protected Resource Metadata (RFC 9728).
    ResourceMetadata,
    /// GET of authorization server metadata (RFC 8414 or OpenID Connect Discovery).
    ServerMetadata,
    /// POST of Dynamic Client Registration (RFC 7591).
    Register,
    /// POST to the token endpoint exchanging a code.
    Token,
    /// POST to the token endpoint with a refresh token.
    Refresh,
    /// POST to the token endpoint for `client_credentials` (RFC 6749 4.4).
    ClientCredentials,
    /// POST to the token endpoint for `jwt-bearer` (RFC 7523 2.1), with a workload's assertion
    /// or an ID-JAG.
    JwtBearer,
    /// POST to the identity provider's token endpoint: a token exchange (RFC 8693) of its ID
    /// token for an ID-JAG (SEP-990).
    TokenExchange,
}

impl AuthRequestKind {
    /// One word for traces, in the operation's leg labels: `oauth:resource-metadata`,
    /// `oauth:server-metadata`, `oauth:register`, `oauth:token`, `oauth:refresh`,
    /// `oauth:client-credentials`, `oauth:jwt-bearer`, `oauth:token-exchange`.
    pub const fn label(self) -> &'static str {
        match self {
            Self::ResourceMetadata => "oauth:resource-metadata",
            Self::ServerMetadata => "oauth:server-metadata",
            Self::Register => "oauth:register",
            Self::Token => "oauth:token",
            Self::Refresh => "oauth:refresh",
            Self::ClientCredentials => "oauth:client-credentials",
            Self::JwtBearer => "oauth:jwt-bearer",
            Self::TokenExchange => "oauth:token-exchange",
        }
    }

    /// What errors call the endpoint.
    const fn endpoint(self) -> &'static str {
        match self {
            Self::ResourceMetadata => "protected resource metadata",
            Self::ServerMetadata => "authorization server metadata",
            Self::Register => "registration endpoint",
            Self::Token | Self::Refresh | Self::ClientCredentials | Self::JwtBearer => {
                "token endpoint"
            }
            Self::TokenExchange => "identity provider token endpoint",
        }
    }

    /// Whether it goes to the authorization server's token endpoint (and so may carry a DPoP
    /// proof and meet a `use_dpop_nonce` answer).
    const fn at_token_endpoint(self) -> bool {
        matches!(
            self,
            Self::Token | Self::Refresh | Self::ClientCredentials | Self::JwtBearer
        )
    }
}

/// One HTTP request to send, built at the poll that returned it. Do not follow redirects.
///
/// `Debug` shows the method, URI and body length: a token request's body holds credentials.
#[must_use = "a request must be sent and its answer fed back, or the flow waits for it"]
pub struct AuthRequest {
    /// What it is for (and its trace label).
    pub kind: AuthRequestKind,
    /// The request, ready to send.
    pub request: Request<Vec<u8>>,
}

impl std::fmt::Debug for AuthRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthRequest")
            .field("kind", &self.kind)
            .field("method", self.request.method())
            .field("uri", self.request.uri())
            .field("body_bytes", &self.request.body().len())
            .finish()
    }
}

/// What the flow needs next, or how it ended.
#[derive(Debug)]
#[must_use = "a step says what the flow needs; ignoring it stalls the flow"]
pub enum AuthStep {
    /// Send this request and feed its answer to
    /// [`handle_response`](AuthFlow::handle_response).
    Send(AuthRequest),
    /// A person must approve at this URL: open it, wait for the redirect, feed it to
    /// [`handle_redirect`](AuthFlow::handle_redirect) (or call
    /// [`handle_no_authorizer`](AuthFlow::handle_no_authorizer)).
    Authorize {
        /// The authorization URL (it holds no secret: the PKCE verifier stays in the flow).
        url: Url,
    },
    /// An answer is owed (the last request's, or the redirect): feed it, then poll.
    Pending,
    /// The flow ended with a token: retry the request with its
    /// [`authorization_headers`](AccessToken::authorization_headers) (a DPoP-bound token needs
    /// a fresh proof per request).
    Done(AccessToken),
    /// The flow ended without one.
    Failed(AuthError),
}

/// One authorization for one MCP server, started by its challenge. See the module doc for the
/// driving loop.
pub struct AuthFlow {
    server: Url,
    /// The server URL as the caller gave it (the `resource` of a 2025-03-26 server).
    server_text: String,
    config: ClientConfig,
    store: Arc<dyn CredentialStore>,
    /// What to remember or forget, not yet taken by the caller.
    changes: Vec<CredentialChange>,
    challenge: Challenge,
    chain: Chain,
    stage: Stage,
    owed: Owed,
    answer: Option<Answer>,
    redirect: Option<String>,
    found: Found,
}

/// What the operation's earlier flows leave to the next one.
struct Chain {
    /// Flows in this operation, this one included.
    attempts: u32,
    /// Scopes asked for by the earlier flows.
    requested: Vec<String>,
    /// Only the first flow of an operation refreshes: a refreshed token that met another
    /// challenge calls for a full authorization.
    may_refresh: bool,
}

/// What this flow has learnt so far.
#[derive(Default)]
struct Found {
    /// The `resource` parameter, exactly as the resource metadata published it.
    resource: Option<String>,
    prm_scopes: Option<Vec<String>>,
    /// The server published no resource metadata (2025-03-26).
    legacy: bool,
    metadata: Option<ServerMetadata>,
    client: Option<ClientCredentials>,
    /// The scope of the stored tokens, kept in the union of a re-authorization.
    stored_scope: Vec<String>,
    pending: Option<PendingAuthorization>,
    /// The key this flow's token requests prove possession of (RFC 9449), drawn at the first.
    dpop_key: Option<PrivateKey>,
    /// The authorization server's last `DPoP-Nonce`.
    as_nonce: Option<String>,
    /// Whether the request awaiting its answer carried a DPoP proof.
    dpop_sent: bool,
    /// Requests already sent again with a nonce after a `use_dpop_nonce` (once each).
    nonce_retried: Vec<AuthRequestKind>,
}

enum Stage {
    ResourceMetadata {
        candidates: Vec<Url>,
        index: usize,
    },
    ServerMetadata {
        issuer: String,
        candidates: Vec<Url>,
        index: usize,
    },
    Identify,
    Refresh {
        refresh_token: Secret,
        scope: Option<String>,
    },
    Register,
    Authorize,
    AwaitRedirect,
    Exchange {
        code: Secret,
    },
    ClientCredentials,
    TokenExchange,
    JwtBearer {
        assertion: Secret,
    },
    Done(AccessToken),
    Failed(AuthError),
}

impl Stage {
    const fn name(&self) -> &'static str {
        match self {
            Self::ResourceMetadata { .. } => "resource metadata",
            Self::ServerMetadata { .. } => "server metadata",
            Self::Identify => "identify",
            Self::Refresh { .. } => "refresh",
            Self::Register => "register",
            Self::Authorize => "authorize",
            Self::AwaitRedirect => "awaiting redirect",
            Self::Exchange { .. } => "token",
            Self::ClientCredentials => "client credentials",
            Self::TokenExchange => "token exchange",
            Self::JwtBearer { .. } => "jwt-bearer",
            Self::Done(_) => "done",
            Self::Failed(_) => "failed",
        }
    }

    const fn is_over(&self) -> bool {
        matches!(self, Self::Done(_) | Self::Failed(_))
    }
}

enum Owed {
    Nothing,
    Answer { kind: AuthRequestKind, url: Url },
    Redirect,
}

struct Answer {
    status: StatusCode,
    body: Vec<u8>,
    oversize: bool,
    /// The `DPoP-Nonce` header (RFC 9449 8).
    dpop_nonce: Option<String>,
}

impl std::fmt::Debug for AuthFlow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthFlow")
            .field("server", &self.server_text)
            .field("stage", &self.stage.name())
            .field("attempts", &self.chain.attempts)
            .finish_non_exhaustive()
    }
}

impl AuthFlow {
    /// A flow for the MCP server at `server_url`, started by its `challenge`.
    ///
    /// `store` is read (from memory) for a registration and tokens once the authorization
    /// server is known; what the flow obtains comes out of [`take_changes`](Self::take_changes)
    /// for the caller to write. Fails only on a server URL that is not HTTP(S);
    /// everything else is reported by [`poll`](Self::poll).
    pub fn new(
        server_url: &str,
        challenge: Challenge,
        config: ClientConfig,
        store: Arc<dyn CredentialStore>,
    ) -> Result<Self, AuthError> {
        let server = Url::parse(server_url)
            .ok()
            .filter(|url| matches!(url.scheme(), "http" | "https") && url.has_host())
            .ok_or_else(|| AuthError::InvalidConfig {
                what: "MCP server URL",
                detail: format!("\"{}\" is not an HTTP(S) URL", quote(server_url)),
            })?;
        let chain = Chain {
            attempts: 1,
            requested: Vec::new(),
            may_refresh: true,
        };
        Ok(Self::build(
            server,
            server_url.to_owned(),
            config,
            store,
            challenge,
            chain,
        ))
    }

    fn build(
        server: Url,
        server_text: String,
        config: ClientConfig,
        store: Arc<dyn CredentialStore>,
        challenge: Challenge,
        chain: Chain,
    ) -> Self {
        let stage =
            match resource_metadata_candidates(&server, challenge.resource_metadata.as_deref()) {
                Ok(candidates) => Stage::ResourceMetadata {
                    candidates,
                    index: 0,
                },
                Err(error) => Stage::Failed(error),
            };
        Self {
            server,
            server_text,
            config,
            store,
            changes: Vec::new(),
            challenge,
            chain,
            stage,
            owed: Owed::Nothing,
            answer: None,
            redirect: None,
            found: Found::default(),
        }
    }

    /// The next flow of the same operation, for the challenge the retried request met (a 403
    /// `insufficient_scope` for a step-up, or another 401). It asks for the union of every
    /// scope asked for so far and the new challenge's, never refreshes, and past
    /// [`MAX_AUTHORIZATIONS`] flows ends at once with [`AuthError::ScopeStepUpExhausted`]
    /// (or [`AuthError::TokenNotAccepted`] for a 401).
    pub fn rechallenge(self, challenge: Challenge) -> Self {
        let attempts = self.chain.attempts;
        let mut requested = self.chain.requested;
        add_scopes(&mut requested, self.found.stored_scope);
        let chain = Chain {
            attempts: attempts.saturating_add(1),
            requested,
            may_refresh: false,
        };
        let server = self.server.to_string();
        let scope = quote(challenge.scope.as_deref().unwrap_or(""));
        let kind = challenge.kind;
        let mut next = Self::build(
            self.server,
            self.server_text,
            self.config,
            self.store,
            challenge,
            chain,
        );
        // What the earlier flow obtained and the caller has not taken yet is still owed.
        next.changes = self.changes;
        if attempts >= MAX_AUTHORIZATIONS {
            next.stage = Stage::Failed(match kind {
                ChallengeKind::InsufficientScope => AuthError::ScopeStepUpExhausted {
                    server,
                    attempts,
                    scope,
                },
                // A nonce challenge is the caller's to retry; fed here, it counts as a 401.
                _ => AuthError::TokenNotAccepted { server, attempts },
            });
        }
        next
    }

    /// Flows in this operation so far, this one included.
    pub fn attempts(&self) -> u32 {
        self.chain.attempts
    }

    /// The answer to the last [`AuthStep::Send`]: its status, headers and **whole** body (the
    /// driver caps it at [`MAX_ANSWER_BYTES`]). Do not follow redirects: feed the 3xx.
    pub fn handle_response(&mut self, status: StatusCode, headers: &HeaderMap, body: &[u8]) {
        if self.stage.is_over() {
            return;
        }
        if !matches!(self.owed, Owed::Answer { .. }) || self.answer.is_some() {
            self.misuse("an answer was fed when no request was awaiting one");
            return;
        }
        let oversize = body.len() > MAX_ANSWER_BYTES;
        self.answer = Some(Answer {
            status,
            body: if oversize { Vec::new() } else { body.to_vec() },
            oversize,
            dpop_nonce: headers
                .get(DPOP_NONCE)
                .and_then(|value| value.to_str().ok())
                .map(str::trim)
                .filter(|nonce| !nonce.is_empty())
                .map(str::to_owned),
        });
    }

    /// The URL the authorization server redirected the browser to, after
    /// [`AuthStep::Authorize`].
    pub fn handle_redirect(&mut self, redirect_url: &str) {
        if self.stage.is_over() {
            return;
        }
        if !matches!(self.owed, Owed::Redirect) || self.redirect.is_some() {
            self.misuse("a redirect was fed when no authorization was awaiting one");
            return;
        }
        self.redirect = Some(redirect_url.to_owned());
    }

    /// The caller has no authorizer for [`AuthStep::Authorize`]: the flow ends with
    /// [`AuthError::AuthorizationRequired`].
    pub fn handle_no_authorizer(&mut self) {
        if self.stage.is_over() {
            return;
        }
        if !matches!(self.owed, Owed::Redirect) {
            self.misuse("no authorization was awaiting an authorizer");
            return;
        }
        self.owed = Owed::Nothing;
        self.found.pending = None;
        self.stage = Stage::Failed(AuthError::AuthorizationRequired {
            server: self.server.to_string(),
            issuer: self.issuer().unwrap_or_default().to_owned(),
        });
    }

    /// What the flow asks the caller to remember or forget since the last call, oldest
    /// first: apply each to the store ([`CredentialChange::apply_to`]) outside the poll. A
    /// caller that drops them keeps nothing for the next flow (a registration made again, no
    /// refresh token).
    pub fn take_changes(&mut self) -> Vec<CredentialChange> {
        std::mem::take(&mut self.changes)
    }

    /// What the flow needs next. `now` stamps token lifetimes; `wall` is the time of day, for
    /// what carries one on the wire (the `iat` and `exp` of a client assertion, the `iat` of a
    /// DPoP proof); `entropy` is drawn from for the PKCE verifier and `state` of an
    /// authorization, a DPoP key, and the `jti` of assertions and proofs.
    pub fn poll(&mut self, now: Instant, wall: SystemTime, entropy: &mut dyn Entropy) -> AuthStep {
        if let Some(answer) = self.answer.take() {
            if let Err(error) = self.digest(answer, now) {
                self.stage = Stage::Failed(error);
            }
        }
        if let Some(redirect) = self.redirect.take() {
            if let Err(error) = self.digest_redirect(&redirect) {
                self.stage = Stage::Failed(error);
            }
        }
        if !self.stage.is_over() && !matches!(self.owed, Owed::Nothing) {
            return AuthStep::Pending;
        }
        loop {
            match self.advance(wall, entropy) {
                Ok(Some(step)) => return step,
                Ok(None) => {}
                Err(error) => self.stage = Stage::Failed(error),
            }
        }
    }

    fn misuse(&mut self, detail: &'static str) {
        self.owed = Owed::Nothing;
        self.stage = Stage::Failed(AuthError::Misuse { detail });
    }

    /// The authorization server's issuer, once its metadata was read.
    pub fn issuer(&self) -> Option<&str> {
        self.found.metadata.as_ref().map(|m| m.issuer.as_str())
    }

    /// One step forward from the current stage: a step for the caller, or `None` after a
    /// transition that needs no input.
    fn advance(
        &mut self,
        wall: SystemTime,
        entropy: &mut dyn Entropy,
    ) -> Result<Option<AuthStep>, AuthError> {
        match &self.stage {
            Stage::Done(token) => Ok(Some(AuthStep::Done(token.clone()))),
            Stage::Failed(error) => Ok(Some(AuthStep::Failed(error.clone()))),
            Stage::AwaitRedirect => Ok(Some(AuthStep::Pending)),
            Stage::ResourceMetadata { candidates, index } => {
                let url = candidates[*index].clone();
                self.send_get(AuthRequestKind::ResourceMetadata, url)
                    .map(Some)
            }
            Stage::ServerMetadata {
                candidates, index, ..
            } => {
                let url = candidates[*index].clone();
                self.send_get(AuthRequestKind::ServerMetadata, url)
                    .map(Some)
            }
            Stage::Identify => self.identify().map(|()| None),
            Stage::Register => self.send_registration().map(Some),
            Stage::Refresh { refresh_token, .. } => {
                let refresh_token = refresh_token.clone();
                self.send_token(
                    AuthRequestKind::Refresh,
                    &GrantForm::RefreshToken {
                        refresh_token: &refresh_token,
                    },
                    wall,
                    entropy,
                )
                .map(Some)
            }
            Stage::Exchange { code } => {
                let code = code.clone();
                let Some(pending) = self.found.pending.take() else {
                    return Err(AuthError::Misuse {
                        detail: "a code without its authorization",
                    });
                };
                let redirect_uri = self.config.redirect_uri.clone();
                let step = self.send_token(
                    AuthRequestKind::Token,
                    &GrantForm::AuthorizationCode {
                        code: &code,
                        redirect_uri: &redirect_uri,
                        verifier: &pending.verifier,
                    },
                    wall,
                    entropy,
                );
                self.found.pending = Some(pending);
                step.map(Some)
            }
            Stage::Authorize => self.authorize(entropy).map(Some),
            Stage::ClientCredentials => {
                let scope = self.machine_scope()?;
                self.send_token(
                    AuthRequestKind::ClientCredentials,
                    &GrantForm::ClientCredentials {
                        scope: scope.as_deref(),
                    },
                    wall,
                    entropy,
                )
                .map(Some)
            }
            Stage::JwtBearer { assertion } => {
                let assertion = assertion.clone();
                let scope = self.machine_scope()?;
                self.send_token(
                    AuthRequestKind::JwtBearer,
                    &GrantForm::JwtBearer {
                        assertion: &assertion,
                        scope: scope.as_deref(),
                    },
                    wall,
                    entropy,
                )
                .map(Some)
            }
            Stage::TokenExchange => self.send_id_jag_exchange().map(Some),
        }
    }

    fn send_get(&mut self, kind: AuthRequestKind, url: Url) -> Result<AuthStep, AuthError> {
        let request = Request::builder()
            .method(Method::GET)
            .uri(url.as_str())
            .header(ACCEPT, "application/json")
            .body(Vec::new());
        self.send(kind, url, request)
    }

    fn send(
        &mut self,
        kind: AuthRequestKind,
        url: Url,
        request: Result<Request<Vec<u8>>, http::Error>,
    ) -> Result<AuthStep, AuthError> {
        let request = request.map_err(|e| AuthError::Malformed {
            endpoint: kind.endpoint(),
            url: url.to_string(),
            detail: format!("no request can be built for it: {e}"),
        })?;
        self.owed = Owed::Answer { kind, url };
        Ok(AuthStep::Send(AuthRequest { kind, request }))
    }

    fn metadata(&self) -> Result<&ServerMetadata, AuthError> {
        self.found.metadata.as_ref().ok_or(AuthError::Misuse {
            detail: "a step that needs server metadata came before it",
        })
    }

    fn resource(&self) -> String {
        self.found.resource.clone().unwrap_or_default()
    }

    fn send_registration(&mut self) -> Result<AuthStep, AuthError> {
        let metadata = self.metadata()?;
        let Some(endpoint) = metadata.registration_endpoint.clone() else {
            return Err(AuthError::NoClientIdentity {
                issuer: metadata.issuer.clone(),
            });
        };
        let body = serde_json::to_vec(&RegistrationRequest::new(&self.config, metadata))
            .unwrap_or_default();
        let request = Request::builder()
            .method(Method::POST)
            .uri(endpoint.as_str())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json")
            .body(body);
        self.send(AuthRequestKind::Register, endpoint, request)
    }

    /// A request to the authorization server's token endpoint, with the client's assertion
    /// (`private_key_jwt`) and a DPoP proof when the flow binds its tokens.
    fn send_token(
        &mut self,
        kind: AuthRequestKind,
        grant: &GrantForm<'_>,
        wall: SystemTime,
        entropy: &mut dyn Entropy,
    ) -> Result<AuthStep, AuthError> {
        let metadata = self.metadata()?;
        let endpoint = metadata.token_endpoint.clone();
        let issuer = metadata.issuer.clone();
        let proof = if self.dpop_wanted() {
            let key = match self.found.dpop_key.take() {
                Some(key) => key,
                None => PrivateKey::generate(entropy)?,
            };
            let proof = dpop_proof(
                &key,
                &ProofTarget {
                    method: &Method::POST,
                    url: &endpoint,
                    access_token: None,
                    nonce: self.found.as_nonce.as_deref(),
                },
                wall,
                entropy,
            );
            self.found.dpop_key = Some(key);
            Some(proof)
        } else {
            None
        };
        let Some(client) = self.found.client.as_ref() else {
            return Err(AuthError::Misuse {
                detail: "a token request without a client",
            });
        };
        let assertion = match (&self.config.grant.0, client.auth_method) {
            (
                GrantKind::ClientCredentials {
                    auth: MachineAuth::PrivateKeyJwt(key),
                    ..
                },
                TokenEndpointAuth::PrivateKeyJwt,
            ) => Some(client_assertion(
                key,
                &client.client_id,
                &issuer,
                wall,
                entropy,
            )),
            _ => None,
        };
        let request = token_request(
            &endpoint,
            client,
            grant,
            &self.resource(),
            &Proofs {
                client_assertion: assertion.as_ref(),
                dpop: proof.as_deref(),
            },
        );
        self.found.dpop_sent = proof.is_some();
        self.send(kind, endpoint, request)
    }

    /// Whether this flow's token requests carry a DPoP proof.
    fn dpop_wanted(&self) -> bool {
        match self.config.dpop {
            Dpop::Off => false,
            Dpop::Always => true,
            Dpop::WhenAdvertised => self
                .found
                .metadata
                .as_ref()
                .is_some_and(ServerMetadata::supports_dpop_es256),
        }
    }

    /// The token exchange at the identity provider: its ID token for an ID-JAG addressed to
    /// the authorization server, for the resource (SEP-990). No DPoP: the ID-JAG is a grant,
    /// not a token presented to the resource.
    fn send_id_jag_exchange(&mut self) -> Result<AuthStep, AuthError> {
        let issuer = self.metadata()?.issuer.clone();
        let scope = self.machine_scope()?;
        let GrantKind::EnterpriseManaged(enterprise) = &self.config.grant.0 else {
            return Err(AuthError::Misuse {
                detail: "a token exchange without an enterprise-managed grant",
            });
        };
        let idp_client = ClientCredentials {
            client_id: enterprise.idp_client_id.clone(),
            client_secret: None,
            auth_method: TokenEndpointAuth::None,
            redirect_uri: String::new(),
            source: ClientSource::PreRegistered,
        };
        let endpoint = enterprise.idp_token_endpoint.clone();
        let request = token_request(
            &endpoint,
            &idp_client,
            &GrantForm::IdJagExchange {
                id_token: &enterprise.id_token,
                audience: &issuer,
                scope: scope.as_deref(),
            },
            &self.resource(),
            &Proofs::default(),
        );
        self.found.dpop_sent = false;
        self.send(AuthRequestKind::TokenExchange, endpoint, request)
    }

    /// The scope a grant without a person asks for: the selection an authorization would make,
    /// without `offline_access` (no refresh token is kept for these grants).
    fn machine_scope(&mut self) -> Result<Option<String>, AuthError> {
        let mut scopes = self.scopes(self.metadata()?);
        scopes.retain(|scope| scope != "offline_access");
        let scope = (!scopes.is_empty()).then(|| scopes.join(" "));
        self.chain.requested = scopes;
        Ok(scope)
    }

    /// A grant without a person: its client, and its first token request.
    fn identify_machine(&mut self) -> Result<(), AuthError> {
        let (client, stage) = match &self.config.grant.0 {
            GrantKind::AuthorizationCode => {
                return Err(AuthError::Misuse {
                    detail: "the authorization code flow taken for a grant without a person",
                });
            }
            GrantKind::ClientCredentials { client_id, auth } => {
                let (client_secret, auth_method) = match auth {
                    MachineAuth::SecretBasic(secret) => {
                        (Some(secret.clone()), TokenEndpointAuth::ClientSecretBasic)
                    }
                    MachineAuth::PrivateKeyJwt(_) => (None, TokenEndpointAuth::PrivateKeyJwt),
                };
                (
                    machine_client(client_id, client_secret, auth_method),
                    Stage::ClientCredentials,
                )
            }
            GrantKind::JwtBearer {
                client_id,
                assertion,
            } => (
                machine_client(client_id, None, TokenEndpointAuth::None),
                Stage::JwtBearer {
                    assertion: assertion.clone(),
                },
            ),
            GrantKind::EnterpriseManaged(enterprise) => (
                machine_client(
                    &enterprise.client_id,
                    Some(enterprise.client_secret.clone()),
                    TokenEndpointAuth::ClientSecretBasic,
                ),
                Stage::TokenExchange,
            ),
        };
        self.found.client = Some(client);
        self.stage = stage;
        Ok(())
    }

    /// Chooses the client identity (and whether to refresh) once the server is known.
    fn identify(&mut self) -> Result<(), AuthError> {
        if !self.config.grant.needs_person() {
            return self.identify_machine();
        }
        let metadata = self.metadata()?;
        let issuer = metadata.issuer.clone();
        let client = if let Some(pre) = &self.config.pre_registered {
            if !pre.any_issuer && pre.issuer != issuer {
                return Err(AuthError::PreRegisteredForOtherIssuer {
                    server: self.server.to_string(),
                    configured: quote(&pre.issuer),
                    issuer,
                });
            }
            Some(ClientCredentials {
                client_id: pre.client_id.clone(),
                client_secret: pre.client_secret.clone(),
                auth_method: pre_registered_method(
                    pre.auth_method,
                    pre.client_secret.is_some(),
                    metadata,
                ),
                redirect_uri: self.config.redirect_uri.clone(),
                source: ClientSource::PreRegistered,
            })
        } else if let (true, Some(document)) = (
            metadata.client_id_metadata_document_supported,
            &self.config.metadata_document,
        ) {
            Some(ClientCredentials {
                client_id: document.clone(),
                client_secret: None,
                auth_method: crate::config::TokenEndpointAuth::None,
                redirect_uri: self.config.redirect_uri.clone(),
                source: ClientSource::MetadataDocument,
            })
        } else {
            // A registration serves a refresh whatever redirect URI it was made for (a refresh
            // has none); an authorization needs one made for this redirect URI
            // (`without_refresh`).
            self.store.client(&issuer)
        };
        let stored = self.store.tokens(&issuer, &self.resource());
        self.found.stored_scope = stored
            .as_ref()
            .and_then(|tokens| tokens.scope.as_deref())
            .map(|scope| scope.split_ascii_whitespace().map(str::to_owned).collect())
            .unwrap_or_default();
        let refresh = stored.filter(|tokens| {
            self.chain.may_refresh
                && self.challenge.kind != ChallengeKind::InsufficientScope
                && client
                    .as_ref()
                    .is_some_and(|client| client.client_id == tokens.client_id)
        });
        self.found.client = client;
        self.stage =
            match refresh.and_then(|tokens| tokens.refresh_token.map(|r| (r, tokens.scope))) {
                Some((refresh_token, scope)) => Stage::Refresh {
                    refresh_token,
                    scope,
                },
                None => self.without_refresh()?,
            };
        Ok(())
    }

    /// With a client registered for this redirect URI, authorize; without one, register if
    /// the server can.
    fn without_refresh(&self) -> Result<Stage, AuthError> {
        let metadata = self.metadata()?;
        let usable = self
            .found
            .client
            .as_ref()
            .is_some_and(|client| client.redirect_uri == self.config.redirect_uri);
        if usable {
            Ok(Stage::Authorize)
        } else if metadata.registration_endpoint.is_some() {
            Ok(Stage::Register)
        } else {
            Err(AuthError::NoClientIdentity {
                issuer: metadata.issuer.clone(),
            })
        }
    }

    /// The scopes to ask for: what the operation asked for before and the stored tokens hold,
    /// with the challenge's scope, else the configured one, else the resource metadata's
    /// `scopes_supported`; `offline_access` added when the server lists it (and the scope is
    /// not left to the server's default).
    fn scopes(&self, metadata: &ServerMetadata) -> Vec<String> {
        let challenged = self.challenge.scopes();
        let selection: Vec<String> = if !challenged.is_empty() {
            challenged.into_iter().map(str::to_owned).collect()
        } else if let Some(scope) = &self.config.scope {
            scope.split_ascii_whitespace().map(str::to_owned).collect()
        } else {
            self.found.prm_scopes.clone().unwrap_or_default()
        };
        let mut scopes = Vec::new();
        add_scopes(
            &mut scopes,
            self.chain
                .requested
                .iter()
                .chain(&self.found.stored_scope)
                .chain(&selection)
                .cloned(),
        );
        let offline = "offline_access";
        if !scopes.is_empty() && metadata.supports_scope(offline) {
            add_scopes(&mut scopes, [offline.to_owned()]);
        }
        scopes
    }

    fn authorize(&mut self, entropy: &mut dyn Entropy) -> Result<AuthStep, AuthError> {
        let metadata = self.metadata()?;
        let Some(client) = self.found.client.as_ref() else {
            return Err(AuthError::Misuse {
                detail: "an authorization without a client",
            });
        };
        let scopes = self.scopes(metadata);
        let scope = (!scopes.is_empty()).then(|| scopes.join(" "));
        let pkce = Pkce::generate(entropy);
        let state = entropy::state(entropy);
        let resource = self.resource();
        let url = authorization_url(
            &metadata.authorization_endpoint,
            &AuthorizationRequest {
                client_id: &client.client_id,
                redirect_uri: &self.config.redirect_uri,
                code_challenge: &pkce.challenge,
                state: &state,
                resource: &resource,
                scope: scope.as_deref(),
            },
        );
        self.chain.requested = scopes;
        self.found.pending = Some(PendingAuthorization {
            verifier: pkce.verifier,
            state,
            scope,
        });
        self.owed = Owed::Redirect;
        self.stage = Stage::AwaitRedirect;
        Ok(AuthStep::Authorize { url })
    }

    fn digest_redirect(&mut self, redirect: &str) -> Result<(), AuthError> {
        self.owed = Owed::Nothing;
        let metadata = self.metadata()?;
        let (Some(pending), Some(redirect_url)) = (
            self.found.pending.as_ref(),
            self.config.redirect_url.as_ref(),
        ) else {
            return Err(AuthError::Misuse {
                detail: "a redirect without its authorization",
            });
        };
        let code = read_redirect(
            redirect,
            &Expected {
                redirect_uri: redirect_url,
                state: &pending.state,
                issuer: &metadata.issuer,
                iss_required: metadata.iss_parameter_supported,
            },
        )?;
        self.stage = Stage::Exchange { code };
        Ok(())
    }

    fn digest(&mut self, answer: Answer, now: Instant) -> Result<(), AuthError> {
        let Owed::Answer { kind, url } = std::mem::replace(&mut self.owed, Owed::Nothing) else {
            return Err(AuthError::Misuse {
                detail: "an answer without its request",
            });
        };
        if answer.oversize {
            return Err(AuthError::Malformed {
                endpoint: kind.endpoint(),
                url: url.to_string(),
                detail: format!("the answer is longer than {MAX_ANSWER_BYTES} bytes"),
            });
        }
        if answer.status.is_redirection() {
            return Err(AuthError::Redirected {
                endpoint: kind.endpoint(),
                url: url.to_string(),
                status: answer.status.as_u16(),
            });
        }
        if kind.at_token_endpoint() && self.found.dpop_sent {
            if let Some(nonce) = &answer.dpop_nonce {
                // Kept for every later proof to this server (RFC 9449 8).
                self.found.as_nonce = Some(nonce.clone());
                let asks_for_nonce = answer.status == StatusCode::BAD_REQUEST
                    && oauth_error(&answer.body).0.as_deref() == Some("use_dpop_nonce");
                if asks_for_nonce && !self.found.nonce_retried.contains(&kind) {
                    // The stage is unchanged: the same request goes again, its proof now
                    // carrying the nonce. Once per request: a second one is a refusal.
                    self.found.nonce_retried.push(kind);
                    return Ok(());
                }
            }
        }
        match kind {
            AuthRequestKind::ResourceMetadata => self.digest_resource_metadata(&url, &answer),
            AuthRequestKind::ServerMetadata => self.digest_server_metadata(&url, &answer),
            AuthRequestKind::Register => self.digest_registration(&url, &answer),
            AuthRequestKind::Token => self.digest_token(&url, &answer, now),
            AuthRequestKind::Refresh => self.digest_refresh(&url, &answer, now),
            AuthRequestKind::ClientCredentials | AuthRequestKind::JwtBearer => {
                self.digest_machine_token(&url, &answer, now)
            }
            AuthRequestKind::TokenExchange => self.digest_token_exchange(&url, &answer),
        }
    }

    fn digest_machine_token(
        &mut self,
        url: &Url,
        answer: &Answer,
        now: Instant,
    ) -> Result<(), AuthError> {
        // A refusal ends the flow: an assertion is not sent again, and no other grant is tried.
        if !answer.status.is_success() {
            return Err(rejected(url, answer));
        }
        let requested = self.chain.requested.join(" ");
        let (tokens, token_type) = read_token_answer(
            url,
            &answer.body,
            now,
            &self.client_id(),
            (!requested.is_empty()).then_some(requested.as_str()),
            self.found.dpop_sent,
        )?;
        self.finish(tokens, token_type)
    }

    fn digest_token_exchange(&mut self, url: &Url, answer: &Answer) -> Result<(), AuthError> {
        if !answer.status.is_success() {
            return Err(rejected(url, answer));
        }
        let assertion = read_id_jag(url, &answer.body)?;
        self.stage = Stage::JwtBearer { assertion };
        Ok(())
    }

    fn digest_resource_metadata(&mut self, url: &Url, answer: &Answer) -> Result<(), AuthError> {
        let Stage::ResourceMetadata { candidates, index } = &mut self.stage else {
            return Err(AuthError::Misuse {
                detail: "resource metadata outside discovery",
            });
        };
        if answer.status.is_success() {
            let prm = read_resource_metadata(&self.server, url, &answer.body)?;
            let issuer = self
                .config
                .pre_registered
                .as_ref()
                .map(|pre| &pre.issuer)
                .filter(|issuer| prm.authorization_servers.contains(issuer))
                .or(prm.authorization_servers.first())
                .cloned()
                .ok_or_else(|| AuthError::NoAuthorizationServer {
                    server: self.server.to_string(),
                    metadata_url: url.to_string(),
                })?;
            self.found.resource = Some(prm.resource);
            self.found.prm_scopes = prm.scopes_supported;
            self.stage = Stage::ServerMetadata {
                candidates: server_metadata_candidates(&issuer)?,
                issuer,
                index: 0,
            };
        } else if answer.status.is_client_error() {
            *index += 1;
            if *index >= candidates.len() {
                // No resource metadata anywhere: a 2025-03-26 server, whose authorization
                // server sits at its origin and whose resource is its URL.
                let origin = self.server.origin().ascii_serialization();
                let resource = match self.server_text.split_once('#') {
                    Some((before, _)) => before.to_owned(),
                    None => self.server_text.clone(),
                };
                self.found.legacy = true;
                self.found.resource = Some(resource);
                self.stage = Stage::ServerMetadata {
                    candidates: server_metadata_candidates(&origin)?,
                    issuer: origin,
                    index: 0,
                };
            }
        } else {
            return Err(unexpected(AuthRequestKind::ResourceMetadata, url, answer));
        }
        Ok(())
    }

    fn digest_server_metadata(&mut self, url: &Url, answer: &Answer) -> Result<(), AuthError> {
        let Stage::ServerMetadata {
            issuer,
            candidates,
            index,
        } = &mut self.stage
        else {
            return Err(AuthError::Misuse {
                detail: "server metadata outside discovery",
            });
        };
        if answer.status.is_success() {
            let metadata = read_server_metadata(issuer, url, &answer.body)?;
            let s256 = !self.config.grant.needs_person()
                || metadata
                    .code_challenge_methods_supported
                    .as_ref()
                    .is_some_and(|methods| methods.iter().any(|m| m == "S256"));
            if !s256 {
                return Err(AuthError::PkceUnsupported {
                    issuer: issuer.clone(),
                });
            }
            self.found.metadata = Some(metadata);
            self.stage = Stage::Identify;
        } else if answer.status.is_client_error() {
            *index += 1;
            if *index >= candidates.len() {
                if !self.found.legacy {
                    return Err(AuthError::MetadataNotFound {
                        issuer: issuer.clone(),
                        tried: candidates
                            .iter()
                            .map(Url::as_str)
                            .collect::<Vec<_>>()
                            .join(", "),
                    });
                }
                // 2025-03-26: no metadata either, so the default endpoints at the origin.
                self.found.metadata = Some(ServerMetadata::legacy_defaults(issuer)?);
                self.stage = Stage::Identify;
            }
        } else {
            return Err(unexpected(AuthRequestKind::ServerMetadata, url, answer));
        }
        Ok(())
    }

    fn digest_registration(&mut self, url: &Url, answer: &Answer) -> Result<(), AuthError> {
        if !answer.status.is_success() {
            let (error, description) = oauth_error(&answer.body);
            return Err(AuthError::RegistrationFailed {
                endpoint: url.to_string(),
                status: answer.status.as_u16(),
                error,
                description,
            });
        }
        let metadata = self.metadata()?;
        let client = read_registration(url, &self.config, metadata, &answer.body)?;
        self.changes.push(CredentialChange::Client {
            issuer: metadata.issuer.clone(),
            client: client.clone(),
        });
        self.found.client = Some(client);
        self.stage = Stage::Authorize;
        Ok(())
    }

    fn digest_token(&mut self, url: &Url, answer: &Answer, now: Instant) -> Result<(), AuthError> {
        if !answer.status.is_success() {
            return Err(rejected(url, answer));
        }
        let pending = self.found.pending.take();
        let (tokens, token_type) = read_token_answer(
            url,
            &answer.body,
            now,
            &self.client_id(),
            pending.as_ref().and_then(|p| p.scope.as_deref()),
            self.found.dpop_sent,
        )?;
        self.finish(tokens, token_type)
    }

    fn digest_refresh(
        &mut self,
        url: &Url,
        answer: &Answer,
        now: Instant,
    ) -> Result<(), AuthError> {
        let Stage::Refresh {
            refresh_token,
            scope,
        } = &self.stage
        else {
            return Err(AuthError::Misuse {
                detail: "a refresh answer outside a refresh",
            });
        };
        if answer.status.is_success() {
            let (mut tokens, token_type) = read_token_answer(
                url,
                &answer.body,
                now,
                &self.client_id(),
                scope.as_deref(),
                self.found.dpop_sent,
            )?;
            // A server that does not rotate refresh tokens leaves the old one valid.
            if tokens.refresh_token.is_none() {
                tokens.refresh_token = Some(refresh_token.clone());
            }
            return self.finish(tokens, token_type);
        }
        if !matches!(
            answer.status,
            StatusCode::BAD_REQUEST | StatusCode::UNAUTHORIZED
        ) {
            return Err(rejected(url, answer));
        }
        // The refresh token is spent (or the client unknown): forget it and authorize anew.
        let issuer = self.metadata()?.issuer.clone();
        let resource = self.resource();
        self.changes
            .push(CredentialChange::ForgetTokens { issuer, resource });
        let (error, _) = oauth_error(&answer.body);
        let registered = self
            .found
            .client
            .as_ref()
            .is_some_and(|client| client.source == ClientSource::Registered);
        if error.as_deref() == Some("invalid_client") && registered {
            self.found.client = None;
        }
        self.stage = self.without_refresh()?;
        Ok(())
    }

    fn client_id(&self) -> String {
        self.found
            .client
            .as_ref()
            .map(|client| client.client_id.clone())
            .unwrap_or_default()
    }

    fn finish(&mut self, tokens: TokenSet, token_type: TokenType) -> Result<(), AuthError> {
        let issuer = self.metadata()?.issuer.clone();
        let resource = self.resource();
        let dpop_key = match token_type {
            TokenType::Dpop => self.found.dpop_key.clone(),
            TokenType::Bearer => None,
        };
        self.stage = Stage::Done(AccessToken::new(&tokens, &issuer, &resource, dpop_key));
        self.changes.push(CredentialChange::Tokens {
            issuer,
            resource,
            tokens,
        });
        Ok(())
    }
}

/// The identity of a client without a person: issued out of band, given in its grant.
fn machine_client(
    client_id: &str,
    client_secret: Option<Secret>,
    auth_method: TokenEndpointAuth,
) -> ClientCredentials {
    ClientCredentials {
        client_id: client_id.to_owned(),
        client_secret,
        auth_method,
        redirect_uri: String::new(),
        source: ClientSource::PreRegistered,
    }
}

/// Appends the scopes `scopes` does not hold yet, in order.
fn add_scopes(scopes: &mut Vec<String>, more: impl IntoIterator<Item = String>) {
    for scope in more {
        if !scopes.contains(&scope) {
            scopes.push(scope);
        }
    }
}

fn unexpected(kind: AuthRequestKind, url: &Url, answer: &Answer) -> AuthError {
    AuthError::UnexpectedStatus {
        endpoint: kind.endpoint(),
        url: url.to_string(),
        status: answer.status.as_u16(),
    }
}

fn rejected(url: &Url, answer: &Answer) -> AuthError {
    let (error, description) = oauth_error(&answer.body);
    AuthError::TokenRejected {
        endpoint: url.to_string(),
        status: answer.status.as_u16(),
        error,
        description,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flow_can_live_in_an_operation_on_any_thread() {
        fn send_and_sync<T: Send + Sync>() {}
        send_and_sync::<AuthFlow>();
        send_and_sync::<AuthStep>();
        send_and_sync::<AuthError>();
    }

    #[test]
    fn labels_name_each_request_kind() {
        let labels: Vec<&str> = [
            AuthRequestKind::ResourceMetadata,
            AuthRequestKind::ServerMetadata,
            AuthRequestKind::Register,
            AuthRequestKind::Token,
            AuthRequestKind::Refresh,
            AuthRequestKind::ClientCredentials,
            AuthRequestKind::JwtBearer,
            AuthRequestKind::TokenExchange,
        ]
        .iter()
        .map(|kind| kind.label())
        .collect();
        assert_eq!(
            labels,
            [
                "oauth:resource-metadata",
                "oauth:server-metadata",
                "oauth:register",
                "oauth:token",
                "oauth:refresh",
                "oauth:client-credentials",
                "oauth:jwt-bearer",
                "oauth:token-exchange"
            ]
        );
    }
}
