//! `mcp-typed-call`: calls one tool and reads its `structuredContent` into a Rust type, on
//! either driver, for the interop row `structured-output` (and anyone who wants to see
//! `call_tool_as` against a real server).
//!
//! ```text
//! mcp-typed-call [--driver blocking|tokio] (--url URL | --stdio 'CMD ARGS')
//!                [--validate] [--timeout SECS] TOOL [JSON-ARGUMENTS]
//! ```
//!
//! * `--driver`: `blocking` (`mcp-driver-blocking`, the default) or `tokio`
//!   (`mcp-driver-tokio`, on a current-thread runtime);
//! * `--url URL`: a Streamable HTTP endpoint; `--stdio 'CMD ARGS'`: a local server, the
//!   command split at whitespace (no quoting: a word cannot hold a space);
//! * `--validate`: `OutputValidation::Always` (a tools listing is walked first, inside the
//!   call's budget, and the result checked against the tool's `outputSchema`); without it,
//!   the default `WhenListed` (no listing read: nothing is checked);
//! * `--timeout SECS`: the operation's budget (default 20; fractions allowed);
//! * `TOOL`, then its arguments as one JSON object (default `{}`).
//!
//! It calls `call_tool_as::<Weather>` with
//! `Weather { temperature: f64, conditions: String, humidity: f64 }`: the shape of
//! server-everything's `get-structured-content` and of the interop peers' `get_weather`.
//! On success it prints the value (`Weather { temperature: 21.5, ... }`, its `Debug`) on
//! stdout and exits 0; on any error it prints `error kind=<Error::kind> <Error>` on stderr
//! and exits 1 (`OutputInvalid` when the result breaks its schema, `UnreadableResult` when
//! it is not a `Weather`). A bad command line exits 2 with the usage. The session is closed
//! before the exit (a local server ended, an HTTP session deleted).

use std::process::ExitCode;
use std::time::Duration;

use mcp_proto::schema::OutputValidation;
use mcp_proto::{Budget, Error, SessionConfig, StdioCommand};
use serde::Deserialize;
use serde_json::{Map, Value};

const USAGE: &str = "usage: mcp-typed-call [--driver blocking|tokio] (--url URL | --stdio 'CMD ARGS') \
[--validate] [--timeout SECS] TOOL [JSON-ARGUMENTS]\n";

/// What a weather tool returns (server-everything's `get-structured-content`, the peers'
/// `get_weather`). Its fields are read through `Debug` only.
#[derive(Deserialize, Debug)]
#[allow(dead_code)]
struct Weather {
    temperature: f64,
    conditions: String,
    humidity: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Driver {
    Blocking,
    Tokio,
}

/// The command line, read.
#[derive(Debug)]
struct Args {
    driver: Driver,
    config: SessionConfig,
    tool: String,
    arguments: Map<String, Value>,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut driver = Driver::Blocking;
    let mut url = None;
    let mut stdio = None;
    let mut validate = false;
    let mut timeout = Duration::from_secs(20);
    let mut positional = Vec::new();
    while let Some(arg) = args.next() {
        let mut value = |flag: &str| args.next().ok_or(format!("{flag} needs a value"));
        match arg.as_str() {
            "--driver" => {
                driver = match value("--driver")?.as_str() {
                    "blocking" => Driver::Blocking,
                    "tokio" => Driver::Tokio,
                    other => return Err(format!("--driver {other}: blocking or tokio")),
                }
            }
            "--url" => url = Some(value("--url")?),
            "--stdio" => stdio = Some(value("--stdio")?),
            "--validate" => validate = true,
            "--timeout" => {
                let raw = value("--timeout")?;
                timeout = raw
                    .parse::<f64>()
                    .ok()
                    .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
                    .filter(|d| !d.is_zero())
                    .ok_or(format!("--timeout {raw}: a positive number of seconds"))?;
            }
            flag if flag.starts_with("--") => return Err(format!("unknown flag {flag}")),
            _ => positional.push(arg),
        }
    }
    let config = match (url, stdio) {
        (Some(url), None) => SessionConfig::new(&url).map_err(|e| format!("--url {url}: {e}"))?,
        (None, Some(line)) => {
            let mut words = line.split_whitespace();
            let program = words.next().ok_or("--stdio needs a command")?;
            SessionConfig::stdio(StdioCommand::new(program).args(words))
        }
        _ => return Err("one of --url or --stdio is needed".to_owned()),
    };
    let validation = if validate {
        OutputValidation::Always
    } else {
        OutputValidation::WhenListed
    };
    let config = config
        .with_budget(Budget::from_duration(timeout))
        .with_output_validation(validation);
    let mut positional = positional.into_iter();
    let tool = positional.next().ok_or("TOOL is missing")?;
    let arguments = match positional.next() {
        None => Map::new(),
        Some(json) => match serde_json::from_str::<Value>(&json) {
            Ok(Value::Object(map)) => map,
            _ => return Err(format!("arguments {json}: not a JSON object")),
        },
    };
    if let Some(extra) = positional.next() {
        return Err(format!("unexpected argument {extra}"));
    }
    Ok(Args {
        driver,
        config,
        tool,
        arguments,
    })
}

/// One typed call on the blocking driver, then the session closed.
fn blocking(args: Args) -> Result<Weather, Error> {
    let client = mcp_driver_blocking::Client::new(args.config);
    let result = client.call_tool_as::<Weather>(&args.tool, args.arguments);
    let _ = client.close();
    result
}

/// One typed call on the tokio driver (a current-thread runtime), then the session closed.
fn tokio(args: Args) -> Result<Weather, Error> {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("mcp-typed-call: no tokio runtime: {e}");
            std::process::exit(1);
        }
    };
    runtime.block_on(async {
        let client = mcp_driver_tokio::Client::new(args.config);
        let result = client
            .call_tool_as::<Weather>(&args.tool, args.arguments)
            .await;
        let _ = client.close().await;
        result
    })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        print!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let args = match parse(args.into_iter()) {
        Ok(args) => args,
        Err(e) => {
            eprint!("mcp-typed-call: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let outcome = match args.driver {
        Driver::Blocking => blocking(args),
        Driver::Tokio => tokio(args),
    };
    match outcome {
        Ok(weather) => {
            println!("{weather:?}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error kind={} {e}", e.kind());
            ExitCode::from(1)
        }
    }
}
