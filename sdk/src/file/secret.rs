//! Files that hold a secret: read like any file a user named, and the
//! user told once when the group or others can read them.

use std::path::Path;

use super::{read_with_mode, ReadError};

/// [`read_limited`](super::read_limited) for a file that holds a secret (`--password-file`,
/// `--token-file`, `--creds`, a host's `token_file`), with a warning to
/// show when its group or others can read it: the first time this process
/// reads that path, so a caller may call it at every use and the user is
/// told once. The mode is the open file's (no race with a `chmod`).
///
/// ```
/// use std::os::unix::fs::PermissionsExt;
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("token");
/// std::fs::write(&path, "s3cret\n").unwrap();
/// std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
/// let (bytes, warning) = app_plugin::file::read_secret(&path, 1024).unwrap();
/// assert_eq!(bytes, b"s3cret\n");
/// assert!(warning.unwrap().contains(&format!("chmod 600 {}", path.display())));
/// // Told once.
/// assert!(app_plugin::file::read_secret(&path, 1024).unwrap().1.is_none());
/// ```
pub fn read_secret(path: &Path, max: u64) -> Result<(Vec<u8>, Option<String>), ReadError> {
    let (bytes, mode) = read_with_mode(path, max)?;
    Ok((bytes, shared_secret_warning(path, mode)))
}

/// The warning for a secret file of `mode` at `path`, unless it is private
/// or this process already gave it.
fn shared_secret_warning(path: &Path, mode: u32) -> Option<String> {
    use std::collections::HashSet;
    use std::sync::Mutex;
    static WARNED: Mutex<Option<HashSet<std::path::PathBuf>>> = Mutex::new(None);
    if mode & 0o077 == 0 {
        return None;
    }
    let mut warned = WARNED.lock().unwrap_or_else(|e| e.into_inner());
    if !warned
        .get_or_insert_with(HashSet::new)
        .insert(path.to_path_buf())
    {
        return None;
    }
    let who = match (mode & 0o070 != 0, mode & 0o007 != 0) {
        (true, true) => "its group and every other user",
        (true, false) => "its group",
        _ => "every other user",
    };
    Some(format!(
        "{} holds a secret and is open to {who} (mode {:04o}); make it private: chmod 600 {}",
        path.display(),
        mode & 0o7777,
        path.display()
    ))
}
