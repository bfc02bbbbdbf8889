//! For plugins whose command line is a `clap::Command` (feature `clap`):
//! completion derived from it, so that no plugin keeps flag tables by hand,
//! and a `--log` value parser.
//!
//! [`complete`] walks the words typed so far through the command's
//! subcommands and flags and offers what fits the word under the cursor:
//! subcommands (in their order), flags not given yet (long and short, with
//! their help's first line; on an empty word too where nothing else can
//! come), a flag's or a positional argument's possible values, file names
//! for path values. Values only the plugin knows (running instances, routes) come
//! from a [`Values`] callback. [`answer`] is [`crate::protocol::answer`]
//! with that completion.
//!
//! ```
//! use app_plugin::cli::{complete, NoValues};
//! let cmd = clap::Command::new("app-demo")
//!     .disable_help_subcommand(true)
//!     .subcommand(clap::Command::new("run").about("Run it")
//!         .arg(clap::Arg::new("name").long("name").help("Instance name")))
//!     .subcommand(clap::Command::new("stop").about("Stop it"));
//! let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
//! assert_eq!(complete(&cmd, &words(&[""]), &NoValues).render(), "run\tRun it\nstop\tStop it\n:36\n");
//! assert_eq!(complete(&cmd, &words(&["run", "--n"]), &NoValues).render(), "--name\tInstance name\n:4\n");
//! ```

mod level;
mod line;

use ::clap::{Arg, ArgAction, Command, ValueHint};

use self::line::{find_long, nth_positional, takes_value, Line};
use crate::complete::{Candidate, Completion, Directive};
use crate::metadata::Metadata;

pub use level::LogLevel;

/// What the words before the cursor said, for a [`Values`] callback.
///
/// ```
/// let q = app_plugin::cli::Query { arg: "path", current: "/ev", given: vec![("name".into(), "r1".into())] };
/// assert_eq!(q.given("name"), Some("r1"));
/// assert_eq!(q.given("host"), None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query<'a> {
    /// The id of the argument whose value is being completed (the field
    /// name for clap's derive: `path`, `name`).
    pub arg: &'a str,
    /// What is typed of the value so far.
    pub current: &'a str,
    /// The values given so far, `(argument id, value)`, in order.
    pub given: Vec<(String, String)>,
}

impl Query<'_> {
    /// The last value given for argument `id`.
    ///
    /// ```
    /// let q = app_plugin::cli::Query { arg: "x", current: "", given: vec![("n".into(), "a".into()), ("n".into(), "b".into())] };
    /// assert_eq!(q.given("n"), Some("b"));
    /// ```
    pub fn given(&self, id: &str) -> Option<&str> {
        self.given
            .iter()
            .rev()
            .find(|(k, _)| k == id)
            .map(|(_, v)| v.as_str())
    }
}

/// Values only the plugin knows (running instances, routes, files of a
/// given kind): `Some` answers for that argument, `None` leaves it to the
/// command's definition.
///
/// ```
/// use app_plugin::cli::{Query, Values};
/// use app_plugin::complete::{Candidate, Completion};
/// struct Names;
/// impl Values for Names {
///     fn values(&self, q: &Query) -> Option<Completion> {
///         (q.arg == "name").then(|| Completion::matching(q.current, [Candidate::new("r1")]))
///     }
/// }
/// ```
pub trait Values {
    /// The completion of `query.arg`'s value, or `None` for the default.
    fn values(&self, query: &Query) -> Option<Completion>;
}

/// No values of the plugin's own.
///
/// ```
/// use app_plugin::cli::{NoValues, Query, Values};
/// assert!(NoValues.values(&Query { arg: "a", current: "", given: vec![] }).is_none());
/// ```
pub struct NoValues;

impl Values for NoValues {
    fn values(&self, _: &Query) -> Option<Completion> {
        None
    }
}

impl<F: Fn(&Query) -> Option<Completion>> Values for F {
    fn values(&self, query: &Query) -> Option<Completion> {
        self(query)
    }
}

/// [`crate::protocol::answer`] with completion derived from `cmd`: answers
/// `__app_metadata` and `__complete`, returning whether it did.
///
/// ```
/// use app_plugin::cli::NoValues;
/// use app_plugin::metadata::Metadata;
/// let cmd = clap::Command::new("app-demo").arg(clap::Arg::new("v").long("verbose"));
/// let meta = Metadata::new("demo", "1", "Demo").completion();
/// assert!(app_plugin::cli::answer(&["__complete", "--v"], &meta, cmd.clone(), &NoValues));
/// assert!(!app_plugin::cli::answer(&["--verbose"], &meta, cmd, &NoValues));
/// ```
pub fn answer<S: AsRef<str>>(
    args: &[S],
    metadata: &Metadata,
    cmd: Command,
    values: &dyn Values,
) -> bool {
    crate::protocol::answer(args, metadata, |words| complete(&cmd, words, values))
}

