//! The blocking driver's HTTP/1.1 client ([`Http`]): one request at a time on a connection,
//! run with ureq's protocol core (`ureq-proto`) over the connector chain ([`crate::connector`]),
//! and the connections a lane keeps between requests.
//!
//! What ureq's `Agent` did for the driver, and only that: a request's head and body written
//! into the connection's output buffer and sent in one write; the answer's head parsed; its
//! body read through [`Body`], which gives the connection back when the body ended cleanly.
//! No redirect is followed, no cookie, proxy header or compression is added, and every status
//! is an answer: the state machine decides what each means. Each step waits at most until the
//! exchange's end (the leg's grant), and the connector chain's sockets end every wait at the
//! leg's end too ([`crate::leg_end`]).
//!
//! This module never decides an MCP matter; it moves one request and its answer.

use std::io;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use http::{HeaderValue, Request, Response, header};
use mcp_driver_common::network::Origin;
use ureq::unversioned::resolver::Resolver;
use ureq::unversioned::transport::time::{Duration as UreqDuration, Instant as UreqInstant};
use ureq::unversioned::transport::{
    ConnectionDetails, Connector, NextTimeout, ShutdownHandle, Transport,
};
use ureq::{Error, Timeout};
use ureq_proto::BodyMode;
use ureq_proto::client::state::{RecvBody, RecvResponse, SendRequest};
use ureq_proto::client::{
    Await100Result, Call, RecvBodyResult, RecvResponseResult, SendRequestResult,
};

/// How long an idle connection is kept (ureq's default): a server's keep-alive is rarely
/// longer, and a connection it closed is found out at the next take anyway.
const MAX_IDLE_AGE: Duration = Duration::from_secs(15);
/// Idle connections kept per server, and in all (ureq's defaults).
const MAX_IDLE_PER_SERVER: usize = 3;
const MAX_IDLE: usize = 10;
/// The longest answer head read (ureq's default limit): a connection's input buffer holds it.
const MAX_HEAD: usize = crate::INPUT_BUFFER;

/// The connector chain a lane's connections are made with ([`crate::connector`]).
type Chain = Box<dyn Connector<(), Out = Box<dyn Transport>>>;

/// One lane's HTTP client: the connector chain and the connections it keeps.
pub(crate) struct Http {
    connector: Chain,
    resolver: Box<dyn Resolver>,
    /// What the connector chain reads (buffer sizes, the address family, Nagle).
    config: ureq::config::Config,
    pool: Arc<Pool>,
}

/// The connections kept idle, the most recently used last.
#[derive(Default)]
struct Pool(Mutex<Vec<Idle>>);

struct Idle {
    server: Origin,
    transport: Box<dyn Transport>,
    since: Instant,
}

/// How long each part of an exchange may take.
#[derive(Clone, Copy)]
struct Limits {
    /// The end of everything up to the answer's head.
    head: Instant,
    /// The end of the body's reads: `None` for a stream that outlives the leg.
    body: Option<Instant>,
}

impl Pool {
    /// A kept connection to `server` that is still open, if any.
    fn take(&self, server: &Origin, now: Instant) -> Option<Box<dyn Transport>> {
        loop {
            let mut idle = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            idle.retain(|kept| now.saturating_duration_since(kept.since) < MAX_IDLE_AGE);
            let at = idle.iter().rposition(|kept| kept.server == *server)?;
            let mut transport = idle.remove(at).transport;
            drop(idle);
            // Open: no stray byte, no end and no error waits on it (else it is dropped).
            if transport.is_open() {
                return Some(transport);
            }
        }
    }

    /// Keeps `transport` for the next request to `server`, if nothing is left unread on it.
    fn give(&self, server: Origin, mut transport: Box<dyn Transport>) {
        if !transport.buffers().input().is_empty() {
            return;
        }
        let mut idle = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.iter().filter(|kept| kept.server == server).count() >= MAX_IDLE_PER_SERVER {
            if let Some(oldest) = idle.iter().position(|kept| kept.server == server) {
                idle.remove(oldest);
            }
        }
        if idle.len() >= MAX_IDLE {
            idle.remove(0);
        }
        idle.push(Idle {
            server,
            transport,
            since: Instant::now(),
        });
    }
}

