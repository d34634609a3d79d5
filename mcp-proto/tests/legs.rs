//! The leg table and the timer table: every input names its leg, a leg that is over ignores
//! its inputs, a leg whose input comes at or after its end has timed out, the wait is the
//! earliest timer, and a driver may decline a leg it cannot read beside the others.

mod support;

use std::time::Duration;

use http::{HeaderMap, StatusCode};
use mcp_proto::driver::LegKind;
use mcp_proto::driver::{Input, LegStatus, Output, TransportError};
use mcp_proto::{Clock, Error, Fault, ManualClock, Session, TransportErrorKind};
use serde_json::{Map, json};
use support::{PollPastReports, config, drive, healthy, json_head, live_session, secs, sse_head};

#[test]
fn an_answer_that_arrives_at_the_end_of_its_grant_is_a_timeout() {
    for late_by in [Duration::ZERO, secs(3.0)] {
        let clock = ManualClock::new();
        let mut session = live_session(config(), &clock);
        let mut op = session.call_tool("x", Map::new(), clock.now());
        let Output::Transmit(call) = op.poll_past_reports(clock.now()) else {
            panic!()
        };
        clock.set(call.ends_at + late_by);
        // The head is in, but too late: the proto, not the driver, says the leg timed out.
        assert_eq!(
            op.handle_input(
                Input::Head {
                    leg: call.id,
                    status: StatusCode::OK,
                    headers: &json_head()
                },
                clock.now()
            ),
            LegStatus::Complete
        );
        let Output::Done(Err(err)) = op.poll_past_reports(clock.now()) else {
            panic!("the late answer ends the operation")
        };
        assert!(
            matches!(err, Error::LegTimedOut { method: "tools/call", grant, .. } if grant == secs(20.0)),
            "{err:?}"
        );
        assert_eq!(err.fault(), Fault::Network);
    }

    // A chunk just inside the grant is read; the next one, at the end, is not.
    let clock = ManualClock::new();
    let mut session = live_session(config(), &clock);
    let mut op = session.call_tool("x", Map::new(), clock.now());
    let Output::Transmit(call) = op.poll_past_reports(clock.now()) else {
        panic!()
    };
    assert_eq!(
        op.handle_input(
            Input::Head {
                leg: call.id,
                status: StatusCode::OK,
                headers: &json_head()
            },
            clock.now()
        ),
        LegStatus::ReadMore
    );
    clock.set(call.ends_at - secs(0.001));
    assert_eq!(
        op.handle_input(
            Input::Chunk {
                leg: call.id,
                bytes: b"{\"jsonrpc\":"
            },
            clock.now()
        ),
        LegStatus::ReadMore
    );
    clock.set(call.ends_at);
    assert_eq!(
        op.handle_input(
            Input::Chunk {
                leg: call.id,
                bytes: b"\"2.0\"}"
            },
            clock.now()
        ),
        LegStatus::Complete
    );
    assert!(matches!(
        op.poll_past_reports(clock.now()),
        Output::Done(Err(Error::LegTimedOut { .. }))
    ));
}

#[test]
fn a_proxy_that_ran_out_of_the_grant_is_the_proxy_s_fault_even_at_the_leg_s_end() {
    let stalled = "the proxy http://127.0.0.1:3128 did not answer CONNECT mcp.example:443";
    for late_by in [Duration::ZERO, secs(0.5)] {
        let clock = ManualClock::new();
        let mut session = live_session(config(), &clock);
        let mut op = session.call_tool("x", Map::new(), clock.now());
        let Output::Transmit(call) = op.poll_past_reports(clock.now()) else {
            panic!()
        };
        // The driver saw the tunnel still waiting for the proxy when the grant ran out.
        clock.set(call.ends_at + late_by);
        op.handle_input(
            Input::Failed {
                leg: call.id,
                error: TransportError::new(TransportErrorKind::ProxyTimedOut, stalled),
            },
            clock.now(),
        );
        let Output::Done(Err(err)) = op.poll_past_reports(clock.now()) else {
            panic!("the proxy's failure ends the operation")
        };
        let Error::Proxy { reason, method, .. } = &err else {
            panic!("expected Error::Proxy, got {err:?}")
        };
        assert_eq!(*method, "tools/call");
        assert_eq!(
            reason,
            &format!("{stalled} within the 20 s granted to that leg")
        );
        assert_eq!((err.kind(), err.fault()), ("proxy", Fault::Network));
    }
    // Any other failure reported at the leg's end is still the leg's timeout.
    let clock = ManualClock::new();
    let mut session = live_session(config(), &clock);
    let mut op = session.call_tool("x", Map::new(), clock.now());
    let Output::Transmit(call) = op.poll_past_reports(clock.now()) else {
        panic!()
    };
    clock.set(call.ends_at);
    op.handle_input(
        Input::Failed {
            leg: call.id,
            error: TransportError::new(TransportErrorKind::Proxy, "refused"),
        },
        clock.now(),
    );
    assert!(matches!(
        op.poll_past_reports(clock.now()),
        Output::Done(Err(Error::LegTimedOut { .. }))
    ));
}

