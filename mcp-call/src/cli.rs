//! What `mcp-call` accepts: its flags, commands and their parsers, the exit codes, and the
//! operation each command runs ([`Command::action`]). Nothing here touches a server: it only
//! says what the operator asked for.

use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use mcp_proto::request::{Answer, Complete, CompletionRef, GetPrompt, ReadResource};
use mcp_proto::{Action, Error, ListKind, ProtocolVersion};
use serde_json::{Map, Value};

use crate::driver::DriverKind;
use crate::{args, elicit};

/// Exit codes: the contract scripts rely on.
pub(crate) mod code {
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
pub(crate) struct Cli {
    /// The server's endpoint. Without it (and without --stdio or --server), an embedded demo
    /// server is started on 127.0.0.1.
    #[arg(long, value_name = "URL", conflicts_with = "stdio", global = true)]
    pub(crate) url: Option<String>,
    /// A local server to run and speak to over its stdin and stdout: the command line, split
    /// as a POSIX shell would (quotes, backslashes) but run without any shell.
    #[arg(long, value_name = "'COMMAND [ARGS...]'", global = true)]
    pub(crate) stdio: Option<String>,
    /// An environment variable for the local server, repeatable (on top of this process's
    /// environment and the --server entry's `env`).
    #[arg(long = "env", value_name = "NAME=VALUE", value_parser = parse_env, global = true)]
    pub(crate) env: Vec<(String, String)>,
    /// A server configuration file as MCP hosts write them (`mcpServers`, or VS Code's
    /// `servers`): see `servers` and --server. ${NAME} and ${env:NAME} in an entry's url,
    /// headers and env values are read from the environment, as --header's are.
    #[arg(long, value_name = "FILE", global = true)]
    pub(crate) config: Option<std::path::PathBuf>,
    /// The entry of --config to use: its url, headers and timeout (flags win over them).
    #[arg(long, value_name = "NAME", requires = "config", global = true)]
    pub(crate) server: Option<String>,
    /// The operation's budget in seconds, decimals allowed. Default: MCP_OPERATION_TIMEOUT
    /// (read leniently), else 20.
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds, global = true)]
    pub(crate) timeout: Option<Duration>,
    /// The unit grants are rounded up to.
    #[arg(long, value_enum, default_value_t = Unit::S, global = true)]
    pub(crate) resolution: Unit,
    /// Which driver runs the operation.
    #[arg(long, value_enum, default_value_t = DriverKind::Blocking, global = true)]
    pub(crate) driver: DriverKind,
    /// Also trust the CA certificates in this PEM file (besides the system's store).
    #[arg(long, value_name = "FILE", global = true)]
    pub(crate) cacert: Option<std::path::PathBuf>,
    /// Send every request through this http:// proxy (HTTP CONNECT), whatever HTTPS_PROXY says;
    /// credentials in it are sent to the proxy and never printed.
    #[arg(long, value_name = "URL", global = true)]
    pub(crate) proxy: Option<String>,
    /// Hosts reached without a proxy, as NO_PROXY is written (added to NO_PROXY).
    #[arg(long, value_name = "LIST", global = true)]
    pub(crate) noproxy: Option<String>,
    /// An extra request header, repeatable (e.g. 'Authorization: Bearer ${TOKEN}'): ${NAME}
    /// and ${env:NAME} are read from the environment (a bare $NAME, or a ${ never closed, is
    /// left as written); an unset variable is an error naming it, and nothing is sent.
    #[arg(long = "header", value_name = "'Name: value'", value_parser = parse_header, global = true)]
    pub(crate) headers: Vec<(String, String)>,
    /// Request headers from a file, repeatable: one 'Name: value' a line, values expanded as
    /// --header's are; blank lines and lines beginning with # are skipped. A --header of the
    /// same name wins.
    #[arg(long = "header-file", value_name = "FILE", global = true)]
    pub(crate) header_files: Vec<std::path::PathBuf>,
    /// The protocol version to speak: `auto` (the default: the modern request first, the
    /// handshake when the server is legacy), a legacy one (2025-11-25, 2025-06-18; the
    /// handshake only) or the modern 2026-07-28 (stateless only: a tool call is one request).
    #[arg(long, value_name = "auto|VERSION", default_value = "auto", value_parser = parse_protocol, global = true)]
    pub(crate) protocol: Protocol,
    /// The HTTP transport: `auto` (the default: Streamable HTTP, and the HTTP+SSE transport of
    /// 2024-11-05 when the URL refuses the `initialize` POST with 400, 404 or 405, inside the
    /// same budget), `streamable-http` (never falls back) or `sse` (a `.../sse` URL: the GET
    /// first, two legs fewer).
    #[arg(
        long,
        value_name = "auto|streamable-http|sse",
        default_value = "auto",
        global = true
    )]
    pub(crate) transport: mcp_proto::HttpTransport,
    /// Run the operation N times on one session.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub(crate) repeat: u32,
    /// With --repeat: keep N operations in flight at once on the one session (one handshake
    /// for all of them), each under its own budget.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub(crate) parallel: u32,
    /// Print JSON on stdout: the tools array, or the whole call result (its
    /// `structuredContent` included, values as the server sent them).
    #[arg(long, global = true)]
    pub(crate) json: bool,
    /// Check each tool result's `structuredContent` against the `outputSchema` its tool
    /// declares (the tools are listed first, inside the budget, when the session has not
    /// listed them): a result that breaks it is an error naming the place and the rule (exit
    /// 5, the server's fault; the bridge answers the host with a JSON-RPC error saying the same,
    /// with `pointer` and `rule` in its `data`). Without it,
    /// results are passed on unchecked.
    #[arg(long, global = true)]
    pub(crate) validate_output: bool,
    /// Print one line per leg on stderr.
    #[arg(long, global = true)]
    pub(crate) trace: bool,
    /// Answer the server's elicitations (requests for input during a call or its task):
    /// `decline`, or `defaults` (accept a form with the defaults its schema declares; a form
    /// with a required field that has none is declined). Each
    /// is shown on stderr; a URL to open is shown with its domain and always declined.
    /// Without it, no elicitation is offered to the server.
    #[arg(long, value_enum, value_name = "decline|defaults", global = true)]
    pub(crate) elicit: Option<elicit::Elicit>,
    /// Answer the server's sampling requests (`sampling/createMessage`: the server asks the
    /// client's model) with this text, as the assistant's message from model `mcp-call`; each
    /// request is shown on stderr. Without it, sampling is not offered to the server.
    #[arg(long, value_name = "TEXT", global = true)]
    pub(crate) sampling_answer: Option<String>,
    /// A root to offer the server (`roots/list`), repeatable: a URI such as file:///work
    /// (a path is made a file:// URI). Without it, no roots are offered.
    #[arg(long = "root", value_name = "URI", value_parser = parse_root, global = true)]
    pub(crate) roots: Vec<String>,
    /// Tell the server, on every request, the milliseconds left of the budget (in `_meta`,
    /// under `dev.mcp-deadline/remainingMs`: this project's own key, not a standard one).
    #[arg(long, global = true)]
    pub(crate) send_deadline: bool,
    /// Cancel a task still running when the budget ends (`tasks/cancel`, sent before the end)
    /// instead of handing it back to look at later.
    #[arg(long, global = true)]
    pub(crate) cancel_at_deadline: bool,
    /// Ask the server for its log messages at LEVEL and above (debug, info, notice, warning,
    /// error, critical, alert, emergency) and print them on stderr: `log <level> <logger>: ...`.
    #[arg(long, value_name = "LEVEL", value_parser = parse_log_level, global = true)]
    pub(crate) log_level: Option<mcp_proto::message::LogLevel>,
    /// OAuth: a client id issued for this server (instead of registering one), offered to the
    /// authorization server the server names.
    #[arg(long, value_name = "ID", global = true)]
    pub(crate) client_id: Option<String>,
    /// OAuth: the client's secret (a confidential client). Also MCP_CLIENT_SECRET.
    #[arg(
        long,
        value_name = "SECRET",
        env = "MCP_CLIENT_SECRET",
        hide_env_values = true,
        global = true
    )]
    pub(crate) client_secret: Option<String>,
    /// OAuth: a PKCS#8 PEM P-256 key; with --client-id, tokens come from the client
    /// credentials grant signed with it (private_key_jwt, ES256): no browser.
    #[arg(long, value_name = "FILE", requires = "client_id", global = true)]
    pub(crate) client_key: Option<std::path::PathBuf>,
    /// OAuth: how tokens are obtained: `code` (a person approves in a browser, at `login`) or
    /// `client-credentials` (no person: --client-id with --client-secret or --client-key).
    #[arg(long, value_enum, default_value_t = GrantKind::Code, global = true)]
    pub(crate) grant: GrantKind,
    /// OAuth: the scope to ask for (default: what the server's challenge or metadata names).
    #[arg(long, value_name = "SCOPE", global = true)]
    pub(crate) scope: Option<String>,
    /// OAuth: where registrations and tokens are kept between runs (written 0600). Default:
    /// $XDG_CONFIG_HOME/mcp-call/credentials.json.
    #[arg(long, value_name = "FILE", global = true)]
    pub(crate) credentials: Option<std::path::PathBuf>,
    /// Show only the tools whose name matches GLOB (`*` any run of characters, `?` one;
    /// case-sensitive), repeatable: a tool matching any one is shown. Applies to `tools`,
    /// `call` (another tool is refused, exit 2, before anything is sent) and the bridge's
    /// tools/list and tools/call; with --ignore-tool a tool must match this and not that.
    #[arg(long = "tool", value_name = "GLOB", value_parser = crate::filter::parse_glob, global = true)]
    pub(crate) allow_tools: Vec<String>,
    /// Hide the tools whose name matches GLOB (`*` any run of characters, `?` one;
    /// case-sensitive), repeatable, as mcp-remote's flag does: left out of `tools` and the
    /// bridge's tools/list, and a call to one refused before anything is sent (exit 2; the
    /// bridge answers the host with a JSON-RPC error -32602).
    #[arg(long = "ignore-tool", value_name = "GLOB", value_parser = crate::filter::parse_glob, global = true)]
    pub(crate) ignore_tools: Vec<String>,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
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
        reference: CompletionRef,
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
        /// The server's URL, as mcp-remote takes it (`mcp-call bridge https://host/mcp`): the
        /// same as --url, which may be given instead (both: they must agree).
        #[arg(value_name = "URL")]
        upstream: Option<String>,
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
pub(crate) enum GrantKind {
    /// The authorization code flow: a person approves in a browser (`login`).
    Code,
    /// The client credentials grant: no person.
    ClientCredentials,
}

