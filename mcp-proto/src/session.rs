//! A session with one MCP server: its configuration and what the handshake established.
//!
//! A [`Session`] outlives operations. It remembers the session id, the negotiated protocol
//! version and the server's info so a later operation can skip the handshake, and it hands out
//! request ids that are unique for its lifetime. Operations borrow it mutably while they run
//! and only commit a handshake once it has fully succeeded.

use http::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Uri};
use serde_json::{Map, Value};

use crate::deadline::{Budget, OperationDeadline, Resolution};
use crate::error::{Error, clip};
use crate::jsonrpc::RpcError;
use crate::model::{ProtocolVersion, SessionInfo};
use crate::operation::{Action, Operation};

/// The session header.
pub const SESSION_HEADER: &str = "mcp-session-id";
/// The negotiated-version header.
pub const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";
/// The longest session id this client will echo back.
pub const MAX_SESSION_ID_LEN: usize = 256;

/// How this client identifies itself in `initialize`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientInfo {
    /// `clientInfo.name`.
    pub name: String,
    /// `clientInfo.version`.
    pub version: String,
}

impl Default for ClientInfo {
    fn default() -> Self {
        Self {
            name: "mcp-proto".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
        }
    }
}

/// Everything a session needs to know before it talks to a server.
///
/// ```
/// use mcp_proto::{Budget, Resolution, SessionConfig};
/// use std::time::Duration;
///
/// let config = SessionConfig::new("https://tools.example.org/mcp")?
///     .header("Authorization", "Bearer s3cret")?
///     .budget(Budget::from_secs(30))
///     .resolution(Resolution::MILLISECOND);
/// assert_eq!(config.label(), "tools.example.org:443");
/// # Ok::<(), mcp_proto::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct SessionConfig {
    responders: Vec<(String, Responder)>,
    progress: bool,
    listen: bool,
    endpoint: Uri,
    label: String,
    headers: HeaderMap,
    budget: Budget,
    resolution: Resolution,
    body_cap: usize,
    max_pages: u32,
    client_info: ClientInfo,
}

impl SessionConfig {
    /// The default cap on one answer body (and on one event of a stream): 2 MiB.
    pub const DEFAULT_BODY_CAP: usize = 2 * 1024 * 1024;
    /// The default ceiling on pages in one tool listing.
    pub const DEFAULT_MAX_PAGES: u32 = 50;

