//! The rows of the 2026-07-28 era and of stdio, run for a short window each against real
//! servers: a modern `mcp-testkit` server in this process (which records what it received),
//! and the testkit's stdio server binary, `mcp-testkit-stdio` (a `cargo test` or
//! `cargo build -p mcp-testkit --bin mcp-testkit-stdio` builds it; `bench/run.sh` builds it
//! in release).

use std::path::{Path, PathBuf};
use std::time::Duration;

use mcp_bench::cases::{ClientKind, Endpoint, Era, Group, RunCfg, sample};
use mcp_bench::stats::comm_of;
use mcp_testkit::{Script, ServerEra, TestServer};

const SHORT: RunCfg = RunCfg {
    warmup: Duration::from_millis(20),
    duration: Duration::from_millis(100),
};

/// The endpoint of a modern server at `url`.
fn modern(url: &str) -> Endpoint<'_> {
    Endpoint::Http {
        url,
        era: Era::Modern,
    }
}

fn stdio_server() -> PathBuf {
    mcp_testkit::stdio_server_path().unwrap_or_else(|e| panic!("{e}"))
}

/// This process's live children named `comm` (exited ones not yet reaped included).
fn children_named(comm: &str) -> usize {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| std::fs::read_to_string(entry.path().join("stat")).ok())
        .filter(|stat| {
            let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
                return false;
            };
            let ppid = stat[close + 2..].split_whitespace().nth(1);
            &stat[open + 1..close] == comm && ppid == Some(me.as_str())
        })
        .count()
}

#[test]
fn a_modern_call_is_one_stateless_post_for_the_drivers_and_their_floors() {
    for group in [Group::Sequential, Group::Cold] {
        for client in [
            ClientKind::Blocking,
            ClientKind::UreqFloor,
            ClientKind::Tokio,
            ClientKind::HyperFloor,
        ] {
            let server = TestServer::start(Script::new().era(ServerEra::Modern));
            let url = server.url();
            let measured = sample(group, client, modern(&url), SHORT)
                .unwrap_or_else(|e| panic!("{} {}: {e}", group.name(), client.label()));
            let ops = measured.latencies.len() as u64 + measured.warm_ops;
            let case = format!("{} {}", group.name(), client.label());
            assert!(ops > 0, "{case}");
            assert_eq!(server.count("initialize"), 0, "{case}: no handshake");
            // A sequential case may open with one call before the clock.
            let calls = server.count("tools/call") as u64;
            assert!(
                (ops..=ops + 1).contains(&calls),
                "{case}: one POST per call: {calls} for {ops}"
            );
            assert_eq!(
                server.requests().len() as u64,
                calls,
                "{case}: and nothing else"
            );
            server.shutdown();
        }
    }
}

#[test]
fn rmcp_runs_no_modern_case_and_says_why() {
    let server = TestServer::start(Script::new().era(ServerEra::Modern));
    let url = server.url();
    let err = sample(Group::Sequential, ClientKind::Rmcp, modern(&url), SHORT).unwrap_err();
    assert!(err.contains("2026-07-28"), "{err}");
    assert!(server.requests().is_empty(), "nothing was sent");
    server.shutdown();
}

#[test]
fn every_stdio_client_calls_and_leaves_no_server_process_behind() {
    let path = stdio_server();
    let comm = comm_of(&path);
    for group in [Group::Sequential, Group::Cold] {
        for client in [
            ClientKind::Blocking,
            ClientKind::PipeFloor,
            ClientKind::Tokio,
            ClientKind::TokioPipeFloor,
            ClientKind::Rmcp,
        ] {
            let case = format!("{} {}", group.name(), client.label());
            let measured = sample(group, client, Endpoint::Stdio(&path), SHORT)
                .unwrap_or_else(|e| panic!("{case}: {e}"));
            assert!(!measured.latencies.is_empty(), "{case}");
            assert_eq!(children_named(&comm), 0, "{case}: every server ended");
        }
    }
}

#[test]
fn a_stdio_case_that_cannot_start_its_server_fails_with_the_path() {
    let missing = Path::new("/nonexistent/mcp-testkit-stdio");
    for client in [
        ClientKind::PipeFloor,
        ClientKind::TokioPipeFloor,
        ClientKind::Rmcp,
    ] {
        let err = sample(Group::Cold, client, Endpoint::Stdio(missing), SHORT).unwrap_err();
        assert!(err.contains("/nonexistent/"), "{}: {err}", client.label());
    }
    for client in [ClientKind::Blocking, ClientKind::Tokio] {
        let err = sample(Group::Cold, client, Endpoint::Stdio(missing), SHORT).unwrap_err();
        assert!(!err.is_empty(), "{}", client.label());
    }
    let err = sample(
        Group::InFlight(16),
        ClientKind::Tokio,
        Endpoint::Stdio(missing),
        SHORT,
    )
    .unwrap_err();
    assert!(err.contains("over stdio"), "{err}");
}
