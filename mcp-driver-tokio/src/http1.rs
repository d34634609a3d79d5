//! The tokio driver's HTTP/1.1 client ([`Http`]): one request at a time on a connection, run
//! with ureq's protocol core (`ureq-proto`, the blocking driver's too) over the driver's
//! connector ([`Connector`]: TCP, the proxy's tunnel, TLS), and the connections a client keeps
//! between requests.
//!
//! A request's head and body are written into the connection's output buffer and sent in one
//! write; the answer's head is parsed from its input buffer; its body is read through
//! [`Body`], which gives the connection back to the client's pool when the body ended cleanly.
//! Everything is read inside the leg's own future: no connection task, no channel between
//! them. A kept connection is taken only when a look at it (a read that must not wait) finds
//! nothing unread and no close; a request is never sent twice. No redirect is followed, no
//! cookie or compression is added, and every status is an answer: the state machine decides
//! what each means.
//!
//! This module never decides an MCP matter, and never waits on its own: every wait is inside
//! a leg's future, which the operation drops at the leg's end.

use std::error::Error as StdError;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use http::{HeaderValue, Request, Response, header};
use tokio::io::{AsyncRead as _, AsyncWrite as _, ReadBuf};
use tower_service::Service as _;
use ureq_proto::BodyMode;
use ureq_proto::client::state::{RecvBody, RecvResponse};
use ureq_proto::client::{
    Await100Result, Call, RecvBodyResult, RecvResponseResult, SendRequestResult,
};

use mcp_driver_common::network::{Network, Origin};

use crate::connector::{ConnectFailure, Connecting, Connector, Stream};

/// How long an idle connection is kept: a server's keep-alive is rarely longer, and one it
/// closed is found out at the next take anyway.
const MAX_IDLE_AGE: Duration = Duration::from_secs(90);
/// Idle connections kept per server.
const MAX_IDLE_PER_SERVER: usize = 8;
/// A connection's input buffer, and the longest answer head read.
const INPUT: usize = 64 * 1024;
/// A connection's output buffer: a request that fits leaves in one write.
const OUTPUT: usize = 16 * 1024;
/// The most body bytes one read hands over.
const CHUNK: usize = 32 * 1024;

/// The `User-Agent` of a request that names none.
const USER_AGENT: &str = concat!("mcp-driver-tokio/", env!("CARGO_PKG_VERSION"));

/// What a request's future resolves to: the answer (its body still to read) or why there is
/// none.
pub(crate) type HeadResult = Result<Response<Body>, RequestError>;

/// A request on its way: boxed once, kept as it is by the leg.
pub(crate) type ResponseFuture = Pin<Box<dyn Future<Output = HeadResult> + Send>>;

/// An HTTP/1.1 client for the default [`Network`] (the system's trust store, proxies from the
/// environment).
pub(crate) fn http_client() -> Http {
    // The default network adds no CA of the caller's, so it cannot fail.
    http_client_for(&Network::default())
        .map(|(http, _)| http)
        .unwrap_or_else(|_| unreachable!("the default network adds no CA of the caller's"))
}

/// An HTTP/1.1 client whose connections trust and tunnel as `network` says: plain HTTP, or
/// HTTPS through rustls with the ring provider ([`crate::tls`]), each through the target's
/// proxy when it has one (an HTTP `CONNECT` tunnel); names looked up by
/// [`Resolver`](crate::connector::Resolver) (or fixed by the caller). Also returns what its
/// connections are doing ([`Connecting`]), which tells a leg that ran out of time in a TLS
/// handshake or in a proxy's tunnel ([`connect_timeouts`](crate::leg::connect_timeouts)).
pub(crate) fn http_client_for(network: &Network) -> Result<(Http, Connecting), mcp_proto::Error> {
    let connecting = Connecting::default();
    let connector = Connector::new(network, connecting.clone())?;
    Ok((Http::new(connector), connecting))
}

/// A client's HTTP/1.1 client: its connector and the connections it keeps. Clones share both.
#[derive(Clone)]
pub(crate) struct Http(Arc<Shared>);

