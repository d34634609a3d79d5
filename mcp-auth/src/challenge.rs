//! [`Challenge`]: what a 401 or a 403 `insufficient_scope` asks of the client.
//!
//! Reads `WWW-Authenticate` (RFC 9110 11.6.1) leniently: several header lines, several
//! challenges per line, any scheme, parameters quoted or not (a bare URL is read up to the next
//! comma or space), names in any case. Only the parameters of RFC 6750 and RFC 9728 are kept:
//! `resource_metadata`, `scope`, `error`, `error_description`; `Bearer` and `DPoP` (RFC 9449 7.1)
//! challenges are read alike. A `DPoP` challenge `error="use_dpop_nonce"` with a `DPoP-Nonce`
//! header (RFC 9449 9) is its own kind: the request is retried with the nonce, nothing is
//! authorized anew. This module decides nothing and must never fail on a header: a value it
//! cannot read is simply absent.

use http::{HeaderMap, HeaderName, StatusCode, header::WWW_AUTHENTICATE};

/// The header a server sends a DPoP nonce in (RFC 9449 8, 9).
pub(crate) const DPOP_NONCE: HeaderName = HeaderName::from_static("dpop-nonce");

/// Why the server refused the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChallengeKind {
    /// 401: no token, or the token was not accepted. Authorize (or refresh).
    Unauthorized,
    /// `error="insufficient_scope"` (RFC 6750 3.1, normally a 403): the token lacks scopes the
    /// request needs. Authorize again with more scopes (step-up).
    InsufficientScope,
    /// A 401 `DPoP error="use_dpop_nonce"` with a `DPoP-Nonce` header (RFC 9449 9): the
    /// DPoP-bound token is fine, the proof lacked the server's nonce. Retry the same request
    /// once with [`AccessToken::authorization_headers`](crate::AccessToken::authorization_headers)
    /// given [`Challenge::dpop_nonce`]; start no authorization.
    UseDpopNonce,
}

/// The server's refusal, read from its status and `WWW-Authenticate` header.
///
/// Every field is the server's text, unchecked: the flow validates what it uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    /// Why the server refused.
    pub kind: ChallengeKind,
    /// `resource_metadata`: where the Protected Resource Metadata is (RFC 9728 5.1).
    pub resource_metadata: Option<String>,
    /// `scope`: the scopes the request needs, space-separated (RFC 6750 3).
    pub scope: Option<String>,
    /// `error`, e.g. `invalid_token` or `insufficient_scope`.
    pub error: Option<String>,
    /// `error_description`, for people.
    pub error_description: Option<String>,
    /// The `DPoP-Nonce` header's value, when the answer carried one (RFC 9449 9).
    pub dpop_nonce: Option<String>,
}

impl Challenge {
    /// The challenge in an MCP server's answer, if the answer is one: any 401, and any answer
    /// whose Bearer challenge says `error="insufficient_scope"` (a 403 by RFC 6750, sometimes a
    /// 401). Other answers (a 403 for another reason, a 200) are not challenges: `None`.
    ///
    /// A 401 whose `DPoP` challenge says `error="use_dpop_nonce"` and that carries a
    /// `DPoP-Nonce` header is [`ChallengeKind::UseDpopNonce`]. Otherwise the Bearer challenge's
    /// parameters are read; without one, the `DPoP` challenge's; without either, the first
    /// challenge of any scheme that names `resource_metadata`.
    pub fn from_response(status: StatusCode, headers: &HeaderMap) -> Option<Self> {
        let text = headers
            .get_all(WWW_AUTHENTICATE)
            .iter()
            .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
            .collect::<Vec<_>>()
            .join(", ");
        let parsed = parse(&text);
        let scheme = |name: &str| parsed.iter().find(|c| c.scheme.eq_ignore_ascii_case(name));
        let dpop_nonce = headers
            .get(DPOP_NONCE)
            .and_then(|value| value.to_str().ok())
            .map(str::trim)
            .filter(|nonce| !nonce.is_empty())
            .map(str::to_owned);
        let nonce_challenge = parsed.iter().find(|c| {
            c.scheme.eq_ignore_ascii_case("dpop") && c.param("error") == Some("use_dpop_nonce")
        });
        let chosen = nonce_challenge
            .filter(|_| status == StatusCode::UNAUTHORIZED && dpop_nonce.is_some())
            .or_else(|| scheme("bearer"))
            .or_else(|| scheme("dpop"))
            .or_else(|| {
                parsed
                    .iter()
                    .find(|c| c.param("resource_metadata").is_some())
            });
        let param = |name: &str| chosen.and_then(|c| c.param(name)).map(str::to_owned);
        let error = param("error");
        let kind = match error.as_deref() {
            Some("insufficient_scope") => ChallengeKind::InsufficientScope,
            Some("use_dpop_nonce")
                if status == StatusCode::UNAUTHORIZED && dpop_nonce.is_some() =>
            {
                ChallengeKind::UseDpopNonce
            }
            _ if status == StatusCode::UNAUTHORIZED => ChallengeKind::Unauthorized,
            _ => return None,
        };
        Some(Self {
            kind,
            resource_metadata: param("resource_metadata"),
            scope: param("scope").filter(|s| !s.trim().is_empty()),
            error,
            error_description: param("error_description"),
            dpop_nonce,
        })
    }

