//! TLS to PostgreSQL with libpq's `sslmode` and `sslrootcert`, over rustls.
//!
//! rust-postgres parses only `sslmode=disable|prefer|require` and verifies nothing itself:
//! what is verified is the TLS connector's business. So the two parameters are taken out
//! of the URL here and mapped onto a rustls configuration:
//!
//! | sslmode | TLS | chain checked against `sslrootcert` | host name checked |
//! |---|---|---|---|
//! | `disable` | never | | |
//! | `prefer` (the default, as in libpq) | if the server offers it | no | no |
//! | `require` | always | only when `sslrootcert` is given (libpq: then as `verify-ca`) | no |
//! | `verify-ca` | always | yes | no |
//! | `verify-full` | always | yes | yes |
//!
//! Verification is rustls's webpki verifier with the CA file as its only root; `verify-ca`
//! accepts exactly one of its refusals, a certificate not valid for the host name. The
//! crypto provider is *ring* (no C toolchain beyond a compiler, no cmake).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres_rustls::MakeRustlsConnect;

/// libpq's `sslmode` values that rustls can honour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SslMode {
    Disable,
    #[default]
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    const NAMES: &'static [(SslMode, &'static str)] = &[
        (SslMode::Disable, "disable"),
        (SslMode::Prefer, "prefer"),
        (SslMode::Require, "require"),
        (SslMode::VerifyCa, "verify-ca"),
        (SslMode::VerifyFull, "verify-full"),
    ];

    fn parse(text: &str) -> Result<SslMode, TlsError> {
        Self::NAMES
            .iter()
            .find(|(_, n)| *n == text)
            .map(|(m, _)| *m)
            .ok_or_else(|| TlsError::BadMode {
                given: text.chars().take(40).collect(),
            })
    }

    /// What rust-postgres is told: whether to ask for TLS and whether to insist.
    pub fn postgres_mode(self) -> postgres::config::SslMode {
        match self {
            SslMode::Disable => postgres::config::SslMode::Disable,
            SslMode::Prefer => postgres::config::SslMode::Prefer,
            _ => postgres::config::SslMode::Require,
        }
    }
}

/// The TLS part of a store URL.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TlsSettings {
    pub mode: SslMode,
    pub root_cert: Option<PathBuf>,
}

/// A TLS setting that cannot be used: always before any connection is tried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TlsError {
    BadMode {
        given: String,
    },
    /// `verify-ca` or `verify-full` without `sslrootcert`.
    NoRootCert {
        mode: &'static str,
    },
    RootCert {
        path: PathBuf,
        detail: String,
    },
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TlsError::BadMode { given } => write!(
                f,
                "sslmode={given} is not a mode; accepted: disable, prefer, require, verify-ca, verify-full"
            ),
            TlsError::NoRootCert { mode } => write!(
                f,
                "sslmode={mode} verifies the server against a CA: add sslrootcert=PATH (a PEM file of the CA certificates)"
            ),
            TlsError::RootCert { path, detail } => {
                write!(f, "sslrootcert={}: {detail}", path.display())
            }
        }
    }
}

impl std::error::Error for TlsError {}

/// Takes `sslmode` and `sslrootcert` out of a `postgres://` URL's query, leaving the rest
/// for rust-postgres (which would refuse `verify-full` and ignore `sslrootcert`).
pub fn split_url(url: &str) -> Result<(String, TlsSettings), TlsError> {
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_string(), TlsSettings::default()));
    };
    let mut settings = TlsSettings::default();
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("sslmode", v)) => settings.mode = SslMode::parse(&percent_decode(v))?,
            Some(("sslrootcert", v)) => settings.root_cert = Some(PathBuf::from(percent_decode(v))),
            _ => kept.push(pair),
        }
    }
    let url = if kept.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((url, settings))
}

/// `%XX` decoded, as libpq reads a connection URL's values (rust-url's decoder).
fn percent_decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
}

