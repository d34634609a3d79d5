//! Which era an operation speaks, and when it changes its mind.
//!
//! A configuration that pins a version speaks it and nothing else. One that does not (the
//! default) starts in the era the session remembers, or modern when it remembers none, and
//! may change era **once** per operation, inside the operation's budget:
//!
//! * modern → legacy: the server refused the modern request with a `400`, `404` or `405` whose
//!   body is not a recognised modern error, a `server/discover` was answered "method not
//!   found", or a `-32022` listed only legacy versions. The handshake follows.
//! * legacy → modern: a legacy request was refused with a recognised modern error (a server
//!   that became modern-only), or `initialize` was answered `-32022` naming a modern version.
//!
//! The era found is written to the [`Session`](crate::Session) so later operations start in
//! it. This module never decides anything about a request's content: it keeps the era's
//! state and says how an answer moves it ([`Move`]); the operation acts on the move, which
//! this module applies to the session ([`EraState::moved`]) before the attempt starts over.

use http::StatusCode;
use serde_json::Value;

use super::view::View;
use super::{Action, LegKind};
use crate::model::{Era, ProtocolVersion};
use crate::session::Session;
use crate::task::TaskEra;

/// `HeaderMismatch`: the request's headers do not match its body.
pub(super) const HEADER_MISMATCH: i64 = -32020;
/// `MissingRequiredClientCapability`.
pub(super) const MISSING_CLIENT_CAPABILITY: i64 = -32021;
/// `UnsupportedProtocolVersion`, with `data.supported`.
pub(super) const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
/// JSON-RPC "method not found".
pub(super) const METHOD_NOT_FOUND: i64 = -32601;

/// Whether `code` is one of the errors only a modern server sends.
pub(super) const fn is_modern_error(code: i64) -> bool {
    matches!(
        code,
        HEADER_MISMATCH | MISSING_CLIENT_CAPABILITY | UNSUPPORTED_PROTOCOL_VERSION
    )
}

/// Whether a refusal with `status` may mean "a legacy server": the statuses legacy servers
/// give a request without a session or a handshake.
fn is_legacy_refusal(status: u16) -> bool {
    status == StatusCode::BAD_REQUEST.as_u16()
        || status == StatusCode::NOT_FOUND.as_u16()
        || status == StatusCode::METHOD_NOT_ALLOWED.as_u16()
}

/// The versions a `-32022` names, in the client's order of preference: the newest modern one
/// this client speaks, else the newest legacy one.
pub(super) fn supported_version(data: Option<&Value>) -> Option<ProtocolVersion> {
    let supported = data?.get("supported")?.as_array()?;
    ProtocolVersion::ALL.into_iter().find(|version| {
        supported
            .iter()
            .any(|s| s.as_str() == Some(version.as_str()))
    })
}

/// What an answer did to the operation's era: the operation acts on it (`mod.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Move {
    /// The same request goes out again, in the modern version the server named (a new id).
    Retry,
    /// The server speaks the legacy era: the modern attempt is dropped and the handshake
    /// follows (or the work, on a live session), inside the same budget.
    ToLegacy,
    /// The server speaks the modern era: the legacy session, if any, is gone; the work goes
    /// out as a modern request.
    ToModern,
    /// The URL refused the legacy `initialize` POST: it speaks the HTTP+SSE transport. Its
    /// event stream is opened, and the handshake goes out on it, inside the same budget.
    ToSse,
}

/// The era an operation speaks and whether it may still change it.
#[derive(Debug)]
pub(super) struct EraState {
    /// The modern version spoken (no handshake, per-request metadata), or `None` for legacy.
    modern: Option<ProtocolVersion>,
    /// Whether a `-32022` already moved the operation to another version: it does so once.
    version_retried: bool,
    /// Whether the operation may still change era (the configuration pins no version and no
    /// change happened yet).
    open: bool,
    /// Over stdio, an era not known yet is found with `server/discover` before the work (the
    /// stdio transport's probe): set until it was answered.
    probe_first: bool,
    /// Where the operation stands with the fallback to HTTP+SSE.
    sse: SseFallback,
}

/// The spec's fallback from Streamable HTTP to HTTP+SSE, once per operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SseFallback {
    /// A refused legacy `initialize` may still move the session to HTTP+SSE.
    Open,
    /// One did, refused with this status.
    Taken(u16),
    /// Not here: pinned, over stdio, or the session speaks HTTP+SSE already.
    Closed,
}

impl EraState {
    /// The era an operation for `action` starts in on `session`; `restarting` when it starts
    /// a local server anew (another build of it, perhaps: its era is found again).
    pub(super) fn starting(session: &Session, action: &Action, restarting: bool) -> Self {
        let config = session.config();
        // A task lives in the era it was created in: its polls and its cancel speak it.
        let task_era = match action {
            Action::ResumeTask(task) | Action::CancelTask(task) => Some(task.era),
            _ => None,
        };
        let pinned = config.protocol_version().filter(|v| v.is_modern());
        let (modern, open) = if session.speaks_sse() {
            // HTTP+SSE carries the legacy era only.
            (None, false)
        } else if let Some(era) = task_era {
            let modern = pinned.unwrap_or(ProtocolVersion::MODERN);
            ((era == TaskEra::Modern).then_some(modern), false)
        } else if restarting && config.protocol_version().is_none() {
            (Some(ProtocolVersion::MODERN), true)
        } else {
            match config.protocol_version() {
                Some(version) => (version.is_modern().then_some(version), false),
                None => match session.era() {
                    Some(Era::Legacy) => (None, true),
                    Some(Era::Modern) | None => (Some(ProtocolVersion::MODERN), true),
                },
            }
        };
        // A close never probes: it ends what runs, whatever its era.
        let probe_first = config.is_stdio()
            && open
            && modern.is_some()
            && (session.era().is_none() || restarting)
            && !matches!(action, Action::Probe | Action::Close);
        // Streamable HTTP refused may be HTTP+SSE (the spec's backwards compatibility).
        let sse = match !config.is_stdio()
            && !session.speaks_sse()
            && config.http_transport() == crate::transport::HttpTransport::Auto
        {
            true => SseFallback::Open,
            false => SseFallback::Closed,
        };
        Self {
            modern,
            version_retried: false,
            open,
            probe_first,
            sse,
        }
    }

