//! What the client trusts: the rustls configuration built from a [`Network`], and the typed
//! reading of a TLS failure. Both drivers use it: they verify alike and say the same words.
//!
//! * **The operating system's trust store** (feature `platform-verifier`, on by default):
//!   `rustls-platform-verifier`, which asks the platform's own verifier on macOS, Windows,
//!   iOS and Android, and on Linux and the BSDs verifies with webpki against the system's CA
//!   bundle (`rustls-native-certs`, which itself honours `SSL_CERT_FILE` and `SSL_CERT_DIR`).
//! * **Added CAs**: [`Network::with_root_pem`], [`Network::with_root_pem_file`], and the
//!   certificates in the files `SSL_CERT_FILE` and `SSL_CERT_DIR` name (read through the
//!   network's lookup, on every platform: where the platform verifier does not read them,
//!   they are honoured here).
//! * **Fallback** (feature `webpki-roots`): Mozilla's roots compiled in, used when the
//!   platform verifier is off or this machine has no trust store. With neither, only the
//!   added CAs are trusted (and, with none, every certificate is refused as from an unknown
//!   issuer).

use std::path::Path;
use std::sync::Arc;

use crate::network::{AddedRoots, Network};
use mcp_proto::{Error, TlsProblem};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};

/// The rustls configuration for `network`: TLS 1.2 and 1.3 with the ring provider, verified
/// as the [module docs](self) say.
///
/// # Errors
/// [`Error::InvalidCertificates`] when a CA the caller added cannot be read or holds no
/// certificate (CAs named by `SSL_CERT_FILE`/`SSL_CERT_DIR` that cannot be read are skipped).
pub fn client_config(network: &Network) -> Result<Arc<ClientConfig>, Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = verifier_for(network, &provider)?;
    Ok(config_with(provider, verifier))
}

/// TLS 1.2 and 1.3 with `provider`, servers verified by `verifier`, no client certificate.
fn config_with(
    provider: Arc<CryptoProvider>,
    verifier: Arc<dyn ServerCertVerifier>,
) -> Arc<ClientConfig> {
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        // The ring provider supports TLS 1.2 and 1.3, the safe defaults: this cannot fail.
        .expect("the ring provider supports rustls' default protocol versions")
        .dangerous()
        // Not dangerous: a verifier that verifies (the platform's, webpki's, or one that
        // trusts nothing).
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Arc::new(config)
}

/// A client's rustls configuration, built the first time a connection needs TLS: a client of
/// an `http://` server never reads a CA bundle (which costs a process that makes one call
/// several milliseconds: every certificate of the system's bundle, and of `SSL_CERT_DIR`,
/// parsed), and one of an `https://` server reads it inside its first leg, where the
/// operation's budget counts it, instead of before the budget opens.
///
/// The CAs the caller added are read at once by [`LazyConfig::new`], so that a file that
/// cannot be read or holds no certificate is still the constructor's error.
#[derive(Clone)]
pub struct LazyConfig(Arc<LazyInner>);

struct LazyInner {
    network: Network,
    config: std::sync::OnceLock<Arc<ClientConfig>>,
}

impl std::fmt::Debug for LazyConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyConfig")
            .field("built", &self.0.config.get().is_some())
            .finish_non_exhaustive()
    }
}

impl LazyConfig {
    /// The configuration `network` asks for, built now when the caller added CAs (their
    /// errors are this call's), else when [`get`](Self::get) first asks for it.
    ///
    /// # Errors
    /// As [`client_config`]: a CA the caller added that cannot be read or holds no
    /// certificate.
    pub fn new(network: &Network) -> Result<Self, Error> {
        let config = std::sync::OnceLock::new();
        if !network.added_roots().is_empty() {
            let _ = config.set(client_config(network)?);
        }
        Ok(Self(Arc::new(LazyInner {
            network: network.clone(),
            config,
        })))
    }

