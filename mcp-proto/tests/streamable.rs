//! Streamable HTTP beyond one answer per POST: server requests answered on the stream, stream
//! resumption, version negotiation, tolerated oddities, session close, progress, cancellation.

mod support;

use std::time::Duration;

use mcp_proto::driver::LegKind;
use mcp_proto::driver::{Input, LegStatus, Output};
use mcp_proto::message::accept_elicitation_with_defaults;
use mcp_proto::request::{Complete, CompletionRef, Request as _};
use mcp_proto::{
    Action, Budget, Clock, Error, Event, ManualClock, OperationDeadline, Resolution, Session,
};
use serde_json::{Map, Value, json};
use support::{
    Answer, PollPastReports, config, drive, healthy, json_head, live_session, secs, sse_head,
};

fn event(message: Value) -> String {
    format!("event: message\ndata: {message}\n\n")
}

#[test]
fn a_server_request_on_the_stream_is_answered_inside_the_budget() {
    let clock = ManualClock::new();
    let config = config().respond_to("elicitation/create", |params| {
        Ok(accept_elicitation_with_defaults(params))
    });
    let mut session = Session::new(config);
    let op = session.call_tool("ask", Map::new(), clock.now());
    let elicitation = json!({"jsonrpc": "2.0", "id": "srv-1", "method": "elicitation/create", "params": {
        "message": "who?", "requestedSchema": {"type": "object", "properties": {
            "name": {"type": "string", "default": "Ada"}, "n": {"type": "number", "default": 1.5},
            "ok": {"type": "boolean", "default": true}, "pick": {"type": "string", "enum": ["a", "b"], "default": "b"}}}}});
    let answer = json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "thanks Ada"}]}});
    let stream = format!("{}{}", event(elicitation), event(answer));
    let run = drive(
        &mut session,
        op,
        &clock,
        &[1.0, 1.0, 3.0, 2.0],
        move |kind, _| match kind {
            LegKind::CallTool => Answer::Sse(stream.clone()),
            other => healthy(other),
        },
    );
    assert_eq!(
        run.result.clone().unwrap().into_call().unwrap().text(),
        "thanks Ada"
    );
    assert_eq!(
        run.methods(),
        [
            "initialize",
            "notifications/initialized",
            "tools/call",
            "response"
        ]
    );
    // The answer leg is granted what is left of the same budget: 20 - 1 - 1 - 3 = 15.
    assert_eq!(run.grant_secs(), [20, 19, 18, 15]);
    let reply = &run.legs[3];
    assert_eq!(reply.request.method(), http::Method::POST);
    assert_eq!(reply.request.headers()["mcp-session-id"], "session-1");
    assert_eq!(
        reply.body,
        json!({"jsonrpc": "2.0", "id": "srv-1", "result": {"action": "accept",
            "content": {"name": "Ada", "n": 1.5, "ok": true, "pick": "b"}}})
    );
    assert!(
        matches!(&run.events[0], Event::ServerRequest { method, .. } if method == "elicitation/create")
    );
    // The capability was declared because a responder was registered.
    assert_eq!(
        run.legs[0].body["params"]["capabilities"],
        json!({"elicitation": {}})
    );
}

#[test]
fn ping_is_answered_and_unknown_requests_get_method_not_found() {
    let clock = ManualClock::new();
    let mut session = live_session(config(), &clock);
    let op = session.call_tool("x", Map::new(), clock.now());
    let stream = format!(
        "{}{}{}",
        event(json!({"jsonrpc": "2.0", "id": 7, "method": "ping"})),
        event(json!({"jsonrpc": "2.0", "id": 8, "method": "sampling/createMessage", "params": {}})),
        event(json!({"jsonrpc": "2.0", "id": 2, "result": {"content": []}})),
    );
    let run = drive(&mut session, op, &clock, &[], move |kind, _| match kind {
        LegKind::CallTool => Answer::Sse(stream.clone()),
        other => healthy(other),
    });
    assert!(run.result.is_ok(), "{:?}", run.result);
    assert_eq!(run.methods(), ["tools/call", "response", "response"]);
    assert_eq!(
        run.legs[1].body,
        json!({"jsonrpc": "2.0", "id": 7, "result": {}})
    );
    assert_eq!(run.legs[2].body["error"]["code"], -32601);
    // Without responders, no capability is declared.
    let mut fresh = Session::new(config());
    let op = fresh.probe(clock.now());
    let run = drive(&mut fresh, op, &clock, &[], |k, _| healthy(k));
    assert_eq!(run.legs[0].body["params"]["capabilities"], json!({}));
}

