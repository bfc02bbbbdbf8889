//! Where plugins are: the search path, and enumerating what is on it.
//!
//! Order, duplicates removed: `APP_PLUGIN_PATH` (colon-separated), the
//! shipped plugin directory ([`shipped_dir`]: `<prefix>/libexec/app` for an
//! `app` in `<prefix>/bin`, like git's exec-path), the user plugin
//! directory, then `PATH`. Empty and relative entries are skipped: a
//! relative directory would make the meaning of a command depend on the
//! current directory.
//!
//! The directory of the `app` binary itself is not searched (unless it is
//! a cargo build directory, see [`shipped_dir`]): it is often a shared bin
//! directory (`~/.cargo/bin`, `/usr/local/bin`) where any `app-*` that
//! anything installed would otherwise be trusted.
//!
//! Looking up one name only checks that name in each directory; only
//! [`SearchPath::enumerate`] reads directories (for `plugin list`, `help`
//! and completion).

use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Prefix of every plugin executable (the plugin contract's, in the SDK).
pub use app_plugin::metadata::PLUGIN_PREFIX;
/// `0` leaves the user plugin directory off the search path: the packaged
/// units set it, since the daemon user can write its own data directory.
pub const USER_PLUGINS_VAR: &str = "APP_USER_PLUGINS";
/// Prefix of kubectl-style completion helpers (`app_complete-<name>`).
pub const COMPLETE_PREFIX: &str = "app_complete-";

/// Why a directory is on the search path; decides whether its plugins are trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// From `APP_PLUGIN_PATH`.
    PluginPath,
    /// The shipped plugin directory ([`shipped_dir`]).
    AppDir,
    /// The user plugin directory (`APP_DATA_DIR/plugins`).
    UserDir,
    /// From `PATH`.
    Path,
}

impl Origin {
    /// Plugins in these places may be asked for metadata and completions;
    /// plugins found only through `PATH` may not (unless the config trusts them).
    pub fn is_trusted(self) -> bool {
        self != Origin::Path
    }

    /// Places that may add a command under a shipped one (see
    /// [`crate::shipped`]): the shipped directory, and `APP_PLUGIN_PATH`,
    /// which the user sets on purpose. Not the user plugin directory (a
    /// daemon can write its own) and not `PATH`.
    pub fn may_extend_shipped(self) -> bool {
        matches!(self, Origin::PluginPath | Origin::AppDir)
    }

    /// A short label for listings.
    pub fn label(self) -> &'static str {
        match self {
            Origin::PluginPath => "APP_PLUGIN_PATH",
            Origin::AppDir => "shipped",
            Origin::UserDir => "user",
            Origin::Path => "PATH",
        }
    }
}

/// One directory of the search path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchDir {
    pub path: PathBuf,
    pub origin: Origin,
}

/// A file found on the search path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub path: PathBuf,
    pub origin: Origin,
}

/// The ordered, de-duplicated list of directories searched for plugins.
#[derive(Debug, Clone, Default)]
pub struct SearchPath {
    dirs: Vec<SearchDir>,
}

/// What a file on the search path is, as far as `stat` tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Executable,
    NotExecutable,
    /// A symbolic link that leads nowhere: dangling, or a loop.
    BrokenLink,
}

impl SearchPath {
    /// Builds the search path from its four sources, in order.
    pub fn new(
        plugin_path: Option<&OsStr>,
        app_dir: Option<&Path>,
        user_dir: Option<&Path>,
        path: Option<&OsStr>,
    ) -> SearchPath {
        let mut search = SearchPath::default();
        if let Some(pp) = plugin_path {
            for dir in std::env::split_paths(pp) {
                search.push(dir, Origin::PluginPath);
            }
        }
        if let Some(dir) = app_dir {
            search.push(dir.to_path_buf(), Origin::AppDir);
        }
        if let Some(dir) = user_dir {
            search.push(dir.to_path_buf(), Origin::UserDir);
        }
        if let Some(p) = path {
            for dir in std::env::split_paths(p) {
                search.push(dir, Origin::Path);
            }
        }
        search
    }

