//! The OAuth mode: the test server as its own OAuth 2.1 authorization server, guarding its
//! MCP endpoint with Bearer tokens (see [`Script::oauth`](crate::Script::oauth)).
//!
//! On one port, beside `/mcp`:
//!
//! | path | what |
//! |------|------|
//! | `/.well-known/oauth-protected-resource/mcp` (and the root form) | Protected Resource Metadata (RFC 9728) |
//! | `/.well-known/oauth-authorization-server[/...]` | authorization server metadata (RFC 8414) |
//! | `/register` | Dynamic Client Registration (RFC 7591) |
//! | `/authorize` | approves at once: `302` to the redirect URI with `code`, `state`, `iss` |
//! | `/token` | `authorization_code` (PKCE `S256` checked) and `refresh_token` grants; `client_credentials` for the [`OAuthScript::machine_client`] |
//!
//! `/mcp` answers `401` with a `WWW-Authenticate: Bearer resource_metadata="..."` challenge to
//! any request without a token this server issued and still accepts, and `403`
//! `insufficient_scope` to a `tools/call` whose token lacks the scope calls require. Every
//! check the authorization server makes is real (client, redirect URI, PKCE, `state`,
//! `resource`, single-use codes); [`AuthHostile`] breaks one rule on purpose.
//!
//! This module decides answers; `server.rs` writes them. It must never be reachable from
//! anything but loopback (the server binds `127.0.0.1` only).

use std::collections::HashMap;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use url::form_urlencoded;

use crate::http::{Request, Response};
use crate::message::{Message, RpcKind};
use crate::recorded::RecordedRequest;

/// Where the Protected Resource Metadata of `/mcp` is (the path-based well-known URL).
pub const RESOURCE_METADATA_PATH: &str = "/.well-known/oauth-protected-resource/mcp";
/// The root form of the Protected Resource Metadata URL (served too).
const RESOURCE_METADATA_ROOT: &str = "/.well-known/oauth-protected-resource";
/// The prefix of the authorization server metadata URLs served (any issuer path after it).
pub const SERVER_METADATA_PATH: &str = "/.well-known/oauth-authorization-server";

/// One rule the authorization server (or the resource) breaks on purpose, for
/// [`OAuthScript::hostile`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthHostile {
    /// The authorization server metadata claims the issuer `https://issuer.evil.example`, not
    /// the one the resource metadata names.
    WrongIssuer,
    /// The Protected Resource Metadata's `resource` is this URL (e.g. another host's MCP URL)
    /// instead of this server's.
    ForeignResource(String),
    /// `/authorize` redirects to `<this base URL>/callback?code=...&state=...&iss=...` (e.g.
    /// another [`TestServer`](crate::TestServer)'s base URL) instead of the redirect URI.
    AuthorizeRedirectTo(String),
    /// `/authorize` reads the request and never answers (a person who never comes back).
    AuthorizeStall,
    /// `/authorize` answers this status with a short text page instead of a redirect (the
    /// headless authorizer then fails).
    AuthorizeStatus(u16),
    /// `/authorize` redirects with a `state` the client did not send.
    WrongState,
    /// `/authorize` redirects with an `iss` that is not the issuer.
    WrongIss,
    /// `/authorize` redirects without `iss` (the metadata still advertises it).
    NoIss,
    /// `/authorize` redirects with `error=access_denied`.
    DenyAuthorization,
    /// `/token` reads the request and never answers.
    TokenStall,
    /// `/token` answers `200` with a JSON body of this many bytes (streamed, never built in
    /// memory, with a `Content-Length`).
    TokenOversize(usize),
    /// Like [`AuthHostile::TokenOversize`], chunked (no `Content-Length` to refuse up
    /// front).
    TokenOversizeChunked(usize),
    /// `/token` answers `302 Found` with this `Location`.
    TokenRedirectTo(String),
    /// `/token` issues tokens as usual, but `/mcp` accepts none of them.
    RefuseTokens,
}