struct Shared {
    connector: Connector,
    pool: Pool,
}

/// The connections kept idle, the most recently used last.
#[derive(Default)]
struct Pool(Mutex<Vec<Idle>>);

struct Idle {
    server: Origin,
    conn: Box<Conn>,
    since: Instant,
}

impl Pool {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Idle>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The most recently kept connection to `server` that is still open, if any.
    fn take(&self, server: &Origin) -> Option<Box<Conn>> {
        let now = Instant::now();
        loop {
            let mut idle = self.lock();
            idle.retain(|kept| now.saturating_duration_since(kept.since) < MAX_IDLE_AGE);
            let at = idle.iter().rposition(|kept| kept.server == *server)?;
            let mut conn = idle.remove(at).conn;
            drop(idle);
            if conn.is_open() {
                return Some(conn);
            }
        }
    }

    /// Keeps `conn` for the next request to `server`, if nothing is left unread on it.
    fn give(&self, server: Origin, conn: Box<Conn>) {
        if !conn.unread().is_empty() {
            return;
        }
        let mut idle = self.lock();
        if idle.iter().filter(|kept| kept.server == server).count() >= MAX_IDLE_PER_SERVER {
            if let Some(oldest) = idle.iter().position(|kept| kept.server == server) {
                idle.remove(oldest);
            }
        }
        idle.push(Idle {
            server,
            conn,
            since: Instant::now(),
        });
    }
}

/// One connection: its stream, its buffers (allocated once for its life) and the reading of
/// the answer in progress on it.
pub(crate) struct Conn {
    stream: Stream,
    /// What was read and not consumed yet: `input[start..end]`.
    input: Box<[u8]>,
    start: usize,
    end: usize,
    /// The request being sent, head and body, as it goes on the wire: `output[..to_send]`
    /// (the rest is room, zeroed once, not at each request).
    output: Vec<u8>,
    to_send: usize,
    /// The body bytes the last read handed over (its framing taken off).
    chunk: Box<[u8]>,
    /// The answer's body being read on this connection (kept here, not in the [`Body`] that
    /// reads it, so that a body and a leg holding one stay small to move).
    reading: Option<Call<RecvBody>>,
}

impl Conn {
    fn new(stream: Stream, (output, to_send): (Vec<u8>, usize)) -> Box<Self> {
        Box::new(Self {
            stream,
            input: vec![0; INPUT].into_boxed_slice(),
            start: 0,
            end: 0,
            output,
            to_send,
            chunk: vec![0; CHUNK].into_boxed_slice(),
            reading: None,
        })
    }

    fn unread(&self) -> &[u8] {
        &self.input[self.start..self.end]
    }

    fn consume(&mut self, amount: usize) {
        self.start += amount;
        if self.start >= self.end {
            (self.start, self.end) = (0, 0);
        }
    }

    /// Reads more input after what is unread: the amount read, 0 when the server closed.
    /// Unread bytes at the buffer's end are moved to its start first; a buffer that is full of
    /// them is an error (the caller could not use them).
    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        if self.end == self.input.len() {
            if self.start == 0 {
                return Poll::Ready(Err(io::Error::other(
                    "the connection's input buffer is full of what cannot be read",
                )));
            }
            self.input.copy_within(self.start..self.end, 0);
            (self.start, self.end) = (0, self.end - self.start);
        }
        let mut room = ReadBuf::new(&mut self.input[self.end..]);
        ready!(Pin::new(&mut self.stream).poll_read(cx, &mut room))?;
        let read = room.filled().len();
        self.end += read;
        Poll::Ready(Ok(read))
    }

    /// Whether a kept connection can take a request: a look that does not wait finds no
    /// stray byte, no close and no error on it.
    fn is_open(&mut self) -> bool {
        if !self.unread().is_empty() {
            return false;
        }
        // What the runtime saw (and TLS records already read), then the socket itself.
        let mut cx = Context::from_waker(std::task::Waker::noop());
        matches!(self.poll_fill(&mut cx), Poll::Pending) && self.stream.is_quiet()
    }

    /// Sends the request in `output` from `sent` on, and flushes the stream (TLS keeps
    /// records until then).
    fn poll_send(&mut self, cx: &mut Context<'_>, sent: &mut usize) -> Poll<io::Result<()>> {
        while *sent < self.to_send {
            let rest = &self.output[*sent..self.to_send];
            let wrote = ready!(Pin::new(&mut self.stream).poll_write(cx, rest))?;
            if wrote == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *sent += wrote;
        }
        ready!(Pin::new(&mut self.stream).poll_flush(cx))?;
        // A large body's buffer is not kept for the connection's life.
        if self.output.len() > 4 * OUTPUT {
            self.output = vec![0; OUTPUT];
        }
        Poll::Ready(Ok(()))
    }
}

