//! Unpacking a plugin from a `.tar.gz`: the archive must hold exactly one
//! file named `app-<name>` (in any folder), and it must be executable.
//! Other files (a README, a licence) are ignored. Everything happens in
//! memory; nothing is written to disk here.

use std::io::Read;

use app_plugin::metadata::PLUGIN_PREFIX;
use flate2::read::GzDecoder;

/// The executable found in an archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Its file name, `app-<name>`.
    pub file_name: String,
    pub bytes: Vec<u8>,
}

/// Why an archive cannot be installed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArchiveError {
    /// Not a readable gzip-compressed tar.
    Unreadable(String),
    /// No `app-*` file at all.
    NoPlugin,
    /// More than one `app-*` file: which one is meant?
    Several(Vec<String>),
    /// The `app-*` member is a link, a directory or a device.
    NotAFile(String),
    /// The `app-*` member has no execute bit.
    NotExecutable(String),
    /// The member unpacks to more than the size cap.
    TooLarge(u64),
}

impl std::fmt::Display for ArchiveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ArchiveError::Unreadable(e) => write!(f, "it is not a valid .tar.gz ({e})"),
            ArchiveError::NoPlugin => f.write_str("the archive holds no file named app-<name>"),
            ArchiveError::Several(names) => write!(
                f,
                "the archive holds several app-* files ({}); it must hold exactly one",
                names.join(", ")
            ),
            ArchiveError::NotAFile(name) => {
                write!(f, "the archive member {name} is not a regular file")
            }
            ArchiveError::NotExecutable(name) => write!(
                f,
                "the archive member {name} is not executable (its mode has no x bit)"
            ),
            ArchiveError::TooLarge(limit) => {
                write!(f, "the archive member unpacks to more than {limit} bytes")
            }
        }
    }
}

/// Whether `bytes` look gzip-compressed (and so are taken for a `.tar.gz`).
pub fn is_gzip(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0x1f, 0x8b])
}

/// Finds and reads the single `app-*` member of a `.tar.gz`, reading at most
/// `limit` bytes of it.
pub fn extract_plugin(archive: &[u8], limit: u64) -> Result<Member, ArchiveError> {
    let unreadable = |e: std::io::Error| ArchiveError::Unreadable(e.to_string());
    let mut tar = tar::Archive::new(GzDecoder::new(archive));
    let mut found: Option<Member> = None;
    let mut names = Vec::new();
    for entry in tar.entries().map_err(unreadable)? {
        let mut entry = entry.map_err(unreadable)?;
        let path = entry.path().map_err(unreadable)?.into_owned();
        let Some(file_name) = path.file_name().and_then(|n| n.to_str()).map(String::from) else {
            continue;
        };
        let kind = entry.header().entry_type();
        if kind.is_dir() || !file_name.starts_with(PLUGIN_PREFIX) {
            continue;
        }
        names.push(path.display().to_string());
        if names.len() > 1 {
            continue;
        }
        if !kind.is_file() {
            return Err(ArchiveError::NotAFile(path.display().to_string()));
        }
        let mode = entry.header().mode().map_err(unreadable)?;
        if mode & 0o111 == 0 {
            return Err(ArchiveError::NotExecutable(path.display().to_string()));
        }
        let mut bytes = Vec::new();
        entry
            .by_ref()
            .take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(unreadable)?;
        if bytes.len() as u64 > limit {
            return Err(ArchiveError::TooLarge(limit));
        }
        found = Some(Member { file_name, bytes });
    }
    if names.len() > 1 {
        return Err(ArchiveError::Several(names));
    }
    found.ok_or(ArchiveError::NoPlugin)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targz(files: &[(&str, u32, &[u8])]) -> Vec<u8> {
        let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let mut builder = tar::Builder::new(gz);
        for (path, mode, body) in files {
            let mut header = tar::Header::new_gnu();
            header.set_size(body.len() as u64);
            header.set_mode(*mode);
            header.set_cksum();
            builder.append_data(&mut header, path, *body).unwrap();
        }
        builder.into_inner().unwrap().finish().unwrap()
    }

    #[test]
    fn finds_the_one_plugin_among_other_files() {
        let archive = targz(&[
            ("foo-1.0/README.md", 0o644, b"hi"),
            ("foo-1.0/app-foo", 0o755, b"#!/bin/sh\n"),
        ]);
        assert!(is_gzip(&archive));
        let member = extract_plugin(&archive, 1024).unwrap();
        assert_eq!(member.file_name, "app-foo");
        assert_eq!(member.bytes, b"#!/bin/sh\n");
    }

    #[test]
    fn refuses_none_several_not_executable_and_too_large() {
        let none = targz(&[("README", 0o644, b"x")]);
        assert_eq!(extract_plugin(&none, 1024), Err(ArchiveError::NoPlugin));
        let two = targz(&[("app-a", 0o755, b"a"), ("app-b", 0o755, b"b")]);
        assert!(matches!(
            extract_plugin(&two, 1024),
            Err(ArchiveError::Several(n)) if n.len() == 2
        ));
        let plain = targz(&[("app-a", 0o644, b"a")]);
        assert_eq!(
            extract_plugin(&plain, 1024),
            Err(ArchiveError::NotExecutable("app-a".into()))
        );
        let big = targz(&[("app-a", 0o755, &[0u8; 2048])]);
        assert_eq!(
            extract_plugin(&big, 1024),
            Err(ArchiveError::TooLarge(1024))
        );
        assert!(matches!(
            extract_plugin(b"\x1f\x8bnot really", 1024),
            Err(ArchiveError::Unreadable(_))
        ));
    }
}