/// How the OAuth mode behaves. [`OAuthScript::new`] (same as `default`): the issuer is the
/// server's own base URL, the `401` names no scope, calls need no scope, tokens last an hour
/// and come with a refresh token, registration issues public clients (no secret), the token
/// endpoint finds the client in Basic credentials or else in the form, no machine client,
/// nothing hostile.
///
/// ```
/// use mcp_testkit::{AuthHostile, OAuthScript, Script};
///
/// let script = Script::new().oauth(
///     OAuthScript::new()
///         .challenge_scope("files:read")
///         .call_scope("files:write")
///         .hostile(AuthHostile::WrongState),
/// );
/// # let _ = script;
/// ```
#[derive(Debug, Clone)]
pub struct OAuthScript {
    pub(crate) issuer: Option<String>,
    pub(crate) challenge_scope: Option<String>,
    pub(crate) scopes_supported: Vec<String>,
    pub(crate) call_scope: Option<String>,
    pub(crate) expires_in: u64,
    pub(crate) refresh_tokens: bool,
    pub(crate) client_secrets: bool,
    pub(crate) registered_method: Option<String>,
    pub(crate) form_client_id: bool,
    pub(crate) machine_client: Option<(String, String)>,
    pub(crate) hostile: Option<AuthHostile>,
}

impl Default for OAuthScript {
    fn default() -> Self {
        Self {
            issuer: None,
            challenge_scope: None,
            scopes_supported: Vec::new(),
            call_scope: None,
            expires_in: 3600,
            refresh_tokens: true,
            client_secrets: false,
            registered_method: None,
            form_client_id: false,
            machine_client: None,
            hostile: None,
        }
    }
}

impl OAuthScript {
    /// The defaults (see the type's docs).
    pub fn new() -> Self {
        Self::default()
    }

    /// The issuer the resource metadata names and the server metadata claims (default: the
    /// server's base URL, `http://127.0.0.1:<port>`). Its endpoints stay on this server; an
    /// issuer on another origin sends discovery there.
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// The `scope` the `401` challenge names (default none).
    pub fn challenge_scope(mut self, scope: impl Into<String>) -> Self {
        self.challenge_scope = Some(scope.into());
        self
    }

    /// The resource metadata's `scopes_supported` (default: none listed).
    pub fn scopes_supported(mut self, scopes: &[&str]) -> Self {
        self.scopes_supported = scopes.iter().map(|s| (*s).to_owned()).collect();
        self
    }

    /// A `tools/call` needs a token with this scope: without it, `403` with
    /// `Bearer error="insufficient_scope", scope="<scope>"`.
    pub fn call_scope(mut self, scope: impl Into<String>) -> Self {
        self.call_scope = Some(scope.into());
        self
    }

    /// The `expires_in` of issued tokens, in seconds (default 3600). The server does not
    /// expire them itself: see [`TestServer::expire_tokens`](crate::TestServer::expire_tokens).
    pub fn expires_in(mut self, seconds: u64) -> Self {
        self.expires_in = seconds;
        self
    }

    /// Whether token answers carry a refresh token (default yes; refresh tokens rotate).
    pub fn refresh_tokens(mut self, on: bool) -> Self {
        self.refresh_tokens = on;
        self
    }

    /// Whether registration issues a `client_secret` (`client_secret_basic`, checked at
    /// `/token`) instead of a public client (default no).
    pub fn client_secrets(mut self, on: bool) -> Self {
        self.client_secrets = on;
        self
    }

    /// Registration answers with this `token_endpoint_auth_method` (`none`,
    /// `client_secret_basic` or `client_secret_post`; a secret with the last two), and the server
    /// metadata lists only it (default: as [`OAuthScript::client_secrets`] says). With
    /// [`OAuthScript::client_id_in_form`] the token endpoint holds each client to its method.
    pub fn registration_auth_method(mut self, method: &str) -> Self {
        self.registered_method = Some(method.to_owned());
        self
    }

    /// The token endpoint authenticates like the Python SDK's authorization server
    /// (`mcp.server.auth`, PyPI `mcp` 2.3.0), for every grant: the client is the form's
    /// `client_id`, and a request without one is refused (`401 invalid_client`, "Missing
    /// client_id") even when Basic credentials name it; a client registered for
    /// `client_secret_basic` must send Basic credentials whose id is the form's, one registered
    /// for `client_secret_post` its secret in the form (default: Basic credentials, else the
    /// form, whatever the registered method).
    pub fn client_id_in_form(mut self, on: bool) -> Self {
        self.form_client_id = on;
        self
    }

