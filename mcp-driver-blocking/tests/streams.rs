//! Stream features the state machine drives and this driver carries: a request from the
//! server answered while its stream is read (a nested leg), a cancel during the pause before
//! resuming a stream, the cancel notice.
//!
//! The testkit does not send server-to-client requests, so the nested-leg test runs against a
//! minimal hand-written server. Resuming with a GET, closing with a DELETE and a cancel that
//! sends nothing more are in the suite shared with the tokio driver, `tests/tests/drivers.rs`
//! of `mcp-testkit`.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use common::{Recorder, client, config, text_args};
use mcp_driver_blocking::Client;
use mcp_proto::model::accept_elicitation_with_defaults;
use mcp_proto::{Error, Event, LegEnd, LegKind};
use mcp_testkit::{Hostile, Script, TestServer};
use serde_json::{Value, json};

/// Reads one HTTP request and returns its body.
fn read_request(stream: &TcpStream) -> Option<Vec<u8>> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let length = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(body)
}

/// A server whose `tools/call` answer stream first asks the client to elicit, waits for the
/// client's answer (a separate POST), then answers the call with what was elicited. Every
/// response closes its connection. Returns the URL and the methods it saw.
fn eliciting_server() -> (String, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (seen_tx, seen_rx) = mpsc::channel();
    let (answer_tx, answer_rx) = mpsc::channel::<Value>();
    let answer_rx = std::sync::Arc::new(std::sync::Mutex::new(answer_rx));
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let seen_tx = seen_tx.clone();
            let answer_tx = answer_tx.clone();
            let answer_rx = answer_rx.clone();
            thread::spawn(move || {
                let Some(body) = read_request(&stream) else {
                    return;
                };
                let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let method = message["method"]
                    .as_str()
                    .unwrap_or("(response)")
                    .to_owned();
                let _ = seen_tx.send(method.clone());
                let id = message["id"].clone();
                let json = |body: Value| {
                    let body = body.to_string();
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: s-1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    )
                };
                let reply = match method.as_str() {
                    "initialize" => json(json!({"jsonrpc": "2.0", "id": id, "result": {
                        "protocolVersion": "2025-06-18", "capabilities": {},
                        "serverInfo": {"name": "eliciting", "version": "1"}}})),
                    "tools/call" => {
                        let ask = json!({"jsonrpc": "2.0", "id": "srv-1", "method": "elicitation/create",
                            "params": {"message": "name?", "requestedSchema": {"type": "object",
                            "properties": {"name": {"type": "string", "default": "Ada"}}}}});
                        let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
                        let _ = stream
                            .write_all(format!("{head}event: message\ndata: {ask}\n\n").as_bytes());
                        let _ = stream.flush();
                        let answer = answer_rx
                            .lock()
                            .unwrap()
                            .recv_timeout(Duration::from_secs(5))
                            .unwrap_or(Value::Null);
                        let name = answer["result"]["content"]["name"]
                            .as_str()
                            .unwrap_or("nobody")
                            .to_owned();
                        let result = json!({"jsonrpc": "2.0", "id": id, "result": {
                            "content": [{"type": "text", "text": format!("hello {name}")}]}});
                        format!("event: message\ndata: {result}\n\n")
                    }
                    "(response)" => {
                        let _ = answer_tx.send(message);
                        "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                            .to_owned()
                    }
                    _ => "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                        .to_owned(),
                };
                let _ = stream.write_all(reply.as_bytes());
            });
        }
    });
    (url, seen_rx)
}

#[test]
fn a_request_from_the_server_is_answered_while_its_stream_is_read() {
    let (url, seen) = eliciting_server();
    let config = mcp_proto::SessionConfig::new(&url)
        .unwrap()
        .with_budget(mcp_proto::Budget::from_secs(10))
        .with_resolution(mcp_proto::Resolution::MILLISECOND)
        .respond_to("elicitation/create", |params| {
            Ok(accept_elicitation_with_defaults(params))
        });
    let mut client = Client::new(config);
    let recorder = Recorder::default();
    client.set_observer(recorder.clone());
    let result = client.call_tool("greet", serde_json::Map::new()).unwrap();
    assert_eq!(result.text(), "hello Ada");
    let methods: Vec<String> = seen.try_iter().collect();
    assert_eq!(
        methods,
        [
            "initialize",
            "notifications/initialized",
            "tools/call",
            "(response)"
        ]
    );
    let kinds: Vec<LegKind> = recorder.legs().iter().map(|l| l.kind).collect();
    assert_eq!(
        kinds,
        [
            LegKind::Initialize,
            LegKind::Initialized,
            LegKind::Respond,
            LegKind::CallTool
        ],
        "the nested answer ends before the stream that carried the request"
    );
    assert!(recorder.events().iter().any(|e| matches!(
        e,
        Event::ServerRequest { method, .. } if method == "elicitation/create"
    )));
}

#[test]
fn a_cancel_during_the_pause_before_resuming_ends_at_once() {
    let server = TestServer::start(Script::new().hostile(
        "tools/call",
        Hostile::CloseAfterPriming { retry_ms: 10_000 },
    ));
    let (mut client, _) = client(&server, Duration::from_secs(30));
    let handle = client.cancel_handle();
    let canceller = thread::spawn(move || {
        thread::sleep(Duration::from_millis(500));
        let at = Instant::now();
        handle.cancel();
        at
    });
    let err = client.call_tool("echo", text_args("x")).unwrap_err();
    let returned = Instant::now();
    let latency = returned.saturating_duration_since(canceller.join().unwrap());
    eprintln!("cancel while waiting to resume: returned {latency:?} after cancel()");
    assert!(matches!(err, Error::Cancelled { .. }), "{err:?}");
    assert!(latency < Duration::from_secs(1), "{latency:?}");
}

#[test]
fn a_cancelled_call_can_be_followed_by_a_cancel_notice() {
    let server = TestServer::start(Script::new().hostile("tools/call", Hostile::Stall));
    let mut client = Client::new(config(&server, Duration::from_secs(30)));
    let recorder = Recorder::default();
    client.set_observer(recorder.clone());
    client.set_cancel_notice(true);
    client.probe().unwrap();
    let handle = client.cancel_handle();
    let canceller = thread::spawn(move || {
        thread::sleep(Duration::from_millis(300));
        let at = Instant::now();
        handle.cancel();
        at
    });
    let err = client.call_tool("echo", text_args("x")).unwrap_err();
    let latency = Instant::now().saturating_duration_since(canceller.join().unwrap());
    eprintln!("cancel with notice: returned {latency:?} after cancel()");
    assert!(matches!(err, Error::Cancelled { .. }), "{err:?}");
    assert!(latency < Duration::from_secs(1), "{latency:?}");
    assert_eq!(
        server.rpc_methods(),
        [
            "initialize",
            "notifications/initialized",
            "tools/call",
            "notifications/cancelled"
        ]
    );
    let call_id = server.requests()[2].rpc_id.clone().unwrap();
    let notice = server.requests()[3].json().unwrap();
    assert_eq!(notice["params"]["requestId"], call_id);
    let legs = recorder.legs();
    let last = legs.last().unwrap();
    assert_eq!(last.kind, LegKind::CancelNotice);
    assert_eq!(last.end, LegEnd::Status(202));
    assert_eq!(legs[legs.len() - 2].end, LegEnd::Cancelled);
}
