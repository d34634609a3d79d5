//! `mcp-call`'s files: the server configuration (`mcpServers`, `mcp-call/src/servers.rs`) and
//! the credentials file (`mcp-call/src/credentials.rs`), as a person may have edited them or a
//! crash may have left them.
//!
//! Both modules live in the `mcp-call` binary crate, which has no library. They are compiled
//! here from the binary's own source files (`#[path]`), unchanged, so the targets run exactly
//! the code `mcp-call` runs; the two modules use nothing of the binary but themselves (their
//! module docs say so). The targets write the fuzzer's bytes to a scratch file (under
//! `/dev/shm` when it exists, else the temporary directory) and read it through the module,
//! as `mcp-call` does. This module must never touch a file outside its scratch directory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use mcp_auth::{
    ClientCredentials, ClientSource, CredentialStore, Secret, TokenEndpointAuth, TokenSet,
};
use serde_json::Value;
use url::Url;

use crate::bytes::Bytes;

/// `mcp-call`'s reader of server configurations, compiled from its source.
#[allow(dead_code)] // What only the binary uses.
#[path = "../../../mcp-call/src/servers.rs"]
mod servers;

/// `mcp-call`'s credentials file, compiled from its source.
#[allow(dead_code)] // What only the binary uses (the default path).
#[path = "../../../mcp-call/src/credentials.rs"]
mod credentials;

