//! What `search`, completion, `plugin list` and `index list` need of a
//! cached index, kept beside it (`APP_CACHE_DIR/indexes/NAME.summary.json`)
//! so they answer fast on a large index: name, version, description and
//! homepage of every entry, and whether it has a way to be installed on
//! this machine; no platforms, URLs or checksums. Written from the verified
//! index whenever the cache is replaced ([`super::cache::store`]); when it is
//! missing, it is made from the cached index itself.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::config::{IndexConfig, Indexes};
use super::format::IndexFile;
use super::{cache, MAX_INDEX_BYTES};
use crate::error::{Error, Result};

/// The summary of one index.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    pub serial: u64,
    pub expires: String,
    /// The index's `signed_at`, for `--max-age` (absent in older summaries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signed_at: Option<String>,
    pub plugins: Vec<Brief>,
}

/// One entry of an index, briefly.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Brief {
    pub name: String,
    pub version: String,
    #[serde(default)]
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub homepage: Option<String>,
    /// It has a build for this machine, or a source.
    pub here: bool,
}

impl Brief {
    pub fn semver(&self) -> semver::Version {
        semver::Version::parse(&self.version).unwrap_or(semver::Version::new(0, 0, 0))
    }
}

impl Summary {
    /// Whether `install` and `upgrade` would take this index at `now`: not
    /// past its `expires`, nor older than the `--max-age` of `cfg`.
    pub fn usable(&self, cfg: &IndexConfig, now: std::time::SystemTime) -> bool {
        use super::{age, format::parse_rfc3339};
        let fresh = parse_rfc3339(&self.expires).is_some_and(|e| now <= e);
        let young = match cfg.max_age_secs {
            None => true,
            Some(max) => self
                .signed_at
                .as_deref()
                .and_then(parse_rfc3339)
                .is_some_and(|t| age::check(t, max, now).is_ok()),
        };
        fresh && young
    }

    pub fn of(index: &IndexFile) -> Summary {
        Summary {
            serial: index.serial,
            expires: index.expires.clone(),
            signed_at: index.signed_at.clone(),
            plugins: index
                .plugins
                .iter()
                .map(|e| Brief {
                    name: e.name.clone(),
                    version: e.version.clone(),
                    description: e.description.clone(),
                    homepage: e.homepage.clone(),
                    here: e.platform_for_here().is_some(),
                })
                .collect(),
        }
    }
}

/// The summary of index `name`: the summary file, else made from the
/// cached index; `Ok(None)` when neither is there.
pub fn load(cache_dir: &Path, name: &str) -> Result<Option<Summary>, String> {
    use app_plugin::file::{read_limited, ReadError};
    let file = cache::summary_path(cache_dir, name);
    match read_limited(&file, MAX_INDEX_BYTES) {
        Ok(bytes) => {
            if let Ok(summary) = serde_json::from_slice(&bytes) {
                return Ok(Some(summary));
            }
        }
        Err(ReadError::NotFound) => {}
        Err(e) => return Err(format!("{} {e}", file.display())),
    }
    Ok(cache::load(cache_dir, name)?.map(|index| Summary::of(&index)))
}

/// The summaries of every index added.
pub struct Summaries {
    pub indexes: Vec<(IndexConfig, Option<Summary>)>,
}

impl Summaries {
    /// Reads the index list and each index's summary (an unreadable one is
    /// skipped: `search` and `info` say so, TAB stays silent).
    pub fn load(config_dir: &Path, cache_dir: &Path) -> Result<Summaries> {
        let list = Indexes::load(config_dir).map_err(Error::Usage)?;
        Ok(Summaries {
            indexes: list
                .indexes
                .into_iter()
                .map(|cfg| {
                    let summary = load(cache_dir, &cfg.name).ok().flatten();
                    (cfg, summary)
                })
                .collect(),
        })
    }

    fn all(&self) -> impl Iterator<Item = (&IndexConfig, &Brief)> {
        self.indexes
            .iter()
            .filter_map(|(cfg, s)| Some((cfg, s.as_ref()?)))
            .flat_map(|(cfg, s)| s.plugins.iter().map(move |b| (cfg, b)))
    }

    /// The newest version of each plugin of each index, by name then index.
    pub fn newest(&self) -> Vec<(&IndexConfig, &Brief)> {
        let mut best: std::collections::BTreeMap<
            (&str, &str),
            (&IndexConfig, &Brief, semver::Version),
        > = std::collections::BTreeMap::new();
        for (cfg, brief) in self.all() {
            let version = brief.semver();
            let key = (brief.name.as_str(), cfg.name.as_str());
            if best.get(&key).map_or(true, |(_, _, v)| *v < version) {
                best.insert(key, (cfg, brief, version));
            }
        }
        best.into_values().map(|(c, b, _)| (c, b)).collect()
    }

    /// Every version of plugin `name`, newest first.
    pub fn versions(&self, name: &str) -> Vec<(&IndexConfig, &Brief)> {
        let mut all: Vec<_> = self.all().filter(|(_, b)| b.name == name).collect();
        all.sort_by_key(|(_, b)| std::cmp::Reverse(b.semver()));
        all
    }

    /// The newest version of `name` in `index` with a way to install it here.
    pub fn newest_here(&self, index: &str, name: &str) -> Option<&Brief> {
        self.versions(name)
            .into_iter()
            .find(|(c, b)| c.name == index && b.here)
            .map(|(_, b)| b)
    }
}
