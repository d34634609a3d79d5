//! How a run of `mcp-call` is set up from its flags and the `--config` entry: where the server
//! is ([`Target`]), the session's configuration, the network, and how it authorizes. Flags
//! win over the entry. Nothing here sends a request: a setup that cannot work is a usage error
//! before any budget opens.

use std::io::IsTerminal;
use std::time::Duration;

use mcp_driver_common::network::Network;
use mcp_proto::schema::OutputValidation;
use mcp_proto::{Budget, Error, OAuth, Resolution, SessionConfig};
use serde_json::Value;

use crate::cli::{Cli, Command, GrantKind, LOGIN_BUDGET, Protocol, code};
use crate::demo::Demo;
use crate::filter::ToolFilter;
use crate::output::{report_error, usage};
use crate::report::Reporter;
use crate::{credentials, elicit, expand, login, servers};

/// The --server entry, its `${NAME}` expanded from the environment.
struct Chosen {
    transport: servers::Transport,
    timeout: Option<Duration>,
    /// The entry's url as written, when it held a variable: what an error about the URL
    /// quotes (the expanded one may hold a secret).
    url_as_written: Option<String>,
    /// The entry's name and tool filters (`"tools"`, `"ignoreTools"`).
    name: String,
    tools: Vec<String>,
    ignore_tools: Vec<String>,
}

/// The --server entry, when one is named.
fn chosen_entry(cli: &Cli) -> Result<Option<Chosen>, String> {
    let (Some(path), Some(name)) = (&cli.config, &cli.server) else {
        return Ok(None);
    };
    let entries = servers::load(path)?;
    let Some(entry) = entries.iter().find(|e| e.name == *name) else {
        let known: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
        return Err(format!(
            "{} has no server \"{name}\" (it has: {})",
            path.display(),
            known.join(", ")
        ));
    };
    let at = format!("{}: server \"{}\"", path.display(), name.escape_debug());
    let (transport, url_as_written) = expanded(entry.transport.clone(), &at)?;
    Ok(Some(Chosen {
        transport,
        timeout: entry.timeout,
        url_as_written,
        name: entry.name.clone(),
        tools: entry.tools.clone(),
        ignore_tools: entry.ignore_tools.clone(),
    }))
}

/// An entry with `${NAME}` and `${env:NAME}` read from the environment in its url, its
/// headers' values and its env values (what Cursor and VS Code expand), and its url as
/// written when that held a variable. An error names the entry, the field and the variable.
fn expanded(
    transport: servers::Transport,
    at: &str,
) -> Result<(servers::Transport, Option<String>), String> {
    let value = |field: &str, key: &str, text: &str, header: bool| {
        expand::expand(text, expand::from_env, header)
            .map_err(|err| format!("{at}: \"{field}\".\"{}\": {err}", key.escape_debug()))
    };
    let pairs = |field: &str, pairs: Vec<(String, String)>, header: bool| {
        (pairs.into_iter())
            .map(|(key, text)| {
                let text = value(field, &key, &text, header)?;
                Ok((key, text))
            })
            .collect::<Result<Vec<_>, String>>()
    };
    Ok(match transport {
        servers::Transport::Http(servers::Remote { url, headers, sse }) => {
            let expanded_url = expand::expand(&url, expand::from_env, false)
                .map_err(|err| format!("{at}: \"url\": {err}"))?;
            let written = (expanded_url != url).then_some(url);
            let remote = servers::Remote {
                url: expanded_url,
                headers: pairs("headers", headers, true)?,
                sse,
            };
            (servers::Transport::Http(remote), written)
        }
        servers::Transport::Command {
            command,
            args,
            env,
            cwd,
        } => {
            let env = pairs("env", env, false)?;
            let command = servers::Transport::Command {
                command,
                args,
                env,
                cwd,
            };
            (command, None)
        }
    })
}

/// The headers of --header-file (in their order) then --header, values expanded from the
/// environment. An error names the header and the variable (and the file and the line),
/// never a value.
fn flag_headers(cli: &Cli) -> Result<Vec<(String, String)>, String> {
    let mut headers = Vec::new();
    for path in &cli.header_files {
        headers.extend(expand::read_header_file(path, expand::from_env)?);
    }
    for (name, value) in &cli.headers {
        let value = expand::expand(value, expand::from_env, true)
            .map_err(|err| format!("--header \"{}\": {err}", name.escape_debug()))?;
        headers.push((name.clone(), value));
    }
    Ok(headers)
}