    /// A client known without registration, for the `client_credentials` grant (RFC 6749
    /// 4.4), authenticating with `client_secret_basic`; the server metadata then lists that
    /// grant (default none).
    pub fn machine_client(mut self, client_id: &str, secret: &str) -> Self {
        self.machine_client = Some((client_id.to_owned(), secret.to_owned()));
        self
    }

    /// The method registration answers with.
    fn registered_method(&self) -> &str {
        match &self.registered_method {
            Some(method) => method,
            None if self.client_secrets => "client_secret_basic",
            None => "none",
        }
    }

    /// Breaks this rule (default none).
    pub fn hostile(mut self, mode: AuthHostile) -> Self {
        self.hostile = Some(mode);
        self
    }
}

/// What the authorization server has issued.
#[derive(Debug, Default)]
pub(crate) struct OAuthState {
    counter: u64,
    clients: HashMap<String, Client>,
    codes: HashMap<String, Code>,
    /// Access tokens accepted at `/mcp`, with their scope.
    access: HashMap<String, String>,
    /// Refresh tokens, with their client and scope.
    refresh: HashMap<String, (String, String)>,
    /// Every secret issued (client secrets, codes, access and refresh tokens).
    issued: Vec<String>,
}

#[derive(Debug, Clone)]
struct Client {
    redirect_uris: Vec<String>,
    secret: Option<String>,
    /// The `token_endpoint_auth_method` it was registered with.
    auth_method: String,
    /// Whether it may use `client_credentials` (the machine client).
    machine: bool,
}

#[derive(Debug)]
struct Code {
    client_id: String,
    redirect_uri: String,
    challenge: String,
    scope: String,
    resource: String,
}

impl OAuthState {
    /// A fresh, unguessable-enough value with a recognisable prefix.
    fn mint(&mut self, prefix: &str) -> String {
        self.counter += 1;
        let n = self.counter;
        let mut bytes = [0u8; 12];
        let seed = std::hash::BuildHasher::hash_one(&std::hash::RandomState::new(), n);
        bytes[..8].copy_from_slice(&seed.to_le_bytes());
        bytes[8..].copy_from_slice(&(n as u32).to_le_bytes());
        let value = format!("{prefix}-{n}-{}", URL_SAFE_NO_PAD.encode(bytes));
        self.issued.push(value.clone());
        value
    }

    /// Forgets every access token (refresh tokens stay good).
    pub(crate) fn expire_tokens(&mut self) {
        self.access.clear();
    }

    /// Forgets every refresh token (a refresh is refused with `invalid_grant`).
    pub(crate) fn expire_refresh_tokens(&mut self) {
        self.refresh.clear();
    }

    /// Every secret issued so far.
    pub(crate) fn issued(&self) -> Vec<String> {
        self.issued.clone()
    }
}

/// What to send for an OAuth endpoint.
#[derive(Debug)]
pub(crate) enum Reply {
    Respond(Response),
    /// Never answer.
    Stall,
    /// `200`, `application/json`, a body of this many bytes (chunked when `chunked`).
    Oversize {
        size: usize,
        chunked: bool,
    },
}

/// The MCP URL of the server at `base`.
fn mcp_url(base: &str) -> String {
    format!("{base}/mcp")
}

fn issuer(script: &OAuthScript, base: &str) -> String {
    script.issuer.clone().unwrap_or_else(|| base.to_owned())
}

fn json_reply(status: u16, body: &Value) -> Response {
    Response::new(status)
        .header("Cache-Control", "no-store")
        .body("application/json", body.to_string())
}

fn oauth_error(status: u16, error: &str, description: &str) -> Response {
    json_reply(
        status,
        &json!({"error": error, "error_description": description}),
    )
}

