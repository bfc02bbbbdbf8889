//! The runtime files of a long-running plugin instance named `NAME`, in a
//! directory such as `APP_RUNTIME_DIR/plugins` ([`crate::paths::Dirs::plugin_runtime_dir`]):
//!
//! - `NAME.sock`: the unix socket the instance serves on, mode 0600;
//! - `NAME.pid`: its process id;
//! - `NAME.listen`: its TCP URL (`http://HOST:PORT`), when it has one.
//!
//! [`InstanceFiles::claim`] creates the directory (mode 0700) and makes sure no
//! other instance of that name is running: a socket nothing accepts on (left
//! by a killed process) is replaced, a live one is an error naming its pid.
//! Under systemd, in the unit's `RuntimeDirectory=` (`RUNTIME_DIRECTORY` is
//! set and `dir` is inside it), the directory is 0750 and the socket 0660
//! instead ([`shared_with_group`]): members of the service's group (`app`
//! for the packaged units) may manage it, and the unit's
//! `RuntimeDirectoryMode=` decides who reaches the directory at all.
//!
//! The socket is bound last ([`InstanceFiles::bind`]) and appears all at once,
//! so a client that sees it also finds the other files. The files the
//! instance created are removed when [`InstanceFiles`] drops, socket first.
//!
//! Only the standard library is used: an async plugin converts the listener,
//! e.g. `listener.set_nonblocking(true)?; tokio::net::UnixListener::from_std(listener)?`.
//!
//! ```
//! use app_plugin::instance::InstanceFiles;
//!
//! let tmp = tempfile::tempdir().unwrap();
//! let dir = tmp.path().join("plugins");
//! let mut files = InstanceFiles::claim(&dir, "demo")?;
//! files.write_listen("http://127.0.0.1:8080")?;
//! files.write_pid()?;
//! let listener = files.bind()?; // last: the socket appears with the others in place
//! assert!(files.socket().exists() && files.pid_path().exists());
//! drop(listener);
//! drop(files);
//! assert_eq!(std::fs::read_dir(&dir)?.count(), 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

mod error;

use error::io_err;
pub use error::{check_name, ClaimError, NameError, MAX_NAME_LEN};

/// Unblocks SIGTERM and SIGINT for this thread and the threads it starts.
///
/// A signal mask survives exec: a parent that blocked the stop signals (as
/// `app` does while it waits for listeners, or a service manager might)
/// would otherwise leave a long-running plugin's SIGTERM pending forever.
/// Call it first thing in `main`, before an async runtime starts threads.
///
/// ```
/// app_plugin::instance::unblock_stop_signals();
/// ```
pub fn unblock_stop_signals() {
    // SAFETY: sigset_t is plain data initialised by sigemptyset before use;
    // pthread_sigmask only changes this thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
    }
}

/// The runtime files of one instance; those it created are removed on drop,
/// the socket first, so that no client takes a stopping instance for a live
/// one.
///
/// ```
/// # use app_plugin::instance::InstanceFiles;
/// let tmp = tempfile::tempdir().unwrap();
/// let mut files = InstanceFiles::claim(tmp.path(), "demo")?;
/// let _listener = files.bind()?;
/// drop(files);
/// assert!(!tmp.path().join("demo.sock").exists());
/// # Ok::<(), app_plugin::instance::ClaimError>(())
/// ```
#[derive(Debug)]
pub struct InstanceFiles {
    socket: PathBuf,
    pid: PathBuf,
    listen: PathBuf,
    replaced_stale: bool,
    bound: bool,
    wrote_pid: bool,
    wrote_listen: bool,
    /// Modes for the group too (see [`shared_with_group`]).
    group: bool,
}

