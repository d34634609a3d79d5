//! The script: how the test server behaves, built with a builder-style API.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::era::{MODERN_VERSIONS, ServerEra};
use crate::oauth::OAuthScript;

/// How a JSON-RPC request is answered on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AnswerMode {
    /// `Content-Type: application/json` with a `Content-Length` body.
    #[default]
    Json,
    /// `Content-Type: text/event-stream`, chunked: optional notifications,
    /// then `event: message` with the answer, then the response ends.
    Sse,
    /// Like [`AnswerMode::Sse`], but after the answer the stream stays open
    /// with a `: keepalive` comment every 200 ms until the client disconnects
    /// or the server shuts down.
    SseKeepOpen,
    /// Like [`AnswerMode::SseKeepOpen`], but what follows the answer trickles fast and
    /// thin: a two-byte comment line (`:` and a newline) every half millisecond, until the
    /// client disconnects or the server shuts down. A client that drains the rest of a body
    /// after its answer, bounded by anything but a total time (the bytes read, a wait per
    /// read), is held for as long as the server goes on.
    SseTrickleAfterAnswer,
}

/// A precise way of misbehaving, applied to one JSON-RPC method (see
/// [`Script::hostile`]) or to every message (see [`Script::hostile_all`]).
///
/// Modes that produce a JSON-RPC answer use the message's `id`, or `null`
/// for id-less messages (notifications and client responses).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hostile {
    /// Read the request, never answer; keep the socket open until the client
    /// closes it or the server shuts down.
    Stall,
    /// Send an SSE status line and headers, then a `: tick\n` comment every
    /// 200 ms forever, never an answer. Scripted for `"GET"`, the session's standalone
    /// stream opened and never ended.
    Trickle,
    /// A valid-looking JSON answer (a tool result with a giant string) of this
    /// many bytes, streamed without building it in memory. Sent with a
    /// `Content-Length` in [`AnswerMode::Json`], as one SSE event otherwise.
    Oversize(usize),
    /// Like [`Hostile::Oversize`] but always `application/json` with chunked
    /// transfer encoding (no `Content-Length` to reject up front).
    OversizeChunked(usize),
    /// An SSE stream sending `notifications/message` events forever (fast),
    /// never the answer.
    EndlessSse,
    /// The normal answer, but its id is the request id + 1000 (strings get a
    /// `-wrong` suffix, `null` becomes 1000).
    WrongId,
    /// A JSON answer containing invalid UTF-8 bytes inside a string.
    InvalidUtf8,
    /// `302 Found` with `Location: http://127.0.0.2:<port>/mcp`.
    Redirect,
    /// `302 Found` with this `Location`, verbatim (e.g. the URL of a second
    /// [`TestServer`](crate::TestServer) standing for another host, to check a
    /// client neither follows the redirect nor leaks headers there).
    RedirectTo(String),
    /// This status code with a short `text/plain` body.
    Status(u16),
    /// `200 OK` with a `text/html` page.
    Html,
    /// `200 OK`, `application/json`, body `not json at all`.
    NotJson,
    /// `200 OK`, `application/json`, empty body.
    EmptyBody,
    /// A JSON answer whose `result` is this many nested arrays `[[[...]]]`.
    DeepNesting(usize),
    /// An SSE answer (whatever the answer mode) with this many
    /// `notifications/message` events before the normal answer.
    ManyNotifications(usize),
    /// A JSON-RPC error answer with this code and message.
    ErrorEnvelope {
        /// The JSON-RPC error code.
        code: i64,
        /// The JSON-RPC error message.
        message: String,
    },
    /// An SSE response with only a priming event (`id: ev-1`,
    /// `retry: <retry_ms>`, empty `data:`), then the response ends without an
    /// answer. A later `GET /mcp` with `Last-Event-ID: ev-1` (plus the session
    /// header when sessions are on) and `Accept: text/event-stream` gets an SSE
    /// stream whose first message event (`id: ev-2`) is the answer to the
    /// original request.
    CloseAfterPriming {
        /// Value of the `retry:` field, in milliseconds.
        retry_ms: u64,
    },
}

/// How notifications and client responses (id-less POSTs) are answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NotificationReply {
    /// `202 Accepted` with an empty body (what the MCP spec asks for).
    #[default]
    Accepted,
    /// `200 OK` with the id-less body `{"jsonrpc":"2.0","result":{}}`.
    OkWithBody,
    /// `200 OK` with an empty body.
    OkEmpty,
}

