//! The config file: aliases, trusted plugins, per-plugin settings, listeners.
//!
//! `APP_CONFIG_DIR/config.json` by default, or `--config FILE` / `APP_CONFIG`.
//! A missing default file is an empty config; a file named by `--config` or
//! `APP_CONFIG` must exist. The file must be a regular file of at most
//! [`MAX_CONFIG_BYTES`] (a FIFO would hang `app`, `/dev/zero` would fill its
//! memory). A malformed one is an error that names the line and column,
//! because guessing what the user meant would be worse.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{ConfigProblem, Error, Result};

/// The parsed config file.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct Config {
    /// `{"aliases": {"routes": "event-repeater manage get --path /events"}}`.
    pub aliases: BTreeMap<String, String>,
    /// `{"plugins": {"foo": {"trusted": true, "config": {...}}}}`.
    pub plugins: BTreeMap<String, PluginSettings>,
    /// Lifecycle listeners, `[{"name": "tracer", "events": ["command.*"]}]`.
    pub listeners: Vec<ListenerSettings>,
    /// Where this config was read from (not part of the file).
    #[serde(skip)]
    pub path: PathBuf,
    /// Every other top-level key: the plugins' keys ([`PLUGIN_KEYS`]) and
    /// typos, which [`Config::unknown_keys`] reports.
    #[serde(flatten)]
    pub other: BTreeMap<String, serde::de::IgnoredAny>,
}

/// The top-level keys `app` itself reads.
const APP_KEYS: [&str; 3] = ["aliases", "plugins", "listeners"];

/// The top-level keys the shipped plugins read from the same file
/// (`event-repeater manage`'s named hosts and groups).
pub const PLUGIN_KEYS: [&str; 2] = ["hosts", "groups"];

/// A top-level key of the config file that nothing reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownKey {
    /// The key as written.
    pub key: String,
    /// The known key it most likely meant.
    pub nearest: Option<&'static str>,
}

impl fmt::Display for UnknownKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown key \"{}\" is ignored", self.key)?;
        match self.nearest {
            Some(k) => write!(f, "; did you mean \"{k}\"?"),
            None => write!(
                f,
                "; the known keys are {}",
                APP_KEYS
                    .iter()
                    .chain(&PLUGIN_KEYS)
                    .map(|k| format!("\"{k}\""))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// Settings for one plugin.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct PluginSettings {
    /// Allow `app` to ask this plugin for its metadata (and completions)
    /// even when it lives on PATH.
    pub trusted: bool,
    /// Handed to the plugin as `plugin_config` in the JSON context.
    pub config: Option<serde_json::Value>,
}

/// One registered lifecycle listener.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListenerSettings {
    /// Resolved to the executable `app-listener-<name>`.
    pub name: String,
    /// Event patterns: `command.start`, `command.end`, `command.*`, `*`.
    #[serde(default = "all_events")]
    pub events: Vec<String>,
    /// Whether `app` waits for this listener's answer to `command.start`.
    #[serde(default)]
    pub can_abort: bool,
    /// How long the listener may take, in milliseconds (default 1000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

fn all_events() -> Vec<String> {
    vec!["command.*".to_string()]
}

/// The largest config file `app` reads: far more than any real config, small
/// enough that a wrong path (a log, a device) fails at once.
pub const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// Who chose the config file's path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigOrigin {
    /// `--config FILE`.
    Flag,
    /// `APP_CONFIG`.
    Env,
    /// `APP_CONFIG_DIR/config.json`: may be absent.
    Default,
}

impl ConfigOrigin {
    fn named_by(self) -> &'static str {
        match self {
            ConfigOrigin::Flag => "--config",
            ConfigOrigin::Env => "APP_CONFIG",
            ConfigOrigin::Default => "default",
        }
    }
}

/// Reads `path` if it is a regular file of at most [`MAX_CONFIG_BYTES`].
/// `Ok(None)`: it does not exist.
fn read_regular(path: &Path) -> Result<Option<Vec<u8>>, ConfigProblem> {
    use app_plugin::file::{read_limited, ReadError};
    match read_limited(path, MAX_CONFIG_BYTES) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(ReadError::NotFound) => Ok(None),
        Err(ReadError::NotRegular(kind)) => Err(ConfigProblem::NotRegularFile(kind)),
        Err(ReadError::TooLarge { len, max }) => Err(ConfigProblem::TooLarge { len, max }),
        Err(ReadError::Io(e)) => Err(ConfigProblem::Unreadable(e)),
    }
}

impl Config {
    /// Reads the config at `path`. A default file that does not exist is an
    /// empty config; one named by `--config` or `APP_CONFIG` is an error.
    pub fn load(path: &Path, origin: ConfigOrigin) -> Result<Config> {
        let fail = |problem| Error::Config {
            path: path.to_path_buf(),
            problem,
        };
        match read_regular(path).map_err(fail)? {
            Some(bytes) => Config::parse_bytes(&bytes, path),
            None if origin == ConfigOrigin::Default => Ok(Config {
                path: path.to_path_buf(),
                ..Config::default()
            }),
            None => Err(fail(ConfigProblem::Missing {
                named_by: origin.named_by(),
            })),
        }
    }

    /// Parses config text; `path` is only used in messages.
    pub fn parse(text: &str, path: &Path) -> Result<Config> {
        Config::parse_bytes(text.as_bytes(), path)
    }

