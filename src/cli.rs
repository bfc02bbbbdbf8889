//! Parsing the command line: global flags, built-in commands, and everything
//! else as an external command (clap's `external_subcommand`, as cargo does).
//!
//! Global flags go before the command (`app --log 5 -H unix:///x foo run`);
//! everything after the command's first word belongs to the command.

// Doc comments here are clap's help text, where `<NAME>` is a placeholder, not HTML.
#![allow(rustdoc::invalid_html_tags)]

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

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
    pub log: Option<u8>,
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

#[derive(Debug, Subcommand)]
pub enum PluginCmd {
    /// List the plugins on the search path, with warnings (shadowed, not executable, …)
    List,
    /// Print the path of the executable a plugin name resolves to
    Path {
        /// The plugin name, e.g. `event-repeater` or `event-repeater manage`
        #[arg(required = true)]
        name: Vec<String>,
    },
    /// Install a plugin by name from the indexes, or from a file, an http(s) URL or a git repository
    #[command(after_help = INSTALL_HELP)]
    Install {
        /// NAME, NAME@VERSION or INDEX/NAME from the indexes; or an executable or script, a .tar.gz holding one app-<name>, or an http(s):// URL of either
        #[arg(
            value_name = "NAME|PATH|URL",
            required_unless_present = "git",
            conflicts_with = "git"
        )]
        source: Option<String>,
        /// The plugin name [default: from the file name, app-<name>]
        #[arg(long, value_name = "NAME")]
        name: Option<String>,
        /// Replace a plugin of the same name in the user plugin directory
        #[arg(long)]
        force: bool,
        /// SHA-256 of the file or archive as fetched (required for URLs)
        #[arg(long, value_name = "HEX")]
        sha256: Option<String>,
        /// Build the plugin from this git repository with cargo
        #[arg(long, value_name = "URL")]
        git: Option<String>,
        /// With --git: the commit, tag or branch to build [default: the default branch]
        #[arg(long, value_name = "REV", requires = "git")]
        rev: Option<String>,
        /// With --git: the crate's directory inside the repository
        #[arg(long, value_name = "DIR", requires = "git")]
        path: Option<String>,
    },
    /// Remove a plugin that `app plugin install` installed
    #[command(after_help = INSTALL_HELP)]
    Remove {
        #[arg(value_name = "NAME")]
        name: String,
    },
    /// Re-install a plugin from where it came from: the newest version of its index, its URL, path or git repository
    #[command(after_help = INSTALL_HELP)]
    Upgrade {
        #[arg(
            value_name = "NAME",
            required_unless_present = "all",
            conflicts_with = "all"
        )]
        name: Option<String>,
        /// Every plugin installed from an index, a path or a git repository (one line each)
        #[arg(long)]
        all: bool,
        /// SHA-256 of the new download (required when the source is a URL)
        #[arg(long, value_name = "HEX", conflicts_with = "all")]
        sha256: Option<String>,
    },
    /// Add, list, remove and update plugin indexes (signed catalogues of plugins)
    #[command(subcommand)]
    Index(IndexCmd),
    /// Search the indexes' plugins by name and description
    #[command(
        after_help = "Example: app plugin search json -o json\nReads the cached indexes: 'app plugin index update' refreshes them."
    )]
    Search {
        /// Only plugins whose name or description contains WORD (any case)
        #[arg(value_name = "WORD")]
        word: Option<String>,
        /// Output format
        #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
        output: Output,
    },
    /// Every version of a plugin in the indexes, its platforms and homepage
    #[command(after_help = "Example: app plugin info hello")]
    Info {
        /// NAME or INDEX/NAME
        #[arg(value_name = "NAME")]
        name: String,
    },
    /// Create a plugin skeleton that speaks the plugin protocol
    New {
        /// The plugin name (the executable is app-<NAME>)
        #[arg(value_name = "NAME")]
        name: String,
        /// Language of the skeleton
        #[arg(long, value_enum, default_value = "sh")]
        lang: Lang,
        /// Directory to create [default: ./app-<NAME>]
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

/// `app plugin index …`.
#[derive(Debug, Subcommand)]
pub enum IndexCmd {
    /// Add an index: fetch it, verify its signature, and keep a verified copy
    #[command(after_help = INDEX_HELP)]
    Add {
        /// A name for it (lowercase letters, digits, - and _)
        #[arg(value_name = "NAME")]
        name: String,
        /// Its URL (http, https or file://) or path; its signature is at URL.minisig
        #[arg(value_name = "URL")]
        url: String,
        /// The publisher's minisign public key file (minisign.pub)
        #[arg(long, value_name = "FILE", conflicts_with = "key", required_unless_present_any = ["key", "insecure_no_signature"])]
        key_file: Option<PathBuf>,
        /// The publisher's minisign public key itself (the RW… line)
        #[arg(long, value_name = "PUBKEY")]
        key: Option<String>,
        /// A file holding a bearer token for the index's server (the file's path is recorded, never the token)
        #[arg(long, value_name = "FILE")]
        token_file: Option<PathBuf>,
        /// Accept an index nobody signed (flagged by 'index list')
        #[arg(long, conflicts_with_all = ["key", "key_file"])]
        insecure_no_signature: bool,
    },
    /// List the indexes added, with their serial and signature status
    #[command(
        after_help = "Example: app plugin index list\nAn index added with --insecure-no-signature shows UNSIGNED."
    )]
    List,
    /// Remove an index and its cached copy (plugins installed from it stay)
    #[command(after_help = "Example: app plugin index remove main")]
    Remove {
        #[arg(value_name = "NAME")]
        name: String,
    },
    /// Fetch every index (or those named) again, verify it, and replace the cached copy
    #[command(after_help = INDEX_HELP)]
    Update {
        #[arg(value_name = "NAME")]
        names: Vec<String>,
    },
}

