//! The driver's spans printed with `tracing-subscriber`: a cold tool call against the testkit's
//! demo server (legacy era pinned: three legs) is one `mcp.operation` span with one `mcp.leg`
//! span per leg.
//!
//! ```sh
//! cargo run -p mcp-driver-blocking --example tracing_spans
//! ```

use mcp_driver_blocking::Client;
use mcp_proto::{ProtocolVersion, Resolution, SessionConfig};
use mcp_testkit::TestServer;
use tracing_subscriber::fmt::format::FmtSpan;

fn main() -> Result<(), mcp_proto::Error> {
    tracing_subscriber::fmt()
        .with_span_events(FmtSpan::CLOSE)
        .with_target(false)
        .init();
    let server = TestServer::demo();
    let config = SessionConfig::new(&server.url())?
        .with_resolution(Resolution::MILLISECOND)
        .with_protocol_version(ProtocolVersion::LATEST);
    let client = Client::new(config);
    let mut arguments = serde_json::Map::new();
    arguments.insert("text".into(), "hello".into());
    let result = client.call_tool("echo", arguments)?;
    println!("{}", result.text());
    Ok(())
}