    /// The configuration, built on the first call (by every clone of this value at most once).
    pub fn get(&self) -> Arc<ClientConfig> {
        Arc::clone(self.0.config.get_or_init(|| {
            // Only the caller's CAs can fail to load, and `new` loaded them already; were one
            // to fail now (changed on disk since), nothing is trusted rather than too much.
            client_config(&self.0.network).unwrap_or_else(|_| trust_nothing())
        }))
    }
}

/// A configuration that refuses every certificate (as from an unknown issuer).
fn trust_nothing() -> Arc<ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    config_with(Arc::clone(&provider), Arc::new(TrustNothing(provider)))
}

/// What a verifier was built from: the caller's CAs and the files the environment names,
/// each file as it was (its size and modification time), each directory by its own
/// modification time (adding or removing a file changes it).
#[derive(Debug, PartialEq, Eq)]
enum Source {
    Pem(Vec<u8>),
    File(std::path::PathBuf, Option<(u64, std::time::SystemTime)>),
    Dir(std::path::PathBuf, Option<std::time::SystemTime>),
}

fn stamp(path: &Path) -> Option<(u64, std::time::SystemTime)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.len(), meta.modified().ok()?))
}

fn sources(network: &Network) -> Vec<Source> {
    let mut sources = Vec::new();
    for roots in network.added_roots() {
        sources.push(match roots {
            AddedRoots::Pem { pem, .. } => Source::Pem(pem.clone()),
            AddedRoots::File(path) => Source::File(path.clone(), stamp(path)),
        });
    }
    if let Some(file) = network.cert_file() {
        let stamp = stamp(&file);
        sources.push(Source::File(file, stamp));
    }
    for dir in network.cert_dirs() {
        let modified = std::fs::metadata(&dir).and_then(|m| m.modified()).ok();
        sources.push(Source::Dir(dir, modified));
    }
    sources
}

/// Verifiers already built in this process, by what they were built from (at most
/// [`CACHED_VERIFIERS`], the oldest dropped first).
type Cache = Vec<(Vec<Source>, Arc<dyn ServerCertVerifier>)>;

/// How many verifiers are kept.
const CACHED_VERIFIERS: usize = 8;

/// The verifier `network` asks for. Building one parses every CA it trusts (a system bundle
/// and a certificate directory take milliseconds), so it is built once per process for the
/// same sources, unchanged on disk, and shared by every client that asks for it.
fn verifier_for(
    network: &Network,
    provider: &Arc<CryptoProvider>,
) -> Result<Arc<dyn ServerCertVerifier>, Error> {
    static CACHE: std::sync::Mutex<Cache> = std::sync::Mutex::new(Vec::new());
    let cache = || {
        CACHE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    };
    let key = sources(network);
    let hit = cache()
        .iter()
        .find(|(sources, _)| *sources == key)
        .map(|(_, verifier)| Arc::clone(verifier));
    if let Some(verifier) = hit {
        return Ok(verifier);
    }
    let mut added = Vec::new();
    for roots in network.added_roots() {
        added.extend(caller_roots(roots)?);
    }
    if let Some(file) = network.cert_file() {
        added.extend(read_pem_file(&file).unwrap_or_default());
    }
    for dir in network.cert_dirs() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            added.extend(read_pem_file(&entry.path()).unwrap_or_default());
        }
    }
    let built = verifier(provider, added);
    let mut entries = cache();
    if entries.len() == CACHED_VERIFIERS {
        entries.remove(0);
    }
    entries.push((key, Arc::clone(&built)));
    Ok(built)
}

/// How a rustls error reads to a person: which certificate problem, or a failed handshake.
pub fn problem_of(err: &rustls::Error) -> TlsProblem {
    use CertificateError as C;
    match err {
        rustls::Error::InvalidCertificate(cert) => match cert {
            C::UnknownIssuer => TlsProblem::UnknownIssuer,
            C::Expired
            | C::ExpiredContext { .. }
            | C::NotValidYet
            | C::NotValidYetContext { .. } => TlsProblem::Expired,
            C::NotValidForName | C::NotValidForNameContext { .. } => TlsProblem::WrongName,
            C::Revoked => TlsProblem::Revoked,
            _ => TlsProblem::BadCertificate,
        },
        _ => TlsProblem::Handshake,
    }
}

