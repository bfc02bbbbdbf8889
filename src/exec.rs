//! Running a plugin: `exec` in place of `app`, or a supervised child.
//!
//! `exec` is the default: the terminal, stdin, signals and exit status are
//! then the plugin's own, and no `app` process is left behind. A supervised
//! child is used only when `app` must stay (the JSON context on stdin, or
//! listeners waiting for `command.end`). Its rules, in one place:
//! - SIGTERM, SIGHUP and SIGQUIT sent to `app` are forwarded to the child;
//!   SIGINT too, unless `app` is in the terminal's foreground process group
//!   (then the terminal already sent it to the child, and once is enough);
//!   one thread does that for every child, see [`crate::signals`];
//! - the child gets SIGTERM if `app` dies (`PR_SET_PDEATHSIG` on Linux), so
//!   no plugin outlives a killed `app`;
//! - `app` exits with the child's code, or 128+N when it died of signal N.

use std::ffi::OsString;
use std::io::{self, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::context::vars;
use crate::error::{code, Error};
use crate::signals;

/// What to run and what to tell it.
#[derive(Debug, Clone)]
pub struct Invocation {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub env: Vec<(&'static str, OsString)>,
}

impl Invocation {
    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args);
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }

    /// This invocation without `APP_COMMAND`, for when the kernel refused
    /// the exec as too big (`E2BIG`): the plugin's arguments come first, the
    /// copy of the command line is what gives way. `None` when there was
    /// no command to drop.
    fn without_command(&self) -> Option<Invocation> {
        let value = |name: &str| {
            self.env
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string_lossy())
        };
        let command = value(vars::COMMAND)?;
        // Every word of the command line is now left out.
        let words = shell_words::split(&command).map_or(0, |w| w.len())
            + value(vars::COMMAND_OMITTED)
                .and_then(|n| n.parse::<usize>().ok())
                .unwrap_or(0);
        let mut smaller = self.clone();
        smaller
            .env
            .retain(|(k, _)| *k != vars::COMMAND && *k != vars::COMMAND_OMITTED);
        smaller
            .env
            .push((vars::COMMAND_OMITTED, words.to_string().into()));
        let debug = value(vars::LOG)
            .and_then(|l| app_plugin::log::parse_level(&l).ok())
            .is_some_and(|l| l >= app_plugin::log::DEBUG);
        if debug {
            eprintln!(
                "app: debug: the arguments and environment are too big for one exec with APP_COMMAND; running {} without it (APP_COMMAND_OMITTED is set)",
                self.program.display()
            );
        }
        Some(smaller)
    }
}

/// Whether an exec or spawn failed because arguments and environment were
/// over the kernel's limit.
fn too_big(err: &io::Error) -> bool {
    err.raw_os_error() == Some(libc::E2BIG)
}

/// How a supervised plugin ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Exited(i32),
    Signaled(i32),
}

impl Outcome {
    /// The exit code `app` passes on: the child's, or 128+N for signal N.
    pub fn exit_code(self) -> i32 {
        match self {
            Outcome::Exited(c) => c,
            Outcome::Signaled(s) => code::SIGNAL_BASE + s,
        }
    }
}

/// Replaces `app` with the plugin. Returns only if that failed.
pub fn exec(inv: &Invocation) -> Error {
    let err = exec_once(inv);
    match inv.without_command() {
        Some(smaller) if too_big(&err) => cannot_run(&inv.program, exec_once(&smaller)),
        _ => cannot_run(&inv.program, err),
    }
}

fn exec_once(inv: &Invocation) -> io::Error {
    let mut cmd = inv.command();
    // `app` may have blocked its handled signals before this point (asking a
    // trusted plugin for its metadata installs the signal thread), and a
    // blocked mask survives exec: the plugin would never see SIGTERM.
    // SAFETY: the closure only calls async-signal-safe functions.
    unsafe {
        cmd.pre_exec(|| {
            unblock_signals();
            Ok(())
        });
    }
    cmd.exec()
}

/// Empties the calling thread's signal mask. Async-signal-safe.
fn unblock_signals() {
    // SAFETY: a zeroed sigset_t is valid storage for sigemptyset to fill.
    unsafe {
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::pthread_sigmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
    }
}

