//! The name lookup step, which the lane's HTTP client ([`crate::http1`]) runs before the
//! connector chain: the lane's [`Resolver`], and the [`Lookup`] of a name inside the leg's grant.
//!
//! The resolver skips the lookup for an address, for a name the caller fixed, and for a target
//! reached through a proxy: the `CONNECT` carries the target's name and only the proxy
//! resolves it (in company networks the client often cannot), so the resolver follows the
//! tunnel's proxy rules (the same [`Proxies`]). The tunnel looks up the proxy's own name
//! itself, with [`Lookup`].
//!
//! This module never looks up a target reached through a proxy, and never waits for a lookup
//! past the grant; it only turns a URL's host into the addresses to connect to.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use mcp_driver_common::lookup;
use mcp_driver_common::network::{Proxies, Resolved};
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver as UreqResolver};
use ureq::unversioned::transport::NextTimeout;
use ureq::unversioned::transport::time::Duration as UreqDuration;

/// The agent's resolver: no lookup for a target the [`Tunnel`](super::tunnel::Tunnel) sends
/// through a proxy (the proxy resolves its name); the caller's own addresses for a name it fixed
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
