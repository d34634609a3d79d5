//! The client's connector chain: ureq's own steps, plus socket registration for cancelling
//! and precise read timeouts; and a resolver that skips the lookup for an address, and for a
//! target reached through a proxy.
//!
//! The chain is ureq's (its socket registry) with our own TCP, proxy tunnel and TLS steps
//! (so that both drivers trust, tunnel and fail alike: see [`crate::tls`] and
//! [`mcp_driver_common::network`]), and:
//!
//! * **TCP.** [`Tcp`] connects to one of the name's addresses, never past what is left of the
//!   grant: on Unix it races them (Happy Eyeballs, RFC 8305: the next address, of the other
//!   family first, after 250 ms without an answer or at once when an attempt fails; the first
//!   connection made wins), elsewhere it tries them in turn as ureq's `TcpConnector` does. It
//!   hands over a [`Socket`] of ours, which waits for input with `poll(2)` on the
//!   lane's own thread until the leg's end, to the microsecond, and looks whether a pooled
//!   connection is still open with one `poll`. Its shutdown handle shuts the read side first.
//! * **Tunnel.** [`Tunnel`] picks the proxy for each request's target (the [`Proxies`] of the
//!   client's [`Network`](crate::Network)), connects to it and opens an HTTP `CONNECT` tunnel,
//!   all inside the leg's grant; its failures (the grant running out before the proxy
//!   answered too) are a [`TunnelFailed`] with the kind and sentence of
//!   [`ProxyUrl::transport_error`](mcp_driver_common::network::ProxyUrl::transport_error) (no
//!   credentials), so the error names the proxy, not the server. The `CONNECT` carries the
//!   target's name: only the proxy resolves it (in company networks the client often cannot),
//!   so [`Resolver`] must never look up a proxied target (ureq resolves before it calls the
//!   chain). The tunnel looks up the proxy's own name itself, with [`Lookup`], inside the
//!   leg's grant.
//! * **TLS.** [`Tls`] runs the handshake with the client's rustls configuration; a certificate
//!   refused is `ureq::Error::Rustls`, a handshake that ran out of the grant
//!   [`HANDSHAKE_TIMED_OUT`].
//! * **Registration.** [`Connector`] hands the chain a `register_shutdown` callback of its own,
//!   so every socket [`Tcp`] opens is recorded for [`CancelHandle`] and for the leg-end thread
//!   (see [`crate::cancel`], [`crate::leg_end`]); ureq's own registry is still called.
//! * **Sliced reads.** [`Sliced`] sits between TCP and TLS: it ends every wait for input at the
//!   leg's end (the lane's armed end, which ureq's own time, counted from a little later,
//!   would pass), and cuts it into slices of at most [`SLICE`]. The slices matter where the wait
//!   is the socket's receive timeout (`SO_RCVTIMEO`, off Unix), which Linux keeps on its timer
//!   wheel, whose precision shrinks with the length of the timeout (a 2 s timeout fired up to
//!   ~30 ms late, a 17 s one 1.7 s late). Writes are not sliced: a write that timed out may
//!   have sent part of its buffer, so it cannot be retried (requests are small and are not
//!   expected to block); the leg-end thread ends a blocked one.
//!
//! [`CancelHandle`]: crate::CancelHandle

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use mcp_driver_common::lookup;
use mcp_driver_common::network::{
    Proxies, ProxyFailure, Resolved, interleave_families, parse_connect_response,
};
use mcp_proto::driver::TransportError;
use rustls::{ClientConnection, StreamOwned};
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver as UreqResolver};
use ureq::unversioned::transport::time::{Duration as UreqDuration, Instant as UreqInstant};
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector as UreqConnector, Either, LazyBuffers, NextTimeout,
    ShutdownHandle, Transport, TransportAdapter,
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
                .chain(Tcp)
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
        let failed = |what: ProxyFailure| {
            ureq::Error::Io(io::Error::other(TunnelFailed(
                proxy.transport_error(&authority, &what),
            )))
        };
        // Every failure until the tunnel is open is the proxy's, the grant running out too:
        // before a connection to it, it could not be reached; after, it did not answer (also
        // when the leg's end shut the socket down under the wait).
        let ran_out = |err: &ureq::Error| {
            self.shared.leg_ended()
                || match err {
                    ureq::Error::Timeout(_) => true,
                    ureq::Error::Io(io) => is_timeout(io),
                    _ => false,
                }
        };
        let unreachable = |err: ureq::Error| {
            if ran_out(&err) {
                failed(ProxyFailure::NoConnection)
            } else {
                failed(ProxyFailure::Unreachable(err.to_string()))
            }
        };
        let unanswered = |err: ureq::Error| {
            if ran_out(&err) {
                failed(ProxyFailure::NoAnswer)
            } else {
                failed(ProxyFailure::Unreachable(err.to_string()))
            }
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
        let tcp = UreqConnector::<()>::connect(&Tcp, &proxy_details, None)
            .map_err(unreachable)?
            .ok_or_else(|| failed(ProxyFailure::Unreachable("no address".to_owned())))?;
        let tcp = Sliced(tcp, Arc::clone(&self.shared));
        let request = proxy.connect_request(host, port, self.user_agent);
        let mut writer = TransportAdapter::new(
            Box::new(tcp) as Box<dyn Transport>,
            Arc::clone(&details.current_time),
        );
        writer.set_timeout(left(details));
        writer
            .write_all(&request)
            .map_err(|err| unanswered(ureq::Error::from(err)))?;
        let mut tunnel = writer.into_inner();
        loop {
            let progress = tunnel.await_input(left(details)).map_err(unanswered)?;
            if !progress && self.shared.leg_ended() {
                return Err(failed(ProxyFailure::NoAnswer));
            }
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

/// How a tunnel failed, as the operation is told it (the kind and sentence of
/// [`ProxyUrl::transport_error`](mcp_driver_common::network::ProxyUrl::transport_error)):
/// carried through ureq inside an `io::Error`, which [`crate::leg`] unwraps.
#[derive(Debug)]
pub(crate) struct TunnelFailed(pub(crate) TransportError);

impl fmt::Display for TunnelFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.detail)
    }
}