/// The challenge of a `401` (or, with `insufficient`, a `403`).
fn challenge(script: &OAuthScript, base: &str, insufficient: Option<&str>) -> String {
    let mut value = format!("Bearer resource_metadata=\"{base}{RESOURCE_METADATA_PATH}\"");
    match insufficient {
        Some(scope) => {
            value.push_str(&format!(
                ", error=\"insufficient_scope\", scope=\"{scope}\""
            ));
        }
        None => {
            if let Some(scope) = &script.challenge_scope {
                value.push_str(&format!(", scope=\"{scope}\""));
            }
        }
    }
    value
}

/// The guard of `/mcp`: the refusal to send, or `None` to serve the request.
pub(crate) fn gate(
    state: &OAuthState,
    script: &OAuthScript,
    base: &str,
    req: &Request,
    msg: Option<&Message>,
) -> Option<Response> {
    let presented = req
        .header("authorization")
        .and_then(|value| value.strip_prefix("Bearer "));
    let Some(scope) = presented.and_then(|token| state.access.get(token)) else {
        let refusal = Response::text(401, "a Bearer token is required")
            .header("WWW-Authenticate", challenge(script, base, None));
        return Some(refusal);
    };
    let is_call = msg
        .is_some_and(|m| m.kind == RpcKind::Request && m.method.as_deref() == Some("tools/call"));
    match &script.call_scope {
        Some(needed) if is_call && !scope.split(' ').any(|s| s == needed) => {
            let refusal = Response::text(403, "insufficient scope")
                .header("WWW-Authenticate", challenge(script, base, Some(needed)));
            Some(refusal)
        }
        _ => None,
    }
}

/// The answer of an OAuth endpoint, or `None` for a path that is not one.
pub(crate) fn endpoint(
    state: &mut OAuthState,
    script: &OAuthScript,
    base: &str,
    req: &Request,
) -> Option<Reply> {
    let path = req.path();
    let reply = if path == RESOURCE_METADATA_PATH || path == RESOURCE_METADATA_ROOT {
        Reply::Respond(resource_metadata(script, base))
    } else if path.starts_with(SERVER_METADATA_PATH) {
        Reply::Respond(server_metadata(script, base))
    } else if path == "/register" {
        Reply::Respond(register(state, script, req))
    } else if path == "/authorize" {
        match &script.hostile {
            Some(AuthHostile::AuthorizeStall) => return Some(Reply::Stall),
            Some(AuthHostile::AuthorizeStatus(status)) => {
                return Some(Reply::Respond(Response::text(*status, "sign-in is down")));
            }
            _ => {}
        }
        Reply::Respond(authorize(state, script, base, req))
    } else if path == "/token" {
        match &script.hostile {
            Some(AuthHostile::TokenStall) => Reply::Stall,
            Some(AuthHostile::TokenOversize(size)) => Reply::Oversize {
                size: *size,
                chunked: false,
            },
            Some(AuthHostile::TokenOversizeChunked(size)) => Reply::Oversize {
                size: *size,
                chunked: true,
            },
            Some(AuthHostile::TokenRedirectTo(location)) => {
                Reply::Respond(Response::new(302).header("Location", location.as_bytes().to_vec()))
            }
            _ => Reply::Respond(token(state, script, base, req)),
        }
    } else {
        return None;
    };
    Some(reply)
}

fn resource_metadata(script: &OAuthScript, base: &str) -> Response {
    let resource = match &script.hostile {
        Some(AuthHostile::ForeignResource(url)) => url.clone(),
        _ => mcp_url(base),
    };
    let mut document = json!({
        "resource": resource,
        "authorization_servers": [issuer(script, base)],
        "bearer_methods_supported": ["header"],
    });
    if !script.scopes_supported.is_empty() {
        document["scopes_supported"] = json!(script.scopes_supported);
    }
    json_reply(200, &document)
}