/// Why a request has no answer.
#[derive(Debug)]
pub(crate) enum RequestError {
    /// The connection could not be made (the connector's own words and kind).
    Connect(ConnectFailure),
    /// The answer's head is not HTTP/1.1, or longer than the driver reads.
    Protocol(Box<dyn StdError + Send + Sync>),
    /// The connection broke, or closed before the answer's head.
    Io(io::Error),
}

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Connect(failure) => write!(f, "client error (Connect): {failure}"),
            Self::Protocol(err) => write!(f, "the answer is not HTTP/1.1: {err}"),
            Self::Io(err) => write!(f, "client error: {err}"),
        }
    }
}

impl StdError for RequestError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            Self::Connect(failure) => Some(failure),
            Self::Protocol(err) => Some(&**err),
            Self::Io(err) => Some(err),
        }
    }
}

impl From<io::Error> for RequestError {
    fn from(err: io::Error) -> Self {
        Self::Io(err)
    }
}

/// A request the driver could not write (a header `ureq-proto` refuses, a head longer than
/// [`INPUT`]).
fn unwritable(err: impl Into<Box<dyn StdError + Send + Sync>>) -> RequestError {
    RequestError::Io(io::Error::new(io::ErrorKind::InvalidInput, err))
}

fn closed_before(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!("the connection closed before {what}"),
    )
}

impl Http {
    pub(crate) fn new(connector: Connector) -> Self {
        Self(Arc::new(Shared {
            connector,
            pool: Pool::default(),
        }))
    }

    /// Sends `request` (its body, when not empty, with its length; its `Host` from its URI,
    /// its target in origin form) on a kept connection or a new one, and resolves to the
    /// answer's head; its body is read through the answer's [`Body`].
    ///
    /// The request is written out at once, into the kept connection's output buffer or a new
    /// one; the future only moves it and reads the answer's head, and stays small.
    pub(crate) fn request(&self, request: Request<Vec<u8>>) -> ResponseFuture {
        let server = Origin::of(request.uri());
        let via = match self.0.pool.take(&server) {
            Some(conn) => Via::Kept(conn),
            None => Via::New(self.0.connector.clone().call(request.uri().clone())),
        };
        let written = match via {
            Via::Kept(mut conn) => write_request(request, &mut conn.output).map(|(call, len)| {
                conn.to_send = len;
                (call, Step::Send(conn, 0))
            }),
            Via::New(connecting) => {
                let mut output = Vec::new();
                write_request(request, &mut output)
                    .map(|(call, len)| (call, Step::Connect(connecting, (output, len))))
            }
        };
        // A request that cannot be written fails at once, having sent nothing.
        let (call, step) = match written {
            Ok((call, step)) => (Some(call), step),
            Err(err) => return Box::pin(std::future::ready(Err(err))),
        };
        let keep = Keep {
            server,
            http: self.clone(),
        };
        Box::pin(Exchange { step, call, keep })
    }
}

/// A connection for a request: a kept one, or one being made.
enum Via {
    Kept(Box<Conn>),
    New(ConnectFuture),
}

/// A connection being made (the connector's future).
type ConnectFuture = <Connector as tower_service::Service<http::Uri>>::Future;

