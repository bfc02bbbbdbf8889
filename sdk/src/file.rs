//! Reading a file a user named (`--config`, `--password-file`, a state or
//! certificate file): only a regular file, and only up to a limit; and
//! replacing a file atomically ([`write_atomic`]).
//!
//! `open()` on a FIFO blocks until a writer comes, and `/dev/zero` never
//! ends; a plugin that reads such a path hangs or fills its memory.
//! [`read_limited`] opens without blocking, checks the open file (so nothing
//! can be swapped in between a check and the open), and reads at most the
//! limit even if the file grows meanwhile.
//!
//! ```
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("token");
//! std::fs::write(&path, "s3cret\n").unwrap();
//! assert_eq!(app_plugin::file::read_limited(&path, 1024).unwrap(), b"s3cret\n");
//! ```

use std::fmt;
use std::fs::{self, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

mod secret;
pub use secret::read_secret;

/// Why [`read_limited`] read nothing.
#[derive(Debug)]
pub enum ReadError {
    /// There is no such file.
    NotFound,
    /// A directory, FIFO, device or socket: its kind, e.g. `"FIFO"`.
    NotRegular(&'static str),
    /// Over the limit: the size seen (the file's, or what was read of it
    /// when it grew while being read) and the limit.
    TooLarge {
        /// Bytes seen.
        len: u64,
        /// The limit.
        max: u64,
    },
    /// The operating system refused.
    Io(io::Error),
}

impl fmt::Display for ReadError {
    /// A phrase to follow the path: "is a FIFO, not a regular file".
    ///
    /// ```
    /// use app_plugin::file::ReadError;
    /// assert_eq!(ReadError::NotRegular("FIFO").to_string(), "is a FIFO, not a regular file");
    /// assert_eq!(
    ///     ReadError::TooLarge { len: 10, max: 4 }.to_string(),
    ///     "is 10 bytes, over the limit of 4"
    /// );
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::NotFound => f.write_str("does not exist"),
            ReadError::NotRegular(kind) => write!(f, "is a {kind}, not a regular file"),
            ReadError::TooLarge { len, max } => {
                write!(f, "is {len} bytes, over the limit of {max}")
            }
            ReadError::Io(e) => write!(f, "cannot be read: {e}"),
        }
    }
}

impl std::error::Error for ReadError {}

/// The kind of a file that is not a regular file, for messages.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let kind = std::fs::metadata(dir.path()).unwrap().file_type();
/// assert_eq!(app_plugin::file::not_regular(kind), Some("directory"));
/// ```
pub fn not_regular(file_type: fs::FileType) -> Option<&'static str> {
    if file_type.is_file() {
        None
    } else if file_type.is_dir() {
        Some("directory")
    } else if file_type.is_fifo() {
        Some("FIFO")
    } else if file_type.is_char_device() {
        Some("character device")
    } else if file_type.is_block_device() {
        Some("block device")
    } else if file_type.is_socket() {
        Some("socket")
    } else {
        Some("special file")
    }
}

/// Opens `path` for reading without blocking: O_NONBLOCK makes opening a
/// FIFO return at once instead of waiting for a writer; the caller then
/// checks what the open file is.
fn open_nonblocking(path: &Path) -> Result<std::fs::File, ReadError> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => ReadError::NotFound,
            _ => ReadError::Io(e),
        })
}

/// The bytes of `path` if it is a regular file of at most `max` bytes.
///
/// ```
/// use app_plugin::file::{read_limited, ReadError};
/// let dir = tempfile::tempdir().unwrap();
/// assert!(matches!(read_limited(&dir.path().join("none"), 10), Err(ReadError::NotFound)));
/// assert!(matches!(read_limited(dir.path(), 10), Err(ReadError::NotRegular("directory"))));
/// assert!(matches!(
///     read_limited(std::path::Path::new("/dev/zero"), 10),
///     Err(ReadError::NotRegular("character device"))
/// ));
/// ```
pub fn read_limited(path: &Path, max: u64) -> Result<Vec<u8>, ReadError> {
    read_with_mode(path, max).map(|(bytes, _)| bytes)
}

/// [`read_limited`], with the open file's permission bits.
pub(crate) fn read_with_mode(path: &Path, max: u64) -> Result<(Vec<u8>, u32), ReadError> {
    use std::os::unix::fs::PermissionsExt;
    let file = open_nonblocking(path)?;
    let meta = file.metadata().map_err(ReadError::Io)?;
    let mode = meta.permissions().mode();
    if let Some(kind) = not_regular(meta.file_type()) {
        return Err(ReadError::NotRegular(kind));
    }
    if meta.len() > max {
        return Err(ReadError::TooLarge {
            len: meta.len(),
            max,
        });
    }
    let mut bytes = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() as u64 > max {
        return Err(ReadError::TooLarge {
            len: bytes.len() as u64,
            max,
        });
    }
    Ok((bytes, mode))
}

