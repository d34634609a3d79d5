//! The protocol eras and versions the test server speaks: which revisions a script may
//! choose between. A leaf: the script, the dispatch and the era rules read it, and it must
//! never need any of them.

/// Protocol versions the server knows, newest first.
pub const SUPPORTED_VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];
/// The modern versions the server speaks.
pub const MODERN_VERSIONS: [&str; 1] = ["2026-07-28"];

/// Which era(s) the server speaks (see [`Script::era`](crate::Script::era)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ServerEra {
    /// The `initialize` handshake and sessions only (the default): a modern request has no
    /// session and is refused with `400` (`-32000`, "missing session id") like the TypeScript
    /// SDK's server does.
    #[default]
    Legacy,
    /// The stateless revision only: `initialize` is refused with `400` and `-32022` naming the
    /// supported versions, a request without the modern headers with `400` and `-32020`, GET and
    /// DELETE with `405`.
    Modern,
    /// Both: a request carrying the modern metadata is served statelessly, anything else as a
    /// legacy server would.
    Dual,
}
