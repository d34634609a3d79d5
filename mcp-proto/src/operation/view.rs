//! What an operation knows of its session: a copy taken when it started, kept current by the
//! operation itself, and every change it makes queued for the session as a
//! [`SessionUpdate`].
//!
//! The operation reads and writes this copy as if it were the session; the session is never
//! borrowed. Updates go out first from [`poll_output`](super::Operation::poll_output), so the
//! driver applies them before anything else the operation does. This module decides nothing:
//! it records and reports.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use mcp_auth::{AccessToken, Entropy};

use crate::config::SessionConfig;
use crate::model::{Era, ProtocolVersion, SessionInfo};
use crate::session::{
    Claim, Known, Learned, Session, SessionUpdate, TaskTools, ToolHeaders, ToolSchemas,
};
use crate::transport::Framer;

/// The operation's copy of its session, and what it learned that the session has not seen.
#[derive(Debug)]
pub(super) struct View {
    known: Known,
    /// Held while this operation establishes the session (see [`Session::is_establishing`]).
    claim: Option<Arc<Claim>>,
    /// Held while this operation authorizes for the session.
    auth_claim: Option<Arc<Claim>>,
    updates: VecDeque<SessionUpdate>,
}

impl View {
    /// The copy of what the session knew when the operation started ([`Session::lend`]).
    pub(super) fn of(known: Known) -> Self {
        Self {
            known,
            claim: None,
            auth_claim: None,
            updates: VecDeque::new(),
        }
    }

    fn learned(&mut self, learned: Learned) {
        self.updates.push_back(SessionUpdate(learned));
    }

    /// What an authorization asks the session's credential store to remember or forget.
    pub(super) fn remember(&mut self, change: mcp_auth::CredentialChange) {
        self.learned(Learned::Credentials(change));
    }

    /// The next update for the session.
    pub(super) fn next_update(&mut self) -> Option<SessionUpdate> {
        self.updates.pop_front()
    }

    pub(super) fn config(&self) -> &SessionConfig {
        &self.known.config
    }

    /// Whether the session speaks HTTP+SSE (configured, or found by this operation or an
    /// earlier one).
    pub(super) fn speaks_sse(&self) -> bool {
        self.known.sse && !self.known.config.is_stdio()
    }

    /// The URL refused Streamable HTTP: it speaks HTTP+SSE, and the session keeps that.
    pub(super) fn learn_sse(&mut self) {
        if !self.known.sse {
            self.known.sse = true;
            self.learned(Learned::SpeaksSse(true));
        }
    }

    /// The GET after a refused `initialize` opened no event stream: the URL does not speak
    /// HTTP+SSE after all, and the next operation tries Streamable HTTP again.
    pub(super) fn unlearn_sse(&mut self) {
        if self.known.sse && self.known.config.http_transport() != crate::HttpTransport::Sse {
            self.known.sse = false;
            self.learned(Learned::SpeaksSse(false));
        }
    }

    /// Whether a message can be POSTed now: over HTTP+SSE only once the stream named its
    /// endpoint (an answer to a request the stream brought before that waits for it, as every
    /// message does: it has nowhere to go yet).
    pub(super) fn can_post(&self) -> bool {
        !self.speaks_sse() || self.endpoint().is_some()
    }

    /// Over HTTP+SSE: where messages go, while the session's event stream is open.
    pub(super) fn endpoint(&self) -> Option<&http::Uri> {
        self.known.endpoint.as_deref()
    }

    /// Over HTTP+SSE: the session's new event stream named `endpoint` (checked against the
    /// URL's origin): a new session on the server, its handshake to come.
    pub(super) fn open_stream(&mut self, endpoint: http::Uri) {
        let endpoint = Arc::new(endpoint);
        self.known.endpoint = Some(Arc::clone(&endpoint));
        self.known.established = None;
        self.learned(Learned::StreamOpened(endpoint));
    }

    /// Over HTTP+SSE: the session's event stream is gone (it ended, or the server forgot its
    /// session), and the server's session with it: the next operation opens another.
    pub(super) fn close_stream(&mut self) {
        self.known.established = None;
        if self.known.endpoint.take().is_some() {
            self.learned(Learned::StreamClosed);
        }
    }

    pub(super) fn info(&self) -> Option<&SessionInfo> {
        self.known.established.as_deref()
    }

    pub(super) fn set_era(&mut self, era: Era) {
        if self.known.era != Some(era) {
            self.known.era = Some(era);
            self.learned(Learned::Era(era));
        }
    }

