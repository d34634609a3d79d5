//! JSON-RPC 2.0 envelopes as MCP uses them over Streamable HTTP.
//!
//! Outgoing messages are built here; incoming ones are classified here. This module decides
//! what a message *is* (a response, a server request, a notification); what an operation does
//! with it lives in the `operation` module.

use serde_json::{Map, Value, json};

/// A request id as it appears on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RequestId {
    /// A numeric id (the only kind this client sends).
    Number(i64),
    /// A string id (servers may use them for their own requests).
    String(String),
}

impl RequestId {
    fn from_value(value: &Value) -> Option<Self> {
        match value {
            Value::Number(n) => n.as_i64().map(Self::Number),
            Value::String(s) => Some(Self::String(s.clone())),
            _ => None,
        }
    }

    /// The id as a JSON value.
    pub fn to_value(&self) -> Value {
        match self {
            Self::Number(n) => Value::from(*n),
            Self::String(s) => Value::from(s.as_str()),
        }
    }
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Number(n) => write!(f, "{n}"),
            Self::String(s) => write!(f, "\"{}\"", mcp_auth::clip(s, 40)),
        }
    }
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// The code; 0 when the server sent none or a non-integer.
    pub code: i64,
    /// The message; `"no message"` when the server sent none.
    pub message: String,
    /// The optional `data`, verbatim.
    pub data: Option<Value>,
}

impl RpcError {
    /// Reads a JSON-RPC error object as leniently as the envelope it came in: a missing or
    /// non-integer code is 0, a missing message `"no message"`.
    pub(crate) fn read(error: &Value) -> Self {
        Self {
            code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
            message: (error.get("message").and_then(Value::as_str))
                .unwrap_or("no message")
                .to_owned(),
            data: error.get("data").cloned(),
        }
    }
}

/// A message that arrived from the server, classified.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Incoming {
    /// A response carrying `result` (with the id it answers).
    Result {
        /// The id as sent (`None` when missing or not a number or string).
        id: Option<RequestId>,
        /// The `result` value, verbatim (the caller checks it is an object).
        result: Value,
    },
    /// A response carrying `error`; checked before `result`, as the reference client does.
    Error {
        /// The id as sent; error envelopes may carry `null`, none or a foreign string.
        id: Option<RequestId>,
        /// The error object.
        error: RpcError,
    },
    /// A request from the server (it carries a method and an id) that expects an answer.
    Request {
        /// The server's id for it.
        id: RequestId,
        /// The method.
        method: String,
        /// The params (`Null` when absent).
        params: Value,
    },
    /// A notification from the server (a method without an id).
    Notification {
        /// The method.
        method: String,
        /// The params (`Null` when absent).
        params: Value,
    },
    /// An object that is none of the above.
    Neither,
}

impl Incoming {
    /// The error code, when this is an error response.
    pub(crate) fn error_code(&self) -> Option<i64> {
        match self {
            Self::Error { error, .. } => Some(error.code),
            _ => None,
        }
    }
}

/// Classifies one decoded JSON-RPC object. It takes the object by value so a large `result`
/// is moved to the caller, never copied.
pub(crate) fn classify(mut message: Map<String, Value>) -> Incoming {
    let id = message.get("id").and_then(RequestId::from_value);
    if let Some(Value::String(method)) = message.remove("method") {
        let params = message.remove("params").unwrap_or(Value::Null);
        return match id {
            Some(id) => Incoming::Request { id, method, params },
            None => Incoming::Notification { method, params },
        };
    }
    if let Some(error) = message.get("error") {
        let error = RpcError::read(error);
        return Incoming::Error { id, error };
    }
    match message.remove("result") {
        Some(result) => Incoming::Result { id, result },
        None => Incoming::Neither,
    }
}

/// Serialises a request. `params` is always an object (`{}` when empty, never `[]`).
pub(crate) fn request(id: i64, method: &str, params: Map<String, Value>) -> Vec<u8> {
    // Serialising a `Value` built from maps and strings cannot fail.
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
        .unwrap_or_default()
}

/// Serialises a request whose `params` is any serialisable object, without building a
/// `Value` tree first.
pub(crate) fn request_with(id: i64, method: &str, params: &impl serde::Serialize) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Envelope<'a, P> {
        jsonrpc: &'static str,
        id: i64,
        method: &'a str,
        params: &'a P,
    }
    // Serialising maps, strings and numbers cannot fail.
    serde_json::to_vec(&Envelope {
        jsonrpc: "2.0",
        id,
        method,
        params,
    })
    .unwrap_or_default()
}

/// Serialises a notification. `params` is always an object.
pub(crate) fn notification(method: &str, params: Map<String, Value>) -> Vec<u8> {
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!("test input is an object"),
        }
    }

    #[test]
    fn error_is_checked_before_result() {
        let m = obj(
            json!({"jsonrpc":"2.0","id":1,"result":{},"error":{"code":-32601,"message":"nope"}}),
        );
        assert!(matches!(
            classify(m),
            Incoming::Error {
                error: RpcError { code: -32601, .. },
                ..
            }
        ));
    }

    #[test]
    fn odd_error_envelopes_still_classify() {
        let m = obj(json!({"jsonrpc":"2.0","id":null,"error":{"code":"x"}}));
        let Incoming::Error { id, error } = classify(m) else {
            panic!("not an error")
        };
        assert_eq!(id, None);
        assert_eq!(error.code, 0);
        assert_eq!(error.message, "no message");
    }

    #[test]
    fn methods_with_and_without_ids() {
        let req = obj(json!({"jsonrpc":"2.0","id":"s1","method":"ping"}));
        assert!(matches!(classify(req), Incoming::Request { .. }));
        let note = obj(json!({"jsonrpc":"2.0","method":"notifications/progress","params":{}}));
        assert!(matches!(classify(note), Incoming::Notification { .. }));
        assert_eq!(classify(obj(json!({"jsonrpc":"2.0"}))), Incoming::Neither);
    }

    #[test]
    fn empty_params_are_an_object() {
        let body = request(1, "tools/list", Map::new());
        assert_eq!(
            String::from_utf8(body).unwrap(),
            r#"{"id":1,"jsonrpc":"2.0","method":"tools/list","params":{}}"#
        );
    }
}
