//! What the server sends of its own, on any stream (an answer's, the standalone one, stdout):
//! a notification becomes an event, a request is reported as an event and answered with a
//! POST (over stdio, a line) inside the same budget, one answer in flight at a time.
//!
//! The answer itself comes from the caller's responders
//! ([`SessionConfig::respond_to`](crate::SessionConfig::respond_to)); this module queues it,
//! and keeps the filter a subscription's stream was acknowledged with. The operation grants
//! the answer's leg and reads that leg's head, and never waits for anything but that head.

use std::collections::VecDeque;

use serde_json::Value;

use super::Event;
use crate::config::SessionConfig;
use crate::jsonrpc::{Incoming, RequestId, RpcError};
use crate::model::{Notification, SubscriptionEnd};
use crate::wire;

/// Answers owed to the server, oldest first, and what its notifications acknowledged.
#[derive(Debug, Default)]
pub(super) struct Replies {
    queue: VecDeque<(RequestId, Result<Value, RpcError>)>,
    /// The filter the server acknowledged on a subscription's stream.
    acknowledged: Option<Value>,
}

impl Replies {
    pub(super) fn clear(&mut self) {
        self.queue.clear();
    }

    /// Whether an answer is owed to the server.
    pub(super) fn is_owed(&self) -> bool {
        !self.queue.is_empty()
    }

    /// Takes what the server sent of its own, as `config`'s responders answer it: a
    /// notification becomes an event, a request is reported and owed its answer. Anything
    /// else (a response, or neither) is handed back.
    pub(super) fn take(
        &mut self,
        message: Incoming,
        config: &SessionConfig,
        events: &mut VecDeque<Event>,
    ) -> Option<Incoming> {
        match message {
            Incoming::Notification { method, params } => {
                if method == "notifications/subscriptions/acknowledged" {
                    self.acknowledged = params.get("notifications").cloned();
                }
                events.push_back(Event::Notification(Notification { method, params }));
                None
            }
            Incoming::Request { id, method, params } => {
                let reply = config.answer_server_request(&method, &params);
                self.queue.push_back((id.clone(), reply));
                events.push_back(Event::ServerRequest { id, method, params });
                None
            }
            other => Some(other),
        }
    }

    /// The subscription is over: the server ended it (`by_server`), or the budget did.
    pub(super) fn subscription_end(&mut self, by_server: bool) -> SubscriptionEnd {
        SubscriptionEnd {
            acknowledged: self.acknowledged.take(),
            by_server,
        }
    }

    /// The oldest answer owed, as the body of its POST.
    pub(super) fn pop_body(&mut self) -> Option<Vec<u8>> {
        let (id, reply) = self.queue.pop_front()?;
        Some(wire::reply(&id, reply))
    }
}
