//! Who is at fault when an operation fails: [`Fault`], and [`Error::fault`], each error's
//! answer to it. A caller acts on the fault (retry later, fix the configuration, raise the
//! budget) without matching every variant.
//!
//! A table, nothing more: deciding the fault never looks at anything but the error.

use super::Error;

/// Who or what is at fault when an operation fails (h11's split of local from remote).
///
/// Deliberately exhaustive: a caller's `match` on it (an exit code, a retry policy) covers
/// every case, and a new kind of fault would be a breaking change that makes it say so.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fault {
    /// The operation's budget ran out before a leg could be sent: the server was not asked.
    Budget,
    /// The path to the server: it could not be reached, or a leg did not finish within its
    /// grant.
    Network,
    /// The server answered, but not with what the protocol asks for (a status, a malformed
    /// or oversized answer, a JSON-RPC error, a listing that does not end...), or its own
    /// authorization metadata or challenges break the rules.
    Server,
    /// The authorization server (the OAuth issuer the MCP server names) refused or broke the
    /// rules: its metadata is missing or wrong, registration failed, the token endpoint
    /// refused the grant or answered something that is not a token. The MCP server itself
    /// may be fine: look at the issuer's configuration and the client's credentials there.
    AuthorizationServer,
    /// The caller's input cannot be used (a URL, a header) or the API was misused.
    Caller,
    /// The caller cancelled the operation.
    Cancelled,
    /// Authorization is needed and was not given: no one here could authorize, or the person
    /// declined. Log in (or configure an authorizer) and try again.
    Authorization,
}

impl Fault {
    /// One lower-case word, stable for scripts and traces: `budget`, `network`, `server`,
    /// `authorization_server`, `caller`, `cancelled`, `authorization`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Budget => "budget",
            Self::Network => "network",
            Self::Server => "server",
            Self::AuthorizationServer => "authorization_server",
            Self::Caller => "caller",
            Self::Cancelled => "cancelled",
            Self::Authorization => "authorization",
        }
    }
}

impl Error {
    /// Who or what is at fault.
    ///
    /// ```
    /// use mcp_proto::{Error, Fault};
    /// let err = Error::HttpStatus { server: "s:80".into(), method: "tools/call", status: 503 };
    /// assert_eq!(err.fault(), Fault::Server);
    /// ```
    pub fn fault(&self) -> Fault {
        match self {
            // A result whose check did not fit in what was left: the budget's end, not the
            // server's fault.
            Self::OutputInvalid { problem, .. }
                if matches!(**problem, crate::schema::OutputProblem::Unchecked { .. }) =>
            {
                Fault::Budget
            }
            Self::BudgetExhausted { .. } | Self::TaskRunning { .. } => Fault::Budget,
            Self::TaskCancelled { .. } => Fault::Server,
            Self::LegTimedOut { .. }
            | Self::Unreachable { .. }
            | Self::Tls { .. }
            | Self::Proxy { .. } => Fault::Network,
            Self::HttpStatus { .. }
            | Self::NoTransport { .. }
            | Self::UnsupportedContentType { .. }
            | Self::Malformed { .. }
            | Self::JsonRpc { .. }
            | Self::AnswerTooLarge { .. }
            | Self::SessionExpired { .. }
            | Self::UnsupportedProtocolVersion { .. }
            | Self::TooManyPages { .. }
            | Self::RepeatedCursor { .. }
            | Self::SkillRejected { .. }
            | Self::OutputInvalid { .. } => Fault::Server,
            // The caller's type and the result disagree: whose fault depends on which is right;
            // a tool that failed, or sent nothing structured, is the server's.
            Self::UnreadableResult { reason, .. } => match reason {
                crate::model::Unreadable::Type(_) => Fault::Caller,
                _ => Fault::Server,
            },
            Self::ServerExited { .. } => Fault::Server,
            Self::SpawnFailed { .. } => Fault::Caller,
            Self::AuthorizationRequired { .. } => Fault::Authorization,
            Self::Authorization { error, .. } => match error.fault() {
                mcp_auth::Fault::Caller => Fault::Caller,
                mcp_auth::Fault::User => Fault::Authorization,
                mcp_auth::Fault::Server => Fault::Server,
                mcp_auth::Fault::AuthorizationServer => Fault::AuthorizationServer,
                // A kind of fault this crate does not know yet: the authorization's.
                _ => Fault::Authorization,
            },
            Self::Cancelled { .. } => Fault::Cancelled,
            Self::InvalidUrl { .. }
            | Self::InvalidHeader { .. }
            | Self::InvalidCertificates { .. }
            | Self::AlreadyFinished => Fault::Caller,
        }
    }
}