/// What is left until `end`, as the transport's timeout (`reason` when it runs out).
fn until(end: Option<Instant>, reason: Timeout) -> NextTimeout {
    let after = match end {
        Some(end) => UreqDuration::Exact(end.saturating_duration_since(Instant::now())),
        None => UreqDuration::NotHappening,
    };
    NextTimeout {
        after,
        reason,
        per_read: None,
        per_write: None,
    }
}

/// Waits for more input within `timeout`; an end already reached is a timeout.
fn await_input(transport: &mut dyn Transport, timeout: NextTimeout) -> Result<bool, Error> {
    if timeout.after.is_zero() {
        return Err(Error::Timeout(timeout.reason));
    }
    transport.maybe_await_input(timeout)
}

fn disconnected() -> Error {
    Error::Io(io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "Peer disconnected",
    ))
}

impl Http {
    pub(crate) fn new(
        connector: impl Connector<(), Out = Box<dyn Transport>>,
        resolver: impl Resolver,
        config: ureq::config::Config,
    ) -> Self {
        Self {
            connector: Box::new(connector),
            resolver: Box::new(resolver),
            config,
            pool: Arc::default(),
        }
    }

    /// Sends `request` with the whole exchange (resolve, connect, TLS, send, head and every
    /// body read) bounded by `grant`. A request without a body (a GET or DELETE) is sent
    /// without one, not with an empty one.
    pub(crate) fn send(
        &self,
        request: Request<Vec<u8>>,
        grant: Duration,
    ) -> Result<Response<Body>, Error> {
        let end = Instant::now() + grant;
        let limits = Limits {
            head: end,
            body: Some(end),
        };
        self.send_within(request, limits)
    }

    /// Sends the GET that opens an HTTP+SSE session's event stream: the exchange up to its
    /// head bounded by `grant` (and by the lane, armed at the leg's end by the caller), its
    /// body by nothing: the stream outlives the leg and the operation.
    pub(crate) fn send_stream(
        &self,
        request: Request<Vec<u8>>,
        grant: Duration,
    ) -> Result<Response<Body>, Error> {
        let head = Instant::now() + grant;
        self.send_within(request, Limits { head, body: None })
    }

    /// Sends `request` (its body, when not empty, with its length) on a kept connection or a
    /// new one, and reads the answer's head within `limits`; the body is read through the
    /// answer's [`Body`].
    fn send_within(
        &self,
        request: Request<Vec<u8>>,
        limits: Limits,
    ) -> Result<Response<Body>, Error> {
        let (parts, body) = request.into_parts();
        let server = Origin::of(&parts.uri);
        let transport = match self.pool.take(&server, Instant::now()) {
            Some(kept) => kept,
            None => self.connect(&parts.uri, limits.head)?,
        };
        exchange(
            Request::from_parts(parts, body),
            transport,
            server,
            &self.pool,
            limits,
        )
    }

    /// A new connection to the request's server, through the connector chain, made by `end`.
    fn connect(&self, uri: &http::Uri, end: Instant) -> Result<Box<dyn Transport>, Error> {
        let addrs = self
            .resolver
            .resolve(uri, &self.config, until(Some(end), Timeout::Resolve))?;
        let details = ConnectionDetails {
            uri,
            addrs,
            config: &self.config,
            request_level: false,
            resolver: &*self.resolver,
            now: UreqInstant::Exact(Instant::now()),
            timeout: until(Some(end), Timeout::Connect),
            current_time: Arc::new(|| UreqInstant::Exact(Instant::now())),
            run_connector: Arc::new(|_| Err(Error::ConnectionFailed)),
            // The connector registers each socket with the lane (for cancels and leg ends).
            register_shutdown: Arc::new(|_: Weak<dyn ShutdownHandle>| Ok(())),
        };
        let transport = self
            .connector
            .connect(&details, None)?
            .ok_or(Error::ConnectionFailed)?;
        if uri.scheme() == Some(&http::uri::Scheme::HTTPS) && !transport.is_tls() {
            return Err(Error::TlsRequired);
        }
        Ok(transport)
    }
}