    /// The nonce to put in the retried request's DPoP proof, when this is a
    /// [`ChallengeKind::UseDpopNonce`] (RFC 9449 9).
    pub fn dpop_nonce(&self) -> Option<&str> {
        match self.kind {
            ChallengeKind::UseDpopNonce => self.dpop_nonce.as_deref(),
            _ => None,
        }
    }

    /// A 401 that said nothing more (no `WWW-Authenticate`, or none this client can read).
    pub fn unauthorized() -> Self {
        Self {
            kind: ChallengeKind::Unauthorized,
            resource_metadata: None,
            scope: None,
            error: None,
            error_description: None,
            dpop_nonce: None,
        }
    }

    /// The challenge's scopes, one per entry (empty when it named none).
    pub fn scopes(&self) -> Vec<&str> {
        self.scope
            .as_deref()
            .map(|s| s.split_ascii_whitespace().collect())
            .unwrap_or_default()
    }
}

/// One challenge of a `WWW-Authenticate` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawChallenge {
    pub(crate) scheme: String,
    /// Parameter names lowercased, in order; the first of a repeated name wins in `param`.
    pub(crate) params: Vec<(String, String)>,
}

impl RawChallenge {
    pub(crate) fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// Every challenge in `text`, read leniently (see the module doc). Never fails.
pub(crate) fn parse(text: &str) -> Vec<RawChallenge> {
    let mut cursor = Cursor { text, pos: 0 };
    let mut challenges = Vec::new();
    loop {
        cursor.skip(|c| c == ',' || c.is_whitespace());
        if cursor.at_end() {
            return challenges;
        }
        let scheme = cursor.take(is_tchar);
        if scheme.is_empty() {
            cursor.bump(); // not a token: skip it, so every turn makes progress
            continue;
        }
        let mut challenge = RawChallenge {
            scheme: scheme.to_owned(),
            params: Vec::new(),
        };
        let mut first = true;
        loop {
            cursor.skip(|c| c == ',' || c.is_whitespace());
            if cursor.at_end() {
                break;
            }
            let start = cursor.pos;
            let name = cursor.take(is_tchar);
            cursor.skip(|c| c == ' ' || c == '\t');
            if !name.is_empty() && cursor.peek() == Some('=') {
                cursor.bump();
                cursor.skip(|c| c == ' ' || c == '\t');
                let value = if cursor.peek() == Some('"') {
                    cursor.quoted()
                } else {
                    cursor.take(|c| c != ',' && !c.is_whitespace()).to_owned()
                };
                challenge.params.push((name.to_ascii_lowercase(), value));
            } else if first && !name.is_empty() {
                // A token68 (`Basic dXNlcg==`): nothing this client reads.
                cursor.take(|c| c != ',' && !c.is_whitespace());
            } else {
                // The next challenge's scheme (or a stray character, skipped by the outer loop).
                cursor.pos = start;
                break;
            }
            first = false;
        }
        challenges.push(challenge);
    }
}

struct Cursor<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn at_end(&self) -> bool {
        self.pos >= self.text.len()
    }

