//! HTTPS for a daemon's TCP listener (feature `tls`): the settings of
//! `--tls-cert` and `--tls-key`, checked at start-up so that a bad
//! certificate is a start-up error, before anything is bound.

use std::path::Path;
use std::sync::Arc;

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
    let certs: Vec<_> = rustls_pemfile::certs(&mut cert_text.as_slice())
        .collect::<Result<_, _>>()
        .map_err(|e| format!("--tls-cert {}: not PEM: {e}", cert.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "--tls-cert {} holds no certificate (-----BEGIN CERTIFICATE-----)",
            cert.display()
        ));
    }
    let key = rustls_pemfile::private_key(&mut key_text.as_slice())
        .map_err(|e| format!("--tls-key {}: not PEM: {e}", key.display()))?
        .ok_or_else(|| {
            format!(
                "--tls-key {} holds no private key (-----BEGIN PRIVATE KEY-----)",
                key.display()
            )
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
