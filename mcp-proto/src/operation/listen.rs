//! The session's standalone stream: a GET opened during a tool call, read beside the call
//! for requests and notifications the server sends outside any answer.
//!
//! It is an ordinary leg of role `Listen`. The call waits for its head at most
//! [`LISTEN_HEAD_WAIT`](super::LISTEN_HEAD_WAIT) (so the server has the stream before the tool that may use it runs),
//! then goes out anyway. A stream the server refuses, breaks or closes is dropped without
//! ending the operation: it is a convenience, never a reason to fail. This module reads the
//! stream; the operation grants its leg and handles the messages it carries.

use http::{HeaderMap, StatusCode};

use super::Action;
use super::read::{decode, media_type};
use crate::config::SessionConfig;
use crate::jsonrpc::{self, Incoming};
use crate::sse::{SseEvent, SseParser};

/// The standalone stream's state.
#[derive(Debug)]
pub(super) enum Listen {
    /// Not wanted, refused, failed or closed: the operation goes on without it.
    Off,
    /// Wanted: opened once the session is live, before the work request.
    Due,
    /// Sent, its head not in yet.
    Opening,
    /// Open and being read (`events`: what a chunk completed, kept between chunks).
    Open {
        parser: SseParser,
        events: Vec<SseEvent>,
    },
}

impl Listen {
    /// Whether the stream is wanted and not opened yet.
    pub(super) fn is_due(&self) -> bool {
        matches!(self, Self::Due)
    }

    /// The stream an operation starts with. Server-initiated requests come while a tool runs:
    /// only a call opens the stream, so a listing before it does not leave a dropped stream the
    /// server still counts as open. The modern era has no standalone stream.
    pub(super) fn for_operation(config: &SessionConfig, action: &Action, modern: bool) -> Self {
        // Over stdio the server's messages all come on stdout: there is no stream to open.
        if config.listen()
            && !modern
            && !config.is_stdio()
            && matches!(action, Action::CallTool { .. })
        {
            Self::Due
        } else {
            Self::Off
        }
    }
}

impl Listen {
    /// The stream's head. Anything but a 2xx event stream means the server does not offer
    /// one: false, and the operation goes on without it.
    pub(super) fn head(&mut self, status: StatusCode, headers: &HeaderMap, cap: usize) -> bool {
        if !matches!(self, Self::Opening)
            || !status.is_success()
            || media_type(headers) != "text/event-stream"
        {
            *self = Self::Off;
            return false;
        }
        *self = Self::Open {
            parser: SseParser::new(cap),
            events: Vec::new(),
        };
        true
    }

    /// The next chunk of the stream: the messages it completed (requests to answer,
    /// notifications to report; responses do not belong here), and whether the stream broke
    /// the rules (it is dropped; what came before the break is still delivered).
    pub(super) fn chunk(&mut self, bytes: &[u8]) -> (Vec<Incoming>, bool) {
        let Self::Open { parser, events } = self else {
            return (Vec::new(), true);
        };
        let fed = parser.feed(bytes, events);
        let mut messages = Vec::new();
        for event in events.drain(..) {
            if event.data.trim().is_empty() {
                continue;
            }
            match decode(event.data.as_bytes()) {
                Ok(message) => messages.push(jsonrpc::classify(message)),
                Err(_) => return (messages, true),
            }
        }
        (messages, fed.is_err())
    }
}