#[test]
fn inputs_for_a_leg_that_is_over_are_ignored() {
    let clock = ManualClock::new();
    let mut session = Session::new(config());
    let mut op = session.call_tool("x", Map::new(), clock.now());
    let Output::Transmit(init) = op.poll_past_reports(clock.now()) else {
        panic!()
    };
    let answer = json!({"jsonrpc": "2.0", "id": 1, "result": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}});
    assert_eq!(
        op.handle_input(
            Input::Head {
                leg: init.id,
                status: StatusCode::OK,
                headers: &json_head()
            },
            clock.now()
        ),
        LegStatus::ReadMore
    );
    assert_eq!(
        op.handle_input(
            Input::Chunk {
                leg: init.id,
                bytes: answer.to_string().as_bytes()
            },
            clock.now()
        ),
        LegStatus::ReadMore
    );
    op.handle_input(Input::End { leg: init.id }, clock.now());
    let Output::Transmit(initialized) = op.poll_past_reports(clock.now()) else {
        panic!()
    };
    assert_eq!(initialized.kind, LegKind::Initialized);
    assert!(!op.is_in_flight(init.id));
    assert!(op.is_in_flight(initialized.id));

    // A driver that is late with news of the first leg changes nothing, whatever it says.
    assert_eq!(
        op.handle_input(
            Input::Head {
                leg: init.id,
                status: StatusCode::INTERNAL_SERVER_ERROR,
                headers: &json_head()
            },
            clock.now()
        ),
        LegStatus::Complete
    );
    assert_eq!(
        op.handle_input(
            Input::Chunk {
                leg: init.id,
                bytes: b"garbage"
            },
            clock.now()
        ),
        LegStatus::Complete
    );
    op.handle_input(Input::End { leg: init.id }, clock.now());
    let broken = TransportError::new(TransportErrorKind::Io, "reset");
    op.handle_input(
        Input::Failed {
            leg: init.id,
            error: broken,
        },
        clock.now(),
    );
    assert!(
        matches!(op.poll_past_reports(clock.now()), Output::Wait(at) if at == initialized.ends_at)
    );

    // The legs go on as if nothing happened.
    assert_eq!(
        op.handle_input(
            Input::Head {
                leg: initialized.id,
                status: StatusCode::ACCEPTED,
                headers: &HeaderMap::new()
            },
            clock.now()
        ),
        LegStatus::Complete
    );
    // The committed handshake is the session's first, then the call goes out.
    let call = loop {
        match op.poll_past_reports(clock.now()) {
            Output::Update(update) => session.apply(update),
            Output::Transmit(call) => break call,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(call.kind, LegKind::CallTool);
    assert!(session.info().is_some());
    assert_eq!(
        (init.id.number(), initialized.id.number(), call.id.number()),
        (1, 2, 3),
        "ids are the legs' numbers, in the order they were handed out"
    );
}

#[test]
fn a_driver_that_declines_the_standalone_stream_sends_the_call_at_once() {
    let clock = ManualClock::new();
    let mut session = live_session(config().with_listen(true), &clock);
    let mut op = session.call_tool("x", Map::new(), clock.now());
    let Output::Transmit(listen) = op.poll_past_reports(clock.now()) else {
        panic!()
    };
    assert_eq!(listen.kind, LegKind::Listen);
    let declined = TransportError::new(TransportErrorKind::Declined, "one response at a time");
    op.handle_input(
        Input::Failed {
            leg: listen.id,
            error: declined,
        },
        clock.now(),
    );
    assert!(!op.is_in_flight(listen.id));
    let Output::Transmit(call) = op.poll_past_reports(clock.now()) else {
        panic!("no wait for a stream that will never open")
    };
    assert_eq!(call.kind, LegKind::CallTool);
    assert_eq!(call.timeout, secs(20.0));
}

#[test]
fn a_standalone_stream_that_runs_out_ends_quietly_and_the_call_goes_on() {
    let clock = ManualClock::new();
    let mut session = live_session(config().with_listen(true), &clock);
    let mut op = session.call_tool("x", Map::new(), clock.now());
    let Output::Transmit(listen) = op.poll_past_reports(clock.now()) else {
        panic!()
    };
    let sse = sse_head();
    assert_eq!(
        op.handle_input(
            Input::Head {
                leg: listen.id,
                status: StatusCode::OK,
                headers: &sse
            },
            clock.now()
        ),
        LegStatus::ReadMore
    );
    clock.advance(secs(0.4));
    let Output::Transmit(call) = op.poll_past_reports(clock.now()) else {
        panic!()
    };
    // The call's grant (20 - 0.4 rounded up) ends after the stream's (the budget's end).
    assert_eq!(call.timeout, secs(20.0));
    let Output::Wait(first) = op.poll_past_reports(clock.now()) else {
        panic!()
    };
    assert_eq!(first, listen.ends_at, "the wait is the earliest timer");
    clock.set(first);
    op.handle_input(Input::Timeout, clock.now());
    assert!(!op.is_in_flight(listen.id), "the stream ran out");
    assert!(op.is_in_flight(call.id), "the call did not");
    assert!(matches!(op.poll_past_reports(clock.now()), Output::Wait(at) if at == call.ends_at));
    // A chunk of the stream after that is ignored; the call's answer is still read.
    assert_eq!(
        op.handle_input(
            Input::Chunk {
                leg: listen.id,
                bytes: b"data: {}\n\n"
            },
            clock.now()
        ),
        LegStatus::Complete
    );
    clock.advance(secs(0.1));
    let answer = json!({"jsonrpc": "2.0", "id": 2, "result": {"content": []}}).to_string();
    assert_eq!(
        op.handle_input(
            Input::Head {
                leg: call.id,
                status: StatusCode::OK,
                headers: &json_head()
            },
            clock.now()
        ),
        LegStatus::ReadMore
    );
    assert_eq!(
        op.handle_input(
            Input::Chunk {
                leg: call.id,
                bytes: answer.as_bytes()
            },
            clock.now()
        ),
        LegStatus::ReadMore
    );
    op.handle_input(Input::End { leg: call.id }, clock.now());
    assert!(matches!(
        op.poll_past_reports(clock.now()),
        Output::Done(Ok(_))
    ));
}

#[test]
fn every_error_says_whose_fault_it_is() {
    let server = || "s:80".to_owned();
    let cases = [
        (
            Error::BudgetExhausted {
                server: server(),
                budget: mcp_proto::Budget::DEFAULT,
                method: "tools/call",
                leg: 3,
            },
            Fault::Budget,
        ),
        (
            Error::Unreachable {
                server: server(),
                method: "initialize",
                reason: "refused".into(),
            },
            Fault::Network,
        ),
        (
            Error::JsonRpc {
                server: server(),
                method: "tools/call",
                code: -32602,
                message: "bad".into(),
                data: None,
            },
            Fault::Server,
        ),
        (
            Error::UnsupportedProtocolVersion {
                server: server(),
                version: "1999-01-01".into(),
            },
            Fault::Server,
        ),
        (
            Error::Cancelled {
                server: server(),
                method: "tools/call",
            },
            Fault::Cancelled,
        ),
        (
            Error::InvalidUrl {
                url: "ftp://x".into(),
                reason: "only http and https URLs are supported",
            },
            Fault::Caller,
        ),
        (Error::AlreadyFinished, Fault::Caller),
        // Authorization: the MCP server's metadata is the server's fault, the issuer's
        // refusal the authorization server's (its own fault, not folded into Server).
        (
            Error::Authorization {
                server: server(),
                error: mcp_auth::AuthError::ResourceMismatch {
                    server: "https://s/mcp".into(),
                    resource: "https://other/mcp".into(),
                },
            },
            Fault::Server,
        ),
        (
            Error::Authorization {
                server: server(),
                error: mcp_auth::AuthError::TokenRejected {
                    endpoint: "https://issuer/token".into(),
                    status: 400,
                    error: Some("invalid_grant".into()),
                    description: None,
                },
            },
            Fault::AuthorizationServer,
        ),
    ];
    for (error, fault) in cases {
        assert_eq!(error.fault(), fault, "{error}");
    }
    let version = Error::UnsupportedProtocolVersion {
        server: server(),
        version: "1999-01-01".into(),
    };
    assert!(
        version
            .to_string()
            .ends_with("(it supports 2026-07-28, 2025-11-25, 2025-06-18 and 2025-03-26)"),
        "{version}"
    );
}

#[test]
fn a_lost_session_takes_its_standalone_stream_with_it_and_the_new_one_gets_its_own() {
    let clock = ManualClock::new();
    let mut session = live_session(config().with_listen(true), &clock);
    let mut op = session.call_tool("x", Map::new(), clock.now());
    let Output::Transmit(old_stream) = op.poll_past_reports(clock.now()) else {
        panic!()
    };
    let sse = sse_head();
    assert_eq!(
        op.handle_input(
            Input::Head {
                leg: old_stream.id,
                status: StatusCode::OK,
                headers: &sse
            },
            clock.now()
        ),
        LegStatus::ReadMore
    );
    let Output::Transmit(call) = op.poll_past_reports(clock.now()) else {
        panic!()
    };
    // The server forgot the session: the call's 404 re-initialises inside the operation.
    assert_eq!(
        op.handle_input(
            Input::Head {
                leg: call.id,
                status: StatusCode::NOT_FOUND,
                headers: &HeaderMap::new()
            },
            clock.now()
        ),
        LegStatus::Complete
    );
    assert!(
        !op.is_in_flight(old_stream.id),
        "the old session's stream is dropped"
    );
    let run = drive(&mut session, op, &clock, &[], |k, _| healthy(k));
    assert_eq!(
        run.methods(),
        [
            "initialize",
            "notifications/initialized",
            "listen",
            "tools/call"
        ],
        "the new session opens its own stream before the call is sent again"
    );
    assert_eq!(run.legs[2].request.headers()["mcp-session-id"], "session-1");
}