/// The default budget of `login`: a person has to read, click and perhaps sign in.
pub(crate) const LOGIN_BUDGET: Duration = Duration::from_secs(300);

/// What `--protocol` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    /// Detect the server's era.
    Auto,
    /// Speak this version and nothing else.
    Pin(ProtocolVersion),
}

impl Cli {
    /// `mcp-call bridge URL` as `mcp-call --url URL bridge` (mcp-remote's form): the URL moved
    /// to `--url`. `Err` is the usage error when both name a server and they differ, or the
    /// positional URL comes with another way to name one.
    pub(crate) fn with_upstream(mut self) -> Result<Self, String> {
        let Command::Bridge { upstream, .. } = &mut self.command else {
            return Ok(self);
        };
        let Some(upstream) = upstream.take() else {
            return Ok(self);
        };
        // The URLs are not quoted: one may carry a credential.
        match &self.url {
            Some(url) if *url != upstream => {
                return Err(
                    "the bridge's URL and --url name two different servers: give one".into(),
                );
            }
            Some(_) => {}
            None if self.stdio.is_some() || self.server.is_some() => {
                let other = if self.stdio.is_some() {
                    "--stdio"
                } else {
                    "--server"
                };
                return Err(format!(
                    "the bridge's URL and {other} name two servers: give one"
                ));
            }
            None => self.url = Some(upstream),
        }
        Ok(self)
    }
}

