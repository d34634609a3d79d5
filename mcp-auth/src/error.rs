//! [`AuthError`]: every way an authorization can end without a token, split by fault.
//!
//! Every message is one sentence that names the server, issuer or endpoint concerned and says
//! what went wrong. Text that came from a server (an OAuth `error_description`, a metadata
//! value) is quoted through [`clip`]: control characters folded to a space, at most
//! [`QUOTE_LIMIT`] characters. This module must never hold or print a token, secret,
//! authorization code or PKCE verifier: no variant has a field for one.

/// The most characters of server-sent text quoted in an error message.
pub const QUOTE_LIMIT: usize = 200;

/// Whose fault an [`AuthError`] is, so a caller can act without matching every variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fault {
    /// The caller: configuration, no authorizer, API misuse. Fix the setup.
    Caller,
    /// The MCP server (its metadata or its challenges) broke the rules.
    Server,
    /// The authorization server refused, or broke the rules.
    AuthorizationServer,
    /// The person at the browser declined, or the redirect did not come from this flow.
    User,
}

/// Why an authorization ended without an access token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// The configuration cannot be used (a URL that does not parse, a redirect URI that is
    /// neither HTTPS nor loopback).
    #[error("the authorization configuration is unusable: {what}: {detail}")]
    InvalidConfig {
        /// Which setting.
        what: &'static str,
        /// What is wrong with it.
        detail: String,
    },
    /// An endpoint is plain HTTP on a host that is not loopback (all authorization endpoints
    /// must be HTTPS).
    #[error(
        "refusing {endpoint} \"{url}\": authorization endpoints must use HTTPS (plain HTTP only on loopback)"
    )]
    InsecureEndpoint {
        /// What the URL is for.
        endpoint: &'static str,
        /// The URL, clipped.
        url: String,
    },
    /// The Protected Resource Metadata names a `resource` that is not this MCP server (another
    /// origin, or a path that does not contain the server's).
    #[error(
        "the protected resource metadata for MCP server \"{server}\" is for resource \"{resource}\", not for this server; refusing to authorize for it"
    )]
    ResourceMismatch {
        /// The MCP server URL.
        server: String,
        /// The metadata's `resource`, clipped.
        resource: String,
    },
    /// The Protected Resource Metadata lists no authorization server.
    #[error(
        "the protected resource metadata at \"{metadata_url}\" for MCP server \"{server}\" names no authorization server"
    )]
    NoAuthorizationServer {
        /// The MCP server URL.
        server: String,
        /// Where the metadata came from.
        metadata_url: String,
    },
    /// No authorization server metadata was found at any well-known location of the issuer.
    #[error("no authorization server metadata for issuer \"{issuer}\" at any of: {tried}")]
    MetadataNotFound {
        /// The issuer.
        issuer: String,
        /// The URLs tried, comma-separated.
        tried: String,
    },
    /// The metadata's `issuer` is not exactly the issuer its well-known URL was built from
    /// (RFC 8414 3.3): the document is not used.
    #[error(
        "the authorization server metadata at \"{metadata_url}\" claims issuer \"{found}\", not \"{expected}\"; it is not used"
    )]
    IssuerMismatch {
        /// Where the document came from.
        metadata_url: String,
        /// The issuer the URL was built from.
        expected: String,
        /// The document's `issuer`, clipped.
        found: String,
    },
    /// The metadata does not list `S256` in `code_challenge_methods_supported`: PKCE cannot be
    /// relied on, so the flow does not start.
    #[error(
        "authorization server \"{issuer}\" does not advertise PKCE with S256 (code_challenge_methods_supported); refusing to authorize without it"
    )]
    PkceUnsupported {
        /// The issuer.
        issuer: String,
    },
    /// Pre-registered credentials are configured for another authorization server than the
    /// one the MCP server now names; they are not offered to it.
    #[error(
        "the pre-registered client is for issuer \"{configured}\", but MCP server \"{server}\" names issuer \"{issuer}\"; the credentials are not offered there"
    )]
    PreRegisteredForOtherIssuer {
        /// The MCP server URL.
        server: String,
        /// The issuer the pre-registered client belongs to.
        configured: String,
        /// The issuer the server names.
        issuer: String,
    },
    /// No way to obtain a client id: nothing pre-registered, no usable metadata document URL,
    /// and no registration endpoint.
    #[error(
        "no client identity for authorization server \"{issuer}\": no pre-registered client, no client metadata document it accepts, and no registration endpoint"
    )]
    NoClientIdentity {
        /// The issuer.
        issuer: String,
    },
    /// Dynamic Client Registration was refused.
    #[error(
        "client registration at \"{endpoint}\" failed with HTTP status {status}{}",
        oauth_detail(error, description)
    )]
    RegistrationFailed {
        /// The registration endpoint.
        endpoint: String,
        /// The HTTP status.
        status: u16,
        /// The OAuth `error` code, clipped.
        error: Option<String>,
        /// The `error_description`, clipped.
        description: Option<String>,
    },
    /// The token endpoint refused the request.
    #[error(
        "the token endpoint \"{endpoint}\" refused the request with HTTP status {status}{}",
        oauth_detail(error, description)
    )]
    TokenRejected {
        /// The token endpoint.
        endpoint: String,
        /// The HTTP status.
        status: u16,
        /// The OAuth `error` code, clipped.
        error: Option<String>,
        /// The `error_description`, clipped.
        description: Option<String>,
    },
    /// The token endpoint issued a token type this client cannot present (anything but Bearer,
    /// or DPoP to a request that carried no proof).
    #[error(
        "the token endpoint \"{endpoint}\" issued a \"{token_type}\" token; this client presents Bearer tokens, and DPoP tokens only when it asked for one with a proof"
    )]
    UnsupportedTokenType {
        /// The token endpoint.
        endpoint: String,
        /// The `token_type`, clipped.
        token_type: String,
    },
    /// The flow needs a person at a browser, and the caller has no authorizer.
    #[error(
        "MCP server \"{server}\" needs authorization at \"{issuer}\" by a person in a browser, and no authorizer is configured"
    )]
    AuthorizationRequired {
        /// The MCP server URL.
        server: String,
        /// The issuer.
        issuer: String,
    },
    /// The redirect's `state` is not the one this flow sent: the answer is not to this request.
    #[error(
        "the authorization response from \"{issuer}\" carries a state that this flow did not send; it is ignored"
    )]
    StateMismatch {
        /// The issuer.
        issuer: String,
    },
    /// The redirect's `iss` (RFC 9207) is not exactly the recorded issuer: a mix-up attack or a
    /// misconfigured server. The code is not sent anywhere.
    #[error(
        "the authorization response names issuer \"{found}\", not \"{issuer}\" (RFC 9207); the code is not used"
    )]
    IssMismatch {
        /// The recorded issuer.
        issuer: String,
        /// The response's `iss`, clipped.
        found: String,
    },
    /// The server advertises `authorization_response_iss_parameter_supported` and the
    /// redirect has no `iss`.
    #[error(
        "authorization server \"{issuer}\" advertises the iss parameter but its response has none (RFC 9207); the code is not used"
    )]
    IssMissing {
        /// The issuer.
        issuer: String,
    },
    /// The authorization server answered the authorization request with an error (the person
    /// declined, or the request was refused).
    #[error("authorization at \"{issuer}\" ended with error \"{error}\"{}", description.as_deref().map(|d| format!(": {d}")).unwrap_or_default())]
    AuthorizationDenied {
        /// The issuer.
        issuer: String,
        /// The OAuth `error` code, clipped.
        error: String,
        /// The `error_description`, clipped.
        description: Option<String>,
    },
    /// The server still refuses for missing scopes after the most authorizations one operation
    /// may make.
    #[error(
        "MCP server \"{server}\" still asks for more scope (\"{scope}\") after {attempts} authorizations in this operation; giving up"
    )]
    ScopeStepUpExhausted {
        /// The MCP server URL.
        server: String,
        /// Authorizations made in the operation.
        attempts: u32,
        /// The scope last challenged, clipped.
        scope: String,
    },
    /// The server still answers 401 to fresh tokens after the most authorizations one
    /// operation may make.
    #[error("MCP server \"{server}\" refused {attempts} fresh tokens in this operation; giving up")]
    TokenNotAccepted {
        /// The MCP server URL.
        server: String,
        /// Authorizations made in the operation.
        attempts: u32,
    },
    /// An endpoint answered with a redirect. Redirects are never followed.
    #[error(
        "{endpoint} \"{url}\" answered with redirect status {status}; redirects are not followed"
    )]
    Redirected {
        /// What the endpoint is for.
        endpoint: &'static str,
        /// The URL asked.
        url: String,
        /// The status.
        status: u16,
    },
    /// An endpoint answered with a status this step cannot use.
    #[error("{endpoint} \"{url}\" answered with HTTP status {status}")]
    UnexpectedStatus {
        /// What the endpoint is for.
        endpoint: &'static str,
        /// The URL asked.
        url: String,
        /// The status.
        status: u16,
    },
    /// An answer (or the redirect) could not be read as what it should be.
    #[error("{endpoint} \"{url}\" sent something unusable: {detail}")]
    Malformed {
        /// What the endpoint is for.
        endpoint: &'static str,
        /// The URL asked (for the redirect: the redirect URI configured).
        url: String,
        /// What was wrong, with server text clipped.
        detail: String,
    },
    /// The flow was driven out of order (an answer fed when none was owed, a redirect before
    /// `Authorize`).
    #[error("the authorization flow was driven out of order: {detail}")]
    Misuse {
        /// What happened.
        detail: &'static str,
    },
}

