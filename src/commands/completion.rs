//! `app completion <shell>` and the hidden `app __complete` (see [`crate::complete`]).

use std::io::Write;

use crate::cli::Shell;
use crate::complete;
use crate::error::Result;
use crate::session::Session;

/// Prints the completion script for `shell`.
pub fn script(shell: Shell) -> Result<i32> {
    // `app completion bash | head` is fine: a closed pipe is not an error here.
    let _ = std::io::stdout()
        .lock()
        .write_all(complete::scripts::script(shell).as_bytes());
    Ok(0)
}

/// Prints the candidates for `words` (the words after `app`, the last being typed).
pub fn complete(session: &Session, words: &[String]) -> Result<i32> {
    let answer = complete::complete(session, words).render();
    // A shell that stopped reading is no error worth reporting while completing.
    let _ = std::io::stdout().lock().write_all(answer.as_bytes());
    Ok(0)
}