impl std::error::Error for TunnelFailed {}

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

/// The chain step that opens the TCP connection, never past what is left of the grant, to one
/// of the resolved addresses (raced, see [`connect_any`]; Nagle off), as a [`Socket`] of the
/// driver's own.
#[derive(Debug)]
struct Tcp;

impl<In: Transport> UreqConnector<In> for Tcp {
    type Out = Either<In, Socket>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        if let Some(transport) = chained {
            return Ok(Some(Either::A(transport)));
        }
        let stream = connect_any(details)?;
        let handle = Arc::new(SocketHandle(stream.try_clone()?));
        (details.register_shutdown)(Arc::downgrade(&handle) as Weak<dyn ShutdownHandle>)?;
        let buffers = LazyBuffers::new(
            details.config.input_buffer_size(),
            details.config.output_buffer_size(),
        );
        Ok(Some(Either::B(Socket::new(stream, buffers, handle))))
    }
}

/// Connects to the first of `details.addrs` that takes the connection before what is left of
/// the leg's grant runs out, trying them in [`interleave_families`]' order.
///
/// On Unix the attempts are raced (RFC 8305, Happy Eyeballs; see [`race`]): a black-holed
/// first address costs [`CONNECTION_ATTEMPT_DELAY`], as on the tokio driver. Elsewhere they
/// are tried one after another (`one_after_another`), the first given half the time left.
///
/// A connection that cannot be made is the last address's error (refused, unreachable: see
/// [`is_connect`]), or `Timeout(Connect)` when the grant ran out first; both are reported as
/// the connection's failure (the [`Connector`] marks the lane's connect as failed).
///
/// [`CONNECTION_ATTEMPT_DELAY`]: mcp_driver_common::network::CONNECTION_ATTEMPT_DELAY
fn connect_any(details: &ConnectionDetails) -> Result<TcpStream, ureq::Error> {
    let remaining = match left(details).after {
        UreqDuration::Exact(remaining) => Some(remaining),
        _ => None,
    };
    if remaining.is_some_and(|remaining| remaining.is_zero()) {
        return Err(ureq::Error::Timeout(details.timeout.reason));
    }
    let addrs = interleave_families(&details.addrs);
    #[cfg(unix)]
    let connected = race::connect(&addrs, remaining.map(|left| Instant::now() + left));
    #[cfg(not(unix))]
    let connected = one_after_another(&addrs, remaining);
    let stream = connected.map_err(|err| {
        if is_timeout(&err) {
            ureq::Error::Timeout(ureq::Timeout::Connect)
        } else {
            ureq::Error::Io(err)
        }
    })?;
    if details.config.no_delay() {
        stream.set_nodelay(true)?;
    }
    Ok(stream)
}