fn oauth_detail(error: &Option<String>, description: &Option<String>) -> String {
    match (error, description) {
        (Some(e), Some(d)) => format!(": {e}: {d}"),
        (Some(e), None) => format!(": {e}"),
        (None, Some(d)) => format!(": {d}"),
        (None, None) => String::new(),
    }
}

impl AuthError {
    /// Whose fault this is.
    pub fn fault(&self) -> Fault {
        match self {
            Self::InvalidConfig { .. }
            | Self::AuthorizationRequired { .. }
            | Self::PreRegisteredForOtherIssuer { .. }
            | Self::Misuse { .. } => Fault::Caller,
            Self::ResourceMismatch { .. }
            | Self::NoAuthorizationServer { .. }
            | Self::ScopeStepUpExhausted { .. }
            | Self::TokenNotAccepted { .. } => Fault::Server,
            Self::StateMismatch { .. } | Self::AuthorizationDenied { .. } => Fault::User,
            Self::InsecureEndpoint { .. }
            | Self::MetadataNotFound { .. }
            | Self::IssuerMismatch { .. }
            | Self::PkceUnsupported { .. }
            | Self::NoClientIdentity { .. }
            | Self::RegistrationFailed { .. }
            | Self::TokenRejected { .. }
            | Self::UnsupportedTokenType { .. }
            | Self::IssMismatch { .. }
            | Self::IssMissing { .. }
            | Self::Redirected { .. }
            | Self::UnexpectedStatus { .. }
            | Self::Malformed { .. } => Fault::AuthorizationServer,
        }
    }
}