/// The tools this run shows and lets be called: the flags' filters and the entry's, all of
/// them applied.
fn tool_filter(cli: &Cli, entry: Option<&Chosen>) -> ToolFilter {
    let filter = (ToolFilter::default())
        .allowing("--tool", &cli.allow_tools)
        .ignoring("--ignore-tool", &cli.ignore_tools);
    match entry {
        Some(entry) => {
            let name = entry.name.escape_debug();
            filter
                .allowing(format!("\"tools\" of --server \"{name}\""), &entry.tools)
                .ignoring(
                    format!("\"ignoreTools\" of --server \"{name}\""),
                    &entry.ignore_tools,
                )
        }
        None => filter,
    }
}

/// Where this run's server is: an endpoint (with its headers), or a program to run.
enum Target {
    Http {
        url: String,
        headers: Vec<(String, String)>,
        /// The entry names HTTP+SSE (`--transport` other than auto wins over it).
        sse: bool,
    },
    Stdio(mcp_proto::StdioCommand),
}

/// The target the flags and the --server entry name (flags win), or a usage error. `None`:
/// the embedded demo server.
fn target(
    cli: &Cli,
    entry: Option<servers::Transport>,
    flag_headers: &[(String, String)],
) -> Result<Option<Target>, String> {
    let local =
        |command: &str, args: Vec<String>, env: Vec<(String, String)>, cwd: Option<String>| {
            let mut stdio = mcp_proto::StdioCommand::new(command).args(args);
            for (name, value) in env.into_iter().chain(cli.env.iter().cloned()) {
                stdio = stdio.env(name, value);
            }
            if let Some(cwd) = cwd {
                stdio = stdio.current_dir(cwd);
            }
            stdio
        };
    if let Some(line) = &cli.stdio {
        let words = shlex::split(line)
            .filter(|w| !w.is_empty())
            .ok_or_else(|| {
                format!("--stdio \"{line}\" is not a command line (unbalanced quotes?)")
            })?;
        let (program, args) = words.split_first().ok_or("--stdio needs a command")?;
        let target = Target::Stdio(local(program, args.to_vec(), Vec::new(), None));
        return checked(cli, Some(target));
    }
    let remote = |url: String, mut headers: Vec<(String, String)>, sse: bool| {
        // Flags win over the entry: a flag's header of the same name replaces the entry's.
        for (name, value) in flag_headers {
            headers.retain(|(known, _)| !known.eq_ignore_ascii_case(name));
            headers.push((name.clone(), value.clone()));
        }
        Target::Http { url, headers, sse }
    };
    let target = match (cli.url.clone(), entry) {
        (Some(url), Some(servers::Transport::Http(entry))) => {
            Some(remote(url, entry.headers, entry.sse))
        }
        (Some(url), _) => Some(remote(url, Vec::new(), false)),
        (None, Some(servers::Transport::Http(entry))) => {
            Some(remote(entry.url, entry.headers, entry.sse))
        }
        (
            None,
            Some(servers::Transport::Command {
                command,
                args,
                env,
                cwd,
            }),
        ) => Some(Target::Stdio(local(&command, args, env, cwd))),
        (None, None) => None,
    };
    checked(cli, target)
}

/// The flags that apply to one transport only, refused with the other.
fn checked(cli: &Cli, target: Option<Target>) -> Result<Option<Target>, String> {
    match &target {
        Some(Target::Stdio(_)) if !cli.headers.is_empty() || !cli.header_files.is_empty() => {
            Err("--header and --header-file apply to HTTP servers, not to a local (stdio) one".to_owned())
        }
        Some(Target::Stdio(_)) if matches!(cli.command, Command::Task { .. }) => {
            Err("task applies to HTTP servers: a local (stdio) server's tasks end with its process, and this one is started anew".to_owned())
        }
        Some(Target::Stdio(_)) if matches!(cli.command, Command::Login | Command::Logout) => {
            Err("login and logout apply to HTTP servers: a local (stdio) server takes its credentials from its environment (--env)".to_owned())
        }
        Some(Target::Http { .. }) | None if !cli.env.is_empty() => {
            Err("--env applies to a local (stdio) server".to_owned())
        }
        _ => Ok(target),
    }
}

