//! Hostile input and leaks: no answer, body or redirect can panic the flow or keep it from
//! ending; no credential reaches a `Debug` or `Display`; inputs out of order are typed misuse.

mod world;

use http::{HeaderMap, Method, StatusCode};
use mcp_auth::{AuthError, AuthStep, MAX_ANSWER_BYTES};
use proptest::prelude::*;
use world::*;

/// Drives a flow where every answer and the redirect come from `answers` (cycled), and returns
/// how it ended. Panics (failing the test) only if the flow does not end.
fn drive(answers: &[(u16, Vec<u8>)], redirect: &str, challenge_scope: Option<&str>) -> String {
    let world = World::new();
    let mut flow = world.flow(
        unauthorized(Some(&prm_url()), challenge_scope),
        world.config(),
    );
    let mut entropy = Counter(0);
    let now = world.now;
    let mut next = 0;
    for _ in 0..64 {
        match flow.poll(now, wall(), &mut entropy) {
            AuthStep::Send(request) => {
                let _ = format!("{request:?}");
                let (status, body) = answers
                    .get(next % answers.len().max(1))
                    .cloned()
                    .unwrap_or((404, Vec::new()));
                next += 1;
                let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
                flow.handle_response(status, &HeaderMap::new(), &body);
            }
            AuthStep::Authorize { url } => {
                let redirect = redirect.replace(
                    "{state}",
                    &url.query_pairs()
                        .find(|(k, _)| k == "state")
                        .map(|(_, v)| v.into_owned())
                        .unwrap_or_default(),
                );
                flow.handle_redirect(&redirect);
            }
            AuthStep::Pending => panic!("pending with nothing owed"),
            AuthStep::Done(token) => return format!("done {token:?}"),
            AuthStep::Failed(error) => return format!("failed {error} {error:?}"),
        }
    }
    panic!("the flow did not end")
}

