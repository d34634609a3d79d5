//! The host's side of `mcp-call bridge`: what one line from the host (a desktop app that
//! starts MCP servers over stdio) asks for, which operation answers it, and the JSON-RPC
//! message that goes back.
//!
//! Plain functions of their inputs. Nothing here reads stdin, writes stdout, runs an
//! operation or looks at a clock: the runner (`bridge/mod.rs`) does, and asks this module what
//! each line means and what each outcome answers.

use mcp_proto::request::OneRequest;
use mcp_proto::schema::OutputProblem;
use mcp_proto::{Action, Error, Fault, ListKind, Outcome, SessionInfo};
use serde_json::{Map, Value, json};

/// The protocol versions of the handshake the bridge speaks with its host, newest first. A host
/// asking for another one is answered with the first.
pub(crate) const HOST_VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

/// The version of the stateless era the bridge speaks with a host that asks `server/discover`
/// first and names it in each request's `_meta`.
pub(crate) const MODERN_HOST_VERSION: &str = "2026-07-28";

/// The `_meta` key a modern request names its version under.
const VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";

/// The `_meta` key a modern request declares the client's capabilities under.
const CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";

/// JSON-RPC's codes for what the host sent wrong, and the one for a spent budget (the
/// TypeScript SDK's `RequestTimeout`, which hosts built on it show as a timeout).
pub(crate) mod code {
    pub(crate) const PARSE: i64 = -32700;
    pub(crate) const INVALID_REQUEST: i64 = -32600;
    pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
    pub(crate) const INVALID_PARAMS: i64 = -32602;
    pub(crate) const INTERNAL: i64 = -32603;
    pub(crate) const TIMEOUT: i64 = -32001;
}

/// One message from the host.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum FromHost {
    /// A request: answered once, with its id as the host sent it.
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    /// `notifications/cancelled`: the host no longer wants the answer to `request_id`.
    Cancelled { request_id: Value },
    /// Any other notification (`notifications/initialized`, ...): nothing to do.
    Notification { method: String },
    /// A response to a request the bridge sent the host (an upstream's elicitation, sampling
    /// or roots request, relayed): its result, or its error object.
    Response {
        id: Value,
        answer: Result<Value, Value>,
    },
    /// Not a JSON-RPC message: answered with this error, id `null` (or the id when one could
    /// be read).
    Invalid {
        id: Value,
        code: i64,
        message: String,
    },
}

/// Reads one line from the host. A blank line is `None` (hosts send none, but nothing breaks).
pub(crate) fn read(line: &[u8]) -> Option<FromHost> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    let invalid = |id: Value, code: i64, message: &str| FromHost::Invalid {
        id,
        code,
        message: message.to_owned(),
    };
    let Ok(value) = serde_json::from_slice::<Value>(line) else {
        return Some(invalid(Value::Null, code::PARSE, "Parse error: not JSON"));
    };
    let Some(message) = value.as_object() else {
        // A batch (an array) is not part of the protocol since 2025-06-18.
        return Some(invalid(
            Value::Null,
            code::INVALID_REQUEST,
            "Invalid Request: not an object",
        ));
    };
    let id = message.get("id").cloned();
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    Some(match (message.get("method").and_then(Value::as_str), id) {
        (Some(_), Some(id)) if !(id.is_string() || id.is_i64() || id.is_u64()) => invalid(
            Value::Null,
            code::INVALID_REQUEST,
            "Invalid Request: the id must be a string or an integer",
        ),
        (Some(method), Some(id)) => FromHost::Request {
            id,
            method: method.to_owned(),
            params,
        },
        (Some("notifications/cancelled"), None) => match params.get("requestId") {
            Some(request_id) => FromHost::Cancelled {
                request_id: request_id.clone(),
            },
            None => FromHost::Notification {
                method: "notifications/cancelled".to_owned(),
            },
        },
        (Some(method), None) => FromHost::Notification {
            method: method.to_owned(),
        },
        (None, Some(id)) if message.contains_key("result") || message.contains_key("error") => {
            let answer = match message.get("error") {
                Some(error) => Err(error.clone()),
                None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
            };
            FromHost::Response { id, answer }
        }
        // An id that is not one (a float, an object) is not echoed: the answer's id is null.
        (None, id) => invalid(
            id.filter(|id| id.is_string() || id.is_i64() || id.is_u64())
                .unwrap_or(Value::Null),
            code::INVALID_REQUEST,
            "Invalid Request: no method",
        ),
    })
}

