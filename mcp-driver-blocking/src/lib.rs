//! A thin, synchronous driver for [`mcp_proto`] over [ureq] 3 (its HTTP/1.1 core, ureq-proto,
//! on its transport): one deadline per MCP operation, spent across its HTTP legs.
//!
//! [`mcp_proto`] decides everything about an MCP operation (which request comes next, how
//! much of the budget it may spend, how to read the answer, which error ends it) without
//! doing any I/O. This crate does the I/O on the calling thread: for each leg the state
//! machine hands out, it sends the request (ureq-proto writes it and reads the answer's head,
//! on a connection the lane keeps), bounds the **whole** leg (resolve, connect, TLS, send,
//! response head and every body read) by the leg's grant, and feeds the head, the body chunks
//! and any transport failure back in. It holds no policy of its own.
//!
//! # In scope
//! * [`Client`]: one [`Session`](mcp_proto::Session) with one server, reused across operations (no second
//!   handshake while the session lives), with [`probe`](Client::probe),
//!   [`list_tools`](Client::list_tools), [`call_tool`](Client::call_tool),
//!   [`close`](Client::close) and the general [`run`](Client::run). Each call is **one**
//!   operation under **one** budget. The methods take `&self`: threads share one client (or
//!   its clones) and its session, each thread's operation blocking only that thread.
//! * HTTP and HTTPS (rustls with ring; the operating system's trust store, CAs added with
//!   [`Client::with_network`], HTTP `CONNECT` proxies), answers as JSON or as an event stream.
//!   On Unix a name's addresses are raced inside the leg's grant (Happy Eyeballs, RFC 8305,
//!   250 ms apart: a black-holed IPv6 address costs the first leg 250 ms, as on the tokio
//!   driver); elsewhere they are tried in turn.
//!   An event stream the server keeps open after the answer is dropped the moment the answer
//!   is in; a stream closed before it is resumed (a `GET` with `Last-Event-ID`), and a request
//!   the server sends on a stream is answered (a nested `POST`), both as the state machine
//!   says and inside the same budget.
//! * The session's standalone `GET` stream ([`SessionConfig::with_listen`]), read beside the
//!   call: once it is opened, it (on a lane of its own) and every body after it are read on
//!   threads of their own that hand their chunks to the operation's thread, which still sends
//!   every request (an answer to what the server asks there) and decides nothing. The threads
//!   end with the operation: its end, a cancel or a failure shuts their sockets down.
//! * Reporting each leg (grant, measured time, how it ended) and each server event to an
//!   [`Observer`](mcp_proto::Observer) ([`Client::set_observer`]).
//! * Cancelling from another thread ([`CancelHandle`]), followed by the proto's cancel notice
//!   when the configuration asks for one
//!   ([`SessionConfig::with_cancel_notice`]).
//!
//! # Out of scope
//! * Any decision: errors, re-initializing after a 404, refusing a leg when the budget is
//!   spent, whether a leg was late, caps on bodies and pages, when to resume, how to answer a
//!   server request ([`SessionConfig::respond_to`]), how long to drain a body after its
//!   answer are all `mcp_proto`'s. Retries do not exist.
//! * Async: see `mcp-driver-tokio`. Helper threads: one for the whole process (`mcp-leg-end`,
//!   started by the first leg), which shuts a blocked leg's socket down at its grant's end;
//!   none per client, and none per operation unless it opens the standalone stream (then one
//!   for it and one per body read after it, above). A host *name* is resolved on a
//!   helper thread, so that the grant bounds the lookup; an IP address is used as is.
//!
//! # Timing
//! The grant of a leg bounds all of it: resolve, connect, TLS, send, head and every body read.
//! A server that trickles a byte at a time cannot stretch a leg, and a stalled server ends the
//! operation with [`Error::LegTimedOut`] under a millisecond past its budget at millisecond
//! resolution: a read waits with `poll(2)` on the operation's own thread until the leg's end
//! (spinning through its last millisecond), and the process's leg-end thread shuts the socket
//! down then, which ends a blocked write or, off Unix, a read waiting on the kernel's socket
//! timeout (see `examples/blocking_overrun.rs`).
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
//! use mcp_driver_blocking::Client;
//! use mcp_proto::{Budget, Resolution, SessionConfig};
//!
//! # fn main() -> Result<(), mcp_proto::Error> {
//! let config = SessionConfig::new("https://tools.example.org/mcp")?
//!     .with_header("Authorization", "Bearer s3cret")?
//!     .with_budget(Budget::from_secs(20))
//!     .with_resolution(Resolution::MILLISECOND);
//! let client = Client::new(config);
//!
//! // Three legs (initialize, notifications/initialized, tools/call) under one 20 s budget.
//! let mut arguments = serde_json::Map::new();
//! arguments.insert("text".into(), "hi".into());
//! let result = client.call_tool("echo", arguments)?;
//! println!("{}", result.text());
//!
//! // The session is reused: one leg (tools/list pages aside), a fresh 20 s budget.
//! for tool in client.list_tools()? {
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
//! use mcp_driver_blocking::Client;
//! use mcp_proto::schema::OutputValidation;
//! use mcp_proto::{Error, SessionConfig};
//!
//! #[derive(serde::Deserialize)]
//! struct Weather {
//!     temperature: f64,
//!     conditions: String,
//! }
//!
//! # fn main() -> Result<(), Error> {
//! let config = SessionConfig::new("https://tools.example.org/mcp")?
//!     .with_output_validation(OutputValidation::Always);
//! let client = Client::new(config);
//! let mut arguments = serde_json::Map::new();
//! arguments.insert("city".into(), "Oslo".into());
//! match client.call_tool_as::<Weather>("get_weather", arguments) {
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
mod bodies;
mod connector;
mod drive;
mod events;
mod exchange;
mod http1;
mod lanes;
mod leg;
mod leg_end;
mod methods;
mod pump;
mod stdio;
mod stdout;
mod turns;

