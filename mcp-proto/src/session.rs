//! A session with one MCP server: what the handshake established, kept between operations.
//!
//! A [`Session`] outlives operations. It remembers the session id, the negotiated protocol
//! version and the server's info so a later operation can skip the handshake, and it hands out
//! request ids that are unique for its lifetime. It is state, not behaviour: operations
//! (started with [`Session::call_tool`] and its siblings, see [`Operation`](crate::Operation))
//! borrow it mutably while they run and commit a handshake only once it has fully succeeded.
//! This module must never depend on the operation's internals.

use std::collections::HashMap;

use crate::config::SessionConfig;
use crate::deadline::OperationDeadline;
use crate::headers::ParamHeader;
use crate::model::{Era, ProtocolVersion, SessionInfo};

/// A session with one server.
///
/// It outlives operations: it remembers the session id, the negotiated protocol version and
/// the server's info so a later operation can skip the handshake, and it hands out request
/// ids unique for its lifetime. Operations ([`Session::call_tool`] and its siblings) borrow it
/// mutably while they run and commit a handshake only once it has fully succeeded.
#[derive(Debug)]
pub struct Session {
    config: SessionConfig,
    established: Option<SessionInfo>,
    next_request_id: i64,
    /// The `x-mcp-header` annotations of each tool of the last modern listing.
    tool_headers: HashMap<String, Vec<ParamHeader>>,
    /// The server's era, once an operation found it out.
    era: Option<Era>,
}

impl Session {
    /// A session that has not talked to the server yet.
    pub fn new(config: SessionConfig) -> Self {
        Self {
            config,
            established: None,
            next_request_id: 1,
            tool_headers: HashMap::new(),
            era: None,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &SessionConfig {
        &self.config
    }

    /// What the last successful handshake established, while the session is live.
    pub fn info(&self) -> Option<&SessionInfo> {
        self.established.as_ref()
    }

    /// The era the server speaks, as the last operation found it (`None` before any answer,
    /// when the configuration detects it). Kept across [`reset`](Self::reset): it is a
    /// property of the server, not of the session.
    pub fn era(&self) -> Option<Era> {
        self.era
    }

    pub(crate) fn set_era(&mut self, era: Era) {
        self.era = Some(era);
    }

    /// Forgets the session: the next operation starts with a fresh handshake.
    ///
    /// This does not tell the server; to end the session there, run [`Session::close`].
    pub fn reset(&mut self) {
        self.established = None;
    }

    /// A deadline of the configured budget, opened at `now`.
    pub fn default_deadline(&self, now: std::time::Instant) -> OperationDeadline {
        OperationDeadline::start(now, self.config.budget(), self.config.resolution())
    }

    pub(crate) fn take_request_id(&mut self) -> i64 {
        let id = self.next_request_id;
        self.next_request_id = self.next_request_id.saturating_add(1);
        id
    }

    /// Remembers the header annotations of a listing's tools, for the calls that follow.
    pub(crate) fn remember_tool_headers(&mut self, headers: HashMap<String, Vec<ParamHeader>>) {
        self.tool_headers = headers;
    }

    /// The header annotations of tool `name`, as the last listing gave them.
    pub(crate) fn tool_headers(&self, name: &str) -> &[ParamHeader] {
        self.tool_headers.get(name).map_or(&[], Vec::as_slice)
    }

    pub(crate) fn establish(&mut self, info: SessionInfo) {
        self.established = Some(info);
    }

    /// The version offered in `initialize`: the pinned one when it is legacy, else the newest
    /// legacy one.
    pub(crate) fn offered_version(&self) -> ProtocolVersion {
        match self.config.protocol_version() {
            Some(version) if !version.is_modern() => version,
            _ => ProtocolVersion::LATEST,
        }
    }
}
