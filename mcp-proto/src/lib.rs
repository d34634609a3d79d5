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
//!   and body chunks in, each input naming its leg ([`LegId`](driver::LegId)). The deprecated
//!   HTTP+SSE transport of 2024-11-05 ([`HttpTransport`]) and stdio ([`StdioCommand`]) go
//!   through the same machine: over HTTP+SSE the operation's event stream is a leg read beside
//!   the others ([`LegKind::Events`](driver::LegKind::Events)), read like a local server's stdout.
//! * Reading answers: JSON or an event stream ([`sse`]), checked ids, a body cap, typed
//!   [`Error`]s that name the server and say whose fault they are ([`Fault`]).
//! * Every decision of the transport: re-initialising an expired session, resuming a closed
//!   stream, answering the server's requests, the standalone stream, the cancel notice, how
//!   long a driver may drain a body after its answer ([`DRAIN_WAIT`](driver::DRAIN_WAIT),
//!   [`DRAIN_BYTES`](driver::DRAIN_BYTES)).
//! * Tasks, both eras ([`SessionConfig::with_tasks`]): a tool call the server runs as a task
//!   is polled inside the same budget; one still running when the budget ends is handed back
//!   ([`Error::TaskRunning`], [`TaskHandle`](task::TaskHandle)) to resume ([`Session::resume_task`]) or cancel
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
//! # The architecture
//!
//! This is the one description of it (the README keeps only the layers and links here). Three
//! layers: this crate decides everything about an operation and does no I/O; `mcp-auth` is the
//! OAuth flow it runs, as requests ready to become legs; the drivers (`mcp-driver-blocking`
//! on ureq's transport, `mcp-driver-tokio` on tokio's sockets, both speaking HTTP/1.1 with
//! `ureq-proto`, with `mcp-driver-common` for what both share)
//! move bytes, start processes and sleep, in one loop each (`drive.rs`) that is the same for
//! HTTP and stdio. `.ci/architecture.py` checks that every module named below exists and that
//! every module of `mcp-proto/src` and of `operation/` is named.
//!
//! ## The crate, by module
//!
//! | module        | what it is                                                            |
//! |---------------|-----------------------------------------------------------------------|
//! | `clock`       | the [`Clock`] seam                                                    |
//! | `deadline`    | [`Budget`], [`Resolution`], [`OperationDeadline`]: the arithmetic     |
//! | `auth`        | [`OAuth`]: how a session authorizes when its server asks              |
//! | `config`      | [`SessionConfig`]: what a session knows before it talks               |
//! | `session`     | [`Session`]: what operations established, shared by those in flight   |
//! | `start`       | the [`Session`]'s constructor for each action, and its deadline       |
//! | `operation`   | the state machine, one part per concern (below)                       |
//! | [`request`]   | the one-request methods as a table: a file each ([`request::Request`]) |
//! | [`driver`]    | what drivers exchange with it: [`Operation`](driver::Operation), its outputs and inputs |
//! | `transport`   | HTTP (Streamable, or HTTP+SSE: [`HttpTransport`]) or stdio ([`Transport`], [`StdioCommand`]) |
//! | `wire`        | request bytes and headers (both eras), session-id checks              |
//! | `headers`     | `x-mcp-header` annotations mirrored as `Mcp-Param-*` headers          |
//! | `jsonrpc`     | JSON-RPC envelopes out, classification in                             |
//! | [`sse`]       | the incremental event-stream parser                                   |
//! | `model`       | typed results ([`CallToolResult`], [`SessionInfo`], ...)              |
//! | [`message`]   | what a server sends of its own, read into types: notifications, elicitations |
//! | `catalog`     | what a server offers ([`Tool`], [`Resource`], ...) and [`Listing`]    |
//! | [`skills`]    | the skills extension: entries, and the checks of a loaded file        |
//! | [`schema`]    | a tool's `outputSchema`, bounded, compiled, checked                   |
//! | [`task`]      | tasks: both eras' shapes read into one state, the handle, the poll timing |
//! | `error`       | [`Error`] and [`Fault`]                                               |
//! | `tls`         | [`TlsProblem`] and the sentence of each                               |
//! | `observe`     | [`Observer`]: where drivers pass on each [`LegReport`] and [`Event`]  |
//!
//! ## The operation's parts (`operation/`)
//!
//! Only `operation/mod.rs` writes `impl Operation` (its constructor and its reads aside, in
//! `open`), and it only routes: each input goes to the part it is about, and what the part hands
//! back (a decision: a `Heard`, a `Meaning`, a `Polled`, an `After`, a `Refusal`) is acted on
//! there, where the operation is finished, failed or cancelled. Each part owns its state and takes
//! what else it needs as arguments; none grants a leg or ends the operation. Every leg is granted
//! at one site (`grant`), whose refusal rule is one `match`; `poll_output` is a loop over one step
//! (`step`), whose checks in their priority order are the operation's policy (its doc lists them).
//!
//! | part        | its state                                 | its concern                              |
//! |-------------|-------------------------------------------|------------------------------------------|
//! | `open`      | the struct of the operation               | the parts assembled as it starts; its reads |
//! | `types`     | none                                      | what callers see: actions, events, ends  |
//! | `driving`   | none                                      | what drivers see: legs, outputs, inputs  |
//! | `leg_kind`  | none                                      | every kind of leg, what a driver does with each |
//! | `grant`     | the deadline, the leg and timer tables    | the one grant rule, legs in and out      |
//! | `legs`      | the leg table (one slot per role)         | which legs are in flight, found by id    |
//! | `timers`    | the timer table                           | every instant something happens unasked  |
//! | `progress`  | the action, its era, the next step        | process, session, handshake, then work   |
//! | `transmit`  | none                                      | the request each leg carries, handed out |
//! | `responses` | the work leg's reading, the stream        | what became of each leg, by its role     |
//! | `read`      | the work leg's reading (head, JSON, SSE)  | heads, bodies, the messages in them      |
//! | `answer`    | skill files, the input round, the relisting | what an answer means (`Meaning`)       |
//! | `paging`    | a listing's entries, cursors, hints       | a listing's walk, bounded                |
//! | `output`    | none                                      | a call's result held to its tool's `outputSchema` |
//! | `introduce` | none                                      | what a server says of itself: `initialize`, `server/discover` |
//! | `era`       | the version, whether it may change        | era detection: fallback, switch forward  |
//! | `authorize` | the flow, the auth leg's answer           | a 401 or 403: OAuth legs, the person     |
//! | `replies`   | answers owed, requests asked, the filter  | what the server sends or asks of its own |
//! | `input`     | the input round, the rounds so far        | a modern result that asks for more input |
//! | `tasking`   | the task the call became, its next poll   | polls inside the budget, or hands it back |
//! | `resume`    | the last event id, the pending resumption | streams closed before their answer       |
//! | `listen`    | the standalone stream                     | server messages outside any answer       |
//! | `stdio`     | the stdout framer lent, the close's step  | its lines, the writes, the exit; over HTTP+SSE the event stream's messages, the endpoint |
//! | `close`     | the step of a local server's close        | stdin closed, SIGTERM, the kill          |
//! | `ending`    | the result, the kill, the notice owed     | what follows a result, and the result    |
//! | `failure`   | none                                      | every way it fails, as a typed error     |
//! | `view`      | its copy of the session, what it learned  | the session, without borrowing it        |
//!
//! A new one-request method touches three files: its file in `request/` (with its line in
//! [`request::METHODS`]), one arm in `mcp-call`'s command table (`mcp-call/src/cli.rs`) and
//! nothing in the bridge, which relays every method of the table as its host sent it.
//!
//! # The driver loop
//!
//! ```text
//!   poll_output(now) ──► Transmit(leg) ──► send leg.request under leg.timeout
//!        ▲                                   │ handle_input(Input::Head { leg, .. })
//!        │                                   │ handle_input(Input::Chunk { leg, .. })* ──► Complete? stop reading
//!        │                                   │ handle_input(Input::End { leg } | Input::Failed { leg, .. })
//!        │                                   │ (stdio: Input::Sent, Input::Stdout, Input::Exit)
//!        ├──────────── Event(ev) ◄───────────┘
//!        ├──────────── LegEnded(report) ──► the observer (the leg's grant, time, end)
//!        ├──────────── Update(u) ──► session.apply(u)   (what the operation learned)
//!        ├──────────── Request(req) ──► the caller's responder ──► handle_input(Input::Reply { .. })
//!        ├──────────── Wait(until) ──► handle_input(Input::Timeout) once `until` has come
//!        ├──────────── AwaitSession(until) ──► handle_input(Input::Session(&mut session))
//!        ├──────────── Authorize(step) ──► handle_input(Input::Redirect(url) | Input::NoAuthorizer)
//!        └──────────── Done(result)
//! ```
//!
//! Every input, over HTTP or stdio, goes through
//! [`Operation::handle_input`](driver::Operation::handle_input); its
//! [`Input`](driver::Input) names what came and the leg it is about;
//! [`Input::Cancel`](driver::Input::Cancel) ends it early, for the caller.
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
pub mod message;
mod model;
mod observe;
mod operation;
pub mod request;
pub mod schema;
mod session;
pub mod skills;
pub mod sse;
mod start;
pub mod task;
mod tls;
mod transport;
mod wire;

pub use auth::OAuth;
pub use catalog::{
    CacheHint, CacheScope, ListKind, Listing, Prompt, Resource, ResourceTemplate, Tool,
};
pub use clock::{Clock, ManualClock, MonotonicClock};
pub use config::SessionConfig;
pub use deadline::{Budget, Exhausted, OperationDeadline, Resolution};
pub use error::{Error, Fault};
pub use jsonrpc::{RequestId, RpcError};
pub use model::{
    CallToolResult, ClientInfo, Content, Era, ProtocolVersion, ServerInfo, SessionInfo,
    Subscription, SubscriptionEnd,
};
pub use observe::{NoObserver, Observer};
pub use operation::{Action, Event, LegEnd, LegReport, Listed, Outcome, TransportErrorKind};
pub use session::{Session, SessionUpdate};
pub use tls::TlsProblem;
pub use transport::{HttpTransport, StdioCommand, Transport};
