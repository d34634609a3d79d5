//! The stdio transport of the blocking driver ([`StdioWire`]): the server as a child process,
//! its stdout fed to the operation as it comes, its stderr's last lines kept for the error,
//! and each step of its end carried out as the operation hands it out; and the turns that
//! operations take on one process.
//!
//! The state machine decides everything (when to start the process, what each line means,
//! when a leg is late, when each step of a close is due, when a process is killed); this
//! module starts processes, writes lines, reads stdout (on the operation's thread, see
//! [`crate::stdout`]) and stderr (on a thread of its own: a server logs between operations
//! too), signals and waits for what the operation names. It holds no policy.
//!
//! The server's stdin is non-blocking (on Unix): a write waits for room in the pipe with
//! `poll(2)`, in slices, until the leg's grant ends or a cancel comes, so a server that stopped
//! reading cannot hold the operation. Elsewhere the write blocks (a known limit).

use std::io::{Read, Write};
use std::process::ChildStdin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_proto::driver::LegKind;
use mcp_proto::driver::{Input, Leg, Operation, ProcessExit};
use mcp_proto::{Clock, MonotonicClock, StdioCommand};

use crate::drive::Wire;
use crate::lanes::{Shared, Wake};
use crate::stdout::{Delivery, Stdout};
use mcp_driver_common::{StderrTail, process};

/// How long the exit status of a process whose stdout closed is waited for.
const EXIT_STATUS_WAIT: Duration = Duration::from_millis(50);
/// The longest a write waits for room in the pipe before it looks for a cancel again.
const WRITE_SLICE: Duration = Duration::from_millis(10);

/// How a write to the server's stdin ended.
enum Written {
    /// The whole line is in the pipe.
    Whole,
    /// The leg's grant ended first (part of the line may be in the pipe).
    TimedOut,
    /// A cancel came first (part of the line may be in the pipe).
    Cancelled,
    /// The pipe is closed (the process is gone, or going), or the line did not fit at once.
    Refused,
}

/// A running server process, kept by the client between operations.
pub(crate) struct Child {
    process: Option<std::process::Child>,
    stdin: Option<ChildStdin>,
    /// `None` once stdout ended.
    stdout: Option<Stdout>,
    stderr: StderrTail,
}

impl Child {
    fn spawn(command: &StdioCommand) -> std::io::Result<Self> {
        let mut process = process::command(command).spawn()?;
        let stdout = process.stdout.take().map(Stdout::new).transpose()?;
        let stderr = StderrTail::default();
        if let Some(mut err) = process.stderr.take() {
            let tail = stderr.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = err.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    tail.push(&buf[..n]);
                }
            });
        }
        let stdin = process.stdin.take();
        if let Some(stdin) = &stdin {
            set_nonblocking(stdin)?;
        }
        Ok(Self {
            stdin,
            process: Some(process),
            stdout,
            stderr,
        })
    }

    /// Waits for stdout until `until` (or a cancel).
    fn wait(&mut self, until: Instant, shared: &Shared) -> Delivery {
        let Some(stdout) = self.stdout.as_mut() else {
            return Delivery::Closed;
        };
        let delivery = stdout.wait(until, shared);
        if matches!(delivery, Delivery::Closed) {
            self.stdout = None;
        }
        delivery
    }

    /// The bytes the last [`Delivery::Chunk`] of [`Child::wait`] brought.
    fn chunk(&self) -> &[u8] {
        self.stdout.as_ref().map_or(&[], Stdout::chunk)
    }

    /// What a cancel calls to wake a wait for stdout.
    pub(crate) fn waker(&self) -> Option<Arc<dyn Wake>> {
        self.stdout.as_ref().map(Stdout::waker)
    }

    /// Writes `line` to the server's stdin, waiting for room in the pipe until `until` or a
    /// cancel, whichever comes first.
    fn write_line(&mut self, line: &[u8], until: Instant, shared: &Shared) -> Written {
        let Some(stdin) = self.stdin.as_mut() else {
            return Written::Refused;
        };
        let mut left = line;
        while !left.is_empty() {
            match stdin.write(left) {
                Ok(0) => return Written::Refused,
                Ok(n) => left = &left[n..],
                Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
                Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => {
                    let now = Instant::now();
                    if now >= until {
                        return Written::TimedOut;
                    }
                    if shared.is_cancelled() {
                        return Written::Cancelled;
                    }
                    wait_writable(stdin, (until - now).min(WRITE_SLICE));
                }
                Err(_) => return Written::Refused,
            }
        }
        Written::Whole
    }

    /// Writes `line` only if the pipe takes all of it at once (a short line: a pipe takes
    /// all of it or none); never waits.
    fn write_line_at_once(&mut self, line: &[u8]) -> Written {
        let Some(stdin) = self.stdin.as_mut() else {
            return Written::Refused;
        };
        match stdin.write(line) {
            Ok(n) if n == line.len() => Written::Whole,
            _ => Written::Refused,
        }
    }

    /// How the process ended: its status (waited for briefly; a process that closed its
    /// stdout but runs on is ended) and stderr's last lines. What it left in its process group
    /// is ended before it is reaped ([`process::end_group_if_exited`]).
    fn exit(mut self) -> ProcessExit {
        let started = Instant::now();
        let exited = process::ExitWatch::of(self.process.as_ref().map(std::process::Child::id));
        // A process that closed its stdout is usually exiting: its status is looked at as
        // soon as it is there (see `ExitWatch`), so it costs the close no fixed sleep.
        let mut pause = Duration::from_micros(50);
        let status = loop {
            let Some(process) = self.process.as_mut() else {
                break None;
            };
            let reaped = match process::end_group_if_exited(process.id()) {
                true => process.try_wait(),
                false => Ok(None),
            };
            match reaped {
                Ok(Some(status)) => {
                    self.process = None;
                    break status.code();
                }
                Ok(None) if started.elapsed() < EXIT_STATUS_WAIT => {
                    exited.wait(EXIT_STATUS_WAIT - started.elapsed(), pause);
                    pause = (pause * 2).min(Duration::from_millis(5));
                }
                _ => break None,
            }
        };
        ProcessExit {
            status,
            stderr: self.stderr_tail(),
        }
        // Drop ends a process still running (it closed its stdout: it cannot answer).
    }

    fn stderr_tail(&self) -> String {
        self.stderr.last_lines()
    }

    /// Ends the process at once, by the rule both drivers follow ([`process::kill_at_once`]).
    fn kill(mut self) -> ProcessExit {
        process::kill_at_once(self.stdin.take(), &mut self.process);
        ProcessExit {
            status: None,
            stderr: self.stderr_tail(),
        }
    }
}

