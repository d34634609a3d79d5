//! The HTTP transport of the tokio driver ([`HttpWire`]): each leg in flight is a request and
//! then a body, read beside the others; what they deliver goes to the operation under the
//! leg's id.
//!
//! Nothing here decides anything: every head, frame and failure goes to the operation, which
//! says whether to read on. The only waits are the operation's (its next timer, in the one
//! loop of `drive.rs`) and the drain after an answer, bounded by the proto's [`drain_until`](mcp_proto::driver::drain_until) and
//! [`DRAIN_BYTES`].

use std::error::Error as StdError;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::Poll;
use std::time::Instant;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use http::Uri;
use http_body_util::{BodyExt, Full};
use hyper::body::{Body as _, Frame, Incoming};
use hyper_rustls::MaybeHttpsStream;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::dns::Name;
use hyper_util::client::legacy::{Client as HyperClient, ResponseFuture};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use mcp_driver_common::lookup;
use mcp_driver_common::network::{
    CONNECTION_ATTEMPT_DELAY, Network, Proxies, ProxyFailure, ProxyUrl, Resolved,
    parse_connect_response,
};
use mcp_proto::driver::{
    DRAIN_BYTES, Input, Leg, LegId, LegKind, LegStatus, Operation, TransportError,
};
use mcp_proto::{Clock, TlsProblem, TransportErrorKind};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tower_service::Service as _;

use crate::clock::TokioClock;
use crate::wire::Wire;

/// The HTTP client every leg goes through.
pub(crate) type Http = HyperClient<Connector, Full<Bytes>>;

type HeadResult = Result<http::Response<Incoming>, hyper_util::client::legacy::Error>;

/// The `User-Agent` of a proxy's `CONNECT`.
const USER_AGENT: &str = concat!("mcp-driver-tokio/", env!("CARGO_PKG_VERSION"));

/// An HTTP/1.1 client for the default [`Network`] (the system's trust store, proxies from the
/// environment). Redirects are not followed (hyper never does).
pub(crate) fn http_client() -> Http {
    // The default network adds no CA of the caller's, so it cannot fail.
    http_client_for(&Network::default())
        .map(|(http, _)| http)
        .unwrap_or_else(|_| unreachable!("the default network adds no CA of the caller's"))
}

/// An HTTP/1.1 client whose connections trust and tunnel as `network` says: plain HTTP, or
/// HTTPS through rustls with the ring provider ([`crate::tls`]), each through the target's
/// proxy when it has one (an HTTP `CONNECT` tunnel); names looked up by [`Resolver`] (or
/// fixed by the caller). Also returns what its connections are doing ([`Connecting`]), which
/// tells a leg that ran out of time in a TLS handshake or in a proxy's tunnel
/// ([`connect_timeouts`]).
pub(crate) fn http_client_for(network: &Network) -> Result<(Http, Connecting), mcp_proto::Error> {
    let mut tcp = HttpConnector::new_with_resolver(Resolver);
    configure(&mut tcp);
    let connecting = Connecting::default();
    let connector = Connector {
        tcp,
        tls: crate::tls::LazyConfig::new(network)?,
        proxies: Arc::new(network.proxies()),
        resolved: network.resolved(),
        connecting: connecting.clone(),
    };
    let http = HyperClient::builder(TokioExecutor::new())
        .pool_timer(TokioTimer::new())
        .build(connector);
    Ok((http, connecting))
}

/// How every TCP connector of the driver connects: any URI scheme (TLS is the [`Connector`]'s),
/// Nagle off, and a name's addresses raced (Happy Eyeballs: hyper-util starts the first address
/// of the other family when the first family's attempt has had no answer for the shared
/// [`CONNECTION_ATTEMPT_DELAY`]; within a family the addresses are tried in turn).
fn configure<R>(tcp: &mut HttpConnector<R>) {
    tcp.enforce_http(false);
    tcp.set_nodelay(true);
    tcp.set_happy_eyeballs_timeout(Some(CONNECTION_ATTEMPT_DELAY));
}

/// A resolver that answers with the addresses the caller fixed for a name
/// ([`Network::with_resolved`]); the connector puts the URI's port on them.
#[derive(Clone)]
struct Fixed(Vec<SocketAddr>);

impl tower_service::Service<Name> for Fixed {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = std::io::Error;
    type Future = std::future::Ready<Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Name) -> Self::Future {
        std::future::ready(Ok(self.0.clone().into_iter()))
    }
}

