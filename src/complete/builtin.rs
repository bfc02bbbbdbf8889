//! Candidates from clap's command tree: global flags, built-in commands, their
//! subcommands, flags and values. Nothing here is listed by hand, so a
//! built-in added to [`crate::cli`] completes without touching this file.
//! Only the meaning of a few positionals (a plugin name, a command name) is
//! named here, by command path, since clap cannot know it.

use clap::{Arg, Command};

use super::{plugins, Candidate, Completion, Directive};
use crate::session::Session;

/// Built-ins whose positionals name an installed plugin (`plugin path NAME…`).
/// An entry for a command that does not exist is simply never reached.
const PLUGIN_NAME_ARGS: &[&str] = &["plugin path"];
/// Built-ins whose positional is a plugin `plugin install` put there (with
/// a receipt): the others would be refused.
const RECEIPT_NAME_ARGS: &[&str] = &[
    "plugin remove",
    "plugin upgrade",
    "plugin pin",
    "plugin unpin",
];
/// Built-ins whose positional names an added plugin index.
const INDEX_NAME_ARGS: &[&str] = &["plugin index remove", "plugin index update"];
/// Built-ins whose positional is a plugin of the indexes (`NAME`,
/// `INDEX/NAME`, `NAME@VERSION`); `install` also takes a file.
const INDEX_PLUGIN_ARGS: &[&str] = &["plugin install", "plugin info"];
/// Built-ins whose positionals name any command (`help COMMAND…`).
const COMMAND_NAME_ARGS: &[&str] = &["help"];

/// The named hosts and `@groups` of the config, asked for only when the
/// value of `-H/--host` is completed.
pub type Hosts<'a> = &'a dyn Fn() -> Vec<String>;

/// The command tree as clap resolves it (built, so that settings propagated
/// to subcommands and any automatic flags are there).
pub fn tree() -> Command {
    let mut root = crate::cli::command();
    root.build();
    root
}

/// Where a run of leading flags ends.
pub enum Skipped {
    /// The word being completed is the value of the last flag: these are its candidates.
    Value(Completion),
    /// The flags end before the word at this index.
    Rest(usize),
}

/// Skips the flags (and their values) at the start of `words`, flags of `cmd`.
pub fn skip_flags(cmd: &Command, words: &[String], cur: &str, hosts: Hosts) -> Skipped {
    let mut i = 0;
    while let Some(word) = words.get(i) {
        if !word.starts_with('-') || word == "-" {
            break;
        }
        i += 1;
        if word == "--" {
            break;
        }
        if let Some(arg) = flag_taking_value(cmd, word) {
            if i == words.len() {
                return Skipped::Value(values(arg, cur, "", hosts));
            }
            i += 1;
        }
    }
    Skipped::Rest(i)
}

/// The flag `word` names, when it takes its value from the next word.
fn flag_taking_value<'a>(cmd: &'a Command, word: &str) -> Option<&'a Arg> {
    if word.contains('=') {
        return None;
    }
    let arg = find_flag(cmd, word)?;
    // `-H` takes the next word; `-Hvalue` carries its own.
    let bare = word.starts_with("--") || word.len() == 2;
    (bare && takes_value(arg)).then_some(arg)
}

fn find_flag<'a>(cmd: &'a Command, word: &str) -> Option<&'a Arg> {
    if let Some(long) = word.strip_prefix("--") {
        let long = long.split('=').next().unwrap_or(long);
        cmd.get_arguments().find(|a| {
            a.get_long() == Some(long)
                || a.get_all_aliases()
                    .is_some_and(|aliases| aliases.contains(&long))
        })
    } else {
        let short = word.strip_prefix('-')?.chars().next()?;
        cmd.get_arguments().find(|a| a.get_short() == Some(short))
    }
}

fn takes_value(arg: &Arg) -> bool {
    arg.get_action().takes_values()
}