/// Where a connection goes back to after a clean answer.
struct Keep {
    server: Origin,
    http: Http,
}

impl Keep {
    fn give(&self, conn: Box<Conn>) {
        self.http.0.pool.give(self.server.clone(), conn);
    }
}

/// Writes `request` as it goes on the wire into `out` (its head, then its body with its
/// length, unless it has none): the exchange then only has to send it. Returns the call,
/// ready to read the answer's head, and the length written.
fn write_request(
    request: Request<Vec<u8>>,
    out: &mut Vec<u8>,
) -> Result<(Call<RecvResponse>, usize), RequestError> {
    let (parts, body) = request.into_parts();
    let mut call = Call::new(Request::from_parts(parts, ())).map_err(unwritable)?;
    if !body.is_empty() {
        call.header(header::CONTENT_LENGTH, HeaderValue::from(body.len()))
            .map_err(unwritable)?;
    }
    if !call.headers().contains_key(header::USER_AGENT) {
        call.header(header::USER_AGENT, HeaderValue::from_static(USER_AGENT))
            .map_err(unwritable)?;
    }
    let mut call = call.proceed();
    let mut writer = Writer::new(out);
    while !call.can_proceed() {
        // A header longer than the room left: the buffer grows.
        let amount = match call.write(writer.room()) {
            Err(ureq_proto::Error::OutputOverflow) => 0,
            written => written.map_err(unwritable)?,
        };
        writer.wrote(amount)?;
    }
    let mut send = match call.proceed().map_err(unwritable)? {
        Some(SendRequestResult::SendBody(send)) => send,
        Some(SendRequestResult::RecvResponse(read)) => return Ok((read, writer.len)),
        // Only a request that asks for `100 Continue` waits for it; none of the driver's does.
        Some(SendRequestResult::Await100(waiting)) => {
            match waiting.proceed().map_err(unwritable)? {
                Await100Result::SendBody(send) => send,
                Await100Result::RecvResponse(read) => return Ok((read, writer.len)),
            }
        }
        None => return Err(unwritable("the request's head could not be written")),
    };
    let mut left = &body[..];
    while !send.can_proceed() {
        let (used, amount) = send.write(left, writer.room()).map_err(unwritable)?;
        left = &left[used..];
        writer.wrote(amount)?;
    }
    let read = send.proceed();
    read.map(|read| (read, writer.len))
        .ok_or_else(|| unwritable("the request's body could not be written"))
}

/// Writes into a buffer that grows when full: what is written is `out[..len]`.
struct Writer<'o> {
    out: &'o mut Vec<u8>,
    len: usize,
}

impl<'o> Writer<'o> {
    fn new(out: &'o mut Vec<u8>) -> Self {
        if out.len() < OUTPUT {
            out.resize(OUTPUT, 0);
        }
        Self { out, len: 0 }
    }

    fn room(&mut self) -> &mut [u8] {
        &mut self.out[self.len..]
    }

    /// `amount` more bytes were written. Nothing written means the next piece needs more
    /// room than is left: the buffer grows, up to [`INPUT`] for a head that does not fit.
    fn wrote(&mut self, amount: usize) -> Result<(), RequestError> {
        self.len += amount;
        if amount == 0 || self.len == self.out.len() {
            if amount == 0 && self.out.len() >= INPUT {
                return Err(unwritable(
                    "the request's head is longer than the driver writes",
                ));
            }
            let grown = self.out.len() * 2;
            self.out.resize(grown, 0);
        }
        Ok(())
    }
}

/// A request's exchange: the connection made (unless one was kept), the request sent, the
/// answer's head read. A hand-written future, so that what it holds is what it needs and no
/// more (nested `async fn`s held every step's locals at once: 3 KiB a request).
struct Exchange {
    step: Step,
    /// Reads the answer's head (taken when it is in).
    call: Option<Call<RecvResponse>>,
    keep: Keep,
}

