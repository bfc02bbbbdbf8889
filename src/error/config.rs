//! What is wrong with the config file ([`crate::config`] reads it): here,
//! beside [`super::Error`], so that the error type depends on nothing.

use std::fmt;
use std::io;

/// What is wrong with the config file.
#[derive(Debug)]
pub enum ConfigProblem {
    /// Named by `--config` or `APP_CONFIG` (`named_by`), and not there.
    Missing { named_by: &'static str },
    /// A directory, FIFO, device or socket.
    NotRegularFile(&'static str),
    /// Larger than `max`, the most a config file may have (`len` bytes seen).
    TooLarge { len: u64, max: u64 },
    /// The operating system refused to read it.
    Unreadable(io::Error),
    /// Not the JSON `app` expects (serde's message, with line and column).
    Invalid(String),
}

impl fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigProblem::Missing { named_by } => write!(
                f,
                "does not exist (named by {named_by}); check the path, or leave {named_by} out to use the default config"
            ),
            ConfigProblem::NotRegularFile(kind) => write!(
                f,
                "is a {kind}, not a regular file; point --config / APP_CONFIG at a JSON file"
            ),
            ConfigProblem::TooLarge { len, max } => write!(
                f,
                "is larger than {max} bytes (the most a config file may have){}; is it the right file?",
                if len > max {
                    format!(": {len} bytes")
                } else {
                    String::new()
                }
            ),
            ConfigProblem::Unreadable(e) => write!(f, "cannot be read: {e}"),
            ConfigProblem::Invalid(message) => write!(
                f,
                "is not valid: {message}\n  fix the file, or point --config / APP_CONFIG at another one"
            ),
        }
    }
}
