//! The official Rust SDK's own server: rmcp 3.11's `StreamableHttpService` serving one tool,
//! `echo`, in a child process (`mcp-bench serve-rmcp`), so that the whole-process rows
//! ([`crate::whole`]) measure our clients against a server that is not ours and hides nothing.
//!
//! The tool is the bench server's `echo` (`mcp-testkit`): `{"text": string}` in, one text
//! content block with that text out (`isError: false`), listed with the same `inputSchema`.
//! The handler is a plain [`ServerHandler`] (no tool macros: what they generate is a router
//! that does the same lookup and `arguments` read); everything else — HTTP parsing, header
//! and `_meta` checks, sessions, JSON-RPC — is rmcp's.
//!
//! The service runs on a multi-threaded tokio runtime (one worker per core, as
//! `#[tokio::main]` in rmcp's examples), each connection served by hyper's HTTP/1.1 server
//! (keep-alive) through hyper-util's tower adapter, on 127.0.0.1 at an ephemeral port.
//!
//! # The configuration: [`config`]
//!
//! `StreamableHttpServerConfig::default().with_json_response(true)`, so:
//!
//! * `legacy_session_mode: true` (the default): a 2025-11-25 client's `initialize` opens a
//!   session (`Mcp-Session-Id`), its later requests run on it, `DELETE` ends it. This is the
//!   only way rmcp serves the legacy era with its handshake; a session's requests are always
//!   answered as an event stream (`text/event-stream`, a priming event first: `sse_retry` is
//!   left at its default 3 s, as a server built from the defaults sends it), `json_response`
//!   does not apply to them.
//! * `json_response: true`: a 2026-07-28 request (its version in `_meta`, no session: served
//!   statelessly whatever `legacy_session_mode` says) is answered with one
//!   `application/json` body when the handler's first message is the final answer, as `echo`'s
//!   is. This is the cheaper answer for both sides, and what the testkit's `json` server does.
//! * everything else default: loopback `Host` check on (`localhost`, `127.0.0.1`, `::1`), no
//!   `Origin` check, no session store, 4 MiB request cap, `stateless_protocol_metadata_required`
//!   off (the modern requests carry their metadata anyway).

use std::borrow::Cow;
use std::io::{self, BufRead, Write};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};

use crate::server::Serving;
use hyper_util::service::TowerToHyperService;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, JsonObject,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};

/// The role word on `serve-rmcp`'s URL line.
pub const ROLE: &str = "rmcp";

/// The server's configuration (see the module's docs for why).
pub fn config() -> StreamableHttpServerConfig {
    StreamableHttpServerConfig::default().with_json_response(true)
}

/// The configuration as the tables name it.
pub const CONFIG_LABEL: &str = "`StreamableHttpServerConfig::default().with_json_response(true)`: \
     legacy sessions on (2025-11-25 answers are event streams), JSON answers for 2026-07-28 \
     requests";

/// The `echo` tool as `mcp-testkit` lists it.
static ECHO: LazyLock<Tool> = LazyLock::new(|| {
    let Value::Object(schema) = json!({
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    }) else {
        unreachable!("an object literal")
    };
    Tool::new("echo", "Returns the given text.", Arc::new(schema))
});

/// The handler: `echo` and nothing else.
#[derive(Debug, Clone, Copy, Default)]
pub struct Echo;

impl Echo {
    fn echo(arguments: Option<&JsonObject>) -> Result<CallToolResult, ErrorData> {
        match arguments
            .and_then(|a| a.get("text"))
            .and_then(Value::as_str)
        {
            Some(text) => Ok(CallToolResult::success(vec![ContentBlock::text(text)])),
            None => Err(ErrorData::invalid_params("missing argument: text", None)),
        }
    }
}

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![ECHO.clone()]))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        (name == ECHO.name).then(|| ECHO.clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != ECHO.name {
            let message: Cow<'static, str> = format!("no tool {:?}", request.name).into();
            return Err(ErrorData::invalid_params(message, None));
        }
        Self::echo(request.arguments.as_ref()).map(Into::into)
    }
}

/// The body of `mcp-bench serve-rmcp`: serves rmcp's `StreamableHttpService` (the [`Echo`]
/// handler, [`config`]) on 127.0.0.1, prints `rmcp http://127.0.0.1:PORT/mcp` and an empty line
/// (the conventions of `mcp-bench serve`), then serves until standard input closes. Lines read
/// on standard input are ignored.
///
/// # Errors
/// A bad command line, or a server that cannot start.
pub fn serve_main(args: &[String]) -> io::Result<()> {
    if !args.is_empty() {
        return Err(io::Error::other("usage: mcp-bench serve-rmcp"));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let config = config();
    let stop = config.cancellation_token.clone();
    let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
    let addr = listener.local_addr()?;
    let service: StreamableHttpService<Echo, LocalSessionManager> =
        StreamableHttpService::new(|| Ok(Echo), Arc::default(), config);
    let accept_stop = stop.clone();
    runtime.spawn(async move {
        loop {
            let (stream, _) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(_) => continue,
                },
                () = accept_stop.cancelled() => return,
            };
            let _ = stream.set_nodelay(true);
            let service = TowerToHyperService::new(service.clone());
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .timer(TokioTimer::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    let mut out = io::stdout().lock();
    writeln!(out, "{ROLE} http://{addr}/mcp")?;
    writeln!(out)?;
    out.flush()?;
    drop(out);
    for line in io::stdin().lock().lines() {
        if line.is_err() {
            break;
        }
    }
    stop.cancel();
    runtime.shutdown_timeout(Duration::from_secs(1));
    Ok(())
}

/// The `serve-rmcp` child process. Dropping it closes its standard input, which stops it.
#[derive(Debug)]
pub struct RmcpServerProcess(Serving);

impl RmcpServerProcess {
    /// Starts `exe serve-rmcp` and waits for its URL.
    pub fn spawn(exe: &std::path::Path) -> io::Result<Self> {
        Serving::spawn(exe, &["serve-rmcp"], 1).map(Self)
    }

    /// Its endpoint, `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> &str {
        self.0.url(ROLE).unwrap_or_default()
    }

    /// The process id (for its CPU time).
    pub fn pid(&self) -> u32 {
        self.0.pid()
    }
}
