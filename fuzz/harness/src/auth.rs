//! The authorization flow of `mcp-auth` ([`AuthFlow`]) against answers the fuzzer writes:
//! the `WWW-Authenticate` challenge, the protected resource metadata, the authorization server
//! metadata, the registration, every token answer, `DPoP-Nonce` headers and the redirect's
//! query.
//!
//! Each answer is a healthy one (as the conformance suite's servers give it) with up to three
//! of its members replaced from a dictionary of hostile values (another origin, plain HTTP, a
//! parent or a deeper path, a fragment, the issuer with a trailing slash, wrong types, huge
//! numbers, control characters), an OAuth error, a `use_dpop_nonce` refusal, or raw bytes.
//! Every secret the flow could hold (stored registrations and tokens of this server and of
//! others, pre-registered and machine credentials, a registered secret, the code, every
//! token answered) is a distinct string, and each request, URL and error is searched for all
//! of them. This module must never do I/O: the flow is sans-IO, and so is its driver here.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use mcp_auth::{
    AuthError, AuthFlow, AuthRequest, AuthRequestKind, AuthStep, Challenge, ClientConfig,
    ClientCredentials, ClientSource, CredentialStore, Dpop, Entropy, Grant, MAX_AUTHORIZATIONS,
    MemoryStore, PreRegisteredClient, PrivateKey, Secret, TokenEndpointAuth, TokenSet,
};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use url::Url;

use crate::bytes::Bytes;

/// The MCP server URLs the setup picks from.
const SERVERS: [&str; 4] = [
    "https://mcp.fuzz.example/mcp",
    "https://mcp.fuzz.example/tenant/a/mcp?x=1",
    "http://127.0.0.1:3000/mcp",
    "https://mcp.fuzz.example",
];
const ISSUER: &str = "https://auth.fuzz.example";
const OTHER_ISSUER: &str = "https://evil.fuzz.example";
/// A resource of another server, whose tokens the store also keeps.
const OTHER_RESOURCE: &str = "https://other.fuzz.example/mcp";
const REDIRECT: &str = "http://127.0.0.1:8976/callback";
const IDP_ENDPOINT: &str = "https://idp.fuzz.example/token";
const METADATA_DOCUMENT: &str = "https://client.fuzz.example/client.json";
/// A P-256 key for `private_key_jwt` (the conformance suite's test key).
const CLIENT_KEY_PEM: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg5MXTXZNkXXpNYYjP
LcNmirxC6hkRWUAPqzxO0+G+Lt2hRANCAARupOc0sqjDP9FYGsigT3zLKdr6BU7Q
NzTDMZmzfZgeshigTVWYO9pq/7RN4OUjarfgZjycesei21hDS/FWuShq
-----END PRIVATE KEY-----
";
/// The most polls one flow may take before it must have ended.
const MAX_POLLS: usize = 64;
/// The most flows (the first and its rechallenges) one input runs.
const MAX_FLOWS: u32 = MAX_AUTHORIZATIONS + 2;

/// Where a secret may go.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Place {
    /// Nowhere: a token is presented by the caller, never sent by the flow.
    Nowhere,
    /// To the token endpoint of this issuer's metadata (any issuer's, for `None`: a machine
    /// grant's own credentials).
    TokenEndpoint(Option<String>),
    /// In a refresh at this issuer's token endpoint, for this resource.
    Refresh(String, String),
    /// In the code exchange at this issuer's token endpoint.
    Code(String),
    /// To the identity provider's token endpoint.
    Idp,
}

#[derive(Debug)]
struct Tracked {
    value: String,
    place: Place,
    /// The fuzzer wrote it into an answer itself (raw bytes): it may come back in a quote.
    tainted: bool,
}

/// Counter randomness, as the tests use: the flow's PKCE verifier, `state` and keys.
#[derive(Debug)]
struct Counter(u8);

impl Entropy for Counter {
    fn fill(&mut self, buf: &mut [u8]) {
        for byte in buf {
            self.0 = self.0.wrapping_add(1);
            *byte = self.0;
        }
    }
}

/// What the harness served that the flow may act on.
#[derive(Debug, Default)]
struct Served {
    /// The issuers the last accepted-looking resource metadata named, in order.
    authorization_servers: Vec<String>,
    /// The last successful server metadata: its `issuer`, endpoints as URLs (when they parse).
    issuer: Option<String>,
    authorization_endpoint: Option<Url>,
    token_endpoint: Option<Url>,
    registration_endpoint: Option<Url>,
    /// The last access token a successful token answer carried.
    access_token: Option<String>,
    /// The last `DPoP-Nonce` a token-endpoint answer carried.
    as_nonce: Option<String>,
}

#[derive(Debug)]
struct Harness<'a> {
    bytes: Bytes<'a>,
    server: &'static str,
    server_url: Url,
    store: Arc<MemoryStore>,
    secrets: Vec<Tracked>,
    served: Served,
    entropy: Counter,
    now: Instant,
    wall: SystemTime,
    /// The authorization URL's `code_challenge` and `state`, while a redirect is owed.
    challenge: Option<(String, String)>,
    /// Serial numbers, so that each secret served is a string of its own.
    serial: u32,
    dpop: Dpop,
    authorizations: u32,
    /// The issuers a flow of this chain authorized at (they may write the store).
    issuers_used: Vec<String>,
    /// Consecutive requests of one kind (a `use_dpop_nonce` retry makes two).
    repeats: (Option<AuthRequestKind>, u32),
    /// Whether the last successful server metadata lists `ES256` for DPoP.
    served_dpop_es256: bool,
    /// The issuer and resource of every token request (what a flow may write in the store).
    pairs_used: Vec<(String, String)>,
}

