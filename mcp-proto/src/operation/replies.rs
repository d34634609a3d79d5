//! Answers to the server's own requests: each request that arrives on a stream (an answer's
//! or the standalone one) is reported as an event and answered with a POST inside the same
//! budget, one answer in flight at a time.
//!
//! The answer itself comes from the caller's responders
//! ([`SessionConfig::respond_to`](crate::SessionConfig::respond_to)); this module queues it,
//! grants its leg and reads that leg's head. It never waits for anything but that head.

use std::collections::VecDeque;
use std::time::Instant;

use http::StatusCode;
use serde_json::Value;

use super::legs::Role;
use super::{Event, LegKind, LegStatus, Operation, Output};
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

    /// The next answer's leg, when one is owed and none is in flight. An answer that can no
    /// longer be granted anything means the request it serves did not get its answer in time.
    pub(super) fn transmit_reply(&mut self, now: Instant) -> Option<Output> {
        if self.replies.queue.is_empty() || self.legs.is_busy(Role::Reply) {
            return None;
        }
        let Ok(timeout) = self.deadline.grant(now) else {
            self.fail_awaited_timed_out();
            return Some(self.poll_output(now));
        };
        let (id, reply) = self.replies.queue.pop_front()?;
        let request = self
            .session
            .config()
            .wire()
            .post(wire::reply(&id, reply), self.handshake());
        let leg = self.hand_out(
            LegKind::Respond,
            request,
            timeout,
            now,
            (LegKind::Respond, None),
        );
        Some(Output::Transmit(leg))
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
        self.end_leg(Role::Reply);
        LegStatus::Complete
    }
}
