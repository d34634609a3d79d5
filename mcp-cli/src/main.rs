//! `mcp-call`: the operator's command line.
//!
//! Does this MCP server answer, what tools does it offer, what does this tool return, and where
//! did the time go? Each command is one operation under one budget, run by either driver. The
//! contract (flags, output, exit codes) is documented in the README and tested end to end;
//! scripts rely on it.

mod args;
mod bridge;
mod credentials;
mod driver;
mod elicit;
mod login;
mod report;
mod servers;

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand, ValueEnum};
use mcp_proto::{
    Action, Budget, Era, Error, Fault, ListKind, OAuth, Outcome, ProtocolVersion, Resolution,
    SessionConfig,
};
use serde_json::{Map, Value};

use crate::driver::{Client, DriverKind};
use crate::report::{Reporter, exit_code};

/// Exit codes: the contract scripts rely on.
mod code {
    pub(crate) const OK: u8 = 0;
    pub(crate) const TOOL_ERROR: u8 = 1;
    pub(crate) const USAGE: u8 = 2;
    pub(crate) const BUDGET: u8 = 3;
    pub(crate) const UNREACHABLE: u8 = 4;
    pub(crate) const SERVER: u8 = 5;
    pub(crate) const CANCELLED: u8 = 6;
    pub(crate) const AUTHORIZATION: u8 = 7;
    pub(crate) const AUTHORIZATION_SERVER: u8 = 8;
}

