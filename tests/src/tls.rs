//! HTTPS for the test server (feature `tls`): a CA made at run time ([`TestCa`]), server
//! certificates it signs (for the right name, another one, or expired), and [`TlsFront`], a
//! loopback TLS terminator in front of any [`TestServer`](crate::TestServer) (or anything else
//! listening on loopback). Nothing here touches the machine's trust store.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    date_time_ymd,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ServerConfig, ServerConnection, StreamOwned};

/// A certificate authority made for one test: its certificate (PEM) and the key that signs
/// server certificates.
pub struct TestCa {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl std::fmt::Debug for TestCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCa").finish_non_exhaustive()
    }
}

/// A server certificate chain (leaf, then the CA) and its key, PEM.
#[derive(Debug, Clone)]
pub struct ServerCert {
    /// The leaf certificate followed by the CA's.
    pub chain_pem: String,
    /// The leaf's private key (PKCS#8).
    pub key_pem: String,
}

impl TestCa {
    /// A new CA named `name` (its common name).
    ///
    /// # Panics
    /// If rcgen cannot make a key or a certificate (it does not, with ring).
    pub fn new(name: &str) -> Self {
        let key = KeyPair::generate().expect("a CA key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let cert = params.self_signed(&key).expect("a self-signed CA");
        Self {
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// The CA's certificate, PEM.
    pub fn pem(&self) -> &str {
        &self.pem
    }

    /// Writes the CA's certificate to `dir/ca.pem` and returns that path.
    ///
    /// # Panics
    /// If the file cannot be written.
    pub fn write_pem(&self, dir: &Path) -> PathBuf {
        let path = dir.join("ca.pem");
        std::fs::write(&path, &self.pem).expect("the CA file is written");
        path
    }

    /// A certificate for `names` (DNS names or IP addresses), valid now.
    pub fn server_cert(&self, names: &[&str]) -> ServerCert {
        self.sign(names, false)
    }

    /// A certificate for `names` that expired in 2001.
    pub fn expired_server_cert(&self, names: &[&str]) -> ServerCert {
        self.sign(names, true)
    }

    fn sign(&self, names: &[&str], expired: bool) -> ServerCert {
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let mut params = CertificateParams::new(names).expect("server parameters");
        params
            .distinguished_name
            .push(DnType::CommonName, "mcp-testkit server");
        if expired {
            params.not_before = date_time_ymd(2000, 1, 1);
            params.not_after = date_time_ymd(2001, 1, 1);
        }
        let key = KeyPair::generate().expect("a server key");
        let cert = params
            .signed_by(&key, &self.issuer)
            .expect("a signed server certificate");
        ServerCert {
            chain_pem: format!("{}{}", cert.pem(), self.pem),
            key_pem: key.serialize_pem(),
        }
    }
}

/// A loopback TLS terminator: accepts TLS on `127.0.0.1:<port>` with a [`ServerCert`] and
/// relays the plaintext to a backend address, one thread per connection.
#[derive(Debug)]
pub struct TlsFront {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    handshakes: Arc<AtomicUsize>,
}

impl TlsFront {
    /// Serves TLS with `cert` in front of `backend`.
    ///
    /// # Panics
    /// If the certificate does not parse or the listener cannot be bound.
    pub fn start(backend: SocketAddr, cert: &ServerCert) -> Self {
        let chain: Vec<CertificateDer<'static>> =
            CertificateDer::pem_slice_iter(cert.chain_pem.as_bytes())
                .collect::<Result<_, _>>()
                .expect("the chain parses");
        let key = PrivateKeyDer::from_pem_slice(cert.key_pem.as_bytes()).expect("the key parses");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS 1.2 and 1.3")
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("the certificate and key match");
        let config = Arc::new(config);
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback listener");
        let addr = listener.local_addr().expect("its address");
        let stop = Arc::new(AtomicBool::new(false));
        let handshakes = Arc::new(AtomicUsize::new(0));
        let (accept_stop, accept_handshakes) = (Arc::clone(&stop), Arc::clone(&handshakes));
        thread::spawn(move || {
            for conn in listener.incoming() {
                if accept_stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (config, handshakes) = (Arc::clone(&config), Arc::clone(&accept_handshakes));
                thread::spawn(move || relay(conn, backend, config, &handshakes));
            }
        });
        Self {
            addr,
            stop,
            handshakes,
        }
    }

    /// `https://localhost:<port>/mcp` (the certificates [`TestCa`] makes for the suites name
    /// `localhost`).
    pub fn url(&self) -> String {
        format!("https://localhost:{}/mcp", self.addr.port())
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// How many TLS handshakes completed.
    pub fn handshakes(&self) -> usize {
        self.handshakes.load(Ordering::SeqCst)
    }
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
    }
}

fn relay(
    conn: TcpStream,
    backend: SocketAddr,
    config: Arc<ServerConfig>,
    handshakes: &AtomicUsize,
) {
    let Ok(server) = ServerConnection::new(config) else {
        return;
    };
    let mut tls = StreamOwned::new(server, conn);
    let _ = tls.sock.set_read_timeout(Some(Duration::from_secs(10)));
    while tls.conn.is_handshaking() {
        if tls.conn.complete_io(&mut tls.sock).is_err() {
            return;
        }
    }
    handshakes.fetch_add(1, Ordering::SeqCst);
    let Ok(mut plain) = TcpStream::connect(backend) else {
        return;
    };
    let tick = Some(Duration::from_millis(2));
    if tls.sock.set_read_timeout(tick).is_err() || plain.set_read_timeout(tick).is_err() {
        return;
    }
    let mut buf = vec![0u8; 16 * 1024];
    let idle = |e: &io::Error| {
        matches!(
            e.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
        )
    };
    loop {
        match tls.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if plain.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            Err(e) if idle(&e) => {}
            Err(_) => break,
        }
        match plain.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if tls.write_all(&buf[..n]).and_then(|()| tls.flush()).is_err() {
                    break;
                }
            }
            Err(e) if idle(&e) => {}
            Err(_) => break,
        }
    }
    tls.conn.send_close_notify();
    let _ = tls.flush();
}
