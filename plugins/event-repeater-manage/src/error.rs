//! Every way a manager command can fail, with the message the user reads and
//! the exit code scripts rely on (0 ok, 1 refused or failed, 2 usage, 3 not
//! running or unreachable, 4 some of several hosts failed).

use std::path::PathBuf;

/// Exit code: the server refused the request, or it failed at run time.
pub const EXIT_FAILURE: u8 = 1;
/// Exit code: bad flags or a bad value; nothing was sent.
pub const EXIT_USAGE: u8 = 2;
/// Exit code: no repeater is running there, or it cannot be reached.
pub const EXIT_UNREACHABLE: u8 = 3;
/// Exit code: with several hosts, at least one failed (each is reported).
pub const EXIT_HOSTS: u8 = 4;

/// A failed manager command.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum Error {
    /// A bad flag, a missing value, a malformed `--path` or `--host`.
    #[error("{0}")]
    Usage(String),
    /// A value (`--value` or an `apply` file) that is not valid JSON.
    #[error(
        "{origin} is not valid JSON: {message} at line {line}, column {column}; nothing was sent"
    )]
    Json {
        /// Where the text came from: `--value`, `stdin`, or a file name.
        origin: String,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// What serde_json found wrong there.
        message: String,
    },
    /// Valid JSON that is not what the command needs (an `apply` file that is
    /// not an array of routes, for instance).
    #[error("{origin}: {message}; nothing was sent")]
    Invalid {
        /// Where the text came from.
        origin: String,
        /// What is wrong with it.
        message: String,
    },
    /// Neither a socket nor a listen file for this name.
    #[error("no event repeater named '{name}' is running (no socket at {}); start one with: {}", socket.display(), run_command(name))]
    NotRunning {
        /// The repeater's `--name`.
        name: String,
        /// The socket that would exist if it ran.
        socket: PathBuf,
    },
    /// The system instances' directory is there but closed to this user
    /// (not in the group that owns it).
    #[error("no event repeater named '{name}' runs as you, and the system instances' socket {} is open only to the group {group}, which you are not in: add yourself with: sudo usermod -aG {group} $USER (then log in again), or run manage as a member of it", socket.display())]
    NoAccess {
        /// The repeater's `--name`.
        name: String,
        /// The socket a system instance of that name would have.
        socket: PathBuf,
        /// The group the directory is open to (a name, else its number).
        group: String,
    },
    /// The socket file exists but nobody accepts connections on it.
    #[error("the event repeater '{name}' is not running: {} is a stale socket left by a process that is gone (connection refused); remove it with: rm {}, or start the repeater again: {}", socket.display(), socket.display(), run_command(name))]
    StaleSocket {
        /// The repeater's `--name`.
        name: String,
        /// The left-over socket file.
        socket: PathBuf,
    },
    /// The `<name>.listen` file names an address where nobody listens.
    #[error("the event repeater '{name}' is not running: nothing listens at {url} named in the stale file {}; remove it with: rm {}, or start the repeater again: {}", file.display(), file.display(), run_command(name))]
    StaleListen {
        /// The repeater's `--name`.
        name: String,
        /// The left-over listen file.
        file: PathBuf,
        /// The URL it holds.
        url: String,
    },
    /// A connection to an address given with `--host` or `-H` failed.
    #[error("cannot reach an event repeater at {target}: {reason}; check that it runs and that the address is right")]
    Unreachable {
        /// The address, as the user would write it.
        target: String,
        /// Why (refused, timed out, permission denied, …).
        reason: String,
    },
    /// `status` found its one host down; the text names it (its row in the
    /// table says why).
    #[error("{0}")]
    Down(String),
    /// `status` found some of several hosts down; the text names them.
    #[error("{0}")]
    HostsDown(String),
    /// Connected, but no complete answer within the timeout.
    #[error("the event repeater at {target} did not answer within {seconds}s; it may be overloaded or stuck (raise the limit with --timeout SECS)")]
    Timeout {
        /// The address.
        target: String,
        /// The timeout in force.
        seconds: f64,
    },
    /// The server answered with an error status.
    #[error("{}", refused(request, *status, message))]
    Refused {
        /// `POST /events`.
        request: String,
        /// HTTP status code.
        status: u16,
        /// The server's own message (its JSON `error` field, or its text).
        message: String,
    },
    /// The TLS handshake failed (unknown CA, wrong name, not TLS at all).
    #[error("no secure connection to {target}: {reason}")]
    Tls {
        /// The address.
        target: String,
        /// What rustls said, with a hint.
        reason: String,
    },
    /// A token would go in clear text over the network; nothing was sent.
    #[error("refusing to send the API token in clear text to {target}: use https:// (the repeater's --tls-cert), a loopback address or the unix socket; nothing was sent")]
    Insecure {
        /// The address.
        target: String,
    },
    /// With several hosts: each host's outcome, in order (`None` is success).
    #[error("{}", hosts(.0))]
    Hosts(Vec<(String, Option<Error>)>),
    /// Anything else that went wrong at run time (I/O, a garbled reply).
    #[error("{0}")]
    Failed(String),
}

