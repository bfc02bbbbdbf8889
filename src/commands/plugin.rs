//! `app plugin list` and `app plugin path`.

use std::ffi::OsString;
use std::io::Write;

use crate::cli::PluginCmd;
use crate::error::{code, Error, Result};
use crate::inventory::Inventory;
use crate::resolve::{resolve, Resolution};
use crate::session::Session;

pub fn run(session: &Session, cmd: PluginCmd) -> Result<i32> {
    match cmd {
        PluginCmd::List => list(session),
        PluginCmd::Path { name } => path(session, &name),
    }
}

/// Lists plugins like `kubectl plugin list`: non-zero exit when there are warnings.
fn list(session: &Session) -> Result<i32> {
    let inventory = Inventory::scan(session, true);
    let mut out = std::io::stdout().lock();
    if inventory.plugins.is_empty() {
        writeln!(
            out,
            "No plugins found. Plugins are executables named app-<name> in:"
        )
        .ok();
        for dir in session.search.dirs() {
            writeln!(out, "  {} ({})", dir.path.display(), dir.origin.label()).ok();
        }
    } else {
        let name_width = inventory
            .plugins
            .iter()
            .map(|p| p.command_name().len())
            .max()
            .unwrap_or(0);
        let path_width = inventory
            .plugins
            .iter()
            .map(|p| p.found.path.as_os_str().len())
            .max()
            .unwrap_or(0);
        for p in &inventory.plugins {
            let path = p.found.path.display().to_string();
            let line = format!(
                "{:name_width$}  {:path_width$}  {}",
                p.command_name(),
                path,
                p.description().unwrap_or("")
            );
            writeln!(out, "{}", line.trim_end()).ok();
        }
    }
    let listeners = &session.config.listeners;
    if !listeners.is_empty() {
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
    drop(out);
    for w in &inventory.warnings {
        eprintln!("warning: {w}");
    }
    for name in session.config.aliases.keys() {
        if crate::cli::is_builtin(name) {
            eprintln!(
                "warning: alias '{name}' in {} is ignored: built-in commands always win",
                session.config.path.display()
            );
        }
    }
    Ok(if inventory.warnings.is_empty() {
        0
    } else {
        code::WARNINGS
    })
}

/// Prints the executable a command resolves to, like `which` for plugins.
fn path(session: &Session, words: &[String]) -> Result<i32> {
    // Accept both `plugin path event-repeater manage` and `plugin path "event-repeater manage"`.
    let args: Vec<OsString> = words
        .iter()
        .flat_map(|w| w.split_whitespace())
        .map(OsString::from)
        .collect();
    match resolve(&session.search, &args) {
        Resolution::Found(r) => {
            println!("{}", r.found.path.display());
            Ok(0)
        }
        Resolution::NotExecutable(path) => Err(crate::exec::cannot_run(
            &path,
            std::io::Error::from_raw_os_error(libc::EACCES),
        )),
        Resolution::NotFound => Err(Error::UnknownCommand {
            name: words.join(" "),
            suggestion: None,
        }),
    }
}
