//! Why an operation fails: every way it can end without its result, as a [`Failure`] the
//! parts return, and the typed [`Error`] it becomes once the operation names the server and
//! the request.
//!
//! The parts decide that something failed; this module only names it. Text that came from
//! elsewhere (a server's, a proxy's, a TLS library's or the OS's words) is clipped before it
//! is kept here, and never trusted to carry anything but a description.

use std::time::Duration;

use super::driving::{LegKind, TransportError, TransportErrorKind};
use crate::deadline::{Budget, format_seconds};
use crate::error::Error;
use crate::task::{TaskEra, TaskState};
use crate::tls::TlsProblem;
use mcp_auth::{AuthError, QUOTE_LIMIT, clip};

/// One way the operation fails, before it names the server and the request
/// ([`Failure::into_error`]).
#[derive(Debug)]
pub(super) enum Failure {
    /// The budget was spent before the request was sent: the leg it would have been.
    Spent { budget: Budget, leg: u32 },
    /// The request was sent and its answer did not come within `grant`.
    TimedOut(Duration),
    /// The leg, granted `grant`, failed in the transport (`None`: it ran out).
    Transport {
        grant: Duration,
        error: Option<TransportError>,
    },
    /// An HTTP status outside 2xx.
    Status(u16),
    /// The `initialize` POST refused with this status, then the GET for HTTP+SSE this.
    NoTransport { initialize: u16, sse: String },
    /// A media type that is neither JSON nor an event stream (clipped).
    ContentType(String),
    /// Not what the request's answer must be.
    Malformed(String),
    /// The answer (or one event, or one line of it) passed the body cap.
    TooLarge(usize),
    /// The server refused the request with a JSON-RPC error (its message clipped).
    JsonRpc {
        code: i64,
        message: String,
        data: Option<serde_json::Value>,
    },
    /// A session lost (a `404`, or a `400` saying so: the status) a second time in this
    /// operation, once re-established, or the session a legacy task lives in.
    SessionExpired(u16),
    /// An `initialize` answer naming a version this client does not speak.
    Version(String),
    /// A skill's file did not match its entry.
    Skill { uri: String, reason: String },
    /// The server handed back a cursor it had already given.
    RepeatedCursor(String),
    /// The page ceiling was reached with a next page still announced.
    TooManyPages(u32),
    /// The server asks for authorization and no one here can give it.
    AuthorizationRequired {
        issuer: Option<String>,
        reason: String,
    },
    /// The authorization flow failed.
    Authorization(AuthError),
    /// The local server could not be started (why, clipped).
    SpawnFailed(String),
    /// The local server exited while the request awaited its answer (its stderr clipped).
    Exited { status: Option<i32>, stderr: String },
    /// The budget ran out while the server still ran the task the call became.
    TaskRunning {
        task: Box<TaskState>,
        era: TaskEra,
        /// The legacy session it belongs to.
        session_id: Option<String>,
        budget: Budget,
        /// Whether `tasks/cancel` follows (the configuration cancels such a task).
        cancel_sent: bool,
        /// The tool whose call the task runs, when known.
        tool: Option<String>,
    },
    /// The server cancelled the task the call became (its status message, clipped).
    TaskCancelled {
        task_id: String,
        message: Option<String>,
    },
    /// The caller cancelled.
    Cancelled,
}

impl Failure {
    /// A local server that did not start: the driver's words, or its grant ran out (`None`).
    pub(super) fn spawn(error: Option<&TransportError>) -> Self {
        Self::SpawnFailed(error.map_or_else(
            || "it did not start within its grant".to_owned(),
            |e| clip(&e.detail, QUOTE_LIMIT),
        ))
    }

    /// Over HTTP+SSE: the session's event stream ended (`how`: the transport's words, when it
    /// broke) while an answer was still to come on it.
    pub(super) fn stream_closed(how: &str) -> Self {
        Self::Malformed(format!(
            "it closed the HTTP+SSE event stream, which carries every answer{how}"
        ))
    }

    /// The error on `server` for the request `method`.
    pub(super) fn into_error(self, server: String, method: &'static str) -> Error {
        match self {
            Self::Spent { budget, leg } => Error::BudgetExhausted {
                server,
                budget,
                method,
                leg,
            },
            Self::TimedOut(grant) => Error::LegTimedOut {
                server,
                method,
                grant,
            },
            Self::Transport { grant, error } => {
                transport_failure(server, method, grant, error.as_ref())
            }
            Self::Status(status) => Error::HttpStatus {
                server,
                method,
                status,
            },
            Self::NoTransport { initialize, sse } => Error::NoTransport {
                server,
                initialize,
                sse,
            },
            Self::ContentType(content_type) => Error::UnsupportedContentType {
                server,
                method,
                content_type,
            },
            Self::Malformed(detail) => Error::Malformed {
                server,
                method,
                detail,
            },
            Self::TooLarge(limit) => Error::AnswerTooLarge {
                server,
                method,
                limit,
            },
            Self::JsonRpc {
                code,
                message,
                data,
            } => Error::JsonRpc {
                server,
                method,
                code,
                message,
                data,
            },
            Self::SessionExpired(status) => Error::SessionExpired {
                server,
                method,
                status,
            },
            Self::Version(version) => Error::UnsupportedProtocolVersion { server, version },
            Self::Skill { uri, reason } => Error::SkillRejected {
                server,
                uri,
                reason,
            },
            Self::RepeatedCursor(cursor) => Error::RepeatedCursor { server, cursor },
            Self::TooManyPages(pages) => Error::TooManyPages { server, pages },
            Self::AuthorizationRequired { issuer, reason } => Error::AuthorizationRequired {
                server,
                method,
                issuer,
                reason,
            },
            Self::Authorization(error) => Error::Authorization { server, error },
            Self::SpawnFailed(reason) => Error::SpawnFailed { server, reason },
            Self::Exited { status, stderr } => Error::ServerExited {
                server,
                method,
                status,
                stderr,
            },
            Self::TaskRunning {
                task,
                era,
                session_id,
                budget,
                cancel_sent,
                tool,
            } => Error::TaskRunning {
                cancel_sent,
                task: Box::new(task.handle(&server, era, session_id, tool)),
                server,
                budget,
            },
            // The task ran the call, whichever poll found it cancelled.
            Self::TaskCancelled { task_id, message } => Error::TaskCancelled {
                server,
                method: LegKind::CallTool.request_name(),
                task_id: clip(&task_id, QUOTE_LIMIT),
                message,
            },
            Self::Cancelled => Error::Cancelled { server, method },
        }
    }
}

/// The error of the request `method` on `server` whose leg, granted `grant`, failed with
/// `error` in the transport; `None` (or a transport timeout) is that leg running out.
fn transport_failure(
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
        TransportErrorKind::ProxyTimedOut => Error::Proxy {
            server,
            method,
            reason: format!(
                "{quoted} within the {} s granted to that leg",
                format_seconds(grant)
            ),
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
