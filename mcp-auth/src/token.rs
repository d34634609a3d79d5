//! The token endpoint: the form for each grant (a code exchange, a refresh,
//! `client_credentials`, `jwt-bearer`, a token exchange), client authentication, and the answer
//! ([`AccessToken`], with what it needs to present itself: Bearer, or DPoP with its key).
//!
//! Client authentication follows the client's method, and every token request names its client
//! with `client_id` in the form whatever the method (RFC 6749 4.1.3 allows it; the Python
//! SDK's authorization server reads the client from there even when the secret travels in
//! Basic, and refuses a request without it): `none` stops there, `client_secret_post` adds
//! `client_secret`, `client_secret_basic` sends `Authorization: Basic` over the
//! form-urlencoded id and secret (RFC 6749 2.3.1; the header is marked sensitive; the secret is
//! never in the form), `private_key_jwt` adds the signed client assertion (RFC 7523 2.2).
//! Every token request carries `resource` (RFC 8707); one made with a DPoP key carries its proof
//! in the `DPoP` header (RFC 9449 5). This module must never put a credential anywhere but the
//! request it builds and the [`Secret`]s it returns.

use std::time::{Duration, Instant, SystemTime};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use http::{HeaderName, HeaderValue, Method, Request};
use serde_json::Value;
use url::Url;
use url::form_urlencoded::{Serializer, byte_serialize};

use crate::config::{GrantType, TokenEndpointAuth};
use crate::discovery::{json_object, malformed, secret_member};
use crate::entropy::Entropy;
use crate::error::{AuthError, quote};
use crate::jwt::{PrivateKey, ProofTarget, dpop_proof};
use crate::secret::Secret;
use crate::store::{ClientCredentials, TokenSet};

/// The header a DPoP proof travels in (RFC 9449 4.1).
pub(crate) const DPOP: HeaderName = HeaderName::from_static("dpop");
/// `client_assertion_type` of a JWT client assertion (RFC 7523 2.2).
const JWT_ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
/// The token type of an ID-JAG (SEP-990).
pub(crate) const ID_JAG: &str = "urn:ietf:params:oauth:token-type:id-jag";
/// The token type of an OpenID Connect ID token (RFC 8693 3).
const ID_TOKEN: &str = "urn:ietf:params:oauth:token-type:id_token";

/// The longest `expires_in` taken at its word (ten years); longer is read as this.
const MAX_EXPIRES_IN: u64 = 10 * 365 * 24 * 3600;

/// What a token request asks for: the grant and its parameters.
pub(crate) enum GrantForm<'a> {
    /// `authorization_code` with the PKCE verifier.
    AuthorizationCode {
        code: &'a Secret,
        redirect_uri: &'a str,
        verifier: &'a Secret,
    },
    /// `refresh_token`.
    RefreshToken { refresh_token: &'a Secret },
    /// `client_credentials` (RFC 6749 4.4).
    ClientCredentials { scope: Option<&'a str> },
    /// `jwt-bearer` with an assertion (RFC 7523 2.1): a workload's JWT or an ID-JAG.
    JwtBearer {
        assertion: &'a Secret,
        scope: Option<&'a str>,
    },
    /// A token exchange of an ID token for an ID-JAG addressed to `audience` (RFC 8693,
    /// SEP-990).
    IdJagExchange {
        id_token: &'a Secret,
        audience: &'a str,
        scope: Option<&'a str>,
    },
}

impl GrantForm<'_> {
    fn grant_type(&self) -> GrantType {
        match self {
            Self::AuthorizationCode { .. } => GrantType::AuthorizationCode,
            Self::RefreshToken { .. } => GrantType::RefreshToken,
            Self::ClientCredentials { .. } => GrantType::ClientCredentials,
            Self::JwtBearer { .. } => GrantType::JwtBearer,
            Self::IdJagExchange { .. } => GrantType::TokenExchange,
        }
    }
}

/// What a token request proves beyond its client's identity.
#[derive(Default)]
pub(crate) struct Proofs<'a> {
    /// The `private_key_jwt` client assertion, for a client of that method.
    pub(crate) client_assertion: Option<&'a Secret>,
    /// The DPoP proof of the flow's key (RFC 9449 5).
    pub(crate) dpop: Option<&'a str>,
}

