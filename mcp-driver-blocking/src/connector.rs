//! The client's connector chain: ureq's own steps, plus socket registration for cancelling
//! and precise read timeouts; and a resolver that skips the lookup for an address, and for a
//! target reached through a proxy.
//!
//! The chain is ureq's (TCP and its socket registry) with our own proxy tunnel and TLS steps
//! (so that both drivers trust, tunnel and fail alike: see [`crate::tls`] and
//! [`mcp_driver_common::network`]), and two additions:
//!
//! * **Tunnel.** [`Tunnel`] picks the proxy for each request's target (the [`Proxies`] of the
//!   client's [`Network`](crate::Network)), connects to it and opens an HTTP `CONNECT` tunnel,
//!   all inside the leg's grant; its failures are `ConnectProxyFailed` with the sentence of
//!   [`ProxyUrl::failure`](mcp_driver_common::network::ProxyUrl::failure) (no credentials). The `CONNECT` carries the target's name: only the proxy
//!   resolves it (in company networks the client often cannot), so [`Resolver`] must never
//!   look up a proxied target (ureq resolves before it calls the chain). The tunnel looks up
//!   the proxy's own name itself, with [`Lookup`], inside the leg's grant.
//! * **TLS.** [`Tls`] runs the handshake with the client's rustls configuration; a certificate
//!   refused is `ureq::Error::Rustls`, a handshake that ran out of the grant
//!   [`HANDSHAKE_TIMED_OUT`].
//! * **Registration.** [`Connector`] hands the chain a `register_shutdown` callback of its own,
//!   so every socket ureq's `TcpConnector` opens is recorded for [`CancelHandle`]
//!   (see [`crate::cancel`]); ureq's own registry is still called.
//! * **Sliced reads.** ureq bounds a blocking read with the socket's receive timeout
//!   (`SO_RCVTIMEO`). On Linux that timeout runs on the kernel's timer wheel, whose precision
//!   shrinks with the length of the timeout (about 1/8 of it: a 2 s timeout fires up to ~30 ms
//!   late, a 17 s one was measured 1.7 s late). That would break the promise that an
//!   operation overruns its budget by less than one resolution unit. [`Sliced`] sits between
//!   TCP and TLS and waits for input in slices of at most [`SLICE`], which the timer wheel
//!   keeps to a few milliseconds, until the leg's real deadline. Writes are not sliced: a
//!   write that timed out may have sent part of its buffer, so it cannot be retried (requests
//!   are small and are not expected to block).
//!
//! [`CancelHandle`]: crate::CancelHandle

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use mcp_driver_common::network::{Proxies, ProxyFailure, parse_connect_response};
use rustls::{ClientConnection, StreamOwned};
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver as UreqResolver};
use ureq::unversioned::transport::time::{Duration as UreqDuration, Instant as UreqInstant};
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector as UreqConnector, Either, LazyBuffers, NextTimeout,
    ShutdownHandle, TcpConnector, Transport, TransportAdapter,
};

use crate::cancel::Shared;

/// The `ureq::Error::Tls` text of a TLS handshake that did not finish within the grant.
pub(crate) const HANDSHAKE_TIMED_OUT: &str = "the TLS handshake did not finish within the grant";

/// The longest single blocking wait for input. Short enough to stay in the timer wheel's
/// finest level at any kernel tick rate (64 ticks: 64 ms at 1000 Hz), so each wait ends
/// within a tick or two of when it was asked to.
pub(crate) const SLICE: Duration = Duration::from_millis(50);

type Chain = Box<dyn UreqConnector<(), Out = Box<dyn Transport>>>;

/// The client's connector; see the [module docs](self).
pub(crate) struct Connector {
    chain: Chain,
    shared: Arc<Shared>,
}

impl Connector {
    pub(crate) fn new(
        shared: Arc<Shared>,
        tls: mcp_driver_common::tls::LazyConfig,
        proxies: Proxies,
        user_agent: &'static str,
    ) -> Self {
        let tunnel = Tunnel {
            proxies,
            lookup: Lookup::default(),
            user_agent,
            shared: Arc::clone(&shared),
        };
        let chain =
            ().chain(tunnel)
                .chain(TcpConnector::default())
                .chain(Slice(Arc::clone(&shared)))
                .chain(Tls(tls, Arc::clone(&shared)))
                .chain(Boxed);
        Self {
            chain: Box::new(chain),
            shared,
        }
    }
}

impl fmt::Debug for Connector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connector")
            .field("chain", &self.chain)
            .finish_non_exhaustive()
    }
}

