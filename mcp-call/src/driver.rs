//! Either driver behind one face, so every command runs the same way on both.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use clap::ValueEnum;
use mcp_proto::{Action, Error, OperationDeadline, Outcome, SessionConfig};

use crate::report::Reporter;

/// Which driver runs the operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum DriverKind {
    /// mcp-driver-blocking (ureq 3).
    Blocking,
    /// mcp-driver-tokio, on a current-thread runtime.
    Tokio,
}

impl DriverKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Blocking => "blocking",
            Self::Tokio => "tokio",
        }
    }
}

// One per process: the difference in size between the variants does not matter.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Client {
    Blocking(mcp_driver_blocking::Client),
    /// The runtime is shared with the handles [`Client::for_runs`] makes.
    Tokio(Arc<tokio::runtime::Runtime>, mcp_driver_tokio::Client),
}

/// Fires whichever driver's cancel handle.
#[derive(Clone)]
pub(crate) enum Cancel {
    Blocking(mcp_driver_blocking::CancelHandle),
    Tokio(mcp_driver_tokio::CancelHandle),
}

impl Cancel {
    /// Cancels the operation in flight, if any (a command's Ctrl-C during its close).
    pub(crate) fn cancel(&self) {
        match self {
            Self::Blocking(handle) => handle.cancel(),
            Self::Tokio(handle) => handle.cancel(),
        }
    }

    /// Cancels the operation of the client clone this handle came from, whether it has begun
    /// or not, and every later one: for a clone made for one operation (the bridge's), whose
    /// cancel may come before its thread or task has begun it.
    pub(crate) fn cancel_for_good(&self) {
        match self {
            Self::Blocking(handle) => handle.cancel_for_good(),
            Self::Tokio(handle) => handle.cancel_for_good(),
        }
    }
}

/// How many threads the tokio driver's runtime runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Threads {
    /// The calling thread only: every command but the bridge.
    One,
    /// Workers of their own: the bridge, where an operation may block its thread while the
    /// host answers one of the upstream's requests, and the others must go on.
    Workers,
}

impl Client {
    pub(crate) fn new(
        kind: DriverKind,
        config: SessionConfig,
        network: &mcp_driver_common::network::Network,
        reporter: Reporter,
    ) -> std::io::Result<Self> {
        Self::with_threads(kind, config, network, reporter, Threads::One)
    }

    pub(crate) fn with_threads(
        kind: DriverKind,
        config: SessionConfig,
        network: &mcp_driver_common::network::Network,
        reporter: Reporter,
        threads: Threads,
    ) -> std::io::Result<Self> {
        let unusable = |err: mcp_proto::Error| std::io::Error::other(err.to_string());
        Ok(match kind {
            DriverKind::Blocking => {
                let client =
                    mcp_driver_blocking::Client::with_network(config, network).map_err(unusable)?;
                client.set_observer(reporter);
                Self::Blocking(client)
            }
            DriverKind::Tokio => {
                let mut builder = match threads {
                    Threads::One => tokio::runtime::Builder::new_current_thread(),
                    Threads::Workers => {
                        let mut builder = tokio::runtime::Builder::new_multi_thread();
                        builder.worker_threads(2);
                        builder
                    }
                };
                let runtime = builder.enable_all().build()?;
                // Built inside the runtime, where anything it registers belongs.
                let client = runtime
                    .block_on(async { mcp_driver_tokio::Client::with_network(config, network) })
                    .map_err(unusable)?;
                client.set_observer(reporter);
                Self::Tokio(Arc::new(runtime), client)
            }
        })
    }

    /// Lets the browser step of an authorization go through `loopback` (`login`).
    pub(crate) fn set_authorizer(&mut self, loopback: crate::login::Loopback) {
        match self {
            Self::Blocking(client) => client.set_authorizer(loopback),
            Self::Tokio(_, client) => client.set_authorizer(loopback),
        }
    }

    /// Presents `token` from the first request on.
    pub(crate) fn set_token(&mut self, token: mcp_auth::AccessToken) {
        match self {
            Self::Blocking(client) => client.set_token(token),
            Self::Tokio(_, client) => client.set_token(token),
        }
    }

    /// Whether the session holds a token (an authorization happened, or one was presented).
    pub(crate) fn has_token(&self) -> bool {
        match self {
            Self::Blocking(client) => client.session().token().is_some(),
            Self::Tokio(_, client) => client.session().token().is_some(),
        }
    }