/// The token request: a form POST to `endpoint`, authenticated as `client`.
pub(crate) fn token_request(
    endpoint: &Url,
    client: &ClientCredentials,
    grant: &GrantForm<'_>,
    resource: &str,
    proofs: &Proofs<'_>,
) -> Result<Request<Vec<u8>>, http::Error> {
    let mut form = Serializer::new(String::new());
    form.append_pair("grant_type", grant.grant_type().as_str());
    let mut scope = None;
    match grant {
        GrantForm::AuthorizationCode {
            code,
            redirect_uri,
            verifier,
        } => {
            form.append_pair("code", code.expose());
            form.append_pair("redirect_uri", redirect_uri);
            form.append_pair("code_verifier", verifier.expose());
        }
        GrantForm::RefreshToken { refresh_token } => {
            form.append_pair("refresh_token", refresh_token.expose());
        }
        GrantForm::ClientCredentials { scope: asked } => scope = *asked,
        GrantForm::JwtBearer {
            assertion,
            scope: asked,
        } => {
            form.append_pair("assertion", assertion.expose());
            scope = *asked;
        }
        GrantForm::IdJagExchange {
            id_token,
            audience,
            scope: asked,
        } => {
            form.append_pair("requested_token_type", ID_JAG);
            form.append_pair("audience", audience);
            form.append_pair("subject_token", id_token.expose());
            form.append_pair("subject_token_type", ID_TOKEN);
            scope = *asked;
        }
    }
    form.append_pair("resource", resource);
    if let Some(scope) = scope {
        form.append_pair("scope", scope);
    }
    // The client is named in the form for every method: with Basic too (the header alone is
    // what RFC 6749 2.3.1 describes, but servers such as the Python SDK's read the client
    // from the form, and RFC 6749 4.1.3 allows it there).
    form.append_pair("client_id", &client.client_id);
    let mut basic = None;
    match (client.auth_method, &client.client_secret) {
        (TokenEndpointAuth::ClientSecretBasic, Some(secret)) => {
            basic = Some(basic_credentials(&client.client_id, secret));
        }
        (TokenEndpointAuth::ClientSecretPost, Some(secret)) => {
            form.append_pair("client_secret", secret.expose());
        }
        _ => {}
    }
    if let (TokenEndpointAuth::PrivateKeyJwt, Some(assertion)) =
        (client.auth_method, proofs.client_assertion)
    {
        form.append_pair("client_assertion_type", JWT_ASSERTION_TYPE);
        form.append_pair("client_assertion", assertion.expose());
    }
    let mut builder = Request::builder()
        .method(Method::POST)
        .uri(endpoint.as_str())
        .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(ACCEPT, "application/json");
    if let Some(value) = basic {
        builder = builder.header(AUTHORIZATION, value);
    }
    if let Some(proof) = proofs.dpop {
        builder = builder.header(DPOP, sensitive(proof));
    }
    builder.body(form.finish().into_bytes())
}

/// A header value marked sensitive (an empty one if `text` cannot be one: never the case for
/// the base64url and visible ASCII this module builds).
fn sensitive(text: &str) -> HeaderValue {
    let mut value = HeaderValue::try_from(text).unwrap_or_else(|_| HeaderValue::from_static(""));
    value.set_sensitive(true);
    value
}

/// `Basic base64(urlencode(id) ":" urlencode(secret))`, marked sensitive (RFC 6749 2.3.1).
fn basic_credentials(client_id: &str, secret: &Secret) -> HeaderValue {
    let id: String = byte_serialize(client_id.as_bytes()).collect();
    let secret: String = byte_serialize(secret.expose().as_bytes()).collect();
    let encoded = STANDARD.encode(format!("{id}:{secret}"));
    let mut value = HeaderValue::try_from(format!("Basic {encoded}"))
        .unwrap_or_else(|_| HeaderValue::from_static("Basic"));
    value.set_sensitive(true);
    value
}

/// How a token is presented.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenType {
    Bearer,
    /// Bound to the key whose proof the request carried (RFC 9449 5).
    Dpop,
}

