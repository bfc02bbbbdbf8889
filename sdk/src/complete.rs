//! The completion protocol: `app-<name> __complete WORDS…`.
//!
//! When a plugin's metadata says `"completion": true`, `app` completes the
//! plugin's arguments by running it with [`COMPLETE_ARG`] and the words
//! typed after the plugin's name, the last one being the word under the
//! cursor (possibly empty). The answer follows cobra's protocol: one
//! candidate per line, optionally `candidate<TAB>description`, then
//! `:<directive>` (the bits of a [`Directive`]).
//!
//! ```
//! use app_plugin::complete::{Candidate, Completion};
//!
//! let out = Completion::matching("st", [Candidate::described("start", Some("Start it")),
//!                                       Candidate::new("stop"), Candidate::new("list")]);
//! assert_eq!(out.render(), "start\tStart it\nstop\n:4\n");
//! assert_eq!(app_plugin::complete::parse(&out.render()), out);
//! ```

/// The argument that asks a plugin for completions.
///
/// ```
/// assert_eq!(app_plugin::complete::COMPLETE_ARG, "__complete");
/// ```
pub const COMPLETE_ARG: &str = "__complete";

bitflags::bitflags! {
    /// The last line of a `__complete` answer, `:<bits>`: cobra's values,
    /// which the shells' completion scripts read.
    ///
    /// ```
    /// use app_plugin::complete::Directive;
    /// let d = Directive::NO_FILE_COMP | Directive::KEEP_ORDER;
    /// assert_eq!(d.bits(), 36);
    /// assert!(d.contains(Directive::KEEP_ORDER));
    /// assert_eq!(Directive::default(), Directive::DEFAULT);
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct Directive: u32 {
        /// Completion failed: offer nothing.
        const ERROR = 1;
        /// Do not add a space after the candidate.
        const NO_SPACE = 2;
        /// Do not fall back to file names when there are no candidates.
        const NO_FILE_COMP = 4;
        /// Offer only directories (the candidates, if any, are ignored).
        const FILTER_DIRS = 16;
        /// Keep the candidates in the given order.
        const KEEP_ORDER = 32;
        /// `app`'s own (not cobra's): the one line is `FILE<TAB>COMMAND N`,
        /// a multi-file plugin's completion script for the asking shell;
        /// the shell loads FILE and completes COMMAND with the words after
        /// the N words of the plugin's name.
        const SCRIPT = 64;
        /// No bits: the shell's default (file names when nothing matches).
        const DEFAULT = 0;
        // Bits a newer protocol may add are kept as they are.
        const _ = !0;
    }
}

/// One thing TAB may offer.
///
/// ```
/// let c = app_plugin::complete::Candidate::described("run", Some("Run it"));
/// assert_eq!((c.value.as_str(), c.description.as_deref()), ("run", Some("Run it")));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// What TAB inserts.
    pub value: String,
    /// What the shell shows beside it (one line).
    pub description: Option<String>,
}

impl Candidate {
    /// A candidate without a description.
    ///
    /// ```
    /// assert!(app_plugin::complete::Candidate::new("x").description.is_none());
    /// ```
    pub fn new(value: impl Into<String>) -> Candidate {
        Candidate {
            value: value.into(),
            description: None,
        }
    }

    /// A candidate with a description, cut to its first line; an empty
    /// description is none.
    ///
    /// ```
    /// let c = app_plugin::complete::Candidate::described("x", Some("one\ntwo"));
    /// assert_eq!(c.description.as_deref(), Some("one"));
    /// ```
    pub fn described(value: impl Into<String>, description: Option<&str>) -> Candidate {
        Candidate {
            value: value.into(),
            description: description.map(one_line).filter(|d| !d.is_empty()),
        }
    }
}

/// The answer to one `__complete` request.
///
/// ```
/// use app_plugin::complete::{Completion, Directive};
/// let mut out = Completion::nothing();
/// out.directive |= Directive::KEEP_ORDER;
/// assert_eq!(out.render(), ":36\n");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// The candidates, in order.
    pub candidates: Vec<Candidate>,
    /// What the shell does besides offering them.
    pub directive: Directive,
}

impl Completion {
    /// No candidates, and no file names either.
    ///
    /// ```
    /// assert_eq!(app_plugin::complete::Completion::nothing().render(), ":4\n");
    /// ```
    pub fn nothing() -> Completion {
        Completion {
            candidates: Vec::new(),
            directive: Directive::NO_FILE_COMP,
        }
    }

    /// No candidates of our own: let the shell complete file names.
    ///
    /// ```
    /// assert_eq!(app_plugin::complete::Completion::files().render(), ":0\n");
    /// ```
    pub fn files() -> Completion {
        Completion {
            candidates: Vec::new(),
            directive: Directive::DEFAULT,
        }
    }

    /// `candidates` that start with `prefix`, without duplicates, and no file names.
    ///
    /// ```
    /// use app_plugin::complete::{Candidate, Completion};
    /// let out = Completion::matching("p", [Candidate::new("put"), Candidate::new("get")]);
    /// assert_eq!(out.values(), ["put"]);
    /// ```
    pub fn matching(prefix: &str, candidates: impl IntoIterator<Item = Candidate>) -> Completion {
        let mut out = Completion::nothing();
        out.extend(prefix, candidates);
        out
    }

