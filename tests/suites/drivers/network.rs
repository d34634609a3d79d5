//! Company networks, for every driver: a loopback HTTPS server whose certificate comes from a
//! CA made at test time, trusted through the driver option or `SSL_CERT_FILE` (read through the
//! network's lookup, so no test changes the process's environment), refused otherwise with the
//! same typed error and the same words from every driver; a loopback `CONNECT` proxy that
//! carries plain and TLS requests, whose refusals are typed, whose credentials are sent and
//! never shown, and that `NO_PROXY` skips; a server whose name only that proxy can resolve
//! (the client never looks up a name it sends through a proxy); a proxy that stalls or
//! refuses the tunnel, named as the fault with the target; a name whose first address is a
//! black hole (the address families raced, Happy Eyeballs); and a DNS server that never
//! answers, which costs an operation its budget and its process nothing more (a child process
//! in a mount namespace of its own, whose `resolv.conf` names a silent loopback listener).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, TcpListener, UdpSocket};
use std::process::Command;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use mcp_driver_common::network::{CONNECTION_ATTEMPT_DELAY, Network};
use mcp_proto::{Budget, Error, Fault, Resolution, SessionConfig, TlsProblem};
use mcp_testkit::tls::{TestCa, TlsFront};
use mcp_testkit::{BlackHole, ConnectProxy, Script, TestServer};

use super::BUDGET;
use super::support::{Driver, MARGIN, echo};

/// A network that reads no real environment variable: only `vars`.
fn env(vars: &[(&str, &str)]) -> Network {
    let vars: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    Network::new().with_env(move |name| vars.get(name).cloned())
}

fn client<D: Driver>(url: &str, network: &Network, budget: Duration) -> D {
    let config = SessionConfig::new(url)
        .expect("a valid URL")
        .with_budget(Budget::from_duration(budget))
        .with_resolution(Resolution::MILLISECOND);
    D::with_network(config, network).expect("the network is usable")
}

fn call<D: Driver>(url: &str, network: &Network) -> Result<String, Error> {
    client::<D>(url, network, BUDGET)
        .call_tool("echo", echo("through"))
        .map(|r| r.text())
}

/// A test server behind TLS with a certificate of `ca`'s for `localhost` (and 127.0.0.1).
fn https(ca: &TestCa) -> (TestServer, TlsFront) {
    let server = TestServer::start(Script::new());
    let front = TlsFront::start(server.addr(), &ca.server_cert(&["localhost", "127.0.0.1"]));
    (server, front)
}

#[track_caller]
fn tls_problem(err: &Error) -> (TlsProblem, String) {
    match err {
        Error::Tls {
            problem, detail, ..
        } => (*problem, detail.clone()),
        other => panic!("expected Error::Tls, got {other:?}: {other}"),
    }
}

pub(super) fn an_internal_ca_added_as_an_option_is_trusted<D: Driver>() {
    let ca = TestCa::new("mcp-testkit internal CA");
    let (server, front) = https(&ca);
    let network = env(&[]).with_root_pem(ca.pem());
    assert_eq!(call::<D>(&front.url(), &network).unwrap(), "through");
    assert!(front.handshakes() >= 1);
    assert!(server.rpc_methods().contains(&"tools/call".to_owned()));
    // The same CA as a file.
    let dir = tempdir();
    let network = env(&[]).with_root_pem_file(ca.write_pem(&dir));
    assert_eq!(call::<D>(&front.url(), &network).unwrap(), "through");
}

pub(super) fn an_internal_ca_named_by_ssl_cert_file_is_trusted<D: Driver>() {
    let ca = TestCa::new("mcp-testkit internal CA");
    let (_server, front) = https(&ca);
    let dir = tempdir();
    let file = ca.write_pem(&dir);
    let network = env(&[("SSL_CERT_FILE", file.to_str().unwrap())]);
    assert_eq!(call::<D>(&front.url(), &network).unwrap(), "through");
    let network = env(&[("SSL_CERT_DIR", dir.to_str().unwrap())]);
    assert_eq!(call::<D>(&front.url(), &network).unwrap(), "through");
}

