//! How a driver's connections reach a server, decided once for both drivers: what they trust
//! besides the operating system's store, which proxy (if any) carries a request, and the HTTP
//! `CONNECT` exchange that opens a tunnel through it. This is connection policy, not MCP: the
//! operation (`mcp-proto`) only hears how a tunnel failed, as the
//! [`ProxyUrl::transport_error`] a driver reports: a
//! [`TransportErrorKind::Proxy`], or a
//! [`ProxyTimedOut`](TransportErrorKind::ProxyTimedOut) when the leg's grant ran out
//! before the proxy answered (the proxy, not the server, is named then too), whose detail is
//! [`ProxyUrl::failure`]'s sentence, and words it as [`Error::Proxy`]. Until the tunnel is
//! open, every failure is the proxy's.
//!
//! Nothing here does I/O, and nothing here may name a driver's runtime (tokio, ureq): both
//! drivers call the same functions, so they pick the same proxy and fail in the same words. The environment is read through a lookup the caller can replace
//! ([`Network::with_env`]), so a test (or an embedding application) decides what
//! `HTTPS_PROXY` or `SSL_CERT_FILE` say without touching the process's environment; files
//! (added CAs, `SSL_CERT_FILE`, `SSL_CERT_DIR`) are named here and read by the drivers.
//!
//! # Proxies
//! * From the environment (the default): `https_proxy`/`HTTPS_PROXY` for `https` targets,
//!   `http_proxy`/`HTTP_PROXY` for `http` ones, then `all_proxy`/`ALL_PROXY` for both (lower
//!   case first, as curl reads them; empty values are unset). Loopback targets (`localhost`,
//!   `127.0.0.0/8`, `::1`) never use an environment proxy, as Go's `net/http` does: a proxy on
//!   another machine cannot reach this one's loopback.
//! * Set explicitly ([`Network::with_proxy`]): every target, loopback included.
//! * `no_proxy`/`NO_PROXY` (and [`Network::with_no_proxy`]) apply to both: a comma-separated
//!   list of host names (each also matching its subdomains; a leading `.` or `*.` is the
//!   same), IP addresses, CIDR blocks (`10.0.0.0/8`), or `*` for everything. A `:port` suffix
//!   is ignored.
//! * Only `http://` proxies (plain HTTP to the proxy), and only the `CONNECT` method: every
//!   request, `http` or `https`, goes through a tunnel. Credentials in the proxy URL
//!   (`http://user:pass@proxy:3128`) are sent as `Proxy-Authorization: Basic` and never shown:
//!   a [`ProxyUrl`] displays as `http://proxy:3128`.
//!
//! # Connecting
//! * **Happy Eyeballs.** When a server's name has several addresses, both drivers race them
//!   (RFC 8305): the first address is tried first; the next (of the other family first, as
//!   [`interleave_families`] orders them) after [`CONNECTION_ATTEMPT_DELAY`] without an answer,
//!   or at once when an attempt fails; the first connection made wins and the others are
//!   closed. The whole race is one leg's and ends with the leg's grant: a name whose first
//!   address is a black hole (broken IPv6, a VPN that drops packets) costs the first leg
//!   250 ms, not its grant.
//! * **Fixed addresses** ([`Network::with_resolved`], curl's `--resolve`): a name's addresses
//!   given by the caller, used in their order instead of a lookup.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use mcp_auth::clip;
use mcp_proto::driver::TransportError;
use mcp_proto::{Error, TransportErrorKind};

/// The environment variables a [`Network`] reads for proxies, in the order they are tried.
const HTTPS_VARS: [&str; 4] = ["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"];
const HTTP_VARS: [&str; 4] = ["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"];
const NO_PROXY_VARS: [&str; 2] = ["no_proxy", "NO_PROXY"];

/// A CA the caller adds to what the operating system trusts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddedRoots {
    /// PEM text (one or more `CERTIFICATE` blocks), with a label for error messages.
    Pem {
        /// What to call it in an error (`"added PEM"` unless given).
        label: String,
        /// The PEM bytes.
        pem: Vec<u8>,
    },
    /// A PEM file, read by the driver when it builds its client.
    File(PathBuf),
}

type Lookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// What a driver's connections trust and which proxy they use; see the [module docs](self).
///
/// The default trusts the operating system's store (the drivers' `platform-verifier`
/// feature), the files `SSL_CERT_FILE` and `SSL_CERT_DIR` name, and takes proxies from the
/// environment.
#[derive(Clone)]
pub struct Network {
    roots: Vec<AddedRoots>,
    proxy: ProxyChoice,
    no_proxy: Vec<String>,
    env: Lookup,
    resolved: Resolved,
}

