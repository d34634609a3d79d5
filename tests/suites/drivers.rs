//! The driver suite: every test here is written once, as a function generic over
//! [`Driver`](support::Driver), and instantiated for each driver by [`for_each_driver!`]:
//!
//! * `blocking::<test>`: `mcp-driver-blocking`, called directly;
//! * `tokio::<test>`: `mcp-driver-tokio` on a multi-thread runtime (two workers), each
//!   operation run to its end with `block_on`;
//! * `tokio_current_thread::<test>`: the same on a current-thread runtime (what
//!   `#[tokio::test]` gives), where the connection tasks only progress inside `block_on`.
//!
//! The authorization suite (`drivers/auth.rs`, every test name holds `auth`) runs against the
//! test server's OAuth mode: `cargo test -p mcp-testkit --test drivers auth`.
//!
//! So a failure names the driver. What the shared [`Driver`](support::Driver) API cannot
//! reach stays in each driver's own tests: the blocking driver's cancel in each blocking state,
//! connection reuse and TLS failures; the tokio driver's `Send` futures, dropped futures,
//! paused time and standalone stream; for both, the cancel notice and the nested legs that
//! answer a server's request (scripted with [`Script::server_request`]).
//!
//! Where the two drivers once decided differently, one case each pins what both must do:
//! a write to a local server that stopped reading is cut at the budget
//! (`a_local_server_that_stops_reading_is_cut_at_the_budget_and_ended`); a dropped client's
//! local server is killed at once, not shut down politely
//! (`a_dropped_client_kills_its_local_server_at_once`); the drain after an answer ends at the
//! answer, however the body goes on (`a_body_trickling_on_after_its_answer_ends_the_call_at_the_answer`);
//! the person's step ends with the budget whatever the caller's authorizer does
//! (`an_authorizer_that_never_answers_is_cut_at_the_budget`).
//!
//! Real time, real sockets, against `mcp-testkit`'s loopback server. Bounds are generous (a
//! slow, noisy CI machine must not fail them): an operation that times out must end no
//! earlier than its budget (less 50 ms for timer slack) and no later than budget + one
//! resolution unit + [`MARGIN`](support::MARGIN). The numbers measured are printed with
//! `--nocapture`.

#[path = "drivers/support.rs"]
mod support;

#[path = "drivers/eras.rs"]
mod eras;
use eras::*;

#[path = "drivers/spans.rs"]
mod spans;
use spans::*;

#[path = "drivers/auth.rs"]
mod auth;
use auth::*;

#[path = "drivers/stdio.rs"]
mod stdio;
use stdio::*;
#[path = "drivers/network.rs"]
mod network;
use network::*;

#[path = "drivers/parallel.rs"]
mod parallel;
use parallel::*;

#[path = "drivers/structured.rs"]
mod structured;
use structured::*;

#[path = "drivers/listen.rs"]
mod listen;
use listen::*;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use mcp_proto::driver::LegKind;
use mcp_proto::{
    Action, Budget, CallToolResult, Error, Event, LegEnd, Outcome, ProtocolVersion, Resolution,
    SessionConfig, TransportErrorKind,
};
use mcp_testkit::{AnswerMode, Hostile, NotificationReply, Script, TestServer};
use serde_json::Value;
use support::{
    Driver, Recorder, args, assert_within_budget, config, echo, echo_call, eventually, new_client,
    peak_rss_bytes,
};

