//! `mcp-bench client-child`: a Rust client of the cross-SDK table, spoken to as `mcp-bench run`
//! speaks to every client child (the protocol of `mcp_bench::sdks`), against a loopback
//! `mcp-testkit` server that counts what it received.

use std::io::{BufRead, BufReader, Lines, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use mcp_bench::sdks::{parse_ready, parse_result};
use mcp_bench::stats::Sample;
use mcp_testkit::{Script, TestServer};

/// A started child, past its `ready` line.
struct Started {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    ready: String,
}

fn start(kind: &str, url: &str, case: &str) -> Started {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-bench"))
        .args(["client-child", kind, url, case, "20", "200"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("mcp-bench starts");
    let stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let ready = parse_ready(&lines.next().unwrap().unwrap()).expect("a ready line");
    Started {
        child,
        stdin,
        lines,
        ready,
    }
}

impl Started {
    /// Says go, reads the result line, closes stdin; the child must then exit cleanly.
    fn result(mut self) -> Result<Sample, String> {
        writeln!(self.stdin, "go").unwrap();
        let line = self.lines.next().unwrap().unwrap();
        drop(self.stdin);
        assert!(self.child.wait().unwrap().success(), "it exits once told");
        parse_result(&line)
    }
}

#[test]
fn sixteen_threads_on_one_blocking_client_make_one_handshake() {
    let server = TestServer::start(Script::new());
    let started = start("blocking", &server.url(), "shared-16");
    assert!(
        started.ready.starts_with("mcp-driver-blocking "),
        "{}",
        started.ready
    );
    assert_eq!(server.count("initialize"), 0, "nothing is sent before go");
    let sample = started.result().expect("the case runs");
    assert!(sample.latencies.len() >= 16, "every thread timed a call");
    assert_eq!(
        server.count("initialize"),
        1,
        "the 16 threads share one session"
    );
    assert!(server.count("tools/call") as u64 > sample.warm_ops);
}

#[test]
fn a_closed_cold_operation_ends_the_session_it_opened() {
    for kind in ["blocking", "tokio", "rmcp"] {
        let server = TestServer::start(Script::new());
        let sample = start(kind, &server.url(), "cold-closed")
            .result()
            .expect("the case runs");
        let operations = sample.latencies.len() + sample.warm_ops as usize;
        assert_eq!(server.count("initialize"), operations, "{kind}: one each");
        assert_eq!(server.count("tools/call"), operations, "{kind}");
        assert_eq!(server.count("DELETE"), operations, "{kind}: each ended");
    }
}

#[test]
fn a_case_that_fails_says_why_on_its_result_line() {
    let server = TestServer::start(Script::new());
    let url = server.url();
    server.shutdown();
    let err = start("tokio", &url, "sequential").result().unwrap_err();
    assert!(!err.is_empty());
    assert!(!err.contains("latencies_us"), "{err}");
}