#[test]
fn a_failed_answer_to_a_server_request_ends_the_operation() {
    let clock = ManualClock::new();
    let mut session = live_session(config(), &clock);
    let op = session.call_tool("x", Map::new(), clock.now());
    let stream = event(json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}));
    let run = drive(&mut session, op, &clock, &[], move |kind, _| match kind {
        LegKind::CallTool => Answer::Sse(stream.clone()),
        LegKind::Respond => Answer::Raw(500, None, Vec::new()),
        other => healthy(other),
    });
    assert!(
        matches!(
            run.result,
            Err(Error::HttpStatus {
                status: 500,
                method: "tools/call",
                ..
            })
        ),
        "the error names the request the answer served: {:?}",
        run.result
    );
}

#[test]
fn a_stream_closed_after_an_event_id_is_resumed_with_last_event_id() {
    let clock = ManualClock::new();
    let mut session = live_session(config(), &clock);
    let op = session.call_tool("x", Map::new(), clock.now());
    let answer = event(
        json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "late"}]}}),
    );
    let run = drive(
        &mut session,
        op,
        &clock,
        &[2.0, 1.0],
        move |kind, _| match kind {
            LegKind::CallTool => Answer::Sse("id: ev-1\nretry: 500\ndata:\n\n".into()),
            LegKind::Resume => Answer::Sse(format!("id: ev-2\n{answer}")),
            other => healthy(other),
        },
    );
    assert_eq!(
        run.result.clone().unwrap().into_call().unwrap().text(),
        "late"
    );
    assert_eq!(run.methods(), ["tools/call", "resume"]);
    let resume = &run.legs[1];
    assert_eq!(resume.request.method(), http::Method::GET);
    let h = resume.request.headers();
    assert_eq!(h["accept"], "text/event-stream");
    assert_eq!(h["last-event-id"], "ev-1");
    assert_eq!(h["mcp-session-id"], "session-1");
    assert_eq!(h["mcp-protocol-version"], "2025-06-18");
    assert!(h.get("content-type").is_none());
    // 2 s for the POST, then the server's 500 ms retry: the GET gets 20 - 2.5 = 17.5 -> 18.
    assert_eq!(run.grant_secs(), [20, 18]);
}

#[test]
fn the_retry_wait_defaults_to_a_second_and_never_passes_the_deadline() {
    let clock = ManualClock::new();
    let mut session = live_session(config().with_resolution(Resolution::MILLISECOND), &clock);
    let mut op = session.call_tool("x", Map::new(), clock.now());
    let Output::Transmit(leg) = op.poll_past_reports(clock.now()) else {
        panic!()
    };
    let mut headers = http::HeaderMap::new();
    headers.insert("content-type", "text/event-stream".parse().unwrap());
    assert_eq!(
        op.handle_input(
            Input::Head {
                leg: leg.id,
                status: http::StatusCode::OK,
                headers: &headers
            },
            clock.now()
        ),
        LegStatus::ReadMore
    );
    assert_eq!(
        op.handle_input(
            Input::Chunk {
                leg: leg.id,
                bytes: b"id: 1\ndata:\n\n"
            },
            clock.now()
        ),
        LegStatus::ReadMore
    );
    let closed = clock.now();
    op.handle_input(Input::End { leg: leg.id }, closed);
    assert!(
        matches!(op.poll_past_reports(clock.now()), Output::Wait(at) if at == closed + secs(1.0))
    );
    drop(leg);

    // With 0.3 s of budget left and a 5 s retry, waiting would spend the budget: the operation
    // ends at once with the call's timeout instead of idling until the deadline.
    let start = clock.now();
    let deadline = OperationDeadline::start(start, Budget::from_secs(2), Resolution::MILLISECOND);
    let op = session.start(
        Action::CallTool {
            name: "x".into(),
            arguments: Map::new(),
        },
        deadline,
    );
    let run = drive(&mut session, op, &clock, &[1.7], |kind, _| match kind {
        LegKind::CallTool => Answer::Sse("id: 1\nretry: 5000\ndata:\n\n".into()),
        other => healthy(other),
    });
    assert!(
        matches!(
            run.result,
            Err(Error::LegTimedOut {
                method: "tools/call",
                ..
            })
        ),
        "{:?}",
        run.result
    );
    assert_eq!(run.methods(), ["tools/call"]);
    assert_eq!(clock.now() - start, secs(1.7), "no idle wait");
}

