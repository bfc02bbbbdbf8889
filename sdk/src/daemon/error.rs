//! [`Error`]: every way a daemon can fail to start or keep serving, with
//! its exit code.

use std::convert::Infallible;
use std::fmt;
use std::io;

/// A daemon's exit codes.
///
/// ```
/// use app_plugin::daemon::{code, Error};
/// assert_eq!(Error::<std::convert::Infallible>::Usage("bad".into()).exit_code(), code::USAGE);
/// ```
pub mod code {
    /// Stopped cleanly (SIGTERM or SIGINT), or `--help`/`--version`.
    pub const OK: u8 = 0;
    /// A failure to start or keep serving: another instance, a listener
    /// that cannot be opened, the daemon's own failures.
    pub const FAILURE: u8 = 1;
    /// A usage error: a bad flag or value, an unusable app context.
    pub const USAGE: u8 = 2;
}

/// A daemon's failure: the ones every daemon shares, and its own (`E`,
/// which exits 1 like the other failures).
///
/// ```
/// use app_plugin::daemon::Error;
///
/// #[derive(Debug)]
/// struct StateFile(String);
/// impl std::fmt::Display for StateFile {
///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
///         f.write_str(&self.0)
///     }
/// }
///
/// let e: Error<StateFile> = Error::Other(StateFile("state.json is not JSON".into()));
/// assert_eq!(e.exit_code(), 1);
/// assert_eq!(e.to_string(), "state.json is not JSON");
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Error<E = Infallible> {
    /// A flag or value is wrong (checked before anything is opened); the
    /// message says where help is.
    Usage(String),
    /// Another instance runs under this name, or a runtime file (socket,
    /// pid, listen, a lock) cannot be written.
    Instance(String),
    /// `--listen ADDRESS` cannot be bound.
    Bind {
        /// The address as given.
        addr: String,
        /// Why.
        source: io::Error,
    },
    /// A listener cannot be set up.
    Listen {
        /// The address or socket path.
        what: String,
        /// Why.
        source: io::Error,
    },
    /// The async runtime or a signal handler cannot be set up.
    Runtime {
        /// What could not be done, as a verb phrase ("handle SIGTERM").
        what: &'static str,
        /// Why.
        source: io::Error,
    },
    /// The TLS certificate or key cannot be used.
    Tls(String),
    /// A server stopped accepting connections.
    Stopped {
        /// Which one ("unix socket", "TCP").
        what: &'static str,
        /// Why.
        source: io::Error,
    },
    /// The daemon's own failure.
    Other(E),
}

impl<E> Error<E> {
    /// The exit code: [`code::USAGE`] for usage errors, [`code::FAILURE`]
    /// for the others.
    ///
    /// ```
    /// use app_plugin::daemon::Error;
    /// let e: Error = Error::Instance("another instance is already running".into());
    /// assert_eq!(e.exit_code(), 1);
    /// assert_eq!(Error::<()>::Usage("--port: not a number".into()).exit_code(), 2);
    /// ```
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) => code::USAGE,
            _ => code::FAILURE,
        }
    }
}

impl<E: fmt::Display> fmt::Display for Error<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(m) | Error::Instance(m) | Error::Tls(m) => f.write_str(m),
            Error::Bind { addr, source } => write!(
                f,
                "cannot listen on {addr}: {source}; choose another --listen address"
            ),
            Error::Listen { what, source } => write!(f, "cannot listen on {what}: {source}"),
            Error::Runtime { what, source } => write!(f, "cannot {what}: {source}"),
            Error::Stopped { what, source } => write!(f, "the {what} server stopped: {source}"),
            Error::Other(e) => e.fmt(f),
        }
    }
}

impl<E: fmt::Debug + fmt::Display> std::error::Error for Error<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Bind { source, .. }
            | Error::Listen { source, .. }
            | Error::Runtime { source, .. }
            | Error::Stopped { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_exits_2_the_others_1() {
        assert_eq!(Error::<Infallible>::Usage("x".into()).exit_code(), 2);
        assert_eq!(Error::<Infallible>::Instance("x".into()).exit_code(), 1);
        assert_eq!(Error::<&str>::Other("x").exit_code(), 1);
        let e: Error = Error::Stopped {
            what: "unix socket",
            source: io::Error::from(io::ErrorKind::Other),
        };
        assert_eq!(e.exit_code(), 1);
        assert!(e.to_string().starts_with("the unix socket server stopped"));
        let e: Error = Error::Bind {
            addr: "127.0.0.1:1".into(),
            source: io::Error::from(io::ErrorKind::AddrInUse),
        };
        assert!(e.to_string().starts_with("cannot listen on 127.0.0.1:1: "));
        assert!(e.to_string().ends_with("; choose another --listen address"));
    }
}