/// Probe an MCP server, list its tools or call one: each as one operation under one budget.
#[derive(Debug, Parser)]
#[command(name = "mcp-call", version, about, after_help = EXIT_CODES)]
struct Cli {
    /// The server's endpoint. Without it (and without --stdio or --server), an embedded demo
    /// server is started on 127.0.0.1.
    #[arg(long, value_name = "URL", conflicts_with = "stdio")]
    url: Option<String>,
    /// A local server to run and speak to over its stdin and stdout: the command line, split
    /// as a POSIX shell would (quotes, backslashes) but run without any shell.
    #[arg(long, value_name = "'COMMAND [ARGS...]'")]
    stdio: Option<String>,
    /// An environment variable for the local server, repeatable (on top of this process's
    /// environment and the --server entry's `env`).
    #[arg(long = "env", value_name = "NAME=VALUE", value_parser = parse_env)]
    env: Vec<(String, String)>,
    /// A server configuration file as MCP hosts write them (`mcpServers`, or VS Code's
    /// `servers`): see `servers` and --server.
    #[arg(long, value_name = "FILE")]
    config: Option<std::path::PathBuf>,
    /// The entry of --config to use: its url, headers and timeout (flags win over them).
    #[arg(long, value_name = "NAME", requires = "config")]
    server: Option<String>,
    /// The operation's budget in seconds, decimals allowed. Default: MCP_OPERATION_TIMEOUT
    /// (read leniently), else 20.
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds)]
    timeout: Option<Duration>,
    /// The unit grants are rounded up to.
    #[arg(long, value_enum, default_value_t = Unit::S)]
    resolution: Unit,
    /// Which driver runs the operation.
    #[arg(long, value_enum, default_value_t = DriverKind::Blocking)]
    driver: DriverKind,
    /// Also trust the CA certificates in this PEM file (besides the system's store).
    #[arg(long, value_name = "FILE")]
    cacert: Option<std::path::PathBuf>,
    /// Send every request through this http:// proxy (HTTP CONNECT), whatever HTTPS_PROXY says;
    /// credentials in it are sent to the proxy and never printed.
    #[arg(long, value_name = "URL")]
    proxy: Option<String>,
    /// Hosts reached without a proxy, as NO_PROXY is written (added to NO_PROXY).
    #[arg(long, value_name = "LIST")]
    noproxy: Option<String>,
    /// An extra request header, repeatable (e.g. 'Authorization: Bearer ...').
    #[arg(long = "header", value_name = "'Name: value'", value_parser = parse_header)]
    headers: Vec<(String, String)>,
    /// The protocol version to speak: `auto` (the default: the modern request first, the
    /// handshake when the server is legacy), a legacy one (2025-11-25, 2025-06-18; the
    /// handshake only) or the modern 2026-07-28 (stateless only: a tool call is one request).
    #[arg(long, value_name = "auto|VERSION", default_value = "auto", value_parser = parse_protocol)]
    protocol: Protocol,
    /// Run the operation N times on one session.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
    /// With --repeat: keep N operations in flight at once on the one session (one handshake
    /// for all of them), each under its own budget.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    parallel: u32,
    /// Print JSON on stdout: the tools array, or the whole call result.
    #[arg(long)]
    json: bool,
    /// Print one line per leg on stderr.
    #[arg(long)]
    trace: bool,
    /// Answer the server's elicitations (requests for input during a call or its task):
    /// `decline`, or `defaults` (accept a form with the defaults its schema declares; a form
    /// with a required field that has none is declined). Each
    /// is shown on stderr; a URL to open is shown with its domain and always declined.
    /// Without it, no elicitation is offered to the server.
    #[arg(long, value_enum, value_name = "decline|defaults")]
    elicit: Option<elicit::Elicit>,
    /// Answer the server's sampling requests (`sampling/createMessage`: the server asks the
    /// client's model) with this text, as the assistant's message from model `mcp-call`; each
    /// request is shown on stderr. Without it, sampling is not offered to the server.
    #[arg(long, value_name = "TEXT")]
    sampling_answer: Option<String>,
    /// A root to offer the server (`roots/list`), repeatable: a URI such as file:///work
    /// (a path is made a file:// URI). Without it, no roots are offered.
    #[arg(long = "root", value_name = "URI", value_parser = parse_root)]
    roots: Vec<String>,
    /// Tell the server, on every request, the milliseconds left of the budget (in `_meta`,
    /// under `dev.mcp-deadline/remainingMs`: this project's own key, not a standard one).
    #[arg(long)]
    send_deadline: bool,
    /// Cancel a task still running when the budget ends (`tasks/cancel`, sent before the end)
    /// instead of handing it back to look at later.
    #[arg(long)]
    cancel_at_deadline: bool,
    /// Ask the server for its log messages at LEVEL and above (debug, info, notice, warning,
    /// error, critical, alert, emergency) and print them on stderr: `log <level> <logger>: ...`.
    #[arg(long, value_name = "LEVEL", value_parser = parse_log_level)]
    log_level: Option<mcp_proto::LogLevel>,
    /// OAuth: a client id issued for this server (instead of registering one), offered to the
    /// authorization server the server names.
    #[arg(long, value_name = "ID")]
    client_id: Option<String>,
    /// OAuth: the client's secret (a confidential client). Also MCP_CLIENT_SECRET.
    #[arg(
        long,
        value_name = "SECRET",
        env = "MCP_CLIENT_SECRET",
        hide_env_values = true
    )]
    client_secret: Option<String>,
    /// OAuth: a PKCS#8 PEM P-256 key; with --client-id, tokens come from the client
    /// credentials grant signed with it (private_key_jwt, ES256): no browser.
    #[arg(long, value_name = "FILE", requires = "client_id")]
    client_key: Option<std::path::PathBuf>,
    /// OAuth: how tokens are obtained: `code` (a person approves in a browser, at `login`) or
    /// `client-credentials` (no person: --client-id with --client-secret or --client-key).
    #[arg(long, value_enum, default_value_t = GrantKind::Code)]
    grant: GrantKind,
    /// OAuth: the scope to ask for (default: what the server's challenge or metadata names).
    #[arg(long, value_name = "SCOPE")]
    scope: Option<String>,
    /// OAuth: where registrations and tokens are kept between runs (written 0600). Default:
    /// $XDG_CONFIG_HOME/mcp-call/credentials.json.
    #[arg(long, value_name = "FILE")]
    credentials: Option<std::path::PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Handshake only: prints the negotiated protocol version and the server's name and version.
    Ping,
    /// Walks every page of the tool listing: prints one tool name per line.
    Tools,
    /// Calls a tool: prints the text content of its result.
    Call {
        /// The tool's name.
        tool: String,
        /// The arguments, a JSON object.
        #[arg(default_value = "{}", value_parser = parse_arguments)]
        args: Map<String, Value>,
        /// An argument as key=value, repeatable, typed from the tool's inputSchema (read with
        /// one tools/list first); wins over the JSON object's member of that name.
        #[arg(long = "arg", value_name = "KEY=VALUE", value_parser = args::parse_pair)]
        pairs: Vec<(String, String)>,
    },
    /// Walks every page of the resource listing: prints one URI per line.
    Resources,
    /// Walks every page of the resource template listing: prints one URI template per line.
    Templates,
    /// Reads a resource: prints its text contents.
    Read {
        /// The resource's URI.
        uri: String,
    },
    /// Walks every page of the prompt listing: prints one prompt name per line.
    Prompts,
    /// Gets a prompt: prints the text of its messages.
    Prompt {
        /// The prompt's name.
        name: String,
        /// The arguments, a JSON object of strings.
        #[arg(default_value = "{}", value_parser = parse_arguments)]
        args: Map<String, Value>,
    },
    /// Asks the server to complete an argument (completion/complete): prints one suggested
    /// value per line.
    Complete {
        /// What the argument belongs to: `prompt:<NAME>` or `resource:<URI-TEMPLATE>`.
        #[arg(value_parser = parse_reference)]
        reference: mcp_proto::CompletionRef,
        /// The argument's name.
        argument: String,
        /// What is typed so far (default: nothing).
        #[arg(default_value = "")]
        value: String,
        /// An argument already chosen, as NAME=VALUE, repeatable (the completion's context).
        #[arg(long = "context", value_name = "NAME=VALUE", value_parser = parse_env)]
        context: Vec<(String, String)>,
    },
    /// Looks again at a task the server still runs (one a call handed back when its budget
    /// ran out, `task: <ID>`): polls it under a new budget and prints the call's result as
    /// `call` does, or with --cancel asks the server to cancel it.
    Task {
        /// The task's id, as `task: <ID>` named it (it may begin with `-`: ids are the
        /// server's, often base64url).
        #[arg(allow_hyphen_values = true)]
        id: String,
        /// Cancel the task (`tasks/cancel`) instead of waiting for its result.
        #[arg(long)]
        cancel: bool,
    },
    /// Listens to the server for the whole budget (--timeout): prints each notification it
    /// sends as one JSON line `{"method":...,"params":...}` on stdout as it comes. The
    /// budget's end is the normal end (exit 0). Without a flag, every list change is asked
    /// for.
    Watch {
        /// The tool list's changes (`notifications/tools/list_changed`).
        #[arg(long)]
        tools: bool,
        /// The prompt list's changes.
        #[arg(long)]
        prompts: bool,
        /// The resource list's changes.
        #[arg(long)]
        resources: bool,
        /// Updates of this resource (`notifications/resources/updated`), repeatable; a legacy
        /// server is sent `resources/subscribe` for each first.
        #[arg(long = "resource", value_name = "URI")]
        resource: Vec<String>,
    },
    /// Serves MCP on stdin and stdout for a host that only starts local servers (a desktop
    /// app), in front of the server selected (--url, --stdio, --config/--server): each host
    /// request is one operation on it under its own budget (--timeout), and a spent budget
    /// answers the host with an error naming the budget and the server. Logs (--trace) go to
    /// stderr; EOF on stdin closes the upstream session and ends the bridge.
    Bridge {
        /// Log in first when the server needs it: the browser flow of `login` (its URL on
        /// stderr, which hosts show), under login's budget (300 s), before the host's first
        /// request is answered; then the tokens are kept in --credentials as `login` keeps them.
        #[arg(long)]
        login: bool,
    },
    /// Lists the entries of --config: name, transport (http or stdio) and URL or command.
    Servers,
    /// Authorizes with the server's OAuth authorization server: prints `authorize: <URL>`
    /// (and opens a browser on a terminal), receives the redirect on 127.0.0.1, keeps the
    /// tokens in --credentials. --timeout defaults to 300 s here.
    Login,
    /// Forgets the tokens kept for the server (nothing is sent).
    Logout,
    /// Prints a completion script for a shell (no server is asked).
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// How `mcp-call` obtains tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum GrantKind {
    /// The authorization code flow: a person approves in a browser (`login`).
    Code,
    /// The client credentials grant: no person.
    ClientCredentials,
}