/// What answers a host's request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Plan {
    /// This result, at once (`ping`).
    Answer(Value),
    /// The handshake: the upstream is probed under the request's budget, and its identity and
    /// what the bridge relays of its capabilities answer, in `version`.
    Initialize { version: &'static str },
    /// A modern host's `server/discover`: the upstream is probed, and answers as `initialize`
    /// does, in the modern era's shape.
    Discover,
    /// This operation on the upstream, under the request's own budget.
    Forward(Action),
    /// `resources/subscribe` (`on`) or `resources/unsubscribe` of `uri`: the bridge's own
    /// subscription to the upstream changes, and the host is answered once it did.
    Subscribe { uri: String, on: bool },
    /// A modern host's `subscriptions/listen` asking for what `filter` names: acknowledged
    /// once the upstream took its resources, and never answered otherwise (the host ends it).
    Listen { filter: mcp_proto::Subscription },
    /// This error, at once.
    Refuse { code: i64, message: String },
}

/// What answers `method` with `params`.
pub(crate) fn plan(method: &str, params: &Value) -> Plan {
    let text = |key: &str| params.get(key).and_then(Value::as_str).map(str::to_owned);
    let object = |key: &str| {
        (params.get(key).and_then(Value::as_object))
            .cloned()
            .unwrap_or_default()
    };
    let missing = |what: &str| Plan::Refuse {
        code: code::INVALID_PARAMS,
        message: format!("Invalid params: {method} needs {what}"),
    };
    match method {
        "initialize" => {
            let asked = params.get("protocolVersion").and_then(Value::as_str);
            let version = (HOST_VERSIONS.iter())
                .find(|v| Some(**v) == asked)
                .unwrap_or(&HOST_VERSIONS[0]);
            Plan::Initialize { version }
        }
        "server/discover" => Plan::Discover,
        "ping" => Plan::Answer(json!({})),
        "tools/list" => Plan::Forward(Action::List(ListKind::Tools)),
        "resources/list" => Plan::Forward(Action::List(ListKind::Resources)),
        "resources/templates/list" => Plan::Forward(Action::List(ListKind::ResourceTemplates)),
        "prompts/list" => Plan::Forward(Action::List(ListKind::Prompts)),
        "subscriptions/listen" => Plan::Listen {
            filter: listen_filter(params),
        },
        "resources/subscribe" | "resources/unsubscribe" => match text("uri") {
            Some(uri) => Plan::Subscribe {
                uri,
                on: method == "resources/subscribe",
            },
            None => missing("a resource URI"),
        },
        "tools/call" => match text("name") {
            Some(name) => Plan::Forward(Action::CallTool {
                name,
                arguments: object("arguments"),
            }),
            None => missing("a tool name"),
        },
        // A one-request method is relayed as the host sent it: the upstream judges its params.
        _ => match OneRequest::relay(method, params.as_object().cloned().unwrap_or_default()) {
            Some(request) => Plan::Forward(Action::Request(request)),
            None => Plan::Refuse {
                code: code::METHOD_NOT_FOUND,
                message: format!("Method not found: {method} (the bridge does not relay it)"),
            },
        },
    }
}

/// The capabilities the bridge declares to its host: what it relays of the upstream's. Lists
/// are walked whole inside one budget (no cursors); a list's changes and resource
/// subscriptions are relayed when the upstream declares them (`listChanged`, `subscribe`);
/// logging and tasks are not (a task the upstream makes is polled inside the request's
/// budget).
pub(crate) fn relayed_capabilities(upstream: &Value) -> Value {
    let mut capabilities = Map::new();
    for key in ["tools", "resources", "prompts"] {
        if upstream.get(key).is_some_and(Value::is_object) {
            let mut relayed = Map::new();
            for flag in ["listChanged", "subscribe"] {
                let declared =
                    upstream.pointer(&format!("/{key}/{flag}")) == Some(&Value::Bool(true));
                if declared && (flag == "listChanged" || key == "resources") {
                    relayed.insert(flag.to_owned(), Value::Bool(true));
                }
            }
            capabilities.insert(key.to_owned(), Value::Object(relayed));
        }
    }
    if upstream.get("completions").is_some_and(Value::is_object) {
        capabilities.insert("completions".to_owned(), json!({}));
    }
    Value::Object(capabilities)
}

