//! A sans-IO MCP client: one deadline per operation, spent across its legs.
//!
//! An MCP operation is not one HTTP request. A tool call is three *legs* (`initialize`,
//! `notifications/initialized`, `tools/call`); a catalogue walk is up to 52. A timeout per
//! request turns "a tool call fails within 20 s" into 45 s. This crate gives each operation
//! **one budget**: it is opened once, every leg is granted only what is left of it (rounded up
//! to the [`Resolution`], never zero), and a spent budget ends the operation with
//! [`Error::BudgetExhausted`] before anything more is sent.
//!
//! # In scope
//! * The budget arithmetic ([`Budget`], [`Resolution`], [`OperationDeadline`]) and the
//!   [`Clock`] seam ([`MonotonicClock`], [`ManualClock`]).
//! * The Streamable HTTP client side of MCP as a state machine ([`Session`],
//!   [`Operation`](driver::Operation)): request intents with their grants out, response heads
//!   and body chunks in, each input naming its leg ([`LegId`](driver::LegId)).
//! * Reading answers: JSON or an event stream ([`sse`]), checked ids, a body cap, typed
//!   [`Error`]s that name the server and say whose fault they are ([`Fault`]).
//! * Every decision of the transport: re-initialising an expired session, resuming a closed
//!   stream, answering the server's requests, the standalone stream, the cancel notice, how
//!   long a driver may drain a body after its answer ([`DRAIN_WAIT`](driver::DRAIN_WAIT),
//!   [`DRAIN_BYTES`](driver::DRAIN_BYTES)).
//! * Tasks, both eras ([`SessionConfig::with_tasks`]): a tool call the server runs as a task
//!   is polled inside the same budget; one still running when the budget ends is handed back
//!   ([`Error::TaskRunning`], [`TaskHandle`]) to resume ([`Session::resume_task`]) or cancel
//!   ([`Session::cancel_task`]) under a new budget, and a cancelled call cancels its task.
//!
//! * Authorization ([`OAuth`], run by `mcp-auth`, re-exported as [`mcp_auth`]): a 401 starts an
//!   OAuth flow whose every request is a leg of the same operation, under the same budget; the
//!   step that needs a person is [`Output::Authorize`](driver::Output::Authorize); the token
//!   goes on every later request.
//!
//! # Out of scope
//! * Sockets, TLS, threads, timers, async runtimes: the drivers (`mcp-driver-blocking`,
//!   `mcp-driver-tokio`) do the I/O. This crate never reads a clock: time is an argument.
//! * Connection policy (which proxy, the `CONNECT` exchange, the CAs added to the system's):
//!   `mcp-driver-common`'s `network`, shared by both drivers. This crate only words what they
//!   report of it ([`Error::Tls`] with its [`TlsProblem`], [`Error::Proxy`]).
//! * Retries and backoff: a budget says when to stop waiting, not when to call again.
//!
//! # The architecture, by module
//!
//! | module        | what it is                                                            |
//! |---------------|-----------------------------------------------------------------------|
//! | `clock`       | the [`Clock`] seam                                                    |
//! | `deadline`    | [`Budget`], [`Resolution`], [`OperationDeadline`]: the arithmetic     |
//! | `auth`        | [`OAuth`]: how a session authorizes when its server asks              |
//! | `config`      | [`SessionConfig`]: what a session knows before it talks               |
//! | `session`     | [`Session`]: what operations established, shared by those in flight   |
//! | `operation`   | the state machine, split by concern in its own folder                 |
//! | [`driver`]    | what drivers exchange with it: [`Operation`](driver::Operation), its outputs and inputs |
//! | `wire`        | request bytes and headers, session-id checks                          |
//! | `headers`     | `x-mcp-header` annotations mirrored as `Mcp-Param-*` headers          |
//! | `jsonrpc`     | JSON-RPC envelopes out, classification in                             |
//! | [`sse`]       | the incremental event-stream parser                                   |
//! | `model`       | typed results ([`CallToolResult`], [`SessionInfo`], ...)              |
//! | `catalog`     | what a server offers ([`Tool`], [`Resource`], ...) and [`Listing`]    |
//! | `schema`      | [`OutputSchema`]: a tool's `outputSchema`, bounded, compiled, checked  |
//! | `task`        | tasks: [`TaskHandle`], [`TaskStatus`], both eras' shapes, the poll timing |
//! | `error`       | [`Error`] and [`Fault`]                                               |
//! | `tls`         | [`TlsProblem`] and the sentence of each                               |
//! | `observe`     | [`Observer`]: where drivers pass on each [`LegReport`] and [`Event`]  |
//!
//! # The driver loop
//!
//! ```text
//!   poll_output(now) ──► Transmit(leg) ──► send leg.request under leg.timeout
//!        ▲                                   │ handle_input(Input::Head { leg, .. })
//!        │                                   │ handle_input(Input::Chunk { leg, .. })* ──► Complete? stop reading
//!        │                                   │ handle_input(Input::End { leg } | Input::Failed { leg, .. })
//!        ├──────────── Event(ev) ◄───────────┘
//!        ├──────────── Update(u) ──► session.apply(u)   (what the operation learned)
//!        ├──────────── Wait(until) ──► handle_input(Input::Timeout) once `until` has come
//!        ├──────────── AwaitSession(until) ──► handle_input(Input::Session(&mut session))
//!        ├──────────── Authorize(step) ──► handle_input(Input::Redirect(url) | Input::NoAuthorizer)
//!        └──────────── Done(result)
//! ```
//!
//! Every input, over HTTP or stdio, goes through
//! [`Operation::handle_input`](driver::Operation::handle_input); its
//! [`Input`](driver::Input) names what came and the leg it is about.
//!
//! An operation borrows nothing: it starts from a copy of its [`Session`] and hands what it
//! learns back as [`SessionUpdate`]s, so any number of operations can be in flight on one
//! session (one handshake for all of them, each under its own budget).
//!
//! See [`driver`] for a complete driver loop as a doc test.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod auth;
mod catalog;
mod clock;
mod config;
mod deadline;
pub mod driver;
mod error;
mod headers;
mod jsonrpc;
mod model;
mod observe;
mod operation;
mod schema;
mod session;
mod skills;
pub mod sse;
mod start;
mod task;
mod tls;
mod transport;
mod wire;

