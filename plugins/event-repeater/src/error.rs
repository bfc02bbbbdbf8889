//! Every way `app-event-repeater run` can fail, with its exit code (the
//! codes are listed in `--help`). The shape and the codes are the SDK's
//! daemon error ([`app_plugin::daemon::Error`]); the repeater's own
//! failures are [`Failure`]. Runtime trouble after the start (a broker or
//! source away, a refused event) is not an error: it is retried, counted
//! and logged.

/// Exit codes: 0 stopped cleanly, 1 a start-up failure (another instance,
/// an unusable state or checkpoint file, a socket or address that cannot
/// be bound, a sink that can never work), 2 a usage error.
pub use app_plugin::daemon::code;

/// A failure of the repeater itself.
pub type Error = app_plugin::daemon::Error<Failure>;

/// The repeater's own start-up failures (exit 1).
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// The routes file (`--state`) cannot be used.
    #[error("{0}")]
    State(String),
    /// The checkpoint file beside it cannot be used.
    #[error("{0}")]
    Checkpoint(String),
    /// The sink can never work as configured (a NATS server without
    /// JetStream, replicas on a server without a cluster).
    #[error("{0}")]
    Sink(String),
    /// The dead-letter file (`--dead-letter`) cannot be opened.
    #[error("{0}")]
    DeadLetter(String),
}

impl From<Failure> for Error {
    fn from(f: Failure) -> Error {
        Error::Other(f)
    }
}

/// A usage error: `message`, and where help is.
pub fn usage(message: String) -> Error {
    Error::Usage(format!("{message}; see `app event-repeater run --help`"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;

    #[test]
    fn usage_errors_exit_2_the_others_1() {
        assert_eq!(usage("x".into()).exit_code(), 2);
        assert_eq!(Error::from(Failure::State("x".into())).exit_code(), 1);
        let e = Error::Listen {
            what: "127.0.0.1:1".into(),
            source: io::Error::from(io::ErrorKind::AddrInUse),
        };
        assert_eq!(e.exit_code(), 1);
        assert!(e.to_string().starts_with("cannot listen on 127.0.0.1:1: "));
        assert!(usage("bad".into()).to_string().contains("--help"));
    }
}
