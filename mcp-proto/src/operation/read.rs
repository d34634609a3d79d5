//! Reading answers: the head's checks, a JSON body or an event stream, and the messages in
//! them.
//!
//! A work leg's reading goes `Head` -> `Json` (collected up to the body cap, then decoded at
//! its end) or `Sse` (parsed incrementally; each event's message handled as it arrives, the
//! leg over as soon as the answer is in). What an answer *means* is `answer`'s; what a server
//! request gets is `replies`'; a stream that ends early is `resume`'s. Nothing here may read
//! past the body cap or hold server text unclipped in an error.

use std::borrow::Cow;
use std::time::Instant;

use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderMap, StatusCode};
use serde_json::{Map, Value};

use super::authorize::Refused;
use super::era::is_modern_error;
use super::failure::Failure;
use super::legs::{Reading, Role};
use super::{LegKind, LegStatus, Operation};
use crate::jsonrpc::{self, Incoming};
use crate::sse::{SseError, SseEvent, SseParser};
use crate::wire::{SESSION_HEADER, valid_session_id};
use mcp_auth::{QUOTE_LIMIT, clip};

/// The media type of a head, lower case, without parameters (empty when absent). Borrowed from
/// the head unless it had to be lowered or was not UTF-8.
pub(super) fn media_type(headers: &HeaderMap) -> Cow<'_, str> {
    fn bare(text: &str) -> &str {
        text.split(';').next().unwrap_or("").trim()
    }
    let raw = headers.get(CONTENT_TYPE).map_or(&b""[..], |v| v.as_bytes());
    match String::from_utf8_lossy(raw) {
        Cow::Borrowed(text) if !bare(text).bytes().any(|b| b.is_ascii_uppercase()) => {
            Cow::Borrowed(bare(text))
        }
        text => Cow::Owned(bare(&text).to_ascii_lowercase()),
    }
}

/// Why a message could not be decoded.
pub(super) enum BadMessage {
    /// JSON, but not an object.
    NotObject,
    /// Not JSON at all (the parser's words).
    NotJson(String),
}

impl BadMessage {
    /// The malformed-answer detail: `whole` names the message, `text` what carried it.
    pub(super) fn detail(&self, whole: &str, text: &str) -> String {
        match self {
            Self::NotObject => format!("{whole} is not a JSON object"),
            Self::NotJson(err) => format!("{text} is not JSON: {}", clip(err, QUOTE_LIMIT)),
        }
    }
}

/// Decodes one JSON-RPC message.
pub(super) fn decode(bytes: &[u8]) -> Result<Map<String, Value>, BadMessage> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(message)) => Ok(message),
        Ok(_) => Err(BadMessage::NotObject),
        Err(err) => Err(BadMessage::NotJson(err.to_string())),
    }
}