#[derive(Debug, Clone)]
enum ProxyChoice {
    Environment,
    Direct,
    Explicit(ProxyUrl),
}

impl Default for Network {
    fn default() -> Self {
        Self {
            roots: Vec::new(),
            proxy: ProxyChoice::Environment,
            no_proxy: Vec::new(),
            env: Arc::new(|name| std::env::var(name).ok()),
            resolved: Resolved::default(),
        }
    }
}

impl fmt::Debug for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Network")
            .field("roots", &self.roots.len())
            .field("proxy", &self.proxy)
            .field("no_proxy", &self.no_proxy)
            .field("resolved", &self.resolved)
            .finish_non_exhaustive()
    }
}

impl Network {
    /// The default: the system's trust store, proxies from the environment.
    pub fn new() -> Self {
        Self::default()
    }

    /// Also trusts the CA certificates in `pem` (PEM text, one or more `CERTIFICATE` blocks).
    pub fn with_root_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.roots.push(AddedRoots::Pem {
            label: "added PEM".to_owned(),
            pem: pem.into(),
        });
        self
    }

    /// Also trusts the CA certificates in the PEM file at `path` (read when the client is
    /// built; a file that cannot be read or holds no certificate is the caller's error then).
    pub fn with_root_pem_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.roots.push(AddedRoots::File(path.into()));
        self
    }

    /// Sends every request through the `http://` proxy at `url` (credentials in it are sent
    /// to the proxy, never shown), whatever the environment says; `NO_PROXY` still applies.
    ///
    /// # Errors
    /// [`Error::InvalidUrl`] (credentials removed) when `url` is not an `http://` proxy URL.
    pub fn with_proxy(mut self, url: &str) -> Result<Self, Error> {
        let proxy = ProxyUrl::parse(url).map_err(|reason| Error::InvalidUrl {
            url: clip(&redact(url), 200),
            reason,
        })?;
        self.proxy = ProxyChoice::Explicit(proxy);
        Ok(self)
    }

    /// Sends every request directly, whatever the environment says.
    pub fn without_proxy(mut self) -> Self {
        self.proxy = ProxyChoice::Direct;
        self
    }

    /// Adds `list` (as `NO_PROXY` is written) to the hosts reached directly.
    pub fn with_no_proxy(mut self, list: &str) -> Self {
        self.no_proxy.extend(split_list(list));
        self
    }

    /// Reads "environment variables" through `lookup` instead of the process's environment
    /// (`HTTPS_PROXY`, `NO_PROXY`, `SSL_CERT_FILE`...).
    pub fn with_env(
        mut self,
        lookup: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.env = Arc::new(lookup);
        self
    }

    /// Connects to `host` at `addrs`, in this order and on the URL's port, instead of looking
    /// its name up (curl's `--resolve`): a server reached by a name the resolver here does not
    /// know, or pinned to some of its addresses. Several addresses are raced as a looked-up
    /// name's are ([module docs](self#connecting)). Only a direct connection's name: a target
    /// reached through a proxy is the proxy's to resolve. A later call for the same host
    /// replaces the earlier one; no addresses removes it.
    pub fn with_resolved(mut self, host: &str, addrs: impl IntoIterator<Item = IpAddr>) -> Self {
        let host = bare_host(host);
        let addrs: Vec<IpAddr> = addrs.into_iter().collect();
        let mut pinned: Vec<(String, Vec<IpAddr>)> = self
            .resolved
            .0
            .iter()
            .filter(|(name, _)| *name != host)
            .cloned()
            .collect();
        if !addrs.is_empty() {
            pinned.push((host, addrs));
        }
        self.resolved = Resolved(pinned.into());
        self
    }

    /// The names whose addresses the caller fixed ([`Network::with_resolved`]).
    pub fn resolved(&self) -> Resolved {
        self.resolved.clone()
    }

    /// The CAs added by the caller, in the order they were added.
    pub fn added_roots(&self) -> &[AddedRoots] {
        &self.roots
    }

    /// The variable `name` as this network reads it (empty counts as unset).
    pub fn env_var(&self, name: &str) -> Option<String> {
        (self.env)(name).filter(|v| !v.trim().is_empty())
    }

    /// The file `SSL_CERT_FILE` names, whose CAs are trusted as well.
    pub fn cert_file(&self) -> Option<PathBuf> {
        self.env_var("SSL_CERT_FILE").map(PathBuf::from)
    }

    /// The directories `SSL_CERT_DIR` names (separated as `PATH` is), whose CA files are
    /// trusted as well.
    pub fn cert_dirs(&self) -> Vec<PathBuf> {
        self.env_var("SSL_CERT_DIR")
            .map(|dirs| std::env::split_paths(&dirs).collect())
            .unwrap_or_default()
    }

    /// The proxy rules, read from the environment now.
    pub fn proxies(&self) -> Proxies {
        let mut no_proxy: Vec<String> = NO_PROXY_VARS
            .iter()
            .find_map(|name| self.env_var(name))
            .map(|list| split_list(&list).collect())
            .unwrap_or_default();
        no_proxy.extend(self.no_proxy.iter().cloned());
        let from_env = |vars: &[&str]| {
            vars.iter().find_map(|name| {
                self.env_var(name).map(|value| {
                    ProxyUrl::parse(&value).map_err(|reason| {
                        format!(
                            "the proxy URL in {name} (\"{}\") cannot be used: {reason}",
                            clip(&redact(&value), 200)
                        )
                    })
                })
            })
        };
        let (https, http, environment) = match &self.proxy {
            ProxyChoice::Direct => (None, None, false),
            ProxyChoice::Explicit(proxy) => {
                (Some(Ok(proxy.clone())), Some(Ok(proxy.clone())), false)
            }
            ProxyChoice::Environment => (from_env(&HTTPS_VARS), from_env(&HTTP_VARS), true),
        };
        Proxies {
            https,
            http,
            no_proxy,
            environment,
        }
    }
}

