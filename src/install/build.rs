//! Building a plugin from source: `install --git URL [--rev REV] [--path
//! DIR]` and index entries `{"source": {"git": URL, "rev": REV}}`.
//!
//! The user's own `git` clones the repository into a temporary directory
//! under the cache, and the user's own `cargo` builds it there with
//! `cargo install --locked --root <temp> --path <crate>` (the lock file the
//! author committed, no other installed crate touched). The one `app-*`
//! binary it produces is then installed like any other file (see
//! [`super::install`]); the temporary directory goes in every case.

use std::fs;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::receipts::GitRecord;
use crate::discovery::PLUGIN_PREFIX;
use crate::error::{Error, Result};
use crate::exec::OwnChild;

/// A clone may take no longer.
pub const CLONE_TIMEOUT: Duration = Duration::from_secs(600);
/// A build may take no longer.
pub const BUILD_TIMEOUT: Duration = Duration::from_secs(3600);
/// Lowers both limits, in whole seconds: for a host that wants a tighter
/// bound, and for the tests that show the limits bite.
pub const TIMEOUT_VAR: &str = "APP_BUILD_TIMEOUT";

/// `default`, or [`TIMEOUT_VAR`] when it is set and lower.
fn limit(default: Duration) -> Result<Duration> {
    let Some(value) = std::env::var_os(TIMEOUT_VAR) else {
        return Ok(default);
    };
    value
        .to_str()
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|s| (1..=86_400).contains(s))
        .map(|s| Duration::from_secs(s).min(default))
        .ok_or_else(|| {
            Error::Usage(format!(
                "{TIMEOUT_VAR}={value:?} is not a whole number of seconds from 1 to 86400; fix or unset it"
            ))
        })
}

/// What to build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitSpec {
    pub url: String,
    pub rev: Option<String>,
    pub path: Option<String>,
}

/// A finished build: the executable, in a directory removed on drop.
pub struct Built {
    pub exe: PathBuf,
    pub record: GitRecord,
    _dir: TempDir,
}

/// What [`build`] did.
pub enum Outcome {
    Built(Built),
    /// The repository is still at `unchanged_from` (nothing was built).
    Unchanged,
}

/// Clones `spec` and, unless its commit is `unchanged_from`, builds it.
/// Output of git and cargo goes to stderr.
pub fn build(spec: &GitSpec, work_root: &Path, unchanged_from: Option<&str>) -> Result<Outcome> {
    check_rev(spec.rev.as_deref())?;
    let git = tool("git", "building from source needs git, which is not on PATH; install git (Debian: apt-get install git), then try again")?;
    let cargo = tool("cargo", "building from source needs cargo, which is not on PATH; install Rust with rustup (https://rustup.rs), open a new shell so that ~/.cargo/bin is on PATH, then try again")?;
    let (clone_limit, build_limit) = (limit(CLONE_TIMEOUT)?, limit(BUILD_TIMEOUT)?);
    let dir = TempDir::new(work_root)?;
    let src = dir.0.join("src");
    let mut clone = crate::keeper::command(&git);
    clone.args(["clone", "--quiet", "--", &spec.url]).arg(&src);
    run(
        &mut clone,
        clone_limit,
        &format!("git clone {}", crate::install::url::redact(&spec.url)),
    )?;
    if let Some(rev) = &spec.rev {
        let mut checkout = crate::keeper::command(&git);
        checkout
            .arg("-C")
            .arg(&src)
            .args(["checkout", "--quiet", "--detach", rev, "--"]);
        run(&mut checkout, clone_limit, &format!("git checkout {rev}"))?;
    }
    let commit = head(&git, &src)?;
    if unchanged_from == Some(commit.as_str()) {
        return Ok(Outcome::Unchanged);
    }
    let krate = match &spec.path {
        Some(p) => inside(&src, p)?,
        None => src.clone(),
    };
    let root = dir.0.join("root");
    let mut install = crate::keeper::command(&cargo);
    install
        .args(["install", "--locked", "--root"])
        .arg(&root)
        .arg("--path")
        .arg(&krate);
    run(&mut install, build_limit, "cargo install")?;
    let exe = single_plugin(&root.join("bin"))?;
    Ok(Outcome::Built(Built {
        exe,
        record: GitRecord {
            url: spec.url.clone(),
            rev: spec.rev.clone(),
            path: spec.path.clone(),
            commit,
        },
        _dir: dir,
    }))
}

/// A revision starting with `-` would be read by git as an option
/// (`--rev=--orphan=x`); no commit, tag or branch name starts so.
fn check_rev(rev: Option<&str>) -> Result<()> {
    match rev {
        Some(rev) if rev.starts_with('-') || rev.is_empty() => Err(Error::Usage(format!(
            "--rev '{}' is not a commit, tag or branch (none is empty or starts with '-'); give one of the repository's",
            rev.escape_debug()
        ))),
        _ => Ok(()),
    }
}

