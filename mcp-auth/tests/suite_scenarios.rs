//! The official conformance suite's client authorization scenarios (`auth/*`), each as a test
//! of the state machine against the suite's servers played by a scripted world: the requests
//! in order, their parameters and headers, and what must be refused.

mod world;

use http::Method;
use mcp_auth::{AuthError, PreRegisteredClient, TokenEndpointAuth};

use world::*;

/// The checks every full flow of the suite makes: PKCE S256 with a matching verifier, and the
/// `resource` sent exactly as the resource metadata published it in both requests.
fn assert_pkce_and_resource(world: &World, expected_resource: &str) {
    let challenge = world.last_authorize_param("code_challenge").unwrap();
    assert_eq!(
        world
            .last_authorize_param("code_challenge_method")
            .as_deref(),
        Some("S256")
    );
    assert_eq!(
        world.last_authorize_param("resource").as_deref(),
        Some(expected_resource)
    );
    let token = world.sent("oauth:token");
    let form = token.last().unwrap().form();
    let verifier = &form["code_verifier"];
    assert!(verifier.len() >= 43);
    use base64::Engine as _;
    use sha2::Digest as _;
    let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(sha2::Sha256::digest(verifier.as_bytes()));
    assert_eq!(computed, challenge);
    assert_eq!(form["resource"], expected_resource);
    assert_eq!(form["grant_type"], "authorization_code");
    assert_eq!(form["code"], "test-auth-code");
    assert_eq!(form["redirect_uri"], REDIRECT);
}

// ---- auth/metadata-* -------------------------------------------------------------------

#[test]
fn metadata_default_uses_the_header_url_and_never_the_root_prm() {
    let (mut world, mut flow) = World::standard(&AsOpts::default());
    world.route(
        Method::GET,
        &format!("{SERVER}/.well-known/oauth-protected-resource"),
        404,
        "trap",
    );
    let token = world.run(&mut flow).unwrap();
    assert_eq!(
        world.urls(),
        [
            "http://localhost:3000/.well-known/oauth-protected-resource/mcp",
            "http://localhost:4000/.well-known/oauth-authorization-server",
            "http://localhost:4000/register",
            "http://localhost:4000/token",
        ]
    );
    assert_eq!(
        world.labels(),
        [
            "oauth:resource-metadata",
            "oauth:server-metadata",
            "oauth:register",
            "oauth:token"
        ]
    );
    assert_pkce_and_resource(&world, SERVER_URL);
    assert_eq!(token.authorization_header(), "Bearer test-token-1");
    assert_eq!(token.issuer(), AS);
    assert_eq!(token.resource(), SERVER_URL);
}

#[test]
fn metadata_var1_path_prm_without_header_and_openid_configuration() {
    let mut world = World::with_servers(&AsOpts {
        metadata_path: "/.well-known/openid-configuration".into(),
        ..AsOpts::default()
    });
    let mut flow = world.flow(unauthorized(None, None), world.config());
    world.run(&mut flow).unwrap();
    assert_eq!(
        &world.urls()[..3],
        [
            "http://localhost:3000/.well-known/oauth-protected-resource/mcp",
            "http://localhost:4000/.well-known/oauth-authorization-server",
            "http://localhost:4000/.well-known/openid-configuration",
        ]
    );
    assert_pkce_and_resource(&world, SERVER_URL);
}

#[test]
fn metadata_var2_root_prm_and_issuer_with_a_path() {
    let mut world = World::new();
    // The root document's resource is the bare origin, without a slash: kept exactly.
    world.resource_metadata(
        "/.well-known/oauth-protected-resource",
        SERVER,
        &["http://localhost:4000/tenant1"],
        None,
    );
    let opts = AsOpts {
        metadata_path: "/.well-known/oauth-authorization-server/tenant1".into(),
        prefix: "/tenant1".into(),
        ..AsOpts::default()
    };
    world.auth_server(&opts);
    let mut flow = world.flow(unauthorized(None, None), world.config());
    world.run(&mut flow).unwrap();
    assert_eq!(
        world.urls(),
        [
            "http://localhost:3000/.well-known/oauth-protected-resource/mcp",
            "http://localhost:3000/.well-known/oauth-protected-resource",
            "http://localhost:4000/.well-known/oauth-authorization-server/tenant1",
            "http://localhost:4000/tenant1/register",
            "http://localhost:4000/tenant1/token",
        ]
    );
    assert_pkce_and_resource(&world, "http://localhost:3000");
}

#[test]
fn metadata_var3_custom_prm_location_and_appended_openid_configuration() {
    let mut world = World::new();
    world.resource_metadata(
        "/custom/metadata/location.json",
        SERVER_URL,
        &["http://localhost:4000/tenant1"],
        None,
    );
    world.auth_server(&AsOpts {
        metadata_path: "/tenant1/.well-known/openid-configuration".into(),
        prefix: "/tenant1".into(),
        ..AsOpts::default()
    });
    let header = format!("{SERVER}/custom/metadata/location.json");
    let mut flow = world.flow(unauthorized(Some(&header), None), world.config());
    world.run(&mut flow).unwrap();
    assert_eq!(
        &world.urls()[..4],
        [
            "http://localhost:3000/custom/metadata/location.json",
            "http://localhost:4000/.well-known/oauth-authorization-server/tenant1",
            "http://localhost:4000/.well-known/openid-configuration/tenant1",
            "http://localhost:4000/tenant1/.well-known/openid-configuration",
        ]
    );
    assert!(
        !world
            .urls()
            .contains(&"http://localhost:4000/.well-known/oauth-authorization-server")
    );
}

// ---- auth/basic-cimd ----------------------------------------------------------------------

const CIMD: &str = "https://conformance-test.local/client-metadata.json";

#[test]
fn basic_cimd_uses_the_document_url_as_client_id_without_registering() {
    let mut world = World::with_servers(&AsOpts {
        cimd: Some(true),
        ..AsOpts::default()
    });
    let config = world.config().with_metadata_document(CIMD).unwrap();
    let mut flow = world.flow(unauthorized(Some(&prm_url()), None), config);
    world.run(&mut flow).unwrap();
    assert!(world.sent("oauth:register").is_empty());
    assert_eq!(
        world.last_authorize_param("client_id").as_deref(),
        Some(CIMD)
    );
    let token = world.sent("oauth:token");
    let form = token[0].form();
    assert_eq!(form["client_id"], CIMD);
    assert!(!form.contains_key("client_secret"));
    assert!(token[0].headers.get("authorization").is_none());
}

#[test]
fn a_document_url_is_not_used_where_the_server_does_not_advertise_it() {
    let mut world = World::with_servers(&AsOpts::default());
    let config = world.config().with_metadata_document(CIMD).unwrap();
    let mut flow = world.flow(unauthorized(Some(&prm_url()), None), config);
    world.run(&mut flow).unwrap();
    assert_eq!(world.sent("oauth:register").len(), 1);
    assert_eq!(
        world.last_authorize_param("client_id").as_deref(),
        Some("test-client-id")
    );
}

// ---- auth/2025-03-26-* --------------------------------------------------------------------

#[test]
fn legacy_metadata_backcompat_finds_metadata_at_the_server_origin() {
    let mut world = World::new();
    world.auth_server(&AsOpts {
        base: SERVER.into(),
        prefix: "/oauth".into(),
        issuer: Some(SERVER.into()),
        ..AsOpts::default()
    });
    let mut flow = world.flow(unauthorized(None, None), world.config());
    world.run(&mut flow).unwrap();
    assert_eq!(
        world.urls(),
        [
            "http://localhost:3000/.well-known/oauth-protected-resource/mcp",
            "http://localhost:3000/.well-known/oauth-protected-resource",
            "http://localhost:3000/.well-known/oauth-authorization-server",
            "http://localhost:3000/oauth/register",
            "http://localhost:3000/oauth/token",
        ]
    );
    assert_pkce_and_resource(&world, SERVER_URL);
}

#[test]
fn legacy_endpoint_fallback_uses_the_default_paths_at_the_origin() {
    let mut world = World::new();
    world.route(
        Method::POST,
        &format!("{SERVER}/register"),
        201,
        r#"{"client_id":"test-client-id","client_secret":"test-client-secret"}"#,
    );
    world.route(
        Method::POST,
        &format!("{SERVER}/token"),
        200,
        r#"{"access_token":"test-token","token_type":"Bearer","expires_in":3600}"#,
    );
    world.iss = Iss::Omit;
    let mut flow = world.flow(unauthorized(None, None), world.config());
    let token = world.run(&mut flow).unwrap();
    assert_eq!(
        world.urls(),
        [
            "http://localhost:3000/.well-known/oauth-protected-resource/mcp",
            "http://localhost:3000/.well-known/oauth-protected-resource",
            "http://localhost:3000/.well-known/oauth-authorization-server",
            "http://localhost:3000/.well-known/openid-configuration",
            "http://localhost:3000/register",
            "http://localhost:3000/token",
        ]
    );
    let authorize = world.authorize_urls[0].clone();
    assert_eq!(
        format!(
            "{}{}",
            authorize.origin().ascii_serialization(),
            authorize.path()
        ),
        "http://localhost:3000/authorize"
    );
    assert_pkce_and_resource(&world, SERVER_URL);
    assert_eq!(token.authorization_header(), "Bearer test-token");
}

