//! Errors, split by who is at fault.
//!
//! * **The budget ran out** ([`Error::BudgetExhausted`]): neither side's fault. The leg was
//!   refused before it was built, so the server was not asked.
//! * **The server or the path to it failed**: leg timed out, unreachable, HTTP status,
//!   unsupported content type, malformed answer, JSON-RPC error, answer too large, session
//!   expired beyond recovery, unsupported protocol version, a tool listing that does not end.
//! * **The authorization server** (an OAuth flow's issuer, often another host than the MCP
//!   server): its metadata, registration or token endpoint refused or broke the rules.
//! * **The caller**: an unusable URL or header, an operation polled after it finished; and
//!   cancellation, which the caller asked for.
//!
//! [`Error::fault`] says which, as a [`Fault`], so a caller can act on it (retry later, fix
//! the configuration, raise the budget) without matching every variant.
//!
//! Every message names the server by its label (default: host and port of its URL). Text that
//! came from the server is quoted through [`clip`](mcp_auth::clip): control characters folded to a space, at
//! most 200 characters, so a hostile server cannot flood a log line or forge one.

mod fault;

use std::time::Duration;

pub use fault::Fault;

use crate::deadline::{Budget, format_seconds};
use crate::model::ProtocolVersion;
use crate::task::TaskHandle;
use crate::tls::{TlsProblem, tls_message};