/// A JSON-RPC request the server sends on the event stream of a `tools/call`
/// answer, before the answer (see [`Script::server_request`]).
///
/// The server sends it as an SSE `message` event, then waits (at most
/// [`ServerRequest::answer_timeout`], 5 s by default) for the client to POST
/// a JSON-RPC response with the same id (answered like any client response,
/// `202` by default; see [`TestServer::client_responses`](crate::TestServer::client_responses)),
/// then runs the tool and sends the call's answer on the same stream. Without
/// an answer in time, the call is answered with a JSON-RPC error (code
/// `-32000`, "no answer to the server request ...") instead.
///
/// ```
/// use serde_json::json;
/// use mcp_testkit::ServerRequest;
///
/// let ping = ServerRequest::ping("srv-1");
/// assert_eq!(ping.message(), &json!({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"}));
/// let ask = ServerRequest::elicitation(7, json!({"message": "name?", "requestedSchema": {"type": "object"}}));
/// assert_eq!(ask.message()["method"], "elicitation/create");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ServerRequest {
    message: Value,
    answer_timeout: Duration,
}

impl ServerRequest {
    /// How long the server waits for the client's answer by default.
    pub const DEFAULT_ANSWER_TIMEOUT: Duration = Duration::from_secs(5);

    /// The request `{"jsonrpc":"2.0","id":id,"method":method,"params":params}`
    /// (no `params` member when `params` is `None`).
    pub fn new(id: impl Into<Value>, method: impl Into<String>, params: Option<Value>) -> Self {
        let mut message = Map::new();
        message.insert("jsonrpc".into(), "2.0".into());
        message.insert("id".into(), id.into());
        message.insert("method".into(), Value::String(method.into()));
        if let Some(params) = params {
            message.insert("params".into(), params);
        }
        Self {
            message: Value::Object(message),
            answer_timeout: Self::DEFAULT_ANSWER_TIMEOUT,
        }
    }

    /// A `ping` with this id.
    pub fn ping(id: impl Into<Value>) -> Self {
        Self::new(id, "ping", None)
    }

    /// An `elicitation/create` with this id and these params (`message`,
    /// `requestedSchema`).
    pub fn elicitation(id: impl Into<Value>, params: Value) -> Self {
        Self::new(id, "elicitation/create", Some(params))
    }

    /// An `elicitation/create` asking for a `name` string whose schema default
    /// is `default_name` (what a client accepting with defaults answers).
    pub fn elicit_name(id: impl Into<Value>, default_name: &str) -> Self {
        Self::elicitation(
            id,
            json!({"message": "name?", "requestedSchema": {"type": "object",
                "properties": {"name": {"type": "string", "default": default_name}}}}),
        )
    }

    /// How long the server waits for the client's answer (default 5 s).
    pub fn answer_timeout(mut self, timeout: Duration) -> Self {
        self.answer_timeout = timeout;
        self
    }

    /// The request as sent.
    pub fn message(&self) -> &Value {
        &self.message
    }

    /// The request's id, which the client's answer must carry.
    pub fn id(&self) -> &Value {
        &self.message["id"]
    }

    pub(crate) fn timeout(&self) -> Duration {
        self.answer_timeout
    }
}

/// The server's behaviour. Start from [`Script::new`] (same as
/// [`Script::default`]: sessions on, JSON answers, no delays, nothing
/// hostile) and chain the builder methods.
///
/// ```
/// use std::time::Duration;
/// use mcp_testkit::{AnswerMode, Hostile, Script};
///
/// let script = Script::new()
///     .answer_mode(AnswerMode::Sse)
///     .delay("initialize", Duration::from_millis(400))
///     .hostile("tools/call", Hostile::Stall)
///     .tool_pages(3);
/// # let _ = script;
/// ```
#[derive(Debug, Clone)]
pub struct Script {
    pub(crate) sessions: bool,
    pub(crate) unknown_session_400: bool,
    pub(crate) protocol_version: Option<String>,
    pub(crate) session_id_override: Option<Vec<u8>>,
    pub(crate) notification_reply: NotificationReply,
    pub(crate) tool_pages: usize,
    pub(crate) repeated_cursor: bool,
    pub(crate) endless_listing: bool,
    pub(crate) default_mode: AnswerMode,
    pub(crate) modes: HashMap<String, AnswerMode>,
    pub(crate) notifications_before_answer: usize,
    pub(crate) event_ids: bool,
    pub(crate) sse_content_length: bool,
    pub(crate) close_after: Vec<String>,
    pub(crate) progress: bool,
    pub(crate) delays: HashMap<String, Duration>,
    pub(crate) ack_delay: Option<Duration>,
    pub(crate) hostile: HashMap<String, Hostile>,
    pub(crate) hostile_all: Option<Hostile>,
    pub(crate) allow_delete: bool,
    pub(crate) server_request: Option<ServerRequest>,
    pub(crate) era: ServerEra,
    pub(crate) modern_versions: Vec<String>,
    pub(crate) server_version: String,
    pub(crate) oauth: Option<OAuthScript>,
    pub(crate) tools: Vec<ScriptedTool>,
}

