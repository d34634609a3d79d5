//! Discovery: where the metadata documents are, and what they say.
//!
//! * Protected Resource Metadata (RFC 9728): the candidate URLs in order (the challenge's
//!   `resource_metadata`, the path-based well-known URL, the root one), the document, and the
//!   rule that its `resource` is this MCP server (same origin, the server's path or a parent
//!   of it; the string itself is kept exactly as published).
//! * Authorization server metadata (RFC 8414, OpenID Connect Discovery): the candidate URLs
//!   for an issuer with and without a path, the document, and the rule that its `issuer` is
//!   exactly the issuer the URL was built from.
//! * The 2025-03-26 fallbacks: the server's origin as issuer, and the default endpoints.
//!
//! Pure functions of URLs and bodies. This module must never decide what to fetch next: the
//! flow walks the candidates.

use serde_json::{Map, Value};
use url::Url;

use crate::config::{check_endpoint, is_secure};
use crate::error::{AuthError, quote};
use crate::secret::Secret;

/// The well-known suffix of RFC 9728.
const PRM_SUFFIX: &str = "/.well-known/oauth-protected-resource";
/// The well-known suffix of RFC 8414.
const OAUTH_SUFFIX: &str = "/.well-known/oauth-authorization-server";
/// The well-known suffix of OpenID Connect Discovery.
const OIDC_SUFFIX: &str = "/.well-known/openid-configuration";

/// The Protected Resource Metadata URLs to try, in order, without repeats: the challenge's
/// `resource_metadata` (when it is a URL), then `/.well-known/oauth-protected-resource<path>`
/// (when the server URL has a path), then the root form.
///
/// Every candidate must be HTTPS or loopback HTTP: a document that picks the authorization
/// server is not fetched in the clear.
pub(crate) fn resource_metadata_candidates(
    server: &Url,
    from_challenge: Option<&str>,
) -> Result<Vec<Url>, AuthError> {
    let mut candidates = Vec::new();
    if let Some(url) = from_challenge.and_then(|text| Url::parse(text).ok()) {
        candidates.push(url);
    }
    let origin = server.origin().ascii_serialization();
    let path = server.path().trim_end_matches('/');
    if !path.is_empty() {
        let mut text = format!("{origin}{PRM_SUFFIX}{path}");
        if let Some(query) = server.query() {
            text.push('?');
            text.push_str(query);
        }
        candidates.extend(Url::parse(&text).ok());
    }
    candidates.extend(Url::parse(&format!("{origin}{PRM_SUFFIX}")).ok());
    let mut unique: Vec<Url> = Vec::with_capacity(candidates.len());
    for candidate in candidates {
        if !is_secure(&candidate) {
            return Err(AuthError::InsecureEndpoint {
                endpoint: "protected resource metadata",
                url: quote(candidate.as_str()),
            });
        }
        if !unique.contains(&candidate) {
            unique.push(candidate);
        }
    }
    Ok(unique)
}

/// What a Protected Resource Metadata document says that this client uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResourceMetadata {
    /// `resource`, exactly as published: sent as the `resource` parameter.
    pub(crate) resource: String,
    /// `authorization_servers`, in order (strings only).
    pub(crate) authorization_servers: Vec<String>,
    /// `scopes_supported`, when it is a list.
    pub(crate) scopes_supported: Option<Vec<String>>,
}

/// Reads a Protected Resource Metadata document and checks that its `resource` is `server`.
pub(crate) fn read_resource_metadata(
    server: &Url,
    url: &Url,
    body: &[u8],
) -> Result<ResourceMetadata, AuthError> {
    const ENDPOINT: &str = "protected resource metadata";
    let object = json_object(ENDPOINT, url, body)?;
    let Some(resource) = object.get("resource").and_then(Value::as_str) else {
        return Err(malformed(ENDPOINT, url, "no \"resource\" string"));
    };
    if !resource_is_for(server, resource) {
        return Err(AuthError::ResourceMismatch {
            server: server.to_string(),
            resource: quote(resource),
        });
    }
    Ok(ResourceMetadata {
        resource: resource.to_owned(),
        authorization_servers: string_list(object.get("authorization_servers")).unwrap_or_default(),
        scopes_supported: string_list(object.get("scopes_supported")),
    })
}