/// Instantiates each named generic test for every driver, in a module named after it.
/// Attributes before a name (`#[ignore = "..."]`) apply to every instantiation.
macro_rules! for_each_driver {
    ($($(#[$meta:meta])* $name:ident),* $(,)?) => {
        mod blocking {
            $( $(#[$meta])* #[test] fn $name() { super::$name::<crate::support::Blocking>(); } )*
        }
        mod tokio {
            $( $(#[$meta])* #[test] fn $name() { super::$name::<crate::support::Tokio<true>>(); } )*
        }
        mod tokio_current_thread {
            $( $(#[$meta])* #[test] fn $name() { super::$name::<crate::support::Tokio<false>>(); } )*
        }
    };
}

for_each_driver!(
    // Parallel operations on one client.
    sixty_four_calls_on_a_new_legacy_session_send_one_handshake,
    sixty_four_calls_on_a_modern_server_send_no_handshake,
    a_session_lost_under_a_burst_is_re_established_once,
    a_cancelled_call_leaves_the_others_running,
    sixteen_calls_on_a_cold_oauth_server_authorize_once,
    sixteen_calls_refused_at_once_refresh_the_token_once,
    a_clone_with_its_own_observer_hears_only_its_own_operations,
    // The era: detected, remembered, modern in one leg.
    a_modern_server_answers_a_tool_call_in_one_leg,
    a_legacy_server_gets_the_handshake_inside_one_budget,
    a_fallback_the_budget_cannot_pay_for_is_not_sent,
    the_server_s_questions_are_answered_round_by_round,
    an_answer_to_the_server_is_acknowledged_before_the_call_returns,
    a_cancel_ends_the_wait_for_the_acknowledgement_at_once,
    a_budget_spent_during_the_rounds_ends_the_call_inside_it,
    a_legacy_server_that_became_modern_is_detected_again,
    resources_and_prompts_are_one_operation_each_in_both_eras,
    a_modern_subscription_lasts_its_budget,
    a_version_error_naming_only_legacy_versions_leads_to_the_handshake,
    // The drivers' tracing spans.
    a_tool_call_is_one_operation_span_with_a_span_per_leg,
    a_refusal_is_an_event_on_its_operation_span,
    // Authorization inside the operation (the test server's OAuth mode).
    a_cold_call_authorizes_headlessly_and_the_next_call_sends_no_auth_leg,
    without_an_authorizer_the_call_ends_at_once_naming_server_and_issuer,
    every_hostile_authorization_server_ends_in_its_own_typed_error,
    a_stalled_token_endpoint_ends_the_authorization_at_the_budget,
    oauth_credentials_never_reach_an_error_a_log_or_another_host,
    an_oauth_redirect_is_not_followed_and_leaks_nothing,
    an_expired_oauth_token_is_refreshed_inside_the_next_operation,
    a_step_up_is_authorized_inside_the_call_that_needed_it,
    a_spent_refresh_token_leads_to_a_new_authorization_inside_the_operation,
    an_authorization_endpoint_that_never_answers_ends_at_the_budget,
    an_authorizer_that_runs_out_of_time_or_fails_is_not_reported_as_missing,
    an_authorizer_that_never_answers_is_cut_at_the_budget,
    a_token_endpoint_reading_the_client_from_the_form_authorizes_every_method,
    client_credentials_authenticate_with_basic_and_name_the_client_in_the_form,
    a_token_endpoint_that_refuses_the_client_is_the_authorization_server_s_fault,
    // Local servers over stdio (the testkit's stdio server).
    a_local_server_is_started_by_the_first_operation_and_kept_for_the_next,
    a_modern_local_server_answers_its_probe_then_each_call_in_one_leg,
    every_hostile_local_server_ends_in_its_own_typed_error_inside_the_budget,
    a_stalled_local_server_is_cut_at_the_budget_and_no_process_is_left,
    a_local_server_that_ignores_eof_is_terminated_on_close,
    a_dropped_client_kills_its_local_server_at_once,
    a_local_server_that_died_is_started_again_by_the_next_operation,
    a_program_that_is_not_there_is_the_callers_error,
    the_seed_sequence_holds_over_stdio_in_real_time,
    a_cancel_ends_a_local_call_at_once,
    a_call_cancelled_for_good_does_not_wait_for_its_turn_on_a_local_server,
    a_local_server_that_stops_reading_is_cut_at_the_budget_and_ended,
    a_cancel_reaches_a_write_to_a_server_that_stopped_reading,
    a_close_after_a_spent_budget_ends_the_local_server_at_once,
    a_stalled_wrapped_local_server_is_ended_with_its_whole_tree_at_the_budget,
    a_closed_wrapped_local_server_leaves_nothing_of_its_tree,
    a_dropped_client_ends_its_wrapped_local_server_s_whole_tree,
    a_close_after_a_spent_budget_sends_no_delete,
    // Company networks: CAs, TLS errors, proxies.
    an_internal_ca_added_as_an_option_is_trusted,
    an_internal_ca_named_by_ssl_cert_file_is_trusted,
    an_unknown_issuer_is_refused_with_a_sentence_to_act_on,
    an_expired_or_misnamed_certificate_is_named_as_such,
    a_tls_handshake_that_never_ends_times_out_inside_the_grant,
    both_schemes_go_through_the_proxy,
    no_proxy_and_loopback_skip_the_proxy,
    a_refusing_proxy_is_typed_and_its_credentials_never_shown,
    a_proxy_that_never_answers_connect_is_named_with_the_target_at_the_grant,
    a_proxy_that_answers_502_is_named_with_the_target,
    a_name_lookup_that_never_answers_costs_the_budget_not_the_resolver_s_timeout,
    a_server_only_the_proxy_can_resolve_is_reached_through_it,
    a_black_holed_first_address_costs_the_first_leg_one_attempt_delay,
    // Operations and the session.
    a_tool_call_is_three_legs_under_one_budget,
    a_failing_tool_is_a_result_not_an_error,
    a_listing_follows_every_page_with_its_cursor,
    a_probe_reports_the_handshake_then_pings_the_live_session,
    a_second_operation_on_the_same_session_sends_no_handshake,
    a_kept_connection_the_server_closed_is_not_used_again,
    a_cancel_handle_kept_past_its_client_keeps_no_connection,
    a_404_on_an_expired_session_reinitializes_and_succeeds_inside_one_budget,
    a_session_lost_twice_in_one_operation_is_expired,
    a_session_a_typescript_server_forgot_is_recovered_as_for_a_404,
    event_stream_answers_carry_notifications_to_the_observer,
    notification_replies_other_than_202_are_accepted,
    a_server_without_sessions_works,
    run_takes_its_own_budget_and_returns_its_outcome,
    close_ends_the_session_with_a_delete,
    a_stream_closed_before_its_answer_is_resumed_with_a_get,
    a_resumption_that_would_outlast_the_budget_ends_at_once,
    a_refused_connection_is_unreachable,
    connect_uses_the_default_configuration_and_refuses_unusable_urls,
    // The budget in real time.
    the_seed_sequence_grants_what_the_handshake_left,
    a_spent_budget_sends_nothing_more,
    a_stalled_server_ends_in_leg_timed_out_at_the_budget,
    a_trickling_server_cannot_stretch_the_leg_past_its_grant,
    a_stalled_handshake_leg_times_out_too,
    a_coarse_resolution_overruns_the_budget_by_at_most_one_unit,
    a_stream_kept_open_after_the_answer_does_not_delay_the_result,
    a_body_trickling_on_after_its_answer_ends_the_call_at_the_answer,
    a_cancel_from_another_thread_ends_the_call_at_once,
    a_cancel_between_operations_does_nothing,
    // Structured results held to their tools' outputSchema, read into types (issue 46).
    a_result_breaking_its_schema_is_output_invalid_naming_place_and_rule,
    a_result_without_the_structured_content_its_tool_declares_is_missing,
    a_schema_referring_to_the_network_is_refused_and_never_fetched,
    a_schema_costing_two_to_the_forty_ends_in_a_typed_error_inside_the_budget,
    call_tool_as_reads_a_result_into_a_type_or_says_why_not,
    // The session's standalone stream, read beside the call and cut with it.
    the_standalone_stream_is_opened_beside_the_call_and_cut_with_it,
    a_cancel_cuts_the_standalone_stream_with_the_call,
    // Hostile servers.
    every_hostile_mode_ends_in_its_own_typed_error,
    handshake_failures_are_typed,
    listings_that_do_not_end_are_stopped,
    an_endless_event_stream_is_cut_at_the_budget_and_its_events_reported,
    a_wrong_id_is_malformed,
    invalid_utf8_is_malformed,
    a_json_nesting_depth_of_100_000_is_a_typed_outcome_not_a_crash,
    a_session_id_with_cr_or_lf_is_never_echoed,
    a_session_id_with_cr_or_lf_is_malformed,
    a_redirect_to_another_host_is_not_followed_and_leaks_nothing,
    a_thousand_notifications_before_the_answer_all_reach_the_observer,
    a_100_mib_answer_is_refused_at_the_cap_with_bounded_memory,
);

/// The budget of operations that are not about the budget.
const BUDGET: Duration = Duration::from_secs(10);
/// One millisecond: the resolution unit of most tests.
const MS: Duration = Duration::from_millis(1);
/// Timer slack allowed before the budget's end.
const EARLY: Duration = Duration::from_millis(50);

const HANDSHAKE_AND_CALL: [&str; 3] = ["initialize", "notifications/initialized", "tools/call"];

/// One `tools/call` of `echo` against a server: its result, how long it took, and what the
/// server and the observer saw.
struct Call {
    result: Result<CallToolResult, Error>,
    elapsed: Duration,
    server: TestServer,
    recorder: Recorder,
}

/// Calls `echo` once against a new server with `script`, under `budget` at millisecond
/// resolution (and `tweak` applied to the configuration).
fn call_once<D: Driver>(
    script: Script,
    budget: Duration,
    tweak: impl FnOnce(SessionConfig) -> SessionConfig,
) -> Call {
    let server = TestServer::start(script);
    let mut client = D::new(tweak(config(&server, budget)));
    let recorder = client.observe();
    timed_call(server, &mut client, recorder)
}

/// Calls `echo` once on `client` (of `server`, reporting to `recorder`), timed.
fn timed_call<D: Driver>(server: TestServer, client: &mut D, recorder: Recorder) -> Call {
    let started = Instant::now();
    let result = client.call_tool("echo", echo("x"));
    let elapsed = started.elapsed();
    Call {
        result,
        elapsed,
        server,
        recorder,
    }
}

/// Asserts an operation the budget ended took the budget: not less (but for [`EARLY`], the
/// timers' slack), and not more than [`assert_within_budget`] allows.
#[track_caller]
fn assert_cut_at_budget(what: &str, elapsed: Duration, budget: Duration, unit: Duration) {
    assert!(
        elapsed + EARLY >= budget,
        "{what}: ended after {elapsed:?}, before the {budget:?} budget"
    );
    assert_within_budget(what, elapsed, budget, unit);
}

/// Asserts `call` timed out on `method` at its budget: `LegTimedOut`, no earlier than the
/// budget and no later than budget + `unit` + margin, the last leg reported as a timeout.
#[track_caller]
fn assert_timed_out(what: &str, call: &Call, method: &str, budget: Duration, unit: Duration) {
    eprintln!(
        "{what}: ended after {:?} (budget {budget:?}): {:?}",
        call.elapsed, call.result
    );
    match &call.result {
        Err(Error::LegTimedOut { method: m, .. }) if *m == method => {}
        other => panic!("{what}: expected LegTimedOut on {method}, got {other:?}"),
    }
    assert_cut_at_budget(what, call.elapsed, budget, unit);
    let last = call.recorder.legs().pop().expect("the leg was reported");
    assert_eq!(last.kind.label(), method, "{what}");
    assert_eq!(
        last.end,
        LegEnd::Transport(TransportErrorKind::TimedOut),
        "{what}"
    );
    assert!(last.grant <= budget + unit, "{what}: {last:?}");
}

/// Asserts each leg's grant is what the previous one left: never more than the previous
/// grant less the time the previous leg took (plus a millisecond of rounding).
#[track_caller]
fn assert_one_deadline(recorder: &Recorder) {
    let legs = recorder.legs();
    for pair in legs.windows(2) {
        let (before, after) = (&pair[0], &pair[1]);
        assert!(
            after.grant + before.elapsed <= before.grant + Duration::from_millis(2),
            "leg {} was granted {:?} after leg {} took {:?} of its {:?}: {legs:#?}",
            after.number,
            after.grant,
            before.number,
            before.elapsed,
            before.grant
        );
    }
}

// ---------------------------------------------------------------------------------------
// Operations and the session.
// ---------------------------------------------------------------------------------------

fn a_tool_call_is_three_legs_under_one_budget<D: Driver>() {
    let server = TestServer::start(Script::new());
    let (mut client, recorder) = new_client::<D>(&server, BUDGET);
    let result = client.call_tool("echo", echo("hi")).unwrap();
    assert_eq!(result.text(), "hi");
    assert!(!result.is_error);
    assert_eq!(server.rpc_methods(), HANDSHAKE_AND_CALL);

    let legs = recorder.legs();
    let kinds: Vec<LegKind> = legs.iter().map(|l| l.kind).collect();
    assert_eq!(
        kinds,
        [LegKind::Initialize, LegKind::Initialized, LegKind::CallTool]
    );
    assert_eq!(legs.iter().map(|l| l.number).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!(
        recorder.ends(),
        [
            LegEnd::Status(200),
            LegEnd::Status(202),
            LegEnd::Status(200)
        ]
    );
    assert!(legs[0].grant <= BUDGET, "{legs:?}");
    for leg in &legs {
        assert!(leg.elapsed <= leg.grant, "{leg:?}");
    }
    assert_one_deadline(&recorder);

    // What went on the wire: the protocol's headers, one Accept each (none added by the
    // HTTP client), the call's name and arguments.
    let requests = server.requests();
    for request in &requests {
        assert_eq!(
            (request.method.as_str(), request.path.as_str()),
            ("POST", "/mcp")
        );
        assert_eq!(request.header("content-type"), Some("application/json"));
        let accepts: Vec<&str> = request
            .headers
            .iter()
            .filter(|(n, _)| n == "accept")
            .map(|(_, v)| v.as_str())
            .collect();
        assert_eq!(accepts, ["application/json, text/event-stream"]);
    }
    let call = &requests[2];
    assert!(call.header("mcp-session-id").is_some());
    assert!(call.header("mcp-protocol-version").is_some());
    let body = call.json().expect("a JSON body");
    assert_eq!(body["params"]["name"], "echo");
    assert_eq!(body["params"]["arguments"]["text"], "hi");
}

fn a_failing_tool_is_a_result_not_an_error<D: Driver>() {
    let server = TestServer::start(Script::new());
    let (mut client, _) = new_client::<D>(&server, BUDGET);
    let failed = client.call_tool("fail", args(&[])).unwrap();
    assert!(failed.is_error);
    let sum = client
        .call_tool("add", args(&[("a", 2.into()), ("b", 3.into())]))
        .unwrap();
    assert_eq!(sum.text(), "5");
    assert!(!sum.is_error);
}

fn a_listing_follows_every_page_with_its_cursor<D: Driver>() {
    let server = TestServer::start(Script::new().tool_pages(3));
    let (mut client, recorder) = new_client::<D>(&server, BUDGET);
    let tools = client.list_tools().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["echo", "add", "sleep", "fail"]);
    assert_eq!(
        server.rpc_methods(),
        [
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/list",
            "tools/list"
        ]
    );
    let pages: Vec<LegKind> = recorder.legs().iter().skip(2).map(|l| l.kind).collect();
    assert_eq!(
        pages,
        [
            LegKind::List {
                of: mcp_proto::ListKind::Tools,
                page: 1
            },
            LegKind::List {
                of: mcp_proto::ListKind::Tools,
                page: 2
            },
            LegKind::List {
                of: mcp_proto::ListKind::Tools,
                page: 3
            }
        ]
    );
    assert_one_deadline(&recorder);
    let cursors: Vec<Value> = server
        .requests()
        .iter()
        .filter(|r| r.rpc_method.as_deref() == Some("tools/list"))
        .map(|r| r.json().expect("JSON")["params"]["cursor"].clone())
        .collect();
    assert_eq!(cursors, [Value::Null, "page-2".into(), "page-3".into()]);
}

fn a_probe_reports_the_handshake_then_pings_the_live_session<D: Driver>() {
    let server = TestServer::start(Script::new());
    let (mut client, recorder) = new_client::<D>(&server, BUDGET);
    assert!(client.session().info().is_none());
    let info = client.probe().unwrap();
    assert_eq!(info.server.name, "mcp-testkit");
    assert_eq!(info.protocol_version, ProtocolVersion::LATEST);
    assert!(info.session_id.is_some());
    assert_eq!(client.session().info(), Some(&info));
    recorder.clear();
    let again = client.probe().unwrap();
    assert_eq!(again, info);
    assert_eq!(
        server.rpc_methods(),
        ["initialize", "notifications/initialized", "ping"]
    );
    let kinds: Vec<LegKind> = recorder.legs().iter().map(|l| l.kind).collect();
    assert_eq!(kinds, [LegKind::Ping]);
}

fn a_second_operation_on_the_same_session_sends_no_handshake<D: Driver>() {
    let server = TestServer::start(Script::new());
    let (mut client, recorder) = new_client::<D>(&server, BUDGET);
    assert_eq!(client.call_tool("echo", echo("one")).unwrap().text(), "one");
    recorder.clear();
    assert_eq!(client.list_tools().unwrap().len(), 4);
    let legs = recorder.legs();
    assert_eq!(legs.len(), 1, "{legs:?}");
    assert_eq!(
        (legs[0].number, legs[0].kind),
        (
            1,
            LegKind::List {
                of: mcp_proto::ListKind::Tools,
                page: 1
            }
        )
    );
    let outcome = client
        .run(
            Action::CallTool {
                name: "echo".into(),
                arguments: echo("three"),
            },
            Budget::from_secs(5),
        )
        .unwrap();
    assert_eq!(outcome.into_call().expect("a call").text(), "three");
    assert_eq!(
        server.rpc_methods(),
        [
            "initialize",
            "notifications/initialized",
            "tools/call",
            "tools/list",
            "tools/call"
        ]
    );
    // One session id on every request after initialize.
    let ids: Vec<String> = server
        .requests()
        .iter()
        .skip(1)
        .map(|r| r.header("mcp-session-id").expect("a session id").to_owned())
        .collect();
    assert_eq!(ids.len(), 4);
    assert!(ids.iter().all(|id| id == &ids[0]), "{ids:?}");
    // Every request went on the one connection the first made: each answer read to its end
    // (a 202 without a body too) gave it back for the next.
    assert_eq!(server.connections_accepted(), 1);
}

fn a_cancel_handle_kept_past_its_client_keeps_no_connection<D: Driver>() {
    // A signal handler holds a cancel handle to the end; the client it came from is dropped
    // long before. Its pooled connection must close with the client, not with the handle.
    let server = TestServer::start(Script::new());
    let (mut client, _recorder) = new_client::<D>(&server, BUDGET);
    client.call_tool("echo", echo("x")).unwrap();
    assert_eq!(
        server.open_connections(),
        1,
        "the call's connection is kept for the next"
    );
    let cancel = client.cancel_handle();
    drop(client);
    let closed = eventually(Duration::from_secs(5), &mut || {
        server.open_connections() == 0
    });
    // The handle lived until now; a cancel reaches nothing.
    cancel();
    assert!(
        closed,
        "{} connection(s) still open after the client was dropped",
        server.open_connections()
    );
}

fn a_kept_connection_the_server_closed_is_not_used_again<D: Driver>() {
    // After each `tools/call` the server closes its connection without saying so, as one whose
    // keep-alive ran out does; the next call must go on a new one, not fail on the old one.
    let server = TestServer::start(Script::new().close_after("tools/call"));
    let (mut client, _recorder) = new_client::<D>(&server, BUDGET);
    for (n, text) in ["one", "two", "three"].into_iter().enumerate() {
        assert_eq!(client.call_tool("echo", echo(text)).unwrap().text(), text);
        assert!(
            client.wait_until(Duration::from_secs(5), &mut || server.open_connections()
                == 0),
            "the server closed the connection of call {n}"
        );
    }
    assert_eq!(server.connections_accepted(), 3);
    assert_eq!(server.rpc_methods().len(), 5, "{:?}", server.rpc_methods());
}

fn a_404_on_an_expired_session_reinitializes_and_succeeds_inside_one_budget<D: Driver>() {
    let server = TestServer::start(Script::new());
    let (mut client, recorder) = new_client::<D>(&server, BUDGET);
    client.call_tool("echo", echo("one")).unwrap();
    let old = client.session().info().and_then(|i| i.session_id.clone());
    server.expire_sessions();
    recorder.clear();

    let budget = Duration::from_secs(5);
    let started = Instant::now();
    let outcome = client
        .run(
            Action::CallTool {
                name: "echo".into(),
                arguments: echo("two"),
            },
            Budget::from_duration(budget),
        )
        .unwrap();
    assert!(started.elapsed() < budget);
    assert_eq!(outcome.into_call().expect("a call").text(), "two");
    assert_eq!(
        server.rpc_methods(),
        [
            "initialize",
            "notifications/initialized",
            "tools/call",
            "tools/call",
            "initialize",
            "notifications/initialized",
            "tools/call"
        ]
    );
    let new = client.session().info().and_then(|i| i.session_id.clone());
    assert!(new.is_some());
    assert_ne!(new, old);
    // Four legs of one operation under one deadline: the 404, the new handshake, the call.
    let legs = recorder.legs();
    let kinds: Vec<(u32, LegKind, LegEnd)> =
        legs.iter().map(|l| (l.number, l.kind, l.end)).collect();
    assert_eq!(
        kinds,
        [
            (1, LegKind::CallTool, LegEnd::Status(404)),
            (2, LegKind::Initialize, LegEnd::Status(200)),
            (3, LegKind::Initialized, LegEnd::Status(202)),
            (4, LegKind::CallTool, LegEnd::Status(200)),
        ]
    );
    assert!(legs[0].grant <= budget, "{legs:?}");
    assert_one_deadline(&recorder);
}

/// Servers on the TypeScript SDK's example routing (`server-everything`) answer a session they
/// no longer know (after a restart) with 400 and say so in a JSON-RPC error: every operation
/// recovers as from the spec's 404, inside its own budget, and the close of such a session is
/// a close.
fn a_session_a_typescript_server_forgot_is_recovered_as_for_a_404<D: Driver>() {
    let server = TestServer::start(Script::new().unknown_session_as_typescript_400());
    let (mut client, recorder) = new_client::<D>(&server, BUDGET);
    client.call_tool("echo", echo("one")).unwrap();
    server.expire_sessions();
    recorder.clear();

    let started = Instant::now();
    let result = client.call_tool("echo", echo("two"));
    assert!(started.elapsed() < BUDGET);
    assert_eq!(result.expect("recovered").text(), "two");
    let ends: Vec<(LegKind, LegEnd)> = recorder.legs().iter().map(|l| (l.kind, l.end)).collect();
    assert_eq!(
        ends,
        [
            (LegKind::CallTool, LegEnd::Status(400)),
            (LegKind::Initialize, LegEnd::Status(200)),
            (LegKind::Initialized, LegEnd::Status(202)),
            (LegKind::CallTool, LegEnd::Status(200)),
        ]
    );
    assert_one_deadline(&recorder);

    // A listing, after another restart.
    server.expire_sessions();
    let tools = client.list_tools().expect("recovered");
    assert!(!tools.is_empty());

    // The close of a session the server forgot: closed, nothing to report.
    server.expire_sessions();
    client
        .close()
        .expect("a session the server forgot is closed");
    assert!(client.session().info().is_none());
}

fn a_session_lost_twice_in_one_operation_is_expired<D: Driver>() {
    let server = TestServer::start(
        Script::new().delay("notifications/initialized", Duration::from_millis(300)),
    );
    let (mut client, _) = new_client::<D>(&server, BUDGET);
    client.probe().unwrap();
    server.expire_sessions();
    let result = thread::scope(|scope| {
        // The re-established session is lost too: expire it as soon as its
        // notifications/initialized (the fifth request) arrives, while its answer is delayed.
        let expirer = scope.spawn(|| {
            let seen = server.wait_for_requests(5, Duration::from_secs(10));
            server.expire_sessions();
            seen
        });
        let result = client.call_tool("echo", echo("x"));
        assert!(expirer.join().unwrap(), "the second handshake never came");
        result
    });
    assert!(
        matches!(
            result,
            Err(Error::SessionExpired {
                method: "notifications/initialized",
                ..
            })
        ),
        "{result:?}"
    );
    assert_eq!(
        server.rpc_methods(),
        [
            "initialize",
            "notifications/initialized",
            "tools/call",
            "initialize",
            "notifications/initialized"
        ]
    );
}

fn event_stream_answers_carry_notifications_to_the_observer<D: Driver>() {
    let server = TestServer::start(
        Script::new()
            .answer_mode(AnswerMode::Sse)
            .notifications_before_answer(3)
            .event_ids(true),
    );
    let (mut client, recorder) = new_client::<D>(&server, BUDGET);
    let result = client.call_tool("echo", echo("streamed")).unwrap();
    assert_eq!(result.text(), "streamed");
    let events = recorder.events();
    // Three before each answer (initialize and tools/call).
    assert_eq!(events.len(), 6, "{events:?}");
    for event in &events {
        assert!(
            matches!(event, Event::Notification(n) if n.method == "notifications/message"),
            "{event:?}"
        );
    }
}

fn notification_replies_other_than_202_are_accepted<D: Driver>() {
    for reply in [NotificationReply::OkWithBody, NotificationReply::OkEmpty] {
        let server = TestServer::start(Script::new().notification_reply(reply));
        let (mut client, recorder) = new_client::<D>(&server, BUDGET);
        assert_eq!(
            client.call_tool("echo", echo("ok")).unwrap().text(),
            "ok",
            "{reply:?}"
        );
        assert_eq!(recorder.ends()[1], LegEnd::Status(200), "{reply:?}");
    }
}

fn a_server_without_sessions_works<D: Driver>() {
    let server = TestServer::start(Script::new().sessions(false));
    let (mut client, _) = new_client::<D>(&server, BUDGET);
    let info = client.probe().unwrap();
    assert_eq!(info.session_id, None);
    assert_eq!(client.list_tools().unwrap().len(), 4);
    assert_eq!(client.call_tool("echo", echo("ok")).unwrap().text(), "ok");
    assert!(
        server
            .requests()
            .iter()
            .all(|r| r.header("mcp-session-id").is_none())
    );
}

fn run_takes_its_own_budget_and_returns_its_outcome<D: Driver>() {
    let server = TestServer::start(Script::new());
    let (mut client, _) = new_client::<D>(&server, Duration::from_secs(60));
    let budget = Budget::from_secs(5);
    assert!(matches!(
        client.run(Action::Probe, budget),
        Ok(Outcome::Probe(_))
    ));
    assert!(matches!(
        client.run(Action::List(mcp_proto::ListKind::Tools), budget),
        Ok(Outcome::Tools(ref tools)) if tools.len() == 4
    ));
    // A stalled call ends with run's budget, not the configured 60 s.
    server.update_script(|s| s.hostile("tools/call", Hostile::Stall));
    let budget = Duration::from_millis(500);
    let started = Instant::now();
    let result = client.run(echo_call("x"), Budget::from_duration(budget));
    let elapsed = started.elapsed();
    assert!(
        matches!(
            result,
            Err(Error::LegTimedOut {
                method: "tools/call",
                ..
            })
        ),
        "{result:?}"
    );
    assert_cut_at_budget("run", elapsed, budget, MS);
}

fn close_ends_the_session_with_a_delete<D: Driver>() {
    let server = TestServer::start(Script::new());
    let (mut client, recorder) = new_client::<D>(&server, BUDGET);
    client.call_tool("echo", echo("x")).unwrap();
    let id = client.session().info().and_then(|i| i.session_id.clone());
    client.close().unwrap();
    assert!(client.session().info().is_none());
    assert!(server.sessions().is_empty());
    let requests = server.requests();
    let delete = requests.last().unwrap();
    assert_eq!(delete.method, "DELETE");
    assert_eq!(delete.header("mcp-session-id"), id.as_deref());
    assert!(delete.header("content-length").is_none());
    let last = recorder.legs().pop().unwrap();
    assert_eq!((last.kind, last.end), (LegKind::Close, LegEnd::Status(200)));
    // Closing again sends nothing; the next operation starts a new session.
    client.close().unwrap();
    assert_eq!(server.requests().len(), 4);
    client.call_tool("echo", echo("y")).unwrap();
    assert_eq!(server.rpc_methods()[4], "initialize");
    assert_ne!(
        client.session().info().and_then(|i| i.session_id.clone()),
        id
    );

    // A server that refuses DELETE (405) counts as closed.
    let server = TestServer::start(Script::new().allow_delete(false));
    let (mut client, recorder) = new_client::<D>(&server, BUDGET);
    client.probe().unwrap();
    client.close().unwrap();
    assert!(client.session().info().is_none());
    assert_eq!(recorder.ends().last(), Some(&LegEnd::Status(405)));
}

fn a_stream_closed_before_its_answer_is_resumed_with_a_get<D: Driver>() {
    let server = TestServer::start(
        Script::new().hostile("tools/call", Hostile::CloseAfterPriming { retry_ms: 150 }),
    );
    let (mut client, recorder) = new_client::<D>(&server, BUDGET);
    let result = client.call_tool("echo", echo("resumed")).unwrap();
    assert_eq!(result.text(), "resumed");
    assert_eq!(
        server.rpc_methods(),
        [
            "initialize",
            "notifications/initialized",
            "tools/call",
            "GET"
        ]
    );
    let requests = server.requests();
    let (call, get) = (&requests[2], &requests[3]);
    assert_eq!(get.header("last-event-id"), Some("ev-1"));
    assert_eq!(get.header("accept"), Some("text/event-stream"));
    assert_eq!(get.header("mcp-session-id"), call.header("mcp-session-id"));
    assert!(get.header("content-length").is_none(), "a GET has no body");
    assert!(
        get.received_at - call.received_at >= Duration::from_millis(150),
        "the server's retry is honoured"
    );
    let last = recorder.legs().pop().unwrap();
    assert_eq!(
        (last.kind, last.end),
        (LegKind::Resume, LegEnd::Status(200))
    );
    assert_one_deadline(&recorder);
}

fn a_resumption_that_would_outlast_the_budget_ends_at_once<D: Driver>() {
    // The server asks for a 5 s retry; a 1 s budget cannot cover it, so the call ends as
    // the tools/call leg's timeout as soon as the stream closes, without idling, without a GET.
    let call = call_once::<D>(
        Script::new().hostile("tools/call", Hostile::CloseAfterPriming { retry_ms: 5_000 }),
        Duration::from_secs(1),
        |c| c,
    );
    assert!(
        matches!(
            call.result,
            Err(Error::LegTimedOut {
                method: "tools/call",
                ..
            })
        ),
        "{:?}",
        call.result
    );
    assert!(
        call.elapsed < Duration::from_millis(900),
        "{:?}",
        call.elapsed
    );
    assert!(!call.server.rpc_methods().iter().any(|m| m == "GET"));
}

fn a_refused_connection_is_unreachable<D: Driver>() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let mut client = D::connect(&format!("http://127.0.0.1:{port}/mcp")).unwrap();
    let recorder = client.observe();
    let err = client.probe().unwrap_err();
    match &err {
        Error::Unreachable { method, reason, .. } => {
            // The default configuration detects the era: the probe's first leg is modern.
            assert_eq!(*method, "server/discover");
            assert!(!reason.is_empty());
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        recorder.ends(),
        [LegEnd::Transport(TransportErrorKind::Connect)]
    );
}

fn connect_uses_the_default_configuration_and_refuses_unusable_urls<D: Driver>() {
    let server = TestServer::start(Script::new());
    let mut client = D::connect(&server.url()).unwrap();
    assert_eq!(client.session().config().budget(), Budget::DEFAULT);
    assert_eq!(client.session().config().resolution(), Resolution::SECOND);
    assert_eq!(client.list_tools().unwrap().len(), 4);
    for url in ["ftp://example.org/mcp", "not a url", "http:///mcp"] {
        let err = D::connect(url).expect_err(url);
        assert!(matches!(err, Error::InvalidUrl { .. }), "{url}: {err:?}");
    }
}

// ---------------------------------------------------------------------------------------
// The budget in real time.
// ---------------------------------------------------------------------------------------

fn the_seed_sequence_grants_what_the_handshake_left<D: Driver>() {
    let server = TestServer::start(
        Script::new()
            .delay("initialize", Duration::from_millis(400))
            .delay("notifications/initialized", Duration::from_millis(200)),
    );
    let (mut client, recorder) = new_client::<D>(&server, Duration::from_secs(2));
    let started = Instant::now();
    client.call_tool("echo", echo("seed")).unwrap();
    let took = started.elapsed();
    let grants = recorder.grants_ms();
    let elapsed: Vec<u128> = recorder
        .legs()
        .iter()
        .map(|l| l.elapsed.as_millis())
        .collect();
    eprintln!("seed sequence: grants {grants:?} ms, legs took {elapsed:?} ms, call {took:?}");
    assert_eq!(grants.len(), 3);
    // The delays are lower bounds on the legs: a grant can only come out lower than the
    // ideal, by the machine's overhead (generously 300 ms), never higher.
    for (grant, want) in grants.iter().zip([2000u128, 1600, 1400]) {
        assert!(
            *grant <= want && *grant + 300 >= want,
            "grants {grants:?} ms, want about [2000, 1600, 1400]"
        );
    }
    assert!(elapsed[0] >= 400 && elapsed[1] >= 200, "{elapsed:?}");
    assert_one_deadline(&recorder);
}

fn a_spent_budget_sends_nothing_more<D: Driver>() {
    // Whole-second grants: a 1.05 s budget grants initialize 2 s, initialize takes 1.15 s
    // (well inside its grant), and nothing is left for notifications/initialized: refused,
    // never sent.
    let server = TestServer::start(Script::new().delay("initialize", Duration::from_millis(1150)));
    let unit = Duration::from_secs(1);
    let budget = Duration::from_millis(1050);
    let mut client = D::new(config(&server, budget).with_resolution(Resolution::SECOND));
    let recorder = client.observe();
    let started = Instant::now();
    let result = client.call_tool("echo", echo("x"));
    let elapsed = started.elapsed();
    assert!(
        matches!(
            result,
            Err(Error::BudgetExhausted {
                method: "notifications/initialized",
                leg: 2,
                ..
            })
        ),
        "{result:?}"
    );
    assert_within_budget("spent budget", elapsed, budget, unit);
    let legs = recorder.legs();
    assert_eq!(
        legs.len(),
        1,
        "the refused leg is not reported as sent: {legs:?}"
    );
    assert_eq!(legs[0].kind, LegKind::Initialize);
    assert_eq!(legs[0].grant, Duration::from_secs(2));
    // The server's record: initialize only, and nothing more arrives.
    assert!(!server.wait_for_requests(2, Duration::from_millis(300)));
    assert_eq!(server.rpc_methods(), ["initialize"]);
}

fn a_stalled_server_ends_in_leg_timed_out_at_the_budget<D: Driver>() {
    let budget = Duration::from_secs(1);
    let call = call_once::<D>(
        Script::new().hostile("tools/call", Hostile::Stall),
        budget,
        |c| c,
    );
    assert_timed_out("stall", &call, "tools/call", budget, MS);
}

fn a_trickling_server_cannot_stretch_the_leg_past_its_grant<D: Driver>() {
    let budget = Duration::from_secs(1);
    let call = call_once::<D>(
        Script::new().hostile("tools/call", Hostile::Trickle),
        budget,
        |c| c,
    );
    assert_timed_out("trickle", &call, "tools/call", budget, MS);
    // The head arrived: the leg was cut while its body trickled.
    assert_eq!(call.server.rpc_methods(), HANDSHAKE_AND_CALL);
}

fn a_stalled_handshake_leg_times_out_too<D: Driver>() {
    let budget = Duration::from_millis(500);
    let call = call_once::<D>(
        Script::new().hostile("notifications/initialized", Hostile::Stall),
        budget,
        |c| c,
    );
    assert_timed_out(
        "stalled notifications/initialized",
        &call,
        "notifications/initialized",
        budget,
        MS,
    );
    assert_eq!(
        call.server.rpc_methods(),
        ["initialize", "notifications/initialized"]
    );
}

fn a_coarse_resolution_overruns_the_budget_by_at_most_one_unit<D: Driver>() {
    // Quarter-second grants: the call leg is granted what is left of 900 ms rounded up to a
    // quarter second (1 s on a quick machine), so the stalled call ends past the budget, but
    // by less than one unit (plus the margin).
    let unit = Duration::from_millis(250);
    let budget = Duration::from_millis(900);
    let call = call_once::<D>(
        Script::new().hostile("tools/call", Hostile::Stall),
        budget,
        |c| c.with_resolution(Resolution::from_unit(unit).unwrap()),
    );
    assert_timed_out("quarter-second grants", &call, "tools/call", budget, unit);
    for grant in call.recorder.grants_ms() {
        assert_eq!(grant % 250, 0, "{:?}", call.recorder.grants_ms());
    }
}

fn a_stream_kept_open_after_the_answer_does_not_delay_the_result<D: Driver>() {
    let server =
        TestServer::start(Script::new().answer_mode_for("tools/call", AnswerMode::SseKeepOpen));
    let (mut client, _) = new_client::<D>(&server, BUDGET);
    client.probe().unwrap();
    let started = Instant::now();
    let result = client.call_tool("echo", echo("open")).unwrap();
    let took = started.elapsed();
    eprintln!("a stream kept open: the call returned after {took:?} (budget {BUDGET:?})");
    assert_eq!(result.text(), "open");
    // The server keeps that stream open for as long as the client reads it.
    assert!(took < Duration::from_secs(2), "took {took:?}");
    assert_stream_dropped(&mut client, &server);
    // And the session goes on.
    assert_eq!(
        client.call_tool("echo", echo("again")).unwrap().text(),
        "again"
    );
}

/// The client dropped a stream that stays open: the server sees one of its connections close.
#[track_caller]
fn assert_stream_dropped<D: Driver>(client: &mut D, server: &TestServer) {
    assert!(
        client.wait_until(Duration::from_secs(5), &mut || server.open_connections()
            < server.connections_accepted()),
        "{} of {} connections still open",
        server.open_connections(),
        server.connections_accepted()
    );
}

fn a_body_trickling_on_after_its_answer_ends_the_call_at_the_answer<D: Driver>() {
    // The answer comes 1 s into a 4 s budget; then the body goes on, two bytes every half
    // millisecond, until the client leaves. The drain after an answer is bounded by time
    // (`mcp_proto::driver::drain_until`: a moment, never past the leg's end), so the call ends at the
    // answer. A drain bounded by the bytes it reads (64 KiB: 16 s and more of this trickle)
    // or by a wait per read overruns the budget several times over; one bounded by the leg's
    // end alone ends 3 s late, past the bound below by a second and a half.
    let budget = Duration::from_secs(4);
    let answer_at = Duration::from_secs(1);
    let server = TestServer::start(
        Script::new()
            .answer_mode_for("tools/call", AnswerMode::SseTrickleAfterAnswer)
            .delay("tools/call", answer_at),
    );
    let (mut client, recorder) = new_client::<D>(&server, budget);
    client.probe().unwrap();
    let started = Instant::now();
    let result = client.call_tool("echo", echo("trickle"));
    let took = started.elapsed();
    eprintln!("a body trickling after its answer: the call returned after {took:?}");
    assert_eq!(result.expect("the answer came").text(), "trickle");
    assert!(took + EARLY >= answer_at, "{took:?}");
    let bound = answer_at + (budget - answer_at) / 2;
    assert!(
        took < bound,
        "the drain after the answer held the call {took:?} (answer at {answer_at:?}, budget {budget:?})"
    );
    let last = recorder.legs().pop().expect("the call's leg was reported");
    assert_eq!(last.kind, LegKind::CallTool);
    assert_eq!(last.end, LegEnd::Status(200));
    assert_stream_dropped(&mut client, &server);
}

fn a_cancel_from_another_thread_ends_the_call_at_once<D: Driver>() {
    let server = TestServer::start(Script::new().hostile("tools/call", Hostile::Stall));
    let (mut client, recorder) = new_client::<D>(&server, Duration::from_secs(30));
    let cancel = client.cancel_handle();
    let started = Instant::now();
    let (result, returned, fired, open_before) = thread::scope(|scope| {
        let canceller = scope.spawn(|| {
            // Once the call reached the (stalled) server.
            let seen = server.wait_for_requests(3, Duration::from_secs(10));
            // The stalled call's connection, and any idle one the client pools.
            let open = server.open_connections();
            let fired = Instant::now();
            cancel();
            (seen, fired, open)
        });
        let result = client.call_tool("echo", echo("x"));
        let returned = Instant::now();
        let (seen, fired, open) = canceller.join().unwrap();
        assert!(seen, "the call never reached the server");
        (result, returned, fired, open)
    });
    let latency = returned.saturating_duration_since(fired);
    eprintln!("cancel: the call returned {latency:?} after cancel()");
    assert!(
        matches!(
            result,
            Err(Error::Cancelled {
                method: "tools/call",
                ..
            })
        ),
        "{result:?}"
    );
    assert!(latency < Duration::from_secs(1), "latency {latency:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
    let last = recorder.legs().pop().unwrap();
    assert_eq!(
        (last.kind, last.end),
        (LegKind::CallTool, LegEnd::Cancelled)
    );
    // The request in flight was dropped: the server sees its connection close.
    assert!(open_before >= 1);
    assert!(
        client.wait_until(Duration::from_secs(5), &mut || server.open_connections()
            < open_before),
        "still {} connection(s) open, {open_before} before the cancel",
        server.open_connections()
    );
    // Nothing more is sent (no cancel notice unless asked for).
    assert!(!server.wait_for_requests(4, Duration::from_millis(200)));
    // The cancel does not reach the next operation.
    server.update_script(Script::clear_hostile);
    assert_eq!(
        client.call_tool("echo", echo("after")).unwrap().text(),
        "after"
    );
}

fn a_cancel_between_operations_does_nothing<D: Driver>() {
    let server = TestServer::start(Script::new());
    let (mut client, _) = new_client::<D>(&server, BUDGET);
    let cancel = client.cancel_handle();
    cancel();
    cancel();
    assert_eq!(client.call_tool("echo", echo("a")).unwrap().text(), "a");
    cancel();
    assert_eq!(client.list_tools().unwrap().len(), 4);
}

// ---------------------------------------------------------------------------------------
// Hostile servers.
// ---------------------------------------------------------------------------------------

/// What a hostile `tools/call` must end in.
type Check = fn(&Result<CallToolResult, Error>) -> bool;

/// A row of the hostile table: the script, the expected outcome as a pattern and its text.
macro_rules! row {
    ($script:expr => $($expected:tt)+) => {
        ($script, stringify!($($expected)+), (|r: &Result<CallToolResult, Error>| matches!(r, $($expected)+)) as Check)
    };
}

/// The answer cap the table's clients are configured with (not the default).
const CAP: usize = 64 * 1024;

fn every_hostile_mode_ends_in_its_own_typed_error<D: Driver>() {
    let on_call = |mode: Hostile| Script::new().hostile("tools/call", mode);
    let oversize = 1024 * 1024;
    let rows = [
        row!(on_call(Hostile::Stall) => Err(Error::LegTimedOut { method: "tools/call", .. })),
        row!(on_call(Hostile::Trickle) => Err(Error::LegTimedOut { method: "tools/call", .. })),
        row!(on_call(Hostile::EndlessSse) => Err(Error::LegTimedOut { method: "tools/call", .. })),
        row!(on_call(Hostile::Oversize(oversize))
            => Err(Error::AnswerTooLarge { method: "tools/call", limit: CAP, .. })),
        row!(on_call(Hostile::OversizeChunked(oversize))
            => Err(Error::AnswerTooLarge { method: "tools/call", limit: CAP, .. })),
        row!(on_call(Hostile::Oversize(oversize)).answer_mode(AnswerMode::Sse)
            => Err(Error::AnswerTooLarge { method: "tools/call", limit: CAP, .. })),
        row!(on_call(Hostile::WrongId) => Err(Error::Malformed { method: "tools/call", .. })),
        row!(on_call(Hostile::InvalidUtf8) => Err(Error::Malformed { method: "tools/call", .. })),
        row!(on_call(Hostile::NotJson) => Err(Error::Malformed { method: "tools/call", .. })),
        row!(on_call(Hostile::EmptyBody) => Err(Error::Malformed { method: "tools/call", .. })),
        row!(on_call(Hostile::DeepNesting(10_000))
            => Err(Error::Malformed { method: "tools/call", .. })),
        row!(on_call(Hostile::Html)
            => Err(Error::UnsupportedContentType { method: "tools/call", content_type, .. })
                if content_type == "text/html"),
        row!(on_call(Hostile::Status(200))
            => Err(Error::UnsupportedContentType { method: "tools/call", content_type, .. })
                if content_type == "text/plain"),
        row!(on_call(Hostile::Redirect)
            => Err(Error::HttpStatus { method: "tools/call", status: 302, .. })),
        row!(on_call(Hostile::RedirectTo("http://127.0.0.1:9/mcp".into()))
            => Err(Error::HttpStatus { method: "tools/call", status: 302, .. })),
        row!(on_call(Hostile::Status(401))
            => Err(Error::AuthorizationRequired { method: "tools/call", issuer: None, .. })),
        row!(on_call(Hostile::Status(403))
            => Err(Error::HttpStatus { method: "tools/call", status: 403, .. })),
        row!(on_call(Hostile::Status(500))
            => Err(Error::HttpStatus { method: "tools/call", status: 500, .. })),
        row!(on_call(Hostile::Status(503))
            => Err(Error::HttpStatus { method: "tools/call", status: 503, .. })),
        // A 404 to a request without a session is not a lost session: the URL is tried for
        // HTTP+SSE (a GET, refused 405 here), and the error says what each request got...
        row!(Script::new().hostile("initialize", Hostile::Status(404))
            => Err(Error::NoTransport { initialize: 404, .. })),
        // ...and a session that 404s again once re-established cannot be recovered.
        row!(on_call(Hostile::Status(404))
            => Err(Error::SessionExpired { method: "tools/call", .. })),
        row!(on_call(Hostile::ErrorEnvelope { code: -32001, message: "no\r\nway".into() })
            => Err(Error::JsonRpc { method: "tools/call", code: -32001, message, .. })
                if message == "no way"),
        // Modes a client copes with.
        row!(on_call(Hostile::ManyNotifications(50)) => Ok(r) if r.text() == "x"),
        row!(on_call(Hostile::CloseAfterPriming { retry_ms: 50 }) => Ok(r) if r.text() == "x"),
    ];
    let budget = Duration::from_millis(500);
    let mut failures = Vec::new();
    for (script, expected, check) in rows {
        let label = format!("{script:?}");
        let ran = catch_unwind(AssertUnwindSafe(|| {
            call_once::<D>(script, budget, |c| c.with_body_cap(CAP))
        }));
        let call = match ran {
            Ok(call) => call,
            Err(_) => {
                failures.push(format!("{label}: the driver panicked"));
                continue;
            }
        };
        eprintln!("{expected}: {:?} after {:?}", call.result, call.elapsed);
        if !check(&call.result) {
            failures.push(format!("{expected}: got {:?} from {label}", call.result));
        }
        if call.elapsed > budget + MS + support::MARGIN {
            failures.push(format!(
                "{expected}: took {:?} (budget {budget:?})",
                call.elapsed
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn handshake_failures_are_typed<D: Driver>() {
    let call = call_once::<D>(Script::new().protocol_version("1999-01-01"), BUDGET, |c| c);
    assert!(
        matches!(&call.result, Err(Error::UnsupportedProtocolVersion { version, .. }) if version == "1999-01-01"),
        "{:?}",
        call.result
    );
    assert_eq!(call.server.rpc_methods(), ["initialize"]);
    // Session ids that are not 1 to 256 visible ASCII characters are refused, never echoed.
    for raw in ["has space".to_owned(), "s".repeat(300)] {
        let call = call_once::<D>(Script::new().session_id_header(raw.clone()), BUDGET, |c| c);
        assert!(
            matches!(
                call.result,
                Err(Error::Malformed {
                    method: "initialize",
                    ..
                })
            ),
            "{raw:?}: {:?}",
            call.result
        );
        assert_eq!(call.server.rpc_methods(), ["initialize"], "{raw:?}");
    }
}

fn listings_that_do_not_end_are_stopped<D: Driver>() {
    let server = TestServer::start(Script::new().tool_pages(3).repeated_cursor(true));
    let (mut client, _) = new_client::<D>(&server, BUDGET);
    let err = client.list_tools().unwrap_err();
    assert!(
        matches!(&err, Error::RepeatedCursor { cursor, .. } if cursor == "page-2"),
        "{err:?}"
    );

    let server = TestServer::start(Script::new().endless_listing(true));
    let mut client = D::new(config(&server, BUDGET).with_max_pages(5));
    let err = client.list_tools().unwrap_err();
    assert!(
        matches!(err, Error::TooManyPages { pages: 5, .. }),
        "{err:?}"
    );
    let pages = server
        .rpc_methods()
        .iter()
        .filter(|m| *m == "tools/list")
        .count();
    assert_eq!(pages, 5);
}

fn an_endless_event_stream_is_cut_at_the_budget_and_its_events_reported<D: Driver>() {
    let budget = Duration::from_secs(1);
    let call = call_once::<D>(
        Script::new().hostile("tools/call", Hostile::EndlessSse),
        budget,
        |c| c,
    );
    assert_timed_out("endless SSE", &call, "tools/call", budget, MS);
    let events = call.recorder.event_count();
    eprintln!("endless SSE: {events} events reported before the budget ran out");
    assert!(events > 0);
}

/// Asserts `call` ended in `Malformed` on `tools/call`, within its budget.
#[track_caller]
fn assert_malformed_call(what: &str, call: &Call, budget: Duration) {
    assert!(
        matches!(
            call.result,
            Err(Error::Malformed {
                method: "tools/call",
                ..
            })
        ),
        "{what}: {:?}",
        call.result
    );
    assert_within_budget(what, call.elapsed, budget, MS);
}

fn a_wrong_id_is_malformed<D: Driver>() {
    let budget = Duration::from_secs(2);
    for mode in [AnswerMode::Json, AnswerMode::Sse] {
        let call = call_once::<D>(
            Script::new()
                .answer_mode(mode)
                .hostile("tools/call", Hostile::WrongId),
            budget,
            |c| c,
        );
        assert_malformed_call(&format!("wrong id, {mode:?}"), &call, budget);
    }
}

fn invalid_utf8_is_malformed<D: Driver>() {
    let budget = Duration::from_secs(2);
    for mode in [AnswerMode::Json, AnswerMode::Sse] {
        let call = call_once::<D>(
            Script::new()
                .answer_mode(mode)
                .hostile("tools/call", Hostile::InvalidUtf8),
            budget,
            |c| c,
        );
        assert_malformed_call(&format!("invalid UTF-8, {mode:?}"), &call, budget);
    }
}

fn a_json_nesting_depth_of_100_000_is_a_typed_outcome_not_a_crash<D: Driver>() {
    // A stack overflow would abort the whole test binary; reaching the asserts is the point.
    let budget = Duration::from_secs(2);
    for mode in [AnswerMode::Json, AnswerMode::Sse] {
        let call = call_once::<D>(
            Script::new()
                .answer_mode(mode)
                .hostile("tools/call", Hostile::DeepNesting(100_000)),
            budget,
            |c| c,
        );
        let what = format!("nesting depth 100 000, {mode:?}");
        eprintln!("{what}: {:?}", call.result);
        assert!(
            matches!(
                call.result,
                Ok(_)
                    | Err(Error::Malformed {
                        method: "tools/call",
                        ..
                    })
            ),
            "{what}: {:?}",
            call.result
        );
        assert_within_budget(&what, call.elapsed, budget, MS);
    }
}

/// Session ids with CR, LF or NUL inside the header value (a folded line, a bare CR, a bare
/// LF, a NUL), which no HTTP header value may hold.
const BROKEN_SESSION_IDS: [&[u8]; 4] = [
    b"s-1\r\n folded",
    b"s-1\rinjected",
    b"s-1\ninjected",
    b"s-1\0nul",
];

fn a_session_id_with_cr_or_lf_is_never_echoed<D: Driver>() {
    let budget = Duration::from_secs(2);
    for raw in BROKEN_SESSION_IDS {
        let what = format!("session id {:?}", String::from_utf8_lossy(raw));
        let call = call_once::<D>(Script::new().session_id_header(raw), budget, |c| c);
        eprintln!("{what}: {:?}", call.result);
        // A typed error, within the budget, and nothing sent after the initialize that
        // brought the id: no later request carries it.
        assert!(call.result.is_err(), "{what}: {:?}", call.result);
        assert_within_budget(&what, call.elapsed, budget, MS);
        assert_eq!(call.server.rpc_methods(), ["initialize"], "{what}");
        assert!(
            !call.server.wait_for_requests(2, Duration::from_millis(100)),
            "{what}"
        );
    }
    // A CR/LF that splits the header in two ends the id before it: the client sees (and
    // echoes) only `s-1`, never the injected line.
    let call = call_once::<D>(
        Script::new().session_id_header(&b"s-1\r\nX-Injected: yes"[..]),
        budget,
        |c| c,
    );
    assert!(call.result.is_err(), "{:?}", call.result);
    for request in call.server.requests() {
        let id = request.header("mcp-session-id");
        assert!(matches!(id, None | Some("s-1")), "{id:?}");
        assert!(request.header("x-injected").is_none());
    }
}

fn a_session_id_with_cr_or_lf_is_malformed<D: Driver>() {
    let mut failures = Vec::new();
    for raw in BROKEN_SESSION_IDS {
        let call = call_once::<D>(
            Script::new().session_id_header(raw),
            Duration::from_secs(2),
            |c| c,
        );
        if !matches!(
            call.result,
            Err(Error::Malformed {
                method: "initialize",
                ..
            })
        ) {
            failures.push(format!(
                "session id {:?}: {:?}",
                String::from_utf8_lossy(raw),
                call.result
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn a_redirect_to_another_host_is_not_followed_and_leaks_nothing<D: Driver>() {
    // The "other host" is a second test server (another origin): a client following the
    // redirect would send it the call, Authorization header included.
    let other = TestServer::start(Script::new());
    let server =
        TestServer::start(Script::new().hostile("tools/call", Hostile::RedirectTo(other.url())));
    let budget = Duration::from_secs(2);
    let config = config(&server, budget)
        .with_header("Authorization", "Bearer s3cret")
        .unwrap();
    let mut client = D::new(config);
    let recorder = client.observe();
    let started = Instant::now();
    let result = client.call_tool("echo", echo("x"));
    let elapsed = started.elapsed();
    assert!(
        matches!(
            result,
            Err(Error::HttpStatus {
                method: "tools/call",
                status: 302,
                ..
            })
        ),
        "{result:?}"
    );
    assert_within_budget("redirect", elapsed, budget, MS);
    assert_eq!(recorder.ends().last(), Some(&LegEnd::Status(302)));
    // The header was there to leak: every request to the server carried it.
    assert_eq!(server.rpc_methods(), HANDSHAKE_AND_CALL);
    assert!(
        server
            .requests()
            .iter()
            .all(|r| r.header("authorization") == Some("Bearer s3cret"))
    );
    // Nothing reached the other host.
    assert!(!other.wait_for_requests(1, Duration::from_millis(300)));
    assert_eq!(other.connections_accepted(), 0);
}

fn a_thousand_notifications_before_the_answer_all_reach_the_observer<D: Driver>() {
    let budget = Duration::from_secs(10);
    let call = call_once::<D>(
        Script::new().hostile("tools/call", Hostile::ManyNotifications(1000)),
        budget,
        |c| c,
    );
    eprintln!("1 000 notifications: the call took {:?}", call.elapsed);
    assert_eq!(call.result.as_ref().unwrap().text(), "x");
    assert_within_budget("1 000 notifications", call.elapsed, budget, MS);
    let events = call.recorder.events();
    assert_eq!(events.len(), 1000);
    for (i, event) in events.iter().enumerate() {
        match event {
            Event::Notification(n) => {
                assert_eq!(n.method, "notifications/message");
                assert_eq!(n.params["data"], format!("notification {}", i + 1));
            }
            other => panic!("event {i}: {other:?}"),
        }
    }
}

/// The answer cap of clients left at the default configuration.
const DEFAULT_CAP: usize = SessionConfig::DEFAULT_BODY_CAP;

/// Set in the child process that [`a_100_mib_answer_is_refused_at_the_cap_with_bounded_memory`]
/// runs itself in.
const MEMORY_CHILD: &str = "MCP_DRIVERS_MEMORY_CHILD";
/// Marks the child's measurement on its standard output.
const PEAK_GROWTH: &str = "peak-rss-growth-bytes=";

fn a_100_mib_answer_is_refused_at_the_cap_with_bounded_memory<D: Driver>() {
    const NAME: &str = "a_100_mib_answer_is_refused_at_the_cap_with_bounded_memory";
    if std::env::var_os(MEMORY_CHILD).is_some() {
        return hundred_mib_answers::<D>();
    }
    // The peak resident memory of a process only grows, so measure in a fresh one: this test
    // binary again, running only this test, with the child's variable set.
    let test = format!("{}::{NAME}", D::MODULE);
    let output = Command::new(std::env::current_exe().unwrap())
        .args([test.as_str(), "--exact", "--nocapture", "--test-threads=1"])
        .env(MEMORY_CHILD, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "the child process failed:\n{stdout}\n{stderr}"
    );
    // The harness prints the test's name on the same line, before the measurement.
    let growth = stdout
        .split(PEAK_GROWTH)
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("the child reports its measurement");
    eprint!("{stderr}");
    match growth.parse::<u64>() {
        Ok(growth) => {
            eprintln!(
                "100 MiB answers: peak RSS grew by {:.1} MiB (cap {} MiB)",
                growth as f64 / 1048576.0,
                DEFAULT_CAP / 1048576
            );
            assert!(
                growth < (DEFAULT_CAP + 16 * 1024 * 1024) as u64,
                "peak RSS grew by {growth} bytes reading answers capped at {DEFAULT_CAP} bytes"
            );
        }
        Err(_) => eprintln!("100 MiB answers: no VmHWM on this system, memory not measured"),
    }
}

/// The child's part: three 100 MiB answers (with a length, chunked, one SSE event), each
/// refused at the default cap within its budget; prints how much the peak RSS grew.
fn hundred_mib_answers<D: Driver>() {
    const SIZE: usize = 100 * 1024 * 1024;
    let budget = Duration::from_secs(10);
    let before = peak_rss_bytes();
    for (what, script) in [
        (
            "JSON with a Content-Length",
            Script::new().hostile("tools/call", Hostile::Oversize(SIZE)),
        ),
        (
            "chunked JSON",
            Script::new().hostile("tools/call", Hostile::OversizeChunked(SIZE)),
        ),
        (
            "one SSE event",
            Script::new()
                .answer_mode(AnswerMode::Sse)
                .hostile("tools/call", Hostile::Oversize(SIZE)),
        ),
    ] {
        let call = call_once::<D>(script, budget, |c| c);
        eprintln!(
            "100 MiB, {what}: {:?} after {:?}",
            call.result, call.elapsed
        );
        assert!(
            matches!(
                call.result,
                Err(Error::AnswerTooLarge {
                    method: "tools/call",
                    limit: DEFAULT_CAP,
                    ..
                })
            ),
            "{what}: {:?}",
            call.result
        );
        assert_within_budget(what, call.elapsed, budget, MS);
    }
    let growth = before.zip(peak_rss_bytes()).map_or_else(
        || "unknown".to_owned(),
        |(b, a)| a.saturating_sub(b).to_string(),
    );
    println!("{PEAK_GROWTH}{growth}");
}

fn a_close_after_a_spent_budget_sends_no_delete<D: Driver>() {
    let budget = Duration::from_secs(2);
    let server = TestServer::start(Script::new().hostile("tools/call", Hostile::Stall));
    let (mut client, recorder) = new_client::<D>(&server, budget);
    let deadline = client.open_deadline();
    let started = Instant::now();
    let result = client.run_within(echo_call("x"), deadline);
    assert!(
        matches!(result, Err(Error::LegTimedOut { .. })),
        "{result:?}"
    );
    let closed = client.close_within(&deadline);
    let elapsed = started.elapsed();
    assert!(
        matches!(
            closed,
            Err(Error::BudgetExhausted {
                method: "DELETE",
                ..
            })
        ),
        "{closed:?}"
    );
    assert_within_budget("spent close", elapsed, budget, MS);
    assert_eq!(
        server.count("DELETE"),
        0,
        "a spent budget sends nothing more"
    );
    assert!(
        client.session().info().is_none(),
        "the session is forgotten"
    );
    assert_eq!(
        recorder.legs().last().map(|l| l.kind),
        Some(LegKind::CallTool)
    );

    // With budget left, the close gets the rest (at most its cap) and the DELETE goes out.
    let server = TestServer::start(Script::new());
    let (mut client, recorder) = new_client::<D>(&server, budget);
    let deadline = client.open_deadline();
    client.run_within(echo_call("x"), deadline).unwrap();
    client.close_within(&deadline).unwrap();
    assert_eq!(server.count("DELETE"), 1);
    let close = recorder.legs().pop().unwrap();
    assert_eq!(close.kind, LegKind::Close);
    assert!(close.grant <= budget, "{:?}", close.grant);
}
