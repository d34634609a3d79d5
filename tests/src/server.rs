//! The server: listener, connection threads, sessions, recording, answer
//! modes and hostile modes.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::hash::{BuildHasher, Hasher, RandomState};
use std::io::{self, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::era::ServerEra;
use crate::http::{self, BodyWriter, Framing, ReadError, Request, Response};
use crate::mcp::{self, Env};
use crate::message::{Message, RpcKind};
use crate::modern::{self, Verdict};
use crate::oauth::{self, OAuthState, Reply};
use crate::payload::{
    Payload, Piece, id_json, invalid_utf8_payload, nesting_payload, oversize_payload,
};
use crate::recorded::RecordedRequest;
use crate::script::{AnswerMode, Hostile, NotificationReply, Script};

/// How often blocked socket operations wake up to look for shutdown.
const POLL: Duration = Duration::from_millis(50);
/// Interval of `: tick` and `: keepalive` comments.
const TICK: Duration = Duration::from_millis(200);
/// Interval of the comment lines after the answer in [`AnswerMode::SseTrickleAfterAnswer`].
const TRICKLE_AFTER_ANSWER: Duration = Duration::from_micros(500);
/// Payloads up to this size are written in one piece.
const SMALL: u64 = 64 * 1024;
/// How long shutdown waits for threads before leaving them behind.
const JOIN_BUDGET: Duration = Duration::from_secs(2);

const HTML_PAGE: &str = "<!DOCTYPE html>\n<html><head><title>Sign in</title></head>\
<body><h1>Please sign in</h1><p>This is not an MCP endpoint.</p></body></html>\n";

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn aborted() -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionAborted, "server shutting down")
}

/// An SSE answer waiting for a `GET` with `Last-Event-ID` (see
/// [`Hostile::CloseAfterPriming`]).
#[derive(Debug)]
struct PendingResume {
    event_id: String,
    session: Option<String>,
    message: Message,
}

/// A scripted server request waiting for the client's answer (see
/// [`crate::ServerRequest`]).
#[derive(Debug)]
struct Awaited {
    token: u64,
    id: Value,
    answer: Option<Value>,
}

/// State shared by the handle, the accept thread and connection threads.
#[derive(Debug)]
struct Shared {
    stop: AtomicBool,
    stop_lock: Mutex<()>,
    stop_cv: Condvar,
    script: Mutex<Arc<Script>>,
    sessions: Mutex<HashSet<String>>,
    session_counter: AtomicU64,
    requests: Mutex<Vec<RecordedRequest>>,
    requests_cv: Condvar,
    pending: Mutex<Vec<PendingResume>>,
    awaited: Mutex<Vec<Awaited>>,
    awaited_cv: Condvar,
    next_awaited: AtomicU64,
    conns: Mutex<HashMap<u64, TcpStream>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    accepted: AtomicUsize,
    /// `: tick` comments [`Hostile::Trickle`] has written, on every connection.
    ticks: AtomicUsize,
    port: u16,
    oauth: Mutex<OAuthState>,
}

impl Shared {
    fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Sleeps for `d`; returns `false` as soon as the server shuts down.
    fn sleep(&self, d: Duration) -> bool {
        let deadline = Instant::now().checked_add(d);
        let mut guard = lock(&self.stop_lock);
        loop {
            if self.stopping() {
                return false;
            }
            let now = Instant::now();
            let wait = match deadline {
                Some(deadline) if now >= deadline => return true,
                Some(deadline) => deadline - now,
                None => Duration::from_secs(3600),
            };
            guard = self
                .stop_cv
                .wait_timeout(guard, wait)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    fn signal_stop(&self) {
        let guard = lock(&self.stop_lock);
        self.stop.store(true, Ordering::SeqCst);
        self.stop_cv.notify_all();
        drop(guard);
        // Wake the calls waiting for an answer to a server request.
        let _awaited = lock(&self.awaited);
        self.awaited_cv.notify_all();
    }

    /// Registers a server request with this id as waiting for the client's
    /// answer (before it is sent, so an early answer is not missed).
    fn expect_answer(&self, id: &Value) -> u64 {
        let token = self.next_awaited.fetch_add(1, Ordering::SeqCst);
        lock(&self.awaited).push(Awaited {
            token,
            id: id.clone(),
            answer: None,
        });
        token
    }

    /// Hands a client response to the oldest server request with its id that
    /// has no answer yet; a response nobody waits for is only recorded.
    fn deliver_answer(&self, id: &Value, answer: Value) {
        let mut awaited = lock(&self.awaited);
        if let Some(slot) = awaited
            .iter_mut()
            .find(|a| a.answer.is_none() && a.id == *id)
        {
            slot.answer = Some(answer);
            self.awaited_cv.notify_all();
        }
    }

    /// Waits up to `timeout` for the answer registered under `token` and
    /// forgets the registration: `Ok(None)` on timeout, `Err` on shutdown.
    fn wait_answer(&self, token: u64, timeout: Duration) -> io::Result<Option<Value>> {
        let deadline = Instant::now().checked_add(timeout);
        let mut awaited = lock(&self.awaited);
        let outcome = loop {
            if self.stopping() {
                break Err(aborted());
            }
            let Some(slot) = awaited.iter_mut().find(|a| a.token == token) else {
                break Ok(None);
            };
            if let Some(answer) = slot.answer.take() {
                break Ok(Some(answer));
            }
            let now = Instant::now();
            let wait = match deadline {
                Some(deadline) if now >= deadline => break Ok(None),
                Some(deadline) => deadline - now,
                None => Duration::from_secs(3600),
            };
            awaited = self
                .awaited_cv
                .wait_timeout(awaited, wait)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        };
        awaited.retain(|a| a.token != token);
        outcome
    }

    fn script(&self) -> Arc<Script> {
        Arc::clone(&lock(&self.script))
    }

    fn new_session(&self) -> String {
        let n = self.session_counter.fetch_add(1, Ordering::SeqCst) + 1;
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u64(n);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        hasher.write_u128(nanos);
        let id = format!("s-{n}-{:016x}", hasher.finish());
        lock(&self.sessions).insert(id.clone());
        id
    }

    fn record(&self, req: &Request, msg: Option<&Message>) {
        let rec = RecordedRequest {
            method: req.method.clone(),
            path: req.target.clone(),
            headers: req.headers.clone(),
            body: req.body.clone(),
            rpc_method: msg.and_then(|m| m.method.clone()),
            rpc_id: msg.and_then(|m| m.id.clone()),
            rpc_kind: msg.map(|m| m.kind),
            received_at: Instant::now(),
        };
        lock(&self.requests).push(rec);
        self.requests_cv.notify_all();
    }

    /// Checks the session header of a request when sessions are on.
    fn check_session(&self, req: &Request, script: &Script, id: &Value) -> Result<(), Response> {
        if !script.sessions {
            return Ok(());
        }
        match req.header("mcp-session-id") {
            None => Err(json_response(
                400,
                mcp::error_envelope(id, -32000, "missing session id"),
            )),
            Some(s) if lock(&self.sessions).contains(s) => Ok(()),
            Some(_) if script.unknown_session_400 => Err(json_response(
                400,
                mcp::error_envelope(id, -32000, "Bad Request: No valid session ID provided"),
            )),
            Some(_) => Err(json_response(
                404,
                mcp::error_envelope(id, -32001, "session not found"),
            )),
        }
    }
}

fn json_response(status: u16, body: Vec<u8>) -> Response {
    Response::new(status).body("application/json", body)
}

/// Reads from the socket, waking up regularly to notice shutdown.
#[derive(Debug)]
struct ConnReader {
    stream: TcpStream,
    shared: Arc<Shared>,
}

impl Read for ConnReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.shared.stopping() {
                return Err(aborted());
            }
            match self.stream.read(buf) {
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                    ) => {}
                other => return other,
            }
        }
    }
}

