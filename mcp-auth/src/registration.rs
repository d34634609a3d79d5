//! Client identity: Dynamic Client Registration (RFC 7591) and the token endpoint auth method.
//!
//! Builds the registration document (`redirect_uris`, `client_name`, `grant_types`,
//! `response_types`, `token_endpoint_auth_method`, `application_type`), reads the answer, and
//! chooses how a client authenticates at the token endpoint from what the registration answered
//! or the server lists. This module must never choose *which* identity to use (the flow does)
//! nor send anything.

use serde::Serialize;
use serde_json::Value;
use url::Url;

use crate::config::{ClientConfig, GrantType, TokenEndpointAuth, is_loopback};
use crate::discovery::{ServerMetadata, json_object, malformed, secret_member};
use crate::error::{AuthError, quote};
use crate::store::{ClientCredentials, ClientSource};

/// The registration document (RFC 7591 2, OpenID Connect Registration `application_type`).
#[derive(Debug, Serialize)]
pub(crate) struct RegistrationRequest<'a> {
    redirect_uris: [&'a str; 1],
    client_name: &'a str,
    grant_types: [&'static str; 2],
    response_types: [&'static str; 1],
    token_endpoint_auth_method: &'static str,
    application_type: &'static str,
}

impl<'a> RegistrationRequest<'a> {
    pub(crate) fn new(config: &'a ClientConfig, metadata: &ServerMetadata) -> Self {
        Self {
            redirect_uris: [config.redirect_uri.as_str()],
            client_name: &config.client_name,
            grant_types: [
                GrantType::AuthorizationCode.as_str(),
                GrantType::RefreshToken.as_str(),
            ],
            response_types: ["code"],
            token_endpoint_auth_method: requested_auth_method(metadata).as_str(),
            application_type: config
                .redirect_url
                .as_ref()
                .map_or("native", application_type),
        }
    }
}

/// `native` for a client whose redirect comes back to this machine (loopback), `web` for one
/// whose redirect is a remote HTTPS page (the spec's guidance for `application_type`).
fn application_type(redirect_uri: &Url) -> &'static str {
    if is_loopback(redirect_uri) {
        "native"
    } else {
        "web"
    }
}

/// The method asked for at registration: `none` (a public client) where the server lists it or
/// lists nothing, else `client_secret_basic`, else `client_secret_post`.
fn requested_auth_method(metadata: &ServerMetadata) -> TokenEndpointAuth {
    match metadata.token_endpoint_auth_methods_supported.as_deref() {
        None => TokenEndpointAuth::None,
        Some(list) => [
            TokenEndpointAuth::None,
            TokenEndpointAuth::ClientSecretBasic,
            TokenEndpointAuth::ClientSecretPost,
        ]
        .into_iter()
        .find(|method| list.iter().any(|m| m == method.as_str()))
        .unwrap_or(TokenEndpointAuth::None),
    }
}

/// Reads a registration answer (201, or 200 from lenient servers, with `client_id`).
pub(crate) fn read_registration(
    endpoint: &Url,
    config: &ClientConfig,
    metadata: &ServerMetadata,
    body: &[u8],
) -> Result<ClientCredentials, AuthError> {
    const ENDPOINT: &str = "registration endpoint";
    let object = json_object(ENDPOINT, endpoint, body)?;
    let client_id = match object.get("client_id").and_then(Value::as_str) {
        Some(id) if !id.is_empty() => id.to_owned(),
        _ => return Err(malformed(ENDPOINT, endpoint, "no \"client_id\" string")),
    };
    let client_secret = secret_member(&object, "client_secret");
    let answered = object
        .get("token_endpoint_auth_method")
        .and_then(Value::as_str)
        .and_then(TokenEndpointAuth::from_wire);
    let method = answered.unwrap_or_else(|| requested_auth_method(metadata));
    Ok(ClientCredentials {
        auth_method: usable_method(method, client_secret.is_some()),
        client_id,
        client_secret,
        redirect_uri: config.redirect_uri.clone(),
        source: ClientSource::Registered,
    })
}

/// A method that needs a secret falls back to `none` without one.
fn usable_method(method: TokenEndpointAuth, has_secret: bool) -> TokenEndpointAuth {
    if has_secret {
        method
    } else {
        TokenEndpointAuth::None
    }
}

/// The method for a pre-registered client: its configured one; else `none` without a secret;
/// with one, `client_secret_basic` unless the server lists `client_secret_post` and not basic.
pub(crate) fn pre_registered_method(
    configured: Option<TokenEndpointAuth>,
    has_secret: bool,
    metadata: &ServerMetadata,
) -> TokenEndpointAuth {
    if let Some(method) = configured {
        return usable_method(method, has_secret);
    }
    if !has_secret {
        return TokenEndpointAuth::None;
    }
    let basic = metadata.lists_auth_method(TokenEndpointAuth::ClientSecretBasic.as_str());
    let post = metadata.lists_auth_method(TokenEndpointAuth::ClientSecretPost.as_str());
    if basic == Some(false) && post == Some(true) {
        TokenEndpointAuth::ClientSecretPost
    } else {
        TokenEndpointAuth::ClientSecretBasic
    }
}

/// The OAuth `error` and `error_description` of an error body (RFC 6749 5.2, RFC 7591 3.2.2),
/// clipped; absent when the body is not such an object.
pub(crate) fn oauth_error(body: &[u8]) -> (Option<String>, Option<String>) {
    let Ok(Value::Object(object)) = serde_json::from_slice::<Value>(body) else {
        return (None, None);
    };
    let text = |name: &str| object.get(name).and_then(Value::as_str).map(quote);
    (text("error"), text("error_description"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata(methods: Option<&[&str]>) -> ServerMetadata {
        let mut metadata = ServerMetadata::legacy_defaults("https://as.example").unwrap();
        metadata.token_endpoint_auth_methods_supported =
            methods.map(|list| list.iter().map(|m| (*m).to_owned()).collect());
        metadata
    }

    #[test]
    fn the_registration_document_has_every_field_the_spec_asks_for() {
        let config = ClientConfig::new("http://127.0.0.1:3000/callback")
            .unwrap()
            .with_client_name("agent");
        let body =
            serde_json::to_value(RegistrationRequest::new(&config, &metadata(None))).unwrap();
        assert_eq!(
            body,
            serde_json::json!({
                "redirect_uris": ["http://127.0.0.1:3000/callback"],
                "client_name": "agent",
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none",
                "application_type": "native",
            })
        );
        let web = ClientConfig::new("https://app.example/cb").unwrap();
        let body = serde_json::to_value(RegistrationRequest::new(&web, &metadata(None))).unwrap();
        assert_eq!(body["application_type"], "web");
    }

    #[test]
    fn the_requested_method_follows_the_servers_list() {
        assert_eq!(
            requested_auth_method(&metadata(Some(&["client_secret_basic"]))),
            TokenEndpointAuth::ClientSecretBasic
        );
        assert_eq!(
            requested_auth_method(&metadata(Some(&["client_secret_post"]))),
            TokenEndpointAuth::ClientSecretPost
        );
        assert_eq!(
            requested_auth_method(&metadata(Some(&["client_secret_basic", "none"]))),
            TokenEndpointAuth::None
        );
        assert_eq!(
            requested_auth_method(&metadata(Some(&["private_key_jwt"]))),
            TokenEndpointAuth::None
        );
    }

    #[test]
    fn the_answer_decides_the_method_and_a_secretless_one_is_public() {
        let config = ClientConfig::new("http://localhost/cb").unwrap();
        let endpoint = Url::parse("https://as.example/register").unwrap();
        let meta = metadata(Some(&["client_secret_basic"]));
        let client = read_registration(
            &endpoint,
            &config,
            &meta,
            br#"{"client_id":"c1","client_secret":"s1","token_endpoint_auth_method":"client_secret_post"}"#,
        )
        .unwrap();
        assert_eq!(client.auth_method, TokenEndpointAuth::ClientSecretPost);
        assert_eq!(client.client_secret.unwrap().expose(), "s1");
        let client =
            read_registration(&endpoint, &config, &meta, br#"{"client_id":"c2"}"#).unwrap();
        assert_eq!(client.auth_method, TokenEndpointAuth::None);
        let client = read_registration(
            &endpoint,
            &config,
            &meta,
            br#"{"client_id":"c3","client_secret":"s3"}"#,
        )
        .unwrap();
        assert_eq!(client.auth_method, TokenEndpointAuth::ClientSecretBasic);
        for bad in [&b"[]"[..], b"{}", br#"{"client_id":""}"#, b"\xff"] {
            assert!(matches!(
                read_registration(&endpoint, &config, &meta, bad),
                Err(AuthError::Malformed { .. })
            ));
        }
    }

    #[test]
    fn pre_registered_clients_follow_the_servers_list() {
        let basic_only = metadata(Some(&["client_secret_basic"]));
        let post_only = metadata(Some(&["client_secret_post"]));
        assert_eq!(
            pre_registered_method(None, true, &basic_only),
            TokenEndpointAuth::ClientSecretBasic
        );
        assert_eq!(
            pre_registered_method(None, true, &post_only),
            TokenEndpointAuth::ClientSecretPost
        );
        assert_eq!(
            pre_registered_method(None, false, &post_only),
            TokenEndpointAuth::None
        );
        assert_eq!(
            pre_registered_method(Some(TokenEndpointAuth::ClientSecretPost), true, &basic_only),
            TokenEndpointAuth::ClientSecretPost
        );
    }

    #[test]
    fn oauth_errors_are_read_and_clipped() {
        let (error, description) =
            oauth_error(br#"{"error":"invalid_redirect_uri","error_description":"bad\nuri"}"#);
        assert_eq!(error.as_deref(), Some("invalid_redirect_uri"));
        assert_eq!(description.as_deref(), Some("bad uri"));
        assert_eq!(oauth_error(b"<html>"), (None, None));
    }
}
