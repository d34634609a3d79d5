//! Which request a leg carries ([`LegKind`]): every kind of leg an operation hands out, what
//! a driver must do with each (the stdio steps, the notices), and the names traces and errors
//! give them.
//!
//! Plain data. Nothing here decides anything.

use crate::catalog::ListKind;

/// Which request a leg carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LegKind {
    /// `initialize`.
    Initialize,
    /// `notifications/initialized`.
    Initialized,
    /// `ping` (a probe on a live session).
    Ping,
    /// `logging/setLevel` (legacy era), after the handshake, when a log level is configured.
    SetLogLevel,
    /// `server/discover` (a probe in the modern era).
    Discover,
    /// One page of a listing.
    List {
        /// Which listing.
        of: ListKind,
        /// The page number (1-based).
        page: u32,
    },
    /// `tools/call`.
    CallTool,
    /// One request of the table of one-request methods ([`crate::request`]), or one file of a
    /// skill being loaded (a resource read).
    Request(&'static crate::request::Method),
    /// `tasks/get`: one look at the task a `tools/call` became (or the task an operation
    /// resumes), under the operation's budget.
    TaskGet,
    /// `tasks/result` (2025-11-25): the result of a task a poll found over, or waiting for
    /// input (the server's requests come on its answer's stream); the server answers it once
    /// the task is over.
    TaskResult,
    /// `tasks/update` (2026-07-28): the caller's answers to a task's requests for input
    /// (`inputResponses`, by key); the task is polled again after its acknowledgement.
    TaskUpdate,
    /// `tasks/cancel` as an operation's own work (the caller cancels a task it was handed
    /// back): its answer is read, and ends the operation.
    TaskCancel,
    /// `subscriptions/listen` (modern era), or the session's GET stream (legacy era), read
    /// until the budget or the server ends it.
    Subscribe,
    /// `resources/subscribe` (legacy era): one of the resources a subscription asks updates
    /// for, before its stream opens (the modern era names them in `subscriptions/listen`).
    /// The server's subscription lasts the session; closing the session ends it.
    ResourceSubscribe {
        /// Which of the subscription's resources (1-based).
        resource: u32,
    },
    /// A POST answering a request the server sent on a stream.
    Respond,
    /// A GET resuming a stream the server closed before the answer (`Last-Event-ID`).
    Resume,
    /// A DELETE ending the session.
    Close,
    /// A best-effort `notifications/cancelled` after the caller cancelled a `tools/call` (or,
    /// over stdio, after its grant ran out). Over stdio, write it **only if the server's stdin
    /// takes the whole line at once**, never waiting for room in the pipe (the line is short
    /// enough for a pipe to take all of it or none), then report it sent
    /// ([`Input::Sent`](crate::driver::Input::Sent)); when the pipe is full,
    /// report it declined ([`TransportErrorKind::Declined`](crate::TransportErrorKind::Declined)). A server that stopped reading
    /// must not hold the end of an operation.
    CancelNotice,
    /// `tasks/cancel` after the caller cancelled a call the server runs as a task (never
    /// `notifications/cancelled`: the extension forbids it for a task), under the cancel
    /// notice's grant; the operation's result follows its response's head.
    TaskCancelNotice,
    /// A GET opening the session's standalone stream, read beside the other legs (see
    /// [`SessionConfig::with_listen`](crate::SessionConfig::with_listen)).
    Listen,
    /// Over HTTP+SSE: the GET that opens the session's event stream. Send it and feed its
    /// head; when the operation answers [`LegStatus::ReadMore`](crate::driver::LegStatus),
    /// its body **is the session's stream**: feed every byte of it as
    /// [`Input::Events`](crate::driver::Input::Events) (never as `Input::Chunk`) and its end
    /// or failure as [`Input::EventsEnded`](crate::driver::Input::EventsEnded), to whichever
    /// operation runs on the session, across operations, until a [`LegKind::Hangup`], another
    /// `Events` leg (which replaces it) or the client's end. Read it beside the other legs: its
    /// first event names where every message is POSTed, and
    /// every answer and request of the server comes on it. The leg itself is over when the
    /// stream named its endpoint (or failed first). Operations on an HTTP+SSE session take
    /// turns, as over stdio: one reads the stream at a time.
    Events,
    /// Over HTTP+SSE: drop the session's event stream (close its connection: that ends the
    /// server's session), the close of an HTTP+SSE session; no request, no wait. Drop it and
    /// report [`Input::EventsEnded`](crate::driver::Input::EventsEnded).
    Hangup,
    /// Over stdio: start the server process (the session's [`StdioCommand`]); no message.
    ///
    /// [`StdioCommand`]: crate::StdioCommand
    Spawn,
    /// Over stdio: close the server's stdin, the first step of a close; no message. Close
    /// it, report [`Input::Sent`](crate::driver::Input::Sent), and read stdout on: the process's exit
    /// ([`Input::Exit`](crate::driver::Input::Exit)) ends the close. The operation waits half the leg's grant for it,
    /// then hands out [`LegKind::Terminate`], then, at the grant's end, [`LegKind::Kill`].
    Shutdown,
    /// Over stdio: send the server process SIGTERM (elsewhere nothing: the kill that follows
    /// ends it), the second step of a close; no message, no wait. Send it, report
    /// [`Input::Sent`](crate::driver::Input::Sent), and read stdout on until the process exits.
    Terminate,
    /// Over stdio: end the server process **at once**: close its stdin, SIGKILL it, reap it,
    /// and report [`Input::Exit`](crate::driver::Input::Exit); no message, no
    /// wait. Handed out when nothing may wait any more: a close after the budget was spent,
    /// and a process whose stdin holds part of a message (a write that ran out of its grant,
    /// or was cancelled, leaves a line no later message can follow).
    Kill,
    /// A request of an authorization the server asked for (resource metadata, server
    /// metadata, registration, token, refresh), to the endpoint the flow chose. Its label is
    /// the flow's (`oauth:token`, ...).
    Auth(mcp_auth::AuthRequestKind),
}

