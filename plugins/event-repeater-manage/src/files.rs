//! Files the manager reads (its config, token, CA and listen files), each
//! checked for type and size. A module of its own so that `hosts` (the
//! config) and `target` (instances on this machine) both use it without
//! depending on each other.

use std::path::Path;

use crate::error::Error;

/// Reads a small regular file as UTF-8 text: refuses anything else (a FIFO
/// would block, `/dev/zero` would never end) and anything over `max` bytes.
/// [`read_small`] for a file holding a secret: a warning, once, when its
/// group or others can read it.
pub fn read_secret(path: &Path, max: u64, what: &str) -> Result<String, Error> {
    let (bytes, warning) = app_plugin::file::read_secret(path, max)
        .map_err(|e| Error::Usage(format!("{what} {} {e}", path.display())))?;
    if let Some(warning) = warning {
        app_plugin::warn!("{what}: {warning}");
    }
    String::from_utf8(bytes)
        .map_err(|_| Error::Usage(format!("{what} {} is not UTF-8 text", path.display())))
}

pub fn read_small(path: &Path, max: u64, what: &str) -> Result<String, Error> {
    let bytes = app_plugin::file::read_limited(path, max)
        .map_err(|e| Error::Usage(format!("{what} {} {e}", path.display())))?;
    String::from_utf8(bytes)
        .map_err(|_| Error::Usage(format!("{what} {} is not UTF-8 text", path.display())))
}