/// Happy Eyeballs (RFC 8305) with non-blocking sockets and `poll(2)` on the lane's own thread.
#[cfg(unix)]
mod race {
    use std::io;
    use std::net::{SocketAddr, TcpStream};
    use std::os::fd::OwnedFd;
    use std::time::{Duration, Instant};

    use mcp_driver_common::network::CONNECTION_ATTEMPT_DELAY;
    use rustix::event::{PollFd, PollFlags, Timespec};
    use rustix::io::Errno;
    use rustix::net::{AddressFamily, SocketType};

    /// Connects to one of `addrs` (in their order) before `until` (no limit when `None`): an
    /// attempt is started at each address in turn, the next when the last one started has had
    /// no answer for [`CONNECTION_ATTEMPT_DELAY`] or when one fails, without ending those still
    /// under way; the first connection made is returned (a blocking socket) and the other
    /// attempts are closed. When every address has failed, the last failure; at `until`, a
    /// `TimedOut` error.
    pub(super) fn connect(addrs: &[SocketAddr], until: Option<Instant>) -> io::Result<TcpStream> {
        let mut addrs = addrs.iter();
        let mut pending: Vec<OwnedFd> = Vec::with_capacity(addrs.len());
        let mut failed: Option<io::Error> = None;
        // When the next attempt is due (the first: now).
        let mut next_at = Instant::now();
        loop {
            let now = Instant::now();
            if now >= next_at || pending.is_empty() {
                match addrs.next() {
                    Some(addr) => {
                        match start(addr) {
                            Ok(Started::Connected(fd)) => return into_stream(fd),
                            Ok(Started::Pending(fd)) => {
                                pending.push(fd);
                                next_at = now + CONNECTION_ATTEMPT_DELAY;
                            }
                            // This address cannot be tried (refused at once, no route, a
                            // family this machine lacks): the next one, at once.
                            Err(err) => {
                                failed = Some(err);
                                next_at = now;
                            }
                        }
                        continue;
                    }
                    None if pending.is_empty() => {
                        return Err(failed.unwrap_or_else(|| {
                            io::Error::new(
                                io::ErrorKind::ConnectionRefused,
                                "no address to connect to",
                            )
                        }));
                    }
                    None => {}
                }
            }
            let left = until.map(|until| until.saturating_duration_since(now));
            if left.is_some_and(|left| left.is_zero()) {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "no address answered within the grant",
                ));
            }
            // Until an attempt ends, the next one is due, or the grant ends.
            let next = (addrs.len() > 0).then(|| next_at.saturating_duration_since(now));
            let wait = left.into_iter().chain(next).min();
            let timeout = wait.map(timespec);
            let mut fds: Vec<PollFd<'_>> = pending
                .iter()
                .map(|fd| PollFd::new(fd, PollFlags::OUT))
                .collect();
            match rustix::event::poll(&mut fds, timeout.as_ref()) {
                Ok(0) | Err(Errno::INTR) => continue,
                Ok(_) => {}
                Err(err) => return Err(err.into()),
            }
            let ended: Vec<bool> = fds.iter().map(|fd| !fd.revents().is_empty()).collect();
            drop(fds);
            let mut under_way = Vec::with_capacity(pending.len());
            for (fd, ended) in pending.drain(..).zip(ended) {
                if !ended {
                    under_way.push(fd);
                    continue;
                }
                match rustix::net::sockopt::socket_error(&fd) {
                    // The first to connect wins; dropping the others closes them.
                    Ok(Ok(())) => return into_stream(fd),
                    Ok(Err(errno)) | Err(errno) => {
                        failed = Some(errno.into());
                        next_at = now;
                    }
                }
            }
            pending = under_way;
        }
    }

    enum Started {
        Connected(OwnedFd),
        Pending(OwnedFd),
    }

    /// A non-blocking connect to `addr`: connected already, or under way.
    fn start(addr: &SocketAddr) -> io::Result<Started> {
        let family = if addr.is_ipv4() {
            AddressFamily::INET
        } else {
            AddressFamily::INET6
        };
        let fd = socket(family)?;
        match rustix::net::connect(&fd, addr) {
            Ok(()) => Ok(Started::Connected(fd)),
            // Interrupted, a non-blocking connect goes on by itself (POSIX).
            Err(Errno::INPROGRESS | Errno::INTR) => Ok(Started::Pending(fd)),
            Err(err) => Err(err.into()),
        }
    }

    /// A non-blocking TCP socket closed on `exec`, as std opens them.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn socket(family: AddressFamily) -> io::Result<OwnedFd> {
        use rustix::net::SocketFlags;
        Ok(rustix::net::socket_with(
            family,
            SocketType::STREAM,
            SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
            None,
        )?)
    }

    /// A non-blocking TCP socket closed on `exec`, as std opens them (and where the system
    /// has it, one whose writes to a closed peer never raise `SIGPIPE`, as std's).
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    fn socket(family: AddressFamily) -> io::Result<OwnedFd> {
        let fd = rustix::net::socket(family, SocketType::STREAM, None)?;
        rustix::io::fcntl_setfd(&fd, rustix::io::FdFlags::CLOEXEC)?;
        rustix::io::ioctl_fionbio(&fd, true)?;
        #[cfg(any(
            target_vendor = "apple",
            target_os = "freebsd",
            target_os = "dragonfly",
            target_os = "netbsd"
        ))]
        rustix::net::sockopt::set_socket_nosigpipe(&fd, true)?;
        Ok(fd)
    }

    /// The connected socket, blocking again (the [`Socket`](super::Socket) polls it itself).
    fn into_stream(fd: OwnedFd) -> io::Result<TcpStream> {
        let stream = TcpStream::from(fd);
        stream.set_nonblocking(false)?;
        Ok(stream)
    }

    fn timespec(wait: Duration) -> Timespec {
        Timespec {
            tv_sec: i64::try_from(wait.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: i64::from(wait.subsec_nanos()),
        }
    }
}

