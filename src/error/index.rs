//! Why an index, or a plugin from one, is refused: each problem names the
//! index, says why and what to do, and has its exit code (the table in
//! docs/plugin-index.md). [`crate::plugin_index`] makes them; they are
//! here, beside [`super::Error`], so that the error type depends on nothing.

use std::fmt;

use super::code;

/// A refusal concerning index `index`.
#[derive(Debug)]
pub struct IndexError {
    /// The index's name (as in `app plugin index list`).
    pub index: String,
    /// Its URL or path, as shown (a password masked).
    pub location: String,
    pub problem: Problem,
}

/// What was wrong.
#[derive(Debug)]
pub enum Problem {
    /// The index or its signature could not be fetched.
    Unreachable(String),
    /// The index is an HTML page (a login or error page), not JSON.
    Html,
    /// No `.minisig` beside the index (and the index is not added as unsigned).
    NoSignature(String),
    /// The `.minisig` exists but could not be fetched (it stalled, the
    /// connection failed): said as such, never with advice to go unsigned.
    SignatureUnreachable(String),
    /// The signature is unreadable, or does not match the bytes.
    BadSignature(String),
    /// A valid signature by another key than the one the index was added with.
    OtherKey,
    /// Signed, but another index: it names itself `got` (or nothing), not
    /// `expected`, the name recorded when it was added.
    NotThisIndex {
        expected: String,
        got: Option<String>,
    },
    /// Its `signed_at` is older than the `--max-age` it was added with
    /// (`None`: it has no `signed_at`).
    TooOld {
        signed_at: Option<String>,
        max_age_secs: u64,
    },
    /// The same serial as the copy already verified, with other contents.
    SameSerialChanged(u64),
    /// Not the JSON of an `app.index/v1` index.
    Malformed(String),
    /// A `serial` lower than the copy already verified: a rollback.
    Rollback { cached: u64, got: u64 },
    /// Past its `expires` date: a frozen or stale mirror.
    Expired(String),
    /// Bigger than the size limit.
    TooLarge(u64),
    /// The cached copy cannot be read or written.
    Cache(String),
}

impl Problem {
    /// The exit code `app` ends with for this problem.
    pub fn exit_code(&self) -> i32 {
        match self {
            Problem::Unreachable(_) | Problem::SignatureUnreachable(_) => code::DOWNLOAD,
            Problem::Html
            | Problem::NoSignature(_)
            | Problem::BadSignature(_)
            | Problem::OtherKey
            | Problem::NotThisIndex { .. }
            | Problem::Malformed(_)
            | Problem::TooLarge(_) => code::VERIFY,
            Problem::Rollback { .. }
            | Problem::Expired(_)
            | Problem::TooOld { .. }
            | Problem::SameSerialChanged(_) => code::STALE_INDEX,
            Problem::Cache(_) => code::FAILURE,
        }
    }

