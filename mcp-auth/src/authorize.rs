//! The front channel: the authorization URL a person opens, and the redirect that comes back.
//!
//! The URL carries `response_type=code`, `client_id`, `redirect_uri`, the PKCE `S256`
//! challenge, `state`, `resource` (RFC 8707) and `scope` when there is one. The redirect is
//! checked in the order that keeps an attacker's text from being acted on: it must come back to
//! the configured redirect URI, carry this flow's `state`, then pass RFC 9207 (`iss` compared
//! with the recorded issuer by plain string comparison when present; refused when absent but
//! advertised) before its `error` is surfaced or its `code` used. This module must never send
//! the code anywhere; it only hands it to the flow.

use url::Url;

use crate::error::{AuthError, quote};
use crate::secret::Secret;

/// What one authorization request needs to see its answer through.
pub(crate) struct PendingAuthorization {
    pub(crate) verifier: Secret,
    pub(crate) state: String,
    /// The scope asked for (kept as the granted scope when the token answer names none).
    pub(crate) scope: Option<String>,
}

/// The parameters of an authorization request.
pub(crate) struct AuthorizationRequest<'a> {
    pub(crate) client_id: &'a str,
    pub(crate) redirect_uri: &'a str,
    pub(crate) code_challenge: &'a str,
    pub(crate) state: &'a str,
    pub(crate) resource: &'a str,
    pub(crate) scope: Option<&'a str>,
}

/// The authorization endpoint with the request's parameters added to any it already has.
pub(crate) fn authorization_url(endpoint: &Url, request: &AuthorizationRequest<'_>) -> Url {
    let mut url = endpoint.clone();
    {
        let mut query = url.query_pairs_mut();
        query
            .append_pair("response_type", "code")
            .append_pair("client_id", request.client_id)
            .append_pair("redirect_uri", request.redirect_uri)
            .append_pair("code_challenge", request.code_challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", request.state)
            .append_pair("resource", request.resource);
        if let Some(scope) = request.scope {
            query.append_pair("scope", scope);
        }
    }
    url
}

/// What the redirect must match.
pub(crate) struct Expected<'a> {
    pub(crate) redirect_uri: &'a Url,
    pub(crate) state: &'a str,
    pub(crate) issuer: &'a str,
    /// `authorization_response_iss_parameter_supported: true`.
    pub(crate) iss_required: bool,
}