// ---- auth/scope-* -------------------------------------------------------------------------

#[test]
fn scope_from_www_authenticate() {
    let mut world = World::new();
    world.resource_metadata(PRM_PATH, SERVER_URL, &[AS], Some(&["other"]));
    world.auth_server(&AsOpts::default());
    let mut flow = world.flow(
        unauthorized(Some(&prm_url()), Some("mcp:basic")),
        world.config(),
    );
    world.run(&mut flow).unwrap();
    assert_eq!(
        world.last_authorize_param("scope").as_deref(),
        Some("mcp:basic")
    );
}

#[test]
fn scope_from_scopes_supported() {
    let mut world = World::new();
    world.resource_metadata(
        PRM_PATH,
        SERVER_URL,
        &[AS],
        Some(&["mcp:basic", "mcp:read", "mcp:write"]),
    );
    world.auth_server(&AsOpts::default());
    let mut flow = world.standard_flow();
    world.run(&mut flow).unwrap();
    assert_eq!(
        world.last_authorize_param("scope").as_deref(),
        Some("mcp:basic mcp:read mcp:write")
    );
}

#[test]
fn scope_omitted_when_undefined() {
    let (mut world, mut flow) = World::standard(&AsOpts::default());
    let token = world.run(&mut flow).unwrap();
    assert_eq!(world.last_authorize_param("scope"), None);
    assert_eq!(token.scope(), None);
}

#[test]
fn a_configured_scope_replaces_scopes_supported_but_not_the_challenge() {
    let mut world = World::new();
    world.resource_metadata(PRM_PATH, SERVER_URL, &[AS], Some(&["a"]));
    world.auth_server(&AsOpts::default());
    let config = world.config().with_scope("mine");
    let mut flow = world.flow(unauthorized(Some(&prm_url()), None), config.clone());
    world.run(&mut flow).unwrap();
    assert_eq!(world.last_authorize_param("scope").as_deref(), Some("mine"));
    let mut world = World::new();
    world.resource_metadata(PRM_PATH, SERVER_URL, &[AS], Some(&["a"]));
    world.auth_server(&AsOpts::default());
    let mut flow = world.flow(unauthorized(Some(&prm_url()), Some("needed")), config);
    world.run(&mut flow).unwrap();
    assert_eq!(
        world.last_authorize_param("scope").as_deref(),
        Some("needed")
    );
}

#[test]
fn scope_step_up_in_the_same_operation_asks_for_the_union() {
    let mut world = World::new();
    world.resource_metadata(PRM_PATH, SERVER_URL, &[AS], Some(&["mcp:profile"]));
    world.auth_server(&AsOpts::default());
    let mut flow = world.flow(
        unauthorized(Some(&prm_url()), Some("mcp:basic")),
        world.config(),
    );
    world.run(&mut flow).unwrap();
    assert_eq!(
        world.last_authorize_param("scope").as_deref(),
        Some("mcp:basic")
    );
    let mut flow = flow.rechallenge(insufficient_scope(Some(&prm_url()), "mcp:write"));
    let token = world.run(&mut flow).unwrap();
    assert_eq!(
        world.last_authorize_param("scope").as_deref(),
        Some("mcp:basic mcp:write")
    );
    assert_eq!(token.scope(), Some("mcp:basic mcp:write"));
    // A step-up never refreshes (a refresh cannot widen a grant) and reuses the registration.
    assert!(world.sent("oauth:refresh").is_empty());
    assert_eq!(world.sent("oauth:register").len(), 1);
    assert_eq!(world.authorize_urls.len(), 2);
}

#[test]
fn scope_step_up_in_a_later_operation_keeps_the_stored_grant() {
    let mut world = World::new();
    world.resource_metadata(PRM_PATH, SERVER_URL, &[AS], Some(&["mcp:profile"]));
    world.auth_server(&AsOpts {
        refresh_token: Some("refresh-1"),
        ..AsOpts::default()
    });
    let mut flow = world.flow(
        unauthorized(Some(&prm_url()), Some("mcp:basic")),
        world.config(),
    );
    world.run(&mut flow).unwrap();
    // tools/call, a new operation, meets a 403: a fresh flow over the same store.
    let mut flow = world.flow(
        insufficient_scope(Some(&prm_url()), "mcp:write"),
        world.config(),
    );
    world.run(&mut flow).unwrap();
    assert_eq!(
        world.last_authorize_param("scope").as_deref(),
        Some("mcp:basic mcp:write")
    );
    assert!(world.sent("oauth:refresh").is_empty());
}

#[test]
fn scope_retry_limit_stops_after_three_authorizations() {
    let mut world = World::new();
    world.resource_metadata(PRM_PATH, SERVER_URL, &[AS], Some(&["mcp:admin"]));
    world.auth_server(&AsOpts::default());
    let mut flow = world.flow(
        unauthorized(Some(&prm_url()), Some("mcp:admin")),
        world.config(),
    );
    world.run(&mut flow).unwrap();
    let mut outcome = Ok(());
    for _ in 0..5 {
        flow = flow.rechallenge(insufficient_scope(Some(&prm_url()), "mcp:admin"));
        match world.run(&mut flow) {
            Ok(_) => {}
            Err(error) => {
                outcome = Err(error);
                break;
            }
        }
    }
    assert_eq!(world.authorize_urls.len(), 3);
    let error = outcome.unwrap_err();
    assert_eq!(
        error,
        AuthError::ScopeStepUpExhausted {
            server: SERVER_URL.into(),
            attempts: 3,
            scope: "mcp:admin".into()
        }
    );
    assert!(error.to_string().contains("after 3 authorizations"));
}

#[test]
fn repeated_401s_to_fresh_tokens_also_stop() {
    let (mut world, mut flow) = World::standard(&AsOpts::default());
    world.run(&mut flow).unwrap();
    for _ in 0..2 {
        flow = flow.rechallenge(unauthorized(Some(&prm_url()), None));
        world.run(&mut flow).unwrap();
    }
    flow = flow.rechallenge(unauthorized(Some(&prm_url()), None));
    assert!(matches!(
        world.run(&mut flow),
        Err(AuthError::TokenNotAccepted { attempts: 3, .. })
    ));
}

// ---- auth/token-endpoint-auth-* -----------------------------------------------------------

fn token_endpoint_auth(method: &'static str) -> World {
    let (mut world, mut flow) = World::standard(&AsOpts {
        auth_methods: vec![method],
        client_id: "test-client-1".into(),
        client_secret: (method != "none").then(|| "test-secret-1".into()),
        registered_method: Some(method),
        ..AsOpts::default()
    });
    world.run(&mut flow).unwrap();
    let registration = world.sent("oauth:register")[0].json();
    assert_eq!(registration["token_endpoint_auth_method"], method);
    world
}

#[test]
fn token_endpoint_auth_basic() {
    let world = token_endpoint_auth("client_secret_basic");
    let token = world.sent("oauth:token")[0].clone();
    let header = token.headers["authorization"].to_str().unwrap().to_owned();
    use base64::Engine as _;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(header.strip_prefix("Basic ").unwrap())
        .unwrap();
    assert_eq!(decoded, b"test-client-1:test-secret-1");
    // The id in the form too (servers such as the Python SDK's read it there), never the
    // secret.
    let form = token.form();
    assert!(!form.contains_key("client_secret"));
    assert_eq!(form["client_id"], "test-client-1");
    assert_pkce_and_resource(&world, SERVER_URL);
}

#[test]
fn token_endpoint_auth_post() {
    let world = token_endpoint_auth("client_secret_post");
    let token = world.sent("oauth:token")[0].clone();
    assert!(token.headers.get("authorization").is_none());
    let form = token.form();
    assert_eq!(form["client_id"], "test-client-1");
    assert_eq!(form["client_secret"], "test-secret-1");
}

#[test]
fn token_endpoint_auth_none() {
    let world = token_endpoint_auth("none");
    let token = world.sent("oauth:token")[0].clone();
    assert!(token.headers.get("authorization").is_none());
    let form = token.form();
    assert_eq!(form["client_id"], "test-client-1");
    assert!(!form.contains_key("client_secret"));
}

// ---- auth/pre-registration ----------------------------------------------------------------

