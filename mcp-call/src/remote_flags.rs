//! mcp-remote's flags, each decided: a host config written for `npx mcp-remote URL [flags]`
//! works with `mcp-call bridge URL [flags]`, or says exactly what to change.
//!
//! What this module is: one pass over the command line before clap sees it. Every flag of
//! mcp-remote 0.15.1 that `mcp-call` does not take under the same name is in [`FLAGS`], with
//! what is done with it: rewritten to `mcp-call`'s equivalent, accepted and dropped (what
//! `mcp-call` does anyway, or what one budget per operation replaces), or refused with the
//! reason and what to use instead (a usage error, exit 2). Flags both take under one name and
//! meaning (`--header`, `--header-file`, `--ignore-tool`) pass through untouched, as does
//! anything this table does not name. It must never print a flag's value: a value may be a
//! credential.

/// What becomes of one mcp-remote flag.
#[derive(Debug, Clone, Copy)]
enum Fate {
    /// Rewritten to `mcp-call`'s flag (the value, if any, follows it unchanged).
    Becomes(&'static str),
    /// Accepted and dropped, with why (said with `--trace`).
    Dropped(&'static str),
    /// Refused: why, and what to use instead.
    Refused(&'static str),
}

/// One row of the table: the flag, whether it takes a value, its fate.
struct Flag {
    name: &'static str,
    takes_value: bool,
    fate: Fate,
}

const fn flag(name: &'static str, takes_value: bool, fate: Fate) -> Flag {
    Flag {
        name,
        takes_value,
        fate,
    }
}

/// Every flag of mcp-remote 0.15.1 that `mcp-call` does not take as is (the README's table
/// says the same, row by row).
const FLAGS: &[Flag] = &[
    flag("--debug", false, Fate::Becomes("--trace")),
    flag(
        "--client-credentials",
        false,
        Fate::Becomes("--grant=client-credentials"),
    ),
    flag(
        "--silent",
        false,
        Fate::Dropped(
            "mcp-call bridge writes to stderr only with --trace, a login URL or a failure",
        ),
    ),
    flag(
        "--allow-http",
        false,
        Fate::Dropped("mcp-call reaches http:// URLs as given"),
    ),
    flag(
        "--enable-proxy",
        false,
        Fate::Dropped("mcp-call always takes HTTPS_PROXY, HTTP_PROXY and NO_PROXY (or --proxy)"),
    ),
    flag(
        "--ipv4",
        false,
        Fate::Dropped(
            "a host's addresses are raced (Happy Eyeballs, 250 ms apart): a black-holed IPv6 address costs 250 ms, not the request",
        ),
    ),
    flag(
        "--disable-cookies",
        false,
        Fate::Dropped("mcp-call keeps no cookies"),
    ),
    flag(
        "--keep-alive",
        false,
        Fate::Dropped(
            "no pings are needed: a session the server lost is made again inside the next request's budget",
        ),
    ),
    flag(
        "--ping-interval",
        true,
        Fate::Dropped(
            "no pings are needed: a session the server lost is made again inside the next request's budget",
        ),
    ),
    flag(
        "--connect-timeout",
        true,
        Fate::Dropped("one budget per request (--timeout) bounds the connect and every other step"),
    ),
    flag(
        "--headers-timeout",
        true,
        Fate::Dropped(
            "one budget per request (--timeout) bounds the answer's head and every other step",
        ),
    ),
    flag(
        "--body-timeout",
        true,
        Fate::Dropped("one budget per request (--timeout) bounds the body and every other step"),
    ),
    flag(
        "--auth-timeout",
        true,
        Fate::Dropped("the login in the bridge (--login) has its own 300 s budget"),
    ),
    flag(
        "--host",
        true,
        Fate::Dropped("the login's redirect is received on 127.0.0.1"),
    ),
    flag(
        "--callback-path",
        true,
        Fate::Dropped("the login's redirect path is mcp-call's own"),
    ),
    flag(
        "--auth-success-url",
        true,
        Fate::Dropped("the login's page says it is done itself"),
    ),
    flag(
        "--resource",
        true,
        Fate::Refused(
            "mcp-call sends the resource its server's metadata names (RFC 9728); no override is taken",
        ),
    ),
    flag(
        "--disable-resource-parameter",
        false,
        Fate::Refused(
            "mcp-call always sends the resource parameter, as the MCP authorization spec requires",
        ),
    ),
    flag(
        "--authorize-param",
        true,
        Fate::Refused("extra authorization parameters are not taken; --scope sets the scope"),
    ),
    flag(
        "--static-oauth-client-info",
        true,
        Fate::Refused(
            "use --client-id and --client-secret (or MCP_CLIENT_SECRET) for a client registered ahead",
        ),
    ),
    flag(
        "--static-oauth-client-metadata",
        true,
        Fate::Refused(
            "client metadata is mcp-call's own when it registers; use --client-id for a client registered ahead",
        ),
    ),
    flag(
        "--client-metadata-url",
        true,
        Fate::Refused(
            "client ID metadata documents are not offered; use --client-id for a client registered ahead",
        ),
    ),
    flag(
        "--token-endpoint",
        true,
        Fate::Refused("the token endpoint comes from the authorization server's metadata"),
    ),
    flag(
        "--device-code",
        false,
        Fate::Refused(
            "the device grant is not supported; run `mcp-call login` once (a browser on any machine), or use --grant client-credentials",
        ),
    ),
    flag(
        "--use-id-token",
        false,
        Fate::Refused("the access token is what the MCP server checks; an ID token is never sent"),
    ),
];

/// The command line with mcp-remote's flags decided: the arguments clap is to parse, and a
/// sentence for each flag dropped or rewritten (for `--trace`). `Err` is the usage error of
/// the first flag refused, naming it and what to use instead.
pub(crate) fn translate(args: Vec<String>) -> Result<(Vec<String>, Vec<String>), String> {
    // Only a bridge's command line is a host config's mcp-remote line: other commands keep
    // their own flags (`watch --resource` is mcp-call's).
    let bridging = args
        .iter()
        .skip(1)
        .take_while(|a| *a != "--")
        .any(|a| a == "bridge");
    if !bridging {
        return Ok((args, Vec::new()));
    }
    let mut kept = Vec::with_capacity(args.len());
    let mut notes = Vec::new();
    let mut rest = args.into_iter();
    // The program's name.
    kept.extend(rest.next());
    let mut bridge_url_seen = false;
    while let Some(arg) = rest.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((name, value)) if name.starts_with("--") => (name.to_owned(), Some(value)),
            _ => (arg.clone(), None),
        };
        if name == "--" {
            kept.push(arg);
            kept.extend(rest.by_ref());
            break;
        }
        if let Some(decided) = shared_name(&name, inline, &mut rest, &mut kept, &mut notes) {
            decided?;
            continue;
        }
        let Some(row) = FLAGS.iter().find(|row| row.name == name) else {
            // mcp-remote's `URL [callback-port]`: a bare number after the bridge's URL.
            if bridge_url_seen && is_port(&arg) {
                notes.push(format!(
                    "the callback port {arg} is accepted and dropped: the login's redirect is received on 127.0.0.1 on a port of its own"
                ));
                bridge_url_seen = false;
                continue;
            }
            bridge_url_seen =
                kept.last().is_some_and(|last| last == "bridge") && !arg.starts_with('-');
            kept.push(arg);
            continue;
        };
        let value = if row.takes_value && inline.is_none() {
            rest.next()
        } else {
            inline.map(str::to_owned)
        };
        if row.takes_value && value.is_none() {
            return Err(format!("mcp-remote's {name} needs a value"));
        }
        match row.fate {
            Fate::Becomes(ours) => {
                notes.push(format!("mcp-remote's {name} is {ours} here"));
                kept.push(ours.to_owned());
                kept.extend(value);
            }
            Fate::Dropped(why) => notes.push(format!(
                "mcp-remote's {name} is accepted and dropped: {why}"
            )),
            Fate::Refused(why) => return Err(format!("mcp-remote's {name} is not taken: {why}")),
        }
    }
    Ok((kept, notes))
}

/// The flags mcp-remote and mcp-call both name but read differently: mcp-remote's values are
/// decided, mcp-call's pass through. `None` when `name` is neither.
fn shared_name(
    name: &str,
    inline: Option<&str>,
    rest: &mut impl Iterator<Item = String>,
    kept: &mut Vec<String>,
    notes: &mut Vec<String>,
) -> Option<Result<(), String>> {
    if name != "--protocol" && name != "--transport" {
        return None;
    }
    let Some(value) = inline.map(str::to_owned).or_else(|| rest.next()) else {
        return Some(Err(format!("{name} needs a value")));
    };
    let decided = match (name, value.as_str()) {
        ("--protocol", "legacy") => {
            notes.push("mcp-remote's --protocol legacy is --protocol 2025-11-25 here".to_owned());
            kept.extend(["--protocol".to_owned(), "2025-11-25".to_owned()]);
            Ok(())
        }
        // mcp-remote's names for what `--transport` reaches here.
        ("--transport", "http-only" | "http-first" | "sse-only" | "sse-first") => {
            let (ours, why) = match value.as_str() {
                "http-only" => ("streamable-http", "Streamable HTTP only"),
                "sse-only" => ("sse", "HTTP+SSE only"),
                "http-first" => ("auto", "Streamable HTTP, then HTTP+SSE"),
                _ => (
                    "auto",
                    "Streamable HTTP, then HTTP+SSE (never the other way round)",
                ),
            };
            notes.push(format!(
                "mcp-remote's --transport {value} is --transport {ours} here: {why}, inside one budget"
            ));
            kept.extend(["--transport".to_owned(), ours.to_owned()]);
            Ok(())
        }
        // mcp-call's own --protocol (auto or a version): clap reads it.
        _ => {
            kept.extend([name.to_owned(), value]);
            Ok(())
        }
    };
    Some(decided)
}

/// Whether `arg` is a TCP port number (mcp-remote's optional callback port).
fn is_port(arg: &str) -> bool {
    !arg.is_empty() && arg.len() <= 5 && arg.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        std::iter::once("mcp-call")
            .chain(line.split_whitespace())
            .map(str::to_owned)
            .collect()
    }

