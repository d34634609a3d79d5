//! [`ClientConfig`]: who this client is before it talks to any authorization server.
//!
//! The redirect URI, the client's name, optional pre-registered credentials (bound to their
//! issuer), an optional Client ID Metadata Document URL and an optional scope; how tokens are
//! obtained ([`Grant`]: the authorization code flow with a person, or a grant without one) and
//! whether they are DPoP-bound ([`Dpop`]). Also the small vocabularies the flow speaks
//! ([`GrantType`], [`TokenEndpointAuth`]) and the URL rule every endpoint must pass
//! ([`check_endpoint`]). This module validates; it must never decide which identity a flow uses
//! (that is the flow's job, once it knows the authorization server), and its `Debug` output
//! never shows a secret, a key or an assertion.

use url::{Host, Url};

use crate::error::{AuthError, quote};
use crate::jwt::PrivateKey;
use crate::secret::Secret;

/// An OAuth grant type, by its wire name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GrantType {
    /// `authorization_code` (with PKCE).
    AuthorizationCode,
    /// `refresh_token`.
    RefreshToken,
    /// `client_credentials` (RFC 6749 4.4).
    ClientCredentials,
    /// `urn:ietf:params:oauth:grant-type:jwt-bearer` (RFC 7523 2.1).
    JwtBearer,
    /// `urn:ietf:params:oauth:grant-type:token-exchange` (RFC 8693).
    TokenExchange,
}

impl GrantType {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::AuthorizationCode => "authorization_code",
            Self::RefreshToken => "refresh_token",
            Self::ClientCredentials => "client_credentials",
            Self::JwtBearer => "urn:ietf:params:oauth:grant-type:jwt-bearer",
            Self::TokenExchange => "urn:ietf:params:oauth:grant-type:token-exchange",
        }
    }
}

/// How the flow obtains a token: the authorization code flow with a person at a browser (the
/// default), or a grant without one, straight after discovery. Secrets, keys and assertions in
/// it never show in `Debug`.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Grant(pub(crate) GrantKind);

#[derive(Clone, PartialEq, Eq, Default)]
pub(crate) enum GrantKind {
    #[default]
    AuthorizationCode,
    ClientCredentials {
        client_id: String,
        auth: MachineAuth,
    },
    JwtBearer {
        client_id: String,
        assertion: Secret,
    },
    EnterpriseManaged(Box<EnterpriseManaged>),
}

/// How a client without a person authenticates at the token endpoint.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum MachineAuth {
    SecretBasic(Secret),
    PrivateKeyJwt(PrivateKey),
}

/// Enterprise-managed authorization (SEP-990): the IdP's ID token is exchanged at the IdP for
/// an ID-JAG, which the client presents at the authorization server.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct EnterpriseManaged {
    pub(crate) client_id: String,
    pub(crate) client_secret: Secret,
    pub(crate) idp_token_endpoint: Url,
    pub(crate) idp_client_id: String,
    pub(crate) id_token: Secret,
}

impl Grant {
    /// The authorization code flow with PKCE: a person approves at a browser (the default).
    pub fn authorization_code() -> Self {
        Self(GrantKind::AuthorizationCode)
    }

    /// `client_credentials` authenticated with `client_secret_basic` (scenario
    /// `auth/client-credentials-basic`).
    pub fn client_credentials(client_id: impl Into<String>, secret: impl Into<Secret>) -> Self {
        Self(GrantKind::ClientCredentials {
            client_id: client_id.into(),
            auth: MachineAuth::SecretBasic(secret.into()),
        })
    }

    /// `client_credentials` authenticated with `private_key_jwt` (RFC 7523 2.2; scenario
    /// `auth/client-credentials-jwt`): each token request carries a fresh ES256 assertion
    /// whose `iss` and `sub` are `client_id` and whose `aud` is the authorization server's
    /// issuer.
    pub fn client_credentials_jwt(client_id: impl Into<String>, key: PrivateKey) -> Self {
        Self(GrantKind::ClientCredentials {
            client_id: client_id.into(),
            auth: MachineAuth::PrivateKeyJwt(key),
        })
    }