#[test]
fn a_new_request_never_resumes_with_an_earlier_streams_event_id() {
    let clock = ManualClock::new();
    let mut session = live_session(config(), &clock);
    // The first page's stream carries ids; the second page's closes with none and no answer.
    let op = session.list_tools(clock.now());
    let run = drive(&mut session, op, &clock, &[], |kind, _| match kind {
        LegKind::List {
            of: mcp_proto::ListKind::Tools,
            page: 1,
        } => Answer::Sse(format!(
            "id: p1\n{}",
            event(json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": [], "nextCursor": "c"}}))
        )),
        LegKind::List { .. } => Answer::Sse(event(
            json!({"jsonrpc": "2.0", "method": "notifications/message"}),
        )),
        other => healthy(other),
    });
    assert!(
        matches!(run.result, Err(Error::Malformed { .. })),
        "{:?}",
        run.result
    );
    assert_eq!(
        run.methods(),
        ["tools/list", "tools/list"],
        "no GET with a stale id"
    );
}

#[test]
fn a_stream_closed_without_an_event_id_is_not_resumed() {
    let clock = ManualClock::new();
    let mut session = live_session(config(), &clock);
    let op = session.call_tool("x", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], |kind, _| match kind {
        LegKind::CallTool => Answer::Sse(event(
            json!({"jsonrpc": "2.0", "method": "notifications/message"}),
        )),
        other => healthy(other),
    });
    assert!(matches!(run.result, Err(Error::Malformed { .. })));
    assert_eq!(run.methods(), ["tools/call"]);
}

#[test]
fn a_counter_offered_version_is_accepted_and_sent() {
    for version in ["2025-03-26", "2025-06-18", "2025-11-25"] {
        let clock = ManualClock::new();
        let mut session = Session::new(config());
        let op = session.call_tool("x", Map::new(), clock.now());
        let run = drive(&mut session, op, &clock, &[], move |kind, _| match kind {
            LegKind::Initialize => Answer::Result(
                json!({"protocolVersion": version, "serverInfo": {"name": "s", "version": "1"}}),
            ),
            other => healthy(other),
        });
        assert!(run.result.is_ok());
        assert_eq!(
            run.legs[2].request.headers()["mcp-protocol-version"],
            version
        );
    }
}

#[test]
fn a_notification_answered_200_with_a_body_is_fine() {
    let clock = ManualClock::new();
    let mut session = Session::new(config());
    let op = session.call_tool("x", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], |kind, _| match kind {
        LegKind::Initialized => Answer::Json(json!({"jsonrpc": "2.0", "result": {}})),
        other => healthy(other),
    });
    assert!(run.result.is_ok(), "{:?}", run.result);
}

#[test]
fn close_sends_a_delete_and_forgets_the_session() {
    let clock = ManualClock::new();
    for status in [200, 204, 404, 405] {
        let mut session = live_session(config(), &clock);
        let op = session.close(clock.now());
        let run = drive(&mut session, op, &clock, &[], move |_, _| {
            Answer::Raw(status, None, Vec::new())
        });
        assert!(
            matches!(run.result, Ok(mcp_proto::Outcome::Closed)),
            "{status}: {:?}",
            run.result
        );
        assert_eq!(run.legs[0].request.method(), http::Method::DELETE);
        assert_eq!(run.legs[0].request.headers()["mcp-session-id"], "session-1");
        assert_eq!(run.grant_secs(), [2], "a small budget of its own");
        assert!(session.info().is_none());
    }
    // Nothing to close: nothing is sent.
    let mut session = Session::new(config());
    let op = session.close(clock.now());
    let run = drive(&mut session, op, &clock, &[], |k, _| healthy(k));
    assert!(run.legs.is_empty());
    assert!(run.result.is_ok());
}

#[test]
fn progress_is_asked_for_only_when_opted_in_and_never_extends_the_budget() {
    let clock = ManualClock::new();
    let mut session = live_session(config().with_progress(true), &clock);
    let op = session.call_tool("x", Map::new(), clock.now());
    let progress = |i: u32| {
        event(
            json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 2, "progress": i, "total": 3}}),
        )
    };
    let stream = format!("{}{}{}", progress(1), progress(2), progress(3));
    let run = drive(&mut session, op, &clock, &[], move |kind, _| match kind {
        LegKind::CallTool => Answer::Sse(stream.clone()),
        other => healthy(other),
    });
    assert_eq!(
        run.legs[0].body["params"]["_meta"],
        json!({"progressToken": 2})
    );
    assert_eq!(run.events.len(), 3);
    assert!(
        matches!(run.result, Err(Error::Malformed { .. })),
        "the stream ended without an answer"
    );

    let mut plain = live_session(config(), &clock);
    let op = plain.call_tool("x", Map::new(), clock.now());
    let run = drive(&mut plain, op, &clock, &[], |k, _| healthy(k));
    assert!(run.legs[0].body["params"].get("_meta").is_none());
}

