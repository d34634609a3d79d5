//! Running a command's operation: once, `--repeat N` times, or N at a time (`--parallel`), on
//! one client and one session; the `--arg` pre-listing that types arguments from the tool's
//! schema; the tasks handed back (kept in the credentials file for `task <ID>`); and the tidy
//! close at the end, under what the last operation left of its budget. What to print is
//! `output`'s; what each operation does is the library's.

use crate::stdout::outln;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_driver_common::network::Network;
use mcp_proto::{Action, Error, Fault, ListKind, OperationDeadline, Outcome};

use crate::args;
use crate::cli::{Cli, Command, Protocol, code};
use crate::credentials::FileStore;
use crate::driver::Client;
use crate::output::{print_outcome, report_error, report_task, sentence, summary, usage};
use crate::report::{Reporter, exit_code};
use crate::setup::Setup;

/// Runs the command's operation as the flags say and closes the session; returns the exit
/// code (the last failure's, else the worst outcome's).
pub(crate) fn run(cli: &Cli, setup: Setup, network: &Network) -> u8 {
    let Setup {
        config,
        label,
        auth,
        reporter,
        demo: _demo,
        tools,
    } = setup;
    // A filtered tool is not called: refused before a client exists, so nothing is sent.
    if let Command::Call { tool, .. } = &cli.command {
        if let Some(why) = tools.hides(tool) {
            let message = format!(
                "the tool \"{tool}\" is filtered here: {why} (nothing was sent to the server)"
            );
            return usage(cli.json, Some(&label), &message);
        }
    }
    let mut client = match Client::new(cli.driver, config, network, reporter.clone()) {
        Ok(client) => client,
        Err(err) => {
            let message = format!("could not start the {} driver: {err}", cli.driver.name());
            report_error(
                cli.json,
                ("driver", Fault::Caller),
                None,
                &message,
                code::USAGE,
            );
            return code::USAGE;
        }
    };
    // Tasks handed back are kept beside the credentials, for `task <ID>` to look again.
    let kept = auth.as_ref().map(|a| (a.store.clone(), a.url.clone()));
    if let Some(auth) = auth {
        if let Some(loopback) = auth.loopback {
            client.set_authorizer(loopback);
        } else if let Some(token) = auth.store.token_for(&auth.url) {
            // A token from an earlier run goes out with the first request: no authorization
            // leg unless the server refuses it.
            client.set_token(token);
        }
    }
    // The runs go through a handle of their own. Ctrl-C (and SIGTERM, SIGHUP) cancels it for
    // good: the run in flight ends with `Cancelled`, and so does one that had not begun (a
    // `--repeat` series between two runs), having sent nothing. The close below goes through
    // `client`, which that cancel does not reach: it ends the session, and a local server,
    // which the terminal's Ctrl-C no longer reaches (it runs in a process group of its own).
    // A Ctrl-C while the close runs cancels the close. The close's cancel goes first: the
    // close starts once the run has ended, so it cannot be in flight then, and the cancel of
    // the run, second, cannot let it start before this signal is done with it.
    let mut runner = client.for_runs();
    let (runs_cancel, close_cancel) = (runner.cancel_handle(), client.cancel_handle());
    let _ = ctrlc::set_handler(move || {
        close_cancel.cancel();
        runs_cancel.cancel_for_good();
    });

    let task_of = |id: &str| task_handle(cli, kept.as_ref(), &label, id);
    let Some(mut action) = cli.command.action(task_of) else {
        return code::OK;
    };
    let mut runs = Runs {
        cli,
        label: &label,
        reporter: &reporter,
        tools: &tools,
        tasks: Tasks::new(kept, &action),
        status: code::OK,
        failure: None,
        failed: 0,
        latencies: Vec::new(),
        last_deadline: None,
        keep_session: false,
    };
    let started = Instant::now();
    // `--arg` pairs are typed from the tool's schema: one listing first, an operation of its
    // own. A failure there ends the run (and the session still ends tidily below).
    let count = match runs.type_arguments(&mut runner, &mut action) {
        Ok(()) => cli.repeat,
        Err(()) => 0,
    };
    if cli.parallel > 1 && count > 1 {
        // N in flight on the one session; the results are reported as they come.
        runner.run_parallel(
            &action,
            count,
            cli.parallel,
            &mut |latency, deadline, outcome| runs.record(latency, deadline, outcome),
        );
    } else {
        runner.run_series(
            &action,
            count,
            &reporter,
            &mut |latency, deadline, outcome| runs.record(latency, deadline, outcome),
        );
    }
    if count > 1 {
        eprintln!(
            "{}",
            summary(&runs.latencies, runs.failed, started.elapsed())
        );
    }
    if matches!(cli.command, Command::Login) && runs.failure.is_none() {
        match runner.has_token() {
            true => eprintln!("logged in to {label}"),
            false => eprintln!("{label} asked for no authorization"),
        }
    }
    // A legacy task handed back keeps its session open: `task <ID>` resumes in it.
    if !runs.keep_session {
        close(&mut client, &reporter, runs.last_deadline.as_ref());
    }
    // A failed run outweighs every success: the exit code is the last failure's.
    runs.failure.unwrap_or(runs.status)
}

