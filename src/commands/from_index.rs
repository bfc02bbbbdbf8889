//! `app plugin install NAME|NAME@VERSION|INDEX/NAME`, `install --git`, and
//! `upgrade NAME` / `upgrade --all` for what they installed. The checks and
//! the writing are [`crate::install::install`]'s, as for a path or a URL:
//! this module only chooses what to fetch (from the cached, verified
//! indexes) and what to record.

use std::path::Path;
use std::time::SystemTime;

use crate::error::{Error, Result};
use crate::install::build::{self, GitSpec, Outcome};
use crate::install::receipts::Entry;
use crate::install::{self, helper, url, Installed, Origin, Request, Source};
use crate::plugin_index::config::IndexConfig;
use crate::plugin_index::format::Platform;
use crate::plugin_index::lookup::{Catalog, Spec};
use crate::plugin_index::summary::Summaries;
use crate::session::Session;
use app_fetch_protocol::FetchArgs;
use app_plugin::text::escape_for_terminal as printable;

/// Installs the plugin `spec` names from the cached indexes; `pin`: its
/// receipt is pinned at that version.
pub fn install_by_name(
    session: &Session,
    spec: &Spec,
    force: bool,
    pin: bool,
) -> Result<Installed> {
    let catalog = Catalog::load(&session.dirs.config_dir, &session.dirs.cache_dir)?;
    // An index whose cached copy cannot be read may be why nothing was
    // found: say so (a bad copy is replaced by 'index update').
    let (found, platform) = catalog.find(spec, SystemTime::now()).inspect_err(|_| {
        for problem in &catalog.problems {
            crate::warn::warn(printable(problem));
        }
    })?;
    let pick = Some((found.index.name.clone(), found.entry.version.clone()));
    match platform {
        Platform::Build { url: u, sha256, .. } => {
            let source = archive_source(found.index, u)?;
            let token_file = token_for(found.index, &source);
            let acquire = move |s: &Source, sha: Option<&str>| {
                helper::fetch(&FetchArgs {
                    token_file: token_file.clone(),
                    ..FetchArgs::plugin(s, sha)
                })
            };
            let request = Request {
                source,
                name: Some(found.entry.name.clone()),
                force,
                sha256: Some(sha256.clone()),
                origin: Some(Origin {
                    index: pick,
                    git: None,
                    pinned: pin,
                }),
            };
            install::install(&session.dirs.user_plugin_dir(), &request, &acquire).map_err(|e| {
                from_index(
                    e,
                    &found.index.name,
                    &found.entry.name,
                    &found.entry.version,
                )
            })
        }
        Platform::Source { source } => {
            let spec = GitSpec {
                url: source.git.clone(),
                rev: source.rev.clone(),
                path: source.path.clone(),
            };
            install_git(session, &spec, &found.entry.name, force, pick, None, pin)
                .map(|i| i.expect("nothing to compare with, so it was built"))
        }
    }
}

/// The refusal of `install WORD` when a file or plugin folder `WORD` is
/// in the current directory: both named, and how to pick each; or, when
/// the indexes do not have it, their answer and how to install the file.
pub fn ambiguous(session: &Session, spec: &Spec, text: &str) -> Error {
    let catalog = match Catalog::load(&session.dirs.config_dir, &session.dirs.cache_dir) {
        Ok(catalog) => catalog,
        Err(e) => return e,
    };
    match catalog.find(spec, SystemTime::now()) {
        Ok((found, _)) => Error::Usage(format!(
            "'{text}' is both ./{text} in the current directory and plugin '{}' of index '{}', so nothing was installed: write 'app plugin install ./{text}' (or --file {text}) for the file, 'app plugin install {}/{}' for the index's plugin",
            found.entry.name, found.index.name, found.index.name, found.entry.name
        )),
        Err(e) => Error::Fetch {
            message: format!(
                "{e}; ./{text} in the current directory is installed only when written as a path: app plugin install ./{text}"
            ),
            code: e.exit_code(),
        },
    }
}

/// Names the index in an install's refusal: the checksum came from it.
fn from_index(e: Error, index: &str, name: &str, version: &str) -> Error {
    match e {
        Error::Fetch { message, code } if code == crate::error::code::VERIFY => Error::Fetch {
            message: format!(
                "plugin '{name}' {version} of index '{index}' was refused: {}; the index's publisher must fix it",
                message.replace(" (check the URL and the --sha256 value)", "")
            ),
            code,
        },
        other => other,
    }
}