#[test]
fn a_cancelled_call_can_tell_the_server_and_a_cancelled_handshake_cannot() {
    let clock = ManualClock::new();
    let mut session = live_session(config().with_cancel_notice(true), &clock);
    let mut op = session.call_tool("x", Map::new(), clock.now());
    let Output::Transmit(_call) = op.poll_past_reports(clock.now()) else {
        panic!()
    };
    op.handle_input(Input::Cancel, clock.now());
    // The notice goes out after the cancel, under a grant of its own, before the result.
    let Output::Transmit(notice) = op.poll_past_reports(clock.now()) else {
        panic!("a call was interrupted: the notice comes first")
    };
    assert_eq!(notice.kind, LegKind::CancelNotice);
    assert_eq!(notice.timeout, Duration::from_secs(1));
    let body: Value = serde_json::from_slice(notice.request.body()).unwrap();
    assert_eq!(body["method"], "notifications/cancelled");
    assert_eq!(body["params"]["requestId"], 2);
    assert_eq!(notice.request.headers()["mcp-session-id"], "session-1");
    assert!(
        matches!(op.poll_past_reports(clock.now()), Output::Wait(at) if at == notice.ends_at),
        "the result waits for the notice's head"
    );
    assert_eq!(
        op.handle_input(
            Input::Head {
                leg: notice.id,
                status: http::StatusCode::ACCEPTED,
                headers: &http::HeaderMap::new()
            },
            clock.now()
        ),
        LegStatus::Complete
    );
    assert!(matches!(
        op.poll_past_reports(clock.now()),
        Output::Done(Err(Error::Cancelled {
            method: "tools/call",
            ..
        }))
    ));

    // A notice whose head never comes ends with its own grant.
    let mut op = session.call_tool("x", Map::new(), clock.now());
    let Output::Transmit(_call) = op.poll_past_reports(clock.now()) else {
        panic!()
    };
    op.handle_input(Input::Cancel, clock.now());
    let Output::Transmit(notice) = op.poll_past_reports(clock.now()) else {
        panic!()
    };
    clock.set(notice.ends_at);
    op.handle_input(Input::Timeout, clock.now());
    assert!(matches!(
        op.poll_past_reports(clock.now()),
        Output::Done(Err(Error::Cancelled { .. }))
    ));

    // Off (the default), a cancel ends the operation at once.
    let mut quiet = live_session(config(), &clock);
    let mut op = quiet.call_tool("x", Map::new(), clock.now());
    let Output::Transmit(_call) = op.poll_past_reports(clock.now()) else {
        panic!()
    };
    op.handle_input(Input::Cancel, clock.now());
    assert!(matches!(
        op.poll_past_reports(clock.now()),
        Output::Done(Err(Error::Cancelled { .. }))
    ));

    let mut fresh = Session::new(config().with_cancel_notice(true));
    let mut op = fresh.call_tool("x", Map::new(), clock.now());
    let Output::Transmit(_init) = op.poll_past_reports(clock.now()) else {
        panic!()
    };
    op.handle_input(Input::Cancel, clock.now());
    assert!(
        matches!(
            op.poll_past_reports(clock.now()),
            Output::Done(Err(Error::Cancelled {
                method: "initialize",
                ..
            }))
        ),
        "initialize is never cancelled on the server"
    );
}

#[test]
fn the_standalone_stream_carries_server_requests_that_are_answered_beside_the_call() {
    let clock = ManualClock::new();
    let config = config()
        .with_listen(true)
        .respond_to("elicitation/create", |params| {
            Ok(accept_elicitation_with_defaults(params))
        });
    let mut session = live_session(config, &clock);
    let mut op = session.call_tool("ask", Map::new(), clock.now());

    // The stream opens first; the call waits for its head, then goes out beside it.
    let Output::Transmit(listen) = op.poll_past_reports(clock.now()) else {
        panic!()
    };
    assert_eq!(listen.kind, LegKind::Listen);
    assert_eq!(listen.request.method(), http::Method::GET);
    assert_eq!(listen.request.headers()["accept"], "text/event-stream");
    assert_eq!(listen.request.headers()["mcp-session-id"], "session-1");
    assert!(
        matches!(op.poll_past_reports(clock.now()), Output::Wait(at) if at == clock.now() + secs(1.0))
    );
    clock.advance(secs(0.5));
    assert_eq!(
        op.handle_input(
            Input::Head {
                leg: listen.id,
                status: http::StatusCode::OK,
                headers: &sse_head()
            },
            clock.now()
        ),
        LegStatus::ReadMore
    );
    let Output::Transmit(call) = op.poll_past_reports(clock.now()) else {
        panic!()
    };
    assert_eq!(call.kind, LegKind::CallTool);
    assert!(matches!(op.poll_past_reports(clock.now()), Output::Wait(_)));

    // The server's tool raises an elicitation on the standalone stream.
    clock.advance(secs(0.5));
    let ask = json!({"jsonrpc": "2.0", "id": 0, "method": "elicitation/create", "params": {
        "message": "?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string", "default": "Ada"}}}}});
    assert_eq!(
        op.handle_input(
            Input::Chunk {
                leg: listen.id,
                bytes: event(ask).as_bytes()
            },
            clock.now()
        ),
        LegStatus::ReadMore
    );
    assert!(matches!(
        op.poll_past_reports(clock.now()),
        Output::Event(Event::ServerRequest { .. })
    ));
    let Output::Transmit(reply) = op.poll_past_reports(clock.now()) else {
        panic!()
    };
    assert_eq!(reply.kind, LegKind::Respond);
    assert_eq!(
        reply.timeout,
        secs(19.0),
        "the reply spends the same budget"
    );
    let body: Value = serde_json::from_slice(reply.request.body()).unwrap();
    assert_eq!(
        body,
        json!({"jsonrpc": "2.0", "id": 0, "result": {"action": "accept", "content": {"name": "Ada"}}})
    );
    assert_eq!(
        op.handle_input(
            Input::Head {
                leg: reply.id,
                status: http::StatusCode::ACCEPTED,
                headers: &http::HeaderMap::new()
            },
            clock.now()
        ),
        LegStatus::Complete
    );

    // Back to the call, whose answer now arrives. The wait is the earliest timer: the
    // standalone stream's grant (the rest of the budget) ends before the call's rounded one.
    assert!(
        matches!(op.poll_past_reports(clock.now()), Output::Wait(at) if at == listen.ends_at.min(call.ends_at))
    );
    assert_eq!(
        op.handle_input(
            Input::Head {
                leg: call.id,
                status: http::StatusCode::OK,
                headers: &sse_head()
            },
            clock.now()
        ),
        LegStatus::ReadMore
    );
    let answer = event(
        json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "hi Ada"}]}}),
    );
    assert_eq!(
        op.handle_input(
            Input::Chunk {
                leg: call.id,
                bytes: answer.as_bytes()
            },
            clock.now()
        ),
        LegStatus::Complete
    );
    let Output::Done(Ok(outcome)) = op.poll_past_reports(clock.now()) else {
        panic!()
    };
    assert_eq!(outcome.into_call().unwrap().text(), "hi Ada");
    // Once done, the standalone stream is to be dropped: its id is stale.
    assert_eq!(
        op.handle_input(
            Input::Chunk {
                leg: listen.id,
                bytes: b": ping\n\n"
            },
            clock.now()
        ),
        LegStatus::Complete
    );
}

