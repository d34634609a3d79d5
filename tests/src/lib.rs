//! # mcp-testkit
//!
//! A **scriptable loopback MCP server** for tests, demos and benchmarks of
//! MCP clients: the Streamable HTTP transport (JSON-RPC 2.0 over HTTP POST on
//! `/mcp`), answered as JSON or as server-sent events, with precise and
//! switchable misbehaviour (stalls, trickles, oversize or malformed answers,
//! wrong ids, redirects, error statuses, endless streams...).
//!
//! This is a **test server, not a production server**: it listens on
//! `127.0.0.1` only, speaks plain HTTP/1.1 written by hand (no TLS, no
//! authentication unless its OAuth mode is on, a thread per connection) and trusts nobody but also
//! protects nothing. It never panics on malformed input: bad requests get a
//! `400` (or `413`) and the connection is closed.
//!
//! What it serves by default ([`Script::default`]): sessions on
//! (`Mcp-Session-Id`), JSON answers, no delays, and four tools: `echo`
//! (`text`), `add` (`a`, `b`), `sleep` (`ms`) and `fail`.
//!
//! ## Layout
//!
//! The crate lives in the workspace's top-level `tests/` folder. Its library
//! (`tests/src/`) is what tests, the CLI demo and the benchmarks use:
//!
//! * [`TestServer`] (`server.rs`, over the hand-written HTTP of `http.rs` and
//!   the MCP logic of `mcp.rs`) runs the server; [`TestServer::requests`],
//!   [`TestServer::rpc_methods`] and [`TestServer::client_responses`] tell
//!   what arrived, [`TestServer::ticks_sent`] that a trickle is under way.
//!   `modern.rs` holds the 2026-07-28 era's rules (which requests are modern, their
//!   headers checked against their bodies, the refusals of a modern-only server);
//!   `payload.rs` the answer bodies streamed without being built (huge, invalid UTF-8,
//!   deeply nested), for the HTTP and the stdio server alike.
//! * [`Script`] (`script.rs`) describes the behaviour, [`AnswerMode`] the
//!   wire format of answers, [`Hostile`] the ways to misbehave,
//!   [`ServerRequest`] a request the server sends on a `tools/call` answer
//!   stream (answered by the client before the call's result), [`Script::tool`]
//!   a tool of the caller's with an `outputSchema` and the result it answers
//!   (mismatched, unstructured, hostile schemas); the script can
//!   be swapped while the server runs ([`TestServer::set_script`]).
//! * [`OAuthScript`] (`oauth.rs`, through [`Script::oauth`]) guards `/mcp`
//!   with Bearer tokens and serves, on the same port, the Protected Resource
//!   Metadata and an authorization server that approves at once (discovery,
//!   registration, `/authorize`, `/token` with PKCE, refresh and client
//!   credentials; client authentication as the Python SDK's server does it with
//!   [`OAuthScript::client_id_in_form`]); [`AuthHostile`] breaks one of its rules; [`TestServer::trail`] names
//!   each recorded request as the client's leg (`oauth:token`...).
//! * Three leaves hold what the HTTP server, the stdio server, the era rules and the OAuth
//!   mode share, and need none of them (so no module imports one that imports it back):
//!   `message.rs` (a JSON-RPC message classified, [`RpcKind`]), `era.rs` ([`ServerEra`],
//!   [`SUPPORTED_VERSIONS`], [`MODERN_VERSIONS`]) and `recorded.rs` ([`RecordedRequest`]).
//! * [`Recorder`] ([`record`]) is an observer that collects a driver's legs
//!   and events.
//! * [`client`] is a tiny blocking HTTP client to poke the server at the
//!   wire level.
//! * [`ConnectProxy`] (`proxy.rs`) is a loopback HTTP `CONNECT` proxy that records what it
//!   was asked and can refuse; `tls` (`tls.rs`, feature `tls`) a CA made at run time and a TLS
//!   front for any loopback server. [`BlackHole`] (`black_hole.rs`) is a loopback address
//!   whose connects hang, as a route that drops packets.
//! * The **stdio server** (`stdio.rs`, run by the binary `mcp-testkit-stdio`,
//!   `src/bin/`): the same answers (dispatch, tools, eras) over stdio, one
//!   JSON-RPC message per line on stdin and stdout, logs on stderr. A
//!   [`StdioScript`] says what it does (era, delays, a [`StdioHostile`] mode per
//!   method: `stall`, `trickle`, `huge-line`, `garbage`, `exit`,
//!   `notifications-first`, `server-request`, `wrong-id`, `slow`,
//!   `stderr-flood`, `stop-reading`; `ignore-eof`)
//!   and reaches the child as `--script <json>` or in [`STDIO_SCRIPT_ENV`]
//!   (flags such as `--era` and `--hostile METHOD=MODE` too: [`STDIO_USAGE`]).
//!   A test waits for the state it is about, never for a sleep: with a signal file
//!   ([`StdioScript::signal_file`], a fresh one from [`StdioSignals`]) the server
//!   appends a line for each [`StdioSignal`] it reaches (a call it holds unanswered, a
//!   write it will never read).
//!   [`stdio_server_command`] gives the [`mcp_proto::StdioCommand`] that runs it,
//!   for tests in any crate of the workspace: it finds the binary next to the
//!   running test binary (`target/<profile>/`), or at [`STDIO_SERVER_PATH_ENV`].
//!   **It must be built first**: `cargo test` (or `cargo build`) at the workspace
//!   root builds it, since the testkit is a default member with integration
//!   tests; `cargo test -p <another crate>` does not, so run
//!   `cargo build -p mcp-testkit --bin mcp-testkit-stdio` before it. Nothing is
//!   built on demand; a missing binary panics saying so. The testkit's own
//!   suites use `env!("CARGO_BIN_EXE_mcp-testkit-stdio")`.
//! * `mcp-typed-call` (`src/bin/mcp-typed-call.rs`): a client, not a server: one
//!   `call_tool_as::<Weather>` on either driver against any server, for the interop
//!   row `structured-output`.
//!
//! Its suites are in `tests/suites/`, declared as `[[test]]` entries in
//! `tests/Cargo.toml`:
//!
//! * `drivers.rs`: every test against both drivers (the blocking one, tokio on both
//!   runtimes): operations and the session, the budget in real time, cancel, hostile
//!   servers. Its parts, in `drivers/`: `support.rs` (the `Driver` trait over both
//!   clients, configs, bounds), `eras.rs` (era detection, the modern era in one leg),
//!   `auth.rs` (authorization inside the operation, the OAuth mode), `stdio.rs` (local
//!   servers), `network.rs` (CAs, TLS errors, proxies), `parallel.rs` (operations in
//!   flight together on one session), `structured.rs` (results held to their tools'
//!   `outputSchema`, `call_tool_as`) and `spans.rs` (the `tracing` spans).
//! * `server.rs`: the HTTP server at the wire level.
//! * `stdio_server.rs`: the stdio server as a child process.
//!
//! The fuzz targets are not here: they use no test server (`fuzz/harness/`, crate
//! `mcp-fuzzing`).
//!
//! ```
//! use std::time::Duration;
//! use mcp_testkit::client::RawClient;
//! use mcp_testkit::{AnswerMode, Hostile, Script, TestServer};
//!
//! let server = TestServer::start(Script::new().answer_mode(AnswerMode::Sse));
//! assert!(server.url().starts_with("http://127.0.0.1:"));
//!
//! let mut client = RawClient::connect(server.addr()).unwrap();
//! let session = client.initialize().unwrap().expect("sessions are on");
//! let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#;
//! let resp = client.post_json(call, &[("Mcp-Session-Id", &session)]).unwrap();
//! assert_eq!(resp.status, 200);
//! assert_eq!(resp.sse_messages()[0]["result"]["content"][0]["text"], "hi");
//!
//! // Make only the next tools/call misbehave.
//! server.update_script(|s| s.hostile("tools/call", Hostile::Status(503)));
//! let resp = client.post_json(call, &[("Mcp-Session-Id", &session)]).unwrap();
//! assert_eq!(resp.status, 503);
//! assert_eq!(server.rpc_methods(), ["initialize", "notifications/initialized", "tools/call", "tools/call"]);
//! # let _ = Duration::ZERO;
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod black_hole;
pub mod client;
pub mod record;
pub use record::Recorder;
mod era;
mod http;
mod mcp;
mod message;
mod modern;
mod oauth;
mod payload;
mod proxy;
mod recorded;
mod script;
mod server;
mod stdio;
#[cfg(feature = "tls")]
pub mod tls;

