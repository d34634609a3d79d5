//! [`CredentialStore`]: what a client keeps between flows, keyed by issuer.
//!
//! Client registrations are kept per authorization server (its exact `issuer` string) and
//! tokens per issuer and resource, so nothing one authorization server issued is ever offered
//! to another, and a token is only presented for the resource it was asked for. The store is
//! shared (`Arc`) and called with `&self`: an implementation brings its own interior
//! mutability (the in-memory [`MemoryStore`] uses a mutex; a keyring or file store its own
//! locking). This module must never log or print a credential.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use crate::config::TokenEndpointAuth;
use crate::secret::Secret;

/// How a client id was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientSource {
    /// Issued out of band and configured.
    PreRegistered,
    /// A Client ID Metadata Document URL used as the client id.
    MetadataDocument,
    /// Dynamic Client Registration (RFC 7591).
    Registered,
}

/// A client identity at one authorization server. `Debug` shows no secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientCredentials {
    /// The client id.
    pub client_id: String,
    /// The client secret, for a confidential client.
    pub client_secret: Option<Secret>,
    /// How the client authenticates at the token endpoint.
    pub auth_method: TokenEndpointAuth,
    /// The redirect URI it was registered with (a registration for another one is not reused).
    pub redirect_uri: String,
    /// How it was obtained.
    pub source: ClientSource,
}

/// The tokens one authorization server issued for one resource. `Debug` shows no token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenSet {
    /// The access token.
    pub access_token: Secret,
    /// When it expires (from `expires_in`, read at the `now` of the poll that took it in).
    pub expires_at: Option<Instant>,
    /// The refresh token, if one was issued.
    pub refresh_token: Option<Secret>,
    /// The scope granted (the response's `scope`, else the scope that was asked for).
    pub scope: Option<String>,
    /// The client id the tokens were issued to (a refresh must come from the same client).
    pub client_id: String,
}

/// What a flow asks its client to remember or forget, handed out by
/// [`AuthFlow::take_changes`](crate::AuthFlow::take_changes) instead of written from inside
/// the flow: the caller applies it to its [`CredentialStore`] outside any poll
/// ([`apply_to`](Self::apply_to)), so a store that persists (a file, a keyring) never does
/// I/O inside the state machine. `Debug` shows no secret.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CredentialChange {
    /// Keep this client, registered (or configured) at `issuer`, replacing any earlier one.
    Client {
        /// The authorization server's issuer.
        issuer: String,
        /// The client.
        client: ClientCredentials,
    },
    /// Keep these tokens `issuer` issued for `resource`, replacing any earlier ones.
    Tokens {
        /// The authorization server's issuer.
        issuer: String,
        /// The resource they are for.
        resource: String,
        /// The tokens.
        tokens: TokenSet,
    },
    /// Forget the tokens `issuer` issued for `resource` (a refresh token the server no longer
    /// accepts).
    ForgetTokens {
        /// The authorization server's issuer.
        issuer: String,
        /// The resource they were for.
        resource: String,
    },
}

impl CredentialChange {
    /// Writes the change to `store`.
    pub fn apply_to(self, store: &dyn CredentialStore) {
        match self {
            Self::Client { issuer, client } => store.save_client(&issuer, client),
            Self::Tokens {
                issuer,
                resource,
                tokens,
            } => store.save_tokens(&issuer, &resource, tokens),
            Self::ForgetTokens { issuer, resource } => store.forget_tokens(&issuer, &resource),
        }
    }
}

/// Where a client keeps registrations and tokens between flows.
///
/// Keys are compared exactly: `issuer` is the authorization server's issuer string as its
/// metadata gives it, `resource` the Protected Resource Metadata's `resource` (or, for a
/// 2025-03-26 server, its URL). Implementations must keep entries of one issuer away from
/// every other issuer. The methods cannot fail: a store that cannot persist keeps the value for
/// this process and reports through its own channel.
///
/// A flow only **reads** the store, from inside its poll: `client` and `tokens` must answer
/// from what the store holds in memory, never wait on a disk or a network. The writes come out
/// of the flow as [`CredentialChange`]s, which the caller applies (the `save_*` and
/// `forget_tokens` methods) outside any poll.
pub trait CredentialStore: Send + Sync {
    /// The client registered at `issuer`, if any.
    fn client(&self, issuer: &str) -> Option<ClientCredentials>;
    /// Keeps a client registered at `issuer` (replacing any earlier one).
    fn save_client(&self, issuer: &str, client: ClientCredentials);
    /// The tokens `issuer` issued for `resource`, if any.
    fn tokens(&self, issuer: &str, resource: &str) -> Option<TokenSet>;
    /// Keeps tokens (replacing any earlier ones for the pair).
    fn save_tokens(&self, issuer: &str, resource: &str, tokens: TokenSet);
    /// Drops the tokens for the pair (a refresh token the server no longer accepts).
    fn forget_tokens(&self, issuer: &str, resource: &str);
}