    /// The session this operation used is gone (the server forgot it, it was closed, or the
    /// server is a modern one): forget it, and tell the session which one it was.
    pub(super) fn reset(&mut self) {
        if let Some(info) = self.known.established.take() {
            self.learned(Learned::Lost(info.session_id.clone()));
        }
    }

    /// A handshake this operation ran is committed: the session is live, and the claim over.
    pub(super) fn establish(&mut self, info: SessionInfo) {
        let info = Arc::new(info);
        self.known.established = Some(Arc::clone(&info));
        // The claim ends when the session has applied this, not before.
        let claim = self.claim.take();
        self.learned(Learned::Established(info, claim));
    }

    /// Takes the session's current state after waiting for it: its live session, else the
    /// claim to establish one. Returns false while another operation holds the claim.
    pub(super) fn take_session(&mut self, session: &mut Session) -> bool {
        if self.claim.is_some() {
            // This operation is the one establishing it (its handshake met a lost session).
            self.known.established = None;
            return true;
        }
        // Whoever established the session may have authorized for it too.
        self.take_token(session);
        // Another operation found the URL speaks HTTP+SSE: this one goes on over it, on the
        // session's stream when one is open, else on one it opens.
        if session.speaks_sse() {
            self.known.sse = true;
            self.known.endpoint = session.stream_endpoint();
            self.known.established = session.established().cloned();
            return true;
        }
        if let Some(info) = session.established() {
            self.known.established = Some(Arc::clone(info));
            return true;
        }
        self.known.established = None;
        match session.claim_handshake() {
            Some(claim) => {
                self.claim = Some(claim);
                true
            }
            None => false,
        }
    }

    /// Takes the session's token (and its DPoP nonce) when it is another than this
    /// operation's: one another operation obtained meanwhile. Returns whether it did.
    pub(super) fn take_token(&mut self, session: &Session) -> bool {
        let Some(token) = session.token() else {
            return false;
        };
        if self.known.token.as_ref() == Some(token) {
            return false;
        }
        self.known.token = Some(token.clone());
        self.known.dpop_nonce = session.dpop_nonce().cloned();
        true
    }

    /// Claims the authorization for this operation, unless another operation is running one.
    pub(super) fn claim_authorization(&mut self, session: &mut Session) -> bool {
        if self.auth_claim.is_none() {
            self.auth_claim = session.claim_authorization();
        }
        self.auth_claim.is_some()
    }

    /// The operation no longer establishes the session (it ended, or moved to the modern era).
    pub(super) fn release_claim(&mut self) {
        self.claim = None;
    }

    pub(super) fn remember_tool_headers(&mut self, headers: ToolHeaders) {
        let headers = Arc::new(headers);
        self.known.tool_headers = Arc::clone(&headers);
        self.learned(Learned::ToolHeaders(headers));
    }

    pub(super) fn remember_task_tools(&mut self, tools: TaskTools) {
        let tools = Arc::new(tools);
        self.known.task_tools = Some(Arc::clone(&tools));
        self.learned(Learned::TaskTools(tools));
    }

    pub(super) fn remember_tool_schemas(&mut self, schemas: ToolSchemas) {
        let schemas = Arc::new(schemas);
        self.known.tool_schemas = Some(Arc::clone(&schemas));
        self.learned(Learned::ToolSchemas(Some(schemas)));
    }

    /// What the operation hands the caller, seen on its way: a server that says its tools
    /// changed (`notifications/tools/list_changed`) makes the output schemas of its last
    /// listing unknown, so no result is held to a stale one (and `Always` lists them anew).
    pub(super) fn heard(&mut self, event: &crate::Event) {
        let crate::Event::Notification(notification) = event else {
            return;
        };
        if notification.method == "notifications/tools/list_changed"
            && self.known.tool_schemas.take().is_some()
        {
            self.learned(Learned::ToolSchemas(None));
        }
    }

    /// What the last tools listing declared of outputs (`None`: no listing was read).
    pub(super) fn tool_schemas(&self) -> Option<&ToolSchemas> {
        self.known.tool_schemas.as_deref()
    }

    /// Whether the tool `name` runs as a task, as the last tools listing said (`None`: no
    /// listing was read).
    pub(super) fn task_support(&self, name: &str) -> Option<crate::task::TaskSupport> {
        let tools = self.known.task_tools.as_ref()?;
        Some(
            tools
                .get(name)
                .copied()
                .unwrap_or(crate::task::TaskSupport::Forbidden),
        )
    }

    pub(super) fn tool_headers(&self, name: &str) -> &[crate::headers::ParamHeader] {
        self.known.tool_headers.get(name).map_or(&[], Vec::as_slice)
    }

