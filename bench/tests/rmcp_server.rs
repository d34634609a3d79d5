//! `mcp-bench serve-rmcp` (rmcp's own `StreamableHttpService`) and `mcp-bench floor-child`
//! against it, in both eras, as `mcp-bench run`'s whole-process rows start them.

use std::path::Path;
use std::process::Command;

use mcp_bench::rmcp_server::RmcpServerProcess;

fn exe() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_mcp-bench"))
}

fn floor(url: &str, era: &str, calls: &str) -> std::process::Output {
    Command::new(exe())
        .args(["floor-child", url, era, calls])
        .output()
        .expect("mcp-bench starts")
}

#[test]
fn the_floor_calls_rmcps_echo_in_both_eras() {
    let server = RmcpServerProcess::spawn(exe()).expect("serve-rmcp starts");
    let url = server.url();
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "{url}"
    );
    for era in ["legacy", "modern"] {
        let out = floor(url, era, "25");
        assert!(
            out.status.success(),
            "{era}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.stdout.is_empty(), "nothing printed per call");
    }
}

#[test]
fn a_floor_that_fails_says_why_and_exits_non_zero() {
    let server = RmcpServerProcess::spawn(exe()).expect("serve-rmcp starts");
    // An era by its version, not its name: a usage error.
    let out = floor(server.url(), "2025-11-25", "3");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("usage"));
    drop(server);
    // Nobody listens any more.
    let gone = floor("http://127.0.0.1:9/mcp", "modern", "3");
    assert!(!gone.status.success());
    assert!(!gone.stderr.is_empty(), "a message on stderr");
}
