//! A scripted world for flow tests: canned answers by method and URL, a browser that plays the
//! authorization endpoint, and a log of every request the flow sent. Modelled on the official
//! conformance suite's authorization server and MCP server (their defaults are these defaults).

#![allow(dead_code, unreachable_pub)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use http::{HeaderMap, HeaderValue, Method, StatusCode};
use mcp_auth::{
    AccessToken, AuthError, AuthFlow, AuthStep, Challenge, ClientConfig, CredentialStore, Entropy,
    MemoryStore,
};
use serde_json::{Value, json};
use url::Url;

pub const SERVER: &str = "http://localhost:3000";
pub const SERVER_URL: &str = "http://localhost:3000/mcp";
pub const AS: &str = "http://localhost:4000";
pub const REDIRECT: &str = "http://localhost:3333/callback";
pub const PRM_PATH: &str = "/.well-known/oauth-protected-resource/mcp";

/// Deterministic randomness: a counter.
pub struct Counter(pub u8);

impl Entropy for Counter {
    fn fill(&mut self, buf: &mut [u8]) {
        for byte in buf {
            self.0 = self.0.wrapping_add(1);
            *byte = self.0;
        }
    }
}

/// One request the flow sent.
#[derive(Debug, Clone)]
pub struct Seen {
    pub label: &'static str,
    pub method: Method,
    pub url: String,
    pub headers: HeaderMap,
    pub body: String,
}

impl Seen {
    pub fn form(&self) -> HashMap<String, String> {
        url::form_urlencoded::parse(self.body.as_bytes())
            .into_owned()
            .collect()
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap()
    }
}

/// What the authorization endpoint puts in the redirect's `iss`.
#[derive(Debug, Clone)]
pub enum Iss {
    /// The issuer (the default).
    Correct,
    /// Another issuer.
    Wrong,
    /// The issuer with a trailing slash.
    Normalized,
    /// No `iss`.
    Omit,
}

/// An answer a scripted server chose: status, headers, body.
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: String,
}

impl Reply {
    pub fn json(status: u16, body: Value) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: body.to_string(),
        }
    }

    pub fn with_header(mut self, name: &'static str, value: &str) -> Self {
        self.headers.push((name, value.to_owned()));
        self
    }
}

/// A server played by code: it sees each request and answers, or leaves it to the routes.
pub type Server = Box<dyn FnMut(&Seen) -> Option<Reply>>;

pub struct World {
    pub routes: HashMap<(Method, String), (u16, String)>,
    /// Consulted before the routes.
    pub server: Option<Server>,
    pub seen: Vec<Seen>,
    pub authorize_urls: Vec<Url>,
    /// The issuer the browser names in `iss`, by authorization endpoint URL prefix.
    pub issuers: Vec<(String, String)>,
    pub iss: Iss,
    pub store: Arc<MemoryStore>,
    pub entropy: Counter,
    pub now: Instant,
    /// When false, the caller has no authorizer.
    pub has_authorizer: bool,
}

impl Default for World {
    fn default() -> Self {
        Self {
            routes: HashMap::new(),
            server: None,
            seen: Vec::new(),
            authorize_urls: Vec::new(),
            issuers: Vec::new(),
            iss: Iss::Correct,
            store: Arc::new(MemoryStore::new()),
            entropy: Counter(0),
            now: Instant::now(),
            has_authorizer: true,
        }
    }
}

/// The conformance suite's authorization server options (`createAuthServer`), with its
/// defaults.
#[derive(Clone)]
pub struct AsOpts {
    pub base: String,
    pub metadata_path: String,
    pub prefix: String,
    pub issuer: Option<String>,
    pub scopes_supported: Option<Vec<&'static str>>,
    pub auth_methods: Vec<&'static str>,
    pub cimd: Option<bool>,
    pub dcr: bool,
    pub pkce: bool,
    pub iss_supported: Option<bool>,
    pub client_id: String,
    pub client_secret: Option<String>,
    pub registered_method: Option<&'static str>,
    pub refresh_token: Option<&'static str>,
    pub access_token: String,
    pub grant_types: Vec<&'static str>,
    /// `dpop_signing_alg_values_supported`, when set.
    pub dpop_algs: Option<Vec<&'static str>>,
}

impl Default for AsOpts {
    fn default() -> Self {
        Self {
            base: AS.into(),
            metadata_path: "/.well-known/oauth-authorization-server".into(),
            prefix: String::new(),
            issuer: None,
            scopes_supported: None,
            auth_methods: vec!["none"],
            cimd: None,
            dcr: true,
            pkce: true,
            iss_supported: Some(true),
            client_id: "test-client-id".into(),
            client_secret: Some("test-client-secret".into()),
            registered_method: None,
            refresh_token: None,
            access_token: "test-token-1".into(),
            grant_types: vec!["authorization_code", "refresh_token"],
            dpop_algs: None,
        }
    }
}

