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
//! * The Streamable HTTP client side of MCP as a state machine ([`Session`], [`Operation`]):
//!   request intents with their grants out, response heads and body chunks in.
//! * Reading answers: JSON or an event stream ([`sse`]), checked ids, a body cap, typed
//!   [`Error`]s that name the server.
//!
//! # Out of scope
//! * Sockets, TLS, threads, timers, async runtimes: the drivers (`mcp-driver-blocking`,
//!   `mcp-driver-tokio`) do the I/O. This crate never reads a clock: time is an argument.
//! * Retries and backoff: a budget says when to stop waiting, not when to call again.
//!
//! # The driver loop
//!
//! ```text
//!   poll_output(now) ──► Transmit(leg) ──► send leg.request under leg.timeout
//!        ▲                                   │ handle_response(head)
//!        │                                   │ handle_body_chunk(..)* ──► Complete? stop reading
//!        │                                   │ handle_body_end | handle_transport_error
//!        ├──────────── Event(ev) ◄───────────┘
//!        ├──────────── Wait(until) ──► handle_timeout(now)
//!        └──────────── Done(result)
//! ```
//!
//! See [`operation`] for a complete driver loop as a doc test.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod clock;
pub mod deadline;
pub mod error;
pub mod jsonrpc;
pub mod model;
pub mod observe;
pub mod operation;
pub mod session;
pub mod sse;

pub use clock::{Clock, ManualClock, MonotonicClock};
pub use deadline::{Budget, Exhausted, OperationDeadline, Resolution};
pub use error::{Error, clip};
pub use model::{
    CallToolResult, Content, Notification, Progress, ProtocolVersion, ServerInfo, SessionInfo, Tool,
};
pub use observe::{LegEnd, LegReport, NoObserver, Observer};
pub use operation::{
    Action, Event, Leg, LegKind, LegStatus, Operation, Outcome, Output, TransportError,
    TransportErrorKind,
};
pub use session::{ClientInfo, Session, SessionConfig};