impl Harness<'_> {
    fn track(&mut self, value: impl Into<String>, place: Place) -> String {
        let value = value.into();
        self.secrets.push(Tracked {
            value: value.clone(),
            place,
            tainted: false,
        });
        value
    }

    /// A fresh secret: `fuzz-secret-<what>-<serial>z` (the `z` ends it: no secret is a
    /// prefix of another).
    fn fresh(&mut self, what: &str, place: Place) -> String {
        self.serial += 1;
        let value = format!("fuzz-secret-{what}-{:04}z", self.serial);
        self.track(value, place)
    }

    /// Marks the secrets the fuzzer's own bytes carry.
    fn taint(&mut self, text: &[u8]) {
        for secret in &mut self.secrets {
            if text
                .windows(secret.value.len())
                .any(|w| w == secret.value.as_bytes())
            {
                secret.tainted = true;
            }
        }
    }

    fn flow_issuer(flow: &AuthFlow) -> Option<String> {
        flow.issuer().map(str::to_owned)
    }

    /// The token endpoint a request of the flow must go to.
    fn expected_token_endpoint(&self, flow: &AuthFlow) -> Option<Url> {
        self.expected_endpoint(flow, "/token", |served| served.token_endpoint.clone())
    }

    /// An endpoint of the metadata the flow holds: the one served with its issuer, or, when
    /// none was (no metadata anywhere), the 2025-03-26 default at the server's origin.
    fn expected_endpoint(
        &self,
        flow: &AuthFlow,
        default_path: &str,
        served: impl Fn(&Served) -> Option<Url>,
    ) -> Option<Url> {
        let issuer = flow.issuer()?;
        if self.served.issuer.as_deref() == Some(issuer) {
            served(&self.served)
        } else {
            Url::parse(&format!("{issuer}{default_path}")).ok()
        }
    }

    // -----------------------------------------------------------------------------------------
    // requests
    // -----------------------------------------------------------------------------------------

    fn check_request(&mut self, flow: &AuthFlow, request: &AuthRequest) {
        let kind = request.kind;
        let label = kind.label();
        let uri = request.request.uri().to_string();
        let url =
            Url::parse(&uri).unwrap_or_else(|e| panic!("{label}: a URI that is not a URL: {e}"));
        assert!(is_secure(&url), "{label}: sent in the clear to {uri}");
        let metadata_get = matches!(
            kind,
            AuthRequestKind::ResourceMetadata | AuthRequestKind::ServerMetadata
        );
        assert_eq!(
            request.request.method(),
            if metadata_get {
                Method::GET
            } else {
                Method::POST
            },
            "{label}: its method"
        );
        let body = request.request.body();
        let mut carried = vec![String::from_utf8_lossy(body).into_owned()];
        let form: Vec<(String, String)> = url::form_urlencoded::parse(body).into_owned().collect();
        carried.extend(form.iter().map(|(_, v)| v.clone()));
        for (name, value) in request.request.headers() {
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            if name == http::header::AUTHORIZATION {
                let decoded = value
                    .strip_prefix("Basic ")
                    .and_then(|b| STANDARD.decode(b).ok())
                    .map(|raw| String::from_utf8_lossy(&raw).into_owned())
                    .unwrap_or_default();
                for part in decoded.split(':') {
                    carried.extend(
                        url::form_urlencoded::parse(format!("x={part}").as_bytes())
                            .map(|(_, v)| v.into_owned()),
                    );
                }
            }
            carried.push(value);
        }
        let param = |name: &str| {
            form.iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        };
        let issuer = Self::flow_issuer(flow);
        let token_endpoint = self.expected_token_endpoint(flow);
        let at_token_endpoint = matches!(
            kind,
            AuthRequestKind::Token
                | AuthRequestKind::Refresh
                | AuthRequestKind::ClientCredentials
                | AuthRequestKind::JwtBearer
        );
        let to_token_endpoint = at_token_endpoint && token_endpoint.as_ref() == Some(&url);
        for secret in &self.secrets {
            assert!(
                !uri.contains(&secret.value),
                "{label}: a secret ({:?}) in the request URI {uri}",
                secret.place
            );
            if !carried.iter().any(|c| c.contains(&secret.value)) {
                continue;
            }
            let allowed = match &secret.place {
                Place::Nowhere => false,
                Place::TokenEndpoint(None) => to_token_endpoint,
                Place::TokenEndpoint(Some(at)) => to_token_endpoint && issuer.as_ref() == Some(at),
                Place::Refresh(at, resource) => {
                    to_token_endpoint
                        && kind == AuthRequestKind::Refresh
                        && issuer.as_ref() == Some(at)
                        && param("resource") == Some(resource.as_str())
                }
                Place::Code(at) => {
                    to_token_endpoint
                        && kind == AuthRequestKind::Token
                        && issuer.as_ref() == Some(at)
                }
                Place::Idp => {
                    kind == AuthRequestKind::TokenExchange && url.as_str() == IDP_ENDPOINT
                }
            };
            assert!(
                allowed,
                "{label} to {uri} (issuer {issuer:?}) carries a secret meant for {:?}",
                secret.place
            );
        }
        match kind {
            AuthRequestKind::Register => {
                assert_eq!(
                    Some(&url),
                    self.expected_endpoint(flow, "/register", |s| s.registration_endpoint.clone())
                        .as_ref(),
                    "a registration sent elsewhere than the registration endpoint"
                );
                let document: Value = serde_json::from_slice(body).expect("a JSON registration");
                assert_eq!(document["redirect_uris"], json!([REDIRECT]));
            }
            AuthRequestKind::TokenExchange => {
                assert_eq!(
                    url.as_str(),
                    IDP_ENDPOINT,
                    "a token exchange sent elsewhere"
                );
            }
            _ if at_token_endpoint => {
                assert!(
                    to_token_endpoint,
                    "{label} sent to {uri}, not to the token endpoint of {issuer:?} ({:?})",
                    token_endpoint.as_ref().map(Url::as_str)
                );
                let resource =
                    param("resource").unwrap_or_else(|| panic!("{label} without a resource"));
                assert!(
                    serves(resource, self.server),
                    "{label} asks a token for resource {resource:?}, not for {}",
                    self.server
                );
                if kind == AuthRequestKind::Token {
                    assert_eq!(
                        param("redirect_uri"),
                        Some(REDIRECT),
                        "the code exchange's redirect URI"
                    );
                    let verifier =
                        param("code_verifier").expect("a code exchange without its verifier");
                    let (code_challenge, _) = self
                        .challenge
                        .clone()
                        .expect("a code exchange without an authorization");
                    assert_eq!(
                        URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes())),
                        code_challenge,
                        "the verifier does not match the authorization's S256 challenge"
                    );
                    assert!(
                        self.secrets.iter().all(|s| s.value != verifier),
                        "the verifier is a secret the flow was given"
                    );
                }
                self.check_dpop(flow, request, &url);
            }
            _ => {}
        }
        if let (true, Some(issuer), Some(resource)) =
            (at_token_endpoint, &issuer, param("resource"))
        {
            self.pairs_used.push((issuer.clone(), resource.to_owned()));
        }
        let repeats = if self.repeats.0 == Some(kind) {
            self.repeats.1 + 1
        } else {
            1
        };
        self.repeats = (Some(kind), repeats);
        if at_token_endpoint {
            assert!(repeats <= 2, "{label} sent {repeats} times in a row");
        }
    }

    fn check_dpop(&self, flow: &AuthFlow, request: &AuthRequest, url: &Url) {
        let label = request.kind.label();
        let advertised = flow.issuer().is_some()
            && self.served.issuer.as_deref() == flow.issuer()
            && self.served_dpop_es256;
        let wanted = match self.dpop {
            Dpop::Always => true,
            Dpop::WhenAdvertised => advertised,
            _ => false,
        };
        let proof = request.request.headers().get("dpop");
        if !wanted {
            if self.dpop == Dpop::Off {
                assert!(proof.is_none(), "{label}: a DPoP proof nobody asked for");
            }
            return;
        }
        let proof = proof.unwrap_or_else(|| panic!("{label}: no DPoP proof"));
        assert!(
            proof.is_sensitive(),
            "{label}: the DPoP header is not marked sensitive"
        );
        let claims = proof
            .to_str()
            .ok()
            .and_then(|jwt| jwt.split('.').nth(1))
            .and_then(|payload| URL_SAFE_NO_PAD.decode(payload).ok())
            .and_then(|raw| serde_json::from_slice::<Value>(&raw).ok())
            .unwrap_or_else(|| panic!("{label}: a DPoP proof that is not a JWT"));
        assert_eq!(claims["htm"], "POST", "{label}: the proof's htm");
        let mut htu = url.clone();
        htu.set_query(None);
        htu.set_fragment(None);
        assert_eq!(claims["htu"], htu.as_str(), "{label}: the proof's htu");
        assert!(
            claims.get("ath").is_none(),
            "{label}: a token hash in a token request's proof"
        );
        if let Some(nonce) = &self.served.as_nonce {
            assert_eq!(
                claims["nonce"].as_str(),
                Some(nonce.as_str()),
                "{label}: the proof does not carry the authorization server's last nonce"
            );
        }
    }
}

