//! What only the blocking driver has: ureq's connection pool carrying every leg of every
//! operation, and TLS failing before any HTTP.
//!
//! Operations, the session, the typed errors of hostile servers and the budget in real time
//! are in the suite shared with the tokio driver, `tests/suites/drivers.rs` of `mcp-testkit`.

mod common;

use std::time::Duration;

use common::{client, text_args};
use mcp_driver_blocking::Client;
use mcp_proto::{Action, Budget, Error, LegEnd, SessionConfig, TransportErrorKind};
use mcp_testkit::{Script, TestServer};

#[test]
fn the_pool_carries_every_leg_of_every_operation_on_one_connection() {
    let server = TestServer::start(Script::new());
    let (client, _) = client(&server, Duration::from_secs(10));
    client.call_tool("echo", text_args("one")).unwrap();
    assert!(!client.list_tools().unwrap().is_empty());
    let sum = client
        .run(
            Action::CallTool {
                name: "add".into(),
                arguments: serde_json::from_str(r#"{"a": 2, "b": 3}"#).unwrap(),
            },
            Budget::from_secs(5),
        )
        .unwrap()
        .into_call()
        .unwrap();
    assert_eq!(sum.text(), "5");
    assert_eq!(server.rpc_methods().len(), 5);
    assert_eq!(server.connections_accepted(), 1);
}

#[test]
fn an_https_url_speaking_to_a_plain_http_server_fails_in_tls() {
    // The TLS handshake meets an HTTP server: a typed TLS failure, not a panic.
    let server = TestServer::start(Script::new());
    let url = format!("https://127.0.0.1:{}/mcp", server.port());
    let client = Client::new(
        SessionConfig::new(&url)
            .unwrap()
            .with_budget(Budget::from_secs(5))
            .with_protocol_version(mcp_proto::ProtocolVersion::LATEST),
    );
    let recorder = common::Recorder::default();
    client.set_observer(recorder.clone());
    let err = client.probe().unwrap_err();
    let handshake = mcp_proto::TlsProblem::Handshake;
    assert!(
        matches!(err, Error::Tls { problem, .. } if problem == handshake),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("check that the URL's port serves HTTPS")
    );
    assert_eq!(
        recorder.ends(),
        [LegEnd::Transport(TransportErrorKind::Tls(handshake))]
    );
}

/// How many threads of this process are named `name` (Linux keeps each one's name in
/// `/proc/self/task/<tid>/comm`).
#[cfg(target_os = "linux")]
fn threads_named(name: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task lists this process's threads")
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.trim_end() == name)
        .count()
}

#[cfg(target_os = "linux")]
#[test]
fn clients_share_one_leg_end_thread_for_the_whole_process() {
    // A thread per client made every cold call pay for a thread's start and end, and kept one
    // thread alive per idle client.
    let server = TestServer::start(Script::new());
    let clients: Vec<Client> = (0..8)
        .map(|_| client(&server, Duration::from_secs(10)).0)
        .collect();
    for client in &clients {
        client.call_tool("echo", text_args("one")).unwrap();
    }
    assert_eq!(threads_named("mcp-leg-end"), 1);
}