#[test]
fn a_server_without_a_standalone_stream_is_fine() {
    let clock = ManualClock::new();
    for status in [400, 404, 405, 409] {
        let mut session = live_session(config().with_listen(true), &clock);
        let mut op = session.call_tool("x", Map::new(), clock.now());
        let Output::Transmit(listen) = op.poll_past_reports(clock.now()) else {
            panic!()
        };
        assert_eq!(listen.kind, LegKind::Listen);
        let refused = http::StatusCode::from_u16(status).unwrap();
        assert_eq!(
            op.handle_input(
                Input::Head {
                    leg: listen.id,
                    status: refused,
                    headers: &http::HeaderMap::new()
                },
                clock.now()
            ),
            LegStatus::Complete
        );
        let Output::Transmit(call) = op.poll_past_reports(clock.now()) else {
            panic!()
        };
        let json_head = json_head();
        assert_eq!(
            op.handle_input(
                Input::Head {
                    leg: call.id,
                    status: http::StatusCode::OK,
                    headers: &json_head
                },
                clock.now()
            ),
            LegStatus::ReadMore
        );
        let answer = json!({"jsonrpc": "2.0", "id": 2, "result": {"content": []}}).to_string();
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
        assert!(
            matches!(op.poll_past_reports(clock.now()), Output::Done(Ok(_))),
            "{status}"
        );
    }

    // A stream whose head never comes holds the call back for at most a second.
    let mut session = live_session(config().with_listen(true), &clock);
    let mut op = session.call_tool("x", Map::new(), clock.now());
    let Output::Transmit(_listen) = op.poll_past_reports(clock.now()) else {
        panic!()
    };
    let Output::Wait(at) = op.poll_past_reports(clock.now()) else {
        panic!()
    };
    clock.set(at);
    op.handle_input(Input::Timeout, clock.now());
    let Output::Transmit(call) = op.poll_past_reports(clock.now()) else {
        panic!()
    };
    assert_eq!((call.kind, call.timeout), (LegKind::CallTool, secs(19.0)));

    // Without listen(true), or for anything but a call, no GET is ever sent.
    let mut session = live_session(config().with_listen(true), &clock);
    let op = session.list_tools(clock.now());
    let run = drive(&mut session, op, &clock, &[], |k, _| healthy(k));
    assert_eq!(run.methods(), ["tools/list"]);
    let mut session = live_session(config(), &clock);
    let op = session.call_tool("x", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], |k, _| healthy(k));
    assert_eq!(run.methods(), ["tools/call"]);
}

