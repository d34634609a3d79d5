//! What a server says of itself: the result of `initialize` (legacy era), read into the
//! handshake the operation commits, and of `server/discover` (modern era).
//!
//! Plain reading. It never commits anything to the session and never decides the era: a
//! version it cannot speak is handed back as a failure for the operation to act on.

use serde_json::{Map, Value};

use super::failure::Failure;
use crate::model::{self, ProtocolVersion, SessionInfo};
use mcp_auth::clip;

/// An `initialize` result: the handshake to commit once `notifications/initialized` is
/// accepted, or why it cannot be.
pub(super) fn read_initialize(
    result: &Map<String, Value>,
    session_id: Option<String>,
) -> Result<SessionInfo, Failure> {
    let Some(version) = result.get("protocolVersion").and_then(Value::as_str) else {
        let detail = "the initialize result has no protocolVersion".to_owned();
        return Err(Failure::Malformed(detail));
    };
    // A modern version has no handshake: an `initialize` answer naming one is not spoken.
    let spoken = ProtocolVersion::parse(version).filter(|v| !v.is_modern());
    let Some(protocol_version) = spoken else {
        return Err(Failure::Version(clip(version, model::LABEL_LIMIT)));
    };
    let server = result.get("serverInfo");
    Ok(session_info(result, protocol_version, server, session_id))
}

/// What `server/discover` says: who the server is and what it offers. The version is the one
/// the operation spoke; there is no session.
pub(super) fn read_discover(
    result: &Map<String, Value>,
    modern: Option<ProtocolVersion>,
) -> SessionInfo {
    let server = result
        .get("_meta")
        .and_then(|meta| meta.get("io.modelcontextprotocol/serverInfo"));
    let version = modern.unwrap_or(ProtocolVersion::MODERN);
    session_info(result, version, server, None)
}

/// What a server says about itself (an `initialize` or `server/discover` result), with the
/// version spoken and the session id it issued, if any.
fn session_info(
    result: &Map<String, Value>,
    protocol_version: ProtocolVersion,
    server: Option<&Value>,
    session_id: Option<String>,
) -> SessionInfo {
    SessionInfo {
        protocol_version,
        server: model::server_info(server),
        capabilities: result
            .get("capabilities")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new())),
        instructions: result
            .get("instructions")
            .and_then(Value::as_str)
            .map(str::to_owned),
        session_id,
    }
}
