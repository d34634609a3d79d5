//! Typed results: what an operation hands back to the caller.
//!
//! Results keep everything the server sent that the caller may need verbatim (tool schemas,
//! `structuredContent`, unknown content blocks) as raw [`serde_json::Value`]s: this crate
//! validates the envelope, not the tools.

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use mcp_auth::{QUOTE_LIMIT, clip};

mod plain;

/// Why a tool's result is malformed when its `content` is not an array.
const NOT_AN_ARRAY: &str = "the result's \"content\" is not an array";

/// How this client identifies itself in `initialize` (legacy) or in every request's `_meta` (modern).
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

/// Server-reported labels (name, version) are cut at this many characters.
pub const LABEL_LIMIT: usize = 100;

/// A protocol version this client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum ProtocolVersion {
    /// 2025-03-26 (accepted when a server counter-offers it).
    V2025_03_26,
    /// 2025-06-18.
    V2025_06_18,
    /// 2025-11-25 (offered in `initialize` by default).
    V2025_11_25,
    /// 2026-07-28, the first *modern* revision: no handshake, no session, every request
    /// carries its version and the client's capabilities in `_meta`.
    V2026_07_28,
}

impl ProtocolVersion {
    /// The newest legacy version: the one offered in `initialize` by default.
    pub const LATEST: Self = Self::V2025_11_25;
    /// The newest modern version.
    pub const MODERN: Self = Self::V2026_07_28;

    /// Whether this is a modern (stateless, per-request metadata) version rather than a legacy
    /// (handshake and session) one.
    pub const fn is_modern(self) -> bool {
        matches!(self, Self::V2026_07_28)
    }

    /// The wire form, e.g. `"2025-06-18"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::V2025_03_26 => "2025-03-26",
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_11_25 => "2025-11-25",
            Self::V2026_07_28 => "2026-07-28",
        }
    }

    /// Every version this client speaks, newest first.
    pub const ALL: [Self; 4] = [
        Self::V2026_07_28,
        Self::V2025_11_25,
        Self::V2025_06_18,
        Self::V2025_03_26,
    ];

    /// The versions this client speaks, newest first, for a sentence: `"a, b and c"`.
    pub fn supported_list() -> String {
        let names: Vec<&str> = Self::ALL.iter().map(|v| v.as_str()).collect();
        match names.split_last() {
            Some((last, [])) => (*last).to_owned(),
            Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
            None => String::new(),
        }
    }

    /// Parses the wire form; `None` for a version this client does not speak.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == text)
    }
}

/// Which generation of the protocol a server speaks.
///
/// The era is a property of the server, not of a request: a [`Session`](crate::Session) that
/// detects it remembers it for the operations that follow (see
/// [`SessionConfig::with_protocol_version`](crate::SessionConfig::with_protocol_version)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Era {
    /// The `initialize` handshake and sessions (2025-11-25 and earlier).
    Legacy,
    /// Stateless requests with per-request metadata (2026-07-28 and later).
    Modern,
}

impl Era {
    /// The era of `version`.
    pub const fn of(version: ProtocolVersion) -> Self {
        if version.is_modern() {
            Self::Modern
        } else {
            Self::Legacy
        }
    }
}

impl std::fmt::Display for Era {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Legacy => "legacy",
            Self::Modern => "modern",
        })
    }
}

impl std::fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who the server says it is (from `initialize`), labels cut at [`LABEL_LIMIT`] characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInfo {
    /// `serverInfo.name` (`"unknown"` when missing).
    pub name: String,
    /// `serverInfo.version` (`"unknown"` when missing).
    pub version: String,
    /// `serverInfo.title`, when given.
    pub title: Option<String>,
}

/// What the handshake established: the answer to `initialize`, plus the session id.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionInfo {
    /// The negotiated protocol version, sent as `MCP-Protocol-Version` on every later request.
    pub protocol_version: ProtocolVersion,
    /// The server's name and version.
    pub server: ServerInfo,
    /// The server's `capabilities`, verbatim.
    pub capabilities: Value,
    /// The server's `instructions`, verbatim, when given.
    pub instructions: Option<String>,
    /// The `Mcp-Session-Id` the server issued, if it issued one.
    pub session_id: Option<String>,
}

/// One content block of a tool result.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Content {
    /// `{"type":"text","text":...}`.
    Text {
        /// The text.
        text: String,
    },
    /// `{"type":"image","data":...,"mimeType":...}` (base64 data, verbatim).
    Image {
        /// Base64 data.
        data: String,
        /// The MIME type.
        mime_type: String,
    },
    /// `{"type":"audio","data":...,"mimeType":...}` (base64 data, verbatim).
    Audio {
        /// Base64 data.
        data: String,
        /// The MIME type.
        mime_type: String,
    },
    /// Any other block (`resource_link`, `resource`, future types), verbatim.
    Other(Value),
}

