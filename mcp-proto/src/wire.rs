//! The Streamable HTTP wire: header names, the requests each leg carries, and the check a
//! session id passes before it is ever echoed.
//!
//! Everything here builds bytes and headers from values it is given; it keeps no state and
//! decides nothing about what comes next (that is the operation's). It must never read a
//! clock or do I/O, and it never copies a caller's tool arguments into an intermediate tree:
//! they are serialised from borrowed fields.

use std::sync::{Arc, OnceLock};

use http::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Uri};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::jsonrpc::{RequestId, RpcError};
use crate::model::{ClientInfo, ProtocolVersion, SessionInfo};

/// The session header.
pub const SESSION_HEADER: &str = "mcp-session-id";
/// The negotiated-version header.
pub const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";
/// The header naming the last event seen when a stream is resumed.
pub const LAST_EVENT_ID_HEADER: &str = "last-event-id";
/// The header naming the JSON-RPC method of a modern request.
pub const METHOD_HEADER: &str = "mcp-method";
/// The header naming the tool, prompt (`params.name`) or resource (`params.uri`) of a modern
/// request.
pub const NAME_HEADER: &str = "mcp-name";
/// The longest session id this client will echo back.
pub const MAX_SESSION_ID_LEN: usize = 256;

/// The header names as values, made once: a `&str` name is parsed again at every insert.
pub(crate) const SESSION: HeaderName = HeaderName::from_static(SESSION_HEADER);
const PROTOCOL_VERSION: HeaderName = HeaderName::from_static(PROTOCOL_VERSION_HEADER);
const LAST_EVENT_ID: HeaderName = HeaderName::from_static(LAST_EVENT_ID_HEADER);
const MCP_METHOD: HeaderName = HeaderName::from_static(METHOD_HEADER);
const MCP_NAME: HeaderName = HeaderName::from_static(NAME_HEADER);

/// Headers a caller may not set: the transport sets them itself.
pub(crate) const RESERVED_HEADERS: [&str; 10] = [
    "content-type",
    "accept",
    SESSION_HEADER,
    PROTOCOL_VERSION_HEADER,
    LAST_EVENT_ID_HEADER,
    METHOD_HEADER,
    NAME_HEADER,
    "host",
    "content-length",
    "transfer-encoding",
];

/// Where requests go and what every one of them carries.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Endpoint<'a> {
    pub(crate) uri: &'a Uri,
    /// The caller's extra headers (e.g. `Authorization`).
    pub(crate) headers: &'a HeaderMap,
    /// Over stdio messages are lines: a request is its body alone, no URL and no header.
    pub(crate) lines: bool,
}

impl Endpoint<'_> {
    /// A POST of one JSON-RPC message: JSON in, JSON or an event stream accepted. `info` is
    /// the handshake in force (committed or still pending), `None` for `initialize`.
    pub(crate) fn post(&self, body: Vec<u8>, info: Option<&SessionInfo>) -> http::Request<Vec<u8>> {
        self.request(Method::POST, body, info)
    }

    /// A POST of one modern request: the version, the method and what the request names (a
    /// tool, a prompt, a resource, a task) mirrored into their headers, so intermediaries can
    /// route without reading the body.
    pub(crate) fn post_modern(
        &self,
        body: Vec<u8>,
        version: ProtocolVersion,
        method: &'static str,
        name: Option<&str>,
        params: Vec<(http::HeaderName, HeaderValue)>,
    ) -> http::Request<Vec<u8>> {
        let mut request = self.request(Method::POST, body, None);
        if self.lines {
            return request;
        }
        let headers = request.headers_mut();
        headers.insert(PROTOCOL_VERSION, HeaderValue::from_static(version.as_str()));
        headers.insert(MCP_METHOD, HeaderValue::from_static(method));
        if let Some(name) = name {
            headers.insert(MCP_NAME, header_value(name));
        }
        for (name, value) in params {
            headers.insert(name, value);
        }
        request
    }

    /// A GET opening a stream (the standalone stream, or a resumption when `last_event_id`
    /// names where to resume from).
    pub(crate) fn get(
        &self,
        info: Option<&SessionInfo>,
        last_event_id: Option<&str>,
    ) -> http::Request<Vec<u8>> {
        let mut request = self.request(Method::GET, Vec::new(), info);
        if let Some(value) = last_event_id.and_then(|id| HeaderValue::from_str(id).ok()) {
            request.headers_mut().insert(LAST_EVENT_ID, value);
        }
        request
    }

    /// A DELETE ending the session.
    pub(crate) fn delete(&self, info: Option<&SessionInfo>) -> http::Request<Vec<u8>> {
        self.request(Method::DELETE, Vec::new(), info)
    }

    fn request(
        &self,
        method: Method,
        body: Vec<u8>,
        info: Option<&SessionInfo>,
    ) -> http::Request<Vec<u8>> {
        let mut request = http::Request::new(body);
        *request.method_mut() = method.clone();
        if self.lines {
            return request;
        }
        *request.uri_mut() = self.uri.clone();
        let headers = request.headers_mut();
        headers.clone_from(self.headers);
        if method == Method::POST {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            headers.insert(
                ACCEPT,
                HeaderValue::from_static("application/json, text/event-stream"),
            );
        } else if method == Method::GET {
            headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        }
        if let Some(info) = info {
            if let Some(id) = &info.session_id {
                // The id was checked to be visible ASCII when it arrived.
                if let Ok(value) = HeaderValue::from_str(id) {
                    headers.insert(SESSION, value);
                }
            }
            headers.insert(
                PROTOCOL_VERSION,
                HeaderValue::from_static(info.protocol_version.as_str()),
            );
        }
        request
    }
}