/// A successful token answer (RFC 6749 5.1), read at `now`. `token_type` must be `Bearer`
/// (or absent), or `DPoP` when the request carried a proof (`dpop_sent`).
pub(crate) fn read_token_answer(
    endpoint: &Url,
    body: &[u8],
    now: Instant,
    client_id: &str,
    requested_scope: Option<&str>,
    dpop_sent: bool,
) -> Result<(TokenSet, TokenType), AuthError> {
    const ENDPOINT: &str = "token endpoint";
    let object = json_object(ENDPOINT, endpoint, body)?;
    let access_token = match object.get("access_token").and_then(Value::as_str) {
        Some(token) if is_token_text(token) => token,
        Some(_) => {
            return Err(malformed(
                ENDPOINT,
                endpoint,
                "\"access_token\" is not a header-safe token",
            ));
        }
        None => return Err(malformed(ENDPOINT, endpoint, "no \"access_token\" string")),
    };
    // A missing token_type is read as Bearer (lenient servers omit it); DPoP only when a proof
    // was sent; any other is refused.
    let token_type = match object.get("token_type") {
        None => TokenType::Bearer,
        Some(token_type) => {
            let text = token_type.as_str().unwrap_or("");
            if text.eq_ignore_ascii_case("bearer") {
                TokenType::Bearer
            } else if dpop_sent && text.eq_ignore_ascii_case("dpop") {
                TokenType::Dpop
            } else {
                return Err(AuthError::UnsupportedTokenType {
                    endpoint: endpoint.to_string(),
                    token_type: quote(text),
                });
            }
        }
    };
    let expires_at = object
        .get("expires_in")
        .and_then(seconds)
        .and_then(|secs| now.checked_add(Duration::from_secs(secs.min(MAX_EXPIRES_IN))));
    let refresh_token = secret_member(&object, "refresh_token");
    let scope = object
        .get("scope")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| requested_scope.map(str::to_owned));
    Ok((
        TokenSet {
            access_token: Secret::new(access_token),
            expires_at,
            refresh_token,
            scope,
            client_id: client_id.to_owned(),
        },
        token_type,
    ))
}

/// A token exchange's answer (RFC 8693 2.2.1) read for its ID-JAG: `access_token` holds it, and
/// `issued_token_type`, when present, must say so.
pub(crate) fn read_id_jag(endpoint: &Url, body: &[u8]) -> Result<Secret, AuthError> {
    const ENDPOINT: &str = "identity provider token endpoint";
    let object = json_object(ENDPOINT, endpoint, body)?;
    if let Some(issued) = object.get("issued_token_type") {
        let text = issued.as_str().unwrap_or("");
        if text != ID_JAG {
            return Err(malformed(
                ENDPOINT,
                endpoint,
                &format!(
                    "\"issued_token_type\" is \"{}\", not an ID-JAG",
                    quote(text)
                ),
            ));
        }
    }
    match object.get("access_token").and_then(Value::as_str) {
        Some(token) if is_token_text(token) => Ok(Secret::new(token)),
        _ => Err(malformed(
            ENDPOINT,
            endpoint,
            "no \"access_token\" string holding the ID-JAG",
        )),
    }
}

/// Visible ASCII, no spaces: the token goes into a header as it is.
fn is_token_text(token: &str) -> bool {
    !token.is_empty() && token.bytes().all(|b| b.is_ascii_graphic())
}

/// `expires_in` as whole seconds: a number (fractions dropped, negatives read as 0) or a
/// numeric string.
fn seconds(value: &Value) -> Option<u64> {
    match value {
        Value::Number(n) => n
            .as_u64()
            .or_else(|| n.as_f64().map(|f| if f > 0.0 { f as u64 } else { 0 })),
        Value::String(s) => s.trim().parse::<u64>().ok(),
        _ => None,
    }
}

/// An access token for one MCP server, ready to present: a Bearer token, or a DPoP-bound one
/// that keeps the key it is bound to.
///
/// `Debug` shows everything but the token and the key.
#[derive(Clone, PartialEq, Eq)]
pub struct AccessToken {
    token: Secret,
    expires_at: Option<Instant>,
    scope: Option<String>,
    issuer: String,
    resource: String,
    /// The key the token is bound to (RFC 9449), for a DPoP token.
    dpop_key: Option<PrivateKey>,
}

