//! `mcp-conformance-client`: the client the official MCP conformance suite drives.
//!
//! The suite runs `mcp-conformance-client <server-url>` (the URL is the **last** argument) with
//! the scenario in `MCP_CONFORMANCE_SCENARIO`, and expects exit 0 once the scenario is done.
//! It runs on the tokio driver (on a current-thread runtime), because the elicitation
//! scenario's server sends its request on the session's standalone stream, which must be read
//! beside the tool call; every operation runs under a 10 s budget at millisecond resolution,
//! so the whole run gives up by itself well before the suite's 25 s.
//! Run it with `../shared/conformance/run.sh target/release/mcp-conformance-client`.

use std::process::ExitCode;
use std::time::Duration;

use mcp_auth::{ClientConfig, Dpop, Grant, PreRegisteredClient, PrivateKey};
use mcp_driver_tokio::{Client, HeadlessAuthorizer};
use mcp_proto::message::accept_elicitation_with_defaults;
use mcp_proto::request::{GetPrompt, ReadResource};
use mcp_proto::{
    Action, Budget, Error, Event, LegReport, ListKind, OAuth, Observer, ProtocolVersion,
    Resolution, RpcError, SessionConfig,
};
use mcp_proto::{Prompt, Resource};
use serde_json::{Map, Value, json};

fn main() -> ExitCode {
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!(
            "usage: mcp-conformance-client <server-url>  (scenario in MCP_CONFORMANCE_SCENARIO)"
        );
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("mcp-conformance-client: no tokio runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&url, &scenario)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("mcp-conformance-client: scenario {scenario:?}: {err}");
            ExitCode::FAILURE
        }
    }
}