/// A tidy exit: the session ends on the server now rather than at its idle timeout (after a
/// failure and a Ctrl-C too), inside what the last operation left of its budget (at most the
/// close's cap): once that is spent nothing is sent, and a local server is killed at once.
/// What the operator waits for ends with the budget. Best effort; traced.
fn close(client: &mut Client, reporter: &Reporter, last: Option<&OperationDeadline>) {
    reporter.start_operation();
    if let Err(err) = client.close_within(last) {
        // A close the spent budget refused shows in the trace as what it is.
        reporter.refused(&err);
    }
    reporter.end_operation();
}

/// The task `task <ID>` looks at: the era it was created in and its legacy session, from the
/// credentials file, else the era `--protocol` speaks.
fn task_handle(
    cli: &Cli,
    kept: Option<&(Arc<FileStore>, String)>,
    label: &str,
    id: &str,
) -> mcp_proto::task::TaskHandle {
    let kept = kept.and_then(|(store, url)| store.task(url, id));
    let (era, session_id, tool) = kept.unwrap_or(match cli.protocol {
        Protocol::Pin(version) if !version.is_modern() => {
            (mcp_proto::task::TaskEra::Legacy, None, None)
        }
        _ => (mcp_proto::task::TaskEra::Modern, None, None),
    });
    let mut task = mcp_proto::task::TaskHandle::new(label, id, era);
    task.session_id = session_id;
    task.tool = tool;
    task
}

/// What a run learns of tasks: one still running when the budget ends is kept in the
/// credentials file, one the server answered about is forgotten.
struct Tasks {
    /// The credentials file and the server's URL (HTTP servers only).
    kept: Option<(Arc<FileStore>, String)>,
    /// The task this run looks at (`task <ID>`), and whether it lives in a legacy session.
    looked_at: Option<(String, bool)>,
}

impl Tasks {
    fn new(kept: Option<(Arc<FileStore>, String)>, action: &Action) -> Self {
        let looked_at = match action {
            Action::ResumeTask(task) | Action::CancelTask(task) => {
                Some((task.task_id.clone(), task.session_id.is_some()))
            }
            _ => None,
        };
        Self { kept, looked_at }
    }

    /// Keeps or forgets the task `outcome` tells of; answers whether the session must
    /// outlive the command (a legacy task handed back lives in its session, which a close
    /// would end).
    fn note(&self, outcome: &Result<Outcome, Error>) -> bool {
        let Some((store, url)) = &self.kept else {
            return false;
        };
        match (outcome, &self.looked_at) {
            (Err(err), _) if err.task().is_some() => {
                let task = err.task().unwrap_or_else(|| unreachable!());
                store.remember_task(url, task);
                return task.session_id.is_some();
            }
            // A cancel is a request: the task is kept (and its session) until a look says
            // how it ended.
            (Ok(Outcome::TaskCancelRequested(_)), Some((_, in_session))) => return *in_session,
            // The server answered about it: it is over, cancelled, unknown to the server, or
            // gone with its session.
            (
                Ok(_)
                | Err(
                    Error::TaskCancelled { .. }
                    | Error::JsonRpc { .. }
                    | Error::SessionExpired { .. },
                ),
                Some((id, _)),
            ) => {
                store.forget_task(url, id);
            }
            _ => {}
        }
        false
    }
}

