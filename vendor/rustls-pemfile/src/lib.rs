//! `rustls-pemfile`'s functions, as rumqttc and rustls-native-certs 0.7 call
//! them, over [`rustls_pki_types::pem`]: the crates.io crate is unmaintained
//! (RUSTSEC-2025-0134) and its 2.x was already a wrapper of this reader.
//! Sections of kinds not listed in [`Item`] are skipped, as there.

use std::io;

use rustls_pki_types::pem::{self, SectionKind};
use rustls_pki_types::{
    CertificateDer, CertificateRevocationListDer, CertificateSigningRequestDer, PrivateKeyDer,
    PrivatePkcs1KeyDer, PrivatePkcs8KeyDer, PrivateSec1KeyDer, SubjectPublicKeyInfoDer,
};

/// One recognised PEM section.
#[non_exhaustive]
#[derive(Debug, PartialEq)]
pub enum Item {
    /// `CERTIFICATE`.
    X509Certificate(CertificateDer<'static>),
    /// `PUBLIC KEY`.
    SubjectPublicKeyInfo(SubjectPublicKeyInfoDer<'static>),
    /// `RSA PRIVATE KEY` (PKCS #1).
    Pkcs1Key(PrivatePkcs1KeyDer<'static>),
    /// `PRIVATE KEY` (PKCS #8).
    Pkcs8Key(PrivatePkcs8KeyDer<'static>),
    /// `EC PRIVATE KEY` (SEC1).
    Sec1Key(PrivateSec1KeyDer<'static>),
    /// `X509 CRL`.
    Crl(CertificateRevocationListDer<'static>),
    /// `CERTIFICATE REQUEST`.
    Csr(CertificateSigningRequestDer<'static>),
}

impl Item {
    fn from_section(kind: SectionKind, der: Vec<u8>) -> Option<Item> {
        Some(match kind {
            SectionKind::Certificate => Item::X509Certificate(der.into()),
            SectionKind::PublicKey => Item::SubjectPublicKeyInfo(der.into()),
            SectionKind::RsaPrivateKey => Item::Pkcs1Key(der.into()),
            SectionKind::PrivateKey => Item::Pkcs8Key(der.into()),
            SectionKind::EcPrivateKey => Item::Sec1Key(der.into()),
            SectionKind::Crl => Item::Crl(der.into()),
            SectionKind::Csr => Item::Csr(der.into()),
            _ => return None,
        })
    }
}

/// The next recognised section of `rd`, `None` at the end.
pub fn read_one(rd: &mut dyn io::BufRead) -> Result<Option<Item>, io::Error> {
    loop {
        match pem::from_buf(rd).map_err(to_io)? {
            None => return Ok(None),
            Some((kind, der)) => {
                if let Some(item) = Item::from_section(kind, der) {
                    return Ok(Some(item));
                }
            }
        }
    }
}

/// Every recognised section of `rd`, in order.
pub fn read_all(rd: &mut dyn io::BufRead) -> impl Iterator<Item = Result<Item, io::Error>> + '_ {
    std::iter::from_fn(move || read_one(rd).transpose())
}

/// The certificates of `rd`; other sections skipped.
pub fn certs(
    rd: &mut dyn io::BufRead,
) -> impl Iterator<Item = Result<CertificateDer<'static>, io::Error>> + '_ {
    read_all(rd).filter_map(|item| match item {
        Ok(Item::X509Certificate(cert)) => Some(Ok(cert)),
        Ok(_) => None,
        Err(e) => Some(Err(e)),
    })
}

/// The first private key of `rd`, of any of the three kinds.
pub fn private_key(rd: &mut dyn io::BufRead) -> Result<Option<PrivateKeyDer<'static>>, io::Error> {
    for item in read_all(rd) {
        match item? {
            Item::Pkcs1Key(k) => return Ok(Some(k.into())),
            Item::Pkcs8Key(k) => return Ok(Some(k.into())),
            Item::Sec1Key(k) => return Ok(Some(k.into())),
            _ => {}
        }
    }
    Ok(None)
}

fn to_io(e: pem::Error) -> io::Error {
    match e {
        pem::Error::Io(e) => e,
        other => io::Error::new(io::ErrorKind::InvalidData, other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CERT: &str = "-----BEGIN CERTIFICATE-----\nAQID\n-----END CERTIFICATE-----\n";
    const KEY: &str = "-----BEGIN PRIVATE KEY-----\nBAUG\n-----END PRIVATE KEY-----\n";
    const OTHER: &str = "-----BEGIN DH PARAMETERS-----\nBwg=\n-----END DH PARAMETERS-----\n";

    #[test]
    fn certificates_and_keys_are_read_and_other_sections_skipped() {
        let text = format!("junk\n{OTHER}{CERT}{KEY}{CERT}");
        let certs: Vec<_> = certs(&mut text.as_bytes())
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(certs.len(), 2);
        assert_eq!(certs[0].as_ref(), [1, 2, 3]);
        let key = private_key(&mut text.as_bytes()).unwrap().unwrap();
        assert_eq!(key.secret_der(), [4, 5, 6]);
        let mut rd = text.as_bytes();
        assert!(matches!(
            read_one(&mut rd).unwrap(),
            Some(Item::X509Certificate(_))
        ));
        assert!(matches!(
            read_one(&mut rd).unwrap(),
            Some(Item::Pkcs8Key(_))
        ));
        assert!(matches!(
            read_one(&mut rd).unwrap(),
            Some(Item::X509Certificate(_))
        ));
        assert!(read_one(&mut rd).unwrap().is_none());
    }

    #[test]
    fn bad_base64_is_an_error_not_a_skip() {
        let text = "-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n";
        let err = certs(&mut text.as_bytes()).next().unwrap().unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(private_key(&mut "".as_bytes()).unwrap().is_none());
    }

    /// What rustls-native-certs 0.7 reads with it (NATS over TLS without
    /// `--ca-file`): the system's bundle, every certificate of it.
    #[test]
    fn the_system_bundle_reads_whole() {
        let path = "/etc/ssl/certs/ca-certificates.crt";
        let Ok(text) = std::fs::read_to_string(path) else {
            eprintln!("skipped: no {path} (package ca-certificates)");
            return;
        };
        let file = std::fs::File::open(path).unwrap();
        let certs: Vec<_> = certs(&mut io::BufReader::new(file))
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            certs.len(),
            text.matches("-----BEGIN CERTIFICATE-----").count()
        );
        assert!(!certs.is_empty());
    }
}