fn server_metadata(script: &OAuthScript, base: &str) -> Response {
    let claimed = match &script.hostile {
        Some(AuthHostile::WrongIssuer) => "https://issuer.evil.example".to_owned(),
        _ => issuer(script, base),
    };
    let auth_methods = match &script.registered_method {
        Some(method) => json!([method]),
        None if script.client_secrets => json!(["client_secret_basic", "client_secret_post"]),
        None => json!(["none"]),
    };
    let mut grant_types = vec!["authorization_code", "refresh_token"];
    if script.machine_client.is_some() {
        grant_types.push("client_credentials");
    }
    json_reply(
        200,
        &json!({
            "issuer": claimed,
            "authorization_endpoint": format!("{base}/authorize"),
            "token_endpoint": format!("{base}/token"),
            "registration_endpoint": format!("{base}/register"),
            "response_types_supported": ["code"],
            "grant_types_supported": grant_types,
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": auth_methods,
            "authorization_response_iss_parameter_supported": true,
        }),
    )
}

fn register(state: &mut OAuthState, script: &OAuthScript, req: &Request) -> Response {
    if req.method != "POST" {
        return Response::text(405, "method not allowed").header("Allow", "POST");
    }
    let Ok(document) = serde_json::from_slice::<Value>(&req.body) else {
        return oauth_error(400, "invalid_client_metadata", "the body is not JSON");
    };
    let redirect_uris: Vec<String> = document["redirect_uris"]
        .as_array()
        .map(|uris| {
            uris.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    if redirect_uris.is_empty() {
        return oauth_error(400, "invalid_redirect_uri", "no redirect_uris");
    }
    // A client id is public (it is in every authorization URL): not one of the secrets.
    let client_id = state.mint("client");
    state.issued.retain(|value| *value != client_id);
    let auth_method = script.registered_method().to_owned();
    let secret = (auth_method != "none").then(|| state.mint("cs"));
    let mut answer = json!({
        "client_id": client_id,
        "redirect_uris": redirect_uris,
        "client_name": document["client_name"],
        "grant_types": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_method": auth_method,
    });
    if let Some(secret) = &secret {
        answer["client_secret"] = json!(secret);
    }
    state.clients.insert(
        client_id,
        Client {
            redirect_uris,
            secret,
            auth_method,
            machine: false,
        },
    );
    json_reply(201, &answer)
}

/// The query (or form) pairs of `text`.
fn pairs(text: &str) -> HashMap<String, String> {
    form_urlencoded::parse(text.as_bytes())
        .into_owned()
        .collect()
}

/// `url` with these parameters added to its query.
fn with_params(url: &str, params: &[(&str, &str)]) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    for (name, value) in params {
        query.append_pair(name, value);
    }
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}{}", query.finish())
}

fn authorize(state: &mut OAuthState, script: &OAuthScript, base: &str, req: &Request) -> Response {
    let query = req.target.split_once('?').map_or("", |(_, q)| q);
    let params = pairs(query);
    let param = |name: &str| params.get(name).map(String::as_str).unwrap_or("");
    let client_id = param("client_id");
    let redirect_uri = param("redirect_uri");
    // Without a known client and its redirect URI, nothing can be sent back.
    let Some(client) = state.clients.get(client_id) else {
        return Response::text(400, "unknown client_id");
    };
    if !client.redirect_uris.iter().any(|uri| uri == redirect_uri) {
        return Response::text(400, "redirect_uri is not registered for this client");
    }
    let issuer = issuer(script, base);
    let sent_state = param("state").to_owned();
    let refusal = if param("response_type") != "code" {
        Some("response_type must be code")
    } else if param("code_challenge_method") != "S256" || param("code_challenge").len() != 43 {
        Some("PKCE with S256 is required")
    } else if sent_state.is_empty() {
        Some("state is required")
    } else if param("resource") != mcp_url(base) {
        Some("resource must be this server's MCP URL")
    } else {
        None
    };
    let target = match &script.hostile {
        Some(AuthHostile::AuthorizeRedirectTo(other)) => format!("{other}/callback"),
        _ => redirect_uri.to_owned(),
    };
    let state_back = match &script.hostile {
        Some(AuthHostile::WrongState) => format!("{sent_state}-forged"),
        _ => sent_state,
    };
    let iss_back = match &script.hostile {
        Some(AuthHostile::WrongIss) => Some("https://issuer.evil.example".to_owned()),
        Some(AuthHostile::NoIss) => None,
        _ => Some(issuer),
    };
    let mut back: Vec<(&str, String)> = Vec::new();
    if let Some(description) = refusal {
        back.push(("error", "invalid_request".to_owned()));
        back.push(("error_description", description.to_owned()));
    } else if script.hostile == Some(AuthHostile::DenyAuthorization) {
        back.push(("error", "access_denied".to_owned()));
    } else {
        let code = state.mint("code");
        state.codes.insert(
            code.clone(),
            Code {
                client_id: client_id.to_owned(),
                redirect_uri: redirect_uri.to_owned(),
                challenge: param("code_challenge").to_owned(),
                scope: param("scope").to_owned(),
                resource: param("resource").to_owned(),
            },
        );
        back.push(("code", code));
    }
    back.push(("state", state_back));
    if let Some(iss) = iss_back {
        back.push(("iss", iss));
    }
    let borrowed: Vec<(&str, &str)> = back.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Response::new(302).header("Location", with_params(&target, &borrowed))
}