/// Writes to the socket, waking up regularly to notice shutdown.
#[derive(Debug)]
struct ConnWriter {
    stream: TcpStream,
    shared: Arc<Shared>,
}

impl Write for ConnWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        loop {
            if self.shared.stopping() {
                return Err(aborted());
            }
            match self.stream.write(buf) {
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                    ) => {}
                other => return other,
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.stream.flush()
    }
}

fn sse_headers() -> Vec<(String, Vec<u8>)> {
    vec![
        ("Content-Type".to_owned(), b"text/event-stream".to_vec()),
        ("Cache-Control".to_owned(), b"no-cache".to_vec()),
    ]
}

/// Where SSE events go: a streamed (chunked) body or a buffer sent with a
/// `Content-Length` at the end.
#[derive(Debug)]
enum SseTarget<'a> {
    Stream(BodyWriter<'a, ConnWriter>),
    Buffer {
        w: &'a mut ConnWriter,
        headers: Vec<(String, Vec<u8>)>,
        close: bool,
        buf: Vec<u8>,
    },
}

#[derive(Debug)]
struct SseOut<'a> {
    target: SseTarget<'a>,
    event_ids: bool,
    next_id: u64,
}

impl<'a> SseOut<'a> {
    fn start(
        w: &'a mut ConnWriter,
        headers: Vec<(String, Vec<u8>)>,
        buffered: bool,
        req: &Request,
        close: bool,
        event_ids: bool,
    ) -> io::Result<Self> {
        let target = if buffered {
            SseTarget::Buffer {
                w,
                headers,
                close,
                buf: Vec::new(),
            }
        } else {
            SseTarget::Stream(BodyWriter::start(w, 200, &headers, req.http10, close)?)
        };
        Ok(Self {
            target,
            event_ids,
            next_id: 1,
        })
    }

    fn is_streaming(&self) -> bool {
        matches!(self.target, SseTarget::Stream(_))
    }

    fn send(&mut self, data: &[u8]) -> io::Result<()> {
        match &mut self.target {
            SseTarget::Stream(body) => body.send(data),
            SseTarget::Buffer { buf, .. } => {
                buf.extend_from_slice(data);
                Ok(())
            }
        }
    }

    fn priming(&mut self) -> io::Result<()> {
        self.send(b"id: 0\ndata:\n\n")
    }

    fn event(&mut self, payload: &Payload) -> io::Result<()> {
        let mut prefix = Vec::new();
        if self.event_ids {
            prefix.extend_from_slice(format!("id: {}\n", self.next_id).as_bytes());
            self.next_id += 1;
        }
        prefix.extend_from_slice(b"event: message\ndata: ");
        if payload.len() <= SMALL {
            let mut all = prefix;
            all.extend_from_slice(&payload.to_vec());
            all.extend_from_slice(b"\n\n");
            return self.send(&all);
        }
        self.send(&prefix)?;
        payload.for_each_chunk(&mut |c| self.send(c))?;
        self.send(b"\n\n")
    }

    fn finish(self) -> io::Result<()> {
        match self.target {
            SseTarget::Stream(body) => body.finish(),
            SseTarget::Buffer {
                w,
                headers,
                close,
                buf,
            } => {
                let mut out = Vec::with_capacity(buf.len() + 256);
                http::write_head(
                    &mut out,
                    200,
                    &headers,
                    Framing::Length(buf.len() as u64),
                    close,
                )?;
                out.extend_from_slice(&buf);
                w.write_all(&out)?;
                w.flush()
            }
        }
    }
}

