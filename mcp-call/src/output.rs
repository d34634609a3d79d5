//! What `mcp-call` prints: outcomes on stdout (text, or JSON with `--json`), errors and
//! usage errors on stderr as one sentence (or one JSON object), the `--repeat` summary. Each
//! printer returns the exit code its output stands for; none of them decides anything else.

use crate::stdout::outln;
use std::time::Duration;

use mcp_proto::{Era, Error, Fault, Outcome};
use serde_json::Value;

use crate::cli::{Cli, code};
use crate::servers;

/// `servers`: one line per entry of --config (a JSON array with --json).
pub(crate) fn list_servers(cli: &Cli) -> u8 {
    let Some(path) = &cli.config else {
        let message = "servers lists the entries of a --config FILE";
        return usage(cli.json, None, message);
    };
    let entries = match servers::load(path) {
        Ok(entries) => entries,
        Err(message) => {
            return usage(cli.json, None, &message);
        }
    };
    let described = entries.iter().map(|entry| match &entry.transport {
        servers::Transport::Http(remote) => {
            let kind = if remote.sse { "sse" } else { "http" };
            (entry.name.as_str(), kind, remote.url.clone())
        }
        servers::Transport::Command { command, args, .. } => {
            let mut line = command.clone();
            for arg in args {
                line.push(' ');
                line.push_str(arg);
            }
            (entry.name.as_str(), "stdio", line)
        }
    });
    if cli.json {
        let list: Vec<Value> = described
            .map(|(name, transport, target)| {
                serde_json::json!({"name": name, "transport": transport, "target": target})
            })
            .collect();
        outln!("{}", Value::Array(list));
    } else {
        for (name, transport, target) in described {
            outln!("{name}\t{transport}\t{target}");
        }
    }
    code::OK
}

/// Reports a usage error (exit code 2) and returns its code.
pub(crate) fn usage(json: bool, server: Option<&str>, message: &str) -> u8 {
    report_error(json, ("usage", Fault::Caller), server, message, code::USAGE);
    code::USAGE
}

/// Says what went wrong on stderr: `mcp-call: <sentence>`, or with `--json` one object
/// `{"error":{"kind","fault","server","message","exit"}}` a script can read.
pub(crate) fn report_error(
    json: bool,
    (kind, fault): (&str, Fault),
    server: Option<&str>,
    message: &str,
    exit: u8,
) {
    if json {
        let value = serde_json::json!({"error": {
            "kind": kind,
            "fault": fault.as_str(),
            "server": server,
            "message": message,
            "exit": exit,
        }});
        eprintln!("{value}");
    } else {
        eprintln!("mcp-call: {message}");
    }
}

/// Names the task still running on the server when the budget ended: `task: <id>` on
/// stderr, or with `--json` one object `{"task":{"id","status","message","ttl_ms"}}`.
pub(crate) fn report_task(json: bool, task: &mcp_proto::task::TaskHandle) {
    if json {
        let value = serde_json::json!({"task": {
            "id": task.task_id,
            "status": task.status.as_str(),
            "message": task.status_message,
            "ttl_ms": task.ttl.map(|ttl| ttl.as_millis() as u64),
        }});
        eprintln!("{value}");
    } else {
        eprintln!("task: {}", task.task_id);
    }
}