impl Operation {
    /// The work leg's head: its status, its session id, and how to read its body.
    pub(super) fn work_head(&mut self, status: StatusCode, headers: &HeaderMap) -> LegStatus {
        let cap = self.session.config().body_cap();
        let Some(leg) = self.grants.legs.get_mut(Role::Work) else {
            return LegStatus::Complete;
        };
        if !matches!(leg.reading, Reading::Head) {
            return LegStatus::Complete;
        }
        leg.status = status.as_u16();
        let (kind, carried_session, answers) = (leg.kind, leg.carried_session, leg.answers);
        let method = answers.request_name();
        if kind == LegKind::Close {
            // 404: already gone; 405: the server does not end sessions on request.
            self.grants.end(Role::Work);
            self.session.reset();
            if status.is_success()
                || status == StatusCode::NOT_FOUND
                || status == StatusCode::METHOD_NOT_ALLOWED
            {
                self.finish(Ok(super::Outcome::Closed));
            } else {
                self.fail(method, Failure::Status(status.as_u16()));
            }
            return LegStatus::Complete;
        }
        self.session.note_dpop_nonce(headers);
        if let Some(refused) = self.auth.refused(status, headers, &mut self.session) {
            self.grants.end(Role::Work);
            if refused == Refused::Unconfigured {
                self.fail(
                    method,
                    Failure::AuthorizationRequired {
                        issuer: None,
                        reason: "no OAuth client is configured for it".to_owned(),
                    },
                );
            }
            return LegStatus::Complete;
        }
        if status == StatusCode::NOT_FOUND && carried_session {
            // Named after the request whose answer was awaited (a resumption's GET serves it).
            self.session_lost(answers);
            return LegStatus::Complete;
        }
        // A modern server explains a refusal (400, 404) with a JSON-RPC error in the body: it
        // is read (under the body cap) so that `-32022` can name the versions to retry with,
        // and so that a refusal that is not a modern error can mean a legacy server.
        let explained = (self.era.modern().is_some() || self.era.is_open())
            && status.is_client_error()
            && media_type(headers) == "application/json";
        // Nothing a modern server would say: perhaps a legacy server refused the modern request.
        if !explained && self.fell_back_after(status.as_u16()) {
            return LegStatus::Complete;
        }
        if !status.is_success() && !explained {
            self.fail(method, Failure::Status(status.as_u16()));
            return LegStatus::Complete;
        }
        let Some(leg) = self.grants.legs.get_mut(Role::Work) else {
            return LegStatus::Complete;
        };
        if kind == LegKind::Initialized {
            // A notification's answer is not read: 202 without a body is the norm, and any
            // 2xx, with or without a body, is accepted.
            self.grants.end(Role::Work);
            self.handshake_confirmed();
            return LegStatus::Complete;
        }
        if kind == LegKind::Initialize {
            if let Some(raw) = headers.get(SESSION_HEADER) {
                if !valid_session_id(raw.as_bytes()) {
                    let shown = clip(&String::from_utf8_lossy(raw.as_bytes()), QUOTE_LIMIT);
                    self.fail(method, Failure::Malformed(format!(
                            "the session id \"{shown}\" is not 1 to 256 visible ASCII characters, so it is not echoed"
                        )));
                    return LegStatus::Complete;
                }
                leg.session_id = Some(String::from_utf8_lossy(raw.as_bytes()).into_owned());
            }
        }
        let declared_length = headers
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        match media_type(headers).as_ref() {
            "" | "application/json" => {
                if declared_length.is_some_and(|n| n > cap as u64) {
                    self.fail(method, Failure::TooLarge(cap));
                    return LegStatus::Complete;
                }
                // Reserve what the server announced (never past the cap): no regrowth.
                let reserve = declared_length.map_or(0, |n| n.min(cap as u64) as usize);
                leg.reading = Reading::Json(Vec::with_capacity(reserve));
            }
            "text/event-stream" => {
                leg.reading = Reading::Sse {
                    parser: SseParser::new(cap),
                    saw_message: false,
                };
            }
            other => {
                let content_type = clip(other, QUOTE_LIMIT);
                self.fail(method, Failure::ContentType(content_type));
                return LegStatus::Complete;
            }
        }
        LegStatus::ReadMore
    }

    /// The next chunk of the work leg's body.
    pub(super) fn work_chunk(&mut self, chunk: &[u8]) -> LegStatus {
        let cap = self.session.config().body_cap();
        let Some(leg) = self.grants.legs.get_mut(Role::Work) else {
            return LegStatus::Complete;
        };
        let method = leg.answers.request_name();
        let mut events = std::mem::take(&mut self.scratch);
        let fed = match &mut leg.reading {
            Reading::Head => return LegStatus::Complete,
            Reading::Json(buffer) => {
                if buffer.len().saturating_add(chunk.len()) > cap {
                    self.fail(method, Failure::TooLarge(cap));
                    return LegStatus::Complete;
                }
                buffer.extend_from_slice(chunk);
                return LegStatus::ReadMore;
            }
            Reading::Sse { parser, .. } => {
                let fed = parser.feed(chunk, &mut events);
                self.resume.saw_event_id(parser.last_event_id());
                fed
            }
        };
        let status = self.take_stream_events(&mut events, fed, cap);
        self.scratch = events;
        status
    }

    /// The work leg's body ended.
    pub(super) fn work_end(&mut self, now: Instant) {
        let cap = self.session.config().body_cap();
        let Some(leg) = self.grants.legs.get_mut(Role::Work) else {
            return;
        };
        let method = leg.answers.request_name();
        match &mut leg.reading {
            Reading::Head => {}
            Reading::Json(buffer) => {
                let buffer = std::mem::take(buffer);
                let status = leg.status;
                self.read_json_answer(&buffer, status);
            }
            Reading::Sse { parser, .. } => {
                let mut events = std::mem::take(&mut self.scratch);
                let fed = parser.finish(&mut events);
                self.resume.saw_event_id(parser.last_event_id());
                let status = self.take_stream_events(&mut events, fed, cap);
                self.scratch = events;
                if status == LegStatus::Complete {
                    return;
                }
                if self.schedule_resumption(now) {
                    return;
                }
                if self.awaited().0 == LegKind::Subscribe {
                    // The server closed the subscription's stream: it is over.
                    self.subscription_ended(true);
                    return;
                }
                let saw_message = matches!(
                    self.grants.legs.get(Role::Work).map(|l| &l.reading),
                    Some(Reading::Sse {
                        saw_message: true,
                        ..
                    })
                );
                let detail = if saw_message {
                    "the event stream carried no response to the request"
                } else {
                    "the event stream carried no message"
                };
                self.fail(method, Failure::Malformed(detail.to_owned()));
            }
        }
    }