    /// A configuration for the endpoint at `url` (`http` or `https`, with a host). The label
    /// defaults to the URL's host and port.
    pub fn new(url: &str) -> Result<Self, Error> {
        let invalid = |reason| Error::InvalidUrl {
            url: clip(url, crate::error::QUOTE_LIMIT),
            reason,
        };
        let endpoint: Uri = url.parse().map_err(|_| invalid("it is not a valid URL"))?;
        let default_port = match endpoint.scheme_str() {
            Some("http") => 80,
            Some("https") => 443,
            _ => return Err(invalid("only http and https URLs are supported")),
        };
        let host = endpoint
            .host()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| invalid("it has no host"))?;
        let label = format!("{host}:{}", endpoint.port_u16().unwrap_or(default_port));
        Ok(Self {
            responders: Vec::new(),
            progress: false,
            listen: false,
            endpoint,
            label,
            headers: HeaderMap::new(),
            budget: Budget::DEFAULT,
            resolution: Resolution::SECOND,
            body_cap: Self::DEFAULT_BODY_CAP,
            max_pages: Self::DEFAULT_MAX_PAGES,
            client_info: ClientInfo::default(),
        })
    }

    /// Names the server in every error message (default: host and port).
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }

    /// Adds a header sent on every request, e.g. `Authorization`.
    ///
    /// Headers the protocol owns (`Content-Type`, `Accept`, `Mcp-Session-Id`,
    /// `MCP-Protocol-Version`, `Last-Event-ID`, `Host`, `Content-Length`) are refused rather
    /// than silently overridden.
    pub fn header(mut self, name: &str, value: &str) -> Result<Self, Error> {
        let invalid = |reason| Error::InvalidHeader {
            name: clip(name, 100),
            reason,
        };
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| invalid("it is not a valid header name"))?;
        if [
            CONTENT_TYPE.as_str(),
            ACCEPT.as_str(),
            SESSION_HEADER,
            PROTOCOL_VERSION_HEADER,
            "last-event-id",
            "host",
            "content-length",
            "transfer-encoding",
        ]
        .contains(&name.as_str())
        {
            return Err(invalid("the MCP transport sets it itself"));
        }
        let value = HeaderValue::from_str(value)
            .map_err(|_| invalid("its value has characters a header cannot carry"))?;
        self.headers.append(name, value);
        Ok(self)
    }

    /// The budget of every operation started without an explicit deadline.
    pub fn budget(mut self, budget: Budget) -> Self {
        self.budget = budget;
        self
    }

    /// The unit grants are rounded up to.
    pub fn resolution(mut self, resolution: Resolution) -> Self {
        self.resolution = resolution;
        self
    }

    /// The cap on one answer body and on one event of a stream, in bytes (default 2 MiB).
    pub fn body_cap(mut self, bytes: usize) -> Self {
        self.body_cap = bytes.max(1);
        self
    }

    /// The ceiling on pages in one tool listing (default 50).
    pub fn max_pages(mut self, pages: u32) -> Self {
        self.max_pages = pages.max(1);
        self
    }

    /// How this client names itself in `initialize`.
    pub fn client_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.client_info = ClientInfo {
            name: name.into(),
            version: version.into(),
        };
        self
    }

    /// Answers the server's `method` requests (e.g. `elicitation/create`) with `respond`.
    ///
    /// Servers may send requests on the stream of an answer; each is answered with a POST
    /// inside the same budget. Registering `elicitation/create`, `sampling/createMessage` or
    /// `roots/list` also declares the matching client capability in `initialize`. `ping` is
    /// always answered with `{}`; a request nobody registered is answered with JSON-RPC error
    /// -32601. `respond` must not block: it runs inside the state machine.
    ///
    /// ```
    /// use mcp_proto::{SessionConfig, model::accept_elicitation_with_defaults};
    /// let config = SessionConfig::new("http://127.0.0.1:3000/mcp")?
    ///     .respond_to("elicitation/create", |params| Ok(accept_elicitation_with_defaults(params)));
    /// # Ok::<(), mcp_proto::Error>(())
    /// ```
    pub fn respond_to(
        mut self,
        method: impl Into<String>,
        respond: impl Fn(&serde_json::Value) -> Result<serde_json::Value, RpcError>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        let method = method.into();
        self.responders.retain(|(m, _)| *m != method);
        self.responders
            .push((method, Responder(std::sync::Arc::new(respond))));
        self
    }

    /// Asks for progress: `tools/call` then carries a `progressToken`, and the server's
    /// `notifications/progress` come out as events. Progress never extends the budget.
    pub fn progress(mut self, on: bool) -> Self {
        self.progress = on;
        self
    }

    /// Opens the session's standalone stream (a GET) during each tool call, once the session
    /// is live and before the `tools/call` request, so requests the server sends outside any
    /// answer (e.g. an elicitation its tool raises without tying it to the call) reach the
    /// client and are answered. The stream is dropped when the call ends; a server that still
    /// counts a dropped stream as open answers the next GET with 409, and that call goes on
    /// without the stream. It needs a driver that reads two responses at once: the tokio driver does,
    /// the blocking driver does not (it refuses the leg and the operation goes on without it).
    /// A server that does not offer the stream (405, 400, 404) is fine.
    pub fn listen(mut self, on: bool) -> Self {
        self.listen = on;
        self
    }

    /// Whether operations open the standalone stream.
    pub fn wants_listen(&self) -> bool {
        self.listen
    }

    /// Whether `tools/call` asks for progress.
    pub fn wants_progress(&self) -> bool {
        self.progress
    }

    /// The answer this client gives to a server request for `method`.
    pub(crate) fn answer_server_request(
        &self,
        method: &str,
        params: &serde_json::Value,
    ) -> Result<serde_json::Value, RpcError> {
        if let Some((_, responder)) = self.responders.iter().find(|(m, _)| m == method) {
            return (responder.0)(params);
        }
        if method == "ping" {
            return Ok(serde_json::Value::Object(Map::new()));
        }
        Err(RpcError {
            code: -32601,
            message: format!("method not found: {}", clip(method, 100)),
            data: None,
        })
    }

    /// The client capabilities declared in `initialize`, from the registered responders.
    pub(crate) fn capabilities(&self) -> Map<String, Value> {
        let mut capabilities = Map::new();
        for (method, _) in &self.responders {
            let capability = match method.as_str() {
                "elicitation/create" => "elicitation",
                "sampling/createMessage" => "sampling",
                "roots/list" => "roots",
                _ => continue,
            };
            capabilities.insert(capability.to_owned(), Value::Object(Map::new()));
        }
        capabilities
    }

    /// The endpoint.
    pub fn endpoint(&self) -> &Uri {
        &self.endpoint
    }

    /// The label naming the server in errors.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The default budget.
    pub fn default_budget(&self) -> Budget {
        self.budget
    }

    /// The grant resolution.
    pub fn default_resolution(&self) -> Resolution {
        self.resolution
    }

    /// The body cap in bytes.
    pub fn answer_cap(&self) -> usize {
        self.body_cap
    }

    /// The page ceiling.
    pub fn page_ceiling(&self) -> u32 {
        self.max_pages
    }

    /// The client's name and version.
    pub fn client(&self) -> &ClientInfo {
        &self.client_info
    }
}

/// A caller's answer to one kind of server request.
#[derive(Clone)]
struct Responder(std::sync::Arc<RespondFn>);

/// The shape of a caller's answer to a server request.
type RespondFn = dyn Fn(&Value) -> Result<Value, RpcError> + Send + Sync + 'static;