/// A tool a script adds to the listing ([`Script::tool`]): its name, the `outputSchema` it
/// declares (if any), and the result every call of it answers, as given.
#[derive(Debug, Clone)]
pub(crate) struct ScriptedTool {
    pub(crate) name: String,
    pub(crate) output_schema: Option<Value>,
    pub(crate) result: Value,
}

impl Default for Script {
    fn default() -> Self {
        Self {
            sessions: true,
            unknown_session_400: false,
            protocol_version: None,
            session_id_override: None,
            notification_reply: NotificationReply::Accepted,
            tool_pages: 1,
            repeated_cursor: false,
            endless_listing: false,
            default_mode: AnswerMode::Json,
            modes: HashMap::new(),
            notifications_before_answer: 0,
            event_ids: false,
            sse_content_length: false,
            close_after: Vec::new(),
            progress: true,
            delays: HashMap::new(),
            ack_delay: None,
            hostile: HashMap::new(),
            hostile_all: None,
            allow_delete: true,
            server_request: None,
            era: ServerEra::Legacy,
            modern_versions: MODERN_VERSIONS.map(str::to_owned).to_vec(),
            server_version: "0.1.0".to_owned(),
            oauth: None,
            tools: Vec::new(),
        }
    }
}

impl Script {
    /// The default script: sessions on, JSON answers, no delays.
    pub fn new() -> Self {
        Self::default()
    }

    /// The CLI demo script: sessions on, SSE answers for `tools/call`,
    /// `initialize` delayed 300 ms, `notifications/initialized` delayed 100 ms, no progress
    /// notifications (an instant tool has none to give: `mcp-call --trace` shows the legs).
    pub fn demo() -> Self {
        Self::new()
            .answer_mode_for("tools/call", AnswerMode::Sse)
            .progress(false)
            .delay("initialize", Duration::from_millis(300))
            .delay("notifications/initialized", Duration::from_millis(100))
    }

    /// Turns sessions on (default) or off. When on, `initialize` answers carry
    /// a fresh `Mcp-Session-Id` and every other request must present a live one
    /// (absent: 400, unknown or expired: 404).
    pub fn sessions(mut self, on: bool) -> Self {
        self.sessions = on;
        self
    }

    /// Answers a request whose session it does not know (or no longer knows) as servers on the
    /// TypeScript SDK's example routing do (`server-everything` among them): `400` with
    /// `{"code":-32000,"message":"Bad Request: No valid session ID provided"}` instead of the
    /// spec's `404`.
    pub fn unknown_session_as_typescript_400(mut self) -> Self {
        self.unknown_session_400 = true;
        self
    }

    /// Answers `initialize` with this `protocolVersion` whatever the client asked.
    pub fn protocol_version(mut self, version: impl Into<String>) -> Self {
        self.protocol_version = Some(version.into());
        self
    }

    /// Sends these raw bytes verbatim as the `Mcp-Session-Id` header value of
    /// `initialize` answers (may contain CR/LF or other invalid bytes). With
    /// sessions on, the (lossily decoded) value is also accepted afterwards.
    pub fn session_id_header(mut self, raw: impl Into<Vec<u8>>) -> Self {
        self.session_id_override = Some(raw.into());
        self
    }

    /// How notifications and client responses are answered (default 202).
    pub fn notification_reply(mut self, reply: NotificationReply) -> Self {
        self.notification_reply = reply;
        self
    }

    /// Splits `tools/list` into this many pages (default 1); filler tools
    /// `tool-<n>` are added so that every page has at least one tool.
    /// Cursors are `"page-2"`, `"page-3"`, ...; the last page has none.
    pub fn tool_pages(mut self, pages: usize) -> Self {
        self.tool_pages = pages.max(1);
        self
    }

    /// Makes every `tools/list` page carry `nextCursor: "page-2"`, so a client
    /// following cursors sees the same cursor again.
    pub fn repeated_cursor(mut self, on: bool) -> Self {
        self.repeated_cursor = on;
        self
    }