/// The least an address is given to connect in (as ureq's `TcpConnector`), unless less is left.
#[cfg(not(unix))]
const MIN_PER_ADDRESS: Duration = Duration::from_millis(10);

/// Off Unix: each address in turn, as ureq's `TcpConnector` does, sharing the time left between
/// them (the first given half of it, the next a quarter...), never past it. Not raced: a
/// black-holed first address costs half the grant here.
#[cfg(not(unix))]
fn one_after_another(addrs: &[SocketAddr], total: Option<Duration>) -> io::Result<TcpStream> {
    let started = Instant::now();
    let count = i32::try_from(addrs.len()).unwrap_or(i32::MAX);
    // Weights 1, 1/2, 1/4, ... summing to the whole time.
    let total_weight = 2.0 * (1.0 - 0.5_f64.powi(count));
    let mut weight = 1.0_f64;
    let mut last: Option<io::Error> = None;
    for addr in addrs {
        let remaining = total.map(|total| total.saturating_sub(started.elapsed()));
        if remaining.is_some_and(|remaining| remaining.is_zero()) {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no address answered within the grant",
            ));
        }
        // Never past what is left (ureq's own connector gives an address at least 10 ms).
        let per_address = total.zip(remaining).map(|(total, remaining)| {
            Duration::from_secs_f64(total.as_secs_f64() * weight / total_weight)
                .max(MIN_PER_ADDRESS)
                .min(remaining)
        });
        weight /= 2.0;
        let attempt = match per_address {
            Some(within) => TcpStream::connect_timeout(addr, within),
            None => TcpStream::connect(addr),
        };
        match attempt {
            Ok(stream) => return Ok(stream),
            // This address refused, cannot be reached or did not answer in its share: the
            // next one may do.
            Err(err) if is_timeout(&err) || is_connect(&err) => last = Some(err),
            Err(err) => return Err(err),
        }
    }
    Err(last.unwrap_or_else(|| {
        io::Error::new(io::ErrorKind::ConnectionRefused, "no address to connect to")
    }))
}

/// How long before a wait's end a [`Socket`] stops sleeping in `poll(2)` and looks again and
/// again instead (at most this much CPU, and only for a wait that reaches its end).
#[cfg(unix)]
const READ_SPIN: Duration = Duration::from_millis(1);

/// A connection's socket as a shutdown sees it: a second handle on it, registered (weakly)
/// for a cancel and for the leg-end thread, kept alive by the [`Socket`] it belongs to.
struct SocketHandle(TcpStream);

impl ShutdownHandle for SocketHandle {
    /// The read side first: that alone wakes a read blocked on the socket, where shutting
    /// both at once first sends the FIN (carried to a loopback server within the call). Then
    /// both, which wakes a blocked write too.
    fn shutdown(&self) {
        let _ = self.0.shutdown(std::net::Shutdown::Read);
        let _ = self.0.shutdown(std::net::Shutdown::Both);
    }
}

