//! Writing files so that a reader never sees half of one: a temp file in
//! the same directory, fsync, rename over the target, fsync the directory.
//!
//! Temp files are named `.app-tmp-<pid>-<n>`: they start with a dot, so the
//! dispatcher (which only looks at `app-*`) never takes one for a plugin, and
//! one left behind by a crash is harmless.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// A file being written; removed on drop unless [`TempFile::persist`]ed.
#[derive(Debug)]
pub struct TempFile {
    path: PathBuf,
    file: Option<File>,
}

impl TempFile {
    /// Creates a new, empty temp file in `dir` with permissions `mode`.
    pub fn new_in(dir: &Path, mode: u32) -> io::Result<TempFile> {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        loop {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = dir.join(format!(".app-tmp-{}-{n}", std::process::id()));
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(mode)
                .open(&path)
            {
                Ok(file) => {
                    // The umask may have taken bits away; the caller asked for these.
                    file.set_permissions(fs::Permissions::from_mode(mode))?;
                    return Ok(TempFile {
                        path,
                        file: Some(file),
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Where the temp file is (to run it before it is renamed, say).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `bytes`.
    pub fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match &mut self.file {
            Some(f) => f.write_all(bytes),
            None => Err(io::Error::other("temp file already closed")),
        }
    }

    /// Flushes to disk and closes the file (so it can be executed: Linux
    /// refuses to run a file that is still open for writing).
    pub fn sync_and_close(&mut self) -> io::Result<()> {
        if let Some(f) = self.file.take() {
            f.sync_all()?;
        }
        Ok(())
    }

    /// Renames the temp file to `dest` (same directory) and makes the rename durable.
    pub fn persist(mut self, dest: &Path) -> io::Result<()> {
        self.sync_and_close()?;
        fs::rename(&self.path, dest)?;
        // Renamed: nothing left for drop to clean up.
        self.path = PathBuf::new();
        sync_dir(dest.parent().unwrap_or(Path::new(".")))
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.path.as_os_str().is_empty() {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Writes `bytes` to `dest` atomically, with permissions `mode`.
pub fn write(dest: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let dir = dest.parent().unwrap_or(Path::new("."));
    let mut tmp = TempFile::new_in(dir, mode)?;
    tmp.write_all(bytes)?;
    tmp.persist(dest)
}

/// Removes `path` and makes the removal durable.
pub fn remove(path: &Path) -> io::Result<()> {
    fs::remove_file(path)?;
    sync_dir(path.parent().unwrap_or(Path::new(".")))
}

/// fsync on a directory, so that a rename or removal in it survives a crash.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_replaces_the_file_and_leaves_no_temp_behind() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("f");
        fs::write(&dest, "old").unwrap();
        write(&dest, b"new", 0o640).unwrap();
        assert_eq!(fs::read_to_string(&dest).unwrap(), "new");
        assert_eq!(
            fs::metadata(&dest).unwrap().permissions().mode() & 0o777,
            0o640
        );
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_dropped_temp_file_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let mut tmp = TempFile::new_in(dir.path(), 0o755).unwrap();
        tmp.write_all(b"half").unwrap();
        drop(tmp);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
