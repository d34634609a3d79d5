//! The client: a session with one server and the loop that drives its operations.

use std::sync::Arc;

use mcp_driver_common::shell::Shell;
use mcp_proto::driver::Operation;
use mcp_proto::{Action, Clock, Error, OperationDeadline, Outcome, SessionConfig};
use tokio::time::Instant as TokioInstant;

use crate::Network;
use crate::cancel::CancelShared;
use crate::clock::TokioClock;
use crate::connector::Connecting;
use crate::drive::Run;
use crate::http1::{self, Http};
use crate::leg::HttpWire;
use crate::shell::{Changed, ClientShell};
use crate::trace;

/// A session with one MCP server, driven on tokio.
///
/// Each async method is **one** operation: one `Send` future under one deadline opened when it
/// is first polled, spent across its legs (the handshake when the session is not live yet,
/// then the work). The session is kept between operations, so a second operation on a live
/// session sends no second handshake; a session the server has forgotten (404) is
/// re-established inside the operation that found out, by `mcp-proto`.
///
/// The methods take `&self`, and the client is `Clone + Send + Sync`: any number of
/// operations can be in flight on one session at once, from one task (`join!`) or from many
/// (each with a clone). They share the session: on a new legacy session one of them runs the
/// handshake and the others wait for it inside their own budgets, so N concurrent calls send
/// **one** `initialize`; a session lost under a burst is re-established once. Every operation
/// keeps its own budget. Over stdio the operations take turns (one server process, one
/// stdout), and over HTTP+SSE (one event stream, kept by the client between operations), each
/// still under its own budget from the moment it was first polled.
///
/// Every leg `mcp-proto` hands out is sent as it says and read beside the others in flight:
/// answers to requests the server sends on a stream, the standalone stream
/// ([`SessionConfig::with_listen`]), a stream resumed with a `GET` at the moment the state
/// machine names, the cancel notice ([`SessionConfig::with_cancel_notice`]).
///
/// Dropping an operation's future cancels it: the requests in flight are dropped and their
/// connections closed. The session stays usable (a handshake interrupted this way is not
/// committed, and an operation waiting for it starts it again).
///
/// Three calls at once on one session:
///
/// ```no_run
/// # async fn demo() -> Result<(), mcp_proto::Error> {
/// let client = mcp_driver_tokio::Client::connect("https://tools.example.org/mcp")?;
/// let calls = ["a", "b", "c"].map(|text| {
///     let client = client.clone(); // the same session, a cancel handle of its own
///     let mut args = serde_json::Map::new();
///     args.insert("text".into(), text.into());
///     tokio::spawn(async move { client.call_tool("echo", args).await })
/// });
/// for call in calls {
///     println!("{}", call.await.expect("the task ran")?.text());
/// }
/// # Ok(())
/// # }
/// ```
///
/// See the [crate docs](crate) for more.
pub struct Client {
    pub(crate) shared: Arc<Shared>,
    /// This client value's cancel handle: a clone gets its own.
    pub(crate) cancel: Arc<CancelShared>,
    /// This client value's own observer ([`Client::with_observer`]), instead of the
    /// session's.
    pub(crate) observer: Option<Arc<mcp_driver_common::SharedObserver>>,
}

/// What every clone of a client shares: the shell (the session, the observer, the
/// authorizer) and what its operations go through.
pub(crate) struct Shared {
    pub(crate) shell: ClientShell,
    http: Http,
    connecting: Connecting,
    /// Over stdio: the server process, kept between operations (ended on close; killed when
    /// the last clone is dropped). Locked for a whole operation: stdio operations take turns.
    child: tokio::sync::Mutex<Option<crate::stdio::Child>>,
    /// Over HTTP+SSE: the session's event stream (the body of its GET), kept between
    /// operations while the session says it is open. Locked for a whole operation: operations
    /// on an HTTP+SSE session take turns, one reading the stream at a time.
    events: tokio::sync::Mutex<Option<crate::http1::Body>>,
}

impl Clone for Client {
    /// Another handle on the same session (no second handshake), with a cancel handle of its
    /// own: [`cancel_handle`](Client::cancel_handle) on the clone cancels only the operations
    /// run through the clone.
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
            cancel: Arc::new(CancelShared::default()),
            observer: self.observer.clone(),
        }
    }
}

impl Client {
    /// A client for the server `config` describes, whose connections trust and tunnel as
    /// `network` says: the system's store plus the CAs it adds, its proxy (or the
    /// environment's). The same [`Network`] gives the same behaviour, and the same errors
    /// ([`Error::Tls`], [`Error::Proxy`]), on the blocking driver.
    ///
    /// # Errors
    /// [`Error::InvalidCertificates`] when a CA it adds cannot be read or holds no certificate.
    pub fn with_network(config: SessionConfig, network: &Network) -> Result<Self, Error> {
        let (http, connecting) = http1::http_client_for(network)?;
        let shared = Shared {
            shell: Shell::new(config, Changed::default()),
            http,
            connecting,
            child: tokio::sync::Mutex::new(None),
            events: tokio::sync::Mutex::new(None),
        };
        Ok(Self {
            shared: Arc::new(shared),
            cancel: Arc::new(CancelShared::default()),
            observer: None,
        })
    }

