//! The proxy tunnel step, the first of the chain: an HTTP `CONNECT` tunnel through the
//! target's proxy, when it has one.
//!
//! [`Tunnel`] picks the proxy for each request's target (the [`Proxies`] of the client's
//! [`Network`](crate::Network)), connects to it and opens an HTTP `CONNECT` tunnel, all inside
//! the leg's grant; its failures (the grant running out before the proxy answered too) are a
//! [`TunnelFailed`] with the kind and sentence of
//! [`ProxyUrl::transport_error`](mcp_driver_common::network::ProxyUrl::transport_error) (no
//! credentials), so the error names the proxy, not the server. The `CONNECT` carries the
//! target's name: only the proxy resolves it (in company networks the client often cannot),
//! so the [`Resolver`](super::Resolver) must never look up a proxied target (ureq resolves
//! before it calls the chain). The tunnel looks up the proxy's own name itself, with
//! [`Lookup`], inside the leg's grant.
//!
//! This module never looks up the target's name and never decides an MCP matter; it only
//! opens the tunnel, and says how the proxy failed when it could not.

use std::fmt;
use std::io::{self, Write};
use std::sync::Arc;

use mcp_driver_common::network::{Proxies, ProxyFailure, parse_connect_response};
use mcp_proto::driver::TransportError;
use ureq::unversioned::resolver::Resolver as UreqResolver;
use ureq::unversioned::transport::{
    ConnectionDetails, Connector as UreqConnector, Either, Transport, TransportAdapter,
};

use super::left;
use super::resolve::Lookup;
use super::slice::Sliced;
use super::socket::is_timeout;
use super::tcp::Tcp;
use crate::lanes::Shared;

/// The first chain step: the tunnel through the target's proxy, when it has one.
pub(super) struct Tunnel {
    pub(super) proxies: Proxies,
    /// Looks up the proxy's name (never the target's: the proxy does that).
    pub(super) lookup: Lookup,
    pub(super) user_agent: &'static str,
    pub(super) shared: Arc<Shared>,
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