impl process::Steps for Child {
    fn close_stdin(&mut self) {
        drop(self.stdin.take());
    }

    fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(std::process::Child::id)
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        // A process left running (the client dropped without a close) is ended by the rule
        // both drivers follow: killed at once and reaped, never given time to end on its own.
        process::kill_at_once(self.stdin.take(), &mut self.process);
    }
}

/// Makes the server's stdin non-blocking, so that every write is bounded (see the module
/// docs).
#[cfg(unix)]
fn set_nonblocking(stdin: &ChildStdin) -> std::io::Result<()> {
    rustix::io::ioctl_fionbio(stdin, true).map_err(std::io::Error::from)
}

#[cfg(not(unix))]
fn set_nonblocking(_: &ChildStdin) -> std::io::Result<()> {
    Ok(())
}

/// Waits at most `slice` for room in the pipe.
#[cfg(unix)]
fn wait_writable(stdin: &ChildStdin, slice: Duration) {
    use rustix::event::{PollFd, PollFlags, Timespec};
    let mut fds = [PollFd::new(stdin, PollFlags::OUT)];
    let timeout = Timespec {
        tv_sec: i64::try_from(slice.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: i64::from(slice.subsec_nanos()),
    };
    let _ = rustix::event::poll(&mut fds, Some(&timeout));
}

#[cfg(not(unix))]
fn wait_writable(_: &ChildStdin, slice: Duration) {
    std::thread::sleep(slice);
}

/// The stdio transport of the blocking driver: the server process a turn holds, started,
/// written to and ended as the operation's legs say; its stdout fed as it comes.
pub(crate) struct StdioWire<'a> {
    pub(crate) child: &'a mut Option<Child>,
    pub(crate) command: &'a StdioCommand,
    pub(crate) shared: &'a Shared,
}

impl Wire for StdioWire<'_> {
    fn transmit(&mut self, op: &mut Operation, leg: Leg) {
        self.carry_out(op, &leg);
    }

    fn wait(&mut self, op: &mut Operation, until: Instant) {
        let clock = MonotonicClock;
        let Some(child) = self.child.as_mut() else {
            self.shared.sleep_until(until);
            op.handle_input(Input::Timeout, clock.now());
            return;
        };
        match child.wait(until, self.shared) {
            Delivery::Chunk => {
                op.handle_input(Input::Stdout(child.chunk()), clock.now());
            }
            Delivery::Closed => {
                if let Some(child) = self.child.take() {
                    let exit = child.exit();
                    op.handle_input(Input::Exit(&exit), clock.now());
                }
            }
            Delivery::Timeout => {
                op.handle_input(Input::Timeout, clock.now());
            }
        }
    }
}

impl StdioWire<'_> {
    /// Carries out `leg`: the process started, a line written, a step of its end done.
    fn carry_out(&mut self, op: &mut Operation, leg: &Leg) {
        let clock = MonotonicClock;
        match leg.kind {
            LegKind::Spawn => {
                let started = Child::spawn(self.command).map(|child| {
                    if let Some(waker) = child.waker() {
                        self.shared.set_waker(waker);
                    }
                    *self.child = Some(child);
                });
                op.handle_input(process::spawned(leg, started), clock.now());
            }
            // The steps of a close: the process's exit, read as stdout ends, ends the close.
            LegKind::Shutdown | LegKind::Terminate => {
                let done = process::close_step(leg, self.child.as_mut());
                op.handle_input(done, clock.now());
            }
            LegKind::Kill => {
                let exit = self.child.take().map(Child::kill).unwrap_or_default();
                op.handle_input(Input::Exit(&exit), clock.now());
            }
            _ => {
                let line = leg.request.body();
                let written = match self.child.as_mut() {
                    Some(child) if leg.kind == LegKind::CancelNotice => {
                        child.write_line_at_once(line)
                    }
                    Some(child) => child.write_line(line, leg.ends_at, self.shared),
                    None => Written::Refused,
                };
                match written {
                    Written::Whole => {
                        op.handle_input(Input::Sent { leg: leg.id }, clock.now());
                    }
                    // The operation decides what a late or cancelled write means (the loop
                    // passes the cancel on).
                    Written::TimedOut => {
                        op.handle_input(Input::Timeout, clock.now());
                    }
                    Written::Cancelled => {}
                    Written::Refused if leg.kind == LegKind::CancelNotice => {
                        op.handle_input(
                            mcp_driver_common::process::stdin_full(leg.id),
                            clock.now(),
                        );
                    }
                    Written::Refused => {
                        // The process stopped reading: it is gone, or going.
                        let exit = self.child.take().map(Child::exit).unwrap_or_default();
                        op.handle_input(Input::Exit(&exit), clock.now());
                    }
                }
            }
        }
    }
}