    fn parse_bytes(bytes: &[u8], path: &Path) -> Result<Config> {
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Config {
                path: path.to_path_buf(),
                ..Config::default()
            });
        }
        let mut config: Config = serde_json::from_slice(bytes).map_err(|e| Error::Config {
            path: path.to_path_buf(),
            problem: ConfigProblem::Invalid(e.to_string()),
        })?;
        config.path = path.to_path_buf();
        Ok(config)
    }

    /// The top-level keys that neither `app` nor a shipped plugin reads
    /// (a typo such as `"aliasses"` would otherwise be ignored silently),
    /// each with the nearest known key when one is close.
    pub fn unknown_keys(&self) -> Vec<UnknownKey> {
        let known = || APP_KEYS.iter().chain(&PLUGIN_KEYS).copied();
        self.other
            .keys()
            .filter(|k| !known().any(|n| n == k.as_str()))
            .map(|k| UnknownKey {
                key: k.clone(),
                nearest: crate::suggest::closest(k, known()),
            })
            .collect()
    }

    /// The named hosts and `@groups` of the file (`"hosts"` and `"groups"`,
    /// which `event-repeater manage` reads), for completing `-H`. Read
    /// again from the file, only then: dispatch never parses them. A file
    /// that cannot be read, or keys of another shape, offer nothing.
    pub fn host_names(&self) -> Vec<String> {
        #[derive(Deserialize)]
        struct Hosts {
            #[serde(default)]
            hosts: serde_json::Map<String, serde_json::Value>,
            #[serde(default)]
            groups: serde_json::Map<String, serde_json::Value>,
        }
        let Ok(Some(bytes)) = read_regular(&self.path) else {
            return Vec::new();
        };
        let Ok(file) = serde_json::from_slice::<Hosts>(&bytes) else {
            return Vec::new();
        };
        file.hosts
            .into_iter()
            .map(|(name, _)| name)
            .chain(file.groups.into_iter().map(|(name, _)| format!("@{name}")))
            .collect()
    }

    /// Whether the config marks plugin `name` as trusted.
    pub fn is_trusted(&self, name: &str) -> bool {
        self.plugins.get(name).is_some_and(|p| p.trusted)
    }

    /// The `config` section for plugin `name`, if any.
    pub fn plugin_config(&self, name: &str) -> Option<&serde_json::Value> {
        self.plugins.get(name).and_then(|p| p.config.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_missing_files_are_empty_configs() {
        let c = Config::parse("  \n", Path::new("c.json")).unwrap();
        assert!(c.aliases.is_empty());
        let c = Config::load(
            Path::new("/nonexistent/app/config.json"),
            ConfigOrigin::Default,
        )
        .unwrap();
        assert!(c.plugins.is_empty());
    }

    #[test]
    fn a_named_file_must_exist() {
        for origin in [ConfigOrigin::Flag, ConfigOrigin::Env] {
            let err = Config::load(Path::new("/nonexistent/app/config.json"), origin).unwrap_err();
            let msg = err.to_string();
            assert!(msg.contains("does not exist"), "{msg}");
            assert!(msg.contains(origin.named_by()), "{msg}");
        }
    }

    #[test]
    fn special_and_oversized_files_are_refused_without_reading_them() {
        let err = Config::load(Path::new("/dev/zero"), ConfigOrigin::Flag).unwrap_err();
        assert!(err.to_string().contains("character device"), "{err}");
        let err = Config::load(Path::new("/"), ConfigOrigin::Flag).unwrap_err();
        assert!(err.to_string().contains("directory"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.json");
        let mut text = String::from("{\"aliases\": {}}");
        text.push_str(&" ".repeat(MAX_CONFIG_BYTES as usize));
        std::fs::write(&big, text).unwrap();
        let err = Config::load(&big, ConfigOrigin::Flag).unwrap_err();
        assert!(
            err.to_string().contains("larger than 1048576 bytes"),
            "{err}"
        );
    }

    #[test]
    fn bad_json_names_line_and_column() {
        let err = Config::parse("{\n \"aliases\": [}", Path::new("c.json")).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("c.json"), "{msg}");
        assert!(msg.contains("line 2"), "{msg}");
    }

    #[test]
    fn unknown_keys_are_reported_with_the_nearest_known_one() {
        let c = Config::parse(
            r#"{"aliasses": {"r": "x"}, "hosts": {}, "groups": {}, "zzzzzz": 1, "listeners": []}"#,
            Path::new("c.json"),
        )
        .unwrap();
        let unknown = c.unknown_keys();
        assert_eq!(
            unknown,
            [
                UnknownKey {
                    key: "aliasses".into(),
                    nearest: Some("aliases")
                },
                UnknownKey {
                    key: "zzzzzz".into(),
                    nearest: None
                }
            ]
        );
        assert_eq!(
            unknown[0].to_string(),
            "unknown key \"aliasses\" is ignored; did you mean \"aliases\"?"
        );
        assert!(unknown[1].to_string().contains("\"groups\""));
        assert!(c.aliases.is_empty());
        let known = Config::parse(r#"{"aliases": {"r": "x"}}"#, Path::new("c.json")).unwrap();
        assert!(known.unknown_keys().is_empty());
        assert_eq!(known.aliases["r"], "x");
    }

    #[test]
    fn sections_parse() {
        let c = Config::parse(
            r#"{"aliases":{"r":"x y"},"plugins":{"foo":{"trusted":true,"config":{"a":1}}},
                "listeners":[{"name":"tracer"}]}"#,
            Path::new("c.json"),
        )
        .unwrap();
        assert_eq!(c.aliases["r"], "x y");
        assert!(c.is_trusted("foo"));
        assert!(!c.is_trusted("bar"));
        assert_eq!(c.plugin_config("foo"), Some(&serde_json::json!({"a":1})));
        assert_eq!(c.listeners[0].events, vec!["command.*"]);
    }
}