    /// Makes `tools/list` endless: every page has a fresh `nextCursor`.
    pub fn endless_listing(mut self, on: bool) -> Self {
        self.endless_listing = on;
        self
    }

    /// Sets the answer mode for every method without a specific one.
    pub fn answer_mode(mut self, mode: AnswerMode) -> Self {
        self.default_mode = mode;
        self
    }

    /// Sets the answer mode for one JSON-RPC method.
    pub fn answer_mode_for(mut self, method: impl Into<String>, mode: AnswerMode) -> Self {
        self.modes.insert(method.into(), mode);
        self
    }

    /// SSE answers first send this many `notifications/message` events.
    pub fn notifications_before_answer(mut self, count: usize) -> Self {
        self.notifications_before_answer = count;
        self
    }

    /// SSE events carry `id: <n>` lines, preceded by a priming event
    /// (`id: 0`, empty `data:`).
    pub fn event_ids(mut self, on: bool) -> Self {
        self.event_ids = on;
        self
    }

    /// SSE answers are sent whole with a `Content-Length` instead of chunked
    /// ([`AnswerMode::SseKeepOpen`] and [`AnswerMode::SseTrickleAfterAnswer`] then behave
    /// like [`AnswerMode::Sse`]).
    pub fn sse_content_length(mut self, on: bool) -> Self {
        self.sse_content_length = on;
        self
    }

    /// After answering a request for `method`, the server closes the connection without
    /// having said so (no `Connection: close`), as a server whose keep-alive ran out does: a
    /// client must not send its next request on it.
    pub fn close_after(mut self, method: impl Into<String>) -> Self {
        self.close_after.push(method.into());
        self
    }

    /// When on (default), an SSE-answered `tools/call` carrying
    /// `params._meta.progressToken` gets `notifications/progress` events before
    /// the answer (spread over the sleep for the `sleep` tool).
    pub fn progress(mut self, on: bool) -> Self {
        self.progress = on;
        self
    }

    /// Sleeps `delay` before answering this JSON-RPC method (notifications
    /// too, e.g. `"notifications/initialized"`; `"(response)"` for client
    /// responses). The sleep is cut short by server shutdown.
    pub fn delay(mut self, method: impl Into<String>, delay: Duration) -> Self {
        self.delays.insert(method.into(), delay);
        self
    }

    /// Takes a client's response (the answer to a server request) at once, so that the
    /// request waiting for it goes on, and acknowledges its POST (the 202) only `delay`
    /// later: a client that ends its operation on the call's answer must still wait for it.
    pub fn ack_delay(mut self, delay: Duration) -> Self {
        self.ack_delay = Some(delay);
        self
    }

    /// Misbehaves this way for one JSON-RPC method (takes precedence over
    /// [`Script::hostile_all`]).
    pub fn hostile(mut self, method: impl Into<String>, mode: Hostile) -> Self {
        self.hostile.insert(method.into(), mode);
        self
    }

    /// Misbehaves this way for every JSON-RPC message (requests,
    /// notifications and client responses).
    pub fn hostile_all(mut self, mode: Hostile) -> Self {
        self.hostile_all = Some(mode);
        self
    }

    /// Removes every hostile mode (per method and global).
    pub fn clear_hostile(mut self) -> Self {
        self.hostile.clear();
        self.hostile_all = None;
        self
    }

    /// Removes every delay.
    pub fn clear_delays(mut self) -> Self {
        self.delays.clear();
        self
    }

    /// Whether `DELETE /mcp` is honoured (default) or answered 405.
    pub fn allow_delete(mut self, on: bool) -> Self {
        self.allow_delete = on;
        self
    }

    /// Before answering each `tools/call`, sends this request on the answer's
    /// event stream and waits for the client's answer (see [`ServerRequest`]).
    /// The answer is then always an SSE stream, chunked (even in
    /// [`AnswerMode::Json`] or with [`Script::sse_content_length`]); with
    /// [`AnswerMode::SseKeepOpen`] for `tools/call`, the stream stays open after
    /// the call's answer.
    ///
    /// ```
    /// use mcp_testkit::{AnswerMode, Script, ServerRequest};
    ///
    /// let script = Script::new()
    ///     .server_request(ServerRequest::ping("srv-1"))
    ///     .answer_mode_for("tools/call", AnswerMode::SseKeepOpen);
    /// # let _ = script;
    /// ```
    pub fn server_request(mut self, request: ServerRequest) -> Self {
        self.server_request = Some(request);
        self
    }

