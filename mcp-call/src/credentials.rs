//! `mcp-call`'s credentials file: registrations and tokens kept between runs, keyed by issuer
//! (and tokens by resource), as `mcp_auth` keeps them in memory; and the tasks a server still
//! runs for this client, keyed by the server's URL, so that `mcp-call task <ID>` can look again
//! under a new budget.
//!
//! One JSON file, written whole on every change through a temporary file renamed over it,
//! mode 0600 in a directory of mode 0700 (on Unix). Token lifetimes are kept as Unix times
//! (an `Instant` does not outlive its process). Nothing here prints a credential: a file that
//! cannot be read or written is reported by path and reason only.
//!
//! The fuzz harness compiles this file as it is (`fuzz/harness/src/files.rs`, by `#[path]`):
//! it must use nothing of the binary crate but its dependencies.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mcp_auth::{
    AccessToken, ClientCredentials, ClientSource, CredentialStore, Secret, TokenEndpointAuth,
    TokenSet,
};
use mcp_proto::task::{TaskEra, TaskHandle};
use serde::{Deserialize, Serialize};
use url::Url;

/// The file's format.
#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    #[serde(default)]
    issuers: BTreeMap<String, Issuer>,
    /// The tasks handed back, by server URL, then task id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    tasks: BTreeMap<String, BTreeMap<String, Task>>,
}

/// A task a server runs, as the last look at it left it.
#[derive(Debug, Serialize, Deserialize)]
struct Task {
    /// `modern` or `legacy`: how it is polled.
    era: String,
    /// Seconds since the Unix epoch after which the server forgets it (its TTL from the last
    /// look), if it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_at: Option<u64>,
    /// The legacy session it belongs to (a resume speaks in it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    session_id: Option<String>,
    /// The tool whose call it runs (its result is held to that tool's `outputSchema`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tool: Option<String>,
}

/// A stored task: its era, its legacy session and the tool whose call it runs.
pub(crate) type KeptTask = (TaskEra, Option<String>, Option<String>);

/// The era a stored task was created in, by its word in the file (`None`: a word this version
/// does not know, which is no task it can poll).
fn era_of(word: &str) -> Option<TaskEra> {
    match word {
        "modern" => Some(TaskEra::Modern),
        "legacy" => Some(TaskEra::Legacy),
        _ => None,
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Issuer {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client: Option<Client>,
    #[serde(default)]
    tokens: BTreeMap<String, Tokens>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Client {
    client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client_secret: Option<String>,
    auth_method: String,
    redirect_uri: String,
    source: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct Tokens {
    access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    refresh_token: Option<String>,
    /// Seconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_at: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    scope: Option<String>,
    client_id: String,
}

/// The default file: `$XDG_CONFIG_HOME/mcp-call/credentials.json`, else
/// `~/.config/mcp-call/credentials.json`.
pub(crate) fn default_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".config")))?;
    Some(base.join("mcp-call").join("credentials.json"))
}

/// A [`CredentialStore`] in a file.
#[derive(Debug)]
pub(crate) struct FileStore {
    path: PathBuf,
    file: Mutex<File>,
    /// An instant and the time of day at it, to turn lifetimes into Unix times and back.
    anchor: (Instant, SystemTime),
}