#[test]
fn a_configured_trace_context_rides_in_every_request_s_meta() {
    let traceparent = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";
    let clock = ManualClock::new();
    let traced = config()
        .with_progress(true)
        .with_trace_context(traceparent, Some("vendor=x"))
        .unwrap();
    let mut session = mcp_proto::Session::new(traced.clone());
    let op = session.call_tool("echo", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], |k, _| healthy(k));
    assert!(run.result.is_ok());
    for leg in &run.legs {
        if leg.kind == LegKind::Initialized {
            continue; // a notification: nothing to correlate
        }
        let meta = &leg.body["params"]["_meta"];
        assert_eq!(meta["traceparent"], traceparent, "{:?}", leg.kind);
        assert_eq!(meta["tracestate"], "vendor=x");
    }
    // Beside the call's own progress token.
    assert_eq!(run.legs[2].body["params"]["_meta"]["progressToken"], 2);

    // The modern era: beside the request metadata.
    let modern = traced.with_protocol_version(mcp_proto::ProtocolVersion::MODERN);
    let mut session = mcp_proto::Session::new(modern);
    let op = session.call_tool("echo", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], |k, _| healthy(k));
    let meta = &run.legs[0].body["params"]["_meta"];
    assert_eq!(meta["traceparent"], traceparent);
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );

    // Not configured: nothing.
    let mut session = mcp_proto::Session::new(config());
    let op = session.call_tool("echo", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], |k, _| healthy(k));
    assert!(run.legs[2].body["params"].get("_meta").is_none());

    for bad in [
        "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "ff-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01",
        "00-0AF7651916CD43DD8448EB211C80319C-00f067aa0ba902b7-01",
    ] {
        assert!(config().with_trace_context(bad, None).is_err(), "{bad}");
    }
    assert!(
        config()
            .with_trace_context(traceparent, Some("a\nb"))
            .is_err()
    );
}

#[test]
fn the_budget_left_rides_in_every_request_s_meta_when_configured() {
    let key = mcp_proto::driver::DEADLINE_META_KEY;
    assert_eq!(key, "dev.mcp-deadline/remainingMs");
    let clock = ManualClock::new();
    let told = config()
        .with_budget(Budget::from_secs(10))
        .with_resolution(Resolution::MILLISECOND)
        .with_send_deadline(true);
    let mut session = mcp_proto::Session::new(told.clone());
    let op = session.call_tool("echo", Map::new(), clock.now());
    // The handshake's legs take 1.5 s and 0.25 s: the call is told what they left.
    let run = drive(&mut session, op, &clock, &[1.5, 0.25], |k, _| healthy(k));
    assert!(run.result.is_ok());
    let told_ms: Vec<Value> = (run.legs.iter())
        .filter(|leg| leg.kind != LegKind::Initialized)
        .map(|leg| leg.body["params"]["_meta"][key].clone())
        .collect();
    assert_eq!(told_ms, [json!(10_000), json!(8_250)]);

    // The modern era: beside the request metadata, recomputed for the retry after a refusal.
    let modern = told.with_protocol_version(mcp_proto::ProtocolVersion::MODERN);
    let mut session = mcp_proto::Session::new(modern);
    let op = session.call_tool("echo", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[0.5], |k, _| healthy(k));
    let meta = &run.legs[0].body["params"]["_meta"];
    assert_eq!(meta[key], 10_000);
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );

    // Off by default.
    let mut session = mcp_proto::Session::new(config());
    let op = session.call_tool("echo", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], |k, _| healthy(k));
    assert!(run.legs[2].body["params"].get("_meta").is_none());
}

