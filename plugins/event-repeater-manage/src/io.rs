//! Where a command reads and writes, and what it knows of its
//! surroundings: one value made by [`crate::run`] and handed down to
//! whatever reads stdin or prints.

use std::io::{Read, Write};
use std::path::Path;

use crate::error::Error;

/// Where a command reads and writes, and what it knows of its surroundings.
pub struct Io<'a> {
    /// For `--value -` and `apply -f -`.
    pub stdin: &'a mut dyn Read,
    /// Answers and diffs.
    pub stdout: &'a mut dyn Write,
    /// Pretty-print JSON (stdout is a terminal).
    pub pretty: bool,
    /// Hosts from the global `app -H` flag.
    pub global_hosts: &'a [String],
    /// `APP_RUNTIME_DIR/plugins`.
    pub plugin_dir: &'a Path,
    /// `app`'s config file (named hosts and groups).
    pub config_file: &'a Path,
}

/// Writes `text` to stdout; a closed pipe is not an error.
pub fn print(io: &mut Io<'_>, text: &str) -> Result<(), Error> {
    match io
        .stdout
        .write_all(text.as_bytes())
        .and_then(|()| io.stdout.flush())
    {
        Ok(()) => Ok(()),
        // A closed pipe (`| head`) is the reader's choice, not our failure.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Error::Failed(format!("cannot write the answer: {e}"))),
    }
}