/// A TCP connection as the driver reads and writes it: ureq's `TcpTransport`, except that a
/// wait for input is `poll(2)` on the lane's own thread until the instant ureq names (on
/// Unix; elsewhere the socket's receive timeout, as ureq does). `poll` keeps its timeout to
/// the microsecond where the socket's receive timeout runs on the kernel's tick (4 ms at
/// `CONFIG_HZ=250`), and the lane's own thread wakes on it where the leg-end thread's
/// shutdown had to wake it from another (measured: 150-440 µs past the leg's end, the
/// loopback server woken first). Whether the connection is still open is one `poll` too
/// (ureq's look is a non-blocking read between two `ioctl`s).
pub(crate) struct Socket {
    stream: TcpStream,
    buffers: LazyBuffers,
    /// The send (and, off Unix, receive) timeouts the socket holds, set only when they change.
    write_timeout: Option<Duration>,
    #[cfg(not(unix))]
    read_timeout: Option<Duration>,
    _handle: Arc<SocketHandle>,
}

impl fmt::Debug for Socket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Socket")
            .field("peer", &self.stream.peer_addr().ok())
            .finish_non_exhaustive()
    }
}

/// How long `timeout` leaves, `None` for no limit, and the error it ends in.
fn limit(timeout: NextTimeout) -> (Option<Duration>, ureq::Timeout) {
    match timeout.after {
        UreqDuration::Exact(after) => (Some(after), timeout.reason),
        _ => (None, timeout.reason),
    }
}

/// An I/O error as ureq reports it: a timed-out wait is its `Timeout`.
fn io_error(err: io::Error, reason: ureq::Timeout) -> ureq::Error {
    if is_timeout(&err) {
        ureq::Error::Timeout(reason)
    } else {
        ureq::Error::Io(err)
    }
}

/// A wait that ran out of time (a socket timeout, or a non-blocking look with nothing there).
pub(crate) fn is_timeout(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
    )
}

/// A connection refused or not reachable at this address (another address may answer).
pub(crate) fn is_connect(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::HostUnreachable
            | io::ErrorKind::NetworkUnreachable
            | io::ErrorKind::NetworkDown
            | io::ErrorKind::AddrNotAvailable
    )
}

impl Transport for Socket {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        let (after, reason) = limit(timeout.for_write());
        if after.is_some_and(|after| after.is_zero()) {
            return Err(ureq::Error::Timeout(reason));
        }
        if after != self.write_timeout {
            self.stream.set_write_timeout(after)?;
            self.write_timeout = after;
        }
        let output = &self.buffers.output()[..amount];
        (&self.stream)
            .write_all(output)
            .map_err(|err| io_error(err, reason))
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        let (after, reason) = limit(timeout.for_read());
        let until = after.map(|after| Instant::now() + after);
        self.wait_readable(until, reason)?;
        let input = self.buffers.input_append_buf();
        let amount = loop {
            match (&self.stream).read(input) {
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                other => break other.map_err(|err| io_error(err, reason))?,
            }
        };
        self.buffers.input_appended(amount);
        Ok(amount > 0)
    }

    fn is_open(&mut self) -> bool {
        // Open: nothing to read (no stray bytes, no end, no error) at this instant.
        !self.readable_within(Duration::ZERO).unwrap_or(true)
    }

    fn is_tls(&self) -> bool {
        false
    }
}

impl Socket {
    /// A transport over `stream`, which `handle` shuts down.
    fn new(stream: TcpStream, buffers: LazyBuffers, handle: Arc<SocketHandle>) -> Self {
        Self {
            stream,
            buffers,
            write_timeout: None,
            #[cfg(not(unix))]
            read_timeout: None,
            _handle: handle,
        }
    }

    /// Waits until the socket has input (or its end, or an error) or `until` passes.
    #[cfg(unix)]
    fn wait_readable(
        &mut self,
        until: Option<Instant>,
        reason: ureq::Timeout,
    ) -> Result<(), ureq::Error> {
        loop {
            let left = until.map(|until| until.saturating_duration_since(Instant::now()));
            // The last stretch is spun through (a look, then the thread yields), as the
            // leg-end thread and the tokio driver do: a sleeping thread's wake-up comes a
            // couple of hundred microseconds late on a virtual machine, a look does not.
            let within = match left {
                Some(left) if left.is_zero() => return Err(ureq::Error::Timeout(reason)),
                Some(left) if left <= READ_SPIN => Duration::ZERO,
                Some(left) => left - READ_SPIN,
                None => Duration::MAX,
            };
            match self.readable_within(within) {
                Ok(true) => return Ok(()),
                Ok(false) if within.is_zero() => std::thread::yield_now(),
                Ok(false) => {}
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(err.into()),
            }
        }
    }