impl UreqConnector<()> for Connector {
    type Out = Box<dyn Transport>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<()>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        let cancelled = || {
            ureq::Error::Io(io::Error::new(
                io::ErrorKind::Interrupted,
                "the operation was cancelled",
            ))
        };
        if self.shared.is_cancelled() {
            return Err(cancelled());
        }
        let register = Arc::clone(&details.register_shutdown);
        let shared = Arc::clone(&self.shared);
        let ours = ConnectionDetails {
            uri: details.uri,
            addrs: details.addrs.clone(),
            config: details.config,
            request_level: details.request_level,
            resolver: details.resolver,
            now: details.now,
            timeout: details.timeout,
            current_time: Arc::clone(&details.current_time),
            run_connector: Arc::clone(&details.run_connector),
            register_shutdown: Arc::new(move |socket: Weak<dyn ShutdownHandle>| {
                shared.register(socket.clone());
                // The agent keeps its own registry too (for `Agent::shutdown`).
                register(socket)
            }),
        };
        match self.chain.connect(&ours, chained) {
            Ok(_) if self.shared.is_cancelled() => Err(cancelled()),
            Ok(transport) => Ok(transport),
            Err(err) => {
                self.shared.set_connect_failed();
                Err(err)
            }
        }
    }
}

/// What is left of the connection's time (`details.timeout` counts from `details.now`).
fn left(details: &ConnectionDetails) -> NextTimeout {
    let elapsed = match ((details.current_time)(), details.now) {
        (UreqInstant::Exact(now), UreqInstant::Exact(then)) => {
            Some(now.saturating_duration_since(then))
        }
        _ => None,
    };
    let after = match (details.timeout.after, elapsed) {
        (UreqDuration::Exact(limit), Some(elapsed)) => {
            UreqDuration::Exact(limit.saturating_sub(elapsed))
        }
        (after, _) => after,
    };
    NextTimeout {
        after,
        ..details.timeout
    }
}

/// The first chain step: the tunnel through the target's proxy, when it has one.
struct Tunnel {
    proxies: Proxies,
    /// Looks up the proxy's name (never the target's: the proxy does that).
    lookup: Lookup,
    user_agent: &'static str,
    shared: Arc<Shared>,
}

impl fmt::Debug for Tunnel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Tunnel")
    }
}

impl<In: Transport> UreqConnector<In> for Tunnel {
    type Out = Either<In, Box<dyn Transport>>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        if let Some(transport) = chained {
            return Ok(Some(Either::A(transport)));
        }
        let target = details.uri;
        let (scheme, host) = (
            target.scheme_str().unwrap_or("http"),
            target.host().unwrap_or(""),
        );
        let proxy = match self.proxies.for_target(scheme, host) {
            Ok(None) => return Ok(None),
            Ok(Some(proxy)) => proxy,
            Err(unusable) => return Err(ureq::Error::ConnectProxyFailed(unusable)),
        };
        let port = target
            .port_u16()
            .unwrap_or(if scheme == "https" { 443 } else { 80 });
        let authority = format!("{host}:{port}");
        let failed =
            |what: ProxyFailure| ureq::Error::ConnectProxyFailed(proxy.failure(&authority, &what));
        // The proxy's own failures (resolve, connect) are the proxy's; running out of time is
        // the leg's.
        let unreachable = |err: ureq::Error| match err {
            ureq::Error::Timeout(_) => err,
            ureq::Error::Io(io) if io.kind() == io::ErrorKind::TimedOut => ureq::Error::Io(io),
            other => failed(ProxyFailure::Unreachable(other.to_string())),
        };
        let proxy_uri: http::Uri = proxy.uri().parse().map_err(|_| {
            failed(ProxyFailure::Unusable(format!(
                "the proxy {proxy} is not a valid URI"
            )))
        })?;
        // Not `details.resolver`: it sends every name the proxy rules cover to the proxy, and
        // those may cover the proxy's own name.
        let addrs = self
            .lookup
            .resolve(&proxy_uri, details.config, left(details))
            .map_err(unreachable)?;
        let proxy_details = ConnectionDetails {
            uri: &proxy_uri,
            addrs,
            config: details.config,
            request_level: details.request_level,
            resolver: details.resolver,
            now: details.now,
            timeout: details.timeout,
            current_time: Arc::clone(&details.current_time),
            run_connector: Arc::clone(&details.run_connector),
            register_shutdown: Arc::clone(&details.register_shutdown),
        };
        let tcp = UreqConnector::<()>::connect(&TcpConnector::default(), &proxy_details, None)
            .map_err(unreachable)?
            .ok_or_else(|| failed(ProxyFailure::Unreachable("no address".to_owned())))?;
        let tcp = Sliced(tcp, Arc::clone(&self.shared));
        let request = proxy.connect_request(host, port, self.user_agent);
        let mut writer = TransportAdapter::new(
            Box::new(tcp) as Box<dyn Transport>,
            Arc::clone(&details.current_time),
        );
        writer.set_timeout(left(details));
        writer.write_all(&request).map_err(ureq::Error::from)?;
        let mut tunnel = writer.into_inner();
        loop {
            let progress = tunnel.await_input(left(details))?;
            match parse_connect_response(tunnel.buffers().input()) {
                Ok(Some((used, status))) => {
                    tunnel.buffers().input_consume(used);
                    if !(200..300).contains(&status) {
                        return Err(failed(ProxyFailure::Refused(status)));
                    }
                    return Ok(Some(Either::B(tunnel)));
                }
                Ok(None) if progress => {}
                Ok(None) => return Err(failed(ProxyFailure::Closed)),
                Err(what) => return Err(failed(what)),
            }
        }
    }
}