/// Like [`read_limited`], but a pipe is also read: a FIFO or socket such as
/// `<(command)` (`/dev/fd/63`), `/dev/stdin` or a named FIFO, up to `max`
/// bytes and until `timeout` has passed since the call, whichever comes
/// first (then `ReadError::Io` of kind `TimedOut`). A named FIFO nobody
/// opens for writing waits out `timeout` (Linux reports no hang-up before a
/// first writer); nothing blocks beyond it. Devices and directories are
/// still refused.
///
/// ```
/// use std::io::Write;
/// use std::time::Duration;
/// let mut child = std::process::Command::new("sh")
///     .args(["-c", "printf '[1,2]'"])
///     .stdout(std::process::Stdio::piped())
///     .spawn()
///     .unwrap();
/// let pipe = format!("/dev/fd/{}", std::os::fd::AsRawFd::as_raw_fd(child.stdout.as_ref().unwrap()));
/// let bytes = app_plugin::file::read_limited_or_pipe(pipe.as_ref(), 100, Duration::from_secs(5)).unwrap();
/// assert_eq!(bytes, b"[1,2]");
/// child.wait().unwrap();
/// ```
pub fn read_limited_or_pipe(
    path: &Path,
    max: u64,
    timeout: std::time::Duration,
) -> Result<Vec<u8>, ReadError> {
    let file = open_nonblocking(path)?;
    let kind = file.metadata().map_err(ReadError::Io)?.file_type();
    if kind.is_fifo() || kind.is_socket() {
        return read_stream(&file, max, timeout);
    }
    drop(file);
    read_limited(path, max)
}

/// Reads `file` (a pipe, a socket, a terminal: anything `poll` works on) to
/// its end, at most `max` bytes, giving up when `timeout` has passed.
///
/// ```
/// use std::time::Duration;
/// let mut child = std::process::Command::new("true")
///     .stdout(std::process::Stdio::piped())
///     .spawn()
///     .unwrap();
/// let out = child.stdout.take().unwrap();
/// let got = app_plugin::file::read_stream(&out, 10, Duration::from_secs(5)).unwrap();
/// assert!(got.is_empty());
/// child.wait().unwrap();
/// ```
pub fn read_stream(
    file: &impl std::os::fd::AsRawFd,
    max: u64,
    timeout: std::time::Duration,
) -> Result<Vec<u8>, ReadError> {
    let fd = file.as_raw_fd();
    let deadline = std::time::Instant::now() + timeout;
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(ReadError::Io(timed_out(timeout)));
        }
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = left.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
        // SAFETY: one valid pollfd for the duration of the call.
        let ready = unsafe { libc::poll(&mut pfd, 1, ms) };
        if ready < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(ReadError::Io(e));
        }
        if ready == 0 {
            continue;
        }
        // SAFETY: `chunk` is valid for writes of its length.
        let n = unsafe { libc::read(fd, chunk.as_mut_ptr().cast(), chunk.len()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if matches!(
                e.kind(),
                io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
            ) {
                continue;
            }
            return Err(ReadError::Io(e));
        }
        if n == 0 {
            return Ok(bytes);
        }
        bytes.extend_from_slice(&chunk[..n as usize]);
        if bytes.len() as u64 > max {
            return Err(ReadError::TooLarge {
                len: bytes.len() as u64,
                max,
            });
        }
    }
}

/// The error of a pipe that did not end in time (`ErrorKind::TimedOut`).
fn timed_out(limit: std::time::Duration) -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        format!(
            "its end did not come within {} s (the writer must finish and close it)",
            limit.as_secs_f64()
        ),
    )
}

/// A reader of a pipe or terminal (stdin) whose reads fail with
/// `TimedOut` once `timeout` has passed since the first read: a command that
/// reads its input from stdin ends even when the writer never closes it.
/// It polls the descriptor, so it must be the first reader of it (a
/// buffered reader before it may hold bytes the poll cannot see).
///
/// ```
/// use std::io::Read;
/// use std::time::Duration;
/// let mut child = std::process::Command::new("echo")
///     .arg("[]")
///     .stdout(std::process::Stdio::piped())
///     .spawn()
///     .unwrap();
/// let out = child.stdout.take().unwrap();
/// let mut text = String::new();
/// app_plugin::file::TimedReader::new(out, Duration::from_secs(5))
///     .read_to_string(&mut text)
///     .unwrap();
/// assert_eq!(text, "[]\n");
/// child.wait().unwrap();
/// ```
pub struct TimedReader<F> {
    inner: F,
    timeout: std::time::Duration,
    deadline: Option<std::time::Instant>,
}

impl<F> TimedReader<F> {
    /// Reads `inner` within `timeout` from the first read.
    pub fn new(inner: F, timeout: std::time::Duration) -> TimedReader<F> {
        TimedReader {
            inner,
            timeout,
            deadline: None,
        }
    }
}

