//! `plugins.lock`, written beside `plugins.json` by `plugin apply`: the
//! exact version, index, archive URL and sha256 of every declared plugin,
//! so that `apply --locked` on another machine installs the same bytes (as
//! `Cargo.lock` does for crates).
//!
//! ```json
//! {"version": 1, "plugins": {"hello": {"version": "1.1.0", "index": "main",
//!   "url": "https://example.org/hello-1.1.0.tar.gz", "sha256": "…"}}}
//! ```

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One locked plugin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Locked {
    pub version: String,
    pub index: String,
    /// The archive (or executable) as the index names it, resolved: an
    /// http(s) URL (a password or query value masked) or an absolute path.
    pub url: String,
    /// Of the file at `url` as downloaded.
    pub sha256: String,
}

/// The whole lock.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockFile {
    #[serde(default = "format_version")]
    pub version: u32,
    #[serde(default)]
    pub plugins: BTreeMap<String, Locked>,
}

fn format_version() -> u32 {
    1
}

/// `plugins.lock` beside `set` (`plugins.json`).
pub fn path_for(set: &Path) -> PathBuf {
    set.with_file_name("plugins.lock")
}

impl LockFile {
    /// The lock at `path`: `Ok(None)` when there is none.
    pub fn load(path: &Path) -> Result<Option<LockFile>, String> {
        use app_plugin::file::{read_limited, ReadError};
        match read_limited(path, super::file::MAX_BYTES) {
            Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
                format!(
                    "{} is not a plugin lock ({e}); delete it and run 'app plugin apply' to write it again",
                    path.display()
                )
            }),
            Err(ReadError::NotFound) => Ok(None),
            Err(e) => Err(format!("{} {e}", path.display())),
        }
    }

    /// Writes the lock atomically.
    pub fn save(&self, path: &Path) -> io::Result<()> {
        let mut bytes = serde_json::to_vec_pretty(self).map_err(io::Error::other)?;
        bytes.push(b'\n');
        crate::install::atomic::write(path, &bytes, 0o644)
    }
}
