//! The context's environment side: the `APP_*` variables `app` sets
//! ([`Context::to_env`]) and reads back ([`Context::from_env`]), and the
//! defaults of a plugin run without `app` ([`Context::defaults`]).

use std::env;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::{vars, Context, Source, CONTEXT_VERSION, DEFAULT_LOG};
use crate::level::{parse_level, Format};
use crate::paths::Dirs;

impl Context {
    /// A context for plugin `name` with these directories and config file,
    /// and nothing else said: no `app` (no `app_bin`, no `app_version`), no
    /// command line, the default log level and format. `app` builds the
    /// context it passes from here; [`Context::defaults`] adds what the
    /// environment says.
    ///
    /// ```
    /// use app_plugin::{context::Context, log::Level, paths::Dirs};
    /// let dirs = Dirs::from_env();
    /// let ctx = Context::new("demo", &dirs, dirs.config_file());
    /// assert_eq!((ctx.plugin_name.as_str(), ctx.log), ("demo", Level::Warn));
    /// assert!(ctx.app_version.is_none() && ctx.args.is_empty());
    /// ```
    pub fn new(name: &str, dirs: &Dirs, config: PathBuf) -> Context {
        Context {
            context_version: CONTEXT_VERSION,
            app_bin: None,
            app_version: None,
            plugin_name: name.to_string(),
            plugin_exe: None,
            command: String::new(),
            command_omitted: 0,
            args: Vec::new(),
            log: DEFAULT_LOG,
            log_format: Format::Text,
            hosts: Vec::new(),
            config,
            config_dir: dirs.config_dir.clone(),
            data_dir: dirs.data_dir.clone(),
            runtime_dir: dirs.runtime_dir.clone(),
            plugin_path: None,
            global_args: Vec::new(),
            alias: None,
            plugin_config: None,
            plugin_share: None,
            source: Source::Defaults,
        }
    }

    /// Reads the context from `APP_*` variables; anything missing gets the
    /// default. With no `APP_CONTEXT_VERSION` at all, this is
    /// [`Context::defaults`] for the name of the running executable.
    ///
    /// ```
    /// use app_plugin::context::{Context, Source};
    /// std::env::set_var("APP_CONTEXT_VERSION", "1");
    /// std::env::set_var("APP_VERSION", "9.9.9");
    /// std::env::set_var("APP_LOG", "debug");
    /// let ctx = Context::from_env();
    /// assert_eq!(ctx.source, Source::Env);
    /// assert_eq!(ctx.app_version.as_deref(), Some("9.9.9"));
    /// assert_eq!(ctx.log, app_plugin::log::Level::Debug);
    /// ```
    pub fn from_env() -> Context {
        let exe_name = env::args_os()
            .next()
            .and_then(|a| {
                Path::new(&a)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
            })
            .unwrap_or_default();
        let fallback_name = exe_name
            .strip_prefix("app-")
            .unwrap_or(&exe_name)
            .to_string();
        let name = env_string(vars::PLUGIN_NAME).unwrap_or(fallback_name);
        let mut ctx = Context::defaults(&name);
        // Lossy: an argument that is not UTF-8 is the plugin's parser's to
        // refuse, not a reason to panic here.
        ctx.args = env::args_os()
            .skip(1)
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        if env::var_os(vars::CONTEXT_VERSION).is_none() {
            return ctx;
        }
        ctx.source = Source::Env;
        ctx.app_bin = env_string(vars::BIN).map(PathBuf::from);
        ctx.app_version = env_string(vars::VERSION);
        ctx.plugin_exe = env_string(vars::PLUGIN_EXE)
            .map(PathBuf::from)
            .or(ctx.plugin_exe);
        if let Some(c) = env_string(vars::COMMAND) {
            ctx.command = c;
        }
        ctx.command_omitted = env_string(vars::COMMAND_OMITTED)
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        ctx.hosts = env_string(vars::HOSTS)
            .map(|h| split_hosts(&h))
            .unwrap_or_default();
        ctx
    }

