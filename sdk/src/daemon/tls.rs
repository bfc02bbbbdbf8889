//! HTTPS for a daemon's TCP listener (feature `tls`): the settings of
//! `--tls-cert` and `--tls-key`, checked at start-up so that a bad
//! certificate is a start-up error, before anything is bound: one outside
//! its validity dates too, with them.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

mod validity;

/// The most a PEM file may hold.
const MAX_PEM: u64 = 1 << 20;

/// The TLS settings of a certificate chain and its private key, both PEM
/// files (regular files of at most 1 MiB); the error names the flag
/// (`--tls-cert`, `--tls-key`) and says what is wrong.
///
/// ```
/// let tmp = tempfile::tempdir().unwrap();
/// let cert = tmp.path().join("cert.pem");
/// std::fs::write(&cert, "not a certificate").unwrap();
/// let err = app_plugin::daemon::tls::acceptor(&cert, &cert).err().unwrap();
/// assert!(err.starts_with("--tls-cert "), "{err}");
/// assert!(err.contains("holds no certificate"), "{err}");
/// ```
pub fn acceptor(cert: &Path, key: &Path) -> Result<tokio_rustls::TlsAcceptor, String> {
    let read = |path: &Path, flag: &str| {
        crate::file::read_limited(path, MAX_PEM)
            .map_err(|e| format!("{flag} {} {e}", path.display()))
    };
    let cert_text = read(cert, "--tls-cert")?;
    let key_text = read(key, "--tls-key")?;
    // rustls-pki-types' PEM reader (rustls-pemfile is unmaintained,
    // RUSTSEC-2025-0134): sections of other kinds are skipped.
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_text)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("--tls-cert {}: not PEM: {e}", cert.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "--tls-cert {} holds no certificate (-----BEGIN CERTIFICATE-----)",
            cert.display()
        ));
    }
    in_dates(&certs, std::time::SystemTime::now())
        .map_err(|e| format!("--tls-cert {} {e}", cert.display()))?;
    let key = PrivateKeyDer::from_pem_slice(&key_text).map_err(|e| match e {
        pem::Error::NoItemsFound => format!(
            "--tls-key {} holds no private key (-----BEGIN PRIVATE KEY-----)",
            key.display()
        ),
        e => format!("--tls-key {}: not PEM: {e}", key.display()),
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("cannot set up TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("--tls-cert and --tls-key do not make a usable pair: {e}"))?;
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

/// Refuses a chain with a certificate outside its dates at `now`: clients
/// would refuse every handshake, so the daemon would serve no one.
fn in_dates(certs: &[CertificateDer<'_>], now: std::time::SystemTime) -> Result<(), String> {
    let show = crate::time::rfc3339;
    for (i, cert) in certs.iter().enumerate() {
        let Some((from, until)) = validity::dates(cert) else {
            continue;
        };
        let which = if i == 0 {
            "its certificate".to_string()
        } else {
            format!("certificate {} of its chain", i + 1)
        };
        let dates = format!("valid from {} until {}", show(from), show(until));
        if now > until {
            return Err(format!(
                "is out of date: {which} expired on {} ({dates}); renew it",
                show(until)
            ));
        }
        if now < from {
            return Err(format!(
                "is not valid yet: {which} is valid from {} ({dates}); check the clock, or use one valid now",
                show(from)
            ));
        }
    }
    Ok(())
}
