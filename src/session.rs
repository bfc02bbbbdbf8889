//! One invocation of `app`: the global flags merged with the `APP_*`
//! environment, the directories, the config and the search path, computed
//! once and handed to whatever runs next.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::cli::GlobalFlags;
use crate::config::Config;
use crate::context::{self, AliasExpansion, Context, CONTEXT_VERSION, DEFAULT_LOG};
use crate::discovery::SearchPath;
use crate::error::Result;
use crate::metadata;
use crate::paths::Dirs;
use crate::resolve::Resolved;

/// Everything `app` knows before it runs a command.
#[derive(Debug)]
pub struct Session {
    /// The command line as typed (program name first).
    pub argv: Vec<OsString>,
    pub global: GlobalFlags,
    /// The global flags as typed, before the command.
    pub global_args: Vec<String>,
    /// The running `app` binary (`APP_BIN`), when the OS tells.
    pub app_exe: Option<PathBuf>,
    pub dirs: Dirs,
    pub config: Config,
    pub search: SearchPath,
    /// The alias that was expanded, if any.
    pub alias: Option<AliasExpansion>,
}

impl Session {
    /// Computes the session for parsed global flags; reads the config file.
    /// With `lenient`, an invalid config file counts as an empty one.
    pub fn new(
        argv: Vec<OsString>,
        global: GlobalFlags,
        global_args: Vec<String>,
        lenient: bool,
    ) -> Result<Session> {
        let dirs = Dirs::from_env();
        let config_path = global
            .config
            .clone()
            .or_else(|| std::env::var_os(context::vars::CONFIG).map(PathBuf::from))
            .unwrap_or_else(|| dirs.config_file());
        let config = match Config::load(&config_path) {
            Ok(config) => config,
            // TAB must never put an error on the terminal: complete as if
            // there were no config (the next real command reports it).
            Err(_) if lenient => Config {
                path: config_path,
                ..Config::default()
            },
            Err(e) => return Err(e),
        };
        // Read once: it places the shipped plugins and is APP_BIN.
        let app_exe = std::env::current_exe().ok();
        let search = SearchPath::from_env(app_exe.as_deref(), &dirs.user_plugin_dir());
        Ok(Session {
            argv,
            app_exe,
            global,
            global_args,
            dirs,
            config,
            search,
            alias: None,
        })
    }

    /// The metadata cache.
    pub fn metadata_cache(&self) -> metadata::Cache {
        metadata::Cache::new(self.dirs.cache_dir.join("metadata"))
    }

    /// Metadata for a plugin, asked only when the plugin may be trusted.
    pub fn metadata_for(
        &self,
        name: &str,
        found: &crate::discovery::Found,
    ) -> Option<metadata::Metadata> {
        if found.origin.is_trusted() || self.config.is_trusted(name) {
            self.metadata_cache().get(&found.path)
        } else {
            None
        }
    }

    /// The log level in force: `--log`, else `APP_LOG`, else the default.
    pub fn log_level(&self) -> u8 {
        self.global
            .log
            .or_else(|| app_plugin::log::parse_level(&std::env::var(context::vars::LOG).ok()?).ok())
            .unwrap_or(DEFAULT_LOG)
    }

    /// The context for running `resolved` with `args`.
    pub fn plugin_context(&self, resolved: &Resolved, args: &[OsString]) -> Context {
        self.context(&resolved.name, Some(resolved.found.path.clone()), args)
    }

    /// The context for command `name` (a plugin, or a built-in for listeners).
    pub fn context(&self, name: &str, exe: Option<PathBuf>, args: &[OsString]) -> Context {
        let hosts = if self.global.hosts.is_empty() {
            // Inherited from an outer `app -H …`: a plugin calling `app` again.
            std::env::var(context::vars::HOSTS)
                .map(|h| context::split_hosts(&h))
                .unwrap_or_default()
        } else {
            self.global.hosts.clone()
        };
        let log_format = self
            .global
            .log_format
            .map(|f| f.as_str().to_string())
            .or_else(|| std::env::var(context::vars::LOG_FORMAT).ok())
            .unwrap_or_else(|| "text".to_string());
        Context {
            context_version: CONTEXT_VERSION,
            app_bin: self.app_exe.clone(),
            app_version: context::APP_VERSION.to_string(),
            plugin_name: name.to_string(),
            plugin_exe: exe,
            command: shell_words::join(self.argv.iter().map(|a| a.to_string_lossy())),
            args: args
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            log: self.log_level(),
            log_format,
            hosts,
            config: self.config.path.clone(),
            config_dir: self.dirs.config_dir.clone(),
            data_dir: self.dirs.data_dir.clone(),
            runtime_dir: self.dirs.runtime_dir.clone(),
            plugin_path: std::env::var(context::vars::PLUGIN_PATH).ok(),
            global_args: self.global_args.clone(),
            alias: self.alias.clone(),
            plugin_config: self.config.plugin_config(name).cloned(),
            source: context::Source::Stdin,
        }
    }
}