    fn take_stream_events(
        &mut self,
        events: &mut Vec<SseEvent>,
        fed: Result<(), SseError>,
        cap: usize,
    ) -> LegStatus {
        let Some(method) = self
            .grants
            .legs
            .get(Role::Work)
            .map(|l| l.answers.request_name())
        else {
            return LegStatus::Complete;
        };
        // Events completed before a parse error are still handled: an answer that arrived
        // before the stream went bad is a good answer.
        let mut complete = false;
        for event in events.drain(..) {
            if complete || !self.grants.legs.is_busy(Role::Work) {
                continue;
            }
            complete = self.read_stream_event(&event) == LegStatus::Complete;
        }
        if complete || !self.grants.legs.is_busy(Role::Work) {
            return LegStatus::Complete;
        }
        match fed {
            Ok(()) => LegStatus::ReadMore,
            Err(SseError::EventTooLarge { .. }) => {
                self.fail(method, Failure::TooLarge(cap));
                LegStatus::Complete
            }
            Err(err) => {
                let detail = err.to_string();
                self.fail(method, Failure::Malformed(detail));
                LegStatus::Complete
            }
        }
    }

    fn read_stream_event(&mut self, event: &SseEvent) -> LegStatus {
        let Some(leg) = self.grants.legs.get_mut(Role::Work) else {
            return LegStatus::Complete;
        };
        let method = leg.answers.request_name();
        if event.data.trim().is_empty() {
            // A priming event (an id and empty data) or a keep-alive.
            return LegStatus::ReadMore;
        }
        let message = match decode(event.data.as_bytes()) {
            Ok(message) => message,
            Err(bad) => {
                let detail = bad.detail("an event's data", "an event's data");
                self.fail(method, Failure::Malformed(detail));
                return LegStatus::Complete;
            }
        };
        if let Reading::Sse { saw_message, .. } = &mut leg.reading {
            *saw_message = true;
        }
        match self.server_message(jsonrpc::classify(message)) {
            Some(answer @ (Incoming::Result { .. } | Incoming::Error { .. })) => {
                self.read_answer(answer);
                LegStatus::Complete
            }
            _ => LegStatus::ReadMore,
        }
    }

    fn read_json_answer(&mut self, body: &[u8], status: u16) {
        let Some(method) = self
            .grants
            .legs
            .get(Role::Work)
            .map(|l| l.answers.request_name())
        else {
            return;
        };
        if !(200..300).contains(&status) {
            // A refusal's body: a JSON-RPC error explains it, anything else leaves the status.
            let error = decode(body).map(jsonrpc::classify);
            match error {
                // In the legacy era only a modern error explains a refusal (it can move the
                // operation to the modern era); any other keeps the status as the error.
                Ok(error @ Incoming::Error { .. })
                    if self.era.modern().is_some()
                        || error.error_code().is_some_and(is_modern_error) =>
                {
                    self.read_answer(error);
                }
                _ if self.fell_back_after(status) => {}
                _ => self.fail(method, Failure::Status(status)),
            }
            return;
        }
        if body.iter().all(u8::is_ascii_whitespace) {
            self.fail(
                method,
                Failure::Malformed(format!("empty body with status {status}")),
            );
            return;
        }
        let message = match decode(body) {
            Ok(message) => message,
            Err(bad) => {
                self.fail(
                    method,
                    Failure::Malformed(bad.detail("the answer", "the body")),
                );
                return;
            }
        };
        match jsonrpc::classify(message) {
            answer @ (Incoming::Result { .. } | Incoming::Error { .. }) => self.read_answer(answer),
            Incoming::Request { .. } | Incoming::Notification { .. } | Incoming::Neither => {
                self.fail(
                    method,
                    Failure::Malformed("neither a result nor an error".to_owned()),
                );
            }
        }
    }
}
