//! `mcp-call bridge`'s reading of its host: the lines a host writes to the bridge's stdin, what
//! each asks for, and the answers made of them (`mcp-call/src/bridge/host.rs`).
//!
//! That module lives in the `mcp-call` binary, which has no library: it is compiled here from
//! the binary's own source file (`#[path]`), unchanged, so the target runs exactly the code the
//! bridge runs (the module uses nothing of the binary but itself; its module doc says so).

use mcp_proto::Action;
use serde_json::Value;

/// The bridge's host side, compiled from its source.
#[allow(dead_code)] // What only the binary uses.
#[path = "../../../mcp-call/src/bridge/host.rs"]
mod host;

use host::{FromHost, Plan};

/// A JSON-RPC id: a string or an integer.
fn is_id(id: &Value) -> bool {
    id.is_string() || id.is_i64() || id.is_u64()
}

/// The answer line for `id`, read back: one JSON-RPC message carrying `id`.
fn answered(line: &str, id: &Value) -> Value {
    let message: Value = serde_json::from_str(line).expect("an answer line is JSON");
    assert_eq!(message["jsonrpc"], "2.0", "{line}");
    assert_eq!(
        &message["id"], id,
        "the answer carries the request's id: {line}"
    );
    message
}

/// Target `bridge`: the fuzzer's bytes are what a host writes to the bridge's stdin, lines
/// split at `\n`. Each line is read as the bridge reads it; every request gets a plan, and
/// every answer the bridge could make of a line at once (a result, a refusal) is made and
/// read back. Invariants: no panic on any line; a request's id is a string or an integer and
/// every answer carries it; a line that is not JSON-RPC is answered with -32700 or -32600; a
/// refused request gets -32601 or -32602; a call is forwarded with the name the host gave; the
/// handshake's version is one the bridge speaks; a progress token is a string or an integer;
/// what the host declares it answers is consistent (URL mode only with elicitation); the
/// capabilities relayed name only what the bridge relays, with list changes only where the
/// subscription it listens with asks for them; a subscription's plan names the URI the host
/// gave; an upstream's update relayed carries its URI and none of its `_meta`; an input round
/// carries the upstream's request as it was.
pub fn bridge(data: &[u8]) {
    for line in data.split(|&b| b == b'\n') {
        let Some(message) = host::read(line) else {
            continue;
        };
        match message {
            FromHost::Request { id, method, params } => request(&id, &method, &params),
            FromHost::Invalid { id, code, message } => {
                assert!(
                    matches!(code, host::code::PARSE | host::code::INVALID_REQUEST),
                    "{code}"
                );
                let line = host::response(&id, Err(host::refusal(code, &message)));
                answered(&line, &id);
            }
            FromHost::Cancelled { request_id } => {
                let _ = request_id.to_string();
            }
            FromHost::Response { id, answer } => {
                let _ = id.to_string();
                if let Err(error) = answer {
                    let _ = host::rpc_error(&error);
                }
            }
            FromHost::Notification { .. } => {}
        }
    }
}

fn request(id: &Value, method: &str, params: &Value) {
    assert!(is_id(id), "a request's id: {id}");
    if let Some(token) = host::progress_token(params) {
        assert!(is_id(&token), "a progress token: {token}");
        let line: Value = serde_json::from_str(&host::progress_line(&token, params))
            .expect("a progress line is JSON");
        assert_eq!(line["params"]["progressToken"], token);
    }
    let modern = host::is_modern(params);
    let answers = host::HostAnswers::declared(params);
    assert!(
        !answers.url_elicitation || answers.elicitation,
        "URL mode without elicitation: {params}"
    );
    let relayed = host::relayed_capabilities(params);
    let keys: Vec<&String> = relayed
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    for key in &keys {
        assert!(
            ["tools", "resources", "prompts", "completions"].contains(&key.as_str()),
            "relayed {key}"
        );
    }
    if let Some(changes) = host::list_changes(params) {
        for (asked, key) in [
            (changes.tools_list_changed, "tools"),
            (changes.prompts_list_changed, "prompts"),
            (changes.resources_list_changed, "resources"),
        ] {
            if asked && relayed.get(key).is_some() {
                assert_eq!(relayed[key]["listChanged"], true, "{key}: {relayed}");
            }
        }
    }
    let _ = host::rpc_error(params);
    // The upstream's notification with these params, as the host would get it.
    if let Some((uri, line)) = host::resource_updated(method, params) {
        let message: Value = serde_json::from_str(&line).expect("an update line is JSON");
        assert_eq!(message["params"]["uri"], uri.as_str());
        assert!(message["params"].get("_meta").is_none(), "{line}");
    }
    // The upstream asking `method` with these params, as a modern host's input round.
    let round = host::input_required("input-1", method, params, "state-1");
    assert_eq!(round["inputRequests"]["input-1"]["params"], *params);
    match host::plan(method, params) {
        Plan::Answer(result) => {
            let line = host::response(id, Ok(host::in_era(result, modern)));
            let message = answered(&line, id);
            if modern {
                assert_eq!(message["result"]["resultType"], "complete");
            }
        }
        Plan::Refuse { code, message } => {
            assert!(
                matches!(
                    code,
                    host::code::METHOD_NOT_FOUND | host::code::INVALID_PARAMS
                ),
                "{code}"
            );
            answered(&host::response(id, Err(host::refusal(code, &message))), id);
        }
        Plan::Initialize { version } => {
            assert!(host::HOST_VERSIONS.contains(&version), "{version}");
            assert_eq!(method, "initialize");
        }
        Plan::Discover => assert_eq!(method, "server/discover"),
        Plan::Listen { filter } => {
            assert_eq!(method, "subscriptions/listen");
            let line = host::acknowledged_line(id, &filter);
            let ack: Value = serde_json::from_str(&line).expect("an acknowledgment is JSON");
            assert_eq!(
                ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
                *id
            );
        }
        Plan::Subscribe { uri, on } => {
            assert_eq!(on, method == "resources/subscribe", "{method}");
            assert!(on || method == "resources/unsubscribe", "{method}");
            assert_eq!(
                params.get("uri").and_then(Value::as_str),
                Some(uri.as_str())
            );
        }
        Plan::Forward(action) => {
            if let Action::CallTool { name, .. } = &action {
                assert_eq!(
                    params.get("name").and_then(Value::as_str),
                    Some(name.as_str())
                );
            }
        }
    }
}
