//! `app plugin search [WORD]` and `app plugin info NAME`: read the cached
//! indexes (search their summaries) only (no network, no signature check: each cached copy was
//! verified when it was fetched), so they answer at once.

use std::io::Write;

use serde_json::json;

use super::index::print_table;
use crate::cli::Output;
use crate::error::{Error, Result};
use crate::install::{self, receipts::Receipts};
use crate::plugin_index::format::{self, Platform};
use crate::plugin_index::lookup::{Catalog, Spec};
use crate::plugin_index::summary::Summaries;
use crate::session::Session;
use app_plugin::text::escape_for_terminal as printable;

fn catalog(session: &Session) -> Result<Catalog> {
    let catalog = Catalog::load(&session.dirs.config_dir, &session.dirs.cache_dir)?;
    for problem in &catalog.problems {
        crate::warn::warn(printable(problem));
    }
    Ok(catalog)
}

/// A search result: an index and one of its entries.
struct Found<'a> {
    index: &'a crate::plugin_index::config::IndexConfig,
    entry: &'a crate::plugin_index::summary::Brief,
}

fn records(session: &Session) -> Receipts {
    install::load_receipts(&session.dirs.user_plugin_dir()).unwrap_or_default()
}

/// `search` reads the indexes' summaries only (see
/// [`crate::plugin_index::summary`]): fast on a large index.
pub fn search(session: &Session, word: Option<&str>, output: Output) -> Result<i32> {
    let summaries = Summaries::load(&session.dirs.config_dir, &session.dirs.cache_dir)?;
    if summaries.indexes.is_empty() {
        return Err(no_index());
    }
    for (cfg, _) in summaries.indexes.iter().filter(|(_, s)| s.is_none()) {
        crate::warn::warn(format_args!(
            "index '{}' has no usable cached copy; run 'app plugin index update'",
            cfg.name
        ));
    }
    let records = records(session);
    let word = word.map(str::to_lowercase);
    let found: Vec<Found> = summaries
        .newest()
        .into_iter()
        .filter(|(_, b)| {
            word.as_deref().map_or(true, |w| {
                b.name.contains(w) || b.description.to_lowercase().contains(w)
            })
        })
        .map(|(index, entry)| Found { index, entry })
        .collect();
    let installed = |name: &str| {
        records
            .plugins
            .get(name)
            .map(|r| r.version.clone().unwrap_or_else(|| "(no version)".into()))
    };
    if output == Output::Json {
        print_json(&found, installed);
        return Ok(0);
    }
    if found.is_empty() {
        match &word {
            Some(w) => println!("No plugin in the indexes matches '{}'.", printable(w)),
            None => println!(
                "No plugins in the indexes. 'app plugin index list' shows the indexes added."
            ),
        }
        return Ok(0);
    }
    // Index texts are a publisher's: printed as data, never as terminal codes.
    let rows: Vec<[String; 5]> = found
        .iter()
        .map(|f| {
            [
                f.entry.name.clone(),
                printable(&f.entry.version).into_owned(),
                f.index.name.clone(),
                installed(&f.entry.name).map_or_else(|| "-".into(), |v| printable(&v).into_owned()),
                printable(&f.entry.description).into_owned(),
            ]
        })
        .collect();
    print_table(
        &["NAME", "VERSION", "INDEX", "INSTALLED", "DESCRIPTION"],
        &rows,
    );
    Ok(0)
}

/// `search` and `info` with no index added: there is nothing to look in
/// (and none by default: each team publishes its own).
fn no_index() -> Error {
    Error::Unavailable(
        "no plugin index is added, so there is nothing to search; add your team's with 'app plugin index add NAME URL --key-file PUBLISHER.pub' (docs/plugin-index.md; 'app plugin index init' makes one)"
            .into(),
    )
}

/// `search -o json`: the results as one pretty JSON array.
fn print_json(found: &[Found], installed: impl Fn(&str) -> Option<String>) {
    let list: Vec<_> = found
        .iter()
        .map(|f| {
            json!({
                "name": f.entry.name,
                "version": f.entry.version,
                "index": f.index.name,
                "installed": installed(&f.entry.name),
                "description": f.entry.description,
                "homepage": f.entry.homepage,
            })
        })
        .collect();
    // Buffered: pretty JSON is many small writes.
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    serde_json::to_writer_pretty(&mut out, &list)
        .map_err(std::io::Error::other)
        .and_then(|()| writeln!(out))
        .and_then(|()| out.flush())
        .ok();
}

pub fn info(session: &Session, text: &str) -> Result<i32> {
    let spec = Spec::parse(text)
        .filter(|s| s.version.is_none())
        .ok_or_else(|| {
            Error::Usage(format!(
                "'{}' is not a plugin name (NAME or INDEX/NAME)",
                text.escape_debug()
            ))
        })?;
    let catalog = catalog(session)?;
    if catalog.indexes.is_empty() {
        return Err(no_index());
    }
    let records = records(session);
    let mut versions = catalog.versions(&spec.name);
    if let Some(index) = &spec.index {
        versions.retain(|f| &f.index.name == index);
    }
    if versions.is_empty() {
        return Err(Error::Unavailable(format!(
            "no plugin '{}' in the indexes; 'app plugin search' lists them, 'app plugin index update' refreshes them",
            spec.name
        )));
    }
    let here = format::this_platform();
    let mut out = std::io::stdout().lock();
    let newest = &versions[0].entry;
    writeln!(out, "{}: {}", spec.name, printable(&newest.description)).ok();
    if let Some(home) = &newest.homepage {
        writeln!(out, "homepage: {}", printable(home)).ok();
    }
    match records.plugins.get(&spec.name) {
        Some(r) => writeln!(
            out,
            "installed: {} from {}{}",
            printable(r.version.as_deref().unwrap_or("(no version)")),
            r.index
                .as_deref()
                .map(|i| format!("index '{i}', "))
                .unwrap_or_default(),
            printable(&r.source)
        ),
        None => writeln!(out, "installed: no"),
    }
    .ok();
    writeln!(out, "versions (this machine is {here}):").ok();
    for f in &versions {
        let platforms: Vec<String> = f.entry.platforms.iter().map(platform_label).collect();
        let installable = if f.entry.platform_for_here().is_some() {
            ""
        } else {
            "  (nothing for this machine)"
        };
        writeln!(
            out,
            "  {:10} index {:10} {}{installable}",
            printable(&f.entry.version),
            f.index.name,
            printable(&platforms.join(", "))
        )
        .ok();
    }
    Ok(0)
}

/// How `info` shows one way to install a version: its platform, or the git
/// repository (and revision) it is built from.
fn platform_label(p: &Platform) -> String {
    match p {
        Platform::Build { .. } => p.label(),
        Platform::Source { source } => format!(
            "source ({}{})",
            source.git,
            source
                .rev
                .as_deref()
                .map(|r| format!(" {r}"))
                .unwrap_or_default()
        ),
    }
}
