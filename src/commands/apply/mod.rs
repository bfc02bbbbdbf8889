//! `app plugin apply -f plugins.json [--dry-run] [--prune] [--locked]
//! [--update] [-o json]`: brings this machine to the declared set of
//! plugins (docs/plugin-management.md, "A declared set"). Reads the file
//! and its lock, checks (and adds) the indexes it declares ([`indexes`]),
//! resolves each plugin to an exact build ([`resolve`]), plans the steps
//! ([`crate::plugin_set::plan`]), downloads and verifies every archive
//! before anything is installed, then installs, pins and removes one
//! plugin at a time (each atomically, as `install` does), and writes the
//! lock. What it says is [`report`].

mod indexes;
mod report;
mod resolve;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::cli::Output;
use crate::error::{Error, Result};
use crate::install::{self, helper, Artifact, Origin, Request, Source};
use crate::plugin_index::config::Indexes;
use crate::plugin_index::lookup::Catalog;
use crate::plugin_set::file::PluginSet;
use crate::plugin_set::lock::{self, LockFile, Locked};
use crate::plugin_set::plan::{self, Action, Step};
use crate::session::Session;
use app_fetch_protocol::FetchArgs;
use app_plugin::text::escape_for_terminal as printable;
use report::Done;

/// `plugin apply`'s flags.
pub struct Args {
    pub file: PathBuf,
    pub dry_run: bool,
    pub prune: bool,
    pub locked: bool,
    pub update: bool,
    pub output: Output,
}

pub fn apply(session: &Session, args: &Args) -> Result<i32> {
    let cwd =
        std::env::current_dir().map_err(|e| Error::io("cannot read the current directory", e))?;
    let file = cwd.join(&args.file);
    let base = file.parent().unwrap_or(Path::new("/")).to_path_buf();
    let set = PluginSet::load(&file).map_err(Error::Usage)?;
    let wanted = set.wanted().map_err(Error::Usage)?;
    let lock_path = lock::path_for(&file);
    let old_lock = LockFile::load(&lock_path).map_err(Error::Usage)?;
    let json = args.output == Output::Json;
    // Under -o json, only the document is on stdout.
    let mut progress: Box<dyn Write> = if json {
        Box::new(std::io::stderr())
    } else {
        Box::new(std::io::stdout())
    };
    let missing = indexes::missing(session, &set, &base)?;
    let targets = if args.locked {
        let lock = old_lock.as_ref().ok_or_else(|| {
            Error::LockMismatch(format!(
                "--locked needs {}, which does not exist; run 'app plugin apply -f {}' once to write it",
                lock_path.display(),
                args.file.display()
            ))
        })?;
        resolve::from_lock(&wanted, lock, &lock_path.display().to_string())?
    } else {
        let fetched = indexes::add(session, &missing, args.dry_run, &mut progress)?;
        let mut catalog = Catalog::load(&session.dirs.config_dir, &session.dirs.cache_dir)?;
        catalog.indexes.extend(fetched);
        resolve::from_catalog(&wanted, &catalog, old_lock.as_ref(), args.update)?
    };
    let plugin_dir = session.dirs.user_plugin_dir();
    let receipts = install::load_receipts(&plugin_dir)?;
    let steps = plan::plan(&targets, &receipts, args.prune);
    let left: Vec<String> = receipts
        .plugins
        .keys()
        .filter(|n| !args.prune && !targets.contains_key(*n))
        .cloned()
        .collect();
    let shown = (file.display().to_string(), lock_path.display().to_string());
    if args.dry_run {
        let done: Vec<Done> = steps
            .iter()
            .map(|step| Done { step, error: None })
            .collect();
        return finish(&shown, true, &done, &left, json, None);
    }
    // Every archive is downloaded and verified before anything is written:
    // a tampered one stops the whole apply with nothing changed.
    let mut configs = Indexes::load(&session.dirs.config_dir)
        .map_err(Error::Usage)?
        .indexes;
    configs.extend(missing.iter().cloned());
    let artifacts = fetch_all(&steps, &configs)?;
    if args.locked {
        indexes::add(session, &missing, false, &mut progress)?;
    }
    let mut done = Vec::new();
    for step in &steps {
        let error = carry_out(
            session,
            step,
            &artifacts,
            receipts.plugins.contains_key(&step.name),
        )
        .err();
        if !json {
            writeln!(progress, "{}", report::line(step)).ok();
        }
        if let Some(e) = &error {
            eprintln!(
                "app: {} of '{}' failed: {}",
                step.action.word(),
                step.name,
                printable(&e.to_string())
            );
        }
        done.push((step, error));
    }
    let first_failure = done
        .iter()
        .find_map(|(_, e)| e.as_ref().map(Error::exit_code));
    let new_lock = LockFile {
        version: 1,
        plugins: targets
            .iter()
            .map(|(n, (l, _))| (n.clone(), l.clone()))
            .collect(),
    };
    let wrote = (!args.locked && first_failure.is_none() && old_lock.as_ref() != Some(&new_lock))
        .then(|| new_lock.save(&lock_path))
        .transpose()
        .map_err(|e| Error::io(format!("cannot write {}", lock_path.display()), e))?
        .is_some();
    let done: Vec<Done> = done
        .into_iter()
        .map(|(step, e)| Done {
            step,
            error: e.map(|e| printable(&e.to_string()).into_owned()),
        })
        .collect();
    finish(&shown, false, &done, &left, json, Some(wrote))?;
    Ok(first_failure.unwrap_or(0))
}

