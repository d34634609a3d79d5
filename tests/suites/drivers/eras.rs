//! The era suite, for every driver: the default configuration detects the server's era. A
//! modern server answers a tool call in one leg; a legacy one gets the handshake after the
//! refused modern request, inside the same budget; `-32022` moves to a version both speak;
//! the server's questions (multi round-trip requests) are answered leg by leg under the
//! operation's budget, and a budget spent between rounds refuses the next one unsent; a legacy
//! server's question is answered by a POST whose acknowledgement the call waits for (a cancel
//! ends that wait).

use std::time::{Duration, Instant};

use mcp_proto::driver::LegKind;
use mcp_proto::message::accept_elicitation_with_defaults;
use mcp_proto::request::{GetPrompt, ReadResource};
use mcp_proto::{Budget, Era, Error, LegEnd, ProtocolVersion, Resolution, SessionConfig};
use mcp_testkit::{Script, ServerEra, ServerRequest, TestServer};
use serde_json::Value;

use super::support::{Driver, Recorder, assert_within_budget, echo, eventually};
use super::{BUDGET, assert_one_deadline};

/// A client for `server` that detects the era (the default), at millisecond resolution,
/// answering elicitations with their defaults.
fn detecting<D: Driver>(server: &TestServer, budget: Duration) -> (D, Recorder) {
    let config = SessionConfig::new(&server.url())
        .expect("the test server's URL is valid")
        .with_budget(Budget::from_duration(budget))
        .with_resolution(Resolution::MILLISECOND)
        .respond_to("elicitation/create", |params| {
            Ok(accept_elicitation_with_defaults(params))
        });
    let mut client = D::new(config);
    let recorder = client.observe();
    (client, recorder)
}