/// The authorization code in a redirect, once every check passed.
pub(crate) fn read_redirect(redirect: &str, expected: &Expected<'_>) -> Result<Secret, AuthError> {
    const ENDPOINT: &str = "authorization response to redirect URI";
    let malformed = |detail: &str| AuthError::Malformed {
        endpoint: ENDPOINT,
        url: expected.redirect_uri.to_string(),
        detail: detail.to_owned(),
    };
    let url = Url::parse(redirect).map_err(|_| malformed("the redirect is not a URL"))?;
    let target = expected.redirect_uri;
    if url.scheme() != target.scheme()
        || url.host() != target.host()
        || url.port_or_known_default() != target.port_or_known_default()
        || url.path() != target.path()
    {
        return Err(malformed(
            "the redirect did not come back to the redirect URI",
        ));
    }
    let mut state = None;
    let mut code = None;
    let mut iss = None;
    let mut error = None;
    let mut description = None;
    for (name, value) in url.query_pairs() {
        let slot = match name.as_ref() {
            "state" => &mut state,
            "code" => &mut code,
            "iss" => &mut iss,
            "error" => &mut error,
            "error_description" => &mut description,
            _ => continue,
        };
        if slot.is_some() {
            // RFC 6749 3.1: parameters must not repeat; which one is meant is unknowable.
            return Err(malformed("a response parameter appears twice"));
        }
        *slot = Some(value.into_owned());
    }
    if state.as_deref() != Some(expected.state) {
        return Err(AuthError::StateMismatch {
            issuer: expected.issuer.to_owned(),
        });
    }
    match iss {
        Some(found) if found != expected.issuer => {
            return Err(AuthError::IssMismatch {
                issuer: expected.issuer.to_owned(),
                found: quote(&found),
            });
        }
        None if expected.iss_required => {
            return Err(AuthError::IssMissing {
                issuer: expected.issuer.to_owned(),
            });
        }
        _ => {}
    }
    if let Some(error) = error {
        return Err(AuthError::AuthorizationDenied {
            issuer: expected.issuer.to_owned(),
            error: quote(&error),
            description: description.as_deref().map(quote),
        });
    }
    match code {
        Some(code) if !code.is_empty() => Ok(Secret::new(code)),
        _ => Err(malformed(
            "the redirect carries neither a code nor an error",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redirect_uri() -> Url {
        Url::parse("http://127.0.0.1:3000/callback").unwrap()
    }

    fn expected(redirect_uri: &Url, iss_required: bool) -> Expected<'_> {
        Expected {
            redirect_uri,
            state: "st",
            issuer: "https://as.example",
            iss_required,
        }
    }

    #[test]
    fn the_url_carries_every_parameter_and_keeps_an_existing_query() {
        let endpoint = Url::parse("https://as.example/authorize?tenant=t1").unwrap();
        let url = authorization_url(
            &endpoint,
            &AuthorizationRequest {
                client_id: "c",
                redirect_uri: "http://127.0.0.1:3000/callback",
                code_challenge: "ch",
                state: "st",
                resource: "https://mcp.example",
                scope: Some("a b"),
            },
        );
        let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
        let get = |name: &str| {
            pairs
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("tenant"), Some("t1"));
        assert_eq!(get("response_type"), Some("code"));
        assert_eq!(get("code_challenge_method"), Some("S256"));
        assert_eq!(get("resource"), Some("https://mcp.example"));
        assert_eq!(get("scope"), Some("a b"));
        assert!(url.as_str().contains("resource=https%3A%2F%2Fmcp.example"));
    }

    #[test]
    fn a_good_redirect_gives_the_code() {
        let uri = redirect_uri();
        let code = read_redirect(
            "http://127.0.0.1:3000/callback?code=abc&state=st&iss=https%3A%2F%2Fas.example",
            &expected(&uri, true),
        )
        .unwrap();
        assert_eq!(code.expose(), "abc");
        // Without iss, when the server does not advertise it.
        let code = read_redirect(
            "http://127.0.0.1:3000/callback?code=abc&state=st",
            &expected(&uri, false),
        )
        .unwrap();
        assert_eq!(code.expose(), "abc");
    }

    #[test]
    fn state_must_match() {
        let uri = redirect_uri();
        for redirect in [
            "http://127.0.0.1:3000/callback?code=abc&state=other",
            "http://127.0.0.1:3000/callback?code=abc",
        ] {
            assert!(matches!(
                read_redirect(redirect, &expected(&uri, false)),
                Err(AuthError::StateMismatch { .. })
            ));
        }
    }

    #[test]
    fn iss_is_compared_without_any_normalisation() {
        let uri = redirect_uri();
        for iss in [
            "https://as.example/",
            "HTTPS://as.example",
            "https://AS.example",
            "https://as.example:443",
            "https://evil.example",
        ] {
            let redirect = format!(
                "http://127.0.0.1:3000/callback?code=abc&state=st&iss={}",
                url::form_urlencoded::byte_serialize(iss.as_bytes()).collect::<String>()
            );
            for required in [true, false] {
                assert!(
                    matches!(
                        read_redirect(&redirect, &expected(&uri, required)),
                        Err(AuthError::IssMismatch { .. })
                    ),
                    "{iss}"
                );
            }
        }
    }

    #[test]
    fn a_missing_iss_is_refused_when_advertised() {
        let uri = redirect_uri();
        assert!(matches!(
            read_redirect(
                "http://127.0.0.1:3000/callback?code=abc&state=st",
                &expected(&uri, true)
            ),
            Err(AuthError::IssMissing { .. })
        ));
    }

    #[test]
    fn an_error_is_surfaced_only_after_state_and_iss_pass() {
        let uri = redirect_uri();
        let err = read_redirect(
            "http://127.0.0.1:3000/callback?error=access_denied&error_description=no%20thanks&state=st&iss=https%3A%2F%2Fas.example",
            &expected(&uri, true),
        )
        .unwrap_err();
        assert_eq!(
            err,
            AuthError::AuthorizationDenied {
                issuer: "https://as.example".into(),
                error: "access_denied".into(),
                description: Some("no thanks".into())
            }
        );
        // A forged error with the wrong iss is not acted on.
        let err = read_redirect(
            "http://127.0.0.1:3000/callback?error=access_denied&state=st&iss=https%3A%2F%2Fevil.example",
            &expected(&uri, true),
        )
        .unwrap_err();
        assert!(matches!(err, AuthError::IssMismatch { .. }));
    }

    #[test]
    fn the_redirect_must_come_back_to_the_redirect_uri_once() {
        let uri = redirect_uri();
        for redirect in [
            "http://127.0.0.1:3001/callback?code=abc&state=st",
            "http://127.0.0.1:3000/other?code=abc&state=st",
            "https://127.0.0.1:3000/callback?code=abc&state=st",
            "not a url",
            "http://127.0.0.1:3000/callback?code=a&code=b&state=st",
            "http://127.0.0.1:3000/callback?state=st",
        ] {
            assert!(
                matches!(
                    read_redirect(redirect, &expected(&uri, false)),
                    Err(AuthError::Malformed { .. })
                ),
                "{redirect}"
            );
        }
    }

    #[test]
    fn no_code_reaches_an_error_message() {
        let uri = redirect_uri();
        let err = read_redirect(
            "http://127.0.0.1:3000/callback?code=SECRETCODE&state=wrong",
            &expected(&uri, false),
        )
        .unwrap_err();
        assert!(!format!("{err} {err:?}").contains("SECRETCODE"));
    }
}