/// Completes `words` (the plugin's arguments, the last being typed) from
/// `cmd`'s definition, asking `values` first for each value.
///
/// ```
/// use app_plugin::cli::{complete, NoValues};
/// let cmd = clap::Command::new("app-demo")
///     .arg(clap::Arg::new("format").long("format").value_parser(["json", "text"]))
///     .arg(clap::Arg::new("file").long("file").value_parser(clap::value_parser!(std::path::PathBuf)));
/// let w = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
/// assert_eq!(complete(&cmd, &w(&["--format", "j"]), &NoValues).render(), "json\n:4\n");
/// assert_eq!(complete(&cmd, &w(&["--format=t"]), &NoValues).render(), "--format=text\n:4\n");
/// assert_eq!(complete(&cmd, &w(&["--file", ""]), &NoValues).render(), ":0\n");
/// ```
pub fn complete(cmd: &Command, words: &[String], values: &dyn Values) -> Completion {
    let mut root = cmd.clone();
    root.build();
    let (current, before) = match words.split_last() {
        Some((last, before)) => (last.as_str(), before),
        None => ("", &[][..]),
    };
    let mut line = Line::new(&root);
    for word in before {
        line.read(word);
    }
    complete_at(line, current, values)
}

/// Candidates for `current`, the word being typed, where `line` left off.
fn complete_at(line: Line, current: &str, values: &dyn Values) -> Completion {
    let Line {
        at,
        pending,
        used,
        given,
        subcommand_allowed,
        positionals,
    } = line;
    if let Some(arg) = pending {
        return value_of(arg, &query(arg, current, given), "", values);
    }
    if let Some((name, value)) = current.strip_prefix("--").and_then(|f| f.split_once('=')) {
        return match find_long(at, name).filter(|a| takes_value(a)) {
            Some(arg) => value_of(
                arg,
                &query(arg, value, given),
                &format!("--{name}="),
                values,
            ),
            None => Completion::nothing(),
        };
    }
    if current.starts_with('-') {
        return flags(at, current, &used);
    }
    if subcommand_allowed && at.has_subcommands() {
        let mut out = Completion::matching(current, subcommands(at));
        out.directive |= Directive::KEEP_ORDER;
        return out;
    }
    match nth_positional(at, positionals) {
        Some(arg) => value_of(arg, &query(arg, current, given), "", values),
        // Nothing but flags can come here: offer them.
        None if current.is_empty() && positionals == 0 => flags(at, current, &used),
        None => Completion::nothing(),
    }
}

fn query<'a>(arg: &'a Arg, current: &'a str, given: Vec<(String, String)>) -> Query<'a> {
    Query {
        arg: arg.get_id().as_str(),
        current,
        given,
    }
}

/// The visible subcommands of `cmd`, with their one-line help, as
/// completion candidates (`app`'s own completion uses it too).
///
/// ```
/// use clap::Command;
/// let cmd = Command::new("demo")
///     .subcommand(Command::new("run").about("Start it"))
///     .subcommand(Command::new("internal").hide(true));
/// let names: Vec<String> = app_plugin::cli::subcommands(&cmd).into_iter().map(|c| c.value).collect();
/// assert_eq!(names, ["run"]);
/// ```
pub fn subcommands(cmd: &Command) -> Vec<Candidate> {
    cmd.get_subcommands()
        .filter(|s| !s.is_hide_set())
        .map(|s| {
            let about = s.get_about().map(ToString::to_string);
            Candidate::described(s.get_name(), about.as_deref())
        })
        .collect()
}

/// Flags of `cmd` starting with `current`, except those given already
/// (unless they may repeat).
fn flags(cmd: &Command, current: &str, used: &[&str]) -> Completion {
    let mut out = Completion::nothing();
    for arg in cmd.get_arguments() {
        let repeats = matches!(arg.get_action(), ArgAction::Append | ArgAction::Count);
        if arg.is_hide_set()
            || arg.is_positional()
            || (!repeats && used.contains(&arg.get_id().as_str()))
        {
            continue;
        }
        let help = arg.get_help().map(ToString::to_string);
        let long = arg.get_long().map(|l| format!("--{l}"));
        let short = arg.get_short().map(|s| format!("-{s}"));
        for flag in [long, short].into_iter().flatten() {
            out.extend(current, [Candidate::described(flag, help.as_deref())]);
        }
    }
    out
}

