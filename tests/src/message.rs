//! A JSON-RPC message as the test server classifies it (request, notification, a client's
//! response, batch, invalid) and the label its delays, hostile modes and records go by. A leaf:
//! the HTTP server, the stdio server, the era rules and the OAuth mode all read it, and it
//! must never need any of them.

use serde_json::Value;

/// What kind of JSON-RPC message a POST body holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RpcKind {
    /// A request (`method` and `id`).
    Request,
    /// A notification (`method`, no `id`).
    Notification,
    /// A response sent by the client (`result` or `error`, no `method`).
    Response,
    /// A JSON array (batch); answered with an error.
    Batch,
    /// Valid JSON but not a JSON-RPC message.
    Invalid,
}

/// A classified JSON-RPC message.
#[derive(Debug, Clone)]
pub(crate) struct Message {
    pub(crate) kind: RpcKind,
    pub(crate) method: Option<String>,
    pub(crate) id: Option<Value>,
    pub(crate) params: Option<Value>,
}

impl Message {
    /// Classifies a parsed POST body.
    pub(crate) fn classify(value: &Value) -> Self {
        let (kind, method, id, params) = match value {
            Value::Array(_) => (RpcKind::Batch, None, None, None),
            Value::Object(obj) => {
                let method = obj.get("method").and_then(Value::as_str).map(str::to_owned);
                let id = obj.get("id").cloned();
                let params = obj.get("params").cloned();
                let kind = match (&method, &id) {
                    (Some(_), Some(_)) => RpcKind::Request,
                    (Some(_), None) => RpcKind::Notification,
                    (None, _) if obj.contains_key("method") => RpcKind::Invalid,
                    (None, _) if obj.contains_key("result") || obj.contains_key("error") => {
                        RpcKind::Response
                    }
                    (None, _) => RpcKind::Invalid,
                };
                (kind, method, id, params)
            }
            _ => (RpcKind::Invalid, None, None, None),
        };
        Self {
            kind,
            method,
            id,
            params,
        }
    }

    /// The name used for delays, hostile modes and [`crate::TestServer::rpc_methods`].
    pub(crate) fn label(&self) -> String {
        match (&self.kind, &self.method) {
            (RpcKind::Response, _) => "(response)".to_owned(),
            (RpcKind::Batch, _) => "(batch)".to_owned(),
            (_, Some(m)) => m.clone(),
            _ => "(invalid)".to_owned(),
        }
    }

    /// The id to answer with (`null` when the message has none).
    pub(crate) fn answer_id(&self) -> Value {
        self.id.clone().unwrap_or(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn classify_messages() {
        assert_eq!(
            Message::classify(&json!({"jsonrpc":"2.0","id":1,"method":"x"})).kind,
            RpcKind::Request
        );
        assert_eq!(
            Message::classify(&json!({"jsonrpc":"2.0","method":"x"})).kind,
            RpcKind::Notification
        );
        assert_eq!(
            Message::classify(&json!({"jsonrpc":"2.0","id":1,"result":{}})).kind,
            RpcKind::Response
        );
        assert_eq!(
            Message::classify(&json!({"jsonrpc":"2.0","id":1,"method":5})).kind,
            RpcKind::Invalid
        );
        assert_eq!(Message::classify(&json!([])).kind, RpcKind::Batch);
        assert_eq!(Message::classify(&json!(3)).kind, RpcKind::Invalid);
    }
}