/// `plugin search` output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Table,
    Json,
}

/// Exit codes of `plugin index add` and `update`, for `--help`.
const INDEX_HELP: &str = "\
Example: app plugin index add main https://example.org/app-index.json --key-file main.pub

Exit codes: 0 done; 1 I/O failure; 2 usage; 3 index unreachable; 4 an index of that name is already
added; 5 verification failed (signature
missing, by another key or not matching, not JSON, not an app.index/v1 index, an HTML page);
6 stale (serial lower than the copy already verified, or past its expires date). On any refusal the
cached copy stays as it was (update goes on with the other indexes and exits non-zero).";

/// Exit codes of `plugin install`, `remove` and `upgrade`, for `--help`.
const INSTALL_HELP: &str = "\
Exit codes: 0 installed; 1 I/O failure; 2 usage (bad name, a built-in's name, URL without --sha256);
3 download failed (no connection, HTTP status not 2xx); 4 refused (already installed: use --force;
remove/upgrade of a plugin install did not put there); 5 verification failed (checksum mismatch, not
an executable, archive without exactly one executable app-<name>, larger than APP_INSTALL_MAX_BYTES,
an index refused); 6 index stale (rollback, expired); 7 not in the indexes, no such version, no build
for this machine; 8 build from source failed (no cargo, cargo failed).
Nothing is written to the plugin directory unless it exits 0 (upgrade --all: each plugin on its own).

Examples: app plugin install hello; app plugin install hello@1.0.0; app plugin install main/hello;
app plugin install ./app-foo; app plugin install --git https://example.org/app-foo.git --rev v1;
app plugin upgrade hello; app plugin upgrade --all";

/// The languages `app plugin new` writes skeletons in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Lang {
    Sh,
    Python,
    Rust,
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

/// `app NAME …` with no global flag and NAME no built-in: what clap would
/// make of it, without building clap's command tree (a fifth of a dispatch's
/// instructions). Anything else is `None`, for clap to parse.
pub fn parse_plain_external(argv: &[OsString]) -> Option<Cli> {
    let name = argv.get(1)?.to_str()?;
    if name.is_empty() || name.starts_with('-') || is_builtin(name) {
        return None;
    }
    Some(Cli {
        global: GlobalFlags::default(),
        command: Some(Cmd::External(argv[1..].to_vec())),
    })
}

/// Where the command starts in `argv` (program name first): the index of
/// the first word that is neither a global flag nor a global flag's value.
pub fn command_index(argv: &[std::ffi::OsString]) -> usize {
    flags_end(argv, false)
}