/// A running supervised plugin.
pub struct Supervised {
    child: Child,
    hub: &'static signals::Hub,
}

/// Starts the plugin as a supervised child. With `stdin_prelude`, the child's
/// stdin is a pipe that first gets that text, then everything `app` reads
/// from its own stdin until EOF; without it, the child shares `app`'s stdin.
pub fn spawn(inv: &Invocation, stdin_prelude: Option<String>) -> Result<Supervised, Error> {
    match spawn_once(inv, stdin_prelude.clone()) {
        Err(e) if too_big(&e) => match inv.without_command() {
            Some(smaller) => spawn_once(&smaller, stdin_prelude),
            None => Err(e),
        },
        other => other,
    }
    .map_err(|e| cannot_run(&inv.program, e))
}

fn spawn_once(inv: &Invocation, stdin_prelude: Option<String>) -> io::Result<Supervised> {
    let hub = signals::install();
    let mut cmd = inv.command();
    if stdin_prelude.is_some() {
        cmd.stdin(Stdio::piped());
    }
    die_with_app(&mut cmd, libc::SIGTERM);
    let mut child = hub.spawn_plugin(&mut cmd)?;
    if let (Some(prelude), Some(mut pipe)) = (stdin_prelude, child.stdin.take()) {
        std::thread::spawn(move || {
            // The child may exit or close stdin early; that ends the relay, nothing more.
            if pipe.write_all(prelude.as_bytes()).is_ok() {
                let _ = io::copy(&mut io::stdin().lock(), &mut pipe);
            }
        });
    }
    Ok(Supervised { child, hub })
}

impl Supervised {
    /// The child's process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Waits for the child to end.
    pub fn wait(mut self) -> Result<Outcome, Error> {
        // Exited but not reaped: no signal can be forwarded to a reused pid.
        wait_unreaped(self.child.id());
        self.hub.plugin_ended();
        let status = self
            .child
            .wait()
            .map_err(|e| Error::io("waiting for the plugin", e))?;
        Ok(match (status.code(), status.signal()) {
            (Some(c), _) => Outcome::Exited(c),
            (None, Some(s)) => Outcome::Signaled(s),
            (None, None) => Outcome::Exited(code::FAILURE),
        })
    }
}

/// A child `app` starts for its own purposes (a listener, `app_fetch`, a
/// metadata query, git, cargo), under a keeper ([`crate::keeper`]): when
/// this is dropped or finished, when a signal ends `app`, and when `app`
/// dies even by SIGKILL, the child and everything it started (`setsid`
/// included) are killed.
pub struct OwnChild {
    child: Child,
    hub: &'static signals::Hub,
    released: bool,
}

impl OwnChild {
    /// Starts `cmd`, made by [`crate::keeper::command`]; with `group`, in a
    /// process group of its own (out of the terminal's reach: Ctrl-C is
    /// `app`'s to decide about).
    pub fn spawn(cmd: &mut Command, group: bool) -> io::Result<OwnChild> {
        debug_assert_eq!(cmd.get_program(), "/proc/self/exe", "not a keeper command");
        if group {
            cmd.process_group(0);
        }
        let hub = signals::install();
        let child = hub.spawn_own(cmd)?;
        Ok(OwnChild {
            child,
            hub,
            released: false,
        })
    }

    /// The child, for its pipes.
    pub fn child(&mut self) -> &mut Child {
        &mut self.child
    }

    /// Whether the child exits within `timeout` (it stays unreaped).
    pub fn exited_within(&self, timeout: Duration) -> bool {
        let pid = self.child.id();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            wait_unreaped(pid);
            let _ = tx.send(());
        });
        rx.recv_timeout(timeout).is_ok()
    }

    /// Kills what is left of the child (its descendants included), then reaps it.
    pub fn finish(mut self) -> io::Result<ExitStatus> {
        self.release();
        self.child.wait()
    }

    /// Waits for the child to exit (its keeper kills anything it left), and
    /// reaps it.
    pub fn wait(self) -> io::Result<ExitStatus> {
        wait_unreaped(self.child.id());
        self.finish()
    }

    fn release(&mut self) {
        if !self.released {
            self.released = true;
            self.hub.release(self.child.id());
        }
    }
}