/// What happens to the connection after a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    KeepAlive,
    Close,
}

const fn after_stream(req: &Request) -> Flow {
    if req.http10 {
        Flow::Close
    } else {
        Flow::KeepAlive
    }
}

/// Changes applied to a normal answer by some hostile modes.
#[derive(Debug, Default)]
struct Tweak {
    /// The request is served in the modern era (stateless).
    modern: bool,
    id: Option<Value>,
    extra_notifications: usize,
    force_sse: bool,
    replace: Option<Payload>,
}

/// One client connection.
#[derive(Debug)]
struct Conn {
    reader: BufReader<ConnReader>,
    writer: ConnWriter,
    shared: Arc<Shared>,
}

impl Conn {
    fn serve(&mut self) {
        loop {
            let req = match http::read_request(&mut self.reader, &mut self.writer) {
                Ok(req) => req,
                Err(ReadError::Closed | ReadError::Io) => return,
                Err(ReadError::Bad { status, message }) => {
                    if Response::text(status, message)
                        .write_to(&mut self.writer, true)
                        .is_ok()
                    {
                        self.linger();
                    }
                    return;
                }
            };
            let close = req.wants_close();
            match self.handle(&req, close) {
                Ok(Flow::KeepAlive) if !close && !self.closes_after(&req) => {}
                Ok(_) => {
                    self.linger();
                    return;
                }
                Err(_) => return,
            }
        }
    }

    /// Whether the script closes the connection, unannounced, after answering `req`
    /// ([`Script::close_after`](crate::Script::close_after)).
    fn closes_after(&self, req: &Request) -> bool {
        let script = self.shared.script();
        if script.close_after.is_empty() {
            return false;
        }
        let method = serde_json::from_slice::<Value>(&req.body)
            .ok()
            .and_then(|v| v.get("method").and_then(Value::as_str).map(str::to_owned));
        method.is_some_and(|m| script.close_after.contains(&m))
    }

