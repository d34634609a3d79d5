//! N sequential `tools/call`s of one driver against a running `mcp-bench serve` (or a stdio
//! server it starts): a profile target, since it does nothing else. Instructions per call are
//! the difference of two runs under callgrind (the start-up cancels out):
//!
//! ```text
//! sleep infinity | target/release/mcp-bench serve > /tmp/serve.txt &
//! URL=$(awk '$1=="json"{print $2}' /tmp/serve.txt)
//! for n in 100 1100; do
//!   valgrind --tool=callgrind target/release/examples/warm_calls blocking $URL $n
//! done   # (Collected(1100) - Collected(100)) / 1000 = instructions per call
//! ```
//!
//! `cold` as a fourth argument makes every call a new client (handshake and call, then
//! dropped, or closed over stdio), as the bench's cold rows do; `stdio:PATH` instead of a URL runs the stdio server
//! at PATH (`target/release/mcp-testkit-stdio`).
use mcp_bench::wire::{TOOL, arguments};
use mcp_proto::{ProtocolVersion, SessionConfig, StdioCommand};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (driver, url, calls, cold) = match &args[..] {
        [_, driver, url, calls] => (driver, url, calls, false),
        [_, driver, url, calls, cold] if cold == "cold" => (driver, url, calls, true),
        _ => {
            eprintln!("usage: warm_calls blocking|tokio URL|stdio:PATH CALLS [cold]");
            std::process::exit(2);
        }
    };
    let calls: usize = calls.parse().expect("CALLS is a number");
    // A stdio server is closed before the next client starts its own (as the bench's cold
    // stdio rows do); an HTTP client is dropped (as the cold HTTP rows do: no DELETE).
    let stdio = url.starts_with("stdio:");
    let config = match url.strip_prefix("stdio:") {
        Some(path) => SessionConfig::stdio(StdioCommand::new(path)),
        None => SessionConfig::new(url).expect("a valid URL"),
    }
    .with_protocol_version(ProtocolVersion::LATEST);
    if driver == "blocking" {
        let mut client = mcp_driver_blocking::Client::new(config.clone());
        for _ in 0..calls {
            if cold {
                if stdio {
                    client.close().expect("the close");
                }
                client = mcp_driver_blocking::Client::new(config.clone());
            }
            client.call_tool(TOOL, arguments()).expect("the call");
        }
        if stdio {
            client.close().expect("the close");
        }
    } else {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        rt.block_on(async {
            let mut client = mcp_driver_tokio::Client::new(config.clone());
            for _ in 0..calls {
                if cold {
                    if stdio {
                        client.close().await.expect("the close");
                    }
                    client = mcp_driver_tokio::Client::new(config.clone());
                }
                client.call_tool(TOOL, arguments()).await.expect("the call");
            }
            if stdio {
                client.close().await.expect("the close");
            }
        });
    }
}
