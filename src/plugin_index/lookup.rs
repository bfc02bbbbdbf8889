//! Finding plugins in the cached indexes: `NAME`, `NAME@VERSION` and
//! `INDEX/NAME` for `install` and `info`, every newest version for `search`,
//! and the newest version for `plugin list` and `upgrade`.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::SystemTime;

use super::config::{IndexConfig, Indexes};
use super::format::{self, IndexFile, Platform, PluginEntry};
use super::{cache, refusal};
use crate::error::index::Problem;
use crate::error::{Error, Result};

/// Every added index with its cached copy (`None`: never fetched, or
/// unreadable, with the reason in `problems`).
pub struct Catalog {
    pub indexes: Vec<(IndexConfig, Option<IndexFile>)>,
    /// One line per index whose cached copy could not be read.
    pub problems: Vec<String>,
}

/// What the user asked for: `[INDEX/]NAME[@VERSION]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    pub index: Option<String>,
    pub name: String,
    pub version: Option<String>,
}

impl Spec {
    /// Reads `[INDEX/]NAME[@VERSION]`; `None` when it is not of that shape
    /// (then it is a path).
    pub fn parse(text: &str) -> Option<Spec> {
        let (rest, version) = match text.split_once('@') {
            Some((rest, v)) if !v.is_empty() => (rest, Some(v.to_string())),
            Some(_) => return None,
            None => (text, None),
        };
        let (index, name) = match rest.split_once('/') {
            Some((index, name)) => (Some(index.to_string()), name),
            None => (None, rest),
        };
        let valid = |n: &str| crate::install::name::validate(n).is_ok();
        (valid(name) && index.as_deref().map_or(true, valid)).then(|| Spec {
            index,
            name: name.to_string(),
            version,
        })
    }
}

/// A plugin version found in an index.
pub struct Found<'a> {
    pub index: &'a IndexConfig,
    pub file: &'a IndexFile,
    pub entry: &'a PluginEntry,
}

impl Catalog {
    /// Reads the index list from `config_dir` and every cached copy.
    pub fn load(config_dir: &Path, cache_dir: &Path) -> Result<Catalog> {
        let list = Indexes::load(config_dir).map_err(Error::Usage)?;
        let mut problems = Vec::new();
        let indexes = list
            .indexes
            .into_iter()
            .map(|cfg| {
                let cached = match cache::load(cache_dir, &cfg.name) {
                    Ok(Some(file)) => Some(file),
                    Ok(None) => {
                        problems.push(format!(
                            "index '{}' has not been fetched yet; run 'app plugin index update'",
                            cfg.name
                        ));
                        None
                    }
                    Err(e) => {
                        problems.push(format!("index '{}': {e}", cfg.name));
                        None
                    }
                };
                (cfg, cached)
            })
            .collect();
        Ok(Catalog { indexes, problems })
    }

