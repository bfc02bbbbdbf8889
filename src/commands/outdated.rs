//! `app plugin outdated [-o json] [--refresh]`: the plugins installed from
//! an index whose cached copy has a newer version for this machine, the
//! pinned ones marked. Reads the cached indexes only (no network), unless
//! `--refresh` updates them first. Exit 0 when none is outdated,
//! [`code::OUTDATED`] when some are, for scripts.

use std::io::Write;
use std::time::SystemTime;

use serde_json::json;

use super::from_index::available_upgrade;
use super::index::print_table;
use crate::cli::Output;
use crate::error::{code, Result};
use crate::install;
use crate::plugin_index::summary::Summaries;
use crate::session::Session;
use app_plugin::text::escape_for_terminal as printable;

/// One outdated plugin.
struct Row {
    name: String,
    installed: String,
    newest: String,
    index: String,
    pinned: bool,
}

pub fn outdated(session: &Session, output: Output, refresh: bool) -> Result<i32> {
    let refreshed = if refresh {
        // Its report goes where it cannot mix with the JSON.
        match output {
            Output::Json => super::index::refresh(session, &[], &mut std::io::stderr())?,
            Output::Table => super::index::refresh(session, &[], &mut std::io::stdout())?,
        }
    } else {
        0
    };
    let receipts = install::load_receipts(&session.dirs.user_plugin_dir())?;
    let summaries = Summaries::load(&session.dirs.config_dir, &session.dirs.cache_dir)?;
    let from_indexes: Vec<_> = receipts
        .plugins
        .iter()
        .filter_map(|(name, r)| Some((name, r, r.index.as_ref()?)))
        .collect();
    let mut rows = Vec::new();
    for (name, record, index) in &from_indexes {
        let Some((cfg, summary)) = summaries.indexes.iter().find(|(c, _)| &&c.name == index) else {
            crate::warn::warn(format_args!(
                "plugin '{name}' came from index '{index}', which has been removed: not checked"
            ));
            continue;
        };
        if !summary
            .as_ref()
            .is_some_and(|s| s.usable(cfg, SystemTime::now()))
        {
            crate::warn::warn(format_args!(
                "index '{index}' has no usable cached copy (none, expired, or older than its --max-age), so '{name}' was not checked; 'app plugin index update' (or --refresh) fetches it"
            ));
            continue;
        }
        if let Some(newest) = available_upgrade(&summaries, name, record) {
            rows.push(Row {
                name: name.to_string(),
                installed: record.version.clone().unwrap_or_default(),
                newest,
                index: index.to_string(),
                pinned: record.pinned,
            });
        }
    }
    match output {
        Output::Json => print_json(&rows),
        Output::Table if rows.is_empty() => println!(
            "{} plugins installed from an index, none outdated.",
            from_indexes.len()
        ),
        Output::Table => print_rows(&rows),
    }
    Ok(match (refreshed, rows.is_empty()) {
        (0, true) => 0,
        (0, false) => code::OUTDATED,
        // The answer came from a copy that could not be refreshed: said first.
        (failed, _) => failed,
    })
}

fn print_rows(rows: &[Row]) {
    let table: Vec<[String; 5]> = rows
        .iter()
        .map(|r| {
            [
                r.name.clone(),
                printable(&r.installed).into_owned(),
                printable(&r.newest).into_owned(),
                r.index.clone(),
                if r.pinned { "pinned" } else { "-" }.to_string(),
            ]
        })
        .collect();
    print_table(&["NAME", "INSTALLED", "NEWEST", "INDEX", "PINNED"], &table);
}

fn print_json(rows: &[Row]) {
    let list: Vec<_> = rows
        .iter()
        .map(|r| {
            json!({"name": r.name, "installed": r.installed, "newest": r.newest,
                   "index": r.index, "pinned": r.pinned})
        })
        .collect();
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, &list)
        .map_err(std::io::Error::other)
        .and_then(|()| writeln!(out))
        .ok();
}
