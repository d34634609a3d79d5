//! A session with one MCP server: what operations established, kept between them and shared
//! by every operation in flight on it.
//!
//! A [`Session`] outlives operations. It remembers the session id, the negotiated protocol
//! version and the server's info so a later operation can skip the handshake, the server's
//! era, the access token, and it hands out request ids unique for its lifetime.
//!
//! It is state, not behaviour, and it is never borrowed by an operation: an
//! [`Operation`](crate::driver::Operation) starts from a copy of what the session knows (and a share of
//! its request-id counter), and reports what it learns (a committed handshake, a session the
//! server forgot, the era, a token) as [`SessionUpdate`]s, which the driver hands to
//! [`Session::apply`]. So any number of operations can be in flight on one session, each
//! under its own budget: the driver keeps the session where every operation's task can reach
//! it (behind a lock when they run in parallel) and applies updates in the order they come.
//!
//! One handshake at a time: an operation that needs a session while another is establishing
//! one waits for it ([`Output::AwaitSession`](crate::driver::Output::AwaitSession)), inside
//! its own budget, and takes it with
//! [`Input::Session`](crate::driver::Input::Session). This module must never
//! depend on the operation's internals.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Instant, SystemTime};

use mcp_auth::{AccessToken, Entropy};

use crate::config::SessionConfig;
use crate::deadline::OperationDeadline;
use crate::headers::ParamHeader;
use crate::model::{Era, ProtocolVersion, SessionInfo};
use crate::transport::Framer;

/// The `x-mcp-header` annotations of each tool of the last modern listing.
pub(crate) type ToolHeaders = HashMap<String, Vec<ParamHeader>>;
/// The tools that may run as tasks (2025-11-25 `execution.taskSupport`), by name: a tool not
/// in it is forbidden.
pub(crate) type TaskTools = HashMap<String, crate::task::TaskSupport>;
/// The `outputSchema` of each tool of the last listing that declared one, by name.
pub(crate) type ToolSchemas = HashMap<String, Arc<crate::schema::Declared>>;

/// A session with one server.
///
/// It outlives operations: it remembers the session id, the negotiated protocol version and
/// the server's info so a later operation can skip the handshake, and it hands out request
/// ids unique for its lifetime. Operations ([`Session::call_tool`] and its siblings) start
/// from a copy of it and report what they learn as [`SessionUpdate`]s for
/// [`apply`](Self::apply): any number of operations can be in flight on one session, one
/// of them establishing it while the others that need it wait (see
/// [`Output::AwaitSession`](crate::driver::Output::AwaitSession)).
#[derive(Debug)]
pub struct Session {
    known: Known,
    /// Over stdio: the server's stdout cut into lines, lent to the operation that runs
    /// (stdio operations take turns); `None` while lent.
    framer: Option<Framer>,
    /// The operation establishing the session, while it does: it holds the claim, and the
    /// claim ends when that operation commits, gives up or is dropped.
    handshake: Weak<Claim>,
    /// The operation running an authorization, while it does (the same kind of claim): the
    /// others the server refused wait for its token.
    authorizing: Weak<Claim>,
}

