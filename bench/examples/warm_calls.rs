//! N warm sequential `tools/call`s of one driver against a running `mcp-bench serve`: a
//! profile target, since it does nothing else. Instructions per call are the difference of
//! two runs under callgrind (the start-up cancels out):
//!
//! ```text
//! sleep infinity | target/release/mcp-bench serve > /tmp/serve.txt &
//! URL=$(awk '$1=="json"{print $2}' /tmp/serve.txt)
//! for n in 100 1100; do
//!   valgrind --tool=callgrind target/release/examples/warm_calls blocking $URL $n
//! done   # (Collected(1100) - Collected(100)) / 1000 = instructions per call
//! ```
use mcp_bench::wire::{TOOL, arguments};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, driver, url, calls] = &args[..] else {
        eprintln!("usage: warm_calls blocking|tokio URL CALLS");
        std::process::exit(2);
    };
    let calls: usize = calls.parse().expect("CALLS is a number");
    let config = mcp_proto::SessionConfig::new(url)
        .expect("a valid URL")
        .with_protocol_version(mcp_proto::ProtocolVersion::LATEST);
    if driver == "blocking" {
        let client = mcp_driver_blocking::Client::new(config);
        for _ in 0..calls {
            client.call_tool(TOOL, arguments()).expect("the call");
        }
    } else {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        rt.block_on(async {
            let client = mcp_driver_tokio::Client::new(config);
            for _ in 0..calls {
                client.call_tool(TOOL, arguments()).await.expect("the call");
            }
        });
    }
}