#[derive(Default)]
struct IssuerEntry {
    client: Option<ClientCredentials>,
    tokens: HashMap<String, TokenSet>,
}

/// A [`CredentialStore`] in memory, for one process. `Debug` lists issuers only.
#[derive(Default)]
pub struct MemoryStore {
    issuers: Mutex<HashMap<String, IssuerEntry>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn with<T>(&self, f: impl FnOnce(&mut HashMap<String, IssuerEntry>) -> T) -> T {
        // A panic elsewhere while holding the lock leaves plain data behind: keep using it.
        let mut guard = self
            .issuers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut guard)
    }
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut issuers = self.with(|map| map.keys().cloned().collect::<Vec<_>>());
        issuers.sort();
        f.debug_struct("MemoryStore")
            .field("issuers", &issuers)
            .finish()
    }
}

impl CredentialStore for MemoryStore {
    fn client(&self, issuer: &str) -> Option<ClientCredentials> {
        self.with(|map| map.get(issuer).and_then(|entry| entry.client.clone()))
    }

    fn save_client(&self, issuer: &str, client: ClientCredentials) {
        self.with(|map| map.entry(issuer.to_owned()).or_default().client = Some(client));
    }

    fn tokens(&self, issuer: &str, resource: &str) -> Option<TokenSet> {
        self.with(|map| {
            map.get(issuer)
                .and_then(|entry| entry.tokens.get(resource).cloned())
        })
    }

    fn save_tokens(&self, issuer: &str, resource: &str, tokens: TokenSet) {
        self.with(|map| {
            map.entry(issuer.to_owned())
                .or_default()
                .tokens
                .insert(resource.to_owned(), tokens);
        });
    }

    fn forget_tokens(&self, issuer: &str, resource: &str) {
        self.with(|map| {
            if let Some(entry) = map.get_mut(issuer) {
                entry.tokens.remove(resource);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(id: &str) -> ClientCredentials {
        ClientCredentials {
            client_id: id.into(),
            client_secret: Some(Secret::new("client-secret-value")),
            auth_method: TokenEndpointAuth::ClientSecretBasic,
            redirect_uri: "http://localhost/cb".into(),
            source: ClientSource::Registered,
        }
    }

    #[test]
    fn entries_are_kept_per_issuer_exactly() {
        let store = MemoryStore::new();
        store.save_client("https://as1.example", client("one"));
        assert_eq!(
            store.client("https://as1.example").unwrap().client_id,
            "one"
        );
        assert_eq!(store.client("https://as2.example"), None);
        assert_eq!(store.client("https://as1.example/"), None);
    }

    #[test]
    fn tokens_are_kept_per_issuer_and_resource() {
        let store = MemoryStore::new();
        let tokens = TokenSet {
            access_token: Secret::new("access-token-value"),
            expires_at: None,
            refresh_token: Some(Secret::new("refresh-token-value")),
            scope: Some("a".into()),
            client_id: "one".into(),
        };
        store.save_tokens(
            "https://as1.example",
            "https://r.example/mcp",
            tokens.clone(),
        );
        assert_eq!(
            store.tokens("https://as1.example", "https://r.example/mcp"),
            Some(tokens)
        );
        assert_eq!(
            store.tokens("https://as1.example", "https://r.example"),
            None
        );
        assert_eq!(
            store.tokens("https://as2.example", "https://r.example/mcp"),
            None
        );
        store.forget_tokens("https://as1.example", "https://r.example/mcp");
        assert_eq!(
            store.tokens("https://as1.example", "https://r.example/mcp"),
            None
        );
    }

    #[test]
    fn debug_shows_no_credential() {
        let store = MemoryStore::new();
        store.save_client("https://as1.example", client("one"));
        store.save_tokens(
            "https://as1.example",
            "r",
            TokenSet {
                access_token: Secret::new("access-token-value"),
                expires_at: None,
                refresh_token: Some(Secret::new("refresh-token-value")),
                scope: None,
                client_id: "one".into(),
            },
        );
        let text = format!("{store:?} {:?}", store.client("https://as1.example"));
        assert!(text.contains("https://as1.example"));
        for secret in [
            "client-secret-value",
            "access-token-value",
            "refresh-token-value",
        ] {
            assert!(!text.contains(secret), "{text}");
        }
    }
}