impl AccessToken {
    /// A Bearer token kept from an earlier process (a [`CredentialStore`](crate::CredentialStore)
    /// that outlives it), to present before the server asks: `issuer` issued `tokens` for
    /// `resource`. A token that was DPoP-bound cannot be presented this way (its key did not
    /// outlive its flow): the server refuses it, and the refusal starts an authorization.
    pub fn from_store(tokens: &TokenSet, issuer: &str, resource: &str) -> Self {
        Self::new(tokens, issuer, resource, None)
    }

    pub(crate) fn new(
        tokens: &TokenSet,
        issuer: &str,
        resource: &str,
        dpop_key: Option<PrivateKey>,
    ) -> Self {
        Self {
            token: tokens.access_token.clone(),
            expires_at: tokens.expires_at,
            scope: tokens.scope.clone(),
            issuer: issuer.to_owned(),
            resource: resource.to_owned(),
            dpop_key,
        }
    }

    /// The `Authorization` header value: `Bearer <token>` (or `DPoP <token>` for a DPoP-bound
    /// token, which also needs its proof: use
    /// [`authorization_headers`](Self::authorization_headers)), marked sensitive.
    pub fn authorization_header(&self) -> HeaderValue {
        let scheme = if self.dpop_key.is_some() {
            "DPoP"
        } else {
            "Bearer"
        };
        // `read_token_answer` admits only visible ASCII, which a header value always takes.
        let mut header = HeaderValue::try_from(format!("{scheme} {}", self.token.expose()))
            .unwrap_or_else(|_| HeaderValue::from_static("Bearer"));
        header.set_sensitive(true);
        header
    }

    /// The headers that present the token on one request to the MCP server, every value marked
    /// sensitive:
    ///
    /// * a Bearer token: `Authorization: Bearer <token>` (the other inputs are unused);
    /// * a DPoP-bound token (RFC 9449 7): `Authorization: DPoP <token>` and `DPoP: <proof>`, a
    ///   fresh proof for this request: `htm` the method, `htu` the URL without query and
    ///   fragment, `iat` from `wall`, `jti` from `entropy`, `ath` the token's SHA-256, and
    ///   `nonce` when the server asked for one (`rs_nonce`, from [`Challenge::dpop_nonce`]
    ///   after a [`ChallengeKind::UseDpopNonce`]; keep sending the last one).
    ///
    /// Call it for every request, retries included: a proof is never reused. Fails only for a
    /// DPoP token when `url` is not an absolute URL ([`AuthError::InvalidConfig`]; the URL is
    /// not quoted, it may hold credentials).
    ///
    /// [`Challenge::dpop_nonce`]: crate::Challenge::dpop_nonce
    /// [`ChallengeKind::UseDpopNonce`]: crate::ChallengeKind::UseDpopNonce
    pub fn authorization_headers(
        &self,
        method: &Method,
        url: &str,
        rs_nonce: Option<&str>,
        wall: SystemTime,
        entropy: &mut dyn Entropy,
    ) -> Result<Vec<(HeaderName, HeaderValue)>, AuthError> {
        let Some(key) = &self.dpop_key else {
            return Ok(vec![(AUTHORIZATION, self.authorization_header())]);
        };
        let url = Url::parse(url).map_err(|_| AuthError::InvalidConfig {
            what: "request URL for a DPoP proof",
            detail: "not an absolute URL".into(),
        })?;
        let proof = dpop_proof(
            key,
            &ProofTarget {
                method,
                url: &url,
                access_token: Some(&self.token),
                nonce: rs_nonce,
            },
            wall,
            entropy,
        );
        Ok(vec![
            (AUTHORIZATION, self.authorization_header()),
            (DPOP, sensitive(&proof)),
        ])
    }

    /// Whether the token is DPoP-bound (presented with
    /// [`authorization_headers`](Self::authorization_headers) and a proof per request).
    pub fn is_dpop_bound(&self) -> bool {
        self.dpop_key.is_some()
    }

    /// The token itself.
    pub fn secret(&self) -> &Secret {
        &self.token
    }