#[test]
fn pre_registration_uses_basic_auth_and_never_registers() {
    let mut world = World::with_servers(&AsOpts {
        dcr: false,
        auth_methods: vec!["client_secret_basic"],
        ..AsOpts::default()
    });
    let config = world.config().with_pre_registered(
        PreRegisteredClient::new(AS, "pre-registered-client").with_secret("pre-registered-secret"),
    );
    let mut flow = world.flow(unauthorized(Some(&prm_url()), None), config);
    world.run(&mut flow).unwrap();
    assert!(world.sent("oauth:register").is_empty());
    assert_eq!(
        world.last_authorize_param("client_id").as_deref(),
        Some("pre-registered-client")
    );
    let token = world.sent("oauth:token")[0].clone();
    let header = token.headers["authorization"].to_str().unwrap().to_owned();
    use base64::Engine as _;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(header.strip_prefix("Basic ").unwrap())
        .unwrap();
    assert_eq!(decoded, b"pre-registered-client:pre-registered-secret");
}

#[test]
fn credentials_for_any_issuer_go_to_the_issuer_the_server_names() {
    let mut world = World::with_servers(&AsOpts {
        dcr: false,
        auth_methods: vec!["client_secret_basic"],
        ..AsOpts::default()
    });
    let config = world.config().with_pre_registered(
        PreRegisteredClient::for_any_issuer("pre-registered-client")
            .with_secret("pre-registered-secret"),
    );
    let mut flow = world.flow(unauthorized(Some(&prm_url()), None), config);
    let token = world.run(&mut flow).unwrap();
    assert_eq!(token.issuer(), AS);
    assert!(world.sent("oauth:register").is_empty());
    assert_eq!(
        world.last_authorize_param("client_id").as_deref(),
        Some("pre-registered-client")
    );
}

#[test]
fn pre_registered_credentials_are_not_offered_to_another_issuer() {
    let mut world = World::with_servers(&AsOpts::default());
    let config = world.config().with_pre_registered(
        PreRegisteredClient::new("https://other-as.example", "pre-registered-client")
            .with_secret("pre-registered-secret"),
    );
    let mut flow = world.flow(unauthorized(Some(&prm_url()), None), config);
    let error = world.run(&mut flow).unwrap_err();
    assert!(matches!(
        error,
        AuthError::PreRegisteredForOtherIssuer { .. }
    ));
    assert_eq!(
        world.labels(),
        ["oauth:resource-metadata", "oauth:server-metadata"]
    );
    assert!(world.authorize_urls.is_empty());
}

#[test]
fn the_pre_registered_issuer_is_chosen_among_several() {
    let mut world = World::new();
    let other = "http://localhost:5000";
    world.resource_metadata(PRM_PATH, SERVER_URL, &[other, AS], None);
    world.auth_server(&AsOpts {
        dcr: false,
        ..AsOpts::default()
    });
    let config = world
        .config()
        .with_pre_registered(PreRegisteredClient::new(AS, "pre"));
    let mut flow = world.flow(unauthorized(Some(&prm_url()), None), config);
    let token = world.run(&mut flow).unwrap();
    assert_eq!(token.issuer(), AS);
    assert!(!world.urls().iter().any(|u| u.starts_with(other)));
}

// ---- auth/resource-mismatch ---------------------------------------------------------------

#[test]
fn resource_mismatch_is_refused_before_anything_else() {
    let mut world = World::new();
    world.resource_metadata(PRM_PATH, "https://evil.example.com/mcp", &[AS], None);
    world.auth_server(&AsOpts::default());
    let mut flow = world.standard_flow();
    let error = world.run(&mut flow).unwrap_err();
    assert_eq!(
        error,
        AuthError::ResourceMismatch {
            server: SERVER_URL.into(),
            resource: "https://evil.example.com/mcp".into()
        }
    );
    assert_eq!(world.labels(), ["oauth:resource-metadata"]);
    assert!(world.authorize_urls.is_empty());
}

// ---- auth/offline-access-* ----------------------------------------------------------------

#[test]
fn offline_access_scope_is_added_when_the_server_lists_it() {
    let mut world = World::new();
    world.resource_metadata(PRM_PATH, SERVER_URL, &[AS], Some(&["mcp:basic"]));
    world.auth_server(&AsOpts {
        scopes_supported: Some(vec!["mcp:basic", "offline_access"]),
        cimd: Some(true),
        client_secret: None,
        registered_method: Some("none"),
        ..AsOpts::default()
    });
    let mut flow = world.standard_flow();
    world.run(&mut flow).unwrap();
    assert_eq!(
        world.last_authorize_param("scope").as_deref(),
        Some("mcp:basic offline_access")
    );
    let registration = world.sent("oauth:register")[0].json();
    assert_eq!(
        registration["grant_types"],
        serde_json::json!(["authorization_code", "refresh_token"])
    );
}

#[test]
fn offline_access_not_requested_when_not_listed() {
    let mut world = World::new();
    world.resource_metadata(
        PRM_PATH,
        SERVER_URL,
        &[AS],
        Some(&["mcp:basic", "mcp:read"]),
    );
    world.auth_server(&AsOpts {
        scopes_supported: Some(vec!["mcp:basic", "mcp:read"]),
        ..AsOpts::default()
    });
    let mut flow = world.standard_flow();
    world.run(&mut flow).unwrap();
    assert_eq!(
        world.last_authorize_param("scope").as_deref(),
        Some("mcp:basic mcp:read")
    );
}

// ---- auth/authorization-server-migration --------------------------------------------------

#[test]
fn authorization_server_migration_registers_again_and_keeps_credentials_apart() {
    let as2 = "http://localhost:5000";
    let mut world = World::with_servers(&AsOpts {
        client_id: "as1-client-id-LEAKED-IF-SEEN-AT-AS2".into(),
        client_secret: Some("as1-client-secret".into()),
        refresh_token: Some("as1-refresh"),
        ..AsOpts::default()
    });
    world.auth_server(&AsOpts {
        base: as2.into(),
        client_id: "as2-client-id".into(),
        client_secret: Some("as2-client-secret".into()),
        access_token: "test-token-as2-1".into(),
        ..AsOpts::default()
    });
    let mut flow = world.flow(
        unauthorized(Some(&prm_url()), Some("mcp:basic")),
        world.config(),
    );
    world.run(&mut flow).unwrap();
    // The server moves to AS2: its token from AS1 now meets a 401 (a new operation).
    world.resource_metadata(PRM_PATH, SERVER_URL, &[as2], None);
    let first = world.seen.len();
    let mut flow = world.flow(
        unauthorized(Some(&prm_url()), Some("mcp:basic")),
        world.config(),
    );
    let token = world.run(&mut flow).unwrap();
    assert_eq!(token.issuer(), as2);
    assert_eq!(token.authorization_header(), "Bearer test-token-as2-1");
    let later: Vec<_> = world.seen[first..].iter().collect();
    assert_eq!(
        later.iter().map(|s| s.url.as_str()).collect::<Vec<_>>(),
        [
            "http://localhost:3000/.well-known/oauth-protected-resource/mcp",
            "http://localhost:5000/.well-known/oauth-authorization-server",
            "http://localhost:5000/register",
            "http://localhost:5000/token",
        ]
    );
    for seen in &later {
        let text = format!("{} {} {:?}", seen.url, seen.body, seen.headers);
        assert!(!text.contains("as1-client"), "{text}");
        assert!(!text.contains("as1-refresh"), "{text}");
    }
    assert_eq!(
        world.last_authorize_param("client_id").as_deref(),
        Some("as2-client-id")
    );
}

// ---- auth/iss-* ---------------------------------------------------------------------------

fn iss_world(iss_supported: Option<bool>, iss: Iss) -> (World, Result<(), AuthError>) {
    let mut world = World::with_servers(&AsOpts {
        iss_supported,
        ..AsOpts::default()
    });
    world.iss = iss;
    let mut flow = world.standard_flow();
    let outcome = world.run(&mut flow).map(|_| ());
    (world, outcome)
}

#[test]
fn iss_supported_and_correct_proceeds_to_the_token() {
    let (world, outcome) = iss_world(Some(true), Iss::Correct);
    outcome.unwrap();
    assert_eq!(world.sent("oauth:token").len(), 1);
}

#[test]
fn iss_not_advertised_and_absent_proceeds() {
    let (world, outcome) = iss_world(None, Iss::Omit);
    outcome.unwrap();
    assert_eq!(world.sent("oauth:token").len(), 1);
}

#[test]
fn iss_supported_but_missing_is_refused_before_the_token_request() {
    let (world, outcome) = iss_world(Some(true), Iss::Omit);
    assert_eq!(outcome, Err(AuthError::IssMissing { issuer: AS.into() }));
    assert_eq!(world.authorize_urls.len(), 1);
    assert!(world.sent("oauth:token").is_empty());
}

