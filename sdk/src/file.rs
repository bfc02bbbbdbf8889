//! Reading a file a user named (`--config`, `--password-file`, a state or
//! certificate file): only a regular file, and only up to a limit.
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
    // O_NONBLOCK: opening a FIFO returns at once instead of waiting for a
    // writer; the check on the open file then refuses it.
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => ReadError::NotFound,
            _ => ReadError::Io(e),
        })?;
    let meta = file.metadata().map_err(ReadError::Io)?;
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
    Ok(bytes)
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
