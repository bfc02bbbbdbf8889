//! One invocation of `app`: the global flags merged with the `APP_*`
//! environment, the directories, the config and the search path, computed
//! once and handed to whatever runs next.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::cli::{Cli, Cmd, GlobalFlags, IndexCmd, PluginCmd};
use crate::config::{Config, ConfigOrigin};
use crate::context::{self, AliasExpansion, Context, DEFAULT_LOG};
use crate::discovery::SearchPath;
use crate::error::{Error, Result};
use crate::metadata;
use crate::paths::Dirs;
use crate::resolve::Resolved;
use app_plugin::log::{Format, Level, WARN};

/// How much a command depends on the config file, which decides what a
/// broken one (invalid, missing when named, not a regular file) does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigUse {
    /// Plugins, aliases and the built-ins that change things: the config may
    /// hold the alias, the plugin's settings or listeners that must see (and
    /// may veto) the command, so a broken config is an error.
    Required,
    /// `help`, `version`, `completion`, `plugin list`, `plugin path`: they
    /// run without the config, after a warning, so a user can still get help.
    Optional,
    /// `__complete`: as `Optional`, without the warning (TAB must never put
    /// an error on the terminal; the next real command reports it).
    Silent,
}

impl ConfigUse {
    /// What the parsed command line needs.
    pub fn of(cli: &Cli) -> ConfigUse {
        if cli.global.help || cli.global.version {
            return ConfigUse::Optional;
        }
        match &cli.command {
            None
            | Some(Cmd::Help { .. })
            | Some(Cmd::Version)
            | Some(Cmd::Completion { .. })
            | Some(Cmd::Plugin(PluginCmd::List))
            | Some(Cmd::Plugin(PluginCmd::Path { .. }))
            | Some(Cmd::Plugin(PluginCmd::Search { .. }))
            | Some(Cmd::Plugin(PluginCmd::Info { .. }))
            | Some(Cmd::Plugin(PluginCmd::Index(IndexCmd::List))) => ConfigUse::Optional,
            Some(Cmd::Complete { .. }) => ConfigUse::Silent,
            Some(_) => ConfigUse::Required,
        }
    }
}

/// The log level in force: `--log`, else `APP_LOG`, else the default.
fn log_level(global: &GlobalFlags) -> Level {
    global
        .log
        .or_else(|| app_plugin::log::parse_level(&std::env::var(context::vars::LOG).ok()?).ok())
        .unwrap_or(DEFAULT_LOG)
}

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
    /// How many problems of the config file were warned about (unknown
    /// keys, a config this command runs without): `plugin list` exits 1
    /// when there are any, as for its own warnings.
    pub config_warnings: usize,
}

impl Session {
    /// Computes the session for parsed global flags; reads the config file,
    /// whose problems are errors or warnings as `config_use` says.
    pub fn new(
        argv: Vec<OsString>,
        global: GlobalFlags,
        global_args: Vec<String>,
        config_use: ConfigUse,
    ) -> Result<Session> {
        let dirs = Dirs::from_env();
        let (config_path, origin) = match (&global.config, std::env::var_os(context::vars::CONFIG))
        {
            (Some(path), _) => (path.clone(), ConfigOrigin::Flag),
            // Plugins get APP_CONFIG set to the default path even when that
            // file does not exist; an `app` they run must not refuse it.
            (None, Some(path)) if !path.is_empty() && Path::new(&path) != dirs.config_file() => {
                (PathBuf::from(path), ConfigOrigin::Env)
            }
            _ => (dirs.config_file(), ConfigOrigin::Default),
        };
        let mut config_warnings = 0;
        let config = match Config::load(&config_path, origin) {
            Ok(config) => {
                if config_use != ConfigUse::Silent && log_level(&global) >= WARN {
                    for key in config.unknown_keys() {
                        config_warnings += 1;
                        crate::warn::warn(format_args!(
                            "config file {}: {key}",
                            config_path.display()
                        ));
                    }
                }
                config
            }
            Err(e) if config_use == ConfigUse::Required => return Err(e),
            Err(e) => {
                if config_use == ConfigUse::Optional && log_level(&global) >= WARN {
                    config_warnings += 1;
                    crate::warn::warn(format_args!("this command runs without the config: {e}"));
                }
                Config {
                    path: config_path,
                    ..Config::default()
                }
            }
        };
        // Read once: it places the shipped plugins and is APP_BIN.
        let app_exe = std::env::current_exe().ok();
        let search = SearchPath::from_env(app_exe.as_deref(), &dirs.user_plugin_dir())
            .map_err(Error::Usage)?;
        Ok(Session {
            argv,
            app_exe,
            global,
            global_args,
            dirs,
            config,
            search,
            alias: None,
            config_warnings,
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
    pub fn log_level(&self) -> Level {
        log_level(&self.global)
    }

    /// The context for running `resolved` with `args`.
    pub fn plugin_context(&self, resolved: &Resolved, args: &[OsString]) -> Context {
        let mut ctx = self.context(&resolved.name, Some(resolved.found.path.clone()), args);
        // One stat, for plugins of the user plugin directory only.
        if resolved.found.origin == crate::discovery::Origin::UserDir {
            let share =
                crate::install::files::share_dir(&self.dirs.user_plugin_dir(), &resolved.name);
            ctx.plugin_share = share.is_dir().then_some(share);
        }
        ctx
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
            .and_then(|f| f.parse::<Format>().ok())
            .unwrap_or_default();
        let words: Vec<_> = self.argv.iter().map(|a| a.to_string_lossy()).collect();
        let (command, command_omitted) = context::command_line(words.iter().map(|w| &**w));
        if command_omitted > 0 && self.log_level() >= app_plugin::log::DEBUG {
            eprintln!(
                "app: debug: APP_COMMAND holds the first {} of {} words of the command line ({} bytes at most); {command_omitted} omitted, the plugin's arguments are complete",
                words.len() - command_omitted,
                words.len(),
                context::COMMAND_MAX
            );
        }
        let mut ctx = Context::new(name, &self.dirs, self.config.path.clone());
        ctx.app_bin = self.app_exe.clone();
        ctx.app_version = Some(crate::VERSION.to_string());
        ctx.plugin_exe = exe;
        ctx.command = command;
        ctx.command_omitted = command_omitted;
        ctx.args = args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        ctx.log = self.log_level();
        ctx.log_format = log_format;
        ctx.hosts = hosts;
        ctx.plugin_path = std::env::var(context::vars::PLUGIN_PATH).ok();
        ctx.global_args = self.global_args.clone();
        ctx.alias = self.alias.clone();
        ctx.plugin_config = self.config.plugin_config(name).cloned();
        ctx.source = context::Source::Stdin;
        ctx
    }
}