/// Whether a published `resource` identifies `server`: same scheme, host and port, no
/// fragment, and a path equal to the server's or a parent of it (segment-wise, ignoring a
/// trailing slash). Scheme and host compare case-insensitively (the URL parser lowercases
/// them); nothing else is normalised.
pub(crate) fn resource_is_for(server: &Url, resource: &str) -> bool {
    let Ok(parsed) = Url::parse(resource) else {
        return false;
    };
    if parsed.fragment().is_some()
        || parsed.scheme() != server.scheme()
        || parsed.host() != server.host()
        || parsed.port_or_known_default() != server.port_or_known_default()
    {
        return false;
    }
    let parent = parsed.path().trim_end_matches('/');
    let child = server.path().trim_end_matches('/');
    parent.is_empty()
        || child == parent
        || (child.starts_with(parent) && child[parent.len()..].starts_with('/'))
}

/// The authorization server metadata URLs for `issuer`, in the order the spec gives: with a
/// path, OAuth then OpenID Connect with the path inserted, then OpenID Connect appended; without
/// a path, the two root forms.
pub(crate) fn server_metadata_candidates(issuer: &str) -> Result<Vec<Url>, AuthError> {
    const ENDPOINT: &str = "authorization server issuer";
    let url = Url::parse(issuer).map_err(|e| AuthError::Malformed {
        endpoint: ENDPOINT,
        url: quote(issuer),
        detail: format!("not a URL: {e}"),
    })?;
    if url.query().is_some() || url.fragment().is_some() {
        return Err(malformed(
            ENDPOINT,
            &url,
            "an issuer has no query or fragment",
        ));
    }
    if !is_secure(&url) {
        return Err(AuthError::InsecureEndpoint {
            endpoint: ENDPOINT,
            url: quote(issuer),
        });
    }
    let origin = url.origin().ascii_serialization();
    let path = url.path().trim_end_matches('/');
    let texts = if path.is_empty() {
        vec![
            format!("{origin}{OAUTH_SUFFIX}"),
            format!("{origin}{OIDC_SUFFIX}"),
        ]
    } else {
        vec![
            format!("{origin}{OAUTH_SUFFIX}{path}"),
            format!("{origin}{OIDC_SUFFIX}{path}"),
            format!("{origin}{path}{OIDC_SUFFIX}"),
        ]
    };
    texts
        .iter()
        .map(|text| Url::parse(text).map_err(|e| malformed(ENDPOINT, &url, &e.to_string())))
        .collect()
}

/// What authorization server metadata says that this client uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerMetadata {
    /// The issuer, exactly as the metadata (and the URL it was fetched from) gives it.
    pub(crate) issuer: String,
    pub(crate) authorization_endpoint: Url,
    pub(crate) token_endpoint: Url,
    pub(crate) registration_endpoint: Option<Url>,
    pub(crate) scopes_supported: Option<Vec<String>>,
    pub(crate) token_endpoint_auth_methods_supported: Option<Vec<String>>,
    pub(crate) code_challenge_methods_supported: Option<Vec<String>>,
    /// `authorization_response_iss_parameter_supported: true` (RFC 9207).
    pub(crate) iss_parameter_supported: bool,
    /// `client_id_metadata_document_supported: true`.
    pub(crate) client_id_metadata_document_supported: bool,
    /// `dpop_signing_alg_values_supported` (RFC 9449 5.1).
    pub(crate) dpop_signing_alg_values_supported: Option<Vec<String>>,
}

impl ServerMetadata {
    /// The 2025-03-26 default endpoints at the server's origin, when it publishes no metadata.
    pub(crate) fn legacy_defaults(origin: &str) -> Result<Self, AuthError> {
        let endpoint = |path: &str| check_endpoint("default endpoint", &format!("{origin}{path}"));
        Ok(Self {
            issuer: origin.to_owned(),
            authorization_endpoint: endpoint("/authorize")?,
            token_endpoint: endpoint("/token")?,
            registration_endpoint: Some(endpoint("/register")?),
            scopes_supported: None,
            token_endpoint_auth_methods_supported: None,
            code_challenge_methods_supported: None,
            iss_parameter_supported: false,
            client_id_metadata_document_supported: false,
            dpop_signing_alg_values_supported: None,
        })
    }

