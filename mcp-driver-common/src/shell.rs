//! The client shell both drivers wear: the session and what every operation on it shares
//! ([`Shell`]: the session's lock, its observer, the authorizer slot, the signal that wakes the
//! operations waiting for the session), the rule an operation's deadline opens by
//! ([`Shell::open`], [`Opened`]), the typed reading of an [`Outcome`] ([`typed`]), and the
//! public methods of a driver's `Client` ([`client_shell!`](crate::client_shell)), written once
//! here.
//!
//! What it must never do: I/O of any kind, waiting (a driver waits its own way, on a thread or
//! in a future), or a decision about an operation (that is `mcp-proto`'s). It names neither
//! tokio nor ureq.
//!
//! # Why a macro for the methods
//! The two clients' methods are the same but for one thing: the tokio driver's are `async`.
//! A trait cannot carry them without changing the API (callers would import it, and an
//! `async fn` in a public trait promises no `Send` future), and a one-line method per driver
//! over shared functions would still write every signature and doc twice, free to drift. So
//! [`client_shell!`](crate::client_shell) takes the driver's `async` and `.await` tokens and
//! writes the signatures, the docs and the bodies once; what is the driver's own (how it runs
//! an operation, its clock, how it shares an authorizer, a few sentences of docs that differ)
//! is passed in.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use mcp_proto::driver::Operation;
use mcp_proto::{
    Action, Budget, CallToolResult, Completion, GetPromptResult, Listing, Observer,
    OperationDeadline, Outcome, Prompt, ReadResourceResult, Resource, ResourceTemplate, Session,
    SessionConfig, SessionInfo, SessionUpdate, StdioCommand, Tool, Transport,
};

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
    /// The server's label, as errors and spans name it.
    pub server: String,
    /// Over stdio: the command that starts the server process.
    pub stdio: Option<StdioCommand>,
    /// The operation's deadline: the caller's, or the one the session opened for its action.
    pub deadline: OperationDeadline,
}