/// How an HTTP run authorizes: the credentials file, the OAuth settings, and for `login` the
/// listener the browser comes back to (bound first: its port is in the redirect URI).
pub(crate) struct Authorization {
    pub(crate) url: String,
    pub(crate) store: std::sync::Arc<credentials::FileStore>,
    pub(crate) oauth: OAuth,
    pub(crate) loopback: Option<login::Loopback>,
}

fn authorization(cli: &Cli, url: &str, login: bool) -> Result<Authorization, String> {
    let store = open_store(cli)?;
    let loopback = login
        .then(|| login::Loopback::bind(std::io::stderr().is_terminal()))
        .transpose()
        .map_err(|err| format!("no listener for the redirect on 127.0.0.1: {err}"))?;
    let port = loopback
        .as_ref()
        .map_or(login::PREFERRED_PORT, login::Loopback::port);
    let oauth = oauth(cli, &login::redirect_uri(port), store.clone())?;
    Ok(Authorization {
        url: url.to_owned(),
        store,
        oauth,
        loopback,
    })
}

fn open_store(cli: &Cli) -> Result<std::sync::Arc<credentials::FileStore>, String> {
    let path = cli
        .credentials
        .clone()
        .or_else(credentials::default_path)
        .ok_or("no place for the credentials file: set --credentials or XDG_CONFIG_HOME")?;
    credentials::FileStore::open(&path).map(std::sync::Arc::new)
}

/// How this run authorizes when the server asks: the flags' client identity and grant, the
/// redirect URI, the credentials file.
fn oauth(
    cli: &Cli,
    redirect_uri: &str,
    store: std::sync::Arc<credentials::FileStore>,
) -> Result<OAuth, String> {
    use mcp_auth::{ClientConfig, Grant, PreRegisteredClient, PrivateKey};
    let unusable = |e: mcp_auth::AuthError| e.to_string();
    let grant = match (&cli.client_key, cli.grant) {
        (Some(path), _) => {
            let pem = std::fs::read_to_string(path)
                .map_err(|e| format!("--client-key {}: {e}", path.display()))?;
            let key = PrivateKey::from_pkcs8_pem(&pem)
                .map_err(|e| format!("--client-key {}: {}", path.display(), unusable(e)))?;
            let id = cli.client_id.clone().unwrap_or_default();
            Some(Grant::client_credentials_jwt(id, key))
        }
        (None, GrantKind::ClientCredentials) => {
            let (Some(id), Some(secret)) = (&cli.client_id, &cli.client_secret) else {
                return Err(
                    "--grant client-credentials needs --client-id with --client-secret or --client-key"
                        .to_owned(),
                );
            };
            Some(Grant::client_credentials(id.clone(), secret.clone()))
        }
        (None, GrantKind::Code) => None,
    };
    let mut client = match grant {
        Some(grant) => ClientConfig::headless(grant).map_err(unusable)?,
        None => {
            let mut client = ClientConfig::new(redirect_uri)
                .map_err(unusable)?
                .with_client_name("mcp-call");
            if let Some(id) = &cli.client_id {
                let mut pre = PreRegisteredClient::for_any_issuer(id.clone());
                if let Some(secret) = &cli.client_secret {
                    pre = pre.with_secret(secret.clone());
                }
                client = client.with_pre_registered(pre);
            }
            client
        }
    };
    if let Some(scope) = &cli.scope {
        client = client.with_scope(scope.clone());
    }
    Ok(OAuth::new(client).with_store(store))
}

