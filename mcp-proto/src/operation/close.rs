//! The close of a local server, as steps the operation hands out one at a time: its stdin
//! closed ([`LegKind::Shutdown`]), a wait for it to exit on its own, SIGTERM
//! ([`LegKind::Terminate`]), a wait, then SIGKILL ([`LegKind::Kill`]).
//!
//! Every wait is inside the close's grant, the one the shutdown leg got: half of it for the
//! process to exit on its own, the rest after the SIGTERM, and the kill at its end. The
//! process's exit ([`Input::Exit`](super::Input::Exit)) ends the close at any step. This part
//! only says which step is next and when; it never sends a signal or reads a clock (the
//! driver does the one, the timer table the other), and the grant of each step is the
//! operation's one grant rule.

use std::time::Instant;

use super::driving::LegKind;

/// Where the close of a local server stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum Closing {
    /// Nothing done yet: the shutdown leg (stdin closed) goes first.
    #[default]
    Start,
    /// Stdin is closed: the process may exit on its own until `terminate_at`.
    StdinClosed {
        terminate_at: Instant,
        kill_at: Instant,
    },
    /// SIGTERM was sent: the process may exit until `kill_at`.
    Terminated { kill_at: Instant },
    /// The step the last wait led to is due; the close still ends at `kill_at`.
    Due { kind: LegKind, kill_at: Instant },
}

impl Closing {
    /// The leg that carries the next step: the shutdown first, then whatever the last wait
    /// led to.
    pub(super) fn next_kind(self) -> LegKind {
        match self {
            Self::Due { kind, .. } => kind,
            _ => LegKind::Shutdown,
        }
    }

    /// The step `kind` was carried out at `now` (for the shutdown: its grant ends at
    /// `ends_at`, the close's end); returns the instant the next one is due, if one follows.
    pub(super) fn done(
        &mut self,
        kind: LegKind,
        now: Instant,
        ends_at: Instant,
    ) -> Option<Instant> {
        let kill_at = match *self {
            Self::StdinClosed { kill_at, .. }
            | Self::Terminated { kill_at }
            | Self::Due { kill_at, .. } => kill_at,
            Self::Start => ends_at,
        };
        *self = match kind {
            LegKind::Shutdown => Self::StdinClosed {
                terminate_at: now + kill_at.saturating_duration_since(now) / 2,
                kill_at,
            },
            LegKind::Terminate => Self::Terminated { kill_at },
            _ => return None,
        };
        self.waits_until()
    }

    /// The instant the current wait ends, while the close waits for the process.
    pub(super) fn waits_until(self) -> Option<Instant> {
        match self {
            Self::StdinClosed { terminate_at, .. } => Some(terminate_at),
            Self::Terminated { kill_at } => Some(kill_at),
            Self::Start | Self::Due { .. } => None,
        }
    }

    /// The wait ended and the process is still running: the next step is due.
    pub(super) fn wait_over(&mut self) {
        *self = match *self {
            Self::StdinClosed { kill_at, .. } => Self::Due {
                kind: LegKind::Terminate,
                kill_at,
            },
            Self::Terminated { kill_at } => Self::Due {
                kind: LegKind::Kill,
                kill_at,
            },
            other => other,
        };
    }

    /// Whether the close has begun (stdin closed at least): a process's exit now ends it.
    pub(super) fn is_underway(self) -> bool {
        self != Self::Start
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_process_that_never_exits_gets_half_the_grant_then_sigterm_then_the_kill_at_its_end() {
        let t0 = Instant::now();
        let grant = Duration::from_secs(2);
        let mut closing = Closing::default();
        assert_eq!(closing.next_kind(), LegKind::Shutdown);
        assert!(!closing.is_underway());
        let terminate_at = closing.done(LegKind::Shutdown, t0, t0 + grant);
        assert_eq!(terminate_at, Some(t0 + Duration::from_secs(1)));
        assert!(closing.is_underway());
        closing.wait_over();
        assert_eq!(closing.next_kind(), LegKind::Terminate);
        // The SIGTERM went out late (a slow driver): the kill is still at the grant's end.
        let late = t0 + Duration::from_millis(1500);
        let kill_at = closing.done(LegKind::Terminate, late, t0 + Duration::from_secs(9));
        assert_eq!(kill_at, Some(t0 + grant));
        closing.wait_over();
        assert_eq!(closing.next_kind(), LegKind::Kill);
        assert_eq!(closing.done(LegKind::Kill, t0 + grant, t0 + grant), None);
    }
}
