//! The record of what `app plugin install` put in the user plugin directory:
//! `APP_DATA_DIR/plugins/.index.json`, name → source, version, sha256, time.
//!
//! `remove` and `upgrade` act only on names found here, and `plugin list`
//! reads it to show versions and sources. The file is always replaced
//! atomically (see [`super::atomic`]), and changes are made under an
//! exclusive lock (`.index.lock`) so two installs cannot lose each other's
//! entries.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::atomic;

/// File name of the index inside the plugin directory.
pub const FILE: &str = ".index.json";
/// File name of the lock beside it.
pub const LOCK_FILE: &str = ".index.lock";

/// One installed plugin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Where it came from: an absolute path or a URL.
    pub source: String,
    /// The version its `__app_metadata` answer gave, if it answered.
    #[serde(default)]
    pub version: Option<String>,
    /// SHA-256 (hex) of the installed executable.
    pub sha256: String,
    /// SHA-256 of the `.tar.gz` it was unpacked from, for archives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive_sha256: Option<String>,
    /// When it was installed, RFC 3339 in UTC.
    pub installed_at: String,
    /// The plugin index it was chosen from (`install NAME`); its version
    /// is then the index's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<String>,
    /// The git repository it was built from (`install --git`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<GitRecord>,
}

/// Where a plugin built from source came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitRecord {
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rev: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The commit that was built.
    pub commit: String,
}

/// The whole index.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Index {
    /// Format version of this file.
    #[serde(default = "format_version")]
    pub version: u32,
    #[serde(default)]
    pub plugins: BTreeMap<String, Entry>,
}

fn format_version() -> u32 {
    1
}

/// Why the index could not be read.
#[derive(Debug)]
pub enum IndexError {
    Io(PathBuf, io::Error),
    Corrupt(PathBuf, serde_json::Error),
}

impl std::fmt::Display for IndexError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IndexError::Io(path, e) => write!(f, "cannot read {}: {e}", path.display()),
            IndexError::Corrupt(path, e) => write!(
                f,
                "{} is not a valid plugin index ({e}); fix or delete it (plugins stay installed, only their records go)",
                path.display()
            ),
        }
    }
}

impl Index {
    /// Reads the index of plugin directory `dir`; none yet is an empty index.
    pub fn load(dir: &Path) -> Result<Index, IndexError> {
        let path = dir.join(FILE);
        use app_plugin::file::{read_limited, ReadError};
        // Far more than any real index; a FIFO or device here is refused.
        match read_limited(&path, 16 << 20) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| IndexError::Corrupt(path, e)),
            Err(ReadError::NotFound) => Ok(Index {
                version: format_version(),
                plugins: BTreeMap::new(),
            }),
            Err(ReadError::Io(e)) => Err(IndexError::Io(path, e)),
            Err(e) => Err(IndexError::Io(path, io::Error::other(e.to_string()))),
        }
    }

    /// Writes the index atomically into `dir`.
    pub fn save(&self, dir: &Path) -> io::Result<()> {
        let mut bytes = serde_json::to_vec_pretty(self).map_err(io::Error::other)?;
        bytes.push(b'\n');
        atomic::write(&dir.join(FILE), &bytes, 0o644)
    }
}

/// An exclusive lock on a plugin directory's index; released on drop.
#[derive(Debug)]
pub struct Lock {
    _file: File,
}

impl Lock {
    /// Waits for the lock of plugin directory `dir` (which must exist).
    pub fn acquire(dir: &Path) -> io::Result<Lock> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(LOCK_FILE))?;
        // SAFETY: flock on a descriptor we own; it has no memory effects.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Lock { _file: file })
    }
}

pub use crate::time::rfc3339;

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    #[test]
    fn save_then_load_round_trips_and_missing_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let empty = Index::load(dir.path()).unwrap();
        assert!(empty.plugins.is_empty());
        let mut index = empty.clone();
        index.plugins.insert(
            "foo".into(),
            Entry {
                source: "/src/app-foo".into(),
                version: Some("1.2.3".into()),
                sha256: "ab".repeat(32),
                archive_sha256: None,
                installed_at: rfc3339(SystemTime::now()),
                index: None,
                git: None,
            },
        );
        index.save(dir.path()).unwrap();
        assert_eq!(Index::load(dir.path()).unwrap(), index);
    }

    #[test]
    fn a_corrupt_index_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE), "{not json").unwrap();
        let err = Index::load(dir.path()).unwrap_err().to_string();
        assert!(err.contains(".index.json"), "{err}");
    }
}