fn valid_answers() -> Vec<(u16, Vec<u8>)> {
    vec![
        (
            200,
            format!(r#"{{"resource":"{SERVER_URL}","authorization_servers":["{AS}"]}}"#).into(),
        ),
        (
            200,
            format!(
                r#"{{"issuer":"{AS}","authorization_endpoint":"{AS}/authorize","token_endpoint":"{AS}/token","registration_endpoint":"{AS}/register","code_challenge_methods_supported":["S256"]}}"#
            )
            .into(),
        ),
        (201, br#"{"client_id":"c"}"#.to_vec()),
        (
            200,
            br#"{"access_token":"a","token_type":"Bearer","expires_in":1e300}"#.to_vec(),
        ),
    ]
}

#[test]
fn the_valid_script_completes() {
    let ended = drive(
        &valid_answers(),
        &format!("{REDIRECT}?code=x&state={{state}}"),
        None,
    );
    assert!(ended.starts_with("done"), "{ended}");
}

#[test]
fn hostile_bodies_at_every_step_end_the_flow_with_a_typed_error() {
    let deep = "[".repeat(100_000);
    let huge = vec![b'{'; MAX_ANSWER_BYTES + 1];
    let hostile: Vec<Vec<u8>> = vec![
        Vec::new(),
        b"null".to_vec(),
        b"[]".to_vec(),
        b"{}".to_vec(),
        b"\xff\xfe\x00".to_vec(),
        deep.into_bytes(),
        huge,
        br#"{"resource":7,"authorization_servers":"x","issuer":null}"#.to_vec(),
        br#"{"resource":"http://localhost:3000/mcp","authorization_servers":[1,2,{}]}"#.to_vec(),
        br#"{"issuer":"http://localhost:4000","authorization_endpoint":"javascript:alert(1)","token_endpoint":"http://localhost:4000/token","code_challenge_methods_supported":["S256"]}"#.to_vec(),
        br#"{"client_id":{"a":1}}"#.to_vec(),
        br#"{"access_token":"a\u0000b","token_type":"Bearer"}"#.to_vec(),
        br#"{"access_token":"a","token_type":"Bearer","expires_in":-5}"#.to_vec(),
        br#"{"access_token":"a","token_type":"Bearer","expires_in":18446744073709551616}"#.to_vec(),
        "{\"error\":\"\u{1b}[31m\",\"error_description\":\"x\"}".as_bytes().to_vec(),
    ];
    for step in 0..4 {
        for body in &hostile {
            for status in [200, 201, 400, 401, 404, 500, 302] {
                let mut answers = valid_answers();
                answers[step] = (status, body.clone());
                answers.truncate(step + 1);
                answers.extend(valid_answers().into_iter().skip(step + 1));
                let ended = drive(
                    &answers,
                    &format!("{REDIRECT}?code=x&state={{state}}"),
                    None,
                );
                // `drive` panics unless the flow ends (done or failed) within 64 steps; what
                // is left to check is that no control character reaches its words.
                assert!(!ended.contains('\u{1b}'), "{ended}");
            }
        }
    }
}

#[test]
fn hostile_redirects_end_the_flow() {
    for redirect in [
        "",
        "not a url",
        "http://localhost:3333/callback",
        "http://localhost:3333/callback?state={state}",
        "http://localhost:3333/callback?state={state}&code=",
        "http://localhost:3333/callback?state={state}&code=a&code=b",
        "http://localhost:3333/callback?state={state}&error=x&error_description=%1b%5b31m",
        "http://localhost:3333/callback?state=%ff%fe&code=a",
        "javascript:alert(1)",
    ] {
        let ended = drive(&valid_answers(), redirect, Some("s"));
        assert!(ended.starts_with("failed"), "{redirect}: {ended}");
        assert!(!ended.contains('\u{1b}'), "{ended}");
    }
}

fn status() -> impl Strategy<Value = u16> {
    prop_oneof![
        Just(200u16),
        Just(201),
        Just(400),
        Just(401),
        Just(404),
        Just(500),
        Just(301),
        100u16..600
    ]
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    let valid: Vec<Vec<u8>> = valid_answers().into_iter().map(|(_, b)| b).collect();
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..256),
        (
            proptest::sample::select(valid.clone()),
            any::<usize>(),
            any::<u8>()
        )
            .prop_map(|(mut body, at, byte)| {
                let at = at % body.len();
                body[at] = byte;
                body
            }),
        (proptest::sample::select(valid), any::<usize>()).prop_map(|(mut body, cut)| {
            body.truncate(cut % (body.len() + 1));
            body
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_answers_never_panic_and_always_end(
        answers in proptest::collection::vec((status(), body()), 1..8),
        redirect in prop_oneof![
            Just(format!("{REDIRECT}?code=x&state={{state}}")),
            ".*",
        ],
        scope in proptest::option::of("[ -~]{0,20}"),
    ) {
        // `drive` panics (the case fails) unless the flow ends within 64 steps.
        drive(&answers, &redirect, scope.as_deref());
    }
}

// ---- no credential in Debug or Display ----------------------------------------------------

const SECRETS: [&str; 5] = [
    "SECRET-CLIENT",
    "SECRET-ACCESS",
    "SECRET-REFRESH",
    "SECRET-CODE",
    "SECRET-PRE",
];

#[test]
fn no_credential_reaches_debug_or_display() {
    let (mut world, mut flow) = World::standard(&AsOpts {
        auth_methods: vec!["client_secret_post"],
        client_secret: Some("SECRET-CLIENT".into()),
        registered_method: Some("client_secret_post"),
        access_token: "SECRET-ACCESS".into(),
        refresh_token: Some("SECRET-REFRESH"),
        ..AsOpts::default()
    });
    let mut printed = Vec::new();
    let mut entropy = Counter(0);
    let token = loop {
        printed.push(format!("{flow:?}"));
        let step = flow.poll(world.now, wall(), &mut entropy);
        printed.push(format!("{step:?} {step:#?}"));
        match step {
            AuthStep::Send(request) => {
                let key = (
                    request.request.method().clone(),
                    request.request.uri().to_string(),
                );
                let (status, body) = world.routes[&key].clone();
                flow.handle_response(
                    StatusCode::from_u16(status).unwrap(),
                    &HeaderMap::new(),
                    body.as_bytes(),
                );
            }
            AuthStep::Authorize { url } => {
                let state = url
                    .query_pairs()
                    .find(|(k, _)| k == "state")
                    .unwrap()
                    .1
                    .into_owned();
                flow.handle_redirect(&format!(
                    "{REDIRECT}?code=SECRET-CODE&state={state}&iss=http%3A%2F%2Flocalhost%3A4000"
                ));
            }
            AuthStep::Done(token) => break token,
            other => panic!("{other:?}"),
        }
    };
    printed.push(format!("{token:?} {flow:?} {:?}", world.store));
    use mcp_auth::CredentialStore as _;
    printed.push(format!(
        "{:?} {:?}",
        world.store.client(AS),
        world.store.tokens(AS, SERVER_URL)
    ));
    let config = world.config().with_pre_registered(
        mcp_auth::PreRegisteredClient::new(AS, "id").with_secret("SECRET-PRE"),
    );
    printed.push(format!("{config:?}"));
    // The token really holds the secret; it is only hidden.
    assert_eq!(token.secret().expose(), "SECRET-ACCESS");

    // Errors after a code was in hand, and a code in a refused redirect.
    let mut flow = world.standard_flow();
    world.route(
        Method::POST,
        &format!("{AS}/token"),
        400,
        r#"{"error":"invalid_grant"}"#,
    );
    let error = world.run(&mut flow).unwrap_err();
    printed.push(format!("{error} {error:?}"));
    world.iss = Iss::Wrong;
    let mut flow = world.flow(insufficient_scope(Some(&prm_url()), "x"), world.config());
    let error = world.run(&mut flow).unwrap_err();
    printed.push(format!("{error} {error:?}"));

    let all = printed.join("\n");
    for secret in SECRETS {
        assert!(!all.contains(secret), "{secret} leaked:\n{all}");
    }
}

// ---- driven out of order ------------------------------------------------------------------

#[test]
fn polling_again_before_the_answer_is_pending() {
    let world = World::new();
    let mut flow = world.flow(unauthorized(None, None), world.config());
    let mut entropy = Counter(0);
    assert!(matches!(
        flow.poll(world.now, wall(), &mut entropy),
        AuthStep::Send(_)
    ));
    assert!(matches!(
        flow.poll(world.now, wall(), &mut entropy),
        AuthStep::Pending
    ));
}

#[test]
fn inputs_out_of_order_are_typed_misuse() {
    let world = World::new();
    let mut flow = world.flow(unauthorized(None, None), world.config());
    flow.handle_response(StatusCode::OK, &HeaderMap::new(), b"{}");
    assert!(matches!(
        flow.poll(world.now, wall(), &mut Counter(0)),
        AuthStep::Failed(AuthError::Misuse { .. })
    ));

    let mut flow = world.flow(unauthorized(None, None), world.config());
    let _ = flow.poll(world.now, wall(), &mut Counter(0));
    flow.handle_redirect("http://localhost:3333/callback?code=x");
    let step = flow.poll(world.now, wall(), &mut Counter(0));
    let AuthStep::Failed(error) = step else {
        panic!("{step:?}")
    };
    assert_eq!(error.fault(), mcp_auth::Fault::Caller);
}

#[test]
fn an_ended_flow_ignores_inputs_and_repeats_its_end() {
    let (mut world, mut flow) = World::standard(&AsOpts::default());
    let token = world.run(&mut flow).unwrap();
    flow.handle_response(StatusCode::OK, &HeaderMap::new(), b"{}");
    flow.handle_redirect("x");
    match flow.poll(world.now, wall(), &mut Counter(0)) {
        AuthStep::Done(again) => assert_eq!(again, token),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_insecure_server_url_or_challenge_is_refused() {
    let world = World::new();
    let store: std::sync::Arc<dyn mcp_auth::CredentialStore> = world.store.clone();
    assert!(matches!(
        mcp_auth::AuthFlow::new(
            "ftp://x",
            unauthorized(None, None),
            world.config(),
            store.clone()
        ),
        Err(AuthError::InvalidConfig { .. })
    ));
    let mut flow = mcp_auth::AuthFlow::new(
        "http://mcp.example.com/mcp",
        unauthorized(None, None),
        world.config(),
        store,
    )
    .unwrap();
    assert!(matches!(
        flow.poll(world.now, wall(), &mut Counter(0)),
        AuthStep::Failed(AuthError::InsecureEndpoint { .. })
    ));
}

/// The credentials of the extension grants and DPoP: none may reach an error's `Display` or
/// `Debug`, an `AuthRequest`'s or `AuthStep`'s `Debug`, the flow's, the token's or the
/// configuration's.
const EXTENSION_SECRETS: [&str; 7] = [
    "cc-secret-7q",
    "wif-assertion-7q",
    "id-token-7q",
    "idjag-7q",
    "access-7q",
    "refresh-7q",
    "code-7q",
];

fn extension_configs() -> Vec<mcp_auth::ClientConfig> {
    use mcp_auth::{ClientConfig, Dpop, Grant, PrivateKey};
    let key = PrivateKey::from_pkcs8_pem(CLIENT_KEY_PEM).unwrap();
    vec![
        ClientConfig::headless(Grant::client_credentials("cc", "cc-secret-7q")).unwrap(),
        ClientConfig::headless(Grant::client_credentials_jwt("cc", key))
            .unwrap()
            .with_dpop(Dpop::Always),
        ClientConfig::headless(Grant::jwt_bearer("wif", "eyJ.wif-assertion-7q.sig")).unwrap(),
        ClientConfig::headless(
            Grant::enterprise_managed(
                "xaa",
                "cc-secret-7q",
                "http://localhost:4500/token",
                "idp",
                "eyJ.id-token-7q.sig",
            )
            .unwrap(),
        )
        .unwrap()
        .with_dpop(Dpop::WhenAdvertised),
        ClientConfig::new(REDIRECT)
            .unwrap()
            .with_dpop(Dpop::WhenAdvertised),
    ]
}

/// A valid answer to each request of any flow, with the secrets above in it.
fn extension_answer(label: &str, dpop: bool) -> (u16, Vec<(&'static str, &'static str)>, String) {
    let body = match label {
        "oauth:resource-metadata" => {
            format!(r#"{{"resource":"{SERVER_URL}","authorization_servers":["{AS}"]}}"#)
        }
        "oauth:server-metadata" => format!(
            r#"{{"issuer":"{AS}","authorization_endpoint":"{AS}/authorize","token_endpoint":"{AS}/token","registration_endpoint":"{AS}/register","code_challenge_methods_supported":["S256"],"dpop_signing_alg_values_supported":["ES256"]}}"#
        ),
        "oauth:register" => r#"{"client_id":"c","client_secret":"cc-secret-7q"}"#.to_owned(),
        "oauth:token-exchange" => r#"{"access_token":"idjag-7q","issued_token_type":"urn:ietf:params:oauth:token-type:id-jag"}"#.to_owned(),
        _ => format!(
            r#"{{"access_token":"access-7q","token_type":"{}","refresh_token":"refresh-7q","expires_in":60}}"#,
            if dpop { "DPoP" } else { "Bearer" }
        ),
    };
    (
        if label == "oauth:register" { 201 } else { 200 },
        Vec::new(),
        body,
    )
}

/// Drives `config`'s flow, answering validly except at request `fail_at` (with `failure`), and
/// returns every text the flow let out.
fn extension_texts(
    config: mcp_auth::ClientConfig,
    fail_at: usize,
    failure: &(u16, Vec<(&'static str, &'static str)>, String),
) -> Vec<String> {
    let world = World::new();
    let mut texts = vec![format!("{config:?}")];
    let mut flow = world.flow(unauthorized(Some(&prm_url()), None), config);
    let mut entropy = Counter(0);
    let mut sent = 0;
    for _ in 0..64 {
        let step = flow.poll(world.now, wall(), &mut entropy);
        texts.push(format!("{step:?} {flow:?}"));
        match step {
            AuthStep::Send(request) => {
                let dpop = request.request.headers().contains_key("dpop");
                let (status, headers, body) = if sent == fail_at {
                    failure.clone()
                } else {
                    extension_answer(request.kind.label(), dpop)
                };
                sent += 1;
                let mut map = HeaderMap::new();
                for (name, value) in headers {
                    map.insert(name, http::HeaderValue::from_static(value));
                }
                let status = StatusCode::from_u16(status).unwrap();
                flow.handle_response(status, &map, body.as_bytes());
            }
            AuthStep::Authorize { url } => {
                let state = url
                    .query_pairs()
                    .find(|(k, _)| k == "state")
                    .map(|(_, v)| v.into_owned())
                    .unwrap_or_default();
                flow.handle_redirect(&format!("{REDIRECT}?code=code-7q&state={state}&iss={AS}"));
            }
            AuthStep::Done(token) => {
                texts.push(format!("{token:?}"));
                return texts;
            }
            AuthStep::Failed(error) => {
                texts.push(format!("{error} {error:?}"));
                return texts;
            }
            AuthStep::Pending => panic!("pending with nothing owed"),
        }
    }
    panic!("the flow did not end")
}

#[test]
fn no_extension_credential_reaches_debug_or_display() {
    let failures = [
        (400, vec![], r#"{"error":"invalid_grant"}"#.to_owned()),
        (401, vec![], r#"{"error":"invalid_client"}"#.to_owned()),
        (
            400,
            vec![("dpop-nonce", "n-1")],
            r#"{"error":"use_dpop_nonce"}"#.to_owned(),
        ),
        (200, vec![], "not json".to_owned()),
        (200, vec![], r#"{"access_token":"x y"}"#.to_owned()),
        (
            200,
            vec![],
            r#"{"access_token":"t","token_type":"MAC"}"#.to_owned(),
        ),
        (500, vec![], String::new()),
        (302, vec![], String::new()),
    ];
    let pem_body: Vec<&str> = CLIENT_KEY_PEM
        .lines()
        .filter(|line| !line.starts_with("-----"))
        .collect();
    let mut outcomes = 0;
    for config in extension_configs() {
        for fail_at in 0..6 {
            for failure in &failures {
                for text in extension_texts(config.clone(), fail_at, failure) {
                    outcomes += 1;
                    for secret in EXTENSION_SECRETS.iter().chain(&pem_body) {
                        assert!(!text.contains(secret), "{secret} in {text}");
                    }
                    assert!(!text.contains("eyJ"), "a JWT in {text}");
                }
            }
        }
    }
    assert!(outcomes > 500);
}
