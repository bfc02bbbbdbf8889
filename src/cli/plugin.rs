//! `app plugin …`: the clap definitions of the plugin-management
//! subcommands, with their exit codes for `--help`.

// Doc comments here are clap's help text, where `<NAME>` is a placeholder, not HTML.
#![allow(rustdoc::invalid_html_tags)]

use std::path::PathBuf;

use clap::{Subcommand, ValueEnum};

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
        /// NAME, NAME@VERSION or INDEX/NAME from the indexes; or a path (./FILE, or with a /) to an executable or script, a .tar.gz holding one app-<name>, or a folder holding one; or an http(s):// URL of a file
        #[arg(
            value_name = "NAME|PATH|URL",
            required_unless_present_any = ["git", "file"],
            conflicts_with_all = ["git", "file"]
        )]
        source: Option<String>,
        /// A local file or folder to install, however it is spelled (never looked up in the indexes)
        #[arg(long, value_name = "PATH", conflicts_with = "git")]
        file: Option<PathBuf>,
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
        /// NAME, or NAME@VERSION: that version of its index, pinned there
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
    /// Bring the installed plugins to a declared set (plugins.json), writing plugins.lock beside it
    #[command(after_help = APPLY_HELP)]
    Apply {
        /// The plugin set: {"indexes": {NAME: {"url", "key"}}, "plugins": {NAME: "^1.0"}}
        #[arg(short = 'f', long = "file", value_name = "FILE")]
        file: PathBuf,
        /// Print the plan (install, upgrade, downgrade, replace, keep, remove) and change nothing
        #[arg(long)]
        dry_run: bool,
        /// Also remove the plugins 'app plugin install' put here that the file does not list (never shipped ones, nor plugins on PATH)
        #[arg(long)]
        prune: bool,
        /// Install exactly plugins.lock; refuse (exit 10) if it is missing or disagrees with the file
        #[arg(long, conflicts_with = "update")]
        locked: bool,
        /// Resolve every plugin again to the newest version its requirement accepts (the lock is otherwise kept where it still fits)
        #[arg(long)]
        update: bool,
        /// Output format
        #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
        output: Output,
    },
    /// Pin a plugin at its version: 'upgrade --all' leaves it ('upgrade NAME@VERSION' moves the pin)
    #[command(after_help = PIN_HELP)]
    Pin {
        #[arg(value_name = "NAME")]
        name: String,
    },
    /// Release a plugin's pin: 'upgrade --all' upgrades it again
    #[command(after_help = PIN_HELP)]
    Unpin {
        #[arg(value_name = "NAME")]
        name: String,
    },
    /// The plugins installed from an index that has a newer version for this machine (exit 9 when some are)
    #[command(after_help = OUTDATED_HELP)]
    Outdated {
        /// Output format
        #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
        output: Output,
        /// Update the indexes first ('app plugin index update'); without it, only the cached copies are read
        #[arg(long)]
        refresh: bool,
    },
    /// Add, list, remove and update plugin indexes (signed catalogues of plugins)
    #[command(subcommand)]
    Index(IndexCmd),
    /// Search the indexes' plugins by name and description
    #[command(
        after_help = "Example: app plugin search json -o json\nReads the cached indexes: 'app plugin index update' refreshes them.\n\nExit codes: 0 done (also when nothing matches); 7 no index is added (app plugin index add)."
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
        /// Refuse a copy of the index signed longer ago than this (by its signed_at): 30d, 12h, 90m
        #[arg(long, value_name = "AGE")]
        max_age: Option<String>,
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
    /// Make a new signed index to publish: DIR/index.json, its .minisig and the public key DIR/index.pub
    #[command(after_help = INIT_HELP)]
    Init {
        /// The folder to serve (made if missing)
        #[arg(value_name = "DIR")]
        dir: PathBuf,
        /// The minisign secret key, used if it exists, made if not [default: ~/.minisign/minisign.key, or $MINISIGN_CONFIG_DIR/minisign.key]
        #[arg(long, value_name = "FILE")]
        secret_key: Option<PathBuf>,
        /// A new secret key gets no password (for unattended publishing; keep the file private)
        #[arg(long)]
        no_password: bool,
        /// The URL the index will be served at: its name for itself (its "index" field) [default: its file:// URL]
        #[arg(long, value_name = "URL")]
        url: Option<String>,
    },
    /// Add a plugin's build to the index in DIR: pack it, add or replace its entry, raise the serial, sign again
    #[command(after_help = PUBLISH_HELP)]
    Publish {
        /// The folder 'index init' made
        #[arg(value_name = "DIR")]
        dir: PathBuf,
        /// The plugin's executable app-NAME, or a folder holding it with completions/, man/ and share/
        #[arg(value_name = "PLUGIN")]
        plugin: PathBuf,
        /// Its version (semantic: 1.2.0, 2.0.0-rc.1)
        #[arg(long, value_name = "VERSION")]
        version: String,
        /// The OS it runs on [default: this machine's]
        #[arg(long, value_name = "OS")]
        os: Option<String>,
        /// The CPU it runs on [default: this machine's]
        #[arg(long, value_name = "ARCH")]
        arch: Option<String>,
        /// The index's minisign secret key [default: ~/.minisign/minisign.key, or $MINISIGN_CONFIG_DIR/minisign.key]
        #[arg(long, value_name = "FILE")]
        secret_key: Option<PathBuf>,
        /// Its description [default: the earlier version's]
        #[arg(long, value_name = "TEXT")]
        description: Option<String>,
        /// Its homepage
        #[arg(long, value_name = "URL")]
        homepage: Option<String>,
    },
}

