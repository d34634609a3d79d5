//! The MCP logic: method dispatch, the tool catalog and the JSON bodies the server sends
//! (over HTTP and stdio alike). It reads the script and the leaves (`message.rs`, `era.rs`)
//! and the era rules' result completion; it never writes to a connection itself.

use std::io;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::era::{MODERN_VERSIONS, SUPPORTED_VERSIONS};
use crate::message::Message;
use crate::script::Script;

/// Number of progress notifications sent for a `tools/call` with a progress token.
pub(crate) const PROGRESS_STEPS: u64 = 3;
/// The tools every listing starts with.
const DEFAULT_TOOLS: [&str; 4] = ["echo", "add", "sleep", "fail"];

/// A JSON-RPC error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RpcError {
    pub(crate) code: i64,
    pub(crate) message: String,
}

impl RpcError {
    fn invalid_params(message: impl Into<String>) -> Self {
        Self {
            code: -32602,
            message: message.into(),
        }
    }
}

/// The outcome of a method: a `result` value or an error.
pub(crate) type RpcResult = Result<Value, RpcError>;

fn to_bytes(value: &Value) -> Vec<u8> {
    // Serialising a `Value` cannot fail (all keys are strings).
    serde_json::to_vec(value).unwrap_or_default()
}

/// `{"jsonrpc":"2.0","id":id,"result"|"error":...}` as bytes.
pub(crate) fn envelope(id: &Value, outcome: &RpcResult) -> Vec<u8> {
    match outcome {
        Ok(result) => to_bytes(&json!({"jsonrpc": "2.0", "id": id, "result": result})),
        Err(e) => error_envelope(id, e.code, &e.message),
    }
}

/// A JSON-RPC error answer as bytes.
pub(crate) fn error_envelope(id: &Value, code: i64, message: &str) -> Vec<u8> {
    to_bytes(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}))
}

/// The `n`-th `notifications/message` logging notification as bytes.
pub(crate) fn log_notification(n: usize) -> Vec<u8> {
    to_bytes(&json!({
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {"level": "info", "logger": "mcp-testkit", "data": format!("notification {n}")}
    }))
}

/// A `notifications/progress` notification as bytes.
pub(crate) fn progress_notification(token: &Value, progress: u64, total: u64) -> Vec<u8> {
    to_bytes(&json!({
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": token, "progress": progress, "total": total}
    }))
}

/// The id a [`crate::Hostile::WrongId`] answer carries.
pub(crate) fn wrong_id(id: &Value) -> Value {
    match id {
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i.wrapping_add(1000))
            } else if let Some(u) = n.as_u64() {
                Value::from(u.wrapping_add(1000))
            } else {
                Value::from(n.as_f64().unwrap_or(0.0) + 1000.0)
            }
        }
        Value::String(s) => Value::from(format!("{s}-wrong")),
        _ => Value::from(1000),
    }
}

/// The progress token of a `tools/call`, if it asks for progress.
pub(crate) fn progress_token(params: Option<&Value>) -> Option<Value> {
    let token = params?.get("_meta")?.get("progressToken")?;
    match token {
        Value::String(_) | Value::Number(_) => Some(token.clone()),
        _ => None,
    }
}

/// Receives serialised notifications to send before the answer.
pub(crate) type NotificationSink<'a> = &'a mut dyn FnMut(&[u8]) -> io::Result<()>;

/// The environment a method runs in.
pub(crate) struct Env<'a> {
    /// The script in force.
    pub(crate) script: &'a Script,
    /// Sleeps, returning `false` when interrupted by server shutdown.
    pub(crate) sleep: &'a dyn Fn(Duration) -> bool,
    /// Receives progress notifications (already serialised); `None` when the
    /// answer cannot carry them.
    pub(crate) progress: Option<NotificationSink<'a>>,
    /// Whether the request is served in the modern era (stateless, results typed).
    pub(crate) modern: bool,
}

fn interrupted() -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionAborted, "server shutting down")
}