    /// The newest version of each plugin of each index, by name then index.
    pub fn newest(&self) -> Vec<Found<'_>> {
        let mut best: BTreeMap<(&str, &str), Found> = BTreeMap::new();
        for (cfg, file) in &self.indexes {
            let Some(file) = file else { continue };
            for entry in &file.plugins {
                let key = (entry.name.as_str(), cfg.name.as_str());
                if best
                    .get(&key)
                    .map_or(true, |f| f.entry.semver() < entry.semver())
                {
                    best.insert(
                        key,
                        Found {
                            index: cfg,
                            file,
                            entry,
                        },
                    );
                }
            }
        }
        best.into_values().collect()
    }

    /// Every version of plugin `name`, newest first, with its index.
    pub fn versions(&self, name: &str) -> Vec<Found<'_>> {
        let mut all: Vec<Found> = self
            .indexes
            .iter()
            .filter_map(|(cfg, file)| Some((cfg, file.as_ref()?)))
            .flat_map(|(cfg, file)| {
                file.plugins
                    .iter()
                    .filter(|e| e.name == name)
                    .map(move |entry| Found {
                        index: cfg,
                        file,
                        entry,
                    })
            })
            .collect();
        all.sort_by_key(|f| std::cmp::Reverse(f.entry.semver()));
        all
    }

    /// The newest version of `name` in index `index` that has a way to be
    /// installed here.
    pub fn newest_here(&self, index: &str, name: &str) -> Option<Found<'_>> {
        self.versions(name)
            .into_iter()
            .find(|f| f.index.name == index && f.entry.platform_for_here().is_some())
    }

    /// The version `spec` means: in the index it names (or the only index
    /// that has the plugin), the version it names (or the newest with a
    /// build for this machine, or a source). Refuses an expired cache.
    pub fn find(&self, spec: &Spec, now: SystemTime) -> Result<(Found<'_>, &Platform)> {
        let mut versions = self.versions(&spec.name);
        if let Some(index) = &spec.index {
            if !self.indexes.iter().any(|(c, _)| &c.name == index) {
                return Err(Error::Unavailable(format!(
                    "there is no index named '{index}'; 'app plugin index list' shows the indexes added"
                )));
            }
            versions.retain(|f| &f.index.name == index);
        }
        let mut holders: Vec<&str> = versions.iter().map(|f| f.index.name.as_str()).collect();
        holders.dedup();
        holders.sort_unstable();
        holders.dedup();
        match holders.as_slice() {
            [] => return Err(self.not_found(spec)),
            [_] => {}
            several => {
                return Err(Error::Usage(format!(
                    "plugin '{}' is in several indexes ({}); say which: {}",
                    spec.name,
                    several.join(", "),
                    several
                        .iter()
                        .map(|i| format!("app plugin install {i}/{}", spec.name))
                        .collect::<Vec<_>>()
                        .join(" or ")
                )))
            }
        }
        if let Some(version) = &spec.version {
            let wanted = semver::Version::parse(version).ok();
            versions.retain(|f| Some(f.entry.semver()) == wanted);
            if versions.is_empty() {
                let known: Vec<String> = self
                    .versions(&spec.name)
                    .iter()
                    .filter(|f| f.index.name == holders[0])
                    .map(|f| f.entry.version.clone())
                    .collect();
                return Err(Error::Unavailable(format!(
                    "index '{}' has no version {version} of plugin '{}' (it has {}); 'app plugin info {}' lists them",
                    holders[0],
                    spec.name,
                    known.join(", "),
                    spec.name
                )));
            }
        }
        // Newest first: the newest version with a way to install it here.
        let Some(pos) = versions
            .iter()
            .position(|f| f.entry.platform_for_here().is_some())
        else {
            return Err(no_build(&spec.name, &versions[0]));
        };
        let found = versions.swap_remove(pos);
        if let Err(format::Invalid::Expired(when)) = format::check_fresh(found.file, now) {
            return Err(Error::Index(refusal(found.index, Problem::Expired(when))));
        }
        // A copy that has aged past --max-age since it was fetched is
        // refused as a fresh fetch of it would be.
        if let Some(max_age) = found.index.max_age_secs {
            super::check_age(found.file, max_age, now)
                .map_err(|p| Error::Index(refusal(found.index, p)))?;
        }
        let platform = found
            .entry
            .platform_for_here()
            .ok_or_else(|| no_build(&spec.name, &found))?;
        Ok((found, platform))
    }

    fn not_found(&self, spec: &Spec) -> Error {
        if self.indexes.is_empty() {
            return Error::Unavailable(format!(
                "no plugin index has been added to look '{}' up in; add one with 'app plugin index add NAME URL --key-file FILE' (a local file is installed as ./NAME or --file NAME)",
                spec.name
            ));
        }
        let names: Vec<&str> = self.indexes.iter().map(|(c, _)| c.name.as_str()).collect();
        let suggestion = crate::suggest::closest(
            &spec.name,
            self.newest().iter().map(|f| f.entry.name.as_str()),
        )
        .map(|s| format!(" (did you mean '{s}'?)"))
        .unwrap_or_default();
        Error::Unavailable(format!(
            "no plugin '{}' in the indexes ({}){suggestion}; 'app plugin search' lists them, 'app plugin index update' refreshes them (a local file is installed as ./NAME or --file NAME)",
            spec.name,
            names.join(", ")
        ))
    }
}

/// "No build for this machine" for `found`.
fn no_build(name: &str, found: &Found) -> Error {
    let here = format::this_platform();
    Error::Unavailable(format!(
        "plugin '{name}' {} in index '{}' has no build for this machine ({here}); it has: {}. Ask its publisher for a {here} build, or build it from source: app plugin install --git URL",
        found.entry.version,
        found.index.name,
        found
            .entry
            .platforms
            .iter()
            .map(Platform::label)
            .collect::<Vec<_>>()
            .join(", "),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse() {
        let spec = |i: Option<&str>, n: &str, v: Option<&str>| Spec {
            index: i.map(String::from),
            name: n.into(),
            version: v.map(String::from),
        };
        assert_eq!(Spec::parse("hello"), Some(spec(None, "hello", None)));
        assert_eq!(
            Spec::parse("hello@1.2.0"),
            Some(spec(None, "hello", Some("1.2.0")))
        );
        assert_eq!(
            Spec::parse("main/hello"),
            Some(spec(Some("main"), "hello", None))
        );
        assert_eq!(
            Spec::parse("main/hello@2.0.0"),
            Some(spec(Some("main"), "hello", Some("2.0.0")))
        );
        for path in [
            "./app-x",
            "/abs/app-x",
            "a/b/c",
            "x.tar.gz",
            "hello@",
            "Hello",
        ] {
            assert_eq!(Spec::parse(path), None, "{path}");
        }
    }
}