/// Downloads and verifies the archive of every step that installs one.
fn fetch_all(
    steps: &[Step],
    configs: &[crate::plugin_index::config::IndexConfig],
) -> Result<BTreeMap<String, Artifact>> {
    let mut artifacts = BTreeMap::new();
    for step in steps.iter().filter(|s| s.action.installs()) {
        let Some(target) = &step.to else { continue };
        let source = source_of(target)?;
        let token_file = configs
            .iter()
            .find(|c| c.name == target.index)
            .and_then(|c| crate::commands::from_index::token_for(c, &source));
        let artifact = helper::fetch(&FetchArgs {
            token_file,
            ..FetchArgs::plugin(&source, Some(&target.sha256))
        })
        .map_err(|e| Error::Fetch {
            message: format!(
                "plugin '{}' {} of index '{}' was refused, so nothing was changed: {e}",
                step.name, target.version, target.index
            ),
            code: e.exit_code(),
        })?;
        artifacts.insert(step.name.clone(), artifact);
    }
    Ok(artifacts)
}

fn source_of(target: &Locked) -> Result<Source> {
    Ok(Source::parse(&target.url, Path::new("/"))?)
}

/// One step: install its verified archive, set its pin, or remove it.
fn carry_out(
    session: &Session,
    step: &Step,
    artifacts: &BTreeMap<String, Artifact>,
    has_receipt: bool,
) -> Result<()> {
    let plugin_dir = session.dirs.user_plugin_dir();
    match (step.action, &step.to) {
        (Action::Remove, _) => {
            install::remove(&plugin_dir, &step.name, &session.search).map(|_| ())
        }
        (Action::Keep, _) if step.pin_changes => {
            install::set_pin(&plugin_dir, &step.name, step.pin, &session.search).map(|_| ())
        }
        (Action::Keep, _) | (_, None) => Ok(()),
        (_, Some(target)) => {
            let artifact = artifacts
                .get(&step.name)
                .cloned()
                .ok_or_else(|| Error::Usage(format!("plugin '{}' was not fetched", step.name)))?;
            let request = Request {
                source: source_of(target)?,
                name: Some(step.name.clone()),
                // A file put there by hand, without a receipt, stays refused.
                force: has_receipt,
                sha256: Some(target.sha256.clone()),
                origin: Some(Origin {
                    index: Some((target.index.clone(), target.version.clone())),
                    git: None,
                    pinned: step.pin,
                }),
            };
            install::install(&plugin_dir, &request, &move |_, _| Ok(artifact.clone())).map(|_| ())
        }
    }
}

/// The plan (or what was done) and the last line, or the JSON document.
fn finish(
    (file, lock): &(String, String),
    dry_run: bool,
    done: &[Done],
    left: &[String],
    json: bool,
    wrote_lock: Option<bool>,
) -> Result<i32> {
    if json {
        let doc = report::json(file, lock, dry_run, done);
        let mut out = std::io::stdout().lock();
        serde_json::to_writer_pretty(&mut out, &doc)
            .map_err(std::io::Error::other)
            .and_then(|()| writeln!(out))
            .map_err(|e| Error::io("cannot write the report", e))?;
        return Ok(0);
    }
    if dry_run {
        for d in done {
            println!("{}", report::line(d.step));
        }
    }
    for name in left {
        println!("{name}: not in the plugin set, left installed (--prune removes it)");
    }
    let changing = done.iter().filter(|d| report::changes(d.step)).count();
    let failed = done.iter().filter(|d| d.error.is_some()).count();
    let lock_note = match wrote_lock {
        Some(true) => format!("; wrote {lock}"),
        Some(false) => format!("; {lock} unchanged"),
        None => String::new(),
    };
    let last = match (dry_run, changing, failed) {
        (true, 0, _) => format!(
            "dry run: nothing to do, the {} plugins of {file} are installed as declared",
            done.len()
        ),
        (true, n, _) => format!(
            "dry run: nothing was changed ({n} of {} plugins would change)",
            done.len()
        ),
        (false, 0, 0) => format!(
            "nothing to do: the {} plugins of {file} are installed as declared{lock_note}",
            done.len()
        ),
        (false, n, 0) => format!(
            "applied {file}: {n} changed, {} as they were{lock_note}",
            done.len() - n
        ),
        (false, n, f) => format!(
            "applied {file} in part: {} changed, {f} failed (above); the lock was not written",
            n - f
        ),
    };
    println!("{last}");
    Ok(0)
}
