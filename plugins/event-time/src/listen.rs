//! The runtime files of a running instance named N, in
//! `APP_RUNTIME_DIR/plugins/` (mode 0700): the socket `N.sock` (mode 0600),
//! `N.pid`, and `N.listen` with the TCP URL when `--listen` is given.
//!
//! A socket left behind by a dead process (nothing accepts on it) is
//! replaced; a live one means another instance runs under that name, and
//! starting is refused. The files are removed when [`RuntimeFiles`] drops.

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

/// The files of this instance; removed on drop.
#[derive(Debug)]
pub struct RuntimeFiles {
    socket: PathBuf,
    pid: PathBuf,
    listen: PathBuf,
}

impl RuntimeFiles {
    /// Takes the place of instance `name` in `dir`: creates `dir` (0700),
    /// replaces a stale socket, binds `name.sock` (0600) and writes
    /// `name.pid`.
    pub fn bind(dir: &Path, name: &str) -> Result<(UnixListener, RuntimeFiles), ListenError> {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io_err("create the directory", dir))?;
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
            .map_err(io_err("set the mode of", dir))?;
        let socket = dir.join(format!("{name}.sock"));
        let pid = dir.join(format!("{name}.pid"));
        clear_stale(&socket, &pid)?;
        let listener = UnixListener::bind(&socket).map_err(io_err("listen on", &socket))?;
        // Only now are the files ours: from here on, dropping `files` removes
        // them (never before, or a refused start would delete a live
        // instance's socket).
        let files = RuntimeFiles {
            socket,
            pid,
            listen: dir.join(format!("{name}.listen")),
        };
        fs::set_permissions(&files.socket, fs::Permissions::from_mode(0o600))
            .map_err(io_err("set the mode of", &files.socket))?;
        write_atomic(&files.pid, &format!("{}\n", std::process::id()))?;
        // A `.listen` file from an earlier run must not point at a dead port.
        remove_if_exists(&files.listen);
        Ok((listener, files))
    }

    /// Records the TCP address in `name.listen` as `http://ADDR`.
    pub fn write_listen(&self, addr: SocketAddr) -> Result<(), ListenError> {
        write_atomic(&self.listen, &format!("http://{addr}\n"))
    }

    /// The socket path.
    pub fn socket(&self) -> &Path {
        &self.socket
    }
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
        for path in [&self.socket, &self.pid, &self.listen] {
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
        let (_listener, files) = RuntimeFiles::bind(&dir, "t").unwrap();
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
        let (live, files) = RuntimeFiles::bind(&dir, "t").unwrap();
        let err = RuntimeFiles::bind(&dir, "t").unwrap_err();
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
        let (_again, _files) = RuntimeFiles::bind(&dir, "t").unwrap();
    }

    #[test]
    fn a_regular_file_is_not_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("t.sock"), "x").unwrap();
        let err = RuntimeFiles::bind(tmp.path(), "t").unwrap_err();
        assert!(matches!(err, ListenError::NotASocket(_)));
    }
}