    fn peek(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }

    fn bump(&mut self) {
        if let Some(c) = self.peek() {
            self.pos += c.len_utf8();
        }
    }

    fn skip(&mut self, mut pred: impl FnMut(char) -> bool) {
        while let Some(c) = self.peek() {
            if !pred(c) {
                break;
            }
            self.pos += c.len_utf8();
        }
    }

    fn take(&mut self, pred: impl FnMut(char) -> bool) -> &'a str {
        let start = self.pos;
        self.skip(pred);
        &self.text[start..self.pos]
    }

    /// A quoted-string from its opening quote: backslash escapes one character; an unclosed
    /// string runs to the end.
    fn quoted(&mut self) -> String {
        self.bump();
        let mut value = String::new();
        while let Some(c) = self.peek() {
            self.pos += c.len_utf8();
            match c {
                '"' => break,
                '\\' => {
                    if let Some(escaped) = self.peek() {
                        self.pos += escaped.len_utf8();
                        value.push(escaped);
                    }
                }
                other => value.push(other),
            }
        }
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for value in values {
            map.append(WWW_AUTHENTICATE, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn reads_the_spec_example_with_quoted_parameters() {
        let challenge = Challenge::from_response(
            StatusCode::UNAUTHORIZED,
            &headers(&[
                r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", scope="files:read""#,
            ]),
        )
        .unwrap();
        assert_eq!(challenge.kind, ChallengeKind::Unauthorized);
        assert_eq!(
            challenge.resource_metadata.as_deref(),
            Some("https://mcp.example.com/.well-known/oauth-protected-resource")
        );
        assert_eq!(challenge.scopes(), ["files:read"]);
    }

    #[test]
    fn reads_unquoted_values_and_names_in_any_case() {
        let challenge = Challenge::from_response(
            StatusCode::UNAUTHORIZED,
            &headers(&["bearer Resource_Metadata=https://a.example/prm,SCOPE=read"]),
        )
        .unwrap();
        assert_eq!(
            challenge.resource_metadata.as_deref(),
            Some("https://a.example/prm")
        );
        assert_eq!(challenge.scope.as_deref(), Some("read"));
    }

    #[test]
    fn picks_the_bearer_challenge_among_several_schemes_and_lines() {
        let map = headers(&[
            r#"Basic realm="x", DPoP algs="ES256", resource_metadata="https://wrong.example""#,
            r#"Bearer realm="mcp", error="insufficient_scope", scope="a b", error_description="need \"b\"""#,
        ]);
        let challenge = Challenge::from_response(StatusCode::FORBIDDEN, &map).unwrap();
        assert_eq!(challenge.kind, ChallengeKind::InsufficientScope);
        assert_eq!(challenge.scopes(), ["a", "b"]);
        assert_eq!(challenge.error_description.as_deref(), Some(r#"need "b""#));
        assert_eq!(challenge.resource_metadata, None);
    }

    #[test]
    fn the_suite_step_up_header_with_error_last() {
        let map = headers(&[
            r#"Bearer scope="mcp:write", resource_metadata="http://localhost:1/.well-known/oauth-protected-resource/mcp", error="insufficient_scope""#,
        ]);
        let challenge = Challenge::from_response(StatusCode::FORBIDDEN, &map).unwrap();
        assert_eq!(challenge.kind, ChallengeKind::InsufficientScope);
        assert_eq!(challenge.scopes(), ["mcp:write"]);
    }

    #[test]
    fn token68_schemes_are_skipped() {
        let parsed = parse("Basic dXNlcjpwYXNz==, Bearer scope=x");
        assert_eq!(parsed.len(), 2);
        assert_eq!(parsed[1].param("scope"), Some("x"));
    }

    #[test]
    fn a_403_for_another_reason_is_not_a_challenge() {
        assert_eq!(
            Challenge::from_response(
                StatusCode::FORBIDDEN,
                &headers(&[r#"Bearer error="invalid_token""#])
            ),
            None
        );
        assert_eq!(
            Challenge::from_response(StatusCode::FORBIDDEN, &HeaderMap::new()),
            None
        );
    }

    #[test]
    fn a_bare_401_is_a_challenge_without_parameters() {
        assert_eq!(
            Challenge::from_response(StatusCode::UNAUTHORIZED, &HeaderMap::new()),
            Some(Challenge::unauthorized())
        );
    }

    #[test]
    fn a_dpop_only_challenge_still_gives_the_metadata_url() {
        let challenge = Challenge::from_response(
            StatusCode::UNAUTHORIZED,
            &headers(&[r#"DPoP algs="ES256", resource_metadata="https://r.example/prm""#]),
        )
        .unwrap();
        assert_eq!(
            challenge.resource_metadata.as_deref(),
            Some("https://r.example/prm")
        );
    }

    #[test]
    fn the_suite_dpop_discovery_challenge_reads_like_a_bearer_one() {
        let challenge = Challenge::from_response(
            StatusCode::UNAUTHORIZED,
            &headers(&[r#"DPoP resource_metadata="http://localhost:1/.well-known/oauth-protected-resource/mcp""#]),
        )
        .unwrap();
        assert_eq!(challenge.kind, ChallengeKind::Unauthorized);
        assert_eq!(
            challenge.resource_metadata.as_deref(),
            Some("http://localhost:1/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(challenge.dpop_nonce(), None);
        // A DPoP challenge without resource_metadata still gives its scope and error.
        let challenge = Challenge::from_response(
            StatusCode::FORBIDDEN,
            &headers(&[r#"DPoP algs="ES256", error="insufficient_scope", scope="b""#]),
        )
        .unwrap();
        assert_eq!(challenge.kind, ChallengeKind::InsufficientScope);
        assert_eq!(challenge.scopes(), ["b"]);
    }

    #[test]
    fn the_suite_use_dpop_nonce_challenge_asks_for_a_retry_with_the_nonce() {
        let mut map = headers(&[
            r#"DPoP error="use_dpop_nonce", resource_metadata="http://localhost:1/.well-known/oauth-protected-resource/mcp""#,
        ]);
        map.insert(
            DPOP_NONCE,
            HeaderValue::from_static("conformance-rs-dpop-nonce"),
        );
        let challenge = Challenge::from_response(StatusCode::UNAUTHORIZED, &map).unwrap();
        assert_eq!(challenge.kind, ChallengeKind::UseDpopNonce);
        assert_eq!(challenge.dpop_nonce(), Some("conformance-rs-dpop-nonce"));
        // Beside a Bearer challenge, the nonce challenge still wins.
        map.append(
            WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"x\""),
        );
        let challenge = Challenge::from_response(StatusCode::UNAUTHORIZED, &map).unwrap();
        assert_eq!(challenge.kind, ChallengeKind::UseDpopNonce);
    }

    #[test]
    fn use_dpop_nonce_without_a_nonce_header_is_a_plain_401() {
        let map = headers(&[r#"DPoP error="use_dpop_nonce""#]);
        let challenge = Challenge::from_response(StatusCode::UNAUTHORIZED, &map).unwrap();
        assert_eq!(challenge.kind, ChallengeKind::Unauthorized);
        assert_eq!(challenge.dpop_nonce(), None);
        let mut map = headers(&[r#"DPoP error="use_dpop_nonce""#]);
        map.insert(DPOP_NONCE, HeaderValue::from_static("n"));
        assert_eq!(
            Challenge::from_response(StatusCode::BAD_REQUEST, &map),
            None
        );
    }

    #[test]
    fn hostile_headers_never_panic() {
        for text in [
            "",
            ",,,,",
            "\"",
            "Bearer \"",
            "Bearer scope=\"unterminated",
            "Bearer =",
            "Bearer a=\"\\",
            "é, ü=ö",
            "Bearer scope==,,=,\"\",x",
            "==== Bearer",
        ] {
            let _ = parse(text);
        }
    }
}