#[test]
fn iss_wrong_issuer_is_refused() {
    let (world, outcome) = iss_world(Some(true), Iss::Wrong);
    assert_eq!(
        outcome,
        Err(AuthError::IssMismatch {
            issuer: AS.into(),
            found: "https://evil.example.com".into()
        })
    );
    assert!(world.sent("oauth:token").is_empty());
}

#[test]
fn iss_unexpected_is_compared_even_when_not_advertised() {
    let (world, outcome) = iss_world(None, Iss::Wrong);
    assert!(matches!(outcome, Err(AuthError::IssMismatch { .. })));
    assert!(world.sent("oauth:token").is_empty());
}

#[test]
fn iss_normalized_with_a_trailing_slash_is_a_mismatch() {
    let (world, outcome) = iss_world(Some(true), Iss::Normalized);
    assert_eq!(
        outcome,
        Err(AuthError::IssMismatch {
            issuer: AS.into(),
            found: format!("{AS}/")
        })
    );
    assert!(world.sent("oauth:token").is_empty());
}

// ---- auth/metadata-issuer-mismatch --------------------------------------------------------

#[test]
fn metadata_issuer_mismatch_uses_none_of_the_poisoned_endpoints() {
    let (mut world, mut flow) = World::standard(&AsOpts {
        issuer: Some("https://attacker.example.com".into()),
        prefix: "/mismatched-as".into(),
        ..AsOpts::default()
    });
    let error = world.run(&mut flow).unwrap_err();
    assert!(matches!(error, AuthError::IssuerMismatch { .. }));
    assert_eq!(
        world.labels(),
        ["oauth:resource-metadata", "oauth:server-metadata"]
    );
    assert!(world.authorize_urls.is_empty());
}

// ---- beyond the suite: the rest of the rules ----------------------------------------------

#[test]
fn dcr_sends_the_native_registration_document() {
    let (mut world, mut flow) = World::standard(&AsOpts::default());
    world.run(&mut flow).unwrap();
    let registration = world.sent("oauth:register")[0];
    assert_eq!(registration.headers["content-type"], "application/json");
    assert_eq!(
        registration.json(),
        serde_json::json!({
            "redirect_uris": [REDIRECT],
            "client_name": "conformance-client",
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            "application_type": "native",
        })
    );
}

#[test]
fn a_registration_is_reused_at_the_same_issuer() {
    let mut world = World::with_servers(&AsOpts::default());
    for _ in 0..2 {
        let mut flow = world.standard_flow();
        world.run(&mut flow).unwrap();
    }
    assert_eq!(world.sent("oauth:register").len(), 1);
    assert_eq!(world.authorize_urls.len(), 2);
}

#[test]
fn a_stored_refresh_token_is_used_before_a_full_authorization() {
    let (mut world, mut flow) = World::standard(&AsOpts {
        refresh_token: Some("refresh-1"),
        ..AsOpts::default()
    });
    world.run(&mut flow).unwrap();
    // Later, the access token expires: a 401, and the stored refresh token is used.
    let first = world.seen.len();
    let mut flow = world.standard_flow();
    world.run(&mut flow).unwrap();
    let later: Vec<_> = world.seen[first..].iter().map(|s| s.label).collect();
    assert_eq!(
        later,
        [
            "oauth:resource-metadata",
            "oauth:server-metadata",
            "oauth:refresh"
        ]
    );
    assert_eq!(world.authorize_urls.len(), 1);
    let form = world.sent("oauth:refresh")[0].form();
    assert_eq!(form["grant_type"], "refresh_token");
    assert_eq!(form["refresh_token"], "refresh-1");
    assert_eq!(form["resource"], SERVER_URL);
    assert_eq!(form["client_id"], "test-client-id");
}

#[test]
fn a_refused_refresh_falls_back_to_a_full_authorization() {
    let (mut world, mut flow) = World::standard(&AsOpts {
        refresh_token: Some("refresh-1"),
        ..AsOpts::default()
    });
    world.run(&mut flow).unwrap();
    // The next token request (the refresh) is refused; the one after it succeeds.
    let token_url = format!("{AS}/token");
    world.route(
        Method::POST,
        &token_url,
        400,
        r#"{"error":"invalid_grant"}"#,
    );
    let mut flow = world.standard_flow();
    let mut refreshed = false;
    let token = world
        .run_with(&mut flow, |world, label| {
            if label == "oauth:refresh" {
                refreshed = true;
                world.route(
                    Method::POST,
                    &token_url,
                    200,
                    r#"{"access_token":"fresh","token_type":"Bearer"}"#,
                );
            }
        })
        .unwrap();
    assert!(refreshed);
    assert_eq!(token.authorization_header(), "Bearer fresh");
}

#[test]
fn without_an_authorizer_the_flow_ends_with_authorization_required() {
    let mut world = World::with_servers(&AsOpts::default());
    world.has_authorizer = false;
    let mut flow = world.standard_flow();
    let error = world.run(&mut flow).unwrap_err();
    assert_eq!(
        error,
        AuthError::AuthorizationRequired {
            server: SERVER_URL.into(),
            issuer: AS.into()
        }
    );
    assert_eq!(error.fault(), mcp_auth::Fault::Caller);
    assert!(world.sent("oauth:token").is_empty());
}

#[test]
fn a_server_without_pkce_s256_is_refused() {
    let (mut world, mut flow) = World::standard(&AsOpts {
        pkce: false,
        ..AsOpts::default()
    });
    assert_eq!(
        world.run(&mut flow),
        Err(AuthError::PkceUnsupported { issuer: AS.into() })
    );
}

#[test]
fn redirects_from_endpoints_are_errors_not_followed() {
    let mut world = World::new();
    world.route(Method::GET, &prm_url(), 302, "");
    let mut flow = world.standard_flow();
    assert_eq!(
        world.run(&mut flow),
        Err(AuthError::Redirected {
            endpoint: "protected resource metadata",
            url: prm_url(),
            status: 302
        })
    );
    assert_eq!(world.seen.len(), 1);

    let mut world = World::with_servers(&AsOpts::default());
    world.route(Method::POST, &format!("{AS}/token"), 307, "");
    let mut flow = world.standard_flow();
    assert!(matches!(
        world.run(&mut flow),
        Err(AuthError::Redirected {
            endpoint: "token endpoint",
            status: 307,
            ..
        })
    ));
}

#[test]
fn refusals_are_typed_with_the_oauth_error() {
    let mut world = World::with_servers(&AsOpts::default());
    world.route(
        Method::POST,
        &format!("{AS}/register"),
        400,
        r#"{"error":"invalid_redirect_uri","error_description":"loopback only"}"#,
    );
    let mut flow = world.standard_flow();
    assert_eq!(
        world.run(&mut flow),
        Err(AuthError::RegistrationFailed {
            endpoint: format!("{AS}/register"),
            status: 400,
            error: Some("invalid_redirect_uri".into()),
            description: Some("loopback only".into())
        })
    );

    let mut world = World::with_servers(&AsOpts::default());
    world.route(
        Method::POST,
        &format!("{AS}/token"),
        400,
        r#"{"error":"invalid_grant"}"#,
    );
    let mut flow = world.standard_flow();
    let error = world.run(&mut flow).unwrap_err();
    assert!(matches!(
        error,
        AuthError::TokenRejected { status: 400, ref error, .. } if error.as_deref() == Some("invalid_grant")
    ));
}

#[test]
fn metadata_found_nowhere_after_a_prm_is_an_error() {
    let mut world = World::new();
    world.resource_metadata(PRM_PATH, SERVER_URL, &[AS], None);
    let mut flow = world.standard_flow();
    let error = world.run(&mut flow).unwrap_err();
    assert_eq!(
        error,
        AuthError::MetadataNotFound {
            issuer: AS.into(),
            tried: "http://localhost:4000/.well-known/oauth-authorization-server, http://localhost:4000/.well-known/openid-configuration".into()
        }
    );
}

#[test]
fn a_prm_without_authorization_servers_is_refused() {
    let mut world = World::new();
    world.resource_metadata(PRM_PATH, SERVER_URL, &[], None);
    let mut flow = world.standard_flow();
    assert!(matches!(
        world.run(&mut flow),
        Err(AuthError::NoAuthorizationServer { .. })
    ));
}

#[test]
fn no_client_identity_without_registration_endpoint() {
    let (mut world, mut flow) = World::standard(&AsOpts {
        dcr: false,
        ..AsOpts::default()
    });
    assert_eq!(
        world.run(&mut flow),
        Err(AuthError::NoClientIdentity { issuer: AS.into() })
    );
}