#[test]
fn a_log_level_is_set_after_the_handshake_or_carried_by_every_modern_request() {
    let clock = ManualClock::new();
    let logging = |kind: LegKind, _| match kind {
        LegKind::Initialize => Answer::Result(json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}, "logging": {}},
            "serverInfo": {"name": "canned", "version": "1.0"}
        })),
        LegKind::SetLogLevel => Answer::Result(json!({})),
        other => healthy(other),
    };
    let leveled = config().with_log_level(mcp_proto::message::LogLevel::Warning);
    let mut session = mcp_proto::Session::new(leveled.clone());
    let op = session.call_tool("echo", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], logging);
    assert!(run.result.is_ok(), "{:?}", run.result);
    assert_eq!(
        run.methods(),
        [
            "initialize",
            "notifications/initialized",
            "logging/setLevel",
            "tools/call"
        ]
    );
    assert_eq!(run.legs[2].body["params"]["level"], "warning");
    // Once per session: the next call goes out alone.
    let op = session.call_tool("echo", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], logging);
    assert_eq!(run.methods(), ["tools/call"]);

    // A server that refuses it (a JSON-RPC error): the call goes on.
    let mut session = mcp_proto::Session::new(leveled.clone());
    let op = session.call_tool("echo", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], |kind, n| match kind {
        LegKind::SetLogLevel => Answer::Json(json!({
            "jsonrpc": "2.0", "id": 3, "error": {"code": -32601, "message": "no logging here"}
        })),
        other => logging(other, n),
    });
    assert!(run.result.is_ok(), "{:?}", run.result);

    // A server that declares no logging, or no level configured: no such leg.
    let mut session = mcp_proto::Session::new(leveled.clone());
    let op = session.call_tool("echo", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], |k, _| healthy(k));
    assert!(!run.methods().contains(&"logging/setLevel"));
    let mut session = mcp_proto::Session::new(config());
    let op = session.call_tool("echo", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], logging);
    assert!(!run.methods().contains(&"logging/setLevel"));

    // The modern era: in every request's `_meta`.
    let modern = leveled.with_protocol_version(mcp_proto::ProtocolVersion::MODERN);
    let mut session = mcp_proto::Session::new(modern);
    let op = session.call_tool("echo", Map::new(), clock.now());
    let run = drive(&mut session, op, &clock, &[], |k, _| healthy(k));
    let meta = &run.legs[0].body["params"]["_meta"];
    assert_eq!(meta["io.modelcontextprotocol/logLevel"], "warning");

    // The messages are events.
    let message = mcp_proto::message::Notification {
        method: "notifications/message".into(),
        params: json!({"level": "error", "logger": "db", "data": {"error": "down"}}),
    };
    let log = message.log().unwrap();
    assert_eq!(
        (log.level.as_str(), log.logger.as_deref()),
        ("error", Some("db"))
    );
    assert_eq!(
        mcp_proto::message::LogLevel::parse("error"),
        Some(mcp_proto::message::LogLevel::Error)
    );
    assert!(mcp_proto::message::LogLevel::Debug < mcp_proto::message::LogLevel::Emergency);
}

#[test]
fn a_completion_asks_for_an_argument_s_values_in_both_eras() {
    let clock = ManualClock::new();
    let suggest = |kind: LegKind, _| match kind {
        LegKind::Request(Complete::METHOD) => Answer::Result(json!({"completion": {
            "values": ["Alice", "Bob", 7], "total": 3, "hasMore": false
        }})),
        other => healthy(other),
    };
    let context = Map::from_iter([("department".to_owned(), json!("Engineering"))]);
    for modern in [false, true] {
        let config = match modern {
            true => config().with_protocol_version(mcp_proto::ProtocolVersion::MODERN),
            false => config(),
        };
        let mut session = mcp_proto::Session::new(config);
        let reference = CompletionRef::Prompt("team".into());
        let complete = Complete::new(reference, "name", "").with_context(context.clone());
        let op = session.request(complete, clock.now());
        let run = drive(&mut session, op, &clock, &[], suggest);
        let sent = &run.legs.last().unwrap().body;
        assert_eq!(sent["method"], "completion/complete");
        assert_eq!(
            sent["params"]["ref"],
            json!({"type": "ref/prompt", "name": "team"})
        );
        assert_eq!(
            sent["params"]["argument"],
            json!({"name": "name", "value": ""})
        );
        assert_eq!(
            sent["params"]["context"]["arguments"]["department"],
            "Engineering"
        );
        let Ok(mcp_proto::Outcome::Answer(answer)) = run.result else {
            panic!("{:?}", run.result)
        };
        let completion = answer.read::<Complete>("srv").unwrap();
        // A value that is not a string is dropped.
        assert_eq!(completion.values, ["Alice", "Bob"]);
        assert_eq!((completion.total, completion.has_more), (Some(3), false));
    }
    let mut session = mcp_proto::Session::new(config());
    let reference = CompletionRef::Resource("file:///{path}".into());
    let op = session.request(Complete::new(reference, "path", "sr"), clock.now());
    let run = drive(&mut session, op, &clock, &[], |kind, _| match kind {
        LegKind::Request(Complete::METHOD) => Answer::Result(json!({"values": []})),
        other => healthy(other),
    });
    let sent = &run.legs.last().unwrap().body;
    assert_eq!(
        sent["params"]["ref"],
        json!({"type": "ref/resource", "uri": "file:///{path}"})
    );
    assert!(sent["params"].get("context").is_none());
    // The operation ends with the server's result; reading it as a completion says what it lacks.
    let read = run
        .result
        .map(|outcome| outcome.into_answer().map(|a| a.read::<Complete>("srv")));
    assert!(
        matches!(&read, Ok(Some(Err(mcp_proto::Error::Malformed { method: "completion/complete", detail, .. })))
            if detail.contains("\"completion\"")),
        "{read:?}"
    );
}

