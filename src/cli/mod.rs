//! Parsing the command line: global flags, built-in commands, and everything
//! else as an external command (clap's `external_subcommand`, as cargo does).
//!
//! Global flags go before the command (`app --log 5 -H unix:///x foo run`);
//! everything after the command's first word belongs to the command.
//!
//! Here: the top-level command line and the built-ins; `plugin`'s
//! subcommands are in `cli/plugin.rs`, and the reading of `argv` that needs
//! no clap tree (the fast path of every dispatch) in `cli/argv.rs`.

// Doc comments here are clap's help text, where `<NAME>` is a placeholder, not HTML.
#![allow(rustdoc::invalid_html_tags)]

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

mod argv;
mod plugin;

pub use argv::{command_index, parse_plain_external, without_separator};
pub use plugin::{IndexCmd, Lang, Output, PluginCmd};

/// The parsed command line.
#[derive(Debug, Parser)]
#[command(
    name = "app",
    about = "Run built-in commands and app-<name> plugins",
    disable_help_subcommand = true,
    disable_version_flag = true,
    subcommand_required = false,
    args_conflicts_with_subcommands = false,
    override_usage = "app [GLOBAL FLAGS] <COMMAND | PLUGIN> [ARGS]..."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalFlags,
    #[command(subcommand)]
    pub command: Option<Cmd>,
}

/// Flags `app` reads before the command and passes on in the context.
#[derive(Debug, Clone, Default, Args)]
pub struct GlobalFlags {
    /// Log level for app and its plugins: 0 silent … 5 trace, or off, error, warn, info, debug, trace [default: 2]
    #[arg(long, value_name = "0..5", value_parser = app_plugin::log::parse_level)]
    pub log: Option<app_plugin::log::Level>,
    /// Log format for plugins
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub log_format: Option<LogFormat>,
    /// Host or socket URL for plugins that talk to a server (repeatable)
    #[arg(short = 'H', long = "host", value_name = "URL")]
    pub hosts: Vec<String>,
    /// Config file [default: APP_CONFIG_DIR/config.json]
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Set for `app --help`, which lists the installed plugins too (clap's
    /// own `-h/--help` still serves the built-ins' help).
    #[arg(skip)]
    pub help: bool,
    /// Print the version
    #[arg(short = 'V', long)]
    pub version: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

impl LogFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            LogFormat::Text => "text",
            LogFormat::Json => "json",
        }
    }
}

/// The built-in commands; anything else is `External`.
#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Show help for app, a built-in command or a plugin
    Help {
        /// A command or plugin name
        #[arg(value_name = "COMMAND")]
        topic: Vec<String>,
    },
    /// Print app's version
    Version,
    /// List, inspect, install, remove, upgrade and create plugins
    #[command(subcommand)]
    Plugin(PluginCmd),
    /// Print a shell completion script (bash, zsh or fish)
    #[command(after_help = COMPLETION_HELP)]
    Completion {
        /// The shell: bash (4.0 or later, with or without the bash-completion
        /// package), zsh (the script runs compinit if the shell has not yet)
        /// or fish
        #[arg(value_enum)]
        shell: Shell,
    },
    /// Candidates for shell completion (used by the completion scripts)
    #[command(name = "__complete", hide = true)]
    Complete {
        #[arg(allow_hyphen_values = true, trailing_var_arg = true)]
        words: Vec<String>,
    },
    #[command(external_subcommand)]
    External(Vec<OsString>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

/// `app completion --help`: how to install each script, once.
const COMPLETION_HELP: &str = "\
Install (one line per shell; a new shell then completes app):
  bash  echo 'source <(app completion bash)' >> ~/.bashrc
  zsh   echo 'source <(app completion zsh)' >> ~/.zshrc
  fish  mkdir -p ~/.config/fish/completions && app completion fish > ~/.config/fish/completions/app.fish

Completion covers the built-ins, every plugin found (with its description when
trusted), the aliases, and the arguments of plugins that opt in; the script
asks `app __complete` on each TAB, so it never goes stale. Packagers: the same
scripts are in completions/ (see docs/completion.md).";

/// Names of the built-in commands; a plugin or alias can never replace one.
pub const BUILTINS: &[&str] = &["help", "version", "plugin", "completion", "__complete"];

/// Whether `name` is a built-in command.
pub fn is_builtin(name: &str) -> bool {
    BUILTINS.contains(&name)
}

/// The clap command, for help output.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Cli {
        Cli::try_parse_from(std::iter::once("app").chain(args.iter().copied())).unwrap()
    }

    #[test]
    fn clap_definition_is_consistent() {
        command().debug_assert();
    }

    #[test]
    fn global_flags_before_an_external_command_are_ours() {
        let cli = parse(&["--log", "5", "-H", "unix:///x", "foo", "run", "--log", "1"]);
        assert_eq!(cli.global.log, Some(app_plugin::log::Level::Trace));
        assert_eq!(cli.global.hosts, vec!["unix:///x"]);
        match cli.command {
            Some(Cmd::External(args)) => assert_eq!(args, ["foo", "run", "--log", "1"]),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn builtins_win() {
        assert!(matches!(parse(&["version"]).command, Some(Cmd::Version)));
        assert!(matches!(
            parse(&["plugin", "list"]).command,
            Some(Cmd::Plugin(PluginCmd::List))
        ));
    }

    #[test]
    fn plugin_management_commands_parse() {
        match parse(&[
            "plugin",
            "install",
            "http://h/app-x",
            "--sha256",
            "ab",
            "--force",
        ])
        .command
        {
            Some(Cmd::Plugin(PluginCmd::Install {
                source: Some(source),
                name: None,
                force: true,
                sha256: Some(sum),
                git: None,
                ..
            })) => assert_eq!((source.as_str(), sum.as_str()), ("http://h/app-x", "ab")),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            parse(&["plugin", "new", "x", "--lang", "rust"]).command,
            Some(Cmd::Plugin(PluginCmd::New {
                lang: Lang::Rust,
                dir: None,
                ..
            }))
        ));
        assert!(matches!(
            parse(&["plugin", "upgrade", "x"]).command,
            Some(Cmd::Plugin(PluginCmd::Upgrade { sha256: None, .. }))
        ));
        assert!(matches!(
            parse(&["plugin", "upgrade", "--all"]).command,
            Some(Cmd::Plugin(PluginCmd::Upgrade {
                name: None,
                all: true,
                ..
            }))
        ));
        assert!(matches!(
            parse(&["plugin", "install", "--git", "file:///r", "--rev", "v1"]).command,
            Some(Cmd::Plugin(PluginCmd::Install {
                source: None,
                git: Some(_),
                rev: Some(_),
                ..
            }))
        ));
        assert!(matches!(
            parse(&["plugin", "search", "x", "-o", "json"]).command,
            Some(Cmd::Plugin(PluginCmd::Search {
                output: Output::Json,
                ..
            }))
        ));
    }
}
