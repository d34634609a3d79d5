//! The TLS step, the last that touches the connection: the handshake for `https` targets,
//! with the client's rustls configuration (see [`crate::tls`]), inside what is left of the
//! leg's grant.
//!
//! [`Tls`] runs the handshake; a certificate refused is `ureq::Error::Rustls`, a handshake that
//! ran out of the grant (ureq's timeout, or the leg's end, which shut the socket down under
//! it) [`HANDSHAKE_TIMED_OUT`]. The connection is then a [`TlsTransport`].
//!
//! This module never decides what to trust (the configuration it is given does) nor an MCP
//! matter; it only runs the handshake and carries the bytes through it.

use std::fmt;
use std::io::{self, Read, Write};
use std::sync::Arc;

use rustls::{ClientConnection, StreamOwned};
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector as UreqConnector, Either, LazyBuffers, NextTimeout,
    Transport, TransportAdapter,
};

use super::left;
use crate::lanes::Shared;

/// The `ureq::Error::Tls` text of a TLS handshake that did not finish within the grant.
pub(crate) const HANDSHAKE_TIMED_OUT: &str = "the TLS handshake did not finish within the grant";

/// The chain step that runs the TLS handshake for `https` targets.
/// The TLS step, and the lane's state (whose leg end may cut a handshake short).
pub(super) struct Tls(
    pub(super) mcp_driver_common::tls::LazyConfig,
    pub(super) Arc<Shared>,
);

impl fmt::Debug for Tls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Tls")
    }
}

impl<In: Transport> UreqConnector<In> for Tls {
    type Out = Either<In, TlsTransport>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        let Some(transport) = chained else {
            return Ok(None);
        };
        if !details.needs_tls() || transport.is_tls() {
            return Ok(Some(Either::A(transport)));
        }
        let host = details.uri.host().unwrap_or("");
        let name = crate::tls::server_name(host)
            .ok_or(ureq::Error::Tls("the host is not a valid TLS server name"))?;
        let mut conn = ClientConnection::new(self.0.get(), name)?;
        let mut sock = TransportAdapter::new(transport.boxed(), Arc::clone(&details.current_time));
        sock.set_timeout(left(details));
        while conn.is_handshaking() {
            conn.complete_io(&mut sock)
                .map_err(|err| handshake_error(err, self.1.leg_ended()))?;
        }
        let buffers = LazyBuffers::new(
            details.config.input_buffer_size(),
            details.config.output_buffer_size(),
        );
        Ok(Some(Either::B(TlsTransport {
            buffers,
            stream: StreamOwned { conn, sock },
        })))
    }
}

/// A failed handshake: the certificate or the handshake refused (a rustls error), or the
/// grant ran out ([`HANDSHAKE_TIMED_OUT`]): ureq's timeout, or the leg's end, which shut the
/// socket down under the handshake (`leg_ended`).
fn handshake_error(err: io::Error, leg_ended: bool) -> ureq::Error {
    if leg_ended {
        return ureq::Error::Tls(HANDSHAKE_TIMED_OUT);
    }
    if err.get_ref().is_some_and(|e| e.is::<rustls::Error>()) {
        if let Some(Ok(tls)) = err.into_inner().map(|e| e.downcast::<rustls::Error>()) {
            return ureq::Error::Rustls(*tls);
        }
        return ureq::Error::Tls("the TLS handshake failed");
    }
    match ureq::Error::from(err) {
        ureq::Error::Timeout(_) => ureq::Error::Tls(HANDSHAKE_TIMED_OUT),
        ureq::Error::Io(io)
            if matches!(
                io.kind(),
                io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
            ) =>
        {
            ureq::Error::Tls(HANDSHAKE_TIMED_OUT)
        }
        other => other,
    }
}

/// A TLS connection over the chained transport.
pub(crate) struct TlsTransport {
    buffers: LazyBuffers,
    stream: StreamOwned<ClientConnection, TransportAdapter<Box<dyn Transport>>>,
}

impl fmt::Debug for TlsTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsTransport").finish_non_exhaustive()
    }
}

impl Transport for TlsTransport {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        self.stream.get_mut().set_timeout(timeout);
        self.stream.write_all(&self.buffers.output()[..amount])?;
        Ok(())
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.stream.get_mut().set_timeout(timeout);
        let input = self.buffers.input_append_buf();
        let amount = self.stream.read(input)?;
        self.buffers.input_appended(amount);
        Ok(amount > 0)
    }

    fn is_open(&mut self) -> bool {
        self.stream.get_mut().get_mut().is_open()
    }

    fn is_tls(&self) -> bool {
        true
    }
}