use mcp_driver_common::{tls, trace};

use mcp_driver_common::shell::Shell;
use std::sync::Arc;

use mcp_proto::{Action, Clock, Error, MonotonicClock, OperationDeadline, Outcome, SessionConfig};

pub use authorize::{Authorizer, HeadlessAuthorizer};
pub use lanes::CancelHandle;
/// The OAuth core the operation runs (its client configuration, grants, tokens), re-exported
/// for the same reason.
pub use mcp_auth;
pub use mcp_driver_common::SessionGuard;
/// What the client's connections trust and which proxy they use (`mcp-driver-common`'s, the
/// same type the tokio driver takes): build one for [`Client::with_network`].
pub use mcp_driver_common::network::Network;
/// The core this driver runs (its actions, outcomes, errors, configuration, request types),
/// re-exported so a caller needs no second dependency and never a second version of it; the
/// tokio driver re-exports the same two crates.
pub use mcp_proto;

use lanes::Shared;

/// The input buffer per connection: a response head fits (the limit is 64 KiB, as ureq's).
const INPUT_BUFFER: usize = 64 * 1024;
/// The output buffer per connection: a request head and the body's pieces.
const OUTPUT_BUFFER: usize = 16 * 1024;
/// The `User-Agent` of every request (and of a proxy's `CONNECT`).
const USER_AGENT: &str = concat!("mcp-driver-blocking/", env!("CARGO_PKG_VERSION"));
use drive::Driver;

/// A blocking MCP client for one server: a [`Session`](mcp_proto::Session) plus the HTTP clients
/// that carry it.
///
/// Every method that talks to the server is **one operation** with **one deadline**, opened
/// when the method is called: [`probe`](Self::probe), [`list_tools`](Self::list_tools) and
/// [`call_tool`](Self::call_tool) use the configuration's budget
/// ([`SessionConfig::budget`]), [`run`](Self::run) takes one. The session (id, negotiated
/// version) outlives operations, so only the first operation pays for the handshake; a
/// session the server forgot (404) is re-established inside the operation that found out.
///
/// The methods block the calling thread until the operation ends, and take `&self`: threads
/// can share one client (or clones of it, which share its session) and each thread's
/// operation blocks only that thread. On a new legacy session one operation runs the
/// handshake and the others wait for it inside their own budgets, so N threads calling at
/// once send **one** `initialize`. Each operation runs on a lane of its own (an HTTP client
/// whose kept connections are reused by the next operation on that lane); over stdio the
/// operations take turns (one server process), and over HTTP+SSE (one event stream, kept by
/// the client between operations), each under its own budget from its call.
///
/// Use a [`CancelHandle`] to end operations early from another thread: it cancels the
/// operations of the client value it came from, so give each thread that must be cancelled
/// on its own a clone.
pub struct Client {
    shared: Arc<ClientShared>,
    /// This client value's lanes: a clone gets its own (and so its own cancel handle).
    lanes: Arc<lanes::Lanes>,
    /// This client value's own observer ([`Client::with_observer`]), instead of the
    /// session's.
    observer: Option<Arc<mcp_driver_common::SharedObserver>>,
}

/// What every clone of a client shares: the shell (the session, the observer, the
/// authorizer) and what its operations go through.
pub(crate) struct ClientShared {
    /// The session, and the condition variable the operations waiting for it wait on
    /// (signalled when the session changed, an operation ended, or one waiting for it was
    /// cancelled).
    pub(crate) shell: Shell<drive::SharedAuthorizer, drive::SessionChanged>,
    /// Over stdio: the server process, and whose turn it is.
    stdio: turns::Turns<stdio::Child>,
    /// Over HTTP+SSE: the session's event stream, and whose turn it is (one stream: the
    /// operations on the session take turns, as over stdio).
    events: turns::Turns<events::EventStream>,
    tls: tls::LazyConfig,
    proxies: mcp_driver_common::network::Proxies,
    /// The names whose addresses the caller fixed.
    resolved: mcp_driver_common::network::Resolved,
}

