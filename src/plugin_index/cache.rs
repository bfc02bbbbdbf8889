//! The last verified copy of each index: `APP_CACHE_DIR/indexes/NAME.json`,
//! the exact bytes whose signature was checked. `search`, `info`,
//! `install NAME`, completion and `plugin list` read only these (no network,
//! no signature check per call); `index update` replaces them, only with an
//! index that passed every check. The dispatch path never reads them.

use std::io;
use std::path::{Path, PathBuf};

use super::format::{self, IndexFile};
use super::MAX_INDEX_BYTES;
use crate::install::atomic;

/// The cache directory of indexes under `cache_dir`.
pub fn dir(cache_dir: &Path) -> PathBuf {
    cache_dir.join("indexes")
}

/// The cached copy of index `name`.
pub fn path(cache_dir: &Path, name: &str) -> PathBuf {
    dir(cache_dir).join(format!("{name}.json"))
}

/// The cached copy of index `name`: `Ok(None)` when there is none.
pub fn load(cache_dir: &Path, name: &str) -> Result<Option<IndexFile>, String> {
    use app_plugin::file::{read_limited, ReadError};
    let path = path(cache_dir, name);
    match read_limited(&path, MAX_INDEX_BYTES) {
        Ok(bytes) => format::parse(&bytes).map(Some).map_err(|e| {
            format!(
                "{} is unreadable ({e:?}); 'app plugin index update' fetches it again",
                path.display()
            )
        }),
        Err(ReadError::NotFound) => Ok(None),
        // Only `index update` wrote it: a bad copy (too large, not a
        // regular file) is not read, and the next update replaces it.
        Err(e) => Err(format!(
            "{} {e}; 'app plugin index update' fetches it again",
            path.display()
        )),
    }
}

/// Where the summary of index `name` is (the summary module makes and
/// reads it; this one only stores and removes it beside the index).
pub fn summary_path(cache_dir: &Path, name: &str) -> PathBuf {
    dir(cache_dir).join(format!("{name}.summary.json"))
}

/// Replaces the cached copy of `name` with `bytes` (already verified), then
/// its `summary` (`Summary::of` the index the bytes were read as).
pub fn store(
    cache_dir: &Path,
    name: &str,
    bytes: &[u8],
    summary: &impl serde::Serialize,
) -> io::Result<()> {
    std::fs::create_dir_all(dir(cache_dir))?;
    atomic::write(&path(cache_dir, name), bytes, 0o644)?;
    let summary = serde_json::to_vec(summary).map_err(io::Error::other)?;
    atomic::write(&summary_path(cache_dir, name), &summary, 0o644)
}

/// Drops the cached copy of `name` and its summary (none is fine).
pub fn remove(cache_dir: &Path, name: &str) -> io::Result<()> {
    for file in [summary_path(cache_dir, name), path(cache_dir, name)] {
        match std::fs::remove_file(file) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}