    /// The search path of this process: `APP_PLUGIN_PATH`, the shipped
    /// plugin directory of `app_exe` (the running `app`), `user_dir` (unless
    /// [`USER_PLUGINS_VAR`] is `0`), `PATH`. Fails on a bad [`USER_PLUGINS_VAR`].
    pub fn from_env(app_exe: Option<&Path>, user_dir: &Path) -> Result<SearchPath, String> {
        let user = match std::env::var_os(USER_PLUGINS_VAR) {
            None => true,
            Some(v) if v == "1" => true,
            Some(v) if v == "0" => false,
            Some(v) => {
                return Err(format!(
                    "{USER_PLUGINS_VAR}={v:?} must be 0 (no user plugin directory) or 1; fix or unset it"
                ))
            }
        };
        Ok(SearchPath::new(
            std::env::var_os("APP_PLUGIN_PATH").as_deref(),
            app_exe.and_then(shipped_dir).as_deref(),
            user.then_some(user_dir),
            std::env::var_os("PATH").as_deref(),
        ))
    }

    fn push(&mut self, dir: PathBuf, origin: Origin) {
        if dir.as_os_str().is_empty() || !dir.is_absolute() {
            return;
        }
        // Compare without trailing slashes so `/usr/bin/` and `/usr/bin` are
        // one entry. Plain byte comparison: this runs on every plugin call.
        let bytes = dir.as_os_str().as_encoded_bytes();
        let trimmed = bytes.len() - bytes.iter().rev().take_while(|b| **b == b'/').count();
        let dir = if trimmed < bytes.len() && trimmed > 0 {
            PathBuf::from(<OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(
                &bytes[..trimmed],
            ))
        } else {
            dir
        };
        if self
            .dirs
            .iter()
            .all(|d| d.path.as_os_str() != dir.as_os_str())
        {
            self.dirs.push(SearchDir { path: dir, origin });
        }
    }

    /// The directories, in search order.
    pub fn dirs(&self) -> &[SearchDir] {
        &self.dirs
    }

    /// Every file called `file_name` on the search path, in order, with what
    /// kind of file it is. Checks one name per directory; reads no directory.
    pub fn lookup<'a>(
        &'a self,
        file_name: &'a str,
    ) -> impl Iterator<Item = (Found, FileKind)> + 'a {
        self.dirs.iter().filter_map(move |dir| {
            let path = dir.path.join(file_name);
            let kind = file_kind(&path)?;
            Some((
                Found {
                    path,
                    origin: dir.origin,
                },
                kind,
            ))
        })
    }

    /// Whether an executable `file_name` is in the shipped directory (one
    /// stat; no other directory is looked at).
    pub fn in_shipped_dir(&self, file_name: &str) -> bool {
        self.dirs
            .iter()
            .filter(|d| d.origin == Origin::AppDir)
            .any(|d| file_kind(&d.path.join(file_name)) == Some(FileKind::Executable))
    }

    /// The first executable called `file_name`.
    pub fn find_executable(&self, file_name: &str) -> Option<Found> {
        self.lookup(file_name)
            .find(|(_, kind)| *kind == FileKind::Executable)
            .map(|(found, _)| found)
    }

    /// Every file whose name starts with `prefix`, in search order, shadowed
    /// ones included (each entry says which file it is).
    pub fn enumerate(&self, prefix: &str) -> Vec<Entry> {
        let mut out = Vec::new();
        for dir in &self.dirs {
            let Ok(read) = fs::read_dir(&dir.path) else {
                continue;
            };
            let mut names: Vec<(String, PathBuf)> = read
                .filter_map(|e| e.ok())
                .filter_map(|e| {
                    let name = e.file_name().into_string().ok()?;
                    let rest = name.strip_prefix(prefix)?;
                    (!rest.is_empty()).then(|| (rest.to_string(), e.path()))
                })
                .collect();
            names.sort();
            for (name, path) in names {
                let Some(kind) = file_kind(&path) else {
                    continue;
                };
                out.push(Entry {
                    name,
                    found: Found {
                        path,
                        origin: dir.origin,
                    },
                    kind,
                });
            }
        }
        out
    }
}

