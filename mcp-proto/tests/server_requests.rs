//! The server's requests as the core hands them to the driver: [`Output::Request`] for a method
//! the caller answers, [`Input::Reply`] with the caller's answer, and nothing that needs the
//! answer going out before it (a legacy reply's POST, a modern request sent again after an
//! input round). The operation never runs the caller's code: a reply the driver gives is what
//! goes out, whatever the registered responder would have said, and a caller that does not
//! answer in time ends the operation with its budget spent.

mod support;

use mcp_proto::driver::LegKind;
use mcp_proto::driver::{Input, LegId, Operation, Output, ReplyId, ServerRequest};
use mcp_proto::{
    Clock, Error, Event, ManualClock, ProtocolVersion, RpcError, Session, SessionConfig,
};
use serde_json::{Map, Value, json};
use support::{FeedAnswer, config, json_head, live_session, secs, sse_head};

fn modern() -> SessionConfig {
    SessionConfig::new("http://mcp.example.test:8080/mcp")
        .unwrap()
        .with_protocol_version(ProtocolVersion::MODERN)
}

/// Responders the tests never expect to run: the caller's answers come as `Input::Reply`.
fn answering(config: SessionConfig) -> SessionConfig {
    config
        .respond_to("elicitation/create", |_| Ok(json!({"action": "decline"})))
        .respond_to("roots/list", |_| Ok(json!({"roots": []})))
        .respond_to("sampling/createMessage", |_| Ok(json!({})))
}

/// The next output that is not a leg's report or a session update (each operation here runs
/// alone: no other needs the update).
fn next(op: &mut Operation, clock: &ManualClock) -> Output {
    loop {
        match op.poll_output(clock.now()) {
            Output::LegEnded(_) | Output::Update(_) => {}
            output => return output,
        }
    }
}

/// The caller's answer to `to`, given now.
fn give(op: &mut Operation, clock: &ManualClock, to: ReplyId, answer: Result<Value, RpcError>) {
    op.handle_input(Input::Reply { to, answer }, clock.now());
}

/// Leg `leg` is answered with an event stream, which stays open.
fn open_stream(op: &mut Operation, clock: &ManualClock, leg: LegId) {
    let head = Input::Head {
        leg,
        status: http::StatusCode::OK,
        headers: &sse_head(),
    };
    op.handle_input(head, clock.now());
}

/// One message on leg `leg`'s event stream.
fn on_stream(op: &mut Operation, clock: &ManualClock, leg: LegId, message: &Value) {
    let chunk = format!("event: message\ndata: {message}\n\n");
    op.handle_input(
        Input::Chunk {
            leg,
            bytes: chunk.as_bytes(),
        },
        clock.now(),
    );
}

fn transmitted(output: Output) -> mcp_proto::driver::Leg {
    match output {
        Output::Transmit(leg) => leg,
        other => panic!("expected a leg, got {other:?}"),
    }
}

fn asked(output: Output) -> ServerRequest {
    match output {
        Output::Request(request) => request,
        other => panic!("expected a request for the caller, got {other:?}"),
    }
}

/// Leg `leg`'s answer is an event stream on which the server asks `elicitation/create` (its
/// JSON-RPC id `id`): reported, then handed to the caller.
fn asked_on_stream(op: &mut Operation, clock: &ManualClock, leg: LegId, id: &str) -> ServerRequest {
    open_stream(op, clock, leg);
    let ask = json!({"jsonrpc": "2.0", "id": id, "method": "elicitation/create",
        "params": {"message": "who?", "requestedSchema": {"type": "object"}}});
    on_stream(op, clock, leg, &ask);
    assert!(matches!(
        next(op, clock),
        Output::Event(Event::ServerRequest { .. })
    ));
    asked(next(op, clock))
}

fn body(leg: &mcp_proto::driver::Leg) -> Value {
    serde_json::from_slice(leg.request.body()).unwrap()
}

