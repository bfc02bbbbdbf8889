//! Step 2 of an install (see `app::install`): get the executable a source
//! stands for into memory, verified, writing nothing anywhere.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use app_fetch_protocol::{self as protocol, checksum, Artifact, FetchArgs, Source, MAX_BYTES_VAR};
use app_fetch_protocol::{Error, Result};
use app_plugin::file::{read_limited, ReadError};

use crate::{archive, http};

/// Reads or downloads the source, checks the sha256 (of the file or archive
/// as fetched), and then, unless raw bytes were asked for, unpacks a
/// `.tar.gz` and checks the result is something the system can run.
pub fn acquire(fetch: &FetchArgs) -> Result<Artifact> {
    let (source, sha256) = (&fetch.source, fetch.sha256.as_deref());
    let limit = fetch.raw.unwrap_or_else(protocol::max_bytes);
    let shown = source.to_record();
    let token = match &fetch.token_file {
        Some(file) => Some(read_token(file)?),
        None => None,
    };
    let bytes = match source {
        Source::Path(path) if fetch.raw.is_some() => read_raw(path, limit)?,
        Source::Path(path) => read_local(path, limit)?,
        Source::Url(url) => {
            let options = http::Options {
                limit,
                bearer: token.as_deref(),
                // An index is small: a server trickling it is cut off sooner.
                total: match fetch.raw {
                    Some(_) => http::RAW_TOTAL_TIMEOUT,
                    None => http::PLUGIN_TOTAL_TIMEOUT,
                },
            };
            http::download(url, &options).map_err(|e| match e {
                http::FetchError::TooLarge(_) => Error::NotInstallable {
                    source: shown.clone(),
                    reason: e.to_string(),
                },
                _ => Error::Download {
                    url: shown.clone(),
                    reason: e.to_string(),
                },
            })?
        }
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
    if fetch.raw.is_some() {
        return Ok(Artifact {
            file_name: None,
            bytes,
            archive_sha256: None,
            files: Vec::new(),
        });
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
            files: member.files,
        }
    } else {
        Artifact {
            file_name: file_name(source),
            bytes,
            archive_sha256: None,
            files: Vec::new(),
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

/// Reads a local file as is (an index, a signature): a regular file of at
/// most `limit` bytes.
fn read_raw(path: &Path, limit: u64) -> Result<Vec<u8>> {
    let shown = path.display().to_string();
    read_limited(path, limit).map_err(|e| match e {
        ReadError::Io(e) => Error::io(format!("cannot read {shown}"), e),
        other => Error::NotInstallable {
            source: shown,
            reason: other.to_string(),
        },
    })
}

/// The bearer token in `file` (surrounding white space dropped). Its
/// contents never appear in a message.
fn read_token(file: &Path) -> Result<String> {
    let shown = file.display();
    let bytes = read_limited(file, MAX_TOKEN_BYTES).map_err(|e| {
        Error::Usage(format!(
            "token file {shown} {e}; --token-file names a file holding only the token"
        ))
    })?;
    let token = String::from_utf8(bytes).ok().map(|t| t.trim().to_string());
    match token {
        Some(t) if !t.is_empty() && t.bytes().all(|b| b.is_ascii_graphic()) => Ok(t),
        _ => Err(Error::Usage(format!(
            "token file {shown} must hold one token (printable ASCII, no spaces) and nothing else"
        ))),
    }
}

/// The largest token file read.
pub const MAX_TOKEN_BYTES: u64 = 64 * 1024;

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