    /// Another handle on the same session (and runtime) with a cancel of its own: a
    /// command's runs go through it, so that its Ctrl-C cancels them for good (the run in
    /// flight and every run after it, even one that had not begun when the signal came)
    /// while the tidy close still goes through this one.
    pub(crate) fn for_runs(&self) -> Self {
        match self {
            Self::Blocking(client) => Self::Blocking(client.clone()),
            Self::Tokio(runtime, client) => Self::Tokio(Arc::clone(runtime), client.clone()),
        }
    }

    pub(crate) fn cancel_handle(&self) -> Cancel {
        match self {
            Self::Blocking(client) => Cancel::Blocking(client.cancel_handle()),
            Self::Tokio(_, client) => Cancel::Tokio(client.cancel_handle()),
        }
    }

    /// Ends the session (a DELETE; over stdio, the server process) inside what `spent`, the
    /// last operation's deadline, leaves, at most the close's cap: nothing is sent once it is
    /// spent, and a local server is then killed at once. Without an operation before it, under
    /// the close's own small budget.
    pub(crate) fn close_within(&mut self, spent: Option<&OperationDeadline>) -> Result<(), Error> {
        match (self, spent) {
            (Self::Blocking(client), Some(spent)) => client.close_within(spent),
            (Self::Blocking(client), None) => client.close(),
            (Self::Tokio(runtime, client), Some(spent)) => {
                runtime.block_on(client.close_within(spent))
            }
            (Self::Tokio(runtime, client), None) => runtime.block_on(client.close()),
        }
    }

    /// Runs `action` as one operation under the configured budget, opened now: its result,
    /// and its deadline (what follows it may spend only what it left).
    pub(crate) fn run(&mut self, action: Action) -> (Result<Outcome, Error>, OperationDeadline) {
        match self {
            Self::Blocking(client) => {
                let deadline = client.open_deadline();
                (client.run_within(action, deadline), deadline)
            }
            Self::Tokio(runtime, client) => {
                let deadline = client.open_deadline();
                (
                    runtime.block_on(client.run_within(action, deadline)),
                    deadline,
                )
            }
        }
    }

    /// Runs `action` `runs` times, one after the other, each under the configured budget
    /// opened as it starts. `report` gets each run's time, deadline and result as it ends;
    /// once it answers false no more runs start. `reporter` brackets every run (its spinner
    /// and trace). On tokio the whole series is one `block_on`, as a tokio program's loop
    /// would be: entering the runtime once, not once a call.
    pub(crate) fn run_series(
        &mut self,
        action: &Action,
        runs: u32,
        reporter: &Reporter,
        report: &mut dyn FnMut(Duration, OperationDeadline, Result<Outcome, Error>) -> bool,
    ) {
        match self {
            Self::Blocking(client) => {
                for _ in 0..runs {
                    reporter.start_operation();
                    let began = Instant::now();
                    let deadline = client.open_deadline();
                    let outcome = client.run_within(action.clone(), deadline);
                    reporter.end_operation();
                    if !report(began.elapsed(), deadline, outcome) {
                        return;
                    }
                }
            }
            Self::Tokio(runtime, client) => runtime.block_on(async {
                for _ in 0..runs {
                    reporter.start_operation();
                    let began = Instant::now();
                    let deadline = client.open_deadline();
                    let outcome = client.run_within(action.clone(), deadline).await;
                    reporter.end_operation();
                    if !report(began.elapsed(), deadline, outcome) {
                        return;
                    }
                }
            }),
        }
    }

    /// Runs `action` as one operation under `budget` instead of the configured one (a login,
    /// which waits for a person).
    pub(crate) fn run_under(
        &mut self,
        action: Action,
        budget: mcp_proto::Budget,
    ) -> Result<Outcome, Error> {
        match self {
            Self::Blocking(client) => client.run(action, budget),
            Self::Tokio(runtime, client) => runtime.block_on(client.run(action, budget)),
        }
    }