/// The host of a URI as a TLS server name (brackets off an IPv6 address).
pub fn server_name(host: &str) -> Option<ServerName<'static>> {
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    ServerName::try_from(host.to_owned()).ok()
}

fn caller_roots(roots: &AddedRoots) -> Result<Vec<CertificateDer<'static>>, Error> {
    let (name, parsed) = match roots {
        AddedRoots::Pem { label, pem } => (label.clone(), parse_pem(pem)),
        AddedRoots::File(path) => (path.display().to_string(), read_pem_file(path)),
    };
    match parsed {
        Ok(certs) if !certs.is_empty() => Ok(certs),
        Ok(_) => Err(Error::InvalidCertificates {
            source_name: name,
            reason: "no PEM CERTIFICATE block in it".to_owned(),
        }),
        Err(reason) => Err(Error::InvalidCertificates {
            source_name: name,
            reason,
        }),
    }
}

fn read_pem_file(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("it cannot be read ({e})"))?;
    parse_pem(&bytes)
}

fn parse_pem(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("it is not PEM ({e})"))
}

fn verifier(
    provider: &Arc<CryptoProvider>,
    added: Vec<CertificateDer<'static>>,
) -> Arc<dyn ServerCertVerifier> {
    // The system's store alone is read once per process (every client without added CAs
    // shares it): loading it parses the whole bundle.
    #[cfg(feature = "platform-verifier")]
    if added.is_empty() {
        static SYSTEM: std::sync::OnceLock<Option<Arc<rustls_platform_verifier::Verifier>>> =
            std::sync::OnceLock::new();
        let system = SYSTEM.get_or_init(|| {
            rustls_platform_verifier::Verifier::new(Arc::clone(provider))
                .ok()
                .map(Arc::new)
        });
        if let Some(system) = system {
            return Arc::clone(system) as Arc<dyn ServerCertVerifier>;
        }
    }
    #[cfg(feature = "platform-verifier")]
    if let Ok(platform) = rustls_platform_verifier::Verifier::new_with_extra_roots(
        added.clone(),
        Arc::clone(provider),
    ) {
        return Arc::new(platform);
    }
    let mut roots = RootCertStore::empty();
    #[cfg(feature = "webpki-roots")]
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    roots.add_parsable_certificates(added);
    if roots.is_empty() {
        return Arc::new(TrustNothing(Arc::clone(provider)));
    }
    WebPkiServerVerifier::builder_with_provider(Arc::new(roots), Arc::clone(provider))
        .build()
        .map_or_else(
            |_| Arc::new(TrustNothing(Arc::clone(provider))) as Arc<dyn ServerCertVerifier>,
            |v| v as Arc<dyn ServerCertVerifier>,
        )
}

/// No CA at all: every certificate is from an unknown issuer.
#[derive(Debug)]
struct TrustNothing(Arc<CryptoProvider>);

impl ServerCertVerifier for TrustNothing {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Err(rustls::Error::InvalidCertificate(
            CertificateError::UnknownIssuer,
        ))
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A network whose `SSL_CERT_FILE` is `file` (and no `SSL_CERT_DIR`).
    fn cert_file_network(file: &Path) -> Network {
        let file = file.display().to_string();
        Network::new().with_env(move |name| (name == "SSL_CERT_FILE").then(|| file.clone()))
    }

    /// A self-signed CA certificate (P-256), for the cache test: a file that trusts nothing
    /// would get the system's verifier, shared whatever the file says.
    const TEST_CA: &str = "-----BEGIN CERTIFICATE-----\nMIIBjzCCATWgAwIBAgIUMG3fxr/I5vytS/F3WKQ2jOpjvfQwCgYIKoZIzj0EAwIw\nHDEaMBgGA1UEAwwRbWNwIHRlc3QgY2FjaGUgQ0EwIBcNMjYxMjAxMTMwMDAxWhgP\nMjEyNjExMDcxMzAwMDFaMBwxGjAYBgNVBAMMEW1jcCB0ZXN0IGNhY2hlIENBMFkw\nEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEpHEB6m2PYLYqkIODfX8IuPIo0XK1t09J\n7amN5nhOEPZLENUNvyPd2bLtDTidGrgLtza7Q1WXC0daTvnVY2xDaqNTMFEwHQYD\nVR0OBBYEFBdiD5rjLDqjQ7X28RYNwH2GWXRXMB8GA1UdIwQYMBaAFBdiD5rjLDqj\nQ7X28RYNwH2GWXRXMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSAAwRQIg\ndrcMACrgoblvdaygYVmXydz3CJV2jIsXCs4mOWASW/UCIQDXiY1zQU3N7ioVZ85h\nEE09pUUwG6wkR8hoUs82A1rTCg==\n-----END CERTIFICATE-----\n";

