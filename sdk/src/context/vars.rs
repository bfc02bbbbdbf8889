//! Names of the environment variables of the plugin protocol: what `app`
//! sets for every plugin it runs ([`Context::to_env`](super::Context::to_env)).
//!
//! ```
//! use app_plugin::context::{vars, Context};
//! let env = Context::defaults("demo").to_env();
//! assert!(env.iter().any(|(k, v)| *k == vars::PLUGIN_NAME && v == "demo"));
//! ```

/// Absolute path of the `app` binary that ran the plugin.
pub const BIN: &str = "APP_BIN";
/// Version of that `app`.
pub const VERSION: &str = "APP_VERSION";
/// The plugin's name: `event-repeater` for `app-event-repeater`.
pub const PLUGIN_NAME: &str = "APP_PLUGIN_NAME";
/// Absolute path of the plugin's own executable.
pub const PLUGIN_EXE: &str = "APP_PLUGIN_EXE";
/// The original command line, joined with shell quoting; at most
/// [`COMMAND_MAX`](super::COMMAND_MAX) bytes of whole words.
pub const COMMAND: &str = "APP_COMMAND";
/// How many words of the command line `APP_COMMAND` leaves out (set only
/// when it leaves some out); the plugin's own arguments are always whole.
pub const COMMAND_OMITTED: &str = "APP_COMMAND_OMITTED";
/// Log level 0 (silent) to 5 (trace), from `app --log N`.
pub const LOG: &str = "APP_LOG";
/// `text` or `json`, from `app --log-format`.
pub const LOG_FORMAT: &str = "APP_LOG_FORMAT";
/// Hosts from `app -H URL` (repeatable), comma-separated.
pub const HOSTS: &str = "APP_HOSTS";
/// The config file in force (it need not exist).
pub const CONFIG: &str = "APP_CONFIG";
/// Directory of the config file.
pub const CONFIG_DIR: &str = "APP_CONFIG_DIR";
/// Directory for persistent data.
pub const DATA_DIR: &str = "APP_DATA_DIR";
/// Directory for sockets and pid files (`plugins/` below it).
pub const RUNTIME_DIR: &str = "APP_RUNTIME_DIR";
/// Always `1` for this version of the contract.
pub const CONTEXT_VERSION: &str = "APP_CONTEXT_VERSION";
/// `stdin` when the JSON context document is the first line of stdin.
pub const CONTEXT: &str = "APP_CONTEXT";
/// The user's plugin search path; passed on unchanged.
pub const PLUGIN_PATH: &str = "APP_PLUGIN_PATH";
/// A multi-file plugin's `share/` folder (its data files), when it has one.
pub const PLUGIN_SHARE: &str = "APP_PLUGIN_SHARE";
