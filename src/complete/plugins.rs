//! Candidates from what is installed: plugin names on the search path, aliases
//! from the config, and a plugin's own arguments (through [`super::delegate`]).
//!
//! Names follow longest-match resolution: `app-event-repeater-manage` is
//! reached as `app event-repeater manage`, so after `app ` TAB offers
//! `event-repeater`, and after `app event-repeater ` it offers `manage`
//! (next to whatever the plugin itself offers). A name is offered whole when
//! no shorter plugin stands between (`app-foo-bar` alone is `foo-bar`).

use std::ffi::OsString;

use super::{delegate, Candidate, Completion};
use crate::inventory::{Inventory, Plugin};
use crate::resolve::{command_words, resolve, Resolution};
use crate::session::Session;

/// The plugin names that may follow the command words `typed` (none typed:
/// top-level names), with descriptions from trusted plugins' metadata.
///
/// Reading the directories is the whole cost; metadata comes from the cache
/// and is asked only of trusted plugins that are offered.
pub fn next_words(session: &Session, typed: &[String]) -> Vec<Candidate> {
    let inventory = Inventory::scan(session, false);
    let names: Vec<String> = inventory.plugins.iter().map(Plugin::command_name).collect();
    next_names(&names, typed)
        .into_iter()
        .map(|(word, index)| {
            let plugin = &inventory.plugins[index];
            let metadata = session.metadata_for(&plugin.name, &plugin.found);
            let description = metadata.as_ref().and_then(|m| m.description.as_deref());
            Candidate::described(word, description)
        })
        .collect()
}

/// For each name in `names` that extends the command words `typed`, the
/// word to offer and the index of the name; see the module doc.
fn next_names(names: &[String], typed: &[String]) -> Vec<(String, usize)> {
    let stem = if typed.is_empty() {
        String::new()
    } else {
        typed.join("-") + "-"
    };
    let below: Vec<(usize, &str)> = names
        .iter()
        .enumerate()
        .filter_map(|(i, n)| n.strip_prefix(&stem).map(|rest| (i, rest)))
        .filter(|(_, rest)| !rest.is_empty())
        .collect();
    below
        .iter()
        .filter(|(_, rest)| {
            // Skip `a-b` when `a` is a plugin too: it is offered after `a`.
            !below.iter().any(|(_, other)| {
                rest.len() > other.len() && rest.starts_with(&format!("{other}-"))
            })
        })
        .map(|(i, rest)| (rest.to_string(), *i))
        .collect()
}

/// The plugins `plugin install` put in the user plugin directory (those
/// with a receipt), described by their version and where they came from.
pub fn with_receipts(session: &Session) -> Vec<Candidate> {
    let Ok(receipts) = crate::install::load_receipts(&session.dirs.user_plugin_dir()) else {
        return Vec::new();
    };
    receipts
        .plugins
        .into_iter()
        .map(|(name, entry)| {
            let from = entry.index.unwrap_or(entry.source);
            let version = entry.version.unwrap_or_else(|| "(no version)".into());
            let about = app_plugin::text::escape_for_terminal(&format!("{version} from {from}"))
                .into_owned();
            Candidate::described(name, Some(&about))
        })
        .collect()
}

/// The shell whose completion script asks (`APP_COMPLETION_SHELL`, set by
/// the scripts `app completion` prints), and the name a multi-file plugin's
/// script for it has in its `completions/` folder.
fn script_name(name: &str) -> Option<String> {
    match std::env::var("APP_COMPLETION_SHELL").ok()?.as_str() {
        "bash" => Some(format!("app-{name}.bash")),
        "zsh" => Some(format!("_app-{name}")),
        "fish" => Some(format!("app-{name}.fish")),
        _ => None,
    }
}

/// For a plugin `app plugin install` put in the user plugin directory with
/// a completion script for the asking shell: that script, for the shell to
/// load ([`Directive::SCRIPT`]).
fn script(session: &Session, resolved: &crate::resolve::Resolved) -> Option<Completion> {
    if resolved.found.origin != crate::discovery::Origin::UserDir {
        return None;
    }
    let file = crate::install::files::dir(&session.dirs.user_plugin_dir(), &resolved.name)
        .join("completions")
        .join(script_name(&resolved.name)?);
    let path = file.to_str().filter(|_| file.is_file())?;
    Some(Completion {
        candidates: vec![super::Candidate::described(
            path,
            Some(&format!("app-{} {}", resolved.name, resolved.consumed)),
        )],
        directive: super::Directive::SCRIPT | super::Directive::NO_FILE_COMP,
    })
}

/// The aliases from the config, described by what they stand for.
pub fn aliases(session: &Session) -> Vec<Candidate> {
    session
        .config
        .aliases
        .iter()
        .map(|(name, value)| Candidate::described(name, Some(&format!("alias for: {value}"))))
        .collect()
}

/// Completes `cur` after a command that is not a built-in: `rest` starts with
/// the plugin's name words.
pub fn complete(session: &Session, rest: &[String], cur: &str) -> Completion {
    let args: Vec<OsString> = rest.iter().map(OsString::from).collect();
    // Deeper plugins (`manage` after `event-repeater`), when every word so far names one.
    let nested = if command_words(&args).len() == rest.len() {
        next_words(session, rest)
    } else {
        Vec::new()
    };
    let mut out = match resolve(&session.search, &args) {
        Resolution::Found(resolved) => {
            if let Some(script) = script(session, &resolved) {
                return script;
            }
            let mut plugin_args = rest[resolved.consumed..].to_vec();
            plugin_args.push(cur.to_string());
            delegate::complete(session, &resolved, &plugin_args)
        }
        Resolution::NotExecutable(_) | Resolution::NotFound => Completion::nothing(),
    };
    // The plugin's own candidates first, then the plugins below it.
    out.extend(cur, nested);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn offered(list: &[&str], typed: &[&str]) -> Vec<String> {
        next_names(&names(list), &names(typed))
            .into_iter()
            .map(|(w, _)| w)
            .collect()
    }

    #[test]
    fn top_level_offers_the_shortest_plugin_of_a_family() {
        let all = [
            "event-repeater",
            "event-repeater-manage",
            "event-time",
            "foo-bar",
        ];
        assert_eq!(
            offered(&all, &[]),
            ["event-repeater", "event-time", "foo-bar"]
        );
        assert_eq!(offered(&all, &["event-repeater"]), ["manage"]);
        assert_eq!(offered(&all, &["foo"]), ["bar"]);
        assert!(offered(&all, &["event-time"]).is_empty());
    }
}
