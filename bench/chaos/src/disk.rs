//! The repeaters' data directory (routes files and checkpoints) on a small
//! tmpfs the run mounts, so that "disk full" is one file that fills it and
//! "space again" is removing that file. Unmounted at the end (also after a
//! panic); a mount a SIGKILLed run left is removed by the next one.

use std::ffi::CString;
use std::io::Write;
use std::path::{Path, PathBuf};

pub struct Disk {
    pub dir: PathBuf,
    filler: PathBuf,
    mounted: bool,
    full: bool,
}

/// Size of the tmpfs: room for the routes files and checkpoints of two
/// repeaters, and little to fill.
const SIZE: &str = "size=64k";

impl Disk {
    /// Mounts a tmpfs on `dir` (made if missing). Err says why when the
    /// machine refuses (not root, no mount privilege): the run then keeps
    /// `dir` as a plain directory and skips the disk-full fault.
    pub fn mount(dir: &Path) -> Result<Disk, (Disk, String)> {
        remove_stale();
        let mut disk = Disk {
            dir: dir.to_path_buf(),
            filler: dir.join("filler"),
            mounted: false,
            full: false,
        };
        if let Err(e) = std::fs::create_dir_all(dir) {
            return Err((disk, format!("{}: {e}", dir.display())));
        }
        let (Ok(target), Ok(fstype), Ok(opts)) = (
            CString::new(dir.as_os_str().as_encoded_bytes()),
            CString::new("tmpfs"),
            CString::new(SIZE),
        ) else {
            return Err((disk, "a path with a NUL byte".into()));
        };
        // SAFETY: valid NUL-terminated strings; the data is tmpfs options.
        let rc = unsafe {
            libc::mount(
                fstype.as_ptr(),
                target.as_ptr(),
                fstype.as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV,
                opts.as_ptr().cast(),
            )
        };
        if rc != 0 {
            let e = std::io::Error::last_os_error();
            return Err((disk, format!("mount -t tmpfs -o {SIZE}: {e}")));
        }
        disk.mounted = true;
        Ok(disk)
    }

    pub fn mounted(&self) -> bool {
        self.mounted
    }

    /// Writes the filler until the file system says it is full.
    pub fn is_full(&self) -> bool {
        self.full
    }

    pub fn fill(&mut self) -> Result<(), String> {
        self.full = true;
        let mut f = std::fs::File::create(&self.filler)
            .map_err(|e| format!("{}: {e}", self.filler.display()))?;
        let block = [0u8; 4096];
        // At most 64 KiB fit; the bound only guards against a mount that
        // is not the small tmpfs after all.
        for _ in 0..1024 {
            if f.write_all(&block).is_err() {
                return Ok(());
            }
        }
        Err(format!(
            "{} did not fill up within 4 MiB",
            self.dir.display()
        ))
    }

    pub fn clear(&mut self) -> Result<(), String> {
        self.full = false;
        std::fs::remove_file(&self.filler).map_err(|e| format!("{}: {e}", self.filler.display()))
    }
}

impl Drop for Disk {
    fn drop(&mut self) {
        if self.mounted {
            let _ = unmount(&self.dir);
        }
    }
}

fn unmount(dir: &Path) -> std::io::Result<()> {
    let target = CString::new(dir.as_os_str().as_encoded_bytes())?;
    // SAFETY: a valid NUL-terminated path. MNT_DETACH: a process that still
    // has a file open there (it is being killed) does not keep it mounted.
    if unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Unmounts tmpfs mounts under `/tmp/app-chaos-PID` of runs that no longer
/// exist (the work directory's name carries the driver's pid).
fn remove_stale() {
    let Ok(mounts) = std::fs::read_to_string("/proc/self/mounts") else {
        return;
    };
    for line in mounts.lines() {
        let Some(path) = line.split_whitespace().nth(1) else {
            continue;
        };
        let Some(pid) = path
            .strip_prefix("/tmp/app-chaos-")
            .and_then(|r| r.split('/').next())
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        // SAFETY: signal 0 only checks that the process exists.
        if unsafe { libc::kill(pid, 0) } != 0 {
            let _ = unmount(Path::new(path));
        }
    }
}
