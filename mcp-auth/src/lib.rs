//! Sans-IO OAuth 2.1 for MCP clients.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod challenge;
mod entropy;
mod secret;

pub use challenge::{Challenge, ChallengeKind};
pub use entropy::Entropy;
pub use secret::Secret;
