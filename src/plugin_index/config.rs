//! The indexes a user added: `APP_CONFIG_DIR/indexes.json`, written by
//! `app plugin index add` and `remove` (atomically, under a lock). It holds
//! each index's name, URL, public key and the *path* of its token file;
//! never a token.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::install::atomic;

/// File name inside the config directory.
pub const FILE: &str = "indexes.json";
/// The largest `indexes.json` read.
pub const MAX_BYTES: u64 = 1024 * 1024;

/// One added index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexConfig {
    /// Lowercase letters, digits, `-` and `_` (like a plugin name).
    pub name: String,
    /// An http(s) URL, or an absolute path.
    pub url: String,
    /// The minisign public key (base64, `RW…`); `None` only when added
    /// with `--insecure-no-signature`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// A file holding a bearer token for the index's host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub insecure_no_signature: bool,
    /// The `index` field of the document first verified (its publisher's
    /// name for it): every later copy must carry the same. `None` for an
    /// index that did not name itself then (the first copy that does sets it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// `index add --max-age`: a copy signed longer ago (by its `signed_at`)
    /// is refused, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_age_secs: Option<u64>,
}

impl IndexConfig {
    /// Whether the index is read from this machine's files.
    pub fn is_local(&self) -> bool {
        !matches!(
            crate::install::url::kind(&self.url),
            crate::install::url::Kind::Http
        )
    }
}

/// The whole file.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Indexes {
    #[serde(default)]
    pub indexes: Vec<IndexConfig>,
}

impl Indexes {
    /// Reads `dir/indexes.json`; none is an empty list.
    pub fn load(dir: &Path) -> Result<Indexes, String> {
        use app_plugin::file::{read_limited, ReadError};
        let path = dir.join(FILE);
        match read_limited(&path, MAX_BYTES) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                format!(
                    "{} is not valid ({}); fix it, or remove it and add the indexes again",
                    path.display(),
                    app_plugin::text::escape_for_terminal(&e.to_string())
                )
            }),
            Err(ReadError::NotFound) => Ok(Indexes::default()),
            Err(e) => Err(format!("{} {e}", path.display())),
        }
    }

    /// Writes `dir/indexes.json` atomically.
    pub fn save(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let mut bytes = serde_json::to_vec_pretty(self).map_err(io::Error::other)?;
        bytes.push(b'\n');
        atomic::write(&dir.join(FILE), &bytes, 0o644)
    }

    pub fn get(&self, name: &str) -> Option<&IndexConfig> {
        self.indexes.iter().find(|i| i.name == name)
    }
}
