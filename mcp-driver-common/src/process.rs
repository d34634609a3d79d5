//! A local (stdio) server's process as both drivers start and end it: the command a
//! [`StdioCommand`] describes ([`command`]), the close's SIGTERM ([`terminate`], the
//! [`LegKind::Terminate`](mcp_proto::driver::LegKind::Terminate) step), the one rule for a process
//! that gets no time ([`kill_at_once`]), which the kill leg
//! ([`LegKind::Kill`](mcp_proto::driver::LegKind::Kill)) and a dropped client both follow, and the
//! end of what a server that exited leaves behind ([`end_group_if_exited`]).
//!
//! # The server's whole process tree is the client's
//!
//! Hosts start most local servers through a wrapper (`npx -y <package>`, `uvx <package>`, `sh -c
//! '...'`): the client's child is the wrapper, the real server its child or grandchild. On Unix the
//! server is therefore started in a process group of its own (its id is the child's pid), and every
//! signal of its end goes to that group: the close's SIGTERM, the kill (the close's last step, a
//! spent budget's, a dropped client's). Once the child itself has exited, whatever is left of its
//! group (a helper it started in the background, a server its wrapper left) is sent SIGKILL before
//! the child is reaped ([`end_group_if_exited`]): the client ends the whole tree, whichever way the
//! server ends.
//!
//! Why no signal can reach another's processes: the group is signalled only while its leader,
//! the client's child, is not yet reaped (a zombie at most). Until then the kernel gives its
//! pid to no other process, so no other group can have that id: a group id is a leader's pid.
//! After the reap, nothing is sent (the drivers hold a reaped process no more, see [`Kill`]).
//!
//! What it does not reach: a process that left the group on purpose (`setsid`, a daemon's
//! double fork) is no longer the server's tree. Being in a group of its own, the server no
//! longer gets the terminal's signals: a Ctrl-C reaches the client alone, which cancels its
//! operation and closes (or kills) the server itself.
//!
//! Off Unix (Windows) the child alone is killed (`TerminateProcess`); what its wrapper started
//! lives on. Ending the whole tree there takes a job object the child is assigned to, with
//! kill-on-close: not built (a known limit).
//!
//! What it must never do: wait on the server, or decide when a process ends (that is
//! `mcp-proto`'s, step by step: the spawn, stdin closed, the SIGTERM, the kill). Reading and
//! writing the pipes is each driver's.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mcp_proto::StdioCommand;

/// The command that starts the server `stdio` describes: its program, arguments, environment
/// and working directory, with stdin, stdout and stderr piped to the driver, and on Unix in a
/// process group of its own (see the module docs: its end reaches the whole tree; a terminal's
/// Ctrl-C does not reach it). The tokio driver converts it (`tokio::process::Command::from`).
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
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    command
}

/// Sends SIGTERM to the server whose process is `pid` and to the rest of its process group,
/// without waiting: the terminate step of a close
/// ([`LegKind::Terminate`](mcp_proto::driver::LegKind::Terminate)). Elsewhere than on Unix it does
/// nothing: the kill that follows at the close's end ends the process. `None` (a process
/// already reaped) sends nothing. The caller must pass only the pid of a child it has not
/// reaped (see the module docs: then no other process can have it).
pub fn terminate(pid: Option<u32>) {
    #[cfg(unix)]
    signal_group(pid, rustix::process::Signal::TERM);
    #[cfg(not(unix))]
    let _ = pid;
}

/// Sends SIGKILL to the server whose process is `pid` and to the rest of its process group,
/// without waiting (on Unix; elsewhere it does nothing, and the caller kills its child). `None`
/// sends nothing; the caller must pass only the pid of a child it has not reaped.
pub fn kill_group(pid: Option<u32>) {
    #[cfg(unix)]
    signal_group(pid, rustix::process::Signal::KILL);
    #[cfg(not(unix))]
    let _ = pid;
}

