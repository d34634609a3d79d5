//! What the HTTP transport ([`crate::leg`]) reads and what a lane keeps of it between
//! operations. A leaf: it imports nothing of the crate, so that the lanes (in
//! [`crate::lanes`]) can keep it without importing the transport, which imports them.

use std::time::Instant;

use mcp_proto::driver::LegId;

/// The size of one body read. Small enough that events reach the observer as they arrive,
/// large enough that a big JSON answer takes few calls.
pub(crate) const CHUNK: usize = 16 * 1024;

/// A body being read: its leg, the end of its grant, and the reader.
pub(crate) struct Body {
    pub(crate) id: LegId,
    pub(crate) ends_at: Instant,
    pub(crate) reader: crate::http1::Body,
}

/// What a lane keeps of its HTTP transport between operations: allocations only (an
/// operation's bodies never outlive it).
#[derive(Default)]
pub(crate) struct Kept {
    /// The body read buffer.
    pub(crate) buf: Vec<u8>,
    /// The stack of bodies being read (empty between operations).
    pub(crate) bodies: Vec<Body>,
}