/// Everything that can end an operation without its result.
///
/// A tool that answers `isError: true` is **not** an error: it is a
/// [`CallToolResult`](crate::CallToolResult) with `is_error` set.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The operation's budget was spent before a leg could be sent; that leg was never sent.
    #[error(
        "The {budget} operation budget for MCP server \"{server}\" ran out before the {method} request was sent, so the server was not asked. This is the budget the caller set, not a server that did not answer."
    )]
    BudgetExhausted {
        /// The server's label.
        server: String,
        /// The operation's budget (after raising to the floor).
        budget: Budget,
        /// The request of the refused leg: its JSON-RPC method (`DELETE` for a close).
        method: &'static str,
        /// The refused leg's number within the operation (1-based).
        leg: u32,
    },
    /// A leg did not finish within its grant.
    #[error(
        "MCP server \"{server}\" did not finish answering {method} within the {} s granted to that leg",
        format_seconds(*grant)
    )]
    LegTimedOut {
        /// The server's label.
        server: String,
        /// The request the failure is about: the JSON-RPC method whose answer was awaited
        /// (`DELETE` for a close).
        method: &'static str,
        /// The leg's grant.
        grant: Duration,
    },
    /// The connection could not be made or broke.
    #[error("MCP server \"{server}\" could not be reached: {reason}")]
    Unreachable {
        /// The server's label.
        server: String,
        /// The request the failure is about: the JSON-RPC method whose answer was awaited
        /// (`DELETE` for a close).
        method: &'static str,
        /// The transport's reason, clipped.
        reason: String,
    },
    /// The TLS handshake with the server failed: its certificate is not trusted here (unknown
    /// issuer, expired, another name, revoked), the handshake broke, or it did not finish
    /// within the leg's grant. The message says what to do about it, in the same words from
    /// both drivers.
    #[error("{}", tls_message(server, method, *problem, detail))]
    Tls {
        /// The server's label.
        server: String,
        /// The request the failure is about.
        method: &'static str,
        /// What was wrong.
        problem: TlsProblem,
        /// The TLS library's words (clipped; for a timeout, the grant).
        detail: String,
    },
    /// The proxy that carries requests to the server could not be reached, or refused or
    /// broke the tunnel. The reason names the proxy without its credentials.
    #[error(
        "MCP server \"{server}\" could not be reached through a proxy: {reason}; check the proxy settings (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY, NO_PROXY, or the driver's Network)"
    )]
    Proxy {
        /// The server's label.
        server: String,
        /// The request the failure is about.
        method: &'static str,
        /// What the proxy did, clipped.
        reason: String,
    },
    /// The CAs the caller added cannot be used: a file that cannot be read, or PEM text with
    /// no certificate in it.
    #[error("the CA certificates in {source_name} cannot be used: {reason}")]
    InvalidCertificates {
        /// The file, or `added PEM`.
        source_name: String,
        /// Why.
        reason: String,
    },
    /// The server answered with a status outside 2xx. Redirects are not followed.
    #[error("MCP server \"{server}\" answered {method} with HTTP status {status}")]
    HttpStatus {
        /// The server's label.
        server: String,
        /// The request the failure is about: the JSON-RPC method whose answer was awaited
        /// (`DELETE` for a close).
        method: &'static str,
        /// The status code.
        status: u16,
    },
    /// The URL speaks neither transport over HTTP: its `initialize` POST was refused as
    /// the spec's fallback names (`400`, `404` or `405` without a modern JSON-RPC error), and
    /// the GET tried next for the HTTP+SSE transport did not open an event stream either.
    #[error(
        "MCP server \"{server}\" speaks neither Streamable HTTP nor HTTP+SSE at its URL: initialize was answered with HTTP status {initialize}, and the GET for an event stream {sse}"
    )]
    NoTransport {
        /// The server's label.
        server: String,
        /// The status the `initialize` POST was answered with.
        initialize: u16,
        /// What the GET got: `was answered with HTTP status 404`, `was answered with content
        /// type "text/html"` (clipped).
        sse: String,
    },
    /// The answer was neither JSON nor an event stream.
    #[error(
        "MCP server \"{server}\" answered {method} with content type \"{content_type}\"; only JSON or an event stream is read"
    )]
    UnsupportedContentType {
        /// The server's label.
        server: String,
        /// The request the failure is about: the JSON-RPC method whose answer was awaited
        /// (`DELETE` for a close).
        method: &'static str,
        /// The media type, clipped.
        content_type: String,
    },
    /// The answer could not be read as the JSON-RPC response it should be.
    #[error(
        "MCP server \"{server}\" answered {method} with something that is not a JSON-RPC result: {detail}"
    )]
    Malformed {
        /// The server's label.
        server: String,
        /// The request the failure is about: the JSON-RPC method whose answer was awaited
        /// (`DELETE` for a close).
        method: &'static str,
        /// What was wrong, with any quoted server text clipped.
        detail: String,
    },
    /// The server refused the request with a JSON-RPC error object.
    #[error("MCP server \"{server}\" refused {method} with JSON-RPC error {code}: {message}")]
    JsonRpc {
        /// The server's label.
        server: String,
        /// The request the failure is about: the JSON-RPC method whose answer was awaited
        /// (`DELETE` for a close).
        method: &'static str,
        /// The error code (0 when the server sent none or a non-integer).
        code: i64,
        /// The error message, clipped.
        message: String,
        /// The error's `data`, verbatim.
        data: Option<serde_json::Value>,
    },
    /// The answer (or one event of it) was larger than the configured cap; reading stopped there.
    #[error(
        "MCP server \"{server}\" sent an answer to {method} larger than the {limit}-byte cap; reading stopped at the cap"
    )]
    AnswerTooLarge {
        /// The server's label.
        server: String,
        /// The request the failure is about: the JSON-RPC method whose answer was awaited
        /// (`DELETE` for a close).
        method: &'static str,
        /// The cap in bytes.
        limit: usize,
    },
    /// The server said the session is gone (a `404`, or a `400` whose body says so) after it
    /// was re-established for this operation, or of the session a task lives in.
    #[error(
        "MCP server \"{server}\" answered {method} with {status}: the session is gone (lost again after it was re-established for this operation, or the one a task lives in) and cannot be recovered"
    )]
    SessionExpired {
        /// The server's label.
        server: String,
        /// The request the failure is about: the JSON-RPC method whose answer was awaited
        /// (`DELETE` for a close).
        method: &'static str,
        /// The status that said so: `404`, or `400` with a body that says the session is
        /// missing, unknown or invalid.
        status: u16,
    },
    /// The server chose a protocol version this client does not speak.
    #[error(
        "MCP server \"{server}\" chose protocol version \"{version}\", which this client does not support (it supports {})",
        ProtocolVersion::supported_list()
    )]
    UnsupportedProtocolVersion {
        /// The server's label.
        server: String,
        /// The version the server chose, clipped.
        version: String,
    },
    /// The tool listing still had a next page after the page ceiling.
    #[error("a listing of MCP server \"{server}\" did not end within {pages} pages")]
    TooManyPages {
        /// The server's label.
        server: String,
        /// The page ceiling.
        pages: u32,
    },
    /// The server handed back a cursor it had already given in this walk.
    #[error(
        "MCP server \"{server}\" repeated the listing cursor \"{cursor}\"; the walk stopped rather than loop"
    )]
    RepeatedCursor {
        /// The server's label.
        server: String,
        /// The repeated cursor, clipped.
        cursor: String,
    },
    /// A file of a skill did not match what the skill's listing says of it (its size, its
    /// digest, or for `SKILL.md` its frontmatter): the skill is not loaded and no further file
    /// of it is read.
    #[error(
        "MCP server \"{server}\" served the skill file \"{uri}\", which fails verification: {reason}"
    )]
    SkillRejected {
        /// The server's label.
        server: String,
        /// The file's URI, clipped.
        uri: String,
        /// What does not match, in one sentence.
        reason: String,
    },
    /// The tool's result breaks the promise of its `outputSchema` (checked as
    /// [`SessionConfig::with_output_validation`](crate::SessionConfig::with_output_validation)
    /// says): no `structuredContent`, one that does not match, or a schema that cannot be
    /// used. The call itself completed: the result, unchecked, is in `result`.
    #[error(
        "MCP server \"{server}\" answered the call of tool \"{tool}\" with a result that {problem}"
    )]
    OutputInvalid {
        /// The server's label.
        server: String,
        /// The tool's name, clipped.
        tool: String,
        /// What breaks the promise: where, which rule.
        problem: Box<crate::schema::OutputProblem>,
        /// The result as the server sent it, for a caller that wants it anyway.
        result: Box<crate::model::CallToolResult>,
    },
    /// A tool's result could not be read as the caller's type (a driver's `call_tool_as`).
    /// The call itself completed: the result is in `result`.
    #[error(
        "the result of tool \"{tool}\" of MCP server \"{server}\" cannot be read as {type_name}: {reason}"
    )]
    UnreadableResult {
        /// The server's label.
        server: String,
        /// The tool's name, clipped.
        tool: String,
        /// The Rust type asked for (`std::any::type_name`).
        type_name: &'static str,
        /// Why not.
        reason: crate::model::Unreadable,
        /// The result as the server sent it.
        result: Box<crate::model::CallToolResult>,
    },
    /// The server asks for authorization (a 401) and none can be given here: no OAuth is
    /// configured, or the flow reached the step that needs a person and the caller has no
    /// authorizer. The operation ended at once: no budget was spent waiting for anyone.
    #[error(
        "MCP server \"{server}\" requires authorization for {method}{}, and no one here can authorize: {reason}",
        issuer.as_deref().map(|i| format!(" at \"{i}\"")).unwrap_or_default()
    )]
    AuthorizationRequired {
        /// The server's label.
        server: String,
        /// The request the server refused.
        method: &'static str,
        /// The authorization server the person would approve at, once it is known.
        issuer: Option<String>,
        /// What is missing: no OAuth configured, no authorizer for the browser step, an
        /// authorizer that failed (its own words, clipped), or the budget ran out waiting.
        reason: String,
    },
    /// The authorization the server asked for did not end with a token: discovery,
    /// registration, the authorization itself or the token endpoint failed. The error names
    /// the endpoint and, where one answered, what it said (clipped); it never holds a
    /// credential.
    #[error("authorization for MCP server \"{server}\" failed: {error}")]
    Authorization {
        /// The server's label.
        server: String,
        /// What the authorization flow reports.
        error: mcp_auth::AuthError,
    },
    /// The local server (stdio) could not be started: the program is missing, not
    /// executable, or the working directory does not exist.
    #[error("the local MCP server \"{server}\" could not be started: {reason}")]
    SpawnFailed {
        /// The server's label (`stdio:<program>`).
        server: String,
        /// Why, as the operating system said it (clipped).
        reason: String,
    },
    /// The local server (stdio) exited, or closed its stdout, while a request awaited its
    /// answer. The next operation starts it again.
    #[error(
        "the local MCP server \"{server}\" exited while {method} awaited its answer ({}){}",
        status.map_or_else(|| "no exit status".to_owned(), |s| format!("exit status {s}")),
        if stderr.is_empty() { String::new() } else { format!("; its last words on stderr: {stderr}") }
    )]
    ServerExited {
        /// The server's label.
        server: String,
        /// The request that awaited its answer.
        method: &'static str,
        /// The exit status, when the process exited normally.
        status: Option<i32>,
        /// The last lines the server wrote on stderr (clipped, controls folded).
        stderr: String,
    },
    /// The budget ran out while the server still ran the task the tool call became: the
    /// task goes on, the operation does not. [`Error::task`] hands the task back, to look at
    /// again under a new budget or to cancel.
    #[error(
        "The {budget} operation budget for MCP server \"{server}\" ran out while its task \"{}\" was {}; {}",
        mcp_auth::clip(&task.task_id, mcp_auth::QUOTE_LIMIT),
        task.status,
        if *cancel_sent {
            "it was asked to cancel (tasks/cancel), as configured"
        } else {
            "the task keeps running on the server: look at it again under a new budget, or cancel it"
        }
    )]
    TaskRunning {
        /// The server's label.
        server: String,
        /// The budget that ran out.
        budget: Budget,
        /// The task, as the server last described it.
        task: Box<TaskHandle>,
        /// Whether `tasks/cancel` was sent for it before the budget's end
        /// ([`SessionConfig::with_cancel_spent_tasks`](crate::SessionConfig::with_cancel_spent_tasks));
        /// cancelling is cooperative, so the task may still end otherwise.
        cancel_sent: bool,
    },
    /// The task the tool call became was cancelled on the server before it was done.
    #[error("MCP server \"{server}\" cancelled the task \"{task_id}\" of the {method} request{}", reason_suffix(message.as_deref()))]
    TaskCancelled {
        /// The server's label.
        server: String,
        /// The request the task ran.
        method: &'static str,
        /// The server's id of the task (clipped).
        task_id: String,
        /// The server's status message, if any (clipped).
        message: Option<String>,
    },
    /// The caller cancelled the operation.
    #[error("the {method} request to MCP server \"{server}\" was cancelled by the caller")]
    Cancelled {
        /// The server's label.
        server: String,
        /// The JSON-RPC method of the leg in flight or next to be sent.
        method: &'static str,
    },
    /// The server URL given by the caller cannot be used.
    #[error("the MCP server URL \"{url}\" cannot be used: {reason}")]
    InvalidUrl {
        /// The URL, clipped.
        url: String,
        /// Why.
        reason: &'static str,
    },
    /// An extra header given by the caller cannot be sent.
    #[error("the request header \"{name}\" cannot be used: {reason}")]
    InvalidHeader {
        /// The header name, clipped.
        name: String,
        /// Why.
        reason: &'static str,
    },
    /// The operation was polled after it had already returned its result.
    #[error("the operation already returned its result")]
    AlreadyFinished,
}

