//! Where an operation stands: what it is for, the era it speaks, and its way to its work: the
//! process, the session, the handshake, then the work.
//!
//! Over stdio an operation that finds no process running starts one first. Over HTTP one that
//! needs a session another operation is establishing waits for it. A legacy session without
//! its handshake sends `initialize`, then `notifications/initialized`; the handshake is
//! committed to the session only once that notification is accepted. Then the work goes out:
//! the action's request, the listing's next page, the skill's next file, a close's next step.
//! [`Progress`] keeps the action and its era (`era`), which of these is next, the handshake
//! answered and not yet committed, and whether the session was already started over once, and
//! says which leg comes next ([`Progress::next_kind`]). It never grants, sends or reads
//! anything.

use super::era::EraState;
use super::read::Heard;
use super::stdio::Stdout;
use super::view::View;
use super::{Action, LegKind, Outcome};
use crate::catalog::ListKind;
use crate::model::SessionInfo;
use crate::session::Session;
use crate::task::TaskEra;
use serde_json::Value;

/// The next leg to build when nothing is in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Over stdio: start the server process.
    Spawn,
    /// Over HTTP+SSE: open the event stream and wait for its `endpoint` event.
    OpenStream,
    /// Over HTTP: the session is needed and this operation has not got it yet: another
    /// operation is establishing it, or the session has not said yet which one will
    /// ([`Input::Session`](super::Input::Session)).
    AwaitSession,
    Initialize,
    Initialized,
    /// Legacy era: `logging/setLevel`, after a handshake, when a log level is configured and
    /// the server declares `logging`.
    SetLogLevel,
    Work,
}

/// Where the work starts, in the era `era` speaks, knowing what `session` knows: the modern
/// era has no handshake, a live legacy session needs none; anything else needs the session's
/// handshake (over stdio, where operations run one at a time, and over HTTP+SSE, where each
/// operation has a stream and a session of its own, it begins at once).
fn work_or_handshake(modern: bool, session: &View) -> Step {
    if session.speaks_sse() && session.endpoint().is_none() {
        // Over HTTP+SSE the operation's own stream comes first, then its own handshake.
        Step::OpenStream
    } else if modern || session.info().is_some() {
        Step::Work
    } else if session.config().is_stdio() || session.speaks_sse() {
        Step::Initialize
    } else {
        Step::AwaitSession
    }
}

/// How an operation begins, decided from its session before the session lends it a copy.
#[derive(Debug)]
pub(super) struct Start {
    /// The era it speaks first.
    pub(super) era: EraState,
    /// A close with nothing to close: it ends before it begins.
    pub(super) nothing_to_close: bool,
    /// Over stdio: no process runs and one is needed.
    restarting: bool,
    /// Over stdio, a close: the process is ended whether its handshake was done or not.
    ends_process: bool,
}

impl Start {
    /// How an operation for `action` begins on `session`. Closing a session that has no id on
    /// the server (or no session at all, as in the modern era) sends nothing, and over stdio
    /// closing no process does nothing: the session is reset, and the operation ends at once.
    pub(super) fn of(session: &mut Session, action: &Action) -> Self {
        let stdio = session.config().is_stdio();
        // Over HTTP+SSE the session is its event stream: a close drops it.
        let sse = session.speaks_sse();
        let close = *action == Action::Close;
        // A local server started anew may be another build of it (upgraded, or another
        // program on the PATH): its era is found again, not remembered.
        let restarting = stdio && !session.process_running() && !close;
        // A legacy task lives in its session: its resume or cancel speaks in it.
        if let Action::ResumeTask(task) | Action::CancelTask(task) = action {
            if let (TaskEra::Legacy, Some(id), false) = (task.era, &task.session_id, stdio) {
                session.adopt(id);
            }
        }
        let era = EraState::starting(session, action, restarting);
        let nothing_to_close = close
            && if stdio {
                !session.process_running()
            } else if sse {
                !session.event_stream_open()
            } else {
                session.info().and_then(|i| i.session_id.as_ref()).is_none()
            };
        if nothing_to_close {
            session.reset();
        }
        Self {
            era,
            nothing_to_close,
            restarting,
            ends_process: (stdio || sse) && close,
        }
    }

