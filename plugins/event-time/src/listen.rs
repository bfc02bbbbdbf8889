//! The runtime files of a running instance named N, in
//! `APP_RUNTIME_DIR/plugins/` (mode 0700): `N.pid`, `N.listen` with the TCP
//! URL when `--listen` is given, and the socket `N.sock` (mode 0600), which
//! appears last and all at once, so a client that sees it finds the others.
//!
//! A socket left behind by a dead process (nothing accepts on it) is
//! replaced; a live one means another instance runs under that name, and
//! starting is refused without touching its files. The files this instance
//! created are removed when [`RuntimeFiles`] drops.

use std::fs;
use std::io;
use std::net::SocketAddr;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

/// Why the instance could not take its place.
#[derive(Debug)]
pub enum ListenError {
    /// Another instance answers on the socket.
    Running { socket: PathBuf, pid: Option<u32> },
    /// Something other than a socket is where the socket goes.
    NotASocket(PathBuf),
    /// A file operation failed.
    Io {
        what: &'static str,
        path: PathBuf,
        err: io::Error,
    },
}

impl std::fmt::Display for ListenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ListenError::Running { socket, pid } => {
                let pid = pid.map_or(String::new(), |p| format!(" (pid {p})"));
                write!(
                    f,
                    "another instance is already running on {}{pid}; stop it, or start this one with another --name",
                    socket.display()
                )
            }
            ListenError::NotASocket(path) => write!(
                f,
                "{} exists and is not a socket; remove it or choose another --name",
                path.display()
            ),
            ListenError::Io { what, path, err } => {
                write!(f, "cannot {what} {}: {err}", path.display())
            }
        }
    }
}

impl std::error::Error for ListenError {}

fn io_err(what: &'static str, path: &Path) -> impl FnOnce(io::Error) -> ListenError {
    let path = path.to_path_buf();
    move |err| ListenError::Io { what, path, err }
}

/// The files of this instance; those it created are removed on drop.
#[derive(Debug)]
pub struct RuntimeFiles {
    socket: PathBuf,
    pid: PathBuf,
    listen: PathBuf,
    created: Vec<PathBuf>,
}

impl RuntimeFiles {
    /// Claims the place of instance `name` in `dir`: creates `dir` (0700),
    /// refuses if a live instance answers on `name.sock`, and removes what a
    /// dead one left. Nothing of this instance exists yet.
    pub fn claim(dir: &Path, name: &str) -> Result<RuntimeFiles, ListenError> {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io_err("create the directory", dir))?;
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
            .map_err(io_err("set the mode of", dir))?;
        let files = RuntimeFiles {
            socket: dir.join(format!("{name}.sock")),
            pid: dir.join(format!("{name}.pid")),
            listen: dir.join(format!("{name}.listen")),
            created: Vec::new(),
        };
        clear_stale(&files.socket, &files.pid)?;
        // A `.listen` file from a dead instance must not point at its port.
        remove_if_exists(&files.listen);
        Ok(files)
    }

    /// Writes `name.pid`.
    pub fn write_pid(&mut self) -> Result<(), ListenError> {
        write_atomic(&self.pid, &format!("{}\n", std::process::id()))?;
        self.created.push(self.pid.clone());
        Ok(())
    }

    /// Records the TCP address in `name.listen` as `http://ADDR`.
    pub fn write_listen(&mut self, addr: SocketAddr) -> Result<(), ListenError> {
        write_atomic(&self.listen, &format!("http://{addr}\n"))?;
        self.created.push(self.listen.clone());
        Ok(())
    }

    /// Binds `name.sock` with mode 0600. The socket is bound under a
    /// temporary name and renamed into place, so it appears all at once,
    /// with its mode set; call this last, so that a client that sees the
    /// socket also finds the pid and listen files.
    pub fn bind(&mut self) -> Result<UnixListener, ListenError> {
        let tmp = self.socket.with_file_name(format!(
            ".{}.{}",
            std::process::id(),
            file_name(&self.socket)
        ));
        remove_if_exists(&tmp);
        let listener = UnixListener::bind(&tmp).map_err(io_err("listen on", &self.socket))?;
        let placed = fs::set_permissions(&tmp, fs::Permissions::from_mode(0o600))
            .map_err(io_err("set the mode of", &tmp))
            .and_then(|()| fs::rename(&tmp, &self.socket).map_err(io_err("create", &self.socket)));
        if let Err(e) = placed {
            remove_if_exists(&tmp);
            return Err(e);
        }
        self.created.push(self.socket.clone());
        Ok(listener)
    }

    /// The socket path.
    pub fn socket(&self) -> &Path {
        &self.socket
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Removes a socket nothing accepts on; refuses when an instance answers.
fn clear_stale(socket: &Path, pid_file: &Path) -> Result<(), ListenError> {
    let meta = match fs::symlink_metadata(socket) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_err("inspect", socket)(e)),
    };
    if !meta.file_type().is_socket() {
        return Err(ListenError::NotASocket(socket.to_path_buf()));
    }
    if UnixStream::connect(socket).is_ok() {
        let pid = fs::read_to_string(pid_file)
            .ok()
            .and_then(|p| p.trim().parse().ok());
        return Err(ListenError::Running {
            socket: socket.to_path_buf(),
            pid,
        });
    }
    crate::log!(
        crate::log::INFO,
        "replacing the stale socket {} left by a process that is gone",
        socket.display()
    );
    match fs::remove_file(socket) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => {
            Err(io_err("remove the stale socket", socket)(e))
        }
        _ => Ok(()),
    }
}