// The harness field `served_dpop_es256` lives beside `served` (see `Served`).
impl Harness<'_> {
    fn answer(&mut self, flow: &mut AuthFlow, request: &AuthRequest) {
        let kind = request.kind;
        let pick = self.bytes.byte();
        let mut headers = HeaderMap::new();
        if pick & 0x10 != 0 {
            let nonce = [
                "n-1",
                "n-2",
                "nonce-with-a-long-value-000000000000000000000000000000",
                " ",
            ][usize::from(self.bytes.byte() % 4)];
            headers.insert("dpop-nonce", HeaderValue::from_static(nonce));
        }
        let (status, body) = match pick & 3 {
            0 => {
                let mutations = usize::from(pick >> 2 & 3);
                let mut body = self.healthy(flow, request);
                for _ in 0..mutations {
                    let field = self.bytes.byte();
                    let value = self.bytes.byte();
                    self.mutate(&mut body, kind, field, value);
                }
                let status = if kind == AuthRequestKind::Register && pick & 0x20 != 0 {
                    StatusCode::OK
                } else if kind == AuthRequestKind::Register {
                    StatusCode::CREATED
                } else {
                    StatusCode::OK
                };
                (status, Value::Object(body).to_string().into_bytes())
            }
            1 => {
                let status =
                    [400, 401, 403, 404, 500, 302, 200, 429][usize::from(self.bytes.byte() % 8)];
                let error = [
                    "invalid_grant",
                    "invalid_client",
                    "invalid_request",
                    "access_denied",
                ][usize::from(self.bytes.byte() % 4)];
                let description = dictionary_text(self.bytes.byte());
                let body = json!({"error": error, "error_description": description});
                (
                    StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST),
                    body.to_string().into_bytes(),
                )
            }
            2 => {
                let status = 100 + u16::from(self.bytes.byte()) * 2;
                let len = usize::from(self.bytes.u16() % 2048);
                let raw = self.bytes.take(len).to_vec();
                self.taint(&raw);
                (StatusCode::from_u16(status).unwrap_or(StatusCode::OK), raw)
            }
            _ => {
                let nonce = format!("n-{}", self.serial);
                self.serial += 1;
                headers.insert(
                    "dpop-nonce",
                    HeaderValue::from_str(&nonce).expect("a nonce"),
                );
                (
                    StatusCode::BAD_REQUEST,
                    br#"{"error":"use_dpop_nonce","error_description":"Authorization server requires nonce in DPoP proof"}"#.to_vec(),
                )
            }
        };
        self.note_served(flow, request, status, &headers, &body);
        flow.handle_response(status, &headers, &body);
    }

    /// Records what the flow may take from an answer, before it reads it.
    fn note_served(
        &mut self,
        flow: &AuthFlow,
        request: &AuthRequest,
        status: StatusCode,
        headers: &HeaderMap,
        body: &[u8],
    ) {
        let object = match serde_json::from_slice::<Value>(body) {
            Ok(Value::Object(object)) => Some(object),
            _ => None,
        };
        let text = |name: &str| {
            object
                .as_ref()
                .and_then(|o| o.get(name))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let at_token_endpoint = matches!(
            request.kind,
            AuthRequestKind::Token
                | AuthRequestKind::Refresh
                | AuthRequestKind::ClientCredentials
                | AuthRequestKind::JwtBearer
        );
        if at_token_endpoint && request.request.headers().contains_key("dpop") {
            if let Some(nonce) = headers
                .get("dpop-nonce")
                .and_then(|v| v.to_str().ok())
                .map(str::trim)
                .filter(|n| !n.is_empty())
            {
                self.served.as_nonce = Some(nonce.to_owned());
            }
        }
        if !status.is_success() {
            return;
        }
        match request.kind {
            AuthRequestKind::ResourceMetadata => {
                self.served.authorization_servers = object
                    .as_ref()
                    .and_then(|o| o.get("authorization_servers"))
                    .and_then(Value::as_array)
                    .map(|list| {
                        list.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default();
            }
            AuthRequestKind::ServerMetadata => {
                let endpoint = |name: &str| text(name).and_then(|t| Url::parse(&t).ok());
                self.served.issuer = text("issuer");
                self.served.authorization_endpoint = endpoint("authorization_endpoint");
                self.served.token_endpoint = endpoint("token_endpoint");
                self.served.registration_endpoint = endpoint("registration_endpoint");
                self.served_dpop_es256 = object
                    .as_ref()
                    .and_then(|o| o.get("dpop_signing_alg_values_supported"))
                    .and_then(Value::as_array)
                    .is_some_and(|algs| algs.iter().any(|a| a == "ES256"));
            }
            _ if at_token_endpoint => {
                self.served.access_token = text("access_token");
            }
            _ => {}
        }
        let _ = flow;
    }

    /// The answer a healthy server gives to `request`, as the conformance suite's do.
    fn healthy(&mut self, flow: &AuthFlow, request: &AuthRequest) -> Map<String, Value> {
        let value = match request.kind {
            AuthRequestKind::ResourceMetadata => json!({
                "resource": self.server,
                "authorization_servers": [ISSUER],
                "scopes_supported": ["files:read", "files:write"],
                "bearer_methods_supported": ["header"]
            }),
            AuthRequestKind::ServerMetadata => {
                // The issuer the flow asks about: the one the resource metadata named (the
                // pre-registered one when listed), else the server's origin (2025-03-26).
                let asked = Url::parse(&request.request.uri().to_string()).ok();
                let issuer = self
                    .served
                    .authorization_servers
                    .iter()
                    .find(|issuer| {
                        Url::parse(issuer).ok().map(|u| u.origin())
                            == asked.as_ref().map(Url::origin)
                    })
                    .cloned()
                    .unwrap_or_else(|| self.server_url.origin().ascii_serialization());
                let base = issuer.trim_end_matches('/').to_owned();
                json!({
                    "issuer": issuer,
                    "authorization_endpoint": format!("{base}/authorize"),
                    "token_endpoint": format!("{base}/token"),
                    "registration_endpoint": format!("{base}/register"),
                    "response_types_supported": ["code"],
                    "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
                    "code_challenge_methods_supported": ["S256"],
                    "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post", "private_key_jwt"],
                    "scopes_supported": ["files:read", "files:write", "offline_access"],
                    "authorization_response_iss_parameter_supported": true,
                    "client_id_metadata_document_supported": true,
                    "dpop_signing_alg_values_supported": ["ES256"]
                })
            }
            AuthRequestKind::Register => {
                let issuer = Self::flow_issuer(flow);
                let secret = self.fresh("registered", Place::TokenEndpoint(issuer));
                json!({
                    "client_id": format!("reg-client-{}", self.serial),
                    "client_secret": secret,
                    "token_endpoint_auth_method": "client_secret_basic",
                    "redirect_uris": [REDIRECT]
                })
            }
            AuthRequestKind::TokenExchange => {
                let id_jag = self.fresh("id-jag", Place::TokenEndpoint(None));
                json!({
                    "access_token": id_jag,
                    "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag",
                    "token_type": "N_A",
                    "expires_in": 300
                })
            }
            _ => {
                let access = self.fresh("access", Place::Nowhere);
                let refresh = self.fresh("refresh", Place::Nowhere);
                let dpop = request.request.headers().contains_key("dpop");
                json!({
                    "access_token": access,
                    "token_type": if dpop { "DPoP" } else { "Bearer" },
                    "expires_in": 3600,
                    "refresh_token": refresh,
                    "scope": "files:read"
                })
            }
        };
        match value {
            Value::Object(object) => object,
            _ => Map::new(),
        }
    }

    /// Replaces (or removes) one member of an answer with a value from the dictionary.
    fn mutate(&self, body: &mut Map<String, Value>, kind: AuthRequestKind, field: u8, value: u8) {
        let fields: &[&str] = match kind {
            AuthRequestKind::ResourceMetadata => {
                &["resource", "authorization_servers", "scopes_supported"]
            }
            AuthRequestKind::ServerMetadata => &[
                "issuer",
                "authorization_endpoint",
                "token_endpoint",
                "registration_endpoint",
                "code_challenge_methods_supported",
                "token_endpoint_auth_methods_supported",
                "scopes_supported",
                "authorization_response_iss_parameter_supported",
                "client_id_metadata_document_supported",
                "dpop_signing_alg_values_supported",
            ],
            AuthRequestKind::Register => {
                &["client_id", "client_secret", "token_endpoint_auth_method"]
            }
            AuthRequestKind::TokenExchange => &["access_token", "issued_token_type"],
            _ => &[
                "access_token",
                "token_type",
                "expires_in",
                "refresh_token",
                "scope",
            ],
        };
        let name = fields[usize::from(field) % fields.len()];
        match self.dictionary(value) {
            Some(replacement) => {
                body.insert(name.to_owned(), replacement);
            }
            None => {
                body.remove(name);
            }
        }
    }

    /// The hostile values answers are made of (`None`: the member is removed).
    fn dictionary(&self, pick: u8) -> Option<Value> {
        let origin = self.server_url.origin().ascii_serialization();
        let parent = {
            let mut parent = self.server_url.clone();
            parent.set_query(None);
            parent
                .path_segments_mut()
                .map(|mut p| {
                    p.pop();
                })
                .ok();
            parent.to_string()
        };
        Some(match pick % 48 {
            0 => return None,
            1 => json!(ISSUER),
            2 => json!(format!("{ISSUER}/")),
            3 => json!(OTHER_ISSUER),
            4 => json!(self.server),
            5 => json!(origin),
            6 => json!(OTHER_RESOURCE),
            7 => json!("http://mcp.fuzz.example/mcp"),
            8 => json!(format!("{}#fragment", self.server)),
            9 => json!(parent),
            10 => json!(format!(
                "{}/deeper",
                self.server.split('?').next().unwrap_or_default()
            )),
            11 => json!(""),
            12 => Value::Null,
            13 => json!(0),
            14 => json!(-1),
            15 => json!(1e300),
            16 => json!(true),
            17 => json!([]),
            18 => json!({}),
            19 => json!(["S256"]),
            20 => json!(["plain"]),
            21 => json!(["ES256"]),
            22 => json!([ISSUER]),
            23 => json!([OTHER_ISSUER, ISSUER]),
            24 => json!("Bearer"),
            25 => json!("DPoP"),
            26 => json!("mac"),
            27 => json!("token with space"),
            28 => json!("x".repeat(300)),
            29 => json!("a\u{0}b\u{1b}[31m\r\nc"),
            30 => json!("18446744073709551615"),
            31 => json!(u64::MAX),
            32 => json!("javascript:alert(1)"),
            33 => json!(format!("{ISSUER}/token?tenant=a")),
            34 => json!("https://[::1]:4000/token"),
            35 => json!("file:///etc/passwd"),
            36 => json!(["none"]),
            37 => json!(["client_secret_post"]),
            38 => json!("client_secret_post"),
            39 => json!("private_key_jwt"),
            40 => json!("urn:ietf:params:oauth:token-type:id-jag"),
            41 => json!("HTTPS://AUTH.FUZZ.EXAMPLE"),
            42 => json!(format!("{OTHER_ISSUER}/token")),
            43 => json!("http://127.0.0.1:4000"),
            44 => json!(["offline_access"]),
            45 => json!("files:read files:write offline_access"),
            46 => json!(2.5),
            _ => json!("https://auth.fuzz.example:8443/path/"),
        })
    }

    // -----------------------------------------------------------------------------------------
    // the browser
    // -----------------------------------------------------------------------------------------

    fn authorize(&mut self, flow: &mut AuthFlow, url: &Url) {
        self.authorizations += 1;
        assert!(
            self.authorizations <= MAX_AUTHORIZATIONS,
            "{} authorizations in one operation",
            self.authorizations
        );
        let text = url.as_str();
        for secret in &self.secrets {
            assert!(
                !text.contains(&secret.value),
                "a secret ({:?}) in the authorization URL",
                secret.place
            );
        }
        let endpoint = self
            .expected_endpoint(flow, "/authorize", |s| s.authorization_endpoint.clone())
            .expect("an authorization without an authorization endpoint");
        assert!(
            url.origin() == endpoint.origin() && url.path() == endpoint.path(),
            "the authorization URL {text} is not at the endpoint {endpoint}"
        );
        let param = |name: &str| {
            let values: Vec<String> = url
                .query_pairs()
                .filter(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
                .collect();
            assert!(values.len() <= 1, "{name} appears {} times", values.len());
            values.into_iter().next()
        };
        assert_eq!(param("response_type").as_deref(), Some("code"));
        assert_eq!(param("redirect_uri").as_deref(), Some(REDIRECT));
        assert_eq!(param("code_challenge_method").as_deref(), Some("S256"));
        let resource = param("resource").expect("an authorization without a resource");
        assert!(
            serves(&resource, self.server),
            "an authorization for resource {resource:?}, not for {}",
            self.server
        );
        let state = param("state").filter(|s| !s.is_empty()).expect("no state");
        let code_challenge = param("code_challenge")
            .filter(|c| c.len() == 43)
            .expect("no S256 challenge");
        self.challenge = Some((code_challenge, state.clone()));

        let pick = self.bytes.byte();
        if pick & 0x08 != 0 {
            flow.handle_no_authorizer();
            return;
        }
        let issuer = flow.issuer().unwrap_or_default().to_owned();
        let code = if pick & 0x10 != 0 {
            String::new()
        } else {
            self.fresh("code", Place::Code(issuer.clone()))
        };
        let query = |pairs: &[(&str, &str)]| {
            url::form_urlencoded::Serializer::new(String::new())
                .extend_pairs(pairs)
                .finish()
        };
        let redirect = match pick % 8 {
            0 => format!(
                "{REDIRECT}?{}",
                query(&[("code", &code), ("state", &state), ("iss", &issuer)])
            ),
            1 => format!(
                "{REDIRECT}?{}",
                query(&[("code", &code), ("state", "forged"), ("iss", &issuer)])
            ),
            2 => format!(
                "{REDIRECT}?{}",
                query(&[("code", &code), ("state", &state)])
            ),
            3 => format!(
                "{REDIRECT}?{}",
                query(&[
                    ("code", &code),
                    ("state", &state),
                    ("iss", &format!("{issuer}/"))
                ])
            ),
            4 => format!(
                "{REDIRECT}?{}",
                query(&[
                    ("error", "access_denied"),
                    ("error_description", "The user said no\u{1b}[2J"),
                    ("state", &state),
                    ("iss", &issuer)
                ])
            ),
            5 => format!(
                "{REDIRECT}?{}",
                query(&[
                    ("code", &code),
                    ("code", "other"),
                    ("state", &state),
                    ("iss", &issuer)
                ])
            ),
            6 => format!(
                "http://127.0.0.1:9999/callback?{}",
                query(&[("code", &code), ("state", &state), ("iss", &issuer)])
            ),
            _ => {
                let len = usize::from(self.bytes.byte());
                let raw = String::from_utf8_lossy(self.bytes.take(len)).into_owned();
                self.taint(raw.as_bytes());
                let raw = raw.replace("{state}", &state).replace("{code}", &code);
                format!("{REDIRECT}?{raw}")
            }
        };
        flow.handle_redirect(&redirect);
    }

    // -----------------------------------------------------------------------------------------
    // ends
    // -----------------------------------------------------------------------------------------

    fn check_error(&self, error: &AuthError) {
        let shown = error.to_string();
        let debug = format!("{error:?}");
        for secret in self.secrets.iter().filter(|s| !s.tainted) {
            assert!(
                !shown.contains(&secret.value) && !debug.contains(&secret.value),
                "a secret ({:?}) in an error: {shown}",
                secret.place
            );
        }
        assert!(
            !shown.chars().any(char::is_control),
            "an error message carries a control character: {shown:?}"
        );
        let _ = error.fault();
    }

    fn check_token(&self, flow: &AuthFlow, token: &mcp_auth::AccessToken) {
        let issuer = flow.issuer().expect("a token without an issuer");
        assert_eq!(
            token.issuer(),
            issuer,
            "the token names another issuer than the flow's"
        );
        assert!(
            serves(token.resource(), self.server),
            "a token for resource {:?} handed to {}",
            token.resource(),
            self.server
        );
        assert_eq!(
            Some(token.secret().expose()),
            self.served.access_token.as_deref(),
            "the token is not the last one the token endpoint answered"
        );
        let stored = self
            .store
            .tokens(issuer, token.resource())
            .expect("a token the store does not keep");
        assert_eq!(stored.access_token.expose(), token.secret().expose());
        if self.dpop == Dpop::Off {
            assert!(!token.is_dpop_bound(), "a DPoP-bound token without DPoP");
        }
        let secret = token.secret().expose();
        if self.secrets.iter().any(|s| s.value == secret) {
            let debug = format!("{token:?}");
            assert!(!debug.contains(secret), "the token's Debug shows it");
        }
    }
}

/// HTTPS, or HTTP to a loopback host.
fn is_secure(url: &Url) -> bool {
    match url.scheme() {
        "https" => true,
        "http" => match url.host() {
            Some(url::Host::Domain(domain)) => domain.eq_ignore_ascii_case("localhost"),
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            None => false,
        },
        _ => false,
    }
}

/// Whether a token for `resource` serves the MCP server at `server` (RFC 9728 as MCP applies
/// it), written independently of the flow: the same scheme, host and port, no fragment, and
/// the resource's path is the server's or a parent of it, segment-wise.
fn serves(resource: &str, server: &str) -> bool {
    let (Ok(resource), Ok(server)) = (Url::parse(resource), Url::parse(server)) else {
        return false;
    };
    if resource.scheme() != server.scheme()
        || resource.host() != server.host()
        || resource.port_or_known_default() != server.port_or_known_default()
        || resource.fragment().is_some()
    {
        return false;
    }
    let parent = resource.path().trim_end_matches('/');
    let child = server.path().trim_end_matches('/');
    child == parent
        || child
            .strip_prefix(parent)
            .is_some_and(|rest| rest.starts_with('/'))
}

fn dictionary_text(pick: u8) -> &'static str {
    [
        "The authorization code has expired",
        "",
        "a\u{0}b\u{1b}[31mred",
        "Client authentication failed",
    ][usize::from(pick % 4)]
}

/// The challenge of a 401 (or a 403) from one setup byte (and its operands).
fn challenge(bytes: &mut Bytes<'_>, server: &Url) -> (Challenge, Option<Vec<u8>>) {
    let pick = bytes.byte();
    let status = if pick & 1 != 0 {
        StatusCode::FORBIDDEN
    } else {
        StatusCode::UNAUTHORIZED
    };
    let origin = server.origin().ascii_serialization();
    let path = server.path().trim_end_matches('/');
    let metadata = match pick >> 1 & 7 {
        0 => None,
        1 => Some(format!(
            "{origin}/.well-known/oauth-protected-resource{path}"
        )),
        2 => Some(format!("{origin}/.well-known/oauth-protected-resource")),
        3 => Some("https://meta.fuzz.example/prm".to_owned()),
        4 => Some("http://mcp.fuzz.example/prm".to_owned()),
        5 => Some("not a url".to_owned()),
        6 => Some(format!("{origin}/custom/prm.json")),
        _ => Some(format!(
            "{origin}/.well-known/oauth-protected-resource{path}?a=\"b\""
        )),
    };
    let scope =
        ["", "files:read", "files:read files:write", "offline_access"][usize::from(pick >> 4 & 3)];
    let (value, raw) = if pick & 0x80 != 0 {
        let len = usize::from(bytes.byte());
        let raw = bytes.take(len).to_vec();
        (raw.clone(), Some(raw))
    } else {
        let mut value = "Bearer realm=\"mcp\"".to_owned();
        if status == StatusCode::FORBIDDEN {
            value.push_str(", error=\"insufficient_scope\"");
        }
        if let Some(metadata) = metadata {
            value.push_str(&format!(", resource_metadata=\"{metadata}\""));
        }
        if !scope.is_empty() {
            value.push_str(&format!(", scope=\"{scope}\""));
        }
        if pick & 0x40 != 0 {
            value.push_str(", DPoP algs=\"ES256\"");
        }
        (value.into_bytes(), None)
    };
    let mut headers = HeaderMap::new();
    if let Ok(value) = HeaderValue::from_bytes(&value) {
        headers.insert(http::header::WWW_AUTHENTICATE, value);
    }
    let challenge =
        Challenge::from_response(status, &headers).unwrap_or_else(Challenge::unauthorized);
    (challenge, raw)
}

/// The authorization-flow target.
///
/// Layout: four setup bytes, then the challenge, then one input per step of the flow. Setup:
/// byte 0 the client (`% 8`: a registering client, one pre-registered at the issuer the
/// healthy metadata names, one pre-registered at another issuer, one with a client metadata
/// document, `client_credentials` with a secret, with a `private_key_jwt` key, `jwt-bearer`
/// with a workload's assertion, enterprise-managed), `(b >> 3) % 3` DPoP (off, when
/// advertised, always), `0x20` a configured scope, `0x40` a pre-registered client for any
/// issuer; byte 1 the store (`0x01` a registration at the issuer, `0x02` tokens for this
/// server there, `0x04` those tokens of another client id, `0x08` the registration for another
/// redirect URI, `0x10` it authenticates with Basic; another server's tokens and another
/// issuer's registration and tokens are always there); byte 2 the server URL (`% 4`); then
/// the challenge byte (`1` a 403 `insufficient_scope`, `>> 1 & 7` the `resource_metadata`:
/// none, path-based, root, another origin, plain HTTP, not a URL, a custom path, with a quote;
/// `>> 4 & 3` the scope; `0x40` a DPoP challenge too; `0x80` raw: a length byte, then the
/// header value).
///
/// Each request the flow sends is answered by the next byte: `& 3` = 0 a healthy answer with
/// `(b >> 2) & 3` members replaced (a field byte and a value byte each, see the dictionary in
/// `Harness::dictionary`); 1 an OAuth error (status byte, error byte, description byte); 2 raw
/// (status byte: `100 + 2b`, a `u16` length, the bytes); 3 `400 use_dpop_nonce` with a fresh
/// `DPoP-Nonce`; `0x10` adds a `DPoP-Nonce` header (a byte picks it); `0x20` a registration
/// answered 200. Each authorization URL is answered by the next byte: `0x08` no authorizer;
/// `% 8` the redirect: healthy, another state, no `iss`, the issuer with a slash, an error, the
/// code twice, another port, raw (a length byte, then the query; `{state}` and `{code}` are
/// replaced); `0x10` an empty code. When a flow ends, the next byte's `1` bit starts the next
/// flow of the operation (`rechallenge`) with a challenge read as above.
///
/// Invariants: every flow ends (`Done` or `Failed`) within a bounded number of polls, never
/// asks for an answer it was given, and repeats its end when polled again; past
/// `MAX_AUTHORIZATIONS` flows it fails at once, and it never opens more authorizations than
/// that; every request goes over HTTPS (or loopback HTTP) with its kind's method; no secret is
/// ever in a URI, and each secret goes only where it belongs: a registration's credentials and
/// a stored client's only to the token endpoint of the issuer they are for (a pre-registered
/// client's only to its issuer's), a stored refresh token only in a refresh at its issuer for
/// its resource, a code only in its exchange, an ID token only to the identity provider, an
/// access token nowhere; a token request goes to the token endpoint of the metadata whose
/// issuer the flow holds (or the 2025-03-26 default), a registration to the registration
/// endpoint; every token request asks for a resource that is this server or a parent of it;
/// the code exchange's verifier matches the authorization's S256 challenge and repeats its
/// redirect URI; the authorization URL is at the authorization endpoint, for such a resource,
/// with one `state` and an S256 challenge; a DPoP proof (when one is wanted) is a JWT for the
/// request's method and URL without a token hash, carrying the authorization server's last
/// nonce; a `use_dpop_nonce` refusal is retried once at most; no error shows a secret or a
/// control character; a token names the flow's issuer and a resource that is this server (or a
/// parent), is the last one the token endpoint answered, is kept in the store, and its `Debug`
/// hides it; the store entries of issuers no flow used are left as they were.
pub fn auth(data: &[u8]) {
    let mut bytes = Bytes::new(data);
    let client_pick = bytes.byte();
    let store_pick = bytes.byte();
    let server = SERVERS[usize::from(bytes.byte() % 4)];
    let server_url = Url::parse(server).expect("the fuzz servers are URLs");
    let dpop = match (client_pick >> 3) % 3 {
        0 => Dpop::Off,
        1 => Dpop::WhenAdvertised,
        _ => Dpop::Always,
    };
    let mut harness = Harness {
        bytes,
        server,
        server_url: server_url.clone(),
        store: Arc::new(MemoryStore::new()),
        secrets: Vec::new(),
        served: Served::default(),
        entropy: Counter(0),
        now: Instant::now(),
        wall: UNIX_EPOCH + Duration::from_secs(1_800_000_000),
        challenge: None,
        serial: 0,
        dpop,
        authorizations: 0,
        issuers_used: Vec::new(),
        repeats: (None, 0),
        served_dpop_es256: false,
        pairs_used: Vec::new(),
    };
    let config = harness.config(client_pick);
    harness.seed_store(store_pick);
    let decoys = harness.decoys();
    let (first, raw) = challenge(&mut harness.bytes, &server_url);
    if let Some(raw) = raw {
        harness.taint(&raw);
    }
    let store: Arc<dyn CredentialStore> = harness.store.clone();
    let mut flow =
        AuthFlow::new(server, first, config, store).expect("the fuzz servers are HTTP(S)");
    let mut flows = 1;
    loop {
        let ended = harness.drive(&mut flow);
        if let Some(issuer) = flow.issuer() {
            harness.issuers_used.push(issuer.to_owned());
        }
        let next = harness.bytes.byte();
        if harness.bytes.is_empty() || next & 1 == 0 || flows >= MAX_FLOWS {
            break;
        }
        let _ = ended;
        let (challenge, raw) = challenge(&mut harness.bytes, &server_url);
        if let Some(raw) = raw {
            harness.taint(&raw);
        }
        flows += 1;
        let attempts = flow.attempts();
        flow = flow.rechallenge(challenge);
        assert_eq!(
            flow.attempts(),
            attempts + 1,
            "a rechallenge that does not count"
        );
        harness.served = Served::default();
        harness.served_dpop_es256 = false;
        harness.challenge = None;
        harness.repeats = (None, 0);
        if attempts >= MAX_AUTHORIZATIONS {
            match flow.poll(harness.now, harness.wall, &mut harness.entropy) {
                AuthStep::Failed(error) => harness.check_error(&error),
                other => panic!("flow {} of an operation went on: {other:?}", attempts + 1),
            }
            break;
        }
    }
    for (issuer, resource, before) in decoys {
        if harness
            .pairs_used
            .contains(&(issuer.clone(), resource.clone()))
        {
            continue;
        }
        let now = harness.store.tokens(&issuer, &resource).map(|t| {
            (
                t.access_token.expose().to_owned(),
                t.refresh_token.map(|r| r.expose().to_owned()),
            )
        });
        assert_eq!(now, before, "the tokens of {issuer} for {resource} changed");
    }
    if !harness.issuers_used.iter().any(|i| i == OTHER_ISSUER) {
        let client = harness
            .store
            .client(OTHER_ISSUER)
            .expect("the other issuer's client");
        assert!(
            client
                .client_secret
                .is_some_and(|s| s.expose().contains("decoy-client")),
            "the registration at another issuer changed"
        );
    }
}

type Decoy = (String, String, Option<(String, Option<String>)>);

impl Harness<'_> {
    /// The client configuration from the setup byte.
    fn config(&mut self, pick: u8) -> ClientConfig {
        let kind = pick % 8;
        let machine_secret = |h: &mut Self, what: &str| h.fresh(what, Place::TokenEndpoint(None));
        let mut config = match kind {
            4 => {
                let secret = machine_secret(self, "machine");
                ClientConfig::headless(Grant::client_credentials(
                    "machine-client",
                    Secret::new(secret),
                ))
                .expect("a grant without a person")
            }
            5 => {
                let key = PrivateKey::from_pkcs8_pem(CLIENT_KEY_PEM).expect("the test key");
                ClientConfig::headless(Grant::client_credentials_jwt("jwt-client", key))
                    .expect("a grant without a person")
            }
            6 => {
                let assertion = machine_secret(self, "assertion");
                ClientConfig::headless(Grant::jwt_bearer("workload-client", Secret::new(assertion)))
                    .expect("a grant without a person")
            }
            7 => {
                let secret = machine_secret(self, "enterprise");
                let id_token = self.fresh("id-token", Place::Idp);
                let grant = Grant::enterprise_managed(
                    "ema-client",
                    Secret::new(secret),
                    IDP_ENDPOINT,
                    "idp-client",
                    Secret::new(id_token),
                )
                .expect("the IdP endpoint is HTTPS");
                ClientConfig::headless(grant).expect("a grant without a person")
            }
            _ => {
                let mut config = ClientConfig::new(REDIRECT)
                    .expect("the redirect URI is loopback")
                    .with_client_name("fuzz-client");
                match kind {
                    1 | 2 => {
                        let issuer = if kind == 1 { ISSUER } else { OTHER_ISSUER };
                        let any = pick & 0x40 != 0;
                        let place = Place::TokenEndpoint((!any).then(|| issuer.to_owned()));
                        let secret = self.fresh("preregistered", place);
                        let client = if any {
                            PreRegisteredClient::for_any_issuer("pre-client")
                        } else {
                            PreRegisteredClient::new(issuer, "pre-client")
                        };
                        config =
                            config.with_pre_registered(client.with_secret(Secret::new(secret)));
                    }
                    3 => {
                        config = config
                            .with_metadata_document(METADATA_DOCUMENT)
                            .expect("an HTTPS document URL with a path");
                    }
                    _ => {}
                }
                config
            }
        };
        if pick & 0x20 != 0 {
            config = config.with_scope("files:read");
        }
        config.with_dpop(self.dpop)
    }

    /// The store's registrations and tokens from the setup byte, and always another server's
    /// tokens and another issuer's registration and tokens.
    fn seed_store(&mut self, pick: u8) {
        if pick & 0x01 != 0 {
            let secret = self.fresh(
                "stored-client",
                Place::TokenEndpoint(Some(ISSUER.to_owned())),
            );
            self.store.save_client(
                ISSUER,
                ClientCredentials {
                    client_id: "stored-client".to_owned(),
                    client_secret: Some(Secret::new(secret)),
                    auth_method: if pick & 0x10 != 0 {
                        TokenEndpointAuth::ClientSecretBasic
                    } else {
                        TokenEndpointAuth::ClientSecretPost
                    },
                    redirect_uri: if pick & 0x08 != 0 {
                        "http://127.0.0.1:9999/callback".to_owned()
                    } else {
                        REDIRECT.to_owned()
                    },
                    source: ClientSource::Registered,
                },
            );
        }
        if pick & 0x02 != 0 {
            let access = self.fresh("stored-access", Place::Nowhere);
            let refresh = self.fresh(
                "stored-refresh",
                Place::Refresh(ISSUER.to_owned(), self.server.to_owned()),
            );
            let client_id = if pick & 0x04 != 0 {
                "other-client"
            } else {
                "stored-client"
            };
            self.store.save_tokens(
                ISSUER,
                self.server,
                self.token_set(access, Some(refresh), client_id),
            );
        }
        let decoy_secret = self.fresh(
            "decoy-client",
            Place::TokenEndpoint(Some(OTHER_ISSUER.to_owned())),
        );
        self.store.save_client(
            OTHER_ISSUER,
            ClientCredentials {
                client_id: "stored-client".to_owned(),
                client_secret: Some(Secret::new(decoy_secret)),
                auth_method: TokenEndpointAuth::ClientSecretPost,
                redirect_uri: REDIRECT.to_owned(),
                source: ClientSource::Registered,
            },
        );
        for (issuer, resource) in [(ISSUER, OTHER_RESOURCE), (OTHER_ISSUER, self.server)] {
            let access = self.fresh("decoy-access", Place::Nowhere);
            let refresh = self.fresh(
                "decoy-refresh",
                Place::Refresh(issuer.to_owned(), resource.to_owned()),
            );
            self.store.save_tokens(
                issuer,
                resource,
                self.token_set(access, Some(refresh), "stored-client"),
            );
        }
    }

    fn token_set(&self, access: String, refresh: Option<String>, client_id: &str) -> TokenSet {
        TokenSet {
            access_token: Secret::new(access),
            expires_at: self.now.checked_add(Duration::from_secs(60)),
            refresh_token: refresh.map(Secret::new),
            scope: Some("files:read".to_owned()),
            client_id: client_id.to_owned(),
        }
    }

    fn decoys(&self) -> Vec<Decoy> {
        [(ISSUER, OTHER_RESOURCE), (OTHER_ISSUER, self.server)]
            .into_iter()
            .map(|(issuer, resource)| {
                let held = self.store.tokens(issuer, resource).map(|t| {
                    (
                        t.access_token.expose().to_owned(),
                        t.refresh_token.map(|r| r.expose().to_owned()),
                    )
                });
                (issuer.to_owned(), resource.to_owned(), held)
            })
            .collect()
    }

    /// Runs one flow to its end.
    fn drive(&mut self, flow: &mut AuthFlow) -> bool {
        for _ in 0..MAX_POLLS {
            let step = flow.poll(self.now, self.wall, &mut self.entropy);
            // What the flow obtained is written outside its poll, as the operation's driver
            // does when it applies the update.
            for change in flow.take_changes() {
                change.apply_to(self.store.as_ref());
            }
            match step {
                AuthStep::Send(request) => {
                    self.check_request(flow, &request);
                    self.answer(flow, &request);
                }
                AuthStep::Authorize { url } => self.authorize(flow, &url),
                AuthStep::Pending => panic!("the flow waits for an answer it was given"),
                AuthStep::Done(token) => {
                    self.check_token(flow, &token);
                    match flow.poll(self.now, self.wall, &mut self.entropy) {
                        AuthStep::Done(again) => assert_eq!(again, token, "the end changed"),
                        other => panic!("after Done, the flow gave {other:?}"),
                    }
                    return true;
                }
                AuthStep::Failed(error) => {
                    self.check_error(&error);
                    match flow.poll(self.now, self.wall, &mut self.entropy) {
                        AuthStep::Failed(again) => assert_eq!(again, error, "the end changed"),
                        other => panic!("after Failed, the flow gave {other:?}"),
                    }
                    return false;
                }
            }
        }
        panic!("the flow did not end within {MAX_POLLS} polls");
    }
}
