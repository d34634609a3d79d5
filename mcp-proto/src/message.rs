//! What a server sends of its own, read into types: its notifications ([`Notification`], with
//! a log message's and a progress report's readings) and what an elicitation asks
//! ([`UrlElicitation`], [`accept_elicitation_with_defaults`] for a form). They reach the caller
//! as [`Event`](crate::Event)s and as the requests its responders answer.
//!
//! Plain data and readings: nothing here sends or decides how an operation runs.

use mcp_auth::clip;
use serde_json::{Map, Value};

use crate::model::LABEL_LIMIT;

/// The severity of a server's log message (RFC 5424's, as MCP names them), least severe
/// first: asking for a level asks for it and every more severe one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum LogLevel {
    /// Detailed debugging information.
    Debug,
    /// General informational messages.
    Info,
    /// Normal but significant events.
    Notice,
    /// Warning conditions.
    Warning,
    /// Error conditions.
    Error,
    /// Critical conditions.
    Critical,
    /// Action must be taken immediately.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LogLevel {
    /// Every level, least severe first.
    pub const ALL: [Self; 8] = [
        Self::Debug,
        Self::Info,
        Self::Notice,
        Self::Warning,
        Self::Error,
        Self::Critical,
        Self::Alert,
        Self::Emergency,
    ];

    /// The level as the protocol spells it (`debug`, `info`, ...).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Notice => "notice",
            Self::Warning => "warning",
            Self::Error => "error",
            Self::Critical => "critical",
            Self::Alert => "alert",
            Self::Emergency => "emergency",
        }
    }

    /// The level spelled `text`, if it is one.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|level| level.as_str() == text)
    }
}

/// A URL-mode elicitation (`elicitation/create` with `mode: "url"`): the server asks the
/// person to open a page. Show the URL and its domain before anything is opened; never open
/// it unasked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlElicitation {
    /// What the server says of it (clipped).
    pub message: String,
    /// The page, as the server sent it (clipped).
    pub url: String,
    /// The URL's host, what the person must check (`None`: the URL has none).
    pub domain: Option<String>,
    /// The server's id of the elicitation, when given (clipped).
    pub elicitation_id: Option<String>,
}

impl UrlElicitation {
    /// The URL elicitation `params` (of an `elicitation/create`) ask for, if they are one.
    pub fn of(params: &Value) -> Option<Self> {
        if params.get("mode").and_then(Value::as_str) != Some("url") {
            return None;
        }
        let text = |key: &str| {
            (params.get(key).and_then(Value::as_str)).map(|s| clip(s, mcp_auth::QUOTE_LIMIT))
        };
        let url = params.get("url").and_then(Value::as_str)?;
        let domain = (url.parse::<http::Uri>().ok())
            .and_then(|uri| uri.host().map(|host| clip(host, LABEL_LIMIT)));
        Some(Self {
            message: text("message").unwrap_or_default(),
            url: clip(url, mcp_auth::QUOTE_LIMIT),
            domain,
            elicitation_id: text("elicitationId"),
        })
    }
}

/// A server's log message (`notifications/message`), as [`Notification::log`] reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct LogMessage {
    /// Its severity, as the server spelled it (clipped); see [`LogLevel::parse`].
    pub level: String,
    /// The logger's name, when given (clipped).
    pub logger: Option<String>,
    /// What it says, verbatim.
    pub data: Value,
}

/// A notification the server sent while answering (progress, logging, list changes).
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// The method, e.g. `notifications/progress`.
    pub method: String,
    /// The params, verbatim (`Null` when absent).
    pub params: Value,
}

/// A `notifications/progress` reading.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Progress so far.
    pub progress: f64,
    /// The total, when known.
    pub total: Option<f64>,
    /// The message, clipped, when given.
    pub message: Option<String>,
}

impl Notification {
    /// The progress this notification reports, when it is `notifications/progress`.
    pub fn progress(&self) -> Option<Progress> {
        if self.method != "notifications/progress" {
            return None;
        }
        Some(Progress {
            progress: self.params.get("progress")?.as_f64()?,
            total: self.params.get("total").and_then(Value::as_f64),
            message: self
                .params
                .get("message")
                .and_then(Value::as_str)
                .map(|m| clip(m, mcp_auth::QUOTE_LIMIT)),
        })
    }

    /// The log message this notification carries, when it is `notifications/message` with a
    /// level.
    pub fn log(&self) -> Option<LogMessage> {
        if self.method != "notifications/message" {
            return None;
        }
        let text = |key: &str| {
            (self.params.get(key).and_then(Value::as_str)).map(|s| clip(s, LABEL_LIMIT))
        };
        Some(LogMessage {
            level: text("level")?,
            logger: text("logger"),
            data: self.params.get("data").cloned().unwrap_or(Value::Null),
        })
    }
}

/// An `elicitation/create` answer that accepts, filling every field of the requested schema
/// that declares a `default` with that default (strings, numbers, integers, booleans, enums).
/// A form the defaults cannot complete (a `required` field without a default) is declined
/// instead: an acceptance without it would break the server's schema.
///
/// ```
/// use mcp_proto::message::accept_elicitation_with_defaults;
/// use serde_json::json;
/// let params = json!({"message": "?", "requestedSchema": {"type": "object", "properties": {
///     "name": {"type": "string", "default": "Ada"}, "age": {"type": "integer", "default": 36},
///     "nick": {"type": "string"}}}});
/// assert_eq!(
///     accept_elicitation_with_defaults(&params),
///     json!({"action": "accept", "content": {"name": "Ada", "age": 36}})
/// );
/// ```
pub fn accept_elicitation_with_defaults(params: &Value) -> Value {
    let mut content = Map::new();
    if let Some(properties) = params
        .pointer("/requestedSchema/properties")
        .and_then(Value::as_object)
    {
        for (name, schema) in properties {
            if let Some(default) = schema.get("default") {
                content.insert(name.clone(), default.clone());
            }
        }
    }
    let required = (params.pointer("/requestedSchema/required"))
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let unfilled =
        (required.iter().filter_map(Value::as_str)).any(|name| !content.contains_key(name));
    if unfilled {
        return serde_json::json!({"action": "decline"});
    }
    serde_json::json!({"action": "accept", "content": content})
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_form_the_defaults_cannot_complete_is_declined() {
        let form = |required: Value| {
            json!({"message": "Sure?", "requestedSchema": {"type": "object", "properties": {
                "confirm": {"type": "boolean"}, "note": {"type": "string", "default": "-"}},
                "required": required}})
        };
        assert_eq!(
            accept_elicitation_with_defaults(&form(json!(["confirm"]))),
            json!({"action": "decline"})
        );
        assert_eq!(
            accept_elicitation_with_defaults(&form(json!(["note"]))),
            json!({"action": "accept", "content": {"note": "-"}})
        );
    }
}
