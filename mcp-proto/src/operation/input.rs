//! The input round of a modern request (multi round-trip requests): a result that asks for
//! more input (`resultType: "input_required"`) before the server can answer. Each of its
//! `inputRequests` is asked of the caller (through `replies`, when the caller answers its
//! method) or answered at once (an elicitation nobody answers is declined); once every answer
//! is in, the same request goes out again (a new id, a new leg, the same budget) carrying the
//! answers and the server's `requestState` exactly as it came.
//!
//! This part keeps what the next try carries and counts the rounds. It never runs the caller's
//! code, never grants a leg and never ends the operation: a failure is handed back.

use std::collections::VecDeque;

use serde_json::{Map, Value, json};

use super::Event;
use super::failure::Failure;
use super::read::Heard;
use super::replies::{Asker, InputAnswer, Replies};
use super::timers::{Timer, TimerTable};
use super::view::View;
use crate::jsonrpc::{RequestId, RpcError};
use crate::wire::InputRound;
use mcp_auth::{QUOTE_LIMIT, clip};

/// The most times one operation answers a server's request for more input.
const MAX_INPUT_ROUNDS: u32 = 8;

/// The operation's input rounds: the one being answered, and how many there were.
#[derive(Debug, Default)]
pub(super) struct InputRounds {
    /// What the next try of the work request carries.
    pub(super) round: Option<InputRound>,
    /// How many times the server asked for input in this operation.
    count: u32,
}

impl InputRounds {
    /// Forgets the last round's input (the attempt it belonged to was abandoned); the count
    /// stays, so a server cannot ask for ever by losing the session.
    pub(super) fn restart(&mut self) {
        self.round = None;
    }

    /// The server asked for more input with `result`: a new round, its requests reported as
    /// events and asked of the caller or answered at once. At most [`MAX_INPUT_ROUNDS`] rounds.
    pub(super) fn begin(
        &mut self,
        mut result: Map<String, Value>,
        session: &View,
        events: &mut VecDeque<Event>,
        replies: &mut Replies,
    ) -> Result<(), String> {
        self.count += 1;
        if self.count > MAX_INPUT_ROUNDS {
            return Err(format!(
                "the server asked for more input {MAX_INPUT_ROUNDS} times; the request was not retried again"
            ));
        }
        let requests = match result.remove("inputRequests") {
            None => Map::new(),
            Some(Value::Object(requests)) => requests,
            Some(_) => return Err("\"inputRequests\" is not an object".to_owned()),
        };
        let state = result.remove("requestState");
        if requests.is_empty() && state.is_none() {
            return Err(
                "an input_required result with neither inputRequests nor requestState".to_owned(),
            );
        }
        let mut responses = Map::new();
        for (key, request) in requests {
            let method = request.get("method").and_then(Value::as_str).unwrap_or("");
            let params = request.get("params").cloned().unwrap_or(Value::Null);
            events.push_back(Event::ServerRequest {
                id: RequestId::String(key.clone()),
                method: method.to_owned(),
                params: params.clone(),
            });
            if session.config().answers(method) {
                replies.ask(Asker::Input(key), method, params);
            } else {
                responses.insert(key, refused(method, None)?);
            }
        }
        self.round = Some(InputRound { responses, state });
        Ok(())
    }

    /// The caller's answer to one of the round's requests, kept for the request sent again; the
    /// wait for the answers stops once none is missing (`replies`). An error declines an
    /// elicitation; sampling and roots have no refusal of their own, so the request cannot go
    /// on: the failure is handed back.
    pub(super) fn answered(
        &mut self,
        answered: InputAnswer,
        replies: &Replies,
        timers: &mut TimerTable,
    ) -> Heard {
        let InputAnswer {
            key,
            method,
            answer,
        } = answered;
        let answer = match answer.or_else(|error| refused(&method, Some(&error))) {
            Ok(answer) => answer,
            Err(detail) => return Heard::Failed(Failure::Malformed(detail)),
        };
        if let Some(round) = &mut self.round {
            round.responses.insert(key, answer);
        }
        if !replies.awaits_input() {
            timers.stop(Timer::Reply);
        }
        Heard::Over
    }
}

/// The answer to one of the `inputRequests` the caller did not answer: it registered no
/// responder for its method (`error` is `None`), or its answer was `error`. Elicitation has a
/// refusal of its own (the client declines); sampling and roots have none, so the request
/// cannot go on.
fn refused(method: &str, error: Option<&RpcError>) -> Result<Value, String> {
    if method == "elicitation/create" {
        return Ok(json!({"action": "decline"}));
    }
    let method = clip(method, QUOTE_LIMIT);
    Err(match error {
        None => format!(
            "the server asked for input with \"{method}\", which this client does not answer (register a responder)"
        ),
        Some(error) => format!(
            "the server asked for input with \"{method}\", and the caller's answer was an error ({}: {})",
            error.code,
            clip(&error.message, QUOTE_LIMIT)
        ),
    })
}