/// Sends `request` on `transport` (a connection to `server`) and reads the answer's head; the
/// body's reader gives the connection back to `pool` at its end.
fn exchange(
    request: Request<Vec<u8>>,
    mut transport: Box<dyn Transport>,
    server: Origin,
    pool: &Arc<Pool>,
    limits: Limits,
) -> Result<Response<Body>, Error> {
    let (parts, body) = request.into_parts();
    let mut call = Call::new(Request::from_parts(parts, ()))?;
    if !body.is_empty() {
        call.header(header::CONTENT_LENGTH, HeaderValue::from(body.len()))?;
    }
    if !call.headers().contains_key(header::USER_AGENT) {
        call.header(
            header::USER_AGENT,
            HeaderValue::from_static(crate::USER_AGENT),
        )?;
    }
    let call = write_request(call.proceed(), &body, &mut *transport, limits.head)?;
    let (response, read) = read_head(call, &mut *transport, limits.head)?;
    let body = |reading| Body {
        reading,
        server: server.clone(),
        pool: Arc::clone(pool),
        end: limits.body,
        closed: false,
    };
    let must_close = match read {
        RecvResponseResult::RecvBody(call) => {
            return Ok(response.map(|()| body(Some((call, transport)))));
        }
        RecvResponseResult::Redirect(call) => call.must_close_connection(),
        RecvResponseResult::Cleanup(call) => call.must_close_connection(),
    };
    // An answer without a body is over with its head: its connection goes back at once.
    if !must_close {
        pool.give(server.clone(), transport);
    }
    Ok(response.map(|()| body(None)))
}

/// Writes the request's head and its body into the connection's output buffer, sending it
/// whenever it is full and once at the end: a request that fits leaves in one write.
fn write_request(
    mut call: Call<SendRequest>,
    body: &[u8],
    transport: &mut dyn Transport,
    end: Instant,
) -> Result<Call<RecvResponse>, Error> {
    let mut out = Output {
        transport,
        written: 0,
        end,
    };
    while !call.can_proceed() {
        let amount = call.write(out.free())?;
        out.wrote(amount, Timeout::SendRequest)?;
    }
    let mut send = match call.proceed()? {
        Some(SendRequestResult::SendBody(send)) => send,
        Some(SendRequestResult::RecvResponse(read)) => {
            out.flush(Timeout::SendRequest)?;
            return Ok(read);
        }
        // Only a request that asks for `100 Continue` waits for it; none of the driver's does.
        Some(SendRequestResult::Await100(waiting)) => {
            out.flush(Timeout::SendRequest)?;
            match waiting.proceed()? {
                Await100Result::SendBody(send) => send,
                Await100Result::RecvResponse(read) => return Ok(read),
            }
        }
        None => return Err(disconnected()),
    };
    let mut left = body;
    while !send.can_proceed() {
        let (used, amount) = send.write(left, out.free())?;
        left = &left[used..];
        out.wrote(amount, Timeout::SendBody)?;
    }
    out.flush(Timeout::SendBody)?;
    send.proceed().ok_or_else(disconnected)
}

/// What is written into a connection's output buffer and not sent yet.
struct Output<'t> {
    transport: &'t mut dyn Transport,
    written: usize,
    end: Instant,
}

impl Output<'_> {
    /// The room left in the output buffer.
    fn free(&mut self) -> &mut [u8] {
        &mut self.transport.buffers().output()[self.written..]
    }

    /// `amount` more bytes were written: sent when the buffer is full. Nothing written into a
    /// buffer with room left (a head longer than the buffer) is an error, not a loop.
    fn wrote(&mut self, amount: usize, step: Timeout) -> Result<(), Error> {
        if amount == 0 && self.written == 0 {
            return Err(Error::Io(io::Error::other(
                "the request does not fit the connection's output buffer",
            )));
        }
        self.written += amount;
        if amount == 0 || self.free().is_empty() {
            self.flush(step)?;
        }
        Ok(())
    }

    /// Sends what was written.
    fn flush(&mut self, step: Timeout) -> Result<(), Error> {
        if self.written > 0 {
            let timeout = until(Some(self.end), step);
            self.transport.transmit_output(self.written, timeout)?;
            self.written = 0;
        }
        Ok(())
    }
}

