//! `mcp-call`: the operator's command line.
//!
//! Does this MCP server answer, what tools does it offer, what does this tool return, and where
//! did the time go? Each command is one operation under one budget, run by either driver. The
//! contract (flags, output, exit codes) is documented in the README and tested end to end;
//! scripts rely on it.
//!
//! This file parses and dispatches. What is accepted is `cli`; how a run is set up from the
//! flags and a `--config` entry is `setup`; running the operation (once, repeated, in
//! parallel) and closing the session is `execute`; what is printed is `output`; `bridge`
//! serves a host on stdin and stdout.

mod args;
mod bridge;
mod cli;
mod credentials;
mod demo;
mod driver;
mod elicit;
mod execute;
mod expand;
mod filter;
mod login;
mod output;
mod remote_flags;
mod report;
mod servers;
mod setup;
mod stdout;

use std::process::ExitCode;

use clap::Parser;
use mcp_driver_common::network::Network;
use mcp_proto::{Budget, SessionConfig};

pub(crate) use crate::cli::code;
use crate::cli::{Cli, Command, LOGIN_BUDGET};
use crate::driver::Client;
use crate::output::{list_servers, sentence, usage};
use crate::report::Reporter;
use crate::setup::Setup;

fn main() -> ExitCode {
    let code = main_code();
    // What a command printed, out before the process ends (every way out comes here).
    stdout::flush();
    code
}

/// The command's work, and its exit code.
fn main_code() -> ExitCode {
    let json = std::env::args().any(|a| a == "--json");
    let (args, notes) = match remote_flags::translate(std::env::args().collect()) {
        Ok(translated) => translated,
        Err(message) => return ExitCode::from(usage(json, None, &message)),
    };
    let cli = match Cli::try_parse_from(args).map(Cli::with_upstream) {
        Ok(Ok(cli)) => cli,
        Ok(Err(message)) => return ExitCode::from(usage(json, None, &message)),
        Err(err) if err.use_stderr() && json => {
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
    // What became of mcp-remote's flags, for an operator who asked to see (`--trace`).
    if cli.trace {
        for note in &notes {
            eprintln!("mcp-call: {note}");
        }
    }
    ExitCode::from(match cli.command {
        Command::Completions { shell } => {
            let mut command = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut command, "mcp-call", &mut std::io::stdout());
            code::OK
        }
        Command::Servers => list_servers(&cli),
        _ => run(&cli),
    })
}

/// Every command that asks a server: set up, then served as a bridge, or run.
fn run(cli: &Cli) -> u8 {
    let setup = match Setup::from_cli(cli) {
        Ok(setup) => setup,
        Err(code) => return code,
    };
    if let (Command::Logout, Some(auth)) = (&cli.command, &setup.auth) {
        // Nothing is sent: the tokens kept for the server are forgotten.
        let dropped = auth.store.forget_server(&auth.url);
        eprintln!(
            "logged out of {} ({dropped} token set(s) forgotten)",
            setup.label
        );
        return code::OK;
    }
    let network = match setup::network(cli) {
        Ok(network) => network,
        Err(message) => return usage(cli.json, Some(&setup.label), &message),
    };
    match cli.command {
        Command::Bridge { login, .. } => bridge(cli, setup, network, login),
        _ => execute::run(cli, setup, &network),
    }
}

/// `bridge`: serves the host on stdin and stdout. The client is made when the host's
/// handshake says what it can answer (elicitation, sampling, roots): those are the
/// capabilities the upstream is told of.
fn bridge(cli: &Cli, setup: Setup, network: Network, login: bool) -> u8 {
    let Setup {
        config,
        label,
        auth,
        reporter,
        demo: _demo,
        tools,
    } = setup;
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
    bridge::serve(config, build, &label, sentence, reporter, login, tools)
}
