//! A CA made at test time and the server certificates it signs (no key
//! is committed), for the APIs served over TLS.

use std::path::Path;

/// A CA and certificates it signs, made for the test (no key is committed).
pub struct Pki {
    ca: rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
}

impl Pki {
    pub fn new(name: &str) -> Pki {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        let key = rcgen::KeyPair::generate().expect("CA key");
        Pki {
            ca: rcgen::CertifiedIssuer::self_signed(params, key).expect("CA certificate"),
        }
    }

    /// Writes the CA certificate to `dir/file`; returns its path.
    pub fn write_ca(&self, dir: &Path, file: &str) -> String {
        write(dir, file, &self.ca.pem())
    }

    /// A server certificate for `host` (an IP address or a name): writes
    /// `dir/<stem>.crt` and `dir/<stem>.key`, returns their paths.
    pub fn server(&self, host: &str, dir: &Path, stem: &str) -> (String, String) {
        let params = rcgen::CertificateParams::new(vec![host.to_string()]).expect("params");
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = params.signed_by(&key, &self.ca).expect("sign");
        (
            write(dir, &format!("{stem}.crt"), &cert.pem()),
            write(dir, &format!("{stem}.key"), &key.serialize_pem()),
        )
    }
}

/// Writes `text` to `dir/name`, private (0600); returns its path.
fn write(dir: &Path, name: &str, text: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    path.to_string_lossy().into_owned()
}