/// The connector's name lookups: each on a detached thread of
/// [`mcp_driver_common::lookup`], never on tokio's blocking pool, whose threads a runtime's
/// shutdown waits for. A leg that ends while its lookup goes on drops the lookup's future
/// (its connection attempt is dropped with the request); the thread ends when the system
/// resolver gives up, and neither the runtime nor the process waits for it. The threads are
/// bounded as that module says (one per name, at most
/// [`MAX_LOOKUPS`](mcp_driver_common::lookup::MAX_LOOKUPS) names at once in the process).
/// hyper-util's `HttpConnector` calls it for names only: an IP-literal host is used as it is.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Resolver;

impl tower_service::Service<Name> for Resolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = std::io::Error;
    type Future =
        Pin<Box<dyn Future<Output = Result<Self::Response, std::io::Error>> + Send + 'static>>;

    fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let started = lookup::lookup(name.as_str());
        Box::pin(async move {
            // Port 0: the connector sets the URL's.
            let ips = started?.await?;
            let addrs: Vec<SocketAddr> = ips.into_iter().map(|ip| SocketAddr::new(ip, 0)).collect();
            Ok(addrs.into_iter())
        })
    }
}

/// What a client's connections are doing: the TLS handshakes and the proxy tunnels in
/// progress. A leg whose grant ends before its answer's head asks it why ([`connect_timeouts`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct Connecting {
    handshakes: Arc<AtomicUsize>,
    tunnels: Arc<Mutex<Vec<Tunnel>>>,
    next_tunnel: Arc<AtomicU64>,
}

/// A tunnel in progress: its target (`host:port`), and how it fails if the grant ends now.
#[derive(Debug)]
struct Tunnel {
    id: u64,
    target: String,
    at_the_end: TransportError,
}

impl Connecting {
    /// Whether a handshake is in progress.
    fn handshaking(&self) -> bool {
        self.handshakes.load(Ordering::SeqCst) > 0
    }

    fn begin_handshake(&self) -> HandshakeGuard {
        self.handshakes.fetch_add(1, Ordering::SeqCst);
        HandshakeGuard(self.clone())
    }

    /// Records a tunnel to `target` until the guard is dropped; it fails as `at_the_end` if the
    /// grant ends meanwhile (see [`TunnelGuard::now`]).
    fn begin_tunnel(&self, target: &str, at_the_end: TransportError) -> TunnelGuard {
        let id = self.next_tunnel.fetch_add(1, Ordering::Relaxed);
        self.tunnels().push(Tunnel {
            id,
            target: target.to_owned(),
            at_the_end,
        });
        TunnelGuard(self.clone(), id)
    }

    /// How a leg to `target` whose grant ended fails, when a tunnel to it is in progress.
    fn tunnel_to(&self, target: &str) -> Option<TransportError> {
        self.tunnels()
            .iter()
            .find(|tunnel| tunnel.target == target)
            .map(|tunnel| tunnel.at_the_end.clone())
    }

