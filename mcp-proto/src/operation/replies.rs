//! Answers to the server's own requests: each request that arrives on a stream (an answer's
//! or the standalone one) is reported as an event and answered with a POST inside the same
//! budget, one answer in flight at a time.
//!
//! The answer itself comes from the caller's responders
//! ([`SessionConfig::respond_to`](crate::SessionConfig::respond_to)); this module queues it,
//! grants its leg and reads that leg's head. It never waits for anything but that head.

use std::collections::VecDeque;

use http::StatusCode;
use serde_json::Value;

use super::legs::Role;
use super::{Event, LegStatus, Operation};
use crate::error::Error;
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

    /// The oldest answer owed, as the body of its POST.
    pub(super) fn pop_body(&mut self) -> Option<Vec<u8>> {
        let (id, reply) = self.queue.pop_front()?;
        Some(wire::reply(&id, reply))
    }
}

impl Operation {
    /// Queues the answer to a request the server sent, and reports the request.
    pub(super) fn server_request(&mut self, id: RequestId, method: String, params: Value) {
        let reply = self
            .session
            .config()
            .answer_server_request(&method, &params);
        self.replies.queue.push_back((id.clone(), reply));
        self.events
            .push_back(Event::ServerRequest { id, method, params });
    }

    /// The head of an answer's leg: any 2xx, with or without a body, means the server has it.
    pub(super) fn reply_head(&mut self, status: StatusCode) -> LegStatus {
        if !status.is_success() {
            let method = self.awaited().0.request_name();
            self.fail(|server| Error::HttpStatus {
                server,
                method,
                status: status.as_u16(),
            });
            return LegStatus::Complete;
        }
        self.grants.end(Role::Reply);
        LegStatus::Complete
    }
}