/// `argv` without the `--` that ends the global flags (`app -- version` is
/// `app version`): `--` says that what follows is not a flag of `app`'s,
/// and a command is not one. A `--` before a word starting with `-` stays
/// (that word is then not a flag of `app`'s, and no command either).
pub fn without_separator(mut argv: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    // The common case, no `--` at all, costs no flag lookup.
    if !argv.iter().skip(1).any(|w| w == "--") {
        return argv;
    }
    let i = flags_end(&argv, true);
    let next_is_word = argv
        .get(i + 1)
        .is_some_and(|w| !w.as_encoded_bytes().starts_with(b"-"));
    if argv.get(i).is_some_and(|w| w == "--") && next_is_word {
        argv.remove(i);
    }
    argv
}

/// The index after the global flags and their values; with
/// `stop_at_separator`, the index of a `--` among them.
fn flags_end(argv: &[std::ffi::OsString], stop_at_separator: bool) -> usize {
    // clap's tree costs about a third of a dispatch: build it only when a
    // flag has to be looked up (`app foo …` needs none).
    let mut tree: Option<clap::Command> = None;
    let mut takes_value = |word: &str| {
        tree.get_or_insert_with(command).get_arguments().any(|a| {
            a.get_action().takes_values()
                && (word
                    .strip_prefix("--")
                    .is_some_and(|l| a.get_long() == Some(l))
                    || word.strip_prefix('-').and_then(|s| s.chars().next()) == a.get_short()
                        && word.len() == 2)
        })
    };
    let mut i = 1;
    while let Some(word) = argv.get(i).and_then(|w| w.to_str()) {
        if !word.starts_with('-') || (stop_at_separator && word == "--") {
            break;
        }
        i += if !word.contains('=') && takes_value(word) {
            2
        } else {
            1
        };
    }
    i.min(argv.len())
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
    fn the_plain_external_path_agrees_with_clap() {
        for args in [
            &["foo"][..],
            &["foo", "run", "--log", "1", "--", "x"],
            &["event-repeater", "manage", "-H", "x"],
            &["foo", "help"],
        ] {
            let argv: Vec<OsString> = std::iter::once("app")
                .chain(args.iter().copied())
                .map(OsString::from)
                .collect();
            let fast = parse_plain_external(&argv).expect("a plain external command");
            assert_eq!(
                format!("{fast:?}"),
                format!("{:?}", parse(args)),
                "{args:?}"
            );
        }
        for args in [
            &["--log", "3", "foo"][..],
            &["plugin", "list"],
            &["help"],
            &["-V"],
            &[""],
            &[],
        ] {
            let argv: Vec<OsString> = std::iter::once("app")
                .chain(args.iter().copied())
                .map(OsString::from)
                .collect();
            assert!(parse_plain_external(&argv).is_none(), "{args:?}");
        }
    }

    #[test]
    fn clap_definition_is_consistent() {
        command().debug_assert();
    }

    #[test]
    fn global_flags_before_an_external_command_are_ours() {
        let cli = parse(&["--log", "5", "-H", "unix:///x", "foo", "run", "--log", "1"]);
        assert_eq!(cli.global.log, Some(5));
        assert_eq!(cli.global.hosts, vec!["unix:///x"]);
        match cli.command {
            Some(Cmd::External(args)) => assert_eq!(args, ["foo", "run", "--log", "1"]),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn command_index_skips_global_flags_and_their_values() {
        let argv = |a: &[&str]| a.iter().map(std::ffi::OsString::from).collect::<Vec<_>>();
        assert_eq!(
            command_index(&argv(&["app", "--log", "3", "-H", "x", "plugin", "list"])),
            5
        );
        assert_eq!(command_index(&argv(&["app", "--log=3", "version"])), 2);
        assert_eq!(command_index(&argv(&["app", "--help"])), 2);
    }

    #[test]
    fn a_separator_before_the_command_is_dropped() {
        let argv = |a: &[&str]| a.iter().map(std::ffi::OsString::from).collect::<Vec<_>>();
        assert_eq!(
            without_separator(argv(&["app", "--log", "3", "--", "version"])),
            argv(&["app", "--log", "3", "version"])
        );
        assert_eq!(
            without_separator(argv(&["app", "foo", "--", "x"])),
            argv(&["app", "foo", "--", "x"])
        );
        assert_eq!(
            without_separator(argv(&["app", "--", "-x"])),
            argv(&["app", "--", "-x"])
        );
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
