//! Every way `app-event-repeater run` can fail, with its exit code (the
//! codes are listed in `--help`). Runtime trouble after the start (a broker
//! or source away, a refused event) is not an error: it is retried, counted
//! and logged.

use std::fmt;
use std::io;

/// Exit codes.
pub mod code {
    /// Stopped cleanly (SIGTERM or SIGINT), or `--help`/`--version`.
    pub const OK: u8 = 0;
    /// A start-up failure: another instance, an unusable state or
    /// checkpoint file, a socket or address that cannot be bound, a sink
    /// that can never work (NATS without JetStream).
    pub const FAILURE: u8 = 1;
    /// A usage error: a bad flag or value, an unusable app context.
    pub const USAGE: u8 = 2;
}

/// A failure of the repeater itself.
#[derive(Debug)]
pub enum Error {
    /// A flag or value is wrong (checked before anything is opened).
    Usage(String),
    /// The app context (`APP_*` variables, the config file) cannot be used.
    Context(String),
    /// The routes file (`--state`) cannot be used.
    State(String),
    /// The checkpoint file beside it cannot be used.
    Checkpoint(String),
    /// Another instance runs under this name or on the same state or
    /// checkpoint file, or the runtime files (socket, pid, listen) or the
    /// lock files cannot be written.
    Instance(String),
    /// The API's TLS certificate or key cannot be used.
    Tls(String),
    /// The sink can never work as configured (a NATS server without
    /// JetStream, replicas on a server without a cluster).
    Sink(String),
    /// An API listener cannot be opened.
    Listen { what: String, source: io::Error },
    /// The async runtime or a signal handler cannot be set up.
    Runtime {
        what: &'static str,
        source: io::Error,
    },
}

impl Error {
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) | Error::Context(_) => code::USAGE,
            _ => code::FAILURE,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(m) => write!(f, "{m}; see `app event-repeater run --help`"),
            Error::Context(m)
            | Error::State(m)
            | Error::Checkpoint(m)
            | Error::Instance(m)
            | Error::Tls(m)
            | Error::Sink(m) => f.write_str(m),
            Error::Listen { what, source } => write!(f, "cannot listen on {what}: {source}"),
            Error::Runtime { what, source } => write!(f, "cannot {what}: {source}"),
        }
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_and_context_errors_exit_2_the_others_1() {
        assert_eq!(Error::Usage("x".into()).exit_code(), 2);
        assert_eq!(Error::Context("x".into()).exit_code(), 2);
        assert_eq!(Error::State("x".into()).exit_code(), 1);
        let e = Error::Listen {
            what: "127.0.0.1:1".into(),
            source: io::Error::from(io::ErrorKind::AddrInUse),
        };
        assert_eq!(e.exit_code(), 1);
        assert!(e.to_string().starts_with("cannot listen on 127.0.0.1:1: "));
        assert!(Error::Usage("bad".into()).to_string().contains("--help"));
    }
}