/// What a session knows, and what an operation starts from: a copy of it, cheap to take
/// (what may be large is shared behind an `Arc`).
#[derive(Debug, Clone)]
pub(crate) struct Known {
    pub(crate) config: Arc<SessionConfig>,
    /// What the last committed handshake established, while the session is live.
    pub(crate) established: Option<Arc<SessionInfo>>,
    pub(crate) ids: RequestIds,
    pub(crate) tool_headers: Arc<ToolHeaders>,
    /// What the last tools listing said of tasks (`None`: no listing was read yet).
    pub(crate) task_tools: Option<Arc<TaskTools>>,
    /// What the last tools listing declared of outputs (`None`: no listing was read yet).
    pub(crate) tool_schemas: Option<Arc<ToolSchemas>>,
    /// The server's era, once an operation found it out.
    pub(crate) era: Option<Era>,
    /// The access token every MCP request carries, once an authorization obtained one.
    pub(crate) token: Option<AccessToken>,
    /// The MCP server's last DPoP nonce (RFC 9449 9), for the proofs of a DPoP-bound token.
    pub(crate) dpop_nonce: Option<String>,
    /// Where authorizations draw their randomness (PKCE, `state`, keys): the driver's.
    pub(crate) entropy: Option<SharedEntropy>,
    /// An instant and the time of day at it, given by the driver: the time of day at any
    /// later instant is reckoned from it (signed assertions carry one).
    pub(crate) time_of_day: Option<(Instant, SystemTime)>,
    /// Over stdio: whether the server process runs.
    pub(crate) process_running: bool,
    /// Over HTTP: whether the session speaks the HTTP+SSE transport (configured, or found).
    pub(crate) sse: bool,
    /// Over HTTP+SSE: where messages go, while the session's event stream is open (the
    /// driver holds the stream itself).
    pub(crate) endpoint: Option<Arc<http::Uri>>,
}

impl Known {
    /// Presents `token` from now on; a nonce of the last token's server does not carry over.
    pub(crate) fn set_token(&mut self, token: AccessToken) {
        self.token = Some(token);
        self.dpop_nonce = None;
    }

    /// Presents no token from now on.
    pub(crate) fn forget_token(&mut self) {
        self.token = None;
        self.dpop_nonce = None;
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
}

/// What an operation learned about its session, for [`Session::apply`]: a handshake it
/// committed, a session the server forgot, the server's era, a token it obtained or saw
/// refused, a server process that started or ended.
///
/// Opaque: a driver applies every update to the session the operation runs on, in the order
/// the operation handed them out, before it polls that operation again. `Debug` shows what
/// was learned, never a token.
#[must_use = "an update the session never sees leaves the next operations in the dark"]
pub struct SessionUpdate(pub(crate) Learned);

/// What an operation can learn.
pub(crate) enum Learned {
    /// A handshake was committed: the session is live with this info. The claim of the
    /// operation that ran it rides along and ends once the session has the info, so no other
    /// operation finds neither a live session nor a claim in between.
    Established(Arc<SessionInfo>, Option<Arc<Claim>>),
    /// The session the operation used (its id, when it had one) is gone: the server forgot
    /// it, it was closed, or the server turned out to speak the modern era.
    Lost(Option<String>),
    /// The server speaks this era.
    Era(Era),
    /// The header annotations of the tools of a modern listing.
    ToolHeaders(Arc<ToolHeaders>),
    TaskTools(Arc<TaskTools>),
    /// The output schemas of the tools of a listing (`None`: the server said its tools
    /// changed, so they are not known any more).
    ToolSchemas(Option<Arc<ToolSchemas>>),
    /// An authorization obtained this token (its claim rides along, as with `Established`).
    Token(AccessToken, Option<Arc<Claim>>),
    /// The server refused this token.
    TokenRefused(AccessToken),
    /// The MCP server's DPoP nonce.
    DpopNonce(String),
    /// Over stdio: the server process started.
    ProcessStarted,
    /// Over stdio: the server process ended.
    ProcessExited,
    /// Over stdio (or HTTP+SSE): the stream's framer, handed back when the operation ends.
    Stdout(Framer),
    /// Over HTTP+SSE: the session's event stream named this endpoint (a new stream: a new
    /// session on the server, its handshake still to come).
    StreamOpened(Arc<http::Uri>),
    /// Over HTTP+SSE: the session's event stream is gone, and the server's session with it.
    StreamClosed,
    /// The URL refused Streamable HTTP and speaks the HTTP+SSE transport (or, `false`, it
    /// does not after all).
    SpeaksSse(bool),
    /// An authorization obtained (or spent) a registration or tokens: written to the OAuth
    /// client's credential store when the update is applied, outside any poll.
    Credentials(mcp_auth::CredentialChange),
}

impl fmt::Debug for SessionUpdate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match &self.0 {
            Learned::Established(info, _) => {
                return f
                    .debug_tuple("Established")
                    .field(&info.protocol_version)
                    .finish();
            }
            Learned::Lost(_) => "Lost",
            Learned::Era(Era::Modern) => "Era(Modern)",
            Learned::Era(Era::Legacy) => "Era(Legacy)",
            Learned::ToolHeaders(_) => "ToolHeaders",
            Learned::TaskTools(_) => "TaskTools",
            Learned::ToolSchemas(_) => "ToolSchemas",
            Learned::Token(..) => "Token",
            Learned::TokenRefused(_) => "TokenRefused",
            Learned::DpopNonce(_) => "DpopNonce",
            Learned::ProcessStarted => "ProcessStarted",
            Learned::ProcessExited => "ProcessExited",
            Learned::Stdout(_) => "Stdout",
            Learned::StreamOpened(_) => "StreamOpened",
            Learned::StreamClosed => "StreamClosed",
            Learned::SpeaksSse(_) => "SpeaksSse",
            Learned::Credentials(_) => "Credentials",
        };
        f.write_str(what)
    }
}

