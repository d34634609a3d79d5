//! A loopback HTTP `CONNECT` proxy: it opens tunnels to loopback targets only, records every
//! `CONNECT` it was asked for (target and `Proxy-Authorization`), and can refuse them all with
//! a status (`407` to ask for credentials, `502` as a gateway that cannot reach the target), or
//! stall them all: read the `CONNECT` and never answer ([`ConnectProxy::stalling`]).
//!
//! Like a company proxy, it can resolve names its clients cannot: a hosts table of its own
//! ([`ConnectProxy::with_hosts`]) maps names (reserved ones, such as `mcp.internal.invalid`,
//! that no resolver on the machine knows) to loopback addresses. It never opens a tunnel to
//! anything but loopback.

use std::io::{self, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

/// One `CONNECT` the proxy received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tunnel {
    /// The request target (`host:port`).
    pub target: String,
    /// The `Proxy-Authorization` header, if any.
    pub authorization: Option<String>,
}

/// A loopback HTTP `CONNECT` proxy: tunnels to loopback targets only, every `CONNECT` it was
/// asked for recorded (target and `Proxy-Authorization`), all of them refused with a status
/// or stalled when told to; names only it resolves with [`with_hosts`](Self::with_hosts).
#[derive(Debug)]
pub struct ConnectProxy {
    addr: SocketAddr,
    tunnels: Arc<Mutex<Vec<Tunnel>>>,
    stop: Arc<AtomicBool>,
    /// The connections a stalling proxy holds open, shut down when it is dropped.
    held: Arc<Mutex<Vec<TcpStream>>>,
}

/// What the proxy does with a `CONNECT`.
#[derive(Debug, Clone, Copy)]
enum Mode {
    Open,
    Refuse(u16),
    Stall,
}

impl ConnectProxy {
    /// A proxy that opens every tunnel to a loopback target.
    pub fn start() -> Self {
        Self::serve(Mode::Open, Vec::new())
    }

    /// A proxy that also opens tunnels to the names in `hosts`, each to its address (which
    /// must be a loopback one), as a proxy whose resolver knows names its clients' does not.
    ///
    /// # Panics
    /// When an address is not a loopback one: the proxy reaches nothing else.
    pub fn with_hosts(hosts: &[(&str, IpAddr)]) -> Self {
        assert!(
            hosts.iter().all(|(_, ip)| ip.is_loopback()),
            "the test proxy maps names to loopback addresses only: {hosts:?}"
        );
        let hosts = hosts
            .iter()
            .map(|(name, ip)| (name.to_ascii_lowercase(), *ip))
            .collect();
        Self::serve(Mode::Open, hosts)
    }

    /// A proxy that answers every `CONNECT` with `status` (and opens nothing).
    pub fn refusing(status: u16) -> Self {
        Self::serve(Mode::Refuse(status), Vec::new())
    }

    /// A proxy that accepts every connection, reads and records its `CONNECT`, and never
    /// answers it (the connection stays open until the proxy is dropped).
    pub fn stalling() -> Self {
        Self::serve(Mode::Stall, Vec::new())
    }

    fn serve(mode: Mode, hosts: Vec<(String, IpAddr)>) -> Self {
        let hosts = Arc::new(hosts);
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback listener");
        let addr = listener.local_addr().expect("its address");
        let tunnels = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let held = Arc::new(Mutex::new(Vec::new()));
        let (accept_tunnels, accept_stop) = (Arc::clone(&tunnels), Arc::clone(&stop));
        let accept_held = Arc::clone(&held);
        thread::spawn(move || {
            for conn in listener.incoming() {
                if accept_stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let tunnels = Arc::clone(&accept_tunnels);
                let hosts = Arc::clone(&hosts);
                let held = Arc::clone(&accept_held);
                thread::spawn(move || {
                    let _ = tunnel(conn, mode, &hosts, &tunnels, &held);
                });
            }
        });
        Self {
            addr,
            tunnels,
            stop,
            held,
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The proxy's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every `CONNECT` received so far.
    pub fn tunnels(&self) -> Vec<Tunnel> {
        self.tunnels.lock().map(|t| t.clone()).unwrap_or_default()
    }
}

impl Drop for ConnectProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Ok(mut held) = self.held.lock() {
            for conn in held.drain(..) {
                let _ = conn.shutdown(Shutdown::Both);
            }
        }
    }
}

fn tunnel(
    mut client: TcpStream,
    mode: Mode,
    hosts: &[(String, IpAddr)],
    tunnels: &Mutex<Vec<Tunnel>>,
    held: &Mutex<Vec<TcpStream>>,
) -> io::Result<()> {
    // The head, a byte at a time: what follows it is the tunnel's.
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if client.read(&mut byte)? == 0 || head.len() > 16 * 1024 {
            return Ok(());
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut words = request_line.split(' ');
    let (method, target) = (
        words.next().unwrap_or_default(),
        words.next().unwrap_or_default(),
    );
    let authorization = lines
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("proxy-authorization"))
        .map(|(_, value)| value.trim().to_owned());
    if let Ok(mut tunnels) = tunnels.lock() {
        tunnels.push(Tunnel {
            target: target.to_owned(),
            authorization,
        });
    }
    match mode {
        Mode::Refuse(status) => {
            write!(
                client,
                "HTTP/1.1 {status} Refused\r\nContent-Length: 0\r\n\r\n"
            )?;
            return Ok(());
        }
        Mode::Stall => {
            if let Ok(mut held) = held.lock() {
                held.push(client);
            }
            return Ok(());
        }
        Mode::Open => {}
    }
    let upstream = (method == "CONNECT")
        .then(|| upstream_of(target, hosts))
        .flatten();
    let Some(upstream) = upstream else {
        client.write_all(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")?;
        return Ok(());
    };
    let upstream = match TcpStream::connect(upstream) {
        Ok(upstream) => upstream,
        Err(_) => {
            client.write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")?;
            return Ok(());
        }
    };
    client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")?;
    let (mut client_read, mut upstream_write) = (client.try_clone()?, upstream.try_clone()?);
    let up = thread::spawn(move || {
        let _ = io::copy(&mut client_read, &mut upstream_write);
        let _ = upstream_write.shutdown(Shutdown::Write);
    });
    let (mut upstream_read, mut client_write) = (upstream, client);
    let _ = io::copy(&mut upstream_read, &mut client_write);
    let _ = client_write.shutdown(Shutdown::Write);
    let _ = up.join();
    Ok(())
}

/// Where a tunnel to `target` (`host:port`) goes: a loopback target as it is, a name of the
/// hosts table to its address; `None` for anything else.
fn upstream_of(target: &str, hosts: &[(String, IpAddr)]) -> Option<SocketAddr> {
    let (host, port) = target.rsplit_once(':')?;
    let port: u16 = port.parse().ok()?;
    let ip = match host {
        "localhost" => IpAddr::from([127, 0, 0, 1]),
        _ => match host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host)
            .parse::<IpAddr>()
        {
            Ok(ip) => ip,
            Err(_) => hosts
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case(host))
                .map(|(_, ip)| *ip)?,
        },
    };
    ip.is_loopback().then_some(SocketAddr::new(ip, port))
}