pub use auth::OAuth;
pub use catalog::{
    CacheHint, CacheScope, Completion, CompletionRef, GetPromptResult, ListKind, Listing, Prompt,
    ReadResourceResult, Resource, ResourceTemplate, Tool,
};
pub use clock::{Clock, ManualClock, MonotonicClock};
pub use config::{DEADLINE_META_KEY, SessionConfig};
pub use deadline::{Budget, Exhausted, OperationDeadline, Resolution};
pub use error::{Error, Fault};
pub use jsonrpc::{RequestId, RpcError};
/// The OAuth core the operation runs (re-exported so callers configure it without naming
/// another dependency).
pub use mcp_auth;
/// One way to quote server text, shared with `mcp-auth`: control characters folded to a
/// space, at most [`QUOTE_LIMIT`] characters, an ellipsis where it was cut.
pub use mcp_auth::{QUOTE_LIMIT, clip};
pub use model::{
    CallToolResult, ClientInfo, Content, Era, LABEL_LIMIT, LogLevel, LogMessage, Notification,
    Progress, ProtocolVersion, ServerInfo, SessionInfo, Subscription, SubscriptionEnd,
    UrlElicitation, accept_elicitation_with_defaults,
};
pub use observe::{NoObserver, Observer};
pub use operation::{
    Action, Authorize, CANCEL_NOTICE_GRANT, DEFAULT_RETRY, Event, LISTEN_HEAD_WAIT, LegEnd,
    LegKind, LegReport, MAX_REISSUES, MAX_RESUMPTIONS, Outcome, TransportErrorKind,
};
pub use schema::{Mismatch, OutputSchema, SchemaError};
pub use session::{Session, SessionUpdate};
pub use skills::{LoadedSkill, Skill, SkillFile};
pub use task::{TaskEra, TaskHandle, TaskStatus, TaskSupport};
pub use tls::TlsProblem;
pub use transport::{StdioCommand, Transport};
pub use wire::{
    LAST_EVENT_ID_HEADER, MAX_SESSION_ID_LEN, METHOD_HEADER, NAME_HEADER, PROTOCOL_VERSION_HEADER,
    SESSION_HEADER,
};
