//! `--elicit` and `--sampling-answer`: how `mcp-call` answers a server's `elicitation/create`
//! and `sampling/createMessage` (requests for input during a call, or during the task a call
//! became), and what it shows of them on stderr.
//!
//! A form is answered as the flag says: declined, or accepted with the defaults its schema
//! declares. A URL-mode elicitation (the server asks the person to open a page) is shown with
//! its URL and the URL's domain, and always declined: nothing here opens a page a server
//! named. What is shown is clipped and has its control characters folded, so a server cannot
//! write to the terminal through it.

use clap::ValueEnum;
use mcp_auth::{QUOTE_LIMIT, clip};
use mcp_proto::RpcError;
use serde_json::{Value, json};

/// How a form elicitation is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Elicit {
    /// Decline every elicitation.
    Decline,
    /// Accept a form with the defaults its schema declares (a URL is still declined, and so
    /// is a form with a required field that has no default).
    Defaults,
}

/// A server's text, safe to print on one line.
pub(crate) fn shown(text: &str) -> String {
    clip(text, QUOTE_LIMIT)
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// The answer to an `elicitation/create` with `params`, after one line on stderr:
/// `elicitation: <message>` (for a URL, ` url=<url> domain=<host>` too) and what was answered.
pub(crate) fn respond(mode: Elicit, params: &Value) -> Result<Value, RpcError> {
    let message = shown(params.get("message").and_then(Value::as_str).unwrap_or(""));
    let decline = json!({"action": "decline"});
    if let Some(page) = mcp_proto::message::UrlElicitation::of(params) {
        let domain = page
            .domain
            .as_deref()
            .map_or_else(|| "(none)".to_owned(), shown);
        eprintln!(
            "elicitation: {message} url={} domain={domain} (declined: mcp-call opens no page a server names)",
            shown(&page.url)
        );
        return Ok(decline);
    }
    let answer = match mode {
        Elicit::Decline => decline,
        Elicit::Defaults => mcp_proto::message::accept_elicitation_with_defaults(params),
    };
    let action = answer["action"].as_str().unwrap_or("decline");
    eprintln!("elicitation: {message} ({action})");
    Ok(answer)
}

/// The answer to a `sampling/createMessage` with `params`: `text` as the assistant's message
/// from model `mcp-call`, after one line on stderr, `sampling: <the last message's text>`.
pub(crate) fn sampled(text: &str, params: &Value) -> Value {
    let asked = (params.get("messages").and_then(Value::as_array))
        .and_then(|messages| messages.last())
        .and_then(|message| message.pointer("/content/text"))
        .and_then(Value::as_str)
        .unwrap_or("");
    eprintln!("sampling: {} (answered)", shown(asked));
    json!({"role": "assistant", "content": {"type": "text", "text": text},
        "model": "mcp-call", "stopReason": "endTurn"})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_is_answered_as_told_and_a_url_is_always_declined() {
        let form = json!({"message": "Who?\u{1b}[2J", "requestedSchema": {"type": "object",
            "properties": {"name": {"type": "string", "default": "Ada"}}}});
        let accepted = respond(Elicit::Defaults, &form).unwrap();
        assert_eq!(
            accepted,
            json!({"action": "accept", "content": {"name": "Ada"}})
        );
        assert_eq!(
            respond(Elicit::Decline, &form).unwrap()["action"],
            "decline"
        );
        let page = json!({"mode": "url", "message": "Sign in", "url": "https://pay.example/x",
            "elicitationId": "e1"});
        assert_eq!(
            respond(Elicit::Defaults, &page).unwrap()["action"],
            "decline"
        );
        assert_eq!(shown("a\nb\u{1b}c"), "a b c");
    }

    #[test]
    fn a_sampling_request_is_answered_with_the_text_given() {
        let asked = json!({"messages": [{"role": "user",
            "content": {"type": "text", "text": "Summarize: hi"}}], "maxTokens": 50});
        let answer = sampled("short", &asked);
        assert_eq!(answer["content"], json!({"type": "text", "text": "short"}));
        assert_eq!(answer["role"], "assistant");
        assert_eq!(answer["model"], "mcp-call");
    }
}
