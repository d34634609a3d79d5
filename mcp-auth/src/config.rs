//! [`ClientConfig`]: who this client is before it talks to any authorization server.
//!
//! The redirect URI, the client's name, optional pre-registered credentials (bound to their
//! issuer), an optional Client ID Metadata Document URL and an optional scope. Also the small
//! vocabularies the flow speaks ([`GrantType`], [`TokenEndpointAuth`]) and the URL rule every
//! endpoint must pass ([`check_endpoint`]). This module validates; it must never decide which
//! identity a flow uses (that is the flow's job, once it knows the authorization server).

use url::{Host, Url};

use crate::error::{AuthError, quote};
use crate::secret::Secret;

/// An OAuth grant type. Only the authorization code flow and refresh are driven today; the
/// enum leaves room for `client_credentials`, token exchange and `jwt-bearer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GrantType {
    /// `authorization_code` (with PKCE).
    AuthorizationCode,
    /// `refresh_token`.
    RefreshToken,
}

impl GrantType {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::AuthorizationCode => "authorization_code",
            Self::RefreshToken => "refresh_token",
        }
    }
}

/// How the client authenticates at the token endpoint (RFC 7591 2,
/// `token_endpoint_auth_method`). Room is left for `private_key_jwt`.
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
}

impl TokenEndpointAuth {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::ClientSecretBasic => "client_secret_basic",
            Self::ClientSecretPost => "client_secret_post",
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
    /// Exactly as configured: registered, sent and compared as this string.
    pub(crate) redirect_uri: String,
    pub(crate) redirect_url: Url,
    pub(crate) client_name: String,
    pub(crate) pre_registered: Option<PreRegisteredClient>,
    /// Exactly as configured: the `client_id` must equal the document's own.
    pub(crate) metadata_document: Option<String>,
    pub(crate) scope: Option<String>,
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
            redirect_url: url,
            client_name: "mcp-deadline".to_owned(),
            pre_registered: None,
            metadata_document: None,
            scope: None,
        })
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

    /// The redirect URI, exactly as configured.
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
    fn pre_registered_debug_hides_the_secret() {
        let client = PreRegisteredClient::new("https://as.example", "id-1").with_secret("s3cr3t");
        let text = format!("{client:?}");
        assert!(text.contains("id-1"));
        assert!(!text.contains("s3cr3t"));
    }
}