/// Reads the answer's head.
fn read_head(
    mut call: Call<RecvResponse>,
    transport: &mut dyn Transport,
    end: Instant,
) -> Result<(Response<()>, RecvResponseResult), Error> {
    loop {
        let input = transport.buffers().input();
        if !input.is_empty() {
            let (amount, response) = call.try_response(input, false)?;
            let seen = if response.is_some() {
                amount
            } else {
                input.len()
            };
            if seen >= MAX_HEAD {
                return Err(Error::LargeResponseHeader(seen, MAX_HEAD));
            }
            transport.buffers().input_consume(amount);
            if let Some(response) = response {
                return Ok((response, call.proceed().ok_or_else(disconnected)?));
            }
        }
        if !await_input(transport, until(Some(end), Timeout::RecvResponse))? {
            return Err(disconnected());
        }
    }
}

/// An answer's body being read: what it reads is the body alone (its framing taken off). Read
/// to its end, it gives its connection back to the lane's pool; dropped before, the connection
/// closes.
pub(crate) struct Body {
    /// The body's reading and its connection, until the body is over.
    reading: Option<(Call<RecvBody>, Box<dyn Transport>)>,
    server: Origin,
    pool: Arc<Pool>,
    end: Option<Instant>,
    /// The server closed the connection (the end of a body delimited by it).
    closed: bool,
}

impl Body {
    fn read_some(&mut self, buf: &mut [u8]) -> Result<usize, Error> {
        let Some((call, transport)) = &mut self.reading else {
            return Ok(0);
        };
        loop {
            let delimited = !matches!(call.body_mode(), BodyMode::CloseDelimited);
            if delimited && call.can_proceed() {
                self.ended()?;
                return Ok(0);
            }
            let input = transport.buffers().input();
            if !input.is_empty() {
                let (used, produced) = call.read(input, buf)?;
                transport.buffers().input_consume(used);
                if produced > 0 {
                    return Ok(produced);
                }
                if used > 0 {
                    continue;
                }
            }
            if self.closed {
                self.ended()?;
                return Ok(0);
            }
            let progress = match await_input(&mut **transport, until(self.end, Timeout::RecvBody)) {
                Ok(progress) => progress,
                Err(Error::Io(err)) if mcp_driver_common::closed_by_peer(&err) => {
                    self.closed = true;
                    true
                }
                Err(err) => return Err(err),
            };
            let input = transport.buffers().input();
            let ended = input.is_empty();
            let (used, produced) = call.read(input, buf)?;
            transport.buffers().input_consume(used);
            if produced > 0 {
                return Ok(produced);
            } else if ended {
                self.ended()?;
                return Ok(0);
            } else if !progress {
                return Err(Error::BodyStalled);
            }
        }
    }

    /// The body is over: its connection goes back to the pool unless it must close.
    fn ended(&mut self) -> Result<(), Error> {
        let Some((call, transport)) = self.reading.take() else {
            return Ok(());
        };
        if !call.can_proceed() {
            // The server closed after a chunked body's last chunk: the body is whole.
            return match call.is_ended_chunked() {
                true => Ok(()),
                false => Err(disconnected()),
            };
        }
        let close = match call.proceed() {
            Some(RecvBodyResult::Cleanup(cleanup)) => cleanup.must_close_connection(),
            Some(RecvBodyResult::Redirect(redirect)) => redirect.must_close_connection(),
            None => true,
        };
        if !close && !self.closed {
            self.pool.give(self.server.clone(), transport);
        }
        Ok(())
    }
}

impl io::Read for Body {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_some(buf).map_err(Error::into_io)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::io::Read as _;

    use ureq::unversioned::transport::{Buffers, LazyBuffers};

    use super::*;

