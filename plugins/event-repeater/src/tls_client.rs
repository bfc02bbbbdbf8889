//! The TLS client set-up the repeater's peers share (an `mqtts://` broker,
//! an `https://` feed): the CA certificates of a flag's PEM file (a regular
//! file of at most 1 MiB), or the system's; checked at start.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::{pem::PemObject, CertificateDer};

/// A client config trusting `ca` (named by `flag`), or the system's CA
/// certificates; `peer` names what is verified in messages ("the broker").
pub fn config(
    ca: Option<&Path>,
    flag: &str,
    peer: &str,
) -> Result<Arc<rustls::ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    match ca {
        Some(path) => {
            let pem = crate::files::read_file(path, flag, 1 << 20)?;
            // rustls-pki-types' PEM reader (rustls-pemfile is unmaintained).
            for cert in CertificateDer::pem_slice_iter(&pem) {
                let cert = cert.map_err(|e| format!("{flag} {}: {e}", path.display()))?;
                roots
                    .add(cert)
                    .map_err(|e| format!("{flag} {}: {e}", path.display()))?;
            }
        }
        None => {
            for cert in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(cert);
            }
        }
    }
    if roots.is_empty() {
        return Err(match ca {
            Some(path) => format!(
                "{flag} {} holds no PEM certificate (-----BEGIN CERTIFICATE-----); pass the CA that signed {peer}'s certificate",
                path.display()
            ),
            None => format!("no CA certificates to verify {peer} with; pass {flag}"),
        });
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS set-up failed: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}
