//! The JWTs this client signs: ES256 keys ([`PrivateKey`]), client assertions
//! (`private_key_jwt`, RFC 7523 2.2) and DPoP proofs (RFC 9449 4).
//!
//! Signing is P-256 ECDSA from RustCrypto (`p256`), deterministic (RFC 6979): nothing here
//! reads a random source or a clock. A DPoP key is drawn from the flow's [`Entropy`], and
//! `iat`, `exp` and `jti` come from the caller's time of day and entropy. This module must never
//! put a private key, an assertion or a token anywhere but the JWT it returns: keys have a
//! redacting `Debug` and no `Display`, and no error carries key material.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::Method;
use p256::ecdsa::signature::Signer as _;
use p256::ecdsa::{Signature, SigningKey};
use p256::pkcs8::DecodePrivateKey as _;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use url::Url;

use crate::entropy::Entropy;
use crate::error::AuthError;
use crate::secret::Secret;

/// How long a client assertion is valid: five minutes from its `iat`.
const ASSERTION_LIFETIME_SECS: u64 = 300;
/// Random bytes behind a `jti`: 128 bits.
const JTI_BYTES: usize = 16;
/// Draws of 32 bytes tried for a DPoP key before giving up. A uniform source lands outside
/// the P-256 scalar range with probability about 2^-32 per draw; only a broken source (all
/// zeros, all ones) exhausts this.
const KEY_DRAWS: usize = 16;

/// A P-256 private key that signs ES256 JWTs, e.g. `private_key_jwt` client assertions.
///
/// `Debug` shows only that it is a key; it has no `Display`. The scalar is zeroed on drop.
#[derive(Clone)]
pub struct PrivateKey(Arc<SigningKey>);

impl PrivateKey {
    /// A key from a PKCS#8 PEM document (`-----BEGIN PRIVATE KEY-----`, as `openssl genpkey` or
    /// `jose.exportPKCS8` write it) holding a P-256 key. Anything else is
    /// [`AuthError::InvalidConfig`], without any of the text.
    pub fn from_pkcs8_pem(pem: &str) -> Result<Self, AuthError> {
        SigningKey::from_pkcs8_pem(pem.trim())
            .map(|key| Self(Arc::new(key)))
            .map_err(|_| AuthError::InvalidConfig {
                what: "private key",
                detail: "not a PKCS#8 PEM document holding a P-256 (ES256) private key".into(),
            })
    }

    /// A fresh key whose scalar is drawn from `entropy` (a draw outside the curve's scalar range
    /// is drawn again). Fails only when the source gives no usable draw.
    pub(crate) fn generate(entropy: &mut dyn Entropy) -> Result<Self, AuthError> {
        for _ in 0..KEY_DRAWS {
            let mut bytes = [0u8; 32];
            entropy.fill(&mut bytes);
            if let Ok(key) = SigningKey::from_slice(&bytes) {
                bytes.fill(0);
                return Ok(Self(Arc::new(key)));
            }
        }
        Err(AuthError::InvalidConfig {
            what: "entropy source",
            detail: format!("{KEY_DRAWS} draws gave no usable P-256 key; the source is broken"),
        })
    }

    /// The public key as a JWK (RFC 7517, 7518 6.2): `crv`, `kty`, `x`, `y`, no private part.
    pub(crate) fn public_jwk(&self) -> Value {
        let point = self.0.verifying_key().to_sec1_point(false);
        let coordinate = |c: Option<&[u8]>| URL_SAFE_NO_PAD.encode(c.unwrap_or_default());
        json!({
            "crv": "P-256",
            "kty": "EC",
            "x": coordinate(point.x().map(|x| x.as_slice())),
            "y": coordinate(point.y().map(|y| y.as_slice())),
        })
    }

    /// The compact JWS of `claims` under `header` (which must name `alg: ES256`).
    fn sign(&self, header: &Value, claims: &Value) -> String {
        let encode = |value: &Value| URL_SAFE_NO_PAD.encode(value.to_string());
        let input = format!("{}.{}", encode(header), encode(claims));
        let signature: Signature = self.0.sign(input.as_bytes());
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature.to_bytes()))
    }
}

impl PartialEq for PrivateKey {
    fn eq(&self, other: &Self) -> bool {
        // The public halves decide: equal public keys mean equal private keys.
        self.0.verifying_key() == other.0.verifying_key()
    }
}

impl Eq for PrivateKey {}

impl std::fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PrivateKey(ES256, redacted)")
    }
}