impl Drop for RuntimeFiles {
    fn drop(&mut self) {
        // The socket first: once it is gone, no client takes this instance
        // for a live one.
        for path in self.created.iter().rev() {
            remove_if_exists(path);
        }
    }
}

fn remove_if_exists(path: &Path) {
    if let Err(e) = fs::remove_file(path) {
        if e.kind() != io::ErrorKind::NotFound {
            crate::log!(crate::log::WARN, "cannot remove {}: {e}", path.display());
        }
    }
}

/// Writes `text` to `path` through a temporary file and a rename, so a
/// reader never sees half a file.
fn write_atomic(path: &Path, text: &str) -> Result<(), ListenError> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    fs::write(&tmp, text).map_err(io_err("write", &tmp))?;
    fs::rename(&tmp, path).map_err(|e| {
        remove_if_exists(&tmp);
        io_err("write", path)(e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binds_writes_and_cleans_up() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("plugins");
        let mut files = RuntimeFiles::claim(&dir, "t").unwrap();
        files.write_pid().unwrap();
        let _listener = files.bind().unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join("t.sock")), 0o600);
        let pid = fs::read_to_string(dir.join("t.pid")).unwrap();
        assert_eq!(pid.trim(), std::process::id().to_string());
        files.write_listen("127.0.0.1:5".parse().unwrap()).unwrap();
        assert_eq!(
            fs::read_to_string(dir.join("t.listen")).unwrap(),
            "http://127.0.0.1:5\n"
        );
        drop(files);
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 0);
    }

    #[test]
    fn live_socket_is_refused_stale_one_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        let mut files = RuntimeFiles::claim(&dir, "t").unwrap();
        files.write_pid().unwrap();
        let live = files.bind().unwrap();
        let err = RuntimeFiles::claim(&dir, "t").unwrap_err();
        assert!(
            dir.join("t.sock").exists(),
            "a refused start keeps the live socket"
        );
        assert!(
            dir.join("t.pid").exists(),
            "a refused start keeps the live pid file"
        );
        assert!(
            matches!(err, ListenError::Running { pid: Some(_), .. }),
            "{err}"
        );
        // Closing the listener without removing the file leaves a stale socket.
        drop(live);
        std::mem::forget(files);
        let mut again = RuntimeFiles::claim(&dir, "t").unwrap();
        again.bind().unwrap();
    }

    #[test]
    fn a_regular_file_is_not_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("t.sock"), "x").unwrap();
        let err = RuntimeFiles::claim(tmp.path(), "t").unwrap_err();
        assert!(matches!(err, ListenError::NotASocket(_)));
    }
}