    /// The context `app` would give plugin `name` when run with no flags;
    /// `APP_LOG`, `APP_LOG_FORMAT`, `APP_CONFIG`, the directories' variables
    /// and `APP_PLUGIN_PATH` count when set.
    ///
    /// ```
    /// use app_plugin::{context::Context, log::Format};
    /// std::env::remove_var("APP_LOG_FORMAT");
    /// let ctx = Context::defaults("demo");
    /// assert_eq!(ctx.log_format, Format::Text);
    /// assert!(ctx.config.ends_with("config.json"));
    /// ```
    pub fn defaults(name: &str) -> Context {
        let dirs = Dirs::from_env();
        let config = env::var_os(vars::CONFIG)
            .map(PathBuf::from)
            .unwrap_or_else(|| dirs.config_file());
        let mut ctx = Context::new(name, &dirs, config);
        ctx.plugin_exe = env::current_exe().ok();
        if let Some(level) = env_string(vars::LOG).and_then(|l| parse_level(&l).ok()) {
            ctx.log = level;
        }
        // As `log::init_from_env` reads it, so that both agree.
        if let Some(format) = env_string(vars::LOG_FORMAT).and_then(|f| f.parse().ok()) {
            ctx.log_format = format;
        }
        ctx.plugin_path = env::var(vars::PLUGIN_PATH).ok();
        ctx.plugin_share = env::var_os(vars::PLUGIN_SHARE)
            .filter(|s| !s.is_empty())
            .map(PathBuf::from);
        ctx
    }

    /// The `APP_*` variables for this context, as `app` sets them.
    ///
    /// ```
    /// let env = app_plugin::context::Context::defaults("demo").to_env();
    /// assert!(env.iter().any(|(k, v)| *k == "APP_PLUGIN_NAME" && v == "demo"));
    /// assert!(env.iter().any(|(k, v)| *k == "APP_LOG" && v == "2"));
    /// ```
    pub fn to_env(&self) -> Vec<(&'static str, OsString)> {
        let mut env: Vec<(&'static str, OsString)> = vec![
            (vars::PLUGIN_NAME, self.plugin_name.clone().into()),
            (vars::COMMAND, self.command.clone().into()),
            (vars::LOG, u8::from(self.log).to_string().into()),
            (vars::LOG_FORMAT, self.log_format.as_str().into()),
            (vars::HOSTS, self.hosts.join(",").into()),
            (vars::CONFIG, self.config.clone().into()),
            (vars::CONFIG_DIR, self.config_dir.clone().into()),
            (vars::DATA_DIR, self.data_dir.clone().into()),
            (vars::RUNTIME_DIR, self.runtime_dir.clone().into()),
            (vars::CONTEXT_VERSION, CONTEXT_VERSION.to_string().into()),
        ];
        if let Some(version) = &self.app_version {
            env.insert(0, (vars::VERSION, version.clone().into()));
        }
        if self.command_omitted > 0 {
            env.push((
                vars::COMMAND_OMITTED,
                self.command_omitted.to_string().into(),
            ));
        }
        if let Some(bin) = &self.app_bin {
            env.push((vars::BIN, bin.clone().into()));
        }
        if let Some(exe) = &self.plugin_exe {
            env.push((vars::PLUGIN_EXE, exe.clone().into()));
        }
        // Always set (empty: none), so a plugin run by another plugin never
        // inherits the first one's folder.
        let share = self.plugin_share.clone().unwrap_or_default();
        env.push((vars::PLUGIN_SHARE, share.into()));
        env
    }
}

fn env_string(var: &str) -> Option<String> {
    env::var(var).ok().filter(|v| !v.is_empty())
}

/// `APP_HOSTS` as a list: comma-separated, blanks dropped.
///
/// ```
/// assert_eq!(app_plugin::context::split_hosts("a, b,,c"), ["a", "b", "c"]);
/// ```
pub fn split_hosts(hosts: &str) -> Vec<String> {
    hosts
        .split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(String::from)
        .collect()
}
