//! The client shell both drivers wear: the session and what every operation on it shares
//! ([`Shell`]: the session's lock, its observer, the authorizer slot, the signal that wakes the
//! operations waiting for the session), the rule an operation's deadline opens by
//! ([`Shell::open`], [`Opened`]), and the typed reading of an [`Outcome`] ([`typed`],
//! [`Shell::answer`]). Each driver writes its `Client`'s public methods as plain code (the
//! tokio driver's are `async`), each one line over what is here.
//!
//! What it must never do: I/O of any kind, waiting (a driver waits its own way, on a thread or
//! in a future), or a decision about an operation (that is `mcp-proto`'s). It names neither
//! tokio nor ureq, and no MCP method: a request's own knowledge is in `mcp_proto::request`.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use mcp_proto::driver::Operation;
use mcp_proto::request::{Answer, Request};
use mcp_proto::{
    Action, Budget, CallToolResult, Error, Listed, Listing, Observer, OperationDeadline, Outcome,
    Session, SessionConfig, SessionInfo, SessionUpdate, StdioCommand, Transport,
};
use serde::de::DeserializeOwned;

use crate::{OsEntropy, Reporter, SessionGuard, SharedObserver};

/// How a driver wakes the operations that wait for the session (to take the session another
/// operation establishes, or a token another authorization got): a condition variable on the
/// blocking driver, tokio's `Notify` on the other.
pub trait SessionSignal {
    /// Wakes every operation waiting for the session now. Called under the session's lock
    /// when an operation ends (see [`Opened`]), so a waiter that registers under that
    /// lock before it waits misses no change.
    fn notify_all(&self);
}

impl SessionSignal for Condvar {
    fn notify_all(&self) {
        Self::notify_all(self);
    }
}

/// What every clone of a client shares, whichever driver runs it: the session, locked only to
/// start an operation, apply what one learned, or hand it the session it waits for (never
/// across an `.await`); the observer every operation reports to; the caller's authorizer, as
/// the driver shares it (`A`); and the signal that wakes the operations waiting for the
/// session (`S`).
pub struct Shell<A, S> {
    session: Mutex<Session>,
    changed: S,
    observer: SharedObserver,
    authorizer: Mutex<Option<A>>,
}

impl<A, S> std::fmt::Debug for Shell<A, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let session = self.session.lock().unwrap_or_else(PoisonError::into_inner);
        f.debug_struct("Shell")
            .field("session", &*session)
            .finish_non_exhaustive()
    }
}

/// An operation opened at its call, not started yet: what it took from the session (the
/// server's label, for its span; the local server to run when the session is over stdio; its
/// deadline), and the guard that wakes the operations waiting for the session when it drops
/// (however the operation ends: its claim on the handshake ends with it). Keep it until the
/// operation is gone: declared before the operation, it drops after it.
pub struct Opened<'a, A: Clone, S: SessionSignal> {
    shell: &'a Shell<A, S>,
    /// The session's configuration, shared (not copied: an operation reads its label and
    /// its command).
    config: Arc<SessionConfig>,
    /// The operation's deadline: the caller's, or the one the session opened for its action.
    pub deadline: OperationDeadline,
}

impl<A: Clone, S: SessionSignal> Opened<'_, A, S> {
    /// The server's label, as errors and spans name it.
    pub fn server(&self) -> &str {
        self.config.label()
    }

    /// Over stdio: the command that starts the server process.
    pub fn stdio(&self) -> Option<&StdioCommand> {
        match self.config.transport() {
            Transport::Stdio(command) => Some(command),
            _ => None,
        }
    }

    /// Starts `action` (the one it was opened for) under its deadline at `now`, telling the
    /// session the time of day first (tokens expire by the wall clock).
    pub fn start(&self, action: Action, now: Instant) -> Operation {
        let mut session = self.shell.session();
        session.set_time_of_day(now, std::time::SystemTime::now());
        session.start(action, self.deadline)
    }
}

impl<A: Clone, S: SessionSignal> Drop for Opened<'_, A, S> {
    fn drop(&mut self) {
        self.shell.wake_waiters();
    }
}

impl<A: Clone, S: SessionSignal> std::fmt::Debug for Opened<'_, A, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Opened")
            .field("server", &self.server())
            .field("stdio", &self.stdio())
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

impl<A: Clone, S: SessionSignal> Shell<A, S> {
    /// The shell of a new client for the server `config` describes, waking waiters with
    /// `changed`. Its authorizations draw from the operating system's random source.
    pub fn new(config: SessionConfig, changed: S) -> Self {
        let mut session = Session::new(config);
        session.set_entropy(Box::new(OsEntropy));
        Self {
            session: Mutex::new(session),
            changed,
            observer: SharedObserver::default(),
            authorizer: Mutex::new(None),
        }
    }

