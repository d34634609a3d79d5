//! What a server sends of its own, read into types: its notifications ([`Notification`], with
//! a log message's and a progress report's readings) and what an elicitation asks
//! ([`UrlElicitation`], [`accept_elicitation_with_defaults`] for a form). They reach the caller
//! as [`Event`](crate::Event)s and as the requests its responders answer.
//!
//! Only re-exports: the types live in the crate's `model`.

pub use crate::model::{
    LogLevel, LogMessage, Notification, Progress, UrlElicitation, accept_elicitation_with_defaults,
};
