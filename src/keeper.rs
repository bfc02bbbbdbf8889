//! The keeper: how no child `app` starts for itself outlives it, whatever
//! happens to `app` (SIGKILL included) and whatever the child does (`setsid`
//! included).
//!
//! Each such child (a metadata query, a completion delegate, a listener,
//! `app_fetch`, git, cargo) runs under a keeper: `app` itself, started again
//! as `/proc/self/exe` with [`ARG0`] as its name, which
//! - makes itself a child subreaper (`PR_SET_CHILD_SUBREAPER`): whatever the
//!   child starts, in any session or process group, stays its descendant
//!   (an orphan is reparented to it, not to init);
//! - starts the child (which gets SIGKILL should the keeper itself die);
//! - when the child exits, when `app` dies (a pidfd on `app`, or its parent
//!   pid changing) or when `app` sends it SIGTERM (a limit passed, or a
//!   signal ends `app`), kills every descendant with SIGKILL, round after
//!   round until none is left, and exits as the child did.
//!
//! A keeper is a fresh, single-threaded process, so all of this is plain
//! code, not what may run between fork and exec.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

use crate::error::code;

/// The name (`argv[0]`) that makes `app` a keeper.
pub const ARG0: &str = "app (keeper)";

/// How long a keeper goes on killing descendants that keep forking.
const KILL_LIMIT: Duration = Duration::from_secs(5);

/// A command that runs `program` under a keeper; add its arguments,
/// environment and stdio as usual, then start it with
/// [`crate::exec::OwnChild::spawn`] (or `output()`).
pub fn command(program: impl AsRef<OsStr>) -> Command {
    // /proc/self/exe is this very binary, even if its file was replaced since.
    let mut cmd = Command::new("/proc/self/exe");
    cmd.arg0(ARG0)
        .arg(std::process::id().to_string())
        .arg(program);
    cmd
}

/// Whether this process was started as a keeper.
pub fn is_keeper(argv0: Option<&OsStr>) -> bool {
    argv0 == Some(OsStr::new(ARG0))
}

/// The keeper's life: `args` are `app`'s pid, the program, its arguments.
/// Returns only on a usage error; otherwise it exits as the child did.
pub fn main(args: &[OsString]) -> i32 {
    let (Some(app), Some(program)) = (
        args.first()
            .and_then(|a| a.to_str())
            .and_then(|a| a.parse::<libc::pid_t>().ok()),
        args.get(1),
    ) else {
        eprintln!("app: the keeper is started by app itself, not by hand");
        return code::USAGE;
    };
    // SAFETY: prctl with these arguments only changes this process's flags.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) };
    let signals = match Signals::block() {
        Ok(s) => s,
        Err(e) => return cannot(program, &e),
    };
    let app_fd = pidfd(app);
    // SAFETY: getppid has no preconditions.
    if unsafe { libc::getppid() } != app {
        // `app` died before the pidfd was there: start nothing.
        return code::SIGNAL_BASE + libc::SIGKILL;
    }
    let mut cmd = Command::new(program);
    cmd.args(&args[2..]);
    // SAFETY: sigemptyset, sigprocmask, prctl and getppid are
    // async-signal-safe; the keeper has one thread.
    unsafe {
        let keeper = libc::getpid();
        cmd.pre_exec(move || {
            let mut empty: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut empty);
            libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if libc::getppid() != keeper {
                libc::_exit(code::SIGNAL_BASE + libc::SIGKILL);
            }
            Ok(())
        });
    }
    let child = match cmd.spawn() {
        Ok(c) => c.id() as libc::pid_t,
        Err(e) => return cannot(program, &e),
    };
    let status = watch(child, app, app_fd, &signals);
    kill_descendants();
    exit_as(status)
}

fn cannot(program: &OsStr, e: &io::Error) -> i32 {
    eprintln!(
        "app: cannot run {}: {e}",
        app_plugin::text::escape_for_terminal(&Path::new(program).display().to_string())
    );
    if e.kind() == io::ErrorKind::PermissionDenied {
        code::CANNOT_RUN
    } else {
        code::NOT_FOUND
    }
}

