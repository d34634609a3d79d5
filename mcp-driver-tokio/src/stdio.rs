//! The stdio transport's I/O on tokio: the server as a child process (`tokio::process`), its
//! stdout fed to the operation as it comes, its stderr's last lines kept for the error, and
//! its end.
//!
//! The state machine decides everything (when to start the process, what each line means,
//! when a leg is late, how long a shutdown may take); this module starts processes, writes
//! lines, reads pipes and waits. It holds no policy.

use std::time::Duration;

use mcp_proto::{
    Clock, Error, Input, LegKind, Observer, Operation, Outcome, Output, ProcessExit, StdioCommand,
    TransportError, TransportErrorKind,
};
use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::process::{ChildStdin, ChildStdout, Command};
use tokio::time::Instant as TokioInstant;

use crate::cancel::CancelShared;
use crate::clock::TokioClock;
use crate::trace;
use mcp_driver_common::{LegSpans, StderrTail, process};

/// How long the exit status of a process whose stdout closed is waited for.
const EXIT_STATUS_WAIT: Duration = Duration::from_millis(50);
/// One read of stdout.
const CHUNK: usize = 64 * 1024;

/// A running server process, kept by the client between operations. Dropped, it is ended at
/// once by the rule both drivers follow ([`process::kill_at_once`]; tokio reaps it in the
/// background); [`Client::close`](crate::Client::close) ends it politely.
pub(crate) struct Child {
    process: tokio::process::Child,
    stdin: Option<ChildStdin>,
    stdout: Option<ChildStdout>,
    stderr: StderrTail,
    buf: Vec<u8>,
}

impl std::fmt::Debug for Child {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Child")
            .field("pid", &self.process.id())
            .finish_non_exhaustive()
    }
}

impl Child {
    fn spawn(command: &StdioCommand) -> std::io::Result<Self> {
        let mut process = Command::from(process::command(command)).spawn()?;
        let stderr = StderrTail::default();
        if let Some(mut err) = process.stderr.take() {
            let tail = stderr.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                while let Ok(n) = err.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    tail.push(&buf[..n]);
                }
            });
        }
        Ok(Self {
            stdin: process.stdin.take(),
            stdout: process.stdout.take(),
            process,
            stderr,
            buf: vec![0u8; CHUNK],
        })
    }

    /// Writes `line` only if the pipe takes all of it at once (a short line: a pipe takes all
    /// of it or none); never waits.
    fn write_line_at_once(&mut self, line: &[u8]) -> bool {
        let Some(stdin) = self.stdin.as_mut() else {
            return false;
        };
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        let written = std::pin::Pin::new(stdin).poll_write(&mut cx, line);
        matches!(written, std::task::Poll::Ready(Ok(n)) if n == line.len())
    }

    /// Ends the process at once, by the rule both drivers follow ([`process::kill_at_once`]),
    /// and waits for tokio to reap it.
    async fn kill(mut self) -> ProcessExit {
        process::kill_at_once(self.stdin.take(), &mut self);
        let _ = self.process.wait().await;
        ProcessExit {
            status: None,
            stderr: self.stderr_tail(),
        }
    }

    async fn write_line(&mut self, line: &[u8]) -> std::io::Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| std::io::Error::other("the server's stdin is closed"))?;
        stdin.write_all(line).await?;
        stdin.flush().await
    }

    /// The next stdout bytes; `None` once stdout ended.
    async fn read(&mut self) -> Option<Vec<u8>> {
        let stdout = self.stdout.as_mut()?;
        match stdout.read(&mut self.buf).await {
            Ok(0) | Err(_) => {
                self.stdout = None;
                None
            }
            Ok(n) => Some(self.buf[..n].to_vec()),
        }
    }

    fn stderr_tail(&self) -> String {
        self.stderr.last_lines()
    }

    /// How the process ended (its stdout closed): its status, waited for briefly (a process
    /// that runs on is killed when dropped), and stderr's last lines.
    async fn exit(mut self) -> ProcessExit {
        let status = tokio::time::timeout(EXIT_STATUS_WAIT, self.process.wait())
            .await
            .ok()
            .and_then(Result::ok)
            .and_then(|status| status.code());
        // Let stderr's reader catch up with what was written before the exit.
        tokio::task::yield_now().await;
        ProcessExit {
            status,
            stderr: self.stderr_tail(),
        }
    }

    /// The first step of a close: the server reads the end of its input.
    fn close_stdin(&mut self) {
        drop(self.stdin.take());
    }

    /// The second step of a close: SIGTERM, without waiting.
    fn terminate(&self) {
        process::terminate(self.process.id());
    }
}

impl process::Kill for Child {
    fn start_kill(&mut self) {
        let _ = self.process.start_kill();
    }

    fn reap(&mut self) {
        // Reaped now if it has exited already; else tokio reaps it in the background once it
        // is dropped (a kill leg awaits it instead).
        let _ = self.process.try_wait();
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        // A process left running (the client dropped without a close) is ended by the rule
        // both drivers follow: killed at once, never given time to end on its own.
        process::kill_at_once(self.stdin.take(), self);
    }
}

/// Everything one stdio operation borrows from its client.
pub(crate) struct StdioRun<'a> {
    pub(crate) child: &'a mut Option<Child>,
    /// The session: what the operation learns is applied to it as it comes.
    pub(crate) shell: &'a crate::shell::ClientShell,
    pub(crate) command: StdioCommand,
    pub(crate) observer: &'a mut (dyn Observer + Send),
    pub(crate) cancel: &'a CancelShared,
    /// The cancel count the operation armed itself with when it was called.
    pub(crate) armed: u64,
    pub(crate) span: trace::Span,
}

