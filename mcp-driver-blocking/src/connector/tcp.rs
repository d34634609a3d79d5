//! The TCP step: the connection to one of the name's addresses, never past what is left of
//! the leg's grant.
//!
//! [`Tcp`] connects to one of the name's addresses, in [`interleave_families`]' order: on Unix
//! it races them (Happy Eyeballs, RFC 8305, in [`race`]: the next address, of the other family
//! first, after 250 ms without an answer or at once when an attempt fails; the first connection
//! made wins), elsewhere it tries them in turn as ureq's `TcpConnector` does. It hands over a
//! [`Socket`] of ours (see [`super::socket`]), whose shutdown handle it registers for a cancel
//! and for the leg-end thread.
//!
//! This module never waits past the leg's grant and never decides an MCP matter; it only opens
//! the connection, or says why none could be made ([`is_connect`], or the grant ran out).

use std::io;
#[cfg(not(unix))]
use std::net::SocketAddr;
use std::net::TcpStream;
use std::sync::{Arc, Weak};
#[cfg(not(unix))]
use std::time::Duration;
use std::time::Instant;

use mcp_driver_common::network::interleave_families;
use ureq::unversioned::transport::time::Duration as UreqDuration;
use ureq::unversioned::transport::{
    ConnectionDetails, Connector as UreqConnector, Either, LazyBuffers, ShutdownHandle, Transport,
};

use super::left;
use super::socket::{Socket, SocketHandle, is_timeout};

/// The chain step that opens the TCP connection, never past what is left of the grant, to one
/// of the resolved addresses (raced, see [`connect_any`]; Nagle off), as a [`Socket`] of the
/// driver's own.
#[derive(Debug)]
pub(super) struct Tcp;

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
/// [`Connector`]: super::Connector
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::SocketAddr;
    use std::time::Duration;

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
}
