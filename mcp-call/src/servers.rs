//! Server configurations as MCP hosts write them: `{"mcpServers": {NAME: ENTRY}}` (Claude
//! Desktop, Cursor) or VS Code's `{"servers": {NAME: ENTRY}}`. An entry is remote (`url`,
//! `headers`) or local (`command`, `args`, `env`, `cwd`), with an optional `timeout` in
//! seconds and optional tool filters (`tools`, `ignoreTools`: arrays of name patterns, as
//! `--tool` and `--ignore-tool` take). Reading a file is all this module does; what an entry means for a run (flags win)
//! is `main`'s.
//!
//! The fuzz harness compiles this file as it is (`fuzz/harness/src/files.rs`, by `#[path]`):
//! it must use nothing of the binary crate but its dependencies.

use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value};

/// One named entry.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    pub(crate) name: String,
    pub(crate) transport: Transport,
    pub(crate) timeout: Option<Duration>,
    /// `"tools"`: only the tools matching one of these patterns are visible (empty: no
    /// allowlist).
    pub(crate) tools: Vec<String>,
    /// `"ignoreTools"`: the tools matching any of these patterns are hidden.
    pub(crate) ignore_tools: Vec<String>,
}

/// A remote server: its endpoint and the headers to send.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Remote {
    pub(crate) url: String,
    pub(crate) headers: Vec<(String, String)>,
    /// `"type": "sse"` (VS Code's) or `"transport": "sse"`: the HTTP+SSE transport of
    /// 2024-11-05, without the Streamable HTTP POSTs that would find it.
    pub(crate) sse: bool,
}

/// How the entry reaches its server.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Transport {
    /// Streamable HTTP.
    Http(Remote),
    /// A local process over stdio.
    Command {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
        cwd: Option<String>,
    },
}

/// Reads every entry of the file at `path`, by name. `Err` is a usage error naming
/// the file (and the line, for JSON that does not parse, or the entry).
pub(crate) fn load(path: &Path) -> Result<Vec<Entry>, String> {
    let shown = path.display();
    // Bytes, not text: a file that is not UTF-8 is JSON that does not parse, at a line.
    let bytes = std::fs::read(path).map_err(|err| format!("cannot read {shown}: {err}"))?;
    let value: Value = serde_json::from_slice(&bytes)
        .map_err(|err| format!("{shown}, line {}: not JSON ({err})", err.line()))?;
    let servers = value
        .get("mcpServers")
        .or_else(|| value.get("servers"))
        .and_then(Value::as_object)
        .ok_or_else(|| format!("{shown}: no \"mcpServers\" (or \"servers\") object"))?;
    servers
        .iter()
        .map(|(name, entry)| {
            // Escaped: a name (or a key in it) is the file's text, and may hold terminal
            // control sequences.
            read_entry(name, entry)
                .map_err(|why| format!("{shown}: server \"{}\": {why}", name.escape_debug()))
        })
        .collect()
}

/// A budget given in seconds (`--timeout`, a `--config` entry's `timeout`): positive, finite,
/// at least a nanosecond once converted (a budget that rounds to zero is no budget at all), and
/// representable.
pub(crate) fn budget_seconds(seconds: f64) -> Result<Duration, &'static str> {
    if !seconds.is_finite() || seconds <= 0.0 {
        return Err("not a positive number of seconds");
    }
    match Duration::try_from_secs_f64(seconds) {
        Ok(budget) if budget.is_zero() => Err("shorter than a nanosecond"),
        Ok(budget) => Ok(budget),
        Err(_) => Err("too long"),
    }
}

/// Whether a remote entry names the HTTP+SSE transport: its `"type"` (VS Code: `http`, `sse`)
/// or `"transport"` (`streamable-http`, `sse`, as other hosts write it).
fn speaks_sse(entry: &serde_json::Map<String, Value>) -> Result<bool, String> {
    let mut sse = false;
    for key in ["type", "transport"] {
        match entry.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::String(kind)) => match kind.as_str() {
                "sse" => sse = true,
                "http" | "streamable-http" | "streamableHttp" | "streamable_http" => {}
                other => {
                    return Err(format!(
                        "\"{key}\" is \"{}\": a URL is reached over http (Streamable HTTP) or sse",
                        other.escape_debug()
                    ));
                }
            },
            Some(_) => return Err(format!("\"{key}\" is not a string")),
        }
    }
    Ok(sse)
}