impl StdioRun<'_> {
    /// Drives `op` to its end over stdio.
    pub(crate) async fn drive(mut self, op: &mut Operation) -> Result<Outcome, Error> {
        let clock = TokioClock;
        let armed = self.armed;
        let cancelled = self.cancel.waiter();
        tokio::pin!(cancelled);
        cancelled.as_mut().enable();
        let mut legs = LegSpans::default();
        loop {
            if self.cancel.is_fired(armed) && !op.is_finished() {
                op.handle_input(Input::Cancel, clock.now());
            }
            let now = clock.now();
            match op.poll_output(now) {
                Output::Update(update) => self.shell.apply(update),
                Output::Transmit(leg) => {
                    legs.sent(&leg, &self.span);
                    self.transmit(op, &leg).await;
                }
                Output::Event(event) => self.observer.event(&event),
                Output::LegEnded(report) => legs.ended(&report, self.observer),
                Output::Authorize(_) => {
                    op.handle_input(Input::NoAuthorizer, now);
                }
                // Over stdio nothing is shared to wait for: operations run one at a time.
                Output::Wait(until) | Output::AwaitSession(until) => {
                    let until = TokioInstant::from_std(until);
                    let cancellable = !op.is_finished();
                    match self.child.as_mut() {
                        None => tokio::select! {
                            biased;
                            () = &mut cancelled, if cancellable => {}
                            () = tokio::time::sleep_until(until) => {
                                op.handle_input(Input::Timeout, clock.now());
                            }
                        },
                        Some(child) => {
                            let read = tokio::select! {
                                biased;
                                () = &mut cancelled, if cancellable => continue,
                                read = child.read() => read,
                                () = tokio::time::sleep_until(until) => {
                                    op.handle_input(Input::Timeout, clock.now());
                                    continue;
                                }
                            };
                            match read {
                                Some(chunk) => {
                                    op.handle_input(Input::Stdout(&chunk), clock.now());
                                }
                                None => {
                                    if let Some(child) = self.child.take() {
                                        let exit = child.exit().await;
                                        op.handle_input(Input::Exit(&exit), clock.now());
                                    }
                                }
                            }
                        }
                    }
                }
                Output::Done(result) => return result,
            }
        }
    }

    /// Carries out `leg`. Returns true when the process turned out to be gone.
    async fn transmit(&mut self, op: &mut Operation, leg: &mcp_proto::Leg) -> bool {
        let clock = TokioClock;
        match leg.kind {
            LegKind::Spawn => {
                match Child::spawn(&self.command) {
                    Ok(child) => {
                        *self.child = Some(child);
                        op.handle_input(Input::Sent { leg: leg.id }, clock.now());
                    }
                    Err(err) => {
                        let error =
                            TransportError::new(TransportErrorKind::Connect, err.to_string());
                        op.handle_input(Input::Failed { leg: leg.id, error }, clock.now());
                    }
                }
                false
            }
            // The steps of a close: the process's exit, read as stdout ends, ends the close.
            LegKind::Shutdown | LegKind::Terminate => {
                if let Some(child) = self.child.as_mut() {
                    if leg.kind == LegKind::Shutdown {
                        child.close_stdin();
                    } else {
                        child.terminate();
                    }
                }
                op.handle_input(Input::Sent { leg: leg.id }, clock.now());
                false
            }
            LegKind::Kill => {
                let exit = match self.child.take() {
                    Some(child) => child.kill().await,
                    None => ProcessExit::default(),
                };
                op.handle_input(Input::Exit(&exit), clock.now());
                false
            }
            LegKind::CancelNotice => {
                let written = self
                    .child
                    .as_mut()
                    .is_some_and(|child| child.write_line_at_once(leg.request.body()));
                if written {
                    op.handle_input(Input::Sent { leg: leg.id }, clock.now());
                } else {
                    op.handle_input(mcp_driver_common::process::stdin_full(leg.id), clock.now());
                }
                false
            }
            _ => {
                let until = TokioInstant::from_std(leg.ends_at);
                let cancel = self.cancel;
                let cancelled = cancel.waiter();
                tokio::pin!(cancelled);
                cancelled.as_mut().enable();
                let written = match self.child.as_mut() {
                    // Cancelled already: the loop passes it on.
                    Some(_) if cancel.is_fired(self.armed) => return false,
                    Some(child) => {
                        // A server that stops reading must not hold the write past the grant,
                        // nor past a cancel: the operation decides what either means.
                        let write =
                            tokio::time::timeout_at(until, child.write_line(leg.request.body()));
                        tokio::select! {
                            biased;
                            () = &mut cancelled => return false,
                            written = write => match written {
                                Ok(result) => result.is_ok(),
                                Err(_) => {
                                    op.handle_input(Input::Timeout, clock.now());
                                    return false;
                                }
                            },
                        }
                    }
                    None => false,
                };
                if written {
                    op.handle_input(Input::Sent { leg: leg.id }, clock.now());
                    return false;
                }
                let exit = match self.child.take() {
                    Some(child) => child.exit().await,
                    None => ProcessExit::default(),
                };
                op.handle_input(Input::Exit(&exit), clock.now());
                true
            }
        }
    }
}