/// Where an index's `url` field points: absolute http(s) as is; relative to
/// the index's own URL (or, for a local index, its directory).
pub(crate) fn archive_source(index: &IndexConfig, text: &str) -> Result<Source> {
    let bad = |why: &str| {
        Error::Unavailable(format!(
            "index '{}' names the archive '{}', which {why}; tell the index's publisher",
            index.name,
            printable(text)
        ))
    };
    match url::kind(text) {
        url::Kind::Http => return Ok(Source::Url(text.to_string())),
        url::Kind::File(path) if index.is_local() => return Ok(Source::Path(path.into())),
        url::Kind::Path => {}
        _ => {
            return Err(bad(
                "is not an http(s) URL nor a path relative to the index",
            ))
        }
    }
    if index.is_local() {
        let dir = Path::new(&index.url).parent().unwrap_or(Path::new("/"));
        return Ok(Source::parse(text, dir)?);
    }
    url::follow(&index.url, text)
        .map(Source::Url)
        .map_err(|_| bad("cannot be resolved against the index's URL"))
}

/// The index's token file, for a download from the index's own origin only.
pub(crate) fn token_for(index: &IndexConfig, source: &Source) -> Option<std::path::PathBuf> {
    let Source::Url(u) = source else { return None };
    let same = url::origin(u).is_some() && url::origin(u) == url::origin(&index.url);
    same.then(|| index.token_file.clone()).flatten()
}

/// Builds `spec` and installs its binary as `name` (from the binary's name
/// when `None`). With `unchanged_from`, a repository still at that commit
/// is left alone: `Ok(None)`. `pinned`: its receipt is pinned.
pub fn install_git(
    session: &Session,
    spec: &GitSpec,
    name: &str,
    force: bool,
    index: Option<(String, String)>,
    unchanged_from: Option<&str>,
    pinned: bool,
) -> Result<Option<Installed>> {
    let work = session.dirs.cache_dir.join("builds");
    let built = match build::build(spec, &work, unchanged_from)? {
        Outcome::Unchanged => return Ok(None),
        Outcome::Built(b) => b,
    };
    let request = Request {
        source: Source::Path(built.exe.clone()),
        name: (!name.is_empty()).then(|| name.to_string()),
        force,
        sha256: None,
        origin: Some(Origin {
            index,
            git: Some(built.record.clone()),
            pinned,
        }),
    };
    install::install(&session.dirs.user_plugin_dir(), &request, &helper::acquire).map(Some)
}

/// What one upgrade did.
pub enum Upgraded {
    To(Box<Installed>),
    UpToDate,
}

/// Upgrades plugin `name`, recorded as `record`: the newest version of its
/// index, a new build of its repository, or (path sources) the file again.
pub fn upgrade_one(
    session: &Session,
    name: &str,
    record: &Entry,
    sha256: Option<String>,
) -> Result<Upgraded> {
    if record.pinned {
        return Err(Error::Pinned {
            name: name.to_string(),
            version: record
                .version
                .clone()
                .unwrap_or_else(|| "(no version)".into()),
        });
    }
    if let Some(index) = &record.index {
        let catalog = Catalog::load(&session.dirs.config_dir, &session.dirs.cache_dir)?;
        if !catalog.indexes.iter().any(|(c, _)| &c.name == index) {
            return Err(Error::Unavailable(format!(
                "plugin '{name}' came from index '{index}', which has been removed; add it again, or install '{name}' from another index with --force"
            )));
        }
        let Some(newest) = catalog.newest_here(index, name) else {
            return Err(Error::Unavailable(format!(
                "index '{index}' no longer lists plugin '{name}' for this machine ('app plugin index update' refreshes it)"
            )));
        };
        let current = record
            .version
            .as_deref()
            .and_then(|v| semver::Version::parse(v).ok());
        if current.is_some_and(|c| c >= newest.entry.semver()) {
            return Ok(Upgraded::UpToDate);
        }
        let spec = Spec {
            index: Some(index.clone()),
            name: name.to_string(),
            version: Some(newest.entry.version.clone()),
        };
        return install_by_name(session, &spec, true, false).map(|i| Upgraded::To(Box::new(i)));
    }
    if let Some(git) = &record.git {
        if url::has_secret(&git.url) {
            return Err(Error::Usage(format!(
                "plugin '{name}' was built from {}, whose password or token was not recorded; install it again with the whole URL: app plugin install --git <URL> --name {name} --force",
                git.url
            )));
        }
        let spec = GitSpec {
            url: git.url.clone(),
            rev: git.rev.clone(),
            path: git.path.clone(),
        };
        return Ok(
            match install_git(session, &spec, name, true, None, Some(&git.commit), false)? {
                Some(installed) => Upgraded::To(Box::new(installed)),
                None => Upgraded::UpToDate,
            },
        );
    }
    let installed = install::upgrade(
        &session.dirs.user_plugin_dir(),
        name,
        sha256,
        &session.search,
        &helper::acquire,
    )?;
    Ok(if installed.entry.sha256 == record.sha256 {
        Upgraded::UpToDate
    } else {
        Upgraded::To(Box::new(installed))
    })
}