/// Which proxy carries a request to which target; from [`Network::proxies`].
#[derive(Debug, Clone, Default)]
pub struct Proxies {
    https: Option<Result<ProxyUrl, String>>,
    http: Option<Result<ProxyUrl, String>>,
    no_proxy: Vec<String>,
    environment: bool,
}

impl Proxies {
    /// No proxy for anything.
    pub fn direct() -> Self {
        Self::default()
    }

    /// The proxy for a request to `host` over `scheme` (`http` or `https`): `Ok(None)` to go
    /// directly; `Err` with a sentence when the proxy the environment names cannot be used.
    pub fn for_target(&self, scheme: &str, host: &str) -> Result<Option<&ProxyUrl>, String> {
        let chosen = if scheme.eq_ignore_ascii_case("https") {
            &self.https
        } else {
            &self.http
        };
        let Some(chosen) = chosen else {
            return Ok(None);
        };
        let host = bare_host(host);
        if (self.environment && is_loopback(&host))
            || self.no_proxy.iter().any(|e| matches(e, &host))
        {
            return Ok(None);
        }
        chosen.as_ref().map(Some).map_err(Clone::clone)
    }
}

/// An `http://` proxy: where it is and the credentials it is sent (never displayed).
#[derive(Clone, PartialEq, Eq)]
pub struct ProxyUrl {
    host: String,
    port: u16,
    credentials: Option<(String, String)>,
}