enum Step {
    /// The connection is being made; the request waits in its output buffer (and its
    /// length).
    Connect(ConnectFuture, (Vec<u8>, usize)),
    /// The request is being sent: this much of it left already.
    Send(Box<Conn>, usize),
    /// The answer's head is awaited.
    Head(Box<Conn>),
    /// Resolved.
    Done,
}

impl Future for Exchange {
    type Output = HeadResult;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<HeadResult> {
        let this = self.get_mut();
        let polled = this.advance(cx);
        if matches!(polled, Poll::Ready(Err(_))) {
            this.step = Step::Done;
        }
        polled
    }
}

impl Exchange {
    fn advance(&mut self, cx: &mut Context<'_>) -> Poll<HeadResult> {
        loop {
            match &mut self.step {
                Step::Done => return Poll::Pending,
                Step::Connect(connecting, output) => {
                    let stream =
                        ready!(connecting.as_mut().poll(cx)).map_err(RequestError::Connect)?;
                    let conn = Conn::new(stream, std::mem::take(output));
                    self.step = Step::Send(conn, 0);
                }
                Step::Send(conn, sent) => {
                    ready!(conn.poll_send(cx, sent))?;
                    let Step::Send(conn, _) = std::mem::replace(&mut self.step, Step::Done) else {
                        unreachable!("sending")
                    };
                    self.step = Step::Head(conn);
                }
                Step::Head(conn) => {
                    let Some(call) = &mut self.call else {
                        return Poll::Ready(Err(unwritable("the request was not written")));
                    };
                    let response = ready!(poll_head(call, conn, cx))?;
                    let (Step::Head(conn), Some(call)) = (
                        std::mem::replace(&mut self.step, Step::Done),
                        self.call.take(),
                    ) else {
                        unreachable!("reading the head")
                    };
                    return Poll::Ready(self.answered(response, call, conn));
                }
            }
        }
    }

    /// The answer's head is in: its body is read through the [`Body`] returned, or (an answer
    /// without one) its connection goes back at once.
    fn answered(
        &mut self,
        response: Response<()>,
        call: Call<RecvResponse>,
        mut conn: Box<Conn>,
    ) -> HeadResult {
        let keep = Keep {
            server: self.keep.server.clone(),
            http: self.keep.http.clone(),
        };
        let must_close = match call.proceed() {
            Some(RecvResponseResult::RecvBody(call)) => {
                conn.reading = Some(call);
                let body = Body {
                    conn: Some(conn),
                    keep: Some(keep),
                    chunk: 0,
                    closed: false,
                };
                return Ok(response.map(|()| body));
            }
            Some(RecvResponseResult::Redirect(call)) => call.must_close_connection(),
            Some(RecvResponseResult::Cleanup(call)) => call.must_close_connection(),
            None => true,
        };
        if !must_close {
            keep.give(conn);
        }
        Ok(response.map(|()| Body::empty()))
    }
}

/// Reads the answer's head from `conn`.
fn poll_head(
    call: &mut Call<RecvResponse>,
    conn: &mut Conn,
    cx: &mut Context<'_>,
) -> Poll<Result<Response<()>, RequestError>> {
    loop {
        let input = conn.unread();
        if !input.is_empty() {
            let seen = input.len();
            let (amount, response) = call
                .try_response(input, false)
                .map_err(|err| RequestError::Protocol(err.into()))?;
            if response.is_none() && seen >= INPUT {
                let longer = format!("the answer's head is longer than {INPUT} bytes");
                return Poll::Ready(Err(RequestError::Protocol(longer.into())));
            }
            conn.consume(amount);
            if let Some(response) = response {
                return Poll::Ready(Ok(response));
            }
        }
        if ready!(conn.poll_fill(cx))? == 0 {
            return Poll::Ready(Err(RequestError::Io(closed_before("the answer's head"))));
        }
    }
}