impl Content {
    fn from_block(block: &Value) -> Self {
        let text = |key: &str| block.get(key).and_then(Value::as_str).map(str::to_owned);
        match block.get("type").and_then(Value::as_str) {
            Some("text") => match text("text") {
                Some(text) => Self::Text { text },
                None => Self::Other(block.clone()),
            },
            Some(kind @ ("image" | "audio")) => match (text("data"), text("mimeType")) {
                (Some(data), Some(mime_type)) if kind == "image" => Self::Image { data, mime_type },
                (Some(data), Some(mime_type)) => Self::Audio { data, mime_type },
                _ => Self::Other(block.clone()),
            },
            _ => Self::Other(block.clone()),
        }
    }
}

/// The result of `tools/call`.
///
/// `is_error: true` means the *tool* failed (bad arguments, a failing backend) and the server
/// reported it as data; the call itself succeeded. Protocol failures are [`Error`](crate::Error)s.
#[derive(Debug, Clone)]
pub struct CallToolResult {
    /// The content blocks.
    pub content: Vec<Content>,
    /// `structuredContent`, verbatim, when given.
    pub structured_content: Option<Value>,
    /// True only when the server sent `isError: true` (strictly a boolean).
    pub is_error: bool,
    /// The whole `result` object, its JSON text as the server sent it (read it with
    /// [`CallToolResult::raw_object`], or hand it on as it is).
    pub raw: Box<RawValue>,
}

/// Two results are equal when their fields are, and their `raw` objects read as the same
/// JSON (the text may differ in spacing and order).
impl PartialEq for CallToolResult {
    fn eq(&self, other: &Self) -> bool {
        (&self.content, &self.structured_content, self.is_error)
            == (&other.content, &other.structured_content, other.is_error)
            && self.raw_object() == other.raw_object()
    }
}

/// What [`CallToolResult::read_plain`] made of a `result`.
pub(crate) enum Plain {
    /// A tool's result (no task, no request for input), or why it is not one.
    Call(Result<CallToolResult, String>),
    /// Something the operation reads as an object: a task, a request for input, not an object.
    Not(Box<RawValue>),
}