impl ProxyUrl {
    /// Parses `http://[user[:password]@]host[:port][/]` or `host:port` (port 80 unless given;
    /// user and password percent-decoded).
    ///
    /// # Errors
    /// Why it cannot be used: another scheme (`https://`, `socks5://`...), no host, a bad
    /// port, or a path.
    pub fn parse(url: &str) -> Result<Self, &'static str> {
        let url = url.trim();
        let rest = match url.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => rest,
            Some(_) => return Err("only http:// proxies are supported (HTTP CONNECT)"),
            None => url,
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains(['/', '?', '#']) {
            return Err("a proxy URL has no path");
        }
        let (userinfo, authority) = match rest.rsplit_once('@') {
            Some((userinfo, authority)) => (Some(userinfo), authority),
            None => (None, rest),
        };
        let (host, port) =
            split_host_port(authority).ok_or("the proxy URL's port is not a number")?;
        if host.is_empty() {
            return Err("the proxy URL has no host");
        }
        let credentials = userinfo.map(|info| {
            let (user, password) = info.split_once(':').unwrap_or((info, ""));
            (percent_decode(user), percent_decode(password))
        });
        Ok(Self {
            host: host.to_owned(),
            port: port.unwrap_or(80),
            credentials,
        })
    }

    /// The proxy's host (an IPv6 address in brackets).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The proxy's port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The proxy as a URI a connector can dial: `http://host:port` (no credentials).
    pub fn uri(&self) -> String {
        format!("http://{}:{}", self.host, self.port)
    }

    /// The `CONNECT` request that opens a tunnel to `host:port` (the target's authority),
    /// with `Proxy-Authorization: Basic` when the URL had credentials.
    pub fn connect_request(&self, host: &str, port: u16, user_agent: &str) -> Vec<u8> {
        let authority = format!("{host}:{port}");
        let mut request = format!(
            "CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: {user_agent}\r\n"
        );
        if let Some((user, password)) = &self.credentials {
            let token = STANDARD.encode(format!("{user}:{password}"));
            request.push_str(&format!("Proxy-Authorization: Basic {token}\r\n"));
        }
        request.push_str("\r\n");
        request.into_bytes()
    }

    /// Why a proxy failed, in the words both drivers use (`what` from [`ProxyFailure`]).
    pub fn failure(&self, target: &str, what: &ProxyFailure) -> String {
        match what {
            ProxyFailure::Unreachable(why) => {
                format!("the proxy {self} could not be reached ({})", clip(why, 120))
            }
            ProxyFailure::Refused(status) => format!(
                "the proxy {self} refused the tunnel to {target} with HTTP status {status}{}",
                match status {
                    407 =>
                        " (it wants credentials: put them in the proxy URL, http://user:password@host:port)",
                    403 => " (the proxy's policy forbids it)",
                    _ => "",
                }
            ),
            ProxyFailure::Closed => {
                format!("the proxy {self} closed the connection before answering CONNECT {target}")
            }
            ProxyFailure::NotHttp => {
                format!(
                    "the proxy {self} answered CONNECT {target} with something that is not HTTP"
                )
            }
            ProxyFailure::Unusable(why) => why.clone(),
            ProxyFailure::NoConnection => format!("the proxy {self} could not be reached"),
            ProxyFailure::NoAnswer => {
                format!("the proxy {self} did not answer CONNECT {target}")
            }
        }
    }

    /// How a tunnel to `target` failed, as the driver tells the operation: `what` worded by
    /// [`failure`](Self::failure), of kind
    /// [`ProxyTimedOut`](TransportErrorKind::ProxyTimedOut) when the leg's grant
    /// ran out in the proxy's part (the operation adds the grant to the sentence), else
    /// [`Proxy`](TransportErrorKind::Proxy).
    pub fn transport_error(&self, target: &str, what: &ProxyFailure) -> TransportError {
        let kind = match what {
            ProxyFailure::NoConnection | ProxyFailure::NoAnswer => {
                TransportErrorKind::ProxyTimedOut
            }
            _ => TransportErrorKind::Proxy,
        };
        TransportError::new(kind, self.failure(target, what))
    }
}

impl fmt::Display for ProxyUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "http://{}:{}", self.host, self.port)
    }
}

impl fmt::Debug for ProxyUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ProxyUrl({self}{})",
            if self.credentials.is_some() {
                ", with credentials"
            } else {
                ""
            }
        )
    }
}

/// How a tunnel through a proxy failed; [`ProxyUrl::failure`] words it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProxyFailure {
    /// The proxy itself could not be reached (its address, refused, unreachable).
    Unreachable(String),
    /// The proxy answered `CONNECT` with this status (not 2xx).
    Refused(u16),
    /// The proxy closed the connection before its answer's head.
    Closed,
    /// The proxy's answer is not an HTTP response head.
    NotHttp,
    /// The proxy setting cannot be used (already a sentence).
    Unusable(String),
    /// The leg's grant ran out before a connection to the proxy was made (its name looked up,
    /// its port connected).
    NoConnection,
    /// The leg's grant ran out after the proxy took the connection and before it answered
    /// `CONNECT` (a proxy that stalls the tunnel).
    NoAnswer,
}

/// The longest answer head to `CONNECT` a driver reads, its blank line included.
const MAX_CONNECT_HEAD: usize = 8 * 1024;

/// Which kept connections may carry a request: those to the same origin (scheme and
/// authority). Both drivers key the connections a client keeps by it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Origin {
    https: bool,
    authority: Option<http::uri::Authority>,
}

impl Origin {
    /// The origin of `uri`.
    pub fn of(uri: &http::Uri) -> Self {
        Self {
            https: uri.scheme() == Some(&http::uri::Scheme::HTTPS),
            authority: uri.authority().cloned(),
        }
    }
}

