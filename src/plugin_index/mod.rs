//! Plugin indexes: signed catalogues of plugins that `app plugin install
//! NAME` installs from (docs/plugin-index.md).
//!
//! The order of an update is what makes it safe, and nothing is written
//! before its last step:
//! 1. fetch the index's bytes (over HTTP through `app_fetch`, with the
//!    bearer token of `--token-file` for the index's own origin only; or a
//!    local file), at most [`MAX_INDEX_BYTES`];
//! 2. fetch `URL.minisig` and verify it, with the key the index was added
//!    with, over exactly those bytes ([`verify`]), before parsing anything;
//! 3. parse and check them ([`format`](mod@format)): the format, then the `serial`
//!    against the cached copy's (a lower one is a rollback), then `expires`;
//! 4. only then replace the cached copy ([`cache`]) and its [`summary`].
//!
//! Modules: [`config`] (the indexes added, `indexes.json`), [`cache`],
//! [`format`](mod@format), [`verify`], [`lookup`] (finding a plugin by name across the
//! cached indexes); every refusal, its message and exit code, is
//! [`crate::error::index`].

pub mod age;
pub mod cache;
pub mod config;
pub mod format;
pub mod lookup;
pub mod summary;
pub mod verify;

use std::path::Path;
use std::time::SystemTime;

use crate::error::index::{IndexError, Problem};
use crate::error::{code, Error, Result};
use crate::install::{self, url, Source};
use app_fetch_protocol::FetchArgs;
use config::IndexConfig;
use format::IndexFile;

/// The largest index fetched or read.
pub const MAX_INDEX_BYTES: u64 = 32 * 1024 * 1024;
/// The largest `.minisig` fetched or read.
pub const MAX_SIGNATURE_BYTES: u64 = 64 * 1024;

/// An index that passed every check: its exact bytes and their reading.
pub struct Verified {
    pub bytes: Vec<u8>,
    pub index: IndexFile,
}

impl Verified {
    /// The self-name to record for index `cfg` now: the document's, when
    /// none was recorded yet (an index added before it named itself).
    pub fn new_id(&self, cfg: &IndexConfig) -> Option<&str> {
        match (&cfg.id, &self.index.index) {
            (None, Some(id)) => Some(id),
            _ => None,
        }
    }

    /// The warning an index that does not name itself gets (taken, for
    /// this version of app, as before names were checked).
    pub fn unbound_warning(&self, cfg: &IndexConfig) -> Option<String> {
        (cfg.id.is_none() && self.index.index.is_none() && cfg.key.is_some()).then(|| {
            format!(
                "index '{}' does not name itself (no \"index\" field), so another index signed by the same key could be served in its place; ask its publisher to add one (the next version of app will refuse it)",
                cfg.name
            )
        })
    }
}

/// Where the signature of the index at `location` is: `URL.minisig`, the
/// suffix added to the URL's path (before a `?query` or `#fragment`).
pub fn signature_location(location: &str) -> String {
    if matches!(url::kind(location), url::Kind::Http) {
        if let Some(at) = location.find(['?', '#']) {
            return format!("{}.minisig{}", &location[..at], &location[at..]);
        }
    }
    format!("{location}.minisig")
}

/// Steps 1 to 3 of an update (see the module docs): fetches index `cfg`
/// and checks it, comparing its serial with `cached_serial`. Writes nothing.
pub fn fetch_verified(
    cfg: &IndexConfig,
    cached_serial: Option<u64>,
    now: SystemTime,
) -> Result<Verified> {
    let refuse = |problem| Error::Index(refusal(cfg, problem));
    let bytes = fetch(cfg, &cfg.url, MAX_INDEX_BYTES).map_err(|e| match e {
        Fetched::Problem(p) => refuse(p),
        Fetched::Missing(why) => refuse(Problem::Unreachable(why)),
        Fetched::Other(e) => e,
    })?;
    if looks_like_html(&bytes) {
        return Err(refuse(Problem::Html));
    }
    match &cfg.key {
        Some(key) => {
            let location = signature_location(&cfg.url);
            let signature = fetch(cfg, &location, MAX_SIGNATURE_BYTES).map_err(|e| match e {
                Fetched::Missing(why) => refuse(Problem::NoSignature(why)),
                // It is there, or may be: a stall is no reason to go unsigned.
                Fetched::Problem(Problem::Unreachable(why)) => {
                    refuse(Problem::SignatureUnreachable(why))
                }
                // Said of the signature, not of the index.
                Fetched::Problem(Problem::TooLarge(max)) => refuse(Problem::BadSignature(format!(
                    "the .minisig file is larger than {max} bytes"
                ))),
                Fetched::Problem(p) => refuse(p),
                Fetched::Other(e) => e,
            })?;
            verify::verify(key, &bytes, &signature).map_err(|e| match e {
                verify::Refused::OtherKey => refuse(Problem::OtherKey),
                verify::Refused::Bad(why) => refuse(Problem::BadSignature(why)),
            })?;
        }
        None if cfg.insecure_no_signature => {}
        None => {
            return Err(refuse(Problem::NoSignature(
                "no key was given for it".into(),
            )))
        }
    }
    let index = format::parse(&bytes).map_err(|e| match e {
        format::Invalid::Malformed(why) => refuse(Problem::Malformed(why)),
        format::Invalid::Expired(when) => refuse(Problem::Expired(when)),
    })?;
    // Before the serial: another index's serial must not count as this one's.
    if let Some(expected) = &cfg.id {
        if index.index.as_ref() != Some(expected) {
            return Err(refuse(Problem::NotThisIndex {
                expected: expected.clone(),
                got: index.index.clone(),
            }));
        }
    }
    if let Some(cached) = cached_serial.filter(|c| *c > index.serial) {
        return Err(refuse(Problem::Rollback {
            cached,
            got: index.serial,
        }));
    }
    format::check_fresh(&index, now).map_err(|e| match e {
        format::Invalid::Expired(when) | format::Invalid::Malformed(when) => {
            refuse(Problem::Expired(when))
        }
    })?;
    if let Some(max_age_secs) = cfg.max_age_secs {
        check_age(&index, max_age_secs, now).map_err(refuse)?;
    }
    Ok(Verified { bytes, index })
}

