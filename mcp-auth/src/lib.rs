//! Sans-IO OAuth 2.1 for MCP clients: from a server's 401 to an access token, as a state
//! machine whose every request can be a leg of the operation that met the 401.
//!
//! An MCP server that needs authorization answers 401 (or 403 `insufficient_scope`). What
//! follows is several HTTP requests (resource metadata, server metadata, perhaps a
//! registration, the token) around one step that needs a person (the browser). [`AuthFlow`]
//! decides all of it and does none of the I/O: it hands out each request ready to send, built
//! only when polled so the operation can grant it what is left of its budget, and it takes the
//! time (`now`) and randomness ([`Entropy`]) as inputs.
//!
//! # In scope
//! * Challenges: `WWW-Authenticate` read leniently ([`Challenge`]).
//! * Discovery: Protected Resource Metadata (RFC 9728) with its fallbacks and the `resource`
//!   check; authorization server metadata (RFC 8414, OpenID Connect Discovery) in the spec's
//!   order with the exact `issuer` check; 2025-03-26 servers (metadata at the origin, else the
//!   default endpoints).
//! * Client identity: pre-registered ([`PreRegisteredClient`], bound to its issuer), a Client
//!   ID Metadata Document URL, Dynamic Client Registration (RFC 7591).
//! * Authorization code with PKCE `S256`, `state`, `resource` (RFC 8707), scope selection,
//!   `offline_access`; the redirect checked (`state`, RFC 9207 `iss`); token endpoint auth
//!   `none`, `client_secret_basic`, `client_secret_post`; refresh; step-up with accumulated
//!   scopes, at most [`MAX_AUTHORIZATIONS`] per operation.
//! * Grants without a person ([`Grant`], [`ClientConfig::headless`]), straight from discovery
//!   to the token endpoint: `client_credentials` with `client_secret_basic` or
//!   `private_key_jwt` (an ES256 assertion signed with a [`PrivateKey`], `aud` the issuer);
//!   `jwt-bearer` with a workload's assertion (never retried, no fallback grant);
//!   enterprise-managed authorization (SEP-990: a token exchange at the IdP for an ID-JAG, then
//!   `jwt-bearer` with `client_secret_basic`).
//! * DPoP (RFC 9449, [`Dpop`]): a P-256 key per flow drawn from [`Entropy`], a proof on every
//!   token request, one retry per request on `use_dpop_nonce`; a DPoP-bound [`AccessToken`]
//!   presents itself with a fresh proof per request
//!   ([`AccessToken::authorization_headers`]); a resource server's nonce challenge is
//!   [`ChallengeKind::UseDpopNonce`].
//! * Credentials per issuer in a [`CredentialStore`] ([`MemoryStore`] by default).
//!
//! # Out of scope
//! * Sockets, browsers, loopback listeners, clocks, random sources: the driver's (the browser
//!   step is the caller's authorizer: it gets [`AuthStep::Authorize`]'s URL and returns the
//!   redirect URL it received).
//! * Following redirects: a 3xx from any endpoint ends the flow ([`AuthError::Redirected`]).
//! * Signing algorithms other than ES256 (client assertions and DPoP proofs); keys other than
//!   P-256 PKCS#8 PEM; checking a given assertion (a workload's JWT, an ID token) before sending
//!   it: the server judges it.
//! * Keeping a DPoP key beyond its flow: a stored refresh token bound to an earlier flow's key
//!   is refused by the server, and the flow falls back to a full authorization.
//! * Refresh for grants without a person: they simply ask again.
//!
//! # The architecture, by module
//!
//! | module         | what it is                                                          |
//! |----------------|---------------------------------------------------------------------|
//! | `flow`         | [`AuthFlow`]: every transition, the driving contract                |
//! | `challenge`    | [`Challenge`]: `WWW-Authenticate` read                              |
//! | `discovery`    | metadata locations, documents, the `resource` and `issuer` rules    |
//! | `registration` | DCR document and answer, token endpoint auth method choice          |
//! | `authorize`    | the authorization URL and the redirect checks                       |
//! | `token`        | token requests per grant, client authentication, [`AccessToken`]    |
//! | `jwt`          | [`PrivateKey`], ES256 client assertions and DPoP proofs             |
//! | `config`       | [`ClientConfig`], [`Grant`], [`Dpop`], [`PreRegisteredClient`]      |
//! | `store`        | [`CredentialStore`], [`MemoryStore`]                                |
//! | `entropy`      | the [`Entropy`] seam, PKCE and `state`                              |
//! | `secret`       | [`Secret`]: a credential that never reaches a log                   |
//! | `error`        | [`AuthError`] and its [`Fault`]                                     |
//!
//! # A whole flow
//!
//! A 401, then resource metadata, server metadata, registration, the browser, the token,
//! against canned answers (a real driver sends each request under its leg's grant):
//!
//! ```
//! use std::sync::Arc;
//! use std::time::{Instant, SystemTime};
//! use http::{HeaderMap, HeaderValue, StatusCode};
//! use mcp_auth::{AuthFlow, AuthStep, AuthRequestKind, Challenge, ClientConfig, Entropy, MemoryStore};
//!
//! struct Counter(u8); // tests only: a driver fills from the OS
//! impl Entropy for Counter {
//!     fn fill(&mut self, buf: &mut [u8]) {
//!         for b in buf { self.0 = self.0.wrapping_add(1); *b = self.0; }
//!     }
//! }
//!
//! // The MCP server's refusal.
//! let mut head = HeaderMap::new();
//! head.insert("www-authenticate", HeaderValue::from_static(
//!     r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="files:read""#));
//! let challenge = Challenge::from_response(StatusCode::UNAUTHORIZED, &head).unwrap();
//!
//! let config = ClientConfig::new("http://127.0.0.1:8976/callback")?.with_client_name("agent");
//! let store = Arc::new(MemoryStore::new());
//! let mut flow = AuthFlow::new("https://mcp.example.com/mcp", challenge, config, store)?;
//!
//! let metadata = r#"{"issuer":"https://auth.example.com",
//!     "authorization_endpoint":"https://auth.example.com/authorize",
//!     "token_endpoint":"https://auth.example.com/token",
//!     "registration_endpoint":"https://auth.example.com/register",
//!     "code_challenge_methods_supported":["S256"],
//!     "authorization_response_iss_parameter_supported":true}"#;
//! let mut labels = Vec::new();
//! let token = loop {
//!     match flow.poll(Instant::now(), SystemTime::now(), &mut Counter(0)) {
//!         AuthStep::Send(request) => {
//!             labels.push(request.kind.label());
//!             let (status, body) = match request.kind {
//!                 AuthRequestKind::ResourceMetadata => (200, r#"{"resource":"https://mcp.example.com/mcp",
//!                     "authorization_servers":["https://auth.example.com"]}"#),
//!                 AuthRequestKind::ServerMetadata => (200, metadata),
//!                 AuthRequestKind::Register => (201, r#"{"client_id":"client-7"}"#),
//!                 AuthRequestKind::Token => (200, r#"{"access_token":"at-1","token_type":"Bearer","expires_in":3600}"#),
//!                 AuthRequestKind::Refresh | _ => unreachable!(),
//!             };
//!             let status = StatusCode::from_u16(status).unwrap();
//!             flow.handle_response(status, &HeaderMap::new(), body.as_bytes());
//!         }
//!         AuthStep::Authorize { url } => {
//!             // The authorizer opens `url` in a browser; the person approves; the server
//!             // redirects to the loopback listener, which hands the URL back.
//!             let state = url.query_pairs().find(|(k, _)| k == "state").unwrap().1.into_owned();
//!             flow.handle_redirect(&format!(
//!                 "http://127.0.0.1:8976/callback?code=c-1&state={state}&iss=https%3A%2F%2Fauth.example.com"));
//!         }
//!         AuthStep::Pending => unreachable!("every answer was fed"),
//!         AuthStep::Done(token) => break token,
//!         AuthStep::Failed(error) => return Err(error.into()),
//!     }
//! };
//! assert_eq!(labels, ["oauth:resource-metadata", "oauth:server-metadata", "oauth:register", "oauth:token"]);
//! assert_eq!(token.authorization_header(), "Bearer at-1");
//! assert_eq!(token.scope(), Some("files:read"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod authorize;
mod challenge;
mod config;
mod discovery;
mod entropy;
mod error;
mod flow;
mod jwt;
mod registration;
mod secret;
mod store;
mod token;

pub use challenge::{Challenge, ChallengeKind};
pub use config::{ClientConfig, Dpop, Grant, GrantType, PreRegisteredClient, TokenEndpointAuth};
pub use entropy::Entropy;
pub use error::{AuthError, Fault, QUOTE_LIMIT, clip};
pub use flow::{
    AuthFlow, AuthRequest, AuthRequestKind, AuthStep, MAX_ANSWER_BYTES, MAX_AUTHORIZATIONS,
};
pub use jwt::PrivateKey;
pub use secret::Secret;
pub use store::{
    ClientCredentials, ClientSource, CredentialChange, CredentialStore, MemoryStore, TokenSet,
};
pub use token::AccessToken;