/// Runs a JSON-RPC method. `Err` means the connection must be abandoned
/// (shutdown during a sleep, or a broken stream while sending progress).
pub(crate) fn dispatch(
    method: &str,
    params: Option<&Value>,
    env: &mut Env<'_>,
) -> io::Result<RpcResult> {
    let mut outcome = match method {
        "initialize" => Ok(initialize(params, env.script)),
        "ping" => Ok(json!({})),
        "server/discover" if env.modern => Ok(discover()),
        "tools/list" => tools_list(params, env.script),
        "tools/call" => tools_call(params, env)?,
        "resources/list" => Ok(
            json!({"resources": RESOURCES.iter().map(|(uri, name, mime, _)| {
            json!({"uri": uri, "name": name, "mimeType": mime})
        }).collect::<Vec<_>>()}),
        ),
        "resources/templates/list" => Ok(json!({"resourceTemplates": [
            {"uriTemplate": "test://notes/{id}", "name": "note", "mimeType": "text/plain"}
        ]})),
        "resources/read" => resources_read(params),
        "prompts/list" => Ok(json!({"prompts": [{
            "name": "greeting",
            "description": "Asks for a greeting.",
            "arguments": [{"name": "name", "description": "Who to greet.", "required": true}]
        }]})),
        "prompts/get" => prompts_get(params),
        _ => Err(RpcError {
            code: -32601,
            message: format!("method not found: {method}"),
        }),
    };
    if env.modern {
        if let Ok(result) = &mut outcome {
            crate::modern::complete(method, result);
        }
    }
    Ok(outcome)
}

/// Runs a request and gives its whole JSON-RPC answer, carrying `id`, as bytes: the part of
/// answering that the HTTP server (JSON or SSE) and the stdio server (one line) share.
pub(crate) fn answer(msg: &Message, id: &Value, env: &mut Env<'_>) -> io::Result<Vec<u8>> {
    let method = msg.method.as_deref().unwrap_or("");
    let outcome = dispatch(method, msg.params.as_ref(), env)?;
    Ok(envelope(id, &outcome))
}

/// The resources every server serves: URI, name, media type, text.
const RESOURCES: [(&str, &str, &str, &str); 2] = [
    (
        "test://readme",
        "readme",
        "text/plain",
        "This is the test server.",
    ),
    (
        "test://data.json",
        "data",
        "application/json",
        "{\"answer\":42}",
    ),
];

fn resources_read(params: Option<&Value>) -> RpcResult {
    let Some(uri) = params.and_then(|p| p.get("uri")).and_then(Value::as_str) else {
        return Err(RpcError::invalid_params("missing uri"));
    };
    let found = RESOURCES
        .iter()
        .find(|(u, ..)| *u == uri)
        .map(|(_, _, mime, text)| ((*mime).to_owned(), (*text).to_owned()))
        .or_else(|| {
            let id = uri.strip_prefix("test://notes/")?;
            Some(("text/plain".to_owned(), format!("note {id}")))
        });
    match found {
        Some((mime, text)) => {
            Ok(json!({"contents": [{"uri": uri, "mimeType": mime, "text": text}]}))
        }
        None => Err(RpcError::invalid_params(format!("unknown resource: {uri}"))),
    }
}

fn prompts_get(params: Option<&Value>) -> RpcResult {
    if params.and_then(|p| p.get("name")).and_then(Value::as_str) != Some("greeting") {
        return Err(RpcError::invalid_params("unknown prompt"));
    }
    let Some(name) = params
        .and_then(|p| p.get("arguments"))
        .and_then(|a| a.get("name"))
        .and_then(Value::as_str)
    else {
        return Err(RpcError::invalid_params("missing argument: name"));
    };
    Ok(json!({
        "description": "A greeting.",
        "messages": [{"role": "user", "content": {"type": "text", "text": format!("Say hello to {name}.")}}]
    }))
}

/// What the server says it can do.
pub(crate) fn capabilities() -> Value {
    json!({"tools": {"listChanged": false}, "resources": {}, "prompts": {}})
}

/// The `server/discover` result.
fn discover() -> Value {
    json!({
        "supportedVersions": MODERN_VERSIONS,
        "capabilities": capabilities(),
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "mcp-testkit", "version": "0.1.0"}}
    })
}

