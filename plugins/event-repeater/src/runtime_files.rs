//! The instance's files in `APP_RUNTIME_DIR/plugins`: the API socket
//! (`NAME.sock`, mode 0600, directory 0700), `NAME.pid` and, with `--listen`,
//! `NAME.listen` holding the TCP URL. A socket left by a dead process is
//! replaced; a live one means another instance is running, which is an error.

use std::fs;
use std::io::{self, ErrorKind};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::config::Config;

/// Removes the files it created when dropped.
pub struct RuntimeFiles {
    created: Vec<PathBuf>,
}

impl RuntimeFiles {
    /// Creates the directory and checks that no live instance holds the socket.
    pub fn prepare(cfg: &Config) -> Result<RuntimeFiles, String> {
        let dir = &cfg.runtime_dir;
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
            .map_err(|e| format!("cannot set mode 0700 on {}: {e}", dir.display()))?;
        let socket = cfg.socket_path();
        match std::os::unix::net::UnixStream::connect(&socket) {
            Ok(_) => {
                let pid = fs::read_to_string(cfg.pid_path())
                    .ok()
                    .map(|p| format!("pid {}, ", p.trim()))
                    .unwrap_or_default();
                return Err(format!(
                    "another event repeater named {:?} is already running ({pid}socket {}); stop it first or choose another --name",
                    cfg.name,
                    socket.display()
                ));
            }
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(_) => {
                // Nobody listens: a socket left by a dead process.
                let meta = fs::symlink_metadata(&socket)
                    .map_err(|e| format!("cannot inspect {}: {e}", socket.display()))?;
                use std::os::unix::fs::FileTypeExt;
                if !meta.file_type().is_socket() {
                    return Err(format!(
                        "{} exists and is not a socket; remove it or choose another --name",
                        socket.display()
                    ));
                }
                fs::remove_file(&socket).map_err(|e| {
                    format!("cannot remove the stale socket {}: {e}", socket.display())
                })?;
                crate::info!("replaced the stale socket {}", socket.display());
            }
        }
        Ok(RuntimeFiles {
            created: Vec::new(),
        })
    }

    /// Records a file to remove on shutdown.
    pub fn track(&mut self, path: PathBuf) {
        self.created.push(path);
    }

    /// Writes `text` to `path` (mode 0600) and tracks it.
    pub fn write(&mut self, path: &Path, text: &str) -> io::Result<()> {
        let tmp = path.with_extension("tmp");
        fs::write(&tmp, text)?;
        fs::set_permissions(&tmp, fs::Permissions::from_mode(0o600))?;
        fs::rename(&tmp, path)?;
        self.track(path.to_path_buf());
        Ok(())
    }

    pub fn remove_all(&mut self) {
        for path in self.created.drain(..) {
            let _ = fs::remove_file(path);
        }
    }
}

impl Drop for RuntimeFiles {
    fn drop(&mut self) {
        self.remove_all();
    }
}

/// Binds the API socket and restricts it to the owner.
pub fn bind_socket(path: &Path) -> Result<tokio::net::UnixListener, String> {
    let listener = tokio::net::UnixListener::bind(path)
        .map_err(|e| format!("cannot listen on {}: {e}", path.display()))?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o600))
        .map_err(|e| format!("cannot set mode 0600 on {}: {e}", path.display()))?;
    Ok(listener)
}
