//! What `plugin install` is given ([`Source`]) and what `app_fetch` hands
//! back for it ([`Artifact`]).

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use crate::url;

/// Where a plugin comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A local file (absolute).
    Path(PathBuf),
    /// An `http://` or `https://` URL.
    Url(String),
}

/// Why a text is not a [`Source`]: a usage error, worded for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceError {
    /// A `file://` URL naming another host, or that cannot be decoded (as
    /// typed, a password masked).
    BadFile(String),
    /// Any other `scheme://` (the scheme's name).
    Unsupported(String),
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SourceError::BadFile(text) => write!(
                f,
                "'{text}' does not name a file on this machine; write a file URL as file:///absolute/path, or give the path itself"
            ),
            SourceError::Unsupported(scheme) => write!(
                f,
                "'{scheme}://' URLs are not supported; app plugin install takes a local path, a file:///path, or an http:// or https:// URL"
            ),
        }
    }
}

impl std::error::Error for SourceError {}

impl Source {
    /// Reads what the user typed: an `http://` or `https://` URL, a
    /// `file:///path` (that path), or a path (made absolute against `cwd`,
    /// without `.` or `..`, so `./app-foo` is recorded as `/dir/app-foo`).
    /// Any other `scheme://` is refused (see [`url`]).
    pub fn parse(text: &str, cwd: &Path) -> Result<Source, SourceError> {
        match url::kind(text) {
            url::Kind::Path => Ok(Source::Path(absolute(&cwd.join(text)))),
            url::Kind::Http => Ok(Source::Url(text.to_string())),
            url::Kind::File(path) => Ok(Source::Path(absolute(Path::new(&path)))),
            url::Kind::BadFile => Err(SourceError::BadFile(url::redact(text))),
            url::Kind::Unsupported(scheme) => Err(SourceError::Unsupported(scheme)),
        }
    }

    /// How it is shown and recorded in the index: a URL's password masked.
    pub fn to_record(&self) -> String {
        match self {
            Source::Path(p) => p.display().to_string(),
            Source::Url(u) => url::redact(u),
        }
    }

    /// The whole source, password included, for `app_fetch` alone.
    pub fn to_arg(&self) -> String {
        match self {
            Source::Path(p) => p.display().to_string(),
            Source::Url(u) => u.clone(),
        }
    }
}

/// `path` with its directory resolved (`..`, `.` and links to directories),
/// the file name kept as typed: a link named `app-foo` stays the source, so
/// an upgrade follows it. Where the directory cannot be resolved, only the
/// `.` components are dropped.
fn absolute(path: &Path) -> PathBuf {
    let resolved = match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) => fs::canonicalize(dir).ok().map(|d| d.join(name)),
        _ => None,
    };
    resolved.unwrap_or_else(|| path.components().collect())
}

/// A verified executable, in memory, ready to be written.
#[derive(Debug, Clone)]
pub struct Artifact {
    /// The file name it came with (`app-foo`), if any.
    pub file_name: Option<String>,
    pub bytes: Vec<u8>,
    /// Checksum of the `.tar.gz` it was unpacked from.
    pub archive_sha256: Option<String>,
    /// The files an archive holds beside it, under `completions/`, `man/`
    /// and `share/` (see [`extra_path_ok`]).
    pub files: Vec<ExtraFile>,
}

/// A file of a multi-file plugin, beside its executable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtraFile {
    /// Relative, `/`-separated, starting with one of [`EXTRA_DIRS`].
    pub path: String,
    /// 0o755 or 0o644.
    pub mode: u32,
    pub bytes: Vec<u8>,
}

/// The folders of an archive installed beside a plugin's executable.
pub const EXTRA_DIRS: [&str; 3] = ["completions", "man", "share"];
/// The most files a plugin may have beside its executable.
pub const MAX_EXTRA_FILES: usize = 1000;

/// Whether `path` may be a plugin's extra file: relative, in one of
/// [`EXTRA_DIRS`], every part a plain name (no `..`, no `.`, no empty
/// part, no control character), at most 512 bytes. Both sides check it:
/// `app_fetch` when unpacking, `app` before writing.
///
/// ```
/// use app_fetch_protocol::extra_path_ok;
/// assert!(extra_path_ok("share/app-hello/greeting.txt"));
/// assert!(!extra_path_ok("share/../../.bashrc"));
/// assert!(!extra_path_ok("bin/evil") && !extra_path_ok("/share/x") && !extra_path_ok("share"));
/// ```
pub fn extra_path_ok(path: &str) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    parts.len() >= 2
        && path.len() <= 512
        && EXTRA_DIRS.contains(&parts[0])
        && parts
            .iter()
            .all(|p| !p.is_empty() && *p != "." && *p != ".." && !p.chars().any(char::is_control))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_parse_as_urls_or_absolute_paths() {
        let cwd = Path::new("/home/u");
        let parse = |s: &str| Source::parse(s, cwd).unwrap();
        assert_eq!(
            parse("https://x.org/a/app-foo?x=1"),
            Source::Url("https://x.org/a/app-foo?x=1".into())
        );
        assert_eq!(
            parse("bin/app-foo"),
            Source::Path("/home/u/bin/app-foo".into())
        );
        assert_eq!(parse("/abs/app-foo"), Source::Path("/abs/app-foo".into()));
        assert_eq!(
            parse("file:///abs/app-foo"),
            Source::Path("/abs/app-foo".into())
        );
        assert_eq!(
            Source::parse("ftp://h/app-foo", cwd),
            Err(SourceError::Unsupported("ftp".into()))
        );
    }
}