    /// Off Unix: the socket's receive timeout, as ureq's transport.
    #[cfg(not(unix))]
    fn wait_readable(
        &mut self,
        until: Option<Instant>,
        reason: ureq::Timeout,
    ) -> Result<(), ureq::Error> {
        let left = until.map(|until| until.saturating_duration_since(Instant::now()));
        if left.is_some_and(|left| left.is_zero()) {
            return Err(ureq::Error::Timeout(reason));
        }
        if left != self.read_timeout {
            self.stream.set_read_timeout(left)?;
            self.read_timeout = left;
        }
        Ok(())
    }

    /// Whether the socket has input, its end or an error within `within`.
    #[cfg(unix)]
    fn readable_within(&self, within: Duration) -> io::Result<bool> {
        use rustix::event::{PollFd, PollFlags, Timespec};
        let timeout = (within != Duration::MAX).then(|| Timespec {
            tv_sec: i64::try_from(within.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: i64::from(within.subsec_nanos()),
        });
        let mut fds = [PollFd::new(&self.stream, PollFlags::IN)];
        let ready = rustix::event::poll(&mut fds, timeout.as_ref())?;
        Ok(ready > 0)
    }

    /// Off Unix: a non-blocking look, as ureq's transport.
    #[cfg(not(unix))]
    fn readable_within(&self, _: Duration) -> io::Result<bool> {
        self.stream.set_nonblocking(true)?;
        let mut byte = [0u8];
        let looked = self.stream.peek(&mut byte);
        self.stream.set_nonblocking(false)?;
        match looked {
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => Ok(false),
            _ => Ok(true),
        }
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
        // A drain's end, and the leg's own end, to the microsecond (ureq's time counts from a
        // little after the leg was handed out).
        let ends = [
            (self.1.drain_until(), ureq::Timeout::RecvBody),
            (self.1.reads_until(), timeout.reason),
        ];
        for (until, reason) in ends {
            let Some(until) = until else { continue };
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ureq::Error::Timeout(reason));
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
/// proxy resolves its name); the caller's own addresses for a name it fixed
/// ([`Network::with_resolved`](crate::Network::with_resolved)); [`Lookup`] for the others.
///
/// It must follow the same proxy rules as the tunnel (the same [`Proxies`]): a target it
/// looked up but the tunnel proxied would need a name this machine may not resolve; one it
/// skipped but the tunnel sent directly would have no address to connect to.
#[derive(Debug)]
pub(crate) struct Resolver {
    proxies: Proxies,
    resolved: Resolved,
    lookup: Lookup,
}

impl Resolver {
    pub(crate) fn new(proxies: Proxies, resolved: Resolved) -> Self {
        Self {
            proxies,
            resolved,
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
            Ok(None) => match self.resolved.addresses(host) {
                Some(ips) => {
                    let port = uri
                        .port_u16()
                        .unwrap_or(if scheme == "https" { 443 } else { 80 });
                    let mut addrs = self.empty();
                    // Past ureq's room for addresses (16), the rest are left out.
                    for ip in ips {
                        if addrs.try_push(SocketAddr::new(*ip, port)).is_err() {
                            break;
                        }
                    }
                    Ok(addrs)
                }
                None => self.lookup.resolve(uri, config, timeout),
            },
            // Through a proxy (or a proxy that cannot be used, which the tunnel reports): no
            // address of ours, ureq passes none on when it proxies itself.
            Ok(Some(_)) | Err(_) => Ok(self.empty()),
        }
    }
}

/// The lookup of a name, on a detached thread of [`mcp_driver_common::lookup`] (the tokio
/// driver's too), waited for until the grant's end at most: a DNS server that does not answer
/// costs the leg its grant and the process nothing more (the thread ends when the system
/// resolver gives up; nothing joins it). Concurrent lookups of one name share a thread, and at
/// most [`MAX_LOOKUPS`](mcp_driver_common::lookup::MAX_LOOKUPS) names are looked up at once in
/// the process, which bounds the threads abandoned lookups hold (ureq's own resolver would
/// start one per lookup). An IP-literal host is used as is, without a lookup.
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
        let (host, port) = match (literal, port, uri.host()) {
            (Some(ip), Some(port), _) => {
                let mut addrs = self.empty();
                addrs.push(SocketAddr::new(ip, port));
                return Ok(addrs);
            }
            (None, Some(port), Some(host)) => (host, port),
            // No host or port: ureq's own words for what is wrong with the URL.
            _ => return self.0.resolve(uri, config, timeout),
        };
        let deadline = match timeout.after {
            UreqDuration::Exact(after) => Instant::now().checked_add(after),
            _ => None,
        };
        let pending = lookup::lookup(host)?;
        let found = match deadline {
            Some(deadline) => pending
                .wait_until(deadline)
                .ok_or(ureq::Error::Timeout(timeout.reason))?,
            // No grant (never here): wait for the resolver.
            None => pending
                .wait_until(Instant::now() + Duration::from_secs(24 * 3600))
                .ok_or(ureq::Error::Timeout(timeout.reason))?,
        }?;
        let family = config.ip_family();
        let mut addrs = self.empty();
        for ip in found {
            let wanted = match family {
                ureq::config::IpFamily::Ipv4Only => ip.is_ipv4(),
                ureq::config::IpFamily::Ipv6Only => ip.is_ipv6(),
                _ => true,
            };
            // Past ureq's 16 addresses, the rest are dropped.
            if wanted && addrs.try_push(SocketAddr::new(ip, port)).is_err() {
                break;
            }
        }
        if addrs.is_empty() {
            return Err(ureq::Error::HostNotFound);
        }
        Ok(addrs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connected [`Socket`] and the server's side of it.
    fn socket_pair() -> (Socket, Arc<SocketHandle>, TcpStream) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        let handle = Arc::new(SocketHandle(client.try_clone().unwrap()));
        let socket = Socket::new(client, LazyBuffers::new(4096, 4096), Arc::clone(&handle));
        (socket, handle, server)
    }

    fn within(after: Duration) -> NextTimeout {
        NextTimeout {
            after: UreqDuration::Exact(after),
            reason: ureq::Timeout::RecvResponse,
            ..NextTimeout::default()
        }
    }

    #[test]
    fn a_wait_for_a_silent_server_ends_at_its_time_as_a_timeout() {
        let (mut socket, _handle, _server) = socket_pair();
        let started = Instant::now();
        let waited = socket.await_input(within(Duration::from_millis(30)));
        let took = started.elapsed();
        assert!(matches!(
            waited,
            Err(ureq::Error::Timeout(ureq::Timeout::RecvResponse))
        ));
        assert!(
            took >= Duration::from_millis(30),
            "not before its time: {took:?}"
        );
        // Generous: a slow machine, not a 4 ms kernel tick, bounds it.
        assert!(took < Duration::from_millis(530), "{took:?}");
    }

    #[test]
    fn a_shutdown_from_another_thread_wakes_a_wait_without_a_time_limit() {
        let (mut socket, handle, _server) = socket_pair();
        let shutter = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            handle.shutdown();
        });
        // No time limit: only the shutdown can end it (the test would hang without it).
        assert!(matches!(
            socket.await_input(NextTimeout::default()),
            Ok(false)
        ));
        shutter.join().unwrap();
    }