    /// Runs `action` as one operation under `deadline` (one the session opens at the first
    /// poll when `None`) and drives it to its end: the one loop ([`Run::drive`]) for HTTP and
    /// stdio alike, over the transport the session's configuration names.
    pub(crate) async fn operate(
        &self,
        action: Action,
        deadline: Option<OperationDeadline>,
    ) -> Result<Outcome, Error> {
        let clock = TokioClock;
        let shared = &*self.shared;
        let cancel = &*self.cancel;
        let armed = cancel.arm();
        let shell = &shared.shell;
        let mut reporting = match &self.observer {
            Some(own) => own.reporter(),
            None => shell.reporter(),
        };
        // The deadline opens at the first poll, whatever the operation waits for first.
        // Declared before the operation, `opened` wakes the waiting ones after it is gone.
        let opened = shell.open(&action, deadline, clock.now());
        let run = |op: &Operation, observer| Run {
            shell,
            observer,
            cancel,
            armed,
            authorizer: shell.authorizer(),
            span: trace::operation(op, opened.server()),
        };
        let Some(command) = opened.stdio() else {
            // Over HTTP+SSE, one stream: operations take turns, as over stdio.
            let sse = shell.session().speaks_sse();
            let mut turn = match sse {
                true => take_turn(&shared.events, cancel, opened.deadline.end()).await,
                false => None,
            };
            let mut own = None;
            let events = match turn.as_deref_mut() {
                Some(events) => events,
                None => &mut own,
            };
            // The operation and the loop that drives it live in the caller's future (no
            // allocation an operation: two above the allocator's per-thread cache cost about 5%
            // of a warm call's instructions); the crate docs say what that asks of a caller.
            let mut op = opened.start(action, clock.now());
            let mut wire = HttpWire {
                http: &shared.http,
                connecting: &shared.connecting,
                legs: Vec::new(),
                events,
            };
            let result = run(&op, &mut reporting).drive(&mut op, &mut wire).await;
            // The session says whether its stream lives on: a stream it no longer has is
            // dropped (closing its connection); one this operation opened without the turn
            // (it found HTTP+SSE itself) is the client's if no other is.
            drop(wire);
            let open = shell.session().event_stream_open();
            match (turn.as_deref_mut(), own) {
                (Some(held), _) if !open => *held = None,
                (None, Some(stream)) if open => {
                    if let Ok(mut slot) = shared.events.try_lock() {
                        slot.get_or_insert(stream);
                    }
                }
                _ => {}
            }
            return result;
        };
        // One server process, one stdout: stdio operations take turns, each waiting for its
        // turn inside its budget. One whose turn never came (its budget ran out, or it was
        // cancelled) runs without the process: it ends at once, having sent nothing.
        let mut turn = take_turn(&shared.child, cancel, opened.deadline.end()).await;
        let mut no_process = None;
        let child = match turn.as_deref_mut() {
            Some(child) => child,
            None => &mut no_process,
        };
        let mut op = opened.start(action, clock.now());
        let mut wire = crate::stdio::StdioWire {
            child,
            command,
            cancel,
            armed,
        };
        run(&op, &mut reporting).drive(&mut op, &mut wire).await
    }
}

/// Waits for the turn on what operations share one at a time (a local server, an HTTP+SSE
/// stream) inside the operation's budget (`until`): `None` when the budget ran out or the
/// operation was cancelled first (it then runs without it, and ends at once).
async fn take_turn<'m, T>(
    slot: &'m tokio::sync::Mutex<T>,
    cancel: &CancelShared,
    until: Option<std::time::Instant>,
) -> Option<tokio::sync::MutexGuard<'m, T>> {
    if cancel.is_fired_for_good() {
        return None;
    }
    // Free (the usual case: operations one after another): taken without registering for a
    // cancel, which locks the cancel's list of waiters twice.
    if let Ok(turn) = slot.try_lock() {
        return Some(turn);
    }
    let cancelled = cancel.waiter();
    tokio::pin!(cancelled);
    cancelled.as_mut().enable();
    if cancel.is_fired_for_good() {
        return None;
    }
    tokio::select! {
        biased;
        () = &mut cancelled => None,
        turn = async {
            match until {
                Some(end) => tokio::time::timeout_at(TokioInstant::from_std(end), slot.lock()).await.ok(),
                None => Some(slot.lock().await),
            }
        } => turn,
    }
}