/// The claim of the operation that establishes the session, or that authorizes for it (see
/// [`Session`]'s `handshake` and `authorizing`): it ends when that operation lets it go or is
/// dropped.
#[derive(Debug)]
pub(crate) struct Claim;

/// The request-id counter, shared by the session and its operations: ids are unique for the
/// session's lifetime whichever operation takes them.
#[derive(Debug, Clone, Default)]
pub(crate) struct RequestIds(Arc<AtomicI64>);

impl RequestIds {
    /// The next id (the first is 1).
    pub(crate) fn take(&self) -> i64 {
        self.0.fetch_add(1, Ordering::Relaxed).saturating_add(1)
    }
}

/// The driver's random source, shared by the operations that draw from it; `Debug` shows
/// nothing of it.
#[derive(Clone)]
pub(crate) struct SharedEntropy(Arc<Mutex<Box<dyn Entropy + Send>>>);

impl Entropy for SharedEntropy {
    fn fill(&mut self, buf: &mut [u8]) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .fill(buf);
    }
}

impl fmt::Debug for SharedEntropy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SharedEntropy")
    }
}

impl Session {
    /// A session that has not talked to the server yet.
    pub fn new(config: SessionConfig) -> Self {
        let framer = match config.is_stdio() {
            true => Framer::lines(config.body_cap()),
            false => Framer::events(config.body_cap()),
        };
        let sse = config.http_transport() == crate::transport::HttpTransport::Sse;
        Self {
            known: Known {
                config: Arc::new(config),
                established: None,
                ids: RequestIds::default(),
                tool_headers: Arc::default(),
                task_tools: None,
                tool_schemas: None,
                era: None,
                token: None,
                dpop_nonce: None,
                entropy: None,
                time_of_day: None,
                process_running: false,
                sse,
                endpoint: None,
            },
            framer: Some(framer),
            handshake: Weak::new(),
            authorizing: Weak::new(),
        }
    }

