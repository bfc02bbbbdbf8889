//! Where `app` and its plugins keep files: config, data, sockets and caches.
//!
//! Every location can be overridden by an `APP_*` variable, so that a test, a
//! container or a second installation can be isolated without touching `$HOME`.
//! Plugins use the same rules (through [`Dirs::from_env`]), which is why a
//! shipped plugin run directly as `app-<name>` finds the same files as when it
//! is run through `app`.
//!
//! Under a systemd unit with `StateDirectory=` and `RuntimeDirectory=`
//! (the packaged `app-event-repeater@.service`), systemd's `STATE_DIRECTORY`
//! and `RUNTIME_DIRECTORY` come next after the `APP_*` variables: state and
//! checkpoints go to `/var/lib/app`, sockets to `/run/app/plugins`. A user
//! finds those system instances through [`system_plugin_runtime_dir`].

use std::env;
use std::path::{Path, PathBuf};

/// The directories `app` and its plugins use.
///
/// ```
/// let dirs = app_plugin::paths::Dirs::from_env();
/// let socket = dirs.plugin_socket("event-time");
/// assert!(socket.ends_with("plugins/event-time.sock"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dirs {
    /// `APP_CONFIG_DIR`: holds `config.json`.
    pub config_dir: PathBuf,
    /// `APP_DATA_DIR`: persistent state (user plugins, repeater routes, logs).
    pub data_dir: PathBuf,
    /// `APP_RUNTIME_DIR`: sockets, pid files and other per-boot files.
    pub runtime_dir: PathBuf,
    /// Cache for plugin metadata answers; safe to delete at any time.
    pub cache_dir: PathBuf,
}

impl Dirs {
    /// Computes the directories from `APP_*` variables, falling back to the
    /// platform's conventional places (XDG on Linux).
    ///
    /// ```
    /// let dirs = app_plugin::paths::Dirs::from_env();
    /// assert!(dirs.config_dir.is_absolute() && dirs.runtime_dir.is_absolute());
    /// ```
    pub fn from_env() -> Dirs {
        let config_dir = env_dir("APP_CONFIG_DIR")
            .or_else(|| dirs::config_dir().map(|d| d.join("app")))
            .unwrap_or_else(|| fallback_home().join(".config/app"));
        let data_dir = env_dir("APP_DATA_DIR")
            .or_else(|| systemd_dir("STATE_DIRECTORY"))
            .or_else(|| dirs::data_dir().map(|d| d.join("app")))
            .unwrap_or_else(|| fallback_home().join(".local/share/app"));
        let runtime_dir = env_dir("APP_RUNTIME_DIR")
            .or_else(|| systemd_dir("RUNTIME_DIRECTORY"))
            .or_else(|| dirs::runtime_dir().map(|d| d.join("app")))
            .unwrap_or_else(fallback_runtime_dir);
        let cache_dir = cache_dir(&data_dir);
        Dirs {
            config_dir,
            data_dir,
            runtime_dir,
            cache_dir,
        }
    }

    /// The default config file: `APP_CONFIG_DIR/config.json`.
    ///
    /// ```
    /// let dirs = app_plugin::paths::Dirs::from_env();
    /// assert_eq!(dirs.config_file(), dirs.config_dir.join("config.json"));
    /// ```
    pub fn config_file(&self) -> PathBuf {
        self.config_dir.join("config.json")
    }

    /// The user plugin directory, where `app plugin install` puts plugins.
    ///
    /// ```
    /// let dirs = app_plugin::paths::Dirs::from_env();
    /// assert_eq!(dirs.user_plugin_dir(), dirs.data_dir.join("plugins"));
    /// ```
    pub fn user_plugin_dir(&self) -> PathBuf {
        self.data_dir.join("plugins")
    }

    /// Where running plugins put their sockets, pid and listen files.
    ///
    /// ```
    /// let dirs = app_plugin::paths::Dirs::from_env();
    /// assert_eq!(dirs.plugin_runtime_dir(), dirs.runtime_dir.join("plugins"));
    /// ```
    pub fn plugin_runtime_dir(&self) -> PathBuf {
        self.runtime_dir.join("plugins")
    }

    /// The unix socket a long-running plugin named `name` listens on.
    ///
    /// ```
    /// let dirs = app_plugin::paths::Dirs::from_env();
    /// assert!(dirs.plugin_socket("r1").ends_with("plugins/r1.sock"));
    /// ```
    pub fn plugin_socket(&self, name: &str) -> PathBuf {
        self.plugin_runtime_dir().join(format!("{name}.sock"))
    }
}

/// `APP_CACHE_DIR`, else the platform cache dir, else under `data_dir`.
///
/// ```
/// let dirs = app_plugin::paths::Dirs::from_env();
/// assert_eq!(app_plugin::paths::cache_dir(&dirs.data_dir), dirs.cache_dir);
/// ```
pub fn cache_dir(data_dir: &Path) -> PathBuf {
    env_dir("APP_CACHE_DIR")
        .or_else(|| dirs::cache_dir().map(|d| d.join("app")))
        .unwrap_or_else(|| data_dir.join("cache"))
}

/// Where the packaged system instances keep their sockets: the units'
/// `RuntimeDirectory=app` plus `plugins`, i.e. `/run/app/plugins`
/// (`APP_SYSTEM_RUNTIME_DIR` instead of `/run/app`, for a second
/// installation or a test). `app event-repeater manage` looks there after
/// the user's own directory.
///
/// ```
/// let dir = app_plugin::paths::system_plugin_runtime_dir();
/// assert!(dir.ends_with("plugins") && dir.is_absolute());
/// ```
pub fn system_plugin_runtime_dir() -> PathBuf {
    env_dir("APP_SYSTEM_RUNTIME_DIR")
        .unwrap_or_else(|| PathBuf::from("/run/app"))
        .join("plugins")
}

/// The first directory of a systemd `*_DIRECTORY` variable (a
/// colon-separated list when a unit names several).
fn systemd_dir(var: &str) -> Option<PathBuf> {
    let value = env::var_os(var)?;
    let first = env::split_paths(&value).next()?;
    first.is_absolute().then_some(first)
}

fn env_dir(var: &str) -> Option<PathBuf> {
    let value = env::var_os(var)?;
    let path = PathBuf::from(value);
    // A relative directory would mean something different to every plugin
    // that changes its working directory, so only absolute ones count.
    path.is_absolute().then_some(path)
}

fn fallback_home() -> PathBuf {
    dirs::home_dir().unwrap_or_else(|| Path::new("/").to_path_buf())
}

fn fallback_runtime_dir() -> PathBuf {
    // No XDG_RUNTIME_DIR (containers, cron, ssh without a login session):
    // a per-user directory under the temp dir, like tmux does.
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    env::temp_dir().join(format!("app-{uid}"))
}
