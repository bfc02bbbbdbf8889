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
                let mut first = first;
                if let Some(near) = similar_command(&e).filter(|_| !first.contains("tip: ")) {
                    first = format!("{first} (tip: a similar subcommand exists: '{near}')");
                }
                ParseOutcome::Error(Error::Usage(format!("{first}; see: {help}")))
            }
        }
    }
}

/// The subcommand a mistyped one most likely meant: one slip (a letter
/// wrong, missing, extra, or two swapped: `gte`), or 70% alike. clap's own
/// measure (Jaro) misses a swap in a word of three letters.
fn similar_command(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    let Some(ContextValue::String(typed)) = e.get(ContextKind::InvalidSubcommand) else {
        return None;
    };
    commands()
        .into_iter()
        .map(|c| {
            let slips = strsim::damerau_levenshtein(typed, &c);
            (strsim::normalized_damerau_levenshtein(typed, &c), slips, c)
        })
        .filter(|(score, slips, _)| *score >= 0.7 || *slips <= 1)
        .map(|(score, _, c)| (score, c))
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// The subcommands of `manage`, from its clap definition (one list, so a
/// new command cannot be left out of the suggestions and help pointers).
fn commands() -> Vec<String> {
    super::command()
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect()
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
    let commands = commands();
    let command = argv
        .iter()
        .skip(1)
        .filter_map(|a| a.to_str())
        .find(|a| commands.iter().any(|c| c == a));
    match command {
        Some(c) => format!("app event-repeater manage {c} --help"),
        None => "app event-repeater manage --help".to_string(),
    }
}