fn configure(
    target: &Target,
    budget: Budget,
    resolution: Resolution,
    (protocol, transport): (Protocol, mcp_proto::HttpTransport),
) -> Result<SessionConfig, Error> {
    let (config, headers) = match target {
        Target::Http { url, headers, .. } => (SessionConfig::new(url)?, headers.as_slice()),
        Target::Stdio(command) => (SessionConfig::stdio(command.clone()), &[][..]),
    };
    let mut config = config
        .with_budget(budget)
        .with_resolution(resolution)
        .with_client_info("mcp-call", env!("CARGO_PKG_VERSION"))
        .with_http_transport(match (target, transport) {
            (Target::Http { sse: true, .. }, mcp_proto::HttpTransport::Auto) => {
                mcp_proto::HttpTransport::Sse
            }
            _ => transport,
        });
    if let Protocol::Pin(version) = protocol {
        config = config.with_protocol_version(version);
    }
    for (name, value) in headers {
        config = config.with_header(name, value)?;
    }
    Ok(config)
}

/// What a run needs before its first request: the session's configuration, the server's
/// label, how it authorizes (HTTP servers only), and what reports its legs.
pub(crate) struct Setup {
    pub(crate) config: SessionConfig,
    pub(crate) label: String,
    pub(crate) auth: Option<Authorization>,
    pub(crate) reporter: Reporter,
    /// The embedded demo server when no server was named: it stops when the setup is dropped,
    /// at the end of the run.
    pub(crate) demo: Option<Demo>,
    /// The tools shown and callable (`--tool`, `--ignore-tool`, the entry's filters).
    pub(crate) tools: ToolFilter,
}

impl Setup {
    /// The setup the flags and the `--config` entry ask for, or the exit code of the usage
    /// error it has already reported.
    pub(crate) fn from_cli(cli: &Cli) -> Result<Self, u8> {
        let chosen = chosen_entry(cli).map_err(|m| usage(cli.json, None, &m))?;
        let tools = tool_filter(cli, chosen.as_ref());
        let (entry_transport, entry_timeout, url_as_written) = match chosen {
            Some(c) => (Some(c.transport), c.timeout, c.url_as_written),
            None => (None, None, None),
        };
        // The entry's url is the one used only when --url and --stdio are not given.
        let url_as_written = url_as_written.filter(|_| cli.url.is_none() && cli.stdio.is_none());
        let flag_headers = flag_headers(cli).map_err(|m| usage(cli.json, None, &m))?;
        let target =
            target(cli, entry_transport, &flag_headers).map_err(|m| usage(cli.json, None, &m))?;
        let demo = match target {
            Some(_) => None,
            None => Some(Demo::start().map_err(|err| {
                let message = format!("the demo server could not start on 127.0.0.1: {err}");
                usage(cli.json, None, &message)
            })?),
        };
        let target = match (target, &demo) {
            (Some(target), _) => target,
            (None, Some(server)) => Target::Http {
                url: server.url(),
                headers: flag_headers,
                sse: false,
            },
            (None, None) => unreachable!("a demo server starts when no URL is given"),
        };
        let login = matches!(cli.command, Command::Login);
        // `bridge --login` listens for the browser's redirect as `login` does.
        let bridge_login = matches!(cli.command, Command::Bridge { login: true, .. });
        let budget = budget(cli, entry_timeout, login);
        let config = match configure(
            &target,
            budget,
            cli.resolution.into(),
            (cli.protocol, cli.transport),
        ) {
            Ok(config) => config,
            Err(err) => {
                let what = (err.kind(), err.fault());
                // Never the expanded URL: a variable in it may be a secret.
                let message = match (&err, &url_as_written) {
                    (Error::InvalidUrl { reason, .. }, Some(written)) => format!(
                        "the MCP server URL \"{written}\" (its variables expanded) cannot be used: {reason}"
                    ),
                    _ => err.to_string(),
                };
                report_error(cli.json, what, None, &message, code::USAGE);
                return Err(code::USAGE);
            }
        };
        let label = config.label().to_owned();
        // Authorization is HTTP's: a local server takes its credentials from its environment
        // and never touches the credentials file.
        let auth = match &target {
            Target::Stdio(_) => None,
            Target::Http { url, .. } => Some(
                authorization(cli, url, login || bridge_login)
                    .map_err(|message| usage(cli.json, Some(&label), &message))?,
            ),
        };
        let config = match &auth {
            Some(auth) => config.with_oauth(auth.oauth.clone()),
            None => config,
        };
        let interactive = std::io::stderr().is_terminal()
            && matches!(cli.command, Command::Call { .. } | Command::Task { .. });
        let config = with_answers(with_features(config, cli, interactive), cli);
        let mut reporter = Reporter::new(cli.trace, cli.log_level, interactive, budget);
        if matches!(cli.command, Command::Watch { .. }) {
            reporter = reporter.with_notifications_on_stdout();
        }
        Ok(Self {
            config,
            label,
            auth,
            reporter,
            demo,
            tools,
        })
    }
}