fn initialize(params: Option<&Value>, script: &Script) -> Value {
    let requested = params
        .and_then(|p| p.get("protocolVersion"))
        .and_then(Value::as_str)
        .filter(|v| SUPPORTED_VERSIONS.contains(v));
    let version = match &script.protocol_version {
        Some(v) => v.clone(),
        None => requested.unwrap_or(SUPPORTED_VERSIONS[0]).to_owned(),
    };
    json!({
        "protocolVersion": version,
        "capabilities": capabilities(),
        "serverInfo": {"name": "mcp-testkit", "version": script.server_version}
    })
}

fn tool(name: &str, description: &str, properties: Value, required: &[&str]) -> Value {
    let mut schema = Map::new();
    schema.insert("type".into(), "object".into());
    schema.insert("properties".into(), properties);
    if !required.is_empty() {
        schema.insert("required".into(), json!(required));
    }
    json!({"name": name, "description": description, "inputSchema": schema})
}

fn default_tool(name: &str) -> Value {
    match name {
        "echo" => tool(
            "echo",
            "Returns the given text.",
            json!({"text": {"type": "string"}}),
            &["text"],
        ),
        "add" => tool(
            "add",
            "Adds two numbers.",
            json!({"a": {"type": "number"}, "b": {"type": "number"}}),
            &["a", "b"],
        ),
        "sleep" => tool(
            "sleep",
            "Sleeps for ms milliseconds.",
            json!({"ms": {"type": "integer", "minimum": 0}}),
            &["ms"],
        ),
        _ => tool("fail", "Always fails.", json!({}), &[]),
    }
}

fn filler_tool(name: &str) -> Value {
    tool(
        name,
        "A filler tool that answers with its name.",
        json!({}),
        &[],
    )
}

/// Number of filler tools `tool-<n>` in a listing split into `pages` pages.
fn filler_count(pages: usize) -> usize {
    pages.saturating_sub(DEFAULT_TOOLS.len())
}

fn catalog_len(pages: usize) -> usize {
    DEFAULT_TOOLS.len() + filler_count(pages)
}

fn catalog_tool(index: usize) -> Value {
    match DEFAULT_TOOLS.get(index) {
        Some(name) => default_tool(name),
        None => filler_tool(&format!("tool-{}", index - DEFAULT_TOOLS.len() + 1)),
    }
}

/// Tools on page `page` (1-based, `1..=pages`).
fn page_tools(page: usize, pages: usize) -> Vec<Value> {
    let total = catalog_len(pages);
    let start = (page - 1).saturating_mul(total) / pages;
    let end = page.saturating_mul(total) / pages;
    (start..end.min(total)).map(catalog_tool).collect()
}

fn parse_cursor(cursor: &str) -> Option<usize> {
    let n: usize = cursor.strip_prefix("page-")?.parse().ok()?;
    (n >= 1).then_some(n)
}

fn tools_list(params: Option<&Value>, script: &Script) -> RpcResult {
    let pages = script.tool_pages.max(1);
    let page = match params.and_then(|p| p.get("cursor")) {
        None | Some(Value::Null) => 1,
        Some(Value::String(c)) => parse_cursor(c)
            .ok_or_else(|| RpcError::invalid_params(format!("invalid cursor: {c}")))?,
        Some(_) => return Err(RpcError::invalid_params("cursor must be a string")),
    };
    let (tools, next) = if script.endless_listing {
        let tools = if page <= pages {
            page_tools(page, pages)
        } else {
            vec![filler_tool(&format!("tool-endless-{page}"))]
        };
        (tools, Some(page.saturating_add(1)))
    } else if script.repeated_cursor {
        (page_tools(page.min(pages), pages), Some(2))
    } else {
        if page > pages {
            return Err(RpcError::invalid_params(format!(
                "invalid cursor: page-{page}"
            )));
        }
        let mut tools = page_tools(page, pages);
        if page == pages {
            tools.extend(script.scripted_listing());
        }
        (tools, (page < pages).then(|| page + 1))
    };
    let mut result = Map::new();
    result.insert("tools".into(), Value::Array(tools));
    if let Some(next) = next {
        result.insert("nextCursor".into(), Value::from(format!("page-{next}")));
    }
    Ok(Value::Object(result))
}

