//! The embedded demo server: what `mcp-call` speaks to when no server is named, so that the
//! README's first command runs with nothing else installed. A legacy-era (2025-11-25)
//! Streamable HTTP server on 127.0.0.1, with sessions, three tools (`echo`, `add`, `fail`), and
//! a handshake made slow on purpose (`initialize` 300 ms, `notifications/initialized` 100 ms)
//! so that `--trace` shows each leg granted what the ones before it left. It refuses the
//! 2026-07-28 era's stateless request as a legacy server does (400, no session), which shows the
//! client's fallback to the handshake inside the same budget.
//!
//! It is a demonstration, not a test server: it has no hostile modes and no script (the test
//! kit, `mcp-testkit`, has those, and `mcp-call` does not depend on it). It must never bind
//! anything but loopback.

use std::collections::HashSet;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Value, json};

/// The handshake's delays: long enough to read in a trace.
const INITIALIZE_DELAY: Duration = Duration::from_millis(300);
const INITIALIZED_DELAY: Duration = Duration::from_millis(100);
/// The largest request body it reads.
const BODY_CAP: usize = 1 << 20;
/// The versions it speaks (the legacy era only); the first is the one it prefers.
const VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

/// A running demo server. It stops serving when dropped (the thread it runs on ends with the
/// connections in flight).
#[derive(Debug)]
pub(crate) struct Demo {
    addr: SocketAddr,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Demo {
    /// Starts the server on a free port of 127.0.0.1, on a thread of its own.
    pub(crate) fn start() -> std::io::Result<Self> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (stop, stopped) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name("mcp-call-demo".to_owned())
            .spawn(move || runtime.block_on(serve(listener, stopped)))?;
        Ok(Self { addr, _stop: stop })
    }

    /// The MCP endpoint, `http://127.0.0.1:<port>/mcp`.
    pub(crate) fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }
}

/// The live sessions' ids.
#[derive(Debug, Default)]
struct Sessions {
    live: Mutex<HashSet<String>>,
    issued: Mutex<u64>,
}

impl Sessions {
    fn open(&self) -> String {
        let mut issued = self.issued.lock().unwrap_or_else(PoisonError::into_inner);
        *issued += 1;
        let id = format!("demo-{issued}");
        let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        live.insert(id.clone());
        id
    }

    fn is_live(&self, id: &str) -> bool {
        let live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        live.contains(id)
    }

    fn close(&self, id: &str) -> bool {
        let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        live.remove(id)
    }
}

/// Accepts connections until `stopped`, each served on a task of its own.
async fn serve(listener: std::net::TcpListener, mut stopped: tokio::sync::oneshot::Receiver<()>) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    let sessions = Arc::new(Sessions::default());
    loop {
        let stream = tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => continue,
            },
        };
        let sessions = sessions.clone();
        let service = hyper::service::service_fn(move |request| {
            let sessions = sessions.clone();
            async move { Ok::<_, Infallible>(answer(request, &sessions).await) }
        });
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, service)
                .await;
        });
    }
}