impl TlsSettings {
    /// The connector for rust-postgres: rustls configured for the mode.
    pub fn connector(&self) -> Result<MakeRustlsConnect, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier: Arc<dyn ServerCertVerifier> = match (self.mode, &self.root_cert) {
            (SslMode::VerifyCa | SslMode::VerifyFull, None) => {
                let mode = if self.mode == SslMode::VerifyCa {
                    "verify-ca"
                } else {
                    "verify-full"
                };
                return Err(TlsError::NoRootCert { mode });
            }
            (SslMode::VerifyFull, Some(path)) => webpki(path, &provider)?,
            (SslMode::VerifyCa | SslMode::Require, Some(path)) => {
                Arc::new(AnyName(webpki(path, &provider)?))
            }
            (_, _) => Arc::new(Unverified(provider.clone())),
        };
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::RootCert {
                path: PathBuf::new(),
                detail: e.to_string(),
            })?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        Ok(MakeRustlsConnect::new(config))
    }
}

/// rustls's webpki verifier with the certificates of `path` as its only roots.
fn webpki(
    path: &Path,
    provider: &Arc<CryptoProvider>,
) -> Result<Arc<dyn ServerCertVerifier>, TlsError> {
    let failed = |detail: String| TlsError::RootCert {
        path: path.to_path_buf(),
        detail,
    };
    let mut roots = RootCertStore::empty();
    let certs = CertificateDer::pem_file_iter(path).map_err(|e| failed(e.to_string()))?;
    for cert in certs {
        let cert = cert.map_err(|e| failed(format!("not a PEM certificate file: {e}")))?;
        roots
            .add(cert)
            .map_err(|e| failed(format!("not a CA certificate: {e}")))?;
    }
    if roots.is_empty() {
        return Err(failed("holds no certificate".into()));
    }
    WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map(|v| v as Arc<dyn ServerCertVerifier>)
        .map_err(|e| failed(e.to_string()))
}

/// `verify-ca`: the chain must lead to the CA, the host name may be any. webpki checks the
/// chain before the name, so a refusal for the name alone means the chain was good.
#[derive(Debug)]
struct AnyName(Arc<dyn ServerCertVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `prefer` and `require` without a CA: encrypted, not authenticated (libpq's meaning).
/// The handshake's signatures are still checked, so the session is with whoever holds the
/// certificate's key; who that is, nothing says.
#[derive(Debug)]
struct Unverified(Arc<CryptoProvider>);

impl ServerCertVerifier for Unverified {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
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
        verify_tls13_signature(
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

/// The TLS failure behind a connection error, if it was one: a refused certificate, a
/// server without TLS under `require` or stronger. Such a failure is the setting's or the
/// server's, not the network's, so it is reported at once rather than waited out.
pub fn failure(e: &postgres::Error) -> Option<String> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            if let Some(tls) = io.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
                return Some(format!("TLS refused: {tls}"));
            }
        }
        if let Some(tls) = s.downcast_ref::<rustls::Error>() {
            return Some(format!("TLS refused: {tls}"));
        }
        // rust-postgres's own words (a plain message, no type) when the server answers
        // `N` to the TLS request.
        if s.to_string() == "server does not support TLS" {
            return Some(
                "TLS refused: the server does not offer TLS, and sslmode asks for it".to_string(),
            );
        }
        source = s.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sslmode_and_sslrootcert_leave_the_url_and_the_rest_stays() {
        let (url, s) = split_url(
            "postgres://a@db/x?sslmode=verify-full&options=-csearch_path%3Dq&sslrootcert=%2Fetc%2Fca.pem",
        )
        .unwrap();
        assert_eq!(url, "postgres://a@db/x?options=-csearch_path%3Dq");
        assert_eq!(s.mode, SslMode::VerifyFull);
        assert_eq!(s.root_cert, Some(PathBuf::from("/etc/ca.pem")));
        let (url, s) = split_url("postgres://a@db/x").unwrap();
        assert_eq!(
            (url.as_str(), s.mode),
            ("postgres://a@db/x", SslMode::Prefer)
        );
        let e = split_url("postgres://a@db/x?sslmode=allow").unwrap_err();
        assert!(e
            .to_string()
            .contains("accepted: disable, prefer, require, verify-ca, verify-full"));
    }

    #[test]
    fn verifying_modes_need_a_ca_and_a_ca_file_must_hold_one() {
        let s = TlsSettings {
            mode: SslMode::VerifyFull,
            root_cert: None,
        };
        assert_eq!(
            s.connector().err(),
            Some(TlsError::NoRootCert {
                mode: "verify-full"
            })
        );
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("ca.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let s = TlsSettings {
            mode: SslMode::VerifyCa,
            root_cert: Some(empty),
        };
        assert!(matches!(s.connector(), Err(TlsError::RootCert { .. })));
    }
}
