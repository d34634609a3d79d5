//! A session with one MCP server: what the handshake established, kept between operations.
//!
//! A [`Session`] outlives operations. It remembers the session id, the negotiated protocol
//! version and the server's info so a later operation can skip the handshake, and it hands out
//! request ids that are unique for its lifetime. It is state, not behaviour: operations
//! (started with [`Session::call_tool`] and its siblings, see [`Operation`](crate::Operation))
//! borrow it mutably while they run and commit a handshake only once it has fully succeeded.
//! This module must never depend on the operation's internals.

use std::collections::HashMap;
use std::time::{Instant, SystemTime};

use mcp_auth::{AccessToken, Entropy};

use crate::config::SessionConfig;
use crate::deadline::OperationDeadline;
use crate::headers::ParamHeader;
use crate::model::{Era, ProtocolVersion, SessionInfo};
use crate::transport::LineFramer;

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
    /// The access token every MCP request carries, once an authorization obtained one.
    token: Option<AccessToken>,
    /// The MCP server's last DPoP nonce (RFC 9449 9), for the proofs of a DPoP-bound token.
    dpop_nonce: Option<String>,
    /// Where authorizations draw their randomness (PKCE, `state`, keys): the driver's.
    entropy: Option<EntropySource>,
    /// An instant and the time of day at it, given by the driver: the time of day at any
    /// later instant is reckoned from it (signed assertions carry one).
    time_of_day: Option<(Instant, SystemTime)>,
    /// Over stdio: whether the server process runs, and its stdout cut into lines.
    process_running: bool,
    framer: LineFramer,
}

/// The driver's random source, boxed; `Debug` shows nothing of it.
struct EntropySource(Box<dyn Entropy + Send>);

impl EntropySource {
    fn get(&mut self) -> &mut dyn Entropy {
        self.0.as_mut()
    }
}

impl std::fmt::Debug for EntropySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EntropySource")
    }
}

impl Session {
    /// A session that has not talked to the server yet.
    pub fn new(config: SessionConfig) -> Self {
        let framer = LineFramer::new(config.body_cap());
        Self {
            process_running: false,
            framer,
            config,
            established: None,
            next_request_id: 1,
            tool_headers: HashMap::new(),
            era: None,
            token: None,
            dpop_nonce: None,
            entropy: None,
            time_of_day: None,
        }
    }

    /// Gives authorizations their random source (PKCE verifiers, `state`, keys). Drivers
    /// fill it from the operating system's CSPRNG when they create the session; an
    /// authorization without one ends with an error rather than guessable values.
    pub fn set_entropy(&mut self, entropy: Box<dyn Entropy + Send>) {
        self.entropy = Some(EntropySource(entropy));
    }

    /// Tells the session the time of day at `now` (drivers call it when an operation
    /// starts). What goes on the wire with a time of day (the `iat` of a signed assertion)
    /// is reckoned from the last reading; without one, from the Unix epoch.
    pub fn set_time_of_day(&mut self, now: Instant, wall: SystemTime) {
        self.time_of_day = Some((now, wall));
    }

    /// Over stdio: whether the server process is running (started by an operation and not
    /// seen to exit since). The next operation starts one when it is not.
    pub fn process_running(&self) -> bool {
        self.process_running
    }

    /// The server process started: a fresh process has no session and no partial line.
    pub(crate) fn process_started(&mut self) {
        self.process_running = true;
        self.framer.reset();
        self.established = None;
    }

    /// The server process is gone: so are its session and its partial line.
    pub(crate) fn process_exited(&mut self) {
        self.process_running = false;
        self.framer.reset();
        self.established = None;
    }

    pub(crate) fn framer(&mut self) -> &mut LineFramer {
        &mut self.framer
    }

    /// The access token the session's requests carry, if an authorization obtained one.
    pub fn token(&self) -> Option<&AccessToken> {
        self.token.as_ref()
    }

    /// Sets the token the session's requests carry (one the caller obtained elsewhere, or
    /// kept from an earlier session).
    pub fn set_token(&mut self, token: AccessToken) {
        self.token = Some(token);
        self.dpop_nonce = None;
    }

    /// Forgets the token: the next request goes without one (and a 401 starts an
    /// authorization).
    pub fn forget_token(&mut self) {
        self.token = None;
        self.dpop_nonce = None;
    }

    pub(crate) fn set_dpop_nonce(&mut self, nonce: String) {
        self.dpop_nonce = Some(nonce);
    }

    /// What presenting the token takes: the token, the server's DPoP nonce, the random source.
    pub(crate) fn presenting(
        &mut self,
    ) -> Option<(&AccessToken, Option<&str>, Option<&mut dyn Entropy>)> {
        let token = self.token.as_ref()?;
        let entropy = self.entropy.as_mut().map(EntropySource::get);
        Some((token, self.dpop_nonce.as_deref(), entropy))
    }

    pub(crate) fn entropy(&mut self) -> Option<&mut dyn Entropy> {
        self.entropy.as_mut().map(EntropySource::get)
    }

    /// The time of day at `now`, reckoned from the driver's last reading.
    pub(crate) fn time_of_day(&self, now: Instant) -> SystemTime {
        let Some((at, wall)) = self.time_of_day else {
            return SystemTime::UNIX_EPOCH;
        };
        match now.checked_duration_since(at) {
            Some(later) => wall.checked_add(later).unwrap_or(wall),
            None => wall.checked_sub(at.duration_since(now)).unwrap_or(wall),
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