/// The chain step that runs the TLS handshake for `https` targets.
/// The TLS step, and the lane's state (whose leg end may cut a handshake short).
struct Tls(mcp_driver_common::tls::LazyConfig, Arc<Shared>);

impl fmt::Debug for Tls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Tls")
    }
}

impl<In: Transport> UreqConnector<In> for Tls {
    type Out = Either<In, TlsTransport>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        let Some(transport) = chained else {
            return Ok(None);
        };
        if !details.needs_tls() || transport.is_tls() {
            return Ok(Some(Either::A(transport)));
        }
        let host = details.uri.host().unwrap_or("");
        let name = crate::tls::server_name(host)
            .ok_or(ureq::Error::Tls("the host is not a valid TLS server name"))?;
        let mut conn = ClientConnection::new(self.0.get(), name)?;
        let mut sock = TransportAdapter::new(transport.boxed(), Arc::clone(&details.current_time));
        sock.set_timeout(left(details));
        while conn.is_handshaking() {
            conn.complete_io(&mut sock)
                .map_err(|err| handshake_error(err, self.1.leg_ended()))?;
        }
        let buffers = LazyBuffers::new(
            details.config.input_buffer_size(),
            details.config.output_buffer_size(),
        );
        Ok(Some(Either::B(TlsTransport {
            buffers,
            stream: StreamOwned { conn, sock },
        })))
    }
}

/// A failed handshake: the certificate or the handshake refused (a rustls error), or the
/// grant ran out ([`HANDSHAKE_TIMED_OUT`]): ureq's timeout, or the leg's end, which shut the
/// socket down under the handshake (`leg_ended`).
fn handshake_error(err: io::Error, leg_ended: bool) -> ureq::Error {
    if leg_ended {
        return ureq::Error::Tls(HANDSHAKE_TIMED_OUT);
    }
    if err.get_ref().is_some_and(|e| e.is::<rustls::Error>()) {
        if let Some(Ok(tls)) = err.into_inner().map(|e| e.downcast::<rustls::Error>()) {
            return ureq::Error::Rustls(*tls);
        }
        return ureq::Error::Tls("the TLS handshake failed");
    }
    match ureq::Error::from(err) {
        ureq::Error::Timeout(_) => ureq::Error::Tls(HANDSHAKE_TIMED_OUT),
        ureq::Error::Io(io)
            if matches!(
                io.kind(),
                io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
            ) =>
        {
            ureq::Error::Tls(HANDSHAKE_TIMED_OUT)
        }
        other => other,
    }
}

/// A TLS connection over the chained transport.
pub(crate) struct TlsTransport {
    buffers: LazyBuffers,
    stream: StreamOwned<ClientConnection, TransportAdapter<Box<dyn Transport>>>,
}

impl fmt::Debug for TlsTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsTransport").finish_non_exhaustive()
    }
}

impl Transport for TlsTransport {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        self.stream.get_mut().set_timeout(timeout);
        let output = &self.buffers.output()[..amount];
        self.stream.write_all(output)?;
        Ok(())
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.stream.get_mut().set_timeout(timeout);
        let input = self.buffers.input_append_buf();
        let amount = self.stream.read(input)?;
        self.buffers.input_appended(amount);
        Ok(amount > 0)
    }

    fn is_open(&mut self) -> bool {
        self.stream.get_mut().get_mut().is_open()
    }

    fn is_tls(&self) -> bool {
        true
    }
}

/// The chain step that wraps the TCP transport in [`Sliced`].
struct Slice(Arc<Shared>);

impl fmt::Debug for Slice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Slice")
    }
}

impl<In: Transport> UreqConnector<In> for Slice {
    type Out = Sliced<In>;

