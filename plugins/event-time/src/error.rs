//! Every way `app-event-time` can fail, with its exit code (listed in
//! `--help`): a usage error before anything is opened (2), or a failure to
//! start or keep serving (1). The shape and the codes are the SDK's daemon
//! error ([`app_plugin::daemon::Error`]); event-time has no failures of its
//! own.

/// Exit codes.
pub use app_plugin::daemon::code;

/// A failure of the server.
pub type Error = app_plugin::daemon::Error;

/// A usage error: `message`, and where help is.
pub fn usage(message: String) -> Error {
    Error::Usage(format!("{message}; see app-event-time --help"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes() {
        assert_eq!(usage("x".into()).exit_code(), 2);
        assert!(usage("bad".into())
            .to_string()
            .ends_with("; see app-event-time --help"));
        assert_eq!(Error::Instance("x".into()).exit_code(), 1);
        let e = Error::Stopped {
            what: "unix socket",
            source: std::io::Error::from(std::io::ErrorKind::Other),
        };
        assert_eq!(e.exit_code(), 1);
        assert!(e.to_string().starts_with("the unix socket server stopped"));
    }
}
