//! Usage errors as the user reads them: clap's errors made one line, and
//! every usage error pointing at the help of the command typed.

use std::ffi::OsString;

use crate::error::Error;

/// What parsing the command line produced instead of a [`super::Config`].
#[derive(Debug)]
pub enum ParseOutcome {
    /// `--help` or `--version`: print this on stdout and exit 0.
    Info(String),
    /// A usage error.
    Error(Error),
}

impl ParseOutcome {
    /// clap's error: help and version are information, anything else a
    /// one-line usage error pointing at `help`.
    pub(super) fn from_clap(e: clap::Error, help: &str) -> ParseOutcome {
        use app_plugin::usage::Early;
        match Early::from_clap(&e) {
            // `manage` alone lists its commands, as `--help` does.
            Early::Info(text) | Early::Missing(text) => ParseOutcome::Info(text),
            Early::Usage(first) => {
                ParseOutcome::Error(Error::Usage(format!("{first}; see: {help}")))
            }
        }
    }
}

/// A usage error found after clap, pointing at `help` unless it already
/// names a help to read; other errors as they are.
pub(super) fn with_help(e: Error, help: &str) -> ParseOutcome {
    ParseOutcome::Error(match e {
        Error::Usage(msg) if !msg.contains("--help") => Error::Usage(format!("{msg}; see: {help}")),
        other => other,
    })
}

/// `app event-repeater manage [COMMAND] --help` for the command in `argv`.
pub(super) fn help_command(argv: &[OsString]) -> String {
    const COMMANDS: &[&str] = &["get", "post", "put", "delete", "apply", "status"];
    let command = argv
        .iter()
        .skip(1)
        .filter_map(|a| a.to_str())
        .find(|a| COMMANDS.contains(a));
    match command {
        Some(c) => format!("app event-repeater manage {c} --help"),
        None => "app event-repeater manage --help".to_string(),
    }
}
