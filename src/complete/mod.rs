//! Shell completion: what TAB offers after `app`.
//!
//! The shell scripts (see [`scripts`]) call `app __complete <words…>` with
//! the words after `app`, the last one being the word under the cursor
//! (possibly empty). The answer follows cobra's protocol: one candidate per
//! line, optionally `candidate<TAB>description`, then `:<directive>`.
//!
//! Where candidates come from, one module each:
//! - [`builtin`]: global flags, built-in commands, their subcommands, flags
//!   and values, all read from clap's command tree ([`crate::cli::command`]);
//! - [`indexes`]: index names, and plugin names and versions from the
//!   cached plugin indexes (`plugin install`, `plugin info`);
//! - [`plugins`]: plugin names on the search path (with descriptions from
//!   trusted metadata, cached) and aliases from the config;
//! - [`delegate`]: a plugin's own arguments, asked of the plugin only when it
//!   opted in (metadata `"completion": true`, or an `app_complete-<name>`
//!   executable on the search path). An unknown plugin is never run.

pub mod builtin;
pub mod delegate;
pub mod indexes;
pub mod plugins;
pub mod scripts;

use std::ffi::OsString;

use crate::alias;
use crate::session::Session;

// The protocol's pieces are the SDK's, so the two sides cannot drift.
pub use app_plugin::complete::{parse, Candidate, Completion, Directive};

/// Completes `words` (the words after `app`; the last is the one being typed).
pub fn complete(session: &Session, words: &[String]) -> Completion {
    let (cur, before) = match words.split_last() {
        Some((cur, before)) => (cur.as_str(), before),
        None => ("", &[][..]),
    };
    let root = builtin::tree();
    let hosts = || session.config.host_names();
    let globals = match builtin::skip_flags(&root, before, cur, &hosts) {
        builtin::Skipped::Value(done) => return done,
        builtin::Skipped::Rest(n) => n,
    };
    complete_command(session, &root, &before[globals..], cur, &mut Vec::new())
}

/// Completes after the global flags: `rest` are the words from the command
/// on, before `cur`.
fn complete_command(
    session: &Session,
    root: &clap::Command,
    rest: &[String],
    cur: &str,
    seen_aliases: &mut Vec<String>,
) -> Completion {
    let Some(first) = rest.first() else {
        if cur.starts_with('-') {
            return builtin::flags(root, cur, &|| session.config.host_names());
        }
        let mut out = Completion::matching(cur, builtin::subcommands(root));
        out.extend(cur, plugins::next_words(session, &[]));
        out.extend(cur, plugins::aliases(session));
        return out;
    };
    if let Some(sub) = builtin::find_subcommand(root, first) {
        return builtin::complete(session, sub, &rest[1..], cur);
    }
    let args: Vec<OsString> = rest.iter().map(OsString::from).collect();
    match alias::expand(&session.config, &args, seen_aliases) {
        Ok(Some(expanded)) => {
            let expanded: Vec<String> = expanded
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            // An alias may start with global flags too.
            match builtin::skip_flags(root, &expanded, cur, &|| session.config.host_names()) {
                builtin::Skipped::Value(done) => done,
                builtin::Skipped::Rest(n) => {
                    complete_command(session, root, &expanded[n..], cur, seen_aliases)
                }
            }
        }
        Ok(None) => plugins::complete(session, rest, cur),
        // A broken alias: nothing to offer, and never an error on the terminal.
        Err(_) => Completion::nothing(),
    }
}
