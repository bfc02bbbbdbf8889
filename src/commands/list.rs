//! `app plugin list`: the plugins found, where, whether trusted and how
//! installed, then the listeners; warnings on stderr and a non-zero exit
//! when there are any, like `kubectl plugin list`.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::from_index;
use crate::discovery::{Origin, PLUGIN_PREFIX};
use crate::error::{code, Result};
use crate::install::{self, receipts::Receipts};
use crate::inventory::{Inventory, Plugin};
use crate::plugin_index::summary::Summaries;
use crate::session::Session;
use app_plugin::text::escape_for_terminal as printable;

/// Lists plugins like `kubectl plugin list`: non-zero exit when there are warnings.
pub fn list(session: &Session) -> Result<i32> {
    let inventory = Inventory::scan(session, true);
    let plugin_dir = session.dirs.user_plugin_dir();
    let mut record_warnings = Vec::new();
    let records = install_records(&plugin_dir, &mut record_warnings);
    record_warnings.extend(gone(&plugin_dir, &records));
    let mut out = io::stdout().lock();
    if inventory.plugins.is_empty() {
        print_none_found(&mut out, session);
    } else {
        let installs = Installs::new(session, plugin_dir, &records);
        print_table(&mut out, session, &inventory, &installs);
    }
    print_listeners(&mut out, session);
    drop(out);
    let warnings: Vec<String> = inventory
        .warnings
        .iter()
        .map(ToString::to_string)
        .chain(record_warnings)
        .chain(ignored_aliases(session))
        .collect();
    for w in &warnings {
        crate::warn::warn(printable(w));
    }
    // Every warning counts, the config's (printed when it was read) too.
    Ok(if warnings.is_empty() && session.config_warnings == 0 {
        0
    } else {
        code::WARNINGS
    })
}

/// The aliases of the config that a built-in's name makes useless.
fn ignored_aliases(session: &Session) -> impl Iterator<Item = String> + '_ {
    let config = session.config.path.display();
    session
        .config
        .aliases
        .keys()
        .filter(|name| crate::cli::is_builtin(name))
        .map(move |name| {
            format!("alias '{name}' in {config} is ignored: built-in commands always win")
        })
}

/// The install record of each plugin in the user plugin directory, when the
/// index can be read (problems become warnings of `plugin list`).
fn install_records(plugin_dir: &Path, warnings: &mut Vec<String>) -> Receipts {
    match install::load_receipts(plugin_dir) {
        Ok(index) => index,
        Err(e) => {
            warnings.push(e.to_string());
            Receipts::default()
        }
    }
}

/// A warning for each recorded plugin whose file is gone.
fn gone(plugin_dir: &Path, records: &Receipts) -> Vec<String> {
    records
        .plugins
        .iter()
        .filter_map(|(name, entry)| {
            let path = plugin_dir.join(format!("{PLUGIN_PREFIX}{name}"));
            (!path.exists()).then(|| {
                format!(
                    "{} was installed from {} but is gone; 'app plugin remove {name}' drops the record",
                    path.display(),
                    entry.source
                )
            })
        })
        .collect()
}

fn print_none_found(out: &mut impl Write, session: &Session) {
    writeln!(
        out,
        "No plugins found. Plugins are executables named app-<name> in:"
    )
    .ok();
    for dir in session.search.dirs() {
        writeln!(out, "  {} ({})", dir.path.display(), dir.origin.label()).ok();
    }
}

/// One line per plugin: name, path, place, description, and how it was
/// installed, in aligned columns.
fn print_table(
    out: &mut impl Write,
    session: &Session,
    inventory: &Inventory,
    installs: &Installs,
) {
    // Where each one was found, and whether it is trusted (asked for
    // metadata and completions): a PATH entry is not, unless the config says so.
    let place = |p: &Plugin| match p.found.origin {
        Origin::Path if session.config.is_trusted(&p.name) => "PATH, trusted",
        origin => origin.label(),
    };
    let width = |len: &dyn Fn(&Plugin) -> usize| inventory.plugins.iter().map(len).max();
    let name_width = width(&|p| inventory.typed_name(p).len()).unwrap_or(0);
    let path_width = width(&|p| p.found.path.as_os_str().len()).unwrap_or(0);
    let place_width = width(&|p| place(p).len()).unwrap_or(0);
    for p in &inventory.plugins {
        let line = format!(
            "{:name_width$}  {:path_width$}  {:place_width$}  {}{}",
            inventory.typed_name(p),
            p.found.path.display().to_string(),
            place(p),
            p.description().unwrap_or(""),
            installs.note(p)
        );
        // Descriptions and versions come from plugins, paths from file
        // names: printed as data, never as terminal codes.
        writeln!(out, "{}", printable(line.trim_end())).ok();
    }
}

/// What `plugin list` says about how a plugin was installed.
struct Installs<'a> {
    plugin_dir: PathBuf,
    records: &'a Receipts,
    /// The cached indexes, read only when a plugin came from one.
    catalog: Option<Summaries>,
}

impl<'a> Installs<'a> {
    fn new(session: &Session, plugin_dir: PathBuf, records: &'a Receipts) -> Installs<'a> {
        let catalog = records
            .plugins
            .values()
            .any(|e| e.index.is_some())
            .then(|| Summaries::load(&session.dirs.config_dir, &session.dirs.cache_dir).ok())
            .flatten();
        Installs {
            plugin_dir,
            records,
            catalog,
        }
    }

    /// `  [installed VERSION from SOURCE] [upgrade available: V]` for the
    /// plugin `install` put where it was found; empty for any other.
    fn note(&self, p: &Plugin) -> String {
        let ours = p.found.origin == Origin::UserDir
            && p.found.path == self.plugin_dir.join(format!("{PLUGIN_PREFIX}{}", p.name));
        let Some(entry) = self.records.plugins.get(&p.name).filter(|_| ours) else {
            return String::new();
        };
        let upgrade = self
            .catalog
            .as_ref()
            .and_then(|c| from_index::available_upgrade(c, &p.name, entry))
            .map(|v| format!(" [upgrade available: {v}]"))
            .unwrap_or_default();
        let from = match &entry.index {
            Some(index) => format!("index {index}"),
            None => entry.source.clone(),
        };
        let pinned = if entry.pinned { " [pinned]" } else { "" };
        format!(
            "  [installed {} from {from}]{pinned}{upgrade}",
            entry.version.as_deref().unwrap_or("(no version)"),
        )
    }
}

/// The listeners the config registers, and where each one's executable is.
fn print_listeners(out: &mut impl Write, session: &Session) {
    let listeners = &session.config.listeners;
    if listeners.is_empty() {
        return;
    }
    writeln!(out, "\nListeners (from {}):", session.config.path.display()).ok();
    for l in listeners {
        let file = format!("app-listener-{}", l.name);
        match session.search.find_executable(&file) {
            Some(found) => writeln!(
                out,
                "  {}  {}  events: {}",
                l.name,
                found.path.display(),
                l.events.join(",")
            ),
            None => writeln!(
                out,
                "  {}  (not found: no executable {file} on the search path)",
                l.name
            ),
        }
        .ok();
    }
}