impl ClientShared {
    /// A lane for one more operation at once: its own HTTP client and cancel state.
    fn new_lane(&self) -> lanes::Lane {
        let shared = Shared::for_lane();
        // What the connector chain reads of ureq's configuration: the buffers, Nagle (off by
        // ureq's default), the address family (any). No proxy: the chain's own tunnel carries
        // proxied requests (see `connector`).
        //
        // Each connection allocates (and zeroes) both buffers. ureq's 128 KiB each sit at the
        // allocator's mmap threshold: a connection made per operation page-faulted 256 KiB in
        // and unmapped it again each time. The input buffer holds a response head (up to
        // 64 KiB); requests are small and a body goes out through the output buffer in pieces.
        let config = ureq::Agent::config_builder()
            .proxy(None)
            .input_buffer_size(INPUT_BUFFER)
            .output_buffer_size(OUTPUT_BUFFER)
            .build();
        let http = http1::Http::new(
            connector::Connector::new(
                Arc::clone(&shared),
                self.tls.clone(),
                self.proxies.clone(),
                USER_AGENT,
            ),
            connector::Resolver::new(self.proxies.clone(), self.resolved.clone()),
            config,
        );
        lanes::Lane::new(http, shared)
    }
}

impl Drop for Client {
    /// A cancel handle may outlive its client value (a signal handler holds one to the end):
    /// the connections the value kept close with it.
    fn drop(&mut self) {
        self.lanes.forget();
    }
}

impl Clone for Client {
    /// Another handle on the same session (no second handshake), with lanes and a cancel
    /// handle of its own: [`cancel_handle`](Client::cancel_handle) on the clone cancels only
    /// the operations run through the clone.
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
            lanes: Arc::new(lanes::Lanes::new(&self.shared)),
            observer: self.observer.clone(),
        }
    }
}

impl Client {
    /// A client for the server `config` describes, whose connections trust and tunnel as
    /// `network` says: the system's store plus the CAs it adds, its proxy (or the
    /// environment's). The same [`Network`] gives the same behaviour, and the same errors
    /// ([`Error::Tls`], [`Error::Proxy`]), on the tokio driver.
    ///
    /// # Errors
    /// [`Error::InvalidCertificates`] when a CA it adds cannot be read or holds no certificate.
    pub fn with_network(config: SessionConfig, network: &Network) -> Result<Self, Error> {
        let tls = tls::LazyConfig::new(network)?;
        let shared = Arc::new(ClientShared {
            shell: Shell::new(config, drive::SessionChanged::default()),
            stdio: turns::Turns::default(),
            events: turns::Turns::default(),
            tls,
            proxies: network.proxies(),
            resolved: network.resolved(),
        });
        Ok(Self {
            lanes: Arc::new(lanes::Lanes::new(&shared)),
            shared,
            observer: None,
        })
    }

    /// Runs `action` as one operation under `deadline` (one the session opens now when
    /// `None`) and drives it to its end, on a lane of its own.
    fn operate(
        &self,
        action: Action,
        deadline: Option<OperationDeadline>,
    ) -> Result<Outcome, Error> {
        let clock = MonotonicClock;
        let shell = &self.shared.shell;
        let mut lane = self.lanes.take(|| self.shared.new_lane());
        // From here until the guard drops, a cancel reaches this operation.
        let _running = self.lanes.begin_operation(&lane);
        // The deadline opens at the call, whatever the operation waits for first. Declared
        // before the operation, `opened` wakes the waiting ones after the operation is gone.
        let opened = shell.open(&action, deadline, clock.now());
        let mut reporter = match &self.observer {
            Some(own) => own.reporter(),
            None => shell.reporter(),
        };
        if let Some(command) = opened.stdio() {
            let shared = lane.shared();
            return self
                .shared
                .stdio
                .take_turn(opened.deadline.end(), shared, |child| {
                    let mut op = opened.start(action, clock.now());
                    if let Some(waker) = child.as_ref().and_then(stdio::Child::waker) {
                        shared.set_waker(waker);
                    }
                    let mut wire = stdio::StdioWire {
                        child,
                        command,
                        shared,
                    };
                    self.drive(&mut op, opened.server(), shared, &mut reporter, &mut wire)
                });
        }
        let work = Arc::clone(lane.shared());
        let new_lane = || self.shared.new_lane();
        let (http, shared, kept) = lane.parts();
        let run = |events: &mut Option<events::EventStream>| {
            let mut op = opened.start(action, clock.now());
            let lanes = leg::LaneMaker {
                work,
                new_lane: &new_lane,
            };
            let mut wire = leg::HttpWire::new(http, shared, kept, lanes, events);
            self.drive(&mut op, opened.server(), shared, &mut reporter, &mut wire)
        };
        // The session says whether its stream lives on: one it no longer has is dropped
        // (closing its connection).
        let open = || shell.session().event_stream_open();
        if shell.session().speaks_sse() {
            // One stream: the operations on an HTTP+SSE session take turns, as over stdio.
            let events = &self.shared.events;
            return events.take_turn(opened.deadline.end(), shared, |held| {
                let result = run(held);
                if !open() {
                    *held = None;
                }
                result
            });
        }
        let mut own = None;
        let result = run(&mut own);
        // A stream this operation opened without the turn (it found HTTP+SSE itself) is the
        // client's, unless another is.
        if let (Some(stream), true) = (own, open()) {
            self.shared.events.offer(stream);
        }
        result
    }