#[test]
fn tokens_are_stored_per_issuer_and_resource_with_their_lifetime() {
    use mcp_auth::CredentialStore as _;
    let (mut world, mut flow) = World::standard(&AsOpts::default());
    let token = world.run(&mut flow).unwrap();
    let stored = world.store.tokens(AS, SERVER_URL).unwrap();
    assert_eq!(stored.access_token.expose(), "test-token-1");
    assert_eq!(
        stored.expires_at,
        Some(world.now + std::time::Duration::from_secs(3600))
    );
    assert!(!token.is_expired(world.now));
    assert!(token.is_expired(world.now + std::time::Duration::from_secs(3600)));
    assert_eq!(world.store.client(AS).unwrap().client_id, "test-client-id");
    assert_eq!(
        TokenEndpointAuth::None,
        world.store.client(AS).unwrap().auth_method
    );
}

// ---- extensions: grants without a person ----------------------------------------------------

const CC_CLIENT_ID: &str = "conformance-test-client";
const CC_CLIENT_SECRET: &str = "conformance-test-secret";
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// The suite's authorization server for an extension scenario: its grant types and methods.
fn extension_world(grant_types: Vec<&'static str>, auth_methods: Vec<&'static str>) -> World {
    World::with_servers(&AsOpts {
        grant_types,
        auth_methods,
        ..AsOpts::default()
    })
}

fn headless_flow(world: &World, grant: mcp_auth::Grant) -> mcp_auth::AuthFlow {
    world.flow(
        unauthorized(Some(&prm_url()), None),
        mcp_auth::ClientConfig::headless(grant).unwrap(),
    )
}

/// What every grant without a person does: discovery, then straight to the token endpoint;
/// no registration, no browser.
fn assert_no_person(world: &World) {
    assert!(world.authorize_urls.is_empty());
    assert!(world.sent("oauth:register").is_empty());
    assert!(world.sent("oauth:token").is_empty());
}

/// `Authorization: Basic` split as the suite splits it (`split(':')`, no decoding).
fn basic_credentials(seen: &Seen) -> Option<(String, String)> {
    use base64::Engine as _;
    let header = seen.headers.get("authorization")?.to_str().ok()?;
    let encoded = header.strip_prefix("Basic ")?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (id, secret) = text.split_once(':')?;
    Some((id.to_owned(), secret.to_owned()))
}

#[test]
fn client_credentials_basic_sends_the_grant_with_http_basic_and_no_person() {
    let mut world = extension_world(vec!["client_credentials"], vec!["client_secret_basic"]);
    world.server = Some(Box::new(|seen: &Seen| {
        if seen.label != "oauth:client-credentials" {
            return None;
        }
        let form = seen.form();
        // client-credentials-grant-type, client-credentials-basic-auth
        if form["grant_type"] != "client_credentials" {
            return Some(Reply::json(
                400,
                serde_json::json!({"error": "unsupported_grant_type"}),
            ));
        }
        if basic_credentials(seen) != Some((CC_CLIENT_ID.into(), CC_CLIENT_SECRET.into())) {
            return Some(Reply::json(
                401,
                serde_json::json!({"error": "invalid_client"}),
            ));
        }
        let scope = form.get("scope").cloned();
        let mut answer = serde_json::json!({"access_token": "cc-token-1", "token_type": "Bearer", "expires_in": 3600});
        if let Some(scope) = scope {
            answer["scope"] = serde_json::json!(scope);
        }
        Some(Reply::json(200, answer))
    }));
    let mut flow = headless_flow(
        &world,
        mcp_auth::Grant::client_credentials(CC_CLIENT_ID, CC_CLIENT_SECRET),
    );
    let token = world.run(&mut flow).unwrap();
    assert_eq!(
        world.labels(),
        [
            "oauth:resource-metadata",
            "oauth:server-metadata",
            "oauth:client-credentials"
        ]
    );
    assert_no_person(&world);
    let request = world.sent("oauth:client-credentials")[0];
    assert_eq!(request.url, format!("{AS}/token"));
    assert!(request.headers["authorization"].is_sensitive());
    let form = request.form();
    assert_eq!(form["resource"], SERVER_URL);
    assert!(!form.contains_key("client_secret"));
    assert_eq!(form["client_id"], CC_CLIENT_ID);
    assert_eq!(token.authorization_header(), "Bearer cc-token-1");
    assert!(!token.is_dpop_bound());
}

#[test]
fn client_credentials_refused_ends_the_flow_with_the_oauth_error() {
    let mut world = extension_world(vec!["client_credentials"], vec!["client_secret_basic"]);
    world.route(
        Method::POST,
        &format!("{AS}/token"),
        401,
        r#"{"error":"invalid_client","error_description":"Invalid client credentials"}"#,
    );
    let mut flow = headless_flow(
        &world,
        mcp_auth::Grant::client_credentials(CC_CLIENT_ID, "wrong-secret"),
    );
    let error = world.run(&mut flow).unwrap_err();
    assert!(matches!(
        &error,
        AuthError::TokenRejected { status: 401, error: Some(e), .. } if e == "invalid_client"
    ));
    assert_eq!(world.sent("oauth:client-credentials").len(), 1);
    assert!(!format!("{error} {error:?}").contains("wrong-secret"));
}

#[test]
fn client_credentials_jwt_signs_an_es256_assertion_for_the_issuer() {
    let mut world = extension_world(vec!["client_credentials"], vec!["private_key_jwt"]);
    let public = client_public_key();
    world.server = Some(Box::new(move |seen: &Seen| {
        if seen.label != "oauth:client-credentials" {
            return None;
        }
        let form = seen.form();
        // client-credentials-assertion-type
        assert_eq!(
            form["client_assertion_type"],
            "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
        );
        // client-credentials-jwt-verified: signature, audience (issuer, with or without a
        // slash), and time (iat, exp around now).
        let (_, claims) = verify_es256(&form["client_assertion"], Some(&public));
        let aud = claims["aud"].as_str().unwrap();
        assert!(aud == AS || aud == format!("{AS}/"), "{aud}");
        // client-credentials-jwt-iss, client-credentials-jwt-sub
        assert_eq!(claims["iss"], CC_CLIENT_ID);
        assert_eq!(claims["sub"], CC_CLIENT_ID);
        let iat = claims["iat"].as_u64().unwrap();
        let exp = claims["exp"].as_u64().unwrap();
        assert!(iat.abs_diff(WALL_SECS) <= 30 && exp > WALL_SECS && exp <= iat + 600);
        assert!(!claims["jti"].as_str().unwrap().is_empty());
        assert_eq!(form["grant_type"], "client_credentials");
        assert!(seen.headers.get("authorization").is_none());
        Some(Reply::json(
            200,
            serde_json::json!({"access_token": "cc-token-2", "token_type": "Bearer", "expires_in": 3600}),
        ))
    }));
    let key = mcp_auth::PrivateKey::from_pkcs8_pem(CLIENT_KEY_PEM).unwrap();
    let grant = mcp_auth::Grant::client_credentials_jwt(CC_CLIENT_ID, key);
    let mut flow = headless_flow(&world, grant.clone());
    let token = world.run(&mut flow).unwrap();
    assert_eq!(token.authorization_header(), "Bearer cc-token-2");
    assert_no_person(&world);
    // A later flow signs a new assertion: a fresh jti.
    let mut flow = headless_flow(&world, grant);
    world.run(&mut flow).unwrap();
    let assertions: Vec<String> = world
        .sent("oauth:client-credentials")
        .iter()
        .map(|seen| seen.form()["client_assertion"].clone())
        .collect();
    let jti = |jwt: &str| jwt_parts(jwt).1["jti"].clone();
    assert_ne!(jti(&assertions[0]), jti(&assertions[1]));
}

// ---- auth/wif-jwt-bearer ----------------------------------------------------------------------

const WIF_CLIENT_ID: &str = "conformance-wif-workload";

fn workload_jwt(audience: &str, exp: u64) -> String {
    jwt(
        serde_json::json!({"alg": "ES256"}),
        serde_json::json!({
            "iss": "https://idp.conformance-test.local",
            "sub": "conformance-workload",
            "aud": audience,
            "iat": WALL_SECS - 10,
            "exp": exp,
            "jti": "wif-1",
        }),
    )
}

