//! A small tmpfs mounted by a test, to make a full disk (root only). Where
//! mounting is refused (not root), [`Tmpfs::mount`] says so in one line and
//! returns `None`, so the test skips; under `APP_TEST_REQUIRE_NETNS=1`
//! (which `.ci/run` sets where it runs as root) that is a failure instead.
//! Unmounted on drop, lazily, so a test that fails still leaves no mount.

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Tmpfs {
    path: PathBuf,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` (as `mount -o size=` takes it) on `path`,
    /// which is created.
    pub fn mount(path: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(path).expect("create the mount point");
        let out = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(path)
            .output();
        match out {
            Ok(o) if o.status.success() => Some(Tmpfs {
                path: path.to_path_buf(),
            }),
            other => {
                let why = match other {
                    Ok(o) => String::from_utf8_lossy(&o.stderr).trim().to_string(),
                    Err(e) => e.to_string(),
                };
                let why = format!("cannot mount a tmpfs (needs root): {why}");
                if std::env::var("APP_TEST_REQUIRE_NETNS").as_deref() == Ok("1") {
                    panic!("APP_TEST_REQUIRE_NETNS=1 but {why}");
                }
                super::tools::skip(&why);
                None
            }
        }
    }

    /// Fills the file system with `name`, to the last byte.
    pub fn fill(&self, name: &str) {
        use std::io::Write;
        let mut f = std::fs::File::create(self.path.join(name)).expect("create the filler");
        let block = vec![0u8; 4096];
        // Bounded by the file system's size.
        while f.write_all(&block).is_ok() {}
        let _ = f.write_all(&[0]);
        let _ = f.sync_all();
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
    }
}