    /// Half-closes and drains what the client still sends for a moment, so
    /// that the last response is not destroyed by a TCP reset.
    fn linger(&mut self) {
        let mut stream = &self.writer.stream;
        let _ = stream.shutdown(Shutdown::Write);
        let _ = stream.set_read_timeout(Some(Duration::from_millis(20)));
        let deadline = Instant::now() + Duration::from_millis(250);
        let mut buf = [0u8; 8192];
        let mut total = 0usize;
        while Instant::now() < deadline && total < 1 << 20 && !self.shared.stopping() {
            match stream.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => total += n,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                    ) => {}
                Err(_) => break,
            }
        }
    }

    /// Never answers: waits until the client closes or the server stops.
    fn stall(&mut self) {
        let mut buf = [0u8; 4096];
        while let Ok(n) = self.reader.read(&mut buf) {
            if n == 0 {
                return;
            }
        }
    }

    fn respond(&mut self, resp: &Response, close: bool) -> io::Result<Flow> {
        resp.write_to(&mut self.writer, close)?;
        Ok(Flow::KeepAlive)
    }

    fn handle(&mut self, req: &Request, close: bool) -> io::Result<Flow> {
        let script = self.shared.script();
        let parsed = if req.method == "POST" {
            Some(serde_json::from_slice::<Value>(&req.body).map(|v| Message::classify(&v)))
        } else {
            None
        };
        let msg = parsed.as_ref().and_then(|p| p.as_ref().ok());
        self.shared.record(req, msg);

        if let Some(oauth) = &script.oauth {
            let base = format!("http://127.0.0.1:{}", self.shared.port);
            if req.path() == "/mcp" {
                let refusal = oauth::gate(&lock(&self.shared.oauth), oauth, &base, req, msg);
                if let Some(refusal) = refusal {
                    return self.respond(&refusal, close);
                }
            } else {
                let reply = oauth::endpoint(&mut lock(&self.shared.oauth), oauth, &base, req);
                if let Some(reply) = reply {
                    return self.oauth_reply(reply, close);
                }
            }
        }
        if req.path() != "/mcp" {
            return self.respond(&Response::text(404, "not found"), close);
        }
        match req.method.as_str() {
            "POST" => match msg {
                Some(msg) => self.post(req, msg, &script, close),
                None => {
                    let body = mcp::error_envelope(&Value::Null, -32700, "parse error");
                    self.respond(&json_response(400, body), close)
                }
            },
            // The modern era has neither the standalone stream nor sessions to end.
            "GET" | "DELETE" if script.era == ServerEra::Modern => self.respond(
                &Response::text(405, "method not allowed").header("Allow", "POST"),
                close,
            ),
            // The standalone stream a script makes endless: opened, ticked, never ended.
            "GET" if matches!(script.hostile_for("GET"), Some(Hostile::Trickle)) => {
                self.trickle(req, close)
            }
            "GET" => self.get(req, &script, close),
            "DELETE" => self.delete(req, &script, close),
            // A HEAD answer must not carry a body.
            "HEAD" => self.respond(
                &Response::new(405).header("Allow", "GET, POST, DELETE"),
                close,
            ),
            _ => self.respond(
                &Response::text(405, "method not allowed").header("Allow", "GET, POST, DELETE"),
                close,
            ),
        }
    }

    /// Sends an OAuth endpoint's answer.
    fn oauth_reply(&mut self, reply: Reply, close: bool) -> io::Result<Flow> {
        match reply {
            Reply::Respond(response) => self.respond(&response, close),
            Reply::Stall => {
                self.stall();
                Ok(Flow::Close)
            }
            Reply::Oversize { size, chunked } => {
                let prefix = br#"{"access_token":""#.to_vec();
                let suffix = br#"","token_type":"Bearer","expires_in":3600}"#.to_vec();
                let pad = size.saturating_sub(prefix.len() + suffix.len());
                let payload = Payload(vec![
                    Piece::Bytes(prefix),
                    Piece::Repeat(b'x', pad),
                    Piece::Bytes(suffix),
                ]);
                let headers = vec![("Content-Type".to_owned(), b"application/json".to_vec())];
                if chunked {
                    let mut body =
                        BodyWriter::start(&mut self.writer, 200, &headers, false, close)?;
                    payload.for_each_chunk(&mut |c| body.send(c))?;
                    body.finish()?;
                } else {
                    self.write_payload(200, &headers, &payload, close)?;
                }
                Ok(Flow::KeepAlive)
            }
        }
    }

    fn post(
        &mut self,
        req: &Request,
        msg: &Message,
        script: &Script,
        close: bool,
    ) -> io::Result<Flow> {
        match msg.kind {
            RpcKind::Batch => {
                let body = mcp::error_envelope(&Value::Null, -32600, "batches are not supported");
                return self.respond(&json_response(400, body), close);
            }
            RpcKind::Invalid => {
                let body = mcp::error_envelope(&msg.answer_id(), -32600, "invalid request");
                return self.respond(&json_response(400, body), close);
            }
            RpcKind::Request | RpcKind::Notification | RpcKind::Response => {}
        }
        let label = msg.label();
        if let Some(d) = script.delay_for(&label) {
            if !self.shared.sleep(d) {
                return Err(aborted());
            }
        }
        if let Some(mode) = script.hostile_for(&label) {
            return self.hostile(mode.clone(), req, msg, script, close);
        }
        let modern = match modern::judge(script, Some(req), msg) {
            Verdict::Refuse(status, body) => {
                return self.respond(&json_response(status, body), close);
            }
            Verdict::Modern => true,
            Verdict::Legacy => false,
        };
        let is_initialize =
            msg.kind == RpcKind::Request && msg.method.as_deref() == Some("initialize");
        if !is_initialize && !modern {
            if let Err(resp) = self.shared.check_session(req, script, &msg.answer_id()) {
                return self.respond(&resp, close);
            }
        }
        if msg.kind == RpcKind::Request {
            let tweak = Tweak {
                modern,
                ..Tweak::default()
            };
            return self.answer(req, msg, script, tweak, close);
        }
        if msg.kind == RpcKind::Response {
            if let (Some(id), Ok(body)) = (&msg.id, serde_json::from_slice::<Value>(&req.body)) {
                self.shared.deliver_answer(id, body);
            }
            if let Some(delay) = script.ack_delay {
                if !self.shared.sleep(delay) {
                    return Err(aborted());
                }
            }
        }
        let resp = match script.notification_reply {
            NotificationReply::Accepted => Response::new(202),
            NotificationReply::OkWithBody => {
                json_response(200, br#"{"jsonrpc":"2.0","result":{}}"#.to_vec())
            }
            NotificationReply::OkEmpty => Response::new(200),
        };
        self.respond(&resp, close)
    }

    /// Answers a request normally (possibly tweaked by a hostile mode).
    fn answer(
        &mut self,
        req: &Request,
        msg: &Message,
        script: &Script,
        tweak: Tweak,
        close: bool,
    ) -> io::Result<Flow> {
        let method = msg.method.as_deref().unwrap_or("");
        let mut headers: Vec<(String, Vec<u8>)> = Vec::new();
        if msg.kind == RpcKind::Request && method == "initialize" && tweak.replace.is_none() {
            if let Some(raw) = &script.session_id_override {
                headers.push(("Mcp-Session-Id".to_owned(), raw.clone()));
                if script.sessions {
                    lock(&self.shared.sessions).insert(String::from_utf8_lossy(raw).into_owned());
                }
            } else if script.sessions {
                headers.push((
                    "Mcp-Session-Id".to_owned(),
                    self.shared.new_session().into_bytes(),
                ));
            }
        }
        let id = tweak.id.clone().unwrap_or_else(|| msg.answer_id());
        if tweak.modern && method == "subscriptions/listen" {
            return self.subscription(req, msg, &id, close);
        }
        let server_request = script.server_request.as_ref().filter(|_| {
            msg.kind == RpcKind::Request
                && method == "tools/call"
                && tweak.replace.is_none()
                && !tweak.modern
        });
        let mut mode = script.mode_for(&msg.label());
        if (tweak.force_sse || server_request.is_some()) && mode == AnswerMode::Json {
            mode = AnswerMode::Sse;
        }
        let shared = Arc::clone(&self.shared);
        let sleep = |d: Duration| shared.sleep(d);

        if mode == AnswerMode::Json {
            let payload = match tweak.replace {
                Some(p) => p,
                None => {
                    let mut env = Env {
                        script,
                        sleep: &sleep,
                        progress: None,
                        modern: tweak.modern,
                    };
                    Payload::from(mcp::answer(msg, &id, &mut env)?)
                }
            };
            headers.push(("Content-Type".to_owned(), b"application/json".to_vec()));
            self.write_payload(200, &headers, &payload, close)?;
            return Ok(Flow::KeepAlive);
        }

        headers.extend(sse_headers());
        let mut sse = SseOut::start(
            &mut self.writer,
            headers,
            script.sse_content_length && server_request.is_none(),
            req,
            close,
            script.event_ids,
        )?;
        if script.event_ids {
            sse.priming()?;
        }
        let notifications = script
            .notifications_before_answer
            .saturating_add(tweak.extra_notifications);
        for i in 1..=notifications {
            sse.event(&Payload::from(mcp::log_notification(i)))?;
        }
        let unanswered = match server_request {
            None => None,
            Some(request) => {
                let token = shared.expect_answer(request.id());
                let message = serde_json::to_vec(request.message()).unwrap_or_default();
                if let Err(e) = sse.event(&Payload::from(message)) {
                    shared.wait_answer(token, Duration::ZERO)?;
                    return Err(e);
                }
                match shared.wait_answer(token, request.timeout())? {
                    Some(_) => None,
                    None => Some(format!(
                        "no answer to the server request {} within {:?}",
                        id_json(request.id()),
                        request.timeout()
                    )),
                }
            }
        };
        let payload = match (tweak.replace, unanswered) {
            (Some(p), _) => p,
            (None, Some(message)) => Payload::from(mcp::error_envelope(&id, -32000, &message)),
            (None, None) => {
                let mut progress = |bytes: &[u8]| sse.event(&Payload::from(bytes.to_vec()));
                let mut env = Env {
                    script,
                    sleep: &sleep,
                    progress: Some(&mut progress),
                    modern: tweak.modern,
                };
                Payload::from(mcp::answer(msg, &id, &mut env)?)
            }
        };
        sse.event(&payload)?;
        let after_answer: Option<(Duration, &[u8])> = match mode {
            AnswerMode::SseKeepOpen => Some((TICK, b": keepalive\n\n")),
            AnswerMode::SseTrickleAfterAnswer => Some((TRICKLE_AFTER_ANSWER, b":\n")),
            AnswerMode::Json | AnswerMode::Sse => None,
        };
        if let (Some((interval, comment)), true) = (after_answer, sse.is_streaming()) {
            loop {
                if !shared.sleep(interval) {
                    return Err(aborted());
                }
                sse.send(comment)?;
            }
        }
        sse.finish()?;
        Ok(after_stream(req))
    }

    /// A modern `subscriptions/listen`: an event stream that acknowledges the filter, sends one
    /// `notifications/tools/list_changed` when it was asked for, then stays open (a keep-alive
    /// comment every tick) until the client closes it or the server stops.
    fn subscription(
        &mut self,
        req: &Request,
        msg: &Message,
        id: &Value,
        close: bool,
    ) -> io::Result<Flow> {
        let filter = msg
            .params
            .as_ref()
            .and_then(|p| p.get("notifications"))
            .cloned()
            .unwrap_or_else(|| serde_json::json!({}));
        let meta = serde_json::json!({"io.modelcontextprotocol/subscriptionId": id});
        let mut sse = SseOut::start(&mut self.writer, sse_headers(), false, req, close, false)?;
        let acknowledged = serde_json::json!({"jsonrpc": "2.0",
            "method": "notifications/subscriptions/acknowledged",
            "params": {"_meta": meta, "notifications": filter}});
        sse.event(&Payload::from(acknowledged.to_string().into_bytes()))?;
        if filter.get("toolsListChanged") == Some(&Value::Bool(true)) {
            let changed = serde_json::json!({"jsonrpc": "2.0",
                "method": "notifications/tools/list_changed", "params": {"_meta": meta}});
            sse.event(&Payload::from(changed.to_string().into_bytes()))?;
        }
        loop {
            if !self.shared.sleep(TICK) {
                return Err(aborted());
            }
            sse.send(b": keepalive\n\n")?;
        }
    }

    /// Writes a complete response whose body is `payload`, with a `Content-Length`.
    fn write_payload(
        &mut self,
        status: u16,
        headers: &[(String, Vec<u8>)],
        payload: &Payload,
        close: bool,
    ) -> io::Result<()> {
        let len = payload.len();
        if len <= SMALL {
            let mut out = Vec::with_capacity(256 + len as usize);
            http::write_head(&mut out, status, headers, Framing::Length(len), close)?;
            out.extend_from_slice(&payload.to_vec());
            self.writer.write_all(&out)?;
        } else {
            http::write_head(
                &mut self.writer,
                status,
                headers,
                Framing::Length(len),
                close,
            )?;
            let w = &mut self.writer;
            payload.for_each_chunk(&mut |c| w.write_all(c))?;
        }
        self.writer.flush()
    }

    /// An SSE head, then a `: tick` comment every [`TICK`] until the client goes away or the
    /// server shuts down: never an event.
    fn trickle(&mut self, req: &Request, close: bool) -> io::Result<Flow> {
        let shared = Arc::clone(&self.shared);
        let mut body = BodyWriter::start(&mut self.writer, 200, &sse_headers(), req.http10, close)?;
        loop {
            body.send(b": tick\n")?;
            shared.ticks.fetch_add(1, Ordering::SeqCst);
            if !shared.sleep(TICK) {
                return Ok(Flow::Close);
            }
        }
    }

    fn hostile(
        &mut self,
        mode: Hostile,
        req: &Request,
        msg: &Message,
        script: &Script,
        close: bool,
    ) -> io::Result<Flow> {
        let id = msg.answer_id();
        let shared = Arc::clone(&self.shared);
        match mode {
            Hostile::Stall => {
                self.stall();
                Ok(Flow::Close)
            }
            Hostile::Trickle => self.trickle(req, close),
            Hostile::Oversize(size) => {
                let tweak = Tweak {
                    replace: Some(oversize_payload(&id, size)),
                    ..Tweak::default()
                };
                self.answer(req, msg, script, tweak, close)
            }
            Hostile::OversizeChunked(size) => {
                let headers = vec![("Content-Type".to_owned(), b"application/json".to_vec())];
                let mut body =
                    BodyWriter::start(&mut self.writer, 200, &headers, req.http10, close)?;
                oversize_payload(&id, size).for_each_chunk(&mut |c| body.send(c))?;
                body.finish()?;
                Ok(after_stream(req))
            }
            Hostile::EndlessSse => {
                let mut body =
                    BodyWriter::start(&mut self.writer, 200, &sse_headers(), req.http10, close)?;
                let mut n = 0usize;
                loop {
                    let mut batch = Vec::with_capacity(64 * 160);
                    for _ in 0..64 {
                        n = n.wrapping_add(1);
                        batch.extend_from_slice(b"event: message\ndata: ");
                        batch.extend_from_slice(&mcp::log_notification(n));
                        batch.extend_from_slice(b"\n\n");
                    }
                    body.send(&batch)?;
                    if !shared.sleep(Duration::from_millis(1)) {
                        return Ok(Flow::Close);
                    }
                }
            }
            Hostile::WrongId => {
                let tweak = Tweak {
                    id: Some(mcp::wrong_id(&id)),
                    ..Tweak::default()
                };
                self.answer(req, msg, script, tweak, close)
            }
            Hostile::InvalidUtf8 => {
                let tweak = Tweak {
                    replace: Some(invalid_utf8_payload(&id)),
                    ..Tweak::default()
                };
                self.answer(req, msg, script, tweak, close)
            }
            Hostile::Redirect => {
                let location = format!("http://127.0.0.2:{}/mcp", self.shared.port);
                self.respond(&Response::new(302).header("Location", location), close)
            }
            Hostile::RedirectTo(location) => {
                self.respond(&Response::new(302).header("Location", location), close)
            }
            Hostile::Status(code) => {
                let resp = if code < 200 || code == 204 || code == 304 {
                    Response::new(code)
                } else {
                    Response::text(code, &format!("hostile status {code}"))
                };
                self.respond(&resp, close)
            }
            Hostile::Html => self.respond(
                &Response::new(200).body("text/html; charset=utf-8", HTML_PAGE),
                close,
            ),
            Hostile::NotJson => {
                self.respond(&json_response(200, b"not json at all".to_vec()), close)
            }
            Hostile::EmptyBody => self.respond(&json_response(200, Vec::new()), close),
            Hostile::DeepNesting(depth) => {
                let tweak = Tweak {
                    replace: Some(nesting_payload(&id, depth)),
                    ..Tweak::default()
                };
                self.answer(req, msg, script, tweak, close)
            }
            Hostile::ManyNotifications(count) => {
                let tweak = Tweak {
                    extra_notifications: count,
                    force_sse: true,
                    ..Tweak::default()
                };
                self.answer(req, msg, script, tweak, close)
            }
            Hostile::ErrorEnvelope { code, message } => {
                let tweak = Tweak {
                    replace: Some(Payload::from(mcp::error_envelope(&id, code, &message))),
                    ..Tweak::default()
                };
                self.answer(req, msg, script, tweak, close)
            }
            Hostile::CloseAfterPriming { retry_ms } => {
                lock(&self.shared.pending).push(PendingResume {
                    event_id: "ev-1".to_owned(),
                    session: req.header("mcp-session-id").map(str::to_owned),
                    message: msg.clone(),
                });
                let mut body =
                    BodyWriter::start(&mut self.writer, 200, &sse_headers(), req.http10, close)?;
                body.send(format!("id: ev-1\nretry: {retry_ms}\ndata:\n\n").as_bytes())?;
                body.finish()?;
                Ok(after_stream(req))
            }
        }
    }

    fn get(&mut self, req: &Request, script: &Script, close: bool) -> io::Result<Flow> {
        let not_allowed = Response::text(405, "method not allowed").header("Allow", "POST, DELETE");
        let Some(last) = req.header("last-event-id") else {
            return self.respond(&not_allowed, close);
        };
        let known = lock(&self.shared.pending)
            .iter()
            .any(|p| p.event_id == last);
        if !known {
            return self.respond(&not_allowed, close);
        }
        if let Err(resp) = self.shared.check_session(req, script, &Value::Null) {
            return self.respond(&resp, close);
        }
        let accepts_sse = req
            .headers
            .iter()
            .any(|(n, v)| n == "accept" && v.to_ascii_lowercase().contains("text/event-stream"));
        if !accepts_sse {
            return self.respond(
                &Response::text(406, "Accept must include text/event-stream"),
                close,
            );
        }
        let session = req.header("mcp-session-id");
        let pending = {
            let mut all = lock(&self.shared.pending);
            let pos = all.iter().rposition(|p| {
                p.event_id == last && (p.session.is_none() || p.session.as_deref() == session)
            });
            pos.map(|i| all.remove(i))
        };
        let Some(pending) = pending else {
            return self.respond(&not_allowed, close);
        };
        let shared = Arc::clone(&self.shared);
        let sleep = |d: Duration| shared.sleep(d);
        let mut env = Env {
            script,
            sleep: &sleep,
            progress: None,
            modern: false,
        };
        let method = pending.message.method.as_deref().unwrap_or("");
        let outcome = mcp::dispatch(method, pending.message.params.as_ref(), &mut env)?;
        let answer = mcp::envelope(&pending.message.answer_id(), &outcome);
        let mut event = b"id: ev-2\nevent: message\ndata: ".to_vec();
        event.extend_from_slice(&answer);
        event.extend_from_slice(b"\n\n");
        let mut body = BodyWriter::start(&mut self.writer, 200, &sse_headers(), req.http10, close)?;
        body.send(&event)?;
        body.finish()?;
        Ok(after_stream(req))
    }

    fn delete(&mut self, req: &Request, script: &Script, close: bool) -> io::Result<Flow> {
        if !script.sessions || !script.allow_delete {
            let resp = Response::text(405, "method not allowed").header("Allow", "GET, POST");
            return self.respond(&resp, close);
        }
        if let Err(resp) = self.shared.check_session(req, script, &Value::Null) {
            return self.respond(&resp, close);
        }
        if let Some(id) = req.header("mcp-session-id") {
            lock(&self.shared.sessions).remove(id);
        }
        self.respond(&Response::new(200), close)
    }
}