impl AsOpts {
    pub fn issuer(&self) -> String {
        self.issuer
            .clone()
            .unwrap_or_else(|| format!("{}{}", self.base, self.prefix))
    }
}

impl World {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn route(&mut self, method: Method, url: &str, status: u16, body: impl Into<String>) {
        self.routes
            .insert((method, url.to_owned()), (status, body.into()));
    }

    /// An authorization server as the suite builds it.
    pub fn auth_server(&mut self, opts: &AsOpts) {
        let endpoint = |path: &str| format!("{}{}{}", opts.base, opts.prefix, path);
        let mut metadata = json!({
            "issuer": opts.issuer(),
            "authorization_endpoint": endpoint("/authorize"),
            "token_endpoint": endpoint("/token"),
            "response_types_supported": ["code"],
            "grant_types_supported": opts.grant_types,
            "token_endpoint_auth_methods_supported": opts.auth_methods,
        });
        if opts.dcr {
            metadata["registration_endpoint"] = json!(endpoint("/register"));
        }
        if opts.pkce {
            metadata["code_challenge_methods_supported"] = json!(["S256"]);
        }
        if let Some(supported) = opts.iss_supported {
            metadata["authorization_response_iss_parameter_supported"] = json!(supported);
        }
        if let Some(scopes) = &opts.scopes_supported {
            metadata["scopes_supported"] = json!(scopes);
        }
        if let Some(algs) = &opts.dpop_algs {
            metadata["dpop_signing_alg_values_supported"] = json!(algs);
        }
        if let Some(cimd) = opts.cimd {
            metadata["client_id_metadata_document_supported"] = json!(cimd);
        }
        self.route(
            Method::GET,
            &format!("{}{}", opts.base, opts.metadata_path),
            200,
            metadata.to_string(),
        );
        if opts.dcr {
            let mut answer = json!({
                "client_id": opts.client_id,
                "client_name": "test-client",
                "redirect_uris": [REDIRECT],
            });
            if let Some(secret) = &opts.client_secret {
                answer["client_secret"] = json!(secret);
            }
            if let Some(method) = opts.registered_method {
                answer["token_endpoint_auth_method"] = json!(method);
            }
            self.route(
                Method::POST,
                &endpoint("/register"),
                201,
                answer.to_string(),
            );
        }
        let mut token = json!({
            "access_token": opts.access_token,
            "token_type": "Bearer",
            "expires_in": 3600,
        });
        if let Some(refresh) = opts.refresh_token {
            token["refresh_token"] = json!(refresh);
        }
        self.route(Method::POST, &endpoint("/token"), 200, token.to_string());
        self.issuers.push((endpoint("/authorize"), opts.issuer()));
    }

    /// The MCP server's Protected Resource Metadata at `path`.
    pub fn resource_metadata(
        &mut self,
        path: &str,
        resource: &str,
        authorization_servers: &[&str],
        scopes_supported: Option<&[&str]>,
    ) {
        let mut prm = json!({
            "resource": resource,
            "authorization_servers": authorization_servers,
        });
        if let Some(scopes) = scopes_supported {
            prm["scopes_supported"] = json!(scopes);
        }
        self.route(
            Method::GET,
            &format!("{SERVER}{path}"),
            200,
            prm.to_string(),
        );
    }

    /// The suite's usual servers: the MCP server's resource metadata at [`PRM_PATH`], naming
    /// [`AS`] and no scopes, and an authorization server built from `opts`.
    pub fn with_servers(opts: &AsOpts) -> Self {
        let mut world = Self::new();
        world.resource_metadata(PRM_PATH, SERVER_URL, &[AS], None);
        world.auth_server(opts);
        world
    }

    /// [`World::with_servers`] and a [`World::standard_flow`] over it.
    pub fn standard(opts: &AsOpts) -> (Self, AuthFlow) {
        let world = Self::with_servers(opts);
        let flow = world.standard_flow();
        (world, flow)
    }

    /// A flow for the suite's usual 401 (naming the resource metadata URL, no scope), with the
    /// default configuration.
    pub fn standard_flow(&self) -> AuthFlow {
        self.flow(unauthorized(Some(&prm_url()), None), self.config())
    }

    pub fn config(&self) -> ClientConfig {
        ClientConfig::new(REDIRECT)
            .unwrap()
            .with_client_name("conformance-client")
    }