    /// The `jwt-bearer` grant (RFC 7523 2.1) with an assertion issued elsewhere, e.g. a
    /// workload identity token (scenario `auth/wif-jwt-bearer`); `client_id` goes in the form
    /// (auth method `none`). A refused assertion ends the flow: it is never retried, and no
    /// other grant is tried.
    pub fn jwt_bearer(client_id: impl Into<String>, assertion: impl Into<Secret>) -> Self {
        Self(GrantKind::JwtBearer {
            client_id: client_id.into(),
            assertion: assertion.into(),
        })
    }

    /// Enterprise-managed authorization (SEP-990; scenario
    /// `auth/enterprise-managed-authorization`): the IdP's `id_token` is exchanged (RFC 8693)
    /// at `idp_token_endpoint` as `idp_client_id` for an ID-JAG addressed to the authorization
    /// server, which then issues the token for it (`jwt-bearer`, authenticated as `client_id`
    /// with `client_secret_basic`). The IdP endpoint must be HTTPS (or loopback HTTP).
    pub fn enterprise_managed(
        client_id: impl Into<String>,
        client_secret: impl Into<Secret>,
        idp_token_endpoint: &str,
        idp_client_id: impl Into<String>,
        id_token: impl Into<Secret>,
    ) -> Result<Self, AuthError> {
        let idp_token_endpoint =
            check_endpoint("identity provider token endpoint", idp_token_endpoint).map_err(
                |error| AuthError::InvalidConfig {
                    what: "identity provider token endpoint",
                    detail: error.to_string(),
                },
            )?;
        Ok(Self(GrantKind::EnterpriseManaged(Box::new(
            EnterpriseManaged {
                client_id: client_id.into(),
                client_secret: client_secret.into(),
                idp_token_endpoint,
                idp_client_id: idp_client_id.into(),
                id_token: id_token.into(),
            },
        ))))
    }

    /// Whether the grant needs a person at a browser (only the authorization code flow does).
    pub fn needs_person(&self) -> bool {
        matches!(self.0, GrantKind::AuthorizationCode)
    }

    /// The grant type the flow sends to the authorization server.
    pub fn grant_type(&self) -> GrantType {
        match self.0 {
            GrantKind::AuthorizationCode => GrantType::AuthorizationCode,
            GrantKind::ClientCredentials { .. } => GrantType::ClientCredentials,
            GrantKind::JwtBearer { .. } | GrantKind::EnterpriseManaged(_) => GrantType::JwtBearer,
        }
    }
}

impl std::fmt::Debug for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            GrantKind::AuthorizationCode => f.write_str("Grant::AuthorizationCode"),
            GrantKind::ClientCredentials { client_id, auth } => f
                .debug_struct("Grant::ClientCredentials")
                .field("client_id", client_id)
                .field(
                    "auth",
                    &match auth {
                        MachineAuth::SecretBasic(_) => "client_secret_basic",
                        MachineAuth::PrivateKeyJwt(_) => "private_key_jwt",
                    },
                )
                .finish_non_exhaustive(),
            GrantKind::JwtBearer { client_id, .. } => f
                .debug_struct("Grant::JwtBearer")
                .field("client_id", client_id)
                .finish_non_exhaustive(),
            GrantKind::EnterpriseManaged(enterprise) => f
                .debug_struct("Grant::EnterpriseManaged")
                .field("client_id", &enterprise.client_id)
                .field(
                    "idp_token_endpoint",
                    &enterprise.idp_token_endpoint.as_str(),
                )
                .field("idp_client_id", &enterprise.idp_client_id)
                .finish_non_exhaustive(),
        }
    }
}

/// Whether tokens are DPoP-bound (RFC 9449): requested with a proof of a key generated for the
/// flow, and presented with [`AccessToken::authorization_headers`](crate::AccessToken::authorization_headers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Dpop {
    /// Never: Bearer tokens only (the default).
    #[default]
    Off,
    /// When the authorization server lists `ES256` in `dpop_signing_alg_values_supported` (what
    /// the suite's `auth/dpop` scenarios expect). The caller must then present tokens with
    /// `authorization_headers`.
    WhenAdvertised,
    /// Every token request carries a proof, advertised or not.
    Always,
}