/// The proxy's answer to `CONNECT`, read from `buf`: `Ok(None)` while its head is
/// incomplete, `Ok(Some((head_len, status)))` once it is in (bytes after `head_len` belong to
/// the tunnel), `Err` when it is not HTTP or its head is longer than 8 KiB. The verdict is the
/// same however the answer was read (a byte at a time or a whole buffer): a head that ends past
/// 8 KiB is refused even when its end is already in `buf`.
pub fn parse_connect_response(buf: &[u8]) -> Result<Option<(usize, u16)>, ProxyFailure> {
    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
        // Without its end in `MAX_CONNECT_HEAD` bytes, the head cannot end within them.
        return if buf.len() >= MAX_CONNECT_HEAD || (buf.len() >= 5 && !buf.starts_with(b"HTTP/")) {
            Err(ProxyFailure::NotHttp)
        } else {
            Ok(None)
        };
    };
    if end + 4 > MAX_CONNECT_HEAD {
        return Err(ProxyFailure::NotHttp);
    }
    let line = buf[..end].split(|&b| b == b'\r').next().unwrap_or_default();
    let line = std::str::from_utf8(line).map_err(|_| ProxyFailure::NotHttp)?;
    let mut words = line.split(' ');
    let (Some(version), Some(code)) = (words.next(), words.next()) else {
        return Err(ProxyFailure::NotHttp);
    };
    // Three digits (RFC 9112 4): `parse` alone would take a sign, reading `+20` as 20.
    if !version.starts_with("HTTP/1.")
        || code.len() != 3
        || !code.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(ProxyFailure::NotHttp);
    }
    let status = code.parse::<u16>().map_err(|_| ProxyFailure::NotHttp)?;
    Ok(Some((end + 4, status)))
}

fn split_list(list: &str) -> impl Iterator<Item = String> + '_ {
    list.split([',', ' ', '\t'])
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(str::to_ascii_lowercase)
}

/// A host without brackets or trailing dot, lower case.
/// How long a connection attempt goes unanswered before the next address is tried beside it:
/// RFC 8305's Connection Attempt Delay, its recommended 250 ms. Both drivers use it (the tokio
/// driver as hyper-util's happy eyeballs timeout).
pub const CONNECTION_ATTEMPT_DELAY: Duration = Duration::from_millis(250);

/// `addrs` in the order connection attempts are started (RFC 8305, section 4): the families
/// alternate, starting with the first address's (the system's preference, as `getaddrinfo`
/// sorted them), each family's addresses in their own order. `[v6a, v6b, v4a]` becomes
/// `[v6a, v4a, v6b]`: a black-holed IPv6 network costs one attempt delay, not one per address.
pub fn interleave_families(addrs: &[SocketAddr]) -> Vec<SocketAddr> {
    let Some(first) = addrs.first() else {
        return Vec::new();
    };
    let (preferred, other): (Vec<SocketAddr>, Vec<SocketAddr>) = addrs
        .iter()
        .partition(|addr| addr.is_ipv4() == first.is_ipv4());
    let (mut preferred, mut other) = (preferred.into_iter(), other.into_iter());
    let mut ordered = Vec::with_capacity(addrs.len());
    loop {
        match (preferred.next(), other.next()) {
            (None, None) => return ordered,
            (a, b) => ordered.extend(a.into_iter().chain(b)),
        }
    }
}

/// The names whose addresses the caller fixed, from [`Network::resolved`]; cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Resolved(Arc<[(String, Vec<IpAddr>)]>);

impl Resolved {
    /// The addresses fixed for `host` (a name, matched without case or a trailing dot; or an
    /// address, in brackets or not), in their order; `None` to look it up as usual.
    pub fn addresses(&self, host: &str) -> Option<&[IpAddr]> {
        if self.0.is_empty() {
            return None;
        }
        let host = bare_host(host);
        self.0
            .iter()
            .find(|(name, _)| *name == host)
            .map(|(_, addrs)| addrs.as_slice())
    }
}

fn bare_host(host: &str) -> String {
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    host.trim_end_matches('.').to_ascii_lowercase()
}

fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host.ends_with(".localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Whether the `NO_PROXY` entry `entry` covers `host` (bare, lower case).
fn matches(entry: &str, host: &str) -> bool {
    if entry == "*" {
        return true;
    }
    let ip = host.parse::<IpAddr>().ok();
    if let Some((net, bits)) = entry.split_once('/') {
        let (Ok(net), Ok(bits), Some(ip)) =
            (bare_host(net).parse::<IpAddr>(), bits.parse::<u32>(), ip)
        else {
            return false;
        };
        return in_block(ip, net, bits);
    }
    // `host:port` and `[v6]:port`: the port is ignored.
    let entry = match split_host_port(entry) {
        Some((h, _)) => bare_host(h),
        None => bare_host(entry),
    };
    if let (Some(ip), Ok(other)) = (ip, entry.parse::<IpAddr>()) {
        return ip == other;
    }
    let entry = entry.trim_start_matches('*').trim_start_matches('.');
    !entry.is_empty()
        && (host == entry
            || host
                .strip_suffix(entry)
                .is_some_and(|rest| rest.ends_with('.')))
}

fn in_block(ip: IpAddr, net: IpAddr, bits: u32) -> bool {
    match (ip, net) {
        (IpAddr::V4(ip), IpAddr::V4(net)) if bits <= 32 => {
            let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
            u32::from(ip) & mask == u32::from(net) & mask
        }
        (IpAddr::V6(ip), IpAddr::V6(net)) if bits <= 128 => {
            let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
            u128::from(ip) & mask == u128::from(net) & mask
        }
        _ => false,
    }
}

/// `host[:port]` or `[v6][:port]`: the host (brackets kept) and the port; `None` when the
/// port is not a number.
fn split_host_port(authority: &str) -> Option<(&str, Option<u16>)> {
    if authority.starts_with('[') {
        let close = authority.find(']')?;
        let (host, rest) = authority.split_at(close + 1);
        return match rest.strip_prefix(':') {
            Some(port) => port.parse().ok().map(|p| (host, Some(p))),
            None if rest.is_empty() => Some((host, None)),
            None => None,
        };
    }
    match authority.rsplit_once(':') {
        // A bare IPv6 address has more than one colon: no port.
        Some((host, _)) if host.contains(':') => Some((authority, None)),
        Some((host, port)) => port.parse().ok().map(|p| (host, Some(p))),
        None => Some((authority, None)),
    }
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Some(b) = text
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `url` without the credentials before an `@`.
fn redact(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").map_or(("", url), |(s, r)| (s, r));
    let rest = match rest.rsplit_once('@') {
        Some((_, authority)) => format!("***@{authority}"),
        None => rest.to_owned(),
    };
    if scheme.is_empty() {
        rest
    } else {
        format!("{scheme}://{rest}")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_origin_is_the_scheme_and_the_authority() {
        let a = Origin::of(&"http://a:1/x".parse().unwrap());
        assert_eq!(a, Origin::of(&"http://a:1/y?q".parse().unwrap()));
        assert_ne!(a, Origin::of(&"https://a:1/x".parse().unwrap()));
        assert_ne!(a, Origin::of(&"http://a:2/x".parse().unwrap()));
        assert_ne!(a, Origin::of(&"http://b:1/x".parse().unwrap()));
    }

    use super::*;

    #[test]
    fn attempts_alternate_families_starting_with_the_first_address() {
        let a = |s: &str| s.parse::<SocketAddr>().unwrap();
        let (v6a, v6b, v6c) = (
            a("[2001:db8::1]:443"),
            a("[2001:db8::2]:443"),
            a("[::1]:443"),
        );
        let (v4a, v4b) = (a("192.0.2.1:443"), a("127.0.0.1:443"));
        assert_eq!(
            interleave_families(&[v6a, v6b, v6c, v4a, v4b]),
            [v6a, v4a, v6b, v4b, v6c]
        );
        assert_eq!(interleave_families(&[v4a, v6a, v4b]), [v4a, v6a, v4b]);
        assert_eq!(interleave_families(&[v4b, v4a]), [v4b, v4a]);
        assert_eq!(interleave_families(&[v6c]), [v6c]);
        assert_eq!(interleave_families(&[]), []);
    }

    #[test]
    fn fixed_addresses_are_found_by_name_and_replaced_by_a_later_call() {
        let (v6, v4): (IpAddr, IpAddr) = ("::1".parse().unwrap(), "127.0.0.1".parse().unwrap());
        let network = Network::new()
            .with_resolved("MCP.example.", [v6, v4])
            .with_resolved("other.example", [v4]);
        let resolved = network.resolved();
        assert_eq!(resolved.addresses("mcp.example"), Some(&[v6, v4][..]));
        assert_eq!(resolved.addresses("Mcp.Example."), Some(&[v6, v4][..]));
        assert_eq!(resolved.addresses("other.example"), Some(&[v4][..]));
        assert_eq!(resolved.addresses("example"), None);
        let network = network
            .with_resolved("mcp.example", [v4])
            .with_resolved("other.example", []);
        let resolved = network.resolved();
        assert_eq!(resolved.addresses("mcp.example"), Some(&[v4][..]));
        assert_eq!(resolved.addresses("other.example"), None);
        assert!(Network::new().resolved().addresses("localhost").is_none());
    }
    use std::collections::HashMap;

    fn env(vars: &[(&str, &str)]) -> Network {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Network::new().with_env(move |name| vars.get(name).cloned())
    }

    fn proxy_for(network: &Network, scheme: &str, host: &str) -> Option<String> {
        network
            .proxies()
            .for_target(scheme, host)
            .unwrap()
            .map(ToString::to_string)
    }

    #[test]
    fn the_scheme_picks_the_variable_and_all_proxy_is_the_fallback() {
        let net = env(&[
            ("HTTPS_PROXY", "http://s:1"),
            ("http_proxy", "p:2"),
            ("ALL_PROXY", "a:3"),
        ]);
        assert_eq!(
            proxy_for(&net, "https", "x.example").as_deref(),
            Some("http://s:1")
        );
        assert_eq!(
            proxy_for(&net, "http", "x.example").as_deref(),
            Some("http://p:2")
        );
        let net = env(&[("all_proxy", "a:3")]);
        assert_eq!(
            proxy_for(&net, "https", "x.example").as_deref(),
            Some("http://a:3")
        );
        let net = env(&[("https_proxy", "low:1"), ("HTTPS_PROXY", "up:2")]);
        assert_eq!(
            proxy_for(&net, "https", "x").as_deref(),
            Some("http://low:1")
        );
        assert_eq!(proxy_for(&env(&[("HTTPS_PROXY", " ")]), "https", "x"), None);
        assert_eq!(proxy_for(&env(&[]), "https", "x"), None);
    }

    #[test]
    fn no_proxy_names_hosts_domains_addresses_and_blocks() {
        let net = env(&[
            ("HTTPS_PROXY", "p:1"),
            (
                "no_proxy",
                "corp.example, .internal,10.0.0.0/8 ,192.168.1.7,[fd00::1]:443",
            ),
        ]);
        for direct in [
            "corp.example",
            "mcp.corp.example",
            "a.internal",
            "10.2.3.4",
            "192.168.1.7",
            "[fd00::1]",
            "CORP.example.",
        ] {
            assert_eq!(proxy_for(&net, "https", direct), None, "{direct}");
        }
        for proxied in [
            "notcorp.example",
            "internal.example",
            "11.0.0.1",
            "192.168.1.8",
            "example.org",
        ] {
            assert!(proxy_for(&net, "https", proxied).is_some(), "{proxied}");
        }
        let net = env(&[("HTTPS_PROXY", "p:1"), ("NO_PROXY", "*")]);
        assert_eq!(proxy_for(&net, "https", "example.org"), None);
    }

    #[test]
    fn loopback_skips_environment_proxies_but_not_an_explicit_one() {
        let net = env(&[("HTTPS_PROXY", "p:1"), ("HTTP_PROXY", "p:1")]);
        for host in ["localhost", "127.0.0.1", "127.8.9.1", "[::1]"] {
            assert_eq!(proxy_for(&net, "http", host), None, "{host}");
        }
        let net = env(&[]).with_proxy("http://127.0.0.1:3128").unwrap();
        assert_eq!(
            proxy_for(&net, "http", "127.0.0.1").as_deref(),
            Some("http://127.0.0.1:3128")
        );
        let net = net.with_no_proxy("127.0.0.1");
        assert_eq!(proxy_for(&net, "http", "127.0.0.1"), None);
        let net = env(&[("NO_PROXY", "127.0.0.1")])
            .with_proxy("http://127.0.0.1:3128")
            .unwrap();
        assert_eq!(proxy_for(&net, "https", "127.0.0.1"), None);
        let net = env(&[("HTTPS_PROXY", "p:1")]).without_proxy();
        assert_eq!(proxy_for(&net, "https", "example.org"), None);
    }

    #[test]
    fn credentials_are_sent_never_shown() {
        let net = env(&[("HTTPS_PROXY", "http://al%40ice:s3cr%3At@proxy.corp:3128/")]);
        let proxies = net.proxies();
        let proxy = proxies.for_target("https", "mcp.example").unwrap().unwrap();
        assert_eq!(proxy.to_string(), "http://proxy.corp:3128");
        assert!(!format!("{proxy:?}").contains("s3cr"));
        let request = String::from_utf8(proxy.connect_request("mcp.example", 443, "ua")).unwrap();
        assert!(
            request.starts_with("CONNECT mcp.example:443 HTTP/1.1\r\nHost: mcp.example:443\r\n")
        );
        let basic = STANDARD.encode("al@ice:s3cr:t");
        assert!(request.contains(&format!("Proxy-Authorization: Basic {basic}\r\n")));
        assert!(request.ends_with("\r\n\r\n"));
        let failure = proxy.failure("mcp.example:443", &ProxyFailure::Refused(407));
        assert!(
            !failure.contains("s3cr") && failure.contains("407"),
            "{failure}"
        );
        let err = Network::new()
            .with_proxy("socks5://bob:pw@h:1")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("socks5://***@h:1") && !err.contains("pw"),
            "{err}"
        );
    }

    #[test]
    fn a_proxy_that_ran_out_of_the_grant_is_named_with_the_target() {
        let proxy = ProxyUrl::parse("http://u:pw@proxy.corp:3128").unwrap();
        let stalled = proxy.transport_error("mcp.example:443", &ProxyFailure::NoAnswer);
        assert_eq!(stalled.kind, TransportErrorKind::ProxyTimedOut);
        assert_eq!(
            stalled.detail,
            "the proxy http://proxy.corp:3128 did not answer CONNECT mcp.example:443"
        );
        let unreached = proxy.transport_error("mcp.example:443", &ProxyFailure::NoConnection);
        assert_eq!(unreached.kind, TransportErrorKind::ProxyTimedOut);
        assert_eq!(
            unreached.detail,
            "the proxy http://proxy.corp:3128 could not be reached"
        );
        let refused = proxy.transport_error("mcp.example:443", &ProxyFailure::Refused(502));
        assert_eq!(refused.kind, TransportErrorKind::Proxy);
        assert_eq!(
            refused.detail,
            "the proxy http://proxy.corp:3128 refused the tunnel to mcp.example:443 with HTTP status 502"
        );
    }

    #[test]
    fn an_unusable_environment_proxy_is_an_error_not_a_direct_connection() {
        let net = env(&[("HTTPS_PROXY", "socks5://u:secret@h:1080")]);
        let err = net
            .proxies()
            .for_target("https", "example.org")
            .unwrap_err();
        assert!(
            err.contains("HTTPS_PROXY") && !err.contains("secret"),
            "{err}"
        );
    }

    #[test]
    fn proxy_urls_parse() {
        let p = ProxyUrl::parse("http://[::1]:8080").unwrap();
        assert_eq!((p.host(), p.port()), ("[::1]", 8080));
        assert_eq!(ProxyUrl::parse("proxy").unwrap().port(), 80);
        assert!(ProxyUrl::parse("https://p:1").is_err());
        assert!(ProxyUrl::parse("http://p:x").is_err());
        assert!(ProxyUrl::parse("http://p:1/path").is_err());
        assert!(ProxyUrl::parse("http://:1").is_err());
    }

    #[test]
    fn connect_answers_parse() {
        assert_eq!(
            parse_connect_response(b"HTTP/1.1 200 Connection established\r\n\r\nxy"),
            Ok(Some((39, 200)))
        );
        assert_eq!(
            parse_connect_response(b"HTTP/1.0 407 Proxy Auth\r\nA: b\r\n\r\n"),
            Ok(Some((33, 407)))
        );
        assert_eq!(parse_connect_response(b"HTTP/1.1 200 OK\r\n"), Ok(None));
        assert_eq!(
            parse_connect_response(b"SSH-2.0-OpenSSH\r\n"),
            Err(ProxyFailure::NotHttp)
        );
        assert_eq!(
            parse_connect_response(b"HTTP/1.1 abc\r\n\r\n"),
            Err(ProxyFailure::NotHttp)
        );
        assert_eq!(
            parse_connect_response(b"HTTP/1.1 +20 OK\r\n\r\n"),
            Err(ProxyFailure::NotHttp)
        );
    }

    #[test]
    fn a_head_past_8_kib_is_refused_however_it_was_read() {
        let head = |len: usize| {
            let mut head = b"HTTP/1.1 200 OK\r\nX-Pad: ".to_vec();
            head.resize(len - 4, b'a');
            head.extend_from_slice(b"\r\n\r\n");
            head
        };
        let at_limit = head(MAX_CONNECT_HEAD);
        assert_eq!(
            parse_connect_response(&at_limit),
            Ok(Some((MAX_CONNECT_HEAD, 200)))
        );
        let past = head(MAX_CONNECT_HEAD + 100);
        // In one read (the blocking driver) as a byte at a time (the tokio driver).
        assert_eq!(parse_connect_response(&past), Err(ProxyFailure::NotHttp));
        let first_refused = (1..=past.len())
            .find(|&n| parse_connect_response(&past[..n]).is_err())
            .unwrap();
        assert_eq!(first_refused, MAX_CONNECT_HEAD);
    }

    #[test]
    fn cert_files_come_from_the_lookup() {
        let net = env(&[("SSL_CERT_FILE", "/tmp/ca.pem"), ("SSL_CERT_DIR", "/a:/b")]);
        assert_eq!(net.cert_file(), Some(PathBuf::from("/tmp/ca.pem")));
        assert_eq!(net.cert_dirs(), [PathBuf::from("/a"), PathBuf::from("/b")]);
        assert_eq!(env(&[]).cert_file(), None);
    }
}
