//! What became of a leg, by its role: its response or its failure. The work leg's response
//! is read (`read`), and a stream that ended without its answer resumed (`resume`); the
//! standalone stream's is read for the server's own messages (`listen`); an auth leg's goes to
//! the flow (`authorize`); a reply's or a cancel notice's head ends it.
//!
//! [`Responses`] owns the work leg's reading and the standalone stream. The server's own
//! messages found on them go to `replies`; every head, chunk, end and failure of a leg in
//! flight comes back as what the operation must do ([`Heard`]: the answer to read, a failure,
//! ...). A leg that is over as it should be (a reply, a notice, an auth leg, a dropped stream)
//! leaves the leg table here; nothing here grants a leg or ends the operation.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use http::{HeaderMap, StatusCode};

use super::authorize::Authorizing;
use super::era::EraState;
use super::failure::Failure;
use super::grant::Grants;
use super::legs::Role;
use super::listen::Listen;
use super::read::{self, Heard, Reading};
use super::replies::Replies;
use super::resume::{Resumed, Resumption};
use super::view::View;
use super::{Event, LegKind, TransportError, TransportErrorKind};
use mcp_auth::{QUOTE_LIMIT, clip};

/// What came of a leg: a piece of its response, or its failure.
#[derive(Debug, Clone, Copy)]
pub(super) enum Piece<'a> {
    /// Its head.
    Head(StatusCode, &'a HeaderMap),
    /// The next chunk of its body.
    Chunk(&'a [u8]),
    /// Its body ended.
    End,
    /// It failed in the transport, or ran out of its grant (`None`).
    Failed(Option<&'a TransportError>),
}

/// What a response is read with: the operation's other parts, borrowed for one piece.
pub(super) struct Parts<'a> {
    /// The legs in flight: a response that is over ends its leg.
    pub(super) grants: &'a mut Grants,
    pub(super) session: &'a mut View,
    /// It reads a refusal, and an auth leg's whole response.
    pub(super) auth: &'a mut Authorizing,
    pub(super) era: &'a EraState,
    /// The server's own messages go there, and their events to `events`.
    pub(super) replies: &'a mut Replies,
    pub(super) events: &'a mut VecDeque<Event>,
    /// Where the work stream stopped, and its resumption.
    pub(super) resume: &'a mut Resumption,
    pub(super) now: Instant,
}

/// The work leg's reading and the standalone stream.
#[derive(Debug)]
pub(super) struct Responses {
    /// The work leg's response, as far as it has been read.
    pub(super) reading: Reading,
    /// The session's standalone stream.
    pub(super) listen: Listen,
}

impl Responses {
    /// Nothing read yet; `listen`: the standalone stream the operation starts with.
    pub(super) fn new(listen: Listen) -> Self {
        Self {
            reading: Reading::default(),
            listen,
        }
    }

    /// A `piece` of the response to the leg in `role` (or its failure): what the operation
    /// must do.
    pub(super) fn read(&mut self, role: Role, piece: Piece<'_>, parts: Parts<'_>) -> Heard {
        let Parts {
            grants,
            session,
            auth,
            era,
            replies,
            events,
            resume,
            now,
        } = parts;
        let Some(leg) = grants.legs.get_mut(role) else {
            return Heard::Over;
        };
        let had_head = leg.status != 0;
        if let Piece::Head(status, _) = piece {
            leg.status = status.as_u16();
        }
        let (kind, answers, grant, status) = (leg.kind, leg.answers, leg.grant, leg.status);
        let carried_session = leg.carried_session;
        let auth_leg = matches!(kind, LegKind::Auth(_));
        let modern = era.modern().is_some();
        let framed = match (role, piece) {
            // The stream's GET; a 401 or 403 is read as any refusal (an authorization).
            (Role::Work, _) if kind == LegKind::Events && !refuses_access(piece) => {
                let found_after = era.sse_found_after();
                return event_stream(piece, (grant, had_head), session, grants, found_after);
            }
            (_, Piece::Failed(error)) => {
                let failed = error.map_or(TransportErrorKind::TimedOut, |e| e.kind);
                grants.failed(role, failed);
                return match role {
                    Role::Listen => {
                        self.listen.off(grants);
                        Heard::Over
                    }
                    Role::Notice => {
                        grants.end(Role::Notice);
                        Heard::Over
                    }
                    // A subscription lasts as long as the budget: its end is the subscription's.
                    Role::Work
                        if failed == TransportErrorKind::TimedOut
                            && answers == LegKind::Subscribe =>
                    {
                        Heard::SubscriptionEnded { by_server: false }
                    }
                    // A server process that did not start.
                    Role::Work if kind == LegKind::Spawn => Heard::Failed(Failure::spawn(error)),
                    // A modern answer stream that broke mid-way lost its request: it is sent
                    // again.
                    Role::Work
                        if failed == TransportErrorKind::Io
                            && self.reading.is_streaming()
                            && modern
                            && resume.reissue(grants) =>
                    {
                        Heard::Over
                    }
                    Role::Work | Role::Reply => {
                        let error = error.cloned();
                        Heard::Failed(Failure::Transport { grant, error })
                    }
                };
            }
            (Role::Work, Piece::Head(status, headers)) if auth_leg => {
                auth.head(status, headers);
                return Heard::More;
            }
            (Role::Work, Piece::Chunk(bytes)) if auth_leg && !auth.chunk(bytes) => {
                return Heard::More;
            }
            // An auth leg is over: its answer goes to the flow.
            (Role::Work, _) if auth_leg => {
                grants.end(Role::Work);
                auth.end(session);
                return Heard::Over;
            }
            // Over HTTP+SSE a 2xx says the server took the message; the answer comes on the
            // event stream (a notification's is all there is).
            (Role::Work, Piece::Head(status, _))
                if status.is_success() && session.endpoint().is_some() =>
            {
                if kind == LegKind::Initialized {
                    grants.end(Role::Work);
                    return Heard::Accepted;
                }
                return Heard::Over;
            }
            // The endpoint does not know the session (the server restarted, or forgot it):
            // the stream is stale; a new one is opened, once, inside the budget.
            (Role::Work, Piece::Head(StatusCode::NOT_FOUND, _)) if session.endpoint().is_some() => {
                session.close_stream();
                return Heard::SessionLost(404);
            }
            (Role::Work, Piece::Head(status, headers)) => {
                let context = read::Context {
                    grants,
                    session,
                    auth,
                    era,
                };
                return self
                    .reading
                    .head((kind, carried_session), status, headers, context);
            }
            (Role::Work, Piece::Chunk(bytes)) => self.reading.chunk(bytes),
            (Role::Work, Piece::End) => self.reading.end(status, modern),
            // Any 2xx, with or without a body, means the server has the answer.
            (Role::Reply, Piece::Head(status, _)) if !status.is_success() => {
                return Heard::Failed(Failure::Status(status.as_u16()));
            }
            (Role::Listen, Piece::Head(status, headers)) => {
                let cap = session.config().body_cap();
                return self.listen.head(status, headers, cap, grants);
            }
            (Role::Listen, Piece::Chunk(bytes)) => self.listen.chunk(bytes, grants),
            (Role::Listen, Piece::End) => {
                self.listen.off(grants);
                return Heard::Over;
            }
            // Their bodies are not read: the leg ended with its head.
            (Role::Reply | Role::Notice, Piece::Chunk(_)) => return Heard::Over,
            (Role::Reply | Role::Notice, _) => {
                grants.end(role);
                return Heard::Over;
            }
        };
        if role == Role::Work {
            resume.saw_event_id(self.reading.last_event_id());
        }
        // The server's own messages are taken as they came; the answer is last.
        for message in framed.messages.into_iter().chain(framed.answer) {
            if let Some(answer) = replies.take(message, session.config(), events) {
                return Heard::Answer(answer);
            }
        }
        let Heard::EndedEarly(failure) = framed.then else {
            return framed.then;
        };
        match resume.after_early_end(grants, self.reading.retry(), now, modern) {
            Resumed::Later => Heard::Over,
            Resumed::TooLate => Heard::TimedOut,
            // The server closed the subscription's stream: it is over.
            Resumed::Not if answers == LegKind::Subscribe => {
                Heard::SubscriptionEnded { by_server: true }
            }
            Resumed::Not => Heard::Failed(failure),
        }
    }
}

/// Over HTTP+SSE, what became of the leg that opens the session's event stream (granted
/// `grant`), before the stream named its endpoint (which ends the leg: `progress`): its head
/// must open an event stream; its bytes come as [`Input::Events`](super::Input::Events),
/// never here; its failure leaves nothing to carry the answers. A GET that opens no event
/// stream after the operation's `initialize` POST was refused (`found_after`: its status)
/// means the URL speaks neither transport: the session forgets HTTP+SSE, and the error says
/// what each request got.
fn event_stream(
    piece: Piece<'_>,
    (grant, had_head): (Duration, bool),
    session: &mut View,
    grants: &mut Grants,
    found_after: Option<u16>,
) -> Heard {
    match piece {
        // A second head goes nowhere.
        Piece::Head(..) if had_head => Heard::Over,
        Piece::Head(status, headers) => {
            let media = read::media_type(headers);
            let got = if !status.is_success() {
                format!("was answered with HTTP status {}", status.as_u16())
            } else if media != "text/event-stream" {
                format!(
                    "was answered with content type {:?}",
                    clip(&media, QUOTE_LIMIT)
                )
            } else {
                return Heard::More;
            };
            if let Some(initialize) = found_after {
                session.unlearn_sse();
                return Heard::Failed(Failure::NoTransport {
                    initialize,
                    sse: got,
                });
            }
            Heard::Failed(match status.is_success() {
                false => Failure::Status(status.as_u16()),
                true => Failure::ContentType(clip(&media, QUOTE_LIMIT)),
            })
        }
        // Its bytes come as `Input::Events`: a chunk of the leg is ignored (read on after its
        // head, the leg in flight until its endpoint; before it, it goes nowhere).
        Piece::Chunk(_) if had_head => Heard::More,
        Piece::Chunk(_) => Heard::Over,
        Piece::End => Heard::Failed(Failure::Malformed(
            "it closed the HTTP+SSE event stream before naming its endpoint".to_owned(),
        )),
        Piece::Failed(error) => {
            let failed = error.map_or(TransportErrorKind::TimedOut, |e| e.kind);
            grants.failed(Role::Work, failed);
            let error = error.cloned();
            Heard::Failed(Failure::Transport { grant, error })
        }
    }
}

/// Whether `piece` is a head that asks for authorization (401) or more of it (403).
fn refuses_access(piece: Piece<'_>) -> bool {
    matches!(piece, Piece::Head(status, _)
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN)
}