/// The list changes the upstream declares it sends (`listChanged`), as the subscription
/// that hears them; `None` when it declares none.
pub(crate) fn list_changes(upstream: &Value) -> Option<mcp_proto::Subscription> {
    let declared =
        |key: &str| upstream.pointer(&format!("/{key}/listChanged")) == Some(&Value::Bool(true));
    let subscription = mcp_proto::Subscription {
        tools_list_changed: declared("tools"),
        prompts_list_changed: declared("prompts"),
        resources_list_changed: declared("resources"),
        resource_subscriptions: Vec::new(),
    };
    (subscription != mcp_proto::Subscription::default()).then_some(subscription)
}

/// The host's line for an upstream's notification that a list changed, when `method` is one
/// (the upstream's `_meta`, a subscription's id, is its own and stays out).
pub(crate) fn list_changed_line(method: &str) -> Option<String> {
    matches!(
        method,
        "notifications/tools/list_changed"
            | "notifications/prompts/list_changed"
            | "notifications/resources/list_changed"
    )
    .then(|| json!({"jsonrpc": "2.0", "method": method}).to_string())
}

/// What a host's `subscriptions/listen` asks for (`params.notifications`).
pub(crate) fn listen_filter(params: &Value) -> mcp_proto::Subscription {
    let filter = params.get("notifications").unwrap_or(&Value::Null);
    mcp_proto::Subscription::from_filter(filter)
}

/// The `_meta` key a notification on a subscription names it under.
const SUBSCRIPTION_KEY: &str = "io.modelcontextprotocol/subscriptionId";

/// The acknowledgment of the host's `subscriptions/listen` `id`: what the bridge relays of
/// what it asked for.
pub(crate) fn acknowledged_line(id: &Value, granted: &mcp_proto::Subscription) -> String {
    json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
        "params": {"_meta": {SUBSCRIPTION_KEY: id}, "notifications": granted.filter()}})
    .to_string()
}

/// The upstream's notification `method` with `params`, on the host's subscription `id`: its
/// `_meta` (the upstream's own subscription) replaced by the host's.
pub(crate) fn on_subscription(id: &Value, method: &str, params: &Value) -> String {
    let mut params = params.as_object().cloned().unwrap_or_default();
    params.insert("_meta".to_owned(), json!({SUBSCRIPTION_KEY: id}));
    json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string()
}

/// Whether the upstream declares resource subscriptions (`resources.subscribe`).
pub(crate) fn subscribable(upstream: &Value) -> bool {
    upstream.pointer("/resources/subscribe") == Some(&Value::Bool(true))
}

/// The host's line for an upstream's `notifications/resources/updated` with `params`, and the
/// URI it is about; `None` for another notification (the upstream's `_meta`, a subscription's
/// id, is its own and stays out).
pub(crate) fn resource_updated(method: &str, params: &Value) -> Option<(String, String)> {
    if method != "notifications/resources/updated" {
        return None;
    }
    let mut params = params.as_object().cloned()?;
    let uri = params.get("uri")?.as_str()?.to_owned();
    params.remove("_meta");
    let line = json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string();
    Some((uri, line))
}

/// The answer to the host's `initialize`: the upstream's identity and what the bridge relays
/// of its capabilities, in the version the host speaks.
pub(crate) fn initialize_result(info: &SessionInfo, version: &str) -> Value {
    let mut server = json!({"name": info.server.name, "version": info.server.version});
    if let Some(title) = &info.server.title {
        server["title"] = Value::from(title.as_str());
    }
    let mut result = json!({
        "protocolVersion": version,
        "capabilities": relayed_capabilities(&info.capabilities),
        "serverInfo": server,
    });
    if let Some(instructions) = &info.instructions {
        result["instructions"] = Value::from(instructions.as_str());
    }
    result
}

