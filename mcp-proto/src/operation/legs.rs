//! The leg table: every leg in flight, one slot per role, each found by its [`LegId`].
//!
//! A leg's role says what the operation does with it: the **work** leg carries the request
//! whose answer the operation waits for (or resumes it), a **reply** answers a request the
//! server sent, the **listen** leg is the session's standalone stream, the **notice** tells
//! the server a call was cancelled. At most one leg of each role is in flight, so the table is
//! an array; a leg's grant lives in the timer table, under its role.

use std::time::{Duration, Instant};

use super::driving::{LegId, LegKind, TransportErrorKind};

/// What the operation does with a leg.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    /// The operation's own request (handshake, work, resumption, close): its answer is read.
    Work,
    /// An answer to a server request: only its head is looked at.
    Reply,
    /// The standalone stream: read for server messages, never for an answer.
    Listen,
    /// The `notifications/cancelled` after a cancel: only its head is waited for.
    Notice,
}

impl Role {
    pub(super) const COUNT: usize = 4;
    pub(super) const ALL: [Self; Self::COUNT] =
        [Self::Work, Self::Reply, Self::Listen, Self::Notice];

    pub(super) const fn of(kind: LegKind) -> Self {
        match kind {
            LegKind::Respond => Self::Reply,
            LegKind::Listen => Self::Listen,
            LegKind::CancelNotice | LegKind::TaskCancelNotice => Self::Notice,
            _ => Self::Work,
        }
    }

    pub(super) const fn index(self) -> usize {
        match self {
            Self::Work => 0,
            Self::Reply => 1,
            Self::Listen => 2,
            Self::Notice => 3,
        }
    }
}

/// One leg in flight.
#[derive(Debug)]
pub(super) struct InFlight {
    pub(super) id: LegId,
    pub(super) kind: LegKind,
    /// The request whose answer this leg reads (for a resumption: the original request).
    pub(super) answers: LegKind,
    /// The JSON-RPC id its answer must carry.
    pub(super) request_id: Option<i64>,
    pub(super) grant: Duration,
    /// When it was handed out, and when its grant ends: its report's measure.
    pub(super) sent_at: Instant,
    /// How its transport failed (or that its grant ran out), once it did.
    pub(super) failure: Option<TransportErrorKind>,
    /// Over stdio: the server process exited while it was in flight.
    pub(super) exited: bool,
    /// Whether the request carried a session id (a 404 then means the session expired).
    pub(super) carried_session: bool,
    /// The response's status, once its head is in.
    pub(super) status: u16,
    /// Over stdio: whether the driver reported the whole message written
    /// ([`Input::Sent`](super::Input::Sent)).
    pub(super) written: bool,
}

impl InFlight {
    /// When its grant ends.
    pub(super) fn ends_at(&self) -> Instant {
        self.sent_at.checked_add(self.grant).unwrap_or(self.sent_at)
    }

    /// Over stdio: whether the server's stdin may hold part of this leg's message (it carries
    /// one, and its writing was not reported complete).
    pub(super) fn may_be_half_written(&self) -> bool {
        !self.written
            && !matches!(
                self.kind,
                LegKind::Spawn | LegKind::Shutdown | LegKind::Terminate | LegKind::Kill
            )
    }
}

/// The legs in flight, one slot per role.
#[derive(Debug, Default)]
pub(super) struct LegTable {
    slots: [Option<InFlight>; Role::COUNT],
}

impl LegTable {
    /// The role of the leg `id`, if it is still in flight.
    pub(super) fn find(&self, id: LegId) -> Option<Role> {
        Role::ALL
            .into_iter()
            .find(|role| self.get(*role).is_some_and(|leg| leg.id == id))
    }

    pub(super) fn get(&self, role: Role) -> Option<&InFlight> {
        self.slots[role.index()].as_ref()
    }

    pub(super) fn get_mut(&mut self, role: Role) -> Option<&mut InFlight> {
        self.slots[role.index()].as_mut()
    }

    pub(super) fn is_busy(&self, role: Role) -> bool {
        self.get(role).is_some()
    }

    pub(super) fn insert(&mut self, role: Role, leg: InFlight) {
        self.slots[role.index()] = Some(leg);
    }

    pub(super) fn remove(&mut self, role: Role) -> Option<InFlight> {
        self.slots[role.index()].take()
    }

    /// Over stdio: whether a leg in flight may have left part of its message in the server's
    /// stdin.
    pub(super) fn any_half_written(&self) -> bool {
        self.slots
            .iter()
            .flatten()
            .any(InFlight::may_be_half_written)
    }

    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = &mut InFlight> {
        self.slots.iter_mut().flatten()
    }
}