impl Command {
    /// The operation the command runs (`None` for a command that asks no server); a task is
    /// looked up with `task` (the era it was created in and its legacy session, from the
    /// credentials file, else the era --protocol speaks).
    pub(crate) fn action(
        &self,
        task: impl FnOnce(&str) -> mcp_proto::task::TaskHandle,
    ) -> Option<Action> {
        Some(match self {
            Self::Ping | Self::Login => Action::Probe,
            Self::Tools => Action::List(ListKind::Tools),
            Self::Call { tool, args, .. } => Action::CallTool {
                name: tool.clone(),
                arguments: args.clone(),
            },
            Self::Resources => Action::List(ListKind::Resources),
            Self::Templates => Action::List(ListKind::ResourceTemplates),
            Self::Read { uri } => Action::Request(ReadResource::new(uri.clone()).into()),
            Self::Prompts => Action::List(ListKind::Prompts),
            Self::Prompt { name, args } => {
                Action::Request(GetPrompt::new(name.clone(), args.clone()).into())
            }
            Self::Complete {
                reference,
                argument,
                value,
                context,
            } => {
                let context = (context.iter())
                    .map(|(name, value)| (name.clone(), Value::from(value.as_str())))
                    .collect();
                let complete = Complete::new(reference.clone(), argument.clone(), value.clone());
                Action::Request(complete.with_context(context).into())
            }
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

    /// What a one-request command prints of its answer, once it was read as its request's: a
    /// resource's text contents, a prompt's text messages, one suggested value a line; with
    /// `json`, the result as the server sent it.
    ///
    /// # Errors
    /// [`Error::Malformed`] naming `server` when the result is not what the request answers.
    pub(crate) fn answer_text(
        &self,
        answer: Answer,
        server: &str,
        json: bool,
    ) -> Result<String, Error> {
        let raw = |raw: Map<String, Value>| Value::Object(raw).to_string();
        match self {
            Self::Read { .. } => answer
                .read::<ReadResource>(server)
                .map(|read| if json { raw(read.raw) } else { read.text() }),
            Self::Prompt { .. } => answer
                .read::<GetPrompt>(server)
                .map(|got| if json { raw(got.raw) } else { got.text() }),
            Self::Complete { .. } => {
                // A completion's reading keeps only its values: the result is kept for `--json`.
                let result = json.then(|| answer.result.clone());
                let completion = answer.read::<Complete>(server)?;
                Ok(result.map_or_else(|| completion.values.join("\n"), raw))
            }
            _ => Ok(String::new()),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Unit {
    /// Whole seconds.
    S,
    /// Milliseconds.
    Ms,
}

pub(crate) const EXIT_CODES: &str = "Exit codes: 0 success; 1 the tool answered isError: true; 2 usage error; \
3 the operation's budget ran out (the refused request was not sent); 4 a leg timed out or the \
server could not be reached; 5 the server answered with an error; 6 cancelled (Ctrl-C, SIGTERM, SIGHUP); 7 the server requires authorization and none could be given (log in first); 8 the \
authorization server refused or broke the rules (its metadata, registration or token answer). With --repeat, \
the last failed run's code. Environment: MCP_OPERATION_TIMEOUT, the budget in seconds when --timeout is not \
given (read leniently: anything unusable means the default, 20).";

pub(crate) fn parse_root(text: &str) -> Result<String, String> {
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

pub(crate) fn parse_reference(text: &str) -> Result<CompletionRef, String> {
    match text.split_once(':') {
        Some(("prompt", name)) if !name.is_empty() => Ok(CompletionRef::Prompt(name.to_owned())),
        Some(("resource", uri)) if !uri.is_empty() => Ok(CompletionRef::Resource(uri.to_owned())),
        _ => Err("expected prompt:<NAME> or resource:<URI-TEMPLATE>".to_owned()),
    }
}

pub(crate) fn parse_log_level(text: &str) -> Result<mcp_proto::message::LogLevel, String> {
    mcp_proto::message::LogLevel::parse(text.trim()).ok_or_else(|| {
        let levels: Vec<&str> = mcp_proto::message::LogLevel::ALL
            .map(|l| l.as_str())
            .to_vec();
        format!("not a log level: {}", levels.join(", "))
    })
}

pub(crate) fn parse_seconds(text: &str) -> Result<Duration, String> {
    let seconds: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("\"{text}\" is not a number of seconds"))?;
    crate::servers::budget_seconds(seconds)
        .map_err(|problem| format!("the timeout {text} is {problem}"))
}

pub(crate) fn parse_env(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value)) if !name.is_empty() => Ok((name.to_owned(), value.to_owned())),
        _ => Err(format!("\"{text}\" is not NAME=VALUE")),
    }
}

pub(crate) fn parse_header(text: &str) -> Result<(String, String), String> {
    let (name, value) = text
        .split_once(':')
        .ok_or_else(|| format!("\"{text}\" is not 'Name: value'"))?;
    let name = name.trim();
    if name.is_empty() {
        return Err(format!("\"{text}\" has no header name"));
    }
    Ok((name.to_owned(), value.trim().to_owned()))
}

pub(crate) fn parse_arguments(text: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => {
            Err("the tool arguments must be a JSON object, e.g. '{\"text\":\"hi\"}'".to_owned())
        }
        Err(err) => Err(format!("the tool arguments are not JSON: {err}")),
    }
}

/// `auto`, or a protocol version this client speaks, by its wire form.
pub(crate) fn parse_protocol(text: &str) -> Result<Protocol, String> {
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

impl From<Unit> for mcp_proto::Resolution {
    fn from(unit: Unit) -> Self {
        match unit {
            Unit::S => Self::SECOND,
            Unit::Ms => Self::MILLISECOND,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn answer_of<R: mcp_proto::request::Request>(result: Value) -> Answer {
        Answer::new(R::METHOD, result.as_object().cloned().unwrap_or_default())
    }

    #[test]
    fn a_one_request_command_prints_its_text_or_the_result_as_sent_and_refuses_a_malformed_one() {
        let read = Command::Read { uri: "a".into() };
        let result =
            json!({"contents": [{"uri": "a", "text": "one"}, {"uri": "b", "blob": "AA=="}]});
        let text = read.answer_text(answer_of::<ReadResource>(result.clone()), "srv", false);
        assert_eq!(text.unwrap(), "one");
        let raw = read.answer_text(answer_of::<ReadResource>(result.clone()), "srv", true);
        assert_eq!(
            serde_json::from_str::<Value>(&raw.unwrap()).unwrap(),
            result
        );

        let complete = Command::Complete {
            reference: CompletionRef::Prompt("p".into()),
            argument: "a".into(),
            value: String::new(),
            context: Vec::new(),
        };
        let result = json!({"completion": {"values": ["x", "y"], "hasMore": false}});
        let text = complete.answer_text(answer_of::<Complete>(result.clone()), "srv", false);
        assert_eq!(text.unwrap(), "x\ny");
        let raw = complete.answer_text(answer_of::<Complete>(result.clone()), "srv", true);
        assert_eq!(
            serde_json::from_str::<Value>(&raw.unwrap()).unwrap(),
            result
        );

        // With --json too, a result that is not the request's is an error, not printed.
        let err = complete.answer_text(answer_of::<Complete>(json!({"values": []})), "srv", true);
        assert!(
            matches!(&err, Err(Error::Malformed { server, method: "completion/complete", .. }) if server == "srv"),
            "{err:?}"
        );
    }
}
