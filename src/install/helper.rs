//! The fetch helper, `app_fetch`: a second, small binary shipped beside
//! `app` that does the work needing HTTP, TLS and archive code, so that the
//! `app` binary does not link any of it. Every plugin call starts `app`, and
//! linking ureq, rustls, tar and flate2 into it made that start measurably
//! slower (see docs/benchmarks.md, "Plugin install cost on dispatch").
//!
//! The helper's name does not start with `app-`, so it is never taken for a
//! plugin. Protocol (private between `app` and the `app_fetch` of the same
//! build): `app_fetch SOURCE [--sha256 HEX]` runs [`super::acquire`] and
//! writes to stdout one JSON line, either
//! `{"ok":{"file_name":…,"archive_sha256":…,"len":N}}` followed by exactly N
//! bytes of the executable, or `{"error":{"code":C,"message":…}}`. Its
//! stderr is the terminal's (download progress), and it writes no file.

#[cfg(feature = "fetch")]
use std::ffi::OsString;
use std::io::Read;
#[cfg(feature = "fetch")]
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

use super::{Artifact, Source};
use crate::error::{code, Error, Result};

/// File name of the helper, beside `app`.
pub const HELPER: &str = "app_fetch";

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Header {
    Ok {
        file_name: Option<String>,
        archive_sha256: Option<String>,
        len: u64,
    },
    Error {
        code: i32,
        message: String,
    },
}

/// [`super::acquire`], run in `app_fetch` beside the running `app`.
pub fn acquire(source: &Source, sha256: Option<&str>) -> Result<Artifact> {
    let helper = locate()?;
    let mut cmd = Command::new(&helper);
    cmd.arg(source.to_arg());
    if let Some(sum) = sha256 {
        cmd.args(["--sha256", sum]);
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    // It holds app's stderr: it must not outlive app (a killed `app … | cat`
    // would otherwise wait for it). It starts nothing itself, so it stays in
    // app's process group, where the terminal's Ctrl-C reaches it.
    let mut child = crate::exec::OwnChild::spawn(&mut cmd, false)
        .map_err(|e| Error::io(format!("cannot run {}", helper.display()), e))?;
    let mut out = Vec::new();
    let limit = super::fetch::max_bytes() + 64 * 1024;
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
    let newline = out
        .iter()
        .position(|b| *b == b'\n')
        .ok_or_else(|| broken(format!("it gave no answer ({status})")))?;
    let header: Header = serde_json::from_slice(&out[..newline])
        .map_err(|e| broken(format!("unreadable answer: {e}")))?;
    match header {
        Header::Error { code, message } => Err(Error::Fetch { message, code }),
        Header::Ok {
            file_name,
            archive_sha256,
            len,
        } => {
            let bytes = out.split_off(newline + 1);
            if bytes.len() as u64 != len || !status.success() {
                return Err(broken(format!(
                    "it sent {} of {len} bytes ({status})",
                    bytes.len()
                )));
            }
            Ok(Artifact {
                file_name,
                bytes,
                archive_sha256,
            })
        }
    }
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
        .or_else(|| which::which(HELPER).ok())
        .ok_or_else(|| Error::Fetch {
            message: format!(
                "{HELPER} (which downloads and unpacks plugins for app) is not installed in app's libexec directory, beside app, nor on PATH; reinstall app with ./install.sh, which installs both"
            ),
            code: code::FAILURE,
        })
}

#[cfg(feature = "fetch")]
/// `app_fetch`'s whole job; returns its exit code.
pub fn serve(args: Vec<OsString>) -> i32 {
    let (source, sha256) = match parse_args(&args) {
        Some(parsed) => parsed,
        None => {
            eprintln!("usage: {HELPER} PATH|URL [--sha256 HEX]  (used by `app plugin install`)");
            return code::USAGE;
        }
    };
    let (header, bytes, exit) = match super::acquire(&source, sha256.as_deref()) {
        Ok(artifact) => (
            Header::Ok {
                file_name: artifact.file_name,
                archive_sha256: artifact.archive_sha256,
                len: artifact.bytes.len() as u64,
            },
            artifact.bytes,
            0,
        ),
        Err(e) => {
            let exit = e.exit_code();
            (
                Header::Error {
                    code: exit,
                    message: e.to_string(),
                },
                Vec::new(),
                exit,
            )
        }
    };
    let mut out = std::io::stdout().lock();
    let written = serde_json::to_writer(&mut out, &header)
        .map_err(std::io::Error::other)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.write_all(&bytes))
        .and_then(|()| out.flush());
    match written {
        Ok(()) => exit,
        Err(_) => code::FAILURE,
    }
}

#[cfg(feature = "fetch")]
fn parse_args(args: &[OsString]) -> Option<(Source, Option<String>)> {
    let args: Vec<&str> = args.iter().map(|a| a.to_str()).collect::<Option<_>>()?;
    let (source, sha256) = match args.as_slice() {
        [source] => (*source, None),
        [source, "--sha256", sum] => (*source, Some(sum.to_string())),
        _ => return None,
    };
    // `app` passes absolute paths; anything else is resolved against "/".
    Some((Source::parse(source, Path::new("/")).ok()?, sha256))
}