    fn connect(
        &self,
        _: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        Ok(chained.map(|t| Sliced(t, Arc::clone(&self.0))))
    }
}

/// The last chain step: erases the transport's type.
#[derive(Debug)]
struct Boxed;

impl<In: Transport> UreqConnector<In> for Boxed {
    type Out = Box<dyn Transport>;

    fn connect(
        &self,
        _: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        Ok(chained.map(|t| Box::new(t) as Box<dyn Transport>))
    }
}

/// `after` rounded up to a whole number of [`SLICE`]s (a zero stays zero: ureq reads it as
/// "already over").
fn whole_slices(after: Duration) -> Duration {
    let slice = SLICE.as_nanos();
    let slices = after.as_nanos().div_ceil(slice);
    u64::try_from(slices * slice).map_or(after, Duration::from_nanos)
}

/// A transport whose waits for input are cut into slices of at most [`SLICE`].
pub(crate) struct Sliced<T>(T, Arc<Shared>);

impl<T: fmt::Debug> fmt::Debug for Sliced<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Sliced").field(&self.0).finish()
    }
}

impl<T: Transport> Transport for Sliced<T> {
    fn buffers(&mut self) -> &mut dyn Buffers {
        self.0.buffers()
    }

    /// Writes with the leg's remaining time rounded up to a whole [`SLICE`]: the leg's end
    /// is kept by the leg-end thread (which shuts the socket down then, so a blocked write
    /// returns at once), and the write's own timeout is only its fallback. ureq re-arms the
    /// socket's send timeout (`setsockopt`) whenever the value it is given changes, which the
    /// exact remaining time did at every write (two system calls a request); rounded, it
    /// changes once in fifty milliseconds.
    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        let timeout = match timeout.after {
            UreqDuration::Exact(after) => NextTimeout {
                after: UreqDuration::Exact(whole_slices(after)),
                ..timeout
            },
            _ => timeout,
        };
        self.0.transmit_output(amount, timeout)
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        // A per-read timeout has a meaning of its own (its expiry is an error); leave it be.
        let (UreqDuration::Exact(mut total), None) = (timeout.after, timeout.per_read) else {
            return self.0.await_input(timeout);
        };
        if let Some(until) = self.1.drain_until() {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ureq::Error::Timeout(ureq::Timeout::RecvBody));
            }
            total = total.min(left);
        }
        let started = Instant::now();
        loop {
            let left = total.saturating_sub(started.elapsed());
            if left <= SLICE {
                let last = NextTimeout {
                    after: UreqDuration::Exact(left),
                    ..timeout
                };
                return self.0.await_input(last);
            }
            let slice = NextTimeout {
                after: UreqDuration::Exact(SLICE),
                ..timeout
            };
            match self.0.await_input(slice) {
                // The slice ended, the leg's time did not: wait again. A timed-out read of
                // the TCP transport consumed nothing, so the wait can simply be repeated.
                Err(ureq::Error::Timeout(_)) => {}
                other => return other,
            }
        }
    }

    fn is_open(&mut self) -> bool {
        self.0.is_open()
    }

    fn is_tls(&self) -> bool {
        self.0.is_tls()
    }
}

/// The agent's resolver: no lookup for a target the [`Tunnel`] sends through a proxy (the
/// proxy resolves its name); [`Lookup`] for the others.
///
/// It must follow the same proxy rules as the tunnel (the same [`Proxies`]): a target it
/// looked up but the tunnel proxied would need a name this machine may not resolve; one it
/// skipped but the tunnel sent directly would have no address to connect to.
#[derive(Debug)]
pub(crate) struct Resolver {
    proxies: Proxies,
    lookup: Lookup,
}

impl Resolver {
    pub(crate) fn new(proxies: Proxies) -> Self {
        Self {
            proxies,
            lookup: Lookup::default(),
        }
    }
}

impl UreqResolver for Resolver {
    fn resolve(
        &self,
        uri: &http::Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let (scheme, host) = (uri.scheme_str().unwrap_or("http"), uri.host().unwrap_or(""));
        match self.proxies.for_target(scheme, host) {
            Ok(None) => self.lookup.resolve(uri, config, timeout),
            // Through a proxy (or a proxy that cannot be used, which the tunnel reports): no
            // address of ours, ureq passes none on when it proxies itself.
            Ok(Some(_)) | Err(_) => Ok(self.empty()),
        }
    }
}

/// ureq's resolver, except that an IP-literal host is used as is.
///
/// With a timeout set (always, here: the leg's grant), ureq resolves on a helper thread so
/// that a slow DNS lookup cannot outlast the grant. An address needs no lookup, so it skips
/// that thread.
#[derive(Debug, Default)]
pub(crate) struct Lookup(DefaultResolver);

