//! The client's connector chain: how a leg gets a connection. ureq's chain of steps with our
//! own TCP, proxy tunnel and TLS steps (so that both drivers trust, tunnel and fail alike: see
//! [`crate::tls`] and [`mcp_driver_common::network`]), plus socket
//! registration for cancelling and precise read timeouts; and a resolver that skips the lookup
//! for an address, and for a target reached through a proxy.
//!
//! One file per step of a connection, in the order a leg goes through them:
//!
//! * **Name lookup** ([`resolve`]): the lane's [`Resolver`], which the lane's HTTP client
//!   ([`crate::http1`]) calls before the chain.
//!   It never looks up a target reached through a proxy: only the proxy resolves that name.
//! * **Tunnel** ([`tunnel`]): the HTTP `CONNECT` tunnel through the target's proxy, when it
//!   has one, inside the leg's grant; its failures are a [`TunnelFailed`] that names the proxy.
//! * **TCP** ([`tcp`]): the connection to one of the name's addresses, never past what is left
//!   of the grant (raced on Unix: Happy Eyeballs, RFC 8305), handed over as a [`Socket`]
//!   ([`socket`]) of ours, which waits for input with `poll(2)` on the lane's own thread until
//!   the leg's end.
//! * **Sliced reads** ([`slice`]): every wait for input ends at the leg's end, cut into slices
//!   of at most [`SLICE`].
//! * **TLS** ([`tls`]): the handshake with the client's rustls configuration; a handshake that
//!   ran out of the grant is [`HANDSHAKE_TIMED_OUT`].
//! * **Registration** (here). [`Connector`] hands the chain a `register_shutdown` callback of
//!   its own, so every socket the TCP step opens is recorded for [`CancelHandle`] and for the
//!   leg-end thread (see [`crate::lanes`], [`crate::leg_end`]). A connection that could not be made is recorded on the lane, for the leg to
//!   report.
//!
//! This module never decides an MCP matter (what a failed connection means for the operation
//! is the leg's and the state machine's); it only builds the chain, registers the sockets it
//! opens and records whether the connection was made.
//!
//! [`CancelHandle`]: crate::CancelHandle
//! [`Socket`]: socket::Socket
//! [`SLICE`]: slice::SLICE

mod resolve;
mod slice;
mod socket;
mod tcp;
mod tls;
mod tunnel;

use std::fmt;
use std::io;
use std::sync::{Arc, Weak};

use mcp_driver_common::network::Proxies;
use ureq::unversioned::transport::time::{Duration as UreqDuration, Instant as UreqInstant};
use ureq::unversioned::transport::{
    ConnectionDetails, Connector as UreqConnector, NextTimeout, ShutdownHandle, Transport,
};

use crate::lanes::Shared;

pub(crate) use resolve::Resolver;
pub(crate) use socket::is_timeout;
pub(crate) use tcp::is_connect;
pub(crate) use tls::HANDSHAKE_TIMED_OUT;
pub(crate) use tunnel::TunnelFailed;

use resolve::Lookup;
use slice::Slice;
use tcp::Tcp;
use tls::Tls;
use tunnel::Tunnel;

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
