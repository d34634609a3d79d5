//! The authorization suite, for every driver, against the test server's OAuth mode
//! ([`Script::oauth`]): a cold call authorizes inside its one budget (discovery,
//! registration, the headless browser step, the token) and the next call sends no auth leg;
//! without an authorizer the call ends at once naming the server and issuer; every hostile
//! authorization server ends in its own typed error inside the budget, and says whose fault it
//! is (the issuer's refusals are [`Fault::AuthorizationServer`], never the MCP server's);
//! credentials never reach
//! an error, a log, a non-MCP path or another host, and no redirect is followed; an expired
//! token is refreshed inside the next operation's budget; a step-up is authorized inside the
//! call that needed it; a token endpoint that reads the client from the form (the Python
//! SDK's) serves every grant with every client authentication method.

use std::time::{Duration, Instant};

use mcp_auth::{AuthError, ClientConfig, Grant};
use mcp_proto::driver::LegKind;
use mcp_proto::{CallToolResult, Error, Fault, OAuth, SessionConfig};
use mcp_testkit::{AuthHostile, OAuthScript, RecordedRequest, Script, TestServer};

use super::support::{self, Driver, Recorder, assert_within_budget, config, echo};
use super::{BUDGET, Call, MS, assert_one_deadline, assert_timed_out};

/// The redirect URI the client registers. Nothing listens there: the headless authorizer
/// returns the redirect without following it.
const REDIRECT_URI: &str = "http://127.0.0.1:8976/callback";

/// The legs of a cold authorization as the server sees them, the browser's GET included.
const COLD: [&str; 5] = [
    "oauth:resource-metadata",
    "oauth:server-metadata",
    "oauth:register",
    "oauth:authorize",
    "oauth:token",
];

/// What a machine client's authorization is as the server sees it: the call that met the
/// `401`, discovery, then the `client_credentials` grant (no person, no registration).
const MACHINE: [&str; 4] = [
    "initialize",
    "oauth:resource-metadata",
    "oauth:server-metadata",
    "oauth:client-credentials",
];

/// A configuration for `server` with `budget`, authorizing with OAuth as a public client.
fn oauth_config(server: &TestServer, budget: Duration) -> SessionConfig {
    let client = ClientConfig::new(REDIRECT_URI)
        .expect("a loopback redirect URI")
        .with_client_name("mcp-testkit");
    config(server, budget).with_oauth(OAuth::new(client))
}

/// An OAuth client for `server` (with the headless authorizer when `headless`), reporting to
/// a recorder.
pub(super) fn oauth_client<D: Driver>(
    server: &TestServer,
    budget: Duration,
    headless: bool,
) -> (D, Recorder) {
    let mut client = D::new(oauth_config(server, budget));
    if headless {
        client.authorize_headlessly();
    }
    let recorder = client.observe();
    (client, recorder)
}

/// Calls `echo` once with a headless OAuth client against a new server with `script`.
fn authorized_call<D: Driver>(script: Script, budget: Duration) -> Call {
    let server = TestServer::start(script);
    let (mut client, recorder) = oauth_client::<D>(&server, budget, true);
    super::timed_call(server, &mut client, recorder)
}

fn strs(labels: &[String]) -> Vec<&str> {
    labels.iter().map(String::as_str).collect()
}

/// The labels of the legs the client reported.
fn leg_labels(recorder: &Recorder) -> Vec<&'static str> {
    recorder.legs().iter().map(|leg| leg.kind.label()).collect()
}

/// The path of a recorded request, without its query.
fn path(request: &RecordedRequest) -> &str {
    request.path.split('?').next().unwrap_or("")
}