/// How the client authenticates at the token endpoint (RFC 7591 2,
/// `token_endpoint_auth_method`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TokenEndpointAuth {
    /// `none`: a public client; `client_id` goes in the form.
    None,
    /// `client_secret_basic`: HTTP Basic with the form-urlencoded id and secret
    /// (RFC 6749 2.3.1).
    ClientSecretBasic,
    /// `client_secret_post`: `client_id` and `client_secret` in the form.
    ClientSecretPost,
    /// `private_key_jwt`: a signed client assertion in the form (RFC 7523 2.2). Only for
    /// [`Grant::client_credentials_jwt`]; never chosen at registration.
    PrivateKeyJwt,
}

impl TokenEndpointAuth {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::ClientSecretBasic => "client_secret_basic",
            Self::ClientSecretPost => "client_secret_post",
            Self::PrivateKeyJwt => "private_key_jwt",
        }
    }

    /// The method a wire name means, if this client speaks it.
    pub fn from_wire(name: &str) -> Option<Self> {
        match name {
            "none" => Some(Self::None),
            "client_secret_basic" => Some(Self::ClientSecretBasic),
            "client_secret_post" => Some(Self::ClientSecretPost),
            _ => None,
        }
    }
}

/// Client credentials issued out of band for one authorization server.
///
/// They are bound to their issuer: offered to no other (an MCP server that names another
/// authorization server ends the flow with
/// [`AuthError::PreRegisteredForOtherIssuer`]).
#[derive(Clone, PartialEq, Eq)]
pub struct PreRegisteredClient {
    pub(crate) issuer: String,
    pub(crate) client_id: String,
    pub(crate) client_secret: Option<Secret>,
    pub(crate) auth_method: Option<TokenEndpointAuth>,
    /// Offered to whichever authorization server the MCP server names (`issuer` is empty).
    pub(crate) any_issuer: bool,
}

impl PreRegisteredClient {
    /// A client id issued out of band for one MCP server whose authorization server is not
    /// known in advance: it is offered to **whichever** authorization server that MCP server
    /// names. Only for a server trusted with the secret (a server that points elsewhere would
    /// receive it); prefer [`new`](Self::new) with the issuer whenever it is known.
    pub fn for_any_issuer(client_id: impl Into<String>) -> Self {
        Self {
            any_issuer: true,
            ..Self::new("", client_id)
        }
    }

    /// A client id issued by `issuer` (compared exactly with the issuer the MCP server names).
    pub fn new(issuer: impl Into<String>, client_id: impl Into<String>) -> Self {
        Self {
            issuer: issuer.into(),
            client_id: client_id.into(),
            client_secret: None,
            auth_method: None,
            any_issuer: false,
        }
    }

    /// The client's secret (a confidential client).
    pub fn with_secret(mut self, secret: impl Into<Secret>) -> Self {
        self.client_secret = Some(secret.into());
        self
    }

    /// How to authenticate at the token endpoint. Without it: `none` without a secret; with
    /// one, `client_secret_basic` unless the server lists only `client_secret_post`.
    pub fn with_auth_method(mut self, method: TokenEndpointAuth) -> Self {
        self.auth_method = Some(method);
        self
    }

    /// The issuer the client belongs to (empty for [`for_any_issuer`](Self::for_any_issuer)).
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The client id.
    pub fn client_id(&self) -> &str {
        &self.client_id
    }
}

impl std::fmt::Debug for PreRegisteredClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreRegisteredClient")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "redacted"),
            )
            .field("auth_method", &self.auth_method)
            .field("any_issuer", &self.any_issuer)
            .finish()
    }
}

/// What the client is, the same for every server it authorizes at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientConfig {
    /// Exactly as configured: registered, sent and compared as this string (empty for a
    /// client without a person).
    pub(crate) redirect_uri: String,
    /// `None` for a client without a person ([`ClientConfig::headless`]).
    pub(crate) redirect_url: Option<Url>,
    pub(crate) client_name: String,
    pub(crate) pre_registered: Option<PreRegisteredClient>,
    /// Exactly as configured: the `client_id` must equal the document's own.
    pub(crate) metadata_document: Option<String>,
    pub(crate) scope: Option<String>,
    pub(crate) grant: Grant,
    pub(crate) dpop: Dpop,
}