async fn run(url: &str, scenario: &str) -> Result<(), Error> {
    let mut config = SessionConfig::new(url)?
        .with_budget(Budget::from_duration(Duration::from_secs(10)))
        .with_resolution(Resolution::MILLISECOND)
        .with_client_info("mcp-conformance-client", env!("CARGO_PKG_VERSION"));
    // The suite names the revision under test: it is pinned (a modern one is spoken from the
    // first request, a legacy one through the handshake). Without one, the era is detected.
    let revision = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").unwrap_or_default();
    if let Some(version) = ProtocolVersion::parse(&revision) {
        config = config.with_protocol_version(version);
    }
    if scenario == "elicitation-sep1034-client-defaults" {
        // This client wants elicitations: it declares the capability, answers with the
        // schema's defaults, and listens on the standalone stream, where this server sends
        // them. Elsewhere it opens no stream it has no use for (the sse-retry server would
        // take any GET for the reconnection it is timing).
        config = config
            .with_listen(true)
            .respond_to("elicitation/create", |params| {
                Ok(accept_elicitation_with_defaults(params))
            });
    }
    if scenario == "sep-2322-client-request-state" {
        // The server asks for a confirmation inside the calls (multi round-trip requests).
        config = config.respond_to("elicitation/create", |_| {
            Ok(json!({"action": "accept", "content": {"confirmed": true}}))
        });
    }
    if scenario == "request-metadata" {
        // Every request carries the client's capabilities in `_meta`; this scenario checks
        // the optional ones. They are declared by answering their requests (a declared
        // capability is one this client honours), as a client without a person or a model
        // behind it can: no roots to share, sampling declined (-1, the spec's "user rejected"
        // answer), forms filled with their defaults.
        config = config
            .respond_to("roots/list", |_| Ok(json!({"roots": []})))
            .respond_to("sampling/createMessage", |_| {
                Err(RpcError {
                    code: -1,
                    message: "sampling declined: this client has no model".to_owned(),
                    data: None,
                })
            })
            .respond_to("elicitation/create", |params| {
                Ok(accept_elicitation_with_defaults(params))
            });
    }
    let auth = scenario.starts_with("auth/");
    if auth {
        config = config.with_oauth(oauth(scenario, &context())?);
    }
    let client = Client::new(config);
    client.set_observer(Trace);
    if auth {
        // The suite's authorization endpoint approves at once with a redirect.
        client.set_authorizer(HeadlessAuthorizer::new());
    }
    match scenario {
        "initialize" => {
            let info = client.probe().await?;
            eprintln!(
                "server {} {} (protocol {})",
                info.server.name, info.server.version, info.protocol_version
            );
        }
        "tools_call" => {
            client.list_tools().await?;
            let result = client
                .call_tool("add_numbers", object(json!({"a": 5, "b": 3})))
                .await?;
            eprintln!("{}", result.text());
        }
        "elicitation-sep1034-client-defaults" => {
            client.list_tools().await?;
            let result = client
                .call_tool("test_client_elicitation_defaults", Map::new())
                .await?;
            eprintln!("{}", result.text());
        }
        "json-schema-2020-12-preservation" => {
            // Round-trip the focal tool's schema verbatim: the server diffs what comes back.
            let tools = client.list_tools().await?;
            if let Some(focal) = tools.iter().find(|t| t.name == "json_schema_2020_12_tool") {
                let mut arguments = Map::new();
                arguments.insert("schema".to_owned(), focal.input_schema().clone());
                let result = client.call_tool("json_schema_echo", arguments).await?;
                eprintln!("{}", result.text());
            }
        }
        "sep-2322-client-request-state" => {
            // Each MRTR flow is one operation: its answers and state never reach another call.
            for tool in [
                "test_mrtr_echo_state",
                "test_mrtr_unrelated",
                "test_mrtr_no_state",
                "test_mrtr_no_result_type",
            ] {
                let result = client.call_tool(tool, Map::new()).await?;
                eprintln!("{tool}: {}", result.text());
            }
        }
        "http-standard-headers" => {
            // Every kind of request that mirrors its method (and what it names) into the
            // standard headers: each listed tool called, resource read and prompt got.
            for tool in client.list_tools().await?.iter() {
                let result = client.call_tool(&tool.name, Map::new()).await?;
                eprintln!("{}: {}", tool.name, result.text());
            }
            for resource in client.list::<Resource>().await?.iter() {
                let read = client.request(ReadResource::new(&resource.uri)).await?;
                eprintln!("{}: {} contents", resource.uri, read.contents.len());
            }
            for prompt in client.list::<Prompt>().await?.iter() {
                let got = client
                    .request(GetPrompt::new(&prompt.name, Map::new()))
                    .await?;
                eprintln!("{}: {}", prompt.name, got.text());
            }
        }
        "http-custom-headers" => {
            // The listing teaches the client the tools' header annotations; then each call the
            // suite names (in MCP_CONFORMANCE_CONTEXT) goes out with its Mcp-Param headers.
            client.list_tools().await?;
            let context = std::env::var("MCP_CONFORMANCE_CONTEXT").unwrap_or_default();
            let context: Value = serde_json::from_str(&context).unwrap_or(Value::Null);
            let calls = context["toolCalls"].as_array().cloned().unwrap_or_default();
            for call in calls {
                let Some(name) = call["name"].as_str() else {
                    continue;
                };
                let arguments = object(call["arguments"].clone());
                let result = client.call_tool(name, arguments).await?;
                eprintln!("{name}: {}", result.text());
            }
        }
        skills if skills.starts_with("sep-2640-") => {
            // The skills extension: the listing reads no file (no prefetch); loading the skill
            // reads its files one by one, each verified before the next (a tampered SKILL.md
            // ends the load before its supporting file is read).
            let budget = client.session().config().budget();
            let listing = client.run(Action::List(ListKind::Skills), budget).await?;
            let first = listing
                .into_listing::<mcp_proto::skills::Skill>()
                .and_then(|skills| skills.into_items().into_iter().next());
            if let (Some(skill), false) = (first, skills.ends_with("no-prefetch")) {
                let loaded = client.run(Action::LoadSkill(skill), budget).await?;
                if let Some(loaded) = loaded.into_skill() {
                    eprintln!("loaded {} ({} files)", loaded.skill.uri, loaded.files.len());
                }
            }
        }
        auth if auth.starts_with("auth/") => {
            // As the suite's example client: connect, list, call; each may meet a challenge.
            client.probe().await?;
            let tools = client.list_tools().await?;
            if tools.iter().any(|tool| tool.name == "test-tool") {
                let result = client.call_tool("test-tool", Map::new()).await?;
                eprintln!("{}", result.text());
            }
        }
        "json-schema-ref-no-deref" => {
            // The listing only: the schema's network `$ref` is never fetched.
            client.list_tools().await?;
        }
        _ => {
            // sse-retry and any other scenario: walk the tools and call the first one.
            let tools = client.list_tools().await?;
            if let Some(tool) = tools.first() {
                let result = client.call_tool(&tool.name, Map::new()).await?;
                eprintln!("{}", result.text());
            }
        }
    }
    Ok(())
}