pub(super) fn an_unknown_issuer_is_refused_with_a_sentence_to_act_on<D: Driver>() {
    let ca = TestCa::new("mcp-testkit internal CA");
    let (server, front) = https(&ca);
    let err = call::<D>(&front.url(), &env(&[])).unwrap_err();
    let (problem, detail) = tls_problem(&err);
    assert_eq!(problem, TlsProblem::UnknownIssuer);
    assert_eq!(detail, "invalid peer certificate: UnknownIssuer");
    let port = front.addr().port();
    assert_eq!(
        err.to_string(),
        format!(
            "MCP server \"localhost:{port}\" presented a TLS certificate whose issuer is not trusted here (unknown issuer: not in the system's trust store nor among the added CAs); if the server's certificate comes from an internal CA, add that CA (PEM): SSL_CERT_FILE=ca.pem, `mcp-call --cacert ca.pem`, or the driver's Network::with_root_pem_file"
        )
    );
    assert_eq!(err.kind(), "tls");
    assert_eq!(err.fault(), mcp_proto::Fault::Network);
    assert!(server.requests().is_empty(), "nothing reached the server");
    // Another CA does not help.
    let other = TestCa::new("another CA");
    let err = call::<D>(&front.url(), &env(&[]).with_root_pem(other.pem())).unwrap_err();
    assert_eq!(tls_problem(&err).0, TlsProblem::UnknownIssuer);
}

pub(super) fn an_expired_or_misnamed_certificate_is_named_as_such<D: Driver>() {
    let ca = TestCa::new("mcp-testkit internal CA");
    let server = TestServer::start(Script::new());
    let network = env(&[]).with_root_pem(ca.pem());
    let expired = TlsFront::start(server.addr(), &ca.expired_server_cert(&["localhost"]));
    let err = call::<D>(&expired.url(), &network).unwrap_err();
    assert_eq!(tls_problem(&err).0, TlsProblem::Expired, "{err}");
    assert!(
        err.to_string().contains("has expired or is not valid yet"),
        "{err}"
    );
    let misnamed = TlsFront::start(server.addr(), &ca.server_cert(&["mcp.example"]));
    let err = call::<D>(&misnamed.url(), &network).unwrap_err();
    assert_eq!(tls_problem(&err).0, TlsProblem::WrongName, "{err}");
    assert!(err.to_string().contains("not valid for that name"), "{err}");
}

pub(super) fn a_tls_handshake_that_never_ends_times_out_inside_the_grant<D: Driver>() {
    // Accepts the connection and never says a word.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "https://localhost:{}/mcp",
        silent.local_addr().unwrap().port()
    );
    let budget = Duration::from_millis(600);
    let mut client = client::<D>(&url, &env(&[]), budget);
    let started = Instant::now();
    let err = client.call_tool("echo", echo("x")).unwrap_err();
    let elapsed = started.elapsed();
    let (problem, _) = tls_problem(&err);
    assert_eq!(problem, TlsProblem::TimedOut);
    assert!(
        err.to_string().contains("did not finish within the 0.6 s"),
        "{err}"
    );
    assert!(elapsed < budget + Duration::from_millis(500), "{elapsed:?}");
    drop(silent);
}

pub(super) fn both_schemes_go_through_the_proxy<D: Driver>() {
    let proxy = ConnectProxy::start();
    let plain = TestServer::start(Script::new());
    let network = env(&[]).with_proxy(&proxy.url()).unwrap();
    assert_eq!(call::<D>(&plain.url(), &network).unwrap(), "through");
    let tunnels = proxy.tunnels();
    assert!(!tunnels.is_empty());
    assert!(
        tunnels.iter().all(|t| t.target == plain.addr().to_string()),
        "{tunnels:?}"
    );
    let ca = TestCa::new("mcp-testkit internal CA");
    let (_server, front) = https(&ca);
    let network = network.with_root_pem(ca.pem());
    assert_eq!(call::<D>(&front.url(), &network).unwrap(), "through");
    let target = format!("localhost:{}", front.addr().port());
    assert!(proxy.tunnels().iter().any(|t| t.target == target));
}