    #[test]
    fn a_pooled_socket_is_open_until_the_server_says_something_unasked_or_closes() {
        // Loopback delivers at once, a slow machine within seconds: the look is repeated
        // until it changes, and fails the test only if it never does.
        let closes = |socket: &mut Socket| {
            let until = Instant::now() + Duration::from_secs(5);
            while socket.is_open() && Instant::now() < until {
                std::thread::yield_now();
            }
            !socket.is_open()
        };
        let (mut socket, _handle, mut server) = socket_pair();
        assert!(socket.is_open(), "an idle connection is open");
        server.write_all(b"x").unwrap();
        assert!(closes(&mut socket), "stray bytes: not reused");
        let (mut socket, _handle, server) = socket_pair();
        drop(server);
        assert!(closes(&mut socket), "closed by the server: not reused");
        // What it reads is what the server sent.
        let (mut socket, _handle, mut server) = socket_pair();
        server.write_all(b"hello").unwrap();
        assert!(socket.await_input(within(Duration::from_secs(5))).unwrap());
        assert_eq!(socket.buffers().input(), b"hello");
    }

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

    /// A loopback address whose listener's accept queue is full, so that the kernel drops
    /// every further SYN (as a black-holed route would): a connect to it hangs. The listener
    /// and the connections that fill its queue are kept with it.
    #[cfg(unix)]
    fn black_hole() -> (SocketAddr, std::net::TcpListener, Vec<TcpStream>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        // Listening again sets the queue's length: room for one connection.
        rustix::net::listen(&listener, 0).unwrap();
        let addr = listener.local_addr().unwrap();
        let mut queued = Vec::new();
        // Filled until a connect gets no answer: then the hole is known to swallow SYNs.
        while let Ok(stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(100)) {
            queued.push(stream);
            assert!(queued.len() < 64, "the accept queue never filled");
        }
        (addr, listener, queued)
    }