/// An answer's body being read: what it hands over is the body alone (its framing taken off),
/// a chunk at a time ([`poll_chunk`](Self::poll_chunk), then [`chunk`](Self::chunk)). Read to
/// its end (or dropped there), it gives its connection back to the client's pool; dropped
/// before, the connection closes.
pub(crate) struct Body {
    /// The connection the body is read on (its reading in it), until the body is over.
    conn: Option<Box<Conn>>,
    keep: Option<Keep>,
    /// How many bytes of the connection's chunk buffer the last read handed over.
    chunk: usize,
    /// The server closed the connection (the end of a body delimited by it).
    closed: bool,
}

impl Body {
    fn empty() -> Self {
        Self {
            conn: None,
            keep: None,
            chunk: 0,
            closed: false,
        }
    }

    /// The bytes the last [`poll_chunk`](Self::poll_chunk) that gave `Some(Ok(()))` handed
    /// over.
    pub(crate) fn chunk(&self) -> &[u8] {
        match &self.conn {
            Some(conn) => &conn.chunk[..self.chunk],
            None => &[],
        }
    }

    /// Whether the body has ended: nothing more will come.
    pub(crate) fn is_end_stream(&self) -> bool {
        match self.conn.as_ref().and_then(|conn| conn.reading.as_ref()) {
            Some(call) => {
                !matches!(call.body_mode(), BodyMode::CloseDelimited) && call.can_proceed()
            }
            None => true,
        }
    }

    /// Reads the body's next bytes: `Some(Ok(()))` when [`chunk`](Self::chunk) holds them (at
    /// least one), `None` at the body's end, an error when the connection broke or the body is
    /// not HTTP/1.1. What the connection holds already is handed over without a read.
    pub(crate) fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Option<io::Result<()>>> {
        self.chunk = 0;
        loop {
            let Some(conn) = &mut self.conn else {
                return Poll::Ready(None);
            };
            let Conn {
                input,
                start,
                end,
                chunk,
                reading,
                ..
            } = &mut **conn;
            let Some(call) = reading else {
                return Poll::Ready(None);
            };
            let delimited = !matches!(call.body_mode(), BodyMode::CloseDelimited);
            if delimited && call.can_proceed() {
                return Poll::Ready(self.ended().err().map(Err));
            }
            if start < end {
                let (used, produced) = call
                    .read(&input[*start..*end], chunk)
                    .map_err(|err| io::Error::new(io::ErrorKind::InvalidData, err))?;
                conn.consume(used);
                if produced > 0 {
                    self.chunk = produced;
                    return Poll::Ready(Some(Ok(())));
                }
                if used > 0 {
                    continue;
                }
            }
            if self.closed {
                return Poll::Ready(self.ended().err().map(Err));
            }
            match ready!(conn.poll_fill(cx)) {
                Ok(0) => self.closed = true,
                Ok(_) => {}
                Err(err) if mcp_driver_common::closed_by_peer(&err) => self.closed = true,
                Err(err) => {
                    self.conn = None;
                    return Poll::Ready(Some(Err(err)));
                }
            }
        }
    }

    /// The body is over: its connection goes back to the pool unless it must close. A body
    /// the close cut short is an error.
    fn ended(&mut self) -> io::Result<()> {
        let Some(mut conn) = self.conn.take() else {
            return Ok(());
        };
        let Some(call) = conn.reading.take() else {
            return Ok(());
        };
        if !call.can_proceed() {
            // The server closed after a chunked body's last chunk: the body is whole.
            return match call.is_ended_chunked() {
                true => Ok(()),
                false => Err(closed_before("the body's end")),
            };
        }
        let close = match call.proceed() {
            Some(RecvBodyResult::Cleanup(cleanup)) => cleanup.must_close_connection(),
            Some(RecvBodyResult::Redirect(redirect)) => redirect.must_close_connection(),
            None => true,
        };
        if let (false, false, Some(keep)) = (close, self.closed, self.keep.take()) {
            keep.give(conn);
        }
        Ok(())
    }
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Body")
            .field("ended", &self.is_end_stream())
            .finish_non_exhaustive()
    }
}

impl Drop for Body {
    /// A body whose end was read and not polled for yet still gives its connection back.
    fn drop(&mut self) {
        if self.conn.is_some() && self.is_end_stream() {
            let _ = self.ended();
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
