//! `app help` / `app --help`: the built-ins, then the plugins found, then aliases.

use std::ffi::OsString;
use std::io::Write;

use crate::error::Result;
use crate::inventory::Inventory;
use crate::session::Session;
use app_plugin::text::escape_for_terminal as printable;

/// `app help [COMMAND…]`: help for app itself, a built-in, or a plugin (which
/// is run with `--help`).
pub fn run(session: &Session, topic: &[String]) -> Result<i32> {
    let Some(first) = topic.first() else {
        print_overview(session);
        return Ok(0);
    };
    let cmd = crate::cli::command();
    if cmd.find_subcommand(first).is_some() {
        // Exactly what `app <built-in> --help` prints: a clone of the
        // subcommand rendered on its own lacks what the whole command
        // propagates to it (no `help` subcommand, the flags' layout).
        if let Err(e) = cmd.try_get_matches_from(["app", first.as_str(), "--help"]) {
            print!("{}", e.render());
        }
        return Ok(0);
    }
    // A plugin: ask it, the way `git help` shows a command's own help.
    let mut args: Vec<OsString> = topic.iter().map(OsString::from).collect();
    args.push("--help".into());
    crate::external::run(session, args)
}

fn print_overview(session: &Session) {
    let mut cmd = crate::cli::command();
    let mut out = std::io::stdout().lock();
    let _ = write!(out, "{}", cmd.render_help());
    let inventory = Inventory::scan(session, true);
    let _ = writeln!(out, "\nPlugins:");
    if inventory.plugins.is_empty() {
        let _ = writeln!(
            out,
            "  (none found; plugins are executables named app-<name> on the search path)"
        );
    }
    let width = inventory
        .plugins
        .iter()
        .map(|p| inventory.typed_name(p).len())
        .max()
        .unwrap_or(0);
    // Names come from file names, descriptions from plugins: printed as
    // data, never as terminal codes (as `plugin list` does).
    for p in &inventory.plugins {
        let line = format!(
            "  {:width$}  {}",
            inventory.typed_name(p),
            p.description().unwrap_or("")
        );
        let _ = writeln!(out, "{}", printable(&line));
    }
    if !session.config.aliases.is_empty() {
        let _ = writeln!(out, "\nAliases (from {}):", session.config.path.display());
        for (name, value) in &session.config.aliases {
            let _ = writeln!(out, "{}", printable(&format!("  {name} = {value}")));
        }
    }
    let _ = writeln!(
        out,
        "\nRun 'app help <command>' for a command's help, 'app plugin list' for plugin paths and warnings."
    );
}
