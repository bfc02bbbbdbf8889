//! `app-event-repeater-manage`: changes a running event repeater's routes
//! over its REST API, reached as `app event-repeater manage …`.
//!
//! Data flows one way, from the words to the wire:
//!
//! - [`cli`]: the flags (clap's definitions, the old `--op` form, usage
//!   errors), checked into a [`cli::Config`] before anything runs
//! - [`request`]: a request's method and its percent-encoded path
//! - [`value`]: `--value` (inline, `@file`, `-`) and JSON errors with positions
//! - [`address`]: API addresses and `--host` words as written
//! - [`hosts`]: named hosts and groups from the config file; [`files`]:
//!   reading small files safely
//! - [`target`]: a repeater found on this machine (its socket or listen file)
//! - [`resolve`]: which repeaters a command is for
//! - [`remote`]: one request to one repeater (unix socket, TCP, TLS) and
//!   what its failures mean
//! - [`exec`]: doing it on one host; [`fleet`]: on several at once;
//!   [`status`]: `status [--watch]`; [`top`]: the live view, on
//!   `status`'s samples; [`interrupt`]: Ctrl-C and SIGTERM for both;
//!   [`tap`]: `tap`; [`topics`]: the unserved-topic warning
//! - [`routes`] and [`apply`]: route files and the `+`/`-`/`~` difference
//! - [`io`]: where it reads and prints; [`output`]: how answers look;
//!   [`error`]: messages and exit codes
//! - [`complete`]: answers to `__complete` for shell completion

pub mod access;
pub mod address;
pub mod apply;
pub mod cli;
pub mod complete;
pub mod error;
pub mod exec;
pub mod files;
pub mod fleet;
pub mod hosts;
pub mod interrupt;
pub mod io;
pub mod letters;
pub mod output;
pub mod remote;
pub mod request;
pub mod resolve;
pub mod routes;
pub mod status;
pub mod tap;
pub mod target;
pub mod top;
pub mod topics;
pub mod value;

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use app_plugin::context::Context;

use crate::cli::{Config, ParseOutcome};
use crate::error::Error;

/// The repeater name used when `--name` is not given.
pub const DEFAULT_NAME: &str = "event-repeater";

/// This plugin's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The answer to `__app_metadata`.
pub fn metadata() -> app_plugin::metadata::Metadata {
    app_plugin::metadata::Metadata::new(
        "event-repeater-manage",
        VERSION,
        "Change a running event repeater's routes",
    )
    .completion()
}

/// Runs the plugin with `args` (without the program name) and returns the
/// exit code.
pub fn run(args: Vec<OsString>) -> ExitCode {
    // The protocol's answers, the logger and the context (exit 1 if it
    // cannot be read), then the command.
    app_plugin::Plugin::new(metadata())
        .complete(complete::live)
        .context_error_code(error::EXIT_FAILURE)
        .run_with(args, |call| execute(call.args, &call.context))
}

/// The command line, then the command.
fn execute(args: Vec<OsString>, ctx: &Context) -> u8 {
    let token = std::env::var("APP_TOKEN").ok();
    let config = match Config::from_args(args, token) {
        Ok(config) => config,
        Err(ParseOutcome::Info(mut text)) => {
            if !text.ends_with('\n') {
                text.push('\n');
            }
            let _ = std::io::stdout().lock().write_all(text.as_bytes());
            return 0;
        }
        Err(ParseOutcome::Error(e)) => return report(&e),
    };
    let plugin_dir = ctx.dirs().plugin_runtime_dir();
    let stdout = std::io::stdout();
    let mut io = io::Io {
        // Nothing read stdin before (the context comes from the environment),
        // so polling its descriptor sees every byte.
        stdin: &mut app_plugin::file::TimedReader::new(std::io::stdin(), value::PIPE_TIMEOUT),
        pretty: stdout.is_terminal(),
        stdout: &mut stdout.lock(),
        global_hosts: &ctx.hosts,
        plugin_dir: &plugin_dir,
        config_file: &ctx.config,
    };
    match exec::execute(&config, &mut io) {
        Ok(()) => 0,
        Err(e) => report(&e),
    }
}

/// Errors go through the SDK logger: `app-event-repeater-manage: error: …`,
/// or a JSON line under `--log-format json`.
fn report(e: &Error) -> u8 {
    // One line per host for a fleet, each with the program's prefix.
    for line in e.to_string().lines() {
        app_plugin::log::fatal(format_args!("{line}"));
    }
    e.exit_code()
}