    #[test]
    fn clients_of_the_same_network_share_one_verifier_until_its_files_change() {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let dir = std::env::temp_dir().join(format!("mcp-tls-cache-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("ca.pem");
        std::fs::write(&file, TEST_CA).unwrap();
        let network = cert_file_network(&file);
        let first = verifier_for(&network, &provider).unwrap();
        let again = verifier_for(&cert_file_network(&file), &provider).unwrap();
        assert!(Arc::ptr_eq(&first, &again), "built once, shared");
        std::fs::write(&file, format!("{TEST_CA}{TEST_CA}")).unwrap();
        let changed = verifier_for(&network, &provider).unwrap();
        assert!(
            !Arc::ptr_eq(&first, &changed),
            "a changed file is read again"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_client_reads_no_ca_until_a_connection_needs_tls() {
        let asked = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let log = Arc::clone(&asked);
        let network = Network::new().with_env(move |name| {
            log.lock().unwrap().push(name.to_owned());
            None
        });
        let lazy = LazyConfig::new(&network).unwrap();
        assert!(
            asked.lock().unwrap().is_empty(),
            "nothing is looked at before a connection needs TLS"
        );
        let first = lazy.get();
        assert!(
            asked
                .lock()
                .unwrap()
                .iter()
                .any(|name| name == "SSL_CERT_FILE")
        );
        assert!(
            Arc::ptr_eq(&first, &lazy.clone().get()),
            "built once, for every clone"
        );
    }

    #[test]
    fn the_callers_cas_are_still_read_by_the_constructor() {
        let network = Network::new().with_root_pem("not a certificate");
        assert!(matches!(
            LazyConfig::new(&network),
            Err(Error::InvalidCertificates { .. })
        ));
    }

    #[test]
    fn certificate_problems_read_as_a_person_would_act_on_them() {
        let cert = |c| rustls::Error::InvalidCertificate(c);
        assert_eq!(
            problem_of(&cert(CertificateError::UnknownIssuer)),
            TlsProblem::UnknownIssuer
        );
        assert_eq!(
            problem_of(&cert(CertificateError::Expired)),
            TlsProblem::Expired
        );
        assert_eq!(
            problem_of(&cert(CertificateError::NotValidYet)),
            TlsProblem::Expired
        );
        assert_eq!(
            problem_of(&cert(CertificateError::NotValidForName)),
            TlsProblem::WrongName
        );
        assert_eq!(
            problem_of(&cert(CertificateError::Revoked)),
            TlsProblem::Revoked
        );
        assert_eq!(
            problem_of(&cert(CertificateError::BadSignature)),
            TlsProblem::BadCertificate
        );
        assert_eq!(
            problem_of(&rustls::Error::AlertReceived(
                rustls::AlertDescription::HandshakeFailure
            )),
            TlsProblem::Handshake
        );
    }

    #[test]
    fn added_roots_that_hold_nothing_are_the_callers_error() {
        let err = client_config(&Network::new().with_root_pem("not a certificate")).unwrap_err();
        assert_eq!(err.kind(), "invalid_certificates");
        let err =
            client_config(&Network::new().with_root_pem_file("/nonexistent/ca.pem")).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/ca.pem"), "{err}");
        let quiet = Network::new()
            .with_env(|name| (name == "SSL_CERT_FILE").then(|| "/nonexistent".to_owned()));
        assert!(client_config(&quiet).is_ok());
    }
}