    fn kept(line: &str) -> String {
        let (kept, _) = translate(args(line)).expect("accepted");
        kept[1..].join(" ")
    }

    #[test]
    fn an_mcp_remote_line_becomes_an_mcp_call_line() {
        assert_eq!(
            kept("bridge https://h/mcp 3334 --debug --allow-http --header A:b --ignore-tool x*"),
            "bridge https://h/mcp --trace --header A:b --ignore-tool x*"
        );
        assert_eq!(
            kept("bridge https://h/mcp --connect-timeout 5 --body-timeout=0 --client-credentials"),
            "bridge https://h/mcp --grant=client-credentials"
        );
    }

    #[test]
    fn each_dropped_or_rewritten_flag_is_said_without_its_value() {
        let (_, notes) =
            translate(args("bridge https://h/mcp --ping-interval 31 --debug")).unwrap();
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].starts_with("mcp-remote's --ping-interval is accepted and dropped"));
        assert!(!notes.iter().any(|note| note.contains("31")), "{notes:?}");
        assert!(notes[1].contains("--trace"));
    }

    #[test]
    fn a_refused_flag_names_itself_and_what_to_use_instead_never_its_value() {
        let error = translate(args(
            "bridge https://h/mcp --static-oauth-client-info {\"client_secret\":\"s3cret\"}",
        ))
        .unwrap_err();
        assert!(
            error.contains("--static-oauth-client-info") && error.contains("--client-id"),
            "{error}"
        );
        assert!(!error.contains("s3cret"), "{error}");
        assert!(
            translate(args("bridge u --host"))
                .unwrap_err()
                .contains("needs a value")
        );
    }

    #[test]
    fn protocol_and_transport_are_read_as_mcp_remote_writes_them_and_as_mcp_call_does() {
        assert_eq!(
            kept("bridge u --protocol legacy"),
            "bridge u --protocol 2025-11-25"
        );
        assert_eq!(kept("bridge u --protocol auto"), "bridge u --protocol auto");
        assert_eq!(
            kept("bridge u --protocol=2026-07-28"),
            "bridge u --protocol 2026-07-28"
        );
        assert_eq!(
            kept("bridge u --transport http-first"),
            "bridge u --transport auto"
        );
        assert_eq!(
            kept("bridge u --transport http-only"),
            "bridge u --transport streamable-http"
        );
        assert_eq!(
            kept("bridge u --transport sse-only"),
            "bridge u --transport sse"
        );
        assert_eq!(
            kept("bridge u --transport sse-first"),
            "bridge u --transport auto"
        );
        // mcp-call's own values pass through, for clap to read.
        assert_eq!(kept("bridge u --transport sse"), "bridge u --transport sse");
    }

    #[test]
    fn what_mcp_call_takes_itself_and_what_follows_a_double_dash_pass_through() {
        assert_eq!(
            kept("--timeout 3 bridge --json -- --debug"),
            "--timeout 3 bridge --json -- --debug"
        );
        // A number is a callback port only right after the bridge's URL.
        assert_eq!(kept("call add 3334"), "call add 3334");
        // Only a bridge's line is read as mcp-remote's.
        assert_eq!(
            kept("watch --resource file:///a"),
            "watch --resource file:///a"
        );
        assert_eq!(kept("call x --debug"), "call x --debug");
    }
}
