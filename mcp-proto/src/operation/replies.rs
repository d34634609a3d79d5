//! Answers to the server's own requests: each request that arrives on a stream (an answer's
//! or the standalone one) is reported as an event and answered with a POST inside the same
//! budget, one answer in flight at a time.
//!
//! The answer itself comes from the caller's responders
//! ([`SessionConfig::respond_to`](crate::SessionConfig::respond_to)); this module queues it.
//! The operation grants its leg and reads that leg's head, and never waits for anything but
//! that head.

use std::collections::VecDeque;

use serde_json::Value;

use crate::jsonrpc::{RequestId, RpcError};
use crate::wire;

/// Answers owed to the server, oldest first.
#[derive(Debug, Default)]
pub(super) struct Replies {
    queue: VecDeque<(RequestId, Result<Value, RpcError>)>,
}

impl Replies {
    pub(super) fn clear(&mut self) {
        self.queue.clear();
    }

    /// Whether an answer is owed to the server.
    pub(super) fn is_owed(&self) -> bool {
        !self.queue.is_empty()
    }

    /// Owes the server the answer `reply` to its request `id`.
    pub(super) fn owe(&mut self, id: RequestId, reply: Result<Value, RpcError>) {
        self.queue.push_back((id, reply));
    }

    /// The oldest answer owed, as the body of its POST.
    pub(super) fn pop_body(&mut self) -> Option<Vec<u8>> {
        let (id, reply) = self.queue.pop_front()?;
        Some(wire::reply(&id, reply))
    }
}
