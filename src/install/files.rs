//! A multi-file plugin's other files: what its archive held under
//! `completions/`, `man/` and `share/`, installed in the plugin's own
//! folder `APP_DATA_DIR/plugins/.files/NAME/` (dot-named: never taken for
//! a plugin), while its executable stays `APP_DATA_DIR/plugins/app-NAME`,
//! where dispatch finds it at no extra cost.
//!
//! The folder is written whole under a temporary name and renamed into
//! place (the old one renamed away first, then removed), so a reader sees
//! the old files or the new ones; `remove` deletes it whole.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use app_fetch_protocol::{extra_path_ok, ExtraFile};

/// Where the files of the multi-file plugins are.
pub const DIR: &str = ".files";

/// Plugin `name`'s folder.
pub fn dir(plugin_dir: &Path, name: &str) -> PathBuf {
    plugin_dir.join(DIR).join(name)
}

/// Plugin `name`'s `share/` folder, handed to it as `APP_PLUGIN_SHARE`.
pub fn share_dir(plugin_dir: &Path, name: &str) -> PathBuf {
    dir(plugin_dir, name).join("share")
}

/// The first of `files` that cannot be installed (its path leaves its
/// folder): checked before anything is written.
pub fn refused(files: &[ExtraFile]) -> Option<&str> {
    files
        .iter()
        .find(|f| !extra_path_ok(&f.path))
        .map(|f| f.path.as_str())
}

/// Replaces plugin `name`'s folder with `files` (none: the folder goes).
pub fn replace(plugin_dir: &Path, name: &str, files: &[ExtraFile]) -> io::Result<()> {
    let target = dir(plugin_dir, name);
    let root = plugin_dir.join(DIR);
    let pid = std::process::id();
    let old = root.join(format!(".old-{name}-{pid}"));
    if files.is_empty() {
        return remove(plugin_dir, name);
    }
    fs::create_dir_all(&root)?;
    let tmp = root.join(format!(".new-{name}-{pid}"));
    let _ = fs::remove_dir_all(&tmp);
    let written = write_all(&tmp, files);
    if let Err(e) = written {
        let _ = fs::remove_dir_all(&tmp);
        return Err(e);
    }
    if target.exists() {
        fs::rename(&target, &old)?;
    }
    fs::rename(&tmp, &target)?;
    let _ = fs::remove_dir_all(&old);
    super::atomic::sync_dir(&root)
}

fn write_all(tmp: &Path, files: &[ExtraFile]) -> io::Result<()> {
    for f in files {
        if !extra_path_ok(&f.path) {
            return Err(io::Error::other(format!("{} leaves its folder", f.path)));
        }
        let path = tmp.join(&f.path);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)?;
        }
        let mode = if f.mode & 0o111 != 0 { 0o755 } else { 0o644 };
        let mut file = super::atomic::TempFile::new_in(path.parent().unwrap_or(tmp), mode)?;
        file.write_all(&f.bytes)?;
        file.persist(&path)?;
    }
    Ok(())
}

/// Removes plugin `name`'s folder, if it has one.
pub fn remove(plugin_dir: &Path, name: &str) -> io::Result<()> {
    match fs::remove_dir_all(dir(plugin_dir, name)) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, body: &str) -> ExtraFile {
        ExtraFile {
            path: path.into(),
            mode: 0o644,
            bytes: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn replaced_whole_and_removed_whole() {
        let dir = tempfile::tempdir().unwrap();
        replace(
            dir.path(),
            "hello",
            &[
                file("share/a.txt", "a"),
                file("completions/app-hello.bash", "c"),
            ],
        )
        .unwrap();
        let share = share_dir(dir.path(), "hello");
        assert_eq!(fs::read_to_string(share.join("a.txt")).unwrap(), "a");
        replace(dir.path(), "hello", &[file("share/b.txt", "b")]).unwrap();
        assert!(!share.join("a.txt").exists() && share.join("b.txt").exists());
        assert!(!super::dir(dir.path(), "hello").join("completions").exists());
        // Nothing left beside it.
        let names: Vec<_> = fs::read_dir(dir.path().join(DIR))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["hello"]);
        remove(dir.path(), "hello").unwrap();
        assert!(!super::dir(dir.path(), "hello").exists());
        assert_eq!(refused(&[file("share/../../x", "")]), Some("share/../../x"));
    }
}