fn invalid_client(why: &str) -> Response {
    oauth_error(401, "invalid_client", why)
}

/// The id and secret of `Basic` credentials (RFC 6749 2.3.1: each form-urlencoded), if the
/// request has an `Authorization: Basic` header.
fn basic_credentials(req: &Request) -> Option<Result<(String, String), Response>> {
    let encoded = req
        .header("authorization")
        .and_then(|v| v.strip_prefix("Basic "))?;
    let decoded = STANDARD
        .decode(encoded.trim())
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok());
    let Some((id, secret)) = decoded.as_deref().and_then(|text| text.split_once(':')) else {
        return Some(Err(invalid_client("bad Basic credentials")));
    };
    let unescape = |text: &str| pairs(&format!("v={text}")).remove("v").unwrap_or_default();
    Some(Ok((unescape(id), unescape(secret))))
}

/// The client called `id`: registered, or the script's machine client.
fn known_client(state: &OAuthState, script: &OAuthScript, id: &str) -> Option<Client> {
    if let Some(client) = state.clients.get(id) {
        return Some(client.clone());
    }
    let (machine_id, secret) = script.machine_client.as_ref()?;
    (machine_id == id).then(|| Client {
        redirect_uris: Vec::new(),
        secret: Some(secret.clone()),
        auth_method: "client_secret_basic".to_owned(),
        machine: true,
    })
}

/// The client a token request authenticates as: `Basic` credentials, else the form's
/// `client_id` (and `client_secret`); with [`OAuthScript::client_id_in_form`], the form's
/// `client_id` held to its registered method.
fn authenticate(
    state: &OAuthState,
    script: &OAuthScript,
    req: &Request,
    form: &HashMap<String, String>,
) -> Result<(String, Client), Response> {
    let (id, secret) = if script.form_client_id {
        // What mcp.server.auth's ClientAuthenticator does, message for message.
        let id = form
            .get("client_id")
            .filter(|id| !id.is_empty())
            .ok_or_else(|| invalid_client("Missing client_id"))?;
        let client =
            known_client(state, script, id).ok_or_else(|| invalid_client("Invalid client_id"))?;
        let secret = match client.auth_method.as_str() {
            "client_secret_basic" => {
                let (basic_id, secret) = basic_credentials(req).ok_or_else(|| {
                    invalid_client(
                        "Missing or invalid Basic authentication in Authorization header",
                    )
                })??;
                if basic_id != *id {
                    return Err(invalid_client("Client ID mismatch in Basic auth"));
                }
                Some(secret)
            }
            "client_secret_post" => form.get("client_secret").cloned(),
            _ => None,
        };
        (id.clone(), secret)
    } else {
        match basic_credentials(req) {
            Some(credentials) => {
                let (id, secret) = credentials?;
                (id, Some(secret))
            }
            None => (
                form.get("client_id").cloned().unwrap_or_default(),
                form.get("client_secret").cloned(),
            ),
        }
    };
    let client =
        known_client(state, script, &id).ok_or_else(|| invalid_client("unknown client"))?;
    if client.secret.is_some() && client.secret != secret {
        return Err(invalid_client("wrong or missing client secret"));
    }
    Ok((id, client))
}