impl ClientConfig {
    /// A client whose authorization responses come back to `redirect_uri`: HTTPS, or plain
    /// HTTP on a loopback host (`localhost`, `127.0.0.1`, `[::1]`).
    pub fn new(redirect_uri: &str) -> Result<Self, AuthError> {
        let url = Url::parse(redirect_uri).map_err(|e| AuthError::InvalidConfig {
            what: "redirect URI",
            detail: format!("\"{}\" is not a URL: {e}", quote(redirect_uri)),
        })?;
        if url.fragment().is_some() || !is_secure(&url) {
            return Err(AuthError::InvalidConfig {
                what: "redirect URI",
                detail: format!(
                    "\"{}\" must be HTTPS or loopback HTTP, without a fragment",
                    quote(redirect_uri)
                ),
            });
        }
        Ok(Self {
            redirect_uri: redirect_uri.to_owned(),
            redirect_url: Some(url),
            client_name: "mcp-deadline".to_owned(),
            pre_registered: None,
            metadata_document: None,
            scope: None,
            grant: Grant::default(),
            dpop: Dpop::Off,
        })
    }

    /// A client without a person and without a redirect URI, obtaining tokens by `grant`,
    /// which must be one that needs no person ([`Grant::needs_person`]).
    pub fn headless(grant: Grant) -> Result<Self, AuthError> {
        if grant.needs_person() {
            return Err(AuthError::InvalidConfig {
                what: "grant",
                detail: "the authorization code flow needs a redirect URI (use ClientConfig::new)"
                    .into(),
            });
        }
        Ok(Self {
            redirect_uri: String::new(),
            redirect_url: None,
            client_name: "mcp-deadline".to_owned(),
            pre_registered: None,
            metadata_document: None,
            scope: None,
            grant,
            dpop: Dpop::Off,
        })
    }

    /// How tokens are obtained ([`Grant::authorization_code`] by default). A grant without a
    /// person goes from discovery straight to the token endpoint: no registration, no
    /// [`AuthStep::Authorize`](crate::AuthStep::Authorize), no refresh; its client id comes
    /// from the grant (a pre-registered client or metadata document is not used).
    pub fn with_grant(mut self, grant: Grant) -> Self {
        self.grant = grant;
        self
    }

    /// Whether tokens are DPoP-bound ([`Dpop::Off`] by default).
    pub fn with_dpop(mut self, dpop: Dpop) -> Self {
        self.dpop = dpop;
        self
    }

    /// How tokens are obtained.
    pub fn grant(&self) -> &Grant {
        &self.grant
    }

    /// The name shown to people at the consent screen and sent at registration.
    pub fn with_client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// Credentials issued out of band: used first, at their issuer only.
    pub fn with_pre_registered(mut self, client: PreRegisteredClient) -> Self {
        self.pre_registered = Some(client);
        self
    }

    /// The URL of this client's Client ID Metadata Document, used as its `client_id` at every
    /// authorization server that advertises `client_id_metadata_document_supported`. It must be
    /// HTTPS with a path.
    pub fn with_metadata_document(mut self, url: &str) -> Result<Self, AuthError> {
        let parsed = Url::parse(url).map_err(|e| AuthError::InvalidConfig {
            what: "client metadata document URL",
            detail: format!("\"{}\" is not a URL: {e}", quote(url)),
        })?;
        if parsed.scheme() != "https" || parsed.path() == "/" || parsed.fragment().is_some() {
            return Err(AuthError::InvalidConfig {
                what: "client metadata document URL",
                detail: format!(
                    "\"{}\" must be HTTPS with a path and no fragment",
                    quote(url)
                ),
            });
        }
        self.metadata_document = Some(url.to_owned());
        Ok(self)
    }

    /// The scope to ask for when the challenge names none, in place of the Protected Resource
    /// Metadata's `scopes_supported`. The challenge's scope still wins: the spec makes it
    /// authoritative for the request that met it.
    pub fn with_scope(mut self, scope: impl Into<String>) -> Self {
        self.scope = Some(scope.into());
        self
    }

    /// The redirect URI, exactly as configured (empty for a [`headless`](Self::headless)
    /// client).
    pub fn redirect_uri(&self) -> &str {
        &self.redirect_uri
    }
}