    /// The session, locked (a poisoned lock is taken as it is: the session holds no invariant
    /// a panicking operation can break halfway). Drop the guard before anything waits.
    pub fn session(&self) -> MutexGuard<'_, Session> {
        self.session.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The session, lent to the client's caller.
    pub fn guard(&self) -> SessionGuard<'_> {
        SessionGuard::new(self.session())
    }

    /// The signal the operations waiting for the session wait on.
    pub fn changed(&self) -> &S {
        &self.changed
    }

    /// Applies what an operation learned, then wakes the operations waiting for the session.
    pub fn apply(&self, update: SessionUpdate) {
        self.session().apply(update);
        self.changed.notify_all();
    }

    /// Wakes the operations waiting for the session, under its lock (so one between its check
    /// and its wait cannot miss it): an operation ended (see [`Opened`]), or one waiting was
    /// cancelled.
    pub fn wake_waiters(&self) {
        let _session = self.session();
        self.changed.notify_all();
    }

    /// Replaces the observer every operation reports to.
    pub fn set_observer(&self, observer: Box<dyn Observer + Send>) {
        self.observer.set(observer);
    }

    /// What an operation reports through.
    pub fn reporter(&self) -> Reporter<'_> {
        self.observer.reporter()
    }

    /// Lets the authorizations that need a person go through `authorizer` from now on.
    pub fn set_authorizer(&self, authorizer: A) {
        *self
            .authorizer
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(authorizer);
    }

    /// The authorizer an operation starting now goes through, if the caller set one.
    pub fn authorizer(&self) -> Option<A> {
        self.authorizer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// A deadline opened at `now` under the configured budget and resolution.
    pub fn open_deadline(&self, now: Instant) -> OperationDeadline {
        let session = self.session();
        session.deadline_under(session.config().budget(), now)
    }

    /// A deadline opened at `now` under `budget`, with the configured resolution.
    pub fn deadline_under(&self, budget: Budget, now: Instant) -> OperationDeadline {
        self.session().deadline_under(budget, now)
    }

    /// Opens the operation for `action` at `now` (its call): under `deadline` when the caller
    /// opened one, else under the session's for that action, opened at `now` whatever the
    /// operation waits for first (its turn on a stdio server, the session).
    pub fn open(
        &self,
        action: &Action,
        deadline: Option<OperationDeadline>,
        now: Instant,
    ) -> Opened<'_, A, S> {
        let session = self.session();
        Opened {
            shell: self,
            config: session.shared_config(),
            deadline: deadline.unwrap_or_else(|| session.deadline_for(action, now)),
        }
    }
}

/// The typed result of one of the actions a client has a method for, read off the
/// [`Outcome`] of its operation.
pub trait ActionResult: Sized {
    /// What the action is called in the panic of [`typed`].
    const ACTION: &'static str;

    /// The result `outcome` holds, or `outcome` itself when it is another action's (boxed:
    /// that is a bug, and the result's size is the one that matters).
    fn from_outcome(outcome: Outcome) -> Result<Self, Box<Outcome>>;
}

/// The result the operation of `T`'s action ended with. The state machine answers each action
/// with its own outcome; anything else is a bug there, and panics.
#[track_caller]
pub fn typed<T: ActionResult>(outcome: Outcome) -> T {
    T::from_outcome(outcome).unwrap_or_else(|other| {
        panic!(
            "mcp-proto answered a {} with the outcome of another action: {other:?}",
            T::ACTION
        )
    })
}

impl ActionResult for SessionInfo {
    const ACTION: &'static str = "probe";

    fn from_outcome(outcome: Outcome) -> Result<Self, Box<Outcome>> {
        match outcome {
            Outcome::Probe(info) => Ok(info),
            other => Err(Box::new(other)),
        }
    }
}

impl ActionResult for CallToolResult {
    const ACTION: &'static str = "tool call";

    fn from_outcome(outcome: Outcome) -> Result<Self, Box<Outcome>> {
        match outcome {
            Outcome::Call(result) => Ok(result),
            other => Err(Box::new(other)),
        }
    }
}

impl ActionResult for Answer {
    const ACTION: &'static str = "one-request method";

    fn from_outcome(outcome: Outcome) -> Result<Self, Box<Outcome>> {
        match outcome {
            Outcome::Answer(answer) => Ok(answer),
            other => Err(Box::new(other)),
        }
    }
}

impl<E: Listed> ActionResult for Listing<E> {
    const ACTION: &'static str = "listing";

    fn from_outcome(outcome: Outcome) -> Result<Self, Box<Outcome>> {
        E::from_outcome(outcome)
    }
}

impl<A: Clone, S: SessionSignal> Shell<A, S> {
    /// The answer `outcome` holds, read as `R`'s (the error names this client's server).
    ///
    /// # Errors
    /// [`Error::Malformed`] when the result is not what `R` answers.
    pub fn answer<R: Request>(&self, outcome: Outcome) -> Result<R::Output, Error> {
        let server = self.session().config().label().to_owned();
        typed::<Answer>(outcome).read::<R>(&server)
    }

    /// The call's result read as `T` from its `structuredContent` (the error names this
    /// client's server and the tool, and holds the result).
    ///
    /// # Errors
    /// [`Error::UnreadableResult`] when the tool failed, sent nothing structured, or sent
    /// something that is not a `T`.
    pub fn structured<T: DeserializeOwned>(
        &self,
        tool: &str,
        result: CallToolResult,
    ) -> Result<T, Error> {
        result
            .structured::<T>()
            .map_err(|reason| Error::UnreadableResult {
                server: self.session().config().label().to_owned(),
                tool: mcp_auth::clip(tool, mcp_auth::QUOTE_LIMIT),
                type_name: std::any::type_name::<T>(),
                reason,
                result: Box::new(result),
            })
    }
}