pub(super) fn no_proxy_and_loopback_skip_the_proxy<D: Driver>() {
    let proxy = ConnectProxy::start();
    let server = TestServer::start(Script::new());
    let network = env(&[("NO_PROXY", "example.org,127.0.0.1")])
        .with_proxy(&proxy.url())
        .unwrap();
    assert_eq!(call::<D>(&server.url(), &network).unwrap(), "through");
    let network = env(&[])
        .with_proxy(&proxy.url())
        .unwrap()
        .with_no_proxy("127.0.0.0/8");
    assert_eq!(call::<D>(&server.url(), &network).unwrap(), "through");
    // An environment proxy is never used for loopback.
    let network = env(&[("HTTP_PROXY", &proxy.url()), ("ALL_PROXY", &proxy.url())]);
    assert_eq!(call::<D>(&server.url(), &network).unwrap(), "through");
    assert_eq!(proxy.tunnels(), []);
}

pub(super) fn a_refusing_proxy_is_typed_and_its_credentials_never_shown<D: Driver>() {
    let proxy = ConnectProxy::refusing(407);
    let server = TestServer::start(Script::new());
    let url = proxy.url().replace("http://", "http://alice:s3cret@");
    let network = env(&[]).with_proxy(&url).unwrap();
    let err = call::<D>(&server.url(), &network).unwrap_err();
    let Error::Proxy { reason, .. } = &err else {
        panic!("expected Error::Proxy, got {err:?}");
    };
    assert_eq!(
        reason,
        &format!(
            "the proxy {} refused the tunnel to {} with HTTP status 407 (it wants credentials: put them in the proxy URL, http://user:password@host:port)",
            proxy.url(),
            server.addr()
        )
    );
    let text = format!("{err} {err:?} {network:?}");
    assert!(
        !text.contains("s3cret") && !text.contains("alice"),
        "{text}"
    );
    let tunnels = proxy.tunnels();
    assert_eq!(
        tunnels[0].authorization.as_deref(),
        Some("Basic YWxpY2U6czNjcmV0")
    );
    assert!(server.requests().is_empty());
    // A proxy that is not there.
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let gone = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let err = call::<D>(&server.url(), &env(&[]).with_proxy(&gone).unwrap()).unwrap_err();
    assert_eq!(err.kind(), "proxy", "{err}");
    assert!(err.to_string().contains("could not be reached"), "{err}");
}

/// A reserved name (RFC 6761: `.invalid` never resolves) that only the test proxy knows.
const INTERNAL: &str = "mcp.internal.invalid";

pub(super) fn a_server_only_the_proxy_can_resolve_is_reached_through_it<D: Driver>() {
    let proxy = ConnectProxy::with_hosts(&[(INTERNAL, IpAddr::V4(Ipv4Addr::LOCALHOST))]);
    let plain = TestServer::start(Script::new());
    let url = format!("http://{INTERNAL}:{}/mcp", plain.addr().port());
    let network = env(&[]).with_proxy(&proxy.url()).unwrap();
    assert_eq!(call::<D>(&url, &network).unwrap(), "through");
    let target = format!("{INTERNAL}:{}", plain.addr().port());
    let tunnels = proxy.tunnels();
    assert!(!tunnels.is_empty());
    assert!(tunnels.iter().all(|t| t.target == target), "{tunnels:?}");
    // The same from the environment, over TLS: the certificate names the name, not an address.
    let ca = TestCa::new("mcp-testkit internal CA");
    let server = TestServer::start(Script::new());
    let front = TlsFront::start(server.addr(), &ca.server_cert(&[INTERNAL]));
    let url = format!("https://{INTERNAL}:{}/mcp", front.addr().port());
    let network = env(&[("HTTPS_PROXY", &proxy.url())]).with_root_pem(ca.pem());
    assert_eq!(call::<D>(&url, &network).unwrap(), "through");
    let target = format!("{INTERNAL}:{}", front.addr().port());
    assert!(proxy.tunnels().iter().any(|t| t.target == target));
    assert!(front.handshakes() >= 1);
    // Without the proxy the name is looked up here, and is not found.
    let before = proxy.tunnels().len();
    let network =
        env(&[("HTTPS_PROXY", &proxy.url()), ("NO_PROXY", INTERNAL)]).with_root_pem(ca.pem());
    let err = call::<D>(&url, &network).unwrap_err();
    assert_eq!(err.kind(), "unreachable", "{err}");
    assert_eq!(proxy.tunnels().len(), before, "NO_PROXY: no tunnel");
}