    /// What to do about it.
    fn advice(&self, index: &str) -> String {
        match self {
            Problem::Unreachable(_) => format!(
                "check the URL and your connection; the last verified copy of '{index}' (if any) is still used"
            ),
            Problem::Html => {
                "the URL must serve the index's JSON itself (is it behind a login page, or a wrong path?)".into()
            }
            Problem::NoSignature(_) => format!(
                "ask its publisher for the .minisig file; nothing was changed (an index nobody signs can only be added with --insecure-no-signature, which lets whoever serves '{index}' choose what you install)"
            ),
            Problem::SignatureUnreachable(_) => format!(
                "try again later, or check your connection; nothing was changed and the last verified copy of '{index}' (if any) is still used"
            ),
            Problem::NotThisIndex { .. } => format!(
                "the server may be serving another index signed by the same key in its place; nothing was changed. If its publisher really renamed it, 'app plugin index remove {index}' and add it again"
            ),
            Problem::TooOld { signed_at: None, .. } => format!(
                "ask its publisher to add \"signed_at\", or 'app plugin index remove {index}' and add it again without --max-age; nothing was changed"
            ),
            Problem::TooOld { .. } => format!(
                "the server may be a frozen mirror; its publisher must sign it again (or 'app plugin index remove {index}' and add it again with a longer --max-age); nothing was changed"
            ),
            Problem::SameSerialChanged(_) => "its publisher must raise the serial with every change (or someone changed it in between); the last verified copy is kept".into(),
            Problem::BadSignature(_) => format!(
                "nothing was changed and the last verified copy of '{index}' (if any) is still used; tell the index's publisher (what the server serves is not what was signed)"
            ),
            Problem::OtherKey => format!(
                "nothing was changed; if its publisher really changed keys, get the new public key from them, then 'app plugin index remove {index}' and add it again with it ('app plugin index list' shows the key it was added with)"
            ),
            Problem::Malformed(_) => "tell the index's publisher; nothing was changed".into(),
            Problem::Rollback { .. } => format!(
                "someone may be replaying an old index; if its publisher really restarted its serials, remove and add the index again (app plugin index remove {index})"
            ),
            Problem::Expired(_) => "the server may be a stale or frozen mirror; tell the index's publisher, who must sign it again with a later \"expires\"".into(),
            Problem::TooLarge(_) => "is it the right URL?".into(),
            Problem::Cache(_) => "check the cache directory (APP_CACHE_DIR) and its permissions".into(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Unreachable(why) => write!(f, "cannot be fetched: {why}"),
            Problem::Html => f.write_str("is an HTML page, not a JSON index"),
            Problem::NoSignature(why) => write!(f, "has no signature ({why})"),
            // A timeout is a stall: said in so many words.
            Problem::SignatureUnreachable(why) if why.contains("timeout: ") => {
                write!(f, "has a signature whose download stalled: {why}")
            }
            Problem::SignatureUnreachable(why) => {
                write!(f, "has a signature that cannot be fetched: {why}")
            }
            Problem::BadSignature(why) => write!(f, "failed signature verification: {why}"),
            Problem::OtherKey => f.write_str(
                "is signed by another key than the one it was added with, so it is refused",
            ),
            Problem::NotThisIndex { expected, got } => {
                match got {
                    Some(got) => write!(f, "is signed, but names itself \"{}\"", got.escape_debug())?,
                    None => f.write_str("is signed, but does not name itself (no \"index\" field)")?,
                }
                write!(
                    f,
                    ", not \"{}\" as when it was added, so it is refused",
                    expected.escape_debug()
                )
            }
            Problem::TooOld {
                signed_at: Some(when),
                max_age_secs,
            } => write!(
                f,
                "was signed on {}, longer ago than the --max-age of {} it was added with, so it is refused",
                when.escape_debug(),
                show_age(*max_age_secs)
            ),
            Problem::TooOld {
                signed_at: None,
                max_age_secs,
            } => write!(
                f,
                "has no \"signed_at\", so the --max-age of {} it was added with cannot be checked, and it is refused",
                show_age(*max_age_secs)
            ),
            Problem::SameSerialChanged(serial) => write!(
                f,
                "has serial {serial}, the same as the copy already verified, but other contents, so it is refused"
            ),
            Problem::Malformed(why) => write!(f, "is not a valid app.index/v1 index: {why}"),
            Problem::Rollback { cached, got } => write!(
                f,
                "has serial {got}, lower than the {cached} of the copy already verified (a rollback), so it is refused"
            ),
            Problem::Expired(when) => write!(f, "expired on {when}, so it is refused"),
            Problem::TooLarge(limit) => write!(f, "is larger than {limit} bytes"),
            Problem::Cache(why) => write!(f, "cached copy: {why}"),
        }
    }
}

/// A duration of `index add --max-age`, as it is typed: `30d`, `12h`,
/// `90m`, `45s` (the largest unit that divides it).
pub fn show_age(secs: u64) -> String {
    match secs {
        0 => "0s".into(),
        s if s % 86_400 == 0 => format!("{}d", s / 86_400),
        s if s % 3600 == 0 => format!("{}h", s / 3600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

impl fmt::Display for IndexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "index '{}' ({}) {}; {}",
            self.index,
            self.location,
            self.problem,
            self.problem.advice(&self.index)
        )
    }
}