/// `signal` to the group the server's process `pid` leads (its id is `pid`: [`command`] made
/// it so). A group already gone is no error.
#[cfg(unix)]
fn signal_group(pid: Option<u32>, signal: rustix::process::Signal) {
    let leader = pid
        .and_then(|pid| i32::try_from(pid).ok())
        .and_then(rustix::process::Pid::from_raw);
    if let Some(leader) = leader {
        let _ = rustix::process::kill_process_group(leader, signal);
    }
}

/// Whether the server whose process is `pid` has exited, so that the caller may reap it now;
/// when it has, the rest of its process group has just been sent SIGKILL. A driver calls this,
/// on the thread or task that holds the process, instead of reaping its child's exit blindly
/// (`try_wait`), and reaps only once it says yes: what the server left in its group is ended
/// while the child's pid still names that group (see the module docs). Yes too when the exit
/// cannot be looked at without reaping (off Unix, or where `waitid` is missing): the caller's
/// own `try_wait` then decides.
pub fn end_group_if_exited(pid: u32) -> bool {
    match looks_exited(pid) {
        Some(false) => false,
        Some(true) => {
            kill_group(Some(pid));
            true
        }
        None => true,
    }
}

/// Whether the process `pid` has exited, looked at without reaping it and without signalling
/// anything; `None` where that cannot be looked at (off Unix, no `waitid`), or `pid` is no
/// child to look at (reaped already).
fn looks_exited(pid: u32) -> Option<bool> {
    #[cfg(all(
        unix,
        not(any(
            target_os = "openbsd",
            target_os = "redox",
            target_os = "cygwin",
            target_os = "horizon"
        ))
    ))]
    {
        use rustix::process::{Pid, WaitId, WaitIdOptions, waitid};
        let leader = i32::try_from(pid).ok().and_then(Pid::from_raw)?;
        // WNOWAIT: the exit is looked at, the zombie kept (its pid held) for the group's kill.
        let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
        waitid(WaitId::Pid(leader), options)
            .ok()
            .map(|status| status.is_some())
    }
    #[cfg(not(all(
        unix,
        not(any(
            target_os = "openbsd",
            target_os = "redox",
            target_os = "cygwin",
            target_os = "horizon"
        ))
    )))]
    {
        let _ = pid;
        None
    }
}

/// How a driver waits for a server's process to exit without reaping it (see
/// [`end_group_if_exited`]): on Linux the process's pidfd, readable the moment it exits; elsewhere
/// (or where pidfds are not to be had) pauses that grow, 50 µs doubling to 5 ms, so a quick exit is
/// still seen soon. Made for a process the caller has not reaped.
#[derive(Debug)]
pub struct ExitWatch {
    #[cfg(target_os = "linux")]
    pidfd: Option<std::os::fd::OwnedFd>,
}

impl ExitWatch {
    /// The watch on the process `pid` (none: a watch that only pauses).
    pub fn of(pid: Option<u32>) -> Self {
        #[cfg(target_os = "linux")]
        {
            let pidfd = pid
                .and_then(|pid| i32::try_from(pid).ok())
                .and_then(rustix::process::Pid::from_raw)
                .and_then(|pid| {
                    rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok()
                });
            Self { pidfd }
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = pid;
            Self {}
        }
    }

    /// Waits at most `left` for the exit (with a pidfd), or `pause` (without).
    pub fn wait(&self, left: Duration, pause: Duration) {
        #[cfg(target_os = "linux")]
        if let Some(pidfd) = &self.pidfd {
            use rustix::event::{PollFd, PollFlags, Timespec};
            let timeout = Timespec {
                tv_sec: i64::try_from(left.as_secs()).unwrap_or(i64::MAX),
                tv_nsec: i64::from(left.subsec_nanos()),
            };
            let mut fds = [PollFd::new(pidfd, PollFlags::IN)];
            let _ = rustix::event::poll(&mut fds, Some(&timeout));
            return;
        }
        let _ = left;
        std::thread::sleep(pause);
    }

