//! [`Secret`]: a string that must never reach a log line.
//!
//! Access tokens, refresh tokens, client secrets, authorization codes, PKCE verifiers, client
//! assertions, ID tokens and ID-JAGs are kept in this type. Its `Debug` prints a fixed placeholder and it has no `Display`: reading
//! the value takes an explicit [`Secret::expose`]. This module must never format the inner
//! string anywhere.

use std::fmt;

/// A credential: its `Debug` never shows it, and it has no `Display`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a credential.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The credential itself: put it on the wire, never in a message.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(redacted)")
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Self(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Self(value.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::Secret;

    #[test]
    fn debug_never_shows_the_value() {
        let secret = Secret::new("hunter2");
        assert_eq!(format!("{secret:?}"), "Secret(redacted)");
        assert_eq!(format!("{secret:#?}"), "Secret(redacted)");
        assert_eq!(secret.expose(), "hunter2");
    }
}
