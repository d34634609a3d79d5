//! The driver's side: what a driver (or a test's stand-in for one) exchanges with an
//! [`Operation`], and nothing a caller of a driver needs.
//!
//! A caller works with the crate's root: a [`Session`](crate::Session) and its configuration,
//! the [`Action`](crate::Action)s, [`Outcome`](crate::Outcome)s, [`Event`](crate::Event)s and
//! [`Error`](crate::Error)s, and what an [`Observer`](crate::Observer) is told
//! ([`LegReport`](crate::LegReport)). A driver also needs what is here: the operation, its
//! [`Output`]s and [`Input`]s, the [`Leg`]s it hands out and how their bodies are read. Each
//! name has this one path.
//!
//! Nothing here decides anything: the operation decides, the driver carries it out.
#![doc = include_str!("operation/driving.md")]

pub use crate::config::DEADLINE_META_KEY;
pub use crate::model::LABEL_LIMIT;
pub use crate::operation::{
    Authorize, CANCEL_NOTICE_GRANT, DEFAULT_RETRY, DRAIN_BYTES, DRAIN_WAIT, Input,
    LISTEN_HEAD_WAIT, Leg, LegId, LegKind, LegStatus, MAX_REISSUES, MAX_RESUMPTIONS, Operation,
    Output, ProcessExit, ReplyId, ServerRequest, TransportError, drain_until, leg_grant,
};
pub use crate::wire::{
    LAST_EVENT_ID_HEADER, MAX_SESSION_ID_LEN, METHOD_HEADER, NAME_HEADER, PROTOCOL_VERSION_HEADER,
    SESSION_HEADER,
};