/// The default budget of `login`: a person has to read, click and perhaps sign in.
const LOGIN_BUDGET: Duration = Duration::from_secs(300);

/// What `--protocol` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Protocol {
    /// Detect the server's era.
    Auto,
    /// Speak this version and nothing else.
    Pin(ProtocolVersion),
}

impl Command {
    /// The operation the command runs (`None` for a command that asks no server); a task is
    /// looked up with `task` (the era it was created in and its legacy session, from the
    /// credentials file, else the era --protocol speaks).
    fn action(&self, task: impl FnOnce(&str) -> mcp_proto::TaskHandle) -> Option<Action> {
        Some(match self {
            Self::Ping | Self::Login => Action::Probe,
            Self::Tools => Action::List(ListKind::Tools),
            Self::Call { tool, args, .. } => Action::CallTool {
                name: tool.clone(),
                arguments: args.clone(),
            },
            Self::Resources => Action::List(ListKind::Resources),
            Self::Templates => Action::List(ListKind::ResourceTemplates),
            Self::Read { uri } => Action::ReadResource { uri: uri.clone() },
            Self::Prompts => Action::List(ListKind::Prompts),
            Self::Prompt { name, args } => Action::GetPrompt {
                name: name.clone(),
                arguments: args.clone(),
            },
            Self::Complete {
                reference,
                argument,
                value,
                context,
            } => Action::Complete {
                reference: reference.clone(),
                argument: argument.clone(),
                value: value.clone(),
                context: (context.iter())
                    .map(|(name, value)| (name.clone(), Value::from(value.as_str())))
                    .collect(),
            },
            Self::Task { id, cancel } => {
                let task = task(id);
                match cancel {
                    true => Action::CancelTask(task),
                    false => Action::ResumeTask(task),
                }
            }
            Self::Watch {
                tools,
                prompts,
                resources,
                resource,
            } => {
                // Nothing named: every list change.
                let all = !(*tools || *prompts || *resources) && resource.is_empty();
                Action::Subscribe(mcp_proto::Subscription {
                    tools_list_changed: *tools || all,
                    prompts_list_changed: *prompts || all,
                    resources_list_changed: *resources || all,
                    resource_subscriptions: resource.clone(),
                })
            }
            Self::Completions { .. } | Self::Servers | Self::Logout | Self::Bridge { .. } => {
                return None;
            }
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Unit {
    /// Whole seconds.
    S,
    /// Milliseconds.
    Ms,
}

const EXIT_CODES: &str = "Exit codes: 0 success; 1 the tool answered isError: true; 2 usage error; \
3 the operation's budget ran out (the refused request was not sent); 4 a leg timed out or the \
server could not be reached; 5 the server answered with an error; 6 cancelled (Ctrl-C, SIGTERM, SIGHUP); 7 the server requires authorization and none could be given (log in first); 8 the \
authorization server refused or broke the rules (its metadata, registration or token answer). With --repeat, \
the last failed run's code. Environment: MCP_OPERATION_TIMEOUT, the budget in seconds when --timeout is not \
given (read leniently: anything unusable means the default, 20).";

fn parse_root(text: &str) -> Result<String, String> {
    if text.contains("://") {
        return url::Url::parse(text)
            .map(|url| url.to_string())
            .map_err(|err| format!("not a URI: {err}"));
    }
    let path = std::path::absolute(text).map_err(|err| format!("not a path: {err}"))?;
    url::Url::from_file_path(&path)
        .map(|url| url.to_string())
        .map_err(|()| "not an absolute path".to_owned())
}

fn parse_reference(text: &str) -> Result<mcp_proto::CompletionRef, String> {
    match text.split_once(':') {
        Some(("prompt", name)) if !name.is_empty() => {
            Ok(mcp_proto::CompletionRef::Prompt(name.to_owned()))
        }
        Some(("resource", uri)) if !uri.is_empty() => {
            Ok(mcp_proto::CompletionRef::Resource(uri.to_owned()))
        }
        _ => Err("expected prompt:<NAME> or resource:<URI-TEMPLATE>".to_owned()),
    }
}

fn parse_log_level(text: &str) -> Result<mcp_proto::LogLevel, String> {
    mcp_proto::LogLevel::parse(text.trim()).ok_or_else(|| {
        let levels: Vec<&str> = mcp_proto::LogLevel::ALL.map(|l| l.as_str()).to_vec();
        format!("not a log level: {}", levels.join(", "))
    })
}

fn parse_seconds(text: &str) -> Result<Duration, String> {
    let seconds: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("\"{text}\" is not a number of seconds"))?;
    if !seconds.is_finite() || seconds <= 0.0 {
        return Err(format!(
            "the timeout must be a positive number of seconds, not {text}"
        ));
    }
    Duration::try_from_secs_f64(seconds).map_err(|_| format!("{text} seconds is too long"))
}

fn parse_env(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value)) if !name.is_empty() => Ok((name.to_owned(), value.to_owned())),
        _ => Err(format!("\"{text}\" is not NAME=VALUE")),
    }
}