fn read_entry(name: &str, entry: &Value) -> Result<Entry, String> {
    let entry = entry.as_object().ok_or("not an object")?;
    let text = |key: &str| entry.get(key).and_then(Value::as_str).map(str::to_owned);
    let timeout = match entry.get("timeout") {
        None | Some(Value::Null) => None,
        Some(value) => Some(
            value
                .as_f64()
                .ok_or("not a positive number of seconds")
                .and_then(budget_seconds)
                .map_err(|problem| format!("\"timeout\" is {problem}"))?,
        ),
    };
    let transport = match (text("url"), text("command")) {
        (Some(url), _) => Transport::Http(Remote {
            url,
            headers: strings(entry.get("headers"), "headers")?,
            sse: speaks_sse(entry)?,
        }),
        (None, Some(command)) => Transport::Command {
            command,
            args: match entry.get("args") {
                None => Vec::new(),
                Some(Value::Array(args)) => args
                    .iter()
                    .map(|a| {
                        a.as_str()
                            .map(str::to_owned)
                            .ok_or("\"args\" holds a non-string")
                    })
                    .collect::<Result<_, _>>()?,
                Some(_) => return Err("\"args\" is not an array".to_owned()),
            },
            env: strings(entry.get("env"), "env")?,
            cwd: text("cwd"),
        },
        (None, None) => return Err("neither \"url\" nor \"command\"".to_owned()),
    };
    let tools = patterns(entry.get("tools"), "tools")?;
    if entry
        .get("tools")
        .is_some_and(|t| t.as_array().is_some_and(Vec::is_empty))
    {
        return Err(
            "\"tools\" is empty: it would hide every tool (leave it out to show them all)"
                .to_owned(),
        );
    }
    Ok(Entry {
        name: name.to_owned(),
        transport,
        timeout,
        tools,
        ignore_tools: patterns(entry.get("ignoreTools"), "ignoreTools")?,
    })
}

/// An array of tool name patterns (`tools`, `ignoreTools`), none of them empty.
fn patterns(value: Option<&Value>, what: &str) -> Result<Vec<String>, String> {
    let Some(value) = value else {
        return Ok(Vec::new());
    };
    let items = (value.as_array()).ok_or_else(|| format!("\"{what}\" is not an array"))?;
    (items.iter())
        .map(|item| match item.as_str() {
            Some("") => Err(format!(
                "\"{what}\" holds an empty pattern, which matches no tool"
            )),
            Some(glob) => Ok(glob.to_owned()),
            None => Err(format!("\"{what}\" holds a non-string")),
        })
        .collect()
}

