//! Named hosts and host groups from `app`'s config file:
//!
//! ```json
//! {"hosts": {"edge1": {"url": "https://edge1.example.org:7070",
//!                      "token_file": "~/.config/app/edge1.token",
//!                      "ca_file": "~/.config/app/fleet-ca.pem"}},
//!  "groups": {"edges": ["edge1", "edge2"]}}
//! ```
//!
//! [`crate::resolve`] turns names into targets.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::address::{Endpoint, HostWord};
use crate::error::Error;
use crate::files::read_small;

/// Largest config file read.
const MAX_CONFIG: u64 = 1 << 20;

/// One entry of `"hosts"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedHost {
    /// Its API address.
    pub endpoint: Endpoint,
    /// Where its bearer token is (first line).
    pub token_file: Option<PathBuf>,
    /// The CA certificates its https:// certificate chains to.
    pub ca_file: Option<PathBuf>,
}

/// The `hosts` and `groups` of the config file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inventory {
    /// Where they were read from (for messages).
    pub path: PathBuf,
    /// By name.
    pub hosts: BTreeMap<String, NamedHost>,
    /// Group name → member words (host names or addresses).
    pub groups: BTreeMap<String, Vec<String>>,
}

/// `~/x` is under the home directory; a relative path is relative to the
/// directory of the config file.
fn expand(path: &str, base: &Path) -> PathBuf {
    if let Some(rest) = path.strip_prefix("~/") {
        if let Some(home) = std::env::var_os("HOME") {
            return PathBuf::from(home).join(rest);
        }
    }
    let p = PathBuf::from(path);
    if p.is_absolute() {
        p
    } else {
        base.join(p)
    }
}

impl Inventory {
    /// Reads the config file at `path`; a missing file has no hosts.
    pub fn load(path: &Path) -> Result<Inventory, Error> {
        if !path.exists() {
            return Ok(Inventory {
                path: path.to_path_buf(),
                ..Inventory::default()
            });
        }
        let text = read_small(path, MAX_CONFIG, "the config file")?;
        Inventory::parse(&text, path)
    }

    /// Reads the `hosts` and `groups` of config text read from `path`.
    pub fn parse(text: &str, path: &Path) -> Result<Inventory, Error> {
        let bad =
            |what: String| Error::Usage(format!("the config file {}: {what}", path.display()));
        let value: Value = serde_json::from_str(text).map_err(|e| {
            bad(format!(
                "not valid JSON ({e}); fix it, or use addresses with --host"
            ))
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        let mut inv = Inventory {
            path: path.to_path_buf(),
            ..Inventory::default()
        };
        let hosts = match value.get("hosts") {
            None | Some(Value::Null) => serde_json::Map::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(_) => {
                return Err(bad(
                    "\"hosts\" must be an object of name: {\"url\": …}".into()
                ))
            }
        };
        for (name, entry) in &hosts {
            check_host_name(name).map_err(|e| bad(format!("hosts: {e}")))?;
            let field = |key: &str| -> Result<Option<String>, Error> {
                match entry.get(key) {
                    None | Some(Value::Null) => Ok(None),
                    Some(Value::String(s)) => Ok(Some(s.clone())),
                    Some(_) => Err(bad(format!("hosts.{name}.{key} must be a string"))),
                }
            };
            if !entry.is_object() {
                return Err(bad(format!(
                    "hosts.{name} must be an object like {{\"url\": \"https://host:7070\"}}"
                )));
            }
            if let Some(key) = entry.as_object().and_then(|o| {
                o.keys()
                    .find(|k| !["url", "token_file", "ca_file"].contains(&k.as_str()))
            }) {
                return Err(bad(format!(
                    "hosts.{name}.{key} is unknown; a host has url, token_file and ca_file"
                )));
            }
            let url = field("url")?.ok_or_else(|| bad(format!("hosts.{name} has no \"url\"")))?;
            let endpoint =
                Endpoint::parse(&url).map_err(|e| bad(format!("hosts.{name}.url {e}")))?;
            inv.hosts.insert(
                name.clone(),
                NamedHost {
                    endpoint,
                    token_file: field("token_file")?.map(|p| expand(&p, base)),
                    ca_file: field("ca_file")?.map(|p| expand(&p, base)),
                },
            );
        }
        match value.get("groups") {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) => {
                for (group, members) in m {
                    check_host_name(group).map_err(|e| bad(format!("groups: {e}")))?;
                    let list = members
                        .as_array()
                        .and_then(|a| {
                            a.iter()
                                .map(|v| v.as_str().map(String::from))
                                .collect::<Option<Vec<_>>>()
                        })
                        .ok_or_else(|| {
                            bad(format!(
                                "groups.{group} must be a list of host names or addresses"
                            ))
                        })?;
                    inv.groups.insert(group.clone(), list);
                }
            }
            Some(_) => return Err(bad("\"groups\" must be an object of name: [host, …]".into())),
        }
        Ok(inv)
    }

    /// The error for a `name` that is not among the `known` of `what`.
    pub fn unknown(&self, what: &str, name: &str, known: Vec<&String>) -> Error {
        let known = if known.is_empty() {
            "none are defined".to_string()
        } else {
            format!(
                "known: {}",
                known
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        Error::Usage(format!(
            "no {what} '{name}' in the config file {} ({known})",
            self.path.display()
        ))
    }
}

fn check_host_name(name: &str) -> Result<(), String> {
    match HostWord::parse(name) {
        Ok(HostWord::Name(_)) => Ok(()),
        _ => Err(format!(
            "'{name}' is not a usable name (letters, digits, -, _ and . only)"
        )),
    }
}
