//! What the operator sees on stderr: `--trace` lines, the spinner, and the exit code of an error.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use mcp_proto::{Budget, Error, Event, Fault, LegReport, Observer};

use crate::code;

/// The exit code for an operation that ended in `err`: one code per [`Fault`], beside the
/// code table in `main.rs`.
pub(crate) fn exit_code(err: &Error) -> u8 {
    match err.fault() {
        Fault::Budget => code::BUDGET,
        Fault::Network => code::UNREACHABLE,
        Fault::Server => code::SERVER,
        Fault::Caller => code::USAGE,
        Fault::Cancelled => code::CANCELLED,
        Fault::Authorization => code::AUTHORIZATION,
        Fault::AuthorizationServer => code::AUTHORIZATION_SERVER,
    }
}

/// Receives the driver's reports; clones share one state (the driver owns one clone).
#[derive(Clone)]
pub(crate) struct Reporter {
    inner: Arc<Mutex<State>>,
}

struct State {
    trace: bool,
    /// `--log-level`: the server's log messages at this level and above go to stderr.
    logs: Option<mcp_proto::message::LogLevel>,
    interactive: bool,
    budget: Budget,
    started: Instant,
    spinner: Option<ProgressBar>,
    progress: Option<String>,
    /// `watch`: every notification (but log messages and progress) is a JSON line on stdout.
    notifications: bool,
}

impl Reporter {
    pub(crate) fn new(
        trace: bool,
        logs: Option<mcp_proto::message::LogLevel>,
        interactive: bool,
        budget: Budget,
    ) -> Self {
        Self {
            inner: Arc::new(Mutex::new(State {
                trace,
                logs,
                interactive,
                budget,
                started: Instant::now(),
                spinner: None,
                progress: None,
                notifications: false,
            })),
        }
    }

    /// `watch`: the server's notifications are what the command prints, one JSON line each
    /// on stdout as it comes (log messages and progress stay where they are shown).
    pub(crate) fn with_notifications_on_stdout(self) -> Self {
        self.state().notifications = true;
        self
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// An operation starts: on a terminal, a spinner appears if it runs longer than a second.
    pub(crate) fn start_operation(&self) {
        let mut state = self.state();
        state.started = Instant::now();
        state.progress = None;
        if !state.interactive {
            return;
        }
        let spinner = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        spinner.set_style(
            ProgressStyle::with_template("{spinner} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        state.spinner = Some(spinner.clone());
        drop(state);
        let reporter = self.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(1));
            if spinner.is_finished() {
                return;
            }
            spinner.set_draw_target(ProgressDrawTarget::stderr());
            while !spinner.is_finished() {
                spinner.set_message(reporter.status_line());
                spinner.tick();
                std::thread::sleep(Duration::from_millis(100));
            }
        });
    }

    fn status_line(&self) -> String {
        let state = self.state();
        let elapsed = state.started.elapsed();
        let left = state.budget.as_duration().saturating_sub(elapsed);
        let mut line = format!(
            "{:.1} s elapsed, {:.1} s of the budget left",
            elapsed.as_secs_f64(),
            left.as_secs_f64()
        );
        if let Some(progress) = &state.progress {
            line.push_str(" - ");
            line.push_str(progress);
        }
        line
    }

    pub(crate) fn end_operation(&self) {
        if let Some(spinner) = self.state().spinner.take() {
            spinner.finish_and_clear();
        }
    }

    /// A refused leg gets its own trace line.
    pub(crate) fn refused(&self, err: &Error) {
        if let Error::BudgetExhausted {
            budget,
            method,
            leg,
            ..
        } = err
        {
            if self.state().trace {
                eprintln!(
                    "leg={leg} method={method} refused budget_ms={}",
                    budget.as_duration().as_millis()
                );
            }
        }
    }
}

impl Observer for Reporter {
    fn leg_finished(&mut self, report: &LegReport) {
        let state = self.state();
        if !state.trace {
            return;
        }
        let line = report.to_string();
        match &state.spinner {
            Some(spinner) if !spinner.is_hidden() => spinner.println(line),
            _ => eprintln!("{line}"),
        }
    }

    fn event(&mut self, event: &Event) {
        if let Event::StdoutNoise { line } = event {
            // A local server's stdout line that is not MCP: skipped, shown with --trace.
            let state = self.state();
            if state.trace {
                eprintln!("stdout noise: {line}");
            }
            return;
        }
        if let Event::Notification(notification) = event {
            if let Some(log) = notification.log() {
                let state = self.state();
                let asked = state.logs;
                let level = mcp_proto::message::LogLevel::parse(&log.level);
                if asked.is_some_and(|asked| level.is_none_or(|level| level >= asked)) {
                    let line = log_line(&log);
                    match &state.spinner {
                        Some(spinner) if !spinner.is_hidden() => spinner.println(&line),
                        _ => eprintln!("{line}"),
                    }
                }
                return;
            }
        }
        if let Event::Notification(notification) = event {
            if self.state().notifications && notification.progress().is_none() {
                print_notification(notification);
                return;
            }
        }
        let text = match event {
            // A tool the server runs as a task: its status (and message) as it changes.
            Event::TaskStatus {
                task_id,
                status,
                message,
            } => match message {
                Some(message) => format!("task={task_id} status={status} message={message:?}"),
                None => format!("task={task_id} status={status}"),
            },
            Event::Notification(notification) => {
                let Some(progress) = notification.progress() else {
                    return;
                };
                let mut text = match progress.total {
                    Some(total) => format!("progress {}/{}", progress.progress, total),
                    None => format!("progress {}", progress.progress),
                };
                if let Some(message) = progress.message {
                    text.push_str(": ");
                    text.push_str(&message);
                }
                text
            }
            _ => return,
        };
        let mut state = self.state();
        if state.trace {
            // One line per notification, beside the legs' lines.
            match &state.spinner {
                Some(spinner) if !spinner.is_hidden() => spinner.println(&text),
                _ => eprintln!("{text}"),
            }
        }
        state.progress = Some(text);
    }
}

/// One notification as one JSON line on stdout, flushed at once: a pipe reader sees it when
/// it comes, not when a buffer fills.
fn print_notification(notification: &mcp_proto::message::Notification) {
    let line = serde_json::json!({"method": notification.method, "params": notification.params});
    // A reader waits for it: out at once.
    crate::stdout::outln!("{line}");
    crate::stdout::flush();
}

/// A server's log message as one line: `log <level>[ <logger>]: <data>` (a string as it is,
/// anything else as compact JSON), clipped, control characters folded.
fn log_line(log: &mcp_proto::message::LogMessage) -> String {
    let data = match &log.data {
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    let logger = log
        .logger
        .as_deref()
        .map(|l| format!(" {l}"))
        .unwrap_or_default();
    let line = format!("log {}{logger}: {data}", log.level);
    crate::elicit::shown(&line)
}