#[test]
fn url_mode_elicitation_is_offered_only_when_asked_and_its_domain_is_read() {
    let clock = ManualClock::new();
    let answering = config().respond_to("elicitation/create", |_| Ok(json!({"action": "decline"})));
    for (url_mode, offered) in [(false, json!({})), (true, json!({"form": {}, "url": {}}))] {
        let config = answering.clone().with_url_elicitation(url_mode);
        let mut session = mcp_proto::Session::new(config);
        let op = session.call_tool("echo", Map::new(), clock.now());
        let run = drive(&mut session, op, &clock, &[], |k, _| healthy(k));
        assert_eq!(
            run.legs[0].body["params"]["capabilities"]["elicitation"],
            offered
        );
    }
    let page = mcp_proto::message::UrlElicitation::of(&json!({
        "mode": "url", "message": "Pay here", "elicitationId": "e-1",
        "url": "https://pay.example.com:8443/checkout?id=7"
    }))
    .unwrap();
    assert_eq!(page.domain.as_deref(), Some("pay.example.com"));
    assert_eq!(
        (page.message.as_str(), page.elicitation_id.as_deref()),
        ("Pay here", Some("e-1"))
    );
    assert!(mcp_proto::message::UrlElicitation::of(&json!({"message": "a form"})).is_none());
    let odd = mcp_proto::message::UrlElicitation::of(&json!({"mode": "url", "url": "not a url"}))
        .unwrap();
    assert_eq!(odd.domain, None);
}

#[test]
fn a_close_gets_what_the_operation_left_capped_and_nothing_once_it_is_spent() {
    let clock = ManualClock::new();
    let budget = |secs: u64| {
        OperationDeadline::start(clock.now(), Budget::from_secs(secs), Resolution::SECOND)
    };
    let delete = |_: LegKind, _: u32| Answer::Raw(200, None, Vec::new());
    // Plenty left: the close's own cap (2 s).
    let mut session = live_session(config(), &clock);
    let opened = budget(20);
    clock.advance(secs(3.0));
    let op = session.close_within(&opened, clock.now());
    let run = drive(&mut session, op, &clock, &[], delete);
    assert_eq!(run.grant_secs(), [2]);
    assert!(matches!(run.result, Ok(mcp_proto::Outcome::Closed)));
    // 0.4 s left: the DELETE gets that, rounded up to the unit, never more.
    let mut session = live_session(config(), &clock);
    let opened = budget(5);
    clock.advance(secs(4.6));
    let op = session.close_within(&opened, clock.now());
    let run = drive(&mut session, op, &clock, &[], delete);
    assert_eq!(run.grant_secs(), [1]);
    // Spent: no DELETE at all; the budget's own error; the session is forgotten anyway.
    let mut session = live_session(config(), &clock);
    let opened = budget(5);
    clock.advance(secs(5.0));
    let op = session.close_within(&opened, clock.now());
    let run = drive(&mut session, op, &clock, &[], delete);
    assert!(run.legs.is_empty(), "a spent budget sends nothing more");
    assert!(
        matches!(
            run.result,
            Err(Error::BudgetExhausted {
                method: "DELETE",
                ..
            })
        ),
        "{:?}",
        run.result
    );
    assert!(session.info().is_none(), "the session is forgotten");
}

#[test]
fn a_close_that_fails_forgets_the_session_too() {
    let clock = ManualClock::new();
    let mut session = live_session(config(), &clock);
    let op = session.close(clock.now());
    let run = drive(&mut session, op, &clock, &[], |_, _| {
        Answer::Raw(500, None, Vec::new())
    });
    assert!(matches!(
        run.result,
        Err(Error::HttpStatus { status: 500, .. })
    ));
    assert!(session.info().is_none());
}

#[test]
fn a_cancel_notice_gets_only_what_is_left_and_none_goes_out_after_the_budget() {
    let clock = ManualClock::new();
    // 0.3 s left when the caller cancels: the notice's grant ends with the budget's unit.
    let mut session = live_session(
        config()
            .with_cancel_notice(true)
            .with_budget(Budget::from_secs(2))
            .with_resolution(Resolution::MILLISECOND),
        &clock,
    );
    let mut op = session.call_tool("x", Map::new(), clock.now());
    let Output::Transmit(_call) = op.poll_past_reports(clock.now()) else {
        panic!()
    };
    clock.advance(secs(1.7));
    op.handle_input(Input::Cancel, clock.now());
    let Output::Transmit(notice) = op.poll_past_reports(clock.now()) else {
        panic!("budget is left: the notice goes out")
    };
    assert_eq!(notice.kind, LegKind::CancelNotice);
    assert_eq!(notice.timeout, secs(0.3));
    // The budget is spent by the time the caller cancels: no notice, the result at once.
    let mut op = session.call_tool("x", Map::new(), clock.now());
    let Output::Transmit(call) = op.poll_past_reports(clock.now()) else {
        panic!()
    };
    clock.set(call.ends_at);
    op.handle_input(Input::Cancel, clock.now());
    assert!(
        matches!(
            op.poll_past_reports(clock.now()),
            Output::Done(Err(Error::Cancelled { .. }))
        ),
        "a spent budget sends nothing more, a notice included"
    );
}
