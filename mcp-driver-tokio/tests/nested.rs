//! A request the server sends on the stream of an answer is answered with a nested leg while
//! the stream is read. The test server (`mcp-testkit`) sends no server requests, so this file
//! has a small hand-written HTTP/1.1 server of its own that does.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::Duration;

use common::{Recorder, echo};
use mcp_driver_tokio::Client;
use mcp_proto::{Event, LegEnd, LegKind, Resolution, SessionConfig};
use serde_json::{Value, json};

/// What the server saw: every JSON body, in order.
type Seen = Arc<Mutex<Vec<Value>>>;

/// Serves `initialize`, `notifications/initialized`, and a `tools/call` answered on an event
/// stream that first sends the server request `server_request`, waits for the client's
/// answer, then sends the result and keeps the stream open.
fn start(server_request: Value) -> (SocketAddr, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let seen: Seen = Arc::default();
    let (answered_tx, answered_rx) = mpsc::channel::<()>();
    let answered_rx = Arc::new(Mutex::new(answered_rx));
    let record = Arc::clone(&seen);
    thread::spawn(move || {
        for stream in listener.incoming().take(8) {
            let Ok(stream) = stream else { return };
            let seen = Arc::clone(&record);
            let tx = answered_tx.clone();
            let rx = Arc::clone(&answered_rx);
            let request = server_request.clone();
            thread::spawn(move || serve(stream, &seen, &tx, &rx, &request));
        }
    });
    (addr, seen)
}

fn serve(
    stream: TcpStream,
    seen: &Seen,
    answered_tx: &Sender<()>,
    answered_rx: &Mutex<Receiver<()>>,
    server_request: &Value,
) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let Ok(write_half) = stream.try_clone() else {
        return;
    };
    let mut writer = write_half;
    let mut reader = BufReader::new(stream);
    loop {
        let mut length = 0usize;
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        seen.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(message.clone());
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        let reply = match message.get("method").and_then(Value::as_str) {
            Some("initialize") => {
                let answer = json!({"jsonrpc": "2.0", "id": id, "result": {
                    "protocolVersion": "2025-06-18", "capabilities": {},
                    "serverInfo": {"name": "nested", "version": "1"}}});
                let body = answer.to_string();
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: s-1\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                )
            }
            Some("tools/call") => {
                let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
                let ask = format!("event: message\ndata: {server_request}\n\n");
                let _ = writer.write_all(format!("{head}{:x}\r\n{ask}\r\n", ask.len()).as_bytes());
                let _ = writer.flush();
                let got = answered_rx
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .recv_timeout(Duration::from_secs(5));
                if got.is_err() {
                    return;
                }
                let answer = json!({"jsonrpc": "2.0", "id": id, "result": {
                    "content": [{"type": "text", "text": "after the server's request"}]}});
                let event = format!("event: message\ndata: {answer}\n\n");
                let _ = writer.write_all(format!("{:x}\r\n{event}\r\n", event.len()).as_bytes());
                let _ = writer.flush();
                // Keep the stream open until the client drops it.
                let mut rest = Vec::new();
                let _ = reader.read_to_end(&mut rest);
                return;
            }
            Some(_) => "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n".to_owned(),
            None => {
                // The client's answer to the server request.
                let _ = answered_tx.send(());
                "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n".to_owned()
            }
        };
        if writer.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

fn config(addr: SocketAddr) -> SessionConfig {
    SessionConfig::new(&format!("http://{addr}/mcp"))
        .expect("valid URL")
        .with_resolution(Resolution::MILLISECOND)
}

#[tokio::test]
async fn a_server_ping_on_the_stream_is_answered_with_a_nested_leg() {
    let (addr, seen) = start(json!({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"}));
    let mut client = Client::new(config(addr));
    let recorder = Recorder::default();
    client.set_observer(recorder.clone());
    let result = tokio::time::timeout(Duration::from_secs(10), client.call_tool("echo", echo("x")))
        .await
        .expect("within 10 s")
        .expect("the call");
    assert_eq!(result.text(), "after the server's request");

    let seen = seen.lock().unwrap_or_else(PoisonError::into_inner).clone();
    assert_eq!(seen.len(), 4, "{seen:?}");
    assert_eq!(
        seen[3],
        json!({"jsonrpc": "2.0", "id": "srv-1", "result": {}})
    );

    let legs = recorder.legs();
    let kinds: Vec<(u32, LegKind)> = legs.iter().map(|l| (l.number, l.kind)).collect();
    // The nested answer finishes (and is reported) before the stream it was sent from.
    assert_eq!(
        kinds,
        [
            (1, LegKind::Initialize),
            (2, LegKind::Initialized),
            (4, LegKind::Respond),
            (3, LegKind::CallTool)
        ]
    );
    assert_eq!(legs[2].end, LegEnd::Status(202));
    assert!(legs[2].grant <= legs[3].grant);
    let events = recorder.events();
    assert!(
        matches!(&events[..], [Event::ServerRequest { method, .. }] if method == "ping"),
        "{events:?}"
    );
}

#[tokio::test]
async fn an_elicitation_is_answered_by_the_registered_responder() {
    let (addr, seen) = start(
        json!({"jsonrpc": "2.0", "id": 7, "method": "elicitation/create",
        "params": {"message": "name?", "requestedSchema": {"type": "object",
            "properties": {"name": {"type": "string", "default": "Ada"}}}}}),
    );
    let config = config(addr).respond_to("elicitation/create", |params| {
        Ok(mcp_proto::model::accept_elicitation_with_defaults(params))
    });
    let mut client = Client::new(config);
    let result = tokio::time::timeout(Duration::from_secs(10), client.call_tool("echo", echo("x")))
        .await
        .expect("within 10 s")
        .expect("the call");
    assert_eq!(result.text(), "after the server's request");
    let seen = seen.lock().unwrap_or_else(PoisonError::into_inner).clone();
    assert_eq!(
        seen[0]["params"]["capabilities"],
        json!({"elicitation": {}}),
        "the capability is declared"
    );
    assert_eq!(
        seen[3],
        json!({"jsonrpc": "2.0", "id": 7, "result": {"action": "accept", "content": {"name": "Ada"}}})
    );
}
