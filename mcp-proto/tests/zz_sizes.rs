#[test]
fn sizes() {
    use mcp_proto::driver::*;
    use std::mem::size_of;
    eprintln!("Output {}", size_of::<Output>());
    eprintln!("Update {}", size_of::<mcp_proto::SessionUpdate>());
    eprintln!("Leg {}", size_of::<Leg>());
    eprintln!("Event {}", size_of::<mcp_proto::Event>());
    eprintln!("ServerRequest {}", size_of::<ServerRequest>());
    eprintln!("LegReport {}", size_of::<mcp_proto::LegReport>());
    eprintln!("Authorize {}", size_of::<mcp_proto::Authorize>());
    eprintln!(
        "Done {}",
        size_of::<Result<mcp_proto::Outcome, mcp_proto::Error>>()
    );
    eprintln!("Outcome {}", size_of::<mcp_proto::Outcome>());
    eprintln!("Error {}", size_of::<mcp_proto::Error>());
    eprintln!("Operation {}", size_of::<Operation>());
}