/// `: <reason>` when the server gave one, else nothing.
fn reason_suffix(reason: Option<&str>) -> String {
    reason.map_or_else(String::new, |reason| format!(": {reason}"))
}

impl Error {
    /// The error's kind in `snake_case` (`budget_exhausted`, `leg_timed_out`, `http_status`,
    /// ...), stable for scripts: the variant's name.
    pub const fn kind(&self) -> &'static str {
        match self {
            Self::BudgetExhausted { .. } => "budget_exhausted",
            Self::LegTimedOut { .. } => "leg_timed_out",
            Self::Unreachable { .. } => "unreachable",
            Self::Tls { .. } => "tls",
            Self::Proxy { .. } => "proxy",
            Self::InvalidCertificates { .. } => "invalid_certificates",
            Self::HttpStatus { .. } => "http_status",
            Self::NoTransport { .. } => "no_transport",
            Self::UnsupportedContentType { .. } => "unsupported_content_type",
            Self::Malformed { .. } => "malformed",
            Self::JsonRpc { .. } => "json_rpc",
            Self::AnswerTooLarge { .. } => "answer_too_large",
            Self::SessionExpired { .. } => "session_expired",
            Self::UnsupportedProtocolVersion { .. } => "unsupported_protocol_version",
            Self::TooManyPages { .. } => "too_many_pages",
            Self::RepeatedCursor { .. } => "repeated_cursor",
            Self::SkillRejected { .. } => "skill_rejected",
            Self::OutputInvalid { .. } => "output_invalid",
            Self::UnreadableResult { .. } => "unreadable_result",
            Self::SpawnFailed { .. } => "spawn_failed",
            Self::ServerExited { .. } => "server_exited",
            Self::AuthorizationRequired { .. } => "authorization_required",
            Self::Authorization { .. } => "authorization",
            Self::Cancelled { .. } => "cancelled",
            Self::TaskRunning { .. } => "task_running",
            Self::TaskCancelled { .. } => "task_cancelled",
            Self::InvalidUrl { .. } => "invalid_url",
            Self::InvalidHeader { .. } => "invalid_header",
            Self::AlreadyFinished => "already_finished",
        }
    }

    /// The task still running on the server when the budget ran out
    /// ([`Error::TaskRunning`]): keep it to look at the task again, or to cancel it.
    pub fn task(&self) -> Option<&TaskHandle> {
        match self {
            Self::TaskRunning { task, .. } => Some(task),
            _ => None,
        }
    }

    /// The label of the server the error is about, when it is about one.
    pub fn server(&self) -> Option<&str> {
        match self {
            Self::BudgetExhausted { server, .. }
            | Self::LegTimedOut { server, .. }
            | Self::Unreachable { server, .. }
            | Self::Tls { server, .. }
            | Self::Proxy { server, .. }
            | Self::HttpStatus { server, .. }
            | Self::NoTransport { server, .. }
            | Self::UnsupportedContentType { server, .. }
            | Self::Malformed { server, .. }
            | Self::JsonRpc { server, .. }
            | Self::AnswerTooLarge { server, .. }
            | Self::SessionExpired { server, .. }
            | Self::UnsupportedProtocolVersion { server, .. }
            | Self::TooManyPages { server, .. }
            | Self::RepeatedCursor { server, .. }
            | Self::SkillRejected { server, .. }
            | Self::OutputInvalid { server, .. }
            | Self::UnreadableResult { server, .. }
            | Self::AuthorizationRequired { server, .. }
            | Self::SpawnFailed { server, .. }
            | Self::ServerExited { server, .. }
            | Self::Authorization { server, .. }
            | Self::TaskRunning { server, .. }
            | Self::TaskCancelled { server, .. }
            | Self::Cancelled { server, .. } => Some(server),
            Self::InvalidUrl { .. }
            | Self::InvalidHeader { .. }
            | Self::InvalidCertificates { .. }
            | Self::AlreadyFinished => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_message_says_the_server_was_not_asked() {
        let err = Error::BudgetExhausted {
            server: "example.org:443".into(),
            budget: Budget::DEFAULT,
            method: "tools/call",
            leg: 3,
        };
        let text = err.to_string();
        assert!(
            text.starts_with("The 20-second operation budget for MCP server \"example.org:443\"")
        );
        assert!(text.contains("so the server was not asked"));
        assert!(text.contains("not a server that did not answer"));
        assert!(!text.to_lowercase().contains("cancel"));
    }

    #[test]
    fn a_running_task_s_id_is_quoted_clipped_and_handed_back_verbatim() {
        // A server's task id is server text: the message folds its control characters and
        // clips it, and the handle keeps it exactly as the server gave it (it is polled by it).
        let id = format!(
            " t\u{e2}che\t1\n[fake] log line\u{1b}[31m {}",
            "x".repeat(300)
        );
        let mut task = TaskHandle::new("example.org:443", id.clone(), crate::task::TaskEra::Modern);
        task.status_message = Some("working".into());
        let err = Error::TaskRunning {
            server: "example.org:443".into(),
            budget: Budget::from_secs(2),
            task: Box::new(task),
            cancel_sent: false,
        };
        let text = err.to_string();
        assert!(!text.chars().any(char::is_control), "{text:?}");
        assert!(
            text.contains("its task \"t\u{e2}che 1 [fake] log line [31m x"),
            "{text}"
        );
        assert!(text.chars().count() < 500, "{text}");
        assert_eq!(
            err.task().map(|task| task.task_id.as_str()),
            Some(id.as_str())
        );
    }
}