/// The crate directory `path` inside the clone `src`, with its symlinks
/// resolved: refused when it leaves the clone (by `..`, or by a committed
/// symlink pointing outside) or is not a directory.
fn inside(src: &Path, path: &str) -> Result<PathBuf> {
    let outside = |why: String| {
        Err(Error::Usage(format!(
            "--path {} {why}; give the crate's directory inside the repository",
            path.escape_debug()
        )))
    };
    if Path::new(path)
        .components()
        .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return outside("must stay inside the repository (it has '..')".into());
    }
    let root = fs::canonicalize(src).map_err(|e| Error::io("cannot resolve the clone", e))?;
    let resolved = match fs::canonicalize(src.join(path.trim_start_matches('/'))) {
        Ok(resolved) => resolved,
        Err(_) => return outside("does not exist in the repository".into()),
    };
    if !resolved.starts_with(&root) {
        return outside(format!(
            "leaves the repository through a symlink (it resolves to {})",
            resolved.display()
        ));
    }
    if !resolved.is_dir() {
        return outside("is not a directory in the repository".into());
    }
    Ok(resolved)
}

fn tool(name: &str, missing: &str) -> Result<PathBuf> {
    crate::discovery::on_path(name).ok_or_else(|| Error::Build(missing.to_string()))
}

/// Runs `cmd` (its output to our stderr), killing it with all it started
/// after `timeout` (its keeper does, see [`crate::keeper`]).
fn run(cmd: &mut Command, timeout: Duration, what: &str) -> Result<()> {
    // No terminal prompt for a password: it would hang a scripted upgrade.
    // Their output goes to our stderr: stdout is for app's own report.
    let stderr = std::io::stderr()
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| Error::io("cannot duplicate stderr", e))?;
    cmd.env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::from(stderr));
    let child =
        OwnChild::spawn(cmd, true).map_err(|e| Error::io(format!("cannot run {what}"), e))?;
    if !child.exited_within(timeout) {
        let _ = child.finish();
        return Err(Error::Build(format!(
            "{what} took longer than {timeout:?} and was stopped"
        )));
    }
    let status = child
        .wait()
        .map_err(|e| Error::io(format!("cannot wait for {what}"), e))?;
    if status.success() {
        Ok(())
    } else {
        Err(Error::Build(format!(
            "{what} failed ({status}); its output is above. Nothing was installed"
        )))
    }
}

fn head(git: &Path, src: &Path) -> Result<String> {
    let out = crate::keeper::command(git)
        .arg("-C")
        .arg(src)
        .args(["rev-parse", "HEAD"])
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| Error::io("cannot run git rev-parse", e))?;
    let commit = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if out.status.success() && !commit.is_empty() {
        Ok(commit)
    } else {
        Err(Error::Build(
            "git rev-parse HEAD failed in the clone".into(),
        ))
    }
}

/// The one `app-*` executable cargo installed into `bin`.
fn single_plugin(bin: &Path) -> Result<PathBuf> {
    let mut found: Vec<PathBuf> = fs::read_dir(bin)
        .map_err(|e| Error::io(format!("cannot read {}", bin.display()), e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(PLUGIN_PREFIX))
        })
        .collect();
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(Error::Build(
            "the crate built no app-<name> binary; is it an app plugin? (--path DIR picks a crate inside the repository)".into(),
        )),
        _ => Err(Error::Build(format!(
            "the crate built several app-* binaries ({}); an install takes one",
            found.iter().filter_map(|p| p.file_name()?.to_str()).collect::<Vec<_>>().join(", ")
        ))),
    }
}

/// A directory under the cache, removed with everything in it on drop. It
/// holds an exclusive lock on its `.lock` file while it lives, so the next
/// build tells a directory left by a killed `app` (lock free) from one in
/// use, and removes it.
struct TempDir(PathBuf, #[allow(dead_code)] fs::File);

/// The lock file in each build directory.
const LOCK: &str = ".lock";

impl TempDir {
    fn new(root: &Path) -> Result<TempDir> {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        remove_stale(root);
        let dir = root.join(format!(
            "build-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let cannot = |e| Error::io(format!("cannot create {}", dir.display()), e);
        fs::create_dir_all(&dir).map_err(cannot)?;
        let lock = fs::File::create(dir.join(LOCK)).map_err(cannot)?;
        if !try_lock(&lock) {
            return Err(cannot(std::io::Error::last_os_error()));
        }
        Ok(TempDir(dir, lock))
    }
}

/// An exclusive lock on `file`, without waiting; released when every
/// descriptor of it is closed (the process that held it died, too).
fn try_lock(file: &fs::File) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a descriptor this File owns.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// Removes the build directories under `root` that no running build holds:
/// those a killed `app` left behind.
fn remove_stale(root: &Path) {
    let Ok(entries) = fs::read_dir(root) else {
        return;
    };
    for entry in entries.filter_map(|e| e.ok()) {
        let dir = entry.path();
        let ours = entry
            .file_name()
            .to_str()
            .is_some_and(|n| n.starts_with("build-"));
        if !ours {
            continue;
        }
        let stale = match fs::File::open(dir.join(LOCK)) {
            Ok(lock) => try_lock(&lock),
            // No lock file: being made this instant, or from a run killed
            // before it made one; the latter is old.
            Err(_) => entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > Duration::from_secs(60))),
        };
        if stale {
            let _ = fs::remove_dir_all(&dir);
        }
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}
