//! What the shared suite needs: one [`Driver`] trait over both clients, a recorder for what
//! they report, and small helpers (configs, arguments, bounds).

use std::fmt;
use std::time::{Duration, Instant};

use mcp_driver_common::network::Network;
use mcp_proto::request::Request;
use mcp_proto::{
    Action, Budget, CallToolResult, Error, Listed, Listing, Outcome, Resolution, Session,
    SessionConfig, SessionInfo, Tool,
};
use mcp_testkit::TestServer;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// One MCP client, driven synchronously, whatever it runs on. Every method is one operation
/// under one budget, exactly as the client's own method is.
pub(crate) trait Driver: Sized + Send + fmt::Debug + 'static {
    /// The module the macro instantiates this driver's tests in (`blocking`, `tokio`...), so a
    /// test can name itself to re-run in a child process.
    const MODULE: &'static str;

    fn new(config: SessionConfig) -> Self;
    fn with_network(config: SessionConfig, network: &Network) -> Result<Self, Error>;
    fn connect(url: &str) -> Result<Self, Error>;
    fn probe(&mut self) -> Result<SessionInfo, Error>;
    fn list_tools(&mut self) -> Result<Listing<Tool>, Error>;
    fn list<E: Listed>(&mut self) -> Result<Listing<E>, Error>;
    fn request<R: Request>(&mut self, request: R) -> Result<R::Output, Error>;
    fn call_tool(
        &mut self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<CallToolResult, Error>;
    /// `call_tool_as::<T>`: the call, its result read into `T`.
    fn call_tool_as<T: DeserializeOwned>(
        &mut self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<T, Error>;
    fn run(&mut self, action: Action, budget: Budget) -> Result<Outcome, Error>;
    fn close(&mut self) -> Result<(), Error>;
    fn open_deadline(&self) -> mcp_proto::OperationDeadline;
    fn run_within(
        &mut self,
        action: Action,
        deadline: mcp_proto::OperationDeadline,
    ) -> Result<Outcome, Error>;
    fn close_within(&mut self, spent: &mcp_proto::OperationDeadline) -> Result<(), Error>;
    fn session(&self) -> impl std::ops::Deref<Target = Session> + '_;
    /// Installs a fresh recorder as the client's observer and returns it.
    fn observe(&mut self) -> Recorder;
    /// Lets the browser step of an authorization go through the driver's
    /// `HeadlessAuthorizer` (a GET of the authorization URL, its redirect not followed).
    fn authorize_headlessly(&mut self);
    /// Lets the browser step go through an authorizer that never answers (a person who walked
    /// away, a listener that hangs).
    fn authorize_never(&mut self);
    /// Cancels this client's operation in flight, from any thread.
    fn cancel_handle(&self) -> Box<dyn Fn() + Send + Sync>;
    /// Calls `name` through a clone of this client cancelled for good (`cancel_for_good`)
    /// before the call began.
    fn call_cancelled_for_good(&self, name: &str, arguments: Map<String, Value>) -> Called;
    /// Calls `name` through a clone of this client with an observer of its own
    /// (`with_observer`), and returns the result and what that observer recorded.
    fn call_observed(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> (Result<CallToolResult, Error>, Recorder);
    /// Runs `calls` at once on this one client (the blocking driver: a thread each, sharing
    /// the client by reference; tokio: a task each, on a clone), and returns their results in
    /// order. The call `cancel.0` runs through a clone of its own, whose cancel handle fires
    /// once `cancel.1` returns (on a thread of its own).
    fn call_tools_at_once(
        &self,
        calls: Vec<Call>,
        cancel: Option<(usize, Trigger<'_>)>,
    ) -> Vec<Called>;
    /// Polls `condition` every 10 ms until it holds or `within` is over, letting the client's
    /// background work (a runtime's connection tasks) go on meanwhile, as it would between
    /// operations in a real program.
    fn wait_until(&mut self, within: Duration, condition: &mut dyn FnMut() -> bool) -> bool {
        eventually(within, condition)
    }
}

/// A tool call: the tool's name and its arguments.
pub(crate) type Call = (&'static str, Map<String, Value>);
/// What a tool call returned.
pub(crate) type Called = Result<CallToolResult, Error>;
/// Returns when it is time to cancel.
pub(crate) type Trigger<'a> = Box<dyn FnOnce() + Send + 'a>;

/// The blocking client, called directly.
#[derive(Debug)]
pub(crate) struct Blocking(mcp_driver_blocking::Client);

impl Driver for Blocking {
    const MODULE: &'static str = "blocking";

    fn new(config: SessionConfig) -> Self {
        Self(mcp_driver_blocking::Client::new(config))
    }

    fn connect(url: &str) -> Result<Self, Error> {
        mcp_driver_blocking::Client::connect(url).map(Self)
    }

    fn with_network(config: SessionConfig, network: &Network) -> Result<Self, Error> {
        mcp_driver_blocking::Client::with_network(config, network).map(Self)
    }

    fn probe(&mut self) -> Result<SessionInfo, Error> {
        self.0.probe()
    }

    fn list_tools(&mut self) -> Result<Listing<Tool>, Error> {
        self.0.list_tools()
    }

    fn list<E: Listed>(&mut self) -> Result<Listing<E>, Error> {
        self.0.list::<E>()
    }

    fn request<R: Request>(&mut self, request: R) -> Result<R::Output, Error> {
        self.0.request(request)
    }

    fn call_tool(
        &mut self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<CallToolResult, Error> {
        self.0.call_tool(name, arguments)
    }

    fn call_tool_as<T: DeserializeOwned>(
        &mut self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<T, Error> {
        self.0.call_tool_as::<T>(name, arguments)
    }

    fn run(&mut self, action: Action, budget: Budget) -> Result<Outcome, Error> {
        self.0.run(action, budget)
    }

    fn close(&mut self) -> Result<(), Error> {
        self.0.close()
    }

    fn open_deadline(&self) -> mcp_proto::OperationDeadline {
        self.0.open_deadline()
    }

    fn run_within(
        &mut self,
        action: Action,
        deadline: mcp_proto::OperationDeadline,
    ) -> Result<Outcome, Error> {
        self.0.run_within(action, deadline)
    }

    fn close_within(&mut self, spent: &mcp_proto::OperationDeadline) -> Result<(), Error> {
        self.0.close_within(spent)
    }

    fn session(&self) -> impl std::ops::Deref<Target = Session> + '_ {
        self.0.session()
    }

    fn observe(&mut self) -> Recorder {
        let recorder = Recorder::default();
        self.0.set_observer(recorder.clone());
        recorder
    }

    fn authorize_headlessly(&mut self) {
        self.0
            .set_authorizer(mcp_driver_blocking::HeadlessAuthorizer::new());
    }

    fn authorize_never(&mut self) {
        self.0.set_authorizer(
            |_: &mcp_proto::driver::Authorize| -> Result<String, String> {
                std::thread::sleep(Duration::from_secs(3600));
                Err("the person walked away".into())
            },
        );
    }

    fn cancel_handle(&self) -> Box<dyn Fn() + Send + Sync> {
        let handle = self.0.cancel_handle();
        Box::new(move || handle.cancel())
    }

    fn call_cancelled_for_good(&self, name: &str, arguments: Map<String, Value>) -> Called {
        let own = self.0.clone();
        own.cancel_handle().cancel_for_good();
        own.call_tool(name, arguments)
    }

    fn call_observed(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> (Result<CallToolResult, Error>, Recorder) {
        let recorder = Recorder::default();
        let own = self.0.with_observer(recorder.clone());
        (own.call_tool(name, arguments), recorder)
    }

    fn call_tools_at_once(
        &self,
        calls: Vec<Call>,
        cancel: Option<(usize, Trigger<'_>)>,
    ) -> Vec<Called> {
        let (cancelled, trigger) = cancel.map_or((None, None), |(i, t)| (Some(i), Some(t)));
        let own = self.0.clone();
        let handle = own.cancel_handle();
        std::thread::scope(|scope| {
            if let Some(trigger) = trigger {
                scope.spawn(move || {
                    trigger();
                    handle.cancel();
                });
            }
            let threads: Vec<_> = calls
                .into_iter()
                .enumerate()
                .map(|(i, (name, arguments))| {
                    let client = if Some(i) == cancelled { &own } else { &self.0 };
                    scope.spawn(move || client.call_tool(name, arguments))
                })
                .collect();
            threads
                .into_iter()
                .map(|t| t.join().expect("a call's thread panicked"))
                .collect()
        })
    }
}

/// The tokio client on a runtime of its own, each operation run to its end with `block_on`:
/// a multi-thread runtime (two workers) when `MULTI`, else a current-thread one (what
/// `#[tokio::test]` gives).
pub(crate) struct Tokio<const MULTI: bool> {
    client: mcp_driver_tokio::Client,
    runtime: tokio::runtime::Runtime,
}

impl<const MULTI: bool> fmt::Debug for Tokio<MULTI> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokio")
            .field("multi_thread", &MULTI)
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}

impl<const MULTI: bool> Tokio<MULTI> {
    fn with_client(client: mcp_driver_tokio::Client) -> Self {
        let mut builder = if MULTI {
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            builder.worker_threads(2);
            builder
        } else {
            tokio::runtime::Builder::new_current_thread()
        };
        let runtime = builder.enable_all().build().expect("a tokio runtime");
        Self { client, runtime }
    }
}

impl<const MULTI: bool> Driver for Tokio<MULTI> {
    const MODULE: &'static str = if MULTI {
        "tokio"
    } else {
        "tokio_current_thread"
    };

    fn new(config: SessionConfig) -> Self {
        Self::with_client(mcp_driver_tokio::Client::new(config))
    }

    fn connect(url: &str) -> Result<Self, Error> {
        mcp_driver_tokio::Client::connect(url).map(Self::with_client)
    }

    fn with_network(config: SessionConfig, network: &Network) -> Result<Self, Error> {
        mcp_driver_tokio::Client::with_network(config, network).map(Self::with_client)
    }

    fn probe(&mut self) -> Result<SessionInfo, Error> {
        self.runtime.block_on(self.client.probe())
    }

    fn list_tools(&mut self) -> Result<Listing<Tool>, Error> {
        self.runtime.block_on(self.client.list_tools())
    }

    fn list<E: Listed>(&mut self) -> Result<Listing<E>, Error> {
        self.runtime.block_on(self.client.list::<E>())
    }

    fn request<R: Request>(&mut self, request: R) -> Result<R::Output, Error> {
        self.runtime.block_on(self.client.request(request))
    }

    fn call_tool(
        &mut self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<CallToolResult, Error> {
        self.runtime
            .block_on(self.client.call_tool(name, arguments))
    }

    fn call_tool_as<T: DeserializeOwned>(
        &mut self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<T, Error> {
        self.runtime
            .block_on(self.client.call_tool_as::<T>(name, arguments))
    }

    fn run(&mut self, action: Action, budget: Budget) -> Result<Outcome, Error> {
        self.runtime.block_on(self.client.run(action, budget))
    }

    fn close(&mut self) -> Result<(), Error> {
        self.runtime.block_on(self.client.close())
    }

    fn open_deadline(&self) -> mcp_proto::OperationDeadline {
        self.client.open_deadline()
    }

    fn run_within(
        &mut self,
        action: Action,
        deadline: mcp_proto::OperationDeadline,
    ) -> Result<Outcome, Error> {
        self.runtime
            .block_on(self.client.run_within(action, deadline))
    }

    fn close_within(&mut self, spent: &mcp_proto::OperationDeadline) -> Result<(), Error> {
        self.runtime.block_on(self.client.close_within(spent))
    }

    fn session(&self) -> impl std::ops::Deref<Target = Session> + '_ {
        self.client.session()
    }

    fn observe(&mut self) -> Recorder {
        let recorder = Recorder::default();
        self.client.set_observer(recorder.clone());
        recorder
    }

    fn authorize_headlessly(&mut self) {
        self.client
            .set_authorizer(mcp_driver_tokio::HeadlessAuthorizer::new());
    }

    fn authorize_never(&mut self) {
        struct Never;
        impl mcp_driver_tokio::Authorizer for Never {
            fn authorize(
                &self,
                _: &mcp_proto::driver::Authorize,
            ) -> mcp_driver_tokio::AuthorizeFuture {
                Box::pin(std::future::pending())
            }
        }
        self.client.set_authorizer(Never);
    }

    fn cancel_handle(&self) -> Box<dyn Fn() + Send + Sync> {
        let handle = self.client.cancel_handle();
        Box::new(move || handle.cancel())
    }

    fn call_cancelled_for_good(&self, name: &str, arguments: Map<String, Value>) -> Called {
        let own = self.client.clone();
        own.cancel_handle().cancel_for_good();
        self.runtime.block_on(own.call_tool(name, arguments))
    }

    fn call_observed(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> (Result<CallToolResult, Error>, Recorder) {
        let recorder = Recorder::default();
        let own = self.client.with_observer(recorder.clone());
        (
            self.runtime.block_on(own.call_tool(name, arguments)),
            recorder,
        )
    }

    fn call_tools_at_once(
        &self,
        calls: Vec<Call>,
        cancel: Option<(usize, Trigger<'_>)>,
    ) -> Vec<Called> {
        let (cancelled, trigger) = cancel.map_or((None, None), |(i, t)| (Some(i), Some(t)));
        // The cancelled call's clone, shared (not cloned again: a clone has its own handle).
        let own = std::sync::Arc::new(self.client.clone());
        let handle = own.cancel_handle();
        std::thread::scope(|scope| {
            if let Some(trigger) = trigger {
                scope.spawn(move || {
                    trigger();
                    handle.cancel();
                });
            }
            self.runtime.block_on(async {
                let tasks: Vec<_> = calls
                    .into_iter()
                    .enumerate()
                    .map(|(i, (name, arguments))| {
                        let client = if Some(i) == cancelled {
                            std::sync::Arc::clone(&own)
                        } else {
                            std::sync::Arc::new(self.client.clone())
                        };
                        tokio::spawn(async move { client.call_tool(name, arguments).await })
                    })
                    .collect();
                let mut called = Vec::new();
                for task in tasks {
                    called.push(task.await.expect("a call's task panicked"));
                }
                called
            })
        })
    }

    fn wait_until(&mut self, within: Duration, condition: &mut dyn FnMut() -> bool) -> bool {
        self.runtime.block_on(async {
            let end = tokio::time::Instant::now() + within;
            loop {
                if condition() {
                    return true;
                }
                if tokio::time::Instant::now() >= end {
                    return false;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
    }
}

pub(crate) use mcp_testkit::Recorder;

/// How far past its budget a timed-out operation may end on a slow, noisy CI machine, on top
/// of the one resolution unit the grants may round up by.
pub(crate) const MARGIN: Duration = Duration::from_millis(1500);

/// A configuration for `server` with `budget` at millisecond resolution.
pub(crate) fn config(server: &TestServer, budget: Duration) -> SessionConfig {
    SessionConfig::new(&server.url())
        .expect("the test server's URL is valid")
        .with_budget(Budget::from_duration(budget))
        .with_resolution(Resolution::MILLISECOND)
        // The legacy era, pinned: these suites cover the handshake and sessions (the era
        // suite covers detection and the modern era).
        .with_protocol_version(mcp_proto::ProtocolVersion::LATEST)
}

/// A client for `server` with `budget` at millisecond resolution, reporting to a recorder.
pub(crate) fn new_client<D: Driver>(server: &TestServer, budget: Duration) -> (D, Recorder) {
    let mut client = D::new(config(server, budget));
    let recorder = client.observe();
    (client, recorder)
}

/// `{"text": text}`, the echo tool's arguments.
pub(crate) fn echo(text: &str) -> Map<String, Value> {
    args(&[("text", Value::from(text))])
}

/// Tool arguments from pairs.
/// The action of a `tools/call` of `echo` with `text`.
pub(crate) fn echo_call(text: &str) -> Action {
    Action::CallTool {
        name: "echo".into(),
        arguments: echo(text),
    }
}

pub(crate) fn args(pairs: &[(&str, Value)]) -> Map<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

/// Asserts an operation that took `elapsed` under `budget` at resolution `unit` ended no later
/// than budget + one unit + [`MARGIN`].
#[track_caller]
pub(crate) fn assert_within_budget(
    what: &str,
    elapsed: Duration,
    budget: Duration,
    unit: Duration,
) {
    let bound = budget + unit + MARGIN;
    assert!(
        elapsed <= bound,
        "{what}: the operation took {elapsed:?}, past budget {budget:?} + one unit {unit:?} + margin {MARGIN:?}"
    );
}

/// Polls `condition` every 10 ms until it holds or `within` is over: the wait for a state a
/// test is about (a signal the stdio server raised, a connection closing, a process gone).
pub(crate) fn eventually(within: Duration, condition: &mut dyn FnMut() -> bool) -> bool {
    let end = Instant::now() + within;
    loop {
        if condition() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The peak resident set size of this process so far (`VmHWM`), where the kernel tells it.
pub(crate) fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}