/// `upgrade NAME@VERSION`: that version of the plugin's index (up or
/// down), pinned there; a pin moves with it.
pub fn upgrade_to(
    session: &Session,
    name: &str,
    record: &Entry,
    version: &str,
) -> Result<Installed> {
    let Some(index) = &record.index else {
        return Err(Error::Usage(format!(
            "plugin '{name}' was not installed from an index (it came from {}), so it has no versions to choose from; 'app plugin pin {name}' pins it as it is",
            printable(&record.source)
        )));
    };
    let spec = Spec {
        index: Some(index.clone()),
        name: name.to_string(),
        version: Some(version.to_string()),
    };
    install_by_name(session, &spec, true, true)
}

/// `upgrade --all`: one line per recorded plugin; the others go on when
/// one fails, and the exit code is the first failure's.
pub fn upgrade_all(session: &Session) -> Result<i32> {
    let records = install::load_receipts(&session.dirs.user_plugin_dir())?;
    if records.plugins.is_empty() {
        println!("No plugins installed with 'app plugin install'; nothing to upgrade.");
        return Ok(0);
    }
    let mut exit = 0;
    for (name, record) in &records.plugins {
        let old = record.version.as_deref().unwrap_or("(no version)");
        let is_url = record.index.is_none()
            && record.git.is_none()
            && matches!(url::kind(&record.source), url::Kind::Http);
        if record.pinned {
            println!(
                "{name} {}: pinned, skipped ('app plugin upgrade {name}@VERSION' moves the pin, 'app plugin unpin {name}' releases it)",
                printable(old)
            );
            continue;
        }
        if is_url {
            println!(
                "{name} {}: skipped, installed from a URL; upgrade it with its new checksum: app plugin upgrade {name} --sha256 <HEX>",
                printable(old)
            );
            continue;
        }
        match upgrade_one(session, name, record, None) {
            Ok(Upgraded::UpToDate) => println!("{name} {}: up to date", printable(old)),
            Ok(Upgraded::To(i)) => println!(
                "{name} {} → {}",
                printable(old),
                printable(i.entry.version.as_deref().unwrap_or("(no version)"))
            ),
            Err(e) => {
                println!("{name} {}: failed (below)", printable(old));
                eprintln!(
                    "app: upgrade of '{name}' failed: {}",
                    printable(&e.to_string())
                );
                if exit == 0 {
                    exit = e.exit_code();
                }
            }
        }
    }
    Ok(exit)
}

/// The newer version `plugin list` mentions for an index-installed plugin;
/// none from an expired index, or one older than its `--max-age`
/// (`upgrade` would refuse it).
pub fn available_upgrade(summaries: &Summaries, name: &str, record: &Entry) -> Option<String> {
    let index = record.index.as_ref()?;
    let (cfg, summary) = summaries.indexes.iter().find(|(c, _)| &c.name == index)?;
    if !summary.as_ref()?.usable(cfg, SystemTime::now()) {
        return None;
    }
    let newest = summaries.newest_here(index, name)?;
    let current = semver::Version::parse(record.version.as_deref()?).ok()?;
    (newest.semver() > current).then(|| newest.version.clone())
}