/// The operation's budget: `--timeout`, else the `--config` entry's, else `login`'s own, else
/// `MCP_OPERATION_TIMEOUT` (read leniently), else the default.
fn budget(cli: &Cli, entry_timeout: Option<Duration>, login: bool) -> Budget {
    match cli.timeout.or(entry_timeout) {
        Some(total) => Budget::from_duration(total),
        None if login => Budget::from_duration(LOGIN_BUDGET),
        None => std::env::var("MCP_OPERATION_TIMEOUT")
            .map(|raw| Budget::from_config_str(&raw))
            .unwrap_or_default(),
    }
}

/// What the session asks of the server besides the operation: progress (the spinner shows
/// it, `--trace` prints it, the bridge relays it; a progress notification never extends the
/// budget), tasks polled inside the budget (one still running when it ends is named), the
/// deadline in `_meta`, a task cancelled at the deadline, the server's log messages, the
/// results checked against their tools' output schemas (`--validate-output`; off otherwise: the
/// CLI shows, and the bridge relays, what the server sent).
fn with_features(config: SessionConfig, cli: &Cli, interactive: bool) -> SessionConfig {
    let bridging = matches!(cli.command, Command::Bridge { .. });
    let config = config
        .with_progress(interactive || cli.trace || bridging)
        .with_tasks(true)
        .with_send_deadline(cli.send_deadline)
        .with_cancel_spent_tasks(cli.cancel_at_deadline)
        .with_output_validation(if cli.validate_output {
            OutputValidation::Always
        } else {
            OutputValidation::Off
        });
    match cli.log_level {
        Some(level) => config.with_log_level(level),
        None => config,
    }
}

/// The server's requests `mcp-call` answers (`--root`, `--elicit`, `--sampling-answer`).
/// Servers send them outside any answer too (server-everything asks for roots once the session
/// is up; the TypeScript SDK's task example elicits and samples from a task): when any is
/// answered, the session's standalone stream is opened to hear them.
fn with_answers(mut config: SessionConfig, cli: &Cli) -> SessionConfig {
    if !cli.roots.is_empty() {
        let roots: Vec<Value> = (cli.roots.iter())
            .map(|uri| serde_json::json!({"uri": uri}))
            .collect();
        let answer = serde_json::json!({ "roots": roots });
        config = config.respond_to("roots/list", move |_| Ok(answer.clone()));
    }
    if let Some(mode) = cli.elicit {
        // URL mode is offered too: such a request is shown with its domain, and declined.
        config = (config.respond_to("elicitation/create", move |params| {
            elicit::respond(mode, params)
        }))
        .with_url_elicitation(true);
    }
    if let Some(text) = cli.sampling_answer.clone() {
        config = config.respond_to("sampling/createMessage", move |params| {
            Ok(elicit::sampled(&text, params))
        });
    }
    let answers = !cli.roots.is_empty() || cli.elicit.is_some() || cli.sampling_answer.is_some();
    config.with_listen(answers)
}

/// The network the flags describe: `--cacert`, `--proxy`, `--noproxy` (on top of the
/// environment's proxies and the system's trust), or why the proxy URL is unusable.
pub(crate) fn network(cli: &Cli) -> Result<Network, String> {
    let mut network = Network::new();
    if let Some(file) = &cli.cacert {
        network = network.with_root_pem_file(file);
    }
    if let Some(proxy) = &cli.proxy {
        network = network.with_proxy(proxy).map_err(|err| err.to_string())?;
    }
    if let Some(list) = &cli.noproxy {
        network = network.with_no_proxy(list);
    }
    Ok(network)
}