/// Seconds since the Unix epoch at `wall` (0 before it).
fn epoch_seconds(wall: SystemTime) -> u64 {
    wall.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A fresh `jti`: 128 random bits, base64url.
fn jti(entropy: &mut dyn Entropy) -> String {
    let mut bytes = [0u8; JTI_BYTES];
    entropy.fill(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// A `private_key_jwt` client assertion (RFC 7523 2.2, 3): `iss` and `sub` the client id, `aud`
/// the authorization server's issuer, valid five minutes from `wall`, a fresh `jti`.
pub(crate) fn client_assertion(
    key: &PrivateKey,
    client_id: &str,
    audience: &str,
    wall: SystemTime,
    entropy: &mut dyn Entropy,
) -> Secret {
    let iat = epoch_seconds(wall);
    let header = json!({"alg": "ES256", "typ": "JWT"});
    let claims = json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": iat,
        "exp": iat.saturating_add(ASSERTION_LIFETIME_SECS),
        "jti": jti(entropy),
    });
    Secret::new(key.sign(&header, &claims))
}

/// The `htu` of a request to `url`: the URL without its query and fragment (RFC 9449 4.2).
pub(crate) fn htu(url: &Url) -> String {
    let mut url = url.clone();
    url.set_query(None);
    url.set_fragment(None);
    url.into()
}

/// `ath`: base64url(SHA-256(access token)) (RFC 9449 4.2).
pub(crate) fn ath(access_token: &Secret) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(access_token.expose().as_bytes()))
}

/// What a DPoP proof is for.
pub(crate) struct ProofTarget<'a> {
    pub(crate) method: &'a Method,
    pub(crate) url: &'a Url,
    /// The token presented with the request (a resource request), hashed into `ath`.
    pub(crate) access_token: Option<&'a Secret>,
    /// The server's last `DPoP-Nonce`.
    pub(crate) nonce: Option<&'a str>,
}

