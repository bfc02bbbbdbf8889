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
    /// The signature is unreadable, by another key, or does not match the bytes.
    BadSignature(String),
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
            Problem::Unreachable(_) => code::DOWNLOAD,
            Problem::Html
            | Problem::NoSignature(_)
            | Problem::BadSignature(_)
            | Problem::Malformed(_)
            | Problem::TooLarge(_) => code::VERIFY,
            Problem::Rollback { .. } | Problem::Expired(_) => code::STALE_INDEX,
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
                "ask its publisher for the .minisig file, or, if you accept an index nobody signed: app plugin index add {index} URL --insecure-no-signature"
            ),
            Problem::BadSignature(_) => format!(
                "the index was changed after it was signed, or signed by another key: check the key ('app plugin index list' shows it; to change it, 'app plugin index remove {index}' and add it again with the publisher's key); nothing was changed"
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
            Problem::BadSignature(why) => write!(f, "failed signature verification: {why}"),
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