impl LegKind {
    /// The JSON-RPC method the leg carries, `None` for legs that carry none (an answer to a
    /// server request, a GET, a DELETE).
    pub const fn method(self) -> Option<&'static str> {
        match self {
            Self::Initialize => Some("initialize"),
            Self::Initialized => Some("notifications/initialized"),
            Self::Ping => Some("ping"),
            Self::SetLogLevel => Some("logging/setLevel"),
            Self::Discover => Some("server/discover"),
            Self::List { of, .. } => Some(of.method()),
            Self::CallTool => Some("tools/call"),
            Self::Request(method) => Some(method.name),
            Self::TaskGet => Some("tasks/get"),
            Self::TaskResult => Some("tasks/result"),
            Self::TaskUpdate => Some("tasks/update"),
            Self::TaskCancel | Self::TaskCancelNotice => Some("tasks/cancel"),
            Self::Subscribe => Some("subscriptions/listen"),
            Self::ResourceSubscribe { .. } => Some("resources/subscribe"),
            Self::CancelNotice => Some("notifications/cancelled"),
            Self::Respond
            | Self::Resume
            | Self::Close
            | Self::Listen
            | Self::Events
            | Self::Hangup
            | Self::Spawn
            | Self::Shutdown
            | Self::Terminate
            | Self::Kill
            | Self::Auth(_) => None,
        }
    }

    /// One word for traces: the JSON-RPC method, or what the leg does: `response`, `resume`
    /// (GET), `close` (DELETE), `listen` (GET) or `sse` (the HTTP+SSE stream's GET).
    pub const fn label(self) -> &'static str {
        match self {
            Self::Respond => "response",
            Self::Resume => "resume",
            Self::Close => "close",
            Self::Listen => "listen",
            Self::Events => "sse",
            Self::Hangup => "hangup",
            Self::Spawn => "spawn",
            Self::Shutdown => "shutdown",
            Self::Terminate => "terminate",
            Self::Kill => "kill",
            Self::Auth(kind) => kind.label(),
            other => match other.method() {
                Some(method) => method,
                None => "leg",
            },
        }
    }

    /// Whether the leg's request is about a task (`params.taskId`; over HTTP in the modern
    /// era, also the `Mcp-Name` header).
    pub(crate) const fn is_about_task(self) -> bool {
        matches!(
            self,
            Self::TaskGet
                | Self::TaskResult
                | Self::TaskUpdate
                | Self::TaskCancel
                | Self::TaskCancelNotice
        )
    }

    /// What an error about this leg names as its request: the JSON-RPC method, or the HTTP
    /// method for a leg that carries none.
    pub(crate) const fn request_name(self) -> &'static str {
        match self {
            Self::Close => "DELETE",
            Self::Resume | Self::Listen => "GET",
            Self::Events => "GET (the HTTP+SSE event stream)",
            Self::Hangup => "hangup",
            Self::Respond => "POST",
            Self::Spawn => "spawn",
            Self::Shutdown => "shutdown",
            Self::Terminate => "terminate",
            Self::Kill => "kill",
            Self::Auth(kind) => kind.label(),
            other => match other.method() {
                Some(method) => method,
                None => "request",
            },
        }
    }
}
