//! What the server sends of its own, on any stream (an answer's, the standalone one, stdout),
//! and what it asks for in a result: a notification becomes an event, a request is reported
//! as an event, asked of the caller ([`Output::Request`](super::Output::Request)) when the
//! caller registered an answer for its method, and answered with a POST (over stdio, a line)
//! inside the same budget, one answer in flight at a time.
//!
//! The protocol's own answers are given here, without the caller: `{}` to `ping`, JSON-RPC
//! error -32601 to a method nobody registered. The caller's answers come back as
//! [`Input::Reply`](super::Input::Reply), under the [`ReplyId`] they were asked with; one for
//! a request this part no longer holds (the operation started over, or it never asked) is
//! ignored. This module never calls the caller's code, and keeps the filter a subscription's
//! stream was acknowledged with.

use std::collections::VecDeque;
use std::time::Instant;

use serde_json::Value;

use super::Event;
use super::driving::{ReplyId, ServerRequest};
use super::grant::Grants;
use super::timers::Timer;
use crate::config::{SessionConfig, protocol_answer};
use crate::jsonrpc::{Incoming, RequestId, RpcError};
use crate::message::Notification;
use crate::model::SubscriptionEnd;
use crate::wire;

/// Where the caller's answer to a request goes.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Asker {
    /// A JSON-RPC request the server sent: the answer is owed to it under its id.
    Stream(RequestId),
    /// One of the `inputRequests` of a modern result: the answer goes out with the request
    /// sent again, under this key.
    Input(String),
}

/// A caller's answer to one of the `inputRequests`, for the input round.
#[derive(Debug)]
pub(super) struct InputAnswer {
    pub(super) key: String,
    pub(super) method: String,
    pub(super) answer: Result<Value, RpcError>,
}

/// Answers owed to the server, oldest first, the requests the caller is asked, and what the
/// server's notifications acknowledged.
#[derive(Debug, Default)]
pub(super) struct Replies {
    /// Answers ready to go out.
    queue: VecDeque<(RequestId, Result<Value, RpcError>)>,
    /// Requests to hand to the caller, oldest first, with their params (each is also open).
    asked: VecDeque<(ReplyId, Value)>,
    /// Requests the caller was asked (or is about to be) and has not answered: where each
    /// answer goes, and the method it answers.
    open: Vec<(ReplyId, Asker, String)>,
    /// The last [`ReplyId`] given out (never reused within the operation).
    last: u32,
    /// The filter the server acknowledged on a subscription's stream.
    acknowledged: Option<Value>,
}

impl Replies {
    /// Forgets every answer owed and every request asked: they belong to an attempt that was
    /// abandoned. The caller's late answers to them are ignored.
    pub(super) fn clear(&mut self) {
        self.queue.clear();
        self.asked.clear();
        self.open.clear();
    }

    /// Whether an answer is owed to the server and ready to go.
    pub(super) fn is_owed(&self) -> bool {
        !self.queue.is_empty()
    }

    /// Whether the request sent again after an input round waits for the caller's answers.
    pub(super) fn awaits_input(&self) -> bool {
        self.open
            .iter()
            .any(|(_, to, _)| matches!(to, Asker::Input(_)))
    }

    /// While the request sent again after an input round waits for the caller's answers, it
    /// waits at most to the budget's end (then it is refused).
    pub(super) fn hold_input(&self, grants: &mut Grants, now: Instant) {
        if self.awaits_input() && !grants.timers.is_armed(Timer::Reply) {
            let end = grants.end_or(now);
            grants.timers.set(Timer::Reply, end);
        }
    }

    /// The caller will not answer the input round in time: its open requests are dropped (the
    /// request goes out, or is refused, without them).
    pub(super) fn give_up_input(&mut self) {
        self.open
            .retain(|(_, to, _)| !matches!(to, Asker::Input(_)));
    }

    /// Asks the caller `method` for `to`.
    pub(super) fn ask(&mut self, to: Asker, method: &str, params: Value) {
        self.last += 1;
        let reply = ReplyId(self.last);
        self.asked.push_back((reply, params));
        self.open.push((reply, to, method.to_owned()));
    }

    /// The next request to hand to the caller, to be answered before `ends_at` (the budget's
    /// end).
    pub(super) fn hand_out(&mut self, ends_at: Instant) -> Option<ServerRequest> {
        let (reply, params) = self.asked.pop_front()?;
        let (_, _, method) = self.open.iter().find(|(id, _, _)| *id == reply)?;
        Some(ServerRequest {
            reply,
            method: method.clone(),
            params,
            ends_at,
        })
    }