    /// An address nothing listens on (refused at once).
    fn refusing() -> SocketAddr {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    }

    #[cfg(unix)]
    #[test]
    fn a_black_holed_first_address_costs_one_attempt_delay() {
        use mcp_driver_common::network::CONNECTION_ATTEMPT_DELAY as DELAY;
        let (hole, _listener, _queued) = black_hole();
        let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let good = server.local_addr().unwrap();
        let started = Instant::now();
        let until = started + Duration::from_secs(10);
        let stream = race::connect(&[hole, good], Some(until)).unwrap();
        let took = started.elapsed();
        assert_eq!(stream.peer_addr().unwrap(), good);
        assert!(took >= DELAY, "the first address had its delay: {took:?}");
        // Generous for a loaded machine; a sequential connector takes half the grant (5 s).
        assert!(took < DELAY + Duration::from_secs(1), "{took:?}");
        // A blocking socket, as the transport expects.
        let (mut accepted, _) = server.accept().unwrap();
        accepted.write_all(b"x").unwrap();
        let mut byte = [0u8];
        (&stream).read_exact(&mut byte).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_refused_first_address_gives_way_at_once() {
        use mcp_driver_common::network::CONNECTION_ATTEMPT_DELAY as DELAY;
        let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let good = server.local_addr().unwrap();
        let started = Instant::now();
        let stream = race::connect(&[refusing(), good], None).unwrap();
        assert_eq!(stream.peer_addr().unwrap(), good);
        assert!(started.elapsed() < DELAY, "{:?}", started.elapsed());
    }

    #[cfg(unix)]
    #[test]
    fn the_race_ends_with_the_grant_and_reports_the_last_failure() {
        let (hole, _listener, _queued) = black_hole();
        let started = Instant::now();
        let grant = Duration::from_millis(400);
        let err = race::connect(&[hole, refusing()], Some(started + grant)).unwrap_err();
        let took = started.elapsed();
        // The refusal did not end the race: the black hole might still have answered.
        assert!(is_timeout(&err), "{err:?}");
        assert!(took >= grant, "{took:?}");
        assert!(took < grant + Duration::from_millis(500), "{took:?}");
        let err = race::connect(&[refusing(), refusing()], None).unwrap_err();
        assert!(is_connect(&err), "{err:?}");
        assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused);
    }

    #[test]
    fn a_fixed_name_is_not_looked_up() {
        let ips: [IpAddr; 2] = ["::1".parse().unwrap(), "127.0.0.1".parse().unwrap()];
        let network = crate::Network::new()
            .with_env(|_| None)
            .with_resolved("mcp.invalid", ips);
        let resolver = Resolver::new(network.proxies(), network.resolved());
        assert_eq!(
            resolve_with(&resolver, "http://MCP.invalid:8080/mcp").unwrap(),
            [
                "[::1]:8080".parse::<SocketAddr>().unwrap(),
                "127.0.0.1:8080".parse().unwrap()
            ]
        );
        assert_eq!(
            resolve_with(&resolver, "https://mcp.invalid/mcp").unwrap()[1],
            "127.0.0.1:443".parse::<SocketAddr>().unwrap()
        );
        assert!(resolve_with(&resolver, "http://other.invalid/").is_err());
    }

    fn resolve(url: &str) -> Result<Vec<SocketAddr>, ureq::Error> {
        resolve_with(&Resolver::new(Proxies::default(), Resolved::default()), url)
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
        let resolver = Resolver::new(network.proxies(), network.resolved());
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