    /// Which era(s) the server speaks (default [`ServerEra::Legacy`]). A modern server
    /// serves requests that carry the 2026-07-28 metadata statelessly (no session checked, the
    /// `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers compared with the body,
    /// `resultType` and caching hints on results, `server/discover`, and the multi round-trip
    /// tool `greet`); see [`ServerEra`] for what each era refuses.
    ///
    /// ```
    /// use mcp_testkit::{Script, ServerEra};
    /// let script = Script::new().era(ServerEra::Dual);
    /// # let _ = script;
    /// ```
    pub fn era(mut self, era: ServerEra) -> Self {
        self.era = era;
        self
    }

    /// The modern versions the server speaks (default [`MODERN_VERSIONS`](crate::MODERN_VERSIONS)).
    /// A modern request in another version is refused with `-32022` naming these (and, for a
    /// dual-era server, the legacy versions too): with none, a dual-era server sends every
    /// modern client through the handshake.
    pub fn modern_versions(mut self, versions: &[&str]) -> Self {
        self.modern_versions = versions.iter().map(|v| (*v).to_owned()).collect();
        self
    }

    /// The `serverInfo.version` the legacy handshake reports (default `0.1.0`).
    pub fn server_version(mut self, version: impl Into<String>) -> Self {
        self.server_version = version.into();
        self
    }

    /// Guards `/mcp` with OAuth and serves, on the same port, the resource metadata and an
    /// authorization server that approves at once (see [`OAuthScript`] and
    /// [`TestServer::trail`](crate::TestServer::trail)).
    ///
    /// ```
    /// use mcp_testkit::{OAuthScript, Script, TestServer};
    /// use mcp_testkit::client::RawClient;
    ///
    /// let server = TestServer::start(Script::new().oauth(OAuthScript::new()));
    /// let mut client = RawClient::connect(server.addr()).unwrap();
    /// let call = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    /// let refused = client.post_json(call, &[]).unwrap();
    /// assert_eq!(refused.status, 401);
    /// assert!(refused.header("www-authenticate").unwrap().contains("resource_metadata="));
    /// ```
    pub fn oauth(mut self, oauth: OAuthScript) -> Self {
        self.oauth = Some(oauth);
        self
    }

    /// Changes the OAuth mode in force (a default [`OAuthScript`] if there was none).
    pub fn update_oauth(mut self, f: impl FnOnce(OAuthScript) -> OAuthScript) -> Self {
        self.oauth = Some(f(self.oauth.take().unwrap_or_default()));
        self
    }

    /// Turns the OAuth mode off (the default): `/mcp` serves everyone again.
    pub fn clear_oauth(mut self) -> Self {
        self.oauth = None;
        self
    }

    /// Adds a tool to the listing (on its last page) that declares `output_schema` (`None`:
    /// none) and answers every call with `result`, exactly as given: a `structuredContent`
    /// that breaks the schema, none at all, or a hostile schema are the caller's to script.
    /// A later tool of the same name replaces it.
    pub fn tool(
        mut self,
        name: impl Into<String>,
        output_schema: Option<Value>,
        result: Value,
    ) -> Self {
        let name = name.into();
        self.tools.retain(|t| t.name != name);
        self.tools.push(ScriptedTool {
            name,
            output_schema,
            result,
        });
        self
    }

    /// The result [`tool`](Self::tool) scripted for `name`, if any.
    pub(crate) fn scripted_result(&self, name: &str) -> Option<&Value> {
        self.tools
            .iter()
            .find(|t| t.name == name)
            .map(|t| &t.result)
    }

    /// The listing entries of the scripted tools.
    pub(crate) fn scripted_listing(&self) -> impl Iterator<Item = Value> + '_ {
        self.tools.iter().map(|t| {
            let mut tool = json!({
                "name": t.name,
                "description": "A scripted tool.",
                "inputSchema": {"type": "object"},
            });
            if let Some(schema) = &t.output_schema {
                tool["outputSchema"] = schema.clone();
            }
            tool
        })
    }

    /// Sends no server request on `tools/call` answers again (the default).
    pub fn clear_server_request(mut self) -> Self {
        self.server_request = None;
        self
    }

    pub(crate) fn mode_for(&self, method: &str) -> AnswerMode {
        self.modes.get(method).copied().unwrap_or(self.default_mode)
    }

    pub(crate) fn delay_for(&self, method: &str) -> Option<Duration> {
        self.delays.get(method).copied()
    }

    pub(crate) fn hostile_for(&self, method: &str) -> Option<&Hostile> {
        self.hostile.get(method).or(self.hostile_all.as_ref())
    }
}