/// A modern `input_required` result for the request `leg` carried.
fn input_required(leg: &mcp_proto::driver::Leg, requests: Value) -> Vec<u8> {
    let id = body(leg)["id"].clone();
    let message = json!({"jsonrpc": "2.0", "id": id, "result": {
        "resultType": "input_required", "inputRequests": requests, "requestState": "s1"}});
    serde_json::to_vec(&message).unwrap()
}

fn elicit(message: &str) -> Value {
    json!({"method": "elicitation/create", "params": {"message": message,
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}})
}

#[test]
fn an_input_round_asks_the_caller_and_the_request_waits_for_every_answer() {
    let clock = ManualClock::new();
    let mut session = Session::new(answering(modern()));
    let mut op = session.call_tool("ask", Map::new(), clock.now());
    let end = op.deadline().end().unwrap();
    let call = transmitted(next(&mut op, &clock));
    clock.advance(secs(2.0));
    let requests = json!({"who": elicit("who?"), "where": {"method": "roots/list"}});
    let answer = input_required(&call, requests);
    op.feed_answer(
        call.id,
        http::StatusCode::OK,
        &json_head(),
        &answer,
        clock.now(),
    );

    // Each request is reported, then asked of the caller, to be answered by the budget's end.
    let mut reported = Vec::new();
    let mut questions = Vec::new();
    while questions.len() < 2 {
        match next(&mut op, &clock) {
            Output::Event(Event::ServerRequest { method, .. }) => reported.push(method),
            Output::Request(request) => questions.push(request),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(reported.len(), 2);
    assert!(questions.iter().all(|q| q.ends_at == end));
    let methods: Vec<&str> = questions.iter().map(|q| q.method.as_str()).collect();
    assert!(methods.contains(&"elicitation/create") && methods.contains(&"roots/list"));
    // Nothing goes out before the answers: the wait is the budget's end.
    assert!(matches!(next(&mut op, &clock), Output::Wait(at) if at == end));

    clock.advance(secs(3.0));
    let (who, roots) = match questions[0].method.as_str() {
        "elicitation/create" => (&questions[0], &questions[1]),
        _ => (&questions[1], &questions[0]),
    };
    let content = json!({"action": "accept", "content": {"name": "Grace"}});
    give(&mut op, &clock, who.reply, Ok(content.clone()));
    assert!(
        matches!(next(&mut op, &clock), Output::Wait(at) if at == end),
        "one answer of two is not enough"
    );
    let listed = json!({"roots": [{"uri": "file:///work"}]});
    give(&mut op, &clock, roots.reply, Ok(listed.clone()));
    let retry = transmitted(next(&mut op, &clock));
    assert_eq!(retry.kind, LegKind::CallTool);
    assert_eq!(retry.timeout, secs(15.0), "the round spent the same budget");
    let params = &body(&retry)["params"];
    assert_eq!(
        params["inputResponses"],
        json!({"who": content, "where": listed}),
        "the caller's answers, not the registered responders'"
    );
    assert_eq!(params["requestState"], "s1");
}

#[test]
fn a_caller_that_does_not_answer_in_time_ends_the_operation_with_its_budget_spent() {
    let clock = ManualClock::new();
    let mut session = Session::new(answering(modern()));
    let mut op = session.call_tool("ask", Map::new(), clock.now());
    let call = transmitted(next(&mut op, &clock));
    clock.advance(secs(1.0));
    let answer = input_required(&call, json!({"who": elicit("who?")}));
    op.feed_answer(
        call.id,
        http::StatusCode::OK,
        &json_head(),
        &answer,
        clock.now(),
    );
    assert!(matches!(next(&mut op, &clock), Output::Event(_)));
    let question = asked(next(&mut op, &clock));
    let Output::Wait(until) = next(&mut op, &clock) else {
        panic!("the request waits for the caller");
    };
    assert_eq!(until, question.ends_at);
    clock.set(until);
    op.handle_input(Input::Timeout, clock.now());
    match next(&mut op, &clock) {
        Output::Done(Err(Error::BudgetExhausted { .. })) => {}
        other => panic!("expected the budget spent, got {other:?}"),
    }
    assert_eq!(op.legs_sent(), 1, "nothing was sent after the budget's end");
    // The caller's answer, too late, is ignored.
    give(
        &mut op,
        &clock,
        question.reply,
        Ok(json!({"action": "decline"})),
    );
    assert!(matches!(
        op.poll_output(clock.now()),
        Output::Done(Err(Error::AlreadyFinished))
    ));
}

#[test]
fn a_caller_error_declines_an_elicitation_and_ends_a_sampling_round() {
    let clock = ManualClock::new();
    let refusal = RpcError {
        code: -1,
        message: "the person closed the dialog".into(),
        data: None,
    };
    for (method, ends) in [
        ("elicitation/create", false),
        ("sampling/createMessage", true),
    ] {
        let mut session = Session::new(answering(modern()));
        let mut op = session.call_tool("ask", Map::new(), clock.now());
        let call = transmitted(next(&mut op, &clock));
        let requests = json!({"k": {"method": method, "params": {}}});
        let answer = input_required(&call, requests);
        op.feed_answer(
            call.id,
            http::StatusCode::OK,
            &json_head(),
            &answer,
            clock.now(),
        );
        assert!(matches!(next(&mut op, &clock), Output::Event(_)));
        let question = asked(next(&mut op, &clock));
        give(&mut op, &clock, question.reply, Err(refusal.clone()));
        match next(&mut op, &clock) {
            Output::Transmit(retry) if !ends => {
                assert_eq!(
                    body(&retry)["params"]["inputResponses"],
                    json!({"k": {"action": "decline"}})
                );
            }
            Output::Done(Err(error)) if ends => {
                let text = error.to_string();
                assert!(
                    text.contains("sampling/createMessage") && text.contains("closed the dialog"),
                    "{text}"
                );
            }
            other => panic!("{method}: unexpected {other:?}"),
        }
    }
}

#[test]
fn a_legacy_reply_goes_out_once_the_caller_answers_and_the_stream_is_read_meanwhile() {
    let clock = ManualClock::new();
    let mut session = live_session(answering(config()), &clock);
    let mut op = session.call_tool("ask", Map::new(), clock.now());
    let call = transmitted(next(&mut op, &clock));
    let question = asked_on_stream(&mut op, &clock, call.id, "srv-9");
    assert_eq!(question.method, "elicitation/create");
    assert_eq!(question.params["message"], "who?");
    // No reply goes out before the caller's answer; the call's stream is still read.
    assert!(matches!(next(&mut op, &clock), Output::Wait(_)));
    let progress = json!({"jsonrpc": "2.0", "method": "notifications/message",
        "params": {"level": "info", "data": "working"}});
    on_stream(&mut op, &clock, call.id, &progress);
    assert!(matches!(
        next(&mut op, &clock),
        Output::Event(Event::Notification(_))
    ));
    assert!(matches!(next(&mut op, &clock), Output::Wait(_)));

    clock.advance(secs(4.0));
    let content = json!({"action": "accept", "content": {"name": "Grace"}});
    for _ in 0..2 {
        // A second answer to the same request is ignored.
        give(&mut op, &clock, question.reply, Ok(content.clone()));
    }
    let reply = transmitted(next(&mut op, &clock));
    assert_eq!(reply.kind, LegKind::Respond);
    assert_eq!(
        body(&reply),
        json!({"jsonrpc": "2.0", "id": "srv-9", "result": content})
    );
    op.handle_input(
        Input::Head {
            leg: reply.id,
            status: http::StatusCode::ACCEPTED,
            headers: &http::HeaderMap::new(),
        },
        clock.now(),
    );
    assert!(
        matches!(next(&mut op, &clock), Output::Wait(_)),
        "one reply, however many answers"
    );
}

#[test]
fn ping_and_unregistered_methods_never_reach_the_caller() {
    let clock = ManualClock::new();
    // Only elicitation is answered by the caller here.
    let config = config().respond_to("elicitation/create", |_| Ok(json!({})));
    let mut session = live_session(config, &clock);
    let mut op = session.call_tool("ask", Map::new(), clock.now());
    let call = transmitted(next(&mut op, &clock));
    open_stream(&mut op, &clock, call.id);
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let roots = json!({"jsonrpc": "2.0", "id": 2, "method": "roots/list"});
    on_stream(&mut op, &clock, call.id, &ping);
    on_stream(&mut op, &clock, call.id, &roots);
    let mut replies = Vec::new();
    loop {
        match next(&mut op, &clock) {
            Output::Event(Event::ServerRequest { .. }) => {}
            Output::Request(request) => panic!("the caller was asked {}", request.method),
            Output::Transmit(leg) => {
                assert_eq!(leg.kind, LegKind::Respond);
                replies.push(body(&leg));
                op.handle_input(
                    Input::Head {
                        leg: leg.id,
                        status: http::StatusCode::ACCEPTED,
                        headers: &http::HeaderMap::new(),
                    },
                    clock.now(),
                );
            }
            Output::Wait(_) => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(replies.len(), 2);
    assert_eq!(replies[0]["result"], json!({}));
    assert_eq!(replies[1]["error"]["code"], -32601);
}

/// A call's answer that comes while the caller's reply to the server is on its way (a task's
/// result, fetched beside the request it waited on): the reply's head is waited for before the
/// result goes out, since a leg cut mid-way may not reach the server; the wait ends inside
/// the budget and at most the cancel notice's grant after the result, and at once on a cancel.
#[test]
fn a_reply_on_its_way_when_the_answer_comes_is_waited_for_inside_the_budget() {
    for ending in ["head", "cancel", "silence"] {
        let clock = ManualClock::new();
        let mut session = live_session(answering(config()), &clock);
        let mut op = session.call_tool("ask", Map::new(), clock.now());
        let end = op.deadline().end().unwrap();
        let call = transmitted(next(&mut op, &clock));
        let call_id = body(&call)["id"].clone();
        let question = asked_on_stream(&mut op, &clock, call.id, "srv-1");
        give(
            &mut op,
            &clock,
            question.reply,
            Ok(json!({"action": "decline"})),
        );
        let reply = transmitted(next(&mut op, &clock));
        assert_eq!(reply.kind, LegKind::Respond);

        let answer = json!({"jsonrpc": "2.0", "id": call_id,
            "result": {"content": [{"type": "text", "text": "done"}]}});
        on_stream(&mut op, &clock, call.id, &answer);
        let waited = next(&mut op, &clock);
        let Output::Wait(until) = waited else {
            panic!("{ending}: the result waits for the reply's head, got {waited:?}");
        };
        assert!(until <= end, "{ending}: the wait ends inside the budget");
        assert_eq!(
            until,
            clock.now() + mcp_proto::driver::CANCEL_NOTICE_GRANT,
            "{ending}: a silent server holds the result back at most the notice's grant"
        );
        match ending {
            "head" => {
                let head = Input::Head {
                    leg: reply.id,
                    status: http::StatusCode::ACCEPTED,
                    headers: &http::HeaderMap::new(),
                };
                op.handle_input(head, clock.now());
            }
            "cancel" => {
                op.handle_input(Input::Cancel, clock.now());
            }
            _ => {
                clock.set(until);
                op.handle_input(Input::Timeout, clock.now());
            }
        }
        match next(&mut op, &clock) {
            Output::Done(Ok(outcome)) => {
                assert!(format!("{outcome:?}").contains("done"), "{ending}");
            }
            other => panic!("{ending}: expected the result, got {other:?}"),
        }
    }
}