/// A text as a header value by the modern value-encoding rule: as is when it is visible ASCII
/// with inner spaces or tabs only, else (non-ASCII, control characters, leading or trailing
/// whitespace, or a plain value that looks like the sentinel) `=?base64?<UTF-8 in Base64>?=`.
pub(crate) fn header_value(text: &str) -> HeaderValue {
    let header_safe = text
        .bytes()
        .all(|b| matches!(b, 0x21..=0x7E | b' ' | b'\t'));
    let padded = text.starts_with([' ', '\t']) || text.ends_with([' ', '\t']);
    let sentinel = text.starts_with("=?base64?") && text.ends_with("?=");
    let plain = !text.is_empty() && header_safe && !padded && !sentinel;
    if plain {
        if let Ok(value) = HeaderValue::from_str(text) {
            return value;
        }
    }
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
    // Base64 is visible ASCII: this cannot fail.
    HeaderValue::from_str(&format!("=?base64?{encoded}?=")).unwrap_or(HeaderValue::from_static(""))
}

/// What every modern request of one configuration carries in `_meta` whatever it asks (the
/// version, the client's capabilities and who it is, the trace context, the log level), as
/// members and as the JSON object they serialise to: built once per configuration, so a
/// request that adds nothing of its own writes the text as it is.
#[derive(Debug)]
pub(crate) struct ModernMeta {
    version: ProtocolVersion,
    /// The members, for a request that adds its own (a progress token, the time left).
    pub(crate) members: Map<String, Value>,
    /// `members` as a JSON object.
    pub(crate) text: Box<RawValue>,
}

impl ModernMeta {
    /// The members for `version`: the client's `capabilities`, who it is (`client`), the
    /// configuration's own `extra` members (the trace context) and the log level asked for.
    pub(crate) fn new(
        version: ProtocolVersion,
        capabilities: Map<String, Value>,
        client: &ClientInfo,
        extra: &Map<String, Value>,
        log_level: Option<crate::message::LogLevel>,
    ) -> Self {
        let mut members = Map::new();
        members.insert(
            "io.modelcontextprotocol/protocolVersion".to_owned(),
            Value::from(version.as_str()),
        );
        members.insert(
            "io.modelcontextprotocol/clientCapabilities".to_owned(),
            Value::Object(capabilities),
        );
        members.insert(
            "io.modelcontextprotocol/clientInfo".to_owned(),
            json!({"name": client.name, "version": client.version}),
        );
        members.extend(extra.clone());
        if let Some(level) = log_level {
            let key = "io.modelcontextprotocol/logLevel".to_owned();
            members.insert(key, Value::from(level.as_str()));
        }
        // Serialising a map of strings and maps cannot fail.
        let text =
            serde_json::value::to_raw_value(&members).unwrap_or_else(|_| RawValue::NULL.to_owned());
        Self {
            version,
            members,
            text,
        }
    }
}

/// A configuration's [`ModernMeta`], without and with the tasks extension declared, built
/// on first use. A clone starts empty: a cloned configuration may be changed before it is
/// used, and must not carry what the first one declared.
#[derive(Default)]
pub(crate) struct MetaCache([OnceLock<Arc<ModernMeta>>; 2]);

impl MetaCache {
    /// The members for `version` (with the tasks extension when `tasks`), `build` called
    /// when this cache has none for them. The first version asked keeps its slot; another
    /// version is built each time (a session speaks one version).
    pub(crate) fn get(
        &self,
        version: ProtocolVersion,
        tasks: bool,
        build: impl FnOnce() -> ModernMeta,
    ) -> Arc<ModernMeta> {
        let slot = &self.0[usize::from(tasks)];
        match slot.get() {
            Some(meta) if meta.version == version => Arc::clone(meta),
            Some(_) => Arc::new(build()),
            None => Arc::clone(slot.get_or_init(|| Arc::new(build()))),
        }
    }
}

