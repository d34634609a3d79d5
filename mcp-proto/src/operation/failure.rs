//! What a transport failure means to the caller: the typed error for a leg the driver
//! reported failed or that ran out of its grant.
//!
//! The driver's words are quoted, clipped, and never trusted to carry anything but a
//! description: a proxy's, a TLS library's or the OS's text goes through [`clip`]. This module
//! decides nothing about the operation; it only names what happened.

use std::time::Duration;

use super::driving::{TransportError, TransportErrorKind};
use crate::deadline::format_seconds;
use crate::error::Error;
use crate::tls::TlsProblem;
use mcp_auth::{QUOTE_LIMIT, clip};

/// The error of the request `method` on `server` whose leg, granted `grant`, failed with
/// `error` in the transport; `None` (or a transport timeout) is that leg running out.
pub(super) fn transport_failure(
    server: String,
    method: &'static str,
    grant: Duration,
    error: Option<&TransportError>,
) -> Error {
    let Some(error) = error.filter(|e| e.kind != TransportErrorKind::TimedOut) else {
        return Error::LegTimedOut {
            server,
            method,
            grant,
        };
    };
    let quoted = clip(&error.detail, QUOTE_LIMIT);
    match error.kind {
        TransportErrorKind::Protocol => Error::Malformed {
            server,
            method,
            detail: format!("the HTTP answer could not be parsed: {quoted}"),
        },
        TransportErrorKind::Tls(problem) => Error::Tls {
            server,
            method,
            problem,
            detail: if problem == TlsProblem::TimedOut {
                format!("the {} s", format_seconds(grant))
            } else {
                quoted
            },
        },
        TransportErrorKind::Proxy => Error::Proxy {
            server,
            method,
            reason: quoted,
        },
        TransportErrorKind::TimedOut
        | TransportErrorKind::Connect
        | TransportErrorKind::Io
        | TransportErrorKind::Declined => Error::Unreachable {
            server,
            method,
            reason: quoted,
        },
    }
}