    /// The copy of `session` the operation works on, and over stdio the session's stdout (with
    /// any partial line the last operation left), both lent until the operation ends.
    pub(super) fn lend(&self, session: &mut Session) -> (View, Stdout) {
        let (known, framer) = session.lend();
        let view = View::of(known);
        let stdout = Stdout::lent(framer, view.config().body_cap());
        (view, stdout)
    }

    /// Where the operation for `action` starts, knowing what `session` (its copy) knows: the
    /// modern era has no handshake, so the work goes out first; over stdio a process comes
    /// first, when none runs.
    pub(super) fn progress(self, action: Action, session: &View) -> Progress {
        let next = if self.restarting {
            Step::Spawn
        } else if self.ends_process {
            Step::Work
        } else {
            work_or_handshake(self.era.modern().is_some(), session)
        };
        Progress {
            action,
            era: self.era,
            next,
            pending: None,
            reinitialized: false,
        }
    }
}

/// Where the operation stands: its action, its era, and its way to the work.
#[derive(Debug)]
pub(super) struct Progress {
    /// What the operation is for.
    pub(super) action: Action,
    /// The era it speaks, and whether it may still change it.
    pub(super) era: EraState,
    next: Step,
    /// The handshake answered by `initialize`, committed to the session only once the
    /// `notifications/initialized` leg is accepted.
    pending: Option<SessionInfo>,
    /// Whether the session was already lost and started over once in this operation.
    reinitialized: bool,
}

impl Progress {
    /// Whether the operation needs its session and has not got it.
    pub(super) fn awaits_session(&self) -> bool {
        self.next == Step::AwaitSession
    }

    /// Whether the handshake is done and committed, so the standalone stream may go out
    /// before the work. Over HTTP+SSE there is none: the one event stream carries everything.
    pub(super) fn may_listen(&self, session: &View) -> bool {
        self.next == Step::Work
            && self.pending.is_none()
            && session.info().is_some()
            && !session.speaks_sse()
    }

    /// The handshake in force: committed to `session`, or answered and not yet confirmed.
    pub(super) fn handshake<'a>(&'a self, session: &'a View) -> Option<&'a SessionInfo> {
        self.pending.as_ref().or_else(|| session.info())
    }

    /// The leg that goes out next when nothing is in flight and nothing holds it back: `page`
    /// is the listing's next page and whether it walks a call's tools again (`answer`),
    /// `close` what ends what the session holds (`held`: a local server's next close step,
    /// or the HTTP+SSE stream's hangup).
    pub(super) fn next_kind(&self, page: (u32, bool), close: LegKind, held: bool) -> LegKind {
        let (page, relisting) = page;
        match self.next {
            Step::Spawn => LegKind::Spawn,
            Step::OpenStream => LegKind::Events,
            Step::AwaitSession | Step::Initialize => LegKind::Initialize,
            Step::Work if self.era.probes_first() => LegKind::Discover,
            Step::Initialized => LegKind::Initialized,
            Step::SetLogLevel => LegKind::SetLogLevel,
            Step::Work => match &self.action {
                Action::Probe if self.era.modern().is_some() => LegKind::Discover,
                Action::Probe => LegKind::Ping,
                Action::List(of) => LegKind::List { of: *of, page },
                Action::CallTool { .. } if relisting => LegKind::List {
                    of: ListKind::Tools,
                    page,
                },
                Action::CallTool { .. } => LegKind::CallTool,
                Action::Request(request) => LegKind::Request(request.method()),
                Action::LoadSkill(_) => LegKind::Request(crate::skills::READ),
                Action::Subscribe(_) => LegKind::Subscribe,
                Action::ResumeTask(_) => LegKind::TaskGet,
                Action::CancelTask(_) => LegKind::TaskCancel,
                Action::Close if held => close,
                Action::Close => LegKind::Close,
            },
        }
    }

    /// Whether the work is next (no process to start, no handshake, no probe before it).
    pub(super) fn is_at_work(&self) -> bool {
        self.next == Step::Work && !self.era.probes_first()
    }

