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
//! it. This module never decides anything about a request's content; it only moves the
//! operation's era and its next step.

use http::StatusCode;
use serde_json::Value;

use super::{LegKind, Operation, Step};
use crate::model::{Era, ProtocolVersion};
use crate::session::Session;

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

/// The era an operation starts in: `(modern version or None, whether it may still change)`.
pub(super) fn starting_era(session: &Session) -> (Option<ProtocolVersion>, bool) {
    match session.config().protocol_version() {
        Some(version) => (version.is_modern().then_some(version), false),
        None => match session.era() {
            Some(Era::Legacy) => (None, true),
            Some(Era::Modern) | None => (Some(ProtocolVersion::MODERN), true),
        },
    }
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

impl Operation {
    /// The answer to a request was the JSON-RPC error `code` (with `data`), under HTTP
    /// `status`. Returns true when that moved the operation (another version, or the other
    /// era) and the request goes out again; false when the error is the operation's result.
    pub(super) fn reconsider_era(
        &mut self,
        code: i64,
        data: Option<&Value>,
        status: u16,
        answers: LegKind,
    ) -> bool {
        if self.modern.is_none() {
            // A legacy request refused the way only a modern server refuses.
            if !(self.era_open && is_modern_error(code)) {
                return false;
            }
            let version = supported_version(data)
                .filter(|v| v.is_modern())
                .unwrap_or(ProtocolVersion::MODERN);
            self.switch_to_modern(version);
            return true;
        }
        if code == UNSUPPORTED_PROTOCOL_VERSION && !self.version_retried {
            match supported_version(data) {
                Some(version) if version.is_modern() => {
                    // A modern server: the same request goes out again, with a new id.
                    self.version_retried = true;
                    self.modern = Some(version);
                    self.era_confirmed();
                    return true;
                }
                Some(_) if self.era_open => {
                    self.fall_back_to_legacy();
                    return true;
                }
                _ => return false,
            }
        }
        if is_modern_error(code) {
            return false;
        }
        if answers == LegKind::Discover && code == METHOD_NOT_FOUND && self.era_open {
            // The stdio rule, on HTTP too: a probe the server does not know is a legacy one.
            self.fall_back_to_legacy();
            return true;
        }
        if answers == LegKind::Discover && self.era_open && self.session.config().is_stdio() {
            // Over stdio, any error to the probe that is not a modern one means legacy (a
            // legacy server refuses anything before `initialize`).
            self.fall_back_to_legacy();
            return true;
        }
        // A JSON-RPC error under 404 or 405 is a server that speaks JSON-RPC there and refused
        // the request on its merits (a modern "not found"); only a 400 (what legacy servers
        // answer a request without a session) explained by a non-modern error means legacy.
        status == 400 && self.fell_back_after(status)
    }

    /// A request of this era was answered: the era is the server's.
    pub(super) fn era_confirmed(&mut self) {
        self.era_open = false;
        let era = if self.modern.is_some() {
            Era::Modern
        } else {
            Era::Legacy
        };
        self.session.set_era(era);
    }

    /// A refusal with HTTP `status` that carried no modern error. In an operation still
    /// detecting its era, a `400`, `404` or `405` is a legacy server's: the operation falls
    /// back to the handshake. Returns whether it did.
    pub(super) fn fell_back_after(&mut self, status: u16) -> bool {
        if self.modern.is_none() || !self.era_open || !is_legacy_refusal(status) {
            return false;
        }
        self.fall_back_to_legacy();
        true
    }

    /// The server speaks the legacy era: drop the modern attempt and go through the handshake
    /// (or straight to the work on a live session), inside the same budget.
    fn fall_back_to_legacy(&mut self) {
        self.modern = None;
        self.probe_first = false;
        self.era_confirmed();
        self.start_over(super::work_or_handshake(None, &self.session));
    }

    /// The server speaks the modern era (`version`): the legacy session, if any, is gone; the
    /// work goes out as a modern request.
    fn switch_to_modern(&mut self, version: ProtocolVersion) {
        self.modern = Some(version);
        self.era_confirmed();
        self.session.reset();
        self.session.release_claim();
        self.start_over(Step::Work);
    }
}
