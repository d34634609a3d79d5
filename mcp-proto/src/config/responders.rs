//! How a session answers the server's own requests: the caller's responders, registered by
//! method, and the protocol's answer where none is (`{}` to `ping`, -32601 to anything else);
//! the client capabilities `initialize` declares follow from them.
//!
//! Configuration only: a driver runs a responder between polls when the operation asks
//! ([`Output::Request`](crate::driver::Output::Request)); nothing here runs on its own.

use std::sync::Arc;

use mcp_auth::clip;
use serde_json::{Map, Value};

use super::SessionConfig;
use crate::jsonrpc::RpcError;

impl SessionConfig {
    /// Answers the server's `method` requests (e.g. `elicitation/create`) with `respond`.
    ///
    /// Legacy servers may send requests on the stream of an answer; each is answered with a
    /// POST inside the same budget. Modern servers ask in their result instead
    /// (`resultType: "input_required"`); the answers go out with the retried request, a new
    /// leg of the same budget. Registering `elicitation/create`, `sampling/createMessage` or
    /// `roots/list` also declares the matching client capability in `initialize`. `ping` is
    /// always answered with `{}`; a request nobody registered is answered with JSON-RPC error
    /// -32601, by the operation itself.
    ///
    /// The operation asks for the answer ([`Output::Request`](crate::driver::Output::Request))
    /// and never runs `respond` itself: the driver runs it between polls, on the operation's
    /// thread or task, so `respond` should return quickly; the budget runs while it does, and
    /// an answer after the budget's end is not sent.
    ///
    /// ```
    /// use mcp_proto::{SessionConfig};
    /// use mcp_proto::message::{accept_elicitation_with_defaults};
    /// let config = SessionConfig::new("http://127.0.0.1:3000/mcp")?
    ///     .respond_to("elicitation/create", |params| Ok(accept_elicitation_with_defaults(params)));
    /// # Ok::<(), mcp_proto::Error>(())
    /// ```
    pub fn respond_to(
        mut self,
        method: impl Into<String>,
        respond: impl Fn(&Value) -> Result<Value, RpcError> + Send + Sync + 'static,
    ) -> Self {
        let method = method.into();
        self.responders.retain(|(m, _)| *m != method);
        self.responders.push((method, Responder(Arc::new(respond))));
        self
    }

    /// Whether a responder is registered for the server's `method` requests (see
    /// [`respond_to`](Self::respond_to)): only those are asked of the caller.
    pub(crate) fn answers(&self, method: &str) -> bool {
        self.responders.iter().any(|(m, _)| m == method)
    }

    /// The registered responder's answer to the server's `method` request with `params`
    /// ([`respond_to`](Self::respond_to)), or the protocol's own (`{}` to `ping`, JSON-RPC
    /// error -32601 to anything else) when none is registered for `method`. A driver calls
    /// this for [`Output::Request`](crate::driver::Output::Request) (through
    /// [`ServerRequest::reply_from`](crate::driver::ServerRequest::reply_from)), between polls: the
    /// operation itself never runs the caller's code.
    pub fn answer(&self, method: &str, params: &Value) -> Result<Value, RpcError> {
        match self.responders.iter().find(|(m, _)| m == method) {
            Some((_, responder)) => (responder.0)(params),
            None => protocol_answer(method),
        }
    }

    /// The client capabilities declared in `initialize`, from the registered responders.
    pub(crate) fn capabilities(&self) -> Map<String, Value> {
        let mut capabilities = Map::new();
        for (method, _) in &self.responders {
            let capability = match method.as_str() {
                "elicitation/create" if self.url_elicitation => {
                    let modes = serde_json::json!({"form": {}, "url": {}});
                    capabilities.insert("elicitation".to_owned(), modes);
                    continue;
                }
                "elicitation/create" => "elicitation",
                "sampling/createMessage" => "sampling",
                "roots/list" => "roots",
                _ => continue,
            };
            capabilities.insert(capability.to_owned(), Value::Object(Map::new()));
        }
        capabilities
    }
}

/// The answer to a server request nobody registered an answer for: `{}` to `ping`, else
/// JSON-RPC error -32601.
pub(crate) fn protocol_answer(method: &str) -> Result<Value, RpcError> {
    if method == "ping" {
        return Ok(Value::Object(Map::new()));
    }
    Err(RpcError {
        code: -32601,
        message: format!("method not found: {}", clip(method, 100)),
        data: None,
    })
}

/// A caller's answer to one kind of server request.
#[derive(Clone)]
pub(super) struct Responder(Arc<RespondFn>);

/// The shape of a caller's answer to a server request.
type RespondFn = dyn Fn(&Value) -> Result<Value, RpcError> + Send + Sync + 'static;

impl std::fmt::Debug for Responder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Responder(..)")
    }
}
