//! Candidates from the plugin indexes: index names (`plugin index remove`,
//! `update`), and for `plugin install` and `info` the plugin names of the
//! cached indexes, `INDEX/NAME` once a `/` is typed, and `NAME@VERSION`
//! once an `@` is typed. Only the cached copies are read (see
//! [`crate::plugin_index::summary`]); nothing is fetched while TAB is pressed.

use super::{Candidate, Completion};
use crate::plugin_index::config::Indexes;
use crate::plugin_index::summary::Summaries;
use crate::session::Session;

/// The names of the indexes added.
pub fn index_names(session: &Session) -> Vec<Candidate> {
    Indexes::load(&session.dirs.config_dir)
        .map(|list| {
            list.indexes
                .into_iter()
                .map(|i| Candidate::described(i.name, Some(&crate::install::url::redact(&i.url))))
                .collect()
        })
        .unwrap_or_default()
}

/// `NAME`, `INDEX/NAME` or `NAME@VERSION` candidates for `cur`. With
/// `files`, a word that matches none of them completes as a file name (for
/// `install PATH`).
pub fn plugin_specs(session: &Session, cur: &str, files: bool) -> Completion {
    let Ok(catalog) = Summaries::load(&session.dirs.config_dir, &session.dirs.cache_dir) else {
        return fallback(files);
    };
    let candidates: Vec<Candidate> = if let Some((head, _)) = cur.split_once('@') {
        // Versions of the plugin before `@` (after an optional `INDEX/`).
        let (index, name) = match head.split_once('/') {
            Some((index, name)) => (Some(index), name),
            None => (None, head),
        };
        catalog
            .versions(name)
            .iter()
            .filter(|(c, _)| index.map_or(true, |i| i == c.name))
            .map(|(_, b)| Candidate::new(format!("{head}@{}", b.version)))
            .collect()
    } else if let Some((index, _)) = cur.split_once('/') {
        catalog
            .newest()
            .iter()
            .filter(|(c, _)| c.name == index)
            .map(|(_, b)| Candidate::described(format!("{index}/{}", b.name), Some(&b.description)))
            .collect()
    } else {
        catalog
            .newest()
            .iter()
            .map(|(_, b)| Candidate::described(b.name.clone(), Some(&b.description)))
            .collect()
    };
    let out = Completion::matching(cur, candidates);
    if out.candidates.is_empty() {
        return fallback(files);
    }
    out
}

fn fallback(files: bool) -> Completion {
    if files {
        Completion::files()
    } else {
        Completion::nothing()
    }
}
