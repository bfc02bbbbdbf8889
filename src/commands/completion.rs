//! `app completion <shell>` and the hidden `app __complete`.
//!
//! Shell completion is its own piece of work (issue 5); until it lands these
//! say so plainly instead of printing a script that does nothing.

use crate::cli::Shell;
use crate::error::{Error, Result};
use crate::session::Session;

pub fn script(_shell: Shell) -> Result<i32> {
    Err(Error::Usage(
        "shell completion is not available in this build yet".to_string(),
    ))
}

pub fn complete(_session: &Session, _words: &[String]) -> Result<i32> {
    println!(":4");
    Ok(0)
}