impl std::fmt::Debug for Responder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Responder(..)")
    }
}

/// A session with one server. See the [module docs](self).
#[derive(Debug)]
pub struct Session {
    config: SessionConfig,
    established: Option<SessionInfo>,
    next_request_id: i64,
}

impl Session {
    /// A session that has not talked to the server yet.
    pub fn new(config: SessionConfig) -> Self {
        Self {
            config,
            established: None,
            next_request_id: 1,
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

    /// Forgets the session: the next operation starts with a fresh handshake.
    ///
    /// This does not tell the server; a driver that wants to end the session on the server
    /// sends a DELETE first.
    pub fn reset(&mut self) {
        self.established = None;
    }

    /// Starts a probe under the configured budget: a handshake that reports the negotiated
    /// version and server info (on a live session, a `ping` that proves the session answers).
    pub fn probe(&mut self, now: std::time::Instant) -> Operation<'_> {
        self.start(Action::Probe, self.default_deadline(now))
    }

    /// Starts a walk of every page of `tools/list` under the configured budget.
    pub fn list_tools(&mut self, now: std::time::Instant) -> Operation<'_> {
        self.start(Action::ListTools, self.default_deadline(now))
    }

    /// Starts a `tools/call` of `name` under the configured budget. Empty arguments are sent as `{}`.
    pub fn call_tool(
        &mut self,
        name: impl Into<String>,
        arguments: Map<String, Value>,
        now: std::time::Instant,
    ) -> Operation<'_> {
        let action = Action::CallTool {
            name: name.into(),
            arguments,
        };
        self.start(action, self.default_deadline(now))
    }

    /// Ends the session on the server: a DELETE with the session header, under a small
    /// budget of its own (the configured budget, at most 2 s). A 405 (the server does not
    /// allow it) or a 404 (already gone) counts as closed. The session is forgotten either way.
    /// Without a live session id nothing is sent.
    pub fn close(&mut self, now: std::time::Instant) -> Operation<'_> {
        let budget = self.config.budget.min(Budget::from_secs(2));
        let deadline = OperationDeadline::start(now, budget, self.config.resolution);
        self.start(Action::Close, deadline)
    }

    /// Starts `action` under a deadline the caller opened (for a budget other than the
    /// configured one, or a deadline opened earlier than the operation).
    pub fn start(&mut self, action: Action, deadline: OperationDeadline) -> Operation<'_> {
        Operation::new(self, action, deadline)
    }

    fn default_deadline(&self, now: std::time::Instant) -> OperationDeadline {
        OperationDeadline::start(now, self.config.budget, self.config.resolution)
    }

    pub(crate) fn take_request_id(&mut self) -> i64 {
        let id = self.next_request_id;
        self.next_request_id = self.next_request_id.saturating_add(1);
        id
    }

    pub(crate) fn establish(&mut self, info: SessionInfo) {
        self.established = Some(info);
    }

    /// Builds a POST of `body` with the transport's headers. `info` is the handshake in force
    /// (committed or still pending), `None` for `initialize`.
    pub(crate) fn post(&self, body: Vec<u8>, info: Option<&SessionInfo>) -> http::Request<Vec<u8>> {
        self.request(Method::POST, body, info)
    }

    /// Builds a request with the transport's headers: a POST carries JSON and accepts JSON or
    /// a stream; a GET accepts only a stream; a DELETE carries nothing.
    pub(crate) fn request(
        &self,
        method: Method,
        body: Vec<u8>,
        info: Option<&SessionInfo>,
    ) -> http::Request<Vec<u8>> {
        let mut request = http::Request::new(body);
        *request.uri_mut() = self.config.endpoint.clone();
        let headers = request.headers_mut();
        headers.clone_from(&self.config.headers);
        if method == Method::POST {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            headers.insert(
                ACCEPT,
                HeaderValue::from_static("application/json, text/event-stream"),
            );
        } else if method == Method::GET {
            headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        }
        *request.method_mut() = method;
        let headers = request.headers_mut();
        if let Some(info) = info {
            if let Some(id) = &info.session_id {
                // The id was checked to be visible ASCII when it arrived.
                if let Ok(value) = HeaderValue::from_str(id) {
                    headers.insert(SESSION_HEADER, value);
                }
            }
            headers.insert(
                PROTOCOL_VERSION_HEADER,
                HeaderValue::from_static(info.protocol_version.as_str()),
            );
        }
        request
    }

    pub(crate) fn offered_version(&self) -> ProtocolVersion {
        ProtocolVersion::LATEST
    }
}

/// Checks a session id before it is ever echoed: visible ASCII (0x21-0x7E), 1 to 256 bytes.
pub(crate) fn valid_session_id(raw: &[u8]) -> bool {
    !raw.is_empty()
        && raw.len() <= MAX_SESSION_ID_LEN
        && raw.iter().all(|b| (0x21..=0x7E).contains(b))
}