/// The target of the proxy tests: a reserved name (RFC 6761) no resolver here knows; the
/// client never looks it up, it sends it to the proxy.
const THROUGH: &str = "https://example.test/mcp";

#[track_caller]
fn proxy_reason(err: &Error) -> &str {
    assert_eq!(
        (err.kind(), err.fault()),
        ("proxy", Fault::Network),
        "{err}"
    );
    let Error::Proxy { reason, server, .. } = err else {
        panic!("expected Error::Proxy, got {err:?}");
    };
    assert_eq!(server, "example.test:443");
    assert!(
        err.to_string().starts_with(&format!(
            "MCP server \"example.test:443\" could not be reached through a proxy: {reason}; check the proxy settings"
        )),
        "{err}"
    );
    reason
}

pub(super) fn a_proxy_that_never_answers_connect_is_named_with_the_target_at_the_grant<
    D: Driver,
>() {
    let proxy = ConnectProxy::stalling();
    let network = env(&[]).with_proxy(&proxy.url()).unwrap();
    let budget = Duration::from_millis(800);
    let mut client = client::<D>(THROUGH, &network, budget);
    let started = Instant::now();
    let err = client.call_tool("echo", echo("x")).unwrap_err();
    let elapsed = started.elapsed();
    eprintln!("a stalled CONNECT, {budget:?} budget: {elapsed:?}: {err}");
    assert_eq!(
        proxy_reason(&err),
        format!(
            "the proxy {} did not answer CONNECT example.test:443 within the 0.8 s granted to that leg",
            proxy.url()
        )
    );
    let tunnels = proxy.tunnels();
    assert!(
        !tunnels.is_empty() && tunnels.iter().all(|t| t.target == "example.test:443"),
        "the proxy was asked for the tunnel: {tunnels:?}"
    );
    assert!(
        elapsed >= budget - Duration::from_millis(50) && elapsed < budget + MARGIN,
        "{elapsed:?}"
    );
}

pub(super) fn a_proxy_that_answers_502_is_named_with_the_target<D: Driver>() {
    let proxy = ConnectProxy::refusing(502);
    let network = env(&[]).with_proxy(&proxy.url()).unwrap();
    let started = Instant::now();
    let err = client::<D>(THROUGH, &network, BUDGET)
        .call_tool("echo", echo("x"))
        .unwrap_err();
    assert_eq!(
        proxy_reason(&err),
        format!(
            "the proxy {} refused the tunnel to example.test:443 with HTTP status 502",
            proxy.url()
        )
    );
    assert!(started.elapsed() < BUDGET / 2, "{:?}", started.elapsed());
}

/// Set in the child process a silent-DNS test runs itself in.
const SILENT_DNS_CHILD: &str = "MCP_DRIVERS_SILENT_DNS_CHILD";
/// The budget of the operation whose name lookup never answers.
const SILENT_DNS_BUDGET: Duration = Duration::from_secs(2);
/// The budget of a second operation on the same name, which joins the abandoned lookup.
const AGAIN_BUDGET: Duration = Duration::from_millis(300);
/// A name only a DNS server can answer (not in `/etc/hosts`; `.test` is reserved, RFC 6761).
const SILENT_NAME: &str = "mcp.silent-dns.test";

pub(super) fn a_name_lookup_that_never_answers_costs_the_budget_not_the_resolver_s_timeout<
    D: Driver,