    fn tunnels(&self) -> std::sync::MutexGuard<'_, Vec<Tunnel>> {
        self.tunnels.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Counts one handshake until it ends or is dropped.
struct HandshakeGuard(Connecting);

impl Drop for HandshakeGuard {
    fn drop(&mut self) {
        self.0.handshakes.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Keeps one tunnel on the list until it is open, has failed, or is dropped.
struct TunnelGuard(Connecting, u64);

impl TunnelGuard {
    /// The tunnel reached a step where running out of the grant fails as `at_the_end`.
    fn now(&self, at_the_end: TransportError) {
        if let Some(tunnel) = self.0.tunnels().iter_mut().find(|t| t.id == self.1) {
            tunnel.at_the_end = at_the_end;
        }
    }
}

impl Drop for TunnelGuard {
    fn drop(&mut self) {
        self.0.tunnels().retain(|t| t.id != self.1);
    }
}

/// A URI's target as a tunnel names it: `host:port` (the scheme's port unless given).
fn target_of(uri: &Uri) -> String {
    let https = uri
        .scheme_str()
        .is_some_and(|s| s.eq_ignore_ascii_case("https"));
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    format!("{}:{port}", uri.host().unwrap_or(""))
}

/// The connector: TCP (hyper-util's, its names looked up by [`Resolver`]), the proxy tunnel,
/// TLS (tokio-rustls).
#[derive(Clone)]
pub(crate) struct Connector {
    tcp: HttpConnector<Resolver>,
    tls: crate::tls::LazyConfig,
    proxies: Arc<Proxies>,
    /// The names whose addresses the caller fixed.
    resolved: Resolved,
    connecting: Connecting,
}

type Stream = MaybeHttpsStream<TokioIo<TcpStream>>;

impl tower_service::Service<Uri> for Connector {
    type Response = Stream;
    type Error = ConnectFailure;
    type Future = Pin<Box<dyn Future<Output = Result<Stream, ConnectFailure>> + Send>>;

    fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> Poll<Result<(), Self::Error>> {
        // hyper-util's HTTP connector is always ready.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        Box::pin(self.clone().open(uri))
    }
}

impl Connector {
    async fn open(mut self, uri: Uri) -> Result<Stream, ConnectFailure> {
        let scheme = uri.scheme_str().unwrap_or("http").to_owned();
        let host = uri.host().unwrap_or("").to_owned();
        let https = scheme.eq_ignore_ascii_case("https");
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let tcp = match self.proxies.for_target(&scheme, &host) {
            Err(unusable) => return Err(ConnectFailure::new(TransportErrorKind::Proxy, unusable)),
            Ok(None) => match self.resolved.addresses(&host) {
                Some(ips) => {
                    let addrs = ips.iter().map(|ip| SocketAddr::new(*ip, 0)).collect();
                    let mut fixed = HttpConnector::new_with_resolver(Fixed(addrs));
                    configure(&mut fixed);
                    fixed.call(uri).await.map_err(ConnectFailure::connect)?
                }
                None => self.tcp.call(uri).await.map_err(ConnectFailure::connect)?,
            },
            Ok(Some(proxy)) => {
                let proxy = proxy.clone();
                self.tunnel(&proxy, &host, port).await?
            }
        };
        if !https {
            return Ok(MaybeHttpsStream::Http(tcp));
        }
        let name = crate::tls::server_name(&host).ok_or_else(|| {
            ConnectFailure::new(
                TransportErrorKind::Tls(TlsProblem::Handshake),
                "the host is not a valid TLS server name",
            )
        })?;
        let _handshake = self.connecting.begin_handshake();
        let tls = tokio_rustls::TlsConnector::from(self.tls.get());
        match tls.connect(name, TokioIo::new(tcp)).await {
            Ok(tls) => Ok(MaybeHttpsStream::Https(TokioIo::new(tls))),
            Err(err) => Err(handshake_failure(err)),
        }
    }

    /// Connects to `proxy` and opens a `CONNECT` tunnel to `host:port` through it. Until it is
    /// open, it is on the client's list of tunnels in progress, with the failure a leg to
    /// `host:port` whose grant ends meanwhile reports: the proxy could not be reached, then
    /// (once connected) the proxy did not answer.
    async fn tunnel(
        &mut self,
        proxy: &ProxyUrl,
        host: &str,
        port: u16,
    ) -> Result<TokioIo<TcpStream>, ConnectFailure> {
        let authority = format!("{host}:{port}");
        let failed =
            |what: ProxyFailure| ConnectFailure::from(proxy.transport_error(&authority, &what));
        let progress = self.connecting.begin_tunnel(
            &authority,
            proxy.transport_error(&authority, &ProxyFailure::NoConnection),
        );
        let proxy_uri: Uri = proxy.uri().parse().map_err(|_| {
            failed(ProxyFailure::Unusable(format!(
                "the proxy {proxy} is not a valid URI"
            )))
        })?;
        let stream = self
            .tcp
            .call(proxy_uri)
            .await
            .map_err(|e| failed(ProxyFailure::Unreachable(io_words(&e))))?;
        let mut tcp = stream.into_inner();
        progress.now(proxy.transport_error(&authority, &ProxyFailure::NoAnswer));
        tcp.write_all(&proxy.connect_request(host, port, USER_AGENT))
            .await
            .map_err(|e| failed(ProxyFailure::Unreachable(e.to_string())))?;
        // Read the answer's head a byte at a time: what follows it is the tunnel's.
        let mut head = Vec::with_capacity(128);
        loop {
            let mut byte = [0u8; 1];
            let read = tcp
                .read(&mut byte)
                .await
                .map_err(|e| failed(ProxyFailure::Unreachable(e.to_string())))?;
            if read == 0 {
                return Err(failed(ProxyFailure::Closed));
            }
            head.push(byte[0]);
            match parse_connect_response(&head) {
                Ok(None) => {}
                Ok(Some((_, status))) if (200..300).contains(&status) => {
                    return Ok(TokioIo::new(tcp));
                }
                Ok(Some((_, status))) => return Err(failed(ProxyFailure::Refused(status))),
                Err(what) => return Err(failed(what)),
            }
        }
    }
}

/// A failed handshake: a rustls error is the certificate's or the handshake's.
fn handshake_failure(err: std::io::Error) -> ConnectFailure {
    match err
        .get_ref()
        .and_then(|e| e.downcast_ref::<rustls::Error>())
    {
        Some(tls) => ConnectFailure::new(
            TransportErrorKind::Tls(crate::tls::problem_of(tls)),
            tls.to_string(),
        ),
        None => ConnectFailure::new(TransportErrorKind::Connect, err.to_string()),
    }
}

/// The words of the innermost I/O error in `err`'s chain, else the whole chain.
fn io_words(err: &(dyn StdError + 'static)) -> String {
    let mut source = Some(err);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            return io.to_string();
        }
        source = cause.source();
    }
    chain(err)
}

/// Why a connection could not be made, with the kind the operation is told.
#[derive(Debug)]
pub(crate) struct ConnectFailure {
    kind: TransportErrorKind,
    detail: String,
    source: Option<Box<dyn StdError + Send + Sync>>,
}

impl From<TransportError> for ConnectFailure {
    fn from(error: TransportError) -> Self {
        Self::new(error.kind, error.detail)
    }
}

impl ConnectFailure {
    fn new(kind: TransportErrorKind, detail: impl Into<String>) -> Self {
        Self {
            kind,
            detail: detail.into(),
            source: None,
        }
    }