    /// Whether the server accepts DPoP proofs signed with ES256 (the only algorithm this client
    /// signs with).
    pub(crate) fn supports_dpop_es256(&self) -> bool {
        self.dpop_signing_alg_values_supported
            .as_ref()
            .is_some_and(|algs| algs.iter().any(|alg| alg == "ES256"))
    }

    /// Whether the server advertises this scope.
    pub(crate) fn supports_scope(&self, scope: &str) -> bool {
        self.scopes_supported
            .as_ref()
            .is_some_and(|list| list.iter().any(|s| s == scope))
    }

    /// Whether the server lists this token endpoint auth method (`None` when it lists none).
    pub(crate) fn lists_auth_method(&self, method: &str) -> Option<bool> {
        self.token_endpoint_auth_methods_supported
            .as_ref()
            .map(|list| list.iter().any(|m| m == method))
    }
}

/// Reads authorization server metadata fetched from `url` (built from `issuer`): its `issuer`
/// must be exactly `issuer`, and its endpoints usable.
pub(crate) fn read_server_metadata(
    issuer: &str,
    url: &Url,
    body: &[u8],
) -> Result<ServerMetadata, AuthError> {
    const ENDPOINT: &str = "authorization server metadata";
    let object = json_object(ENDPOINT, url, body)?;
    let found = object.get("issuer").and_then(Value::as_str);
    if found != Some(issuer) {
        return Err(AuthError::IssuerMismatch {
            metadata_url: url.to_string(),
            expected: issuer.to_owned(),
            found: quote(found.unwrap_or("(none)")),
        });
    }
    let endpoint = |name: &'static str, required: bool| -> Result<Option<Url>, AuthError> {
        match object.get(name).and_then(Value::as_str) {
            Some(text) => check_endpoint(name, text).map(Some),
            None if required => Err(malformed(ENDPOINT, url, &format!("no \"{name}\" string"))),
            None => Ok(None),
        }
    };
    let (Some(authorization_endpoint), Some(token_endpoint)) = (
        endpoint("authorization_endpoint", true)?,
        endpoint("token_endpoint", true)?,
    ) else {
        return Err(malformed(ENDPOINT, url, "missing endpoints"));
    };
    Ok(ServerMetadata {
        issuer: issuer.to_owned(),
        authorization_endpoint,
        token_endpoint,
        registration_endpoint: endpoint("registration_endpoint", false)?,
        scopes_supported: string_list(object.get("scopes_supported")),
        token_endpoint_auth_methods_supported: string_list(
            object.get("token_endpoint_auth_methods_supported"),
        ),
        code_challenge_methods_supported: string_list(
            object.get("code_challenge_methods_supported"),
        ),
        iss_parameter_supported: object
            .get("authorization_response_iss_parameter_supported")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        client_id_metadata_document_supported: object
            .get("client_id_metadata_document_supported")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        dpop_signing_alg_values_supported: string_list(
            object.get("dpop_signing_alg_values_supported"),
        ),
    })
}

/// A JSON object body, or a `Malformed` naming the endpoint.
pub(crate) fn json_object(
    endpoint: &'static str,
    url: &Url,
    body: &[u8],
) -> Result<Map<String, Value>, AuthError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err(malformed(
            endpoint,
            url,
            "the body is JSON but not an object",
        )),
        Err(e) => Err(malformed(
            endpoint,
            url,
            &format!("the body is not JSON: {e}"),
        )),
    }
}

/// The strings of a JSON array (other elements skipped); `None` when it is not an array.
pub(crate) fn string_list(value: Option<&Value>) -> Option<Vec<String>> {
    value.and_then(Value::as_array).map(|items| {
        items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()
    })
}

