//! Benchmarks of the MCP drivers (`mcp-driver-blocking`, `mcp-driver-tokio`) against their
//! bare-HTTP floors (in both protocol eras) and bare-pipe floors (stdio), against the official
//! Rust SDK (`rmcp`, over HTTP and stdio) and against the TypeScript and Python SDKs' clients,
//! all on one loopback server (or the testkit's stdio server); and the whole `mcp-call` process
//! against rmcp's own server, beside a bare floor process.
//!
//! Everything is driven by `bench/run.sh`, which builds in release, runs the criterion parsing
//! benchmarks (`benches/parse.rs`) and the `mcp-bench` binary, and writes the tables into
//! `BENCHMARKS.md`. The pieces:
//!
//! * [`server`]: the loopback MCP server every HTTP client talks to (`mcp-testkit`'s, run in a
//!   **separate process** per protocol era, so that its CPU time is accounted apart from the
//!   clients'), the connections and requests (by JSON-RPC method) it counts for each case, and
//!   the measurement of its own calls/s ceiling with raw keep-alive clients (and `wrk` when
//!   present).
//! * [`wire`]: the exact requests `mcp-proto` sends (legacy and 2026-07-28 calls over HTTP, the
//!   lines over stdio, so the floors send the same bytes), and the canned `tools/list` answers
//!   and the sans-IO driving used by the parsing benchmarks.
//! * [`cases`]: the network cases (sequential calls on a reused session, cold operations,
//!   operations in flight at once with a client per task, and operations in flight at once on
//!   one client and session shared by the tasks; sequential and cold ones in the 2026-07-28
//!   era and over stdio against the testkit's stdio server), each client measured the same
//!   way.
//! * [`sdks`]: the cross-SDK table: the same cases from `mcp-driver-blocking`,
//!   `mcp-driver-tokio`, rmcp, the TypeScript SDK and the Python SDK, each client in a process
//!   of its own (`mcp-bench client-child`, `bench/peers/ts_client.mjs`,
//!   `bench/peers/py_client.py`), its CPU time and peak memory read from `/proc`.
//! * [`memory`]: peak RSS of one blocking call facing a 100 MiB answer, in a child process.
//! * [`overrun`]: how far past a 2 s budget a call to a stalled server ends (1 ms
//!   resolution), inside the operation and as the whole `mcp-call` process, both drivers.
//! * [`rmcp_server`]: the official Rust SDK's own server (rmcp 3.11's
//!   `StreamableHttpService`, one `echo` tool), run as `mcp-bench serve-rmcp`.
//! * [`whole`]: whole `mcp-call --repeat N` processes (both drivers, both eras) against that
//!   server beside a bare floor process posting the same bytes (`mcp-bench floor-child`),
//!   in paired rounds: calls/s, the ratio to the floor, CPU per call.
//! * [`validation`]: what checking a tool's result against its `outputSchema` costs a warm
//!   call, both drivers, with and without the check (and `benches/schema.rs`: compiling the
//!   schema and checking one result alone).
//! * [`stats`]: latency percentiles, CPU accounting from `/proc`, machine load.
//! * [`report`]: the Markdown tables (and reading criterion's estimates).

pub mod cases;
pub mod memory;
pub mod overrun;
pub mod report;
pub mod rmcp_server;
pub mod sdks;
pub mod server;
pub mod stats;
pub mod validation;
pub mod whole;
pub mod wire;
