//! The repeater's own files (routes, checkpoint, lock files) and the files
//! its flags name: read only when regular and within a limit, written
//! private (0600 in a 0700 directory) and atomically, and the temp files a
//! crash left removed at start. A leaf: it knows nothing of what the files
//! hold, so `config`, `state`, `checkpoint`, `lock` and `serve` can all use it.

use std::fs;
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// The bytes of the file `flag` names: a regular file of at most `max`
/// bytes (a FIFO or a device is refused at once, not read).
pub fn read_file(path: &Path, flag: &str, max: u64) -> Result<Vec<u8>, String> {
    app_plugin::file::read_limited(path, max).map_err(|e| format!("{flag} {} {e}", path.display()))
}

/// [`read_file`] for a file holding a secret (`--password-file`,
/// `--creds`): a warning, once, when its group or others can read it.
pub fn read_secret_file(path: &Path, flag: &str, max: u64) -> Result<Vec<u8>, String> {
    let (bytes, warning) = app_plugin::file::read_secret(path, max)
        .map_err(|e| format!("{flag} {} {e}", path.display()))?;
    if let Some(warning) = warning {
        app_plugin::warn!("{flag} {warning}");
    }
    Ok(bytes)
}

/// Reads `path` if it is a regular file of at most `max` bytes; `Ok(None)`
/// if it does not exist (see [`app_plugin::file::read_limited`]: a FIFO
/// cannot hang the open, a device cannot fill the memory).
pub fn read_regular(path: &Path, max: u64) -> Result<Option<String>, String> {
    use app_plugin::file::{read_limited, ReadError};
    let shown = path.display();
    let bytes = match read_limited(path, max) {
        Ok(bytes) => bytes,
        Err(ReadError::NotFound) => return Ok(None),
        Err(ReadError::NotRegular(kind)) => {
            // "a device", whichever kind: the user's fix is the same.
            let kind = if kind.ends_with("device") {
                "device"
            } else {
                kind
            };
            return Err(format!(
                "{shown} is a {kind}, not a regular file; pass a regular file (or a path that does not exist yet)"
            ));
        }
        Err(e @ ReadError::TooLarge { .. }) => {
            return Err(format!("{shown} {e}; is it the right file?"))
        }
        Err(ReadError::Io(e)) => return Err(format!("cannot read {shown}: {e}")),
    };
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| format!("cannot read {shown}: it is not UTF-8 text"))
}

/// Creates `dir` (and missing parents) with mode 0700 if it does not exist.
/// An existing directory is left as it is: it may be the user's.
pub fn private_dir(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Replaces `path` with `bytes` atomically (temp file in the same directory,
/// rename), mode 0600 in a 0700 directory. The temp file's data is flushed
/// to disk before the rename, so after a power loss `path` holds the old
/// bytes or the new ones, never an empty file (which a rename of unflushed
/// data can leave on ext4, XFS and btrfs). `sync` also flushes the
/// directory, so the rename itself survives a power loss.
pub fn write_private(path: &Path, bytes: &[u8], sync: bool) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    private_dir(dir)?;
    // The temp name is the one start-up cleanup looks for (`temp_prefix`).
    app_plugin::file::write_atomic_via(path, &temp_path(path), bytes, 0o600, sync)
}

fn temp_prefix(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "state".into());
    format!(".{name}.tmp-")
}

fn temp_path(path: &Path) -> PathBuf {
    path.with_file_name(format!("{}{}", temp_prefix(path), std::process::id()))
}

/// Removes the temp files [`write_private`] left for `path` when a process
/// died between writing and renaming (`kill -9`, a power loss): those named
/// `.NAME.tmp-PID` whose PID is this process's (from an earlier boot), no
/// longer runs, or runs something other than an event repeater. Call it
/// only while holding `path`'s lock ([`crate::lock`]), when no other
/// repeater can be writing. Returns what was removed.
pub fn remove_stale_temp_files(path: &Path) -> Vec<PathBuf> {
    let prefix = temp_prefix(path);
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(&prefix))
            .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let regular = entry.file_type().is_ok_and(|t| t.is_file());
        if regular && !writer_may_run(pid) && fs::remove_file(entry.path()).is_ok() {
            removed.push(entry.path());
        }
    }
    removed
}

/// Whether `pid` may be another event repeater still writing its temp
/// file: it runs, is not this process, and its name says repeater.
fn writer_may_run(pid: u32) -> bool {
    if pid == std::process::id() {
        return false;
    }
    let Ok(pid_t) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks whether the process exists.
    let exists = unsafe { libc::kill(pid_t, 0) } == 0
        || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    // /proc/PID/comm holds at most 15 bytes of the program's name.
    exists
        && fs::read_to_string(format!("/proc/{pid}/comm")).map_or(true, |comm| {
            "app-event-repeater".starts_with(comm.trim_end())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_temp_files_of_this_file_are_removed_and_no_others() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.routes.json");
        // A process that ran and is gone: its pid is free.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let ours = std::process::id();
        let name = |n: &str| dir.path().join(n);
        for f in [
            format!(".r.routes.json.tmp-{dead}"),
            format!(".r.routes.json.tmp-{ours}"),
            format!(".other.routes.json.tmp-{dead}"),
            ".r.routes.json.tmp-x1".to_string(),
            "r.routes.json".to_string(),
        ] {
            fs::write(name(&f), "{").unwrap();
        }
        let mut removed = remove_stale_temp_files(&path);
        removed.sort();
        let mut want = vec![
            name(&format!(".r.routes.json.tmp-{dead}")),
            name(&format!(".r.routes.json.tmp-{ours}")),
        ];
        want.sort();
        assert_eq!(removed, want);
        for kept in [
            &format!(".other.routes.json.tmp-{dead}"),
            ".r.routes.json.tmp-x1",
            "r.routes.json",
        ] {
            assert!(name(kept).exists(), "{kept}");
        }
        // pid 1 runs, and is not a repeater: its name is not ours.
        assert!(!writer_may_run(1) || fs::read_to_string("/proc/1/comm").is_err());
    }
}