/// A non-empty string member of a JSON object, as a credential (an empty one is absent).
pub(crate) fn secret_member(object: &Map<String, Value>, name: &str) -> Option<Secret> {
    object
        .get(name)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(Secret::new)
}

pub(crate) fn malformed(endpoint: &'static str, url: &Url, detail: &str) -> AuthError {
    AuthError::Malformed {
        endpoint,
        url: url.to_string(),
        detail: quote(detail),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    fn strings(urls: &[Url]) -> Vec<&str> {
        urls.iter().map(Url::as_str).collect()
    }

    #[test]
    fn prm_candidates_header_then_path_then_root() {
        let server = url("https://mcp.example.com/public/mcp");
        let candidates =
            resource_metadata_candidates(&server, Some("https://mcp.example.com/custom/prm.json"))
                .unwrap();
        assert_eq!(
            strings(&candidates),
            [
                "https://mcp.example.com/custom/prm.json",
                "https://mcp.example.com/.well-known/oauth-protected-resource/public/mcp",
                "https://mcp.example.com/.well-known/oauth-protected-resource",
            ]
        );
    }

    #[test]
    fn prm_candidates_without_header_or_path_and_without_repeats() {
        let server = url("https://mcp.example.com/");
        assert_eq!(
            strings(&resource_metadata_candidates(&server, None).unwrap()),
            ["https://mcp.example.com/.well-known/oauth-protected-resource"]
        );
        let server = url("https://mcp.example.com/mcp");
        let candidates = resource_metadata_candidates(
            &server,
            Some("https://mcp.example.com/.well-known/oauth-protected-resource/mcp"),
        )
        .unwrap();
        assert_eq!(candidates.len(), 2);
        // An unreadable header value falls back to the well-known URLs.
        assert_eq!(
            resource_metadata_candidates(&server, Some("::not a url"))
                .unwrap()
                .len(),
            2
        );
    }

    #[test]
    fn prm_is_never_fetched_in_the_clear_from_a_remote_host() {
        let server = url("http://mcp.example.com/mcp");
        assert!(matches!(
            resource_metadata_candidates(&server, None),
            Err(AuthError::InsecureEndpoint { .. })
        ));
        let server = url("https://mcp.example.com/mcp");
        assert!(matches!(
            resource_metadata_candidates(&server, Some("http://evil.example/prm")),
            Err(AuthError::InsecureEndpoint { .. })
        ));
    }

    #[test]
    fn the_resource_must_be_this_server_or_a_parent() {
        let server = url("https://mcp.example.com/v1/mcp");
        for good in [
            "https://mcp.example.com/v1/mcp",
            "https://mcp.example.com/v1/mcp/",
            "https://mcp.example.com/v1",
            "https://mcp.example.com",
            "https://mcp.example.com/",
            "HTTPS://MCP.EXAMPLE.COM/v1",
            "https://mcp.example.com:443/v1/mcp",
        ] {
            assert!(resource_is_for(&server, good), "{good}");
        }
        for bad in [
            "https://evil.example.com/v1/mcp",
            "http://mcp.example.com/v1/mcp",
            "https://mcp.example.com:8443/v1/mcp",
            "https://mcp.example.com/v1/mcp/deeper",
            "https://mcp.example.com/v",
            "https://mcp.example.com/other",
            "https://mcp.example.com/v1/mcp#frag",
            "mcp.example.com/v1/mcp",
            "",
        ] {
            assert!(!resource_is_for(&server, bad), "{bad}");
        }
    }

    #[test]
    fn prm_keeps_the_resource_string_exactly() {
        let server = url("http://localhost:3000/mcp");
        let prm_url = url("http://localhost:3000/.well-known/oauth-protected-resource");
        let prm = read_resource_metadata(
            &server,
            &prm_url,
            br#"{"resource":"http://localhost:3000","authorization_servers":["http://localhost:4000"],"scopes_supported":["a",1,"b"]}"#,
        )
        .unwrap();
        assert_eq!(prm.resource, "http://localhost:3000");
        assert_eq!(prm.authorization_servers, ["http://localhost:4000"]);
        assert_eq!(prm.scopes_supported.unwrap(), ["a", "b"]);
    }

    #[test]
    fn prm_for_another_host_is_refused_with_a_typed_error() {
        let server = url("http://localhost:3000/mcp");
        let prm_url = url("http://localhost:3000/.well-known/oauth-protected-resource/mcp");
        let err = read_resource_metadata(
            &server,
            &prm_url,
            br#"{"resource":"https://evil.example.com/mcp","authorization_servers":["http://localhost:4000"]}"#,
        )
        .unwrap_err();
        assert_eq!(
            err,
            AuthError::ResourceMismatch {
                server: "http://localhost:3000/mcp".into(),
                resource: "https://evil.example.com/mcp".into()
            }
        );
    }

    #[test]
    fn metadata_candidates_for_an_issuer_with_a_path() {
        assert_eq!(
            strings(&server_metadata_candidates("https://auth.example.com/tenant1").unwrap()),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn metadata_candidates_for_an_issuer_without_a_path() {
        for issuer in ["https://auth.example.com", "https://auth.example.com/"] {
            assert_eq!(
                strings(&server_metadata_candidates(issuer).unwrap()),
                [
                    "https://auth.example.com/.well-known/oauth-authorization-server",
                    "https://auth.example.com/.well-known/openid-configuration",
                ]
            );
        }
        assert!(server_metadata_candidates("https://a.example/?x=1").is_err());
        assert!(server_metadata_candidates("http://a.example").is_err());
        assert!(server_metadata_candidates("nonsense").is_err());
    }

    const METADATA: &str = r#"{
        "issuer": "https://auth.example.com",
        "authorization_endpoint": "https://auth.example.com/authorize",
        "token_endpoint": "https://auth.example.com/token",
        "registration_endpoint": "https://auth.example.com/register",
        "code_challenge_methods_supported": ["S256"],
        "authorization_response_iss_parameter_supported": true,
        "scopes_supported": ["a", "offline_access"]
    }"#;

    #[test]
    fn metadata_issuer_must_match_exactly() {
        let from = url("https://auth.example.com/.well-known/oauth-authorization-server");
        let metadata =
            read_server_metadata("https://auth.example.com", &from, METADATA.as_bytes()).unwrap();
        assert!(metadata.iss_parameter_supported);
        assert!(metadata.supports_scope("offline_access"));
        assert_eq!(
            metadata.registration_endpoint.unwrap().as_str(),
            "https://auth.example.com/register"
        );
        // A trailing slash is another issuer.
        let err = read_server_metadata("https://auth.example.com/", &from, METADATA.as_bytes())
            .unwrap_err();
        assert!(matches!(err, AuthError::IssuerMismatch { .. }));
        let poisoned = METADATA.replace(
            "\"issuer\": \"https://auth.example.com\"",
            "\"issuer\": \"https://attacker.example.com\"",
        );
        let err = read_server_metadata("https://auth.example.com", &from, poisoned.as_bytes())
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "the authorization server metadata at \"https://auth.example.com/.well-known/oauth-authorization-server\" claims issuer \"https://attacker.example.com\", not \"https://auth.example.com\"; it is not used"
        );
    }

    #[test]
    fn metadata_endpoints_must_be_https() {
        let from = url("https://auth.example.com/.well-known/oauth-authorization-server");
        let insecure = METADATA.replace(
            "https://auth.example.com/token",
            "http://auth.example.com/token",
        );
        assert!(matches!(
            read_server_metadata("https://auth.example.com", &from, insecure.as_bytes()),
            Err(AuthError::InsecureEndpoint { .. })
        ));
    }

    #[test]
    fn legacy_defaults_sit_at_the_origin() {
        let metadata = ServerMetadata::legacy_defaults("http://localhost:3000").unwrap();
        assert_eq!(
            metadata.authorization_endpoint.as_str(),
            "http://localhost:3000/authorize"
        );
        assert_eq!(
            metadata.token_endpoint.as_str(),
            "http://localhost:3000/token"
        );
        assert_eq!(
            metadata.registration_endpoint.unwrap().as_str(),
            "http://localhost:3000/register"
        );
    }
}