/// The flags of `cmd` that start with `cur`; after `--flag=`, that flag's values.
pub fn flags(cmd: &Command, cur: &str, hosts: Hosts) -> Completion {
    if let Some((name, value)) = cur.split_once('=') {
        let Some(arg) = find_flag(cmd, name).filter(|a| takes_value(a)) else {
            return Completion::nothing();
        };
        return values(arg, value, &format!("{name}="), hosts);
    }
    let mut out = Vec::new();
    for arg in cmd
        .get_arguments()
        .filter(|a| !a.is_positional() && !a.is_hide_set())
    {
        let help = arg.get_help().map(ToString::to_string);
        if let Some(long) = arg.get_long() {
            out.push(Candidate::described(format!("--{long}"), help.as_deref()));
        }
        if let Some(short) = arg.get_short() {
            out.push(Candidate::described(format!("-{short}"), help.as_deref()));
        }
    }
    Completion::matching(cur, out)
}

pub use app_plugin::cli::subcommands;

/// The built-in subcommand `name` of `cmd`, hidden ones included.
pub fn find_subcommand<'a>(cmd: &'a Command, name: &str) -> Option<&'a Command> {
    cmd.get_subcommands().find(|s| s.get_name() == name)
}

/// Completes `cur` after built-in `cmd` and the words `args` typed after it.
pub fn complete(session: &Session, cmd: &Command, args: &[String], cur: &str) -> Completion {
    let mut cmd = cmd;
    let mut path = vec![cmd.get_name().to_string()];
    let mut positionals: Vec<String> = Vec::new();
    let mut only_positionals = false;
    let mut i = 0;
    while let Some(word) = args.get(i) {
        i += 1;
        if !only_positionals && word == "--" {
            only_positionals = true;
        } else if !only_positionals && word.starts_with('-') && word != "-" {
            if let Some(arg) = flag_taking_value(cmd, word) {
                if i == args.len() {
                    return values(arg, cur, "", &|| session.config.host_names());
                }
                i += 1;
            }
        } else if let Some(sub) = positionals
            .is_empty()
            .then(|| find_subcommand(cmd, word))
            .flatten()
        {
            cmd = sub;
            path.push(sub.get_name().to_string());
        } else {
            positionals.push(word.clone());
        }
    }
    if cur.starts_with('-') && !only_positionals {
        return flags(cmd, cur, &|| session.config.host_names());
    }
    if positionals.is_empty() && cmd.has_subcommands() {
        return Completion::matching(cur, subcommands(cmd));
    }
    let path = path.join(" ");
    if PLUGIN_NAME_ARGS.contains(&path.as_str()) {
        return Completion::matching(cur, plugins::next_words(session, &positionals));
    }
    if RECEIPT_NAME_ARGS.contains(&path.as_str()) && positionals.is_empty() {
        return Completion::matching(cur, plugins::with_receipts(session));
    }
    if INDEX_NAME_ARGS.contains(&path.as_str()) {
        return Completion::matching(cur, super::indexes::index_names(session));
    }
    if INDEX_PLUGIN_ARGS.contains(&path.as_str()) && positionals.is_empty() {
        return super::indexes::plugin_specs(session, cur, path == "plugin install");
    }
    if COMMAND_NAME_ARGS.contains(&path.as_str()) {
        let mut out = Completion::nothing();
        if positionals.is_empty() {
            out.extend(cur, subcommands(&tree()));
        }
        out.extend(cur, plugins::next_words(session, &positionals));
        return out;
    }
    match positional_at(cmd, positionals.len()) {
        Some(arg) => values(arg, cur, "", &|| session.config.host_names()),
        None => Completion::nothing(),
    }
}

/// The positional that takes the `index`th positional word (the last one
/// takes all the rest when it accepts several values).
fn positional_at(cmd: &Command, index: usize) -> Option<&Arg> {
    let all: Vec<&Arg> = cmd.get_positionals().filter(|a| !a.is_hide_set()).collect();
    all.get(index).copied().or_else(|| {
        all.last()
            .copied()
            .filter(|a| a.get_num_args().is_some_and(|n| n.max_values() > 1))
    })
}