/// The suite's WIF authorization server: jwt-bearer only, no registration; it decides on the
/// assertion's audience and expiry, and records every token request after a failure (the
/// `wif-no-retry` and `wif-grant-fallback` warnings).
fn wif_world() -> World {
    let mut world = World::with_servers(&AsOpts {
        grant_types: vec![JWT_BEARER],
        auth_methods: vec!["none"],
        dcr: false,
        ..AsOpts::default()
    });
    let mut failed_once = false;
    world.server = Some(Box::new(move |seen: &Seen| {
        if !seen.url.ends_with("/token") {
            return None;
        }
        assert!(
            !failed_once,
            "wif-no-retry / wif-grant-fallback: a request after a failure"
        );
        let form = seen.form();
        let refuse = |error: &str| Some(Reply::json(400, serde_json::json!({"error": error})));
        failed_once = true;
        if form["grant_type"] != JWT_BEARER {
            return refuse("unsupported_grant_type"); // wif-grant-type
        }
        let Some(assertion) = form.get("assertion") else {
            return refuse("invalid_request"); // wif-assertion-missing
        };
        let (_, claims) = jwt_parts(assertion);
        if claims["exp"].as_u64().unwrap() + 5 < WALL_SECS {
            return refuse("invalid_grant"); // wif-assertion-expired
        }
        let aud = claims["aud"].as_str().unwrap();
        if aud != AS && aud != format!("{AS}/") {
            return refuse("invalid_grant"); // wif-assertion-audience
        }
        let scope = form.get("scope").map(String::as_str).unwrap_or("");
        if scope.split(' ').any(|s| s == "wif.trigger-unauthorized") {
            return refuse("unauthorized_client");
        }
        if scope.split(' ').any(|s| s == "wif.rejected") {
            return refuse("invalid_scope");
        }
        failed_once = false;
        Some(Reply::json(
            200,
            serde_json::json!({"access_token": "wif-token", "token_type": "Bearer", "expires_in": 3600}),
        ))
    }));
    world
}

#[test]
fn wif_jwt_bearer_presents_the_workload_assertion_with_the_client_id() {
    let mut world = wif_world();
    let assertion = workload_jwt(AS, WALL_SECS + 300);
    let mut flow = headless_flow(
        &world,
        mcp_auth::Grant::jwt_bearer(WIF_CLIENT_ID, assertion.clone()),
    );
    let token = world.run(&mut flow).unwrap();
    assert_eq!(token.authorization_header(), "Bearer wif-token");
    assert_eq!(
        world.labels(),
        [
            "oauth:resource-metadata",
            "oauth:server-metadata",
            "oauth:jwt-bearer"
        ]
    );
    assert_no_person(&world);
    let request = world.sent("oauth:jwt-bearer")[0];
    let form = request.form();
    assert_eq!(form["grant_type"], JWT_BEARER);
    assert_eq!(form["assertion"], assertion);
    assert_eq!(form["client_id"], WIF_CLIENT_ID);
    assert_eq!(form["resource"], SERVER_URL);
    assert!(request.headers.get("authorization").is_none());
}

#[test]
fn wif_refusals_are_surfaced_once_without_retry_or_another_grant() {
    let cases: [(String, Option<&str>, &str); 4] = [
        // wif-assertion-audience: the wrong_audience_jwt
        (
            workload_jwt("https://wrong.example", WALL_SECS + 300),
            None,
            "invalid_grant",
        ),
        // wif-assertion-expired: the expired_jwt
        (workload_jwt(AS, WALL_SECS - 60), None, "invalid_grant"),
        // the AS refuses the client for this grant, or the scope
        (
            workload_jwt(AS, WALL_SECS + 300),
            Some("wif.trigger-unauthorized"),
            "unauthorized_client",
        ),
        (
            workload_jwt(AS, WALL_SECS + 300),
            Some("wif.rejected"),
            "invalid_scope",
        ),
    ];
    for (assertion, scope, expected) in cases {
        let mut world = wif_world();
        let mut config = mcp_auth::ClientConfig::headless(mcp_auth::Grant::jwt_bearer(
            WIF_CLIENT_ID,
            assertion.clone(),
        ))
        .unwrap();
        if let Some(scope) = scope {
            config = config.with_scope(scope);
        }
        let mut flow = world.flow(unauthorized(Some(&prm_url()), None), config);
        let error = world.run(&mut flow).unwrap_err();
        assert!(
            matches!(&error, AuthError::TokenRejected { status: 400, error: Some(e), .. } if e == expected),
            "{error}"
        );
        // The wif-no-retry / wif-grant-fallback server asserts a single token request.
        assert_eq!(world.sent("oauth:jwt-bearer").len(), 1);
        assert_no_person(&world);
        // Polling again repeats the failure: nothing more is sent.
        let again = world.run(&mut flow).unwrap_err();
        assert_eq!(again, error);
        assert_eq!(world.seen.len(), 3);
        assert!(!format!("{error} {error:?}").contains(&assertion));
    }
}

// ---- auth/enterprise-managed-authorization ----------------------------------------------------

const XAA_CLIENT_ID: &str = "conformance-test-xaa-client";
const XAA_CLIENT_SECRET: &str = "conformance-test-xaa-secret";
const IDP: &str = "http://localhost:4500";
const IDP_CLIENT_ID: &str = "conformance-test-idp-client";

fn idp_id_token() -> String {
    jwt(
        serde_json::json!({"alg": "ES256"}),
        serde_json::json!({"iss": IDP, "sub": "demo-user@example.com", "aud": IDP_CLIENT_ID, "iat": WALL_SECS, "exp": WALL_SECS + 3600}),
    )
}

fn enterprise_grant() -> mcp_auth::Grant {
    mcp_auth::Grant::enterprise_managed(
        XAA_CLIENT_ID,
        XAA_CLIENT_SECRET,
        &format!("{IDP}/token"),
        IDP_CLIENT_ID,
        idp_id_token(),
    )
    .unwrap()
}

/// The suite's IdP (token exchange → ID-JAG) and authorization server (jwt-bearer with
/// client_secret_basic), each checking what the scenario checks.
fn enterprise_world() -> World {
    let mut world = extension_world(vec![JWT_BEARER], vec!["client_secret_basic"]);
    world.server = Some(Box::new(|seen: &Seen| {
        let form = seen.form();
        if seen.url == format!("{IDP}/token") {
            // complete-flow-token-exchange: every parameter SEP-990 requires.
            assert_eq!(
                form["grant_type"],
                "urn:ietf:params:oauth:grant-type:token-exchange"
            );
            assert_eq!(form["subject_token"], idp_id_token());
            assert_eq!(
                form["subject_token_type"],
                "urn:ietf:params:oauth:token-type:id_token"
            );
            assert_eq!(
                form["requested_token_type"],
                "urn:ietf:params:oauth:token-type:id-jag"
            );
            assert!(!form["audience"].is_empty() && !form["resource"].is_empty());
            assert_eq!(form["client_id"], IDP_CLIENT_ID);
            assert!(seen.headers.get("authorization").is_none());
            assert!(!seen.body.contains(XAA_CLIENT_SECRET));
            let id_jag = jwt(
                serde_json::json!({"alg": "ES256", "typ": "oauth-id-jag+jwt"}),
                serde_json::json!({
                    "iss": IDP, "sub": "demo-user@example.com", "aud": form["audience"],
                    "resource": form["resource"], "client_id": XAA_CLIENT_ID,
                    "iat": WALL_SECS, "exp": WALL_SECS + 300, "jti": "jag-1",
                }),
            );
            return Some(Reply::json(
                200,
                serde_json::json!({"access_token": id_jag, "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag", "token_type": "N_A"}),
            ));
        }
        if seen.url != format!("{AS}/token") {
            return None;
        }
        // complete-flow-jwt-bearer: client_secret_basic, the assertion, its typ, audience,
        // client_id and resource.
        assert_eq!(form["grant_type"], JWT_BEARER);
        let (id, secret) = basic_credentials(seen).expect("client_secret_basic");
        assert_eq!(
            (id.as_str(), secret.as_str()),
            (XAA_CLIENT_ID, XAA_CLIENT_SECRET)
        );
        let (header, claims) = jwt_parts(&form["assertion"]);
        assert_eq!(header["typ"], "oauth-id-jag+jwt");
        assert!(claims["aud"] == AS || claims["aud"] == format!("{AS}/"));
        assert_eq!(claims["client_id"], id);
        assert_eq!(claims["resource"], SERVER_URL);
        assert!(
            !seen.body.contains(&idp_id_token()),
            "the ID token stays at the IdP"
        );
        Some(Reply::json(
            200,
            serde_json::json!({"access_token": "xaa-token", "token_type": "Bearer", "expires_in": 3600}),
        ))
    }));
    world
}

#[test]
fn enterprise_managed_exchanges_the_id_token_then_presents_the_id_jag() {
    let mut world = enterprise_world();
    let mut flow = headless_flow(&world, enterprise_grant());
    let token = world.run(&mut flow).unwrap();
    assert_eq!(token.authorization_header(), "Bearer xaa-token");
    assert_eq!(
        world.labels(),
        [
            "oauth:resource-metadata",
            "oauth:server-metadata",
            "oauth:token-exchange",
            "oauth:jwt-bearer"
        ]
    );
    assert_no_person(&world);
    let exchange = world.sent("oauth:token-exchange")[0].form();
    assert_eq!(exchange["audience"], AS);
    assert_eq!(exchange["resource"], SERVER_URL);
    assert_eq!(
        world.sent("oauth:jwt-bearer")[0].form()["resource"],
        SERVER_URL
    );
}