impl<A: Clone, S: SessionSignal> Opened<'_, A, S> {
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
            .field("server", &self.server)
            .field("stdio", &self.stdio)
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
        let config = session.config();
        let stdio = match config.transport() {
            Transport::Stdio(command) => Some(command.clone()),
            _ => None,
        };
        Opened {
            shell: self,
            server: config.label().to_owned(),
            stdio,
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

macro_rules! action_results {
    ($($result:ty => $variant:ident, $action:literal;)*) => {$(
        impl ActionResult for $result {
            const ACTION: &'static str = $action;

            fn from_outcome(outcome: Outcome) -> Result<Self, Box<Outcome>> {
                match outcome {
                    Outcome::$variant(result) => Ok(result),
                    other => Err(Box::new(other)),
                }
            }
        }
    )*};
}

action_results! {
    SessionInfo => Probe, "probe";
    Listing<Tool> => Tools, "listing of tools";
    Listing<Resource> => Resources, "listing of resources";
    Listing<ResourceTemplate> => ResourceTemplates, "listing of resource templates";
    Listing<Prompt> => Prompts, "listing of prompts";
    ReadResourceResult => Resource, "read";
    GetPromptResult => Prompt, "prompt";
    CallToolResult => Call, "tool call";
    Completion => Completion, "completion";
}

/// Writes the public methods both drivers' `Client`s have, once: `new`, `connect`, `session`,
/// `set_token`, `set_observer`, `set_authorizer`, `cancel_handle`, the typed operations
/// (`probe`, `list_tools`, `list_resources`, `list_resource_templates`, `list_prompts`,
/// `read_resource`, `get_prompt`, `complete`, `call_tool`, `resume_task`, `cancel_task`, `close`,
/// `close_within`), `open_deadline`,
/// `run`, `run_within`, and `Debug`. See the [module docs](crate::shell) for why a macro.
///
/// The driver writes the rest: the struct, `with_network`, `Clone`, and a private
/// `fn operate(&self, action: Action, deadline: Option<OperationDeadline>) -> Result<Outcome,
/// Error>` (`async` on an async driver) that runs one operation to its end, opening the
/// deadline with [`Shell::open`] when it is `None`. It passes:
///
/// * `client`: the client type; `shell`: the path from `self` to its [`Shell`];
///   `cancel`: its field holding what `CancelHandle::new` takes (behind an `Arc`);
/// * `clock`: the [`Clock`](mcp_proto::Clock) its legs are timed by;
/// * `authorizer`: its `Authorizer` trait, and how one is shared (`|a| Arc::new(a)`);
/// * `call`: its `async` token (or nothing) and its `.await` tokens (or nothing);
/// * `opens`: when an operation's deadline opens, as a sentence ends ("when the method is
///   called");
/// * the doc lines of its own for `new`, `set_observer` and `close_within` (its example).
///
/// The driver's `CancelHandle` (with a `new` taking that `Arc`) must be in scope where it is
/// invoked.
#[macro_export]
macro_rules! client_shell {
    // The typed operations, one method each (a list of them is munched one at a time, so that
    // the driver's `async` and `.await` tokens reach every method).
    (@typed [$($async:tt)*] [$($await:tt)*]) => {};
    (@typed [$($async:tt)*] [$($await:tt)*]
        $(#[$doc:meta])*
        list fn $name:ident() -> $Entry:ident = $kind:ident;
        $($rest:tt)*
    ) => {
        $crate::client_shell! { @typed [$($async)*] [$($await)*]
            $(#[$doc])*
            fn $name() -> $crate::proto::Listing<$crate::proto::$Entry> =
                $crate::proto::Action::List($crate::proto::ListKind::$kind);
            $($rest)*
        }
    };
    (@typed [$($async:tt)*] [$($await:tt)*]
        $(#[$doc:meta])*
        fn $name:ident($($param:ident: $type:ty),* $(,)?) -> $Result:ty = $action:expr;
        $($rest:tt)*
    ) => {
        $(#[$doc])*
        ///
        /// # Errors
        /// Whatever ends the operation, as [`mcp_proto::Error`] says.
        pub $($async)* fn $name(&self, $($param: $type),*) -> Result<$Result, $crate::proto::Error> {
            self.operate($action, None)$($await)*.map($crate::shell::typed)
        }

        $crate::client_shell! { @typed [$($async)*] [$($await)*] $($rest)* }
    };
    (
        client: $Client:ident,
        shell: $($shell:ident).+,
        cancel: $cancel:ident,
        observer: $observer:ident,
        clock: $Clock:path,
        authorizer: $Authorizer:path => |$authorizer:ident| $share:expr,
        call: [$($async:tt)*] [$($await:tt)*],
        opens: $opens:literal,
        new: { $(#[$new_doc:meta])* },
        set_observer: { $(#[$observer_doc:meta])* },
        close_within: { $(#[$close_within_doc:meta])* },
    ) => {
        impl $Client {
            $(#[$new_doc])*
            pub fn new(config: $crate::proto::SessionConfig) -> Self {
                // The default network adds no CA of the caller's, so it cannot fail
                // (unreadable `SSL_CERT_FILE`/`SSL_CERT_DIR` entries are skipped).
                Self::with_network(config, &$crate::proto::Network::default()).unwrap_or_else(|_| {
                    unreachable!("the default network adds no CA of the caller's")
                })
            }

            /// A client for the endpoint at `url` with the default configuration (a 20 s
            /// budget per operation, whole-second grants). Sends nothing.
            ///
            /// # Errors
            /// [`Error::InvalidUrl`](mcp_proto::Error::InvalidUrl) when `url` is not an `http`
            /// or `https` URL with a host.
            pub fn connect(url: &str) -> Result<Self, $crate::proto::Error> {
                $crate::proto::SessionConfig::new(url).map(Self::new)
            }

            /// The session: its configuration and, while it lives, what the handshake
            /// established.
            ///
            /// The guard holds the session's lock, which every operation on this client (and
            /// its clones) takes briefly at its start and as it learns: read what you need and
            /// drop it; never hold it across an `.await`.
            pub fn session(&self) -> $crate::SessionGuard<'_> {
                self.$($shell).+.guard()
            }

            /// Presents `token` on every request from now on (one kept from an earlier run,
            /// say): no authorization is needed until the server refuses it.
            pub fn set_token(&self, token: $crate::proto::mcp_auth::AccessToken) {
                self.$($shell).+.session().set_token(token);
            }

            /// Reports every leg (the operation's [`LegReport`](mcp_proto::LegReport): its
            /// grant, the time it took, how it ended) and every event the server sends
            /// while answering, to `observer`, for every operation on the session (one report
            /// at a time). Replaces the previous observer; the default ignores everything.
            $(#[$observer_doc])*
            pub fn set_observer(&self, observer: impl $crate::proto::Observer + Send + 'static) {
                self.$($shell).+.set_observer(Box::new(observer));
            }

            /// A clone of this client (the same session, a cancel handle of its own as every
            /// clone has) whose operations report to `observer` instead of to the session's
            /// observer: for a caller that must tell one operation's events from another's (a
            /// bridge that relays each call's progress to whoever asked for it).
            pub fn with_observer(&self, observer: impl $crate::proto::Observer + Send + 'static) -> Self {
                let mut clone = ::std::clone::Clone::clone(self);
                let own = $crate::SharedObserver::default();
                own.set(Box::new(observer));
                clone.$observer = Some(::std::sync::Arc::new(own));
                clone
            }

            /// Lets authorizations that need a person go through `authorizer` (see
            /// [`SessionConfig::with_oauth`](mcp_proto::SessionConfig::with_oauth)). Without
            /// one, an operation whose authorization reaches the browser step ends at once
            /// with [`Error::AuthorizationRequired`](mcp_proto::Error::AuthorizationRequired).
            /// One authorization at a time per session: the other operations the server
            /// refused meanwhile wait for its token, each inside its own budget, rather than
            /// asking a person again.
            pub fn set_authorizer(&self, authorizer: impl $Authorizer + 'static) {
                let $authorizer = authorizer;
                self.$($shell).+.set_authorizer($share);
            }

            /// A handle that cancels, from another thread or task, the operations this client
            /// value has in flight (a clone has a handle of its own: give each operation that
            /// must be cancelled on its own a clone).
            pub fn cancel_handle(&self) -> CancelHandle {
                CancelHandle::new(::std::sync::Arc::clone(&self.$cancel))
            }

            $crate::client_shell! { @typed [$($async)*] [$($await)*]
                /// Checks the server answers, under the configured budget: the handshake on a
                /// new session, a `ping` on a live one. Returns what the handshake established
                /// (the negotiated version, the server's info).
                fn probe() -> $crate::proto::SessionInfo = $crate::proto::Action::Probe;

                /// Lists every tool, following `nextCursor` page by page (`tools/list`), all
                /// under the configured budget, the tools in order.
                list fn list_tools() -> Tool = Tools;
                /// Lists every resource, page by page (`resources/list`), all under the
                /// configured budget.
                list fn list_resources() -> Resource = Resources;
                /// Lists every resource template, page by page (`resources/templates/list`),
                /// all under the configured budget.
                list fn list_resource_templates() -> ResourceTemplate = ResourceTemplates;
                /// Lists every prompt, page by page (`prompts/list`), all under the configured
                /// budget.
                list fn list_prompts() -> Prompt = Prompts;

                /// Reads the resource at `uri` (one `resources/read`) under the configured
                /// budget.
                fn read_resource(uri: &str) -> $crate::proto::ReadResourceResult =
                    $crate::proto::Action::ReadResource { uri: uri.to_owned() };

                /// Gets the prompt `name` with `arguments` (one `prompts/get`) under the
                /// configured budget.
                fn get_prompt(
                    name: &str,
                    arguments: $crate::proto::serde_json::Map<String, $crate::proto::serde_json::Value>,
                ) -> $crate::proto::GetPromptResult =
                    $crate::proto::Action::GetPrompt { name: name.to_owned(), arguments };

                /// Calls the tool `name` with `arguments` (sent as `{}` when empty; one
                /// `tools/call`), under the configured budget (handshake included when the
                /// session is new).
                ///
                /// A tool that fails (`isError: true`) answers `Ok` with
                /// [`CallToolResult::is_error`](mcp_proto::CallToolResult::is_error) set: it is
                /// a result, not an error. `Err` means the call itself did not complete.
                fn call_tool(
                    name: &str,
                    arguments: $crate::proto::serde_json::Map<String, $crate::proto::serde_json::Value>,
                ) -> $crate::proto::CallToolResult =
                    $crate::proto::Action::CallTool { name: name.to_owned(), arguments };

                /// Asks the server to complete `argument` of `reference` (one
                /// `completion/complete`) given what is typed (`value`) and the other arguments
                /// already chosen (`context`), under the configured budget.
                fn complete(
                    reference: $crate::proto::CompletionRef,
                    argument: &str,
                    value: &str,
                    context: $crate::proto::serde_json::Map<String, $crate::proto::serde_json::Value>,
                ) -> $crate::proto::Completion = $crate::proto::Action::Complete {
                    reference,
                    argument: argument.to_owned(),
                    value: value.to_owned(),
                    context,
                };

                /// Polls `task` (handed back by an earlier call whose budget ran out:
                /// [`Error::TaskRunning`](mcp_proto::Error::TaskRunning)) with `tasks/get`
                /// under the configured budget until it is done, and returns the call's
                /// result. When this budget runs out too, the task is handed back again
                /// (with its newest status). The polls speak the task's era.
                fn resume_task(task: &$crate::proto::TaskHandle) -> $crate::proto::CallToolResult =
                    $crate::proto::Action::ResumeTask(task.clone());
            }

            /// Asks the server to cancel `task` (one `tasks/cancel`, under the configured
            /// budget). `Ok` once the server acknowledged it: cancelling is cooperative, and
            /// the task may still end otherwise (a later look says how).
            ///
            /// # Errors
            /// Whatever ends the operation, as [`mcp_proto::Error`] says (a JSON-RPC error
            /// when the server knows no such task).
            pub $($async)* fn cancel_task(&self, task: &$crate::proto::TaskHandle) -> Result<(), $crate::proto::Error> {
                let cancel = $crate::proto::Action::CancelTask(task.clone());
                self.operate(cancel, None)$($await)*.map(|_| ())
            }

            /// Ends the session on the server (a `DELETE`, under the session's close budget:
            /// the configured budget, at most
            /// [`CLOSE_BUDGET_CAP`](mcp_proto::SessionConfig::CLOSE_BUDGET_CAP)) and forgets
            /// it; the next operation starts a new one. Nothing is sent when there is no live
            /// session id. A server that does not allow it (405) or already forgot the session
            /// (404) counts as closed. Over stdio, the server process is ended within that
            /// budget.
            ///
            /// # Errors
            /// Whatever ends the operation, as [`mcp_proto::Error`] says.
            pub $($async)* fn close(&self) -> Result<(), $crate::proto::Error> {
                let close = $crate::proto::Action::Close;
                self.operate(close, None)$($await)*.map(|_| ())
            }

            /// Ends the session inside what `spent` (the deadline of the operation it follows,
            /// from [`open_deadline`](Self::open_deadline)) leaves, at most the close budget:
            /// what the operator waits for ends with that operation's budget. Once `spent` is
            /// spent nothing waits: no `DELETE` is sent
            /// ([`Error::BudgetExhausted`](mcp_proto::Error::BudgetExhausted); the server's
            /// idle timeout ends a legacy session), and a local server is killed at once. The
            /// session is forgotten either way. See
            /// [`Session::close_within`](mcp_proto::Session::close_within).
            ///
            $(#[$close_within_doc])*
            ///
            /// # Errors
            /// Whatever ends the operation, as [`mcp_proto::Error`] says.
            pub $($async)* fn close_within(
                &self,
                spent: &$crate::proto::OperationDeadline,
            ) -> Result<(), $crate::proto::Error> {
                let now = $crate::proto::Clock::now(&$Clock);
                let deadline = spent.remainder(now, $crate::proto::SessionConfig::CLOSE_BUDGET_CAP);
                let close = $crate::proto::Action::Close;
                self.operate(close, Some(deadline))$($await)*.map(|_| ())
            }

            /// Opens a deadline now (by the clock this driver times legs with) under the
            /// configured budget and resolution, for [`run_within`](Self::run_within): the
            /// caller holds the operation's deadline, and can give what follows it (its close)
            /// only what it leaves.
            pub fn open_deadline(&self) -> $crate::proto::OperationDeadline {
                let now = $crate::proto::Clock::now(&$Clock);
                self.$($shell).+.open_deadline(now)
            }

            #[doc = concat!(
                "Runs `action` as one operation under `budget` (instead of the configured ",
                "one), with grants rounded to the configured resolution. The deadline opens ",
                $opens, ".\n\n",
                "# Errors\n",
                "Whatever ends the operation, as [`mcp_proto::Error`] says.",
            )]
            pub $($async)* fn run(
                &self,
                action: $crate::proto::Action,
                budget: $crate::proto::Budget,
            ) -> Result<$crate::proto::Outcome, $crate::proto::Error> {
                let now = $crate::proto::Clock::now(&$Clock);
                let deadline = self.$($shell).+.deadline_under(budget, now);
                self.operate(action, Some(deadline))$($await)*
            }

            /// Runs `action` as one operation under `deadline`, which the caller opened (with
            /// [`open_deadline`](Self::open_deadline), or earlier, to count time spent before
            /// the call).
            ///
            /// # Errors
            /// Whatever ends the operation, as [`mcp_proto::Error`] says.
            pub $($async)* fn run_within(
                &self,
                action: $crate::proto::Action,
                deadline: $crate::proto::OperationDeadline,
            ) -> Result<$crate::proto::Outcome, $crate::proto::Error> {
                self.operate(action, Some(deadline))$($await)*
            }
        }

        impl ::std::fmt::Debug for $Client {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.debug_struct(stringify!($Client))
                    .field("session", &*self.$($shell).+.session())
                    .finish_non_exhaustive()
            }
        }
    };
}
