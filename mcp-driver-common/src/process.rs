//! A local (stdio) server's process as both drivers start and end it: the command a
//! [`StdioCommand`] describes ([`command`]), the close's SIGTERM ([`terminate`], the
//! [`LegKind::Terminate`](mcp_proto::LegKind::Terminate) step), and the one rule for a process
//! that gets no time ([`kill_at_once`]), which the kill leg
//! ([`LegKind::Kill`](mcp_proto::LegKind::Kill)) and a dropped client both follow.
//!
//! What it must never do: wait on the server, or decide when a process ends (that is
//! `mcp-proto`'s, step by step: the spawn, stdin closed, the SIGTERM, the kill). Reading and
//! writing the pipes is each driver's.

use std::process::{Command, Stdio};

use mcp_proto::StdioCommand;

/// The command that starts the server `stdio` describes: its program, arguments, environment
/// and working directory, with stdin, stdout and stderr piped to the driver. The tokio driver
/// converts it (`tokio::process::Command::from`).
pub fn command(stdio: &StdioCommand) -> Command {
    let mut command = Command::new(stdio.program());
    command
        .args(stdio.arguments())
        .envs(stdio.environment().iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(dir) = stdio.working_dir() {
        command.current_dir(dir);
    }
    command
}

/// Sends the process `pid` SIGTERM, without waiting: the terminate step of a close
/// ([`LegKind::Terminate`](mcp_proto::LegKind::Terminate)). Elsewhere than on Unix it does
/// nothing: the kill that follows at the close's end ends the process. `None` (a process
/// already reaped) sends nothing, so no other process gets the signal.
pub fn terminate(pid: Option<u32>) {
    #[cfg(unix)]
    {
        let pid = pid
            .and_then(|pid| i32::try_from(pid).ok())
            .and_then(rustix::process::Pid::from_raw);
        if let Some(pid) = pid {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
    }
    #[cfg(not(unix))]
    let _ = pid;
}

/// What to tell the operation once the spawn leg `leg` was carried out: the process started
/// ([`Input::Sent`](mcp_proto::driver::Input::Sent)), or it could not be started, in the
/// operating system's words (a connect failure: the operation says the program could not
/// run).
pub fn spawned(
    leg: &mcp_proto::driver::Leg,
    started: std::io::Result<()>,
) -> mcp_proto::driver::Input<'static> {
    match started {
        Ok(()) => mcp_proto::driver::Input::Sent { leg: leg.id },
        Err(err) => mcp_proto::driver::Input::Failed {
            leg: leg.id,
            error: mcp_proto::driver::TransportError::new(
                mcp_proto::TransportErrorKind::Connect,
                err.to_string(),
            ),
        },
    }
}

/// A local server's process as a driver holds it, for the steps of a close
/// ([`close_step`]).
pub trait Steps {
    /// Closes the server's stdin (the server reads the end of its input).
    fn close_stdin(&mut self);
    /// The process's id, `None` once it is reaped.
    fn pid(&self) -> Option<u32>;
}

/// Carries out a step of a close at once, on `child` (none: a process already gone): a
/// [`LegKind::Shutdown`](mcp_proto::LegKind::Shutdown) closes its stdin, a
/// [`LegKind::Terminate`](mcp_proto::LegKind::Terminate) sends it SIGTERM. Returns what to tell
/// the operation: the step is done, or, with no process to step, that it has ended (so the
/// close waits for no exit that cannot come). The waits between steps are the operation's.
pub fn close_step<C: Steps>(
    leg: &mcp_proto::driver::Leg,
    child: Option<&mut C>,
) -> mcp_proto::driver::Input<'static> {
    /// The end of a process the driver no longer holds: nothing is known of it.
    static GONE: mcp_proto::driver::ProcessExit = mcp_proto::driver::ProcessExit {
        status: None,
        stderr: String::new(),
    };
    let Some(child) = child else {
        return mcp_proto::driver::Input::Exit(&GONE);
    };
    if leg.kind == mcp_proto::LegKind::Shutdown {
        child.close_stdin();
    } else {
        terminate(child.pid());
    }
    mcp_proto::driver::Input::Sent { leg: leg.id }
}

/// A local server's process as a driver holds it, for [`kill_at_once`]: each step does nothing
/// when the process is gone already (reaped, or never started).
pub trait Kill {
    /// Sends the process SIGKILL (on Windows, `TerminateProcess`) without waiting; a process
    /// that is gone already is no error.
    fn start_kill(&mut self);
    /// Reaps the killed process, so that no zombie is left: at once where the driver can
    /// wait for a killed process on the spot (the blocking driver), else by leaving it to the
    /// runtime's reaper (tokio reaps a dropped child in the background).
    fn reap(&mut self);
}

