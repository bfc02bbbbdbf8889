//! The built-in commands. Each returns the exit code `app` ends with.

pub mod apply;
pub mod completion;
pub mod from_index;
pub mod help;
pub mod index;
pub mod list;
pub mod outdated;
pub mod pins;
pub mod plugin;
pub mod search;

use crate::cli::Cmd;
use crate::error::Result;
use crate::session::Session;

/// Runs a built-in command (`cmd` is never `External`).
pub fn run(cmd: Cmd, session: &Session) -> Result<i32> {
    match cmd {
        Cmd::Help { topic } => help::run(session, &topic),
        Cmd::Version => {
            version();
            Ok(0)
        }
        Cmd::Plugin(sub) => plugin::run(session, sub),
        Cmd::Completion { shell } => completion::script(shell),
        Cmd::Complete { words } => completion::complete(session, &words),
        Cmd::External(_) => unreachable!("external commands are resolved, not run as built-ins"),
    }
}

/// `app version` and `app --version`.
pub fn version() {
    println!("app {}", crate::VERSION);
}
