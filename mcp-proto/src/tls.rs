//! What a refused TLS handshake means to the caller: the problem's kind and the sentence that
//! says what to do about it, the same from both drivers. Plain data and text; a leaf module (it
//! names no other module of the crate), so the errors and the operation's transport failures
//! can both use it. Which CAs are trusted is not decided here but in `mcp-driver-common`.

/// Why a server's certificate or TLS handshake was refused; see [`Error::Tls`](crate::Error::Tls).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TlsProblem {
    /// The certificate chains to no CA trusted here.
    UnknownIssuer,
    /// The certificate has expired or is not valid yet.
    Expired,
    /// The certificate does not name the host the URL names.
    WrongName,
    /// The certificate was revoked.
    Revoked,
    /// The certificate is not valid for another reason (its detail says which).
    BadCertificate,
    /// The handshake failed otherwise (an alert, no common protocol version, not TLS at all).
    Handshake,
    /// The handshake did not finish within the leg's grant.
    TimedOut,
}

impl TlsProblem {
    /// One word for traces and `--json`: `unknown_issuer`, `expired`, `wrong_name`, `revoked`,
    /// `bad_certificate`, `handshake`, `timed_out`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::UnknownIssuer => "unknown_issuer",
            Self::Expired => "expired",
            Self::WrongName => "wrong_name",
            Self::Revoked => "revoked",
            Self::BadCertificate => "bad_certificate",
            Self::Handshake => "handshake",
            Self::TimedOut => "timed_out",
        }
    }
}

/// The sentence of [`Error::Tls`](crate::Error::Tls): the same from both drivers.
pub(crate) fn tls_message(server: &str, method: &str, problem: TlsProblem, detail: &str) -> String {
    const ADD_CA: &str = "if the server's certificate comes from an internal CA, add that CA (PEM): SSL_CERT_FILE=ca.pem, `mcp-call --cacert ca.pem`, or the driver's Network::with_root_pem_file";
    match problem {
        TlsProblem::UnknownIssuer => format!(
            "MCP server \"{server}\" presented a TLS certificate whose issuer is not trusted here (unknown issuer: not in the system's trust store nor among the added CAs); {ADD_CA}"
        ),
        TlsProblem::Expired => format!(
            "MCP server \"{server}\" presented a TLS certificate that has expired or is not valid yet; its operator must renew it (or this machine's clock is wrong)"
        ),
        TlsProblem::WrongName => format!(
            "MCP server \"{server}\" presented a TLS certificate that is not valid for that name; use the host name the certificate was issued for in the URL, or ask its operator for a certificate that covers this one"
        ),
        TlsProblem::Revoked => format!(
            "MCP server \"{server}\" presented a TLS certificate that has been revoked; its operator must replace it"
        ),
        TlsProblem::BadCertificate => format!(
            "MCP server \"{server}\" presented a TLS certificate that is not trusted ({detail}); {ADD_CA}"
        ),
        TlsProblem::Handshake => format!(
            "the TLS handshake with MCP server \"{server}\" failed ({detail}); check that the URL's port serves HTTPS (and whether a proxy in between inspects TLS)"
        ),
        TlsProblem::TimedOut => format!(
            "the TLS handshake with MCP server \"{server}\" did not finish within {detail} granted to the {method} leg: the connection was accepted but TLS never completed (a proxy or firewall in between may be holding it)"
        ),
    }
}