>() {
    const NAME: &str =
        "a_name_lookup_that_never_answers_costs_the_budget_not_the_resolver_s_timeout";
    if std::env::var_os(SILENT_DNS_CHILD).is_some() {
        return silent_dns_child::<D>();
    }
    let dns = match SilentDns::start() {
        Ok(dns) => dns,
        Err(why) => {
            eprintln!("SKIPPED (silent DNS server): {why}");
            return;
        }
    };
    // This test binary again, running only this test, in a mount namespace of its own whose
    // /etc/resolv.conf names the silent server; the whole process is timed, its exit included
    // (a runtime's shutdown that waits for a lookup would show here).
    let test = format!("{}::{NAME}", D::MODULE);
    let started = Instant::now();
    let output = Command::new("unshare")
        .args([
            "-m",
            "sh",
            "-c",
            r#"mount --bind "$0" /etc/resolv.conf && exec "$@""#,
        ])
        .arg(&dns.resolv_conf)
        .arg(std::env::current_exe().unwrap())
        .args([test.as_str(), "--exact", "--nocapture", "--test-threads=1"])
        .env(SILENT_DNS_CHILD, "1")
        .output()
        .unwrap();
    let whole = started.elapsed();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "the child process failed:\n{stdout}\n{stderr}"
    );
    eprint!("{stderr}");
    eprintln!(
        "a silent DNS server, {SILENT_DNS_BUDGET:?} and twice {AGAIN_BUDGET:?} budgets: the whole process took {whole:?}"
    );
    // The system resolver gives up after 10 s (5 s x 2 attempts, as the file says): a process
    // held by the lookup ends there. The bound sits half way, so that a slow machine starting
    // the child process (a test binary, a test server) does not fail it.
    let budgets = SILENT_DNS_BUDGET + AGAIN_BUDGET * 2;
    let held = Duration::from_secs(10);
    assert!(
        whole < budgets + (held - budgets) / 2,
        "the process outlived its budgets by {:?}",
        whole.saturating_sub(budgets)
    );
    drop(dns);
}

/// The child's part, under the silent DNS server: an address is used without a lookup; a name
/// ends its operation at the budget, as a leg that timed out, and a second one joins its
/// lookup; a proxy's name not answered is the proxy's fault.
fn silent_dns_child<D: Driver>() {
    let server = TestServer::start(Script::new());
    let started = Instant::now();
    assert_eq!(call::<D>(&server.url(), &env(&[])).unwrap(), "through");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "an address needs no lookup: {:?}",
        started.elapsed()
    );
    let url = format!("http://{SILENT_NAME}:{}/mcp", server.addr().port());
    let mut first = client::<D>(&url, &env(&[]), SILENT_DNS_BUDGET);
    let started = Instant::now();
    let err = first.call_tool("echo", echo("x")).unwrap_err();
    let elapsed = started.elapsed();
    assert!(matches!(err, Error::LegTimedOut { .. }), "{err:?}: {err}");
    assert!(elapsed < SILENT_DNS_BUDGET + MARGIN, "{elapsed:?}");
    // The lookup goes on without a waiter; another operation on the name (a new client, so
    // no session or pooled connection helps) joins it: one thread for the name, not two.
    let again = client::<D>(&url, &env(&[]), AGAIN_BUDGET)
        .call_tool("echo", echo("x"))
        .unwrap_err();
    assert!(matches!(again, Error::LegTimedOut { .. }), "{again:?}");
    assert_eq!(mcp_driver_common::lookup::in_flight(), 1);
    // A proxy whose own name is not answered within the grant is the proxy's fault.
    let proxied = env(&[])
        .with_proxy(&format!("http://proxy.{SILENT_NAME}:3128"))
        .unwrap();
    let err = client::<D>(&url, &proxied, AGAIN_BUDGET)
        .call_tool("echo", echo("x"))
        .unwrap_err();
    let Error::Proxy { reason, .. } = &err else {
        panic!("expected Error::Proxy, got {err:?}: {err}");
    };
    assert_eq!(
        reason,
        &format!(
            "the proxy http://proxy.{SILENT_NAME}:3128 could not be reached within the 0.3 s granted to that leg"
        )
    );
    // The tokio driver's runtime is shut down here: it must not wait for the lookup.
    drop(first);
    eprintln!(
        "a silent DNS server: the operation ended after {elapsed:?}, its client was dropped after {:?}",
        started.elapsed()
    );
}

