//! What the end-to-end tests of `mcp-call` share: the binary run isolated from this machine's
//! settings, and its output read.

use std::process::{Command, Output};

/// `mcp-call` with `args`, isolated from this machine's settings: no budget or secret from
/// the environment, and its credentials file in a directory of the test run's own.
pub(crate) fn mcp_call_command(args: &[&str]) -> Command {
    let config_home = std::env::temp_dir().join(format!("mcp-call-tests-{}", std::process::id()));
    let mut command = Command::new(env!("CARGO_BIN_EXE_mcp-call"));
    command
        .args(args)
        .env_remove("MCP_OPERATION_TIMEOUT")
        .env_remove("MCP_CLIENT_SECRET")
        .env("XDG_CONFIG_HOME", config_home);
    command
}

/// Runs `mcp-call` with `args` to its end.
pub(crate) fn mcp_call(args: &[&str]) -> Output {
    mcp_call_command(args).output().expect("mcp-call runs")
}

/// What it printed on stdout.
pub(crate) fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What it printed on stderr.
pub(crate) fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Its exit code.
pub(crate) fn code(out: &Output) -> i32 {
    out.status.code().expect("exited with a code")
}
