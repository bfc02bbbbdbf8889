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
//! - [`plugins`]: plugin names on the search path (with descriptions from
//!   trusted metadata, cached) and aliases from the config;
//! - [`delegate`]: a plugin's own arguments, asked of the plugin only when it
//!   opted in (metadata `"completion": true`, or an `app_complete-<name>`
//!   executable on the search path). An unknown plugin is never run.

pub mod builtin;
pub mod delegate;
pub mod plugins;
pub mod scripts;

use std::ffi::OsString;

use crate::alias;
use crate::session::Session;

/// Bits of the last line of a `__complete` answer (cobra's values).
pub mod directive {
    /// Completion failed: offer nothing.
    pub const ERROR: u32 = 1;
    /// Do not add a space after the candidate.
    pub const NO_SPACE: u32 = 2;
    /// Do not fall back to file names when there are no candidates.
    pub const NO_FILE_COMP: u32 = 4;
    /// Keep the candidates in the given order.
    pub const KEEP_ORDER: u32 = 32;
    /// No bits: the shell's default (file names when nothing matches).
    pub const DEFAULT: u32 = 0;
}

/// One thing TAB may offer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub value: String,
    pub description: Option<String>,
}

impl Candidate {
    pub fn new(value: impl Into<String>) -> Candidate {
        Candidate {
            value: value.into(),
            description: None,
        }
    }

    pub fn described(value: impl Into<String>, description: Option<&str>) -> Candidate {
        Candidate {
            value: value.into(),
            description: description.map(one_line).filter(|d| !d.is_empty()),
        }
    }
}

/// The answer to one `__complete` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    pub candidates: Vec<Candidate>,
    pub directive: u32,
}

impl Completion {
    /// No candidates, and no file names either.
    pub fn nothing() -> Completion {
        Completion {
            candidates: Vec::new(),
            directive: directive::NO_FILE_COMP,
        }
    }

    /// No candidates of our own: let the shell complete file names.
    pub fn files() -> Completion {
        Completion {
            candidates: Vec::new(),
            directive: directive::DEFAULT,
        }
    }

    /// `candidates` that start with `prefix`, without duplicates, and no file names.
    pub fn matching(prefix: &str, candidates: impl IntoIterator<Item = Candidate>) -> Completion {
        let mut out = Completion::nothing();
        out.extend(prefix, candidates);
        out
    }

    /// Adds the `candidates` that start with `prefix` and are not there yet.
    pub fn extend(&mut self, prefix: &str, candidates: impl IntoIterator<Item = Candidate>) {
        for c in candidates {
            if c.value.starts_with(prefix) && self.candidates.iter().all(|o| o.value != c.value) {
                self.candidates.push(c);
            }
        }
    }

    /// The protocol text: candidates, then `:<directive>`.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for c in &self.candidates {
            out.push_str(&one_line(&c.value));
            if let Some(d) = &c.description {
                out.push('\t');
                out.push_str(d);
            }
            out.push('\n');
        }
        out.push_str(&format!(":{}\n", self.directive));
        out
    }

    /// The candidate values (for tests and callers that ignore descriptions).
    pub fn values(&self) -> Vec<&str> {
        self.candidates.iter().map(|c| c.value.as_str()).collect()
    }
}

/// Parses a `__complete` answer (a delegate's). Lines after the last
/// `:<number>` line are ignored; without one, every line is a candidate and
/// the directive is the default.
pub fn parse(text: &str) -> Completion {
    let lines: Vec<&str> = text.lines().collect();
    let directive_at = lines.iter().rposition(|l| {
        l.strip_prefix(':')
            .is_some_and(|n| n.trim().parse::<u32>().is_ok())
    });
    let (body, directive) = match directive_at {
        Some(i) => (
            &lines[..i],
            lines[i][1..].trim().parse().unwrap_or(directive::DEFAULT),
        ),
        None => (&lines[..], directive::DEFAULT),
    };
    let candidates = body
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| match l.split_once('\t') {
            Some((v, d)) => Candidate::described(v, Some(d)),
            None => Candidate::new(*l),
        })
        .collect();
    Completion {
        candidates,
        directive,
    }
}

/// Text on one line: tabs and line breaks become spaces; only the first
/// line of a long description is kept.
fn one_line(s: &str) -> String {
    let first = s.lines().next().unwrap_or("");
    first.replace(['\t', '\r'], " ").trim_end().to_string()
}

/// Completes `words` (the words after `app`; the last is the one being typed).
pub fn complete(session: &Session, words: &[String]) -> Completion {
    let (cur, before) = match words.split_last() {
        Some((cur, before)) => (cur.as_str(), before),
        None => ("", &[][..]),
    };
    let root = builtin::tree();
    let globals = match builtin::skip_flags(&root, before, cur) {
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
            return builtin::flags(root, cur);
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
            match builtin::skip_flags(root, &expanded, cur) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_candidates_descriptions_and_directive() {
        let c = Completion {
            candidates: vec![
                Candidate::described("run", Some("Run it\nsecond line")),
                Candidate::new("manage"),
            ],
            directive: directive::NO_FILE_COMP,
        };
        assert_eq!(c.render(), "run\tRun it\nmanage\n:4\n");
    }

    #[test]
    fn parses_an_answer_and_tolerates_a_missing_directive() {
        let c = parse("get\tRead routes\npost\n\n:36\n");
        assert_eq!(c.values(), ["get", "post"]);
        assert_eq!(c.candidates[0].description.as_deref(), Some("Read routes"));
        assert_eq!(c.directive, 36);
        let c = parse("a\nb\n");
        assert_eq!(c.values(), ["a", "b"]);
        assert_eq!(c.directive, directive::DEFAULT);
    }

    #[test]
    fn matching_filters_by_prefix_and_drops_duplicates() {
        let mut c = Completion::matching("p", [Candidate::new("plugin"), Candidate::new("help")]);
        c.extend("p", [Candidate::new("plugin"), Candidate::new("path")]);
        assert_eq!(c.values(), ["plugin", "path"]);
    }
}
