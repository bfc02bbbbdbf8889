//! Why an instance could not take its place, and the one rule for
//! instance names.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// Why an instance could not take its place, or could not write a file.
///
/// The message says what went wrong and what to do:
///
/// ```
/// use std::path::PathBuf;
/// use app_plugin::instance::ClaimError;
///
/// let err = ClaimError::Running { socket: PathBuf::from("/run/p/r1.sock"), pid: Some(42) };
/// assert_eq!(
///     err.to_string(),
///     "another instance is already running (pid 42, socket /run/p/r1.sock); stop it first or choose another --name"
/// );
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum ClaimError {
    /// Another instance answers on the socket; `pid` is read from `NAME.pid`.
    ///
    /// ```
    /// # use app_plugin::instance::ClaimError;
    /// let err = ClaimError::Running { socket: "/s".into(), pid: None };
    /// assert!(err.to_string().contains("(socket /s)"));
    /// ```
    Running {
        /// The socket the other instance answers on.
        socket: PathBuf,
        /// Its process id, when `NAME.pid` could be read.
        pid: Option<u32>,
    },
    /// Something other than a socket is where the socket goes; it is never
    /// deleted.
    ///
    /// ```
    /// # use app_plugin::instance::ClaimError;
    /// let err = ClaimError::NotASocket("/run/p/r1.sock".into());
    /// assert_eq!(
    ///     err.to_string(),
    ///     "/run/p/r1.sock exists and is not a socket; remove it or choose another --name"
    /// );
    /// ```
    NotASocket(PathBuf),
    /// The name breaks the rule of [`check_name`]; nothing was touched.
    ///
    /// ```
    /// # use app_plugin::instance::{ClaimError, InstanceFiles};
    /// let tmp = tempfile::tempdir().unwrap();
    /// let err = InstanceFiles::claim(tmp.path(), "../escape").unwrap_err();
    /// assert!(matches!(err, ClaimError::BadName(_)), "{err}");
    /// ```
    BadName(NameError),
    /// A file operation failed: "cannot `what` `path`: `err`".
    ///
    /// ```
    /// # use app_plugin::instance::ClaimError;
    /// let err = ClaimError::Io {
    ///     what: "write",
    ///     path: "/run/p/r1.pid".into(),
    ///     err: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
    /// };
    /// assert!(err.to_string().starts_with("cannot write /run/p/r1.pid: "));
    /// ```
    Io {
        /// What was attempted, as a verb phrase ("write", "listen on").
        what: &'static str,
        /// The file it was attempted on.
        path: PathBuf,
        /// The error.
        err: io::Error,
    },
}

impl ClaimError {
    /// The message, naming the other instance as `another {noun}` when one is
    /// running, so that a plugin can say what it is; `Display` uses the noun
    /// `instance`.
    ///
    /// ```
    /// # use app_plugin::instance::ClaimError;
    /// let err = ClaimError::Running { socket: "/s".into(), pid: Some(7) };
    /// assert_eq!(
    ///     err.describe("event repeater named \"r1\""),
    ///     "another event repeater named \"r1\" is already running (pid 7, socket /s); stop it first or choose another --name"
    /// );
    /// ```
    pub fn describe(&self, noun: &str) -> String {
        match self {
            ClaimError::Running { socket, pid } => {
                let pid = pid.map_or(String::new(), |p| format!("pid {p}, "));
                format!(
                    "another {noun} is already running ({pid}socket {}); stop it first or choose another --name",
                    socket.display()
                )
            }
            ClaimError::NotASocket(path) => format!(
                "{} exists and is not a socket; remove it or choose another --name",
                path.display()
            ),
            ClaimError::BadName(e) => e.to_string(),
            ClaimError::Io { what, path, err } => {
                format!("cannot {what} {}: {err}", path.display())
            }
        }
    }
}

impl fmt::Display for ClaimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe("instance"))
    }
}

impl std::error::Error for ClaimError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ClaimError::Io { err, .. } => Some(err),
            ClaimError::BadName(e) => Some(e),
            _ => None,
        }
    }
}

/// Why a name cannot name an instance ([`check_name`]).
///
/// ```
/// let err = app_plugin::instance::check_name("../x").unwrap_err();
/// assert_eq!(err.name(), "../x");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameError(String);

impl NameError {
    /// The name that was refused.
    ///
    /// ```
    /// assert_eq!(app_plugin::instance::check_name("").unwrap_err().name(), "");
    /// ```
    pub fn name(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for NameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid --name '{}'; use 1 to {MAX_NAME_LEN} letters, digits, '-', '_' or '.', not starting with '.' or '-'",
            self.0
        )
    }
}

impl std::error::Error for NameError {}

/// The longest instance name: it becomes a socket path, and those are
/// limited to about 100 bytes.
pub const MAX_NAME_LEN: usize = 64;

/// The one rule for instance names (`--name` of every plugin that runs
/// instances, and of the clients that find them): the name becomes file
/// names (`NAME.sock`, `NAME.pid`, `NAME.listen`), so it is 1 to
/// [`MAX_NAME_LEN`] ASCII letters, digits, `-`, `_` or `.`, not starting
/// with `.` or `-` (no hidden files, nothing read as a flag).
///
/// ```
/// use app_plugin::instance::check_name;
/// assert!(check_name("event-repeater").is_ok());
/// assert!(check_name("r1.staging").is_ok());
/// for bad in ["", ".", "..", "a/b", "-x", ".hidden", "a b", "é"] {
///     assert!(check_name(bad).is_err(), "{bad}");
/// }
/// ```
pub fn check_name(name: &str) -> Result<(), NameError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && !name.starts_with(['.', '-'])
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(NameError(name.to_string()))
    }
}

pub(super) fn io_err(what: &'static str, path: &Path) -> impl FnOnce(io::Error) -> ClaimError {
    let path = path.to_path_buf();
    move |err| ClaimError::Io { what, path, err }
}
