//! What `plugin install` takes from this machine's files: a file, or a
//! folder that holds a plugin (what `app plugin new` makes). A bare word
//! is an index's plugin name; a local file is written as one (`./NAME`, a
//! path with `/`, `--file`): see `commands::plugin::install_source`.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::discovery::PLUGIN_PREFIX;
use crate::error::{Error, Result};

/// Whether `path` holds something `install` could take: a file, or a
/// folder with a plugin in it (a folder of archives, as an index's own
/// directory has, is not one).
pub fn is_candidate(path: &Path) -> bool {
    match fs::metadata(path) {
        Ok(m) if m.is_file() => true,
        Ok(m) if m.is_dir() => plugin_in_folder(path).is_ok(),
        _ => false,
    }
}

/// The plugin inside folder `dir`: the executable named like the folder
/// (`app-foo/app-foo`, as `plugin new --lang sh|python` makes it), else its
/// only executable `app-*` file. A Rust crate, or a folder without one, is
/// refused with what to run.
pub fn plugin_in_folder(dir: &Path) -> Result<PathBuf> {
    let shown = dir.display();
    let named = dir
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| n.starts_with(PLUGIN_PREFIX))
        .map(|n| dir.join(n))
        .filter(|p| is_executable_file(p));
    if let Some(file) = named {
        return Ok(file);
    }
    let entries =
        fs::read_dir(dir).map_err(|e| Error::io(format!("cannot read the folder {shown}"), e))?;
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(PLUGIN_PREFIX) && n.len() > PLUGIN_PREFIX.len())
                && is_executable_file(p)
        })
        .collect();
    match found.len() {
        1 => return Ok(found.remove(0)),
        0 => {}
        _ => {
            found.sort();
            return Err(Error::Usage(format!(
                "the folder {shown} holds several plugins ({}); install one of them by its path",
                found
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }
    if dir.join("Cargo.toml").is_file() {
        let exe = dir
            .file_name()
            .and_then(|n| n.to_str())
            .filter(|n| n.starts_with(PLUGIN_PREFIX))
            .unwrap_or("app-<name>");
        return Err(Error::Usage(format!(
            "the folder {shown} is a Rust crate, which is installed once built: (cd {shown} && cargo build --release) && app plugin install {shown}/target/release/{exe}"
        )));
    }
    Err(Error::Usage(format!(
        "the folder {shown} holds no plugin (no executable app-<name> file in it); give the plugin's file itself, or an archive of it"
    )))
}

fn is_executable_file(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exe(path: &Path) {
        fs::write(path, "#!/bin/sh\n").unwrap();
        fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn a_folder_gives_its_plugin_or_says_what_to_run() {
        let root = std::env::temp_dir().join(format!("app-local-{}", std::process::id()));
        let made = root.join("app-foo");
        fs::create_dir_all(&made).unwrap();
        exe(&made.join("app-foo"));
        fs::write(made.join("README.md"), "x").unwrap();
        assert_eq!(plugin_in_folder(&made).unwrap(), made.join("app-foo"));
        assert!(is_candidate(&made) && is_candidate(&made.join("README.md")));

        let other = root.join("tools");
        fs::create_dir_all(&other).unwrap();
        exe(&other.join("app-bar"));
        assert_eq!(plugin_in_folder(&other).unwrap(), other.join("app-bar"));
        exe(&other.join("app-baz"));
        assert!(plugin_in_folder(&other)
            .unwrap_err()
            .to_string()
            .contains("holds several plugins"));

        let krate = root.join("app-crate");
        fs::create_dir_all(&krate).unwrap();
        fs::write(krate.join("Cargo.toml"), "").unwrap();
        let e = plugin_in_folder(&krate).unwrap_err().to_string();
        assert!(
            e.contains("cargo build --release") && e.contains("target/release/app-crate"),
            "{e}"
        );

        let archives = root.join("jsonfmt");
        fs::create_dir_all(&archives).unwrap();
        fs::write(archives.join("app-jsonfmt-1.0.0.tar.gz"), "x").unwrap();
        assert!(!is_candidate(&archives));
        assert!(!is_candidate(&root.join("nothing")));
        fs::remove_dir_all(&root).unwrap();
    }
}