    /// Applies what an operation learned ([`Output::Update`](crate::driver::Output::Update)). Apply
    /// every update of every operation on this session, in the order each operation hands them
    /// out; then hand the session to the operations that await it
    /// ([`Input::Session`](crate::driver::Input::Session)).
    ///
    /// An update about a session that is no longer the current one changes nothing: when two
    /// operations find the same session gone, the second finds the first's new session, not a
    /// reason to forget it; a refused token is forgotten only while it is still the session's.
    pub fn apply(&mut self, update: SessionUpdate) {
        match update.0 {
            // The claim is let go only now, with the session live.
            Learned::Established(info, _claim) => self.known.established = Some(info),
            Learned::Lost(id) => {
                if self
                    .known
                    .established
                    .as_ref()
                    .is_some_and(|i| i.session_id == id)
                {
                    self.known.established = None;
                }
            }
            Learned::Era(era) => self.known.era = Some(era),
            Learned::ToolHeaders(headers) => self.known.tool_headers = headers,
            Learned::TaskTools(tools) => self.known.task_tools = Some(tools),
            Learned::ToolSchemas(schemas) => self.known.tool_schemas = schemas,
            Learned::Token(token, _claim) => self.set_token(token),
            Learned::TokenRefused(token) => {
                if self.known.token.as_ref() == Some(&token) {
                    self.forget_token();
                }
            }
            Learned::DpopNonce(nonce) => self.known.dpop_nonce = Some(nonce),
            Learned::ProcessStarted => {
                self.known.process_running = true;
                self.known.established = None;
            }
            Learned::ProcessExited => {
                self.known.process_running = false;
                self.known.established = None;
            }
            Learned::Stdout(framer) => self.framer = Some(framer),
            Learned::StreamOpened(endpoint) => {
                self.known.endpoint = Some(endpoint);
                self.known.established = None;
            }
            Learned::StreamClosed => {
                self.known.endpoint = None;
                self.known.established = None;
            }
            Learned::SpeaksSse(sse) => self.known.sse = sse,
            Learned::Credentials(change) => {
                if let Some(oauth) = self.known.config.oauth() {
                    change.apply_to(oauth.store().as_ref());
                }
            }
        }
    }

    /// Gives authorizations their random source (PKCE verifiers, `state`, keys). Drivers
    /// fill it from the operating system's CSPRNG when they create the session; an
    /// authorization without one ends with an error rather than guessable values.
    pub fn set_entropy(&mut self, entropy: Box<dyn Entropy + Send>) {
        self.known.entropy = Some(SharedEntropy(Arc::new(Mutex::new(entropy))));
    }

    /// Tells the session the time of day at `now` (drivers call it when an operation
    /// starts). What goes on the wire with a time of day (the `iat` of a signed assertion)
    /// is reckoned from the last reading; without one, from the Unix epoch.
    pub fn set_time_of_day(&mut self, now: Instant, wall: SystemTime) {
        self.known.time_of_day = Some((now, wall));
    }

    /// Over stdio: whether the server process is running (started by an operation and not
    /// seen to exit since). The next operation starts one when it is not.
    pub fn process_running(&self) -> bool {
        self.known.process_running
    }

    /// Over HTTP: whether the session speaks the HTTP+SSE transport of 2024-11-05, configured
    /// or found by an operation whose `initialize` POST the URL refused.
    pub fn speaks_sse(&self) -> bool {
        self.known.sse && !self.known.config.is_stdio()
    }

    /// Over HTTP+SSE: whether the session's event stream is open (it named its endpoint and
    /// has not ended since). A driver keeps the stream only while this holds: once an
    /// operation ends with it false, the stream it holds is dropped.
    pub fn event_stream_open(&self) -> bool {
        self.known.endpoint.is_some()
    }

    /// The access token the session's requests carry, if an authorization obtained one.
    pub fn token(&self) -> Option<&AccessToken> {
        self.known.token.as_ref()
    }

    /// Sets the token the session's requests carry (one the caller obtained elsewhere, or
    /// kept from an earlier session).
    pub fn set_token(&mut self, token: AccessToken) {
        self.known.set_token(token);
    }

    /// Forgets the token: the next request goes without one (and a 401 starts an
    /// authorization).
    pub fn forget_token(&mut self) {
        self.known.forget_token();
    }

    /// The configuration.
    pub fn config(&self) -> &SessionConfig {
        &self.known.config
    }

    /// The configuration, shared: for a driver that keeps it past the session's lock (an
    /// operation's label and local server) without copying it.
    pub fn shared_config(&self) -> Arc<SessionConfig> {
        Arc::clone(&self.known.config)
    }

    /// What the last successful handshake established, while the session is live.
    pub fn info(&self) -> Option<&SessionInfo> {
        self.known.established.as_deref()
    }