    /// A TCP connect failure: the connector's own error, kept as the source.
    fn connect(err: impl Into<Box<dyn StdError + Send + Sync>>) -> Self {
        let err = err.into();
        Self {
            kind: TransportErrorKind::Connect,
            detail: err.to_string(),
            source: Some(err),
        }
    }
}

impl std::fmt::Display for ConnectFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.detail)
    }
}

impl StdError for ConnectFailure {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn StdError + 'static))
    }
}

/// What a failed request tells the operation: a TLS or proxy failure in the connector's own
/// words (the same as the blocking driver's), any other failure with its whole chain.
pub(crate) fn transport_error(err: &hyper_util::client::legacy::Error) -> TransportError {
    let kind = kind_of(err);
    let mut source = err.source();
    while let Some(cause) = source {
        if let Some(failure) = cause.downcast_ref::<ConnectFailure>() {
            if matches!(
                failure.kind,
                TransportErrorKind::Tls(_)
                    | TransportErrorKind::Proxy
                    | TransportErrorKind::ProxyTimedOut
            ) {
                return TransportError::new(failure.kind, failure.detail.clone());
            }
        }
        source = cause.source();
    }
    TransportError::new(kind, chain(err))
}

/// At a timer: the legs whose grant ended before their head came, while a tunnel to their
/// target was in progress, fail as that tunnel's proxy (not reached, or not answering); else,
/// while a TLS handshake was in progress, as a handshake that timed out. Each is reported at
/// once; the operation's own timers then expire as usual (the others time out).
fn connect_timeouts(
    op: &mut Operation,
    legs: &mut Vec<InFlight>,
    connecting: &Connecting,
    now: Instant,
) {
    let handshaking = connecting.handshaking();
    if !handshaking && connecting.tunnels().is_empty() {
        return;
    }
    let mut index = 0;
    while index < legs.len() {
        let leg = &legs[index];
        if now < leg.ends_at || !matches!(leg.state, State::Head(_)) {
            index += 1;
            continue;
        }
        let error = connecting.tunnel_to(&target_of(&leg.uri)).or_else(|| {
            handshaking.then(|| {
                TransportError::new(
                    TransportErrorKind::Tls(TlsProblem::TimedOut),
                    "the TLS handshake did not finish within the grant",
                )
            })
        });
        let Some(error) = error else {
            index += 1;
            continue;
        };
        op.handle_input(Input::Failed { leg: leg.id, error }, now);
        legs.swap_remove(index);
    }
}

/// One leg in flight.
pub(crate) struct InFlight {
    id: LegId,
    /// Over HTTP+SSE, the leg whose body becomes the session's event stream.
    opens_stream: bool,
    /// Its grant's end, which bounds the drain after its answer.
    ends_at: Instant,
    /// Its request's URI: the target of a tunnel it may be waiting for.
    uri: Uri,
    state: State,
}