/// A string-to-string object (`headers`, `env`) as pairs.
fn strings(value: Option<&Value>, what: &str) -> Result<Vec<(String, String)>, String> {
    let Some(value) = value else {
        return Ok(Vec::new());
    };
    let map: &Map<String, Value> = value
        .as_object()
        .ok_or_else(|| format!("\"{what}\" is not an object"))?;
    map.iter()
        .map(|(k, v)| match v.as_str() {
            Some(v) => Ok((k.clone(), v.to_owned())),
            None => Err(format!(
                "\"{what}\".\"{}\" is not a string",
                k.escape_debug()
            )),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_text(text: &str) -> Result<Vec<Entry>, String> {
        let dir = std::env::temp_dir().join(format!("mcp-call-servers-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{}.json", text.len()));
        std::fs::write(&path, text).unwrap();
        let loaded = load(&path);
        let _ = std::fs::remove_file(&path);
        loaded
    }

    #[test]
    fn both_forms_and_both_transports_are_read() {
        let entries = load_text(
            r#"{"mcpServers": {
                "remote": {"url": "https://tools.example.org/mcp", "headers": {"Authorization": "Bearer x"}, "timeout": 5},
                "local": {"command": "npx", "args": ["-y", "server"], "env": {"K": "v"}}}}"#,
        )
        .unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[1].name, "remote", "by name");
        assert_eq!(
            entries[1].transport,
            Transport::Http(Remote {
                url: "https://tools.example.org/mcp".into(),
                headers: vec![("Authorization".into(), "Bearer x".into())],
                sse: false,
            })
        );
        assert_eq!(entries[1].timeout, Some(Duration::from_secs(5)));
        assert!(
            matches!(&entries[0].transport, Transport::Command { command, args, env, .. }
                if command == "npx" && args.len() == 2 && env == &[("K".to_owned(), "v".to_owned())])
        );
        let vscode =
            load_text(r#"{"servers": {"v": {"type": "http", "url": "http://127.0.0.1:1/mcp"}}}"#)
                .unwrap();
        assert_eq!(vscode[0].name, "v");
        let sse = |entry: &str| match &load_text(&format!(r#"{{"servers": {{"s": {entry}}}}}"#))
            .map(|entries| entries[0].transport.clone())
        {
            Ok(Transport::Http(remote)) => Ok(remote.sse),
            Ok(other) => panic!("{other:?}"),
            Err(err) => Err(err.clone()),
        };
        assert_eq!(sse(r#"{"type": "sse", "url": "http://h/sse"}"#), Ok(true));
        assert_eq!(
            sse(r#"{"transport": "sse", "url": "http://h/sse"}"#),
            Ok(true)
        );
        assert_eq!(sse(r#"{"type": "http", "url": "http://h/mcp"}"#), Ok(false));
        assert!(
            sse(r#"{"type": "websocket", "url": "ws://h"}"#)
                .unwrap_err()
                .contains("\"type\" is \"websocket\"")
        );
        assert!(vscode[0].tools.is_empty() && vscode[0].ignore_tools.is_empty());
    }

    #[test]
    fn an_entry_carries_tool_filters() {
        let entries = load_text(
            r#"{"mcpServers": {"f": {"url": "http://127.0.0.1:1/mcp",
                "tools": ["get_*", "echo"], "ignoreTools": ["*admin*"]}}}"#,
        )
        .unwrap();
        assert_eq!(entries[0].tools, ["get_*", "echo"]);
        assert_eq!(entries[0].ignore_tools, ["*admin*"]);
        for (broken, why) in [
            (
                r#""ignoreTools": "delete*""#,
                "\"ignoreTools\" is not an array",
            ),
            (r#""tools": [1]"#, "\"tools\" holds a non-string"),
            (r#""ignoreTools": [""]"#, "empty pattern"),
            (r#""tools": []"#, "would hide every tool"),
        ] {
            let text = format!(r#"{{"mcpServers": {{"f": {{"command": "x", {broken}}}}}}}"#);
            let err = load_text(&text).unwrap_err();
            assert!(err.contains("server \"f\"") && err.contains(why), "{err}");
        }
    }

    #[test]
    fn a_broken_file_names_the_file_and_the_line() {
        let err = load_text("{\n  \"mcpServers\": {\n    \"a\": {\"url\": }\n  }\n}").unwrap_err();
        assert!(err.contains("line 3"), "{err}");
        assert!(err.contains(".json"), "{err}");
        let err = load_text(r#"{"mcpServers": {"a": {"timeout": -1, "url": "x"}}}"#).unwrap_err();
        assert!(
            err.contains("server \"a\"") && err.contains("timeout"),
            "{err}"
        );
        // A positive timeout that rounds to no time at all is refused, not a zero budget.
        let err =
            load_text(r#"{"mcpServers": {"a": {"timeout": 2.5e-10, "url": "x"}}}"#).unwrap_err();
        assert!(err.contains("shorter than a nanosecond"), "{err}");
        assert!(
            load_text(r#"{"other": {}}"#)
                .unwrap_err()
                .contains("mcpServers")
        );
        // A name holding a terminal control sequence is shown escaped.
        let err = load_text(r#"{"mcpServers": {"\u001b[2Jx": {"command": 1}}}"#).unwrap_err();
        assert!(!err.chars().any(char::is_control), "{err:?}");
        assert!(err.contains(r#"server "\u{1b}[2Jx""#), "{err}");
        // Saved in Latin-1 by an editor: not UTF-8, so not JSON, at its line.
        let dir = std::env::temp_dir().join(format!("mcp-call-servers-l1-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("latin1.json");
        std::fs::write(
            &path,
            b"{\n \"mcpServers\": {\n  \"caf\xe9\": {\"command\": \"x\"}}}",
        )
        .unwrap();
        let err = load(&path).unwrap_err();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            err.contains("line 3") && err.contains("latin1.json"),
            "{err}"
        );
        assert!(
            load(Path::new("/nonexistent/servers.json"))
                .unwrap_err()
                .contains("cannot read")
        );
    }
}