/// The value of `arg`: the plugin's own values, else its possible values,
/// else file names for a path, else nothing.
fn value_of(arg: &Arg, query: &Query, prefix: &str, values: &dyn Values) -> Completion {
    let mut out = match values.values(query) {
        Some(own) => own,
        None => defined_values(arg, query.current),
    };
    if !prefix.is_empty() {
        for c in &mut out.candidates {
            c.value.insert_str(0, prefix);
        }
    }
    out
}

fn defined_values(arg: &Arg, current: &str) -> Completion {
    let possible: Vec<Candidate> = arg
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| {
            let help = v.get_help().map(ToString::to_string);
            Candidate::described(v.get_name(), help.as_deref())
        })
        .collect();
    if !possible.is_empty() {
        return Completion::matching(current, possible);
    }
    if is_path(arg) {
        return Completion::files();
    }
    Completion::nothing()
}

fn is_path(arg: &Arg) -> bool {
    matches!(
        arg.get_value_hint(),
        ValueHint::AnyPath | ValueHint::FilePath | ValueHint::DirPath | ValueHint::ExecutablePath
    ) || arg
        .get_value_names()
        .is_some_and(|n| n.iter().any(|n| n.as_str() == "FILE"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    fn cmd() -> Command {
        Command::new("app-t")
            .disable_help_subcommand(true)
            .arg(
                Arg::new("name")
                    .long("name")
                    .global(true)
                    .help("Instance name"),
            )
            .arg(Arg::new("op").long("op").help("Old form"))
            .arg(
                Arg::new("output")
                    .short('o')
                    .long("output")
                    .global(true)
                    .value_parser(["json", "table"])
                    .help("Format"),
            )
            .subcommand(
                Command::new("get")
                    .about("Show")
                    .arg(Arg::new("path").long("path").help("The path")),
            )
            .subcommand(Command::new("put").about("Change"))
    }

    fn c(w: &[&str]) -> String {
        let values = |q: &Query| {
            (q.arg == "path").then(|| {
                let name = q.given("name").unwrap_or("default").to_string();
                Completion::matching(q.current, [Candidate::new(format!("/events/{name}"))])
            })
        };
        complete(&cmd(), &words(w), &values).render()
    }

    #[test]
    fn subcommands_follow_global_flags_only() {
        assert_eq!(c(&["--name", "x", "p"]), "put\tChange\n:36\n");
        assert_eq!(c(&["-o", "json", ""]), "get\tShow\nput\tChange\n:36\n");
        // Where only flags can come, an empty word offers them.
        // (and clap's --help, when its help feature is on)
        assert!(c(&["--op", "1", ""])
            .starts_with("--name\tInstance name\n--output\tFormat\n-o\tFormat\n"));
        assert!(c(&["get", ""]).starts_with("--path\tThe path\n"));
        assert_eq!(c(&["get", "x"]), ":4\n");
        assert_eq!(c(&["get", "x", ""]), ":4\n", "a stray word: nothing fits");
    }

    #[test]
    fn flags_values_and_the_plugins_own_values() {
        assert_eq!(c(&["get", "-o", ""]), "json\ntable\n:4\n");
        assert_eq!(c(&["get", "-ot"]), ":4\n");
        assert_eq!(c(&["get", "--output=t"]), "--output=table\n:4\n");
        assert_eq!(c(&["--name=r1", "get", "--path", ""]), "/events/r1\n:4\n");
        assert_eq!(c(&["get", "--path="]), "--path=/events/default\n:4\n");
        let out = c(&["get", "--"]);
        assert!(out.starts_with("--path\tThe path\n"), "{out}");
        assert!(
            out.contains("--name\tInstance name\n") && !out.contains("--op"),
            "{out}"
        );
        assert_eq!(c(&["get", "--path", "/x", "--pa"]), ":4\n");
        assert_eq!(
            c(&["get", "-"])
                .lines()
                .filter(|l| *l == "-o\tFormat")
                .count(),
            1
        );
    }

    #[test]
    fn log_levels_complete_as_numbers_with_names() {
        let cmd = Command::new("x").arg(Arg::new("log").long("log").value_parser(LogLevel));
        let out = complete(&cmd, &words(&["--log=4"]), &NoValues).render();
        assert_eq!(out, "--log=4\tdebug\n:4\n");
        assert!(cmd
            .clone()
            .try_get_matches_from(["x", "--log", "TRACE"])
            .is_ok());
        let err = cmd.try_get_matches_from(["x", "--log", "6"]).unwrap_err();
        assert!(err.to_string().contains("invalid log level '6'"), "{err}");
    }
}