enum State {
    /// The request is being sent; its head is awaited. (hyper-util boxes the future already:
    /// it is kept as it comes, not boxed again.)
    Head(ResponseFuture),
    /// The head was fed; the body is read frame by frame.
    Body(Incoming),
}

/// What a leg delivered.
pub(crate) enum Delivery {
    /// The response head (or why there is none).
    Head(HeadResult),
    /// A body frame, its end (`None`) or a broken body.
    Frame(Option<Result<Frame<Bytes>, hyper::Error>>),
}

impl InFlight {
    /// Starts the leg's request; it makes progress when [`next`] polls it.
    pub(crate) fn start(http: &Http, leg: Leg) -> Self {
        let request = leg.request.map(|body| Full::new(Bytes::from(body)));
        Self {
            id: leg.id,
            opens_stream: leg.kind == LegKind::Events,
            ends_at: leg.ends_at,
            uri: request.uri().clone(),
            state: State::Head(http.request(request)),
        }
    }
}

/// The HTTP transport of the tokio driver: every leg in flight is a request and then a body,
/// read beside the others; over HTTP+SSE the session's event stream too, kept between
/// operations.
pub(crate) struct HttpWire<'a> {
    pub(crate) http: &'a Http,
    pub(crate) connecting: &'a Connecting,
    pub(crate) legs: Vec<InFlight>,
    /// Over HTTP+SSE: the session's event stream (the client's, while this operation has the
    /// turn; else one this operation opened, offered to the client at its end).
    pub(crate) events: &'a mut Option<Incoming>,
}

/// What came on the wire: a leg's delivery, or the next frame of the session's event stream.
pub(crate) enum Came {
    Leg(usize, Delivery),
    Events(Option<Result<Frame<Bytes>, hyper::Error>>),
}

impl Wire for HttpWire<'_> {
    type Came = Came;

    async fn transmit(&mut self, op: &mut Operation, leg: Leg, now: Instant) -> Instant {
        if leg.kind == LegKind::Hangup {
            // Dropped, its connection closes: the server's session ends with it.
            *self.events = None;
            op.handle_input(Input::EventsEnded { error: None }, now);
            return now;
        }
        self.legs.push(InFlight::start(self.http, leg));
        now
    }

    async fn next(&mut self) -> Came {
        let (legs, events) = (&mut self.legs, &mut *self.events);
        std::future::poll_fn(|cx| {
            if let Poll::Ready((index, delivery)) = poll_legs(legs, cx) {
                return Poll::Ready(Came::Leg(index, delivery));
            }
            match events {
                Some(body) => Pin::new(body).poll_frame(cx).map(Came::Events),
                None => Poll::Pending,
            }
        })
        .await
    }

    async fn feed(&mut self, op: &mut Operation, came: Came) -> Instant {
        match came {
            Came::Leg(index, delivery) => {
                feed(op, &mut self.legs, self.events, index, delivery).await
            }
            Came::Events(frame) => {
                let now = TokioClock.now();
                match frame {
                    Some(Ok(frame)) => {
                        if let Some(data) = frame.data_ref().filter(|data| !data.is_empty()) {
                            op.handle_input(Input::Events(data), now);
                        }
                    }
                    None => {
                        *self.events = None;
                        op.handle_input(Input::EventsEnded { error: None }, now);
                    }
                    Some(Err(err)) => {
                        *self.events = None;
                        let error = TransportError::new(TransportErrorKind::Io, chain(&err));
                        op.handle_input(Input::EventsEnded { error: Some(error) }, now);
                    }
                }
                now
            }
        }
    }

    fn at_timer(&mut self, op: &mut Operation, now: Instant) {
        connect_timeouts(op, &mut self.legs, self.connecting, now);
    }

    fn prune(&mut self, op: &Operation) {
        self.legs.retain(|leg| op.is_in_flight(leg.id));
    }
}

/// The next delivery of any leg in flight, with its index; never resolves when none is in
/// flight, so it can sit in a `select!` beside the operation's timer. Cancel-safe: dropping it
/// loses nothing.
fn poll_legs(legs: &mut [InFlight], cx: &mut std::task::Context<'_>) -> Poll<(usize, Delivery)> {
    for (index, leg) in legs.iter_mut().enumerate() {
        let delivery = match &mut leg.state {
            State::Head(head) => Pin::new(head).poll(cx).map(Delivery::Head),
            State::Body(body) => Pin::new(body).poll_frame(cx).map(Delivery::Frame),
        };
        if let Poll::Ready(delivery) = delivery {
            return Poll::Ready((index, delivery));
        }
    }
    Poll::Pending
}