    /// Waits at most `within` for the process `pid` to exit, and says whether it did (or cannot
    /// tell: off Unix). Blocks the calling thread; reaps nothing and signals nothing, so any thread
    /// may wait: the one that holds the process then calls [`end_group_if_exited`] (which ends the
    /// rest of the group) before it reaps it.
    pub fn wait_exited(&self, pid: u32, within: Duration) -> bool {
        let started = Instant::now();
        let mut pause = Duration::from_micros(50);
        loop {
            if looks_exited(pid) != Some(false) {
                return true;
            }
            let spent = started.elapsed();
            if spent >= within {
                return false;
            }
            self.wait(within - spent, pause);
            pause = (pause * 2).min(Duration::from_millis(5));
        }
    }
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
/// [`LegKind::Shutdown`](mcp_proto::driver::LegKind::Shutdown) closes its stdin, a
/// [`LegKind::Terminate`](mcp_proto::driver::LegKind::Terminate) sends it SIGTERM. Returns what to tell
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
    if leg.kind == mcp_proto::driver::LegKind::Shutdown {
        child.close_stdin();
    } else {
        terminate(child.pid());
    }
    mcp_proto::driver::Input::Sent { leg: leg.id }
}

/// A local server's process as a driver holds it, for [`kill_at_once`]: each step does nothing
/// when the process is gone already (reaped, or never started). A driver holds no process it
/// has reaped (or its pid could be another's by now): reaped, it is dropped or marked so.
pub trait Kill {
    /// Sends the process and the rest of its group SIGKILL (on Windows, `TerminateProcess` to
    /// the process) without waiting; a process that is gone already is no error.
    fn start_kill(&mut self);
    /// Reaps the killed process, so that no zombie is left: at once where the driver can
    /// wait for a killed process on the spot (the blocking driver), else by leaving it to the
    /// runtime's reaper (tokio reaps a dropped child in the background).
    fn reap(&mut self);
}

/// The blocking driver's process: a killed process exits at once, so the wait is short. Held
/// only while not reaped (the driver keeps it in an `Option`, emptied by the reap): the
/// standard library's `Child` gives its pid even once reaped, so the group kill relies on it.
impl Kill for std::process::Child {
    fn start_kill(&mut self) {
        kill_group(Some(self.id()));
        // The child itself, where there are no groups (and at no cost where there are: once
        // reaped, the standard library sends no signal).
        let _ = self.kill();
    }

    fn reap(&mut self) {
        let _ = self.wait();
    }
}

/// A process the driver may have let go already: reaped, it is let go (so no later kill can
/// reach the group by a pid that may be another's by then).
impl<P: Kill> Kill for Option<P> {
    fn start_kill(&mut self) {
        if let Some(process) = self {
            process.start_kill();
        }
    }

    fn reap(&mut self) {
        if let Some(mut process) = self.take() {
            process.reap();
        }
    }
}

