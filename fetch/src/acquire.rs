//! Step 2 of an install (see `app::install`): get the executable a source
//! stands for into memory, verified, writing nothing anywhere.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use app::error::{Error, Result};
use app::install::protocol::{self, MAX_BYTES_VAR};
use app::install::{checksum, Artifact, Source};

use crate::{archive, http};

/// Reads or downloads `source`, checks `sha256` (of the file or archive as
/// fetched), unpacks a `.tar.gz`, and checks the result is something the
/// system can run.
pub fn acquire(source: &Source, sha256: Option<&str>) -> Result<Artifact> {
    let limit = protocol::max_bytes();
    let shown = source.to_record();
    let bytes = match source {
        Source::Path(path) => read_local(path, limit)?,
        Source::Url(url) => http::download(url, limit).map_err(|e| match e {
            http::FetchError::TooLarge(_) => Error::NotInstallable {
                source: shown.clone(),
                reason: e.to_string(),
            },
            _ => Error::Download {
                url: shown.clone(),
                reason: e.to_string(),
            },
        })?,
    };
    if let Some(expected) = sha256 {
        let actual = checksum::sha256_hex(&bytes);
        if actual != expected {
            return Err(Error::ChecksumMismatch {
                source: shown,
                expected: expected.to_string(),
                actual,
            });
        }
    }
    let artifact = if archive::is_gzip(&bytes) {
        let member = archive::extract_plugin(&bytes, limit).map_err(|e| Error::NotInstallable {
            source: shown.clone(),
            reason: e.to_string(),
        })?;
        Artifact {
            file_name: Some(member.file_name),
            bytes: member.bytes,
            archive_sha256: Some(checksum::sha256_hex(&bytes)),
        }
    } else {
        Artifact {
            file_name: file_name(source),
            bytes,
            archive_sha256: None,
        }
    };
    if !looks_executable(&artifact.bytes) {
        return Err(Error::NotInstallable {
            source: shown,
            reason: "it is neither a script (#!) nor an executable binary (ELF or Mach-O)".into(),
        });
    }
    Ok(artifact)
}

/// Reads a local file to install: a regular file, executable unless it is
/// an archive, at most `limit` bytes.
fn read_local(path: &Path, limit: u64) -> Result<Vec<u8>> {
    let shown = path.display().to_string();
    let meta =
        fs::metadata(path).map_err(|e| Error::io(format!("cannot read {shown}"), missing(e)))?;
    if !meta.is_file() {
        return Err(Error::NotInstallable {
            source: shown,
            reason: "it is not a regular file".into(),
        });
    }
    if meta.len() > limit {
        return Err(Error::NotInstallable {
            source: shown,
            reason: format!(
                "it is larger than {limit} bytes (raise {MAX_BYTES_VAR} if that is expected)"
            ),
        });
    }
    let bytes = fs::read(path).map_err(|e| Error::io(format!("cannot read {shown}"), e))?;
    if !archive::is_gzip(&bytes) && meta.permissions().mode() & 0o111 == 0 {
        return Err(Error::NotInstallable {
            source: shown.clone(),
            reason: format!("it is not executable (chmod +x {shown} if it should be)"),
        });
    }
    Ok(bytes)
}

/// "No such file or directory (os error 2)" does not say what to give
/// instead; the other errors (permission denied, …) say enough.
fn missing(e: std::io::Error) -> std::io::Error {
    if e.kind() != std::io::ErrorKind::NotFound {
        return e;
    }
    std::io::Error::new(
        e.kind(),
        "there is no such file; give the path of an app-<name> executable or of a .tar.gz holding one, or an https:// URL with --sha256",
    )
}

/// The last path segment of `source`: the file name the plugin name may
/// come from when it is not an archive.
fn file_name(source: &Source) -> Option<String> {
    match source {
        Source::Path(p) => p.file_name()?.to_str().map(String::from),
        Source::Url(u) => {
            let path = u.split(['?', '#']).next().unwrap_or(u);
            let after_scheme = path.split_once("://").map_or(path, |(_, rest)| rest);
            let (_, segments) = after_scheme.split_once('/')?;
            segments
                .rsplit('/')
                .next()
                .filter(|s| !s.is_empty())
                .map(String::from)
        }
    }
}

/// Whether `bytes` start like something `exec` can run: a `#!` script, an
/// ELF binary, or a Mach-O binary.
fn looks_executable(bytes: &[u8]) -> bool {
    const MAGICS: [&[u8]; 6] = [
        b"#!",
        b"\x7fELF",
        &[0xcf, 0xfa, 0xed, 0xfe],
        &[0xce, 0xfa, 0xed, 0xfe],
        &[0xca, 0xfe, 0xba, 0xbe],
        &[0xfe, 0xed, 0xfa, 0xcf],
    ];
    MAGICS.iter().any(|m| bytes.starts_with(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_come_from_the_last_segment() {
        let cwd = Path::new("/");
        let name = |s: &str| file_name(&Source::parse(s, cwd).unwrap());
        assert_eq!(
            name("http://h:1/d/app-foo?v=2#x").as_deref(),
            Some("app-foo")
        );
        assert_eq!(name("http://h:1/").as_deref(), None);
        assert_eq!(name("http://h:1").as_deref(), None);
        assert_eq!(name("/x/app-bar").as_deref(), Some("app-bar"));
    }

    #[test]
    fn executables_are_recognised_by_their_first_bytes() {
        assert!(looks_executable(b"#!/bin/sh\n"));
        assert!(looks_executable(b"\x7fELF\x02\x01"));
        assert!(!looks_executable(b"<html>404</html>"));
        assert!(!looks_executable(b""));
    }
}