/// Feeds what leg `index` delivered to the operation; a leg that is over is dropped (the
/// operation reports it). Returns the instant the delivery was fed at (after a drain, the
/// drain's end).
async fn feed(
    op: &mut Operation,
    legs: &mut Vec<InFlight>,
    events: &mut Option<Incoming>,
    index: usize,
    delivery: Delivery,
) -> Instant {
    let mut now = TokioClock.now();
    let leg = &mut legs[index];
    let id = leg.id;
    match delivery {
        Delivery::Head(Ok(response)) => {
            let (head, body) = response.into_parts();
            let read_on = op.handle_input(Input::head(id, &head), now) == LegStatus::ReadMore;
            if read_on && leg.opens_stream {
                // The session's event stream from now on (another one it replaces is dropped);
                // the leg is over for this wire: its bytes come as `Input::Events`.
                *events = Some(body);
            } else if read_on {
                leg.state = State::Body(body);
                return now;
            }
            // Unread, the body closes its connection; an empty one is already pooled.
        }
        Delivery::Head(Err(err)) => {
            let error = transport_error(&err);
            op.handle_input(Input::Failed { leg: id, error }, now);
        }
        Delivery::Frame(None) => {
            op.handle_input(Input::End { leg: id }, now);
        }
        Delivery::Frame(Some(Err(err))) => {
            let error = TransportError::new(TransportErrorKind::Io, chain(&err));
            op.handle_input(Input::Failed { leg: id, error }, now);
        }
        Delivery::Frame(Some(Ok(frame))) => {
            // Trailers and empty frames carry nothing an MCP answer needs.
            let Some(data) = frame.data_ref().filter(|data| !data.is_empty()) else {
                return now;
            };
            if op.handle_input(
                Input::Chunk {
                    leg: id,
                    bytes: data,
                },
                now,
            ) == LegStatus::ReadMore
            {
                return now;
            }
            if let (State::Body(body), true) = (&mut leg.state, now < leg.ends_at) {
                let until = mcp_proto::driver::drain_until(now, leg.ends_at);
                if drain_rest(body, until).await {
                    now = TokioClock.now();
                }
            }
        }
    }
    legs.swap_remove(index);
    now
}

/// The kind of a failed request: no connection, an answer that is not HTTP (a head that
/// does not parse), or a broken connection.
pub(crate) fn kind_of(err: &hyper_util::client::legacy::Error) -> TransportErrorKind {
    if err.is_connect() {
        return TransportErrorKind::Connect;
    }
    let mut source = err.source();
    while let Some(cause) = source {
        if cause
            .downcast_ref::<hyper::Error>()
            .is_some_and(hyper::Error::is_parse)
        {
            return TransportErrorKind::Protocol;
        }
        source = cause.source();
    }
    TransportErrorKind::Io
}

/// After the answer is in: reads what is left of `body` if it ends within the proto's drain
/// bounds, so that hyper puts the connection back in its pool instead of closing it. What is
/// already in (usually the chunked body's end) is read without arming a timer: first as it
/// is, then after one turn of the runtime, in which hyper's connection task reads what the
/// socket holds. A timer shorter than every other is armed only after that: arming it wakes
/// the runtime's driver with a system call (`tokio::time` re-parks on an earlier timer), two
/// a call on an event-stream answer when it was armed at once. Returns whether it had to wait.
async fn drain_rest(body: &mut Incoming, until: Instant) -> bool {
    let mut left = DRAIN_BYTES;
    let mut yielded = false;
    loop {
        if body.is_end_stream() {
            return false;
        }
        let polled =
            std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut *body).poll_frame(cx))).await;
        match polled {
            Poll::Pending if !yielded => {
                yielded = true;
                tokio::task::yield_now().await;
            }
            Poll::Pending => break,
            Poll::Ready(Some(Ok(frame))) => {
                left = left.saturating_sub(frame.data_ref().map_or(0, |d| d.len()));
                if left == 0 {
                    return false;
                }
            }
            Poll::Ready(_) => return false,
        }
    }
    let _ = tokio::time::timeout_at(tokio::time::Instant::from_std(until), async {
        while let Some(Ok(frame)) = body.frame().await {
            left = left.saturating_sub(frame.data_ref().map_or(0, |d| d.len()));
            if left == 0 {
                break;
            }
        }
    })
    .await;
    true
}

/// An error and its sources, outermost first, joined with `": "`.
pub(crate) fn chain(err: &(dyn StdError + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.ends_with(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