/// A DPoP proof (RFC 9449 4.2): header `typ: dpop+jwt`, `alg: ES256`, the public `jwk`; claims
/// `jti`, `htm`, `htu`, `iat`, and `ath` and `nonce` when given.
pub(crate) fn dpop_proof(
    key: &PrivateKey,
    target: &ProofTarget<'_>,
    wall: SystemTime,
    entropy: &mut dyn Entropy,
) -> String {
    let header = json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": key.public_jwk()});
    let mut claims = json!({
        "jti": jti(entropy),
        "htm": target.method.as_str(),
        "htu": htu(target.url),
        "iat": epoch_seconds(wall),
    });
    if let Some(token) = target.access_token {
        claims["ath"] = json!(ath(token));
    }
    if let Some(nonce) = target.nonce {
        claims["nonce"] = json!(nonce);
    }
    key.sign(&header, &claims)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use p256::ecdsa::VerifyingKey;
    use p256::ecdsa::signature::Verifier as _;

    /// A PKCS#8 P-256 key made with `openssl genpkey -algorithm EC -pkeyopt
    /// ec_paramgen_curve:P-256`, for tests only.
    pub(crate) const TEST_PEM: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg5MXTXZNkXXpNYYjP
LcNmirxC6hkRWUAPqzxO0+G+Lt2hRANCAARupOc0sqjDP9FYGsigT3zLKdr6BU7Q
NzTDMZmzfZgeshigTVWYO9pq/7RN4OUjarfgZjycesei21hDS/FWuShq
-----END PRIVATE KEY-----
";
    /// Its public point, uncompressed (`openssl pkey -pubout`).
    const TEST_PUBLIC: &str = "046ea4e734b2a8c33fd1581ac8a04f7ccb29dafa054ed03734c33199b37d981eb218a04d55983bda6affb44de0e5236ab7e0663c9c7ac7a2db58434bf156b9286a";

    pub(crate) struct Counting(pub(crate) u8);
    impl Entropy for Counting {
        fn fill(&mut self, buf: &mut [u8]) {
            for byte in buf {
                self.0 = self.0.wrapping_add(1);
                *byte = self.0;
            }
        }
    }

    /// Splits a compact JWS, checks its ES256 signature against `jwk`-less `key` (or the
    /// header's `jwk`), and returns header and claims.
    pub(crate) fn verify(jwt: &str, key: Option<&VerifyingKey>) -> (Value, Value) {
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let decode = |part: &str| -> Value {
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
        };
        let header = decode(parts[0]);
        let claims = decode(parts[1]);
        assert_eq!(header["alg"], "ES256");
        let from_jwk;
        let key = match key {
            Some(key) => key,
            None => {
                let jwk = &header["jwk"];
                let coordinate =
                    |name: &str| URL_SAFE_NO_PAD.decode(jwk[name].as_str().unwrap()).unwrap();
                let mut sec1 = vec![4u8];
                sec1.extend(coordinate("x"));
                sec1.extend(coordinate("y"));
                from_jwk = VerifyingKey::from_sec1_bytes(&sec1).unwrap();
                &from_jwk
            }
        };
        let signature = Signature::from_slice(&URL_SAFE_NO_PAD.decode(parts[2]).unwrap()).unwrap();
        key.verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature)
            .expect("the signature verifies");
        (header, claims)
    }

    fn wall() -> SystemTime {
        UNIX_EPOCH + std::time::Duration::from_secs(1_800_000_000)
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn a_pkcs8_pem_key_reads_and_its_jwk_is_its_public_point() {
        let key = PrivateKey::from_pkcs8_pem(TEST_PEM).unwrap();
        let jwk = key.public_jwk();
        let x = URL_SAFE_NO_PAD.decode(jwk["x"].as_str().unwrap()).unwrap();
        let y = URL_SAFE_NO_PAD.decode(jwk["y"].as_str().unwrap()).unwrap();
        assert_eq!(format!("04{}{}", hex(&x), hex(&y)), TEST_PUBLIC);
        assert_eq!(jwk["kty"], "EC");
        assert_eq!(jwk["crv"], "P-256");
        assert!(jwk.get("d").is_none());
    }

    #[test]
    fn a_bad_pem_is_a_config_error_that_quotes_nothing() {
        let broken = TEST_PEM.replace("MIGH", "MIGX");
        for bad in ["", "not a key", &broken] {
            let error = PrivateKey::from_pkcs8_pem(bad).unwrap_err();
            assert!(matches!(error, AuthError::InvalidConfig { .. }));
            let text = format!("{error} {error:?}");
            assert!(!text.contains("MIG"), "{text}");
        }
    }

    #[test]
    fn debug_shows_no_key_material() {
        let key = PrivateKey::from_pkcs8_pem(TEST_PEM).unwrap();
        assert_eq!(format!("{key:?}"), "PrivateKey(ES256, redacted)");
    }

    #[test]
    fn client_assertions_are_signed_with_the_rfc_7523_claims() {
        let key = PrivateKey::from_pkcs8_pem(TEST_PEM).unwrap();
        let assertion = client_assertion(
            &key,
            "client-1",
            "https://as.example",
            wall(),
            &mut Counting(0),
        );
        let (header, claims) = verify(assertion.expose(), Some(key.0.verifying_key()));
        assert_eq!(header, json!({"alg": "ES256", "typ": "JWT"}));
        assert_eq!(claims["iss"], "client-1");
        assert_eq!(claims["sub"], "client-1");
        assert_eq!(claims["aud"], "https://as.example");
        assert_eq!(claims["iat"], 1_800_000_000u64);
        assert_eq!(claims["exp"], 1_800_000_300u64);
        assert_eq!(claims["jti"].as_str().unwrap().len(), 22);
    }

    #[test]
    fn keys_are_drawn_again_when_out_of_range() {
        struct Script(Vec<u8>);
        impl Entropy for Script {
            fn fill(&mut self, buf: &mut [u8]) {
                for byte in buf {
                    *byte = self.0.pop().unwrap_or(7);
                }
            }
        }
        // 64 bytes of 0xff: two draws at or above the group order; then 7s.
        let mut entropy = Script(vec![0xff; 64]);
        let key = PrivateKey::generate(&mut entropy).unwrap();
        assert_eq!(key.0.to_bytes().as_slice(), &[7u8; 32]);
        struct Zeros;
        impl Entropy for Zeros {
            fn fill(&mut self, buf: &mut [u8]) {
                buf.fill(0);
            }
        }
        assert!(matches!(
            PrivateKey::generate(&mut Zeros),
            Err(AuthError::InvalidConfig { .. })
        ));
    }

    #[test]
    fn dpop_proofs_carry_the_public_jwk_and_the_rfc_9449_claims() {
        let key = PrivateKey::generate(&mut Counting(0)).unwrap();
        let url = Url::parse("https://rs.example/mcp?x=1#frag").unwrap();
        let token = Secret::new("at-1");
        let mut entropy = Counting(100);
        let proof = dpop_proof(
            &key,
            &ProofTarget {
                method: &Method::POST,
                url: &url,
                access_token: Some(&token),
                nonce: Some("n-1"),
            },
            wall(),
            &mut entropy,
        );
        let (header, claims) = verify(&proof, None);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["jwk"], key.public_jwk());
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://rs.example/mcp");
        assert_eq!(claims["iat"], 1_800_000_000u64);
        assert_eq!(claims["nonce"], "n-1");
        // RFC 9449 7.1's example: ath of the token "Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU".
        assert_eq!(
            ath(&Secret::new("Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU")),
            "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo"
        );
        assert_eq!(claims["ath"], ath(&token));
        let again = dpop_proof(
            &key,
            &ProofTarget {
                method: &Method::GET,
                url: &url,
                access_token: None,
                nonce: None,
            },
            wall(),
            &mut entropy,
        );
        let (_, second) = verify(&again, None);
        assert_ne!(second["jti"], claims["jti"]);
        assert!(second.get("ath").is_none() && second.get("nonce").is_none());
    }
}