#[test]
fn enterprise_managed_stops_at_a_refused_or_unusable_exchange() {
    let mut world = enterprise_world();
    world.server = None;
    world.route(
        Method::POST,
        &format!("{IDP}/token"),
        400,
        r#"{"error":"invalid_grant","error_description":"Invalid ID token"}"#,
    );
    let mut flow = headless_flow(&world, enterprise_grant());
    let error = world.run(&mut flow).unwrap_err();
    assert!(matches!(
        &error,
        AuthError::TokenRejected { endpoint, error: Some(e), .. }
            if endpoint == &format!("{IDP}/token") && e == "invalid_grant"
    ));
    assert!(world.sent("oauth:jwt-bearer").is_empty());
    assert!(!format!("{error} {error:?}").contains(&idp_id_token()));

    let mut world = enterprise_world();
    world.server = None;
    world.route(
        Method::POST,
        &format!("{IDP}/token"),
        200,
        r#"{"access_token":"an-access-token","issued_token_type":"urn:ietf:params:oauth:token-type:access_token"}"#,
    );
    let mut flow = headless_flow(&world, enterprise_grant());
    let error = world.run(&mut flow).unwrap_err();
    assert!(matches!(
        error,
        AuthError::Malformed {
            endpoint: "identity provider token endpoint",
            ..
        }
    ));
    assert!(!error.to_string().contains("an-access-token"));
    assert!(world.sent("oauth:jwt-bearer").is_empty());
}

// ---- auth/dpop, auth/dpop-nonce ---------------------------------------------------------------

const AS_DPOP_NONCE: &str = "conformance-as-dpop-nonce";
const RS_DPOP_NONCE: &str = "conformance-rs-dpop-nonce";

/// The RFC 7638 thumbprint of a P-256 JWK (what the suite binds as `cnf.jkt`).
fn thumbprint(jwk: &serde_json::Value) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    let canonical = format!(
        r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
        jwk["x"].as_str().unwrap(),
        jwk["y"].as_str().unwrap()
    );
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(canonical))
}

/// The suite's proof checks (`validateDpopProofAtTokenEndpoint`, `validateResourceProof`):
/// `dpop+jwt`, ES256 verifying under the embedded public `jwk`, a `jti`, `htm`, an `htu`
/// without query or fragment matching the target, `iat` within 300 s of now.
fn check_proof(proof: &str, method: &str, target: &str) -> (serde_json::Value, serde_json::Value) {
    assert!(!proof.contains(','), "one DPoP header");
    let (header, claims) = verify_es256(proof, None);
    assert_eq!(header["typ"], "dpop+jwt");
    assert!(claims["jti"].is_string());
    assert_eq!(claims["htm"], method);
    let htu = claims["htu"].as_str().unwrap();
    assert!(!htu.contains('?') && !htu.contains('#'), "{htu}");
    assert_eq!(htu.trim_end_matches('/'), target.trim_end_matches('/'));
    assert!(claims["iat"].as_u64().unwrap().abs_diff(WALL_SECS) <= 300);
    (header, claims)
}

/// What the suite's authorization server observed at the token endpoint.
#[derive(Default)]
struct TokenEndpointObs {
    valid_proofs: usize,
    nonce_challenged: bool,
    nonce_honored: bool,
}

/// The suite's DPoP-capable authorization server (`dpopSigningAlgValuesSupported: ['ES256']`):
/// a request with a valid proof gets a DPoP-bound JWT access token (`cnf.jkt`), after a
/// `use_dpop_nonce` challenge when `require_nonce`; one without a proof gets a Bearer token.
fn dpop_world(require_nonce: bool) -> (World, std::rc::Rc<std::cell::RefCell<TokenEndpointObs>>) {
    let mut world = World::with_servers(&AsOpts {
        dpop_algs: Some(vec!["ES256"]),
        ..AsOpts::default()
    });
    let obs = std::rc::Rc::new(std::cell::RefCell::new(TokenEndpointObs::default()));
    let seen_obs = obs.clone();
    world.server = Some(Box::new(move |seen: &Seen| {
        if seen.url != format!("{AS}/token") {
            return None;
        }
        let Some(proof) = seen.headers.get("dpop") else {
            return Some(Reply::json(
                200,
                serde_json::json!({"access_token": "bearer-token", "token_type": "Bearer"}),
            ));
        };
        assert!(proof.is_sensitive());
        let (header, claims) = check_proof(proof.to_str().unwrap(), "POST", &format!("{AS}/token"));
        let mut obs = seen_obs.borrow_mut();
        obs.valid_proofs += 1;
        if require_nonce {
            if claims.get("nonce").and_then(|n| n.as_str()) != Some(AS_DPOP_NONCE) {
                obs.nonce_challenged = true;
                return Some(
                    Reply::json(400, serde_json::json!({"error": "use_dpop_nonce", "error_description": "Authorization server requires a DPoP nonce"}))
                        .with_header("dpop-nonce", AS_DPOP_NONCE),
                );
            }
            obs.nonce_honored = true;
        }
        let token = jwt(
            serde_json::json!({"alg": "ES256", "typ": "at+jwt"}),
            serde_json::json!({"iss": AS, "aud": seen.form()["resource"], "cnf": {"jkt": thumbprint(&header["jwk"])}}),
        );
        Some(Reply::json(
            200,
            serde_json::json!({"access_token": token, "token_type": "DPoP", "expires_in": 3600}),
        ))
    }));
    (world, obs)
}

/// What the suite's MCP server (`createDpopResourceAuth`) observed.
#[derive(Default)]
struct ResourceObs {
    authenticated: usize,
    schemes: Vec<String>,
    jtis: Vec<String>,
    replay: bool,
    nonce_challenged: bool,
    nonce_honored: bool,
}

/// The suite's MCP server judge: scheme, proof (htm/htu/ath, key bound to the token's
/// `cnf.jkt`), fresh `jti`, and the nonce when `require_nonce`. Answers 200 or the 401 nonce
/// challenge.
fn judge(
    obs: &mut ResourceObs,
    headers: &[(http::HeaderName, http::HeaderValue)],
    require_nonce: bool,
) -> (http::StatusCode, http::HeaderMap) {
    let get = |name: &str| {
        let values: Vec<&http::HeaderValue> = headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v)
            .collect();
        assert!(values.len() <= 1, "one {name} header");
        values.first().map(|v| v.to_str().unwrap().to_owned())
    };
    let authorization = get("authorization").expect("an access token");
    obs.authenticated += 1;
    let (scheme, token) = authorization.split_once(' ').unwrap();
    obs.schemes.push(scheme.to_owned());
    let proof = get("dpop").expect("a DPoP proof");
    let (header, claims) = check_proof(&proof, "POST", SERVER_URL);
    use base64::Engine as _;
    use sha2::Digest as _;
    assert_eq!(
        claims["ath"],
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(token))
    );
    assert_eq!(jwt_parts(token).1["cnf"]["jkt"], thumbprint(&header["jwk"]));
    let jti = claims["jti"].as_str().unwrap().to_owned();
    if obs.jtis.contains(&jti) {
        obs.replay = true;
    } else {
        obs.jtis.push(jti);
    }
    let mut answer = http::HeaderMap::new();
    if require_nonce && claims.get("nonce").and_then(|n| n.as_str()) != Some(RS_DPOP_NONCE) {
        obs.nonce_challenged = true;
        answer.insert(
            "www-authenticate",
            http::HeaderValue::from_str(&format!(
                r#"DPoP error="use_dpop_nonce", resource_metadata="{}""#,
                prm_url()
            ))
            .unwrap(),
        );
        answer.insert("dpop-nonce", http::HeaderValue::from_static(RS_DPOP_NONCE));
        return (http::StatusCode::UNAUTHORIZED, answer);
    }
    if require_nonce {
        obs.nonce_honored = true;
    }
    (http::StatusCode::OK, answer)
}

/// An MCP request as a driver makes it: present the token; on a nonce challenge, retry once
/// with the nonce (and keep it).
fn mcp_request(
    token: &mcp_auth::AccessToken,
    obs: &mut ResourceObs,
    nonce: &mut Option<String>,
    require_nonce: bool,
    entropy: &mut Counter,
) -> http::StatusCode {
    let present = |nonce: Option<&str>, entropy: &mut Counter| {
        token
            .authorization_headers(&Method::POST, SERVER_URL, nonce, wall(), entropy)
            .unwrap()
    };
    let (status, answer) = judge(obs, &present(nonce.as_deref(), entropy), require_nonce);
    if status != http::StatusCode::UNAUTHORIZED {
        return status;
    }
    let challenge = mcp_auth::Challenge::from_response(status, &answer).unwrap();
    assert_eq!(challenge.kind, mcp_auth::ChallengeKind::UseDpopNonce);
    *nonce = challenge.dpop_nonce().map(str::to_owned);
    judge(obs, &present(nonce.as_deref(), entropy), require_nonce).0
}

