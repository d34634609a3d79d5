//! Benchmarks of the MCP drivers (`mcp-driver-blocking`, `mcp-driver-tokio`) against their
//! bare-HTTP floors, against the official Rust SDK (`rmcp`) and against the TypeScript and
//! Python SDKs' clients, all on one loopback server.
//!
//! Everything is driven by `bench/run.sh`, which builds in release, runs the criterion parsing
//! benchmarks (`benches/parse.rs`) and the `mcp-bench` binary, and writes the tables into
//! `BENCHMARKS.md`. The pieces:
//!
//! * [`server`]: the loopback MCP server every client talks to (`mcp-testkit`'s, run in a
//!   **separate process** so that its CPU time is accounted apart from the clients'), the
//!   connections and `initialize` requests it counts for each case, and the measurement of
//!   its own calls/s ceiling with raw keep-alive clients (and `wrk` when present).
//! * [`wire`]: the exact requests `mcp-proto` sends (so the floors post the same bytes), and the
//!   canned `tools/list` answers and the sans-IO driving used by the parsing benchmarks.
//! * [`cases`]: the network cases (sequential calls on a reused session, cold operations,
//!   operations in flight at once with a client per task, and operations in flight at once on
//!   one client and session shared by the tasks), each client measured the same way.
//! * [`sdks`]: the cross-SDK table: the same cases from `mcp-driver-blocking`,
//!   `mcp-driver-tokio`, rmcp, the TypeScript SDK and the Python SDK, each client in a process
//!   of its own (`mcp-bench client-child`, `bench/peers/ts_client.mjs`,
//!   `bench/peers/py_client.py`), its CPU time and peak memory read from `/proc`.
//! * [`memory`]: peak RSS of one blocking call facing a 100 MiB answer, in a child process.
//! * [`stats`]: latency percentiles, CPU accounting from `/proc`, machine load.
//! * [`report`]: the Markdown tables (and reading criterion's estimates).

pub mod cases;
pub mod memory;
pub mod report;
pub mod sdks;
pub mod server;
pub mod stats;
pub mod wire;