/// The first executable called `name` on `PATH` alone, found the way
/// plugins are (one stat per directory; empty and relative entries
/// skipped): the tools `app` runs (git, cargo, its fetch helper).
pub fn on_path(name: &str) -> Option<PathBuf> {
    SearchPath::new(None, None, None, std::env::var_os("PATH").as_deref())
        .find_executable(name)
        .map(|found| found.path)
}

/// Where the plugins shipped with `app` (and its helper `app_fetch`) live,
/// found from the `app` binary `app_exe` (as git finds `libexec/git-core`):
/// 1. `<dir of app>/../libexec/app`, when it is a directory: an installed
///    `app` (`<prefix>/bin/app` with `<prefix>/libexec/app/`, as
///    `install.sh` lays it out);
/// 2. else the directory of `app` itself, but only when it is a cargo build
///    directory (`target/debug`, `target/release`: cargo keeps its
///    `.cargo-lock` there), where a workspace build puts every binary side
///    by side; that is how `cargo run` and the tests find the plugins.
///
/// Nothing else: a plain bin directory holding `app` is shared with other
/// programs and is not trusted.
pub fn shipped_dir(app_exe: &Path) -> Option<PathBuf> {
    let bin = app_exe.parent()?;
    let libexec = bin
        .parent()
        .map(|prefix| prefix.join("libexec").join("app"));
    if let Some(dir) = libexec.filter(|d| d.is_dir()) {
        return Some(dir);
    }
    bin.join(".cargo-lock").is_file().then(|| bin.to_path_buf())
}

/// One file found by [`SearchPath::enumerate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The name after the prefix (`event-time` for `app-event-time`).
    pub name: String,
    pub found: Found,
    pub kind: FileKind,
}

/// `None` for anything that is not a regular file (after following links)
/// nor a link that leads nowhere.
fn file_kind(path: &Path) -> Option<FileKind> {
    // One lstat per directory on the way to a plugin (most hold no such
    // file); a second call only for a link, to follow it.
    let meta = fs::symlink_metadata(path).ok()?;
    let meta = if meta.file_type().is_symlink() {
        match fs::metadata(path) {
            Ok(target) => target,
            // A dangling link or a loop: there, but it cannot run.
            Err(_) => return Some(FileKind::BrokenLink),
        }
    } else {
        meta
    };
    if !meta.is_file() {
        return None;
    }
    Some(if meta.permissions().mode() & 0o111 != 0 {
        FileKind::Executable
    } else {
        FileKind::NotExecutable
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_dir_is_libexec_or_a_cargo_build_dir_never_a_plain_bin_dir() {
        let root = tempfile::tempdir().unwrap();
        let bin = root.path().join("bin");
        fs::create_dir_all(&bin).unwrap();
        let app = bin.join("app");
        assert_eq!(shipped_dir(&app), None);
        fs::write(bin.join(".cargo-lock"), "").unwrap();
        assert_eq!(shipped_dir(&app), Some(bin.clone()));
        let libexec = root.path().join("libexec/app");
        fs::create_dir_all(&libexec).unwrap();
        assert_eq!(shipped_dir(&app), Some(libexec));
    }

    #[test]
    fn order_is_plugin_path_app_dir_user_dir_path_without_duplicates() {
        let sp = SearchPath::new(
            Some(OsStr::new("/p1::relative:/p2/")),
            Some(Path::new("/app")),
            Some(Path::new("/user")),
            Some(OsStr::new("/usr/bin:/p1:/app:.:/bin")),
        );
        let dirs: Vec<_> = sp
            .dirs()
            .iter()
            .map(|d| (d.path.to_str().unwrap(), d.origin))
            .collect();
        assert_eq!(
            dirs,
            vec![
                ("/p1", Origin::PluginPath),
                ("/p2", Origin::PluginPath),
                ("/app", Origin::AppDir),
                ("/user", Origin::UserDir),
                ("/usr/bin", Origin::Path),
                ("/bin", Origin::Path),
            ]
        );
    }
}