fn parse_header(text: &str) -> Result<(String, String), String> {
    let (name, value) = text
        .split_once(':')
        .ok_or_else(|| format!("\"{text}\" is not 'Name: value'"))?;
    let name = name.trim();
    if name.is_empty() {
        return Err(format!("\"{text}\" has no header name"));
    }
    Ok((name.to_owned(), value.trim().to_owned()))
}

fn parse_arguments(text: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => {
            Err("the tool arguments must be a JSON object, e.g. '{\"text\":\"hi\"}'".to_owned())
        }
        Err(err) => Err(format!("the tool arguments are not JSON: {err}")),
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) if err.use_stderr() && std::env::args().any(|a| a == "--json") => {
            // The message's first line, without clap's "error: " prefix.
            let text = err.to_string();
            let line = text.lines().next().unwrap_or_default();
            let message = line.strip_prefix("error: ").unwrap_or(line);
            return ExitCode::from(usage(true, None, message));
        }
        Err(err) => {
            let _ = err.print();
            return ExitCode::from(if err.use_stderr() {
                code::USAGE
            } else {
                code::OK
            });
        }
    };
    if let Command::Completions { shell } = cli.command {
        let mut command = <Cli as clap::CommandFactory>::command();
        clap_complete::generate(shell, &mut command, "mcp-call", &mut std::io::stdout());
        return ExitCode::from(code::OK);
    }
    if let Command::Servers = cli.command {
        return ExitCode::from(list_servers(&cli));
    }
    ExitCode::from(run(cli))
}

/// `servers`: one line per entry of --config (a JSON array with --json).
fn list_servers(cli: &Cli) -> u8 {
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
        servers::Transport::Http(remote) => (entry.name.as_str(), "http", remote.url.clone()),
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
        println!("{}", Value::Array(list));
    } else {
        for (name, transport, target) in described {
            println!("{name}\t{transport}\t{target}");
        }
    }
    code::OK
}

/// The --server entry, when one is named, and its timeout.
fn chosen_entry(cli: &Cli) -> Result<Option<(servers::Transport, Option<Duration>)>, String> {
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
    Ok(Some((entry.transport.clone(), entry.timeout)))
}

/// Where this run's server is: an endpoint (with its headers), or a program to run.
enum Target {
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
    Stdio(mcp_proto::StdioCommand),
}