/// Removes a connection from the registry when its thread ends.
struct ConnGuard {
    shared: Arc<Shared>,
    id: u64,
}

impl Drop for ConnGuard {
    fn drop(&mut self) {
        lock(&self.shared.conns).remove(&self.id);
    }
}

fn run_connection(shared: Arc<Shared>, stream: TcpStream, id: u64) {
    let _guard = ConnGuard {
        shared: Arc::clone(&shared),
        id,
    };
    let _ = stream.set_nodelay(true);
    if stream.set_read_timeout(Some(POLL)).is_err() || stream.set_write_timeout(Some(POLL)).is_err()
    {
        return;
    }
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut conn = Conn {
        reader: BufReader::with_capacity(
            16 * 1024,
            ConnReader {
                stream: read_half,
                shared: Arc::clone(&shared),
            },
        ),
        writer: ConnWriter {
            stream,
            shared: Arc::clone(&shared),
        },
        shared,
    };
    conn.serve();
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    let mut next_id = 0u64;
    for stream in listener.incoming() {
        if shared.stopping() {
            break;
        }
        let Ok(stream) = stream else {
            // E.g. too many open files: back off a little.
            if !shared.sleep(Duration::from_millis(5)) {
                break;
            }
            continue;
        };
        shared.accepted.fetch_add(1, Ordering::SeqCst);
        next_id += 1;
        let id = next_id;
        let Ok(registered) = stream.try_clone() else {
            continue;
        };
        lock(&shared.conns).insert(id, registered);
        if shared.stopping() {
            let _ = stream.shutdown(Shutdown::Both);
            lock(&shared.conns).remove(&id);
            break;
        }
        let conn_shared = Arc::clone(shared);
        let spawned = thread::Builder::new()
            .name(format!("mcp-testkit-conn-{id}"))
            .spawn(move || run_connection(conn_shared, stream, id));
        match spawned {
            Ok(handle) => {
                let mut threads = lock(&shared.threads);
                threads.retain(|h| !h.is_finished());
                threads.push(handle);
            }
            Err(_) => {
                lock(&shared.conns).remove(&id);
            }
        }
    }
}

