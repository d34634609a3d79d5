//! Drives tool calls against canned answers on a manual clock and prints each leg with its
//! grant: the budget rule, visible without a server.
//!
//! `cargo run -p mcp-proto --example budget`

use std::time::Duration;

use http::{HeaderMap, HeaderValue, StatusCode};
use mcp_proto::driver::LegKind;
use mcp_proto::driver::{Input, LegStatus, Output};
use mcp_proto::{Clock, ManualClock, Session, SessionConfig};
use serde_json::{Map, Value, json};

/// Plays a server whose legs take `durations` seconds, printing each leg.
fn tool_call(title: &str, durations: &[f64]) {
    println!("{title}");
    let clock = ManualClock::new();
    let t0 = clock.now();
    let config = SessionConfig::new("http://tools.example.test:8080/mcp").expect("a valid URL");
    let mut session = Session::new(config);
    let mut args = Map::new();
    args.insert("text".into(), json!("hello"));
    let mut op = session.call_tool("echo", args, clock.now());
    let mut durations = durations.iter().copied();
    loop {
        // Alone on its session: poll_on applies what the operation learns to the session.
        match op.poll_on(&mut session, clock.now()) {
            Output::Update(_) => {}
            Output::Authorize(_) => {
                op.handle_input(Input::NoAuthorizer, clock.now());
            }
            Output::Transmit(leg) => {
                let spent = Duration::from_secs_f64(durations.next().unwrap_or(0.0));
                println!(
                    "  leg={} method={:<26} granted={:>2} s  spent={:>4.1} s",
                    leg.id.number(),
                    leg.kind.label(),
                    leg.timeout.as_secs(),
                    spent.as_secs_f64()
                );
                clock.advance(spent);
                let id = serde_json::from_slice::<Value>(leg.request.body())
                    .ok()
                    .and_then(|b| b.get("id").cloned());
                let (status, body) = canned(leg.kind, id);
                let mut headers = HeaderMap::new();
                headers.insert("content-type", HeaderValue::from_static("application/json"));
                headers.insert("mcp-session-id", HeaderValue::from_static("demo-session"));
                let now = clock.now();
                if op.handle_input(
                    Input::Head {
                        leg: leg.id,
                        status,
                        headers: &headers,
                    },
                    now,
                ) == LegStatus::ReadMore
                    && op.handle_input(
                        Input::Chunk {
                            leg: leg.id,
                            bytes: &body,
                        },
                        now,
                    ) == LegStatus::ReadMore
                {
                    op.handle_input(Input::End { leg: leg.id }, now);
                }
            }
            Output::Event(_) => {}
            // A server's request: the caller's responder answers it (none is registered here).
            Output::Request(request) => {
                op.handle_input(request.reply_from(op.session_config()), clock.now());
            }
            // The operation's own account of each leg: what a trace prints.
            Output::LegEnded(report) => println!("    {report}"),
            Output::Wait(until) | Output::AwaitSession(until) => {
                clock.set(until);
                op.handle_input(Input::Timeout, clock.now());
            }
            Output::Done(result) => {
                let total = clock.now() - t0;
                match result {
                    Ok(outcome) => println!(
                        "  done after {:.1} s: {:?}",
                        total.as_secs_f64(),
                        outcome.into_call().map(|c| c.text()).unwrap_or_default()
                    ),
                    Err(err) => println!("  refused after {:.1} s: {err}", total.as_secs_f64()),
                }
                break;
            }
        }
    }
    println!();
}

fn canned(kind: LegKind, id: Option<Value>) -> (StatusCode, Vec<u8>) {
    let result = match kind {
        LegKind::Initialized => return (StatusCode::ACCEPTED, Vec::new()),
        LegKind::Initialize => json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "canned", "version": "1.0"}
        }),
        _ => json!({"content": [{"type": "text", "text": "hello"}]}),
    };
    let body = json!({"jsonrpc": "2.0", "id": id, "result": result});
    (
        StatusCode::OK,
        serde_json::to_vec(&body).unwrap_or_default(),
    )
}

fn main() {
    tool_call(
        "A tool call under the default 20 s budget; the handshake takes 4 s + 2 s:",
        &[4.0, 2.0, 1.0],
    );
    tool_call(
        "A slow handshake (12 s + 8 s) spends the budget; tools/call is never sent:",
        &[12.0, 8.0],
    );
}
