//! The tokio driver's connector ([`Connector`]): how a request gets a connection. TCP
//! (hyper-util's `HttpConnector`, its names looked up off the runtime by [`Resolver`] or fixed
//! by the caller, the addresses raced), the HTTP `CONNECT` tunnel through the target's proxy,
//! and TLS (tokio-rustls with the client's configuration), so that both drivers trust, tunnel
//! and fail alike ([`mcp_driver_common::network`]); and what the connections in progress are
//! doing ([`Connecting`]), which tells a leg that ran out of time in a TLS handshake or in a
//! proxy's tunnel why.
//!
//! This module never decides an MCP matter: it makes connections and says why one could not
//! be made ([`ConnectFailure`]).

use std::error::Error as StdError;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Poll;

use http::Uri;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::dns::Name;
use mcp_driver_common::lookup;
use mcp_driver_common::network::{
    CONNECTION_ATTEMPT_DELAY, Network, Proxies, ProxyFailure, ProxyUrl, Resolved,
    parse_connect_response,
};
use mcp_proto::driver::TransportError;
use mcp_proto::{TlsProblem, TransportErrorKind};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tower_service::Service as _;

/// The `User-Agent` of a proxy's `CONNECT`.
const USER_AGENT: &str = concat!("mcp-driver-tokio/", env!("CARGO_PKG_VERSION"));

impl Connector {
    /// The connector for `network`: its trust (the system's store plus the CAs it adds), its
    /// proxies, the names it fixes; what its connections are doing goes to `connecting`.
    pub(crate) fn new(network: &Network, connecting: Connecting) -> Result<Self, mcp_proto::Error> {
        let mut tcp = HttpConnector::new_with_resolver(Resolver);
        configure(&mut tcp);
        Ok(Self {
            tcp,
            tls: crate::tls::LazyConfig::new(network)?,
            proxies: Arc::new(network.proxies()),
            resolved: network.resolved(),
            connecting,
        })
    }
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
    pub(crate) fn handshaking(&self) -> bool {
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
    pub(crate) fn tunnel_to(&self, target: &str) -> Option<TransportError> {
        self.tunnels()
            .iter()
            .find(|tunnel| tunnel.target == target)
            .map(|tunnel| tunnel.at_the_end.clone())
    }

    /// Whether a tunnel is in progress.
    pub(crate) fn tunneling(&self) -> bool {
        !self.tunnels().is_empty()
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
pub(crate) fn target_of(uri: &Uri) -> String {
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

/// A connection's byte stream: TCP, or TLS over it.
pub(crate) enum Stream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
    /// A connection whose answers are scripted (the HTTP/1.1 client's tests).
    #[cfg(test)]
    Scripted(crate::http1::tests::Scripted),
}

impl Stream {
    /// Whether nothing waits on the socket: no byte, no close, no error (a look with one
    /// system call that does not wait). A kept connection is taken only then: tokio's
    /// readiness tells what the runtime's driver saw last, and a runtime that did not run
    /// while the connection was idle (a `block_on` an operation) saw nothing.
    pub(crate) fn is_quiet(&self) -> bool {
        let tcp = match self {
            Self::Plain(tcp) => tcp,
            Self::Tls(tls) => tls.get_ref().0,
            #[cfg(test)]
            Self::Scripted(_) => return true,
        };
        let mut byte = [std::mem::MaybeUninit::uninit()];
        // tokio's sockets do not block: nothing to read is `WouldBlock`.
        matches!(
            socket2::SockRef::from(tcp).peek(&mut byte),
            Err(err) if err.kind() == std::io::ErrorKind::WouldBlock
        )
    }
}

impl tokio::io::AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Self::Plain(tcp) => Pin::new(tcp).poll_read(cx, buf),
            Self::Tls(tls) => Pin::new(&mut **tls).poll_read(cx, buf),
            #[cfg(test)]
            Self::Scripted(scripted) => Pin::new(scripted).poll_read(cx, buf),
        }
    }
}

impl tokio::io::AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Self::Plain(tcp) => Pin::new(tcp).poll_write(cx, buf),
            Self::Tls(tls) => Pin::new(&mut **tls).poll_write(cx, buf),
            #[cfg(test)]
            Self::Scripted(scripted) => Pin::new(scripted).poll_write(cx, buf),
        }
    }

    fn poll_flush(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Self::Plain(tcp) => Pin::new(tcp).poll_flush(cx),
            Self::Tls(tls) => Pin::new(&mut **tls).poll_flush(cx),
            #[cfg(test)]
            Self::Scripted(scripted) => Pin::new(scripted).poll_flush(cx),
        }
    }

    fn poll_shutdown(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Self::Plain(tcp) => Pin::new(tcp).poll_shutdown(cx),
            Self::Tls(tls) => Pin::new(&mut **tls).poll_shutdown(cx),
            #[cfg(test)]
            Self::Scripted(scripted) => Pin::new(scripted).poll_shutdown(cx),
        }
    }
}

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
                    let tcp = fixed.call(uri).await.map_err(ConnectFailure::connect)?;
                    tcp.into_inner()
                }
                None => {
                    let tcp = self.tcp.call(uri).await.map_err(ConnectFailure::connect)?;
                    tcp.into_inner()
                }
            },
            Ok(Some(proxy)) => {
                let proxy = proxy.clone();
                self.tunnel(&proxy, &host, port).await?
            }
        };
        if !https {
            return Ok(Stream::Plain(tcp));
        }
        let name = crate::tls::server_name(&host).ok_or_else(|| {
            ConnectFailure::new(
                TransportErrorKind::Tls(TlsProblem::Handshake),
                "the host is not a valid TLS server name",
            )
        })?;
        let _handshake = self.connecting.begin_handshake();
        let tls = tokio_rustls::TlsConnector::from(self.tls.get());
        match tls.connect(name, tcp).await {
            Ok(tls) => Ok(Stream::Tls(Box::new(tls))),
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
    ) -> Result<TcpStream, ConnectFailure> {
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
                    return Ok(tcp);
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
    pub(crate) kind: TransportErrorKind,
    pub(crate) detail: String,
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