/// The `--repeat` summary: `summary: runs=N errors=E p50_ms=.. p90_ms=.. p99_ms=.. per_s=..`
/// (percentiles by nearest rank over every run, failed ones included).
pub(crate) fn summary(latencies: &[Duration], errors: usize, total: Duration) -> String {
    let mut sorted: Vec<Duration> = latencies.to_vec();
    sorted.sort_unstable();
    let rank = |p: usize| {
        let n = sorted.len();
        let at = (p * n).div_ceil(100).clamp(1, n.max(1)) - 1;
        sorted.get(at).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    let per_s = if total.is_zero() {
        0.0
    } else {
        sorted.len() as f64 / total.as_secs_f64()
    };
    format!(
        "summary: runs={} errors={errors} p50_ms={:.1} p90_ms={:.1} p99_ms={:.1} per_s={per_s:.1}",
        sorted.len(),
        rank(50),
        rank(90),
        rank(99)
    )
}

/// One sentence naming the server (every error does; caller errors get the label added).
pub(crate) fn sentence(err: &Error, label: &str) -> String {
    let text = match err.server() {
        Some(_) => err.to_string(),
        None => format!("{err} (MCP server \"{label}\")"),
    };
    match err {
        Error::AuthorizationRequired { .. } => format!("{text}; run `mcp-call login` first"),
        _ => text,
    }
}

pub(crate) fn print_probe(info: &mcp_proto::SessionInfo, json: bool) -> u8 {
    if json {
        let value = serde_json::json!({
            "protocolVersion": info.protocol_version.as_str(),
            "era": Era::of(info.protocol_version).to_string(),
            "serverInfo": {"name": info.server.name, "version": info.server.version},
            "capabilities": info.capabilities,
            "sessionId": info.session_id,
        });
        outln!("{value}");
    } else {
        // A server that reports no version gets no empty word (and no double space).
        let mut who = info.server.name.clone();
        if !info.server.version.is_empty() {
            who.push(' ');
            who.push_str(&info.server.version);
        }
        outln!(
            "{who} (protocol {}, {} era)",
            info.protocol_version,
            Era::of(info.protocol_version)
        );
    }
    code::OK
}

/// Prints an outcome: a listing (one key per line, or the raw entries as a JSON array), a
/// call's text (or the raw result), a probe's report. Returns the exit code (a tool that
/// answered `isError: true` is not a success). A one-request command's answer is its own
/// to print (`Command::answer_text`).
pub(crate) fn print_outcome(outcome: Outcome, json: bool) -> u8 {
    fn lines<T>(items: &[T], key: impl Fn(&T) -> &str, raw: impl Fn(&T) -> Value, json: bool) {
        if json {
            outln!("{}", Value::Array(items.iter().map(raw).collect()));
        } else {
            for item in items {
                outln!("{}", key(item));
            }
        }
    }
    match outcome {
        Outcome::Tools(tools) => {
            lines(&tools, |t| &t.name, |t| Value::Object(t.raw.clone()), json);
        }
        Outcome::Resources(items) => {
            lines(&items, |r| &r.uri, |r| Value::Object(r.raw.clone()), json);
        }
        Outcome::ResourceTemplates(items) => lines(
            &items,
            |t| &t.uri_template,
            |t| Value::Object(t.raw.clone()),
            json,
        ),
        Outcome::Prompts(items) => {
            lines(&items, |p| &p.name, |p| Value::Object(p.raw.clone()), json);
        }
        Outcome::Call(result) => return print_call(&result, json),
        Outcome::Probe(info) => return print_probe(&info, json),
        Outcome::TaskCancelRequested(id) if json => {
            outln!(
                "{}",
                serde_json::json!({"task": {"id": id, "cancel": "requested"}})
            );
        }
        Outcome::TaskCancelRequested(id) => outln!("cancel requested: {id}"),
        // The notifications went out as they came; the end is said only to a script.
        Outcome::Subscription(end) if json => outln!(
            "{}",
            serde_json::json!({"subscription": {"acknowledged": end.acknowledged,
                "endedBy": if end.by_server { "server" } else { "budget" }}})
        ),
        // Not an outcome of any command (close): nothing to print.
        _ => {}
    }
    code::OK
}

pub(crate) fn print_call(result: &mcp_proto::CallToolResult, json: bool) -> u8 {
    if json {
        outln!("{}", Value::Object(result.raw_object()));
    } else {
        crate::stdout::text_line(&result.text());
    }
    if result.is_error {
        code::TOOL_ERROR
    } else {
        code::OK
    }
}
