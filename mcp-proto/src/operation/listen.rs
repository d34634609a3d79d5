//! The session's standalone stream: a GET opened during a tool call, read beside the call
//! for requests and notifications the server sends outside any answer.
//!
//! It is an ordinary leg of role `Listen`. The call waits for its head at most
//! [`LISTEN_HEAD_WAIT`] (so the server has the stream before the tool that may use it runs),
//! then goes out anyway. A stream the server refuses, breaks or closes is dropped without
//! ending the operation: it is a convenience, never a reason to fail.

use http::{HeaderMap, StatusCode};

use super::legs::Role;
use super::read::{decode, media_type};
use super::timers::Timer;
use super::{Action, LegStatus, Operation};
use crate::config::SessionConfig;
use crate::jsonrpc;
use crate::sse::SseParser;

/// The standalone stream's state.
#[derive(Debug)]
pub(super) enum Listen {
    /// Not wanted, refused, failed or closed: the operation goes on without it.
    Off,
    /// Wanted: opened once the session is live, before the work request.
    Due,
    /// Sent, its head not in yet.
    Opening,
    /// Open and being read.
    Open(SseParser),
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

impl Operation {
    /// The standalone stream's head. Anything but a 2xx event stream means the server does
    /// not offer one: the operation goes on without it.
    pub(super) fn listen_head(&mut self, status: StatusCode, headers: &HeaderMap) -> LegStatus {
        self.grants.timers.stop(Timer::ListenHead);
        if !matches!(self.listen, Listen::Opening) {
            self.listen_off();
            return LegStatus::Complete;
        }
        if !status.is_success() || media_type(headers) != "text/event-stream" {
            self.listen_off();
            return LegStatus::Complete;
        }
        self.listen = Listen::Open(SseParser::new(self.session.config().body_cap()));
        LegStatus::ReadMore
    }

    /// The next chunk of the standalone stream. Requests in it are answered, notifications
    /// become events; a stream that breaks the rules is dropped.
    pub(super) fn listen_chunk(&mut self, chunk: &[u8]) -> LegStatus {
        let Listen::Open(parser) = &mut self.listen else {
            self.listen_off();
            return LegStatus::Complete;
        };
        let mut events = std::mem::take(&mut self.scratch);
        // Events completed before a parse error are still delivered.
        let fed = parser.feed(chunk, &mut events);
        let mut broken = false;
        for event in events.drain(..) {
            if broken {
                continue;
            }
            if event.data.trim().is_empty() {
                continue;
            }
            let Ok(message) = decode(event.data.as_bytes()) else {
                broken = true;
                continue;
            };
            // Responses belong on the stream of their request; nothing to do here.
            let _ = self.server_message(jsonrpc::classify(message));
        }
        self.scratch = events;
        if broken || fed.is_err() {
            self.listen_off();
            return LegStatus::Complete;
        }
        LegStatus::ReadMore
    }

    /// Drops the standalone stream; the operation goes on without it.
    pub(super) fn listen_off(&mut self) {
        self.listen = Listen::Off;
        self.grants.timers.stop(Timer::ListenHead);
        self.grants.end(Role::Listen);
    }
}