/// The answer to a modern host's `server/discover`: the versions the bridge speaks with it,
/// what it relays of the upstream's capabilities, and the upstream's identity in `_meta`.
pub(crate) fn discover_result(info: &SessionInfo) -> Value {
    let mut server = json!({"name": info.server.name, "version": info.server.version});
    if let Some(title) = &info.server.title {
        server["title"] = Value::from(title.as_str());
    }
    let mut result = json!({
        "supportedVersions": [MODERN_HOST_VERSION],
        "capabilities": relayed_capabilities(&info.capabilities),
        "resultType": "complete",
        "ttlMs": 0,
        "cacheScope": "private",
        "_meta": {"io.modelcontextprotocol/serverInfo": server},
    });
    if let Some(instructions) = &info.instructions {
        result["instructions"] = Value::from(instructions.as_str());
    }
    result
}

/// Whether a request comes from a host speaking the modern era (its `_meta` names the
/// version): its results then carry `resultType`.
pub(crate) fn is_modern(params: &Value) -> bool {
    params
        .pointer(&format!("/_meta/{}", VERSION_KEY.replace('/', "~1")))
        .and_then(Value::as_str)
        .is_some_and(|version| version == MODERN_HOST_VERSION)
}

/// `result` in the era the host speaks: a modern host's carries `resultType` (a legacy
/// upstream's answer has none).
pub(crate) fn in_era(mut result: Value, modern: bool) -> Value {
    if let (true, Some(fields)) = (modern, result.as_object_mut()) {
        fields
            .entry("resultType")
            .or_insert_with(|| Value::from("complete"));
    }
    result
}

/// The result the host gets for an operation's outcome: what the upstream answered, verbatim
/// where it is kept so (a call's result, a resource's contents, a prompt, each listing's
/// entries), whole listings without a cursor. For a host speaking the modern era (`modern`),
/// every result carries `resultType`, and a listing or a resource read its caching hints
/// (`ttlMs`, `cacheScope`: the upstream's, or immediately stale and private when it gave none).
pub(crate) fn result_of(outcome: Outcome, modern: bool) -> Value {
    fn entries<T>(items: &[T], raw: impl Fn(&T) -> &Map<String, Value>) -> Value {
        Value::Array(
            items
                .iter()
                .map(|i| Value::Object(raw(i).clone()))
                .collect(),
        )
    }
    let (result, cacheable) = match outcome {
        Outcome::Tools(tools) => (
            json!({"tools": entries(&tools, |t| &t.raw)}),
            Some(tools.cache),
        ),
        Outcome::Resources(items) => (
            json!({"resources": entries(&items, |r| &r.raw)}),
            Some(items.cache),
        ),
        Outcome::ResourceTemplates(items) => (
            json!({"resourceTemplates": entries(&items, |t| &t.raw)}),
            Some(items.cache),
        ),
        Outcome::Prompts(items) => (
            json!({"prompts": entries(&items, |p| &p.raw)}),
            Some(items.cache),
        ),
        Outcome::Call(call) => (Value::Object(call.raw_object()), None),
        Outcome::Answer(answer) => {
            let cache = answer.method().cached.then(|| answer.cache());
            (Value::Object(answer.result), cache)
        }
        _ => (json!({}), None),
    };
    let result = in_era(result, modern);
    match (modern, cacheable) {
        (true, Some(hint)) => with_cache_hint(result, hint),
        _ => result,
    }
}

/// `result` with the caching hints a modern host requires of it.
fn with_cache_hint(mut result: Value, hint: Option<mcp_proto::CacheHint>) -> Value {
    let ttl = hint.map_or(0, |hint| {
        u64::try_from(hint.ttl.as_millis()).unwrap_or(u64::MAX)
    });
    let scope = match hint.and_then(|hint| hint.scope) {
        Some(mcp_proto::CacheScope::Public) => "public",
        _ => "private",
    };
    if let Some(fields) = result.as_object_mut() {
        fields.insert("ttlMs".to_owned(), Value::from(ttl));
        fields.insert("cacheScope".to_owned(), Value::from(scope));
    }
    result
}