    /// The modern version spoken, or `None` in the legacy era.
    pub(super) fn modern(&self) -> Option<ProtocolVersion> {
        self.modern
    }

    /// Whether the operation may still change era.
    pub(super) fn is_open(&self) -> bool {
        self.open
    }

    /// Whether a refused legacy `initialize` may still move the session to HTTP+SSE.
    pub(super) fn may_find_sse(&self) -> bool {
        self.sse == SseFallback::Open
    }

    /// The status of the `initialize` POST whose refusal moved this operation to HTTP+SSE,
    /// when one did: a GET that opens no event stream then means neither transport is there.
    pub(super) fn sse_found_after(&self) -> Option<u16> {
        match self.sse {
            SseFallback::Taken(status) => Some(status),
            SseFallback::Open | SseFallback::Closed => None,
        }
    }

    /// Whether the stdio probe goes out before the work.
    pub(super) fn probes_first(&self) -> bool {
        self.probe_first
    }

    /// The stdio probe was answered: the server is modern; the work goes out.
    pub(super) fn probed(&mut self) {
        self.probe_first = false;
    }

    /// A request of this era was answered: the era is the server's, for the session to keep.
    pub(super) fn confirm(&mut self) -> Era {
        self.open = false;
        if self.modern.is_some() {
            Era::Modern
        } else {
            Era::Legacy
        }
    }

    /// The answer to a request was the JSON-RPC error `code` (with `data`), under HTTP
    /// `status`: the move it makes, or `None` when the error is the operation's result.
    pub(super) fn reconsider(
        &mut self,
        code: i64,
        data: Option<&Value>,
        status: u16,
        answers: LegKind,
        stdio: bool,
    ) -> Option<Move> {
        if self.modern.is_none() {
            // A legacy request refused the way only a modern server refuses.
            if !(self.open && is_modern_error(code)) {
                return None;
            }
            let version = supported_version(data)
                .filter(|v| v.is_modern())
                .unwrap_or(ProtocolVersion::MODERN);
            return Some(self.move_forward(version));
        }
        if code == UNSUPPORTED_PROTOCOL_VERSION && !self.version_retried {
            return match supported_version(data) {
                // A modern server: the same request goes out again, with a new id.
                Some(version) if version.is_modern() => {
                    self.version_retried = true;
                    self.modern = Some(version);
                    Some(Move::Retry)
                }
                Some(_) if self.open => Some(self.fall_back()),
                _ => None,
            };
        }
        if is_modern_error(code) {
            return None;
        }
        // The stdio rule, on HTTP too: a probe the server does not know is a legacy one. Over
        // stdio, any error to the probe that is not a modern one means legacy (a legacy server
        // refuses anything before `initialize`).
        if answers == LegKind::Discover && self.open && (code == METHOD_NOT_FOUND || stdio) {
            return Some(self.fall_back());
        }
        // A JSON-RPC error under 404 or 405 is a server that speaks JSON-RPC there and refused
        // the request on its merits (a modern "not found"); only a 400 (what legacy servers
        // answer a request without a session) explained by a non-modern error means legacy.
        if status == 400 {
            self.after_refusal(status, answers)
        } else {
            None
        }
    }

    /// A refusal with HTTP `status` that carried no modern error. In an operation still
    /// detecting its era, a `400`, `404` or `405` is a legacy server's.
    /// A legacy `initialize` so refused is the spec's sign of an HTTP+SSE server (`refused`
    /// is the request the refusal answered).
    pub(super) fn after_refusal(&mut self, status: u16, refused: LegKind) -> Option<Move> {
        if !is_legacy_refusal(status) {
            return None;
        }
        if self.modern.is_some() {
            return self.open.then(|| self.fall_back());
        }
        if refused == LegKind::Initialize && self.may_find_sse() {
            self.sse = SseFallback::Taken(status);
            return Some(Move::ToSse);
        }
        None
    }

    /// Acts on `moved`, which a request's answer made: the era is the server's (the session
    /// keeps it). True when the operation now speaks another era and its attempt starts over
    /// (a modern one has no session, and no claim to one); false when the same request goes
    /// out again.
    pub(super) fn moved(&mut self, moved: Move, session: &mut View) -> bool {
        session.set_era(self.confirm());
        if moved == Move::ToModern {
            session.reset();
            session.release_claim();
        }
        if moved == Move::ToSse {
            // No session to wait for: this operation's stream will carry its own.
            session.release_claim();
            session.learn_sse();
        }
        moved != Move::Retry
    }

    fn fall_back(&mut self) -> Move {
        self.modern = None;
        self.probe_first = false;
        Move::ToLegacy
    }

    fn move_forward(&mut self, version: ProtocolVersion) -> Move {
        self.modern = Some(version);
        Move::ToModern
    }
}
