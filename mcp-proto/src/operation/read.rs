//! Reading the work leg's answer: the head's checks, a JSON body or an event stream, and the
//! messages in them.
//!
//! [`Reading`] is the work leg's answer as far as it has been read. Its head says how the body
//! is read: `Json`, collected up to the body cap and decoded at its end, or `Sse`, parsed as it
//! arrives. Every chunk, and the end, hands back the messages it completed, in order and up to
//! the answer, and what follows them ([`Framed`]); `responses` routes the messages (a server's
//! request to `replies`, a notification to the events, the answer to the operation). What
//! follows is a [`Heard`], the decision every reading part returns and the operation acts on.
//! What an answer *means* is `answer`'s; a stream that ends early is `resume`'s. Nothing here
//! may read past the body cap, hold server text unclipped in a failure, or end the operation.

use std::borrow::Cow;
use std::time::Duration;

use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderMap, StatusCode};
use serde_json::{Map, Value};

use super::authorize::{Authorizing, Refused};
use super::era::{EraState, Move, is_modern_error};
use super::failure::Failure;
use super::grant::Grants;
use super::legs::Role;
use super::view::View;
use super::{LegKind, Outcome};
use crate::jsonrpc::{self, Incoming, ResultAs};
use crate::sse::{SseError, SseEvent, SseParser};
use crate::wire::{SESSION, valid_session_id};
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

/// Reads one JSON-RPC message into its class ([`jsonrpc::classify`] of [`decode`]), without
/// the envelope's map; what cannot be read is decoded again the plain way, to say why.
/// A `result` is kept as `keep` says: as its text only where a tool's result is awaited.
pub(super) fn read_message(bytes: &[u8], keep: ResultAs) -> Result<Incoming, BadMessage> {
    match jsonrpc::read_message(bytes, keep) {
        Ok(message) => Ok(message),
        Err(_) => decode(bytes).map(jsonrpc::classify),
    }
}

