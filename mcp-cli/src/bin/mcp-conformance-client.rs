//! `mcp-conformance-client`: the client the official MCP conformance suite drives.
//!
//! The suite runs `mcp-conformance-client <server-url>` (the URL is the **last** argument) with
//! the scenario in `MCP_CONFORMANCE_SCENARIO`, and expects exit 0 once the scenario is done.
//! It runs on the blocking driver, every operation under a 10 s budget at millisecond
//! resolution, so the whole run gives up by itself well before the suite's 25 s.
//! Run it with `../shared/conformance/run.sh target/release/mcp-conformance-client`.

use std::process::ExitCode;
use std::time::Duration;

use mcp_driver_blocking::Client;
use mcp_proto::model::accept_elicitation_with_defaults;
use mcp_proto::{Budget, Error, Resolution, SessionConfig};
use serde_json::{Map, Value, json};

fn main() -> ExitCode {
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!(
            "usage: mcp-conformance-client <server-url>  (scenario in MCP_CONFORMANCE_SCENARIO)"
        );
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    match run(&url, &scenario) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("mcp-conformance-client: scenario {scenario:?}: {err}");
            ExitCode::FAILURE
        }
    }
}

fn run(url: &str, scenario: &str) -> Result<(), Error> {
    let config = SessionConfig::new(url)?
        .budget(Budget::from_duration(Duration::from_secs(10)))
        .resolution(Resolution::MILLISECOND)
        .client_info("mcp-conformance-client", env!("CARGO_PKG_VERSION"))
        .respond_to("elicitation/create", |params| {
            Ok(accept_elicitation_with_defaults(params))
        });
    let mut client = Client::new(config);
    match scenario {
        "initialize" => {
            let info = client.probe()?;
            eprintln!(
                "server {} {} (protocol {})",
                info.server.name, info.server.version, info.protocol_version
            );
        }
        "tools_call" => {
            client.list_tools()?;
            let result = client.call_tool("add_numbers", object(json!({"a": 5, "b": 3})))?;
            eprintln!("{}", result.text());
        }
        "elicitation-sep1034-client-defaults" => {
            client.list_tools()?;
            let result = client.call_tool("test_client_elicitation_defaults", Map::new())?;
            eprintln!("{}", result.text());
        }
        _ => {
            // sse-retry and any other scenario: walk the tools and call the first one.
            let tools = client.list_tools()?;
            if let Some(tool) = tools.first() {
                let result = client.call_tool(&tool.name, Map::new())?;
                eprintln!("{}", result.text());
            }
        }
    }
    Ok(())
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}
