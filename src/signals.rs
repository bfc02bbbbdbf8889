//! Termination signals while `app` stays a parent (supervised plugin,
//! listeners, its own helpers), handled by one thread in one place.
//!
//! Once [`install`]ed, SIGTERM, SIGHUP, SIGINT and SIGQUIT are blocked in
//! every thread and taken by a single `sigwait` thread, which decides:
//! - while a supervised plugin runs, the signal is the plugin's: it is
//!   forwarded to it (SIGINT and SIGQUIT only when `app` is not in the
//!   terminal's foreground group; there the terminal already sent them), and
//!   `app` exits with the plugin's code once it ends;
//! - otherwise the signal is `app`'s own (it was waiting for a listener,
//!   running a built-in, or asking a plugin for metadata): the keeper of
//!   every child `app` started for itself ([`crate::keeper`]) is told to
//!   kill it and all it started, and `app` exits at once with 128+N.
//!   Nothing more starts after that.
//!
//! Children are started under the same lock the signal thread takes, so a
//! signal is handled either before a child exists (it never starts) or
//! after it is registered (it is forwarded or killed), never in between.
//!
//! SIGKILL cannot be handled: then the supervised plugin dies by its
//! `PR_SET_PDEATHSIG` (see `crate::exec::die_with_app`), and each keeper
//! sees `app` gone and kills its child with every descendant.

use std::io;
use std::process::{Child, Command};
use std::sync::{Mutex, MutexGuard, OnceLock};

use crate::error::code;

/// The signals `app` handles this way.
pub const HANDLED: [libc::c_int; 4] = [libc::SIGTERM, libc::SIGHUP, libc::SIGINT, libc::SIGQUIT];

/// The children the signal thread knows about.
#[derive(Debug, Default)]
struct State {
    /// The supervised plugin, which gets the signals while it runs.
    plugin: Option<libc::pid_t>,
    /// The keepers of children `app` started for itself (listeners,
    /// helpers), told to kill them when a signal ends `app`.
    own: Vec<libc::pid_t>,
}

/// The installed signal thread and what it knows.
#[derive(Debug)]
pub struct Hub {
    state: Mutex<State>,
}

static HUB: OnceLock<Hub> = OnceLock::new();

/// Blocks the handled signals in the calling thread (the threads it starts
/// later inherit that) and starts the signal thread, once per process.
/// Call it before starting any thread that lives while children run: a
/// thread without the mask would take SIGTERM's default action itself.
pub fn install() -> &'static Hub {
    let mut started = false;
    let hub = HUB.get_or_init(|| {
        started = true;
        Hub {
            state: Mutex::new(State::default()),
        }
    });
    // Every caller's thread gets the mask; only the first starts the thread.
    let set = block();
    if started {
        let foreground = in_terminal_foreground();
        std::thread::spawn(move || hub.serve(set, foreground));
    }
    hub
}

/// The hub, when something installed it.
pub fn installed() -> Option<&'static Hub> {
    HUB.get()
}

impl Hub {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere while holding the lock leaves plain data behind.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts the supervised plugin; signals go to it until [`Hub::plugin_ended`].
    pub fn spawn_plugin(&self, cmd: &mut Command) -> io::Result<Child> {
        let mut state = self.lock();
        let child = cmd.spawn()?;
        state.plugin = Some(child.id() as libc::pid_t);
        Ok(child)
    }

    /// The plugin has exited (call it before reaping, so its pid cannot be
    /// reused by then): signals are `app`'s own again.
    pub fn plugin_ended(&self) {
        self.lock().plugin = None;
    }

    /// Starts a keeper ([`crate::keeper`]) of a child of `app`'s own, to be
    /// told to kill it if a signal ends `app`.
    pub fn spawn_own(&self, cmd: &mut Command) -> io::Result<Child> {
        let mut state = self.lock();
        let child = cmd.spawn()?;
        state.own.push(child.id() as libc::pid_t);
        Ok(child)
    }

    /// Tells the keeper [`Hub::spawn_own`] started to kill its child and
    /// all it started, and forgets it. Call it before reaping the keeper,
    /// so that its pid cannot belong to another process yet.
    pub fn release(&self, pid: u32) {
        let pid = pid as libc::pid_t;
        let mut state = self.lock();
        if let Some(i) = state.own.iter().position(|p| *p == pid) {
            state.own.swap_remove(i);
            stop_keeper(pid);
        }
    }

    fn serve(&self, set: libc::sigset_t, foreground: bool) {
        loop {
            let mut sig: libc::c_int = 0;
            // SAFETY: `set` is a valid, initialised signal set owned by this thread.
            if unsafe { libc::sigwait(&set, &mut sig) } != 0 {
                return;
            }
            let state = self.lock();
            if let Some(pid) = state.plugin {
                if !((sig == libc::SIGINT || sig == libc::SIGQUIT) && foreground) {
                    // SAFETY: kill has no memory-safety preconditions.
                    unsafe { libc::kill(pid, sig) };
                }
                continue;
            }
            for pid in &state.own {
                stop_keeper(*pid);
            }
            // The lock stays held: no other thread starts anything now.
            // SAFETY: _exit ends the process without running anything else.
            unsafe { libc::_exit(code::SIGNAL_BASE + sig) };
        }
    }
}

/// SIGTERM to keeper `pid`: it kills its child and every descendant, then
/// exits (it does so too once `app` is gone, so `app` need not wait).
fn stop_keeper(pid: libc::pid_t) {
    // SAFETY: kill has no memory-safety preconditions; `pid` is an unreaped
    // child of this process (see Hub::release).
    unsafe { libc::kill(pid, libc::SIGTERM) };
}

fn block() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data initialised by sigemptyset; the calls
    // only read and write that local set and this thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in HANDLED {
            libc::sigaddset(&mut set, sig);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

/// Whether `app` is in its terminal's foreground process group: then keys
/// like Ctrl-C already signal the plugin too.
fn in_terminal_foreground() -> bool {
    // SAFETY: isatty, tcgetpgrp and getpgrp only query the process state.
    unsafe {
        [0, 1, 2]
            .into_iter()
            .any(|fd| libc::isatty(fd) == 1 && libc::tcgetpgrp(fd) == libc::getpgrp())
    }
}
