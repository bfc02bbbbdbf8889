//! `app plugin path`, `install`, `remove`, `upgrade` and `new`; `list` is
//! [`super::list`], the index commands [`super::index`] and
//! [`super::search`].

use std::ffi::OsString;
use std::path::PathBuf;

use super::from_index;
use crate::cli::{Lang, PluginCmd};
use crate::discovery::PLUGIN_PREFIX;
use crate::error::{Error, Result};
use crate::install::build::GitSpec;
use crate::install::{self, Installed, Request, Source};
use crate::plugin_index::lookup::Spec;
use crate::resolve::{resolve, Resolution};
use crate::scaffold::{ScaffoldError, Skeleton};
use crate::session::Session;
use app_plugin::text::escape_for_terminal as printable;

pub fn run(session: &Session, cmd: PluginCmd) -> Result<i32> {
    match cmd {
        PluginCmd::List => super::list::list(session),
        PluginCmd::Path { name } => path(session, &name),
        PluginCmd::Install {
            source,
            name,
            force,
            sha256,
            git,
            rev,
            path,
            file,
        } => {
            let installed = match (source, git, file) {
                (_, Some(url), _) => install_git(session, GitSpec { url, rev, path }, name, force)?,
                (_, None, Some(file)) => install_path(session, &file, name, force, sha256)?,
                (Some(source), None, None) => {
                    install_source(session, &source, name, force, sha256)?
                }
                (None, None, None) => {
                    return Err(Error::Usage(
                        "plugin install needs NAME, PATH, URL or --git URL".into(),
                    ))
                }
            };
            report_installed(session, &installed, "installed");
            Ok(0)
        }
        PluginCmd::Remove { name } => remove(session, &name),
        PluginCmd::Upgrade { all: true, .. } => from_index::upgrade_all(session),
        PluginCmd::Upgrade { name, sha256, .. } => {
            upgrade(session, &name.unwrap_or_default(), sha256)
        }
        PluginCmd::Apply {
            file,
            dry_run,
            prune,
            locked,
            update,
            output,
        } => super::apply::apply(
            session,
            &super::apply::Args {
                file,
                dry_run,
                prune,
                locked,
                update,
                output,
            },
        ),
        PluginCmd::Pin { name } => super::pins::pin(session, &name, true),
        PluginCmd::Unpin { name } => super::pins::pin(session, &name, false),
        PluginCmd::Outdated { output, refresh } => {
            super::outdated::outdated(session, output, refresh)
        }
        PluginCmd::Index(cmd) => super::index::run(session, cmd),
        PluginCmd::Search { word, output } => {
            super::search::search(session, word.as_deref(), output)
        }
        PluginCmd::Info { name } => super::search::info(session, &name),
        PluginCmd::New { name, lang, dir } => new(session, &name, lang, dir),
    }
}

/// `install --git URL [--rev REV] [--path DIR]`.
fn install_git(
    session: &Session,
    spec: GitSpec,
    name: Option<String>,
    force: bool,
) -> Result<Installed> {
    let built = from_index::install_git(
        session,
        &spec,
        name.as_deref().unwrap_or(""),
        force,
        None,
        None,
        false,
    )?;
    Ok(built.expect("nothing to compare with, so it was built"))
}

