//! Candidates from the plugin indexes: index names (`plugin index remove`,
//! `update`), and for `plugin install` and `info` the plugin names of the
//! cached indexes, `INDEX/NAME` once a `/` is typed, and `NAME@VERSION`
//! once an `@` is typed. Only the cached copies are read (see
//! [`crate::plugin_index::cache`]); nothing is fetched while TAB is pressed.

use super::{Candidate, Completion};
use crate::plugin_index::config::Indexes;
use crate::plugin_index::lookup::Catalog;
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
    let Ok(catalog) = Catalog::load(&session.dirs.config_dir, &session.dirs.cache_dir) else {
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
            .filter(|f| index.map_or(true, |i| i == f.index.name))
            .map(|f| Candidate::new(format!("{head}@{}", f.entry.version)))
            .collect()
    } else if let Some((index, _)) = cur.split_once('/') {
        catalog
            .newest()
            .iter()
            .filter(|f| f.index.name == index)
            .map(|f| {
                Candidate::described(
                    format!("{index}/{}", f.entry.name),
                    Some(&f.entry.description),
                )
            })
            .collect()
    } else {
        catalog
            .newest()
            .iter()
            .map(|f| Candidate::described(f.entry.name.clone(), Some(&f.entry.description)))
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
