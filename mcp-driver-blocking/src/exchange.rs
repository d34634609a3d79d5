//! How an HTTP exchange's failures reach the state machine: ureq's errors (the lane's client,
//! [`crate::http1`], and the connector chain report in them) mapped to its transport errors. A
//! leaf: the transport (`leg`) and the reading threads (`pump`) both use it, and it uses
//! neither; it never decides what a failure means for the operation.

use std::io;

use mcp_proto::TransportErrorKind;
use mcp_proto::driver::TransportError;

use crate::connector;

/// Maps a failure before the response head. `connect_failed` is true when the connector
/// chain (TCP, proxy, TLS) failed during this leg.
pub(crate) fn request_error(err: ureq::Error, connect_failed: bool) -> TransportError {
    use ureq::Error as E;
    if let E::Io(io) = &err {
        if let Some(tunnel) = io
            .get_ref()
            .and_then(|e| e.downcast_ref::<connector::TunnelFailed>())
        {
            return tunnel.0.clone();
        }
    }
    let kind = match &err {
        E::Rustls(tls) => {
            return TransportError::new(
                TransportErrorKind::Tls(crate::tls::problem_of(tls)),
                tls.to_string(),
            );
        }
        E::Tls(connector::HANDSHAKE_TIMED_OUT) => {
            return TransportError::new(
                TransportErrorKind::Tls(mcp_proto::TlsProblem::TimedOut),
                connector::HANDSHAKE_TIMED_OUT,
            );
        }
        E::ConnectProxyFailed(reason) => {
            return TransportError::new(TransportErrorKind::Proxy, reason.clone());
        }
        E::Timeout(_) => TransportErrorKind::TimedOut,
        E::Io(io) if connector::is_timeout(io) => TransportErrorKind::TimedOut,
        E::HostNotFound | E::ConnectionFailed | E::Pem(_) | E::TlsRequired | E::InvalidProxyUrl => {
            TransportErrorKind::Connect
        }
        E::Tls(_) => TransportErrorKind::Tls(mcp_proto::TlsProblem::Handshake),
        E::Io(io) if connector::is_connect(io) => TransportErrorKind::Connect,
        _ if connect_failed => TransportErrorKind::Connect,
        // The server answered, but not in HTTP (e.g. a header value with CR or LF in it).
        E::Protocol(_) => TransportErrorKind::Protocol,
        _ => TransportErrorKind::Io,
    };
    TransportError::new(kind, err.to_string())
}

/// Maps a failed body read (after the head arrived).
pub(crate) fn body_error(err: io::Error) -> TransportError {
    let err = ureq::Error::from(err);
    let kind = match &err {
        ureq::Error::Timeout(_) => TransportErrorKind::TimedOut,
        ureq::Error::Io(io) if connector::is_timeout(io) => TransportErrorKind::TimedOut,
        _ => TransportErrorKind::Io,
    };
    TransportError::new(kind, err.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_errors_map_to_their_kinds() {
        let kind = |err, connect| request_error(err, connect).kind;
        assert_eq!(
            kind(ureq::Error::Timeout(ureq::Timeout::Global), false),
            TransportErrorKind::TimedOut
        );
        assert_eq!(
            kind(ureq::Error::HostNotFound, false),
            TransportErrorKind::Connect
        );
        let refused = io::Error::new(io::ErrorKind::ConnectionRefused, "refused");
        assert_eq!(
            kind(ureq::Error::Io(refused), false),
            TransportErrorKind::Connect
        );
        let reset = || io::Error::new(io::ErrorKind::ConnectionReset, "reset");
        assert_eq!(
            kind(ureq::Error::Io(reset()), false),
            TransportErrorKind::Io
        );
        assert_eq!(
            kind(ureq::Error::Io(reset()), true),
            TransportErrorKind::Connect
        );
        let detail = request_error(ureq::Error::HostNotFound, false).detail;
        assert!(!detail.is_empty());
    }

    #[test]
    fn body_errors_map_to_timeout_or_io() {
        let timeout = ureq::Error::Timeout(ureq::Timeout::RecvBody).into_io();
        assert_eq!(body_error(timeout).kind, TransportErrorKind::TimedOut);
        let eof = io::Error::new(io::ErrorKind::UnexpectedEof, "Peer disconnected");
        assert_eq!(body_error(eof).kind, TransportErrorKind::Io);
    }
}