impl<F: Read + std::os::fd::AsRawFd> Read for TimedReader<F> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let deadline = *self
            .deadline
            .get_or_insert_with(|| std::time::Instant::now() + self.timeout);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Err(timed_out(self.timeout));
            }
            let mut pfd = libc::pollfd {
                fd: self.inner.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            let ms = left.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
            // SAFETY: one valid pollfd for the duration of the call.
            match unsafe { libc::poll(&mut pfd, 1, ms) } {
                0 => continue,
                n if n < 0 => {
                    let e = io::Error::last_os_error();
                    if e.kind() != io::ErrorKind::Interrupted {
                        return Err(e);
                    }
                }
                _ => return self.inner.read(buf),
            }
        }
    }
}

/// Replaces `path` with `bytes` so that a reader, a crash or a power loss
/// never leaves half a file: the bytes go to a temporary file in the same
/// directory (`.NAME.tmp-PID`), which is flushed to disk, given `mode`
/// and renamed over `path`; the directory is then flushed so that the
/// rename survives too. On failure the temporary file is removed and `path`
/// is as it was.
///
/// ```
/// use std::os::unix::fs::PermissionsExt;
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("state.json");
/// app_plugin::file::write_atomic(&path, b"{}", 0o600).unwrap();
/// app_plugin::file::write_atomic(&path, b"{\"v\":2}", 0o640).unwrap();
/// assert_eq!(std::fs::read(&path).unwrap(), b"{\"v\":2}");
/// let mode = std::fs::metadata(&path).unwrap().permissions().mode();
/// assert_eq!(mode & 0o777, 0o640);
/// assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temp file left");
/// ```
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    write_atomic_via(path, &tmp, bytes, mode, true)
}

/// [`write_atomic`] through the temporary file `tmp` (in `path`'s
/// directory), for a caller whose start-up cleanup knows its own temp names;
/// `sync_dir` false skips flushing the directory (a file rewritten often,
/// whose previous version is as good after a power loss). The file's data
/// is flushed before the rename either way.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("demo.pid");
/// let tmp = dir.path().join(".demo.pid.tmp42");
/// app_plugin::file::write_atomic_via(&path, &tmp, b"42\n", 0o600, false).unwrap();
/// assert_eq!(std::fs::read_to_string(&path).unwrap(), "42\n");
/// assert!(!tmp.exists());
/// ```
pub fn write_atomic_via(
    path: &Path,
    tmp: &Path,
    bytes: &[u8],
    mode: u32,
    sync_dir: bool,
) -> io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let result = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .open(tmp)?;
        // A temp file left by a crash, or the umask, may have given another mode.
        f.set_permissions(fs::Permissions::from_mode(mode))?;
        f.write_all(bytes)?;
        f.sync_data()?;
        drop(f);
        fs::rename(tmp, path)?;
        if sync_dir {
            let dir = path
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            fs::File::open(dir)?.sync_all()?;
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_is_refused_without_waiting_for_a_writer() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(matches!(
            read_limited(&fifo, 10),
            Err(ReadError::NotRegular("FIFO"))
        ));
    }

    #[test]
    fn a_pipe_that_never_ends_times_out_and_one_too_long_is_refused() {
        use std::io::Write;
        use std::os::fd::FromRawFd;
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors pipe() returns.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: both descriptors were just made and are owned by nobody else.
        let (read, mut write) =
            unsafe { (fs::File::from_raw_fd(fds[0]), fs::File::from_raw_fd(fds[1])) };
        write.write_all(b"[").unwrap();
        let started = std::time::Instant::now();
        let limit = std::time::Duration::from_millis(300);
        assert!(matches!(
            read_stream(&read, 10, limit),
            Err(ReadError::Io(ref e)) if e.kind() == io::ErrorKind::TimedOut
        ));
        assert!(started.elapsed() < std::time::Duration::from_secs(3));
        write.write_all(&[b' '; 20]).unwrap();
        drop(write);
        assert!(matches!(
            read_stream(&read, 10, limit),
            Err(ReadError::TooLarge { len: 20, max: 10 })
        ));
    }

    #[test]
    fn a_named_fifo_without_a_writer_does_not_block() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let started = std::time::Instant::now();
        let got = read_limited_or_pipe(&fifo, 10, std::time::Duration::from_millis(300));
        assert!(
            matches!(got, Ok(ref b) if b.is_empty())
                || matches!(got, Err(ReadError::Io(ref e)) if e.kind() == io::ErrorKind::TimedOut)
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(3));
        assert!(matches!(
            read_limited_or_pipe(
                Path::new("/dev/zero"),
                10,
                std::time::Duration::from_secs(1)
            ),
            Err(ReadError::NotRegular("character device"))
        ));
    }

    #[test]
    fn the_limit_is_inclusive() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        fs::write(&path, "12345").unwrap();
        assert_eq!(read_limited(&path, 5).unwrap(), b"12345");
        assert!(matches!(
            read_limited(&path, 4),
            Err(ReadError::TooLarge { len: 5, max: 4 })
        ));
    }
}