    pub fn flow(&self, challenge: Challenge, config: ClientConfig) -> AuthFlow {
        let store: Arc<dyn CredentialStore> = self.store.clone();
        AuthFlow::new(SERVER_URL, challenge, config, store).unwrap()
    }

    /// Drives a flow to its end against the routes (unrouted requests answer 404).
    pub fn run(&mut self, flow: &mut AuthFlow) -> Result<AccessToken, AuthError> {
        self.run_with(flow, |_, _| {})
    }

    /// [`World::run`], calling `answered` with each request's label once its answer is chosen,
    /// so it can change the routes for the requests after it.
    pub fn run_with(
        &mut self,
        flow: &mut AuthFlow,
        mut answered: impl FnMut(&mut Self, &'static str),
    ) -> Result<AccessToken, AuthError> {
        for _ in 0..64 {
            let step = flow.poll(self.now, wall(), &mut self.entropy);
            // What the flow obtained is written outside its poll, as a driver does.
            for change in flow.take_changes() {
                change.apply_to(self.store.as_ref());
            }
            match step {
                AuthStep::Send(request) => {
                    let (head, body) = request.request.into_parts();
                    let url = head.uri.to_string();
                    let seen = Seen {
                        label: request.kind.label(),
                        method: head.method.clone(),
                        url: url.clone(),
                        headers: head.headers.clone(),
                        body: String::from_utf8(body).unwrap(),
                    };
                    let scripted = self.server.as_mut().and_then(|server| server(&seen));
                    self.seen.push(seen);
                    let reply = scripted.unwrap_or_else(|| {
                        let (status, body) = self
                            .routes
                            .get(&(head.method, url))
                            .cloned()
                            .unwrap_or((404, "Not Found".into()));
                        Reply {
                            status,
                            headers: Vec::new(),
                            body,
                        }
                    });
                    answered(self, request.kind.label());
                    let mut headers = HeaderMap::new();
                    for (name, value) in &reply.headers {
                        headers.append(*name, HeaderValue::from_str(value).unwrap());
                    }
                    flow.handle_response(
                        StatusCode::from_u16(reply.status).unwrap(),
                        &headers,
                        reply.body.as_bytes(),
                    );
                }
                AuthStep::Authorize { url } => {
                    self.authorize_urls.push(url.clone());
                    if !self.has_authorizer {
                        flow.handle_no_authorizer();
                        continue;
                    }
                    let redirect = self.browse(&url);
                    flow.handle_redirect(&redirect);
                }
                AuthStep::Pending => panic!("the flow waits for an answer the world fed"),
                AuthStep::Done(token) => return Ok(token),
                AuthStep::Failed(error) => return Err(error),
            }
        }
        panic!("the flow did not end within 64 steps")
    }

    /// The authorization endpoint: approves at once and redirects like the suite's.
    fn browse(&self, url: &Url) -> String {
        let param = |name: &str| {
            url.query_pairs()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        };
        let mut redirect = Url::parse(&param("redirect_uri").unwrap()).unwrap();
        let issuer = self
            .issuers
            .iter()
            .find(|(endpoint, _)| url.as_str().starts_with(endpoint.as_str()))
            .map(|(_, issuer)| issuer.clone())
            .unwrap_or_else(|| AS.to_owned());
        {
            let mut query = redirect.query_pairs_mut();
            query.append_pair("code", "test-auth-code");
            if let Some(state) = param("state") {
                query.append_pair("state", &state);
            }
            match self.iss {
                Iss::Correct => {
                    query.append_pair("iss", &issuer);
                }
                Iss::Wrong => {
                    query.append_pair("iss", "https://evil.example.com");
                }
                Iss::Normalized => {
                    query.append_pair("iss", &format!("{issuer}/"));
                }
                Iss::Omit => {}
            }
        }
        redirect.to_string()
    }

    pub fn urls(&self) -> Vec<&str> {
        self.seen.iter().map(|s| s.url.as_str()).collect()
    }

    pub fn labels(&self) -> Vec<&'static str> {
        self.seen.iter().map(|s| s.label).collect()
    }

    pub fn sent(&self, label: &str) -> Vec<&Seen> {
        self.seen.iter().filter(|s| s.label == label).collect()
    }

    pub fn last_authorize_param(&self, name: &str) -> Option<String> {
        self.authorize_urls.last().and_then(|url| {
            url.query_pairs()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        })
    }
}

/// The challenge of a 401 with these parameters.
pub fn unauthorized(resource_metadata: Option<&str>, scope: Option<&str>) -> Challenge {
    challenge(StatusCode::UNAUTHORIZED, resource_metadata, scope, None)
}