    pub(super) fn token(&self) -> Option<&AccessToken> {
        self.known.token.as_ref()
    }

    /// An authorization this operation ran obtained `token`: the session gets it, and the
    /// operations waiting for it are let go.
    pub(super) fn set_token(&mut self, token: AccessToken) {
        self.known.set_token(token.clone());
        // The claim ends when the session has the token, not before.
        let claim = self.auth_claim.take();
        self.learned(Learned::Token(token, claim));
    }

    pub(super) fn forget_token(&mut self) {
        self.known.dpop_nonce = None;
        if let Some(token) = self.known.token.take() {
            self.learned(Learned::TokenRefused(token));
        }
    }

    pub(super) fn set_dpop_nonce(&mut self, nonce: String) {
        self.known.dpop_nonce = Some(nonce.clone());
        self.learned(Learned::DpopNonce(nonce));
    }

    /// What presenting the token takes: the token, the server's DPoP nonce, the random source.
    pub(super) fn presenting(
        &mut self,
    ) -> Option<(&AccessToken, Option<&str>, Option<&mut dyn Entropy>)> {
        let token = self.known.token.as_ref()?;
        let entropy = self.known.entropy.as_mut().map(|e| e as &mut dyn Entropy);
        Some((token, self.known.dpop_nonce.as_deref(), entropy))
    }

    pub(super) fn entropy(&mut self) -> Option<&mut dyn Entropy> {
        self.known.entropy.as_mut().map(|e| e as &mut dyn Entropy)
    }

    /// The time of day at `now`, reckoned from the driver's last reading.
    pub(super) fn time_of_day(&self, now: Instant) -> SystemTime {
        self.known.time_of_day(now)
    }

    /// The server process started: a fresh process has no session.
    pub(super) fn process_started(&mut self) {
        self.known.process_running = true;
        self.known.established = None;
        self.learned(Learned::ProcessStarted);
    }

    /// The server process is gone: so is its session.
    pub(super) fn process_exited(&mut self) {
        self.known.process_running = false;
        self.known.established = None;
        self.learned(Learned::ProcessExited);
    }

    /// Puts the session's token on an MCP request (never on an auth leg: those go to other
    /// endpoints, built by the flow): `Authorization`, and for a DPoP-bound token a fresh
    /// proof of possession for this request (with the server's last nonce).
    pub(super) fn present_token(&mut self, request: &mut http::Request<Vec<u8>>, now: Instant) {
        let wall = self.time_of_day(now);
        let Some((token, nonce, entropy)) = self.presenting() else {
            return;
        };
        let method = request.method().clone();
        let url = request.uri().to_string();
        let headers = match entropy {
            Some(entropy) => token.authorization_headers(&method, &url, nonce, wall, entropy),
            // Without a random source no proof can be made; a bearer token needs none.
            None if !token.is_dpop_bound() => Ok(vec![(
                http::header::AUTHORIZATION,
                token.authorization_header(),
            )]),
            None => return,
        };
        // A proof that cannot be made (an unusable URL) leaves the request without it: the
        // server's refusal then says so.
        for (name, value) in headers.unwrap_or_default() {
            request.headers_mut().insert(name, value);
        }
    }

    /// Remembers a fresh DPoP nonce a response of the MCP server carried.
    pub(super) fn note_dpop_nonce(&mut self, headers: &http::HeaderMap) {
        // A name made once: a `&str` is parsed again at every look.
        const DPOP_NONCE: http::HeaderName = http::HeaderName::from_static("dpop-nonce");
        let Some(nonce) = headers.get(DPOP_NONCE).and_then(|v| v.to_str().ok()) else {
            return;
        };
        if self.token().is_some_and(AccessToken::is_dpop_bound) {
            self.set_dpop_nonce(nonce.to_owned());
        }
    }

    /// The operation ended: its claims are over and, over stdio, the stdout `framer` it was
    /// lent (with any partial line in it) goes back to the session for the next operation.
    pub(super) fn hand_back(&mut self, framer: Option<Framer>) {
        self.claim = None;
        self.auth_claim = None;
        // An HTTP+SSE stream that broke its format can carry nothing more: the next operation
        // opens another.
        if framer.as_ref().is_some_and(Framer::is_broken) {
            self.close_stream();
        }
        if let Some(framer) = framer {
            self.learned(Learned::Stdout(framer));
        }
    }

    pub(super) fn take_request_id(&self) -> i64 {
        self.known.ids.take()
    }

    pub(super) fn offered_version(&self) -> ProtocolVersion {
        Session::offered_version(&self.known.config)
    }
}