fn token(state: &mut OAuthState, script: &OAuthScript, base: &str, req: &Request) -> Response {
    if req.method != "POST" {
        return Response::text(405, "method not allowed").header("Allow", "POST");
    }
    let form = pairs(&String::from_utf8_lossy(&req.body));
    let field = |name: &str| form.get(name).map(String::as_str).unwrap_or("");
    let (client_id, client) = match authenticate(state, script, req, &form) {
        Ok(found) => found,
        Err(refusal) => return refusal,
    };
    let invalid_grant = |why: &str| oauth_error(400, "invalid_grant", why);
    let scope = match field("grant_type") {
        "authorization_code" => {
            let Some(code) = state.codes.remove(field("code")) else {
                return invalid_grant("unknown or used code");
            };
            let verifier = URL_SAFE_NO_PAD.encode(Sha256::digest(field("code_verifier")));
            if code.client_id != client_id {
                return invalid_grant("the code was issued to another client");
            }
            if code.redirect_uri != field("redirect_uri") {
                return invalid_grant("redirect_uri differs from the authorization request's");
            }
            if verifier != code.challenge {
                return invalid_grant("PKCE verification failed");
            }
            if field("resource") != code.resource {
                return oauth_error(400, "invalid_target", "resource differs");
            }
            code.scope
        }
        "refresh_token" => {
            let Some((owner, scope)) = state.refresh.remove(field("refresh_token")) else {
                return invalid_grant("unknown refresh token");
            };
            if owner != client_id {
                return invalid_grant("the refresh token was issued to another client");
            }
            if form.get("resource").is_some_and(|r| *r != mcp_url(base)) {
                return oauth_error(400, "invalid_target", "resource differs");
            }
            scope
        }
        "client_credentials" if client.machine => {
            if form.get("resource").is_some_and(|r| *r != mcp_url(base)) {
                return oauth_error(400, "invalid_target", "resource differs");
            }
            field("scope").to_owned()
        }
        _ => return oauth_error(400, "unsupported_grant_type", "unsupported grant_type"),
    };
    let access = state.mint("at");
    if script.hostile != Some(AuthHostile::RefuseTokens) {
        state.access.insert(access.clone(), scope.clone());
    }
    let mut answer = json!({
        "access_token": access,
        "token_type": "Bearer",
        "expires_in": script.expires_in,
    });
    if !scope.is_empty() {
        answer["scope"] = json!(scope);
    }
    // No refresh token for a machine: it asks again (RFC 6749 4.4.3).
    if script.refresh_tokens && !client.machine {
        let refresh = state.mint("rt");
        state.refresh.insert(refresh.clone(), (client_id, scope));
        answer["refresh_token"] = json!(refresh);
    }
    json_reply(200, &answer)
}

/// The leg a recorded request was, in the client's words: `oauth:resource-metadata`,
/// `oauth:server-metadata`, `oauth:register`, `oauth:authorize` (the browser's GET),
/// `oauth:token`, `oauth:refresh`, `oauth:client-credentials`; for `/mcp`, [`RecordedRequest::label`]; else
/// `"<METHOD> <path>"`.
pub(crate) fn leg_label(request: &RecordedRequest) -> String {
    let path = request.path.split('?').next().unwrap_or("");
    let oauth = if path == RESOURCE_METADATA_PATH || path == RESOURCE_METADATA_ROOT {
        Some("oauth:resource-metadata")
    } else if path.starts_with(SERVER_METADATA_PATH) {
        Some("oauth:server-metadata")
    } else if path == "/register" {
        Some("oauth:register")
    } else if path == "/authorize" {
        Some("oauth:authorize")
    } else if path == "/token" {
        let form = pairs(&String::from_utf8_lossy(&request.body));
        match form.get("grant_type").map(String::as_str) {
            Some("refresh_token") => Some("oauth:refresh"),
            Some("client_credentials") => Some("oauth:client-credentials"),
            _ => Some("oauth:token"),
        }
    } else {
        None
    };
    match (oauth, path) {
        (Some(label), _) => label.to_owned(),
        (None, "/mcp") => request
            .label()
            .unwrap_or_else(|| format!("{} {}", request.method, request.path)),
        (None, _) => format!("{} {}", request.method, request.path),
    }
}