/// The JSON-RPC error the host gets for an operation that ended in `err`: an upstream's own
/// error passes as it was (code, message, data); anything else names the upstream and what
/// went wrong (`sentence`), with `data` saying what kind of failure it was, so a host's log
/// tells a spent budget from a refusal. An operation that ended with its budget spent (`spent`:
/// the budget; a refused leg, or the last leg cut at the deadline) has the timeout code and
/// says so first.
pub(crate) fn error_of(
    err: &Error,
    sentence: String,
    server: &str,
    spent: Option<std::time::Duration>,
) -> Value {
    if let Error::JsonRpc {
        code,
        message,
        data,
        ..
    } = err
    {
        let mut error = json!({"code": code, "message": message});
        if let Some(data) = data {
            error["data"] = data.clone();
        }
        return error;
    }
    let (code, message) = match (err.fault(), spent) {
        (Fault::Budget, _) => (code::TIMEOUT, sentence),
        (Fault::Network, Some(budget)) if err.kind() == "leg_timed_out" => (
            code::TIMEOUT,
            format!(
                "The bridge's {} s budget for this request ran out: {sentence}",
                budget.as_secs_f64()
            ),
        ),
        _ => (code::INTERNAL, sentence),
    };
    let mut data = json!({"kind": err.kind(), "server": err.server().unwrap_or(server)});
    if let Some(task) = err.task() {
        data["task"] = json!({"id": task.task_id, "status": task.status.to_string()});
    }
    if let Error::OutputInvalid { tool, problem, .. } = err {
        data["tool"] = json!(tool);
        if let OutputProblem::Mismatch(mismatch) = problem.as_ref() {
            data["pointer"] = json!(mismatch.instance_path);
            data["rule"] = json!(mismatch.rule);
        }
    }
    json!({"code": code, "message": message, "data": data})
}

/// One JSON-RPC response line (without its newline).
pub(crate) fn response(id: &Value, answer: Result<Value, Value>) -> String {
    let message = match answer {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
    };
    message.to_string()
}

/// The token the host asked progress under (`_meta.progressToken`), when it did.
pub(crate) fn progress_token(params: &Value) -> Option<Value> {
    let token = params.pointer("/_meta/progressToken")?;
    (token.is_string() || token.is_i64() || token.is_u64()).then(|| token.clone())
}

/// The host's `notifications/progress` line for the upstream's progress `params`: what the
/// upstream said, under the host's token (the upstream's names the bridge's own request).
pub(crate) fn progress_line(token: &Value, upstream: &Value) -> String {
    let mut params = upstream.as_object().cloned().unwrap_or_default();
    params.insert("progressToken".to_owned(), token.clone());
    json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": params}).to_string()
}

/// What the host can answer, by what its `initialize` declared: the requests an upstream
/// may send that the bridge relays to it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct HostAnswers {
    /// `elicitation` (form mode).
    pub(crate) elicitation: bool,
    /// `elicitation.url`: URL mode too.
    pub(crate) url_elicitation: bool,
    pub(crate) sampling: bool,
    pub(crate) roots: bool,
}

impl HostAnswers {
    /// What the host's first request declares: its `initialize` params' `capabilities`, or a
    /// modern host's, in each request's `_meta`.
    pub(crate) fn declared(params: &Value) -> Self {
        let capabilities = (params.get("capabilities")).or_else(|| {
            let key = CAPABILITIES_KEY.replace('/', "~1");
            params.pointer(&format!("/_meta/{key}"))
        });
        let has = |key: &str| {
            capabilities
                .and_then(|c| c.get(key))
                .is_some_and(Value::is_object)
        };
        Self {
            elicitation: has("elicitation"),
            url_elicitation: (capabilities.and_then(|c| c.pointer("/elicitation/url")))
                .is_some_and(Value::is_object),
            sampling: has("sampling"),
            roots: has("roots"),
        }
    }

    /// The methods relayed to the host.
    pub(crate) fn methods(self) -> impl Iterator<Item = &'static str> {
        [
            (self.elicitation, "elicitation/create"),
            (self.sampling, "sampling/createMessage"),
            (self.roots, "roots/list"),
        ]
        .into_iter()
        .filter_map(|(declared, method)| declared.then_some(method))
    }
}

/// The answer a modern host gets when the upstream asks `method` with `params` during its
/// request: an input round, the request under `key`, the round named by `state` (the host's
/// retry carries it back verbatim).
pub(crate) fn input_required(key: &str, method: &str, params: &Value, state: &str) -> Value {
    json!({
        "resultType": "input_required",
        "inputRequests": {key: {"method": method, "params": params}},
        "requestState": state,
    })
}

