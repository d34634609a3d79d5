//! The stdio transport of the tokio driver ([`StdioWire`]): the server as a child process
//! (`tokio::process`), its stdout fed to the operation as it comes, its stderr's last lines
//! kept for the error, and each step of its end carried out as the operation hands it out.
//!
//! The state machine decides everything (when to start the process, what each line means,
//! when a leg is late, when each step of a close is due, when a process is killed); this
//! module starts processes, writes lines, reads pipes and signals. It holds no policy and
//! waits only for a write's room in the pipe, within the leg's grant.

use std::time::{Duration, Instant};

use mcp_proto::driver::LegKind;
use mcp_proto::driver::{Input, Leg, Operation, ProcessExit};
use mcp_proto::{Clock, StdioCommand};
use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::process::{ChildStdin, ChildStdout, Command};
use tokio::time::Instant as TokioInstant;

use crate::cancel::CancelShared;
use crate::clock::TokioClock;
use crate::wire::Wire;
use mcp_driver_common::{StderrTail, process};

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

    /// Writes what of `line` the server's stdin takes now, without waiting: how much (0 when
    /// it takes nothing, is closed or failed; the write that waits then says why).
    fn write_now(&mut self, line: &[u8]) -> usize {
        let Some(stdin) = self.stdin.as_mut() else {
            return 0;
        };
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match std::pin::Pin::new(stdin).poll_write(&mut cx, line) {
            std::task::Poll::Ready(Ok(written)) => written,
            _ => 0,
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

    /// Reads the next stdout bytes into its buffer: how many (read them with
    /// [`Child::chunk`]); `None` once stdout ended.
    async fn read(&mut self) -> Option<usize> {
        let stdout = self.stdout.as_mut()?;
        match stdout.read(&mut self.buf).await {
            Ok(0) | Err(_) => {
                self.stdout = None;
                None
            }
            Ok(n) => Some(n),
        }
    }

    /// The first `n` bytes of the buffer: what a [`Child::read`] that returned `n` brought
    /// (read where they landed, never copied).
    fn chunk(&self, n: usize) -> &[u8] {
        &self.buf[..n]
    }

    fn stderr_tail(&self) -> String {
        self.stderr.last_lines()
    }

    /// Waits at most [`EXIT_STATUS_WAIT`] for the process to exit, then reaps it, once what it left
    /// in its process group is ended ([`process::end_group_if_exited`]); `None` if it runs on.
    /// tokio's own `wait` would reap it first, so the exit is watched on a thread of its own
    /// ([`process::ExitWatch`]: at once where the process has a pidfd), for at most that long.
    #[cfg(unix)]
    async fn exited(&mut self) -> Option<std::process::ExitStatus> {
        let Some(pid) = self.process.id() else {
            // Reaped already: tokio keeps its status.
            return self.process.try_wait().ok().flatten();
        };
        if !process::end_group_if_exited(pid) {
            let (seen, exited) = tokio::sync::oneshot::channel();
            std::thread::spawn(move || {
                let watch = process::ExitWatch::of(Some(pid));
                let _ = seen.send(watch.wait_exited(pid, EXIT_STATUS_WAIT));
            });
            // Seen exited by the watch: ended (its group with it) here, where it is held.
            if exited.await != Ok(true) || !process::end_group_if_exited(pid) {
                return None;
            }
        }
        self.process.try_wait().ok().flatten()
    }

    /// Waits at most [`EXIT_STATUS_WAIT`] for the process to exit and reaps it (no process
    /// groups here: see [`process`]); `None` if it runs on.
    #[cfg(not(unix))]
    async fn exited(&mut self) -> Option<std::process::ExitStatus> {
        tokio::time::timeout(EXIT_STATUS_WAIT, self.process.wait())
            .await
            .ok()
            .and_then(Result::ok)
    }

    /// How the process ended (its stdout closed): its status, waited for briefly (a process
    /// that runs on is killed when dropped), and stderr's last lines. What it left in its
    /// process group is ended before it is reaped ([`process::end_group_if_exited`]).
    async fn exit(mut self) -> ProcessExit {
        let status = self.exited().await.and_then(|status| status.code());
        // Let stderr's reader catch up with what was written before the exit.
        tokio::task::yield_now().await;
        ProcessExit {
            status,
            stderr: self.stderr_tail(),
        }
    }
}

impl process::Steps for Child {
    fn close_stdin(&mut self) {
        drop(self.stdin.take());
    }

    fn pid(&self) -> Option<u32> {
        self.process.id()
    }
}

impl process::Kill for Child {
    fn start_kill(&mut self) {
        // tokio's `start_kill` signals the process alone: the group first, while tokio still
        // gives its pid (it gives none once it has reaped it).
        process::kill_group(self.process.id());
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

/// The stdio transport of the tokio driver: the server process the operation's turn holds,
/// started, written to and ended as its legs say; its stdout fed as it comes.
pub(crate) struct StdioWire<'a> {
    pub(crate) child: &'a mut Option<Child>,
    pub(crate) command: &'a StdioCommand,
    pub(crate) cancel: &'a CancelShared,
    /// The cancel count the operation armed itself with when it was called.
    pub(crate) armed: u64,
}

impl Wire for StdioWire<'_> {
    /// How many stdout bytes came (in the child's buffer), `None` once stdout ended.
    type Came = Option<usize>;

    async fn transmit(&mut self, op: &mut Operation, leg: Leg, _: Instant) -> Instant {
        self.carry_out(op, &leg).await;
        TokioClock.now()
    }

    async fn next(&mut self) -> Option<usize> {
        match self.child.as_mut() {
            Some(child) => child.read().await,
            None => std::future::pending().await,
        }
    }

    async fn feed(&mut self, op: &mut Operation, came: Option<usize>) -> Instant {
        match came {
            Some(n) => {
                let chunk = self.child.as_ref().map_or(&[][..], |child| child.chunk(n));
                op.handle_input(Input::Stdout(chunk), TokioClock.now());
            }
            None => {
                if let Some(child) = self.child.take() {
                    let exit = child.exit().await;
                    op.handle_input(Input::Exit(&exit), TokioClock.now());
                }
            }
        }
        TokioClock.now()
    }
}

impl StdioWire<'_> {
    /// Carries out `leg`: the process started, a line written, a step of its end done.
    async fn carry_out(&mut self, op: &mut Operation, leg: &Leg) {
        let clock = TokioClock;
        match leg.kind {
            LegKind::Spawn => {
                let started = Child::spawn(self.command).map(|child| *self.child = Some(child));
                op.handle_input(process::spawned(leg, started), clock.now());
            }
            // The steps of a close: the process's exit, read as stdout ends, ends the close.
            LegKind::Shutdown | LegKind::Terminate => {
                let done = process::close_step(leg, self.child.as_mut());
                op.handle_input(done, clock.now());
            }
            LegKind::Kill => {
                let exit = match self.child.take() {
                    Some(child) => child.kill().await,
                    None => ProcessExit::default(),
                };
                op.handle_input(Input::Exit(&exit), clock.now());
            }
            LegKind::CancelNotice => {
                let written = self.child.as_mut().is_some_and(|child| {
                    let line = leg.request.body();
                    child.write_now(line) == line.len()
                });
                if written {
                    op.handle_input(Input::Sent { leg: leg.id }, clock.now());
                } else {
                    op.handle_input(process::stdin_full(leg.id), clock.now());
                }
            }
            _ => {
                let until = TokioInstant::from_std(leg.ends_at);
                let cancel = self.cancel;
                // Cancelled already: the loop passes it on.
                if self.child.is_some() && cancel.is_fired(self.armed) {
                    return;
                }
                // A line the pipe takes at once (the usual case) is written without a timer
                // and without registering for a cancel; the rest of one it does not, as below.
                let line = leg.request.body();
                let sent = self.child.as_mut().map_or(0, |child| child.write_now(line));
                if self.child.is_some() && sent == line.len() {
                    op.handle_input(Input::Sent { leg: leg.id }, clock.now());
                    return;
                }
                let cancelled = cancel.waiter();
                tokio::pin!(cancelled);
                cancelled.as_mut().enable();
                let written = match self.child.as_mut() {
                    Some(_) if cancel.is_fired(self.armed) => return,
                    Some(child) => {
                        // A server that stops reading must not hold the write past the grant,
                        // nor past a cancel: the operation decides what either means.
                        let write = tokio::time::timeout_at(until, child.write_line(&line[sent..]));
                        tokio::select! {
                            biased;
                            () = &mut cancelled => return,
                            written = write => match written {
                                Ok(result) => result.is_ok(),
                                Err(_) => {
                                    op.handle_input(Input::Timeout, clock.now());
                                    return;
                                }
                            },
                        }
                    }
                    None => false,
                };
                if written {
                    op.handle_input(Input::Sent { leg: leg.id }, clock.now());
                    return;
                }
                // The process stopped reading: it is gone, or going.
                let exit = match self.child.take() {
                    Some(child) => child.exit().await,
                    None => ProcessExit::default(),
                };
                op.handle_input(Input::Exit(&exit), clock.now());
            }
        }
    }
}
