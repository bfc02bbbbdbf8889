//! The archive `publish` makes of a plugin: `app-NAME` (mode 0755) and,
//! from a plugin folder, its `completions/`, `man/` and `share/` files
//! (0644, or 0755 when executable), under the same rules `install`
//! checks: regular files and folders only (no links, no devices), and at
//! most [`MAX_FILES`] files. The bytes depend only on the files' names,
//! contents and modes (no times, owners), so publishing the same build
//! twice gives the same archive and the same sha256.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use app_plugin::metadata::PLUGIN_PREFIX;

use super::Failure;

/// The folders of a plugin folder that are packed beside its executable,
/// and how many files at most: what `install` takes.
use app_fetch_protocol::{EXTRA_DIRS, MAX_EXTRA_FILES as MAX_FILES};

/// A packed plugin.
pub struct Packed {
    pub name: String,
    pub bytes: Vec<u8>,
    /// The files beside the executable, as packed (`share/x.txt`).
    pub extra: Vec<String>,
}

/// Packs the plugin at `path` (its executable, or a folder holding it).
pub fn pack(path: &Path) -> Result<Packed, Failure> {
    let meta = fs::symlink_metadata(path)
        .map_err(|e| Failure::usage(format!("cannot read {}: {e}", path.display())))?;
    let (exe, folder) = if meta.is_dir() {
        (executable_in(path)?, Some(path))
    } else {
        (path.to_path_buf(), None)
    };
    let file_name = exe
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    let name = file_name
        .strip_prefix(PLUGIN_PREFIX)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| {
            Failure::usage(format!(
                "{} is not named app-NAME, so the plugin's name cannot be told",
                exe.display()
            ))
        })?
        .to_string();
    let body = read_file(&exe)?;
    let runnable = body.starts_with(b"#!") || body.starts_with(b"\x7fELF");
    if !runnable || !is_executable(&exe) {
        return Err(Failure::usage(format!(
            "{} is not an executable plugin (it needs its run bit, and to start with #! or be an ELF binary)",
            exe.display()
        )));
    }
    let mut files = vec![(file_name, 0o755, body)];
    if let Some(folder) = folder {
        for dir in EXTRA_DIRS {
            collect(&folder.join(dir), dir, &mut files)?;
        }
    }
    let extra = files[1..].iter().map(|(p, _, _)| p.clone()).collect();
    Ok(Packed {
        name,
        bytes: targz(&files)?,
        extra,
    })
}

/// The one `app-*` executable at the top of a plugin folder.
fn executable_in(folder: &Path) -> Result<PathBuf, Failure> {
    let entries = fs::read_dir(folder)
        .map_err(|e| Failure::usage(format!("cannot read {}: {e}", folder.display())))?;
    let found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(PLUGIN_PREFIX))
                && p.is_file()
        })
        .collect();
    match found.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(Failure::usage(format!(
            "{} holds no app-NAME executable",
            folder.display()
        ))),
        _ => Err(Failure::usage(format!(
            "{} holds several app-* files; a plugin folder holds exactly one",
            folder.display()
        ))),
    }
}

/// Every file under `dir` (if it exists), as `prefix/relative` paths.
fn collect(
    dir: &Path,
    prefix: &str,
    files: &mut Vec<(String, u32, Vec<u8>)>,
) -> Result<(), Failure> {
    let Ok(meta) = fs::symlink_metadata(dir) else {
        return Ok(());
    };
    if !meta.is_dir() {
        return Err(Failure::usage(format!(
            "{} is not a folder (a link or a file is not packed)",
            dir.display()
        )));
    }
    let mut entries: Vec<_> = fs::read_dir(dir)
        .map_err(|e| Failure::usage(format!("cannot read {}: {e}", dir.display())))?
        .filter_map(Result::ok)
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        let rel = format!("{prefix}/{name}");
        let kind = fs::symlink_metadata(&path)
            .map_err(|e| Failure::usage(format!("cannot read {}: {e}", path.display())))?;
        if kind.is_dir() {
            collect(&path, &rel, files)?;
        } else if kind.is_file() {
            if files.len() > MAX_FILES {
                return Err(Failure::usage(format!(
                    "the plugin folder holds more than {MAX_FILES} files"
                )));
            }
            let mode = if is_executable(&path) { 0o755 } else { 0o644 };
            files.push((rel, mode, read_file(&path)?));
        } else {
            return Err(Failure::usage(format!(
                "{} is a link or a device: only files and folders are packed",
                path.display()
            )));
        }
    }
    Ok(())
}

fn is_executable(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
}

fn read_file(path: &Path) -> Result<Vec<u8>, Failure> {
    app_plugin::file::read_limited(path, app_fetch_protocol::max_bytes())
        .map_err(|e| Failure::usage(format!("cannot read {}: {e}", path.display())))
}

/// A `.tar.gz` of `files` with fixed times and owners.
fn targz(files: &[(String, u32, Vec<u8>)]) -> Result<Vec<u8>, Failure> {
    let io = |e: std::io::Error| Failure::io(format!("cannot pack the archive: {e}"));
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let mut builder = tar::Builder::new(gz);
    for (path, mode, body) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(body.len() as u64);
        header.set_mode(*mode);
        header.set_mtime(0);
        header.set_uid(0);
        header.set_gid(0);
        header.set_cksum();
        builder
            .append_data(&mut header, path, body.as_slice())
            .map_err(io)?;
    }
    builder.into_inner().map_err(io)?.finish().map_err(io)
}