impl FileStore {
    /// The store in `path` (an absent file is an empty store).
    pub(crate) fn open(path: &Path) -> Result<Self, String> {
        let file = match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|err| {
                format!(
                    "the credentials file {} is not usable: {}",
                    path.display(),
                    // The parser's position, never the content.
                    format_args!("line {}, column {}", err.line(), err.column())
                )
            })?,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => File::default(),
            Err(err) => {
                return Err(format!(
                    "the credentials file {} cannot be read: {err}",
                    path.display()
                ));
            }
        };
        Ok(Self {
            path: path.to_owned(),
            file: Mutex::new(file),
            anchor: (Instant::now(), SystemTime::now()),
        })
    }

    fn with<T>(&self, f: impl FnOnce(&mut File) -> T) -> T {
        let mut file = self
            .file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut file)
    }

    /// Writes the file (0600, atomically). A failure is reported on stderr: the credentials
    /// still serve this run.
    fn persist(&self) {
        if let Err(err) = self.with(|file| write(&self.path, file)) {
            eprintln!(
                "mcp-call: the credentials file {} could not be written: {err}",
                self.path.display()
            );
        }
    }

    /// `at` as a Unix time (a time beyond what the clock represents as the latest one).
    fn unix(&self, at: Instant) -> u64 {
        let (then, wall) = self.anchor;
        let wall_at = match at.checked_duration_since(then) {
            Some(later) => wall.checked_add(later),
            None => wall.checked_sub(then.duration_since(at)),
        };
        wall_at.map_or(u64::MAX, |wall_at| {
            wall_at
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
        })
    }

    /// A Unix time as an instant: `None` when no instant is that far (a hand-edited or
    /// corrupted `expires_at`), which reads as a token without a known lifetime.
    fn instant(&self, unix: u64) -> Option<Instant> {
        let (then, wall) = self.anchor;
        let at = UNIX_EPOCH.checked_add(Duration::from_secs(unix))?;
        match at.duration_since(wall) {
            Ok(later) => then.checked_add(later),
            Err(earlier) => Some(then.checked_sub(earlier.duration()).unwrap_or(then)),
        }
    }

    /// The stored token for the server at `url` that has not expired: one whose resource is
    /// the URL or a parent of it. For presenting before the server asks.
    pub(crate) fn token_for(&self, url: &str) -> Option<AccessToken> {
        let now = unix_now();
        self.with(|file| {
            file.issuers.iter().find_map(|(issuer, entry)| {
                entry.tokens.iter().find_map(|(resource, tokens)| {
                    let live = tokens.expires_at.is_none_or(|at| at > now + 5);
                    (live && covers(resource, url)).then(|| (issuer.clone(), resource.clone()))
                })
            })
        })
        .and_then(|(issuer, resource)| {
            let tokens = self.tokens(&issuer, &resource)?;
            Some(AccessToken::from_store(&tokens, &issuer, &resource))
        })
    }

    /// Keeps `task`, which the server at `url` still runs, for a later look; tasks of that
    /// server whose TTL has passed are forgotten on the way.
    pub(crate) fn remember_task(&self, url: &str, task: &TaskHandle) {
        let now = unix_now();
        let era = match task.era {
            TaskEra::Legacy => "legacy",
            _ => "modern",
        };
        let expires_at = task.ttl.map(|ttl| now.saturating_add(ttl.as_secs()));
        self.with(|file| {
            let tasks = file.tasks.entry(url.to_owned()).or_default();
            tasks.retain(|_, kept| kept.expires_at.is_none_or(|at| at > now));
            let era = era.to_owned();
            let session_id = task.session_id.clone();
            let kept = Task {
                era,
                expires_at,
                session_id,
                tool: task.tool.clone(),
            };
            tasks.insert(task.task_id.clone(), kept);
        });
        self.persist();
    }

    /// The task `id` kept for the server at `url` (its era, legacy session and tool), if it is
    /// kept and its TTL has not passed.
    pub(crate) fn task(&self, url: &str, id: &str) -> Option<KeptTask> {
        let now = unix_now();
        self.with(|file| {
            let task = file.tasks.get(url)?.get(id)?;
            if task.expires_at.is_some_and(|at| at <= now) {
                return None;
            }
            Some((
                era_of(&task.era)?,
                task.session_id.clone(),
                task.tool.clone(),
            ))
        })
    }

    /// Forgets the task `id` of the server at `url` (it is over, or the server knows it no
    /// more).
    pub(crate) fn forget_task(&self, url: &str, id: &str) {
        let forgotten = self.with(|file| {
            let Some(tasks) = file.tasks.get_mut(url) else {
                return false;
            };
            let forgotten = tasks.remove(id).is_some();
            if tasks.is_empty() {
                file.tasks.remove(url);
            }
            forgotten
        });
        if forgotten {
            self.persist();
        }
    }

    /// Forgets every token for the server at `url`; answers how many sets were dropped.
    pub(crate) fn forget_server(&self, url: &str) -> usize {
        let dropped = self.with(|file| {
            let mut dropped = 0;
            for entry in file.issuers.values_mut() {
                let before = entry.tokens.len();
                entry.tokens.retain(|resource, _| !covers(resource, url));
                dropped += before - entry.tokens.len();
            }
            dropped
        });
        if dropped > 0 {
            self.persist();
        }
        dropped
    }
}

/// The time of day as a Unix time, in seconds.
fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Whether tokens for `resource` serve the server at `url`: the same URL, or one on the same
/// origin whose path is the resource's or below it, segment-wise (the resource rule of RFC
/// 9728 as MCP applies it). Compared as URLs, not as text: a hand-edited resource such as
/// `https:` is a prefix of every HTTPS URL and must serve none of them. A resource that is not
/// a URL, or has a query, serves only that very URL.
fn covers(resource: &str, url: &str) -> bool {
    if resource.trim_end_matches('/') == url.trim_end_matches('/') {
        return true;
    }
    let (Ok(resource), Ok(url)) = (Url::parse(resource), Url::parse(url)) else {
        return false;
    };
    if !resource.has_host()
        || resource.scheme() != url.scheme()
        || resource.host() != url.host()
        || resource.port_or_known_default() != url.port_or_known_default()
        || resource.query().is_some()
        || resource.fragment().is_some()
    {
        return false;
    }
    let parent = resource.path().trim_end_matches('/');
    let child = url.path();
    child.trim_end_matches('/') == parent
        || child
            .strip_prefix(parent)
            .is_some_and(|rest| rest.starts_with('/'))
}