/// The challenge of a 403 `insufficient_scope`.
pub fn insufficient_scope(resource_metadata: Option<&str>, scope: &str) -> Challenge {
    challenge(
        StatusCode::FORBIDDEN,
        resource_metadata,
        Some(scope),
        Some("insufficient_scope"),
    )
}

fn challenge(
    status: StatusCode,
    resource_metadata: Option<&str>,
    scope: Option<&str>,
    error: Option<&str>,
) -> Challenge {
    let mut params = Vec::new();
    if let Some(scope) = scope {
        params.push(format!("scope=\"{scope}\""));
    }
    if let Some(url) = resource_metadata {
        params.push(format!("resource_metadata=\"{url}\""));
    }
    if let Some(error) = error {
        params.push(format!("error=\"{error}\""));
    }
    let mut headers = HeaderMap::new();
    let value = if params.is_empty() {
        "Bearer".to_owned()
    } else {
        format!("Bearer {}", params.join(", "))
    };
    headers.insert("www-authenticate", HeaderValue::from_str(&value).unwrap());
    Challenge::from_response(status, &headers).unwrap()
}

/// The PRM URL the suite puts in its 401s.
pub fn prm_url() -> String {
    format!("{SERVER}{PRM_PATH}")
}

/// The time of day the tests' world lives at (fixed: assertions' `iat` come out the same on
/// every run).
pub fn wall() -> std::time::SystemTime {
    std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_800_000_000)
}

/// Seconds since the epoch of [`wall`].
pub const WALL_SECS: u64 = 1_800_000_000;

/// A JWT as an identity provider would issue it, with a placeholder signature (the tests'
/// servers decide on its claims, as the suite's do after checking the signature).
pub fn jwt(header: Value, claims: Value) -> String {
    use base64::Engine as _;
    let encode =
        |value: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value.to_string());
    format!("{}.{}.c2lnbmF0dXJl", encode(&header), encode(&claims))
}

/// A JWT's header and claims, unverified.
pub fn jwt_parts(jwt: &str) -> (Value, Value) {
    use base64::Engine as _;
    let parts: Vec<&str> = jwt.split('.').collect();
    assert_eq!(parts.len(), 3, "a compact JWS");
    let decode = |part: &str| -> Value {
        serde_json::from_slice(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(part)
                .unwrap(),
        )
        .unwrap()
    };
    (decode(parts[0]), decode(parts[1]))
}

/// Verifies an ES256 JWT with `key` (or, without one, with the public `jwk` in its header, as
/// a DPoP proof is checked), and returns its header and claims.
pub fn verify_es256(jwt: &str, key: Option<&p256::ecdsa::VerifyingKey>) -> (Value, Value) {
    use base64::Engine as _;
    use p256::ecdsa::signature::Verifier as _;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let (header, claims) = jwt_parts(jwt);
    assert_eq!(header["alg"], "ES256");
    let from_jwk;
    let key = match key {
        Some(key) => key,
        None => {
            let jwk = &header["jwk"];
            assert_eq!(jwk["kty"], "EC");
            assert_eq!(jwk["crv"], "P-256");
            assert!(jwk.get("d").is_none(), "the jwk holds no private key");
            let mut sec1 = vec![4u8];
            sec1.extend(b64.decode(jwk["x"].as_str().unwrap()).unwrap());
            sec1.extend(b64.decode(jwk["y"].as_str().unwrap()).unwrap());
            from_jwk = p256::ecdsa::VerifyingKey::from_sec1_bytes(&sec1).unwrap();
            &from_jwk
        }
    };
    let (signed, signature) = jwt.rsplit_once('.').unwrap();
    let signature = p256::ecdsa::Signature::from_slice(&b64.decode(signature).unwrap()).unwrap();
    key.verify(signed.as_bytes(), &signature)
        .expect("the ES256 signature verifies");
    (header, claims)
}

/// A PKCS#8 P-256 key (`openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256`), as
/// the suite hands one to `auth/client-credentials-jwt`. Tests only.
pub const CLIENT_KEY_PEM: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg5MXTXZNkXXpNYYjP
LcNmirxC6hkRWUAPqzxO0+G+Lt2hRANCAARupOc0sqjDP9FYGsigT3zLKdr6BU7Q
NzTDMZmzfZgeshigTVWYO9pq/7RN4OUjarfgZjycesei21hDS/FWuShq
-----END PRIVATE KEY-----
";

/// The public half of [`CLIENT_KEY_PEM`], as the suite's server keeps it.
pub fn client_public_key() -> p256::ecdsa::VerifyingKey {
    use p256::pkcs8::DecodePrivateKey as _;
    *p256::ecdsa::SigningKey::from_pkcs8_pem(CLIENT_KEY_PEM)
        .unwrap()
        .verifying_key()
}