    /// A connection whose answers are scripted: each wait for input gets the next piece (an
    /// empty piece is the server's close); what is sent is recorded, one entry a write.
    #[derive(Debug)]
    struct Scripted {
        buffers: LazyBuffers,
        answers: VecDeque<Vec<u8>>,
        sent: Arc<Mutex<Vec<Vec<u8>>>>,
    }

    impl Transport for Scripted {
        fn buffers(&mut self) -> &mut dyn Buffers {
            &mut self.buffers
        }

        fn transmit_output(&mut self, amount: usize, _: NextTimeout) -> Result<(), Error> {
            let bytes = self.buffers.output()[..amount].to_vec();
            self.sent.lock().unwrap().push(bytes);
            Ok(())
        }

        fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, Error> {
            let piece = self
                .answers
                .pop_front()
                .ok_or(Error::Timeout(timeout.reason))?;
            let room = self.buffers.input_append_buf();
            let fits = piece.len().min(room.len());
            room[..fits].copy_from_slice(&piece[..fits]);
            self.buffers.input_appended(fits);
            if fits < piece.len() {
                self.answers.push_front(piece[fits..].to_vec());
            }
            Ok(fits > 0)
        }

        fn is_open(&mut self) -> bool {
            true
        }
    }

    struct Exchange {
        sent: Arc<Mutex<Vec<Vec<u8>>>>,
        pool: Arc<Pool>,
        result: Result<Response<Body>, Error>,
    }

    const URL: &str = "http://127.0.0.1:1/mcp";

    fn run(request: Request<Vec<u8>>, output: usize, answers: &[&[u8]]) -> Exchange {
        let end = Instant::now() + Duration::from_secs(5);
        run_until(request, output, answers, end)
    }

    fn run_until(
        request: Request<Vec<u8>>,
        output: usize,
        answers: &[&[u8]],
        end: Instant,
    ) -> Exchange {
        let sent = Arc::default();
        let transport = Scripted {
            buffers: LazyBuffers::new(2 * MAX_HEAD, output),
            answers: answers.iter().map(|piece| piece.to_vec()).collect(),
            sent: Arc::clone(&sent),
        };
        let pool = Arc::default();
        let server = Origin::of(request.uri());
        let limits = Limits {
            head: end,
            body: Some(end),
        };
        let result = exchange(request, Box::new(transport), server, &pool, limits);
        Exchange { sent, pool, result }
    }

    fn post(body: &[u8]) -> Request<Vec<u8>> {
        Request::post(URL).body(body.to_vec()).unwrap()
    }

    fn kept(pool: &Pool) -> usize {
        pool.0.lock().unwrap().len()
    }

    fn read_all(exchange: Exchange) -> (Vec<u8>, usize) {
        let mut body = exchange.result.unwrap().into_body();
        let mut read = Vec::new();
        body.read_to_end(&mut read).unwrap();
        (read, kept(&exchange.pool))
    }

