//! What the one loop (`drive.rs`) moves bytes with: the [`Wire`] a transport implements
//! (HTTP in `leg.rs`, stdio in `stdio.rs`). A leaf: it names only `mcp-proto`'s types, so the
//! transports and the loop depend on it and not on each other.

use std::time::Instant;

use mcp_proto::driver::{Leg, Operation};

/// How bytes move for an operation: its legs on the wire, and what comes back.
pub(crate) trait Wire {
    /// What came on the wire, to feed.
    type Came;

    /// Carries `leg` out, handed out at `now`: over HTTP its request starts (read beside the
    /// others), over stdio its line is written (bounded by its grant and a cancel) or its step
    /// of the process's life done. Returns the instant it was done at (`now`, when it did not
    /// wait).
    async fn transmit(&mut self, op: &mut Operation, leg: Leg, now: Instant) -> Instant;

    /// The next thing that comes on a leg in flight (a head, a frame, stdout, the end of it).
    /// Cancel-safe, and pending for ever when nothing can come, so it can sit in a `select!`.
    async fn next(&mut self) -> Self::Came;

    /// Feeds what came to the operation; returns the instant it was fed at.
    async fn feed(&mut self, op: &mut Operation, came: Self::Came) -> Instant;

    /// The operation's timer fired at `now`, before it is told: what only the transport knows
    /// about the legs whose grant ended (a TLS handshake or a proxy tunnel in progress) goes
    /// in first.
    fn at_timer(&mut self, op: &mut Operation, now: Instant) {
        let _ = (op, now);
    }

    /// Drops what the operation no longer has in flight.
    fn prune(&mut self, op: &Operation) {
        let _ = op;
    }
}
