//! The `mcp-call` contract, end to end: commands, `--json`, `--trace`, every exit code,
//! `--repeat` on one session, and usage errors. Servers are mcp-testkit on loopback.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use mcp_testkit::{Hostile, Script, ServerEra, TestServer};

mod common;
use common::{code, mcp_call, mcp_call_command, stderr, stdout};

#[test]
fn a_401_from_a_server_without_authorization_metadata_names_the_missing_endpoint() {
    // No resource metadata, no authorization server metadata: the 2025-03-26 default
    // endpoints are tried, inside the budget, and the one that is missing is named.
    // The server's origin stands in for its authorization server then: that is whose
    // failure it is (exit 8), not the MCP server's answer (5).
    let server = TestServer::start(Script::default().hostile("tools/call", Hostile::Status(401)));
    let out = mcp_call(&["--url", &server.url(), "--trace", "call", "echo"]);
    assert_eq!(code(&out), 8, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("oauth:resource-metadata"), "{err}");
    assert!(err.contains("/register") && err.contains("404"), "{err}");
}

#[test]
fn logout_forgets_without_asking_the_server() {
    let server = TestServer::start(Script::default());
    let out = mcp_call(&["--url", &server.url(), "logout"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("logged out of"), "{}", stderr(&out));
    assert!(server.requests().is_empty());
}

#[test]
fn the_readme_command_runs_against_the_demo_server() {
    let out = mcp_call(&["--trace", "call", "echo", r#"{"text":"hello"}"#]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "hello\n");
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    // The modern request first; the demo server speaks only the legacy era and refuses it, so
    // the handshake follows inside the same budget; then the session is ended on the way out
    // (an operation of its own, under the close's small grant).
    assert_eq!(lines.len(), 5, "{lines:?}");
    assert!(
        lines[4].starts_with("leg=1 method=close granted_ms=2000 "),
        "{}",
        lines[4]
    );
    assert!(lines[4].ends_with(" status=200"), "{}", lines[4]);
    for (line, method) in lines[..4].iter().zip([
        "tools/call",
        "initialize",
        "notifications/initialized",
        "tools/call",
    ]) {
        let prefix = format!("method={method} granted_ms=");
        assert!(line.contains(&prefix), "{line}");
        assert!(line.contains(" elapsed_ms="), "{line}");
    }
    assert!(lines[0].starts_with("leg=1 method=tools/call granted_ms=20000 elapsed_ms="));
    assert!(lines[0].ends_with(" status=400"));
    assert!(lines[1].starts_with("leg=2 method=initialize granted_ms="));
    assert!(lines[1].ends_with(" status=200"));
    assert!(lines[2].ends_with(" status=202"));
    assert!(lines[3].ends_with(" status=200"));
}

#[test]
fn a_dual_era_server_answers_a_tool_call_in_one_leg() {
    let server = TestServer::start(Script::new().era(ServerEra::Dual));
    let out = mcp_call(&[
        "--url",
        &server.url(),
        "--trace",
        "call",
        "echo",
        r#"{"text":"x"}"#,
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "x\n");
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("leg=1 method=tools/call granted_ms=20000 ") && err.contains(" status=200"),
        "{err}"
    );
    assert_eq!(server.rpc_methods(), ["tools/call"]);
    let out = mcp_call(&["--url", &server.url(), "ping"]);
    assert_eq!(
        stdout(&out),
        "mcp-testkit 0.1.0 (protocol 2026-07-28, modern era)\n"
    );
}

#[test]
fn ping_prints_the_version_and_the_server() {
    let out = mcp_call(&["ping"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "mcp-call demo 0.1.0 (protocol 2025-11-25, legacy era)\n"
    );
    let out = mcp_call(&["--json", "ping"]);
    let value: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value["protocolVersion"], "2025-11-25");
    assert_eq!(value["era"], "legacy");
    assert_eq!(value["serverInfo"]["name"], "mcp-call demo");
}

#[test]
fn tools_prints_one_name_per_line_across_pages() {
    let server = TestServer::start(Script::new().tool_pages(3));
    let out = mcp_call(&["--url", &server.url(), "--protocol", "2025-11-25", "tools"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let names: Vec<String> = stdout(&out).lines().map(str::to_owned).collect();
    for tool in ["echo", "add", "sleep", "fail"] {
        assert!(names.contains(&tool.to_owned()), "{names:?}");
    }
    let pages = server
        .rpc_methods()
        .iter()
        .filter(|m| *m == "tools/list")
        .count();
    assert_eq!(pages, 3);
    let out = mcp_call(&["--url", &server.url(), "--json", "tools"]);
    let value: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(
        value
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "add" && t["inputSchema"].is_object())
    );
}

#[test]
fn call_prints_text_or_the_whole_result() {
    let server = TestServer::start(Script::new());
    let out = mcp_call(&["--url", &server.url(), "call", "add", r#"{"a":2,"b":3}"#]);
    assert_eq!(
        (code(&out), stdout(&out).as_str()),
        (0, "5\n"),
        "{}",
        stderr(&out)
    );
    let out = mcp_call(&[
        "--url",
        &server.url(),
        "--json",
        "call",
        "add",
        r#"{"a":2,"b":3}"#,
    ]);
    let value: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value["structuredContent"]["sum"], 5);
}

#[test]
fn a_tool_error_exits_1_and_still_prints_the_text() {
    let out = mcp_call(&["call", "fail"]);
    assert_eq!(code(&out), 1);
    assert_eq!(stdout(&out), "the tool failed on purpose\n");
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["call", "echo", "not json"][..],
        &["call", "echo", "[1,2]"],
        &["--timeout", "soon", "ping"],
        &["--timeout", "0", "ping"],
        &["--timeout", "-1", "ping"],
        &["--timeout", "1e-10", "ping"],
        &["--resolution", "us", "ping"],
        &["--driver", "curl", "ping"],
        &["--header", "no colon", "ping"],
        &["--header", "Accept: text/html", "ping"],
        &["--repeat", "0", "ping"],
        &["--protocol", "1999-01-01", "ping"],
        &["--protocol", "latest", "ping"],
        &["--url", "ftp://example.org/mcp", "ping"],
        &["--bogus", "ping"],
        &["frobnicate"],
        &[],
    ] {
        let out = mcp_call(args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).is_empty(), "{args:?} says why");
    }
}

#[test]
fn the_modern_protocol_sends_one_request_without_a_handshake() {
    // The demo server speaks only the legacy era: the one modern request is refused, and that
    // refusal is all that reached it (no handshake was attempted first).
    let server = TestServer::start(Script::new());
    let out = mcp_call(&[
        "--url",
        &server.url(),
        "--protocol",
        "2026-07-28",
        "--trace",
        "call",
        "echo",
    ]);
    assert_eq!(server.rpc_methods(), ["tools/call"], "{}", stderr(&out));
    let call = &server.requests()[0];
    assert_eq!(call.header("mcp-protocol-version"), Some("2026-07-28"));
    assert_eq!(call.header("mcp-method"), Some("tools/call"));
    assert_eq!(call.header("mcp-name"), Some("echo"));
    assert_ne!(
        code(&out),
        0,
        "a legacy server refuses it: {}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("leg=1 method=tools/call"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_spent_budget_exits_3_and_the_refused_request_is_not_sent() {
    // 1 s budget at whole-second resolution: initialize takes 0.7 s, the notification is
    // granted the rounded-up 1 s and takes 0.5 s, so nothing is left for tools/call.
    let server = TestServer::start(
        Script::new()
            .delay("initialize", Duration::from_millis(700))
            .delay("notifications/initialized", Duration::from_millis(500)),
    );
    let out = mcp_call(&[
        "--url",
        &server.url(),
        "--timeout",
        "1",
        "--protocol",
        "2025-11-25",
        "--trace",
        "call",
        "echo",
    ]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("leg=3 method=tools/call refused budget_ms=1000"),
        "{err}"
    );
    assert!(err.contains("so the server was not asked"), "{err}");
    // Nothing more was asked, the close included: a spent budget sends no DELETE (the
    // server's idle timeout ends the session), and the trace says so.
    assert_eq!(
        server.rpc_methods(),
        ["initialize", "notifications/initialized"]
    );
    assert!(err.contains("method=DELETE refused"), "{err}");
}

#[test]
fn a_stalled_server_exits_4_within_the_budget() {
    let server = TestServer::start(Script::new().hostile("tools/call", Hostile::Stall));
    let started = Instant::now();
    let out = mcp_call(&[
        "--url",
        &server.url(),
        "--timeout",
        "1",
        "--resolution",
        "ms",
        "call",
        "echo",
    ]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        stderr(&out).contains("did not finish answering tools/call"),
        "{}",
        stderr(&out)
    );
    let out = mcp_call(&["--url", "http://127.0.0.1:1/mcp", "ping"]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert!(stderr(&out).contains("could not be reached"));
}

#[test]
fn a_server_error_exits_5_with_one_sentence() {
    let server = TestServer::start(Script::new().hostile("tools/call", Hostile::Status(500)));
    let out = mcp_call(&["--url", &server.url(), "call", "echo"]);
    assert_eq!(code(&out), 5);
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!(
            "MCP server \"127.0.0.1:{}\" answered tools/call with HTTP status 500",
            server.port()
        )),
        "{err}"
    );
    let healthy = TestServer::start(Script::new());
    let out = mcp_call(&["--url", &healthy.url(), "call", "nope"]);
    assert_eq!(code(&out), 5);
    assert!(
        stderr(&out).contains("JSON-RPC error -32602"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn repeat_reuses_the_session_and_both_drivers_agree() {
    for driver in ["blocking", "tokio"] {
        let server = TestServer::start(Script::new());
        let out = mcp_call(&[
            "--url",
            &server.url(),
            "--driver",
            driver,
            "--repeat",
            "3",
            "call",
            "echo",
            r#"{"text":"x"}"#,
        ]);
        assert_eq!(code(&out), 0, "{driver}: {}", stderr(&out));
        assert_eq!(stdout(&out), "x\nx\nx\n");
        // The era is learnt once: only the first call tries the modern request.
        assert_eq!(
            server.rpc_methods(),
            [
                "tools/call",
                "initialize",
                "notifications/initialized",
                "tools/call",
                "tools/call",
                "tools/call",
                "DELETE"
            ],
            "{driver}"
        );
    }
}

#[test]
fn parallel_runs_share_one_session_and_one_handshake_on_both_drivers() {
    for driver in ["blocking", "tokio"] {
        // Each call takes 250 ms: one after another, 40 would take 10 s; 8 at a time, 1.25 s.
        let server =
            TestServer::start(Script::new().delay("tools/call", Duration::from_millis(250)));
        let started = Instant::now();
        let out = mcp_call(&[
            "--url",
            &server.url(),
            "--driver",
            driver,
            "--protocol",
            "2025-11-25",
            "--repeat",
            "40",
            "--parallel",
            "8",
            "call",
            "echo",
            r#"{"text":"x"}"#,
        ]);
        let took = started.elapsed();
        assert_eq!(code(&out), 0, "{driver}: {}", stderr(&out));
        assert_eq!(stdout(&out), "x\n".repeat(40), "{driver}");
        assert!(
            // A slow machine may take several times longer and still be well under serial.
            took < Duration::from_secs(6),
            "{driver}: 8 in flight, yet {took:?}"
        );
        assert_eq!(
            server.count("initialize"),
            1,
            "{driver}: {:?}",
            server.trail()
        );
        assert_eq!(server.count("tools/call"), 40, "{driver}");
        assert_eq!(server.sessions().len(), 0, "{driver}: closed at the end");
        let err = stderr(&out);
        assert!(
            err.lines()
                .last()
                .unwrap()
                .starts_with("summary: runs=40 errors=0 "),
            "{driver}: {err}"
        );
    }
}

#[test]
fn the_environment_budget_is_read_leniently() {
    for (raw, granted) in [
        ("3", "granted_ms=3000"),
        ("soon", "granted_ms=20000"),
        ("2.5", "granted_ms=2000"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_mcp-call"))
            .args(["--trace", "ping"])
            .env("MCP_OPERATION_TIMEOUT", raw)
            .output()
            .unwrap();
        assert_eq!(code(&out), 0);
        assert!(
            stderr(&out).lines().next().unwrap().contains(granted),
            "{raw}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn ctrl_c_cancels_and_exits_6() {
    let server = TestServer::start(Script::new().hostile("tools/call", Hostile::Stall));
    let child = Command::new(env!("CARGO_BIN_EXE_mcp-call"))
        .args([
            "--url",
            &server.url(),
            "--protocol",
            "2025-11-25",
            "--json",
            "call",
            "echo",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the call is on the wire (a signal, not a sleep).
    assert!(server.wait_for_requests(3, Duration::from_secs(10)));
    let sent = Instant::now();
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert!(sent.elapsed() < Duration::from_secs(5));
    let error = json_error(&out);
    assert_eq!(error["kind"], "cancelled");
    assert_eq!(error["exit"], 6);
    // The session was ended on the way out, after the cancel too.
    assert_eq!(
        server.rpc_methods().last().map(String::as_str),
        Some("DELETE")
    );
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("was cancelled by the caller"),
        "{error}"
    );
}

/// A Ctrl-C that comes between two runs of a `--repeat` series (here: while the command waits
/// to write a result to a stdout nobody reads yet) stops the series, and the session is still
/// closed. The cancel reached only a run in flight before, so this one was lost and the series
/// went on. The signal is handled on a thread of its own, which may run after the test lets the
/// command write on; so how many runs went out after it is not asserted here (that a run the
/// cancel came before sends nothing is `driver`'s unit test).
#[cfg(target_os = "linux")]
#[test]
fn ctrl_c_between_repeated_runs_stops_the_series() {
    let arguments = format!(r#"{{"text":"{}"}}"#, "x".repeat(4000));
    for driver in ["blocking", "tokio"] {
        let server = TestServer::start(Script::default());
        let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-call"))
            .args(["--driver", driver, "--url", &server.url()])
            .args(["--protocol", "2025-11-25", "--json", "--repeat", "1000000"])
            .args(["call", "echo", &arguments])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Blocked writing a result to the full pipe: between two runs, none in flight.
        let wchan = format!("/proc/{}/wchan", child.id());
        let began = Instant::now();
        while !std::fs::read_to_string(&wchan)
            .unwrap_or_default()
            .contains("pipe_write")
        {
            assert!(
                began.elapsed() < Duration::from_secs(30),
                "{driver}: never blocked"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        let status = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        // Read what it wrote, so that it can go on.
        let mut stdout = child.stdout.take().unwrap();
        let drain = std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
        let signalled = Instant::now();
        let exited = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break Some(status);
            }
            if signalled.elapsed() > Duration::from_secs(20) {
                break None;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let Some(status) = exited else {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("{driver}: the series went on after the Ctrl-C");
        };
        drain.join().unwrap().unwrap();
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert_eq!(status.code(), Some(6), "{driver}: {err}");
        assert!(err.contains(r#""kind":"cancelled""#), "{driver}: {err}");
        // The session was closed after it.
        assert_eq!(
            server.rpc_methods().last().map(String::as_str),
            Some("DELETE"),
            "{driver}"
        );
    }
}

/// The one JSON object `--json` writes on stderr for an error.
fn json_error(out: &Output) -> serde_json::Value {
    let err = stderr(out);
    assert_eq!(err.lines().count(), 1, "{err}");
    let value: serde_json::Value = serde_json::from_str(&err).expect("one JSON object");
    value["error"].clone()
}

#[test]
fn json_errors_are_one_object_per_exit_code() {
    // 2: usage (clap's, and a URL that cannot be used).
    let out = mcp_call(&["--json", "--timeout", "soon", "ping"]);
    assert_eq!(code(&out), 2);
    let error = json_error(&out);
    assert_eq!(
        (error["kind"].as_str(), error["exit"].as_u64()),
        (Some("usage"), Some(2))
    );
    let out = mcp_call(&["--json", "--url", "ftp://example.org/mcp", "ping"]);
    assert_eq!(json_error(&out)["kind"], "invalid_url");

    // 3: the budget.
    let slow = TestServer::start(
        Script::new()
            .delay("initialize", Duration::from_millis(700))
            .delay("notifications/initialized", Duration::from_millis(500)),
    );
    let url = slow.url();
    let out = mcp_call(&[
        "--url",
        &url,
        "--timeout",
        "1",
        "--protocol",
        "2025-11-25",
        "--json",
        "call",
        "echo",
    ]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let error = json_error(&out);
    assert_eq!(error["kind"], "budget_exhausted");
    assert_eq!(error["fault"], "budget");
    assert_eq!(error["server"], format!("127.0.0.1:{}", slow.port()));

    // 4: unreachable.
    let out = mcp_call(&["--json", "--url", "http://127.0.0.1:1/mcp", "ping"]);
    assert_eq!(code(&out), 4);
    assert_eq!(json_error(&out)["kind"], "unreachable");

    // 5: the server's error.
    let failing = TestServer::start(Script::new().hostile("tools/call", Hostile::Status(500)));
    let out = mcp_call(&["--json", "--url", &failing.url(), "call", "echo"]);
    assert_eq!(code(&out), 5);
    let error = json_error(&out);
    assert_eq!(error["kind"], "http_status");
    assert_eq!(error["fault"], "server");

    // 7: authorization required (an OAuth server, no login).
    let guarded = TestServer::start(Script::new().oauth(mcp_testkit::OAuthScript::new()));
    let out = mcp_call(&["--json", "--url", &guarded.url(), "call", "echo"]);
    assert_eq!(code(&out), 7, "{}", stderr(&out));
    let error = json_error(&out);
    assert_eq!(error["kind"], "authorization_required");
    assert_eq!(error["fault"], "authorization");
    assert_eq!(error["exit"], 7);

    // 8: the authorization server refused (a machine client's secret that is no longer
    // valid): asked once, and nothing was sent after its refusal.
    let issuer = TestServer::start(
        Script::new().oauth(mcp_testkit::OAuthScript::new().machine_client("machine-1", "current")),
    );
    let credentials =
        std::env::temp_dir().join(format!("mcp-call-exit-8-{}.json", std::process::id()));
    let out = mcp_call(&[
        "--json",
        "--url",
        &issuer.url(),
        "--credentials",
        credentials.to_str().unwrap(),
        "--grant",
        "client-credentials",
        "--client-id",
        "machine-1",
        "--client-secret",
        "stale-secret-7",
        "call",
        "echo",
    ]);
    let _ = std::fs::remove_file(&credentials);
    assert_eq!(code(&out), 8, "{}", stderr(&out));
    let error = json_error(&out);
    assert_eq!(error["kind"], "authorization");
    assert_eq!(error["fault"], "authorization_server");
    assert_eq!(error["exit"], 8);
    assert!(!stderr(&out).contains("stale-secret-7"), "{}", stderr(&out));
    let trail = issuer.trail();
    assert_eq!(
        trail.last().map(String::as_str),
        Some("oauth:client-credentials"),
        "{trail:?}"
    );
    assert_eq!(issuer.count("oauth:client-credentials"), 1, "{trail:?}");
}

#[test]
fn a_config_with_an_http_and_a_stdio_entry_runs_both_on_both_drivers() {
    let server = TestServer::start(Script::new());
    let local = mcp_testkit::stdio_server_command(&mcp_testkit::StdioScript::new());
    let dir = std::env::temp_dir().join(format!("mcp-call-both-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("servers.json");
    let config = serde_json::json!({"mcpServers": {
        "remote": {"url": server.url()},
        "local": {"command": local.program(), "args": local.arguments(), "env": {"K": "v"}, "timeout": 5},
    }});
    std::fs::write(&path, config.to_string()).unwrap();
    let file = path.to_str().unwrap();
    for driver in ["blocking", "tokio"] {
        for entry in ["remote", "local"] {
            let out = mcp_call(&[
                "--config",
                file,
                "--server",
                entry,
                "--driver",
                driver,
                "--trace",
                "call",
                "echo",
                r#"{"text":"from the config"}"#,
            ]);
            assert_eq!(code(&out), 0, "{entry} on {driver}: {}", stderr(&out));
            assert_eq!(stdout(&out).trim(), "from the config");
            let spawned = stderr(&out).contains("method=spawn");
            assert_eq!(spawned, entry == "local", "{}", stderr(&out));
            if entry == "local" {
                // The entry's timeout is the budget.
                assert!(stderr(&out).contains("granted_ms=5000"), "{}", stderr(&out));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn repeat_prints_a_summary_and_goes_on_past_errors() {
    let server = TestServer::start(Script::new());
    let out = mcp_call(&[
        "--url",
        &server.url(),
        "--repeat",
        "5",
        "call",
        "echo",
        r#"{"text":"x"}"#,
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let err = stderr(&out);
    let last = err.lines().last().unwrap();
    assert!(
        last.starts_with("summary: runs=5 errors=0 p50_ms="),
        "{err}"
    );
    for field in [" p90_ms=", " p99_ms=", " per_s="] {
        assert!(last.contains(field), "{last}");
    }

    let failing = TestServer::start(Script::new().hostile("tools/call", Hostile::Status(500)));
    let out = mcp_call(&["--url", &failing.url(), "--repeat", "3", "call", "echo"]);
    assert_eq!(code(&out), 5, "the last failure's code");
    let err = stderr(&out);
    assert_eq!(
        err.lines().filter(|l| l.starts_with("mcp-call: ")).count(),
        3,
        "{err}"
    );
    assert!(
        err.lines()
            .last()
            .unwrap()
            .starts_with("summary: runs=3 errors=3 "),
        "{err}"
    );
}

#[test]
fn resources_and_prompts_commands_print_one_per_line() {
    for era in [ServerEra::Legacy, ServerEra::Modern] {
        let server = TestServer::start(Script::new().era(era));
        let url = server.url();
        let run = |args: &[&str]| {
            let mut all = vec!["--url", url.as_str()];
            all.extend_from_slice(args);
            mcp_call(&all)
        };
        let out = run(&["resources"]);
        assert_eq!(code(&out), 0, "{era:?}: {}", stderr(&out));
        assert_eq!(stdout(&out), "test://readme\ntest://data.json\n");
        let out = run(&["templates"]);
        assert_eq!(stdout(&out), "test://notes/{id}\n");
        let out = run(&["read", "test://notes/7"]);
        assert_eq!(stdout(&out), "note 7\n");
        let out = run(&["prompts"]);
        assert_eq!(stdout(&out), "greeting\n");
        let out = run(&["prompt", "greeting", r#"{"name":"Ada"}"#]);
        assert_eq!(stdout(&out), "Say hello to Ada.\n");
        let out = run(&["--json", "read", "test://readme"]);
        let value: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(value["contents"][0]["mimeType"], "text/plain");
        let out = run(&["read", "test://nowhere"]);
        assert_eq!(code(&out), 5, "{}", stderr(&out));
    }
}

#[test]
fn trace_prints_the_server_s_progress_and_ping_has_no_empty_word() {
    let server = TestServer::start(
        Script::new()
            .answer_mode_for("tools/call", mcp_testkit::AnswerMode::Sse)
            .server_version(""),
    );
    let out = mcp_call(&[
        "--url",
        &server.url(),
        "--protocol",
        "2025-11-25",
        "--trace",
        "call",
        "sleep",
        r#"{"ms":30}"#,
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let err = stderr(&out);
    let progress: Vec<&str> = err.lines().filter(|l| l.starts_with("progress ")).collect();
    assert_eq!(
        progress,
        ["progress 1/3", "progress 2/3", "progress 3/3"],
        "{err}"
    );
    // The progress token went out with the call.
    let call = server
        .requests()
        .into_iter()
        .find(|r| r.rpc_method.as_deref() == Some("tools/call"))
        .unwrap();
    let body: serde_json::Value = serde_json::from_slice(&call.body).unwrap();
    assert!(
        body["params"]["_meta"]["progressToken"].is_number(),
        "{body}"
    );

    let out = mcp_call(&["--url", &server.url(), "--protocol", "2025-11-25", "ping"]);
    assert_eq!(
        stdout(&out),
        "mcp-testkit (protocol 2025-11-25, legacy era)\n"
    );
}

#[test]
fn completions_and_help_cover_the_commands_exit_codes_and_environment() {
    for shell in ["bash", "zsh", "fish"] {
        let out = mcp_call(&["completions", shell]);
        assert_eq!(code(&out), 0, "{shell}: {}", stderr(&out));
        let script = stdout(&out);
        for command in ["ping", "tools", "call", "resources", "prompts"] {
            assert!(script.contains(command), "{shell} lacks {command}");
        }
    }
    let out = mcp_call(&["--help"]);
    let help = stdout(&out);
    for needle in [
        "Exit codes:",
        "6 cancelled",
        "8 the authorization server",
        "MCP_OPERATION_TIMEOUT",
    ] {
        assert!(help.contains(needle), "{needle}: {help}");
    }
}

#[test]
fn arg_pairs_are_typed_from_the_tool_s_schema() {
    let server = TestServer::start(Script::new().era(ServerEra::Dual));
    let url = server.url();
    // A string that looks like a number stays a string.
    let out = mcp_call(&["--url", &url, "call", "echo", "--arg", "text=0123"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "0123\n");
    // Numbers become numbers, and pairs win over the JSON object.
    let out = mcp_call(&[
        "--url",
        &url,
        "call",
        "add",
        r#"{"a":100,"b":1}"#,
        "--arg",
        "a=2",
        "--arg",
        "b=3",
    ]);
    assert_eq!(stdout(&out), "5\n", "{}", stderr(&out));
    assert_eq!(
        server.rpc_methods(),
        ["tools/list", "tools/call", "tools/list", "tools/call"],
        "one listing types the pairs"
    );
    // A value the schema cannot take, and a tool the server does not list: usage errors.
    let out = mcp_call(&["--url", &url, "call", "sleep", "--arg", "ms=soon"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("\"ms\" must be an integer"),
        "{}",
        stderr(&out)
    );
    let out = mcp_call(&["--url", &url, "call", "nope", "--arg", "x=1"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("no tool \"nope\""),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_server_config_names_the_server_and_flags_win() {
    let server = TestServer::start(Script::new().era(ServerEra::Dual));
    let dir = std::env::temp_dir().join(format!("mcp-call-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("servers.json");
    let config = serde_json::json!({"mcpServers": {
        "remote": {"url": server.url(), "headers": {"X-Team": "blue", "X-Env": "test"}, "timeout": 3},
        "local": {"command": "mcp-call-test-no-such-program", "args": ["-y", "some-server"], "env": {"K": "v"}}
    }});
    std::fs::write(&path, config.to_string()).unwrap();
    let file = path.to_str().unwrap();

    let out = mcp_call(&["--config", file, "servers"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!(
            "local\tstdio\tmcp-call-test-no-such-program -y some-server\nremote\thttp\t{}\n",
            server.url()
        ),
        "one line per entry, by name"
    );

    // The entry's URL, headers and timeout; a flag's header replaces the entry's.
    let out = mcp_call(&[
        "--config",
        file,
        "--server",
        "remote",
        "--header",
        "X-Env: prod",
        "--trace",
        "call",
        "echo",
        r#"{"text":"hi"}"#,
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "hi\n");
    assert!(stderr(&out).contains("granted_ms=3000"), "{}", stderr(&out));
    let call = &server.requests()[0];
    assert_eq!(call.header("x-team"), Some("blue"));
    let envs: Vec<&str> = call
        .headers
        .iter()
        .filter(|(n, _)| n == "x-env")
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(envs, ["prod"]);
    // --timeout wins over the entry's.
    let out = mcp_call(&[
        "--config",
        file,
        "--server",
        "remote",
        "--timeout",
        "7",
        "--trace",
        "ping",
    ]);
    assert!(stderr(&out).contains("granted_ms=7000"), "{}", stderr(&out));

    // A local entry is run (here a program that is not there: the caller's error, exit 2),
    // an unknown name, a broken file: usage errors that say which.
    let out = mcp_call(&["--config", file, "--server", "local", "ping"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("stdio:mcp-call-test-no-such-program")
            && stderr(&out).contains("could not be started"),
        "{}",
        stderr(&out)
    );
    let out = mcp_call(&["--config", file, "--server", "nope", "ping"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("local, remote"), "{}", stderr(&out));
    std::fs::write(&path, "{\n  \"mcpServers\": {\n    \"a\": {\"url\": }\n}").unwrap();
    let out = mcp_call(&["--config", file, "servers"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("line 3"), "{}", stderr(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A GET on loopback that follows nothing: the response's `Location`, if any.
fn location_of(url: &str) -> Option<String> {
    use std::io::{BufRead, BufReader, Write};
    let rest = url.strip_prefix("http://")?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut stream = std::net::TcpStream::connect(authority).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    BufReader::new(stream)
        .lines()
        .map_while(Result::ok)
        .take_while(|line| !line.is_empty())
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("location")
                .then(|| value.trim().to_owned())
        })
}

#[test]
fn login_keeps_a_token_that_later_commands_present_and_logout_forgets_it() {
    use mcp_testkit::OAuthScript;
    use std::io::{BufRead, BufReader};
    let server = TestServer::start(Script::new().oauth(OAuthScript::new()));
    let home = std::env::temp_dir().join(format!("mcp-call-login-{}", std::process::id()));
    let credentials = home.join("credentials.json");
    let credentials = credentials.to_str().unwrap();
    // login: the URL comes on stderr; the "person" (this test) follows it to the listener.
    let mut login = mcp_call_command(&[
        "--url",
        &server.url(),
        "--credentials",
        credentials,
        "--trace",
        "--timeout",
        "20",
        "login",
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .expect("mcp-call runs");
    let mut stderr_lines = BufReader::new(login.stderr.take().unwrap()).lines();
    let mut seen = Vec::new();
    let url = loop {
        let line = stderr_lines.next().expect("an authorize line").unwrap();
        seen.push(line.clone());
        if let Some(url) = line.strip_prefix("authorize: ") {
            break url.to_owned();
        }
    };
    let redirect = location_of(&url).expect("the authorization server redirects");
    assert!(redirect.starts_with("http://127.0.0.1:"), "{redirect}");
    location_of(&redirect);
    seen.extend(stderr_lines.map_while(Result::ok));
    let status = login.wait().unwrap();
    let trace = seen.join("\n");
    assert!(status.success(), "{trace}");
    for label in [
        "oauth:resource-metadata",
        "oauth:server-metadata",
        "oauth:register",
        "oauth:token",
    ] {
        assert!(
            trace.contains(&format!("method={label} ")),
            "{label} in:\n{trace}"
        );
    }
    assert!(trace.contains("logged in to"), "{trace}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(credentials).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    // A later command presents the kept token from its first request: no auth leg.
    server.clear_requests();
    let out = mcp_call(&[
        "--url",
        &server.url(),
        "--credentials",
        credentials,
        "--trace",
        "call",
        "echo",
        r#"{"text":"hi"}"#,
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "hi");
    assert!(!stderr(&out).contains("oauth:"), "{}", stderr(&out));
    // No secret in what the operator sees.
    for secret in server.issued_secrets() {
        assert!(
            !trace.contains(&secret) && !stderr(&out).contains(&secret),
            "{secret} in:\n{trace}\n{}",
            stderr(&out)
        );
    }
    // logout: nothing sent; the next command needs a login again (exit 7, said at once).
    server.clear_requests();
    let out = mcp_call(&[
        "--url",
        &server.url(),
        "--credentials",
        credentials,
        "logout",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(server.requests().is_empty());
    let out = mcp_call(&[
        "--url",
        &server.url(),
        "--credentials",
        credentials,
        "call",
        "echo",
    ]);
    assert_eq!(code(&out), 7, "{}", stderr(&out));
    assert!(stderr(&out).contains("mcp-call login"), "{}", stderr(&out));
    let _ = std::fs::remove_dir_all(&home);
}

/// The `--stdio` command line of the testkit's stdio server with `script`.
fn stdio_line(script: &mcp_testkit::StdioScript) -> String {
    let command = mcp_testkit::stdio_server_command(script);
    let mut words = vec![command.program().to_owned()];
    words.extend(command.arguments().iter().cloned());
    shlex::try_join(words.iter().map(String::as_str)).expect("no NUL in the command line")
}

#[test]
fn stdio_runs_a_local_server_on_both_drivers() {
    let line = stdio_line(&mcp_testkit::StdioScript::new());
    for driver in ["blocking", "tokio"] {
        let out = mcp_call(&[
            "--stdio",
            &line,
            "--driver",
            driver,
            "--trace",
            "call",
            "echo",
            r#"{"text":"x"}"#,
        ]);
        assert_eq!(code(&out), 0, "{driver}: {}", stderr(&out));
        assert_eq!(stdout(&out).trim(), "x");
        let err = stderr(&out);
        assert!(
            err.contains("method=spawn") && err.contains("method=shutdown"),
            "{err}"
        );
    }
    // A local server never touches the credentials file: a broken one is not its concern.
    let broken = std::env::temp_dir().join(format!("mcp-call-broken-{}.json", std::process::id()));
    std::fs::write(&broken, "{not json").unwrap();
    let out = mcp_call(&[
        "--stdio",
        &line,
        "--credentials",
        broken.to_str().unwrap(),
        "call",
        "echo",
        r#"{"text":"x"}"#,
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let _ = std::fs::remove_file(&broken);
}

/// What the operator waits for after `--timeout 2`: the whole process, the close and the end
/// of a local server included, ends with the budget (plus a margin for a slow machine, well
/// under what a close with a grant of its own would add).
const WHOLE_RUN_BOUND: Duration = Duration::from_millis(3500);

#[test]
fn every_exit_path_ends_with_the_budget_and_leaves_no_process() {
    use mcp_testkit::{StdioHostile, StdioScript};
    // A local server that reads and never answers; one that stops reading after the handshake
    // (with an argument the pipe cannot hold); an HTTP server that stalls the call.
    let stall = stdio_line(&StdioScript::new().hostile("*", StdioHostile::Stall));
    let noread = stdio_line(
        &StdioScript::new().hostile("notifications/initialized", StdioHostile::StopReading),
    );
    let long = format!(r#"{{"text":"{}"}}"#, "x".repeat(120 * 1024));
    let server = TestServer::start(Script::new().hostile("tools/call", Hostile::Stall));
    let url = server.url();
    let shapes: [(&str, [&str; 2], &str); 3] = [
        ("stall", ["--stdio", &stall], r#"{"text":"x"}"#),
        ("noread", ["--stdio", &noread], &long),
        ("http-stall", ["--url", &url], r#"{"text":"x"}"#),
    ];
    for (shape, target, arguments) in shapes {
        for driver in ["blocking", "tokio"] {
            let tag = format!("cli-{shape}-{driver}-{}", std::process::id());
            let env = format!("{}={tag}", mcp_testkit::PROCESS_TAG_ENV);
            let mut args = vec![target[0], target[1]];
            if target[0] == "--stdio" {
                args.extend(["--env", &env]);
            }
            args.extend([
                "--driver",
                driver,
                "--timeout",
                "2",
                "--resolution",
                "ms",
                "--trace",
                "call",
                "echo",
                arguments,
            ]);
            let started = Instant::now();
            let out = mcp_call(&args);
            let elapsed = started.elapsed();
            assert_eq!(code(&out), 4, "{shape} {driver}: {}", stderr(&out));
            eprintln!("{shape} {driver}: mcp-call ended after {elapsed:?}");
            assert!(
                elapsed < WHOLE_RUN_BOUND,
                "{shape} {driver}: {elapsed:?}: {}",
                stderr(&out)
            );
            #[cfg(target_os = "linux")]
            assert_eq!(
                mcp_testkit::running_processes_tagged(&tag),
                0,
                "{shape} {driver}: the server outlived mcp-call"
            );
        }
    }
    assert_eq!(server.count("DELETE"), 0, "a spent budget sends no DELETE");
}

/// Runs mcp-call with `args` and reads its peak resident size (VmHWM, which only grows) while
/// it runs: its exit code and the peak in KiB.
#[cfg(target_os = "linux")]
fn run_with_peak(args: &[&str]) -> (Option<i32>, u64) {
    let mut child = mcp_call_command(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak_kib = 0u64;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if let Ok(text) = std::fs::read_to_string(&status_path) {
            if let Some(kib) = text
                .lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse::<u64>().ok())
            {
                peak_kib = peak_kib.max(kib);
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    (status.code(), peak_kib)
}

#[cfg(target_os = "linux")]
#[test]
fn a_100_mib_line_from_a_local_server_exits_5_with_bounded_memory() {
    use mcp_testkit::{StdioHostile, StdioScript};
    let normal = stdio_line(&StdioScript::new().hostile("tools/call", StdioHostile::Slow(300)));
    let huge = stdio_line(
        &StdioScript::new().hostile("tools/call", StdioHostile::HugeLine(100 * 1024 * 1024)),
    );
    for driver in ["blocking", "tokio"] {
        let (code, baseline) = run_with_peak(&[
            "--stdio",
            &normal,
            "--driver",
            driver,
            "call",
            "echo",
            r#"{"text":"x"}"#,
        ]);
        assert_eq!(code, Some(0), "{driver}");
        let (code, peak) = run_with_peak(&[
            "--stdio",
            &huge,
            "--driver",
            driver,
            "--timeout",
            "30",
            "call",
            "echo",
        ]);
        assert_eq!(code, Some(5), "{driver}");
        // What the 100 MiB line costs over a normal call: at most the cap (2 MiB) + 16 MiB.
        let grown = peak.saturating_sub(baseline);
        eprintln!(
            "{driver}: a normal call peaks at {baseline} KiB, the 100 MiB line at {peak} KiB"
        );
        assert!(grown < (2 + 16) * 1024, "{driver}: grew {grown} KiB");
    }
}

#[test]
fn cacert_trusts_an_internal_ca_that_is_refused_without_it() {
    use mcp_testkit::tls::{TestCa, TlsFront};
    let ca = TestCa::new("mcp-call test internal CA");
    let server = TestServer::start(Script::new());
    let front = TlsFront::start(server.addr(), &ca.server_cert(&["localhost", "127.0.0.1"]));
    let dir = std::env::temp_dir().join(format!("mcp-call-ca-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pem = ca.write_pem(&dir);
    let pem = pem.to_str().unwrap();
    for driver in ["blocking", "tokio"] {
        let without = mcp_call_command(&["--url", &front.url(), "--driver", driver, "ping"])
            .env_remove("SSL_CERT_FILE")
            .env_remove("SSL_CERT_DIR")
            .output()
            .unwrap();
        assert_eq!(code(&without), 4, "{driver}: {}", stderr(&without));
        assert!(
            stderr(&without).contains("--cacert"),
            "{}",
            stderr(&without)
        );
        let with = mcp_call(&[
            "--url",
            &front.url(),
            "--driver",
            driver,
            "--cacert",
            pem,
            "ping",
        ]);
        assert_eq!(code(&with), 0, "{driver}: {}", stderr(&with));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_task_id_that_begins_with_a_dash_is_an_id_not_a_flag() {
    // FastMCP's task ids are base64url: `-mDMkl...` is one. A server that runs no tasks
    // answers the look (and the cancel) with an error naming the request.
    let server = TestServer::start(Script::default());
    let url = server.url();
    for (args, method) in [
        (&["task", "-mDMklCE"][..], "tasks/get"),
        (&["task", "--cancel", "-mDMklCE"][..], "tasks/cancel"),
    ] {
        let mut all = vec!["--url", &url, "--protocol", "2025-11-25"];
        all.extend_from_slice(args);
        let out = mcp_call(&all);
        let err = stderr(&out);
        assert_eq!(code(&out), 5, "{err}");
        assert!(err.contains(method), "{err}");
    }
}

/// What a host writes to `mcp-call bridge`: the handshake, then a tools listing; EOF after.
const HOST_LINES: &str = concat!(
    r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}"#,
    "\n",
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    "\n",
    r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    "\n",
);

/// Runs `mcp-call` with `args` as a host would run the bridge: [`HOST_LINES`] on its stdin,
/// kept open until the listing's answer is out (or the bridge ends), then closed, as a host
/// closes it to end the bridge. Returns the exit and what it wrote.
fn bridged(args: &[&str]) -> Output {
    use std::io::{BufRead as _, Write as _};
    let mut child = mcp_call_command(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mcp-call runs");
    let mut stdin = child.stdin.take().expect("stdin");
    // A bridge that refuses its command line ends before it reads: nothing to write to then.
    let _ = stdin.write_all(HOST_LINES.as_bytes());
    let mut answers = String::new();
    let mut lines = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    while lines.read_line(&mut line).unwrap_or(0) > 0 {
        answers.push_str(&line);
        let listed = line.contains(r#""id":2"#);
        line.clear();
        if listed {
            break;
        }
    }
    drop(stdin);
    let mut out = child.wait_with_output().expect("mcp-call ends");
    out.stdout = answers.into_bytes();
    out
}

#[test]
fn the_bridge_takes_its_url_in_every_position_mcp_remote_and_mcp_call_write_it() {
    let server = TestServer::start(Script::default());
    let url = server.url();
    for args in [
        vec!["bridge", url.as_str()],
        vec!["bridge", "--url", url.as_str()],
        vec!["--url", url.as_str(), "bridge"],
        vec![
            "bridge",
            url.as_str(),
            "--timeout",
            "5",
            "--driver",
            "tokio",
        ],
    ] {
        let out = bridged(&args);
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        let answers = stdout(&out);
        assert!(
            answers.contains(r#""id":2"#) && answers.contains(r#""name":"echo""#),
            "{args:?}: {answers}"
        );
    }
    // The four runs reached the one server, each in a session of its own.
    let handshakes = server
        .rpc_methods()
        .iter()
        .filter(|m| *m == "initialize")
        .count();
    assert_eq!(handshakes, 4, "{:?}", server.rpc_methods());
}

#[test]
fn two_servers_named_for_the_bridge_are_a_usage_error_that_quotes_no_url() {
    let out = bridged(&[
        "bridge",
        "http://user:secret@127.0.0.1:9/mcp",
        "--url",
        "http://127.0.0.1:9/other",
    ]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("two different servers"), "{err}");
    assert!(!err.contains("secret"), "{err}");
}

#[test]
fn global_flags_work_after_the_subcommand_too() {
    let server = TestServer::start(Script::default());
    let out = mcp_call(&[
        "call",
        "echo",
        r#"{"text":"late flags"}"#,
        "--url",
        &server.url(),
        "--timeout",
        "2",
        "--json",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("late flags"), "{}", stdout(&out));
}

#[test]
fn an_mcp_remote_line_runs_as_a_bridge_and_says_what_became_of_each_flag() {
    let server = TestServer::start(Script::default());
    let url = server.url();
    // A host config's `npx mcp-remote URL 3334 --debug --allow-http --connect-timeout 5`.
    let out = bridged(&[
        "bridge",
        &url,
        "3334",
        "--debug",
        "--allow-http",
        "--connect-timeout",
        "5",
        "--transport",
        "http-first",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains(r#""name":"echo""#),
        "{}",
        stdout(&out)
    );
    let said = stderr(&out);
    for note in [
        "the callback port 3334 is accepted and dropped",
        "mcp-remote's --debug is --trace here",
        "mcp-remote's --allow-http is accepted and dropped",
        "mcp-remote's --connect-timeout is accepted and dropped: one budget per request (--timeout)",
        "mcp-remote's --transport http-first is --transport auto here",
    ] {
        assert!(said.contains(note), "{note}: {said}");
    }
    // Refused: exit 2, the flag named with what to use instead, nothing sent.
    let before = server.rpc_methods().len();
    let out = bridged(&["bridge", &url, "--device-code"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--device-code is not taken"),
        "{}",
        stderr(&out)
    );
    assert_eq!(server.rpc_methods().len(), before);
}

/// `${TOKEN}` and `${env:TOKEN}` in a `--header` reach the server expanded; the secret is in
/// no trace line. Unset, it is a usage error naming it, and nothing is sent.
#[test]
fn a_header_s_variable_is_read_from_the_environment_and_an_unset_one_sends_nothing() {
    let secret = "tok-4f9a-secret";
    let server = TestServer::start(Script::new());
    let out = mcp_call_command(&[
        "--url",
        &server.url(),
        "--header",
        "Authorization: Bearer ${MCP_CALL_TEST_TOKEN}",
        "--header",
        "X-Team: ${env:MCP_CALL_TEST_TEAM}-$MCP_CALL_TEST_TEAM-${",
        "--trace",
        "call",
        "echo",
        r#"{"text":"hi"}"#,
    ])
    .env("MCP_CALL_TEST_TOKEN", secret)
    .env("MCP_CALL_TEST_TEAM", "blue")
    .output()
    .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "hi\n");
    assert!(!stderr(&out).contains(secret), "{}", stderr(&out));
    let requests = server.requests();
    assert!(!requests.is_empty());
    for request in &requests {
        assert_eq!(
            request.header("authorization"),
            Some("Bearer tok-4f9a-secret")
        );
        // A bare $NAME and a ${ never closed are sent as written.
        assert_eq!(
            request.header("x-team"),
            Some("blue-$MCP_CALL_TEST_TEAM-${")
        );
    }

    // Unset: exit 2, the variable named, nothing sent; with --json, one usage object.
    let server = TestServer::start(Script::new());
    let url = server.url();
    for json in [false, true] {
        let mut args = vec![
            "--url",
            &url,
            "--header",
            "Authorization: Bearer ${MCP_CALL_TEST_TOKEN}",
            "ping",
        ];
        if json {
            args.insert(0, "--json");
        }
        let out = mcp_call_command(&args)
            .env_remove("MCP_CALL_TEST_TOKEN")
            .output()
            .unwrap();
        assert_eq!(code(&out), 2, "{}", stderr(&out));
        let err = match json {
            true => {
                let error = json_error(&out);
                assert_eq!(error["kind"], "usage", "{error}");
                error["message"].as_str().unwrap().to_owned()
            }
            false => stderr(&out),
        };
        assert!(
            err.contains("MCP_CALL_TEST_TOKEN") && err.contains("\"Authorization\""),
            "{err}"
        );
    }
    assert!(server.requests().is_empty(), "nothing was sent");

    // A value a header cannot carry (a line break): the header and the variable are named,
    // the value is not shown, and nothing is sent.
    let out = mcp_call_command(&[
        "--url",
        &server.url(),
        "--header",
        "Authorization: Bearer ${MCP_CALL_TEST_TOKEN}",
        "ping",
    ])
    .env("MCP_CALL_TEST_TOKEN", "tok-line1\ntok-line2")
    .output()
    .unwrap();
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("MCP_CALL_TEST_TOKEN") && err.contains("\"Authorization\""),
        "{err}"
    );
    assert!(!err.contains("tok-line"), "{err}");
    assert!(server.requests().is_empty(), "nothing was sent");
}

#[test]
fn a_header_file_joins_the_header_flags_and_a_bad_line_is_named_by_number() {
    let server = TestServer::start(Script::new());
    let dir = std::env::temp_dir().join(format!("mcp-call-header-file-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("team.headers");
    std::fs::write(
        &path,
        "# the team's credentials\n\nAuthorization: Bearer ${MCP_CALL_TEST_TOKEN}\nX-Team: from-file\nX-Env: test\n",
    )
    .unwrap();
    let file = path.to_str().unwrap();
    let out = mcp_call_command(&[
        "--url",
        &server.url(),
        "--header-file",
        file,
        "--header",
        "X-Env: prod",
        "call",
        "echo",
        r#"{"text":"hi"}"#,
    ])
    .env("MCP_CALL_TEST_TOKEN", "from-env")
    .output()
    .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let call = &server.requests()[0];
    assert_eq!(call.header("authorization"), Some("Bearer from-env"));
    assert_eq!(call.header("x-team"), Some("from-file"));
    let envs: Vec<&str> = (call.headers.iter())
        .filter(|(n, _)| n == "x-env")
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(envs, ["prod"], "a --header of the same name wins");

    // A line that is not 'Name: value': the file and the line, not its text; nothing sent.
    let server = TestServer::start(Script::new());
    std::fs::write(&path, "# comment\nX-Team: blue\nBearer pasted-secret\n").unwrap();
    let out = mcp_call(&["--url", &server.url(), "--header-file", file, "ping"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains(&format!("{file}, line 3")), "{err}");
    assert!(!err.contains("pasted-secret"), "{err}");
    let out = mcp_call(&[
        "--url",
        &server.url(),
        "--header-file",
        "/nonexistent/team.headers",
        "ping",
    ]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("/nonexistent/team.headers"),
        "{}",
        stderr(&out)
    );
    assert!(server.requests().is_empty(), "nothing was sent");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_config_entry_s_url_and_headers_are_expanded_and_an_unset_variable_is_named() {
    let server = TestServer::start(Script::new());
    let url = server.url();
    let (host, rest) = url.rsplit_once(':').unwrap();
    let (port, path) = rest.split_once('/').unwrap();
    let dir = std::env::temp_dir().join(format!("mcp-call-config-env-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config_path = dir.join("mcp.json");
    let config = serde_json::json!({"mcpServers": {"remote": {
        "url": format!("{host}:${{MCP_CALL_TEST_PORT}}/{path}"),
        "headers": {"Authorization": "Bearer ${env:MCP_CALL_TEST_TOKEN}"}
    }}});
    std::fs::write(&config_path, config.to_string()).unwrap();
    let file = config_path.to_str().unwrap();
    let run = |token: Option<&str>| {
        let mut command = mcp_call_command(&["--config", file, "--server", "remote", "ping"]);
        command.env("MCP_CALL_TEST_PORT", port);
        match token {
            Some(token) => command.env("MCP_CALL_TEST_TOKEN", token),
            None => command.env_remove("MCP_CALL_TEST_TOKEN"),
        };
        command.output().unwrap()
    };
    let out = run(Some("entry-token"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some("Bearer entry-token")
    );
    // `servers` lists the entry as written.
    let out = mcp_call(&["--config", file, "servers"]);
    assert!(
        stdout(&out).contains("${MCP_CALL_TEST_PORT}"),
        "{}",
        stdout(&out)
    );

    let sent = server.requests().len();
    let out = run(None);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("server \"remote\"")
            && err.contains("\"Authorization\"")
            && err.contains("MCP_CALL_TEST_TOKEN"),
        "{err}"
    );
    assert_eq!(server.requests().len(), sent, "nothing was sent");
    let _ = std::fs::remove_dir_all(&dir);
}