/// `remove NAME`.
fn remove(session: &Session, name: &str) -> Result<i32> {
    let removed = install::remove(&session.dirs.user_plugin_dir(), name, &session.search)?;
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

/// `upgrade NAME [--sha256 HEX]`, or `upgrade NAME@VERSION` (pinned there).
fn upgrade(session: &Session, text: &str, sha256: Option<String>) -> Result<i32> {
    let (name, version) = match text.split_once('@') {
        Some((name, version)) => (name, Some(version)),
        None => (text, None),
    };
    let records = install::load_receipts(&session.dirs.user_plugin_dir())?;
    if let (Some(version), Some(record)) = (version, records.plugins.get(name)) {
        if sha256.is_some() {
            return Err(Error::Usage(
                "--sha256 does not apply to NAME@VERSION: the index gives the checksum".into(),
            ));
        }
        let installed = from_index::upgrade_to(session, name, record, version)?;
        report_installed(session, &installed, "upgraded");
        return Ok(0);
    }
    let Some(record) = records.plugins.get(name) else {
        // Refused as before, naming where the plugin is.
        install::upgrade(
            &session.dirs.user_plugin_dir(),
            name,
            sha256,
            &session.search,
            &install::helper::acquire,
        )?;
        return Ok(0);
    };
    match from_index::upgrade_one(session, name, record, sha256)? {
        from_index::Upgraded::To(installed) => report_installed(session, &installed, "upgraded"),
        from_index::Upgraded::UpToDate => println!(
            "plugin '{name}' {} is up to date",
            printable(record.version.as_deref().unwrap_or("(no version)"))
        ),
    }
    Ok(0)
}

/// `install NAME|PATH|URL`: a word of the shape `[INDEX/]NAME[@VERSION]`
/// is looked up in the indexes, whatever files are here (a file of that
/// name here makes it ambiguous: refused, saying how to pick); a URL is
/// downloaded; anything else is a path.
fn install_source(
    session: &Session,
    text: &str,
    name: Option<String>,
    force: bool,
    sha256: Option<String>,
) -> Result<Installed> {
    let cwd = current_dir()?;
    let by_name = Spec::parse(text).filter(|_| crate::install::url::scheme(text).is_none());
    let Some(spec) = by_name else {
        refuse_reserved_name(text, &cwd)?;
        let source = match Source::parse(text, &cwd)? {
            Source::Path(path) => return install_path(session, &path, name, force, sha256),
            url => url,
        };
        return install_request(session, source, name, force, sha256);
    };
    let text = printable(text);
    if name.is_some() || sha256.is_some() {
        return Err(Error::Usage(format!(
            "--name and --sha256 do not apply to a plugin installed by name from an index ('{text}'); to install a file of that name, write ./{text} or --file {text}"
        )));
    }
    if crate::install::local::is_candidate(&cwd.join(spec_path(&spec))) {
        return Err(from_index::ambiguous(session, &spec, &text));
    }
    let pin = spec.version.is_some();
    from_index::install_by_name(session, &spec, force, pin)
}

/// A bare word that is no file here and is a plugin name but for being a
/// built-in's or under a shipped command (`event-repeater-run`) says so,
/// instead of "no such file": no index may offer it (see
/// [`crate::shipped`]).
fn refuse_reserved_name(text: &str, cwd: &std::path::Path) -> Result<()> {
    use crate::install::name::{validate, NameError};
    if text.contains('/') || cwd.join(text).symlink_metadata().is_ok() {
        return Ok(());
    }
    match validate(text) {
        Err(e @ (NameError::UnderShipped(_) | NameError::Builtin(_))) => {
            Err(Error::BadPluginName {
                name: text.to_string(),
                reason: e.to_string(),
                retry: "no index may offer it, and no file of that name is here",
            })
        }
        _ => Ok(()),
    }
}

fn current_dir() -> Result<std::path::PathBuf> {
    std::env::current_dir().map_err(|e| Error::io("cannot read the current directory", e))
}

/// The path a `[INDEX/]NAME[@VERSION]` word would name as a file.
fn spec_path(spec: &Spec) -> String {
    let mut text = match &spec.index {
        Some(index) => format!("{index}/{}", spec.name),
        None => spec.name.clone(),
    };
    if let Some(version) = &spec.version {
        text = format!("{text}@{version}");
    }
    text
}

/// `install PATH` or `--file PATH`: a file, or the plugin in a folder.
fn install_path(
    session: &Session,
    path: &std::path::Path,
    name: Option<String>,
    force: bool,
    sha256: Option<String>,
) -> Result<Installed> {
    let path = current_dir()?.join(path);
    let path = if path.is_dir() {
        crate::install::local::plugin_in_folder(&path)?
    } else {
        path
    };
    install_request(session, Source::Path(path), name, force, sha256)
}

fn install_request(
    session: &Session,
    source: Source,
    name: Option<String>,
    force: bool,
    sha256: Option<String>,
) -> Result<Installed> {
    let request = Request {
        source,
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
    if installed.entry.pinned {
        println!(
            "{}",
            printable(&format!(
                "pinned at{version}: 'app plugin upgrade --all' leaves it; 'app plugin upgrade {0}@VERSION' moves the pin, 'app plugin unpin {0}' releases it",
                installed.name
            ))
        );
    }
    // The user plugin directory is not first on the search path: say so when
    // another file wins, or `app <name>` would surprise.
    let file = format!("{PLUGIN_PREFIX}{}", installed.name);
    if let Some(first) = session.search.find_executable(&file) {
        if first.path != installed.path {
            crate::warn::warn(format_args!(
                "{} comes earlier on the search path, so 'app {}' runs that one, not the plugin just {verb}",
                first.path.display(),
                installed.name
            ));
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
            retry: "choose another NAME: app plugin new NAME",
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