/// The `outputSchema` of a seven-day forecast tool (a location, its coordinates, the units and
/// an array of days, each a date, a high, a low and the conditions), for
/// [`Script::tool`](crate::Script::tool) with [`forecast_result`]: a realistic schema to
/// check results against (the benchmarks' output-validation rows).
pub fn forecast_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "location": {"type": "string"},
            "latitude": {"type": "number", "minimum": -90, "maximum": 90},
            "longitude": {"type": "number", "minimum": -180, "maximum": 180},
            "units": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "days": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "date": {"type": "string"},
                        "high": {"type": "number"},
                        "low": {"type": "number"},
                        "conditions": {"type": "string"}
                    },
                    "required": ["date", "high", "low", "conditions"]
                }
            }
        },
        "required": ["location", "latitude", "longitude", "units", "days"]
    })
}

/// The result of every `forecast` call: seven days for Lyon, as `structuredContent` and, as
/// the specification asks of a tool that returns structured content, as its JSON in a text
/// block.
pub fn forecast_result() -> Value {
    const DAYS: [(&str, f64, f64, &str); 7] = [
        ("2026-12-05", 7.5, 1.0, "cloudy"),
        ("2026-12-06", 6.0, -0.5, "light rain"),
        ("2026-12-07", 5.5, -1.5, "fog"),
        ("2026-12-08", 8.0, 2.0, "partly cloudy"),
        ("2026-12-09", 9.5, 3.5, "sunny"),
        ("2026-12-10", 4.0, -2.0, "snow showers"),
        ("2026-12-11", 6.5, 0.5, "overcast"),
    ];
    let days: Vec<Value> = DAYS
        .iter()
        .map(|(date, high, low, conditions)| {
            json!({"date": date, "high": high, "low": low, "conditions": conditions})
        })
        .collect();
    let structured = json!({
        "location": "Lyon, France",
        "latitude": 45.764,
        "longitude": 4.8357,
        "units": "celsius",
        "days": days
    });
    let mut result = text_result(structured.to_string(), false);
    result["structuredContent"] = structured;
    result
}

/// The multi round-trip tool (modern era): the first call asks for a name with an
/// `elicitation/create` input request and a `requestState`; the retry carrying the answer (and
/// the state, byte for byte) gets the greeting.
fn greet(params: Option<&Value>) -> Value {
    let answer = params
        .and_then(|p| p.get("inputResponses"))
        .and_then(|r| r.get("name"));
    let state = params.and_then(|p| p.get("requestState"));
    match (answer, state) {
        (Some(answer), Some(Value::String(state))) if state == GREET_STATE => {
            let name = answer
                .get("content")
                .and_then(|c| c.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("nobody");
            text_result(format!("hello {name}"), false)
        }
        _ => json!({
            "resultType": "input_required",
            "inputRequests": {"name": {"method": "elicitation/create", "params": {
                "message": "Who are you?",
                "requestedSchema": {"type": "object", "properties": {
                    "name": {"type": "string", "default": "world"}}}
            }}},
            "requestState": GREET_STATE
        }),
    }
}

/// The `requestState` of the `greet` tool's question.
const GREET_STATE: &str = "greet-1:eyJzdGVwIjoxfQ==";

fn text_result(text: impl Into<String>, is_error: bool) -> Value {
    json!({"content": [{"type": "text", "text": text.into()}], "isError": is_error})
}

fn is_filler(name: &str, script: &Script) -> bool {
    if let Some(n) = name.strip_prefix("tool-endless-") {
        return script.endless_listing && n.parse::<usize>().is_ok();
    }
    match name
        .strip_prefix("tool-")
        .and_then(|n| n.parse::<usize>().ok())
    {
        Some(n) => n >= 1 && n <= filler_count(script.tool_pages.max(1)),
        None => false,
    }
}

/// `a + b`, integers printed without `.0`.
fn add(a: &Value, b: &Value) -> Result<Value, RpcError> {
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
        if let Some(sum) = x.checked_add(y) {
            return Ok(Value::from(sum));
        }
    }
    let (Some(x), Some(y)) = (a.as_f64(), b.as_f64()) else {
        return Err(RpcError::invalid_params("a and b must be numbers"));
    };
    let sum = x + y;
    if sum.is_finite() && sum.fract() == 0.0 && sum.abs() < 9_007_199_254_740_992.0 {
        // Exactly representable integer: print it without ".0".
        return Ok(Value::from(sum as i64));
    }
    serde_json::Number::from_f64(sum)
        .map(Value::Number)
        .ok_or_else(|| RpcError::invalid_params("the sum is not a finite number"))
}