impl Drop for OwnChild {
    fn drop(&mut self) {
        if !self.released {
            self.release();
            let _ = self.child.wait();
        }
    }
}

/// Blocks until child `pid` has exited, leaving it unreaped (`WNOWAIT`), so
/// its pid and process group stay its own until it is reaped.
fn wait_unreaped(pid: u32) {
    // SAFETY: siginfo_t is plain data that waitid fills in.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: waiting on our own child; `info` is a valid out-pointer.
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if rc == 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return;
        }
    }
}

/// Sets up a child of `app` so that it never outlives it: its signal mask
/// starts empty (ours routes signals to the signal thread, see
/// [`signals`]), and it gets `signal` when `app` dies (`PR_SET_PDEATHSIG` on Linux), or exits at once
/// if `app` died before that could be set.
pub(crate) fn die_with_app(cmd: &mut Command, signal: libc::c_int) {
    let parent = std::process::id();
    // SAFETY: the closure runs in the forked child before exec and only calls
    // async-signal-safe functions (sigemptyset, pthread_sigmask, prctl,
    // getppid, _exit).
    unsafe {
        cmd.pre_exec(move || {
            unblock_signals();
            #[cfg(target_os = "linux")]
            {
                if libc::prctl(libc::PR_SET_PDEATHSIG, signal) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            // `app` died between fork and prctl: nobody would reap us.
            if libc::getppid() as u32 != parent {
                libc::_exit(code::SIGNAL_BASE + signal);
            }
            Ok(())
        });
    }
}

/// Explains why `path` could not be started, in the user's terms.
pub fn cannot_run(path: &Path, err: io::Error) -> Error {
    if let Some(reason) = broken_link(path) {
        return Error::CannotRun {
            path: path.to_path_buf(),
            reason,
        };
    }
    let reason = match err.raw_os_error() {
        Some(libc::EACCES) => {
            if is_executable(path) {
                "permission denied (is the file system mounted noexec, or a directory not searchable?)"
                    .to_string()
            } else {
                format!(
                    "the file is not executable; make it so with: chmod +x {}",
                    path.display()
                )
            }
        }
        Some(libc::ENOENT) if path.exists() => match interpreter(path) {
            Some(interp) => format!(
                "its interpreter '{interp}' (from the #! line) does not exist; fix the first line of the script or install {interp}"
            ),
            None => "a file it needs to start (its interpreter or dynamic loader) does not exist"
                .to_string(),
        },
        Some(libc::E2BIG) => {
            "its arguments and environment together are over the system's limit (getconf ARG_MAX), even without APP_COMMAND; pass fewer or shorter arguments, or a smaller environment"
                .to_string()
        }
        Some(libc::ENOEXEC) => {
            "it is not a program this system can run (a script needs a #! line as its first line)"
                .to_string()
        }
        _ => err.to_string(),
    };
    Error::CannotRun {
        path: path.to_path_buf(),
        reason,
    }
}

/// Why `path`, a symbolic link, leads nowhere; `None` when it is not such a link.
pub fn broken_link(path: &Path) -> Option<String> {
    if !std::fs::symlink_metadata(path)
        .ok()?
        .file_type()
        .is_symlink()
    {
        return None;
    }
    let err = std::fs::metadata(path).err()?;
    let target = std::fs::read_link(path)
        .map(|t| t.display().to_string())
        .unwrap_or_else(|_| "?".into());
    Some(match err.raw_os_error() {
        Some(libc::ELOOP) => format!(
            "it is a symbolic link loop (-> {target} leads back to itself); fix or remove the link"
        ),
        Some(libc::ENOENT) | Some(libc::ENOTDIR) => format!(
            "it is a symbolic link to {target}, which does not exist; fix or remove the link"
        ),
        _ => format!("it is a symbolic link to {target}, which cannot be read: {err}"),
    })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
}

/// The interpreter named on a script's `#!` line.
fn interpreter(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(path).ok()?.read(&mut head).ok()?;
    let first = head[..n].split(|b| *b == b'\n').next()?;
    let rest = first.strip_prefix(b"#!")?;
    let text = String::from_utf8_lossy(rest);
    text.split_whitespace().next().map(String::from)
}