impl UreqResolver for Lookup {
    fn resolve(
        &self,
        uri: &http::Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        // The common case, an address with its port (`127.0.0.1:8080`, `[::1]:8080`), in one
        // parse: this runs before every request, pooled connection or not.
        if let Some(addr) = uri
            .authority()
            .and_then(|a| a.as_str().parse::<SocketAddr>().ok())
        {
            let mut addrs = self.empty();
            addrs.push(addr);
            return Ok(addrs);
        }
        let literal = uri.host().and_then(|host| {
            let bare = host
                .strip_prefix('[')
                .and_then(|h| h.strip_suffix(']'))
                .unwrap_or(host);
            bare.parse::<IpAddr>().ok()
        });
        let port = uri.port_u16().or(match uri.scheme_str() {
            Some("http") => Some(80),
            Some("https") => Some(443),
            _ => None,
        });
        match (literal, port) {
            (Some(ip), Some(port)) => {
                let mut addrs = self.empty();
                addrs.push(SocketAddr::new(ip, port));
                Ok(addrs)
            }
            _ => self.0.resolve(uri, config, timeout),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_timeout_is_rounded_up_to_whole_slices_so_it_seldom_changes() {
        let ms = Duration::from_millis;
        assert_eq!(whole_slices(Duration::ZERO), Duration::ZERO);
        assert_eq!(whole_slices(Duration::from_nanos(1)), SLICE);
        assert_eq!(whole_slices(SLICE), SLICE);
        // Two writes a few microseconds apart, late in a 20 s grant: the same timeout, so
        // ureq leaves the socket's as it is.
        let first = ms(19_998) - Duration::from_micros(3);
        let second = first - Duration::from_micros(40);
        assert_eq!(whole_slices(first), ms(20_000));
        assert_eq!(whole_slices(second), ms(20_000));
        // Never below what is left.
        assert_eq!(whole_slices(ms(51)), ms(100));
    }

    fn resolve(url: &str) -> Result<Vec<SocketAddr>, ureq::Error> {
        resolve_with(&Resolver::new(Proxies::default()), url)
    }

    fn resolve_with(
        resolver: &dyn UreqResolver,
        url: &str,
    ) -> Result<Vec<SocketAddr>, ureq::Error> {
        let uri: http::Uri = url.parse().unwrap();
        let config = ureq::config::Config::default();
        let addrs = resolver.resolve(&uri, &config, NextTimeout::default())?;
        Ok(addrs.to_vec())
    }

    #[test]
    fn addresses_are_used_as_they_are() {
        for (url, addr) in [
            ("http://127.0.0.1:8080/mcp", "127.0.0.1:8080"),
            ("https://[::1]/mcp", "[::1]:443"),
            ("http://[::1]:9000/mcp", "[::1]:9000"),
            ("http://user@10.1.2.3:81/", "10.1.2.3:81"),
            ("http://10.1.2.3/", "10.1.2.3:80"),
        ] {
            let addr: SocketAddr = addr.parse().unwrap();
            assert_eq!(resolve(url).unwrap(), [addr], "{url}");
        }
    }

    #[test]
    fn names_are_looked_up() {
        let addrs = resolve("http://localhost:9/").unwrap();
        assert!(addrs.iter().all(|a| a.port() == 9 && a.ip().is_loopback()));
    }

    #[test]
    fn a_proxied_target_is_not_looked_up_but_the_proxy_is() {
        let network = crate::Network::new()
            .with_env(|_| None)
            .with_proxy("http://localhost:3128")
            .unwrap()
            .with_no_proxy("direct.invalid");
        let resolver = Resolver::new(network.proxies());
        // A name nothing here resolves: the proxy will.
        assert_eq!(
            resolve_with(&resolver, "https://mcp.internal.invalid/mcp").unwrap(),
            []
        );
        assert_eq!(
            resolve_with(&resolver, "http://mcp.internal.invalid:8080/").unwrap(),
            []
        );
        // NO_PROXY: looked up here.
        assert!(resolve_with(&resolver, "https://direct.invalid/mcp").is_err());
        // The proxy's own name is covered by the rules too: the tunnel looks it up itself.
        assert_eq!(
            resolve_with(&resolver, "http://localhost:3128").unwrap(),
            []
        );
        let addrs = resolve_with(&Lookup::default(), "http://localhost:3128").unwrap();
        assert!(!addrs.is_empty());
        assert!(
            addrs
                .iter()
                .all(|a| a.port() == 3128 && a.ip().is_loopback())
        );
    }
}
