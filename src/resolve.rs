//! Which plugin a command means: the longest match over its words.
//!
//! `app foo bar baz --x` tries `app-foo-bar-baz`, `app-foo-bar`, then
//! `app-foo`, using the words before the first one that starts with `-`.
//! A dash inside a word may also match an underscore in the file name
//! (`app foo-bar` finds `app-foo_bar`), as kubectl does. The longest name
//! wins over search order; among equal names, search order decides.
//!
//! Except under a shipped command ([`crate::shipped`]): a name longer than
//! the longest shipped one the command starts with is taken only from
//! `APP_PLUGIN_PATH` or the shipped directory ([`Origin::may_extend_shipped`]),
//! so a file on `PATH` or in the user plugin directory can never take over
//! `app event-repeater run`.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::discovery::{FileKind, Found, SearchPath, PLUGIN_PREFIX};
use crate::shipped;

/// A plugin a command resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The plugin's name as in its file name (`foo_bar` for `app-foo_bar`).
    pub name: String,
    /// The executable and where it was found.
    pub found: Found,
    /// How many of the command's words the name used up; the rest are the
    /// plugin's arguments.
    pub consumed: usize,
}

/// The outcome of resolving a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    Found(Resolved),
    /// Only a file that cannot run matches: one without the run bit, or a
    /// symbolic link that leads nowhere ([`crate::exec::cannot_run`] says which).
    NotExecutable(PathBuf),
    NotFound,
}

/// The longest file name Linux file systems allow (`NAME_MAX`): no plugin
/// name is longer, so no more words than fit in it need trying.
const NAME_MAX: usize = 255;

/// The words that may name a plugin: those before the first argument that
/// starts with `-`, stopping at anything that cannot be part of a file name
/// and at the first word that would make `app-WORD-WORD…` longer than a file
/// name can be. That bound keeps resolving linear in the arguments: with
/// 20,000 plain words, every prefix of them was a candidate name, quadratic
/// in time and memory.
pub fn command_words(args: &[OsString]) -> Vec<&str> {
    let mut len = PLUGIN_PREFIX.len();
    args.iter()
        .map_while(|a| a.to_str())
        .take_while(|w| !w.is_empty() && !w.starts_with('-') && !w.contains('/'))
        .take_while(|w| {
            len += w.len() + 1;
            len <= NAME_MAX + 1
        })
        .collect()
}

/// Candidate plugin names for `words`, longest first; each with the number of
/// words it uses. A name with dashes inside a word is followed by its
/// underscore variant.
pub fn candidate_names(words: &[&str]) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for n in (1..=words.len()).rev() {
        let parts = &words[..n];
        out.push((parts.join("-"), n));
        if parts.iter().any(|w| w.contains('-')) {
            let underscored: Vec<String> = parts.iter().map(|w| w.replace('-', "_")).collect();
            out.push((underscored.join("-"), n));
        }
    }
    out
}

/// Resolves `args` (the command and its arguments, after global flags).
pub fn resolve(search: &SearchPath, args: &[OsString]) -> Resolution {
    let words = command_words(args);
    let candidates = candidate_names(&words);
    let floor = shipped_floor(search, &candidates);
    let mut not_executable = None;
    for (name, consumed) in candidates {
        let file_name = format!("{PLUGIN_PREFIX}{name}");
        let reserved = floor.is_some_and(|f| consumed > f);
        for (found, kind) in search.lookup(&file_name) {
            if reserved && !found.origin.may_extend_shipped() {
                continue;
            }
            match kind {
                FileKind::Executable => {
                    return Resolution::Found(Resolved {
                        name,
                        found,
                        consumed,
                    })
                }
                FileKind::NotExecutable | FileKind::BrokenLink => {
                    not_executable.get_or_insert(found.path);
                }
            }
        }
    }
    match not_executable {
        Some(path) => Resolution::NotExecutable(path),
        None => Resolution::NotFound,
    }
}

/// How many words the longest shipped command that `candidates` start with
/// uses: one of [`shipped::SHIPPED`], or a file in the shipped directory.
fn shipped_floor(search: &SearchPath, candidates: &[(String, usize)]) -> Option<usize> {
    candidates
        .iter()
        .filter(|(name, _)| {
            shipped::is_shipped(name) || search.in_shipped_dir(&format!("{PLUGIN_PREFIX}{name}"))
        })
        .map(|(_, consumed)| *consumed)
        .max()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn words_stop_at_the_first_flag() {
        let args = os(&["foo", "bar", "--x", "baz"]);
        assert_eq!(command_words(&args), vec!["foo", "bar"]);
        assert!(command_words(&os(&["-v", "foo"])).is_empty());
        assert_eq!(command_words(&os(&["foo", "./file"])), vec!["foo"]);
    }

    #[test]
    fn words_stop_where_a_file_name_would_be_too_long() {
        let args: Vec<OsString> = std::iter::repeat(OsString::from("abcdefghi"))
            .take(100)
            .collect();
        let words = command_words(&args);
        // "app-" + 25 × "abcdefghi-" less the last dash = 253 bytes; one more is 263.
        assert_eq!(words.len(), 25);
        assert!(PLUGIN_PREFIX.len() + words.join("-").len() <= NAME_MAX);
    }

    #[test]
    fn longest_first_with_underscore_variants() {
        let names: Vec<_> = candidate_names(&["foo-bar", "baz"])
            .into_iter()
            .map(|(n, c)| format!("{n}/{c}"))
            .collect();
        assert_eq!(
            names,
            vec!["foo-bar-baz/2", "foo_bar-baz/2", "foo-bar/1", "foo_bar/1"]
        );
    }

    fn exe(dir: &std::path::Path, name: &str) {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join(name);
        std::fs::write(&path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn only_trusted_places_add_names_under_a_shipped_command() {
        let root = tempfile::tempdir().unwrap();
        let [plugin_path, app_dir, user, path] = ["pp", "libexec", "user", "bin"].map(|d| {
            let d = root.path().join(d);
            std::fs::create_dir_all(&d).unwrap();
            d
        });
        exe(&app_dir, "app-foo");
        exe(&user, "app-foo-bar");
        exe(&path, "app-foo-bar");
        exe(&path, "app-event-time-x");
        exe(&path, "app-other-bar");
        let search = |pp: Option<&std::path::Path>| {
            SearchPath::new(
                pp.map(|p| p.as_os_str()),
                Some(&app_dir),
                Some(&user),
                Some(path.as_os_str()),
            )
        };
        let got = |s: &SearchPath, args: &[&str]| match resolve(s, &os(args)) {
            Resolution::Found(r) => Some((r.found.path, r.consumed)),
            _ => None,
        };
        let plain = search(None);
        // `foo` is in the shipped directory: neither the user dir's nor
        // PATH's `foo-bar` runs; the shipped `foo` gets `bar` as an argument.
        assert_eq!(
            got(&plain, &["foo", "bar"]),
            Some((app_dir.join("app-foo"), 1))
        );
        // A shipped name of the list, not installed here: nothing longer from PATH.
        assert_eq!(got(&plain, &["event-time", "x"]), None);
        // Not under anything shipped: the longest match wins as before.
        assert_eq!(
            got(&plain, &["other", "bar"]),
            Some((path.join("app-other-bar"), 2))
        );
        // APP_PLUGIN_PATH is the user's explicit choice: it may add one.
        exe(&plugin_path, "app-foo-bar");
        assert_eq!(
            got(&search(Some(&plugin_path)), &["foo", "bar"]),
            Some((plugin_path.join("app-foo-bar"), 2))
        );
    }
}