    /// Runs `action` `runs` times with `parallel` operations in flight at once on the one
    /// session (a thread each on the blocking driver, a future each on tokio), each under the
    /// configured budget. `report` gets each run's time, deadline and result as it ends, on
    /// this thread; once it answers false no more runs start.
    pub(crate) fn run_parallel(
        &self,
        action: &Action,
        runs: u32,
        parallel: u32,
        report: &mut dyn FnMut(Duration, OperationDeadline, Result<Outcome, Error>) -> bool,
    ) {
        let left = AtomicU32::new(runs);
        let stop = AtomicBool::new(false);
        // Takes the next run, unless they are all taken or the series stopped.
        let next = || {
            !stop.load(Ordering::SeqCst)
                && left
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                    .is_ok()
        };
        let (done, results) = mpsc::channel();
        std::thread::scope(|scope| {
            match self {
                Self::Blocking(client) => {
                    for _ in 0..parallel {
                        let done = done.clone();
                        scope.spawn(move || {
                            while next() {
                                let began = Instant::now();
                                let deadline = client.open_deadline();
                                let outcome = client.run_within(action.clone(), deadline);
                                if done.send((began.elapsed(), deadline, outcome)).is_err() {
                                    return;
                                }
                            }
                        });
                    }
                }
                Self::Tokio(runtime, client) => {
                    let done = done.clone();
                    scope.spawn(move || {
                        let worker = || async {
                            while next() {
                                let began = Instant::now();
                                let deadline = client.open_deadline();
                                let outcome = client.run_within(action.clone(), deadline).await;
                                if done.send((began.elapsed(), deadline, outcome)).is_err() {
                                    return;
                                }
                            }
                        };
                        let mut workers: Vec<_> =
                            (0..parallel).map(|_| Box::pin(worker())).collect();
                        runtime.block_on(std::future::poll_fn(|cx| {
                            workers.retain_mut(|w| w.as_mut().poll(cx).is_pending());
                            if workers.is_empty() {
                                std::task::Poll::Ready(())
                            } else {
                                std::task::Poll::Pending
                            }
                        }));
                    });
                }
            }
            drop(done);
            for (latency, deadline, outcome) in results {
                if !report(latency, deadline, outcome) {
                    stop.store(true, Ordering::SeqCst);
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use mcp_driver_common::network::Network;
    use mcp_proto::{Budget, Fault, Resolution};
    use mcp_testkit::{Script, ServerEra, TestServer};

    use super::*;

    /// What a command's Ctrl-C does (`execute::run`), without the signal's timing: the runs'
    /// handle cancelled for good before a run of the series began ends that run at once,
    /// having sent nothing, and stops the series; the close through the command's own handle
    /// still ends the session.
    fn runs_cancelled_for_good_stop_the_series_and_the_close_still_goes(kind: DriverKind) {
        let server = TestServer::start(Script::new().era(ServerEra::Legacy));
        let config = SessionConfig::new(&server.url())
            .unwrap()
            .with_budget(Budget::from_duration(Duration::from_secs(30)))
            .with_resolution(Resolution::MILLISECOND);
        let reporter = Reporter::new(false, None, false, config.budget());
        let mut client = Client::new(kind, config, &Network::default(), reporter.clone()).unwrap();
        let mut runner = client.for_runs();
        let action = Action::CallTool {
            name: "echo".to_owned(),
            arguments: serde_json::json!({"text": "hi"})
                .as_object()
                .unwrap()
                .clone(),
        };
        // One run goes out: the session is live, as between two runs of a series.
        let mut ended = Vec::new();
        runner.run_series(&action, 1, &reporter, &mut |_, _, outcome| {
            ended.push(outcome.map(|_| ()));
            true
        });
        if let Err(err) = ended.pop().unwrap() {
            panic!("{kind:?}: {err}");
        }
        let calls = server.count("tools/call");
        runner.cancel_handle().cancel_for_good();
        runner.run_series(&action, 5, &reporter, &mut |_, _, outcome| {
            let cancelled = matches!(&outcome, Err(err) if err.fault() == Fault::Cancelled);
            ended.push(outcome.map(|_| ()));
            !cancelled
        });
        assert_eq!(
            ended.len(),
            1,
            "{kind:?}: the series stopped at its first run"
        );
        let err = ended.pop().unwrap().unwrap_err();
        assert_eq!(err.fault(), Fault::Cancelled, "{kind:?}: {err}");
        assert_eq!(server.count("tools/call"), calls, "{kind:?}: sent nothing");
        client.close_within(None).unwrap();
        assert_eq!(
            server.rpc_methods().last().map(String::as_str),
            Some("DELETE"),
            "{kind:?}"
        );
    }

    #[test]
    fn runs_cancelled_for_good_stop_the_series_and_the_close_still_goes_blocking() {
        runs_cancelled_for_good_stop_the_series_and_the_close_still_goes(DriverKind::Blocking);
    }

    #[test]
    fn runs_cancelled_for_good_stop_the_series_and_the_close_still_goes_tokio() {
        runs_cancelled_for_good_stop_the_series_and_the_close_still_goes(DriverKind::Tokio);
    }
}