/// HTTPS, or HTTP to a loopback host.
pub(crate) fn is_secure(url: &Url) -> bool {
    match url.scheme() {
        "https" => true,
        "http" => is_loopback(url),
        _ => false,
    }
}

/// Whether the URL's host is this machine: `localhost`, `127.0.0.0/8` or `::1`.
pub(crate) fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Domain(domain)) => domain.eq_ignore_ascii_case("localhost"),
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// An endpoint URL from a server's document: it must parse, be HTTPS (or loopback HTTP) and
/// carry no fragment.
pub(crate) fn check_endpoint(endpoint: &'static str, text: &str) -> Result<Url, AuthError> {
    let url = Url::parse(text).map_err(|e| AuthError::Malformed {
        endpoint,
        url: quote(text),
        detail: format!("not a URL: {e}"),
    })?;
    if !is_secure(&url) || url.fragment().is_some() || url.cannot_be_a_base() {
        return Err(AuthError::InsecureEndpoint {
            endpoint,
            url: quote(text),
        });
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_uris_must_be_https_or_loopback() {
        assert!(ClientConfig::new("http://127.0.0.1:3000/callback").is_ok());
        assert!(ClientConfig::new("http://localhost/cb").is_ok());
        assert!(ClientConfig::new("http://[::1]:9/cb").is_ok());
        assert!(ClientConfig::new("https://app.example/cb").is_ok());
        for bad in [
            "http://app.example/cb",
            "not a url",
            "https://app.example/cb#x",
            "ftp://x/",
        ] {
            assert!(matches!(
                ClientConfig::new(bad),
                Err(AuthError::InvalidConfig { .. })
            ));
        }
    }

    #[test]
    fn metadata_documents_are_https_with_a_path() {
        let config = ClientConfig::new("http://localhost/cb").unwrap();
        assert!(
            config
                .clone()
                .with_metadata_document("https://app.example/client.json")
                .is_ok()
        );
        assert!(
            config
                .clone()
                .with_metadata_document("https://app.example")
                .is_err()
        );
        assert!(
            config
                .with_metadata_document("http://localhost/client.json")
                .is_err()
        );
    }

    #[test]
    fn grants_show_no_secret_in_debug() {
        let key = PrivateKey::from_pkcs8_pem(crate::jwt::tests::TEST_PEM).unwrap();
        let grants = [
            Grant::client_credentials("cc-id", "cc-secret-1"),
            Grant::client_credentials_jwt("jwt-id", key),
            Grant::jwt_bearer("wif-id", "eyJ.wif-assertion.sig"),
            Grant::enterprise_managed(
                "xaa-id",
                "xaa-secret-1",
                "https://idp.example/token",
                "idp-id",
                "eyJ.id-token.sig",
            )
            .unwrap(),
        ];
        for grant in grants {
            let config = ClientConfig::headless(grant).unwrap();
            let text = format!("{config:?}");
            for secret in ["secret-1", "assertion", "id-token", "BEGIN", "MIG"] {
                assert!(!text.contains(secret), "{text}");
            }
            assert!(text.contains("-id"), "{text}");
        }
    }

    #[test]
    fn headless_configs_take_only_grants_without_a_person() {
        assert!(matches!(
            ClientConfig::headless(Grant::authorization_code()),
            Err(AuthError::InvalidConfig { .. })
        ));
        let config = ClientConfig::headless(Grant::jwt_bearer("c", "a")).unwrap();
        assert_eq!(config.redirect_uri(), "");
        assert!(!config.grant().needs_person());
        assert_eq!(config.grant().grant_type(), GrantType::JwtBearer);
        assert!(matches!(
            Grant::enterprise_managed("c", "s", "http://idp.example/token", "i", "t"),
            Err(AuthError::InvalidConfig { .. })
        ));
    }

    #[test]
    fn pre_registered_debug_hides_the_secret() {
        let client = PreRegisteredClient::new("https://as.example", "id-1").with_secret("s3cr3t");
        let text = format!("{client:?}");
        assert!(text.contains("id-1"));
        assert!(!text.contains("s3cr3t"));
    }
}
