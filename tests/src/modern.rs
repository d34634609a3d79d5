//! The 2026-07-28 ("modern") era of the test server: which requests are modern, how their
//! headers are checked against their bodies, and what a modern-only server answers a legacy
//! client. A dual-era server serves both, choosing by how each request opens.

use base64::Engine as _;
use serde_json::{Value, json};

use crate::era::{MODERN_VERSIONS, SUPPORTED_VERSIONS, ServerEra};
use crate::http::Request;
use crate::message::{Message, RpcKind};
use crate::script::Script;

/// What the era rules make of one POST.
pub(crate) enum Verdict {
    /// Serve it as a legacy request (handshake and sessions).
    Legacy,
    /// Serve it statelessly, as the modern era does.
    Modern,
    /// Refuse it: status and JSON body.
    Refuse(u16, Vec<u8>),
}

/// The modern version a request claims in its `_meta`, if any.
fn meta_version(msg: &Message) -> Option<&str> {
    msg.params
        .as_ref()?
        .get("_meta")?
        .get("io.modelcontextprotocol/protocolVersion")?
        .as_str()
}

fn refuse(msg: &Message, code: i64, message: &str, data: Option<Value>) -> Verdict {
    let mut error = json!({"code": code, "message": message});
    if let Some(data) = data {
        error["data"] = data;
    }
    let body = json!({"jsonrpc": "2.0", "id": msg.answer_id(), "error": error});
    Verdict::Refuse(400, serde_json::to_vec(&body).unwrap_or_default())
}

/// `-32022`, naming every version the server speaks: its modern ones, and for a dual-era
/// server the legacy ones too.
fn unsupported(script: &Script, msg: &Message, requested: &str) -> Verdict {
    let mut supported: Vec<&str> = script.modern_versions.iter().map(String::as_str).collect();
    if script.era == ServerEra::Dual {
        supported.extend(SUPPORTED_VERSIONS);
    }
    refuse(
        msg,
        -32022,
        "Unsupported protocol version",
        Some(json!({"supported": supported, "requested": requested})),
    )
}

/// Decodes a header value that may use the `=?base64?...?=` sentinel.
fn header_text(value: &str) -> Option<String> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    {
        Some(encoded) => base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok()),
        None => Some(value.to_owned()),
    }
}

/// Applies the era rules to one message: a POST over HTTP (`headers` is its request, whose
/// modern headers are compared with the body), or a line over stdio (`headers` is `None`: there
/// are none, so only the body's `_meta` counts).
pub(crate) fn judge(script: &Script, headers: Option<&Request>, msg: &Message) -> Verdict {
    let header = |name: &str| headers.and_then(|req| req.header(name));
    let claims_modern = meta_version(msg).is_some()
        || header("mcp-protocol-version").is_some_and(|v| MODERN_VERSIONS.contains(&v));
    match script.era {
        ServerEra::Legacy => return Verdict::Legacy,
        ServerEra::Dual if !claims_modern => return Verdict::Legacy,
        _ => {}
    }
    if msg.kind != RpcKind::Request {
        // Notifications (a cancellation) are accepted as they come.
        return Verdict::Modern;
    }
    let method = msg.method.as_deref().unwrap_or("");
    if method == "initialize" {
        let requested = msg
            .params
            .as_ref()
            .and_then(|p| p.get("protocolVersion"))
            .and_then(Value::as_str)
            .unwrap_or("");
        return unsupported(script, msg, requested);
    }
    let Some(version) = meta_version(msg) else {
        return refuse(
            msg,
            -32020,
            "Header mismatch: the request has no _meta protocol version",
            None,
        );
    };
    if !script.modern_versions.iter().any(|v| v == version) {
        return unsupported(script, msg, version);
    }
    if headers.is_none() {
        return Verdict::Modern;
    }
    if header("mcp-protocol-version") != Some(version) {
        return refuse(msg, -32020, "Header mismatch: MCP-Protocol-Version", None);
    }
    if header("mcp-method") != Some(method) {
        return refuse(msg, -32020, "Header mismatch: Mcp-Method", None);
    }
    let named = match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        _ => None,
    };
    if let Some(field) = named {
        let body = msg
            .params
            .as_ref()
            .and_then(|p| p.get(field))
            .and_then(Value::as_str);
        let header = header("mcp-name").and_then(header_text);
        if body.is_none() || header.as_deref() != body {
            return refuse(msg, -32020, "Header mismatch: Mcp-Name", None);
        }
    }
    Verdict::Modern
}

/// Adds what every modern result carries: `resultType` (when absent) and, for cacheable
/// results, the caching hints.
pub(crate) fn complete(method: &str, result: &mut Value) {
    let Value::Object(map) = result else {
        return;
    };
    map.entry("resultType").or_insert_with(|| json!("complete"));
    if map.get("resultType") != Some(&json!("complete")) {
        return;
    }
    let scope = match method {
        "server/discover" | "tools/list" | "prompts/list" | "resources/templates/list" => "public",
        "resources/list" | "resources/read" => "private",
        _ => return,
    };
    map.entry("ttlMs").or_insert_with(|| json!(60_000));
    map.entry("cacheScope").or_insert_with(|| json!(scope));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values_decode_the_base64_sentinel() {
        assert_eq!(header_text("echo").as_deref(), Some("echo"));
        assert_eq!(
            header_text("=?base64?Z3LDvMOfZW4=?=").as_deref(),
            Some("grüßen")
        );
        assert_eq!(header_text("=?base64?!!?="), None);
    }

    #[test]
    fn cacheable_results_get_hints_and_others_only_their_type() {
        let mut listing = json!({"tools": []});
        complete("tools/list", &mut listing);
        assert_eq!(listing["ttlMs"], 60_000);
        assert_eq!(listing["cacheScope"], "public");
        let mut call = json!({"content": []});
        complete("tools/call", &mut call);
        assert_eq!(call, json!({"content": [], "resultType": "complete"}));
        let mut asking = json!({"resultType": "input_required"});
        complete("tools/list", &mut asking);
        assert!(asking.get("ttlMs").is_none());
    }
}
