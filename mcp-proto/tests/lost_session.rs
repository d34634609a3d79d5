//! A session a server no longer knows, as real servers say it: `404` (the spec; the Python SDK
//! and FastMCP), or `400` with a body that says the session id is missing, unknown or invalid
//! (the TypeScript SDK's example routing, which `server-everything` and most servers built on
//! that SDK copy). Either way the operation re-initialises once inside its own budget and
//! sends the request again; a second loss in one operation is the error; any other `400` stays
//! the server's error. The bodies below are the real servers' own.

mod support;

use mcp_proto::driver::LegKind;
use mcp_proto::{Clock, Error, ManualClock, Outcome, Session, SessionConfig, Subscription};
use serde_json::Map;
use support::{Answer, drive, healthy, live_session};

const SERVER: &str = "mcp.example.test:8080";

/// `@modelcontextprotocol/server-everything` (2026.8.31) to a POST, GET or DELETE whose
/// `Mcp-Session-Id` it does not know: the routing of the TypeScript SDK's examples.
const EVERYTHING: &str = r#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":3}"#;
/// The TypeScript SDK's `StreamableHTTPServerTransport` when a server made a new transport for
/// a request of an old session (it was never initialised).
const NOT_INITIALIZED: &str = r#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: Server not initialized"},"id":null}"#;
/// The TypeScript SDK's example servers to a GET or DELETE of an unknown session: plain text.
const PLAIN_TEXT: &str = "Invalid or missing session ID";
/// A `400` that has nothing to do with the session: it must stay the server's error.
const INVALID_PARAMS: &str = r#"{"jsonrpc":"2.0","error":{"code":-32602,"message":"Invalid params: text is required"},"id":3}"#;

fn config() -> SessionConfig {
    SessionConfig::new("http://mcp.example.test:8080/mcp")
        .unwrap()
        .with_protocol_version(mcp_proto::ProtocolVersion::LATEST)
}

fn refusal(body: &str) -> Answer {
    let media = if body.starts_with('{') {
        "application/json"
    } else {
        "text/plain; charset=utf-8"
    };
    Answer::Raw(400, Some(media), body.as_bytes().to_vec())
}

#[test]
fn a_400_that_says_the_session_is_unknown_reinitializes_inside_the_same_budget() {
    for body in [EVERYTHING, NOT_INITIALIZED, PLAIN_TEXT] {
        let clock = ManualClock::new();
        let mut session = live_session(config(), &clock);
        let op = session.call_tool("echo", Map::new(), clock.now());
        let run = drive(
            &mut session,
            op,
            &clock,
            &[3.0, 2.0, 1.0, 1.0],
            move |kind, leg| match (kind, leg) {
                (LegKind::CallTool, 1) => refusal(body),
                (other, _) => healthy(other),
            },
        );
        assert!(run.result.is_ok(), "{body}: {:?}", run.result);
        assert_eq!(
            run.methods(),
            [
                "tools/call",
                "initialize",
                "notifications/initialized",
                "tools/call"
            ],
            "{body}"
        );
        assert_eq!(run.grant_secs(), [20, 17, 15, 14], "one budget: {body}");
        let reinitialize = &run.legs[1].request;
        assert!(reinitialize.headers().get("mcp-session-id").is_none());
    }
}