/// `plugin index init`, for `--help`.
const INIT_HELP: &str = "\
Example: app plugin index init ./team-index --url https://plugins.example.org/index.json
The secret key stays outside DIR (a key inside it is refused); its password is asked on the terminal,
as minisign asks it. The files are minisign's: 'minisign -V -p DIR/index.pub -m DIR/index.json' verifies.

Exit codes: 0 done; 1 I/O failure; 2 usage (a secret key inside DIR, no terminal for the password:
use --no-password); 4 DIR/index.json already exists; 5 the secret key cannot be opened (wrong password).";

/// `plugin index publish`, for `--help`.
const PUBLISH_HELP: &str = "\
Example: app plugin index publish ./team-index ./app-hello --version 1.1.0
Writes DIR/NAME/app-NAME-VERSION-OS-ARCH.tar.gz, adds it to DIR/index.json (the same name, version,
OS and arch: replaced), raises the serial, sets signed_at to now and expires to 90 days later, and
signs again. Serve DIR as it is; users run 'app plugin index update' to see it.

Exit codes: 0 done; 1 I/O failure; 2 usage (not an app-NAME executable, a bad --version, no index in
DIR); 5 the secret key is not DIR/index.pub's, or cannot be opened. A refusal changes nothing.";

/// `plugin search` output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Table,
    Json,
}

/// Exit codes of `plugin index add` and `update`, for `--help`.
const INDEX_HELP: &str = "\
Example: app plugin index add main https://example.org/app-index.json --key-file main.pub

Exit codes: 0 done; 1 I/O failure; 2 usage; 3 index or its signature unreachable; 4 an index of that
name is already added; 5 verification failed (signature missing, by another key or not matching, not
JSON, not an app.index/v1 index, an HTML page, another index than the one added); 6 stale (serial
lower than the copy already verified, the same serial with other contents, past its expires date,
signed longer ago than --max-age). On any refusal the cached copy stays as it was (update goes on
with the other indexes and exits non-zero).";

/// `plugin apply`, for `--help`.
const APPLY_HELP: &str = "\
Example: app plugin apply -f plugins.json --dry-run; app plugin apply -f plugins.json --locked -o json
plugins.json: {\"indexes\": {\"main\": {\"url\": \"https://example.org/index.json\", \"key\": \"RW...\"}},
               \"plugins\": {\"hello\": \"^1.0\", \"other\": {\"version\": \"1.0.0\", \"index\": \"main\", \"pin\": true}}}
A version is exact (1.0.0), a requirement (^1.0, ~1.2, >=1, <2) or *. Every archive is downloaded and
verified before anything is installed; each plugin is then installed atomically.

Exit codes: 0 done (or nothing to do); 1 I/O failure; 2 usage (a malformed file, an index added with
another URL or key); 3 download failed; 4 refused (a file put there by hand is in the way); 5
verification failed (an archive's sha256, an index refused); 6 index stale; 7 no version matches;
10 --locked: plugins.lock is missing or disagrees with the file. On 3, 5 or 10 nothing was changed.";

/// `plugin pin` and `unpin`, for `--help`.
const PIN_HELP: &str = "\
Example: app plugin pin hello; app plugin unpin hello
A pin keeps a plugin at its version: 'app plugin install hello@1.0.0' pins too, 'app plugin upgrade
--all' skips pinned plugins (and says so), 'app plugin upgrade hello' refuses (exit 4), and
'app plugin upgrade hello@1.1.0' installs that version and moves the pin there.

Exit codes: 0 done; 1 I/O failure; 4 refused (not a plugin app plugin install put there).";

/// `plugin outdated`, for `--help`.
const OUTDATED_HELP: &str = "\
Example: app plugin outdated -o json; app plugin outdated --refresh
Reads the cached indexes (no network) unless --refresh; plugins installed from a path, a URL or
git are not checked (their source has no versions to compare).

Exit codes: 0 none outdated; 9 some are outdated (pinned ones included); 1 I/O failure; with
--refresh, an index that could not be updated: its code (3 unreachable, 5 verification, 6 stale),
after the list made from the cached copies.";

/// Exit codes of `plugin install`, `remove` and `upgrade`, for `--help`.
const INSTALL_HELP: &str = "\
Exit codes: 0 installed; 1 I/O failure; 2 usage (bad name, a built-in's name, URL without --sha256,
NAME both a file here and a plugin in an index, a folder without a plugin in it);
3 download failed (no connection, HTTP status not 2xx); 4 refused (already installed: use --force;
remove/upgrade of a plugin install did not put there, upgrade NAME of a pinned plugin);
5 verification failed (checksum mismatch, not
an executable, archive without exactly one executable app-<name>, larger than APP_INSTALL_MAX_BYTES,
an index refused); 6 index stale (rollback, expired); 7 not in the indexes, no such version, no build
for this machine; 8 build from source failed (no cargo, cargo failed).
Nothing is written to the plugin directory unless it exits 0 (upgrade --all: each plugin on its own).

A bare NAME is always looked up in the indexes; a local file is ./NAME, a path with a /, or --file.
When both a file NAME here and plugin NAME in an index exist, install refuses and says how to pick.

Examples: app plugin install hello; app plugin install hello@1.0.0; app plugin install main/hello;
app plugin install ./app-foo; app plugin install --file app-foo; app plugin install --git https://example.org/app-foo.git --rev v1;
app plugin upgrade hello; app plugin upgrade hello@1.1.0 (pinned there); app plugin upgrade --all";

/// The languages `app plugin new` writes skeletons in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Lang {
    Sh,
    Python,
    Rust,
}
