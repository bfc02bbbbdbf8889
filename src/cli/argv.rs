//! Reading `argv` without clap's command tree, which is a large part of a
//! dispatch's cost: `app NAME …` needs none, and the tree is built only
//! when a global flag has to be looked up.

use std::ffi::OsString;

use super::{command, is_builtin, Cli, Cmd, GlobalFlags};

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
pub fn command_index(argv: &[OsString]) -> usize {
    flags_end(argv, false)
}

/// `argv` without the `--` that ends the global flags (`app -- version` is
/// `app version`): `--` says that what follows is not a flag of `app`'s,
/// and a command is not one. A `--` before a word starting with `-` stays
/// (that word is then not a flag of `app`'s, and no command either).
pub fn without_separator(mut argv: Vec<OsString>) -> Vec<OsString> {
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
fn flags_end(argv: &[OsString], stop_at_separator: bool) -> usize {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use clap::Parser;

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
    fn command_index_skips_global_flags_and_their_values() {
        let argv = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(
            command_index(&argv(&["app", "--log", "3", "-H", "x", "plugin", "list"])),
            5
        );
        assert_eq!(command_index(&argv(&["app", "--log=3", "version"])), 2);
        assert_eq!(command_index(&argv(&["app", "--help"])), 2);
    }

    #[test]
    fn a_separator_before_the_command_is_dropped() {
        let argv = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
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
}