/// The blocking driver's process: a killed process exits at once, so the wait is short.
impl Kill for std::process::Child {
    fn start_kill(&mut self) {
        // Once reaped, the standard library sends no signal (the pid may be another's).
        let _ = self.kill();
    }

    fn reap(&mut self) {
        let _ = self.wait();
    }
}

/// A process the driver may have let go already.
impl<P: Kill> Kill for Option<P> {
    fn start_kill(&mut self) {
        if let Some(process) = self {
            process.start_kill();
        }
    }

    fn reap(&mut self) {
        if let Some(process) = self {
            process.reap();
        }
    }
}

/// Ends a local server at once: `stdin` closed (the server reads the end of its input),
/// `process` killed, reaped. No polite shutdown, whatever budget is left: this is the rule for
/// a process nothing may wait for, a kill leg's (the budget is spent, or the server's stdin
/// holds half a message) and a dropped client's (nothing waits on the server when its client
/// goes, and nothing outlives the client).
pub fn kill_at_once<P: Kill + ?Sized>(stdin: Option<impl Sized>, process: &mut P) {
    drop(stdin);
    process.start_kill();
    process.reap();
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;
    use std::time::{Duration, Instant};

    #[test]
    fn a_server_that_would_run_on_is_killed_and_reaped_without_being_waited_for() {
        // `sleep` neither reads its stdin nor ends when it closes: only the kill ends it.
        let mut child = Command::new("sleep")
            .arg("30")
            .stdin(Stdio::piped())
            .spawn()
            .expect("sleep runs");
        let started = Instant::now();
        kill_at_once(child.stdin.take(), &mut child);
        let status = child
            .try_wait()
            .expect("the child is ours")
            .expect("reaped: its status is known at once");
        assert_eq!(status.signal(), Some(9), "{status:?}");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
    }

    /// A process the close's steps can act on, that records them.
    #[derive(Default)]
    struct Stepped(Vec<&'static str>);

    impl Steps for Stepped {
        fn close_stdin(&mut self) {
            self.0.push("stdin closed");
        }
        fn pid(&self) -> Option<u32> {
            None
        }
    }

    #[test]
    fn a_close_step_without_a_process_says_it_ended_instead_of_leaving_the_close_to_wait() {
        // A leg to carry the steps: the spawn leg of a stdio probe, renamed.
        let config = mcp_proto::SessionConfig::stdio(StdioCommand::new("x"));
        let now = Instant::now();
        let mut leg = match mcp_proto::Session::new(config).probe(now).poll_output(now) {
            mcp_proto::driver::Output::Transmit(leg) => leg,
            other => panic!("{other:?}"),
        };
        leg.kind = mcp_proto::LegKind::Shutdown;
        assert!(matches!(
            close_step::<Stepped>(&leg, None),
            mcp_proto::driver::Input::Exit(_)
        ));
        let mut child = Stepped::default();
        assert!(matches!(
            close_step(&leg, Some(&mut child)),
            mcp_proto::driver::Input::Sent { .. }
        ));
        assert_eq!(child.0, ["stdin closed"]);
    }

    #[test]
    fn a_terminated_server_gets_sigterm() {
        let mut child = Command::new("sleep").arg("30").spawn().expect("sleep runs");
        terminate(Some(child.id()));
        let status = child.wait().expect("the child is ours");
        assert_eq!(status.signal(), Some(15), "{status:?}");
    }

    #[test]
    fn a_command_runs_the_program_with_its_arguments_environment_and_directory() {
        let stdio = StdioCommand::new("sh")
            .args(["-c", r#"printf '%s %s' "$MCP_TEST_VALUE" "$(pwd)""#])
            .env("MCP_TEST_VALUE", "kept")
            .current_dir("/");
        let output = command(&stdio).output().expect("sh runs");
        assert_eq!(String::from_utf8_lossy(&output.stdout), "kept /");
    }
}

/// What a driver tells the operation when a message that must be written at once (a cancel
/// notice after the budget) found the server's stdin full: the leg is declined.
pub fn stdin_full(leg: mcp_proto::driver::LegId) -> mcp_proto::driver::Input<'static> {
    mcp_proto::driver::Input::Failed {
        leg,
        error: mcp_proto::driver::TransportError::new(
            mcp_proto::TransportErrorKind::Declined,
            "the server's stdin is full",
        ),
    }
}