/// How the answer to a request of `kind` keeps its `result`: as its text for a tool's result
/// (read from it straight into its type), as a value for any other.
pub(super) fn keep_for(kind: LegKind) -> ResultAs {
    match kind {
        LegKind::CallTool => ResultAs::Text,
        _ => ResultAs::Value,
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

/// What a leg's response (or, over stdio, a line, a write, the exit) says the operation must
/// do: the decision every part that reads hands back, for the operation to act on.
#[derive(Debug)]
pub(super) enum Heard {
    /// Read on.
    More,
    /// Nothing more: the leg is over as it should be, goes out again, or awaits its answer.
    Over,
    /// The answer to the awaited request (a result or an error), to read for what it means.
    Answer(Incoming),
    /// The server process started.
    Started,
    /// Over HTTP+SSE: the event stream named where messages go (checked against the URL's
    /// origin: `Err` says why it is refused).
    Endpoint(Result<http::Uri, String>),
    /// `notifications/initialized` was accepted (its body is not read).
    Accepted,
    /// The operation's result (a close's: the session, or the process, is gone).
    Done(Outcome),
    /// An answer moved the era: the request goes out again, in the era it moved to.
    Moved(Move),
    /// The session is gone: a request that carried its id was answered with this status (a
    /// `404`, or a `400` that says so: [`says_session_is_gone`]).
    SessionLost(u16),
    /// Over HTTP+SSE: the session's event stream ended between two legs: the next goes on a
    /// new one, once.
    StreamLost,
    /// A refusal with this status that no modern error explained: perhaps a legacy server's,
    /// else the status is the error.
    Refused(u16),
    /// The event stream ended without the answer: it is resumed if it can be, else the
    /// subscription it carried is over, else the operation fails with this.
    EndedEarly(Failure),
    /// The subscription is over: the server ended it (`by_server`), or the budget did.
    SubscriptionEnded { by_server: bool },
    /// The answer awaited can no longer come within the budget: the request timed out.
    TimedOut,
    /// The operation fails, about the request awaited.
    Failed(Failure),
}

/// What a chunk or the end of a body completed.
#[derive(Debug)]
pub(super) struct Framed {
    /// The server's requests and notifications, in order.
    pub(super) messages: Vec<Incoming>,
    /// The answer (a result or an error) when it came, after `messages`; nothing after it is
    /// read. Apart from `messages` so that a body that is only the answer (the common case)
    /// costs no allocation.
    pub(super) answer: Option<Incoming>,
    /// What follows them (when the answer came: [`Heard::Over`]).
    pub(super) then: Heard,
}

impl Framed {
    /// No message, only `then` (what a head says, for one).
    pub(super) fn then(then: Heard) -> Self {
        Self::messages(Vec::new(), then)
    }

    /// The server's `messages`, no answer, then `then`.
    pub(super) fn messages(messages: Vec<Incoming>, then: Heard) -> Self {
        Self {
            messages,
            answer: None,
            then,
        }
    }

    fn answer(answer: Incoming) -> Self {
        Self {
            answer: Some(answer),
            ..Self::then(Heard::Over)
        }
    }
}

/// What the head of a work leg is checked against: the operation's other parts, borrowed for
/// one head.
pub(super) struct Context<'a> {
    /// The legs in flight: a head that says all there is to say ends the work leg.
    pub(super) grants: &'a mut Grants,
    /// It notes the server's DPoP nonce, forgets a refused token and is reset by a close.
    pub(super) session: &'a mut View,
    /// It says what a refusal that asks for authorization means.
    pub(super) auth: &'a mut Authorizing,
    /// Whether a JSON refusal may carry a modern error (the era is modern, or still open).
    pub(super) era: &'a EraState,
}

/// The work leg's answer, as far as it has been read.
#[derive(Debug, Default)]
pub(super) struct Reading {
    body: Body,
    /// The body cap, from the head on.
    cap: usize,
    /// Whether any message (not only priming events) came on the stream.
    saw_message: bool,
    /// The session id the server issued with the head (`initialize` only).
    session_id: Option<String>,
    /// A `400` to a request that carried the session's id, of this kind: its body is read to
    /// learn whether it says the session is gone ([`says_session_is_gone`]).
    refused_session: Option<LegKind>,
    /// The events a chunk completed, kept between chunks to spare an allocation each.
    events: Vec<SseEvent>,
    /// How the answer's `result` is kept: as its text for a tool's result.
    keep: ResultAs,
}

/// How the body is read.
#[derive(Debug, Default)]
enum Body {
    /// Waiting for the head.
    #[default]
    Head,
    /// A JSON body, collected until it ends.
    Json(Vec<u8>),
    /// An event stream, parsed as it arrives.
    Sse(SseParser),
}

impl Reading {
    /// A new work leg went out: nothing of it is read yet.
    pub(super) fn restart(&mut self) {
        self.body = Body::Head;
        self.saw_message = false;
        self.session_id = None;
        self.refused_session = None;
        self.events.clear();
        self.keep = ResultAs::Value;
    }

    /// Whether the answer is an event stream being read.
    pub(super) fn is_streaming(&self) -> bool {
        matches!(self.body, Body::Sse(_))
    }

    /// The `retry` the event stream asked for, if it did.
    pub(super) fn retry(&self) -> Option<Duration> {
        match &self.body {
            Body::Sse(parser) => parser.retry(),
            _ => None,
        }
    }

    /// The id of the last event the stream carried, if any.
    pub(super) fn last_event_id(&self) -> Option<&str> {
        match &self.body {
            Body::Sse(parser) => parser.last_event_id(),
            _ => None,
        }
    }

    /// Takes the session id the head issued (`initialize` only).
    pub(super) fn take_session_id(&mut self) -> Option<String> {
        self.session_id.take()
    }

    /// The head of the answer to the work leg, of `kind`, with `status` and `headers`: how
    /// its body is read, or what it means instead (then the leg is over: it leaves the table).
    /// `carried_session`: its request carried the session's id. A second head is ignored.
    pub(super) fn head(
        &mut self,
        (kind, carried_session): (LegKind, bool),
        status: StatusCode,
        headers: &HeaderMap,
        ctx: Context<'_>,
    ) -> Heard {
        if !matches!(self.body, Body::Head) {
            return Heard::Over;
        }
        let Context {
            grants,
            session,
            auth,
            era,
        } = ctx;
        let cap = session.config().body_cap();
        // Servers on the TypeScript SDK's example routing answer a request for a session they
        // do not know (after a restart) with 400 and say so in the body: it is read, to tell
        // that from any other 400 ([`says_session_is_gone`]).
        let lost_or_refused = status == StatusCode::BAD_REQUEST && carried_session;
        if kind == LegKind::Close {
            // 404: already gone; 405: the server does not end sessions on request.
            session.reset();
            if lost_or_refused {
                return self.read_refusal(kind, cap);
            }
            let gone = status.is_success()
                || status == StatusCode::NOT_FOUND
                || status == StatusCode::METHOD_NOT_ALLOWED;
            if !gone {
                return Heard::Failed(Failure::Status(status.as_u16()));
            }
            grants.end(Role::Work);
            return Heard::Done(Outcome::Closed);
        }
        session.note_dpop_nonce(headers);
        if let Some(refused) = auth.refused(status, headers, session) {
            if refused == Refused::Unconfigured {
                return Heard::Failed(Failure::AuthorizationRequired {
                    issuer: None,
                    reason: "no OAuth client is configured for it".to_owned(),
                });
            }
            // The request goes out again (with a fresh DPoP nonce, or once the session says
            // so): this leg is over.
            grants.end(Role::Work);
            return Heard::Over;
        }
        if status == StatusCode::NOT_FOUND && carried_session {
            return Heard::SessionLost(status.as_u16());
        }
        if lost_or_refused {
            return self.read_refusal(kind, cap);
        }
        // A modern server explains a refusal (400, 404) with a JSON-RPC error in the body: it
        // is read (under the body cap) so that `-32022` can name the versions to retry with,
        // and so that a refusal that is not a modern error can mean a legacy server.
        // A refused `initialize` may mean HTTP+SSE, unless a modern error explains it.
        let sse_next = kind == LegKind::Initialize && era.may_find_sse();
        let explained = (era.modern().is_some() || era.is_open() || sse_next)
            && status.is_client_error()
            && media_type(headers) == "application/json";
        if !explained && !status.is_success() {
            return Heard::Refused(status.as_u16());
        }
        self.keep = keep_for(kind);
        if kind == LegKind::Initialized {
            // A notification's answer is not read: 202 without a body is the norm, and any
            // 2xx, with or without a body, is accepted.
            grants.end(Role::Work);
            return Heard::Accepted;
        }
        if kind == LegKind::Initialize {
            if let Some(raw) = headers.get(SESSION) {
                if !valid_session_id(raw.as_bytes()) {
                    let shown = clip(&String::from_utf8_lossy(raw.as_bytes()), QUOTE_LIMIT);
                    return Heard::Failed(Failure::Malformed(format!(
                        "the session id \"{shown}\" is not 1 to 256 visible ASCII characters, so it is not echoed"
                    )));
                }
                self.session_id = Some(String::from_utf8_lossy(raw.as_bytes()).into_owned());
            }
        }
        let declared_length = headers
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        self.body = match media_type(headers).as_ref() {
            "" | "application/json" => {
                if declared_length.is_some_and(|n| n > cap as u64) {
                    return Heard::Failed(Failure::TooLarge(cap));
                }
                // Reserve what the server announced (never past the cap): no regrowth.
                let reserve = declared_length.map_or(0, |n| n.min(cap as u64) as usize);
                Body::Json(Vec::with_capacity(reserve))
            }
            "text/event-stream" => Body::Sse(SseParser::new(cap)),
            other => return Heard::Failed(Failure::ContentType(clip(other, QUOTE_LIMIT))),
        };
        self.cap = cap;
        Heard::More
    }

    /// A `400` to a request of `kind` that carried the session's id: its body is read (under
    /// `cap`), and at its end says whether the session is gone ([`Self::end`]).
    fn read_refusal(&mut self, kind: LegKind, cap: usize) -> Heard {
        self.refused_session = Some(kind);
        self.body = Body::Json(Vec::new());
        self.cap = cap;
        Heard::More
    }

    /// The next chunk of the body.
    pub(super) fn chunk(&mut self, bytes: &[u8]) -> Framed {
        match &mut self.body {
            Body::Head => Framed::then(Heard::Over),
            Body::Json(buffer) => {
                if buffer.len().saturating_add(bytes.len()) > self.cap {
                    return Framed::then(Heard::Failed(Failure::TooLarge(self.cap)));
                }
                buffer.extend_from_slice(bytes);
                Framed::then(Heard::More)
            }
            Body::Sse(parser) => {
                let fed = parser.feed(bytes, &mut self.events);
                self.frame_events(fed)
            }
        }
    }

    /// The body ended; `status` is the head's, `modern` whether the operation speaks the
    /// modern era (any JSON-RPC error then explains a refusal).
    pub(super) fn end(&mut self, status: u16, modern: bool) -> Framed {
        match &mut self.body {
            Body::Head => Framed::then(Heard::Over),
            Body::Json(buffer) => {
                let body = std::mem::take(buffer);
                // Only a refusal of a request that carried a session is read for whether the
                // session is gone: an answer's body is decoded once, by `json_answer`.
                let refused = self.refused_session.take();
                let gone = refused.is_some() && says_session_is_gone(&body);
                match (refused, gone) {
                    // A close of a session the server no longer knows: it is closed.
                    (Some(LegKind::Close), true) => Framed::then(Heard::Done(Outcome::Closed)),
                    (Some(LegKind::Close), false) => {
                        Framed::then(Heard::Failed(Failure::Status(status)))
                    }
                    (Some(_), true) => Framed::then(Heard::SessionLost(status)),
                    _ => json_answer(&body, status, modern, self.keep),
                }
            }
            Body::Sse(parser) => {
                let fed = parser.finish(&mut self.events);
                let mut framed = self.frame_events(fed);
                if matches!(framed.then, Heard::More) {
                    let detail = if self.saw_message {
                        "the event stream carried no response to the request"
                    } else {
                        "the event stream carried no message"
                    };
                    framed.then = Heard::EndedEarly(Failure::Malformed(detail.to_owned()));
                }
                framed
            }
        }
    }

    /// The messages of the events the parser completed, up to the answer; when no answer came,
    /// what the parser's verdict `fed` means. Events completed before a parse error are still
    /// handed back: an answer that arrived before the stream went bad is a good answer.
    fn frame_events(&mut self, fed: Result<(), SseError>) -> Framed {
        let mut messages = Vec::new();
        for event in self.events.drain(..) {
            if event.data.trim().is_empty() {
                // A priming event (an id and empty data) or a keep-alive.
                continue;
            }
            let message = match read_message(event.data.as_bytes(), self.keep) {
                Ok(message) => message,
                Err(bad) => {
                    let detail = bad.detail("an event's data", "an event's data");
                    return Framed::messages(messages, Heard::Failed(Failure::Malformed(detail)));
                }
            };
            self.saw_message = true;
            match message {
                Incoming::Neither => {}
                answer @ (Incoming::Result { .. } | Incoming::Error { .. }) => {
                    return Framed {
                        answer: Some(answer),
                        ..Framed::messages(messages, Heard::Over)
                    };
                }
                message => messages.push(message),
            }
        }
        let then = match fed {
            Ok(()) => Heard::More,
            Err(SseError::EventTooLarge { .. }) => Heard::Failed(Failure::TooLarge(self.cap)),
            Err(err) => Heard::Failed(Failure::Malformed(err.to_string())),
        };
        Framed::messages(messages, then)
    }
}

/// Whether the body of a `400` to a request that carried a session id says the session is
/// gone, as real servers say it: the message of a JSON-RPC error (the TypeScript SDK's example
/// routing, which `server-everything` and most servers built on that SDK copy: `Bad Request: No
/// valid session ID provided`; its transport's own `Bad Request: Server not initialized` and
/// `Mcp-Session-Id header is required`), or a body of plain text (`Invalid or missing session
/// ID`), that names the session (or an uninitialised server) and calls it missing, unknown,
/// invalid, expired or not found. Any other `400` stays the server's error. Only the first
/// [`QUOTE_LIMIT`] characters are looked at: a hostile body cannot make this slow.
pub(super) fn says_session_is_gone(body: &[u8]) -> bool {
    let text = match decode(body) {
        Ok(message) => match message.get("error").and_then(|e| e.get("message")) {
            Some(Value::String(text)) => Cow::Owned(text.clone()),
            _ => return false,
        },
        Err(BadMessage::NotObject) => return false,
        Err(BadMessage::NotJson(_)) => {
            String::from_utf8_lossy(&body[..body.len().min(QUOTE_LIMIT * 4)])
        }
    };
    let said: String = text
        .chars()
        .take(QUOTE_LIMIT)
        .flat_map(char::to_lowercase)
        .collect();
    if said.contains("not initialized") || said.contains("not initialised") {
        return true;
    }
    said.contains("session")
        && [
            "no valid",
            "invalid",
            "missing",
            "required",
            "unknown",
            "not found",
            "expired",
            "no such",
            "does not exist",
        ]
        .iter()
        .any(|gone| said.contains(gone))
}

/// A whole JSON body with `status`: the answer, or why there is none.
fn json_answer(body: &[u8], status: u16, modern: bool, keep: ResultAs) -> Framed {
    let malformed = |detail: String| Framed::then(Heard::Failed(Failure::Malformed(detail)));
    if !(200..300).contains(&status) {
        // A refusal's body: a JSON-RPC error explains it, anything else leaves the status. In
        // the legacy era only a modern error explains a refusal (it can move the operation to
        // the modern era); any other keeps the status as the error.
        return match read_message(body, ResultAs::Value) {
            Ok(error @ Incoming::Error { .. })
                if modern || error.error_code().is_some_and(is_modern_error) =>
            {
                Framed::answer(error)
            }
            _ => Framed::then(Heard::Refused(status)),
        };
    }
    if body.iter().all(u8::is_ascii_whitespace) {
        return malformed(format!("empty body with status {status}"));
    }
    match read_message(body, keep) {
        Ok(answer @ (Incoming::Result { .. } | Incoming::Error { .. })) => Framed::answer(answer),
        Ok(_) => malformed("neither a result nor an error".to_owned()),
        Err(bad) => malformed(bad.detail("the answer", "the body")),
    }
}