/// A query or form parameter of a recorded request (the target's query for a GET, the form
/// body otherwise).
fn param(request: &RecordedRequest, name: &str) -> Option<String> {
    let text = if request.method == "GET" {
        request
            .path
            .split_once('?')
            .map_or(String::new(), |(_, q)| q.to_owned())
    } else {
        String::from_utf8_lossy(&request.body).into_owned()
    };
    url::form_urlencoded::parse(text.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// The last access token the server issued.
fn last_access_token(server: &TestServer) -> String {
    server
        .issued_secrets()
        .into_iter()
        .rev()
        .find(|s| s.starts_with("at-"))
        .expect("an access token was issued")
}

/// Asserts no Bearer token went anywhere but `/mcp`, and no `Authorization` at all went
/// anywhere but `/mcp` and `/token` (client authentication).
#[track_caller]
fn assert_credentials_stay_home(server: &TestServer) {
    for request in server.requests() {
        let Some(value) = request.header("authorization") else {
            continue;
        };
        let allowed = match path(&request) {
            "/mcp" => value.starts_with("Bearer "),
            "/token" => value.starts_with("Basic "),
            _ => false,
        };
        assert!(
            allowed,
            "{} {} carried Authorization: {value}",
            request.method, request.path
        );
    }
}

pub(super) fn a_cold_call_authorizes_headlessly_and_the_next_call_sends_no_auth_leg<D: Driver>() {
    let server =
        TestServer::start(Script::new().oauth(OAuthScript::new().challenge_scope("files:read")));
    let (mut client, recorder) = oauth_client::<D>(&server, BUDGET, true);
    let started = Instant::now();
    let result = client.call_tool("echo", echo("hi")).unwrap();
    let elapsed = started.elapsed();
    eprintln!("a cold authorized call took {elapsed:?}");
    assert_eq!(result.text(), "hi");
    let mut expected = vec!["initialize"];
    expected.extend(COLD);
    expected.extend(["initialize", "notifications/initialized", "tools/call"]);
    assert_eq!(strs(&server.trail()), expected);
    // The client's legs: the same but the browser step (the authorizer's, not a leg), all
    // granted from one budget.
    assert_eq!(
        leg_labels(&recorder),
        [
            "initialize",
            "oauth:resource-metadata",
            "oauth:server-metadata",
            "oauth:register",
            "oauth:token",
            "initialize",
            "notifications/initialized",
            "tools/call",
        ]
    );
    assert!(
        recorder
            .legs()
            .iter()
            .filter(|leg| matches!(leg.kind, LegKind::Auth(_)))
            .count()
            == 4
    );
    assert_one_deadline(&recorder);
    assert_within_budget("cold call", elapsed, BUDGET, MS);

    // The authorization request: PKCE S256, state, resource, the challenge's scope.
    let requests = server.requests();
    let authorize = requests
        .iter()
        .find(|r| path(r) == "/authorize")
        .expect("the browser step");
    assert_eq!(authorize.method, "GET");
    assert_eq!(
        param(authorize, "code_challenge_method").as_deref(),
        Some("S256")
    );
    assert_eq!(
        param(authorize, "resource").as_deref(),
        Some(server.url().as_str())
    );
    assert_eq!(param(authorize, "scope").as_deref(), Some("files:read"));
    assert_eq!(
        param(authorize, "redirect_uri").as_deref(),
        Some(REDIRECT_URI)
    );
    assert!(param(authorize, "state").is_some_and(|s| !s.is_empty()));
    let token = requests.iter().find(|r| path(r) == "/token").unwrap();
    assert_eq!(
        param(token, "grant_type").as_deref(),
        Some("authorization_code")
    );
    assert!(param(token, "code_verifier").is_some());

    // The Bearer token: on every MCP request after it was issued, nowhere else.
    let bearer = format!("Bearer {}", last_access_token(&server));
    let issued_at = requests.iter().position(|r| path(r) == "/token").unwrap();
    for (number, request) in requests.iter().enumerate() {
        let expected = (path(request) == "/mcp" && number > issued_at).then_some(bearer.as_str());
        assert_eq!(
            request.header("authorization"),
            expected,
            "{} {}",
            request.method,
            request.path
        );
    }

    // The next call: the token is the session's, no auth leg.
    server.clear_requests();
    recorder.clear();
    assert_eq!(
        client.call_tool("echo", echo("again")).unwrap().text(),
        "again"
    );
    assert_eq!(server.trail(), ["tools/call"]);
    assert_eq!(leg_labels(&recorder), ["tools/call"]);
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(bearer.as_str())
    );
}

pub(super) fn without_an_authorizer_the_call_ends_at_once_naming_server_and_issuer<D: Driver>() {
    let server = TestServer::start(Script::new().oauth(OAuthScript::new()));
    let (mut client, recorder) = oauth_client::<D>(&server, BUDGET, false);
    let started = Instant::now();
    let err = client.call_tool("echo", echo("x")).unwrap_err();
    let elapsed = started.elapsed();
    eprintln!("no authorizer: {err} after {elapsed:?}");
    match &err {
        Error::AuthorizationRequired {
            server: name,
            method,
            issuer,
            ..
        } => {
            assert!(name.contains(&server.port().to_string()), "{name}");
            assert_eq!(*method, "initialize");
            assert_eq!(issuer.as_deref(), Some(server.base_url().as_str()));
        }
        other => panic!("expected AuthorizationRequired, got {other:?}"),
    }
    assert!(
        elapsed < BUDGET / 4,
        "it waited {elapsed:?} of its {BUDGET:?}"
    );
    // Discovery and registration, then nothing: no browser, no token, no retry.
    assert_eq!(
        server.trail(),
        [
            "initialize",
            "oauth:resource-metadata",
            "oauth:server-metadata",
            "oauth:register",
        ]
    );
    assert_eq!(recorder.legs().len(), 4);
}

/// What an authorization against a hostile server must end in.
type Check = fn(&Result<CallToolResult, Error>) -> bool;

/// A row of the hostile table: the mode, whose fault the error is, the expected outcome as a
/// pattern and its text.
macro_rules! auth_row {
    ($mode:expr, $fault:ident => $($expected:tt)+) => {
        ($mode, Fault::$fault, stringify!($($expected)+), (|r: &Result<CallToolResult, Error>| matches!(r, $($expected)+)) as Check)
    };
}

pub(super) fn every_hostile_authorization_server_ends_in_its_own_typed_error<D: Driver>() {
    // Another host: nothing may reach it (no redirect followed, no credential sent).
    let other = TestServer::start(Script::new());
    let rows = [
        auth_row!(AuthHostile::WrongIssuer, AuthorizationServer
            => Err(Error::Authorization { error: AuthError::IssuerMismatch { .. }, .. })),
        auth_row!(AuthHostile::ForeignResource(other.url()), Server
            => Err(Error::Authorization { error: AuthError::ResourceMismatch { .. }, .. })),
        auth_row!(AuthHostile::AuthorizeRedirectTo(other.base_url()), AuthorizationServer
            => Err(Error::Authorization { error: AuthError::Malformed {
                endpoint: "authorization response to redirect URI", .. }, .. })),
        auth_row!(AuthHostile::WrongState, Authorization
            => Err(Error::Authorization { error: AuthError::StateMismatch { .. }, .. })),
        auth_row!(AuthHostile::WrongIss, AuthorizationServer
            => Err(Error::Authorization { error: AuthError::IssMismatch { .. }, .. })),
        auth_row!(AuthHostile::NoIss, AuthorizationServer
            => Err(Error::Authorization { error: AuthError::IssMissing { .. }, .. })),
        auth_row!(AuthHostile::DenyAuthorization, Authorization
            => Err(Error::Authorization { error: AuthError::AuthorizationDenied { .. }, .. })),
        auth_row!(AuthHostile::TokenStall, Network
            => Err(Error::LegTimedOut { method: "oauth:token", .. })),
        auth_row!(AuthHostile::TokenOversize(100 * 1024 * 1024), AuthorizationServer
            => Err(Error::Authorization { error: AuthError::Malformed {
                endpoint: "token endpoint", .. }, .. })),
        auth_row!(AuthHostile::TokenOversizeChunked(100 * 1024 * 1024), AuthorizationServer
            => Err(Error::Authorization { error: AuthError::Malformed {
                endpoint: "token endpoint", .. }, .. })),
        auth_row!(AuthHostile::TokenRedirectTo(format!("{}/token", other.base_url())), AuthorizationServer
            => Err(Error::Authorization { error: AuthError::Redirected { status: 302, .. }, .. })),
        auth_row!(AuthHostile::RefuseTokens, Server
            => Err(Error::Authorization { error: AuthError::TokenNotAccepted { .. }, .. })),
    ];
    let budget = Duration::from_secs(2);
    let mut failures = Vec::new();
    for (mode, fault, expected, check) in rows {
        let label = format!("{mode:?}");
        let call = authorized_call::<D>(
            Script::new().oauth(OAuthScript::new().hostile(mode)),
            budget,
        );
        eprintln!(
            "{label}: {:?} after {:?}; legs {:?}",
            call.result,
            call.elapsed,
            call.server.trail()
        );
        if !check(&call.result) {
            failures.push(format!(
                "{label}: expected {expected}, got {:?}",
                call.result
            ));
        }
        if call.elapsed > budget + MS + support::MARGIN {
            failures.push(format!(
                "{label}: took {:?} (budget {budget:?})",
                call.elapsed
            ));
        }
        if let Err(err) = &call.result {
            // The MCP server's own metadata is the server's fault; what the issuer says is
            // the authorization server's, a fault (and an exit code) of its own.
            if err.fault() != fault {
                failures.push(format!(
                    "{label}: the fault is {:?}, not {fault:?}: {err}",
                    err.fault()
                ));
            }
            let shown = format!("{err} {err:?}");
            for secret in call.server.issued_secrets() {
                if shown.contains(&secret) {
                    failures.push(format!("{label}: the error shows the secret {secret}"));
                }
            }
        }
        assert_credentials_stay_home(&call.server);
    }
    assert!(
        other.requests().is_empty(),
        "another host was reached: {:?}",
        other.trail()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

pub(super) fn a_stalled_token_endpoint_ends_the_authorization_at_the_budget<D: Driver>() {
    let budget = Duration::from_secs(1);
    let call = authorized_call::<D>(
        Script::new().oauth(OAuthScript::new().hostile(AuthHostile::TokenStall)),
        budget,
    );
    assert_timed_out("stalled token endpoint", &call, "oauth:token", budget, MS);
    let mut expected = vec!["initialize"];
    expected.extend(COLD);
    assert_eq!(strs(&call.server.trail()), expected);
}

pub(super) fn oauth_credentials_never_reach_an_error_a_log_or_another_host<D: Driver>() {
    let other = TestServer::start(Script::new());
    let server = TestServer::start(Script::new().oauth(OAuthScript::new().client_secrets(true)));
    let (mut client, recorder) = oauth_client::<D>(&server, BUDGET, true);
    assert_eq!(client.call_tool("echo", echo("x")).unwrap().text(), "x");
    // A confidential client: the token requests authenticate with Basic, to /token only.
    let secrets = server.issued_secrets();
    assert!(secrets.iter().any(|s| s.starts_with("cs-")), "{secrets:?}");
    assert!(secrets.iter().any(|s| s.starts_with("rt-")), "{secrets:?}");
    assert_credentials_stay_home(&server);

    // The server stops accepting every token: the refresh's, then each new authorization's.
    server.update_script(|s| s.update_oauth(|o| o.hostile(AuthHostile::RefuseTokens)));
    server.expire_tokens();
    let refused = client.call_tool("echo", echo("x")).unwrap_err();
    assert!(
        matches!(
            refused,
            Error::Authorization {
                error: AuthError::TokenNotAccepted { .. },
                ..
            }
        ),
        "{refused:?}"
    );
    assert_credentials_stay_home(&server);

    // The resource now names an authorization server on another host: discovery goes there,
    // without the token (there is none to send: the last one was refused) or any other.
    server.update_script(|s| {
        s.update_oauth(|_| {
            OAuthScript::new()
                .client_secrets(true)
                .issuer(other.base_url())
        })
    });
    let elsewhere = client.call_tool("echo", echo("x")).unwrap_err();
    assert!(
        matches!(
            elsewhere,
            Error::Authorization {
                error: AuthError::MetadataNotFound { .. },
                ..
            }
        ),
        "{elsewhere:?}"
    );
    assert!(!other.requests().is_empty(), "discovery went to the issuer");
    for request in other.requests() {
        assert_eq!(
            request.header("authorization"),
            None,
            "{} {}",
            request.method,
            request.path
        );
        assert_eq!(request.method, "GET", "only metadata is asked for there");
    }
    assert_credentials_stay_home(&server);

    // No secret in any error, the session's Debug, or what the observer was told.
    let shown = format!(
        "{refused} {refused:?} {elsewhere} {elsewhere:?} {:?} {:?} {:?}",
        &*client.session(),
        recorder.legs(),
        recorder.events()
    );
    for secret in server.issued_secrets() {
        assert!(!shown.contains(&secret), "{secret} leaked: {shown}");
    }
}

pub(super) fn an_oauth_redirect_is_not_followed_and_leaks_nothing<D: Driver>() {
    let other = TestServer::start(Script::new());
    let server = TestServer::start(
        Script::new().oauth(OAuthScript::new().client_secrets(true).hostile(
            AuthHostile::TokenRedirectTo(format!("{}/token", other.base_url())),
        )),
    );
    let (mut client, _) = oauth_client::<D>(&server, BUDGET, true);
    let started = Instant::now();
    let err = client.call_tool("echo", echo("x")).unwrap_err();
    let elapsed = started.elapsed();
    match &err {
        Error::Authorization {
            error: AuthError::Redirected { status, url, .. },
            ..
        } => {
            assert_eq!(*status, 302);
            assert!(url.ends_with("/token"), "{url}");
        }
        other => panic!("expected Redirected, got {other:?}"),
    }
    assert!(elapsed < BUDGET / 4, "{elapsed:?}");
    // The token request (client secret in its Basic header, code and verifier in its body)
    // went to the token endpoint once; nothing went to the Location.
    assert_eq!(server.count("oauth:token"), 1);
    assert!(other.requests().is_empty(), "{:?}", other.trail());
    let shown = format!("{err} {err:?}");
    for secret in server.issued_secrets() {
        assert!(!shown.contains(&secret), "{secret} leaked: {shown}");
    }
}

pub(super) fn an_expired_oauth_token_is_refreshed_inside_the_next_operation<D: Driver>() {
    let server = TestServer::start(Script::new().oauth(OAuthScript::new()));
    let (mut client, recorder) = oauth_client::<D>(&server, BUDGET, true);
    assert_eq!(client.call_tool("echo", echo("x")).unwrap().text(), "x");
    let first = last_access_token(&server);

    server.expire_tokens();
    server.clear_requests();
    recorder.clear();
    let started = Instant::now();
    assert_eq!(client.call_tool("echo", echo("y")).unwrap().text(), "y");
    let elapsed = started.elapsed();
    eprintln!("a refreshed call took {elapsed:?}");
    let expected = [
        "tools/call",
        "oauth:resource-metadata",
        "oauth:server-metadata",
        "oauth:refresh",
        "tools/call",
    ];
    assert_eq!(server.trail(), expected);
    assert_eq!(leg_labels(&recorder), expected);
    assert_one_deadline(&recorder);
    assert_within_budget("refreshed call", elapsed, BUDGET, MS);
    let second = last_access_token(&server);
    assert_ne!(first, second);
    let requests = server.requests();
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {first}").as_str())
    );
    assert_eq!(
        requests[4].header("authorization"),
        Some(format!("Bearer {second}").as_str())
    );
    assert_eq!(requests[3].header("authorization"), None);
    assert!(param(&requests[3], "refresh_token").is_some_and(|t| t.starts_with("rt-")));
}

pub(super) fn a_step_up_is_authorized_inside_the_call_that_needed_it<D: Driver>() {
    let server = TestServer::start(
        Script::new().oauth(
            OAuthScript::new()
                .challenge_scope("files:read")
                .call_scope("files:write"),
        ),
    );
    let (mut client, recorder) = oauth_client::<D>(&server, BUDGET, true);
    assert_eq!(client.call_tool("echo", echo("x")).unwrap().text(), "x");
    let trail = server.trail();
    eprintln!("step-up: {trail:?}");
    assert_eq!(server.count("oauth:authorize"), 2, "{trail:?}");
    assert_eq!(
        server.count("oauth:register"),
        1,
        "the registration is reused: {trail:?}"
    );
    assert_eq!(trail.last().map(String::as_str), Some("tools/call"));
    let requests = server.requests();
    let scopes: Vec<String> = requests
        .iter()
        .filter(|r| path(r) == "/authorize")
        .filter_map(|r| param(r, "scope"))
        .collect();
    assert_eq!(scopes[0], "files:read");
    let second: Vec<&str> = scopes[1].split(' ').collect();
    assert!(
        second.contains(&"files:read") && second.contains(&"files:write"),
        "{scopes:?}"
    );
    assert_one_deadline(&recorder);
}

pub(super) fn a_spent_refresh_token_leads_to_a_new_authorization_inside_the_operation<D: Driver>() {
    let server = TestServer::start(Script::new().oauth(OAuthScript::new()));
    let (mut client, recorder) = oauth_client::<D>(&server, BUDGET, true);
    assert_eq!(client.call_tool("echo", echo("x")).unwrap().text(), "x");
    server.expire_tokens();
    server.expire_refresh_tokens();
    server.clear_requests();
    recorder.clear();
    assert_eq!(client.call_tool("echo", echo("y")).unwrap().text(), "y");
    // The refused refresh is forgotten; the registration is kept.
    assert_eq!(
        server.trail(),
        [
            "tools/call",
            "oauth:resource-metadata",
            "oauth:server-metadata",
            "oauth:refresh",
            "oauth:authorize",
            "oauth:token",
            "tools/call",
        ]
    );
    assert_one_deadline(&recorder);
}

pub(super) fn an_authorization_endpoint_that_never_answers_ends_at_the_budget<D: Driver>() {
    let budget = Duration::from_secs(1);
    let call = authorized_call::<D>(
        Script::new().oauth(OAuthScript::new().hostile(AuthHostile::AuthorizeStall)),
        budget,
    );
    eprintln!(
        "a stalled authorization endpoint: {:?} after {:?}",
        call.result, call.elapsed
    );
    assert!(
        matches!(call.result, Err(Error::AuthorizationRequired { .. })),
        "{:?}",
        call.result
    );
    super::assert_cut_at_budget("stalled authorize", call.elapsed, budget, MS);
    // Nothing after the browser step.
    assert_eq!(
        call.server.trail().last().map(String::as_str),
        Some("oauth:authorize")
    );
}

pub(super) fn an_authorizer_that_runs_out_of_time_or_fails_is_not_reported_as_missing<D: Driver>() {
    // The authorizer is configured in both cases: the error must not say there is none.
    let budget = Duration::from_secs(1);
    let cases = [
        (AuthHostile::AuthorizeStall, true),
        (AuthHostile::AuthorizeStatus(503), false),
    ];
    let mut failures = Vec::new();
    for (mode, times_out) in cases {
        let label = format!("{mode:?}");
        let call = authorized_call::<D>(
            Script::new().oauth(OAuthScript::new().hostile(mode)),
            budget,
        );
        eprintln!("{label}: {:?} after {:?}", call.result, call.elapsed);
        match &call.result {
            Err(err @ Error::AuthorizationRequired { reason, issuer, .. }) => {
                if issuer.is_none() {
                    failures.push(format!("{label}: the issuer is known but not named: {err}"));
                }
                if reason.contains("no authorizer") {
                    failures.push(format!("{label}: reported as missing: {err}"));
                }
                if times_out && !reason.contains("budget") {
                    failures.push(format!("{label}: a timeout not reported as one: {err}"));
                }
            }
            other => failures.push(format!(
                "{label}: expected AuthorizationRequired, got {other:?}"
            )),
        }
        assert_within_budget(&label, call.elapsed, budget, MS);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Checks how each token request of `server` authenticated as a client of `method`: the
/// client named in the form always, the secret in Basic credentials for `client_secret_basic`
/// (never in the form), in the form for `client_secret_post`, nowhere for `none`.
fn token_request_failures(server: &TestServer, method: &str) -> Vec<String> {
    let mut failures = Vec::new();
    for request in server.requests().iter().filter(|r| path(r) == "/token") {
        let grant = param(request, "grant_type").unwrap_or_default();
        let label = format!("{method}, {grant}");
        if param(request, "client_id").is_none_or(|id| id.is_empty()) {
            failures.push(format!("{label}: no client_id in the form"));
        }
        let basic = request
            .header("authorization")
            .is_some_and(|v| v.starts_with("Basic "));
        let form_secret = param(request, "client_secret").is_some();
        let (want_basic, want_form_secret) = match method {
            "client_secret_basic" => (true, false),
            "client_secret_post" => (false, true),
            _ => (false, false),
        };
        if basic != want_basic || form_secret != want_form_secret {
            failures.push(format!(
                "{label}: Basic credentials {basic}, a secret in the form {form_secret}"
            ));
        }
    }
    failures
}

pub(super) fn a_token_endpoint_reading_the_client_from_the_form_authorizes_every_method<
    D: Driver,
>() {
    // The Python SDK's authorization server refused the code exchange of a client_secret_basic
    // client ("401 invalid_client: Missing client_id") when the id travelled in Basic only.
    let mut failures = Vec::new();
    for method in ["client_secret_basic", "client_secret_post", "none"] {
        let server = TestServer::start(
            Script::new().oauth(
                OAuthScript::new()
                    .registration_auth_method(method)
                    .client_id_in_form(true),
            ),
        );
        let (mut client, recorder) = oauth_client::<D>(&server, BUDGET, true);
        match client.call_tool("echo", echo("cold")) {
            Ok(result) if result.text() == "cold" => {}
            other => {
                failures.push(format!("{method}: the cold call ended in {other:?}"));
                continue;
            }
        }
        assert_one_deadline(&recorder);
        // The refresh authenticates the same way.
        server.expire_tokens();
        recorder.clear();
        match client.call_tool("echo", echo("refreshed")) {
            Ok(result) if result.text() == "refreshed" => {}
            other => failures.push(format!("{method}: the refreshed call ended in {other:?}")),
        }
        let trail = server.trail();
        eprintln!("{method}: {trail:?}");
        if server.count("oauth:token") != 1 || server.count("oauth:refresh") != 1 {
            failures.push(format!(
                "{method}: expected a code exchange and a refresh: {trail:?}"
            ));
        }
        failures.extend(token_request_failures(&server, method));
        assert_credentials_stay_home(&server);
        assert_one_deadline(&recorder);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

pub(super) fn client_credentials_authenticate_with_basic_and_name_the_client_in_the_form<
    D: Driver,
>() {
    let server = TestServer::start(
        Script::new().oauth(
            OAuthScript::new()
                .client_id_in_form(true)
                .machine_client("machine-1", "machine secret+1"),
        ),
    );
    let grant = Grant::client_credentials("machine-1", "machine secret+1");
    let client_config = ClientConfig::headless(grant).expect("a grant without a person");
    let mut client = D::new(config(&server, BUDGET).with_oauth(OAuth::new(client_config)));
    let recorder = client.observe();
    match client.call_tool("echo", echo("machine")) {
        Ok(result) => assert_eq!(result.text(), "machine"),
        Err(err) => panic!("{err:?}; legs {:?}", server.trail()),
    }
    let mut expected = MACHINE.to_vec();
    expected.extend(["initialize", "notifications/initialized", "tools/call"]);
    assert_eq!(server.trail(), expected);
    assert_one_deadline(&recorder);
    // No refresh token for a machine: an expired token means asking again.
    server.expire_tokens();
    server.clear_requests();
    let again = client.call_tool("echo", echo("again"));
    assert!(again.is_ok(), "{again:?}; legs {:?}", server.trail());
    assert_eq!(
        server.count("oauth:client-credentials"),
        1,
        "{:?}",
        server.trail()
    );
    let failures = token_request_failures(&server, "client_secret_basic");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_credentials_stay_home(&server);
}

pub(super) fn a_token_endpoint_that_refuses_the_client_is_the_authorization_server_s_fault<
    D: Driver,
>() {
    // The MCP server is fine; its issuer refuses the machine client's secret (401
    // invalid_client). A script must be able to tell that from a broken MCP server.
    let server = TestServer::start(
        Script::new().oauth(OAuthScript::new().machine_client("machine-1", "the right secret")),
    );
    let grant = Grant::client_credentials("machine-1", "a stale secret");
    let client_config = ClientConfig::headless(grant).expect("a grant without a person");
    let mut client = D::new(config(&server, BUDGET).with_oauth(OAuth::new(client_config)));
    let started = Instant::now();
    let err = client
        .call_tool("echo", echo("machine"))
        .expect_err("a refused client gets no token");
    let elapsed = started.elapsed();
    match &err {
        Error::Authorization {
            error: AuthError::TokenRejected {
                status: 401, error, ..
            },
            ..
        } => assert_eq!(error.as_deref(), Some("invalid_client"), "{err}"),
        other => panic!("expected the token endpoint's refusal, got {other:?}"),
    }
    assert_eq!(err.fault(), Fault::AuthorizationServer, "{err}");
    assert_eq!(err.fault().as_str(), "authorization_server");
    let text = err.to_string();
    assert!(text.contains("/token") && text.contains("401"), "{text}");
    assert!(!text.contains("stale secret"), "{text}");
    // Asked once, and the tool was never called: no retry, no wait for the budget.
    assert_eq!(server.trail(), MACHINE);
    assert!(elapsed < BUDGET / 4, "it took {elapsed:?} of {BUDGET:?}");
    assert_credentials_stay_home(&server);
}

pub(super) fn an_authorizer_that_never_answers_is_cut_at_the_budget<D: Driver>() {
    // The caller's own authorizer hangs: the operation's timer alone bounds the person's step.
    let budget = Duration::from_secs(1);
    let server = TestServer::start(Script::new().oauth(OAuthScript::new()));
    let (mut client, recorder) = oauth_client::<D>(&server, budget, false);
    client.authorize_never();
    let call = super::timed_call(server, &mut client, recorder);
    eprintln!("never: {:?} after {:?}", call.result, call.elapsed);
    match &call.result {
        Err(Error::AuthorizationRequired { reason, .. }) => {
            assert!(reason.contains("budget"), "{reason}");
        }
        other => panic!("expected AuthorizationRequired, got {other:?}"),
    }
    super::assert_cut_at_budget("never", call.elapsed, budget, MS);
}