/// Waits until the child exits (its status), `app` dies or asks by SIGTERM
/// (`None`: the child is to be killed).
fn watch(
    child: libc::pid_t,
    app: libc::pid_t,
    app_fd: Option<i32>,
    signals: &Signals,
) -> Option<ExitStatus> {
    loop {
        if let Some(status) = reap(child) {
            return Some(status);
        }
        let mut fds = [
            libc::pollfd {
                fd: signals.fd,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: app_fd.unwrap_or(-1),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // Without a pidfd (an old kernel), the parent pid is looked at 10 times a second.
        let timeout = if app_fd.is_some() { -1 } else { 100 };
        // SAFETY: `fds` is a valid array of two pollfd; a negative fd is ignored.
        unsafe { libc::poll(fds.as_mut_ptr(), 2, timeout) };
        // SAFETY: getppid has no preconditions.
        if fds[1].revents != 0 || unsafe { libc::getppid() } != app {
            return None;
        }
        if fds[0].revents != 0 && signals.read() == Some(libc::SIGTERM) {
            return None;
        }
    }
}

/// The child's status once it has exited; other children (orphans
/// reparented here) are reaped on the way.
fn reap(child: libc::pid_t) -> Option<ExitStatus> {
    let mut found = None;
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes the status into a valid int.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            return found;
        }
        if pid == child {
            found = Some(ExitStatus::from_raw(status));
        }
    }
}

/// SIGKILL to every descendant, round after round (what forks in between
/// is reparented here and found next round), until none is left or
/// [`KILL_LIMIT`] passes.
fn kill_descendants() {
    let started = Instant::now();
    // SAFETY: getpid has no preconditions.
    let me = unsafe { libc::getpid() };
    // No child at all (none reparented here either) means no descendant:
    // the usual case costs one waitpid and no look at /proc.
    while reap_all() {
        let victims = descendants(me);
        for pid in &victims {
            // SAFETY: kill has no memory-safety preconditions; each pid is
            // a descendant of this process as /proc showed it a moment ago.
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
        if started.elapsed() > KILL_LIMIT {
            return;
        }
        if victims.is_empty() {
            // Killed children not yet zombies: give them a moment.
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// Reaps every child that has exited; whether any child is left.
fn reap_all() -> bool {
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes the status into a valid int.
        match unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) } {
            0 => return true,
            pid if pid < 0 => return false,
            _ => {}
        }
    }
}

/// Every process under `root`, from each `/proc/PID/stat`'s parent pid.
fn descendants(root: libc::pid_t) -> Vec<libc::pid_t> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let parents: Vec<(libc::pid_t, libc::pid_t)> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<libc::pid_t>().ok())
        .filter_map(|pid| Some((pid, parent_of(pid)?)))
        .collect();
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        let p = out[i];
        out.extend(
            parents
                .iter()
                .filter(|(_, pp)| *pp == p)
                .map(|(pid, _)| *pid),
        );
        i += 1;
    }
    out.remove(0);
    out
}

fn parent_of(pid: libc::pid_t) -> Option<libc::pid_t> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `PID (COMM) STATE PPID …`: COMM may hold anything, so after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Exits as `status` says: the same code, or death by the same signal.
fn exit_as(status: Option<ExitStatus>) -> ! {
    let status = status.unwrap_or_else(|| ExitStatus::from_raw(libc::SIGKILL));
    if let Some(sig) = status.signal() {
        // SAFETY: resetting a disposition, emptying the mask, a zero core
        // limit and raise have no memory-safety preconditions.
        unsafe {
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &none);
            libc::signal(sig, libc::SIG_DFL);
            let mut empty: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut empty);
            libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
            libc::raise(sig);
        }
        std::process::exit(code::SIGNAL_BASE + sig);
    }
    std::process::exit(status.code().unwrap_or(code::FAILURE))
}

/// `app`'s process as a pidfd (readable once it exits); `None` on kernels
/// before 5.3.
fn pidfd(pid: libc::pid_t) -> Option<i32> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    (fd >= 0).then_some(fd as i32)
}

/// The signals a keeper handles, blocked and read from a signalfd.
struct Signals {
    fd: i32,
}

impl Signals {
    fn block() -> io::Result<Signals> {
        // SAFETY: a zeroed sigset_t is valid storage for sigemptyset; the
        // calls change only this (single-threaded) process's mask.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for sig in [
                libc::SIGCHLD,
                libc::SIGTERM,
                libc::SIGHUP,
                libc::SIGINT,
                libc::SIGQUIT,
            ] {
                libc::sigaddset(&mut set, sig);
            }
            libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            let fd = libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(Signals { fd })
        }
    }

    /// The next pending signal, if any. SIGINT, SIGQUIT and SIGHUP are
    /// read and ignored: the terminal sends them to the child too, and
    /// `app` decides what they mean for it.
    fn read(&self) -> Option<i32> {
        let mut last = None;
        loop {
            // SAFETY: signalfd_siginfo is plain data that read fills in.
            let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
            let size = std::mem::size_of::<libc::signalfd_siginfo>();
            // SAFETY: reading at most `size` bytes into `info`.
            let n = unsafe {
                libc::read(
                    self.fd,
                    (&mut info as *mut libc::signalfd_siginfo).cast(),
                    size,
                )
            };
            if n as usize != size {
                return last;
            }
            let sig = info.ssi_signo as i32;
            if sig == libc::SIGTERM {
                return Some(sig);
            }
            last = Some(sig);
        }
    }
}