impl InstanceFiles {
    /// Claims the place of instance `name` (a plain file name) in `dir`:
    /// creates `dir` with mode 0700, refuses with [`ClaimError::Running`] if
    /// an instance answers on `name.sock` (leaving its files alone), removes
    /// a socket nothing accepts on and the `name.listen` a dead instance may
    /// have left. Nothing of this instance exists yet.
    ///
    /// ```
    /// # use app_plugin::instance::{ClaimError, InstanceFiles};
    /// let tmp = tempfile::tempdir().unwrap();
    /// let mut first = InstanceFiles::claim(tmp.path(), "demo")?;
    /// first.write_pid()?;
    /// let _listener = first.bind()?;
    /// let err = InstanceFiles::claim(tmp.path(), "demo").unwrap_err();
    /// assert!(matches!(err, ClaimError::Running { pid: Some(_), .. }), "{err}");
    /// # Ok::<(), ClaimError>(())
    /// ```
    pub fn claim(dir: &Path, name: &str) -> Result<InstanceFiles, ClaimError> {
        if let Err(e) = check_name(name) {
            return Err(ClaimError::BadName(e));
        }
        let group = shared_with_group(dir, std::env::var_os("RUNTIME_DIRECTORY").as_deref());
        let dir_mode = if group { 0o750 } else { 0o700 };
        fs::DirBuilder::new()
            .recursive(true)
            .mode(dir_mode)
            .create(dir)
            .map_err(io_err("create the directory", dir))?;
        fs::set_permissions(dir, fs::Permissions::from_mode(dir_mode))
            .map_err(io_err("set the mode of", dir))?;
        let mut files = InstanceFiles {
            socket: dir.join(format!("{name}.sock")),
            pid: dir.join(format!("{name}.pid")),
            listen: dir.join(format!("{name}.listen")),
            replaced_stale: false,
            bound: false,
            wrote_pid: false,
            wrote_listen: false,
            group,
        };
        files.replaced_stale = clear_stale(&files.socket, &files.pid)?;
        // A `.listen` file from a dead instance must not point at its port.
        let _ = remove_if_exists(&files.listen);
        Ok(files)
    }

    /// Whether [`claim`](InstanceFiles::claim) removed a socket left by a
    /// process that is gone; the plugin may log it.
    ///
    /// ```
    /// # use app_plugin::instance::InstanceFiles;
    /// let tmp = tempfile::tempdir().unwrap();
    /// // A socket nothing listens on, as a killed process leaves it.
    /// drop(std::os::unix::net::UnixListener::bind(tmp.path().join("demo.sock")).unwrap());
    /// let files = InstanceFiles::claim(tmp.path(), "demo")?;
    /// assert!(files.replaced_stale());
    /// # Ok::<(), app_plugin::instance::ClaimError>(())
    /// ```
    pub fn replaced_stale(&self) -> bool {
        self.replaced_stale
    }

    /// Writes this process's id to `name.pid` (mode 0600, atomically).
    ///
    /// ```
    /// # use app_plugin::instance::InstanceFiles;
    /// let tmp = tempfile::tempdir().unwrap();
    /// let mut files = InstanceFiles::claim(tmp.path(), "demo")?;
    /// files.write_pid()?;
    /// let pid = std::fs::read_to_string(files.pid_path()).unwrap();
    /// assert_eq!(pid, format!("{}\n", std::process::id()));
    /// # Ok::<(), app_plugin::instance::ClaimError>(())
    /// ```
    pub fn write_pid(&mut self) -> Result<(), ClaimError> {
        write_atomic(&self.pid, &format!("{}\n", std::process::id()), self.group)?;
        self.wrote_pid = true;
        Ok(())
    }

    /// Writes the instance's TCP URL (e.g. `http://127.0.0.1:8080`) as one
    /// line to `name.listen` (mode 0600, atomically).
    ///
    /// ```
    /// # use app_plugin::instance::InstanceFiles;
    /// let tmp = tempfile::tempdir().unwrap();
    /// let mut files = InstanceFiles::claim(tmp.path(), "demo")?;
    /// files.write_listen("http://127.0.0.1:8080")?;
    /// let url = std::fs::read_to_string(files.listen_path()).unwrap();
    /// assert_eq!(url, "http://127.0.0.1:8080\n");
    /// # Ok::<(), app_plugin::instance::ClaimError>(())
    /// ```
    pub fn write_listen(&mut self, url: &str) -> Result<(), ClaimError> {
        write_atomic(&self.listen, &format!("{url}\n"), self.group)?;
        self.wrote_listen = true;
        Ok(())
    }