impl CallToolResult {
    /// Reads a `result` object; `Err(detail)` when `content` is present but not an array.
    pub(crate) fn from_result(result: Map<String, Value>) -> Result<Self, String> {
        let content = match result.get("content") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(blocks)) => blocks.iter().map(Content::from_block).collect(),
            Some(_) => return Err(NOT_AN_ARRAY.to_owned()),
        };
        Ok(Self {
            content,
            structured_content: result.get("structuredContent").cloned(),
            is_error: result.get("isError") == Some(&Value::Bool(true)),
            // A `Map` always serialises.
            raw: serde_json::value::to_raw_value(&result).unwrap_or_default(),
        })
    }

    /// Reads a `result` straight into a tool's result, as [`from_result`](Self::from_result)
    /// reads it decoded (a member seen twice counts as its last), without building it as a
    /// `Value` tree: the content blocks are read into their types, only `structuredContent`
    /// and blocks of other types as values. A result that names a task (`resultType` `task`,
    /// or a `task` object) or asks for input (`resultType` `input_required`), or that is not
    /// an object, is handed back for the operation to read as an object.
    pub(crate) fn read_plain(raw: Box<RawValue>) -> Plain {
        let Ok(read) = serde_json::from_str::<plain::Members>(raw.get()) else {
            return Plain::Not(raw);
        };
        if read.names_task_or_input() {
            return Plain::Not(raw);
        }
        let content = match read.content {
            None | Some(plain::Blocks::Null) => Vec::new(),
            Some(plain::Blocks::Read(blocks)) => blocks,
            Some(plain::Blocks::NotAnArray) => return Plain::Call(Err(NOT_AN_ARRAY.to_owned())),
        };
        Plain::Call(Ok(Self {
            content,
            structured_content: read.structured_content,
            is_error: read.is_error == Some(Value::Bool(true)),
            raw,
        }))
    }

    /// The whole `result` object read as JSON (empty if it cannot be: it was checked to be an
    /// object when it arrived).
    pub fn raw_object(&self) -> Map<String, Value> {
        serde_json::from_str(self.raw.get()).unwrap_or_default()
    }

    /// The text blocks joined with newlines: what a terminal user wants to see.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            if let Content::Text { text } = block {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(text);
            }
        }
        out
    }

    /// `structuredContent` read as `T`, for a caller that knows the shape a tool returns.
    ///
    /// ```
    /// use mcp_proto::CallToolResult;
    /// use serde_json::json;
    ///
    /// #[derive(serde::Deserialize, Debug, PartialEq)]
    /// struct Weather {
    ///     temperature: f64,
    /// }
    ///
    /// let result = CallToolResult {
    ///     content: Vec::new(),
    ///     structured_content: Some(json!({ "temperature": 21.5 })),
    ///     is_error: false,
    ///     raw: serde_json::value::to_raw_value(&json!({}))?,
    /// };
    /// let weather: Weather = result.structured()?;
    /// assert_eq!(weather, Weather { temperature: 21.5 });
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Unreadable`]: the tool failed (`isError`), sent no `structuredContent`, or sent one
    /// that is not a `T` (serde's reason, clipped).
    pub fn structured<T: serde::de::DeserializeOwned>(&self) -> Result<T, Unreadable> {
        if self.is_error {
            return Err(Unreadable::ToolFailed(clip(&self.text(), QUOTE_LIMIT)));
        }
        let structured = self
            .structured_content
            .as_ref()
            .ok_or(Unreadable::NoStructuredContent)?;
        T::deserialize(structured)
            .map_err(|error| Unreadable::Type(clip(&error.to_string(), QUOTE_LIMIT)))
    }
}

/// Why a tool's result could not be read as the caller's type
/// ([`CallToolResult::structured`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Unreadable {
    /// The tool failed (`isError: true`); its text, clipped.
    #[error("the tool failed: {0}")]
    ToolFailed(String),
    /// The result carries no `structuredContent`.
    #[error("the result carries no structuredContent")]
    NoStructuredContent,
    /// A resource read has no text or blob content to read.
    #[error("the result has no text or blob content")]
    NoContent,
    /// `structuredContent` (or a resource's JSON) is not of the type: serde's reason, clipped.
    #[error("structuredContent does not fit the type: {0}")]
    Type(String),
}

/// What a subscription asks the server to send (`subscriptions/listen`'s `notifications`
/// filter; in the legacy era the session's stream carries whatever the server sends).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Subscription {
    /// `notifications/tools/list_changed`.
    pub tools_list_changed: bool,
    /// `notifications/prompts/list_changed`.
    pub prompts_list_changed: bool,
    /// `notifications/resources/list_changed`.
    pub resources_list_changed: bool,
    /// `notifications/resources/updated` for these URIs.
    pub resource_subscriptions: Vec<String>,
}

impl Subscription {
    /// The `notifications` filter as `subscriptions/listen` sends it (and as its
    /// acknowledgment says what was granted): only the fields asked for.
    ///
    /// ```
    /// use mcp_proto::Subscription;
    /// let asked = Subscription {
    ///     tools_list_changed: true,
    ///     resource_subscriptions: vec!["file:///notes.txt".into()],
    ///     ..Subscription::default()
    /// };
    /// let filter = serde_json::Value::Object(asked.filter());
    /// assert_eq!(filter, serde_json::json!(
    ///     {"toolsListChanged": true, "resourceSubscriptions": ["file:///notes.txt"]}));
    /// assert_eq!(Subscription::from_filter(&filter), asked);
    /// ```
    pub fn filter(&self) -> Map<String, Value> {
        let mut filter = Map::new();
        for (asked, key) in [
            (self.tools_list_changed, "toolsListChanged"),
            (self.prompts_list_changed, "promptsListChanged"),
            (self.resources_list_changed, "resourcesListChanged"),
        ] {
            if asked {
                filter.insert(key.to_owned(), Value::Bool(true));
            }
        }
        if !self.resource_subscriptions.is_empty() {
            filter.insert(
                "resourceSubscriptions".to_owned(),
                Value::from(self.resource_subscriptions.clone()),
            );
        }
        filter
    }

    /// What a `notifications` filter asks for, read as a server reads it (a relay reads its
    /// host's so): a field that is not `true` is not asked for, and a URI that is not a string
    /// is left out.
    pub fn from_filter(filter: &Value) -> Self {
        let asked = |key: &str| filter.get(key) == Some(&Value::Bool(true));
        let uris = filter
            .get("resourceSubscriptions")
            .and_then(Value::as_array);
        Self {
            tools_list_changed: asked("toolsListChanged"),
            prompts_list_changed: asked("promptsListChanged"),
            resources_list_changed: asked("resourcesListChanged"),
            resource_subscriptions: (uris.into_iter().flatten())
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        }
    }
}

/// How a subscription ended. Its notifications went to the caller as events while it ran.
#[derive(Debug, Clone, PartialEq)]
pub struct SubscriptionEnd {
    /// The filter the server acknowledged (`notifications/subscriptions/acknowledged`), when
    /// it did: the part of the request it agreed to honour.
    pub acknowledged: Option<Value>,
    /// True when the server ended it (a completion result, or the stream's end); false when
    /// the operation's budget did, which is how a subscription normally ends.
    pub by_server: bool,
}

pub(crate) fn server_info(value: Option<&Value>) -> ServerInfo {
    let label = |key: &str| {
        value
            .and_then(|v| v.get(key))
            .and_then(Value::as_str)
            .map(|s| clip(s, LABEL_LIMIT))
    };
    ServerInfo {
        name: label("name").unwrap_or_else(|| "unknown".to_owned()),
        version: label("version").unwrap_or_else(|| "unknown".to_owned()),
        title: label("title"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn is_error_must_be_a_real_boolean() {
        let obj = |v: Value| v.as_object().cloned().unwrap();
        let r = CallToolResult::from_result(obj(json!({"content":[],"isError":"true"}))).unwrap();
        assert!(!r.is_error);
        let r = CallToolResult::from_result(obj(json!({"content":[],"isError":true}))).unwrap();
        assert!(r.is_error);
    }

    #[test]
    fn unknown_blocks_are_kept_verbatim() {
        let block = json!({"type":"resource_link","uri":"file:///x","name":"x"});
        assert_eq!(Content::from_block(&block), Content::Other(block));
    }
}
