//! What `app` and its fetch helper `app_fetch` (the `app-fetch` crate,
//! fetch/) say to each other: both sides depend on this crate, and on
//! nothing of each other, so they cannot disagree (docker's `cli-plugins`
//! metadata package is the model). It is private between an `app` and the
//! `app_fetch` of the same build, and not published.
//!
//! `app` runs `app_fetch SOURCE [--sha256 HEX] [--raw MAX] [--token-file FILE]`
//! ([`args`], read back with [`parse_args`]): `--raw` fetches any file (a
//! plugin index, its signature) of at most MAX bytes, unchecked and
//! unpacked; `--token-file` sends `Authorization: Bearer` with the token in
//! FILE to SOURCE's own origin only, never to a redirect elsewhere (the
//! token itself is never on a command line). `app_fetch` gets the executable SOURCE stands for
//! (step 2 of an install, see `app::install`) and writes to stdout one JSON line,
//! either `{"ok":{"file_name":…,"archive_sha256":…,"len":N}}` followed by
//! exactly N bytes of the executable, or `{"error":{"code":C,"message":…}}`
//! ([`write_answer`], read back with [`read_answer`]). Its stderr is the
//! terminal's (download progress), and it writes no file.
//!
//! Besides the request and the answer, what both sides must read alike:
//! [`Source`] (what `plugin install` is given), [`url`] (which URLs, shown
//! how), [`checksum`], and [`Error`] with its exit [`code`]s.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

pub mod checksum;
pub mod publish;
pub mod url;

mod answer;
mod error;
mod source;

pub use answer::{read_answer, write_answer, Broken, Failed};
pub use error::{code, Error, Result};
pub use source::{
    extra_path_ok, Artifact, ExtraFile, Source, SourceError, EXTRA_DIRS, MAX_EXTRA_FILES,
};

/// File name of the helper. It does not start with `app-`, so it is never
/// taken for a plugin.
pub const HELPER: &str = "app_fetch";

/// Largest plugin (file, download or archive member) accepted unless
/// [`MAX_BYTES_VAR`] says otherwise.
pub const DEFAULT_MAX_BYTES: u64 = 256 * 1024 * 1024;
/// Environment variable that overrides [`DEFAULT_MAX_BYTES`].
pub const MAX_BYTES_VAR: &str = "APP_INSTALL_MAX_BYTES";

/// The size cap in force: `app_fetch` refuses more, and `app` reads no more
/// than that (plus the answer line) from it.
pub fn max_bytes() -> u64 {
    std::env::var(MAX_BYTES_VAR)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_MAX_BYTES)
}

/// What `app` asks of `app_fetch`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchArgs {
    pub source: Source,
    /// The checksum the fetched file must have.
    pub sha256: Option<String>,
    /// Fetch any file of at most this many bytes, as is (no unpacking, no
    /// executable check).
    pub raw: Option<u64>,
    /// A file holding a bearer token for SOURCE's origin.
    pub token_file: Option<PathBuf>,
}

impl FetchArgs {
    /// A plain plugin fetch: `source`, checked against `sha256`.
    pub fn plugin(source: &Source, sha256: Option<&str>) -> FetchArgs {
        FetchArgs {
            source: source.clone(),
            sha256: sha256.map(String::from),
            raw: None,
            token_file: None,
        }
    }
}

/// The arguments `app` runs `app_fetch` with: the whole source, password
/// included, and the options.
pub fn args(fetch: &FetchArgs) -> Vec<String> {
    let mut args = vec![fetch.source.to_arg()];
    if let Some(sum) = &fetch.sha256 {
        args.extend(["--sha256".to_string(), sum.clone()]);
    }
    if let Some(max) = fetch.raw {
        args.extend(["--raw".to_string(), max.to_string()]);
    }
    if let Some(file) = &fetch.token_file {
        args.extend(["--token-file".to_string(), file.display().to_string()]);
    }
    args
}

/// `app_fetch`'s reading of [`args`]; `None` for anything else.
pub fn parse_args(args: &[OsString]) -> Option<FetchArgs> {
    let args: Vec<&str> = args.iter().map(|a| a.to_str()).collect::<Option<_>>()?;
    let (source, mut rest) = args.split_first()?;
    // `app` passes absolute paths; anything else is resolved against "/".
    let mut fetch = FetchArgs::plugin(&Source::parse(source, Path::new("/")).ok()?, None);
    while let [flag, value, tail @ ..] = rest {
        match *flag {
            "--sha256" if fetch.sha256.is_none() => fetch.sha256 = Some(value.to_string()),
            "--raw" if fetch.raw.is_none() => fetch.raw = Some(value.parse().ok()?),
            "--token-file" if fetch.token_file.is_none() => {
                fetch.token_file = Some(PathBuf::from(value))
            }
            _ => return None,
        }
        rest = tail;
    }
    rest.is_empty().then_some(fetch)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os_args(fetch: &FetchArgs) -> Vec<OsString> {
        args(fetch).into_iter().map(OsString::from).collect()
    }

    #[test]
    fn arguments_read_back_as_written() {
        let url = Source::Url("https://u:p@h/app-foo".into());
        let read = parse_args(&os_args(&FetchArgs::plugin(&url, Some("ab"))));
        assert_eq!(read, Some(FetchArgs::plugin(&url, Some("ab"))));
        let path = Source::Path("/d/app-foo".into());
        let plain = FetchArgs::plugin(&path, None);
        assert_eq!(parse_args(&os_args(&plain)), Some(plain));
        let raw = FetchArgs {
            raw: Some(1024),
            token_file: Some("/t/token".into()),
            ..FetchArgs::plugin(&url, None)
        };
        assert_eq!(parse_args(&os_args(&raw)), Some(raw));
        assert_eq!(parse_args(&["a".into(), "--sha".into(), "b".into()]), None);
        assert_eq!(parse_args(&["a".into(), "--raw".into()]), None);
        assert_eq!(parse_args(&[]), None);
    }
}
