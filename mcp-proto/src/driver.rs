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

pub use crate::operation::{
    DRAIN_BYTES, DRAIN_WAIT, Input, Leg, LegId, LegStatus, Operation, Output, ProcessExit, ReplyId,
    ServerRequest, TransportError, drain_until, leg_grant,
};