/// A directory of its own for one run of a target, removed when the run ends (the replay runs
/// targets on several threads at once).
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Self {
        static RUNS: AtomicUsize = AtomicUsize::new(0);
        let base = Path::new("/dev/shm");
        let base = if base.is_dir() {
            base.to_owned()
        } else {
            std::env::temp_dir()
        };
        let dir = base.join(format!(
            "mcp-fuzzing-{}-{}",
            std::process::id(),
            RUNS.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("the scratch directory can be made");
        Self(dir)
    }

    fn file(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, bytes).expect("the scratch file can be written");
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A usage error is one line a terminal shows as it is: no control characters.
fn check_usage_error(message: &str, path: &Path) {
    assert!(
        message.contains(&path.display().to_string()),
        "the error does not name the file: {message:?}"
    );
    assert!(
        !message.chars().any(char::is_control),
        "the error carries a control character: {message:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// servers
// ---------------------------------------------------------------------------------------------

/// The server-configuration target: the bytes are the whole file `--config` names.
///
/// Invariants: reading never panics; a file that is not JSON is an error naming the file and
/// the line the JSON parser stopped at; a JSON file without a `mcpServers` (or `servers`)
/// object is an error saying so; any other refusal names the file and the entry (`server
/// "<name>"`) it is about; an error is one line without control characters. A file that is
/// read gives one entry per member of the servers object (in name order, `mcpServers` winning
/// over `servers`), each remote when its `url` is a string (with that URL), else local when its
/// `command` is one (with that command), with a timeout that is positive when given.
pub fn servers(data: &[u8]) {
    let scratch = Scratch::new();
    let path = scratch.file("mcp.json", data);
    let loaded = servers::load(&path);
    let parsed = serde_json::from_slice::<Value>(data);
    let object = parsed.as_ref().ok().and_then(|value| {
        value
            .get("mcpServers")
            .or_else(|| value.get("servers"))
            .and_then(Value::as_object)
    });
    match loaded {
        Err(message) => {
            check_usage_error(&message, &path);
            match (&parsed, object) {
                (Err(err), _) => assert!(
                    message.contains(&format!("line {}", err.line())),
                    "a file that is not JSON (line {}: {err}): the error does not name the line: {message:?}",
                    err.line()
                ),
                (Ok(_), None) => assert!(
                    message.contains("mcpServers"),
                    "no servers object, and the error does not say so: {message:?}"
                ),
                (Ok(_), Some(object)) => assert!(
                    object.keys().any(
                        |name| message.contains(&format!("server \"{}\"", name.escape_debug()))
                    ),
                    "a refused entry the error does not name: {message:?}"
                ),
            }
        }
        Ok(entries) => {
            let object = object.expect("a file that was read has a servers object");
            let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
            let keys: Vec<&str> = object.keys().map(String::as_str).collect();
            assert_eq!(
                names, keys,
                "the entries are not the servers object's members"
            );
            for entry in &entries {
                check_entry(entry, &object[&entry.name]);
            }
        }
    }
}

fn check_entry(entry: &servers::Entry, value: &Value) {
    let text = |key: &str| value.get(key).and_then(Value::as_str);
    match (&entry.transport, text("url"), text("command")) {
        (servers::Transport::Http(remote), Some(url), _) => assert_eq!(remote.url, url),
        (servers::Transport::Command { command, .. }, None, Some(expected)) => {
            assert_eq!(command, expected);
        }
        (transport, url, command) => {
            panic!(
                "entry {:?} read as {transport:?} (url {url:?}, command {command:?})",
                entry.name
            )
        }
    }
    if let Some(timeout) = entry.timeout {
        assert!(!timeout.is_zero(), "entry {:?}: a zero timeout", entry.name);
    }
}

// ---------------------------------------------------------------------------------------------
// credentials
// ---------------------------------------------------------------------------------------------

/// The issuer, resource and URL of the server the target's writes are about when the file
/// names none.
const NEW_ISSUER: &str = "https://auth.fuzz.example";
const NEW_RESOURCE: &str = "https://mcp.fuzz.example/mcp";
/// Server URLs every file is asked about (besides each resource it names).
const ASKED_URLS: [&str; 4] = [
    "https://mcp.fuzz.example/mcp",
    "https://mcp.fuzz.example/mcp/sub?x=1",
    "https://other.fuzz.example/mcp",
    "http://127.0.0.1:8080/mcp",
];
/// The secrets the target writes (never in a message).
const WRITTEN_ACCESS: &str = "fuzz-written-access-token-7c1e";
const WRITTEN_REFRESH: &str = "fuzz-written-refresh-token-9a4d";
const WRITTEN_SECRET: &str = "fuzz-written-client-secret-3b8f";
/// The task id a task write keeps or forgets.
const WRITTEN_TASK: &str = "fuzz-written-task-7c1d";

/// What a file holds, read independently of the store: per issuer, its client's fields and
/// its token sets' fields (by resource), each as the JSON the file has for it (`null` and
/// absent alike), for the members the store knows (others are ignored, as the store ignores
/// them, unread: a file may hold anything there).
#[derive(Debug, Clone, Default, PartialEq)]
struct Held {
    clients: Vec<(String, Vec<Value>)>,
    tokens: Vec<((String, String), Vec<Value>)>,
}

/// The file's layout as its module documents it, for [`held`]: its members in the store's
/// order, because serde reads a struct from a JSON array too, by position, and so does the
/// store (`[{}, {}]` is a file whose issuers and tasks are both empty).
#[derive(serde::Deserialize)]
struct LaidOut {
    #[serde(default)]
    issuers: BTreeMap<String, IssuerLaidOut>,
    /// The tasks handed back: a task write checks them on its own; here they only hold
    /// their place.
    #[serde(default, rename = "tasks")]
    _tasks: serde::de::IgnoredAny,
}

#[derive(serde::Deserialize)]
struct IssuerLaidOut {
    #[serde(default)]
    client: Option<ClientLaidOut>,
    #[serde(default)]
    tokens: BTreeMap<String, TokensLaidOut>,
}

#[derive(serde::Deserialize)]
struct ClientLaidOut {
    client_id: Option<Value>,
    client_secret: Option<Value>,
    auth_method: Option<Value>,
    redirect_uri: Option<Value>,
    source: Option<Value>,
}

#[derive(serde::Deserialize)]
struct TokensLaidOut {
    access_token: Option<Value>,
    refresh_token: Option<Value>,
    expires_at: Option<Value>,
    scope: Option<Value>,
    client_id: Option<Value>,
}

fn held(bytes: &[u8]) -> Held {
    let file: LaidOut = serde_json::from_slice(bytes).unwrap_or_else(|err| {
        panic!("a file the store opened is not laid out as documented: {err}")
    });
    let value = |field: Option<Value>| field.unwrap_or(Value::Null);
    let mut held = Held::default();
    for (issuer, entry) in file.issuers {
        if let Some(c) = entry.client {
            let fields = [
                c.client_id,
                c.client_secret,
                c.auth_method,
                c.redirect_uri,
                c.source,
            ];
            held.clients
                .push((issuer.clone(), fields.into_iter().map(value).collect()));
        }
        for (resource, t) in entry.tokens {
            let fields = [
                t.access_token,
                t.refresh_token,
                t.expires_at,
                t.scope,
                t.client_id,
            ];
            held.tokens.push((
                (issuer.clone(), resource),
                fields.into_iter().map(value).collect(),
            ));
        }
    }
    held
}

/// Whether a token kept for `resource` may be presented to the server at `url`, by the rule
/// of RFC 9728 as MCP applies it, written independently of the store: the same scheme, host
/// and port, and the resource's path is the URL's or a parent of it (segment-wise); a
/// resource with a query (or one that is not a URL) serves only that very URL.
fn serves(resource: &str, url: &str) -> bool {
    if resource == url {
        return true;
    }
    let (Ok(resource_url), Ok(url_parsed)) = (Url::parse(resource), Url::parse(url)) else {
        return false;
    };
    if resource_url.scheme() != url_parsed.scheme()
        || resource_url.host() != url_parsed.host()
        || resource_url.port_or_known_default() != url_parsed.port_or_known_default()
        || resource_url.fragment().is_some()
    {
        return false;
    }
    if resource_url.query().is_some() {
        return resource == url;
    }
    let parent = resource_url.path().trim_end_matches('/');
    let child = url_parsed.path();
    child.trim_end_matches('/') == parent
        || child
            .strip_prefix(parent)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// What the target writes, picked by the first byte.
#[derive(Debug, Clone, Copy)]
enum Write {
    /// New tokens for a pair the file may not have.
    NewTokens,
    /// New tokens over the file's first pair.
    ReplaceTokens,
    /// A new registration at a new issuer.
    NewClient,
    /// A new registration over the file's first issuer's.
    ReplaceClient,
    /// Forget the first pair's tokens.
    ForgetTokens,
    /// Forget every token for the first pair's resource, as `mcp-call logout` does.
    ForgetServer,
    /// Keep a task handed back (beside the credentials, which it must not touch).
    RememberTask,
    /// Forget a task, as a finished `mcp-call task <id>` does.
    ForgetTask,
}

fn written_tokens() -> TokenSet {
    TokenSet {
        access_token: Secret::new(WRITTEN_ACCESS),
        expires_at: Instant::now().checked_add(std::time::Duration::from_secs(3600)),
        refresh_token: Some(Secret::new(WRITTEN_REFRESH)),
        scope: Some("files:read".to_owned()),
        client_id: "fuzz-client".to_owned(),
    }
}

fn written_client() -> ClientCredentials {
    ClientCredentials {
        client_id: "fuzz-client".to_owned(),
        client_secret: Some(Secret::new(WRITTEN_SECRET)),
        auth_method: TokenEndpointAuth::ClientSecretBasic,
        redirect_uri: "http://127.0.0.1:8976/callback".to_owned(),
        source: ClientSource::Registered,
    }
}

/// The credentials-file target.
///
/// Layout: byte 0 picks the write (`% 6`: new tokens for a new pair, new tokens over the
/// file's first issuer and resource, a new registration at a new issuer, one over the first
/// issuer's, forgetting the first pair's tokens, forgetting the first resource's server as
/// `mcp-call logout` does); the rest is the whole file.
///
/// Invariants: opening never panics; a file that is not usable is an error naming the file
/// and the parser's line and column and nothing of the file's content; every token and
/// registration of a usable file can be read back, and every token `token_for` presents for a
/// server URL (each resource the file names, and a few others) is one kept for that server or
/// a parent of it by the resource rule, unexpired; after the write, the file opens again, holds
/// what was written, and every other registration and token set the file held is still there,
/// field for field; the file stays private (mode 0600 on Unix).
pub fn credentials(data: &[u8]) {
    let mut bytes = Bytes::new(data);
    let write = match bytes.byte() % 8 {
        0 => Write::NewTokens,
        1 => Write::ReplaceTokens,
        2 => Write::NewClient,
        3 => Write::ReplaceClient,
        4 => Write::ForgetTokens,
        5 => Write::ForgetServer,
        6 => Write::RememberTask,
        _ => Write::ForgetTask,
    };
    let file = bytes.rest();
    let scratch = Scratch::new();
    let path = scratch.file("credentials.json", file);
    let store = match credentials::FileStore::open(&path) {
        Ok(store) => store,
        Err(message) => {
            check_usage_error(&message, &path);
            let prefix = format!(
                "the credentials file {} is not usable: line ",
                path.display()
            );
            let position = message
                .strip_prefix(&prefix)
                .unwrap_or_else(|| panic!("an unexpected refusal: {message:?}"));
            let (line, column) = position
                .split_once(", column ")
                .unwrap_or_else(|| panic!("no line and column: {message:?}"));
            assert!(
                line.parse::<usize>().is_ok() && column.parse::<usize>().is_ok(),
                "the error says more than where: {message:?}"
            );
            return;
        }
    };
    let before = held(file);
    let now_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    for ((issuer, resource), _) in &before.tokens {
        let tokens = store.tokens(issuer, resource);
        assert!(
            tokens.is_some(),
            "the tokens for {issuer} and {resource} do not read back"
        );
    }
    for (issuer, values) in &before.clients {
        // A registration with an unknown method is not offered (the flow registers again).
        let known = values[2]
            .as_str()
            .and_then(TokenEndpointAuth::from_wire)
            .is_some();
        assert_eq!(
            store.client(issuer).is_some(),
            known,
            "the client of {issuer}"
        );
    }
    let asked = before
        .tokens
        .iter()
        .map(|((_, resource), _)| resource.as_str())
        .chain(ASKED_URLS);
    for url in asked {
        if let Some(token) = store.token_for(url) {
            assert!(
                serves(token.resource(), url),
                "the token kept for {:?} is presented to {url:?}",
                token.resource()
            );
            let expires = before
                .tokens
                .iter()
                .find(|((issuer, resource), _)| {
                    issuer == token.issuer() && resource == token.resource()
                })
                .map(|(_, values)| values[2].as_u64());
            if let Some(Some(at)) = expires {
                assert!(at > now_unix, "an expired token is presented to {url:?}");
            }
        }
    }

    let first_pair = before.tokens.first().map(|(pair, _)| pair.clone());
    let first_issuer = before.clients.first().map(|(issuer, _)| issuer.clone());
    let pair = match write {
        Write::NewTokens => Some((NEW_ISSUER.to_owned(), NEW_RESOURCE.to_owned())),
        _ => first_pair.clone(),
    };
    // What the write may change: one pair's tokens, or one issuer's client.
    let mut touched_pair = None;
    let mut touched_issuer = None;
    let mut touched_resource = None;
    match write {
        Write::NewTokens | Write::ReplaceTokens => {
            let (issuer, resource) =
                pair.unwrap_or_else(|| (NEW_ISSUER.to_owned(), NEW_RESOURCE.to_owned()));
            store.save_tokens(&issuer, &resource, written_tokens());
            touched_pair = Some((issuer, resource));
        }
        Write::NewClient | Write::ReplaceClient => {
            let issuer = match write {
                Write::ReplaceClient => first_issuer.unwrap_or_else(|| NEW_ISSUER.to_owned()),
                _ => format!("{NEW_ISSUER}/new"),
            };
            store.save_client(&issuer, written_client());
            touched_issuer = Some(issuer);
        }
        Write::ForgetTokens => {
            if let Some((issuer, resource)) = first_pair {
                store.forget_tokens(&issuer, &resource);
                touched_pair = Some((issuer, resource));
            }
        }
        Write::ForgetServer => {
            let url = first_pair.map_or_else(|| NEW_RESOURCE.to_owned(), |(_, resource)| resource);
            store.forget_server(&url);
            touched_resource = Some(url);
        }
        Write::RememberTask | Write::ForgetTask => {
            let url = first_pair.map_or_else(|| NEW_RESOURCE.to_owned(), |(_, resource)| resource);
            // Whatever the file held of tasks reads without a panic.
            let _ = store.task(&url, WRITTEN_TASK);
            match write {
                Write::RememberTask => {
                    let era = mcp_proto::task::TaskEra::Legacy;
                    let task = mcp_proto::task::TaskHandle::new("fuzzed", WRITTEN_TASK, era);
                    store.remember_task(&url, &task);
                    let kept = store.task(&url, WRITTEN_TASK).map(|(era, _, _)| era);
                    assert_eq!(kept, Some(era));
                }
                _ => {
                    store.forget_task(&url, WRITTEN_TASK);
                    assert_eq!(store.task(&url, WRITTEN_TASK), None);
                }
            }
        }
    }
    drop(store);

    let written = std::fs::read(&path).expect("the credentials file is there");
    let again = credentials::FileStore::open(&path)
        .unwrap_or_else(|err| panic!("the file the store wrote does not open: {err}"));
    let after = held(&written);
    for ((issuer, resource), values) in &before.tokens {
        let pair = (issuer.clone(), resource.clone());
        // A logout forgets what serves its server, and nothing else.
        let forgotten = touched_resource
            .as_deref()
            .is_some_and(|url| serves(resource, url));
        if touched_pair.as_ref() == Some(&pair) || forgotten {
            continue;
        }
        let kept = after
            .tokens
            .iter()
            .find(|(p, _)| *p == pair)
            .map(|(_, v)| v);
        assert_eq!(
            kept,
            Some(values),
            "the tokens for {issuer} and {resource} changed or were lost by another write"
        );
    }
    for (issuer, values) in &before.clients {
        if touched_issuer.as_deref() == Some(issuer.as_str()) {
            continue;
        }
        let kept = after
            .clients
            .iter()
            .find(|(i, _)| i == issuer)
            .map(|(_, v)| v);
        assert_eq!(
            kept,
            Some(values),
            "the registration at {issuer} changed or was lost by another write"
        );
    }
    if let (Write::NewTokens | Write::ReplaceTokens, Some((issuer, resource))) =
        (write, &touched_pair)
    {
        let tokens = again
            .tokens(issuer, resource)
            .expect("the written tokens read back");
        assert_eq!(tokens.access_token.expose(), WRITTEN_ACCESS);
    }
    if let Some(issuer) = &touched_issuer {
        let client = again.client(issuer).expect("the written client reads back");
        assert_eq!(
            client.client_secret.as_ref().map(Secret::expose),
            Some(WRITTEN_SECRET)
        );
    }
    #[cfg(unix)]
    if written != file {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path)
            .expect("the credentials file is there")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "the credentials file is not private");
    }
}
