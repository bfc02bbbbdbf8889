//! Everything installed: each plugin on the search path with its metadata,
//! and the problems `plugin list` warns about. Used by `plugin list`, `help`
//! and completion; never on the path of running a plugin.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::cli::is_builtin;
use crate::discovery::{FileKind, Found, Origin, PLUGIN_PREFIX};
use crate::metadata::Metadata;
use crate::session::Session;
use crate::shipped;

/// A plugin as `app` would run it.
#[derive(Debug, Clone)]
pub struct Plugin {
    /// The name after `app-` (`event-repeater`, `foo_bar`).
    pub name: String,
    /// The file that runs.
    pub found: Found,
    /// Its metadata, when it is trusted and answered.
    pub metadata: Option<Metadata>,
}

impl Plugin {
    /// The command words that reach it: underscores read as dashes.
    pub fn command_name(&self) -> String {
        self.name.replace('_', "-")
    }

    pub fn description(&self) -> Option<&str> {
        self.metadata.as_ref()?.description.as_deref()
    }
}

/// The metadata with control characters in its texts escaped: they come
/// from the plugin and are printed by `help`, `plugin list` and completion.
fn printable(mut m: Metadata) -> Metadata {
    let clean = |t: &mut Option<String>| {
        if let Some(text) = t {
            *text = app_plugin::text::escape_for_terminal(text).into_owned();
        }
    };
    clean(&mut m.name);
    clean(&mut m.version);
    clean(&mut m.description);
    m
}

/// A problem with a file on the search path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Warning {
    /// A later file with the same name never runs.
    Shadowed { path: PathBuf, by: PathBuf },
    /// The file has no run bit.
    NotExecutable { path: PathBuf },
    /// The file is named after a built-in command, which always wins.
    OverridesBuiltin { path: PathBuf, builtin: String },
    /// A symbolic link that leads nowhere (dangling, or a loop).
    BrokenLink { path: PathBuf, reason: String },
    /// A name with control characters, which no one can type.
    UnprintableName { path: PathBuf },
    /// A file outside `APP_PLUGIN_PATH` and the shipped directory named under
    /// a shipped command, which it never replaces (see [`crate::shipped`]).
    UnderShipped { path: PathBuf, shipped: String },
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Warning::Shadowed { path, by } => write!(
                f,
                "{} is shadowed by {} and never runs",
                path.display(),
                by.display()
            ),
            Warning::NotExecutable { path } => write!(
                f,
                "{} is not executable (chmod +x it, or remove it)",
                path.display()
            ),
            Warning::OverridesBuiltin { path, builtin } => write!(
                f,
                "{} tries to replace the built-in command '{builtin}'; built-ins always win, so it never runs",
                path.display()
            ),
            Warning::BrokenLink { path, reason } => {
                write!(f, "{} cannot run: {reason}", path.display())
            }
            Warning::UnderShipped { path, shipped } => write!(
                f,
                "{} is named under the shipped command '{shipped}' and never runs: 'app {}' runs the shipped one (only APP_PLUGIN_PATH and the shipped directory may add commands under it); rename or remove the file",
                path.display(),
                shipped.replace('-', " ")
            ),
            Warning::UnprintableName { path } => write!(
                f,
                "{} has control characters in its name, so it is not listed; rename it",
                app_plugin::text::escape_for_terminal(&path.display().to_string())
            ),
        }
    }
}

/// The installed plugins and the warnings about the search path.
#[derive(Debug, Default)]
pub struct Inventory {
    /// Runnable plugins, sorted by name; the first of each name in search order.
    pub plugins: Vec<Plugin>,
    pub warnings: Vec<Warning>,
}

impl Inventory {
    /// The command as a user types it: `event-repeater manage` for
    /// `app-event-repeater-manage` when `app-event-repeater` exists too
    /// (longest match makes both spellings work; this is the natural one).
    pub fn typed_name(&self, plugin: &Plugin) -> String {
        let mut name = plugin.command_name().into_bytes();
        for other in &self.plugins {
            let other = other.command_name();
            if name.len() > other.len()
                && name.starts_with(other.as_bytes())
                && name[other.len()] == b'-'
            {
                name[other.len()] = b' ';
            }
        }
        String::from_utf8(name).unwrap_or_else(|_| plugin.command_name())
    }

    /// Scans the search path. With `with_metadata`, trusted plugins are asked
    /// for their metadata (answers are cached).
    pub fn scan(session: &Session, with_metadata: bool) -> Inventory {
        let mut first: BTreeMap<String, Found> = BTreeMap::new();
        let mut warnings = Vec::new();
        let entries = session.search.enumerate(PLUGIN_PREFIX);
        // What is shipped here: the known list and the shipped directory's files.
        let shipped: Vec<&str> = shipped::SHIPPED
            .iter()
            .copied()
            .chain(
                entries
                    .iter()
                    .filter(|e| e.found.origin == Origin::AppDir && e.kind == FileKind::Executable)
                    .map(|e| e.name.as_str()),
            )
            .collect();
        let mut under_shipped = Vec::new();
        for entry in &entries {
            if entry.found.origin.may_extend_shipped() {
                continue;
            }
            if let Some(s) = shipped
                .iter()
                .filter(|s| shipped::is_under(&entry.name, s))
                .max_by_key(|s| s.len())
            {
                under_shipped.push((entry.found.path.clone(), shipped::normalized(s)));
            }
        }
        for entry in entries {
            let path = entry.found.path.clone();
            if let Some(i) = under_shipped.iter().position(|(p, _)| *p == path) {
                let (path, shipped) = under_shipped.swap_remove(i);
                warnings.push(Warning::UnderShipped { path, shipped });
                continue;
            }
            if entry.name.chars().any(char::is_control) {
                warnings.push(Warning::UnprintableName { path });
                continue;
            }
            if entry.kind == FileKind::BrokenLink {
                let reason = crate::exec::broken_link(&path).unwrap_or_default();
                warnings.push(Warning::BrokenLink { path, reason });
                continue;
            }
            if entry.kind == FileKind::NotExecutable {
                // `app-foo.d`, `app-foo.1`, `app-foo.md`: data beside a plugin
                // (cargo's dependency files, man pages), not a plugin that
                // lost its run bit.
                if !entry.name.contains('.') {
                    warnings.push(Warning::NotExecutable { path });
                }
                continue;
            }
            // A built-in name may be the first word of the command too: `app-plugin-foo`
            // could never run, since `app plugin foo` is the built-in `plugin`.
            let first_word = entry.name.split('-').next().unwrap_or_default();
            if is_builtin(&entry.name) || is_builtin(first_word) {
                warnings.push(Warning::OverridesBuiltin {
                    path,
                    builtin: first_word.to_string(),
                });
                continue;
            }
            match first.get(&entry.name) {
                Some(winner) => warnings.push(Warning::Shadowed {
                    path,
                    by: winner.path.clone(),
                }),
                None => {
                    first.insert(entry.name, entry.found);
                }
            }
        }
        let plugins = first
            .into_iter()
            .map(|(name, found)| {
                let metadata = if with_metadata {
                    session.metadata_for(&name, &found).map(printable)
                } else {
                    None
                };
                Plugin {
                    name,
                    found,
                    metadata,
                }
            })
            .collect();
        Inventory { plugins, warnings }
    }
}