/// The target the flags and the --server entry name (flags win), or a usage error. `None`:
/// the embedded demo server.
fn target(cli: &Cli, entry: Option<servers::Transport>) -> Result<Option<Target>, String> {
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
    let remote = |url: String, mut headers: Vec<(String, String)>| {
        // Flags win over the entry: a flag's header of the same name replaces the entry's.
        for (name, value) in &cli.headers {
            headers.retain(|(known, _)| !known.eq_ignore_ascii_case(name));
            headers.push((name.clone(), value.clone()));
        }
        Target::Http { url, headers }
    };
    let target = match (cli.url.clone(), entry) {
        (Some(url), Some(servers::Transport::Http(entry))) => Some(remote(url, entry.headers)),
        (Some(url), _) => Some(remote(url, Vec::new())),
        (None, Some(servers::Transport::Http(entry))) => Some(remote(entry.url, entry.headers)),
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
        Some(Target::Stdio(_)) if !cli.headers.is_empty() => {
            Err("--header applies to HTTP servers, not to a local (stdio) one".to_owned())
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

fn run(cli: Cli) -> u8 {
    let entry = match chosen_entry(&cli) {
        Ok(entry) => entry,
        Err(message) => {
            return usage(cli.json, None, &message);
        }
    };
    let (entry_transport, entry_timeout) = entry.unzip();
    let entry_timeout = entry_timeout.flatten();
    let target = match target(&cli, entry_transport) {
        Ok(target) => target,
        Err(message) => return usage(cli.json, None, &message),
    };
    // The demo server lives as long as this function: it stops when the command ends.
    let demo = target.is_none().then(mcp_testkit::TestServer::demo);
    let target = match (target, &demo) {
        (Some(target), _) => target,
        (None, Some(server)) => Target::Http {
            url: server.url(),
            headers: cli.headers.clone(),
        },
        (None, None) => unreachable!("a demo server starts when no URL is given"),
    };
    let login = matches!(cli.command, Command::Login);
    // `bridge --login` listens for the browser's redirect as `login` does.
    let bridge_login = matches!(cli.command, Command::Bridge { login: true });
    let budget = match cli.timeout.or(entry_timeout) {
        Some(total) => Budget::from_duration(total),
        None if login => Budget::from_duration(LOGIN_BUDGET),
        None => std::env::var("MCP_OPERATION_TIMEOUT")
            .map(|raw| Budget::from_config_str(&raw))
            .unwrap_or_default(),
    };
    let resolution = match cli.resolution {
        Unit::S => Resolution::SECOND,
        Unit::Ms => Resolution::MILLISECOND,
    };
    let config = match configure(&target, budget, resolution, cli.protocol) {
        Ok(config) => config,
        Err(err) => {
            let what = (err.kind(), err.fault());
            report_error(cli.json, what, None, &err.to_string(), code::USAGE);
            return code::USAGE;
        }
    };
    let label = config.label().to_owned();
    // Authorization is HTTP's: a local server takes its credentials from its environment and
    // never touches the credentials file.
    let auth = match &target {
        Target::Stdio(_) => None,
        Target::Http { url, .. } => match authorization(&cli, url, login || bridge_login) {
            Ok(auth) => Some(auth),
            Err(message) => return usage(cli.json, Some(&label), &message),
        },
    };
    if let (Command::Logout, Some(auth)) = (&cli.command, &auth) {
        let dropped = auth.store.forget_server(&auth.url);
        eprintln!("logged out of {label} ({dropped} token set(s) forgotten)");
        return code::OK;
    }
    let config = match &auth {
        Some(auth) => config.with_oauth(auth.oauth.clone()),
        None => config,
    };
    let interactive = std::io::stderr().is_terminal()
        && matches!(cli.command, Command::Call { .. } | Command::Task { .. });
    // The spinner shows the server's progress, and --trace prints it: ask for it then (a
    // progress notification never extends the budget).
    // The bridge relays progress to a host that asks for it.
    let bridging = matches!(cli.command, Command::Bridge { .. });
    let config = config.with_progress(interactive || cli.trace || bridging);
    // A tool the server runs as a task is polled inside the budget; one still running when the
    // budget ends is named on stderr (`task: <id>`), so the operator knows the work goes on.
    let config = config
        .with_tasks(true)
        .with_send_deadline(cli.send_deadline)
        .with_cancel_spent_tasks(cli.cancel_at_deadline);
    let config = match cli.log_level {
        Some(level) => config.with_log_level(level),
        None => config,
    };
    let config = match cli.roots.is_empty() {
        true => config,
        false => {
            let roots: Vec<Value> = (cli.roots.iter())
                .map(|uri| serde_json::json!({"uri": uri}))
                .collect();
            let answer = serde_json::json!({ "roots": roots });
            config.respond_to("roots/list", move |_| Ok(answer.clone()))
        }
    };
    let config = match cli.elicit {
        // URL mode is offered too: such a request is shown with its domain, and declined.
        Some(mode) => (config.respond_to("elicitation/create", move |params| {
            elicit::respond(mode, params)
        }))
        .with_url_elicitation(true),
        None => config,
    };
    let config = match cli.sampling_answer.clone() {
        Some(text) => config.respond_to("sampling/createMessage", move |params| {
            Ok(elicit::sampled(&text, params))
        }),
        None => config,
    };
    // Servers send their requests outside any answer too (server-everything asks for roots once
    // the session is up; the TypeScript SDK's task example elicits and samples from a task):
    // when mcp-call answers any, the session's standalone stream is opened to hear them.
    let answers = !cli.roots.is_empty() || cli.elicit.is_some() || cli.sampling_answer.is_some();
    let config = config.with_listen(answers);
    let mut reporter = Reporter::new(cli.trace, cli.log_level, interactive, budget);
    if matches!(cli.command, Command::Watch { .. }) {
        reporter = reporter.with_notifications_on_stdout();
    }
    let mut network = mcp_driver_common::network::Network::new();
    if let Some(file) = &cli.cacert {
        network = network.with_root_pem_file(file);
    }
    if let Some(proxy) = &cli.proxy {
        network = match network.with_proxy(proxy) {
            Ok(network) => network,
            Err(err) => return usage(cli.json, Some(&label), &err.to_string()),
        };
    }
    if let Some(list) = &cli.noproxy {
        network = network.with_no_proxy(list);
    }
    if let Command::Bridge { login } = cli.command {
        // The client is made when the host's handshake says what it can answer (elicitation,
        // sampling, roots): those are the capabilities the upstream is told of.
        let (token, loopback) = match auth {
            Some(auth) => (auth.store.token_for(&auth.url), auth.loopback),
            None => (None, None),
        };
        let driver = cli.driver;
        let build = move |config: SessionConfig, reporter: Reporter| {
            let threads = driver::Threads::Workers;
            let mut client = Client::with_threads(driver, config, &network, reporter, threads)
                .map_err(|err| format!("could not start the {} driver: {err}", driver.name()))?;
            if let Some(token) = token {
                client.set_token(token);
            }
            if let Some(loopback) = loopback {
                client.set_authorizer(loopback);
            }
            Ok(client)
        };
        let login = login.then(|| Budget::from_duration(LOGIN_BUDGET));
        return bridge::serve(config, build, &label, sentence, reporter, login);
    }
    let mut client = match Client::new(cli.driver, config, &network, reporter.clone()) {
        Ok(client) => client,
        Err(err) => {
            let message = format!("could not start the {} driver: {err}", cli.driver.name());
            let what = ("driver", Fault::Caller);
            report_error(cli.json, what, None, &message, code::USAGE);
            return code::USAGE;
        }
    };
    // Tasks handed back are kept beside the credentials, for `task <ID>` to look again.
    let tasks = auth
        .as_ref()
        .map(|auth| (auth.store.clone(), auth.url.clone()));
    if let Some(auth) = auth {
        if let Some(loopback) = auth.loopback {
            client.set_authorizer(loopback);
        } else if let Some(token) = auth.store.token_for(&auth.url) {
            // A token from an earlier run goes out with the first request: no authorization
            // leg unless the server refuses it.
            client.set_token(token);
        }
    }
    let cancel = client.cancel_handle();
    // Ctrl-C (and SIGTERM, SIGHUP) cancels the operation in flight; the operation then ends
    // with `Cancelled`, and the close below ends a local server, which the terminal's Ctrl-C
    // no longer reaches (it runs in a process group of its own).
    let _ = ctrlc::set_handler(move || cancel.cancel());

    let mut status = code::OK;
    let mut failure = None;
    let mut failed = 0;
    let mut latencies = Vec::new();
    let started = Instant::now();
    let task_of = |id: &str| {
        let kept = tasks.as_ref().and_then(|(store, url)| store.task(url, id));
        let (era, session_id) = kept.unwrap_or(match cli.protocol {
            Protocol::Pin(version) if !version.is_modern() => (mcp_proto::TaskEra::Legacy, None),
            _ => (mcp_proto::TaskEra::Modern, None),
        });
        let mut task = mcp_proto::TaskHandle::new(label.as_str(), id, era);
        task.session_id = session_id;
        task
    };
    let Some(mut action) = cli.command.action(task_of) else {
        return code::OK;
    };
    // What the run learns of a task: one still running is kept, one that is over forgotten.
    let looked_at = match &action {
        Action::ResumeTask(task) | Action::CancelTask(task) => {
            Some((task.task_id.clone(), task.session_id.is_some()))
        }
        _ => None,
    };
    // Answers whether the session must outlive the command: a legacy task handed back lives in
    // its session, which a close would end.
    let keep_task = |outcome: &Result<Outcome, Error>| {
        let Some((store, url)) = &tasks else {
            return false;
        };
        match (outcome, &looked_at) {
            (Err(err), _) if err.task().is_some() => {
                let task = err.task().unwrap_or_else(|| unreachable!());
                store.remember_task(url, task);
                return task.session_id.is_some();
            }
            // A cancel is a request: the task is kept (and its session) until a look says
            // how it ended.
            (Ok(Outcome::TaskCancelRequested(_)), Some((_, in_session))) => return *in_session,
            // The server answered about it: it is over, cancelled, unknown to the server, or
            // gone with its session.
            (
                Ok(_)
                | Err(
                    Error::TaskCancelled { .. }
                    | Error::JsonRpc { .. }
                    | Error::SessionExpired { .. },
                ),
                Some((id, _)),
            ) => {
                store.forget_task(url, id);
            }
            _ => {}
        }
        false
    };
    let mut keep_session = false;
    // `--arg` pairs are typed from the tool's schema: one listing first, an operation of its
    // own. A failure there ends the run (and the session still ends tidily below).
    let mut runs = cli.repeat;
    // The deadline of the operation that ended last: the close at the end gets what it left.
    let mut last_deadline = None;
    if let (Command::Call { pairs, .. }, Action::CallTool { name, arguments }) =
        (&cli.command, &mut action)
    {
        if !pairs.is_empty() {
            reporter.start_operation();
            let (listed, deadline) = client.run(Action::List(ListKind::Tools));
            last_deadline = Some(deadline);
            reporter.end_operation();
            let typed = match listed {
                Ok(Outcome::Tools(tools)) => match tools.iter().find(|t| t.name == *name) {
                    Some(tool) => args::merge(arguments, pairs, tool.input_schema()),
                    None => Err(format!(
                        "the server lists no tool \"{name}\" to type --arg by"
                    )),
                },
                Ok(_) => Err("the listing answered with something else".to_owned()),
                Err(err) => {
                    let exit = exit_code(&err);
                    let server = Some(err.server().unwrap_or(&label));
                    let what = (err.kind(), err.fault());
                    report_error(cli.json, what, server, &sentence(&err, &label), exit);
                    failure = Some(exit);
                    Ok(())
                }
            };
            if let Err(message) = typed {
                failure = Some(usage(cli.json, Some(&label), &message));
            }
            if failure.is_some() {
                runs = 0;
            }
        }
    }
    let mut outcome_of = |latency: Duration,
                          deadline: mcp_proto::OperationDeadline,
                          outcome: Result<Outcome, mcp_proto::Error>| {
        latencies.push(latency);
        last_deadline = Some(deadline);
        keep_session |= keep_task(&outcome);
        match outcome.map(|outcome| print_outcome(outcome, cli.json)) {
            Ok(code) => {
                status = status.max(code);
                true
            }
            Err(err) => {
                reporter.refused(&err);
                let exit = exit_code(&err);
                report_error(
                    cli.json,
                    (err.kind(), err.fault()),
                    Some(err.server().unwrap_or(&label)),
                    &sentence(&err, &label),
                    exit,
                );
                if let Some(task) = err.task() {
                    report_task(cli.json, task);
                }
                failure = Some(exit);
                failed += 1;
                // One run stops at its error; a measured series (--repeat) goes on.
                cli.repeat > 1 && err.fault() != mcp_proto::Fault::Cancelled
            }
        }
    };
    if cli.parallel > 1 && runs > 1 {
        // N in flight on the one session; the results are reported as they come.
        client.run_parallel(&action, runs, cli.parallel, &mut outcome_of);
    } else {
        for _ in 0..runs {
            reporter.start_operation();
            let began = Instant::now();
            let (outcome, deadline) = client.run(action.clone());
            reporter.end_operation();
            if !outcome_of(began.elapsed(), deadline, outcome) {
                break;
            }
        }
    }
    if runs > 1 {
        eprintln!("{}", summary(&latencies, failed, started.elapsed()));
    }
    if login && failure.is_none() {
        match client.has_token() {
            true => eprintln!("logged in to {label}"),
            false => eprintln!("{label} asked for no authorization"),
        }
    }
    // A tidy exit: the session ends on the server now rather than at its idle timeout (after a
    // failure and a Ctrl-C too), inside what the last operation left of its budget (at most
    // the close's cap): once that is spent nothing is sent, and a local server is killed at
    // once. What the operator waits for ends with the budget. Best effort; traced.
    // A legacy task handed back keeps its session open: `task <ID>` resumes in it.
    if !keep_session {
        reporter.start_operation();
        if let Err(err) = client.close_within(last_deadline.as_ref()) {
            // A close the spent budget refused shows in the trace as what it is.
            reporter.refused(&err);
        }
        reporter.end_operation();
    }
    // A failed run outweighs every success: the exit code is the last failure's.
    failure.unwrap_or(status)
}

/// How an HTTP run authorizes: the credentials file, the OAuth settings, and for `login` the
/// listener the browser comes back to (bound first: its port is in the redirect URI).
struct Authorization {
    url: String,
    store: std::sync::Arc<credentials::FileStore>,
    oauth: OAuth,
    loopback: Option<login::Loopback>,
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
    use mcp_proto::mcp_auth::{ClientConfig, Grant, PreRegisteredClient, PrivateKey};
    let unusable = |e: mcp_proto::mcp_auth::AuthError| e.to_string();
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
    protocol: Protocol,
) -> Result<SessionConfig, Error> {
    let (config, headers) = match target {
        Target::Http { url, headers } => (SessionConfig::new(url)?, headers.as_slice()),
        Target::Stdio(command) => (SessionConfig::stdio(command.clone()), &[][..]),
    };
    let mut config = config
        .with_budget(budget)
        .with_resolution(resolution)
        .with_client_info("mcp-call", env!("CARGO_PKG_VERSION"));
    if let Protocol::Pin(version) = protocol {
        config = config.with_protocol_version(version);
    }
    for (name, value) in headers {
        config = config.with_header(name, value)?;
    }
    Ok(config)
}

/// `auto`, or a protocol version this client speaks, by its wire form.
fn parse_protocol(text: &str) -> Result<Protocol, String> {
    if text.trim() == "auto" {
        return Ok(Protocol::Auto);
    }
    ProtocolVersion::parse(text.trim())
        .map(Protocol::Pin)
        .ok_or_else(|| {
            format!(
                "\"{text}\" is neither auto nor a protocol version this client speaks ({})",
                ProtocolVersion::supported_list()
            )
        })
}

/// Reports a usage error (exit code 2) and returns its code.
fn usage(json: bool, server: Option<&str>, message: &str) -> u8 {
    report_error(json, ("usage", Fault::Caller), server, message, code::USAGE);
    code::USAGE
}

/// Says what went wrong on stderr: `mcp-call: <sentence>`, or with `--json` one object
/// `{"error":{"kind","fault","server","message","exit"}}` a script can read.
fn report_error(
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
fn report_task(json: bool, task: &mcp_proto::TaskHandle) {
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
fn summary(latencies: &[Duration], errors: usize, total: Duration) -> String {
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
fn sentence(err: &Error, label: &str) -> String {
    let text = match err.server() {
        Some(_) => err.to_string(),
        None => format!("{err} (MCP server \"{label}\")"),
    };
    match err {
        Error::AuthorizationRequired { .. } => format!("{text}; run `mcp-call login` first"),
        _ => text,
    }
}

fn print_probe(info: &mcp_proto::SessionInfo, json: bool) -> u8 {
    if json {
        let value = serde_json::json!({
            "protocolVersion": info.protocol_version.as_str(),
            "era": Era::of(info.protocol_version).to_string(),
            "serverInfo": {"name": info.server.name, "version": info.server.version},
            "capabilities": info.capabilities,
            "sessionId": info.session_id,
        });
        println!("{value}");
    } else {
        // A server that reports no version gets no empty word (and no double space).
        let mut who = info.server.name.clone();
        if !info.server.version.is_empty() {
            who.push(' ');
            who.push_str(&info.server.version);
        }
        println!(
            "{who} (protocol {}, {} era)",
            info.protocol_version,
            Era::of(info.protocol_version)
        );
    }
    code::OK
}

/// Prints an outcome: a listing (one key per line, or the raw entries as a JSON array), a
/// call's, a resource's or a prompt's text (or the raw result), a probe's report. Returns the
/// exit code (a tool that answered `isError: true` is not a success).
fn print_outcome(outcome: Outcome, json: bool) -> u8 {
    fn lines<T>(items: &[T], key: impl Fn(&T) -> &str, raw: impl Fn(&T) -> Value, json: bool) {
        if json {
            println!("{}", Value::Array(items.iter().map(raw).collect()));
        } else {
            for item in items {
                println!("{}", key(item));
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
        Outcome::Resource(read) if json => println!("{}", Value::Object(read.raw)),
        Outcome::Resource(read) => println!("{}", read.text()),
        Outcome::Prompt(prompt) if json => println!("{}", Value::Object(prompt.raw)),
        Outcome::Prompt(prompt) => println!("{}", prompt.text()),
        Outcome::Call(result) => return print_call(&result, json),
        Outcome::Probe(info) => return print_probe(&info, json),
        Outcome::Completion(completion) if json => println!(
            "{}",
            serde_json::json!({"values": completion.values, "total": completion.total,
                "hasMore": completion.has_more})
        ),
        Outcome::Completion(completion) => {
            for value in &completion.values {
                println!("{value}");
            }
        }
        Outcome::TaskCancelRequested(id) if json => {
            println!(
                "{}",
                serde_json::json!({"task": {"id": id, "cancel": "requested"}})
            );
        }
        Outcome::TaskCancelRequested(id) => println!("cancel requested: {id}"),
        // The notifications went out as they came; the end is said only to a script.
        Outcome::Subscription(end) if json => println!(
            "{}",
            serde_json::json!({"subscription": {"acknowledged": end.acknowledged,
                "endedBy": if end.by_server { "server" } else { "budget" }}})
        ),
        // Not an outcome of any command (close): nothing to print.
        _ => {}
    }
    code::OK
}

fn print_call(result: &mcp_proto::CallToolResult, json: bool) -> u8 {
    if json {
        println!("{}", Value::Object(result.raw.clone()));
    } else {
        println!("{}", result.text());
    }
    if result.is_error {
        code::TOOL_ERROR
    } else {
        code::OK
    }
}
