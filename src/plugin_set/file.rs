//! `plugins.json`, the declared set (docs/plugin-management.md, "A declared
//! set"), shaped like Cargo's dependency table:
//!
//! ```json
//! {"indexes": {"main": {"url": "https://example.org/index.json", "key": "RW…"}},
//!  "plugins": {"hello": "^1.0", "other": {"version": "1.0.0", "index": "main", "pin": true}}}
//! ```
//!
//! A plugin's version is an exact version (`1.0.0`: that one, unlike
//! Cargo), a semver requirement (`^1.0`, `~1.2`, `>=1, <2`) or `*`.
//! Unknown keys are refused, like the index format's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The largest `plugins.json` read.
pub const MAX_BYTES: u64 = 1 << 20;

/// The whole file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginSet {
    #[serde(default)]
    pub indexes: BTreeMap<String, IndexDecl>,
    #[serde(default)]
    pub plugins: BTreeMap<String, PluginDecl>,
}

/// An index the set needs: added if missing, checked if there.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexDecl {
    pub url: String,
    /// The publisher's public key, the `RW…` line.
    #[serde(default)]
    pub key: Option<String>,
    /// Or its `minisign.pub` file, relative to `plugins.json`.
    #[serde(default)]
    pub key_file: Option<PathBuf>,
    /// A bearer token file for a private index, relative to `plugins.json`.
    #[serde(default)]
    pub token_file: Option<PathBuf>,
}

/// One plugin: `"REQ"` or `{"version": "REQ", "index": "NAME", "pin": true}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum PluginDecl {
    Req(String),
    Table(PluginTable),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginTable {
    #[serde(default = "any")]
    pub version: String,
    #[serde(default)]
    pub index: Option<String>,
    #[serde(default)]
    pub pin: bool,
}

fn any() -> String {
    "*".into()
}

/// What a declared version accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Req {
    Exact(semver::Version),
    Range(semver::VersionReq),
}

impl Req {
    pub fn parse(text: &str) -> Result<Req, String> {
        if let Ok(v) = semver::Version::parse(text.trim()) {
            return Ok(Req::Exact(v));
        }
        semver::VersionReq::parse(text)
            .map(Req::Range)
            .map_err(|e| {
                format!(
                "'{}' is neither a version (1.0.0) nor a requirement (^1.0, ~1.2, >=1, <2, *): {e}",
                text.escape_debug()
            )
            })
    }

    pub fn matches(&self, version: &semver::Version) -> bool {
        match self {
            Req::Exact(v) => v == version,
            Req::Range(r) => r.matches(version),
        }
    }
}

/// One declared plugin, read.
#[derive(Debug, Clone)]
pub struct Wanted {
    pub name: String,
    pub text: String,
    pub req: Req,
    pub index: Option<String>,
    pub pin: bool,
}

impl PluginSet {
    /// Reads and checks `path` (a regular file of at most [`MAX_BYTES`]).
    pub fn load(path: &Path) -> Result<PluginSet, String> {
        let bytes = app_plugin::file::read_limited(path, MAX_BYTES)
            .map_err(|e| format!("{} {e}", path.display()))?;
        let set: PluginSet = serde_json::from_slice(&bytes).map_err(|e| {
            format!(
                "{} is not a plugin set: {e} (docs/plugin-management.md, \"A declared set\")",
                path.display()
            )
        })?;
        set.wanted()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(set)
    }

    /// The declared plugins, their requirements parsed.
    pub fn wanted(&self) -> Result<Vec<Wanted>, String> {
        self.plugins
            .iter()
            .map(|(name, decl)| {
                crate::install::name::validate(name).map_err(|e| {
                    format!("'{}' cannot be a plugin name: {e}", name.escape_debug())
                })?;
                let (text, index, pin) = match decl {
                    PluginDecl::Req(text) => (text.clone(), None, false),
                    PluginDecl::Table(t) => (t.version.clone(), t.index.clone(), t.pin),
                };
                let req = Req::parse(&text).map_err(|e| format!("plugin '{name}': {e}"))?;
                Ok(Wanted {
                    name: name.clone(),
                    text,
                    req,
                    index,
                    pin,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<Vec<Wanted>, String> {
        let set: PluginSet = serde_json::from_str(json).map_err(|e| e.to_string())?;
        set.wanted()
    }

    #[test]
    fn versions_requirements_and_tables() {
        let w = parse(
            r#"{"plugins": {"a": "1.0.0", "b": "^1.0", "c": "*", "d": {"version": "~2.1", "index": "main", "pin": true}}}"#,
        )
        .unwrap();
        let v = |s| semver::Version::parse(s).unwrap();
        assert!(w[0].req.matches(&v("1.0.0")) && !w[0].req.matches(&v("1.0.1")));
        assert!(w[1].req.matches(&v("1.9.0")) && !w[1].req.matches(&v("2.0.0")));
        assert!(w[2].req.matches(&v("9.9.9")));
        assert!(w[3].pin && w[3].index.as_deref() == Some("main"));
        assert!(w[3].req.matches(&v("2.1.5")) && !w[3].req.matches(&v("2.2.0")));
    }

    #[test]
    fn typos_and_bad_requirements_are_refused() {
        assert!(parse(r#"{"plugin": {}}"#)
            .unwrap_err()
            .contains("unknown field"));
        assert!(parse(r#"{"plugins": {"a": {"verison": "1"}}}"#).is_err());
        assert!(parse(r#"{"plugins": {"a": "one"}}"#)
            .unwrap_err()
            .contains("neither a version"));
        assert!(parse(r#"{"plugins": {"Bad Name": "*"}}"#)
            .unwrap_err()
            .contains("cannot be a plugin name"));
    }
}
