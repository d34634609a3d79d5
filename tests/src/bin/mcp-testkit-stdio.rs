//! `mcp-testkit-stdio`: the testkit's scriptable MCP server over stdio, for tests of stdio
//! clients. It reads one JSON-RPC message per line on stdin, writes one per line on stdout and
//! logs on stderr; it exits 0 when stdin closes (unless `--ignore-eof`).
//!
//! Its behaviour is a [`mcp_testkit::StdioScript`]: it starts from the JSON in
//! `MCP_TESTKIT_SCRIPT` when that is set, then the flags apply in order:
//!
//! * `--script JSON` replaces the script (the format of `StdioScript::to_json`: `era`,
//!   `toolPages`, `notifications`, `progress`, `protocolVersion`, `delays` `{method: ms}`,
//!   `hostile` `{method: mode}`, `ignoreEof`, `verbose`; every key optional);
//! * `--preset default|demo`, `--era legacy|modern|dual`;
//! * `--hostile METHOD=MODE` (repeatable), MODE one of `stall`, `trickle`, `huge-line:BYTES`,
//!   `garbage[:LINES]`, `exit:CODE`, `notifications-first:N`,
//!   `server-request[:ping|elicitation]`, `wrong-id`, `slow:MS`, `stderr-flood:BYTES`
//!   (METHOD `*`: every method without a mode of its own);
//! * `--delay METHOD=MS`, `--notifications N`, `--tool-pages N`, `--protocol-version V`,
//!   `--no-progress`, `--ignore-eof`, `--verbose`, `--help`.
//!
//! A bad command line exits 2 with the usage on stderr. Tests in other crates start it with
//! `mcp_testkit::stdio_server_command(&script)`, which finds this binary next to the test
//! binary (it must have been built: `cargo test` at the workspace root does, otherwise
//! `cargo build -p mcp-testkit --bin mcp-testkit-stdio`).

use std::io;
use std::process::ExitCode;

use mcp_testkit::{STDIO_SCRIPT_ENV, STDIO_USAGE, StdioScript};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        print!("{STDIO_USAGE}");
        return ExitCode::SUCCESS;
    }
    let env = std::env::var(STDIO_SCRIPT_ENV).ok();
    let script = match StdioScript::from_command_line(args, env.as_deref()) {
        Ok(script) => script,
        Err(e) => {
            eprintln!("mcp-testkit-stdio: {e}\n\n{STDIO_USAGE}");
            return ExitCode::from(2);
        }
    };
    let code = mcp_testkit::serve_stdio(&script, io::stdin(), io::stdout().lock(), io::stderr());
    // Any status the platform takes (on Unix, its low 8 bits).
    std::process::exit(code)
}