    /// Whether an operation is establishing the session right now (the others that need it
    /// wait for that one).
    pub fn is_establishing(&self) -> bool {
        self.handshake.strong_count() > 0
    }

    /// The era the server speaks, as the last operation found it (`None` before any answer,
    /// when the configuration detects it). Kept across [`reset`](Self::reset): it is a
    /// property of the server, not of the session.
    pub fn era(&self) -> Option<Era> {
        self.known.era
    }

    /// Forgets the session: the next operation starts with a fresh handshake.
    ///
    /// This does not tell the server; to end the session there, run [`Session::close`].
    pub fn reset(&mut self) {
        self.known.established = None;
    }

    /// Speaks in the legacy session `session_id` from now on, without a handshake: the session
    /// a task belongs to, resumed from another process (what the server said of itself is not
    /// known then). Nothing changes when that session is the live one already.
    pub(crate) fn adopt(&mut self, session_id: &str) {
        let live = self.known.established.as_ref();
        if live.is_some_and(|info| info.session_id.as_deref() == Some(session_id)) {
            return;
        }
        let version = (self.known.config.protocol_version())
            .filter(|version| !version.is_modern())
            .unwrap_or(ProtocolVersion::LATEST);
        self.known.established = Some(Arc::new(SessionInfo {
            protocol_version: version,
            server: crate::model::server_info(None),
            capabilities: serde_json::Value::Object(serde_json::Map::new()),
            instructions: None,
            session_id: Some(session_id.to_owned()),
        }));
        self.known.era = Some(Era::Legacy);
    }

    /// A deadline of the configured budget, opened at `now`.
    pub fn default_deadline(&self, now: std::time::Instant) -> OperationDeadline {
        OperationDeadline::start(
            now,
            self.known.config.budget(),
            self.known.config.resolution(),
        )
    }

    /// The live session, if there is one.
    pub(crate) fn established(&self) -> Option<&Arc<SessionInfo>> {
        self.known.established.as_ref()
    }

    /// Claims the handshake for an operation, unless another holds the claim.
    pub(crate) fn claim_handshake(&mut self) -> Option<Arc<Claim>> {
        claim(&mut self.handshake)
    }

    /// Claims the authorization for an operation the server refused, unless another
    /// operation is authorizing.
    pub(crate) fn claim_authorization(&mut self) -> Option<Arc<Claim>> {
        claim(&mut self.authorizing)
    }

    /// The MCP server's last DPoP nonce, for a token an operation takes from the session.
    /// Over HTTP+SSE: the open event stream's endpoint.
    pub(crate) fn stream_endpoint(&self) -> Option<Arc<http::Uri>> {
        self.known.endpoint.clone()
    }

    pub(crate) fn dpop_nonce(&self) -> Option<&String> {
        self.known.dpop_nonce.as_ref()
    }

    /// What an operation starting now starts from: a copy of what the session knows and,
    /// over stdio, the stdout framer (with any partial line the last operation left), lent
    /// unless another operation has it (one whose turn never came, say) and handed back as an
    /// update when the operation ends.
    pub(crate) fn lend(&mut self) -> (Known, Option<Framer>) {
        let framer = if self.known.config.is_stdio() || self.speaks_sse() {
            self.framer.take()
        } else {
            None
        };
        (self.known.clone(), framer)
    }

    /// The version offered in `initialize`: the pinned one when it is legacy, else the newest
    /// legacy one.
    pub(crate) fn offered_version(config: &SessionConfig) -> ProtocolVersion {
        match config.protocol_version() {
            Some(version) if !version.is_modern() => version,
            _ => ProtocolVersion::LATEST,
        }
    }
}

/// A new claim in `slot`, unless a live one is there.
fn claim(slot: &mut Weak<Claim>) -> Option<Arc<Claim>> {
    if slot.strong_count() > 0 {
        return None;
    }
    let claim = Arc::new(Claim);
    *slot = Arc::downgrade(&claim);
    Some(claim)
}