/// The answer to one HTTP request.
async fn answer(request: Request<Incoming>, sessions: &Sessions) -> Response<Full<Bytes>> {
    if request.uri().path() != "/mcp" {
        return text(StatusCode::NOT_FOUND, "not found");
    }
    let session = (request.headers().get("mcp-session-id"))
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    match *request.method() {
        Method::POST => {}
        Method::DELETE => {
            return match session.is_some_and(|id| sessions.close(&id)) {
                true => text(StatusCode::OK, ""),
                false => text(StatusCode::NOT_FOUND, "session not found"),
            };
        }
        // No standalone stream: the demo sends nothing outside an answer.
        _ => {
            let mut refused = text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed");
            let allow = hyper::header::HeaderValue::from_static("POST, DELETE");
            refused.headers_mut().insert(hyper::header::ALLOW, allow);
            return refused;
        }
    }
    let body = match http_body_util::Limited::new(request.into_body(), BODY_CAP)
        .collect()
        .await
    {
        Ok(body) => body.to_bytes(),
        Err(_) => return text(StatusCode::PAYLOAD_TOO_LARGE, "the request is too large"),
    };
    let Ok(Value::Object(message)) = serde_json::from_slice::<Value>(&body) else {
        let error = rpc_error(&Value::Null, -32700, "Parse error: not a JSON-RPC object");
        return json_answer(StatusCode::BAD_REQUEST, &error);
    };
    let id = message.get("id").cloned();
    let method = message.get("method").and_then(Value::as_str).unwrap_or("");
    if method == "initialize" {
        tokio::time::sleep(INITIALIZE_DELAY).await;
        let asked = (message.get("params"))
            .and_then(|p| p.get("protocolVersion"))
            .and_then(Value::as_str);
        let version = VERSIONS
            .into_iter()
            .find(|v| Some(*v) == asked)
            .unwrap_or(VERSIONS[0]);
        let result = json!({
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "mcp-call demo", "version": env!("CARGO_PKG_VERSION")},
        });
        let id = id.unwrap_or(Value::Null);
        let mut response = json_answer(StatusCode::OK, &rpc_result(&id, result));
        if let Ok(value) = hyper::header::HeaderValue::from_str(&sessions.open()) {
            response.headers_mut().insert("mcp-session-id", value);
        }
        return response;
    }
    // Every other message belongs to a session: none (the 2026-07-28 era's stateless request,
    // among others) is refused as the TypeScript SDK's servers refuse it, an unknown one is
    // gone (404).
    match &session {
        None => {
            let id = id.unwrap_or(Value::Null);
            let message = "Bad Request: No valid session ID provided";
            return json_answer(StatusCode::BAD_REQUEST, &rpc_error(&id, -32000, message));
        }
        Some(session) if !sessions.is_live(session) => {
            let id = id.unwrap_or(Value::Null);
            let error = rpc_error(&id, -32001, "Session not found");
            return json_answer(StatusCode::NOT_FOUND, &error);
        }
        Some(_) => {}
    }
    let Some(id) = id else {
        // A notification: accepted.
        if method == "notifications/initialized" {
            tokio::time::sleep(INITIALIZED_DELAY).await;
        }
        return text(StatusCode::ACCEPTED, "");
    };
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    match method {
        "ping" => json_answer(StatusCode::OK, &rpc_result(&id, json!({}))),
        "tools/list" => json_answer(StatusCode::OK, &rpc_result(&id, tools())),
        // A call is answered as an event stream, as most servers answer one.
        "tools/call" => match call(&params) {
            Ok(result) => event_stream(&rpc_result(&id, result)),
            Err(message) => json_answer(StatusCode::OK, &rpc_error(&id, -32602, &message)),
        },
        _ => {
            let error = rpc_error(&id, -32601, &format!("Method not found: {method}"));
            json_answer(StatusCode::OK, &error)
        }
    }
}

/// The tools it offers.
fn tools() -> Value {
    let tool = |name: &str, description: &str, properties: Value, required: &[&str]| {
        json!({"name": name, "description": description, "inputSchema":
            {"type": "object", "properties": properties, "required": required}})
    };
    json!({"tools": [
        tool("echo", "Returns the given text.", json!({"text": {"type": "string"}}), &["text"]),
        tool(
            "add",
            "Adds two numbers.",
            json!({"a": {"type": "number"}, "b": {"type": "number"}}),
            &["a", "b"],
        ),
        tool("fail", "Always fails.", json!({}), &[]),
    ]})
}

/// A tool's result, or why the call is refused (invalid params).
fn call(params: &Value) -> Result<Value, String> {
    let text = |text: String, is_error: bool| json!({"content": [{"type": "text", "text": text}], "isError": is_error});
    let arguments = params.get("arguments").cloned().unwrap_or(json!({}));
    match params.get("name").and_then(Value::as_str) {
        Some("echo") => match arguments.get("text").and_then(Value::as_str) {
            Some(said) => Ok(text(said.to_owned(), false)),
            None => Err("missing argument: text".to_owned()),
        },
        Some("add") => match (
            arguments.get("a").and_then(Value::as_f64),
            arguments.get("b").and_then(Value::as_f64),
        ) {
            (Some(a), Some(b)) => {
                let mut result = text((a + b).to_string(), false);
                result["structuredContent"] = json!({"sum": a + b});
                Ok(result)
            }
            _ => Err("missing argument: a and b are numbers".to_owned()),
        },
        Some("fail") => Ok(text("the tool failed on purpose".to_owned(), true)),
        Some(other) => Err(format!("unknown tool: {other}")),
        None => Err("missing the tool's name".to_owned()),
    }
}

fn rpc_result(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn rpc_error(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

fn text(status: StatusCode, body: &'static str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    *response.status_mut() = status;
    response
}

fn json_answer(status: StatusCode, message: &Value) -> Response<Full<Bytes>> {
    with_type(status, "application/json", message.to_string())
}

fn event_stream(message: &Value) -> Response<Full<Bytes>> {
    let event = format!("event: message\ndata: {message}\n\n");
    with_type(StatusCode::OK, "text/event-stream", event)
}

fn with_type(status: StatusCode, media: &'static str, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    let media = hyper::header::HeaderValue::from_static(media);
    response
        .headers_mut()
        .insert(hyper::header::CONTENT_TYPE, media);
    response
}
