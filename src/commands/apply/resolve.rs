//! Each declared plugin's exact version, index and archive: from the lock
//! when it still satisfies the file (as Cargo keeps `Cargo.lock`), else the
//! newest version the requirement accepts with a build for this machine;
//! or, under `--locked`, the lock alone, which must agree with the file.

use std::collections::BTreeMap;
use std::time::SystemTime;

use crate::commands::from_index::archive_source;
use crate::error::{Error, Result};
use crate::plugin_index::format::Platform;
use crate::plugin_index::lookup::{Catalog, Spec};
use crate::plugin_set::file::Wanted;
use crate::plugin_set::lock::{LockFile, Locked};
use app_plugin::text::escape_for_terminal as printable;

/// Name → (what it resolves to, pinned).
pub type Targets = BTreeMap<String, (Locked, bool)>;

/// `apply`: resolved against the cached indexes.
pub fn from_catalog(
    wanted: &[Wanted],
    catalog: &Catalog,
    lock: Option<&LockFile>,
    update: bool,
) -> Result<Targets> {
    let now = SystemTime::now();
    let mut targets = Targets::new();
    for w in wanted {
        let kept = lock
            .filter(|_| !update)
            .and_then(|l| l.plugins.get(&w.name))
            .filter(|l| agrees(w, l).is_none())
            .filter(|l| catalog.indexes.iter().any(|(c, _)| c.name == l.index));
        let target = match kept {
            Some(locked) => locked.clone(),
            None => resolve(w, catalog, now)?,
        };
        targets.insert(w.name.clone(), (target, w.pin));
    }
    Ok(targets)
}

/// The newest version of `w` its requirement accepts, with a build here.
fn resolve(w: &Wanted, catalog: &Catalog, now: SystemTime) -> Result<Locked> {
    let mut versions = catalog.versions(&w.name);
    if let Some(index) = &w.index {
        versions.retain(|f| &f.index.name == index);
    }
    let matching: Vec<_> = versions
        .iter()
        .filter(|f| w.req.matches(&f.entry.semver()))
        .filter(|f| matches!(f.entry.platform_for_here(), Some(Platform::Build { .. })))
        .collect();
    let Some(best) = matching.first() else {
        let known: Vec<String> = versions.iter().map(|f| f.entry.version.clone()).collect();
        return Err(Error::Unavailable(format!(
            "plugin '{}' has no version matching '{}' with a build for this machine in {} (it has: {})",
            w.name,
            printable(&w.text),
            w.index.as_deref().map_or_else(|| "the indexes".to_string(), |i| format!("index '{i}'")),
            if known.is_empty() { "none".to_string() } else { known.join(", ") }
        )));
    };
    // Through `find`: the same checks as `install NAME@VERSION` (one index
    // only, the cached copy not expired nor older than --max-age).
    let spec = Spec {
        index: w.index.clone(),
        name: w.name.clone(),
        version: Some(best.entry.version.clone()),
    };
    let (found, platform) = catalog.find(&spec, now)?;
    let Platform::Build { url, sha256, .. } = platform else {
        return Err(Error::Unavailable(format!(
            "plugin '{}' {} has only a source build for this machine; 'apply' installs prebuilt builds ('app plugin install {}' builds it)",
            w.name, found.entry.version, w.name
        )));
    };
    Ok(Locked {
        version: found.entry.version.clone(),
        index: found.index.name.clone(),
        url: archive_source(found.index, url)?.to_record(),
        sha256: sha256.clone(),
    })
}

/// Why `locked` does not satisfy `w`, if it does not.
fn agrees(w: &Wanted, locked: &Locked) -> Option<String> {
    let version = semver::Version::parse(&locked.version).ok()?;
    if !w.req.matches(&version) {
        return Some(format!(
            "plugin '{}': the file asks for '{}', the lock has {}",
            w.name,
            printable(&w.text),
            printable(&locked.version)
        ));
    }
    match &w.index {
        Some(index) if index != &locked.index => Some(format!(
            "plugin '{}': the file names index '{index}', the lock '{}'",
            w.name, locked.index
        )),
        _ => None,
    }
}

/// `apply --locked`: the lock, which must have exactly the file's plugins,
/// each satisfying its declaration.
pub fn from_lock(wanted: &[Wanted], lock: &LockFile, lock_name: &str) -> Result<Targets> {
    let mut problems: Vec<String> = Vec::new();
    let mut targets = Targets::new();
    for w in wanted {
        match lock.plugins.get(&w.name) {
            None => problems.push(format!("plugin '{}' is not in the lock", w.name)),
            Some(locked) => match agrees(w, locked) {
                Some(why) => problems.push(why),
                None => {
                    targets.insert(w.name.clone(), (locked.clone(), w.pin));
                }
            },
        }
    }
    for name in lock.plugins.keys() {
        if !wanted.iter().any(|w| &w.name == name) {
            problems.push(format!("plugin '{name}' is in the lock, not in the file"));
        }
    }
    if problems.is_empty() {
        return Ok(targets);
    }
    Err(Error::LockMismatch(format!(
        "the plugin set and {lock_name} disagree, so nothing was changed: {}; run 'app plugin apply' without --locked to update the lock",
        problems.join("; ")
    )))
}
