//! The randomness seam: [`Entropy`], and what the flow draws from it (PKCE, `state`).
//!
//! The flow never reads the OS random source: a driver passes an [`Entropy`] to every
//! [`AuthFlow::poll`](crate::AuthFlow::poll), filled from the OS (`getrandom`) in production
//! and from a fixed sequence in tests. This module must never read a random source itself.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use crate::secret::Secret;

/// A source of random bytes. Production drivers fill `buf` from the operating system's CSPRNG;
/// the PKCE verifier and `state` are only as unguessable as this source.
pub trait Entropy {
    /// Fills the whole of `buf` with random bytes.
    fn fill(&mut self, buf: &mut [u8]);
}

/// Random bytes behind a PKCE verifier: 32 bytes give 43 base64url characters (RFC 7636 4.1
/// asks for 43 to 128).
const VERIFIER_BYTES: usize = 32;
/// Random bytes behind `state`: 128 bits.
const STATE_BYTES: usize = 16;

/// A PKCE pair (RFC 7636, method `S256`).
pub(crate) struct Pkce {
    /// Sent with the code to the token endpoint.
    pub(crate) verifier: Secret,
    /// `BASE64URL(SHA256(verifier))`, sent in the authorization URL.
    pub(crate) challenge: String,
}

impl Pkce {
    pub(crate) fn generate(entropy: &mut dyn Entropy) -> Self {
        let mut bytes = [0u8; VERIFIER_BYTES];
        entropy.fill(&mut bytes);
        let verifier = URL_SAFE_NO_PAD.encode(bytes);
        let challenge = s256(&verifier);
        Self {
            verifier: Secret::new(verifier),
            challenge,
        }
    }
}

/// The `S256` code challenge of a verifier.
pub(crate) fn s256(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// A fresh `state` value: 128 random bits, base64url.
pub(crate) fn state(entropy: &mut dyn Entropy) -> String {
    let mut bytes = [0u8; STATE_BYTES];
    entropy.fill(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Counting(u8);
    impl Entropy for Counting {
        fn fill(&mut self, buf: &mut [u8]) {
            for byte in buf {
                *byte = self.0;
                self.0 = self.0.wrapping_add(1);
            }
        }
    }

    #[test]
    fn the_verifier_has_43_unreserved_characters_and_its_s256_challenge() {
        let pkce = Pkce::generate(&mut Counting(0));
        let verifier = pkce.verifier.expose();
        assert_eq!(verifier.len(), 43);
        assert!(
            verifier
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-._~".contains(c))
        );
        assert_eq!(pkce.challenge, s256(verifier));
    }

    #[test]
    fn s256_matches_rfc_7636_appendix_b() {
        assert_eq!(
            s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn state_draws_fresh_bytes_each_time() {
        let mut entropy = Counting(7);
        let first = state(&mut entropy);
        let second = state(&mut entropy);
        assert_eq!(first.len(), 22);
        assert_ne!(first, second);
    }
}