/// The `--max-age` bound: a `signed_at` within it, and not in the future.
/// Also checked of the cached copy when it is used (`install`, `upgrade`).
pub fn check_age(
    index: &IndexFile,
    max_age_secs: u64,
    now: SystemTime,
) -> std::result::Result<(), Problem> {
    let Some(text) = &index.signed_at else {
        return Err(Problem::TooOld {
            signed_at: None,
            max_age_secs,
        });
    };
    // `parse` checked the date.
    let signed = format::parse_rfc3339(text).unwrap_or(std::time::UNIX_EPOCH);
    match age::check(signed, max_age_secs, now) {
        Ok(()) => Ok(()),
        Err(true) => Err(Problem::TooOld {
            signed_at: Some(text.clone()),
            max_age_secs,
        }),
        Err(false) => Err(Problem::Malformed(format!(
            "signed_at \"{}\" is more than {} s ahead of this machine's clock (check the clock, or tell the publisher)",
            text.escape_debug(),
            age::SKEW.as_secs()
        ))),
    }
}

/// Fetches index `cfg` and, when it passes every check, replaces its
/// cached copy. On any refusal the cached copy is left as it was.
pub fn update(cfg: &IndexConfig, cache_dir: &Path) -> Result<Verified> {
    let cached = summary::load(cache_dir, &cfg.name)
        .ok()
        .flatten()
        .map(|s| s.serial);
    let verified = fetch_verified(cfg, cached, SystemTime::now())?;
    if cached == Some(verified.index.serial) {
        // Same serial: the same bytes, or a change the serial hides.
        let old =
            app_plugin::file::read_limited(&cache::path(cache_dir, &cfg.name), MAX_INDEX_BYTES);
        if old.is_ok_and(|old| old != verified.bytes) {
            return Err(Error::Index(refusal(
                cfg,
                Problem::SameSerialChanged(verified.index.serial),
            )));
        }
    }
    let summary = summary::Summary::of(&verified.index);
    cache::store(cache_dir, &cfg.name, &verified.bytes, &summary)
        .map_err(|e| Error::Index(refusal(cfg, Problem::Cache(e.to_string()))))?;
    Ok(verified)
}

/// The refusal of index `cfg` for `problem`.
pub fn refusal(cfg: &IndexConfig, problem: Problem) -> IndexError {
    IndexError {
        index: cfg.name.clone(),
        location: url::redact(&cfg.url),
        problem,
    }
}

enum Fetched {
    Problem(Problem),
    /// Not there (HTTP 404 or 410, no such file): for a signature, "unsigned".
    Missing(String),
    Other(Error),
}

/// The bytes at `location` (the index's URL or path, or its signature's),
/// at most `max`. Over HTTP, through `app_fetch`, with the index's token.
fn fetch(cfg: &IndexConfig, location: &str, max: u64) -> std::result::Result<Vec<u8>, Fetched> {
    let source = Source::parse(location, Path::new("/")).map_err(|e| Fetched::Other(e.into()))?;
    match &source {
        Source::Path(path) => {
            use app_plugin::file::{read_limited, ReadError};
            read_limited(path, max).map_err(|e| match e {
                ReadError::NotFound => {
                    Fetched::Missing(format!("{} does not exist", path.display()))
                }
                ReadError::TooLarge { .. } => Fetched::Problem(Problem::TooLarge(max)),
                other => {
                    Fetched::Problem(Problem::Unreachable(format!("{} {other}", path.display())))
                }
            })
        }
        Source::Url(_) => {
            let args = FetchArgs {
                raw: Some(max),
                token_file: cfg.token_file.clone(),
                ..FetchArgs::plugin(&source, None)
            };
            match install::helper::fetch(&args) {
                Ok(artifact) => Ok(artifact.bytes),
                Err(e) => Err(match e.exit_code() {
                    code::DOWNLOAD => {
                        // The advice comes once, from the index's refusal.
                        let why = e
                            .to_string()
                            .trim_end_matches("; check the URL and your connection")
                            .to_string();
                        if why.ends_with("answered HTTP 404") || why.ends_with("answered HTTP 410")
                        {
                            Fetched::Missing(why)
                        } else {
                            Fetched::Problem(Problem::Unreachable(why))
                        }
                    }
                    code::VERIFY => Fetched::Problem(Problem::TooLarge(max)),
                    _ => Fetched::Other(e),
                }),
            }
        }
    }
}

/// Whether `bytes` start like an HTML page (a portal's login, an error
/// page), which deserves its own message rather than "bad signature".
fn looks_like_html(bytes: &[u8]) -> bool {
    let start: Vec<u8> = bytes
        .iter()
        .skip_while(|b| b.is_ascii_whitespace())
        .take(15)
        .map(u8::to_ascii_lowercase)
        .collect();
    start.starts_with(b"<!doctype html")
        || start.starts_with(b"<html")
        || start.starts_with(b"<head")
}
