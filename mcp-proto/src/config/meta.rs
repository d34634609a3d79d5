//! What every request carries in `_meta` besides the era's own, as the configuration asks: a
//! W3C trace context, and the milliseconds left of the operation's budget.
//!
//! Configuration only: the values are written into each request where it is built
//! (`operation/transmit.rs`).

use serde_json::{Map, Value};

use std::sync::Arc;

use super::SessionConfig;
use crate::error::Error;
use crate::model::ProtocolVersion;

/// The `_meta` key under which a request tells the server the milliseconds left of the
/// operation's budget ([`SessionConfig::with_send_deadline`]): this project's own, not a
/// standard one.
pub const DEADLINE_META_KEY: &str = "dev.mcp-deadline/remainingMs";

impl SessionConfig {
    /// Propagates a W3C trace context: every request carries `traceparent` (and `tracestate`,
    /// when given) in its `params._meta`, as the 2026-07-28 revision documents for
    /// OpenTelemetry (legacy-era requests too). Off unless configured.
    ///
    /// # Errors
    /// [`Error::InvalidHeader`] when `traceparent` is not `version-traceid-parentid-flags` in
    /// lower-case hex (W3C Trace Context, ids not all zero) or `tracestate` has characters a
    /// header value cannot carry or more than 512 of them.
    ///
    /// ```
    /// use mcp_proto::SessionConfig;
    /// let config = SessionConfig::new("https://tools.example.org/mcp")?
    ///     .with_trace_context("00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01", None)?;
    /// assert!(SessionConfig::new("https://tools.example.org/mcp")?
    ///     .with_trace_context("00-not-a-trace", None)
    ///     .is_err());
    /// # Ok::<(), mcp_proto::Error>(())
    /// ```
    pub fn with_trace_context(
        mut self,
        traceparent: &str,
        tracestate: Option<&str>,
    ) -> Result<Self, Error> {
        let invalid = |name: &str, reason| Error::InvalidHeader {
            name: name.to_owned(),
            reason,
        };
        if !valid_traceparent(traceparent) {
            return Err(invalid(
                "traceparent",
                "it is not a W3C traceparent (version-traceid-parentid-flags, lower-case hex)",
            ));
        }
        let mut context = Map::new();
        context.insert("traceparent".to_owned(), Value::from(traceparent));
        if let Some(state) = tracestate {
            if state.len() > 512 || !state.bytes().all(|b| (0x20..0x7f).contains(&b)) {
                return Err(invalid(
                    "tracestate",
                    "it has more than 512 characters or one a header value cannot carry",
                ));
            }
            context.insert("tracestate".to_owned(), Value::from(state));
        }
        self.trace_context = context;
        Ok(self)
    }

    /// Tells the server, on every request, the milliseconds left of the operation's budget
    /// when the request goes out (recomputed per leg: polls and input rounds included), in
    /// `_meta` under [`DEADLINE_META_KEY`] (default: off). Nothing in MCP standardises this:
    /// SEP-1539 proposes timeouts a server declares, and a `mcp.dev/timeout` key was proposed
    /// and closed (PRs #2422, #2423); prefixes whose second label is `modelcontextprotocol` or
    /// `mcp` are reserved, so the key has this project's own prefix. A server that knows it may
    /// stop work nobody waits for; any other ignores it.
    pub fn with_send_deadline(mut self, on: bool) -> Self {
        self.send_deadline = on;
        self
    }

    /// Whether every request tells the server what is left of the budget.
    pub fn sends_deadline(&self) -> bool {
        self.send_deadline
    }

    /// The trace context every request carries in `_meta` (empty when not configured).
    pub fn trace_context(&self) -> &Map<String, Value> {
        &self.trace_context
    }

    /// What every modern request of this configuration carries in `_meta` in `version`,
    /// whatever it asks: the version, the client's capabilities (the tasks extension declared
    /// when `tasks`) and who it is, the trace context, the log level asked for. Built once and
    /// kept (a request adds the time left, or a progress token, to a copy).
    pub(crate) fn modern_meta(
        &self,
        version: ProtocolVersion,
        tasks: bool,
    ) -> Arc<crate::wire::ModernMeta> {
        self.modern_meta.get(version, tasks, || {
            let mut capabilities = self.capabilities();
            if tasks {
                let tasks = serde_json::json!({"io.modelcontextprotocol/tasks": {}});
                capabilities.insert("extensions".to_owned(), tasks);
            }
            let (client, trace) = (self.client_info(), &self.trace_context);
            crate::wire::ModernMeta::new(version, capabilities, client, trace, self.log_level)
        })
    }
}

/// W3C Trace Context `traceparent`: `vv-<32 hex>-<16 hex>-ff`, lower case, version not `ff`,
/// trace id and parent id not all zero.
fn valid_traceparent(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    let hex = |part: &str, len: usize| {
        part.len() == len
            && part
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    let nonzero = |part: &str| part.bytes().any(|b| b != b'0');
    matches!(parts.as_slice(), [version, trace, parent, flags]
        if hex(version, 2) && *version != "ff"
            && hex(trace, 32) && nonzero(trace)
            && hex(parent, 16) && nonzero(parent)
            && hex(flags, 2))
}
