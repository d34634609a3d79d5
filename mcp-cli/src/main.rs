//! `mcp-call`: the operator's command line (not built yet).
//!
//! This binary will probe an MCP server, list its tools and call one, each as one operation
//! under one budget. Until then it says so and exits with the usage code.

fn main() {
    eprintln!("mcp-call is not built yet; see `cargo run -p mcp-proto --example budget`");
    std::process::exit(2);
}