/// Candidates for the value of `arg`, each prefixed with `prefix` (for `--flag=`).
fn values(arg: &Arg, cur: &str, prefix: &str, hosts: Hosts) -> Completion {
    if arg.get_id() == "hosts" {
        // A host's URL cannot be guessed: the config's names, or nothing.
        let named: Vec<Candidate> = hosts()
            .into_iter()
            .map(|h| Candidate::new(format!("{prefix}{h}")))
            .collect();
        return Completion::matching(&format!("{prefix}{cur}"), named);
    }
    let mut known: Vec<Candidate> = arg
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| {
            let help = v.get_help().map(ToString::to_string);
            Candidate::described(format!("{prefix}{}", v.get_name()), help.as_deref())
        })
        .collect();
    if known.is_empty() {
        known = range_values(arg)
            .into_iter()
            .map(|v| Candidate::new(format!("{prefix}{v}")))
            .collect();
    }
    if !known.is_empty() {
        let mut out = Completion::matching(&format!("{prefix}{cur}"), known);
        out.directive |= Directive::KEEP_ORDER;
        return out;
    }
    // A path (clap infers the hint for `PathBuf` values) or nothing known
    // about the value: the shell's default, file names, as cobra does.
    Completion::files()
}

/// Values of a small integer range written as the value name, like `0..5`
/// for `--log` (clap's ranged parsers do not list their values).
fn range_values(arg: &Arg) -> Vec<String> {
    let Some(name) = arg.get_value_names().and_then(|n| n.first()) else {
        return Vec::new();
    };
    let Some((lo, hi)) = name.as_str().split_once("..") else {
        return Vec::new();
    };
    match (lo.parse::<u32>(), hi.trim_start_matches('=').parse::<u32>()) {
        (Ok(lo), Ok(hi)) if lo <= hi && hi - lo < 32 => (lo..=hi).map(|v| v.to_string()).collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn global_flags_and_their_values_are_skipped() {
        let root = tree();
        let w = words(&["--log", "5", "-H", "x", "--log-format=json", "foo", "bar"]);
        assert!(matches!(
            skip_flags(&root, &w, "", &Vec::new),
            Skipped::Rest(5)
        ));
        let w = words(&["--log"]);
        let Skipped::Value(c) = skip_flags(&root, &w, "", &Vec::new) else {
            panic!("expected the value of --log")
        };
        assert_eq!(c.values(), ["0", "1", "2", "3", "4", "5"]);
        let w = words(&["-H", "x", "--log-format"]);
        let Skipped::Value(c) = skip_flags(&root, &w, "j", &Vec::new) else {
            panic!("expected the value of --log-format")
        };
        assert_eq!(c.values(), ["json"]);
        assert_eq!(
            c.directive & Directive::NO_FILE_COMP,
            Directive::NO_FILE_COMP
        );
    }

    #[test]
    fn host_flag_offers_the_named_hosts_and_groups_not_files() {
        let hosts = || vec!["edge1".to_string(), "edge2".into(), "@edges".into()];
        let w = words(&["-H"]);
        let Skipped::Value(c) = skip_flags(&tree(), &w, "e", &hosts) else {
            panic!("expected the value of -H")
        };
        assert_eq!(c.values(), ["edge1", "edge2"]);
        assert_eq!(
            c.directive & Directive::NO_FILE_COMP,
            Directive::NO_FILE_COMP
        );
        assert_eq!(
            flags(&tree(), "--host=@", &hosts).values(),
            ["--host=@edges"]
        );
    }

    #[test]
    fn config_flag_completes_files() {
        let w = words(&["--config"]);
        let Skipped::Value(c) = skip_flags(&tree(), &w, "", &Vec::new) else {
            panic!("expected the value of --config")
        };
        assert_eq!(c, Completion::files());
    }

    #[test]
    fn flag_names_and_the_equals_form() {
        let root = tree();
        let c = flags(&root, "--lo", &Vec::new);
        assert_eq!(c.values(), ["--log", "--log-format"]);
        assert!(c.candidates[0].description.is_some());
        assert_eq!(
            flags(&root, "--log-format=", &Vec::new).values(),
            ["--log-format=text", "--log-format=json"]
        );
        assert!(flags(&root, "-", &Vec::new).values().contains(&"-H"));
    }

    #[test]
    fn subcommands_come_from_clap_and_hide_hidden_ones() {
        let names: Vec<String> = subcommands(&tree()).into_iter().map(|c| c.value).collect();
        for b in ["help", "version", "plugin", "completion"] {
            assert!(names.iter().any(|n| n == b), "{b} missing from {names:?}");
        }
        assert!(!names.iter().any(|n| n == "__complete"));
    }
}