    const ANSWER: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}";

    #[test]
    fn a_request_leaves_in_one_write_with_its_body() {
        let exchange = run(post(b"{\"id\":1}"), 1024, &[ANSWER]);
        let sent = exchange.sent.lock().unwrap().clone();
        assert_eq!(sent.len(), 1, "head and body in one write");
        let text = String::from_utf8(sent[0].clone()).unwrap();
        assert!(text.starts_with("POST /mcp HTTP/1.1\r\n"), "{text}");
        assert!(text.contains("content-length: 8\r\n"), "{text}");
        assert!(text.contains("user-agent: mcp-driver-blocking/"), "{text}");
        assert!(text.ends_with("\r\n\r\n{\"id\":1}"), "{text}");
        // A request without a body is sent without one, not with an empty one.
        let get = Request::get(URL).body(Vec::new()).unwrap();
        let exchange = run(get, 1024, &[ANSWER]);
        let sent = exchange.sent.lock().unwrap().clone();
        let text = String::from_utf8(sent.concat()).unwrap();
        assert_eq!(sent.len(), 1);
        assert!(!text.contains("content-length"), "{text}");
    }

    #[test]
    fn a_body_longer_than_the_output_buffer_leaves_whole_and_in_order() {
        let body: Vec<u8> = (0..3000u32).map(|i| b'a' + (i % 26) as u8).collect();
        let exchange = run(post(&body), 512, &[ANSWER]);
        let sent = exchange.sent.lock().unwrap().clone();
        assert!(sent.len() > 1);
        assert!(sent.iter().all(|write| write.len() <= 512));
        let all = sent.concat();
        assert!(all.ends_with(&body), "the body follows the head, whole");
        assert_eq!(read_all(exchange).0, b"{}");
        // A head that cannot fit the buffer at all is an error, not a loop.
        let long = Request::post(URL)
            .header("x-long", "x".repeat(600))
            .body(b"{}".to_vec())
            .unwrap();
        assert!(run(long, 512, &[ANSWER]).result.is_err());
    }

    #[test]
    fn a_connection_is_kept_only_after_a_whole_clean_answer() {
        // Read to its end: kept, and taken by the next request to the same server.
        let exchange = run(post(b"{}"), 1024, &[ANSWER]);
        let pool = Arc::clone(&exchange.pool);
        assert_eq!(read_all(exchange), (b"{}".to_vec(), 1));
        let server = Origin::of(&URL.parse().unwrap());
        let other = Origin::of(&"http://127.0.0.1:2/mcp".parse().unwrap());
        assert!(pool.take(&other, Instant::now()).is_none());
        assert!(pool.take(&server, Instant::now()).is_some());
        // An answer without a body (202) gives it back at once.
        let accepted = b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n";
        assert_eq!(kept(&run(post(b"{}"), 1024, &[accepted]).pool), 1);
        // Stray bytes after the body, a close asked for, a body dropped half read: closed.
        let stray: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}HTTP";
        assert_eq!(read_all(run(post(b"{}"), 1024, &[stray])).1, 0);
        let close: &[u8] = b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\n{}";
        assert_eq!(read_all(run(post(b"{}"), 1024, &[close])).1, 0);
        let half: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\n{}";
        let exchange = run(post(b"{}"), 1024, &[half]);
        let mut body = exchange.result.unwrap().into_body();
        assert_eq!(body.read(&mut [0; 16]).unwrap(), 2);
        drop(body);
        assert_eq!(kept(&exchange.pool), 0);
    }

    #[test]
    fn chunked_and_close_delimited_bodies_are_read_whole() {
        let head: &[u8] = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n";
        let exchange = run(
            post(b"{}"),
            1024,
            &[head, b"3\r\nabc\r\n", b"2\r\nde\r\n0\r\n\r\n"],
        );
        assert_eq!(read_all(exchange), (b"abcde".to_vec(), 1));
        // A chunk's size line cut between two reads: the reader waits for the rest of it.
        let pieces: [&[u8]; 4] = [head, b"3\r", b"\nabc\r\n0\r", b"\n\r\n"];
        assert_eq!(
            read_all(run(post(b"{}"), 1024, &pieces)),
            (b"abc".to_vec(), 1)
        );
        let head: &[u8] = b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nab";
        let exchange = run(post(b"{}"), 1024, &[head, b"cd", b""]);
        assert_eq!(read_all(exchange), (b"abcd".to_vec(), 0));
        // A body cut short by the close is an error, not a short answer.
        let head: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\nab";
        let mut body = run(post(b"{}"), 1024, &[head, b""])
            .result
            .unwrap()
            .into_body();
        assert!(body.read_to_end(&mut Vec::new()).is_err());
    }

    #[test]
    fn an_exchange_past_its_end_waits_for_nothing() {
        // The head's end has come: the wait for the answer is a timeout without a look.
        let exchange = run_until(post(b"{}"), 1024, &[ANSWER], Instant::now());
        assert!(matches!(exchange.result, Err(Error::Timeout(_))));
        // A head longer than the limit is refused.
        let mut long = b"HTTP/1.1 200 OK\r\nx-filler: ".to_vec();
        long.resize(MAX_HEAD + 1, b'0');
        let pieces: Vec<&[u8]> = long.chunks(4000).collect();
        let refused = run(post(b"{}"), 1024, &pieces).result;
        assert!(matches!(refused, Err(Error::LargeResponseHeader(..))));
    }
}