    /// The caller's answer to the request asked under `reply`: queued for a stream's request
    /// (`None`), handed back for an input round's. Ignored (`None`) when no such request is
    /// open.
    pub(super) fn answered(
        &mut self,
        reply: ReplyId,
        answer: Result<Value, RpcError>,
    ) -> Option<InputAnswer> {
        let at = self.open.iter().position(|(id, _, _)| *id == reply)?;
        let (_, to, method) = self.open.remove(at);
        match to {
            Asker::Stream(id) => {
                self.queue.push_back((id, answer));
                None
            }
            Asker::Input(key) => Some(InputAnswer {
                key,
                method,
                answer,
            }),
        }
    }

    /// Takes what the server sent of its own: a notification becomes an event, a request is
    /// reported and either answered at once (`ping`, or a method `config` has no answer for)
    /// or asked of the caller. Anything else (a response, or neither) is handed back.
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
                events.push_back(Event::ServerRequest {
                    id: id.clone(),
                    method: method.clone(),
                    params: params.clone(),
                });
                if config.answers(&method) {
                    self.ask(Asker::Stream(id), &method, params);
                } else {
                    self.queue.push_back((id, protocol_answer(&method)));
                }
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(id: i64, method: &str) -> Incoming {
        Incoming::Request {
            id: RequestId::Number(id),
            method: method.to_owned(),
            params: json!({"message": "name?"}),
        }
    }

    fn config() -> SessionConfig {
        SessionConfig::new("http://127.0.0.1:9/mcp")
            .unwrap()
            .respond_to("elicitation/create", |_| Ok(json!({"action": "decline"})))
    }

    #[test]
    fn a_registered_method_is_asked_of_the_caller_and_answered_with_its_reply() {
        let (mut replies, mut events, now) = (Replies::default(), VecDeque::new(), Instant::now());
        assert!(
            replies
                .take(request(7, "elicitation/create"), &config(), &mut events)
                .is_none()
        );
        assert!(
            matches!(&events[0], Event::ServerRequest { method, .. } if method == "elicitation/create")
        );
        // Nothing is owed until the caller answers.
        assert!(!replies.is_owed());
        let asked = replies.hand_out(now).expect("the caller is asked");
        assert_eq!(asked.method, "elicitation/create");
        assert_eq!(asked.ends_at, now);
        assert!(replies.hand_out(now).is_none());
        assert!(
            replies
                .answered(asked.reply, Ok(json!({"action": "accept"})))
                .is_none()
        );
        let body = String::from_utf8(replies.pop_body().unwrap()).unwrap();
        assert!(
            body.contains("\"id\":7") && body.contains("accept"),
            "{body}"
        );
        // A second answer to the same request is ignored.
        assert!(replies.answered(asked.reply, Ok(json!({}))).is_none());
        assert!(!replies.is_owed());
    }

    #[test]
    fn ping_and_unregistered_methods_are_answered_without_the_caller() {
        let (mut replies, mut events, now) = (Replies::default(), VecDeque::new(), Instant::now());
        replies.take(request(1, "ping"), &config(), &mut events);
        replies.take(request(2, "sampling/createMessage"), &config(), &mut events);
        assert!(
            replies.hand_out(now).is_none(),
            "the caller is asked nothing"
        );
        let ping = String::from_utf8(replies.pop_body().unwrap()).unwrap();
        let unknown = String::from_utf8(replies.pop_body().unwrap()).unwrap();
        assert!(ping.contains("\"result\":{}"), "{ping}");
        assert!(unknown.contains("-32601"), "{unknown}");
        assert_eq!(events.len(), 2, "both are reported");
    }

    #[test]
    fn a_reply_after_the_attempt_was_abandoned_is_ignored() {
        let (mut replies, mut events, now) = (Replies::default(), VecDeque::new(), Instant::now());
        replies.take(request(7, "elicitation/create"), &config(), &mut events);
        let asked = replies.hand_out(now).unwrap();
        replies.clear();
        assert!(replies.answered(asked.reply, Ok(json!({}))).is_none());
        assert!(!replies.is_owed());
        // A request asked after the clear has an id of its own.
        replies.take(request(8, "elicitation/create"), &config(), &mut events);
        assert_ne!(replies.hand_out(now).unwrap().reply, asked.reply);
    }

    #[test]
    fn an_input_round_waits_for_every_answer_and_hands_each_back() {
        let (mut replies, now) = (Replies::default(), Instant::now());
        replies.ask(Asker::Input("a".into()), "elicitation/create", json!({}));
        replies.ask(Asker::Input("b".into()), "roots/list", json!({}));
        let (first, second) = (
            replies.hand_out(now).unwrap(),
            replies.hand_out(now).unwrap(),
        );
        assert!(replies.awaits_input());
        let answer = replies
            .answered(second.reply, Ok(json!({"roots": []})))
            .unwrap();
        assert_eq!(
            (answer.key.as_str(), answer.method.as_str()),
            ("b", "roots/list")
        );
        assert!(replies.awaits_input());
        replies.answered(first.reply, Ok(json!({}))).unwrap();
        assert!(!replies.awaits_input());
        assert!(
            !replies.is_owed(),
            "an input round's answers are not POSTed"
        );
    }
}
