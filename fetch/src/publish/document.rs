//! The index document `publish` edits: `DIR/index.json` in the format of
//! docs/plugin-index.md (`app.index/v1`). Each change raises `serial` by
//! one and sets `signed_at` to now and `expires` to [`VALID_FOR`] later,
//! so the publisher never raises a serial or a date by hand.

use std::path::Path;
use std::time::{Duration, SystemTime};

use serde_json::{json, Map, Value};

use super::Failure;

/// How long a signed copy is valid: publish again (any change, or the same
/// build again) before that.
pub const VALID_FOR: Duration = Duration::from_secs(90 * 86_400);
/// What `app` reads of an index at most.
const MAX_BYTES: u64 = 32 << 20;

/// A new index naming itself `id`, with no plugins, at serial 1.
pub fn new(id: &str) -> Value {
    let mut doc = json!({"apiVersion": "app.index/v1", "index": id, "serial": 0, "plugins": []});
    stamp(&mut doc);
    doc
}

/// The index in `path`.
pub fn load(path: &Path) -> Result<Value, Failure> {
    let bytes = app_plugin::file::read_limited(path, MAX_BYTES).map_err(|e| {
        Failure::usage(format!(
            "cannot read {}: {e}; 'app plugin index init DIR' makes an index",
            path.display()
        ))
    })?;
    let doc: Value = serde_json::from_slice(&bytes)
        .map_err(|e| Failure::verify(format!("{} is not JSON: {e}", path.display())))?;
    let ok =
        doc["apiVersion"] == "app.index/v1" && doc["serial"].is_u64() && doc["plugins"].is_array();
    if !ok {
        return Err(Failure::verify(format!(
            "{} is not an app.index/v1 index (apiVersion, serial, plugins)",
            path.display()
        )));
    }
    Ok(doc)
}

/// One build to add.
pub struct Build<'a> {
    pub name: &'a str,
    pub version: &'a str,
    pub os: &'a str,
    pub arch: &'a str,
    /// Relative to the index.
    pub url: &'a str,
    pub sha256: &'a str,
    pub description: Option<&'a str>,
    pub homepage: Option<&'a str>,
}

/// Adds `build` to `doc`: to the entry of its name and version (its build
/// for that os/arch replaced), else as a new entry; then stamps it.
/// Returns whether a build was replaced.
pub fn add(doc: &mut Value, build: &Build) -> bool {
    let platform =
        json!({"os": build.os, "arch": build.arch, "url": build.url, "sha256": build.sha256});
    let plugins = doc["plugins"].as_array_mut().expect("checked by load");
    let found = plugins
        .iter_mut()
        .find(|p| p["name"] == build.name && p["version"] == build.version);
    let replaced = match found {
        Some(entry) => {
            let list = entry["platforms"].as_array_mut();
            let list = match list {
                Some(list) => list,
                None => {
                    entry["platforms"] = json!([]);
                    entry["platforms"].as_array_mut().expect("just set")
                }
            };
            let before = list.len();
            list.retain(|p| !(p["os"] == build.os && p["arch"] == build.arch));
            let replaced = list.len() != before;
            list.push(platform);
            set_texts(entry, build);
            replaced
        }
        None => {
            let mut entry = Map::new();
            entry.insert("name".into(), build.name.into());
            entry.insert("version".into(), build.version.into());
            let mut entry = Value::Object(entry);
            // The description of the newest earlier version, unless given.
            let earlier = plugins
                .iter()
                .find(|p| p["name"] == build.name)
                .and_then(|p| p["description"].as_str())
                .unwrap_or("")
                .to_string();
            entry["description"] = earlier.into();
            set_texts(&mut entry, build);
            entry["platforms"] = json!([platform]);
            plugins.insert(0, entry);
            false
        }
    };
    stamp(doc);
    replaced
}

fn set_texts(entry: &mut Value, build: &Build) {
    if let Some(text) = build.description {
        entry["description"] = text.into();
    }
    if let Some(home) = build.homepage {
        entry["homepage"] = home.into();
    }
}

/// Serial + 1, `signed_at` now, `expires` in [`VALID_FOR`].
fn stamp(doc: &mut Value) {
    let now = SystemTime::now();
    doc["serial"] = (doc["serial"].as_u64().unwrap_or(0) + 1).into();
    doc["signed_at"] = app_plugin::time::rfc3339(now).into();
    doc["expires"] = app_plugin::time::rfc3339(now + VALID_FOR).into();
}

/// The document's bytes, as written.
pub fn bytes(doc: &Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(doc).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}
