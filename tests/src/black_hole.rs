//! A black-holed address on loopback: what a route that drops packets looks like to a client
//! (broken IPv6, a VPN), made without touching the machine's network.

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

/// How long a connect to a black hole goes unanswered before it counts as swallowed. Loopback
/// answers a SYN within the `connect` call, so a connect that waits this long got no answer.
const SWALLOWED: Duration = Duration::from_millis(200);

/// The most connections a listener's accept queue is filled with before giving up (Linux's
/// default `somaxconn` is 4096, but the listener asks for 128).
const MOST_QUEUED: usize = 1024;

/// A loopback address whose connections hang: a listener that never accepts, its accept queue
/// filled, so the kernel drops every further SYN (Linux does on loopback). A connect to it
/// neither succeeds nor fails until the client gives up, as to a black-holed route.
///
/// It lasts as long as the value; built, it has been seen to swallow a connect. Test servers
/// listen on `127.0.0.1` with a port of the system's choice: a black hole on `[::1]` at the same
/// port gives a name both addresses, the black hole first ([`BlackHole::beside`]).
#[derive(Debug)]
pub struct BlackHole {
    addr: SocketAddr,
    _listener: TcpListener,
    _queued: Vec<TcpStream>,
}

impl BlackHole {
    /// A black hole at `addr` (its port may be 0: the system picks one).
    ///
    /// # Errors
    /// The address cannot be bound (no IPv6 here, or the port is taken), or the queue never
    /// filled (a system that answers SYNs past a full queue cannot make one).
    pub fn bind(addr: SocketAddr) -> io::Result<Self> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let mut queued = Vec::new();
        loop {
            match TcpStream::connect_timeout(&addr, SWALLOWED) {
                Ok(stream) if queued.len() < MOST_QUEUED => queued.push(stream),
                Ok(_) => {
                    return Err(io::Error::other(
                        "the listener's accept queue never filled: SYNs are not dropped here",
                    ));
                }
                // Swallowed: the queue is full.
                Err(err) if err.kind() == io::ErrorKind::TimedOut => break,
                Err(err) => return Err(err),
            }
        }
        Ok(Self {
            addr,
            _listener: listener,
            _queued: queued,
        })
    }

    /// A black hole on IPv6 loopback at `server`'s port (`server` is on `127.0.0.1`): the two
    /// families' loopback addresses, one swallowing, one serving.
    ///
    /// # Errors
    /// As [`BlackHole::bind`]: most often, no IPv6 loopback on this machine.
    pub fn beside(server: SocketAddr) -> io::Result<Self> {
        Self::bind(SocketAddr::new(
            std::net::Ipv6Addr::LOCALHOST.into(),
            server.port(),
        ))
    }

    /// Its address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}