pub use black_hole::BlackHole;
pub use era::{MODERN_VERSIONS, SUPPORTED_VERSIONS, ServerEra};
pub use mcp::{forecast_result, forecast_schema};
pub use message::RpcKind;
pub use oauth::{AuthHostile, OAuthScript, RESOURCE_METADATA_PATH, SERVER_METADATA_PATH};
pub use proxy::{ConnectProxy, Tunnel};
pub use recorded::RecordedRequest;
pub use script::{AnswerMode, Hostile, NotificationReply, Script, ServerRequest};
pub use server::{ScriptHandle, TestServer};
pub use stdio::{
    MAX_INPUT_LINE, PROCESS_TAG_ENV, STDIO_SCRIPT_ENV, STDIO_SERVER_BIN, STDIO_SERVER_PATH_ENV,
    STDIO_USAGE, ServerAsk, StdioHostile, StdioScript, StdioSignal, StdioSignals, TRICKLE_INTERVAL,
    running_processes_tagged, serve_stdio, stdio_server_command, stdio_server_path,
};

/// Maximum accepted request head size (64 KiB); larger heads get `400`.
pub const MAX_REQUEST_HEAD: usize = http::MAX_HEAD_BYTES;
/// Maximum accepted request body size (16 MiB); larger bodies get `413`.
pub const MAX_REQUEST_BODY: usize = http::MAX_BODY_BYTES;
/// Number of `notifications/progress` events sent for a `tools/call` that
/// carries a progress token (in SSE answer modes).
pub const PROGRESS_STEPS: u64 = mcp::PROGRESS_STEPS;