/// The runs of one command so far: what each ended in, for the exit code, the summary and
/// the close.
struct Runs<'a> {
    cli: &'a Cli,
    label: &'a str,
    reporter: &'a Reporter,
    /// The tools shown: a listing is printed without the others.
    tools: &'a crate::filter::ToolFilter,
    tasks: Tasks,
    /// The worst outcome's exit code (a tool's `isError`).
    status: u8,
    /// The last failure's exit code.
    failure: Option<u8>,
    failed: usize,
    latencies: Vec<Duration>,
    /// The deadline of the operation that ended last: the close gets what it left.
    last_deadline: Option<OperationDeadline>,
    /// A legacy task handed back lives in the session: it is not closed.
    keep_session: bool,
}

impl Runs<'_> {
    /// Types `call`'s `--arg` pairs from the tool's `inputSchema`, read with one listing (an
    /// operation of its own), into `action`'s arguments. A failure is reported, and no run
    /// follows.
    fn type_arguments(&mut self, client: &mut Client, action: &mut Action) -> Result<(), ()> {
        let (Command::Call { pairs, .. }, Action::CallTool { name, arguments }) =
            (&self.cli.command, action)
        else {
            return Ok(());
        };
        if pairs.is_empty() {
            return Ok(());
        }
        self.reporter.start_operation();
        let (listed, deadline) = client.run(Action::List(ListKind::Tools));
        self.last_deadline = Some(deadline);
        self.reporter.end_operation();
        let typed = match listed {
            Ok(Outcome::Tools(tools)) => match tools.iter().find(|t| t.name == *name) {
                Some(tool) => args::merge(arguments, pairs, tool.input_schema()),
                None => Err(format!(
                    "the server lists no tool \"{name}\" to type --arg by"
                )),
            },
            Ok(_) => Err("the listing answered with something else".to_owned()),
            Err(err) => {
                self.failure = Some(self.report(&err));
                return Err(());
            }
        };
        typed.map_err(|message| {
            self.failure = Some(usage(self.cli.json, Some(self.label), &message));
        })
    }

    /// Takes one run's end: prints its outcome, or reports its error (and the task handed
    /// back). Answers whether the runs go on: one run stops at its error; a measured series
    /// (`--repeat`) goes on past failures, but not past a cancel.
    fn record(
        &mut self,
        latency: Duration,
        deadline: OperationDeadline,
        outcome: Result<Outcome, Error>,
    ) -> bool {
        self.latencies.push(latency);
        self.last_deadline = Some(deadline);
        self.keep_session |= self.tasks.note(&outcome);
        // A one-request command's answer is read as its request's: a malformed one is an error.
        let printed = outcome.and_then(|outcome| match outcome {
            Outcome::Answer(answer) => (self.cli.command)
                .answer_text(answer, self.label, self.cli.json)
                .map(|text| outln!("{text}")),
            Outcome::Tools(listing) => {
                print_outcome(Outcome::Tools(self.tools.visible(listing)), self.cli.json);
                Ok(())
            }
            outcome => {
                self.status = self.status.max(print_outcome(outcome, self.cli.json));
                Ok(())
            }
        });
        match printed {
            Ok(()) => true,
            Err(err) => {
                self.reporter.refused(&err);
                self.failure = Some(self.report(&err));
                if let Some(task) = err.task() {
                    report_task(self.cli.json, task);
                }
                self.failed += 1;
                self.cli.repeat > 1 && err.fault() != Fault::Cancelled
            }
        }
    }

    /// Reports `err` naming the server; returns its exit code.
    fn report(&self, err: &Error) -> u8 {
        let exit = exit_code(err);
        let server = Some(err.server().unwrap_or(self.label));
        let what = (err.kind(), err.fault());
        report_error(
            self.cli.json,
            what,
            server,
            &sentence(err, self.label),
            exit,
        );
        exit
    }
}
