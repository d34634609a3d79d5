//! Either driver behind one face, so every command runs the same way on both.

use clap::ValueEnum;
use mcp_proto::{Action, Error, Outcome, SessionConfig};

use crate::report::Reporter;

/// Which driver runs the operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum DriverKind {
    /// mcp-driver-blocking (ureq 3).
    Blocking,
    /// mcp-driver-tokio (hyper), on a current-thread runtime.
    Tokio,
}

impl DriverKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Blocking => "blocking",
            Self::Tokio => "tokio",
        }
    }
}

// One per process: the difference in size between the variants does not matter.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Client {
    Blocking(mcp_driver_blocking::Client),
    Tokio(tokio::runtime::Runtime, mcp_driver_tokio::Client),
}

/// Fires whichever driver's cancel handle.
#[derive(Clone)]
pub(crate) enum Cancel {
    Blocking(mcp_driver_blocking::CancelHandle),
    Tokio(mcp_driver_tokio::CancelHandle),
}

impl Cancel {
    pub(crate) fn cancel(&self) {
        match self {
            Self::Blocking(handle) => handle.cancel(),
            Self::Tokio(handle) => handle.cancel(),
        }
    }
}

impl Client {
    pub(crate) fn new(
        kind: DriverKind,
        config: SessionConfig,
        network: &mcp_proto::Network,
        reporter: Reporter,
    ) -> std::io::Result<Self> {
        let unusable = |err: mcp_proto::Error| std::io::Error::other(err.to_string());
        Ok(match kind {
            DriverKind::Blocking => {
                let client =
                    mcp_driver_blocking::Client::with_network(config, network).map_err(unusable)?;
                client.set_observer(reporter);
                Self::Blocking(client)
            }
            DriverKind::Tokio => {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?;
                // The hyper client needs a runtime context when it is built.
                let client = runtime
                    .block_on(async { mcp_driver_tokio::Client::with_network(config, network) })
                    .map_err(unusable)?;
                client.set_observer(reporter);
                Self::Tokio(runtime, client)
            }
        })
    }

    /// Lets the browser step of an authorization go through `loopback` (`login`).
    pub(crate) fn set_authorizer(&mut self, loopback: crate::login::Loopback) {
        match self {
            Self::Blocking(client) => client.set_authorizer(loopback),
            Self::Tokio(_, client) => client.set_authorizer(loopback),
        }
    }

    /// Presents `token` from the first request on.
    pub(crate) fn set_token(&mut self, token: mcp_proto::mcp_auth::AccessToken) {
        match self {
            Self::Blocking(client) => client.set_token(token),
            Self::Tokio(_, client) => client.set_token(token),
        }
    }

    /// Whether the session holds a token (an authorization happened, or one was presented).
    pub(crate) fn has_token(&self) -> bool {
        match self {
            Self::Blocking(client) => client.session().token().is_some(),
            Self::Tokio(_, client) => client.session().token().is_some(),
        }
    }

    pub(crate) fn cancel_handle(&self) -> Cancel {
        match self {
            Self::Blocking(client) => Cancel::Blocking(client.cancel_handle()),
            Self::Tokio(_, client) => Cancel::Tokio(client.cancel_handle()),
        }
    }

    /// Ends the session on the server (a DELETE under the close's own small budget; nothing
    /// is sent without a live session id, as in the modern era).
    pub(crate) fn close(&mut self) -> Result<(), Error> {
        match self {
            Self::Blocking(client) => client.close(),
            Self::Tokio(runtime, client) => runtime.block_on(client.close()),
        }
    }

    /// Runs `action` as one operation under the configured budget.
    pub(crate) fn run(&mut self, action: Action) -> Result<Outcome, Error> {
        match self {
            Self::Blocking(client) => {
                let budget = client.session().config().budget();
                client.run(action, budget)
            }
            Self::Tokio(runtime, client) => {
                let budget = client.session().config().budget();
                runtime.block_on(client.run(action, budget))
            }
        }
    }
}