fn write(path: &Path, file: &File) -> std::io::Result<()> {
    let bytes = serde_json::to_vec_pretty(file).map_err(std::io::Error::other)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        create_private_dir(dir)?;
    }
    let temporary = path.with_extension(format!("tmp{}", std::process::id()));
    write_private(&temporary, &bytes)?;
    std::fs::rename(&temporary, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&temporary);
    })
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

#[cfg(unix)]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

#[cfg(not(unix))]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::write(path, bytes)
}

fn method_word(method: TokenEndpointAuth) -> String {
    method.as_str().to_owned()
}

fn source_word(source: ClientSource) -> &'static str {
    match source {
        ClientSource::PreRegistered => "pre-registered",
        ClientSource::MetadataDocument => "metadata-document",
        _ => "registered",
    }
}

impl CredentialStore for FileStore {
    fn client(&self, issuer: &str) -> Option<ClientCredentials> {
        self.with(|file| {
            let client = file.issuers.get(issuer)?.client.as_ref()?;
            Some(ClientCredentials {
                client_id: client.client_id.clone(),
                client_secret: client.client_secret.clone().map(Secret::new),
                auth_method: TokenEndpointAuth::from_wire(&client.auth_method)?,
                redirect_uri: client.redirect_uri.clone(),
                source: match client.source.as_str() {
                    "pre-registered" => ClientSource::PreRegistered,
                    "metadata-document" => ClientSource::MetadataDocument,
                    _ => ClientSource::Registered,
                },
            })
        })
    }

    fn save_client(&self, issuer: &str, client: ClientCredentials) {
        self.with(|file| {
            file.issuers.entry(issuer.to_owned()).or_default().client = Some(Client {
                client_id: client.client_id,
                client_secret: client.client_secret.map(|s| s.expose().to_owned()),
                auth_method: method_word(client.auth_method),
                redirect_uri: client.redirect_uri,
                source: source_word(client.source).to_owned(),
            });
        });
        self.persist();
    }

    fn tokens(&self, issuer: &str, resource: &str) -> Option<TokenSet> {
        let stored = self.with(|file| {
            let tokens = file.issuers.get(issuer)?.tokens.get(resource)?;
            Some((
                tokens.access_token.clone(),
                tokens.refresh_token.clone(),
                tokens.expires_at,
                tokens.scope.clone(),
                tokens.client_id.clone(),
            ))
        })?;
        let (access_token, refresh_token, expires_at, scope, client_id) = stored;
        Some(TokenSet {
            access_token: Secret::new(access_token),
            expires_at: expires_at.and_then(|unix| self.instant(unix)),
            refresh_token: refresh_token.map(Secret::new),
            scope,
            client_id,
        })
    }

    fn save_tokens(&self, issuer: &str, resource: &str, tokens: TokenSet) {
        let expires_at = tokens.expires_at.map(|at| self.unix(at));
        self.with(|file| {
            file.issuers
                .entry(issuer.to_owned())
                .or_default()
                .tokens
                .insert(
                    resource.to_owned(),
                    Tokens {
                        access_token: tokens.access_token.expose().to_owned(),
                        refresh_token: tokens.refresh_token.map(|s| s.expose().to_owned()),
                        expires_at,
                        scope: tokens.scope,
                        client_id: tokens.client_id,
                    },
                );
        });
        self.persist();
    }

