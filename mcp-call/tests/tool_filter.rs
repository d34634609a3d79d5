//! `--tool` and `--ignore-tool` (and a `--config` entry's `tools` and `ignoreTools`), end to
//! end: a hidden tool is left out of `tools` and of the bridge's `tools/list`, and its call is
//! refused without a request reaching the server. Servers are mcp-testkit on loopback.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use mcp_testkit::{Script, TestServer};
use serde_json::{Value, json};

mod common;
use common::{code, mcp_call, mcp_call_command, stderr, stdout};

#[test]
fn tools_leaves_out_what_the_filters_hide() {
    let server = TestServer::start(Script::new().tool_pages(2));
    let url = server.url();
    let out = mcp_call(&[
        "--url",
        &url,
        "--ignore-tool",
        "f?il",
        "--ignore-tool",
        "sl*",
        "tools",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "echo\nadd\n");

    // An allowlist: only what matches one of its patterns; with --ignore-tool, minus that.
    let out = mcp_call(&["--url", &url, "--tool", "*d*", "--tool", "echo", "tools"]);
    assert_eq!(stdout(&out), "echo\nadd\n", "{}", stderr(&out));
    let out = mcp_call(&[
        "--url",
        &url,
        "--tool",
        "*",
        "--ignore-tool",
        "echo",
        "--json",
        "tools",
    ]);
    let listed: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let names: Vec<&str> = (listed.as_array().unwrap().iter())
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["add", "sleep", "fail"]);
    // Case-sensitive, as tool names are.
    let out = mcp_call(&["--url", &url, "--ignore-tool", "ECHO", "tools"]);
    assert_eq!(stdout(&out), "echo\nadd\nsleep\nfail\n");
}

#[test]
fn a_call_of_a_hidden_tool_exits_2_and_the_server_is_not_asked() {
    let server = TestServer::start(Script::new());
    let url = server.url();
    let out = mcp_call(&["--url", &url, "--ignore-tool", "f*", "call", "fail"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    let err = stderr(&out);
    assert!(err.contains("\"fail\" is filtered here"), "{err}");
    assert!(err.contains("--ignore-tool \"f*\""), "{err}");
    let out = mcp_call(&[
        "--url", &url, "--tool", "echo", "--tool", "a?d", "--json", "call", "sleep",
    ]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let error: Value = serde_json::from_str(stderr(&out).trim()).unwrap();
    assert_eq!(error["error"]["kind"], "usage");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("matches no --tool pattern (\"echo\", \"a?d\")"),
        "{message}"
    );
    // Not one request, not even the handshake.
    assert_eq!(server.rpc_methods(), Vec::<String>::new());

    // A tool the filters let through is called as ever.
    let out = mcp_call(&[
        "--url",
        &url,
        "--tool",
        "a?d",
        "--ignore-tool",
        "f*",
        "call",
        "add",
        r#"{"a":2,"b":3}"#,
    ]);
    assert_eq!(
        (code(&out), stdout(&out).as_str()),
        (0, "5\n"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_config_entry_s_filters_apply_with_the_flags() {
    let server = TestServer::start(Script::new());
    let dir = std::env::temp_dir().join(format!("mcp-call-filter-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("servers.json");
    let config = json!({"mcpServers": {
        "guarded": {"url": server.url(), "tools": ["e*", "a*", "sleep"], "ignoreTools": ["sleep"]},
    }});
    std::fs::write(&path, config.to_string()).unwrap();
    let file = path.to_str().unwrap();
    let out = mcp_call(&["--config", file, "--server", "guarded", "tools"]);
    assert_eq!(stdout(&out), "echo\nadd\n", "{}", stderr(&out));
    // The flags hide more; they cannot show what the entry hides.
    let out = mcp_call(&[
        "--config",
        file,
        "--server",
        "guarded",
        "--ignore-tool",
        "echo",
        "--tool",
        "*",
        "tools",
    ]);
    assert_eq!(stdout(&out), "add\n", "{}", stderr(&out));
    let out = mcp_call(&[
        "--config", file, "--server", "guarded", "--tool", "sleep", "call", "sleep",
    ]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("\"ignoreTools\" of --server \"guarded\" \"sleep\""),
        "{}",
        stderr(&out)
    );
    assert_eq!(server.count("tools/call"), 0);
    // An entry's filter that is not an array of patterns is a usage error naming it.
    let broken = json!({"mcpServers": {"guarded": {"url": server.url(), "ignoreTools": "sleep"}}});
    std::fs::write(&path, broken.to_string()).unwrap();
    let out = mcp_call(&["--config", file, "--server", "guarded", "tools"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("\"ignoreTools\" is not an array"),
        "{}",
        stderr(&out)
    );
    let _ = std::fs::remove_dir_all(&dir);
    // An empty pattern is refused by the flag too.
    let out = mcp_call(&["--ignore-tool", "", "tools"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
}

/// A host in front of `mcp-call bridge`: writes JSON-RPC lines to its stdin, reads its answers.
struct Host {
    bridge: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<Value>,
}

impl Host {
    fn start(args: &[&str]) -> Self {
        let mut bridge = mcp_call_command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("mcp-call bridge starts");
        let stdin = bridge.stdin.take();
        let out = BufReader::new(bridge.stdout.take().unwrap());
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                let message = serde_json::from_str(&line).expect("stdout carries only JSON-RPC");
                if tx.send(message).is_err() {
                    return;
                }
            }
        });
        Self {
            bridge,
            stdin,
            lines,
        }
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends the request and waits for its answer (what comes before it, a notification, is
    /// skipped).
    fn ask(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let message = (self.lines.recv_timeout(Duration::from_secs(20)))
                .unwrap_or_else(|_| panic!("no answer to {method}"));
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    /// EOF on the bridge's stdin: it ends.
    fn close(mut self) {
        drop(self.stdin.take());
        let status = self.bridge.wait().unwrap();
        assert!(status.success(), "{status}");
    }
}

#[test]
fn the_bridge_hides_the_tool_from_the_host_and_refuses_its_call_without_the_upstream() {
    for driver in ["blocking", "tokio"] {
        // Two pages upstream: the hidden tools are left out of the whole listing.
        let server = TestServer::start(Script::new().tool_pages(2));
        let url = server.url();
        let mut host = Host::start(&[
            "--url",
            &url,
            "--driver",
            driver,
            "--ignore-tool",
            "fail",
            "--ignore-tool",
            "s*",
            "bridge",
        ]);
        let init = host.ask(
            1,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "host", "version": "1"}}),
        );
        assert!(
            init["result"]["capabilities"]["tools"].is_object(),
            "{init}"
        );
        host.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));

        let listed = host.ask(2, "tools/list", json!({}));
        let names: Vec<&str> = (listed["result"]["tools"].as_array())
            .unwrap_or_else(|| panic!("{listed}"))
            .iter()
            .map(|tool| tool["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["echo", "add"], "{driver}");

        let refused = host.ask(3, "tools/call", json!({"name": "sleep", "arguments": {}}));
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("\"sleep\" is filtered by the bridge")
                && message.contains("--ignore-tool \"s*\""),
            "{message}"
        );
        let called = host.ask(
            4,
            "tools/call",
            json!({"name": "add", "arguments": {"a": 2, "b": 3}}),
        );
        assert_eq!(called["result"]["structuredContent"]["sum"], 5, "{called}");
        host.close();
        // Only the allowed call reached the upstream.
        assert_eq!(server.count("tools/call"), 1, "{:?}", server.rpc_methods());
        assert_eq!(server.count("tools/list"), 2, "both pages");
    }
}