    /// Adds the `candidates` that start with `prefix` and are not there yet.
    ///
    /// ```
    /// use app_plugin::complete::{Candidate, Completion};
    /// let mut out = Completion::matching("p", [Candidate::new("put")]);
    /// out.extend("p", [Candidate::new("put"), Candidate::new("post")]);
    /// assert_eq!(out.values(), ["put", "post"]);
    /// ```
    pub fn extend(&mut self, prefix: &str, candidates: impl IntoIterator<Item = Candidate>) {
        for c in candidates {
            if c.value.starts_with(prefix) && self.candidates.iter().all(|o| o.value != c.value) {
                self.candidates.push(c);
            }
        }
    }

    /// The protocol text: candidates, then `:<directive>`.
    ///
    /// ```
    /// use app_plugin::complete::{Candidate, Completion};
    /// let out = Completion::matching("", [Candidate::described("a", Some("first")), Candidate::new("b")]);
    /// assert_eq!(out.render(), "a\tfirst\nb\n:4\n");
    /// ```
    pub fn render(&self) -> String {
        let mut out = String::new();
        // What a plugin offers reaches the shell and its menu: a value with a
        // control or bidi character cannot be typed and could act on the
        // terminal, so it is left out; a description is shown escaped.
        let typeable = |c: &&Candidate| !c.value.chars().any(crate::text::is_dangerous);
        for c in self.candidates.iter().filter(typeable) {
            out.push_str(&c.value);
            if let Some(d) = &c.description {
                out.push('\t');
                out.push_str(&crate::text::escape_for_terminal(d));
            }
            out.push('\n');
        }
        out.push_str(&format!(":{}\n", self.directive.bits()));
        out
    }

    /// The candidate values (for tests and callers that ignore descriptions).
    ///
    /// ```
    /// let out = app_plugin::complete::parse("a\tx\nb\n:4\n");
    /// assert_eq!(out.values(), ["a", "b"]);
    /// ```
    pub fn values(&self) -> Vec<&str> {
        self.candidates.iter().map(|c| c.value.as_str()).collect()
    }
}

/// Parses a `__complete` answer. Lines after the last `:<number>` line are
/// ignored; without one, every line is a candidate and the directive is the
/// default.
///
/// ```
/// let c = app_plugin::complete::parse("get\tRead routes\npost\n\n:36\n");
/// assert_eq!(c.values(), ["get", "post"]);
/// assert_eq!(c.directive.bits(), 36);
/// ```
pub fn parse(text: &str) -> Completion {
    let lines: Vec<&str> = text.lines().collect();
    let directive_at = lines.iter().rposition(|l| {
        l.strip_prefix(':')
            .is_some_and(|n| n.trim().parse::<u32>().is_ok())
    });
    let (body, bits) = match directive_at {
        Some(i) => (&lines[..i], lines[i][1..].trim().parse().unwrap_or(0)),
        None => (&lines[..], 0),
    };
    let directive = Directive::from_bits_retain(bits);
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

/// Text on one line: tabs and carriage returns become spaces; only the first
/// line of a long description is kept.
fn one_line(s: &str) -> String {
    let first = s.lines().next().unwrap_or("");
    first.replace(['\t', '\r'], " ").trim_end().to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn hostile_descriptions_are_escaped_and_hostile_values_left_out() {
        let answer = "ok\tfine \x1b]0;pwned\x07 \u{202e}gnp.exe\nbad\x1b[2J\tx\n:4\n";
        let out = super::parse(answer).render();
        assert_eq!(out, "ok\tfine \\x1b]0;pwned\\x07 \\u{202e}gnp.exe\n:4\n");
    }

    use super::*;

    #[test]
    fn renders_candidates_descriptions_and_directive() {
        let c = Completion {
            candidates: vec![
                Candidate::described("run", Some("Run it\nsecond line")),
                Candidate::new("manage"),
            ],
            directive: Directive::NO_FILE_COMP,
        };
        assert_eq!(c.render(), "run\tRun it\nmanage\n:4\n");
    }

    #[test]
    fn parses_an_answer_and_tolerates_a_missing_directive() {
        let c = parse("get\tRead routes\npost\n\n:36\n");
        assert_eq!(c.values(), ["get", "post"]);
        assert_eq!(c.candidates[0].description.as_deref(), Some("Read routes"));
        assert_eq!(c.directive, Directive::NO_FILE_COMP | Directive::KEEP_ORDER);
        let c = parse("a\nb\n");
        assert_eq!(c.values(), ["a", "b"]);
        assert_eq!(c.directive, Directive::DEFAULT);
        assert_eq!(
            parse(":1024\n").render(),
            ":1024\n",
            "unknown bits are kept"
        );
    }

    #[test]
    fn matching_filters_by_prefix_and_drops_duplicates() {
        let mut c = Completion::matching("p", [Candidate::new("plugin"), Candidate::new("help")]);
        c.extend("p", [Candidate::new("plugin"), Candidate::new("path")]);
        assert_eq!(c.values(), ["plugin", "path"]);
    }
}