#[test]
fn a_session_said_unknown_twice_in_one_operation_is_the_error_not_a_loop() {
    let clock = ManualClock::new();
    let mut session = live_session(config(), &clock);
    let op = session.call_tool("echo", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], |kind, _| match kind {
        LegKind::CallTool => refusal(EVERYTHING),
        other => healthy(other),
    });
    assert_eq!(run.methods().len(), 4);
    match run.result {
        Err(Error::SessionExpired {
            server,
            method,
            status,
        }) => assert_eq!(
            (server.as_str(), method, status),
            (SERVER, "tools/call", 400)
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn any_other_400_stays_the_servers_error_and_starts_nothing_over() {
    for body in [INVALID_PARAMS, "Bad Request", "<html>400</html>", ""] {
        let clock = ManualClock::new();
        let mut session = live_session(config(), &clock);
        let op = session.call_tool("echo", Map::new(), clock.now());
        let run = drive(&mut session, op, &clock, &[], move |kind, _| match kind {
            LegKind::CallTool => refusal(body),
            other => healthy(other),
        });
        assert_eq!(run.methods(), ["tools/call"], "{body}");
        assert!(
            matches!(
                run.result,
                Err(Error::HttpStatus {
                    status: 400,
                    method: "tools/call",
                    ..
                })
            ),
            "{body}: {:?}",
            run.result
        );
    }
}

#[test]
fn a_400_to_a_request_without_a_session_is_only_a_status() {
    let clock = ManualClock::new();
    let mut session = Session::new(config());
    let op = session.probe(clock.now());
    let run = drive(&mut session, op, &clock, &[], |_, _| refusal(EVERYTHING));
    // Not a lost session: the spec's fallback to HTTP+SSE is tried (a GET), and when that
    // opens no stream either, the error says what each request got.
    assert_eq!(run.methods(), ["initialize", "sse"]);
    let err = run.result.unwrap_err();
    assert!(
        matches!(
            err,
            Error::NoTransport {
                initialize: 400,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("initialize was answered with HTTP status 400, and the GET for an event stream was answered with HTTP status 400"),
        "{err}"
    );
    assert!(
        !session.speaks_sse(),
        "the URL does not speak HTTP+SSE after all"
    );
    // Pinned to Streamable HTTP, the refusal is the error.
    let pinned = config().with_http_transport(mcp_proto::HttpTransport::StreamableHttp);
    let mut session = Session::new(pinned);
    let op = session.probe(clock.now());
    let run = drive(&mut session, op, &clock, &[], |_, _| refusal(EVERYTHING));
    assert_eq!(run.methods(), ["initialize"]);
    assert!(
        matches!(
            run.result,
            Err(Error::HttpStatus {
                status: 400,
                method: "initialize",
                ..
            })
        ),
        "{:?}",
        run.result
    );
}

#[test]
fn every_operation_recovers_a_lost_session_a_listing_too() {
    let clock = ManualClock::new();
    let mut session = live_session(config(), &clock);
    let op = session.list_tools(clock.now());
    let run = drive(&mut session, op, &clock, &[], |kind, leg| {
        match (kind, leg) {
            (LegKind::List { page: 1, .. }, 1) => refusal(EVERYTHING),
            (other, _) => healthy(other),
        }
    });
    assert!(run.result.is_ok(), "{:?}", run.result);
    assert_eq!(
        run.methods(),
        [
            "tools/list",
            "initialize",
            "notifications/initialized",
            "tools/list"
        ]
    );
}

#[test]
fn a_legacy_subscription_stream_of_a_lost_session_is_opened_again_on_a_new_one() {
    let clock = ManualClock::new();
    let mut session = live_session(config(), &clock);
    let op = session.subscribe(Subscription::default(), clock.now());
    let run = drive(&mut session, op, &clock, &[], |kind, leg| {
        match (kind, leg) {
            (LegKind::Subscribe, 1) => refusal(PLAIN_TEXT),
            (LegKind::Subscribe, _) => Answer::Stall,
            (other, _) => healthy(other),
        }
    });
    assert_eq!(
        run.methods(),
        [
            "subscriptions/listen",
            "initialize",
            "notifications/initialized",
            "subscriptions/listen"
        ]
    );
    assert_eq!(run.legs[0].request.method(), http::Method::GET);
    assert_eq!(run.legs[3].request.method(), http::Method::GET);
    assert!(run.result.is_ok(), "the budget ends it: {:?}", run.result);
}

#[test]
fn a_close_of_a_session_the_server_says_it_does_not_know_is_a_close() {
    for body in [EVERYTHING, PLAIN_TEXT] {
        let clock = ManualClock::new();
        let mut session = live_session(config(), &clock);
        let op = session.close(clock.now());
        let run = drive(&mut session, op, &clock, &[], move |_, _| refusal(body));
        assert!(
            matches!(run.result, Ok(Outcome::Closed)),
            "{:?}",
            run.result
        );
        assert!(session.info().is_none(), "the session is forgotten");
    }
    // Another 400 to the DELETE is still the server's error (and the session forgotten).
    let clock = ManualClock::new();
    let mut session = live_session(config(), &clock);
    let op = session.close(clock.now());
    let run = drive(&mut session, op, &clock, &[], |_, _| {
        refusal(INVALID_PARAMS)
    });
    assert!(
        matches!(run.result, Err(Error::HttpStatus { status: 400, .. })),
        "{:?}",
        run.result
    );
    assert!(session.info().is_none());
}