/// Waits for `handle` until `deadline`; leaves it behind if it is still running.
fn join_until(handle: JoinHandle<()>, deadline: Instant) {
    while !handle.is_finished() && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(2));
    }
    if handle.is_finished() {
        let _ = handle.join();
    }
}

/// A shared handle to a running server's script, e.g. to pass to another
/// thread. Obtained from [`TestServer::script_handle`].
#[derive(Clone)]
pub struct ScriptHandle {
    shared: Arc<Shared>,
}

impl fmt::Debug for ScriptHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptHandle")
            .field("port", &self.shared.port)
            .finish()
    }
}

impl ScriptHandle {
    /// A copy of the script in force.
    pub fn get(&self) -> Script {
        Script::clone(&self.shared.script())
    }

    /// Replaces the script; requests arriving from now on use it.
    pub fn set(&self, script: Script) {
        *lock(&self.shared.script) = Arc::new(script);
    }

    /// Replaces the script with `f(current script)`.
    pub fn update(&self, f: impl FnOnce(Script) -> Script) {
        let mut guard = lock(&self.shared.script);
        let next = f(Script::clone(&guard));
        *guard = Arc::new(next);
    }
}

/// A running loopback MCP test server. Dropping it shuts it down.
pub struct TestServer {
    shared: Arc<Shared>,
    addr: SocketAddr,
    accept_thread: Mutex<Option<JoinHandle<()>>>,
}

