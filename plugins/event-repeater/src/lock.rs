//! One repeater per state file and per checkpoint file.
//!
//! Two repeaters on one `--state` (two names with the same `--state`, or one
//! name under two runtime directories sharing a data directory) would each
//! write their own routes and checkpoint over the other's. So at start the
//! repeater takes an exclusive `flock(2)` on a lock file beside each of them
//! (`.NAME.routes.json.lock`, `.NAME.checkpoint.lock`) and holds it until
//! it exits; the kernel drops it when the process dies, even by `kill -9`,
//! so a lock is never stale. The lock file records the holder's pid and
//! name, for the message a second repeater gets.
//!
//! The lock is on a file of its own because the files themselves are
//! replaced by rename at every write: a lock on the old inode would not
//! cover the new one. Lock files are left in place at exit: removing one
//! could let two processes lock two different files of the same name.

use app_plugin::log::info;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The most read of a lock file: a pid and a name.
const MAX_LOCK_FILE: u64 = 512;

/// An exclusive lock, held until dropped (or the process ends).
#[derive(Debug)]
pub struct FileLock {
    _file: File,
}

/// `.NAME.lock` beside `target`.
pub fn lock_path(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    target.with_file_name(format!(".{name}.lock"))
}

impl FileLock {
    /// Locks `target` (`what` names it in messages: "the state file") for
    /// the repeater `name`, without waiting. An `Err` says who holds it or
    /// why it cannot be taken.
    pub fn take(target: &Path, what: &str, name: &str) -> Result<FileLock, String> {
        let path = lock_path(target);
        let dir = path.parent().unwrap_or(Path::new("."));
        crate::files::private_dir(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let cannot = |e: std::io::Error| format!("cannot lock {what} {}: {e}", path.display());
        // Not following a link and not blocking on a FIFO: the file is
        // checked before it is used.
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(&path)
            .map_err(cannot)?;
        let meta = file.metadata().map_err(cannot)?;
        if let Some(kind) = app_plugin::file::not_regular(meta.file_type()) {
            return Err(format!(
                "cannot lock {what}: {} is a {kind}, not a regular file; remove it",
                path.display()
            ));
        }
        // SAFETY: flock(2) on a descriptor this function owns.
        let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if locked != 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(cannot(err));
            }
            return Err(format!(
                "{what} {} is in use by another event repeater ({}; lock {}): two repeaters on one file would overwrite each other's routes and checkpoint. Give this one its own --state (or another --name without --state), or stop the other",
                target.display(),
                holder(&mut file),
                path.display()
            ));
        }
        let _ = file.set_permissions(std::fs::Permissions::from_mode(0o600));
        // Who holds it, for the next one's message; the lock is what counts.
        let _ = file
            .set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| writeln!(file, "{} {name}", std::process::id()));
        Ok(FileLock { _file: file })
    }
}

/// "pid 123, named \"a\"" from the lock file (written by the holder).
fn holder(file: &mut File) -> String {
    let mut text = String::new();
    let _ = file
        .rewind()
        .and_then(|()| file.take(MAX_LOCK_FILE).read_to_string(&mut text));
    let mut words = text.trim().splitn(2, ' ');
    match (
        words.next().and_then(|p| p.parse::<u32>().ok()),
        words.next(),
    ) {
        (Some(pid), Some(name)) => format!("pid {pid}, named {name:?}"),
        (Some(pid), None) => format!("pid {pid}"),
        _ => "its pid not yet recorded".to_string(),
    }
}

/// Locks the state file and, with `--checkpoint on`, the checkpoint beside
/// it (two state files can share a checkpoint: `X` and `X.routes.json`);
/// then, as no other repeater can be writing them, removes the temp files a
/// crash left of them.
pub fn hold(cfg: &crate::config::Config) -> Result<Vec<FileLock>, String> {
    let mut files = vec![cfg.state_file.clone()];
    let mut locks = vec![FileLock::take(
        &cfg.state_file,
        "the state file",
        &cfg.name,
    )?];
    if cfg.checkpoint {
        let checkpoint = crate::checkpoint::path_beside(&cfg.state_file);
        locks.push(FileLock::take(
            &checkpoint,
            "the checkpoint file",
            &cfg.name,
        )?);
        files.push(checkpoint);
    }
    for file in files {
        for stale in crate::files::remove_stale_temp_files(&file) {
            info!(
                "removed {}, left by a process that died while writing it",
                stale.display()
            );
        }
    }
    Ok(locks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_naming_the_holder_until_the_first_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("sub/r.routes.json");
        let first = FileLock::take(&state, "the state file", "a b").unwrap();
        let lock = dir.path().join("sub/.r.routes.json.lock");
        let mode = std::fs::metadata(&lock).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // flock locks are per open file: a second open in this process
        // conflicts like another process would.
        let e = FileLock::take(&state, "the state file", "b").unwrap_err();
        let pid = std::process::id();
        assert!(
            e.contains(&format!(
                "is in use by another event repeater (pid {pid}, named \"a b\"; lock {}",
                lock.display()
            )),
            "{e}"
        );
        drop(first);
        let _again = FileLock::take(&state, "the state file", "b").unwrap();
        assert_eq!(
            std::fs::read_to_string(&lock).unwrap(),
            format!("{pid} b\n")
        );
    }

    #[test]
    fn a_fifo_or_a_link_as_lock_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("r.routes.json");
        let c = std::ffi::CString::new(lock_path(&state).to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = FileLock::take(&state, "the state file", "r").unwrap_err();
        assert!(e.contains("is a FIFO, not a regular file"), "{e}");
        let other = dir.path().join("x.routes.json");
        std::os::unix::fs::symlink("/etc/passwd", lock_path(&other)).unwrap();
        assert!(FileLock::take(&other, "the state file", "x").is_err());
    }
}