    /// The server process started: `session` knows it, and its handshake or the work is
    /// next, in the era the operation speaks.
    pub(super) fn spawned(&mut self, session: &mut View) {
        session.process_started();
        self.next = work_or_handshake(self.era.modern().is_some(), session);
    }

    /// Over HTTP+SSE: the event stream named `endpoint`. On the stream this operation opened
    /// (its leg awaits it), it is where every message goes from now on: the leg is over, the
    /// session knows the stream, and the handshake is next. The same one again changes
    /// nothing; another one, or one on another origin, is refused (the messages already sent
    /// went to the first), and the stream with it.
    pub(super) fn endpoint(
        &mut self,
        endpoint: Result<http::Uri, String>,
        session: &mut View,
        grants: &mut super::grant::Grants,
    ) -> Heard {
        use super::failure::Failure;
        let opening = grants.legs.get(super::legs::Role::Work);
        let opening = opening.is_some_and(|leg| leg.kind == LegKind::Events);
        match (endpoint, session.endpoint()) {
            (Ok(endpoint), _) if opening => {
                grants.end(super::legs::Role::Work);
                session.open_stream(endpoint);
                self.next = work_or_handshake(self.era.modern().is_some(), session);
                Heard::Over
            }
            (Ok(endpoint), Some(known)) if *known == endpoint => Heard::Over,
            // A stream that names another endpoint, or one that is refused, is not used
            // again: the next operation opens another.
            (named, _) => {
                session.close_stream();
                Heard::Failed(Failure::Malformed(named.err().unwrap_or_else(|| {
                    "the event stream named a second, different endpoint".to_owned()
                })))
            }
        }
    }

    /// The operation got the session it waited for: its live session, or the claim to
    /// establish it.
    pub(super) fn took_session(&mut self, session: &View) {
        self.next = if session.info().is_some() {
            Step::Work
        } else {
            Step::Initialize
        };
    }

    /// The budget ended while the operation waited for its session: the handshake is next,
    /// and the budget refuses it.
    pub(super) fn stop_waiting(&mut self) {
        self.next = Step::Initialize;
    }

    /// `initialize` was answered with `info`: `notifications/initialized` is next.
    pub(super) fn answered(&mut self, info: SessionInfo) {
        self.pending = Some(info);
        self.next = Step::Initialized;
    }

    /// `notifications/initialized` was accepted: the handshake is committed to `session`, in
    /// the era it was answered in, and the work is next; for a probe, it is the result.
    pub(super) fn confirm(&mut self, session: &mut View) -> Option<Outcome> {
        let info = self.pending.take()?;
        session.establish(info.clone());
        session.set_era(self.era.confirm());
        if self.action == Action::Probe {
            return Some(Outcome::Probe(info));
        }
        let logs = info
            .capabilities
            .get("logging")
            .is_some_and(Value::is_object);
        self.next = match session.config().log_level() {
            Some(_) if logs => Step::SetLogLevel,
            _ => Step::Work,
        };
        None
    }

    /// `logging/setLevel` was answered (whatever the answer: logs are not the work): the
    /// work is next.
    pub(super) fn level_set(&mut self) {
        if self.next == Step::SetLogLevel {
            self.next = Step::Work;
        }
    }

    /// The session was lost (a `404` to a request that carried its id): the first time it is
    /// forgotten and the operation starts over on a new one (true); a second loss is the end
    /// (false). So is the loss of a session a legacy task lives in (`task_live`, or the
    /// cancel of a handle): servers keep tasks per session, and a new one knows nothing of
    /// it; that session is forgotten.
    pub(super) fn lose_session(&mut self, session: &mut View, task_live: bool) -> bool {
        if task_live || matches!(self.action, Action::CancelTask(_)) {
            session.reset();
            return false;
        }
        if std::mem::replace(&mut self.reinitialized, true) {
            return false;
        }
        session.reset();
        true
    }

    /// The attempt in flight was abandoned (a lost session, another era): the handshake
    /// answered is dropped, and the work (or the handshake it needs) is next in the era the
    /// operation now speaks.
    pub(super) fn start_over(&mut self, session: &View) {
        self.pending = None;
        self.next = work_or_handshake(self.era.modern().is_some(), session);
    }
}
