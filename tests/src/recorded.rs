//! What the test server keeps of each request it read ([`RecordedRequest`]): the record the
//! server appends to and the OAuth mode names as the client's legs. A leaf beside the
//! message classification: it must never need the server, the script or the OAuth mode.

use std::time::Instant;

use serde_json::Value;

use crate::message::RpcKind;

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// HTTP method, e.g. `"POST"`.
    pub method: String,
    /// Request target as sent, e.g. `"/mcp"`.
    pub path: String,
    /// Headers in arrival order, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// Raw body bytes (chunked framing removed).
    pub body: Vec<u8>,
    /// JSON-RPC method, for requests and notifications.
    pub rpc_method: Option<String>,
    /// JSON-RPC id, if the message has one.
    pub rpc_id: Option<Value>,
    /// Kind of JSON-RPC message, for POSTs whose body is JSON.
    pub rpc_kind: Option<RpcKind>,
    /// When the request had been read completely.
    pub received_at: Instant,
}

impl RecordedRequest {
    /// First value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body parsed as JSON, if it is JSON.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// The label used by [`TestServer::rpc_methods`](crate::TestServer::rpc_methods): the JSON-RPC method,
    /// `"(response)"` for client responses, the HTTP method for non-POSTs,
    /// `None` for POSTs that are not JSON-RPC messages.
    pub fn label(&self) -> Option<String> {
        match self.rpc_kind {
            Some(RpcKind::Response) => Some("(response)".to_owned()),
            Some(RpcKind::Request | RpcKind::Notification) => self.rpc_method.clone(),
            _ if self.method != "POST" => Some(self.method.clone()),
            _ => None,
        }
    }
}