impl fmt::Debug for TestServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TestServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl TestServer {
    /// Binds `127.0.0.1:0` and serves `script`; returns once listening.
    ///
    /// # Panics
    ///
    /// If the loopback listener cannot be created (see [`TestServer::try_start`]).
    pub fn start(script: Script) -> Self {
        match Self::try_start(script) {
            Ok(server) => server,
            Err(e) => panic!("mcp-testkit: cannot start the test server: {e}"),
        }
    }

    /// Like [`TestServer::start`], returning the I/O error instead of panicking.
    pub fn try_start(script: Script) -> io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            stop_lock: Mutex::new(()),
            stop_cv: Condvar::new(),
            script: Mutex::new(Arc::new(script)),
            sessions: Mutex::new(HashSet::new()),
            session_counter: AtomicU64::new(0),
            requests: Mutex::new(Vec::new()),
            requests_cv: Condvar::new(),
            pending: Mutex::new(Vec::new()),
            awaited: Mutex::new(Vec::new()),
            awaited_cv: Condvar::new(),
            next_awaited: AtomicU64::new(0),
            conns: Mutex::new(HashMap::new()),
            threads: Mutex::new(Vec::new()),
            accepted: AtomicUsize::new(0),
            ticks: AtomicUsize::new(0),
            port: addr.port(),
            oauth: Mutex::new(OAuthState::default()),
        });
        let accept_shared = Arc::clone(&shared);
        let accept_thread = thread::Builder::new()
            .name("mcp-testkit-accept".to_owned())
            .spawn(move || accept_loop(&listener, &accept_shared))?;
        Ok(Self {
            shared,
            addr,
            accept_thread: Mutex::new(Some(accept_thread)),
        })
    }

    /// The CLI demo server: [`Script::demo`] (sessions on, SSE answers for
    /// `tools/call`, `initialize` delayed 300 ms, `notifications/initialized`
    /// delayed 100 ms).
    pub fn demo() -> Self {
        Self::start(Script::demo())
    }

    /// The MCP endpoint, `http://127.0.0.1:<port>/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// `http://127.0.0.1:<port>` (no path).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The listening port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The listening address (`127.0.0.1:<port>`).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A copy of the script in force.
    pub fn script(&self) -> Script {
        self.script_handle().get()
    }

    /// Replaces the script; requests arriving from now on use it.
    pub fn set_script(&self, script: Script) {
        self.script_handle().set(script);
    }

    /// Replaces the script with `f(current script)`, e.g.
    /// `server.update_script(|s| s.hostile("tools/call", Hostile::Stall))`.
    pub fn update_script(&self, f: impl FnOnce(Script) -> Script) {
        self.script_handle().update(f);
    }

    /// A clonable handle to change the script from elsewhere.
    pub fn script_handle(&self) -> ScriptHandle {
        ScriptHandle {
            shared: Arc::clone(&self.shared),
        }
    }

    /// Forgets every live session: the next request carrying one gets 404.
    pub fn expire_sessions(&self) {
        lock(&self.shared.sessions).clear();
    }

    /// The live session ids.
    pub fn sessions(&self) -> Vec<String> {
        let mut ids: Vec<String> = lock(&self.shared.sessions).iter().cloned().collect();
        ids.sort();
        ids
    }

    /// Forgets every access token the OAuth mode issued (they expired): the next request
    /// carrying one gets `401`. Refresh tokens stay good.
    pub fn expire_tokens(&self) {
        lock(&self.shared.oauth).expire_tokens();
    }

    /// Forgets every refresh token the OAuth mode issued: the next refresh is refused with
    /// `invalid_grant` (a client then authorizes anew).
    pub fn expire_refresh_tokens(&self) {
        lock(&self.shared.oauth).expire_refresh_tokens();
    }

    /// Every secret the OAuth mode issued so far: client secrets, authorization codes, access
    /// and refresh tokens (to check none of them leaks into an error or a log).
    pub fn issued_secrets(&self) -> Vec<String> {
        lock(&self.shared.oauth).issued()
    }

    /// Every request received so far, named as the client's leg it was:
    /// `oauth:resource-metadata`, `oauth:server-metadata`, `oauth:register`,
    /// `oauth:authorize` (the browser's GET), `oauth:token`, `oauth:refresh`, the JSON-RPC
    /// label for `/mcp` (as [`TestServer::rpc_methods`]), else `"<METHOD> <target>"`.
    pub fn trail(&self) -> Vec<String> {
        lock(&self.shared.requests)
            .iter()
            .map(oauth::leg_label)
            .collect()
    }

    /// How many requests so far the [`trail`](Self::trail) names `label`
    /// (`"initialize"`, `"tools/call"`, `"oauth:token"`...).
    pub fn count(&self, label: &str) -> usize {
        lock(&self.shared.requests)
            .iter()
            .filter(|request| oauth::leg_label(request) == label)
            .count()
    }

    /// Every request received so far (well-formed enough to be parsed), in
    /// arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// JSON-RPC method names in arrival order: `"(response)"` for client
    /// responses, the HTTP method (`"GET"`, `"DELETE"`) for non-POSTs.
    pub fn rpc_methods(&self) -> Vec<String> {
        lock(&self.shared.requests)
            .iter()
            .filter_map(RecordedRequest::label)
            .collect()
    }

    /// The JSON bodies of the responses clients sent (e.g. answers to a
    /// [`ServerRequest`](crate::ServerRequest)), in arrival order.
    pub fn client_responses(&self) -> Vec<Value> {
        lock(&self.shared.requests)
            .iter()
            .filter(|r| r.rpc_kind == Some(RpcKind::Response))
            .filter_map(RecordedRequest::json)
            .collect()
    }

    /// Forgets the recorded requests.
    pub fn clear_requests(&self) {
        lock(&self.shared.requests).clear();
    }

    /// Waits until at least `count` requests are recorded; `false` on timeout.
    pub fn wait_for_requests(&self, count: usize, timeout: Duration) -> bool {
        let deadline = Instant::now().checked_add(timeout);
        let mut requests = lock(&self.shared.requests);
        loop {
            if requests.len() >= count {
                return true;
            }
            let now = Instant::now();
            let wait = match deadline {
                Some(d) if now >= d => return false,
                Some(d) => d - now,
                None => Duration::from_secs(3600),
            };
            requests = self
                .shared
                .requests_cv
                .wait_timeout(requests, wait)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Number of TCP connections accepted so far (to check keep-alive reuse).
    pub fn connections_accepted(&self) -> usize {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// How many `: tick` comments [`Hostile::Trickle`] has written so far (on every
    /// connection): once there is one, the head and the first of the body are out, so the
    /// client's leg is reading a body that never ends.
    pub fn ticks_sent(&self) -> usize {
        self.shared.ticks.load(Ordering::SeqCst)
    }

    /// Number of connections currently open.
    pub fn open_connections(&self) -> usize {
        lock(&self.shared.conns).len()
    }

    /// Stops accepting, closes every connection (stalled and streaming ones
    /// too) and joins the threads. Idempotent; also done on drop.
    pub fn shutdown(&self) {
        self.shared.signal_stop();
        let accept = lock(&self.accept_thread).take();
        if let Some(accept) = accept {
            // Wake the blocking accept() with a throwaway connection.
            let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(500));
            for stream in lock(&self.shared.conns).values() {
                let _ = stream.shutdown(Shutdown::Both);
            }
            let deadline = Instant::now() + JOIN_BUDGET;
            join_until(accept, deadline);
            let threads: Vec<JoinHandle<()>> = lock(&self.shared.threads).drain(..).collect();
            for handle in threads {
                join_until(handle, deadline);
            }
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}