/// Where the suite's authorization server sends the browser back (its example client's).
const REDIRECT_URI: &str = "http://localhost:3000/callback";
/// The Client ID Metadata Document URL the suite's servers accept (its example client's).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// The scenario's context (`MCP_CONFORMANCE_CONTEXT`), or `null`.
fn context() -> Value {
    let context = std::env::var("MCP_CONFORMANCE_CONTEXT").unwrap_or_default();
    serde_json::from_str(&context).unwrap_or(Value::Null)
}

/// How this client authorizes in an `auth/*` scenario: the suite's redirect URI, its Client ID
/// Metadata Document, and the credentials the context hands over (for a server whose
/// authorization server is not known in advance).
fn oauth(scenario: &str, context: &Value) -> Result<OAuth, Error> {
    let invalid = |e: mcp_auth::AuthError| Error::Authorization {
        server: scenario.to_owned(),
        error: e,
    };
    let text = |name: &str| context[name].as_str().unwrap_or_default().to_owned();
    // The extensions' grants need no person: the context hands over what they present.
    let grant = match scenario {
        "auth/client-credentials-basic" => Some(Grant::client_credentials(
            text("client_id"),
            text("client_secret"),
        )),
        "auth/client-credentials-jwt" => {
            let key = PrivateKey::from_pkcs8_pem(&text("private_key_pem")).map_err(invalid)?;
            Some(Grant::client_credentials_jwt(text("client_id"), key))
        }
        "auth/wif-jwt-bearer" => Some(Grant::jwt_bearer(text("client_id"), text("valid_jwt"))),
        "auth/enterprise-managed-authorization" => Some(
            Grant::enterprise_managed(
                text("client_id"),
                text("client_secret"),
                &text("idp_token_endpoint"),
                text("idp_client_id"),
                text("idp_id_token"),
            )
            .map_err(invalid)?,
        ),
        _ => None,
    };
    if let Some(grant) = grant {
        return Ok(OAuth::new(ClientConfig::headless(grant).map_err(invalid)?));
    }
    let mut client = ClientConfig::new(REDIRECT_URI)
        .map_err(invalid)?
        .with_client_name("mcp-conformance-client")
        .with_metadata_document(CLIENT_METADATA_URL)
        .map_err(invalid)?;
    if let Some(client_id) = context["client_id"].as_str() {
        let mut pre = PreRegisteredClient::for_any_issuer(client_id);
        if let Some(secret) = context["client_secret"].as_str() {
            pre = pre.with_secret(secret);
        }
        client = client.with_pre_registered(pre);
    }
    if scenario.starts_with("auth/dpop") {
        // Sender-constrained tokens where the authorization server offers them (RFC 9449).
        client = client.with_dpop(Dpop::WhenAdvertised);
    }
    Ok(OAuth::new(client))
}

/// Every leg and event on stderr, so a failing scenario's log shows where the time went.
struct Trace;

impl Observer for Trace {
    fn leg_finished(&mut self, report: &LegReport) {
        eprintln!("{report}");
    }

    fn event(&mut self, event: &Event) {
        eprintln!("event: {event:?}");
    }
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}
