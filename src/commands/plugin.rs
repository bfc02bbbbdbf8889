//! `app plugin list`, `path`, `install`, `remove`, `upgrade` and `new`.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::from_index;
use crate::cli::{Lang, PluginCmd};
use crate::discovery::{Origin, PLUGIN_PREFIX};
use crate::error::{code, Error, Result};
use crate::install::build::GitSpec;
use crate::install::{self, index::Index, Installed, Request, Source};
use crate::inventory::Inventory;
use crate::plugin_index::lookup::Spec;
use crate::plugin_index::summary::Summaries;
use crate::resolve::{resolve, Resolution};
use crate::scaffold::{ScaffoldError, Skeleton};
use crate::session::Session;
use app_plugin::text::escape_for_terminal as printable;

pub fn run(session: &Session, cmd: PluginCmd) -> Result<i32> {
    match cmd {
        PluginCmd::List => list(session),
        PluginCmd::Path { name } => path(session, &name),
        PluginCmd::Install {
            source,
            name,
            force,
            sha256,
            git,
            rev,
            path,
        } => {
            let installed = match (source, git) {
                (_, Some(url)) => {
                    let spec = GitSpec { url, rev, path };
                    from_index::install_git(
                        session,
                        &spec,
                        name.as_deref().unwrap_or(""),
                        force,
                        None,
                        None,
                    )?
                    .expect("nothing to compare with, so it was built")
                }
                (Some(source), None) => install_source(session, &source, name, force, sha256)?,
                (None, None) => {
                    return Err(Error::Usage(
                        "plugin install needs NAME, PATH, URL or --git URL".into(),
                    ))
                }
            };
            report_installed(session, &installed, "installed");
            Ok(0)
        }
        PluginCmd::Remove { name } => {
            let removed = install::remove(&session.dirs.user_plugin_dir(), &name, &session.search)?;
            if removed.was_missing {
                println!(
                    "plugin '{}' was already gone from {}; dropped its record",
                    removed.name,
                    removed.path.display()
                );
            } else {
                println!(
                    "removed plugin '{}' ({})",
                    removed.name,
                    removed.path.display()
                );
            }
            Ok(0)
        }
        PluginCmd::Upgrade { all: true, .. } => from_index::upgrade_all(session),
        PluginCmd::Upgrade { name, sha256, .. } => {
            let name = name.unwrap_or_default();
            let records = install::load_index(&session.dirs.user_plugin_dir())?;
            let Some(record) = records.plugins.get(&name) else {
                // Refused as before, naming where the plugin is.
                install::upgrade(
                    &session.dirs.user_plugin_dir(),
                    &name,
                    sha256,
                    &session.search,
                    &install::helper::acquire,
                )?;
                return Ok(0);
            };
            match from_index::upgrade_one(session, &name, record, sha256)? {
                from_index::Upgraded::To(installed) => {
                    report_installed(session, &installed, "upgraded")
                }
                from_index::Upgraded::UpToDate => println!(
                    "plugin '{name}' {} is up to date",
                    printable(record.version.as_deref().unwrap_or("(no version)"))
                ),
            }
            Ok(0)
        }
        PluginCmd::Index(cmd) => super::index::run(session, cmd),
        PluginCmd::Search { word, output } => {
            super::search::search(session, word.as_deref(), output)
        }
        PluginCmd::Info { name } => super::search::info(session, &name),
        PluginCmd::New { name, lang, dir } => new(session, &name, lang, dir),
    }
}

/// `install NAME|PATH|URL`: a word that names an existing file, or that
/// is not of the shape `[INDEX/]NAME[@VERSION]`, is a path or a URL; any
/// other is looked up in the indexes.
fn install_source(
    session: &Session,
    text: &str,
    name: Option<String>,
    force: bool,
    sha256: Option<String>,
) -> Result<Installed> {
    let cwd =
        std::env::current_dir().map_err(|e| Error::io("cannot read the current directory", e))?;
    let by_name = Spec::parse(text).filter(|_| {
        crate::install::url::scheme(text).is_none()
            && std::fs::symlink_metadata(cwd.join(text)).is_err()
    });
    if let Some(spec) = by_name {
        if name.is_some() || sha256.is_some() {
            return Err(Error::Usage(format!(
                "--name and --sha256 do not apply to a plugin installed by name from an index ('{}'); to install a file of that name, write ./{}",
                text, text
            )));
        }
        return from_index::install_by_name(session, &spec, force);
    }
    let request = Request {
        source: Source::parse(text, &cwd)?,
        name,
        force,
        sha256,
        origin: None,
    };
    install::install(
        &session.dirs.user_plugin_dir(),
        &request,
        &install::helper::acquire,
    )
}

fn report_installed(session: &Session, installed: &Installed, verb: &str) {
    let version = installed
        .entry
        .version
        .as_deref()
        .map(|v| format!(" {v}"))
        .unwrap_or_default();
    // The version is the plugin's own answer: printed as data.
    println!(
        "{}",
        printable(&format!(
            "{verb} plugin '{}'{version} at {} (from {})",
            installed.name,
            installed.path.display(),
            installed.entry.source
        ))
    );
    // The user plugin directory is not first on the search path: say so when
    // another file wins, or `app <name>` would surprise.
    let file = format!("{PLUGIN_PREFIX}{}", installed.name);
    if let Some(first) = session.search.find_executable(&file) {
        if first.path != installed.path {
            eprintln!(
                "warning: {} comes earlier on the search path, so 'app {}' runs that one, not the plugin just {verb}",
                first.path.display(),
                installed.name
            );
        }
    }
}