impl Clone for MetaCache {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl std::fmt::Debug for MetaCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MetaCache(..)")
    }
}

/// A `tools/call`'s `_meta` beside its progress token, if any: nothing, these members, or a
/// modern configuration's own (written as its serialised text when nothing is added).
#[derive(Debug, Clone, Copy)]
pub(crate) enum CallMeta<'a> {
    /// No members.
    None,
    /// These members.
    Members(&'a Map<String, Value>),
    /// A modern configuration's members.
    Modern(&'a ModernMeta),
}

/// Checks a session id before it is ever echoed: visible ASCII (0x21-0x7E), 1 to 256 bytes.
pub(crate) fn valid_session_id(raw: &[u8]) -> bool {
    !raw.is_empty()
        && raw.len() <= MAX_SESSION_ID_LEN
        && raw.iter().all(|b| (0x21..=0x7E).contains(b))
}

/// The body of a `tools/call`, serialised from borrowed fields: no copy of the arguments, no
/// `Value` tree. `progress_token` asks the server for progress notifications; `meta` holds
/// further `_meta` members (the modern request metadata, the trace context), when there are
/// any.
pub(crate) fn call_tool(
    id: i64,
    name: &str,
    arguments: &Map<String, Value>,
    progress_token: Option<i64>,
    meta: CallMeta<'_>,
    input: Option<&InputRound>,
    task: bool,
) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Meta<'a> {
        #[serde(rename = "progressToken", skip_serializing_if = "Option::is_none")]
        progress_token: Option<i64>,
        #[serde(flatten, skip_serializing_if = "Option::is_none")]
        members: Option<&'a Map<String, Value>>,
    }
    #[derive(serde::Serialize)]
    #[serde(untagged)]
    enum MetaField<'a> {
        Members(Meta<'a>),
        Text(&'a RawValue),
    }
    #[derive(serde::Serialize)]
    struct CallParams<'a> {
        name: &'a str,
        arguments: &'a Map<String, Value>,
        #[serde(rename = "inputResponses", skip_serializing_if = "Option::is_none")]
        input_responses: Option<&'a Map<String, Value>>,
        #[serde(rename = "requestState", skip_serializing_if = "Option::is_none")]
        request_state: Option<&'a Value>,
        /// 2025-11-25: the call is to run as a task (the server's default TTL).
        #[serde(skip_serializing_if = "Option::is_none")]
        task: Option<Map<String, Value>>,
        #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
        meta: Option<MetaField<'a>>,
    }
    let beside = |members| {
        Some(MetaField::Members(Meta {
            progress_token,
            members,
        }))
    };
    let meta = match meta {
        CallMeta::Modern(modern) if progress_token.is_none() => Some(MetaField::Text(&modern.text)),
        CallMeta::Modern(modern) => beside(Some(&modern.members)),
        CallMeta::Members(members) => beside(Some(members)),
        CallMeta::None if progress_token.is_none() => None,
        CallMeta::None => beside(None),
    };
    let params = CallParams {
        name,
        arguments,
        input_responses: input.map(|round| &round.responses),
        request_state: input.and_then(|round| round.state.as_ref()),
        task: task.then(Map::new),
        meta,
    };
    crate::jsonrpc::request_with(id, "tools/call", &params)
}

/// What a retry of a request carries after the server asked for more input (a multi
/// round-trip request): the answers keyed as the server keyed its requests, and its
/// `requestState` exactly as it came (absent when it sent none).
#[derive(Debug, Clone, Default)]
pub(crate) struct InputRound {
    pub(crate) responses: Map<String, Value>,
    pub(crate) state: Option<Value>,
}

impl InputRound {
    /// Adds the round's fields to a request's params.
    pub(crate) fn add_to(&self, params: &mut Map<String, Value>) {
        params.insert(
            "inputResponses".to_owned(),
            Value::Object(self.responses.clone()),
        );
        if let Some(state) = &self.state {
            params.insert("requestState".to_owned(), state.clone());
        }
    }
}

/// The answer to a request the server sent: its result or a JSON-RPC error, under its id.
pub(crate) fn reply(id: &RequestId, reply: Result<Value, RpcError>) -> Vec<u8> {
    let message = match reply {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id.to_value(), "result": result}),
        Err(error) => {
            let mut object = json!({"code": error.code, "message": error.message});
            if let Some(data) = error.data {
                object["data"] = data;
            }
            json!({"jsonrpc": "2.0", "id": id.to_value(), "error": object})
        }
    };
    // Serialising a `Value` built from maps and strings cannot fail.
    serde_json::to_vec(&message).unwrap_or_default()
}

