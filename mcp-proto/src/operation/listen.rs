//! The session's standalone stream: a GET opened during a tool call, read beside the call
//! for requests and notifications the server sends outside any answer.
//!
//! It is an ordinary leg of role `Listen`. The call waits for its head at most
//! [`LISTEN_HEAD_WAIT`](super::LISTEN_HEAD_WAIT) (so the server has the stream before the tool that may use it runs),
//! then goes out anyway. A stream the server refuses, breaks or closes is dropped without
//! ending the operation: it is a convenience, never a reason to fail. This module reads the
//! stream, times the wait for its head and drops its leg; the operation grants the leg, and
//! `replies` takes the messages it carries.

use std::time::Instant;

use http::{HeaderMap, StatusCode};

use super::grant::Grants;
use super::legs::Role;
use super::read::{Framed, Heard, media_type, read_message};
use super::timers::Timer;
use super::{Action, LISTEN_HEAD_WAIT};
use crate::config::SessionConfig;
use crate::jsonrpc::{Incoming, ResultAs};
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
    /// The stream's leg went out at `now` and its grant ends at `ends_at`: the work waits for
    /// its head, at most [`LISTEN_HEAD_WAIT`].
    pub(super) fn sent(&mut self, now: Instant, ends_at: Instant, grants: &mut Grants) {
        *self = Self::Opening;
        let head_wait = now.checked_add(LISTEN_HEAD_WAIT).unwrap_or(now);
        grants.timers.set(Timer::ListenHead, head_wait.min(ends_at));
    }

    /// The stream's head: the work waits no more. Anything but a 2xx event stream means the
    /// server does not offer one: the stream is dropped, and the operation goes on without it.
    pub(super) fn head(
        &mut self,
        status: StatusCode,
        headers: &HeaderMap,
        cap: usize,
        grants: &mut Grants,
    ) -> Heard {
        grants.timers.stop(Timer::ListenHead);
        if !matches!(self, Self::Opening)
            || !status.is_success()
            || media_type(headers) != "text/event-stream"
        {
            self.off(grants);
            return Heard::Over;
        }
        *self = Self::Open {
            parser: SseParser::new(cap),
            events: Vec::new(),
        };
        Heard::More
    }

    /// The next chunk of the stream: the messages it completed (requests to answer,
    /// notifications to report; responses belong on the stream of their request and are
    /// dropped), and whether to read on. A stream that broke the rules is dropped; what came
    /// before the break is still handed back.
    pub(super) fn chunk(&mut self, bytes: &[u8], grants: &mut Grants) -> Framed {
        let mut messages = Vec::new();
        let broken = match self {
            Self::Open { parser, events } => {
                let fed = parser.feed(bytes, events);
                let mut broken = fed.is_err();
                for event in events.drain(..) {
                    if event.data.trim().is_empty() {
                        continue;
                    }
                    match read_message(event.data.as_bytes(), ResultAs::Value) {
                        Ok(
                            message @ (Incoming::Request { .. } | Incoming::Notification { .. }),
                        ) => {
                            messages.push(message);
                        }
                        Ok(_) => {}
                        Err(_) => {
                            broken = true;
                            break;
                        }
                    }
                }
                broken
            }
            _ => true,
        };
        let then = if broken {
            self.off(grants);
            Heard::Over
        } else {
            Heard::More
        };
        Framed::messages(messages, then)
    }

    /// The operation started over (another session, another era): the stream is dropped and,
    /// when the configuration wants one and the era (`modern`) has it, opened again.
    pub(super) fn restart(
        &mut self,
        grants: &mut Grants,
        config: &SessionConfig,
        action: &Action,
        modern: bool,
    ) {
        self.off(grants);
        *self = Self::for_operation(config, action, modern);
    }

    /// Drops the stream (its leg and the work's wait for its head); the operation goes on
    /// without it.
    pub(super) fn off(&mut self, grants: &mut Grants) {
        *self = Self::Off;
        grants.timers.stop(Timer::ListenHead);
        grants.end(Role::Listen);
    }
}
