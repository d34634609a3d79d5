//! [`OAuth`]: how a session authorizes when its server asks.
//!
//! The flow itself is `mcp-auth`'s ([`mcp_auth::AuthFlow`]); the operation runs it as legs
//! (see the operation's `authorize` module). This module only holds the settings: who the
//! client is ([`mcp_auth::ClientConfig`]) and where registrations and tokens are kept
//! ([`mcp_auth::CredentialStore`], in memory by default). It must never hold a token of its
//! own: tokens live in the store and in the [`Session`](crate::Session).

use std::sync::Arc;

use mcp_auth::{ClientConfig, CredentialStore, MemoryStore};

/// How a session authorizes with OAuth 2.1 when its server asks.
///
/// ```
/// use mcp_proto::{OAuth, SessionConfig};
/// use mcp_auth::ClientConfig;
///
/// let client = ClientConfig::new("http://127.0.0.1:8976/callback")?.with_client_name("agent");
/// let config = SessionConfig::new("https://mcp.example.com/mcp")?.with_oauth(OAuth::new(client));
/// assert!(config.oauth().is_some());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct OAuth {
    client: ClientConfig,
    store: Arc<dyn CredentialStore>,
}

impl OAuth {
    /// Authorize as `client`, keeping registrations and tokens in memory for this process.
    pub fn new(client: ClientConfig) -> Self {
        Self {
            client,
            store: Arc::new(MemoryStore::new()),
        }
    }

    /// Keeps registrations and tokens in `store` (a file, a keyring) instead.
    ///
    /// The operation only reads the store inside its poll (from memory: see
    /// [`CredentialStore`]); what an authorization obtains or spends comes out as an
    /// [`Output::Update`](crate::driver::Output::Update), and the store is written when the driver
    /// applies it ([`Session::apply`](crate::Session::apply)), outside any poll.
    pub fn with_store(mut self, store: Arc<dyn CredentialStore>) -> Self {
        self.store = store;
        self
    }

    /// Who the client is.
    pub fn client(&self) -> &ClientConfig {
        &self.client
    }

    /// Where registrations and tokens are kept.
    pub fn store(&self) -> &Arc<dyn CredentialStore> {
        &self.store
    }
}

impl std::fmt::Debug for OAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth")
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}
