//! A thin tokio driver for [`mcp_proto`]: one future per MCP operation, one deadline spent
//! across its HTTP legs.
//!
//! [`mcp_proto`] is a sans-IO state machine: it decides which request comes next, grants it
//! what is left of the operation's budget and reads the answers. This crate does the I/O for it
//! on tokio, and nothing else: it sends each leg over HTTP/1.1 with ureq's protocol core
//! ([`ureq-proto`](https://docs.rs/ureq-proto), the blocking driver's too) on tokio's sockets (rustls with the
//! *ring* provider for HTTPS, verified with the operating system's trust store plus the CAs
//! [`Client::with_network`] adds; an HTTP `CONNECT` proxy from the environment or set there),
//! bounds the **whole** leg (connect, proxy tunnel, TLS, send, response head and every body
//! frame) by the leg's grant, and feeds what came
//! back into the state machine. Every decision (which error, re-initialising after a 404,
//! refusing a leg when the budget is spent) is `mcp-proto`'s.
//!
//! # In scope
//! * [`Client`]: a session with one server, reused between operations, and its async methods
//!   ([`probe`](Client::probe), [`list_tools`](Client::list_tools),
//!   [`call_tool`](Client::call_tool), [`run`](Client::run)), each **one** `Send` future with its
//!   own deadline. The methods take `&self` and the client is `Clone + Send + Sync`: any
//!   number of operations in flight on one session, one handshake for all of them.
//! * Cancellation: dropping the future drops the request in flight (its connection is closed);
//!   a [`CancelHandle`] ends the operation in flight from another task with
//!   [`Error::Cancelled`](mcp_proto::Error::Cancelled).
//! * Reporting: every leg's grant and measured duration, and every server event, to an
//!   [`Observer`](mcp_proto::Observer).
//! * Every leg `mcp-proto` asks for, read side by side in one `select!`: answers to server
//!   requests sent while a stream is read, the session's standalone stream
//!   ([`SessionConfig::with_listen`](mcp_proto::SessionConfig::with_listen)), resumption of a closed stream with `GET` and
//!   `Last-Event-ID`, and optionally a best-effort `notifications/cancelled` for a cancelled
//!   `tools/call` ([`SessionConfig::with_cancel_notice`](mcp_proto::SessionConfig::with_cancel_notice)).
//!
//! # Out of scope
//! * Policy of any kind: retries, backoff, budgets other than the one the caller set.
//! * Redirects (none is followed; a 3xx ends the leg as [`Error::HttpStatus`](mcp_proto::Error::HttpStatus)),
//!   HTTP/2, SOCKS proxies (HTTP `CONNECT` proxies are in scope, see above), client
//!   certificates.
//!
//! # Why ureq-proto rather than hyper or reqwest
//! * One request at a time on a connection, read inside the leg's own future: no connection
//!   task, no channel between them and no per-request buffer (hyper's connection took a task
//!   wake-up, a channel and an 8 KiB read buffer a request, about a tenth of a warm call's
//!   instructions). Both drivers write requests and parse answers with the same code.
//! * Fewer dependencies and a shorter build: reqwest brings features an MCP client does not use
//!   (redirect following, cookies, decompression, proxies) on top of hyper.
//! * Direct control over the body: the driver reads it chunk by chunk and drops it the moment
//!   the state machine has the answer, which an event stream the server keeps open requires.
//! * TLS is rustls with the *ring* provider and nothing else: no `aws-lc-rs` (and its C and
//!   CMake build), no native-tls, without depending on another crate's feature defaults.
//!
//! # Runtime
//! The futures need a tokio runtime with the time and I/O drivers enabled. An operation's
//! future holds the operation and the loop that drives it (about 9 KiB in a release build),
//! so that a call allocates nothing for them: pin it where it runs (`.await` it, spawn it, or
//! `Box::pin` it once if it is moved about) rather than moving it from place to place. The driver spawns
//! no task: a connection is read and written only inside the future of the leg that uses it,
//! and a client keeps its idle connections itself (`http1.rs`), each taken only after a look
//! at its socket finds nothing waiting on it (a server that closed it while the runtime did
//! not run is seen). Host names (not IP literals) are looked up on detached threads
//! of `mcp-driver-common`'s `lookup`, not on tokio's blocking pool: a lookup a leg left at its
//! grant (a DNS server that does not answer) holds neither the runtime's shutdown nor the
//! process; concurrent lookups of one name share a thread, and at most 16 names are looked
//! up at once in the process. Time is read from tokio's clock ([`TokioClock`]), so
//! paused-time tests and the grants agree.
//!
//! # Tracing
//! With the `tracing` feature (on by default) every operation is a `mcp.operation` span
//! (`server`, `action`, `budget_ms`, `resolution_ms`, and `result`: `ok` or the error's fault,
//! `budget`, `network`, `server`, `authorization_server`, `caller`, `cancelled`,
//! `authorization`) and every leg a `mcp.leg` span inside it
//! (`number`, `method`, `grant_ms`, `end`: the status or `timeout`, `connect`, `io`, ...,
//! `elapsed_ms`), open from the leg's sending to its end; a refused leg is a `mcp.refused`
//! event, a cancel a `mcp.cancelled` one. No header value, token, session id, argument or
//! result goes into a field. Without the feature the crate does not depend on `tracing`.
//!
//! # Example
//!
//! ```no_run
//! use mcp_driver_tokio::Client;
//! use mcp_proto::{Budget, Resolution, SessionConfig};
//!
//! # async fn demo() -> Result<(), mcp_proto::Error> {
//! let config = SessionConfig::new("https://tools.example.org/mcp")?
//!     .with_header("Authorization", "Bearer s3cret")?
//!     .with_budget(Budget::from_secs(20))
//!     .with_resolution(Resolution::MILLISECOND);
//! let client = Client::new(config);
//!
//! // Handshake and tools/call: one operation, one 20 s budget across its three legs.
//! let mut arguments = serde_json::Map::new();
//! arguments.insert("text".into(), "hello".into());
//! let result = client.call_tool("echo", arguments).await?;
//! println!("{}", result.text());
//!
//! // The session is reused: this operation sends only its tools/list pages.
//! for tool in client.list_tools().await? {
//!     println!("{}", tool.name);
//! }
//! # Ok(())
//! # }
//! ```
//!
//! # Typed results
//!
//! A tool that declares an `outputSchema` promises `structuredContent` of that shape. Once the
//! session has read a tools listing, each result is checked against its tool's schema before
//! it is handed over ([`OutputValidation`](mcp_proto::schema::OutputValidation); `Always`
//! walks the listing inside the call's budget when none was read), and
//! [`call_tool_as`](Client::call_tool_as) reads it into a type of yours:
//!
//! ```no_run
//! use mcp_driver_tokio::Client;
//! use mcp_proto::schema::OutputValidation;
//! use mcp_proto::{Error, SessionConfig};
//!
//! #[derive(serde::Deserialize)]
//! struct Weather {
//!     temperature: f64,
//!     conditions: String,
//! }
//!
//! # async fn demo() -> Result<(), Error> {
//! let config = SessionConfig::new("https://tools.example.org/mcp")?
//!     .with_output_validation(OutputValidation::Always);
//! let client = Client::new(config);
//! let mut arguments = serde_json::Map::new();
//! arguments.insert("city".into(), "Oslo".into());
//! match client.call_tool_as::<Weather>("get_weather", arguments).await {
//!     Ok(weather) => println!("{} °C, {}", weather.temperature, weather.conditions),
//!     // The server broke its promise: where and which rule, and the result as it came.
//!     Err(Error::OutputInvalid { problem, result, .. }) => {
//!         eprintln!("unchecked result ({problem}): {}", result.text());
//!     }
//!     Err(other) => return Err(other),
//! }
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod authorize;
mod cancel;
mod client;
mod clock;
mod connector;
mod drive;
mod http1;
mod leg;
mod methods;
mod shell;
mod stdio;
mod wire;

use mcp_driver_common::{tls, trace};

pub use authorize::{AuthorizeFuture, Authorizer, HeadlessAuthorizer};
pub use cancel::CancelHandle;
pub use client::Client;
pub use clock::TokioClock;
/// The OAuth core the operation runs (its client configuration, grants, tokens), re-exported
/// for the same reason.
pub use mcp_auth;
pub use mcp_driver_common::SessionGuard;
/// What the client's connections trust and which proxy they use (`mcp-driver-common`'s, the
/// same type the blocking driver takes): build one for [`Client::with_network`].
pub use mcp_driver_common::network::Network;
/// The core this driver runs (its actions, outcomes, errors, configuration, request types),
/// re-exported so a caller needs no second dependency and never a second version of it; the
/// blocking driver re-exports the same two crates.
pub use mcp_proto;
