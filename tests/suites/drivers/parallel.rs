//! Parallel operations on one client, for every driver: N tool calls at once share one
//! session (one handshake in the legacy era, none in the modern one), a session lost under a
//! burst is re-established once, and a cancelled call leaves the others running.

use std::time::Duration;

use mcp_proto::{Budget, Error, ProtocolVersion, Resolution, SessionConfig};
use mcp_testkit::{OAuthScript, Script, ServerEra, TestServer};
use serde_json::Value;

use super::support::{Call, Driver, args, eventually};

/// A client for `server` with a 20 s budget at millisecond resolution, its era pinned to
/// `version` (or detected when `None`).
fn client<D: Driver>(server: &TestServer, version: Option<ProtocolVersion>) -> D {
    let config = SessionConfig::new(&server.url())
        .expect("the test server's URL is valid")
        .with_budget(Budget::from_secs(20))
        .with_resolution(Resolution::MILLISECOND);
    D::new(match version {
        Some(version) => config.with_protocol_version(version),
        None => config,
    })
}

fn echoes(n: usize) -> Vec<Call> {
    (0..n)
        .map(|i| ("echo", args(&[("text", Value::from(format!("call {i}")))])))
        .collect()
}

#[track_caller]
fn assert_echoed(called: &[Result<mcp_proto::CallToolResult, Error>]) {
    for (i, result) in called.iter().enumerate() {
        match result {
            Ok(result) => assert_eq!(result.text(), format!("call {i}"), "call {i}"),
            Err(err) => panic!("call {i} failed: {err}"),
        }
    }
}

pub(crate) fn sixty_four_calls_on_a_new_legacy_session_send_one_handshake<D: Driver>() {
    let server = TestServer::start(Script::new().delay("initialize", Duration::from_millis(50)));
    let client: D = client(&server, Some(ProtocolVersion::LATEST));
    let called = client.call_tools_at_once(echoes(64), None);
    assert_echoed(&called);
    assert_eq!(server.count("initialize"), 1, "{:?}", server.rpc_methods());
    assert_eq!(server.count("notifications/initialized"), 1);
    assert_eq!(server.count("tools/call"), 64);
    assert_eq!(server.sessions().len(), 1, "one session on the server");
}

pub(crate) fn sixty_four_calls_on_a_modern_server_send_no_handshake<D: Driver>() {
    let server = TestServer::start(Script::new().era(ServerEra::Modern));
    let client: D = client(&server, None);
    let called = client.call_tools_at_once(echoes(64), None);
    assert_echoed(&called);
    assert_eq!(server.count("initialize"), 0);
    assert_eq!(server.count("tools/call"), 64);
}

pub(crate) fn a_session_lost_under_a_burst_is_re_established_once<D: Driver>() {
    let server = TestServer::start(Script::new());
    let mut client: D = client(&server, Some(ProtocolVersion::LATEST));
    client.probe().expect("the session is established");
    let before = server.sessions();
    server.expire_sessions();
    server.clear_requests();
    let called = client.call_tools_at_once(echoes(32), None);
    assert_echoed(&called);
    assert_eq!(server.count("initialize"), 1, "{:?}", server.rpc_methods());
    let after = server.sessions();
    assert_eq!(after.len(), 1);
    assert_ne!(after, before, "a new session");
}

pub(crate) fn a_cancelled_call_leaves_the_others_running<D: Driver>() {
    let server = TestServer::start(Script::new());
    let mut client: D = client(&server, Some(ProtocolVersion::LATEST));
    client.probe().expect("the session is established");
    server.clear_requests();
    // Seven short sleeps and a long one; the long one is cancelled once all eight are in.
    let mut calls: Vec<Call> = (0..7)
        .map(|_| ("sleep", args(&[("ms", Value::from(300))])))
        .collect();
    calls.push(("sleep", args(&[("ms", Value::from(30_000))])));
    let trigger = Box::new(|| {
        let all_in = eventually(Duration::from_secs(10), &mut || {
            server.count("tools/call") == 8
        });
        assert!(all_in, "the eight calls reached the server");
    });
    let started = std::time::Instant::now();
    let called = client.call_tools_at_once(calls, Some((7, trigger)));
    for (i, result) in called[..7].iter().enumerate() {
        assert!(result.is_ok(), "call {i}: {result:?}");
    }
    assert!(
        matches!(called[7], Err(Error::Cancelled { .. })),
        "{:?}",
        called[7]
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the cancel ended it early"
    );
}

pub(crate) fn sixteen_calls_on_a_cold_oauth_server_authorize_once<D: Driver>() {
    let server = TestServer::start(Script::new().oauth(OAuthScript::new()));
    let (client, _recorder) =
        super::auth::oauth_client::<D>(&server, Duration::from_secs(20), true);
    let called = client.call_tools_at_once(echoes(16), None);
    assert_echoed(&called);
    let trail = server.trail();
    let count = |label| server.count(label);
    // One authorization for all sixteen: one registration, one person's step, one token.
    assert_eq!(count("oauth:register"), 1, "{trail:?}");
    assert_eq!(count("oauth:authorize"), 1, "{trail:?}");
    assert_eq!(count("oauth:token"), 1, "{trail:?}");
    assert_eq!(count("tools/call"), 16, "{trail:?}");
}

pub(crate) fn sixteen_calls_refused_at_once_refresh_the_token_once<D: Driver>() {
    let server = TestServer::start(Script::new().oauth(OAuthScript::new()));
    let (mut client, _recorder) =
        super::auth::oauth_client::<D>(&server, Duration::from_secs(20), true);
    client.probe().expect("authorized and established");
    // Every call of the burst presents a token the server no longer takes.
    server.expire_tokens();
    server.clear_requests();
    let called = client.call_tools_at_once(echoes(16), None);
    assert_echoed(&called);
    let trail = server.trail();
    let count = |label| server.count(label);
    assert_eq!(count("oauth:refresh"), 1, "one refresh for all: {trail:?}");
    assert_eq!(count("oauth:authorize"), 0, "{trail:?}");
    assert_eq!(count("oauth:token"), 0, "{trail:?}");
}

pub(crate) fn a_clone_with_its_own_observer_hears_only_its_own_operations<D: Driver>() {
    // A bridge relays each call's progress to whoever asked: it must tell one operation's
    // events from another's.
    let server = TestServer::start(Script::new().era(ServerEra::Modern));
    let mut client: D = client(&server, None);
    let session = client.observe();
    let (called, own) = client.call_observed("echo", super::support::echo("mine"));
    assert_eq!(called.unwrap().text(), "mine");
    let methods = |recorder: &super::support::Recorder| -> Vec<&'static str> {
        recorder.legs().iter().map(|leg| leg.kind.label()).collect()
    };
    assert_eq!(
        methods(&own),
        ["tools/call"],
        "the clone's observer heard its call"
    );
    assert!(
        session.legs().is_empty(),
        "the session's did not: {:?}",
        session.legs()
    );
    // The client itself still reports to the session's observer.
    client
        .call_tool("echo", super::support::echo("theirs"))
        .unwrap();
    assert_eq!(methods(&session), ["tools/call"]);
    assert_eq!(methods(&own), ["tools/call"], "and not to the clone's");
}