fn dpop_config(world: &World) -> mcp_auth::ClientConfig {
    world.config().with_dpop(mcp_auth::Dpop::WhenAdvertised)
}

#[test]
fn dpop_binds_the_token_and_presents_it_with_a_fresh_proof_per_request() {
    let (mut world, as_obs) = dpop_world(false);
    let mut flow = world.flow(unauthorized(Some(&prm_url()), None), dpop_config(&world));
    let token = world.run(&mut flow).unwrap();
    // sep-1932-client-token-request-proof: a valid proof at the authorization_code exchange.
    assert_eq!(as_obs.borrow().valid_proofs, 1);
    assert_eq!(
        world.sent("oauth:token")[0].form()["grant_type"],
        "authorization_code"
    );
    assert!(token.is_dpop_bound());
    assert!(
        token
            .authorization_header()
            .to_str()
            .unwrap()
            .starts_with("DPoP ")
    );
    let text = format!("{token:?}");
    assert!(text.contains("DPoP") && !text.contains("eyJ"), "{text}");
    // sep-1932-client-dpop-auth-scheme and sep-1932-client-fresh-proof over three requests.
    let mut obs = ResourceObs::default();
    let mut nonce = None;
    let mut entropy = Counter(200);
    for _ in 0..3 {
        let status = mcp_request(&token, &mut obs, &mut nonce, false, &mut entropy);
        assert_eq!(status, http::StatusCode::OK);
    }
    assert_eq!(obs.authenticated, 3);
    assert!(obs.schemes.iter().all(|s| s == "DPoP"));
    assert_eq!(obs.jtis.len(), 3);
    assert!(!obs.replay);
}

#[test]
fn dpop_nonce_challenges_from_the_as_and_the_mcp_server_are_answered_with_the_nonce() {
    let (mut world, as_obs) = dpop_world(true);
    let mut flow = world.flow(unauthorized(Some(&prm_url()), None), dpop_config(&world));
    let token = world.run(&mut flow).unwrap();
    // sep-1932-client-as-nonce: challenged, then honored by the same request sent again.
    assert!(as_obs.borrow().nonce_challenged && as_obs.borrow().nonce_honored);
    let exchanges = world.sent("oauth:token");
    assert_eq!(exchanges.len(), 2);
    assert_eq!(exchanges[0].form(), exchanges[1].form());
    let proof = |seen: &Seen| jwt_parts(seen.headers["dpop"].to_str().unwrap()).1;
    assert_eq!(proof(exchanges[0]).get("nonce"), None);
    assert_eq!(proof(exchanges[1])["nonce"], AS_DPOP_NONCE);
    assert_ne!(proof(exchanges[0])["jti"], proof(exchanges[1])["jti"]);
    assert!(token.is_dpop_bound());
    // sep-1932-client-rs-nonce: the 401 use_dpop_nonce is retried with the nonce and a fresh
    // proof (no replay); later requests carry the nonce from the start.
    let mut obs = ResourceObs::default();
    let mut nonce = None;
    let mut entropy = Counter(200);
    for _ in 0..2 {
        let status = mcp_request(&token, &mut obs, &mut nonce, true, &mut entropy);
        assert_eq!(status, http::StatusCode::OK);
    }
    assert!(obs.nonce_challenged && obs.nonce_honored);
    assert_eq!(obs.authenticated, 3);
    assert!(!obs.replay);
    assert!(obs.schemes.iter().all(|s| s == "DPoP"));
}

#[test]
fn a_second_use_dpop_nonce_for_the_same_request_is_a_refusal() {
    let mut world = World::with_servers(&AsOpts {
        dpop_algs: Some(vec!["ES256"]),
        ..AsOpts::default()
    });
    world.server = Some(Box::new(|seen: &Seen| {
        (seen.label == "oauth:token").then(|| {
            Reply::json(400, serde_json::json!({"error": "use_dpop_nonce"}))
                .with_header("dpop-nonce", "always-another")
        })
    }));
    let mut flow = world.flow(unauthorized(Some(&prm_url()), None), dpop_config(&world));
    let error = world.run(&mut flow).unwrap_err();
    assert!(matches!(
        &error,
        AuthError::TokenRejected { status: 400, error: Some(e), .. } if e == "use_dpop_nonce"
    ));
    assert_eq!(world.sent("oauth:token").len(), 2);
}

#[test]
fn dpop_is_asked_for_only_where_configured_and_advertised() {
    // Off (the default): no proof even where advertised, and a Bearer token.
    let (mut world, as_obs) = dpop_world(false);
    let mut flow = world.standard_flow();
    let token = world.run(&mut flow).unwrap();
    assert!(world.sent("oauth:token")[0].headers.get("dpop").is_none());
    assert_eq!(as_obs.borrow().valid_proofs, 0);
    assert!(!token.is_dpop_bound());
    // WhenAdvertised, at a server that does not advertise ES256: no proof.
    let mut world = World::with_servers(&AsOpts {
        dpop_algs: Some(vec!["RS256"]),
        ..AsOpts::default()
    });
    let mut flow = world.flow(unauthorized(Some(&prm_url()), None), dpop_config(&world));
    world.run(&mut flow).unwrap();
    assert!(world.sent("oauth:token")[0].headers.get("dpop").is_none());
    // A server that answers a proof with a Bearer token (`unbound-token`): a Bearer token.
    let mut world = World::with_servers(&AsOpts {
        dpop_algs: Some(vec!["ES256"]),
        ..AsOpts::default()
    });
    let mut flow = world.flow(unauthorized(Some(&prm_url()), None), dpop_config(&world));
    let token = world.run(&mut flow).unwrap();
    assert!(world.sent("oauth:token")[0].headers.get("dpop").is_some());
    assert!(!token.is_dpop_bound());
    assert_eq!(token.authorization_header(), "Bearer test-token-1");
    // A DPoP token to a request without a proof is refused.
    let mut world = World::with_servers(&AsOpts::default());
    world.route(
        Method::POST,
        &format!("{AS}/token"),
        200,
        r#"{"access_token":"t","token_type":"DPoP"}"#,
    );
    let mut flow = world.standard_flow();
    assert!(matches!(
        world.run(&mut flow),
        Err(AuthError::UnsupportedTokenType { .. })
    ));
}

#[test]
fn grants_without_a_person_bind_their_tokens_too() {
    let (mut world, as_obs) = dpop_world(true);
    let config = mcp_auth::ClientConfig::headless(mcp_auth::Grant::client_credentials(
        CC_CLIENT_ID,
        CC_CLIENT_SECRET,
    ))
    .unwrap()
    .with_dpop(mcp_auth::Dpop::Always);
    let mut flow = world.flow(unauthorized(Some(&prm_url()), None), config);
    let token = world.run(&mut flow).unwrap();
    assert!(token.is_dpop_bound());
    assert_eq!(world.sent("oauth:client-credentials").len(), 2);
    assert_eq!(as_obs.borrow().valid_proofs, 2);
}

#[test]
fn a_refresh_uses_the_registration_whatever_redirect_uri_it_was_made_for() {
    // `mcp-call login` fell back to another port than the later commands' redirect URI: the
    // kept registration still serves the refresh (a refresh has no redirect), and only an
    // authorization that needs the person registers again, for its own redirect URI.
    let (mut world, mut flow) = World::standard(&AsOpts {
        refresh_token: Some("refresh-1"),
        ..AsOpts::default()
    });
    world.run(&mut flow).unwrap();
    let elsewhere = || {
        mcp_auth::ClientConfig::new("http://127.0.0.1:40001/callback")
            .unwrap()
            .with_client_name("conformance-client")
    };
    let first = world.seen.len();
    let mut flow = world.flow(unauthorized(Some(&prm_url()), None), elsewhere());
    world.run(&mut flow).unwrap();
    let later: Vec<_> = world.seen[first..].iter().map(|s| s.label).collect();
    assert_eq!(
        later,
        [
            "oauth:resource-metadata",
            "oauth:server-metadata",
            "oauth:refresh"
        ],
        "no second registration for a refresh"
    );
    assert_eq!(
        world.sent("oauth:refresh")[0].form()["client_id"],
        "test-client-id"
    );
    // The refresh refused: a person must approve, at the new redirect URI: registered anew.
    world.route(
        Method::POST,
        &format!("{AS}/token"),
        400,
        r#"{"error":"invalid_grant"}"#,
    );
    let registered = world.sent("oauth:register").len();
    let mut flow = world.flow(unauthorized(Some(&prm_url()), None), elsewhere());
    let _ = world.run(&mut flow);
    assert_eq!(world.sent("oauth:register").len(), registered + 1);
    assert_eq!(
        world.last_authorize_param("redirect_uri").as_deref(),
        Some("http://127.0.0.1:40001/callback")
    );
}
