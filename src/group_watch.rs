//! A watcher that kills a child's whole process group when `app` ends, in
//! whatever way it ends, `SIGKILL` included.
//!
//! `PR_SET_PDEATHSIG` reaches only the child `app` started, not what that
//! child started in turn (a metadata answer that forks `sleep`), and after
//! `SIGKILL` nothing in `app` runs to kill the group. So each child that
//! leads a process group gets a watcher: a process forked in the child just
//! before it execs, hence in its group, that holds only the read end of a
//! pipe whose write end only `app` holds. When `app` exits, is killed or
//! execs a plugin, the kernel closes the write end; the watcher's read sees
//! end-of-file and it sends `SIGKILL` to its own process group, itself
//! included. While `app` runs, the group is killed by `app` as before
//! (query done, timeout, signal), the watcher with it.
//!
//! What escapes: a process that leaves the group (`setsid`, `setpgid`, a
//! daemon that double-forks into a session of its own), as it escapes any
//! group kill; see `docs/plugin-protocol.md`.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::Command;

/// The write end `app` keeps for as long as the group may live; dropping it
/// (or `app` ending) lets the watcher kill the group.
pub struct Guard {
    _write: OwnedFd,
}

/// Adds the watcher to `cmd`, which must start in a process group of its
/// own (`process_group(0)`, applied before this hook runs).
pub fn install(cmd: &mut Command) -> io::Result<Guard> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 returns.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just made and belong to nobody else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let read_fd = read.as_raw_fd();
    // SAFETY: the closure runs in the forked child before exec and calls
    // only async-signal-safe functions (clone, close, read, kill, _exit).
    // It owns the parent's copy of the read end, closed when `cmd` goes.
    unsafe {
        cmd.pre_exec(move || {
            let _owned = &read;
            fork_watcher(read_fd)
        });
    }
    Ok(Guard { _write: write })
}

/// In the child before exec: forks the watcher, then closes the read end,
/// which the plugin does not need.
fn fork_watcher(read_fd: RawFd) -> io::Result<()> {
    // A raw clone, not fork(): no atfork handlers run in this copy of a
    // multi-threaded process, and the copy is single-threaded anyway.
    // SAFETY: with only SIGCHLD as flags and no new stack, clone behaves as fork.
    let pid = unsafe { libc::syscall(libc::SYS_clone, libc::SIGCHLD as libc::c_long, 0, 0, 0, 0) };
    match pid {
        0 => watch(read_fd),
        p if p < 0 => Err(io::Error::last_os_error()),
        _ => {
            // SAFETY: closing our own descriptor.
            unsafe { libc::close(read_fd) };
            Ok(())
        }
    }
}

/// The watcher: keeps no descriptor but the read end (so it holds no pipe
/// of the plugin's, nor std's exec-error pipe), waits for end-of-file, then
/// kills its process group. Never returns.
fn watch(read_fd: RawFd) -> ! {
    close_all_but(read_fd);
    let mut byte = 0u8;
    loop {
        // SAFETY: reading one byte into a valid local buffer.
        let n = unsafe { libc::read(read_fd, (&mut byte as *mut u8).cast(), 1) };
        if n < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        break;
    }
    // SAFETY: kill(0, …) signals our own process group; _exit ends at once.
    unsafe {
        libc::kill(0, libc::SIGKILL);
        libc::_exit(0)
    }
}

/// Closes every descriptor except `keep` (close_range where the kernel has
/// it, else one by one up to the descriptor limit).
fn close_all_but(keep: RawFd) {
    let keep = keep as libc::c_uint;
    // SAFETY: close_range and close only close our own descriptors.
    unsafe {
        let low = keep == 0
            || libc::syscall(
                libc::SYS_close_range,
                0 as libc::c_uint,
                keep - 1,
                0 as libc::c_uint,
            ) == 0;
        let high = libc::syscall(
            libc::SYS_close_range,
            keep + 1,
            libc::c_uint::MAX,
            0 as libc::c_uint,
        ) == 0;
        if low && high {
            return;
        }
        let max = match libc::sysconf(libc::_SC_OPEN_MAX) {
            n if n > 0 => n.min(1 << 20) as libc::c_int,
            _ => 1024,
        };
        for fd in 0..max {
            if fd as libc::c_uint != keep {
                libc::close(fd);
            }
        }
    }
}
