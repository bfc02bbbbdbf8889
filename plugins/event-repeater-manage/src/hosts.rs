//! Named hosts and host groups from `app`'s config file:
//!
//! ```json
//! {"hosts": {"edge1": {"url": "https://edge1.example.org:7070",
//!                      "token_file": "~/.config/app/edge1.token",
//!                      "ca_file": "~/.config/app/fleet-ca.pem"}},
//!  "groups": {"edges": ["edge1", "edge2"]}}
//! ```
//!
//! The file's shape is derived (`File`); a part of the wrong shape is
//! reported by where it is (`hosts.edge1.token_file must be a string`),
//! which serde's own messages do not say. [`crate::resolve`] turns names
//! into targets.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_path_to_error::Segment;

use crate::address::{Endpoint, HostWord};
use crate::error::Error;
use crate::files::read_small;

/// Largest config file read.
const MAX_CONFIG: u64 = 1 << 20;

/// The keys of a host.
const HOST_KEYS: [&str; 3] = ["url", "token_file", "ca_file"];

/// The part of `app`'s config file read here; its other keys are `app`'s.
#[derive(Debug, Deserialize)]
struct File {
    hosts: Option<BTreeMap<String, HostEntry>>,
    groups: Option<BTreeMap<String, Vec<String>>>,
}

/// One entry of `"hosts"` as written (`url` is checked after, to say
/// which host lacks it).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HostEntry {
    url: Option<String>,
    token_file: Option<String>,
    ca_file: Option<String>,
}

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
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
            bad(format!(
                "not valid JSON ({e}); fix it, or use addresses with --host"
            ))
        })?;
        let mut inv = Inventory {
            path: path.to_path_buf(),
            ..Inventory::default()
        };
        // A config that is not an object has no hosts here; `app` itself
        // says what is wrong with it.
        if !value.is_object() {
            return Ok(inv);
        }
        let file: File = serde_path_to_error::deserialize(value)
            .map_err(|e| bad(misshapen(e.path()).unwrap_or_else(|| e.inner().to_string())))?;
        let base = path.parent().unwrap_or(Path::new("."));
        for (name, entry) in file.hosts.unwrap_or_default() {
            check_host_name(&name).map_err(|e| bad(format!("hosts: {e}")))?;
            let url = entry
                .url
                .ok_or_else(|| bad(format!("hosts.{name} has no \"url\"")))?;
            let endpoint =
                Endpoint::parse(&url).map_err(|e| bad(format!("hosts.{name}.url {e}")))?;
            let host = NamedHost {
                endpoint,
                token_file: entry.token_file.map(|p| expand(&p, base)),
                ca_file: entry.ca_file.map(|p| expand(&p, base)),
            };
            inv.hosts.insert(name, host);
        }
        for (group, members) in file.groups.unwrap_or_default() {
            check_host_name(&group).map_err(|e| bad(format!("groups: {e}")))?;
            inv.groups.insert(group, members);
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

/// What is wrong at `path`, where the file does not have [`File`]'s
/// shape: a value of the wrong type, or a key a host does not have.
fn misshapen(path: &serde_path_to_error::Path) -> Option<String> {
    let keys: Vec<&str> = path
        .iter()
        .map(|s| match s {
            Segment::Map { key } => key.as_str(),
            _ => "",
        })
        .collect();
    Some(match keys.as_slice() {
        ["hosts"] => "\"hosts\" must be an object of name: {\"url\": …}".to_string(),
        ["hosts", name] => {
            format!("hosts.{name} must be an object like {{\"url\": \"https://host:7070\"}}")
        }
        ["hosts", name, key] if HOST_KEYS.contains(key) => {
            format!("hosts.{name}.{key} must be a string")
        }
        ["hosts", name, key] => {
            format!("hosts.{name}.{key} is unknown; a host has url, token_file and ca_file")
        }
        ["groups"] => "\"groups\" must be an object of name: [host, …]".to_string(),
        ["groups", group, ..] => {
            format!("groups.{group} must be a list of host names or addresses")
        }
        _ => return None,
    })
}

fn check_host_name(name: &str) -> Result<(), String> {
    match HostWord::parse(name) {
        Ok(HostWord::Name(_)) => Ok(()),
        _ => Err(format!(
            "'{name}' is not a usable name (letters, digits, -, _ and . only)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Inventory, String> {
        Inventory::parse(text, Path::new("/etc/app/config.json")).map_err(|e| {
            assert_eq!(e.exit_code(), 2, "{text}");
            e.to_string()
        })
    }

    #[test]
    fn hosts_and_groups_are_read_with_paths_beside_the_file() {
        let inv = parse(
            r#"{"aliases": {"x": "y"},
                "hosts": {"e1": {"url": "https://e1:7070", "token_file": "e1.token", "ca_file": null}},
                "groups": {"edges": ["e1", "http://127.0.0.1:3"]}}"#,
        )
        .unwrap();
        assert_eq!(
            inv.hosts["e1"],
            NamedHost {
                endpoint: Endpoint::Https("https://e1:7070".into()),
                token_file: Some(PathBuf::from("/etc/app/e1.token")),
                ca_file: None,
            }
        );
        assert_eq!(inv.groups["edges"], ["e1", "http://127.0.0.1:3"]);
        // No hosts at all, or not an object: nothing named.
        for empty in ["{}", r#"{"hosts": null, "groups": null}"#, "[]"] {
            assert_eq!(parse(empty).unwrap().hosts.len(), 0, "{empty}");
        }
    }

    #[test]
    fn a_misshapen_part_is_named_by_where_it_is() {
        for (text, want) in [
            (r#"{"hosts": 1}"#, r#""hosts" must be an object of name"#),
            (
                r#"{"hosts": {"e1": "http://h:1"}}"#,
                "hosts.e1 must be an object like",
            ),
            (
                r#"{"hosts": {"e1": {"url": 7}}}"#,
                "hosts.e1.url must be a string",
            ),
            (
                r#"{"hosts": {"e1": {"url": "http://h:1", "ca_file": []}}}"#,
                "hosts.e1.ca_file must be a string",
            ),
            (
                r#"{"hosts": {"e1": {"url": "http://h:1", "tokenfile": "t"}}}"#,
                "hosts.e1.tokenfile is unknown; a host has url, token_file and ca_file",
            ),
            (
                r#"{"hosts": {"e 1": {"url": "http://h:1"}}}"#,
                "hosts: 'e 1' is not a usable name",
            ),
            (
                r#"{"groups": ["e1"]}"#,
                r#""groups" must be an object of name"#,
            ),
            (r#"{"groups": {"g": "e1"}}"#, "groups.g must be a list"),
            (r#"{"groups": {"g": ["e1", 2]}}"#, "groups.g must be a list"),
        ] {
            let err = parse(text).unwrap_err();
            assert!(
                err.starts_with("the config file /etc/app/config.json: "),
                "{text}: {err}"
            );
            assert!(err.contains(want), "{text}: {err}");
        }
    }
}
