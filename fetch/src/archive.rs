//! Unpacking a plugin from a `.tar.gz`: the archive must hold exactly one
//! file named `app-<name>` (in any folder), and it must be executable.
//! Beside it, the files under `completions/`, `man/` and `share/` (of the
//! executable's folder) are the plugin's too: regular files only (a link or
//! a device there is refused), plain relative names (`..` refused), at
//! most `MAX_EXTRA_FILES` files and the size cap in all. Other files (a
//! README, a licence) are ignored. Everything happens in memory; nothing is
//! written to disk here.

use std::io::Read;
use std::path::{Component, Path};

use app_fetch_protocol::{extra_path_ok, ExtraFile, EXTRA_DIRS, MAX_EXTRA_FILES};
use app_plugin::metadata::PLUGIN_PREFIX;
use flate2::read::GzDecoder;

/// The executable found in an archive, and the files beside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Its file name, `app-<name>`.
    pub file_name: String,
    pub bytes: Vec<u8>,
    pub files: Vec<ExtraFile>,
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
    /// A file under `completions/`, `man/` or `share/` that cannot be
    /// installed: a link, a device, a name leaving its folder, too many.
    BadExtra(String),
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
            ArchiveError::BadExtra(why) => write!(f, "{why}"),
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
    let mut found: Option<(std::path::PathBuf, Member)> = None;
    let mut names = Vec::new();
    for entry in tar.entries().map_err(unreadable)? {
        let mut entry = entry.map_err(unreadable)?;
        let path = entry.path().map_err(unreadable)?.into_owned();
        let Some(file_name) = path.file_name().and_then(|n| n.to_str()).map(String::from) else {
            continue;
        };
        let kind = entry.header().entry_type();
        // `completions/app-foo.bash` is one of its files, not another plugin.
        let beside = path.parent().is_some_and(|p| {
            p.components()
                .any(|c| matches!(c, Component::Normal(d) if EXTRA_DIRS.iter().any(|x| d == *x)))
        });
        if kind.is_dir() || beside || !file_name.starts_with(PLUGIN_PREFIX) {
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
        found = Some((
            path,
            Member {
                file_name,
                bytes,
                files: Vec::new(),
            },
        ));
    }
    if names.len() > 1 {
        return Err(ArchiveError::Several(names));
    }
    let (path, mut member) = found.ok_or(ArchiveError::NoPlugin)?;
    let base = path.parent().unwrap_or(Path::new(""));
    let budget = limit.saturating_sub(member.bytes.len() as u64);
    member.files = extra_files(archive, base, budget)?;
    Ok(member)
}

/// The files under `base/completions/`, `base/man/` and `base/share/`,
/// reading at most `limit` bytes in all.
fn extra_files(archive: &[u8], base: &Path, limit: u64) -> Result<Vec<ExtraFile>, ArchiveError> {
    let unreadable = |e: std::io::Error| ArchiveError::Unreadable(e.to_string());
    let mut tar = tar::Archive::new(GzDecoder::new(archive));
    let mut files = Vec::new();
    let mut total = 0u64;
    for entry in tar.entries().map_err(unreadable)? {
        let mut entry = entry.map_err(unreadable)?;
        let path = entry.path().map_err(unreadable)?.into_owned();
        let Ok(rel) = path.strip_prefix(base) else {
            continue;
        };
        let first = rel.components().next();
        let in_extra =
            matches!(first, Some(Component::Normal(d)) if EXTRA_DIRS.iter().any(|x| d == *x));
        let kind = entry.header().entry_type();
        if !in_extra || kind.is_dir() {
            continue;
        }
        let shown = path.display().to_string();
        let text = rel
            .to_str()
            .map(|t| t.replace('\\', "/"))
            .unwrap_or_default();
        if !kind.is_file() {
            return Err(ArchiveError::BadExtra(format!(
                "the archive member {shown} is a link or a device; a plugin's files must be regular files"
            )));
        }
        if !extra_path_ok(&text) {
            return Err(ArchiveError::BadExtra(format!(
                "the archive member {shown} has a name that leaves its folder or cannot be a file name"
            )));
        }
        if files.len() >= MAX_EXTRA_FILES {
            return Err(ArchiveError::BadExtra(format!(
                "the archive holds more than {MAX_EXTRA_FILES} files under completions/, man/ and share/"
            )));
        }
        let mode = entry.header().mode().map_err(unreadable)?;
        let mut bytes = Vec::new();
        entry
            .by_ref()
            .take(limit - total + 1)
            .read_to_end(&mut bytes)
            .map_err(unreadable)?;
        total += bytes.len() as u64;
        if total > limit {
            return Err(ArchiveError::TooLarge(limit));
        }
        files.push(ExtraFile {
            path: text,
            mode: if mode & 0o111 != 0 { 0o755 } else { 0o644 },
            bytes,
        });
    }
    Ok(files)
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
    fn completions_man_and_share_beside_the_plugin_come_with_it() {
        let archive = targz(&[
            ("foo-1.0/app-foo", 0o755, b"#!/bin/sh\n"),
            (
                "foo-1.0/completions/app-foo.bash",
                0o644,
                b"complete -F _f app-foo\n",
            ),
            ("foo-1.0/share/data/x.txt", 0o600, b"x"),
            ("foo-1.0/share/run.sh", 0o700, b"#!/bin/sh\n"),
            ("foo-1.0/man/app-foo.1", 0o644, b".TH"),
            ("foo-1.0/README", 0o644, b"ignored"),
            ("other/share/y", 0o644, b"not beside it"),
        ]);
        let member = extract_plugin(&archive, 1024).unwrap();
        let files: Vec<(&str, u32)> = member
            .files
            .iter()
            .map(|f| (f.path.as_str(), f.mode))
            .collect();
        assert_eq!(
            files,
            [
                ("completions/app-foo.bash", 0o644),
                ("share/data/x.txt", 0o644),
                ("share/run.sh", 0o755),
                ("man/app-foo.1", 0o644)
            ]
        );
    }

    #[test]
    fn a_link_beside_the_plugin_is_refused() {
        let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let mut builder = tar::Builder::new(gz);
        let mut header = tar::Header::new_gnu();
        header.set_size(10);
        header.set_mode(0o755);
        header.set_cksum();
        builder
            .append_data(&mut header, "app-foo", &b"#!/bin/sh\n"[..])
            .unwrap();
        let mut link = tar::Header::new_gnu();
        link.set_entry_type(tar::EntryType::Symlink);
        link.set_size(0);
        builder
            .append_link(&mut link, "share/passwd", "/etc/passwd")
            .unwrap();
        let archive = builder.into_inner().unwrap().finish().unwrap();
        assert!(matches!(
            extract_plugin(&archive, 1024),
            Err(ArchiveError::BadExtra(why)) if why.contains("share/passwd is a link or a device")
        ));
        let big = targz(&[
            ("app-a", 0o755, b"#!/bin/sh\n"),
            ("share/big", 0o644, &[0u8; 2048]),
        ]);
        assert_eq!(
            extract_plugin(&big, 1024),
            Err(ArchiveError::TooLarge(1014))
        );
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