/// Server text made safe to quote: control characters and runs of whitespace folded to one
/// space, the ends trimmed, at most `limit` characters (an ellipsis marks a cut, never after a
/// space). The one quoting rule of the workspace (`mcp_auth::clip` is this).
///
/// ```
/// use mcp_auth::clip;
/// assert_eq!(clip("line one\r\n\tline two", 200), "line one line two");
/// assert_eq!(clip("abcdef", 3), "abc…");
/// assert_eq!(clip("ab cd", 3), "ab…");
/// ```
pub fn clip(text: &str, limit: usize) -> String {
    let mut out = String::new();
    let mut chars = 0;
    let mut pending_space = false;
    for c in text.chars() {
        if c.is_control() || c.is_whitespace() {
            pending_space = !out.is_empty();
            continue;
        }
        let needed = if pending_space { 2 } else { 1 };
        if chars + needed > limit {
            out.push('…');
            return out;
        }
        if pending_space {
            out.push(' ');
            chars += 1;
            pending_space = false;
        }
        out.push(c);
        chars += 1;
    }
    out
}

/// [`clip`] at [`QUOTE_LIMIT`].
pub(crate) fn quote(text: &str) -> String {
    clip(text, QUOTE_LIMIT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_folds_controls_and_cuts() {
        assert_eq!(clip("  a\u{0}\u{1b}[31m b  ", 200), "a [31m b");
        let clipped = clip(&"x".repeat(500), QUOTE_LIMIT);
        assert_eq!(clipped.chars().count(), QUOTE_LIMIT + 1);
        assert!(clipped.ends_with('…'));
        assert_eq!(clip("exactly", 7), "exactly");
        assert_eq!(clip("", 7), "");
    }

    #[test]
    fn messages_name_the_endpoint_and_the_oauth_error() {
        let err = AuthError::TokenRejected {
            endpoint: "https://as.example/token".into(),
            status: 400,
            error: Some("invalid_grant".into()),
            description: Some("code expired".into()),
        };
        assert_eq!(
            err.to_string(),
            "the token endpoint \"https://as.example/token\" refused the request with HTTP status 400: invalid_grant: code expired"
        );
        assert_eq!(err.fault(), Fault::AuthorizationServer);
        let err = AuthError::RegistrationFailed {
            endpoint: "https://as.example/register".into(),
            status: 500,
            error: None,
            description: None,
        };
        assert!(err.to_string().ends_with("HTTP status 500"));
    }
}