/// Ends a local server at once: `stdin` closed (the server reads the end of its input), `process`
/// and the rest of its process group killed, the process reaped. No polite shutdown, whatever
/// budget is left: this is the rule for a process nothing may wait for, a kill leg's (the budget is
/// spent, or the server's stdin holds half a message) and a dropped client's (nothing waits on the
/// server when its client goes, and nothing outlives the client).
pub fn kill_at_once<P: Kill + ?Sized>(stdin: Option<impl Sized>, process: &mut P) {
    drop(stdin);
    process.start_kill();
    process.reap();
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[test]
    fn a_server_that_would_run_on_is_killed_and_reaped_without_being_waited_for() {
        // `sleep` neither reads its stdin nor ends when it closes: only the kill ends it.
        let mut child = command(&StdioCommand::new("sleep").arg("30"))
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
        leg.kind = mcp_proto::driver::LegKind::Shutdown;
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
        let mut child = command(&StdioCommand::new("sleep").arg("30"))
            .spawn()
            .expect("sleep runs");
        terminate(Some(child.id()));
        let status = child.wait().expect("the child is ours");
        assert_eq!(status.signal(), Some(15), "{status:?}");
    }

    /// Starts `script` under `sh -c` as [`command`] starts a server (in a group of its own),
    /// the script printing the pid of a helper it started in the background; returns the
    /// shell and the helper's pid.
    fn shell_with_helper(script: &str) -> (std::process::Child, u32) {
        use std::io::BufRead;
        let mut shell = command(&StdioCommand::new("sh").args(["-c", script]))
            .spawn()
            .expect("sh runs");
        let mut line = String::new();
        std::io::BufReader::new(shell.stdout.take().expect("piped"))
            .read_line(&mut line)
            .expect("the helper's pid");
        let helper = line.trim().parse().expect("a pid");
        (shell, helper)
    }

    /// Whether the process `pid` is gone: no longer running (a zombie, or reaped by whoever
    /// inherited it), looked at in /proc until `within` is over.
    #[cfg(target_os = "linux")]
    fn gone_within(pid: u32, within: Duration) -> bool {
        let end = Instant::now() + within;
        loop {
            let running = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| stat.rsplit(')').next().map(str::to_owned))
                .is_some_and(|rest| !rest.trim_start().starts_with('Z'));
            if !running {
                return true;
            }
            if Instant::now() >= end {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_kill_reaches_what_the_server_started_too() {
        // The shell waits for its helper: a kill that reached the shell alone would leave
        // the helper running, re-parented.
        let (mut shell, helper) = shell_with_helper("sleep 600 & echo $!; wait");
        kill_at_once(shell.stdin.take(), &mut shell);
        assert!(
            gone_within(helper, Duration::from_secs(5)),
            "helper {helper} runs on"
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_terminate_reaches_what_the_server_started_too() {
        let (mut shell, helper) = shell_with_helper("sleep 600 & echo $!; wait");
        terminate(Some(shell.id()));
        let ended =
            ExitWatch::of(Some(shell.id())).wait_exited(shell.id(), Duration::from_secs(10));
        kill_at_once(shell.stdin.take(), &mut shell);
        assert!(ended, "the shell ignored SIGTERM");
        let status = shell.wait().expect("the child is ours");
        assert_eq!(status.signal(), Some(15), "{status:?}");
        assert!(
            gone_within(helper, Duration::from_secs(5)),
            "helper {helper} runs on"
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_server_that_exited_leaves_nothing_of_its_group_once_seen_exited() {
        // The shell exits at once, its helper (its output elsewhere) would run on.
        let (mut shell, helper) =
            shell_with_helper("sleep 600 </dev/null >/dev/null 2>&1 & echo $!");
        let watch = ExitWatch::of(Some(shell.id()));
        assert!(watch.wait_exited(shell.id(), Duration::from_secs(10)));
        // Seen, not reaped: the pid still names the group.
        assert!(
            !gone_within(helper, Duration::ZERO),
            "the watch signals nothing"
        );
        assert!(end_group_if_exited(shell.id()));
        let status = shell
            .try_wait()
            .expect("ours")
            .expect("exited: reaped at once");
        assert_eq!(status.code(), Some(0));
        assert!(
            gone_within(helper, Duration::from_secs(5)),
            "helper {helper} runs on"
        );
    }

    #[test]
    fn a_server_that_runs_is_not_seen_exited_and_gets_no_signal() {
        let mut child = command(&StdioCommand::new("sleep").arg("30"))
            .spawn()
            .expect("sleep runs");
        assert!(!end_group_if_exited(child.id()));
        assert!(
            !ExitWatch::of(Some(child.id())).wait_exited(child.id(), Duration::from_millis(20))
        );
        assert!(child.try_wait().expect("ours").is_none(), "still running");
        kill_at_once(child.stdin.take(), &mut child);
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