impl Error {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) | Error::Json { .. } | Error::Invalid { .. } => EXIT_USAGE,
            Error::NotRunning { .. }
            | Error::NoAccess { .. }
            | Error::StaleSocket { .. }
            | Error::StaleListen { .. }
            | Error::Unreachable { .. }
            | Error::Down(_) => EXIT_UNREACHABLE,
            Error::Insecure { .. } => EXIT_USAGE,
            Error::Hosts(_) | Error::HostsDown(_) => EXIT_HOSTS,
            Error::Timeout { .. }
            | Error::Refused { .. }
            | Error::Tls { .. }
            | Error::Failed(_) => EXIT_FAILURE,
        }
    }
}

/// `app event-repeater run`, with `--name` only when it is not the default.
pub fn run_command(name: &str) -> String {
    if name == crate::DEFAULT_NAME {
        "app event-repeater run".to_string()
    } else {
        format!("app event-repeater run --name {name}")
    }
}

/// `POST /events refused (409 Conflict): …`, with where the token goes
/// when the answer is about one.
fn refused(request: &str, status: u16, message: &str) -> String {
    let reason = ureq::http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .map(|r| format!(" {r}"))
        .unwrap_or_default();
    let mut text = format!("{request} refused ({status}{reason}): {message}");
    if (status == 401 || status == 403) && !message.contains("--token") {
        text.push_str("; give the API token with --token or APP_TOKEN");
    }
    text
}

/// One line per host, `HOST: ok` or `HOST: ERROR`, then how many failed.
fn hosts(outcomes: &[(String, Option<Error>)]) -> String {
    let mut lines: Vec<String> = outcomes
        .iter()
        .map(|(host, outcome)| match outcome {
            None => format!("{host}: ok"),
            Some(e) => format!("{host}: {e}"),
        })
        .collect();
    let failed = outcomes.iter().filter(|(_, e)| e.is_some()).count();
    lines.push(format!("{failed} of {} hosts failed", outcomes.len()));
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_running_message_says_how_to_start_it() {
        let e = Error::NotRunning {
            name: "r1".into(),
            socket: PathBuf::from("/run/app/plugins/r1.sock"),
        };
        assert_eq!(
            e.to_string(),
            "no event repeater named 'r1' is running (no socket at /run/app/plugins/r1.sock); start one with: app event-repeater run --name r1"
        );
        assert_eq!(e.exit_code(), 3);
    }

    #[test]
    fn default_name_needs_no_name_flag() {
        assert_eq!(run_command("event-repeater"), "app event-repeater run");
    }

    #[test]
    fn exit_codes_follow_the_contract() {
        assert_eq!(Error::Usage("x".into()).exit_code(), 2);
        let refused = Error::Refused {
            request: "POST /events".into(),
            status: 409,
            message: "exists".into(),
        };
        assert_eq!(refused.exit_code(), 1);
        assert_eq!(
            refused.to_string(),
            "POST /events refused (409 Conflict): exists"
        );
        let stale = Error::StaleSocket {
            name: "r".into(),
            socket: PathBuf::from("/x/r.sock"),
        };
        assert_eq!(stale.exit_code(), 3);
        assert!(stale.to_string().contains("rm /x/r.sock"));
    }
}