/// A DNS server that never answers: a UDP socket on port 53 of a loopback address of its own
/// (127.53.x.y), which nothing reads, and a `resolv.conf` naming it.
struct SilentDns {
    _socket: UdpSocket,
    dir: std::path::PathBuf,
    resolv_conf: std::path::PathBuf,
}

impl SilentDns {
    /// The server, or why this machine cannot run the test: not Linux, no `unshare -m`
    /// (it needs root, or CAP_SYS_ADMIN), or port 53 cannot be bound (root again).
    fn start() -> Result<Self, String> {
        static NEXT: AtomicU8 = AtomicU8::new(1);
        if !cfg!(target_os = "linux") {
            return Err("a mount namespace with its own resolv.conf needs Linux".into());
        }
        let unshare = Command::new("unshare")
            .args(["-m", "true"])
            .output()
            .map_err(|e| format!("`unshare` (util-linux) cannot be run: {e}"))?;
        if !unshare.status.success() {
            return Err(format!(
                "`unshare -m` is not permitted here (it needs root or CAP_SYS_ADMIN): {}",
                String::from_utf8_lossy(&unshare.stderr).trim()
            ));
        }
        let socket = loop {
            let last = NEXT.fetch_add(1, Ordering::SeqCst);
            let ip = Ipv4Addr::new(127, 53, (std::process::id() % 250) as u8, last);
            match UdpSocket::bind((ip, 53)) {
                Ok(socket) => break socket,
                Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && last < 250 => {}
                Err(e) => return Err(format!("port 53 of {ip} cannot be bound: {e}")),
            }
        };
        let dir = tempdir();
        let resolv_conf = dir.join("resolv.conf");
        std::fs::write(
            &resolv_conf,
            format!(
                "nameserver {}\noptions timeout:5 attempts:2\n",
                socket.local_addr().unwrap().ip()
            ),
        )
        .unwrap();
        Ok(Self {
            _socket: socket,
            dir,
            resolv_conf,
        })
    }
}

impl Drop for SilentDns {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub(super) fn a_black_holed_first_address_costs_the_first_leg_one_attempt_delay<D: Driver>() {
    let server = TestServer::start(Script::new());
    let port = server.addr().port();
    // The common broken network: the name's IPv6 address (first, as the system prefers it)
    // drops packets, its IPv4 address serves.
    let hole = match BlackHole::beside(server.addr()) {
        Ok(hole) => hole,
        Err(err) => {
            eprintln!("skipped: no black hole on IPv6 loopback here ({err})");
            return;
        }
    };
    let network = env(&[]).with_resolved("mcp.test", [hole.addr().ip(), server.addr().ip()]);
    let mut client = client::<D>(&format!("http://mcp.test:{port}/mcp"), &network, BUDGET);
    let recorder = client.observe();
    let result = client.call_tool("echo", echo("around")).unwrap();
    assert_eq!(result.text(), "around");
    let first = recorder.legs()[0].elapsed;
    // The black hole had its attempt delay (it was tried first), and no more: the RFC's 250 ms
    // (about 260 ms measured). Trying the addresses in turn gives the first half the grant
    // (5 s); the bound sits half way to it, for a loaded machine.
    assert!(first >= CONNECTION_ATTEMPT_DELAY, "{first:?}");
    assert!(first < BUDGET / 4, "{first:?}");
    assert!(server.rpc_methods().contains(&"tools/call".to_owned()));
}

/// A fresh directory under the target's temporary directory.
fn tempdir() -> std::path::PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "mcp-testkit-network-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
