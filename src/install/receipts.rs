//! The receipts: the record of what `app plugin install` put in the user
//! plugin directory, `APP_DATA_DIR/plugins/.receipts.json`, name → source,
//! version, sha256, time (krew's word: "index" is the signed catalogues).
//!
//! `remove` and `upgrade` act only on names found here, and `plugin list`
//! reads it to show versions and sources. The file is always replaced
//! atomically (see [`super::atomic`]), and changes are made under an
//! exclusive lock (`.receipts.lock`) so two installs cannot lose each
//! other's entries.
//!
//! Before, the same record was `.index.json`: when only that one is there,
//! it is read, and written to `.receipts.json` (then removed) once, by the
//! first command that can write the directory.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::atomic;

/// File name of the receipts inside the plugin directory.
pub const FILE: &str = ".receipts.json";
/// File name of the lock beside it.
pub const LOCK_FILE: &str = ".receipts.lock";
/// Where the receipts were before (read and migrated once).
pub const OLD_FILE: &str = ".index.json";
/// The old lock, removed with the old record.
const OLD_LOCK_FILE: &str = ".index.lock";

/// Far more than any real record; a FIFO or device here is refused.
const MAX_BYTES: u64 = 16 << 20;

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
    /// Pinned at its version (`install NAME@VERSION`, `plugin pin`):
    /// `upgrade --all` leaves it, `upgrade NAME@VERSION` moves it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pinned: bool,
    /// The files installed beside it (`share/x.txt`), in `.files/NAME/`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
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

/// All the receipts of a plugin directory.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Receipts {
    /// Format version of this file.
    #[serde(default = "format_version")]
    pub version: u32,
    #[serde(default)]
    pub plugins: BTreeMap<String, Entry>,
}

fn format_version() -> u32 {
    1
}

/// Why the receipts could not be read.
#[derive(Debug)]
pub enum ReceiptsError {
    Io(PathBuf, io::Error),
    Corrupt(PathBuf, serde_json::Error),
}

impl std::fmt::Display for ReceiptsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReceiptsError::Io(path, e) => write!(f, "cannot read {}: {e}", path.display()),
            ReceiptsError::Corrupt(path, e) => write!(
                f,
                "{} is not a valid install record ({e}); fix or delete it (plugins stay installed, only their records go)",
                path.display()
            ),
        }
    }
}

impl Receipts {
    /// Reads the receipts of plugin directory `dir`; none yet is empty.
    /// An old `.index.json` alone is read, and migrated when `dir` can be
    /// written (a read-only directory keeps using it).
    pub fn load(dir: &Path) -> Result<Receipts, ReceiptsError> {
        if let Some(receipts) = read(&dir.join(FILE))? {
            return Ok(receipts);
        }
        let old = dir.join(OLD_FILE);
        let Some(receipts) = read(&old)? else {
            return Ok(Receipts {
                version: format_version(),
                plugins: BTreeMap::new(),
            });
        };
        migrate(dir, &receipts);
        Ok(receipts)
    }

    /// Writes the receipts atomically into `dir`.
    pub fn save(&self, dir: &Path) -> io::Result<()> {
        let mut bytes = serde_json::to_vec_pretty(self).map_err(io::Error::other)?;
        bytes.push(b'\n');
        atomic::write(&dir.join(FILE), &bytes, 0o644)
    }
}

/// The receipts at `path`; `None` when there is no such file.
fn read(path: &Path) -> Result<Option<Receipts>, ReceiptsError> {
    use app_plugin::file::{read_limited, ReadError};
    match read_limited(path, MAX_BYTES) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| ReceiptsError::Corrupt(path.to_path_buf(), e)),
        Err(ReadError::NotFound) => Ok(None),
        Err(ReadError::Io(e)) => Err(ReceiptsError::Io(path.to_path_buf(), e)),
        Err(e) => Err(ReceiptsError::Io(
            path.to_path_buf(),
            io::Error::other(e.to_string()),
        )),
    }
}

/// Moves the old record to [`FILE`] under the lock: written first, the old
/// one removed after, so an interruption leaves one of them whole. Best
/// effort: where `dir` cannot be written, the old file stays and is read.
fn migrate(dir: &Path, receipts: &Receipts) {
    let Ok(_lock) = Lock::acquire(dir) else {
        return;
    };
    // Another command may have migrated it meanwhile.
    if dir.join(FILE).exists() {
        return;
    }
    if receipts.save(dir).is_ok() {
        let _ = fs::remove_file(dir.join(OLD_FILE));
        let _ = fs::remove_file(dir.join(OLD_LOCK_FILE));
        let _ = atomic::sync_dir(dir);
    }
}

/// An exclusive lock on a plugin directory's receipts; released on drop.
#[derive(Debug)]
pub struct Lock {
    _file: File,
}

impl Lock {
    /// Waits for the lock of plugin directory `dir` (which must exist).
    pub fn acquire(dir: &Path) -> io::Result<Lock> {
        Lock::at(&dir.join(LOCK_FILE))
    }

    /// Waits for the lock file `path` (made if missing; its directory must exist).
    pub fn at(path: &Path) -> io::Result<Lock> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)?;
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

    fn one() -> Receipts {
        let mut receipts = Receipts::default();
        receipts.plugins.insert(
            "foo".into(),
            Entry {
                source: "/src/app-foo".into(),
                version: Some("1.2.3".into()),
                sha256: "ab".repeat(32),
                archive_sha256: None,
                installed_at: rfc3339(SystemTime::now()),
                index: None,
                git: None,
                pinned: false,
                files: Vec::new(),
            },
        );
        receipts
    }

    #[test]
    fn save_then_load_round_trips_and_missing_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let empty = Receipts::load(dir.path()).unwrap();
        assert!(empty.plugins.is_empty());
        let receipts = one();
        receipts.save(dir.path()).unwrap();
        assert_eq!(Receipts::load(dir.path()).unwrap(), receipts);
    }

    #[test]
    fn the_old_record_is_read_and_migrated_once() {
        let dir = tempfile::tempdir().unwrap();
        let receipts = one();
        let old = serde_json::to_vec_pretty(&receipts).unwrap();
        fs::write(dir.path().join(OLD_FILE), &old).unwrap();
        assert_eq!(Receipts::load(dir.path()).unwrap(), receipts);
        assert!(!dir.path().join(OLD_FILE).exists());
        assert_eq!(
            serde_json::from_slice::<Receipts>(&fs::read(dir.path().join(FILE)).unwrap()).unwrap(),
            receipts
        );
        // Once: a stale old file beside the new one is not read again.
        fs::write(dir.path().join(OLD_FILE), b"{}").unwrap();
        assert_eq!(Receipts::load(dir.path()).unwrap(), receipts);
    }

    #[test]
    fn a_corrupt_record_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE), "{not json").unwrap();
        let err = Receipts::load(dir.path()).unwrap_err().to_string();
        assert!(err.contains(".receipts.json"), "{err}");
    }
}