/// Every request carries the modern headers, matching its body.
#[track_caller]
fn assert_modern_headers(server: &TestServer) {
    for request in server.requests() {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let method = body["method"].as_str().unwrap();
        assert_eq!(request.header("mcp-protocol-version"), Some("2026-07-28"));
        assert_eq!(request.header("mcp-method"), Some(method));
        assert_eq!(
            body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        assert!(request.header("mcp-session-id").is_none());
    }
}

pub(super) fn a_modern_server_answers_a_tool_call_in_one_leg<D: Driver>() {
    for era in [ServerEra::Modern, ServerEra::Dual] {
        let server = TestServer::start(Script::new().era(era));
        let (mut client, recorder) = detecting::<D>(&server, BUDGET);
        let result = client.call_tool("echo", echo("hi")).unwrap();
        assert_eq!(result.text(), "hi");
        assert_eq!(server.rpc_methods(), ["tools/call"], "{era:?}");
        assert_eq!(recorder.ends(), [LegEnd::Status(200)]);
        assert_eq!(server.requests()[0].header("mcp-name"), Some("echo"));
        assert_modern_headers(&server);
        assert_eq!(client.session().era(), Some(Era::Modern));

        // A listing and a probe are one leg each too.
        assert_eq!(client.list_tools().unwrap().len(), 4);
        let info = client.probe().unwrap();
        assert_eq!(info.protocol_version, ProtocolVersion::V2026_07_28);
        assert_eq!(
            server.rpc_methods(),
            ["tools/call", "tools/list", "server/discover"]
        );
        assert_modern_headers(&server);
    }
}

pub(super) fn a_legacy_server_gets_the_handshake_inside_one_budget<D: Driver>() {
    let server = TestServer::start(Script::new());
    let (mut client, recorder) = detecting::<D>(&server, BUDGET);
    let result = client.call_tool("echo", echo("hi")).unwrap();
    assert_eq!(result.text(), "hi");
    assert_eq!(
        server.rpc_methods(),
        [
            "tools/call",
            "initialize",
            "notifications/initialized",
            "tools/call"
        ]
    );
    assert_eq!(
        recorder.ends(),
        [
            LegEnd::Status(400),
            LegEnd::Status(200),
            LegEnd::Status(202),
            LegEnd::Status(200)
        ]
    );
    assert_one_deadline(&recorder);
    assert_eq!(client.session().era(), Some(Era::Legacy));

    // Remembered: the next call is one leg on the live session.
    client.call_tool("echo", echo("again")).unwrap();
    assert_eq!(server.rpc_methods().len(), 5);
    assert!(server.requests()[4].header("mcp-session-id").is_some());
}

pub(super) fn a_fallback_the_budget_cannot_pay_for_is_not_sent<D: Driver>() {
    // The refusal of the modern request takes the whole 300 ms budget.
    let budget = Duration::from_millis(300);
    let server = TestServer::start(Script::new().delay("tools/call", Duration::from_millis(400)));
    let (mut client, _recorder) = detecting::<D>(&server, budget);
    let err = client.call_tool("echo", echo("hi")).unwrap_err();
    assert!(
        matches!(
            err,
            Error::LegTimedOut { .. } | Error::BudgetExhausted { .. }
        ),
        "{err:?}"
    );
    assert_eq!(
        server.rpc_methods(),
        ["tools/call"],
        "no handshake was sent"
    );
}

pub(super) fn the_server_s_questions_are_answered_round_by_round<D: Driver>() {
    let server = TestServer::start(Script::new().era(ServerEra::Modern));
    let (mut client, recorder) = detecting::<D>(&server, BUDGET);
    let result = client.call_tool("greet", serde_json::Map::new()).unwrap();
    assert_eq!(result.text(), "hello world");
    assert_eq!(server.rpc_methods(), ["tools/call", "tools/call"]);
    let requests = server.requests();
    let retry: Value = serde_json::from_slice(&requests[1].body).unwrap();
    let first: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert_ne!(first["id"], retry["id"], "the retry is a new request");
    assert_eq!(retry["params"]["requestState"], "greet-1:eyJzdGVwIjoxfQ==");
    assert_eq!(
        retry["params"]["inputResponses"]["name"]["content"]["name"],
        "world"
    );
    assert_modern_headers(&server);
    assert_eq!(
        recorder.legs().iter().map(|l| l.kind).collect::<Vec<_>>(),
        [LegKind::CallTool, LegKind::CallTool]
    );
    assert_one_deadline(&recorder);
}

pub(super) fn an_answer_to_the_server_is_acknowledged_before_the_call_returns<D: Driver>() {
    // The server takes the answer to its elicitation, answers the call with it at once, and
    // acknowledges the answer's POST 300 ms later. The call returns once the acknowledgement
    // came, not before: a POST cut mid-way may not reach the server (the TypeScript SDK's task
    // example answered `tasks/result` first, and the tokio driver cut its sampling answer).
    let ack = Duration::from_millis(300);
    let server = TestServer::start(
        Script::new()
            .server_request(ServerRequest::elicit_name(7, "Ada"))
            .ack_delay(ack),
    );
    let (mut client, recorder) = detecting::<D>(&server, BUDGET);
    let started = Instant::now();
    let result = client.call_tool("echo", echo("x")).unwrap();
    let took = started.elapsed();
    assert_eq!(result.text(), "x");
    assert_eq!(
        server.client_responses().len(),
        1,
        "the answer reached the server"
    );
    let legs = recorder.legs();
    let reply = (legs.iter().find(|leg| leg.kind == LegKind::Respond)).expect("an answer went out");
    assert_eq!(
        reply.end,
        LegEnd::Status(202),
        "the answer's POST was acknowledged, not cut: {legs:?}"
    );
    assert!(
        took >= ack,
        "the call returned {took:?} in, before the acknowledgement"
    );
    assert!(
        took < BUDGET / 2,
        "{took:?}: the acknowledgement is all it waited for"
    );
}

pub(super) fn a_cancel_ends_the_wait_for_the_acknowledgement_at_once<D: Driver>() {
    // As above, the acknowledgement 5 s late (past the second the result waits for it at
    // most); the caller cancels once the server has the answer. The call returns then, not a
    // second later: with its result where it was read already (the tokio driver reads the
    // call's stream beside the answer's POST), else cancelled (the blocking driver reads on
    // once the POST's head is in).
    let server = TestServer::start(
        Script::new()
            .server_request(ServerRequest::elicit_name(7, "Ada"))
            .ack_delay(Duration::from_secs(5)),
    );
    let (mut client, _recorder) = detecting::<D>(&server, BUDGET);
    let cancel = client.cancel_handle();
    let (result, returned, cancelled) = std::thread::scope(|scope| {
        let canceller = scope.spawn(|| {
            let answered = || server.client_responses().len() == 1;
            assert!(eventually(Duration::from_secs(5), &mut { answered }));
            cancel();
            Instant::now()
        });
        let result = client.call_tool("echo", echo("x"));
        (result, Instant::now(), canceller.join().unwrap())
    });
    match result {
        Ok(result) => assert_eq!(result.text(), "x"),
        Err(err) => assert!(matches!(err, Error::Cancelled { .. }), "{err:?}"),
    }
    // Measured from the cancel: the second the wait would last without it is the bar.
    let after = returned.saturating_duration_since(cancelled);
    let most = mcp_proto::driver::CANCEL_NOTICE_GRANT;
    assert!(
        after < most / 2,
        "returned {after:?} after the cancel: the cancel did not end the wait (it ends by \
         itself {most:?} after the result)"
    );
}

pub(super) fn a_budget_spent_during_the_rounds_ends_the_call_inside_it<D: Driver>() {
    // Each round takes 250 ms of a 300 ms budget: the question comes back, the retry carrying
    // the answer gets what is left (or is refused, on a machine slow enough to spend it all),
    // and the call ends at the budget, not a round later. (The exact refusal between rounds,
    // nothing sent, is a ManualClock test in `mcp-proto/tests/modern.rs`.)
    let budget = Duration::from_millis(300);
    let server = TestServer::start(
        Script::new()
            .era(ServerEra::Modern)
            .delay("tools/call", Duration::from_millis(250)),
    );
    let (mut client, _recorder) = detecting::<D>(&server, budget);
    let started = std::time::Instant::now();
    let err = client
        .call_tool("greet", serde_json::Map::new())
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::BudgetExhausted { .. } | Error::LegTimedOut { .. }
        ),
        "{err:?}"
    );
    assert_within_budget("greet", started.elapsed(), budget, Duration::from_millis(1));
    // No third round: it would have gone out past the budget.
    let sent = server.rpc_methods().len();
    assert!((1..=2).contains(&sent), "{sent} rounds sent");
}