    /// Binds `name.sock` with mode 0600. The socket is bound under a
    /// temporary name and renamed into place, so it appears all at once with
    /// its mode set; call this last, so that a client that sees the socket
    /// also finds the pid and listen files.
    ///
    /// ```
    /// # use std::os::unix::fs::PermissionsExt;
    /// # use app_plugin::instance::InstanceFiles;
    /// let tmp = tempfile::tempdir().unwrap();
    /// let mut files = InstanceFiles::claim(tmp.path(), "demo")?;
    /// let listener = files.bind()?;
    /// let mode = std::fs::metadata(files.socket()).unwrap().permissions().mode();
    /// assert_eq!(mode & 0o777, 0o600);
    /// std::os::unix::net::UnixStream::connect(files.socket()).unwrap();
    /// assert!(listener.accept().is_ok());
    /// # Ok::<(), app_plugin::instance::ClaimError>(())
    /// ```
    pub fn bind(&mut self) -> Result<UnixListener, ClaimError> {
        // Hidden, and not ending in `.sock`, so that nobody takes it for an
        // instance while it exists.
        let tmp = self.socket.with_file_name(format!(
            ".{}.tmp{}",
            file_name(&self.socket),
            std::process::id()
        ));
        let _ = remove_if_exists(&tmp);
        let listener = UnixListener::bind(&tmp).map_err(io_err("listen on", &self.socket))?;
        let mode = if self.group { 0o660 } else { 0o600 };
        let placed = fs::set_permissions(&tmp, fs::Permissions::from_mode(mode))
            .map_err(io_err("set the mode of", &tmp))
            .and_then(|()| fs::rename(&tmp, &self.socket).map_err(io_err("create", &self.socket)));
        if let Err(e) = placed {
            let _ = remove_if_exists(&tmp);
            return Err(e);
        }
        self.bound = true;
        Ok(listener)
    }

    /// The socket's path, `dir/name.sock`.
    ///
    /// ```
    /// # use app_plugin::instance::InstanceFiles;
    /// let tmp = tempfile::tempdir().unwrap();
    /// let files = InstanceFiles::claim(tmp.path(), "demo")?;
    /// assert_eq!(files.socket(), tmp.path().join("demo.sock"));
    /// # Ok::<(), app_plugin::instance::ClaimError>(())
    /// ```
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The pid file's path, `dir/name.pid`.
    ///
    /// ```
    /// # use app_plugin::instance::InstanceFiles;
    /// let tmp = tempfile::tempdir().unwrap();
    /// let files = InstanceFiles::claim(tmp.path(), "demo")?;
    /// assert_eq!(files.pid_path(), tmp.path().join("demo.pid"));
    /// # Ok::<(), app_plugin::instance::ClaimError>(())
    /// ```
    pub fn pid_path(&self) -> &Path {
        &self.pid
    }

    /// The listen file's path, `dir/name.listen`.
    ///
    /// ```
    /// # use app_plugin::instance::InstanceFiles;
    /// let tmp = tempfile::tempdir().unwrap();
    /// let files = InstanceFiles::claim(tmp.path(), "demo")?;
    /// assert_eq!(files.listen_path(), tmp.path().join("demo.listen"));
    /// # Ok::<(), app_plugin::instance::ClaimError>(())
    /// ```
    pub fn listen_path(&self) -> &Path {
        &self.listen
    }
}