fn tools_call(params: Option<&Value>, env: &mut Env<'_>) -> io::Result<RpcResult> {
    let Some(name) = params.and_then(|p| p.get("name")).and_then(Value::as_str) else {
        return Ok(Err(RpcError::invalid_params("missing tool name")));
    };
    let empty = Value::Object(Map::new());
    let args = params.and_then(|p| p.get("arguments")).unwrap_or(&empty);
    let token = if env.script.progress {
        progress_token(params)
    } else {
        None
    };
    let mut progress = match (token, env.progress.as_mut()) {
        (Some(t), Some(sink)) => Some((t, sink)),
        _ => None,
    };

    if name == "sleep" {
        let Some(ms) = args.get("ms").and_then(Value::as_u64) else {
            return Ok(Err(RpcError::invalid_params(
                "ms must be a non-negative integer",
            )));
        };
        match progress.as_mut() {
            None => {
                if !(env.sleep)(Duration::from_millis(ms)) {
                    return Err(interrupted());
                }
            }
            Some((token, sink)) => {
                let total = u128::from(ms);
                let steps = u128::from(PROGRESS_STEPS);
                for i in 1..=PROGRESS_STEPS {
                    let i = u128::from(i);
                    let slice = total * i / steps - total * (i - 1) / steps;
                    // slice <= ms, so it fits in u64.
                    let slice = u64::try_from(slice).unwrap_or(u64::MAX);
                    if !(env.sleep)(Duration::from_millis(slice)) {
                        return Err(interrupted());
                    }
                    sink(&progress_notification(token, i as u64, PROGRESS_STEPS))?;
                }
            }
        }
        return Ok(Ok(text_result(format!("slept {ms} ms"), false)));
    }

    if let Some(result) = env.script.scripted_result(name) {
        return Ok(Ok(result.clone()));
    }

    if name == "greet" && env.modern {
        return Ok(Ok(greet(params)));
    }
    let outcome = match name {
        "echo" => match args.get("text").and_then(Value::as_str) {
            Some(text) => Ok(text_result(text, false)),
            None => Err(RpcError::invalid_params("missing argument: text")),
        },
        "add" => match (args.get("a"), args.get("b")) {
            (Some(a), Some(b)) => add(a, b).map(|sum| {
                let mut result = text_result(sum.to_string(), false);
                result["structuredContent"] = json!({"sum": sum});
                result
            }),
            _ => Err(RpcError::invalid_params(
                "missing argument: a and b are required",
            )),
        },
        "fail" => Ok(text_result("the tool failed on purpose", true)),
        _ if is_filler(name, env.script) => Ok(text_result(format!("{name} called"), false)),
        _ => Err(RpcError::invalid_params(format!("unknown tool: {name}"))),
    };
    if outcome.is_ok() {
        if let Some((token, sink)) = progress.as_mut() {
            for i in 1..=PROGRESS_STEPS {
                sink(&progress_notification(token, i, PROGRESS_STEPS))?;
            }
        }
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(method: &str, params: Value, script: &Script) -> RpcResult {
        let sleep = |_: Duration| true;
        let mut env = Env {
            script,
            sleep: &sleep,
            progress: None,
            modern: false,
        };
        dispatch(method, Some(&params), &mut env).unwrap()
    }

    #[test]
    fn a_scripted_tool_is_listed_on_the_last_page_and_answers_as_scripted() {
        let schema = json!({"type": "object", "required": ["n"]});
        let answer = json!({"content": [], "structuredContent": {"n": "not a number"}});
        let s = Script::new()
            .tool_pages(2)
            .tool("shaped", Some(schema.clone()), answer.clone())
            .tool("bare", None, json!({"content": []}));
        let first = run("tools/list", json!({}), &s).unwrap();
        assert!(
            first["tools"]
                .as_array()
                .unwrap()
                .iter()
                .all(|t| t["name"] != "shaped")
        );
        let last = run("tools/list", json!({"cursor": "page-2"}), &s).unwrap();
        let tools = last["tools"].as_array().unwrap();
        let shaped = tools.iter().find(|t| t["name"] == "shaped").unwrap();
        assert_eq!(shaped["outputSchema"], schema);
        let bare = tools.iter().find(|t| t["name"] == "bare").unwrap();
        assert!(bare.get("outputSchema").is_none());
        let called = run("tools/call", json!({"name": "shaped"}), &s).unwrap();
        assert_eq!(called, answer);
    }

    #[test]
    fn add_formats_numbers() {
        let s = Script::new();
        let r = run(
            "tools/call",
            json!({"name": "add", "arguments": {"a": 2, "b": 3}}),
            &s,
        )
        .unwrap();
        assert_eq!(r["content"][0]["text"], "5");
        assert_eq!(r["structuredContent"]["sum"], 5);
        let r = run(
            "tools/call",
            json!({"name": "add", "arguments": {"a": 1.5, "b": 1.5}}),
            &s,
        )
        .unwrap();
        assert_eq!(r["content"][0]["text"], "3");
        let r = run(
            "tools/call",
            json!({"name": "add", "arguments": {"a": 0.5, "b": 0.25}}),
            &s,
        )
        .unwrap();
        assert_eq!(r["content"][0]["text"], "0.75");
        let e = run(
            "tools/call",
            json!({"name": "add", "arguments": {"a": "x", "b": 1}}),
            &s,
        )
        .unwrap_err();
        assert_eq!(e.code, -32602);
    }

    #[test]
    fn pages_cover_catalog() {
        for pages in 1..12 {
            let s = Script::new().tool_pages(pages);
            let mut names = Vec::new();
            let mut cursor: Option<String> = None;
            for _ in 0..pages {
                let params = match &cursor {
                    Some(c) => json!({"cursor": c}),
                    None => json!({}),
                };
                let r = run("tools/list", params, &s).unwrap();
                let tools = r["tools"].as_array().unwrap();
                assert!(!tools.is_empty());
                names.extend(tools.iter().map(|t| t["name"].as_str().unwrap().to_owned()));
                cursor = r
                    .get("nextCursor")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
            }
            assert!(cursor.is_none(), "pages={pages}");
            assert_eq!(names.len(), 4.max(pages));
            assert_eq!(&names[..4], ["echo", "add", "sleep", "fail"]);
        }
    }

    #[test]
    fn the_forecast_result_matches_its_schema_and_carries_its_json_as_text() {
        let schema = mcp_proto::schema::OutputSchema::compile(&forecast_schema()).unwrap();
        let r = forecast_result();
        assert_eq!(r["isError"], false);
        assert_eq!(r["structuredContent"]["days"].as_array().unwrap().len(), 7);
        assert!(schema.validate(&r["structuredContent"]).is_ok());
        let text: Value = serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(text, r["structuredContent"]);
        let mut broken = r["structuredContent"].clone();
        broken["days"][3]["high"] = json!("warm");
        assert_eq!(
            schema.validate(&broken).unwrap_err().instance_path,
            "/days/3/high"
        );
    }

    #[test]
    fn wrong_ids() {
        assert_eq!(wrong_id(&json!(1)), json!(1001));
        assert_eq!(wrong_id(&json!("a")), json!("a-wrong"));
        assert_eq!(wrong_id(&Value::Null), json!(1000));
    }
}