    /// Drives `op` over `wire` to its end, in the operation's span: the one loop
    /// ([`Driver::drive`]) for HTTP and stdio alike.
    fn drive(
        &self,
        op: &mut mcp_proto::driver::Operation,
        server: &str,
        shared: &Shared,
        observer: &mut dyn mcp_proto::Observer,
        wire: &mut impl drive::Wire,
    ) -> Result<Outcome, Error> {
        let mut driver = Driver {
            shared,
            client: &self.shared,
            observer,
            authorizer: self.shared.shell.authorizer(),
            span: trace::operation(op, server),
        };
        driver.drive(op, wire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send<T: Send>() {}
    fn send_sync_clone<T: Send + Sync + Clone>() {}

    #[test]
    fn the_client_moves_between_threads_and_the_handle_is_shared() {
        send::<Client>();
        send_sync_clone::<CancelHandle>();
    }

    /// A cancel reaches an operation waiting for its turn on an HTTP+SSE session's stream
    /// while another operation holds it, as it reaches one waiting for a local server's turn
    /// (it was not woken, and waited for the turn or its budget's end).
    #[test]
    fn a_cancel_wakes_an_operation_waiting_for_the_event_stream_s_turn() {
        use std::time::{Duration, Instant};
        let client = Client::connect("http://127.0.0.1:9/mcp").unwrap();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let (holding, held) = std::sync::mpsc::channel::<()>();
        let shared = Arc::clone(&client.shared);
        let holder = std::thread::spawn(move || {
            shared.events.take_turn(None, &Shared::for_lane(), |_| {
                holding.send(()).unwrap();
                let _ = released.recv();
            });
        });
        held.recv().unwrap();
        let other = client.clone();
        let cancel = other.cancel_handle();
        let waiter = std::thread::spawn(move || {
            let lane = other.lanes.take(|| other.shared.new_lane());
            let _running = other.lanes.begin_operation(&lane);
            let started = Instant::now();
            let until = started + Duration::from_secs(30);
            let turned = other
                .shared
                .events
                .take_turn(Some(until), lane.shared(), |held| held.is_some());
            (turned, started.elapsed())
        });
        let waits = Instant::now() + Duration::from_secs(10);
        while client.shared.events.waiting() == 0 && Instant::now() < waits {
            std::thread::yield_now();
        }
        assert_eq!(
            client.shared.events.waiting(),
            1,
            "the operation never waited"
        );
        cancel.cancel();
        let (turned, waited) = waiter.join().unwrap();
        drop(release);
        holder.join().unwrap();
        assert!(!turned, "it ran without the stream");
        assert!(
            waited < Duration::from_secs(10),
            "waited {waited:?} of 30 s"
        );
    }

    #[test]
    fn https_to_a_closed_port_is_a_connect_failure() {
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let client = Client::connect(&format!("https://127.0.0.1:{port}/mcp")).unwrap();
        #[derive(Default)]
        struct Ends(std::sync::Arc<std::sync::Mutex<Vec<mcp_proto::LegEnd>>>);
        impl mcp_proto::Observer for Ends {
            fn leg_finished(&mut self, report: &mcp_proto::LegReport) {
                self.0.lock().unwrap().push(report.end);
            }
        }
        let ends = Ends::default();
        let seen = Arc::clone(&ends.0);
        client.set_observer(ends);
        let err = client.probe().unwrap_err();
        assert!(matches!(err, Error::Unreachable { .. }), "{err:?}");
        assert_eq!(
            *seen.lock().unwrap(),
            [mcp_proto::LegEnd::Transport(
                mcp_proto::TransportErrorKind::Connect
            )]
        );
    }
}