pub(super) fn a_legacy_server_that_became_modern_is_detected_again<D: Driver>() {
    let server = TestServer::start(Script::new());
    let (mut client, _recorder) = detecting::<D>(&server, BUDGET);
    client.call_tool("echo", echo("x")).unwrap();
    assert_eq!(client.session().era(), Some(Era::Legacy));
    // The server is upgraded to the modern era only: the legacy request on the old session is
    // refused the modern way (-32020), and the same call goes out again as a modern request.
    server.set_script(Script::new().era(ServerEra::Modern));
    server.clear_requests();
    let result = client.call_tool("echo", echo("y")).unwrap();
    assert_eq!(result.text(), "y");
    assert_eq!(server.rpc_methods(), ["tools/call", "tools/call"]);
    let requests = server.requests();
    assert!(requests[0].header("mcp-session-id").is_some());
    assert_eq!(
        requests[1].header("mcp-protocol-version"),
        Some("2026-07-28")
    );
    assert_eq!(client.session().era(), Some(Era::Modern));

    // A client pinned to the legacy era has no way forward: it reports the refusal, whose
    // modern error (read: it rules out the HTTP+SSE fallback) names the versions spoken.
    let pinned = SessionConfig::new(&server.url())
        .unwrap()
        .with_protocol_version(ProtocolVersion::LATEST);
    let mut client = D::new(pinned);
    let err = client.call_tool("echo", echo("x")).unwrap_err();
    assert!(
        matches!(
            err,
            Error::JsonRpc {
                code: -32022,
                method: "initialize",
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        server.rpc_methods().last().map(String::as_str),
        Some("initialize")
    );
}

pub(super) fn resources_and_prompts_are_one_operation_each_in_both_eras<D: Driver>() {
    for era in [ServerEra::Legacy, ServerEra::Modern] {
        let server = TestServer::start(Script::new().era(era));
        let (mut client, _recorder) = detecting::<D>(&server, BUDGET);
        let resources = client.list::<mcp_proto::Resource>().unwrap();
        let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
        assert_eq!(uris, ["test://readme", "test://data.json"], "{era:?}");
        assert_eq!(resources[0].mime_type(), Some("text/plain"));
        let read = client.request(ReadResource::new("test://readme")).unwrap();
        assert_eq!(read.text(), "This is the test server.");
        let prompts = client.list::<mcp_proto::Prompt>().unwrap();
        assert_eq!(prompts[0].name, "greeting");
        let mut arguments = serde_json::Map::new();
        arguments.insert("name".into(), Value::from("Ada"));
        let prompt = client
            .request(GetPrompt::new("greeting", arguments))
            .unwrap();
        assert_eq!(prompt.text(), "Say hello to Ada.");
        let templates = client
            .run(
                mcp_proto::Action::List(mcp_proto::ListKind::ResourceTemplates),
                Budget::from_duration(BUDGET),
            )
            .unwrap()
            .into_listing::<mcp_proto::ResourceTemplate>()
            .unwrap();
        assert_eq!(templates[0].uri_template, "test://notes/{id}");

        let unknown = client
            .request(ReadResource::new("test://nowhere"))
            .unwrap_err();
        assert!(
            matches!(unknown, Error::JsonRpc { code: -32602, .. }),
            "{unknown:?}"
        );
        if era == ServerEra::Modern {
            // Every one of them a single modern request, named in its headers, with the
            // listing's caching hints surfaced.
            assert_modern_headers(&server);
            let names: Vec<Option<String>> = server
                .requests()
                .iter()
                .map(|r| r.header("mcp-name").map(str::to_owned))
                .collect();
            assert_eq!(
                names,
                [
                    None,
                    Some("test://readme".to_owned()),
                    None,
                    Some("greeting".to_owned()),
                    None,
                    Some("test://nowhere".to_owned())
                ]
            );
            let hint = resources.cache.unwrap();
            assert_eq!(hint.ttl, Duration::from_secs(60));
            assert_eq!(hint.scope, Some(mcp_proto::CacheScope::Private));
            assert_eq!(
                read.cache.map(|c| c.scope),
                Some(Some(mcp_proto::CacheScope::Private))
            );
        } else {
            assert!(resources.cache.is_none());
        }
    }
}

pub(super) fn a_modern_subscription_lasts_its_budget<D: Driver>() {
    let server = TestServer::start(Script::new().era(ServerEra::Modern));
    let budget = Duration::from_millis(400);
    let (mut client, recorder) = detecting::<D>(&server, budget);
    let subscription = mcp_proto::Subscription {
        tools_list_changed: true,
        ..mcp_proto::Subscription::default()
    };
    let started = std::time::Instant::now();
    let outcome = client
        .run(
            mcp_proto::Action::Subscribe(subscription),
            Budget::from_duration(budget),
        )
        .unwrap();
    // The server keeps the stream open: the budget ends the subscription, as it should.
    super::assert_cut_at_budget("subscribe", started.elapsed(), budget, super::MS);
    assert_within_budget(
        "subscribe",
        started.elapsed(),
        budget,
        Duration::from_millis(1),
    );
    let mcp_proto::Outcome::Subscription(end) = outcome else {
        panic!("{outcome:?}")
    };
    assert!(!end.by_server);
    assert_eq!(
        end.acknowledged,
        Some(serde_json::json!({"toolsListChanged": true}))
    );
    let notified: Vec<String> = recorder
        .events()
        .into_iter()
        .filter_map(|e| match e {
            mcp_proto::Event::Notification(n) => Some(n.method),
            _ => None,
        })
        .collect();
    assert_eq!(
        notified,
        [
            "notifications/subscriptions/acknowledged",
            "notifications/tools/list_changed"
        ]
    );
    assert_eq!(server.rpc_methods(), ["subscriptions/listen"]);
    assert_modern_headers(&server);
}

pub(super) fn a_version_error_naming_only_legacy_versions_leads_to_the_handshake<D: Driver>() {
    // A dual-era server that speaks no modern version yet: it answers the modern request with
    // -32022 naming its legacy versions, and the client goes through the handshake.
    let server = TestServer::start(Script::new().era(ServerEra::Dual).modern_versions(&[]));
    let (mut client, recorder) = detecting::<D>(&server, BUDGET);
    let result = client.call_tool("echo", echo("hi")).unwrap();
    assert_eq!(result.text(), "hi");
    assert_eq!(
        server.rpc_methods(),
        [
            "tools/call",
            "initialize",
            "notifications/initialized",
            "tools/call"
        ]
    );
    let refusal: Value = serde_json::from_slice(&server.requests()[0].body).unwrap();
    assert_eq!(
        refusal["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(recorder.ends()[0], LegEnd::Status(400));
    assert_one_deadline(&recorder);
    assert_eq!(client.session().era(), Some(Era::Legacy));
}
