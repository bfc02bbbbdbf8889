//! `app`'s side of the fetch helper, `app_fetch`: a second, small binary
//! shipped beside `app` (the `app-fetch` crate, fetch/) that does step 2 of
//! an install, the work needing HTTP, TLS and archive code, so that the
//! `app` binary does not link any of it. Every plugin call starts `app`, and
//! linking ureq, rustls, tar and flate2 into it made that start measurably
//! slower (see docs/benchmarks.md, "Plugin install cost on dispatch").
//!
//! What the two say to each other is in the crate both use,
//! [`app_fetch_protocol`].

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use app_fetch_protocol::{self as protocol, Artifact, FetchArgs, Source, HELPER};

use crate::error::{code, Error, Result};

/// Step 2 of an install, run in `app_fetch` beside the running `app`.
pub fn acquire(source: &Source, sha256: Option<&str>) -> Result<Artifact> {
    fetch(&FetchArgs::plugin(source, sha256))
}

/// A token file its group or others can read: said once per command (the
/// SDK remembers), here where every fetch with a token passes; app_fetch
/// reads it (and says what is wrong with it) in a process of its own.
pub fn warn_if_shared(file: &Path) {
    if let Ok((_, Some(warning))) = app_plugin::file::read_secret(file, 64 * 1024) {
        crate::warn::warn(format_args!("token file {warning}"));
    }
}

/// Runs `app_fetch` for `args` and reads its answer.
pub fn fetch(args: &FetchArgs) -> Result<Artifact> {
    if let Some(file) = &args.token_file {
        warn_if_shared(file);
    }
    let helper = locate()?;
    let mut cmd = crate::keeper::command(&helper);
    cmd.args(protocol::args(args));
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    // It holds app's stderr: it must not outlive app (a killed `app … | cat`
    // would otherwise wait for it). It starts nothing itself, so it stays in
    // app's process group, where the terminal's Ctrl-C reaches it.
    let mut child = crate::exec::OwnChild::spawn(&mut cmd, false)
        .map_err(|e| Error::io(format!("cannot run {}", helper.display()), e))?;
    let mut out = Vec::new();
    let limit = args.raw.unwrap_or_else(protocol::max_bytes) + 64 * 1024;
    let read = child
        .child()
        .stdout
        .take()
        .map(|s| s.take(limit).read_to_end(&mut out));
    let status = child
        .wait()
        .map_err(|e| Error::io(format!("cannot wait for {}", helper.display()), e))?;
    let broken = |why: String| Error::Fetch {
        message: format!("{} failed: {why}", helper.display()),
        code: code::FAILURE,
    };
    if let Some(Err(e)) = read {
        return Err(broken(e.to_string()));
    }
    match protocol::read_answer(out) {
        Err(why) => Err(broken(format!("{why} ({status})"))),
        // A whole answer, then a crash: not to be trusted.
        Ok(Ok(_)) if !status.success() => Err(broken(format!(
            "it sent its answer, then ended with {status}"
        ))),
        Ok(Err(failed)) => Err(Error::Fetch {
            message: failed.message,
            code: failed.code,
        }),
        Ok(Ok(artifact)) => Ok(artifact),
    }
}

/// `plugin index init|publish`: `app_fetch` does it on the terminal's
/// stdin, stdout and stderr (the secret key's password is asked there),
/// and its exit code is `app`'s.
pub fn publish(request: &protocol::publish::Request) -> Result<i32> {
    let helper = locate()?;
    let mut cmd = crate::keeper::command(&helper);
    cmd.args(protocol::publish::args(request));
    let child = crate::exec::OwnChild::spawn(&mut cmd, false)
        .map_err(|e| Error::io(format!("cannot run {}", helper.display()), e))?;
    let status = child
        .wait()
        .map_err(|e| Error::io(format!("cannot wait for {}", helper.display()), e))?;
    Ok(status.code().unwrap_or(code::FAILURE))
}

/// Where the helper is: in the shipped plugin directory (see
/// [`crate::discovery::shipped_dir`]), else beside the running `app`, else
/// on `PATH`.
fn locate() -> Result<PathBuf> {
    let exe = std::env::current_exe().ok();
    let shipped = exe
        .as_deref()
        .and_then(crate::discovery::shipped_dir)
        .map(|d| d.join(HELPER));
    let beside = exe
        .as_deref()
        .and_then(Path::parent)
        .map(|d| d.join(HELPER));
    [shipped, beside]
        .into_iter()
        .flatten()
        .find(|p| p.is_file())
        .or_else(|| crate::discovery::on_path(HELPER))
        .ok_or_else(|| Error::Fetch {
            message: format!(
                "{HELPER} (which downloads and unpacks plugins for app) is not installed in app's libexec directory, beside app, nor on PATH; reinstall app with ./install.sh, which installs both"
            ),
            code: code::FAILURE,
        })
}
