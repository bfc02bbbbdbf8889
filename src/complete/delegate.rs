//! Asking a plugin for its own completions, only when it opted in:
//! - its trusted metadata says `"completion": true`: `app-<name> __complete <args…>`;
//! - or an executable `app_complete-<name>` is on the search path (kubectl's
//!   convention, for plugins that cannot change): `app_complete-<name> <args…>`.
//!
//! Anything else is never run: TAB must not start an unknown program. A
//! delegate gets the plugin context in its environment (as when it runs),
//! no stdin, no terminal for its errors, and [`TIMEOUT`] to answer; then it
//! and anything it started are killed.

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::{parse, Completion};
use crate::context::vars;
use crate::discovery::COMPLETE_PREFIX;
use crate::resolve::Resolved;
use crate::session::Session;

pub use app_plugin::complete::COMPLETE_ARG;
/// How long a delegate may take before TAB gives up on it.
pub const TIMEOUT: Duration = Duration::from_secs(1);
/// More output than any sensible completion list; the rest is ignored.
const MAX_OUTPUT: u64 = 1024 * 1024;

/// Who answers for a plugin's arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delegate {
    /// The plugin itself, with `__complete` (its metadata opted in).
    Plugin(PathBuf),
    /// A separate `app_complete-<name>` executable.
    Helper(PathBuf),
}

/// The delegate for `resolved`, if it opted in.
pub fn find(session: &Session, resolved: &Resolved) -> Option<Delegate> {
    let opted_in = session
        .metadata_for(&resolved.name, &resolved.found)
        .is_some_and(|m| m.completion);
    if opted_in {
        return Some(Delegate::Plugin(resolved.found.path.clone()));
    }
    session
        .search
        .find_executable(&format!("{COMPLETE_PREFIX}{}", resolved.name))
        .map(|found| Delegate::Helper(found.path))
}

/// Completes `args` (the plugin's arguments, the last being typed) for `resolved`.
/// Without a delegate, the shell completes file names.
pub fn complete(session: &Session, resolved: &Resolved, args: &[String]) -> Completion {
    let Some(delegate) = find(session, resolved) else {
        return Completion::files();
    };
    let (program, mut argv) = match delegate {
        Delegate::Plugin(path) => (path, vec![OsString::from(COMPLETE_ARG)]),
        Delegate::Helper(path) => (path, Vec::new()),
    };
    argv.extend(args.iter().map(OsString::from));
    let plugin_args: Vec<OsString> = args.iter().map(OsString::from).collect();
    let mut env = session.plugin_context(resolved, &plugin_args).to_env();
    env.push((vars::CONTEXT, "env".into()));
    match run(&program, &argv, &env, TIMEOUT) {
        Some(text) => parse(&text),
        None => Completion::nothing(),
    }
}

/// Runs `program` and returns its stdout, or `None` when it failed, exited
/// non-zero or took longer than `timeout`.
pub fn run(
    program: &Path,
    args: &[OsString],
    env: &[(&'static str, OsString)],
    timeout: Duration,
) -> Option<String> {
    let mut cmd = crate::keeper::command(program);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    // Under a keeper that kills it and all it started once it is done, on
    // timeout, or when a shell kills `app` mid-TAB: nothing stays behind.
    let mut child = crate::exec::OwnChild::spawn(&mut cmd, true).ok()?;
    let mut stdout = child.child().stdout.take()?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stdout.by_ref().take(MAX_OUTPUT).read_to_end(&mut buf);
        let _ = tx.send(buf);
    });
    let deadline = Instant::now() + timeout;
    let output = rx.recv_timeout(timeout).ok();
    // stdout closed: the delegate is done, or gets the rest of its time.
    let exited =
        output.is_some() && child.exited_within(deadline.saturating_duration_since(Instant::now()));
    let status = child.finish().ok();
    let ok = exited && status.is_some_and(|s| s.success());
    String::from_utf8(output?).ok().filter(|_| ok)
}