impl Drop for InstanceFiles {
    fn drop(&mut self) {
        // The socket first: once it is gone, no client takes this instance
        // for a live one. Errors are ignored: the process is stopping, and a
        // leftover file is handled by the next `claim`.
        for (created, path) in [
            (self.bound, &self.socket),
            (self.wrote_pid, &self.pid),
            (self.wrote_listen, &self.listen),
        ] {
            if created {
                let _ = remove_if_exists(path);
            }
        }
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Removes a socket nothing accepts on (returns whether there was one);
/// refuses when an instance answers.
fn clear_stale(socket: &Path, pid_file: &Path) -> Result<bool, ClaimError> {
    let meta = match fs::symlink_metadata(socket) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(io_err("inspect", socket)(e)),
    };
    if !meta.file_type().is_socket() {
        return Err(ClaimError::NotASocket(socket.to_path_buf()));
    }
    if UnixStream::connect(socket).is_ok() {
        let pid = crate::file::read_limited(pid_file, 64)
            .ok()
            .and_then(|p| String::from_utf8(p).ok())
            .and_then(|p| p.trim().parse().ok());
        return Err(ClaimError::Running {
            socket: socket.to_path_buf(),
            pid,
        });
    }
    remove_if_exists(socket).map_err(io_err("remove the stale socket", socket))?;
    Ok(true)
}

fn remove_if_exists(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Whether instance files in `dir` are shared with the group: `dir` is in
/// one of the directories of `runtime_directory` (systemd's
/// `RUNTIME_DIRECTORY`, colon-separated).
///
/// ```
/// use std::ffi::OsStr;
/// use std::path::Path;
/// use app_plugin::instance::shared_with_group;
/// let run = Some(OsStr::new("/run/app"));
/// assert!(shared_with_group(Path::new("/run/app/plugins"), run));
/// assert!(!shared_with_group(Path::new("/run/user/1000/app/plugins"), run));
/// assert!(!shared_with_group(Path::new("/run/app/plugins"), None));
/// ```
pub fn shared_with_group(dir: &Path, runtime_directory: Option<&std::ffi::OsStr>) -> bool {
    runtime_directory.is_some_and(|dirs| {
        std::env::split_paths(dirs).any(|d| d.is_absolute() && dir.starts_with(&d))
    })
}

/// Writes `text` to `path` (mode 0600, 0640 when shared with the group)
/// with [`file::write_atomic_via`](crate::file::write_atomic_via), so a
/// reader never sees half a file.
fn write_atomic(path: &Path, text: &str, group: bool) -> Result<(), ClaimError> {
    let tmp = path.with_file_name(format!(".{}.tmp{}", file_name(path), std::process::id()));
    let mode = if group { 0o640 } else { 0o600 };
    crate::file::write_atomic_via(path, &tmp, text.as_bytes(), mode, true)
        .map_err(io_err("write", path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(p: &Path) -> u32 {
        fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn binds_writes_and_cleans_up() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("plugins");
        let mut files = InstanceFiles::claim(&dir, "t").unwrap();
        assert!(!files.replaced_stale());
        files.write_pid().unwrap();
        let _listener = files.bind().unwrap();
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join("t.sock")), 0o600);
        assert_eq!(mode(&dir.join("t.pid")), 0o600);
        let pid = fs::read_to_string(dir.join("t.pid")).unwrap();
        assert_eq!(pid.trim(), std::process::id().to_string());
        files.write_listen("http://127.0.0.1:5").unwrap();
        assert_eq!(
            fs::read_to_string(dir.join("t.listen")).unwrap(),
            "http://127.0.0.1:5\n"
        );
        let mut names: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["t.listen", "t.pid", "t.sock"], "no temporary left");
        drop(files);
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 0);
    }

    #[test]
    fn an_existing_directory_is_restricted_to_0700() {
        let tmp = tempfile::tempdir().unwrap();
        fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o755)).unwrap();
        let _files = InstanceFiles::claim(tmp.path(), "t").unwrap();
        assert_eq!(mode(tmp.path()), 0o700);
    }

    #[test]
    fn live_socket_is_refused_stale_one_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        let mut files = InstanceFiles::claim(&dir, "t").unwrap();
        files.write_pid().unwrap();
        files.write_listen("http://127.0.0.1:5").unwrap();
        let live = files.bind().unwrap();
        let err = InstanceFiles::claim(&dir, "t").unwrap_err();
        for f in ["t.sock", "t.pid", "t.listen"] {
            assert!(dir.join(f).exists(), "a refused start keeps the live {f}");
        }
        let ClaimError::Running { pid, .. } = &err else {
            panic!("{err}")
        };
        assert_eq!(*pid, Some(std::process::id()));
        let pid_text = format!("pid {}", std::process::id());
        assert!(err.to_string().contains(&pid_text), "{err}");
        assert!(err.to_string().contains("already running"), "{err}");
        // Closing the listener without removing the file leaves a stale socket.
        drop(live);
        std::mem::forget(files);
        let mut again = InstanceFiles::claim(&dir, "t").unwrap();
        assert!(again.replaced_stale());
        assert!(
            !dir.join("t.listen").exists(),
            "a dead instance's listen file is removed"
        );
        again.bind().unwrap();
    }

    #[test]
    fn a_regular_file_is_not_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("t.sock"), "x").unwrap();
        let err = InstanceFiles::claim(tmp.path(), "t").unwrap_err();
        assert!(matches!(err, ClaimError::NotASocket(_)), "{err}");
        assert_eq!(fs::read_to_string(tmp.path().join("t.sock")).unwrap(), "x");
    }

    #[test]
    fn drop_removes_only_what_it_created() {
        let tmp = tempfile::tempdir().unwrap();
        let mut files = InstanceFiles::claim(tmp.path(), "t").unwrap();
        files.write_listen("http://127.0.0.1:5").unwrap();
        // Written by someone else: not this instance's to remove.
        fs::write(tmp.path().join("t.pid"), "1\n").unwrap();
        drop(files);
        assert!(!tmp.path().join("t.listen").exists());
        assert!(tmp.path().join("t.pid").exists());
    }
}