/// `app plugin new NAME [--lang L] [--dir DIR]`.
fn new(session: &Session, name: &str, lang: Lang, dir: Option<PathBuf>) -> Result<i32> {
    let sdk = crate::scaffold::local_sdk(session.app_exe.as_deref());
    let skeleton = Skeleton::new(name, lang, sdk.as_deref()).map_err(|e| match e {
        ScaffoldError::BadName(reason) => Error::BadPluginName {
            name: name.to_string(),
            reason: reason.to_string(),
        },
        other => Error::Usage(other.to_string()),
    })?;
    let dir = dir.unwrap_or_else(|| PathBuf::from(format!("{PLUGIN_PREFIX}{name}")));
    skeleton.write(&dir).map_err(|e| match e {
        ScaffoldError::NotEmpty(_) => Error::Usage(e.to_string()),
        ScaffoldError::Io(path, source) => {
            Error::io(format!("cannot write {}", path.display()), source)
        }
        ScaffoldError::BadName(_) => Error::Usage(e.to_string()),
    })?;
    let shown = dir.display();
    let language = match lang {
        Lang::Sh => "shell (sh)",
        Lang::Python => "Python",
        Lang::Rust => "Rust",
    };
    println!("created a {language} plugin skeleton for 'app {name}' in {shown}");
    match lang {
        Lang::Sh | Lang::Python => println!(
            "next: {shown}/app-{name} __app_metadata\n      app plugin install {shown}/app-{name}\n      app {name} hello"
        ),
        Lang::Rust => {
            println!(
                "next: cd {shown} && cargo build --release\n      app plugin install target/release/app-{name}\n      app {name} hello"
            );
        }
    }
    Ok(0)
}

/// The install record of each plugin in the user plugin directory, when the
/// index can be read (problems become warnings of `plugin list`).
fn install_records(plugin_dir: &Path, warnings: &mut Vec<String>) -> Index {
    match install::load_index(plugin_dir) {
        Ok(index) => index,
        Err(e) => {
            warnings.push(e.to_string());
            Index::default()
        }
    }
}

/// Lists plugins like `kubectl plugin list`: non-zero exit when there are warnings.
fn list(session: &Session) -> Result<i32> {
    let inventory = Inventory::scan(session, true);
    let plugin_dir = session.dirs.user_plugin_dir();
    let mut extra_warnings = Vec::new();
    let records = install_records(&plugin_dir, &mut extra_warnings);
    for (name, entry) in &records.plugins {
        let path = plugin_dir.join(format!("{PLUGIN_PREFIX}{name}"));
        if !path.exists() {
            extra_warnings.push(format!(
                "{} was installed from {} but is gone; 'app plugin remove {name}' drops the record",
                path.display(),
                entry.source
            ));
        }
    }
    // The cached indexes are read only when a plugin came from one.
    let catalog = records
        .plugins
        .values()
        .any(|e| e.index.is_some())
        .then(|| Summaries::load(&session.dirs.config_dir, &session.dirs.cache_dir).ok())
        .flatten();
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
            .map(|p| inventory.typed_name(p).len())
            .max()
            .unwrap_or(0);
        let path_width = inventory
            .plugins
            .iter()
            .map(|p| p.found.path.as_os_str().len())
            .max()
            .unwrap_or(0);
        // Where each one was found, and whether it is trusted (asked for
        // metadata and completions): a PATH entry is not, unless the config says so.
        let place = |p: &crate::inventory::Plugin| match p.found.origin {
            Origin::Path if session.config.is_trusted(&p.name) => "PATH, trusted",
            origin => origin.label(),
        };
        let place_width = inventory
            .plugins
            .iter()
            .map(|p| place(p).len())
            .max()
            .unwrap_or(0);
        for p in &inventory.plugins {
            let path = p.found.path.display().to_string();
            let installed = records
                .plugins
                .get(&p.name)
                .filter(|_| {
                    p.found.origin == Origin::UserDir
                        && p.found.path == plugin_dir.join(format!("{PLUGIN_PREFIX}{}", p.name))
                })
                .map(|entry| {
                    let upgrade = catalog
                        .as_ref()
                        .and_then(|c| from_index::available_upgrade(c, &p.name, entry))
                        .map(|v| format!(" [upgrade available: {v}]"))
                        .unwrap_or_default();
                    let from = match &entry.index {
                        Some(index) => format!("index {index}"),
                        None => entry.source.clone(),
                    };
                    format!(
                        "  [installed {} from {from}]{upgrade}",
                        entry.version.as_deref().unwrap_or("(no version)"),
                    )
                })
                .unwrap_or_default();
            let line = format!(
                "{:name_width$}  {:path_width$}  {:place_width$}  {}{installed}",
                inventory.typed_name(p),
                path,
                place(p),
                p.description().unwrap_or("")
            );
            // Descriptions and versions come from plugins, paths from file
            // names: printed as data, never as terminal codes.
            writeln!(out, "{}", printable(line.trim_end())).ok();
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
        eprintln!("warning: {}", printable(&w.to_string()));
    }
    for w in &extra_warnings {
        eprintln!("warning: {}", printable(w));
    }
    for name in session.config.aliases.keys() {
        if crate::cli::is_builtin(name) {
            eprintln!(
                "warning: alias '{name}' in {} is ignored: built-in commands always win",
                session.config.path.display()
            );
        }
    }
    Ok(
        if inventory.warnings.is_empty() && extra_warnings.is_empty() {
            0
        } else {
            code::WARNINGS
        },
    )
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
