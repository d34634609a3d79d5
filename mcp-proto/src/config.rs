//! What a session needs to know before it talks to a server: where, with which headers,
//! under which budget, with which caps, and how to answer the server's own requests.
//!
//! A [`SessionConfig`] is plain data built once (setters are `with_*`, getters carry the same
//! name without the prefix). It decides nothing at run time except the answer to a server
//! request, through the caller's registered responders.

use http::Uri;
use http::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value};

use crate::deadline::{Budget, Resolution};
use crate::error::Error;
use crate::model::{ClientInfo, ProtocolVersion};
use crate::transport::{StdioCommand, Transport};
use crate::wire::{Endpoint, RESERVED_HEADERS};

mod meta;
mod responders;
use mcp_auth::{QUOTE_LIMIT, clip};
pub use meta::DEADLINE_META_KEY;
use responders::Responder;
pub(crate) use responders::protocol_answer;

/// Everything a session needs to know before it talks to a server.
///
/// ```
/// use mcp_proto::{Budget, Resolution, SessionConfig};
///
/// let config = SessionConfig::new("https://tools.example.org/mcp")?
///     .with_header("Authorization", "Bearer s3cret")?
///     .with_budget(Budget::from_secs(30))
///     .with_resolution(Resolution::MILLISECOND);
/// assert_eq!(config.label(), "tools.example.org:443");
/// assert_eq!(config.budget(), Budget::from_secs(30));
/// # Ok::<(), mcp_proto::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct SessionConfig {
    transport: Transport,
    /// Over HTTP: Streamable HTTP, HTTP+SSE, or the one the server answers.
    http_transport: crate::transport::HttpTransport,
    endpoint: Uri,
    label: String,
    headers: HeaderMap,
    budget: Budget,
    resolution: Resolution,
    body_cap: usize,
    max_pages: u32,
    client_info: ClientInfo,
    responders: Vec<(String, Responder)>,
    progress: bool,
    listen: bool,
    cancel_notice: bool,
    /// Whether modern requests declare the tasks extension (a server may then answer a
    /// `tools/call` with a task, which the operation polls).
    tasks: bool,
    /// `traceparent` (and `tracestate`) added to every request's `_meta`, when configured.
    trace_context: Map<String, Value>,
    /// Whether every request tells the server what is left of the budget.
    send_deadline: bool,
    /// Whether a task the budget cannot see done is cancelled instead of handed back.
    cancel_spent_tasks: bool,
    /// Whether a legacy call of a tool that may run as a task asks for one.
    optional_tasks: bool,
    /// When a tool's result is checked against its `outputSchema`.
    output_validation: crate::schema::OutputValidation,
    /// Whether the elicitation capability offers URL mode too.
    url_elicitation: bool,
    /// The least severe log message the server is asked to send, if any.
    log_level: Option<crate::message::LogLevel>,
    /// The pinned version, or `None` to detect the server's era.
    protocol_version: Option<ProtocolVersion>,
    /// The URL exactly as the caller gave it (a 2025-03-26 server's OAuth `resource`).
    url: String,
    /// How to authorize when the server asks, if at all.
    oauth: Option<crate::auth::OAuth>,
    /// What every modern request carries in `_meta` from this configuration, built once.
    modern_meta: crate::wire::MetaCache,
}

impl SessionConfig {
    /// The default cap on one answer body (and on one event of a stream): 2 MiB.
    pub const DEFAULT_BODY_CAP: usize = 2 * 1024 * 1024;
    /// The default ceiling on pages in one tool listing.
    pub const DEFAULT_MAX_PAGES: u32 = 50;
    /// The most a close may spend: [`Session::close`](crate::Session::close) runs under the
    /// configured budget capped at this, so ending a session never delays its caller long.
    pub const CLOSE_BUDGET_CAP: Budget = Budget::from_secs(2);

