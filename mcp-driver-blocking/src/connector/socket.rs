//! The driver's own TCP transport: a connection's [`Socket`] as ureq reads and writes it, and
//! the [`SocketHandle`] a cancel or the leg's end shuts it down with.
//!
//! A wait for input whose end is far starts with the read itself, blocking under a constant
//! receive timeout ([`FAR_SLICE`]: one system call for an answer that comes, where a `poll`
//! first makes two); the rest of it, and every wait whose end is near, is `poll(2)` on the
//! lane's own thread until its end, to the microsecond (spinning through its last
//! millisecond). Whether a kept connection is still open is one `poll` when a request takes
//! it; off Unix a wait is the socket's receive timeout, as in ureq's own transport. The
//! shutdown handle shuts the read side first.
//!
//! This module never decides whether a leg was late, nor any MCP matter; it only waits, reads
//! and writes until the instant it is given, and reports a wait that ran out as ureq's timeout
//! ([`is_timeout`]).

use std::fmt;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ureq::unversioned::transport::time::Duration as UreqDuration;
use ureq::unversioned::transport::{Buffers, LazyBuffers, NextTimeout, ShutdownHandle, Transport};

/// How long before a wait's end a [`Socket`] stops sleeping in `poll(2)` and looks again and
/// again instead (at most this much CPU, and only for a wait that reaches its end).
#[cfg(unix)]
const READ_SPIN: Duration = Duration::from_millis(1);

/// A wait that ends at least [`FAR_SLICE`] + [`FAR_MARGIN`] from now (each whole slice of
/// [`SLICE`](super::slice::SLICE)) starts with a read that blocks for at most this long (the
/// socket's receive timeout, a constant set once per connection: no system call goes to
/// setting it again). The receive timeout runs on the kernel's timer wheel, a tick or two
/// late (10 ms a tick at 100 Hz): the margin, waited with `poll`, keeps the wait's end exact.
#[cfg(unix)]
const FAR_SLICE: Duration = Duration::from_millis(30);
#[cfg(unix)]
const FAR_MARGIN: Duration = Duration::from_millis(20);

/// A connection's socket as a shutdown sees it: a second handle on it, registered (weakly)
/// for a cancel and for the leg-end thread, kept alive by the [`Socket`] it belongs to.
pub(super) struct SocketHandle(pub(super) TcpStream);

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
    /// On Unix: whether the socket's receive timeout is [`FAR_SLICE`] already.
    #[cfg(unix)]
    far_slice: bool,
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
        (&self.stream)
            .write_all(&self.buffers.output()[..amount])
            .map_err(|err| io_error(err, reason))
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        let (after, reason) = limit(timeout.for_read());
        let until = after.map(|after| Instant::now() + after);
        #[cfg(unix)]
        if let Some(amount) = self.read_far(after)? {
            self.buffers.input_appended(amount);
            return Ok(amount > 0);
        }
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
    pub(super) fn new(stream: TcpStream, buffers: LazyBuffers, handle: Arc<SocketHandle>) -> Self {
        Self {
            stream,
            buffers,
            write_timeout: None,
            #[cfg(not(unix))]
            read_timeout: None,
            #[cfg(unix)]
            far_slice: false,
            _handle: handle,
        }
    }

    /// When the wait (`after`) ends far from now, one read under the socket's receive
    /// timeout ([`FAR_SLICE`]): `Some(amount)` when input (or the end) came; `None` when it
    /// did not, or the wait's end is near: [`Self::wait_readable`]'s exact wait follows.
    #[cfg(unix)]
    fn read_far(&mut self, after: Option<Duration>) -> Result<Option<usize>, ureq::Error> {
        if after.is_some_and(|after| after < FAR_SLICE + FAR_MARGIN) {
            return Ok(None);
        }
        if !self.far_slice {
            self.stream.set_read_timeout(Some(FAR_SLICE))?;
            self.far_slice = true;
        }
        let input = self.buffers.input_append_buf();
        match (&self.stream).read(input) {
            Ok(amount) => Ok(Some(amount)),
            Err(err) if err.kind() == io::ErrorKind::Interrupted || is_timeout(&err) => Ok(None),
            Err(err) => Err(ureq::Error::Io(err)),
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

    /// A wait whose end is far starts with a blocking read under the socket's receive
    /// timeout: an answer that comes after that read's own slice is still read, and a silent
    /// server's wait still ends at its time, not at the slice's.
    #[cfg(unix)]
    #[test]
    fn a_far_wait_reads_what_comes_late_and_ends_at_its_own_time() {
        let (mut socket, _handle, mut server) = socket_pair();
        let started = Instant::now();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(FAR_SLICE * 2);
            server.write_all(b"late").unwrap();
            server
        });
        assert!(socket.await_input(within(Duration::from_secs(5))).unwrap());
        assert_eq!(socket.buffers.input(), b"late");
        assert!(started.elapsed() >= FAR_SLICE * 2);
        let _server = writer.join().unwrap();
        let started = Instant::now();
        let waited = socket.await_input(within(Duration::from_millis(200)));
        let took = started.elapsed();
        assert!(matches!(waited, Err(ureq::Error::Timeout(_))), "{waited:?}");
        assert!(
            took >= Duration::from_millis(200),
            "not before its time: {took:?}"
        );
        // Generous: a slow machine bounds it, not the read's slice.
        assert!(took < Duration::from_millis(700), "{took:?}");
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
        // Bytes after an answer: the look when a request takes the connection sees them.
        server.write_all(b"stray").unwrap();
        assert!(closes(&mut socket), "taken: stray bytes seen, not reused");
    }
}