    /// When the token expires, if the server said.
    pub fn expires_at(&self) -> Option<Instant> {
        self.expires_at
    }

    /// Whether the token has expired at `now` (never, when the server gave no lifetime).
    pub fn is_expired(&self, now: Instant) -> bool {
        self.expires_at.is_some_and(|at| now >= at)
    }

    /// The scope granted (the token answer's, else the one asked for).
    pub fn scope(&self) -> Option<&str> {
        self.scope.as_deref()
    }

    /// The authorization server that issued it.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The resource it was issued for (the `resource` parameter sent).
    pub fn resource(&self) -> &str {
        &self.resource
    }
}

impl std::fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccessToken")
            .field("token", &"redacted")
            .field(
                "token_type",
                &if self.dpop_key.is_some() {
                    "DPoP"
                } else {
                    "Bearer"
                },
            )
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .field("issuer", &self.issuer)
            .field("resource", &self.resource)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::ClientSource;

    fn client(method: TokenEndpointAuth, secret: Option<&str>) -> ClientCredentials {
        ClientCredentials {
            client_id: "my client:1".into(),
            client_secret: secret.map(Secret::new),
            auth_method: method,
            redirect_uri: "http://localhost/cb".into(),
            source: ClientSource::Registered,
        }
    }

    fn form(request: &Request<Vec<u8>>) -> Vec<(String, String)> {
        url::form_urlencoded::parse(request.body())
            .into_owned()
            .collect()
    }

    fn endpoint() -> Url {
        Url::parse("https://as.example/token").unwrap()
    }

    #[test]
    fn a_code_exchange_carries_code_verifier_redirect_and_resource() {
        let code = Secret::new("the-code");
        let verifier = Secret::new("the-verifier");
        let request = token_request(
            &endpoint(),
            &client(TokenEndpointAuth::None, None),
            &GrantForm::AuthorizationCode {
                code: &code,
                redirect_uri: "http://localhost/cb",
                verifier: &verifier,
            },
            "https://mcp.example/mcp",
            &Proofs::default(),
        )
        .unwrap();
        assert_eq!(request.method(), Method::POST);
        assert_eq!(
            request.headers()[CONTENT_TYPE],
            "application/x-www-form-urlencoded"
        );
        assert!(request.headers().get(AUTHORIZATION).is_none());
        let pairs = form(&request);
        let expected: Vec<(String, String)> = [
            ("grant_type", "authorization_code"),
            ("code", "the-code"),
            ("redirect_uri", "http://localhost/cb"),
            ("code_verifier", "the-verifier"),
            ("resource", "https://mcp.example/mcp"),
            ("client_id", "my client:1"),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        assert_eq!(pairs, expected);
    }

    #[test]
    fn client_secret_basic_form_urlencodes_id_and_secret_first() {
        let refresh = Secret::new("rt");
        let request = token_request(
            &endpoint(),
            &client(TokenEndpointAuth::ClientSecretBasic, Some("p@ss word+/")),
            &GrantForm::RefreshToken {
                refresh_token: &refresh,
            },
            "r",
            &Proofs::default(),
        )
        .unwrap();
        let header = &request.headers()[AUTHORIZATION];
        assert!(header.is_sensitive());
        let encoded = header.to_str().unwrap().strip_prefix("Basic ").unwrap();
        let decoded = String::from_utf8(STANDARD.decode(encoded).unwrap()).unwrap();
        assert_eq!(decoded, "my+client%3A1:p%40ss+word%2B%2F");
        // The id in the form too (the Python SDK's server reads it there), never the secret.
        let pairs = form(&request);
        assert!(pairs.contains(&("client_id".into(), "my client:1".into())));
        assert!(pairs.iter().all(|(k, _)| k != "client_secret"));
        assert!(pairs.contains(&("grant_type".into(), "refresh_token".into())));
        assert!(pairs.contains(&("refresh_token".into(), "rt".into())));
    }

    /// The form of `grant` sent by a client of `method` (with the secret `s3cret`, or the
    /// assertion `client.assertion.jwt` for `private_key_jwt`), and its `Authorization` header.
    fn sent(method: TokenEndpointAuth, grant: &GrantForm<'_>) -> (Vec<String>, Option<String>) {
        let secret = matches!(
            method,
            TokenEndpointAuth::ClientSecretBasic | TokenEndpointAuth::ClientSecretPost
        )
        .then_some("s3cret");
        let assertion = Secret::new("client.assertion.jwt");
        let proofs = Proofs {
            client_assertion: Some(&assertion),
            dpop: None,
        };
        let request = token_request(
            &endpoint(),
            &client(method, secret),
            grant,
            "https://mcp.example/mcp",
            &proofs,
        )
        .unwrap();
        let pairs = form(&request)
            .into_iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let header = request.headers().get(AUTHORIZATION).map(|value| {
            assert!(value.is_sensitive());
            value.to_str().unwrap().to_owned()
        });
        (pairs, header)
    }

    #[test]
    fn every_grant_names_its_client_in_the_form_with_every_authentication_method() {
        let code = Secret::new("the-code");
        let verifier = Secret::new("the-verifier");
        let refresh = Secret::new("the-refresh");
        let grants: [(GrantForm<'_>, &[&str]); 3] = [
            (
                GrantForm::AuthorizationCode {
                    code: &code,
                    redirect_uri: "http://localhost/cb",
                    verifier: &verifier,
                },
                &[
                    "grant_type=authorization_code",
                    "code=the-code",
                    "redirect_uri=http://localhost/cb",
                    "code_verifier=the-verifier",
                    "resource=https://mcp.example/mcp",
                ],
            ),
            (
                GrantForm::RefreshToken {
                    refresh_token: &refresh,
                },
                &[
                    "grant_type=refresh_token",
                    "refresh_token=the-refresh",
                    "resource=https://mcp.example/mcp",
                ],
            ),
            (
                GrantForm::ClientCredentials { scope: Some("a b") },
                &[
                    "grant_type=client_credentials",
                    "resource=https://mcp.example/mcp",
                    "scope=a b",
                ],
            ),
        ];
        // Basic over the form-urlencoded `my client:1` and `s3cret`.
        let basic = format!("Basic {}", STANDARD.encode("my+client%3A1:s3cret"));
        let methods: [(TokenEndpointAuth, &[&str], Option<&str>); 4] = [
            (TokenEndpointAuth::None, &["client_id=my client:1"], None),
            (
                TokenEndpointAuth::ClientSecretBasic,
                &["client_id=my client:1"],
                Some(basic.as_str()),
            ),
            (
                TokenEndpointAuth::ClientSecretPost,
                &["client_id=my client:1", "client_secret=s3cret"],
                None,
            ),
            (
                TokenEndpointAuth::PrivateKeyJwt,
                &[
                    "client_id=my client:1",
                    "client_assertion_type=urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                    "client_assertion=client.assertion.jwt",
                ],
                None,
            ),
        ];
        for (grant, grant_pairs) in &grants {
            for (method, auth_pairs, header) in &methods {
                let expected: Vec<&str> = grant_pairs
                    .iter()
                    .chain(auth_pairs.iter())
                    .copied()
                    .collect();
                let (pairs, sent_header) = sent(*method, grant);
                let label = format!("{:?} with {}", grant.grant_type(), method.as_str());
                assert_eq!(pairs, expected, "{label}");
                assert_eq!(sent_header.as_deref(), *header, "{label}");
            }
        }
    }

    #[test]
    fn token_answers_are_read_with_their_lifetime() {
        let now = Instant::now();
        let tokens = read_token_answer(
            &endpoint(),
            br#"{"access_token":"at","token_type":"bearer","expires_in":3600,"refresh_token":"rt","scope":"a b"}"#,
            now,
            "c",
            Some("a"),
            false,
        )
        .unwrap()
        .0;
        assert_eq!(tokens.access_token.expose(), "at");
        assert_eq!(tokens.expires_at, Some(now + Duration::from_secs(3600)));
        assert_eq!(tokens.refresh_token.unwrap().expose(), "rt");
        assert_eq!(tokens.scope.as_deref(), Some("a b"));
        let tokens = read_token_answer(
            &endpoint(),
            br#"{"access_token":"at","token_type":"Bearer","expires_in":"60"}"#,
            now,
            "c",
            Some("a"),
            false,
        )
        .unwrap()
        .0;
        assert_eq!(tokens.expires_at, Some(now + Duration::from_secs(60)));
        assert_eq!(tokens.scope.as_deref(), Some("a"));
        assert_eq!(tokens.refresh_token, None);
    }

    #[test]
    fn unusable_token_answers_are_typed_errors() {
        let now = Instant::now();
        assert!(matches!(
            read_token_answer(
                &endpoint(),
                br#"{"access_token":"at","token_type":"DPoP"}"#,
                now,
                "c",
                None,
                false
            ),
            Err(AuthError::UnsupportedTokenType { .. })
        ));
        for bad in [
            &br#"{"token_type":"Bearer"}"#[..],
            br#"{"access_token":"a b","token_type":"Bearer"}"#,
            br#"{"access_token":"","token_type":"Bearer"}"#,
            br#"{"access_token":7}"#,
            b"[]",
            b"",
        ] {
            assert!(matches!(
                read_token_answer(&endpoint(), bad, now, "c", None, false),
                Err(AuthError::Malformed { .. })
            ));
        }
    }

    #[test]
    fn a_dpop_token_type_is_read_only_after_a_proof() {
        let body = br#"{"access_token":"at","token_type":"DPoP","expires_in":60}"#;
        let now = Instant::now();
        let (_, token_type) = read_token_answer(&endpoint(), body, now, "c", None, true).unwrap();
        assert_eq!(token_type, TokenType::Dpop);
        assert!(matches!(
            read_token_answer(&endpoint(), body, now, "c", None, false),
            Err(AuthError::UnsupportedTokenType { .. })
        ));
        let bearer = br#"{"access_token":"at","token_type":"Bearer"}"#;
        let (_, token_type) = read_token_answer(&endpoint(), bearer, now, "c", None, true).unwrap();
        assert_eq!(token_type, TokenType::Bearer);
    }

    #[test]
    fn grants_without_a_person_have_their_forms() {
        let assertion = Secret::new("eyJ.assertion.sig");
        let request = token_request(
            &endpoint(),
            &client(TokenEndpointAuth::PrivateKeyJwt, None),
            &GrantForm::ClientCredentials { scope: Some("a b") },
            "r",
            &Proofs {
                client_assertion: Some(&assertion),
                dpop: Some("proof.jwt.sig"),
            },
        )
        .unwrap();
        let pairs = form(&request);
        for pair in [
            ("grant_type", "client_credentials"),
            ("scope", "a b"),
            ("resource", "r"),
            (
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            ),
            ("client_assertion", "eyJ.assertion.sig"),
        ] {
            assert!(pairs.contains(&(pair.0.into(), pair.1.into())), "{pair:?}");
        }
        assert_eq!(request.headers()[DPOP], "proof.jwt.sig");
        assert!(request.headers()[DPOP].is_sensitive());
        let id_token = Secret::new("id.token.sig");
        let request = token_request(
            &endpoint(),
            &client(TokenEndpointAuth::None, None),
            &GrantForm::IdJagExchange {
                id_token: &id_token,
                audience: "https://as.example",
                scope: None,
            },
            "https://mcp.example/mcp",
            &Proofs::default(),
        )
        .unwrap();
        let pairs = form(&request);
        assert_eq!(
            pairs
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>(),
            [
                "grant_type=urn:ietf:params:oauth:grant-type:token-exchange",
                "requested_token_type=urn:ietf:params:oauth:token-type:id-jag",
                "audience=https://as.example",
                "subject_token=id.token.sig",
                "subject_token_type=urn:ietf:params:oauth:token-type:id_token",
                "resource=https://mcp.example/mcp",
                "client_id=my client:1",
            ]
        );
        assert!(request.headers().get(DPOP).is_none());
    }

    #[test]
    fn an_id_jag_is_read_from_the_exchange_answer() {
        let jag = read_id_jag(
            &endpoint(),
            br#"{"access_token":"jag","issued_token_type":"urn:ietf:params:oauth:token-type:id-jag","token_type":"N_A"}"#,
        )
        .unwrap();
        assert_eq!(jag.expose(), "jag");
        for bad in [
            &br#"{"access_token":"jag","issued_token_type":"urn:ietf:params:oauth:token-type:access_token"}"#[..],
            br#"{"issued_token_type":"urn:ietf:params:oauth:token-type:id-jag"}"#,
            b"[]",
        ] {
            let error = read_id_jag(&endpoint(), bad).unwrap_err();
            assert!(matches!(error, AuthError::Malformed { .. }));
            assert!(!error.to_string().contains("\"jag\""));
        }
    }

    fn tokens(access_token: &str) -> TokenSet {
        TokenSet {
            access_token: Secret::new(access_token),
            expires_at: None,
            refresh_token: None,
            scope: None,
            client_id: "c".into(),
        }
    }

    #[test]
    fn authorization_headers_of_a_bearer_token_are_the_bearer_header() {
        let token = AccessToken::new(&tokens("tok-1"), "https://as", "https://r", None);
        let headers = token
            .authorization_headers(
                &Method::GET,
                "not even a url",
                Some("n"),
                SystemTime::UNIX_EPOCH,
                &mut crate::jwt::tests::Counting(0),
            )
            .unwrap();
        assert_eq!(headers.len(), 1);
        assert_eq!(headers[0].0, AUTHORIZATION);
        assert_eq!(headers[0].1, "Bearer tok-1");
        assert!(headers[0].1.is_sensitive());
    }

    #[test]
    fn authorization_headers_of_a_dpop_token_carry_a_fresh_bound_proof() {
        let key = PrivateKey::generate(&mut crate::jwt::tests::Counting(0)).unwrap();
        let token = AccessToken::new(
            &tokens("tok-2"),
            "https://as",
            "https://r",
            Some(key.clone()),
        );
        assert!(token.is_dpop_bound());
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let mut entropy = crate::jwt::tests::Counting(50);
        let mut jtis = Vec::new();
        for nonce in [None, Some("rs-nonce")] {
            let headers = token
                .authorization_headers(
                    &Method::POST,
                    "https://r.example/mcp?session=1#x",
                    nonce,
                    wall,
                    &mut entropy,
                )
                .unwrap();
            assert_eq!(headers.len(), 2);
            assert_eq!(
                headers[0],
                (AUTHORIZATION, HeaderValue::from_static("DPoP tok-2"))
            );
            assert_eq!(headers[1].0, DPOP);
            assert!(headers.iter().all(|(_, v)| v.is_sensitive()));
            let (header, claims) = crate::jwt::tests::verify(headers[1].1.to_str().unwrap(), None);
            assert_eq!(header["jwk"], key.public_jwk());
            assert_eq!(claims["htm"], "POST");
            assert_eq!(claims["htu"], "https://r.example/mcp");
            assert_eq!(claims["iat"], 1_800_000_000u64);
            assert_eq!(claims["ath"], crate::jwt::ath(&Secret::new("tok-2")));
            assert_eq!(claims.get("nonce").and_then(Value::as_str), nonce);
            jtis.push(claims["jti"].clone());
        }
        assert_ne!(jtis[0], jtis[1]);
        let error = token
            .authorization_headers(
                &Method::POST,
                "/relative?token=tok-2",
                None,
                wall,
                &mut entropy,
            )
            .unwrap_err();
        assert!(matches!(error, AuthError::InvalidConfig { .. }));
        assert!(!format!("{error} {error:?}").contains("tok-2"));
        let text = format!("{token:?}");
        assert!(
            text.contains("\"DPoP\"") && !text.contains("tok-2"),
            "{text}"
        );
    }

    #[test]
    fn an_access_token_shows_nothing_in_debug_and_a_sensitive_header() {
        let tokens = TokenSet {
            access_token: Secret::new("tok-123"),
            expires_at: None,
            refresh_token: None,
            scope: Some("a".into()),
            client_id: "c".into(),
        };
        let token = AccessToken::new(&tokens, "https://as.example", "https://r.example", None);
        assert_eq!(token.authorization_header(), "Bearer tok-123");
        assert!(token.authorization_header().is_sensitive());
        let text = format!("{token:?}");
        assert!(!text.contains("tok-123"), "{text}");
        assert!(text.contains("https://as.example"));
    }
}
