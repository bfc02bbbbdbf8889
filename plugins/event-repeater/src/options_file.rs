//! `APP_OPTIONS_FILE`: the options file a systemd instance reads
//! (`app-event-repeater@NAME.service` sets it to
//! `/etc/app/event-repeater/NAME.env`). The unit reads that file as
//! optional, so that a missing one reaches the repeater, which says which
//! file to create and exits 2, a status the unit does not restart on: an
//! instance without its file stays failed instead of restarting forever.

use std::ffi::OsStr;
use std::path::Path;

/// The variable the unit sets.
pub const VAR: &str = "APP_OPTIONS_FILE";

/// `Err(message)` when `file` is named but missing.
pub fn check(file: Option<&OsStr>) -> Result<(), String> {
    let Some(file) = file.filter(|f| !f.is_empty()) else {
        return Ok(());
    };
    let file = Path::new(file);
    if file.exists() {
        return Ok(());
    }
    let example = file.with_file_name("example.env");
    Err(format!(
        "the options file {} ({VAR}) does not exist: create it, e.g. cp {} {} and set REPEATER_OPTIONS there (docs/operations.md), then start the instance again",
        file.display(),
        example.display(),
        file.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_is_named_with_the_command_that_makes_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("edge1.env");
        let err = check(Some(file.as_os_str())).unwrap_err();
        assert!(
            err.contains(&format!("{} ({VAR}) does not exist", file.display())),
            "{err}"
        );
        assert!(
            err.contains(&format!("cp {}", dir.path().join("example.env").display())),
            "{err}"
        );
        std::fs::write(&file, "REPEATER_OPTIONS=\n").unwrap();
        assert_eq!(check(Some(file.as_os_str())), Ok(()));
        assert_eq!(check(None), Ok(()));
        assert_eq!(check(Some(OsStr::new(""))), Ok(()));
    }
}
