//! The config file: aliases, trusted plugins, per-plugin settings, listeners.
//!
//! `APP_CONFIG_DIR/config.json` by default, or `--config FILE` / `APP_CONFIG`.
//! A missing file is an empty config; a malformed one is an error that names
//! the line and column, because guessing what the user meant would be worse.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{Error, Result};

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

impl Config {
    /// Reads the config at `path`; a file that does not exist is an empty config.
    pub fn load(path: &Path) -> Result<Config> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Ok(Config {
                    path: path.to_path_buf(),
                    ..Config::default()
                })
            }
            Err(e) => {
                return Err(Error::Config {
                    path: path.to_path_buf(),
                    message: e.to_string(),
                })
            }
        };
        Config::parse(&text, path)
    }

    /// Parses config text; `path` is only used in messages.
    pub fn parse(text: &str, path: &Path) -> Result<Config> {
        if text.trim().is_empty() {
            return Ok(Config {
                path: path.to_path_buf(),
                ..Config::default()
            });
        }
        let mut config: Config = serde_json::from_str(text).map_err(|e| Error::Config {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        config.path = path.to_path_buf();
        Ok(config)
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
        let c = Config::load(Path::new("/nonexistent/app/config.json")).unwrap();
        assert!(c.plugins.is_empty());
    }

    #[test]
    fn bad_json_names_line_and_column() {
        let err = Config::parse("{\n \"aliases\": [}", Path::new("c.json")).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("c.json"), "{msg}");
        assert!(msg.contains("line 2"), "{msg}");
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