/// The `notifications/cancelled` naming the interrupted request.
pub(crate) fn cancelled(request_id: i64) -> Vec<u8> {
    let mut params = Map::new();
    params.insert("requestId".to_owned(), Value::from(request_id));
    params.insert("reason".to_owned(), Value::from("cancelled by the caller"));
    crate::jsonrpc::notification("notifications/cancelled", params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_modern_call_writes_its_kept_meta_as_the_members_would_be_written() {
        let version = ProtocolVersion::V2026_07_28;
        let client = ClientInfo::default();
        let modern = ModernMeta::new(version, Map::new(), &client, &Map::new(), None);
        let members = modern.members.clone();
        let arguments = Map::from_iter([("text".to_owned(), Value::from("hi"))]);
        let call = |progress, meta| call_tool(7, "echo", &arguments, progress, meta, None, false);
        // The text as it was kept is the members as they would be written.
        assert_eq!(
            call(None, CallMeta::Modern(&modern)),
            call(None, CallMeta::Members(&members))
        );
        // A progress token goes beside the members, none lost.
        let with_token: Value =
            serde_json::from_slice(&call(Some(7), CallMeta::Modern(&modern))).unwrap();
        let meta = with_token["params"]["_meta"].as_object().unwrap();
        assert_eq!(meta["progressToken"], 7);
        assert!(
            members
                .iter()
                .all(|(key, value)| meta.get(key) == Some(value))
        );
        assert_eq!(meta.len(), members.len() + 1);
        let bare: Value = serde_json::from_slice(&call(None, CallMeta::None)).unwrap();
        assert!(bare["params"].get("_meta").is_none());
    }

    #[test]
    fn a_kept_meta_is_the_first_version_s_and_a_clone_keeps_none() {
        let built = std::cell::Cell::new(0);
        let build = |version| {
            built.set(built.get() + 1);
            ModernMeta::new(
                version,
                Map::new(),
                &ClientInfo::default(),
                &Map::new(),
                None,
            )
        };
        let cache = MetaCache::default();
        let latest = ProtocolVersion::V2026_07_28;
        let other = ProtocolVersion::V2025_11_25;
        cache.get(latest, false, || build(latest));
        cache.get(latest, false, || build(latest));
        assert_eq!(built.get(), 1);
        // The other slot, and another version, are their own.
        cache.get(latest, true, || build(latest));
        assert_eq!(cache.get(other, false, || build(other)).version, other);
        assert_eq!(cache.get(latest, false, || build(latest)).version, latest);
        assert_eq!(built.get(), 3);
        // A clone (a configuration copied to be changed) builds its own.
        cache.clone().get(latest, false, || build(latest));
        assert_eq!(built.get(), 4);
    }

    #[test]
    fn session_ids_are_visible_ascii_of_at_most_256_bytes() {
        assert!(valid_session_id(b"abc-123"));
        assert!(valid_session_id(&[b'x'; 256]));
        assert!(!valid_session_id(&[b'x'; 257]));
        assert!(!valid_session_id(b""));
        assert!(!valid_session_id(b"has space"));
        assert!(!valid_session_id(b"tab\there"));
        assert!(!valid_session_id("caf\u{e9}".as_bytes()));
    }

    #[test]
    fn header_values_are_plain_when_safe_and_base64_otherwise() {
        let shown = |text: &str| header_value(text).to_str().unwrap().to_owned();
        assert_eq!(shown("us-west1"), "us-west1");
        assert_eq!(shown("a b"), "a b");
        assert_eq!(shown("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
        assert_eq!(shown(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(shown("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(
            shown("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
    }

    #[test]
    fn a_get_carries_the_last_event_id_and_accepts_only_a_stream() {
        let uri: Uri = "http://127.0.0.1:1/mcp".parse().unwrap();
        let headers = HeaderMap::new();
        let endpoint = Endpoint {
            uri: &uri,
            headers: &headers,
            lines: false,
        };
        let get = endpoint.get(None, Some("ev-7"));
        assert_eq!(get.method(), Method::GET);
        assert_eq!(get.headers()[ACCEPT], "text/event-stream");
        assert_eq!(get.headers()[LAST_EVENT_ID_HEADER], "ev-7");
        assert!(get.body().is_empty());
        let delete = endpoint.delete(None);
        assert_eq!(delete.method(), Method::DELETE);
        assert!(!delete.headers().contains_key(ACCEPT));
    }
}
