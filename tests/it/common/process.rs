//! A child process guard for the tests: spawned with a name (for messages),
//! signalled, waited for with a bound, and stopped on drop (SIGTERM, up to
//! 5 s for the exit, then SIGKILL).

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus};
use std::time::Duration;

use super::wait_for;

/// Makes `cmd`'s process get SIGKILL when the thread that spawns it ends,
/// so a test binary killed without unwinding (a CI timeout, Ctrl-C) leaves
/// no broker or repeater behind; drop handlers cover every other exit.
/// The kernel ties the signal to the spawning thread: spawn from the test's
/// own thread (as every fixture here does), not from a helper thread that
/// ends first. Set after `uid`/`gid` (a credential change clears it).
pub fn dies_with_test(cmd: &mut Command) -> &mut Command {
    let test = std::process::id() as libc::pid_t;
    // SAFETY: prctl and getppid are async-signal-safe; the closure only
    // reads a copied pid.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The test died between fork and prctl: nobody would kill us.
            if libc::getppid() != test {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        })
    }
}

/// A spawned child process, stopped and reaped on drop.
pub struct Proc {
    child: Option<Child>,
    name: String,
}

impl Proc {
    /// Spawns `cmd`; panics naming `name` if it cannot start.
    pub fn spawn(name: &str, cmd: &mut Command) -> Proc {
        let child = dies_with_test(cmd)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        Proc {
            child: Some(child),
            name: name.to_string(),
        }
    }

    /// The pid; panics once the process has been reaped.
    pub fn pid(&self) -> i32 {
        self.child
            .as_ref()
            .map(|c| c.id() as i32)
            .unwrap_or_else(|| panic!("{} is not running", self.name))
    }

    /// The child itself (to take its pipes); panics once reaped.
    pub fn child(&mut self) -> &mut Child {
        let name = &self.name;
        self.child
            .as_mut()
            .unwrap_or_else(|| panic!("{name} is not running"))
    }

    /// Sends `sig` (no wait).
    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on a child we spawned and have not reaped.
        unsafe { libc::kill(self.pid(), sig) };
    }

    /// True while the process runs (not exited, not reaped).
    pub fn alive(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// The exit status if it has exited (reaping it), without waiting.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        let status = self.child.as_mut()?.try_wait().ok().flatten();
        if status.is_some() {
            self.child = None;
        }
        status
    }

    /// Waits up to `timeout` for the exit; `None` if it is still running
    /// (or was reaped before).
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let child = self.child.as_mut()?;
        let status = wait_for(timeout, || child.try_wait().ok().flatten());
        if status.is_some() {
            self.child = None;
        }
        status
    }

    /// SIGKILL, then reap.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if self.child.is_none() || self.exited().is_some() {
            return;
        }
        eprintln!("(stopping {})", self.name);
        self.signal(libc::SIGTERM);
        if self.wait_exit(Duration::from_secs(5)).is_none() {
            self.kill9();
        }
    }
}

/// Starts `app ARGS` (which blocks SIGTERM and SIGINT in its signal
/// thread's favour, and execs the plugin with that mask), waits for
/// `socket`, sends SIGTERM and returns the exit status (None: still running
/// after 10 s, then killed).
pub fn stopped_by_sigterm_through_app(
    sb: &super::Sandbox,
    args: &[&str],
    socket: std::path::PathBuf,
) -> Option<std::process::ExitStatus> {
    let mut child = sb
        .app()
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn app");
    let up = wait_for(Duration::from_secs(15), || socket.exists().then_some(()));
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = wait_for(Duration::from_secs(10), || child.try_wait().ok().flatten());
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    assert!(up.is_some(), "it never served");
    status
}

/// Whether `pid` is a live process (not gone, not a zombie).
pub fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}