    fn forget_tokens(&self, issuer: &str, resource: &str) {
        let dropped = self.with(|file| {
            file.issuers
                .get_mut(issuer)
                .and_then(|entry| entry.tokens.remove(resource))
                .is_some()
        });
        if dropped {
            self.persist();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(expires_in: Option<u64>) -> TokenSet {
        TokenSet {
            access_token: Secret::new("at-1"),
            expires_at: expires_in.map(|s| Instant::now() + Duration::from_secs(s)),
            refresh_token: Some(Secret::new("rt-1")),
            scope: Some("files:read".into()),
            client_id: "client-1".into(),
        }
    }

    #[test]
    fn tokens_survive_a_new_process_and_are_written_private() {
        let dir = std::env::temp_dir().join(format!("mcp-call-store-{}", std::process::id()));
        let path = dir.join("nested").join("credentials.json");
        let store = FileStore::open(&path).unwrap();
        store.save_tokens(
            "https://as.example",
            "https://mcp.example/mcp",
            tokens(Some(3600)),
        );
        let again = FileStore::open(&path).unwrap();
        let kept = again
            .tokens("https://as.example", "https://mcp.example/mcp")
            .unwrap();
        assert_eq!(kept.access_token.expose(), "at-1");
        let left = kept.expires_at.unwrap() - Instant::now();
        assert!(left > Duration::from_secs(3500) && left <= Duration::from_secs(3600));
        assert!(again.token_for("https://mcp.example/mcp").is_some());
        assert!(again.token_for("https://mcp.example/mcp/sub").is_some());
        assert!(again.token_for("https://mcp.example/mcpx").is_none());
        assert!(again.token_for("https://other.example/mcp").is_none());
        assert!(
            again
                .token_for("https://mcp.example/mcp?tenant=a")
                .is_some()
        );
        // A hand-edited resource that is a text prefix of every HTTPS URL serves none.
        again.save_tokens("https://as.example", "https:", tokens(Some(3600)));
        assert!(
            again
                .token_for("https://other.example/mcp")
                .is_none_or(|token| token.resource() != "https:")
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
            let dir_mode = std::fs::metadata(path.parent().unwrap())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(dir_mode & 0o777, 0o700);
        }
        assert_eq!(again.forget_server("https://mcp.example/mcp"), 1);
        let last = FileStore::open(&path).unwrap();
        assert!(
            last.tokens("https://as.example", "https://mcp.example/mcp")
                .is_none()
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_handed_back_task_is_kept_beside_the_tokens_until_it_is_over_or_expired() {
        let dir = std::env::temp_dir().join(format!("mcp-call-store3-{}", std::process::id()));
        let path = dir.join("credentials.json");
        let store = FileStore::open(&path).unwrap();
        store.save_tokens(
            "https://as.example",
            "https://mcp.example/mcp",
            tokens(None),
        );
        let handle = |id: &str, era, ttl| TaskHandle {
            server: "mcp.example".into(),
            task_id: id.into(),
            era,
            ttl,
            status: mcp_proto::task::TaskStatus::Working,
            status_message: None,
            session_id: (era == TaskEra::Legacy).then(|| "session-9".to_owned()),
            tool: Some("slow".to_owned()),
        };
        let url = "https://mcp.example/mcp";
        store.remember_task(url, &handle("t-1", TaskEra::Modern, None));
        store.remember_task(
            url,
            &handle("t-2", TaskEra::Legacy, Some(Duration::from_secs(60))),
        );
        // An expired one (a TTL of zero) is not offered.
        store.remember_task(url, &handle("t-3", TaskEra::Modern, Some(Duration::ZERO)));
        let again = FileStore::open(&path).unwrap();
        let slow = Some("slow".to_owned());
        assert_eq!(
            again.task(url, "t-1"),
            Some((TaskEra::Modern, None, slow.clone()))
        );
        let legacy = Some((TaskEra::Legacy, Some("session-9".to_owned()), slow));
        assert_eq!(again.task(url, "t-2"), legacy);
        assert_eq!(again.task(url, "t-3"), None);
        assert_eq!(again.task("https://other.example/mcp", "t-1"), None);
        again.forget_task(url, "t-1");
        let last = FileStore::open(&path).unwrap();
        assert_eq!(last.task(url, "t-1"), None);
        assert_eq!(last.task(url, "t-2"), legacy);
        // The tokens beside them are untouched.
        assert!(last.token_for(url).is_some());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_expired_token_is_not_presented_and_a_broken_file_names_no_content() {
        let dir = std::env::temp_dir().join(format!("mcp-call-store2-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("credentials.json");
        let store = FileStore::open(&path).unwrap();
        store.save_tokens(
            "https://as.example",
            "https://mcp.example/mcp",
            tokens(Some(0)),
        );
        assert!(store.token_for("https://mcp.example/mcp").is_none());
        // A hand-edited expiry beyond what the clock represents: read, not a panic.
        std::fs::write(
            &path,
            br#"{"issuers": {"https://as.example": {"tokens": {"https://mcp.example/mcp":
                {"access_token": "at-9", "expires_at": 18446744073709551615, "client_id": "c"}}}}}"#,
        )
        .unwrap();
        let far = FileStore::open(&path).unwrap();
        let kept = far
            .tokens("https://as.example", "https://mcp.example/mcp")
            .unwrap();
        assert_eq!(kept.access_token.expose(), "at-9");
        assert!(far.token_for("https://mcp.example/mcp").is_some());
        std::fs::write(&path, br#"{"issuers": {"x": "secret-value"#).unwrap();
        let err = FileStore::open(&path).unwrap_err();
        assert!(
            err.contains("line 1") && !err.contains("secret-value"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