/// The host's `notifications/cancelled` for the bridge's own request `id`: nobody waits for
/// its answer any more.
pub(crate) fn cancelled_line(id: &str, reason: &str) -> String {
    json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": id, "reason": reason}})
    .to_string()
}

/// One JSON-RPC request line to the host (without its newline).
pub(crate) fn request_line(id: &str, method: &str, params: &Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// The error an upstream's request gets for the host's error object.
pub(crate) fn rpc_error(error: &Value) -> mcp_proto::RpcError {
    mcp_proto::RpcError {
        code: error
            .get("code")
            .and_then(Value::as_i64)
            .unwrap_or(code::INTERNAL),
        message: (error.get("message").and_then(Value::as_str))
            .unwrap_or("the host answered with an error")
            .to_owned(),
        data: error.get("data").cloned(),
    }
}

/// The error a host's `tools/call` of a tool hidden by `--tool`/`--ignore-tool` gets (`why`:
/// the pattern that hid it), as a server answers a call of a tool it does not have.
pub(crate) fn filtered(name: &str, why: &str) -> Value {
    let message = format!(
        "Invalid params: the tool \"{name}\" is filtered by the bridge (mcp-call bridge): {why}"
    );
    refusal(code::INVALID_PARAMS, &message)
}

/// The error object of a refusal the bridge makes itself.
pub(crate) fn refusal(code: i64, message: &str) -> Value {
    json!({"code": code, "message": message})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(line: &str) -> (Value, String, Value) {
        match read(line.as_bytes()) {
            Some(FromHost::Request { id, method, params }) => (id, method, params),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_host_line_is_a_request_a_cancel_a_notification_or_an_error() {
        let (id, method, _) = request(r#"{"jsonrpc":"2.0","id":"a-1","method":"tools/list"}"#);
        assert_eq!((id, method.as_str()), (json!("a-1"), "tools/list"));
        assert_eq!(
            read(
                br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}"#
            ),
            Some(FromHost::Cancelled {
                request_id: json!(7)
            })
        );
        assert_eq!(
            read(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Some(FromHost::Notification {
                method: "notifications/initialized".into()
            })
        );
        assert_eq!(
            read(br#"{"jsonrpc":"2.0","id":"b-1","result":{"action":"decline"}}"#),
            Some(FromHost::Response {
                id: json!("b-1"),
                answer: Ok(json!({"action": "decline"}))
            })
        );
        assert_eq!(
            read(br#"{"jsonrpc":"2.0","id":"b-2","error":{"code":-1,"message":"no"}}"#),
            Some(FromHost::Response {
                id: json!("b-2"),
                answer: Err(json!({"code": -1, "message": "no"}))
            })
        );
        assert_eq!(read(b"  \n"), None);
        for (line, want) in [
            (&b"{not json"[..], code::PARSE),
            (b"[1,2]", code::INVALID_REQUEST),
            (
                br#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#,
                code::INVALID_REQUEST,
            ),
            (br#"{"jsonrpc":"2.0","id":4}"#, code::INVALID_REQUEST),
            (br#"{"jsonrpc":"2.0","id":5.3e49}"#, code::INVALID_REQUEST),
        ] {
            let Some(FromHost::Invalid { code, id, .. }) = read(line) else {
                panic!("{}", String::from_utf8_lossy(line))
            };
            assert_eq!(code, want, "{}", String::from_utf8_lossy(line));
            // Only a string or an integer is echoed as an id (a float would not survive).
            assert!(id.is_null() || id == json!(4), "{id}");
        }
    }

    #[test]
    fn each_request_is_answered_by_its_operation_or_at_once() {
        assert_eq!(plan("ping", &Value::Null), Plan::Answer(json!({})));
        assert_eq!(
            plan("initialize", &json!({"protocolVersion": "2025-06-18"})),
            Plan::Initialize {
                version: "2025-06-18"
            }
        );
        assert_eq!(
            plan("initialize", &json!({"protocolVersion": "2099-01-01"})),
            Plan::Initialize {
                version: "2025-11-25"
            }
        );
        assert_eq!(
            plan(
                "tools/call",
                &json!({"name": "echo", "arguments": {"text": "hi"}})
            ),
            Plan::Forward(Action::CallTool {
                name: "echo".into(),
                arguments: json!({"text": "hi"}).as_object().cloned().unwrap(),
            })
        );
        assert_eq!(
            plan(
                "completion/complete",
                &json!({"ref": {"type": "ref/prompt", "name": "greet"},
                    "argument": {"name": "name", "value": "A"}})
            ),
            Plan::Forward(Action::Request(
                OneRequest::relay(
                    "completion/complete",
                    json!({"ref": {"type": "ref/prompt", "name": "greet"},
                        "argument": {"name": "name", "value": "A"}})
                    .as_object()
                    .cloned()
                    .unwrap()
                )
                .unwrap()
            ))
        );
        let Plan::Refuse { code, .. } = plan("tools/call", &json!({})) else {
            panic!()
        };
        assert_eq!(code, code::INVALID_PARAMS);
        assert_eq!(
            plan(
                "subscriptions/listen",
                &json!({"notifications": {"toolsListChanged": true, "promptsListChanged": 1,
                    "resourceSubscriptions": ["a://1", 2]}})
            ),
            Plan::Listen {
                filter: mcp_proto::Subscription {
                    tools_list_changed: true,
                    resource_subscriptions: vec!["a://1".into()],
                    ..Default::default()
                }
            }
        );
        assert_eq!(
            plan("resources/unsubscribe", &json!({"uri": "x"})),
            Plan::Subscribe {
                uri: "x".into(),
                on: false
            }
        );
        let Plan::Refuse { code, .. } = plan("resources/subscribe", &json!({})) else {
            panic!()
        };
        assert_eq!(code, code::INVALID_PARAMS);
        let Plan::Refuse { code, .. } = plan("logging/setLevel", &json!({"level": "info"})) else {
            panic!()
        };
        assert_eq!(code, code::METHOD_NOT_FOUND);
    }

    #[test]
    fn progress_goes_to_the_host_under_its_own_token() {
        let params = json!({"name": "slow", "_meta": {"progressToken": "host-7"}});
        let token = progress_token(&params).unwrap();
        let line = progress_line(
            &token,
            &json!({"progressToken": 3, "progress": 1, "total": 4}),
        );
        assert_eq!(
            serde_json::from_str::<Value>(&line).unwrap(),
            json!({"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": "host-7", "progress": 1, "total": 4}})
        );
        assert_eq!(progress_token(&json!({"name": "x"})), None);
        assert_eq!(
            progress_token(&json!({"_meta": {"progressToken": {"a": 1}}})),
            None
        );
    }

    #[test]
    fn a_modern_host_is_answered_in_its_era() {
        assert_eq!(plan("server/discover", &json!({})), Plan::Discover);
        let modern = json!({"name": "echo",
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}});
        assert!(is_modern(&modern));
        assert!(!is_modern(&json!({"name": "echo"})));
        assert_eq!(
            in_era(json!({"content": []}), true),
            json!({"content": [], "resultType": "complete"})
        );
        assert_eq!(
            in_era(json!({"content": [], "resultType": "complete"}), true)["resultType"],
            "complete"
        );
        assert_eq!(
            in_era(json!({"content": []}), false),
            json!({"content": []})
        );
        let info = SessionInfo {
            protocol_version: mcp_proto::ProtocolVersion::MODERN,
            server: mcp_proto::ServerInfo {
                name: "up".into(),
                version: "1".into(),
                title: None,
            },
            capabilities: json!({"tools": {"listChanged": true}}),
            instructions: None,
            session_id: None,
        };
        assert_eq!(
            discover_result(&info),
            json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {"listChanged": true}},
                "resultType": "complete", "ttlMs": 0, "cacheScope": "private",
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "up", "version": "1"}}})
        );
    }

    #[test]
    fn the_host_answers_what_its_handshake_declares() {
        let params = json!({"capabilities": {"elicitation": {"form": {}, "url": {}},
            "roots": {"listChanged": true}}});
        let answers = HostAnswers::declared(&params);
        assert!(answers.elicitation && answers.url_elicitation && answers.roots);
        assert!(!answers.sampling);
        assert_eq!(
            answers.methods().collect::<Vec<_>>(),
            ["elicitation/create", "roots/list"]
        );
        assert_eq!(HostAnswers::declared(&json!({})), HostAnswers::default());
        // A modern host declares them in each request's `_meta`.
        let modern = json!({"_meta": {"io.modelcontextprotocol/clientCapabilities":
            {"elicitation": {}, "sampling": {}}}});
        let answers = HostAnswers::declared(&modern);
        assert!(answers.elicitation && answers.sampling && !answers.roots);
    }

    #[test]
    fn the_host_is_told_only_the_capabilities_the_bridge_relays() {
        let upstream = json!({"tools": {"listChanged": true, "subscribe": true},
            "resources": {"subscribe": true}, "logging": {},
            "tasks": {"requests": {"tools": {"call": {}}}}, "completions": {}});
        assert_eq!(
            relayed_capabilities(&upstream),
            json!({"tools": {"listChanged": true}, "resources": {"subscribe": true},
                "completions": {}})
        );
        assert!(subscribable(&upstream) && !subscribable(&json!({"resources": {}})));
        let (uri, line) = resource_updated(
            "notifications/resources/updated",
            &json!({"uri": "a://1", "_meta": {"io.modelcontextprotocol/subscriptionId": 3}}),
        )
        .unwrap();
        assert_eq!(uri, "a://1");
        assert_eq!(
            line,
            r#"{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"a://1"}}"#
        );
        assert_eq!(
            resource_updated("notifications/progress", &json!({"uri": "a"})),
            None
        );
        // On a modern host's subscription: its id in `_meta`, the upstream's gone.
        let on = on_subscription(
            &json!("listen-1"),
            "notifications/resources/updated",
            &json!({"uri": "a://1", "_meta": {"io.modelcontextprotocol/subscriptionId": 3}}),
        );
        assert_eq!(
            serde_json::from_str::<Value>(&on).unwrap()["params"],
            json!({"uri": "a://1", "_meta": {"io.modelcontextprotocol/subscriptionId": "listen-1"}})
        );
        let granted = mcp_proto::Subscription {
            tools_list_changed: true,
            resource_subscriptions: vec!["a://1".into()],
            ..Default::default()
        };
        assert_eq!(
            serde_json::from_str::<Value>(&acknowledged_line(&json!(5), &granted)).unwrap()["params"],
            json!({"_meta": {"io.modelcontextprotocol/subscriptionId": 5},
                "notifications": {"toolsListChanged": true, "resourceSubscriptions": ["a://1"]}})
        );
        let watched = list_changes(&upstream).unwrap();
        assert!(watched.tools_list_changed && !watched.resources_list_changed);
        assert_eq!(list_changes(&json!({"tools": {}})), None);
        assert_eq!(
            list_changed_line("notifications/tools/list_changed").unwrap(),
            r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#
        );
        assert_eq!(list_changed_line("notifications/progress"), None);
    }

    #[test]
    fn an_upstream_error_passes_as_it_was_and_a_spent_budget_is_a_timeout() {
        let refused = Error::JsonRpc {
            server: "up".into(),
            method: "tools/call",
            code: -32602,
            message: "Unknown tool".into(),
            data: Some(json!({"tool": "x"})),
        };
        assert_eq!(
            error_of(&refused, "ignored".into(), "up", None),
            json!({"code": -32602, "message": "Unknown tool", "data": {"tool": "x"}})
        );
        // The last leg cut at the deadline is the budget's end: the host sees a timeout.
        let cut = Error::LegTimedOut {
            server: "up".into(),
            method: "tools/call",
            grant: std::time::Duration::from_secs(2),
        };
        let spent = error_of(
            &cut,
            "cut".into(),
            "up",
            Some(std::time::Duration::from_secs(2)),
        );
        assert_eq!(spent["code"], code::TIMEOUT);
        assert_eq!(
            spent["message"],
            "The bridge's 2 s budget for this request ran out: cut"
        );
        assert_eq!(
            spent["data"],
            json!({"kind": "leg_timed_out", "server": "up"})
        );
        let early = error_of(&cut, "cut".into(), "up", None);
        assert_eq!(
            early["code"],
            code::INTERNAL,
            "a leg cut before the deadline is not"
        );
        let line = response(&json!(9), Err(refusal(code::METHOD_NOT_FOUND, "nope")));
        assert_eq!(
            serde_json::from_str::<Value>(&line).unwrap(),
            json!({"jsonrpc": "2.0", "id": 9, "error": {"code": -32601, "message": "nope"}})
        );
    }
}