    /// A configuration for the endpoint at `url` (`http` or `https`, with a host). The label
    /// defaults to the URL's host and port.
    pub fn new(url: &str) -> Result<Self, Error> {
        let invalid = |reason| Error::InvalidUrl {
            url: clip(url, QUOTE_LIMIT),
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
        Ok(Self::with_transport(
            Transport::StreamableHttp,
            endpoint,
            label,
            url.to_owned(),
        ))
    }

    /// A configuration for a local server the driver runs as a child process and speaks to
    /// over its stdin and stdout (the stdio transport). The label is `stdio:<program>`.
    ///
    /// ```
    /// use mcp_proto::{SessionConfig, StdioCommand};
    /// let config = SessionConfig::stdio(StdioCommand::new("/usr/local/bin/mcp-time").arg("--utc"));
    /// assert_eq!(config.label(), "stdio:mcp-time");
    /// ```
    pub fn stdio(command: StdioCommand) -> Self {
        let label = command.label();
        let url = label.clone();
        // Never sent: stdio legs carry only their message.
        let endpoint = Uri::from_static("http://stdio.invalid/");
        Self::with_transport(Transport::Stdio(command), endpoint, label, url)
    }

    fn with_transport(transport: Transport, endpoint: Uri, label: String, url: String) -> Self {
        Self {
            transport,
            http_transport: crate::transport::HttpTransport::default(),
            endpoint,
            label,
            headers: HeaderMap::new(),
            budget: Budget::DEFAULT,
            resolution: Resolution::SECOND,
            body_cap: Self::DEFAULT_BODY_CAP,
            max_pages: Self::DEFAULT_MAX_PAGES,
            client_info: ClientInfo::default(),
            responders: Vec::new(),
            progress: false,
            listen: false,
            cancel_notice: false,
            tasks: false,
            trace_context: Map::new(),
            send_deadline: false,
            cancel_spent_tasks: false,
            optional_tasks: false,
            output_validation: crate::schema::OutputValidation::default(),
            url_elicitation: false,
            log_level: None,
            protocol_version: None,
            url,
            oauth: None,
            modern_meta: crate::wire::MetaCache::default(),
        }
    }

    /// Which HTTP transport the session speaks ([`HttpTransport`](crate::HttpTransport)):
    /// by default Streamable HTTP, falling back to the HTTP+SSE transport of 2024-11-05 when
    /// the URL refuses the `initialize` POST as the spec's backwards-compatibility procedure
    /// says. Pinning [`HttpTransport::Sse`](crate::HttpTransport::Sse) skips the POSTs that
    /// find it out (two legs for a server of unknown era); pinning
    /// [`HttpTransport::StreamableHttp`](crate::HttpTransport::StreamableHttp) never falls
    /// back. Over HTTP+SSE the session speaks the legacy era, whatever version is pinned.
    /// Ignored over stdio.
    ///
    /// ```
    /// use mcp_proto::{HttpTransport, SessionConfig};
    /// let config = SessionConfig::new("http://127.0.0.1:8000/sse")?
    ///     .with_http_transport(HttpTransport::Sse);
    /// assert_eq!(config.http_transport(), HttpTransport::Sse);
    /// # Ok::<(), mcp_proto::Error>(())
    /// ```
    pub fn with_http_transport(mut self, transport: crate::transport::HttpTransport) -> Self {
        self.http_transport = transport;
        self
    }

    /// Which HTTP transport the session speaks, as configured.
    pub fn http_transport(&self) -> crate::transport::HttpTransport {
        self.http_transport
    }

    /// Names the server in every error message (default: host and port).
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }

    /// Adds a header sent on every request, e.g. `Authorization`.
    ///
    /// Headers the protocol owns (`Content-Type`, `Accept`, `Mcp-Session-Id`,
    /// `MCP-Protocol-Version`, `Last-Event-ID`, `Host`, `Content-Length`,
    /// `Transfer-Encoding`) are refused rather than silently overridden.
    pub fn with_header(mut self, name: &str, value: &str) -> Result<Self, Error> {
        let invalid = |reason| Error::InvalidHeader {
            name: clip(name, 100),
            reason,
        };
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| invalid("it is not a valid header name"))?;
        if RESERVED_HEADERS.contains(&name.as_str()) {
            return Err(invalid("the MCP transport sets it itself"));
        }
        let value = HeaderValue::from_str(value)
            .map_err(|_| invalid("its value has characters a header cannot carry"))?;
        self.headers.append(name, value);
        Ok(self)
    }

    /// The budget of every operation started without an explicit deadline (default 20 s).
    pub fn with_budget(mut self, budget: Budget) -> Self {
        self.budget = budget;
        self
    }

    /// The unit grants are rounded up to (default one second).
    pub fn with_resolution(mut self, resolution: Resolution) -> Self {
        self.resolution = resolution;
        self
    }

    /// The cap on one answer body and on one event of a stream, in bytes (default 2 MiB).
    pub fn with_body_cap(mut self, bytes: usize) -> Self {
        self.body_cap = bytes.max(1);
        self
    }

    /// The ceiling on pages in one tool listing (default 50).
    pub fn with_max_pages(mut self, pages: u32) -> Self {
        self.max_pages = pages.max(1);
        self
    }

    /// How this client names itself in `initialize`.
    pub fn with_client_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.client_info = ClientInfo {
            name: name.into(),
            version: version.into(),
        };
        self
    }

    /// Offers URL-mode elicitation too (default: off): with a responder for
    /// `elicitation/create`, the capability then says `{"form": {}, "url": {}}`, and the
    /// server may ask the person to open a page. The responder gets the request's params;
    /// [`UrlElicitation::of`](crate::message::UrlElicitation::of) reads the URL and its domain, which
    /// a person must see before anything is opened.
    pub fn with_url_elicitation(mut self, on: bool) -> Self {
        self.url_elicitation = on;
        self
    }

    /// Asks for progress: `tools/call` then carries a `progressToken`, and the server's
    /// `notifications/progress` come out as events. Progress never extends the budget.
    pub fn with_progress(mut self, on: bool) -> Self {
        self.progress = on;
        self
    }

    /// Opens the session's standalone stream (a GET) during each tool call, once the session
    /// is live and before the `tools/call` request, so requests the server sends outside any
    /// answer (e.g. an elicitation its tool raises without tying it to the call) reach the
    /// client and are answered. The stream is dropped when the call ends; a server that still
    /// counts a dropped stream as open answers the next GET with 409, and that call goes on
    /// without the stream. A server that does not offer the stream (405, 400, 404) is fine.
    ///
    /// The stream is read beside the call: both drivers read it on a task or thread of its
    /// own. Over the HTTP+SSE transport every message of the server comes on its one stream
    /// anyway, and this changes nothing.
    pub fn with_listen(mut self, on: bool) -> Self {
        self.listen = on;
        self
    }

    /// Follows a cancelled `tools/call` with a best-effort `notifications/cancelled` naming its
    /// request id, so the server can stop working on it (default: off).
    ///
    /// When on, the operation hands the notice out as one more leg after
    /// [`Input::Cancel`](crate::driver::Input::Cancel), granted what is left of the budget but
    /// at most [`CANCEL_NOTICE_GRANT`](crate::driver::CANCEL_NOTICE_GRANT)
    /// ([`leg_grant`](crate::driver::leg_grant)), and returns [`Error::Cancelled`] once its
    /// response head arrived or that grant ran out: a cancel then takes up to a second instead
    /// of returning at once. Over HTTP a notice that would go out with the budget spent is not
    /// sent (over stdio it is written only if the server's stdin takes it at once). Nothing is sent when the call had
    /// not been sent yet, nor for any other request, nor in the modern era (2026-07-28), where
    /// closing the call's stream is the cancellation.
    pub fn with_cancel_notice(mut self, on: bool) -> Self {
        self.cancel_notice = on;
        self
    }

    /// Runs tool calls as tasks where the server does (default: off). In the 2026-07-28 era
    /// every request declares the tasks extension (`io.modelcontextprotocol/tasks`), and a
    /// server may then answer a `tools/call` with a task instead of its result. In the
    /// 2025-11-25 era a call asks for a task (`params.task`) when the server runs calls as
    /// tasks (`tasks.requests.tools.call`) and the tool requires it (`execution.taskSupport:
    /// "required"`, read from the tools listing: one is walked first, inside the same budget,
    /// when the session has none).
    ///
    /// The operation polls the task with `tasks/get` inside the same budget (and in the
    /// legacy era fetches its result with `tasks/result`), and returns the call's result once
    /// the task completes. When the budget runs out first, the operation ends with
    /// [`Error::TaskRunning`], which hands the task back ([`Error::task`]); the task keeps
    /// running on the server, and [`Session::resume_task`](crate::Session::resume_task) or
    /// [`Session::cancel_task`](crate::Session::cancel_task) take it up under a new budget.
    ///
    /// Polls ramp from 20 ms, doubling up to the server's interval, and the last one is timed
    /// to be answered before the budget ends. A cancelled operation cancels its task
    /// (`tasks/cancel`, under the cancel notice's grant). A task waiting for input is answered
    /// through the responders ([`respond_to`](Self::respond_to)) inside the same budget: in
    /// the 2026-07-28 era its `inputRequests` (each key once, however many polls show it)
    /// with `tasks/update`; in the 2025-11-25 era the requests the server sends on the
    /// `tasks/result` stream. A legacy tool that may run as a task (`optional`) is called as
    /// one when [`with_optional_tasks`](Self::with_optional_tasks) says so.
    ///
    /// ```
    /// use mcp_proto::SessionConfig;
    /// let config = SessionConfig::new("http://127.0.0.1:8000/mcp")?.with_tasks(true);
    /// assert!(config.tasks());
    /// # Ok::<(), mcp_proto::Error>(())
    /// ```
    pub fn with_tasks(mut self, on: bool) -> Self {
        self.tasks = on;
        self
    }

    /// Pins the protocol version to speak. By default none is pinned and the server's era is
    /// detected, as the 2026-07-28 revision's backward-compatibility rules describe:
    ///
    /// * The first operation sends the modern request (stateless: the version and the client's
    ///   capabilities in `_meta`, the `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name`
    ///   headers), so a tool call on a modern server is **one** leg.
    /// * A `400` (or `404`, `405`) whose body is not a recognised modern error (`-32020`,
    ///   `-32021`, `-32022`) means a legacy server: the operation falls back to the
    ///   `initialize` handshake inside the **same** budget, and the session remembers the era
    ///   ([`Session::era`](crate::Session::era)) so later operations go straight to it.
    /// * `-32022` names the versions the server supports: the request goes out once more in a
    ///   modern one of them (or, when it lists only legacy ones, through the handshake).
    /// * A remembered era that later fails (a legacy server that became modern, or the
    ///   reverse) is detected again, at most once per operation: never a loop.
    ///
    /// A pinned legacy version is offered in `initialize` (the server may counter-offer another
    /// legacy version this client speaks) and nothing else is tried; a pinned modern version
    /// never falls back.
    ///
    /// ```
    /// use mcp_proto::{ProtocolVersion, SessionConfig};
    /// let config = SessionConfig::new("https://tools.example.org/mcp")?;
    /// assert_eq!(config.protocol_version(), None); // detect the era
    /// let config = config.with_protocol_version(ProtocolVersion::V2025_06_18);
    /// assert_eq!(config.protocol_version(), Some(ProtocolVersion::V2025_06_18));
    /// # Ok::<(), mcp_proto::Error>(())
    /// ```
    pub fn with_protocol_version(mut self, version: ProtocolVersion) -> Self {
        self.protocol_version = Some(version);
        self
    }

    /// Detects the server's era instead of speaking a pinned version (the default; see
    /// [`with_protocol_version`](Self::with_protocol_version)).
    pub fn with_detected_version(mut self) -> Self {
        self.protocol_version = None;
        self
    }

    /// The pinned protocol version, or `None` when the server's era is detected.
    pub fn protocol_version(&self) -> Option<ProtocolVersion> {
        self.protocol_version
    }

    /// Authorizes with OAuth when the server asks (a 401, or a 403 `insufficient_scope`):
    /// every request of the authorization is a leg of the operation that met the refusal,
    /// inside its budget. Without it a 401 ends the operation with
    /// [`Error::AuthorizationRequired`].
    pub fn with_oauth(mut self, oauth: crate::auth::OAuth) -> Self {
        self.oauth = Some(oauth);
        self
    }

    /// How to authorize, if configured.
    pub fn oauth(&self) -> Option<&crate::auth::OAuth> {
        self.oauth.as_ref()
    }

    /// The server URL exactly as given.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// How the session reaches its server.
    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    /// Whether the server is a local process spoken to over stdio.
    pub fn is_stdio(&self) -> bool {
        matches!(self.transport, Transport::Stdio(_))
    }

    /// The endpoint (Streamable HTTP; a placeholder, never used, over stdio).
    pub fn endpoint(&self) -> &Uri {
        &self.endpoint
    }

    /// The label naming the server in errors.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The extra headers sent on every request.
    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    /// The budget of every operation started without an explicit deadline.
    pub fn budget(&self) -> Budget {
        self.budget
    }

    /// The unit grants are rounded up to.
    pub fn resolution(&self) -> Resolution {
        self.resolution
    }

    /// The cap on one answer body and on one event of a stream, in bytes.
    pub fn body_cap(&self) -> usize {
        self.body_cap
    }

    /// The ceiling on pages in one tool listing.
    pub fn max_pages(&self) -> u32 {
        self.max_pages
    }

    /// The client's name and version.
    pub fn client_info(&self) -> &ClientInfo {
        &self.client_info
    }

    /// Whether `tools/call` asks for progress.
    pub fn progress(&self) -> bool {
        self.progress
    }

    /// Whether tool calls open the standalone stream.
    pub fn listen(&self) -> bool {
        self.listen
    }

    /// Whether modern requests declare the tasks extension (see [`Self::with_tasks`]).
    pub fn tasks(&self) -> bool {
        self.tasks
    }

    /// Cancels a task the budget cannot see done instead of handing it back (default: off, the
    /// task is handed back and keeps running). The last poll is then timed to leave room for
    /// `tasks/cancel` too, which goes out before the budget's end; the operation still ends
    /// with [`Error::TaskRunning`], saying so. A budget spent by a poll that never came back
    /// leaves no room: that task is handed back as it is.
    pub fn with_cancel_spent_tasks(mut self, on: bool) -> Self {
        self.cancel_spent_tasks = on;
        self
    }

    /// Whether a task the budget cannot see done is cancelled instead of handed back.
    pub fn cancels_spent_tasks(&self) -> bool {
        self.cancel_spent_tasks
    }

    /// In the 2025-11-25 era, also asks for a task when calling a tool that may run as one
    /// (`execution.taskSupport: "optional"`), not only one that must (default: off; needs
    /// [`with_tasks`](Self::with_tasks)). In the 2026-07-28 era the server alone decides.
    pub fn with_optional_tasks(mut self, on: bool) -> Self {
        self.optional_tasks = on;
        self
    }

    /// Whether a legacy call of a tool that may run as a task asks for one.
    pub fn optional_tasks(&self) -> bool {
        self.optional_tasks
    }

    /// When a tool's result is checked against the `outputSchema` the tool declares
    /// (default: [`OutputValidation::WhenListed`](crate::schema::OutputValidation::WhenListed),
    /// when the session read a tools listing). A result that breaks the promise ends the call
    /// with [`Error::OutputInvalid`](crate::Error::OutputInvalid), the result inside it.
    ///
    /// ```
    /// use mcp_proto::SessionConfig;
    /// use mcp_proto::schema::OutputValidation;
    ///
    /// let config = SessionConfig::new("http://127.0.0.1:8000/mcp")?
    ///     .with_output_validation(OutputValidation::Always);
    /// assert_eq!(config.output_validation(), OutputValidation::Always);
    /// # Ok::<(), mcp_proto::Error>(())
    /// ```
    pub fn with_output_validation(mut self, when: crate::schema::OutputValidation) -> Self {
        self.output_validation = when;
        self
    }

    /// When a tool's result is checked (see
    /// [`with_output_validation`](Self::with_output_validation)).
    pub fn output_validation(&self) -> crate::schema::OutputValidation {
        self.output_validation
    }

    /// Asks the server for its log messages at `level` and above (default: none asked). In the
    /// 2026-07-28 era every request carries `io.modelcontextprotocol/logLevel` in `_meta`
    /// (the server then sends them on that request's answer); in the legacy era a session's
    /// handshake is followed by `logging/setLevel` (when the server declares `logging`), a leg
    /// of the same budget whose refusal changes nothing. The messages come out as events
    /// ([`Notification::log`](crate::message::Notification::log)). MCP deprecates logging as of
    /// 2026-07-28; servers still send it.
    pub fn with_log_level(mut self, level: crate::message::LogLevel) -> Self {
        self.log_level = Some(level);
        self
    }

    /// The least severe log message the server is asked to send, if any.
    pub fn log_level(&self) -> Option<crate::message::LogLevel> {
        self.log_level
    }

    /// Whether a cancelled `tools/call` is followed by `notifications/cancelled`.
    pub fn cancel_notice(&self) -> bool {
        self.cancel_notice
    }

    pub(crate) fn wire(&self) -> Endpoint<'_> {
        Endpoint {
            uri: &self.endpoint,
            headers: &self.headers,
            lines: self.is_stdio(),
        }
    }
}
