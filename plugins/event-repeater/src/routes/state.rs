//! The state file: the routes, written atomically after every accepted change
//! and read at start, so neither a restart nor `kill -9` loses a route.
//!
//! Format: `{"version":1,"routes":[{"sourcetopic":…,"sinktopic":…},…]}`; a bare
//! array of routes is accepted too, for hand-written files.
//!
//! The file is private (0600) in a directory created private (0700): routes
//! say where events go. Only a regular file is read (a FIFO or a device is
//! refused instead of blocking or reading forever), up to [`MAX_STATE`].

use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::files::{read_regular, write_private};
use crate::routes::{Route, Routes};

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Document {
    version: u32,
    routes: Vec<Route>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum AnyDocument {
    Doc(Document),
    Bare(Vec<Route>),
}

/// The largest state file read: far above any route table in use, small
/// enough that a wrong path (a log, a device) is refused quickly.
pub const MAX_STATE: u64 = 64 << 20;

/// Reads the routes from `path`; a missing file means no routes.
pub fn load(path: &Path) -> Result<Routes, String> {
    let text = match read_regular(path, MAX_STATE) {
        Ok(Some(t)) => t,
        Ok(None) => return Ok(Routes::default()),
        Err(e) => return Err(format!("the state file (--state): {e}")),
    };
    if text.trim().is_empty() {
        return Ok(Routes::default());
    }
    let specs = match serde_json::from_str::<AnyDocument>(&text) {
        Ok(AnyDocument::Doc(d)) if d.version == 1 => d.routes,
        Ok(AnyDocument::Doc(d)) => {
            return Err(format!(
                "the state file {} has version {}{}; this repeater reads version 1 and leaves the file alone: install that release again, or move the file aside to start without it",
                path.display(),
                d.version,
                if d.version > 1 { ", from a newer release of app" } else { "" }
            ))
        }
        Ok(AnyDocument::Bare(routes)) => routes,
        Err(_) => {
            // Parse again for a precise message (untagged enums lose it).
            let detail = serde_json::from_str::<Document>(&text)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            return Err(format!(
                "the state file {} is not a valid routes document ({detail}); fix or remove it",
                path.display()
            ));
        }
    };
    Routes::from_specs(specs).map_err(|e| {
        format!(
            "the state file {} holds an invalid route: {e}",
            path.display()
        )
    })
}

/// Writes the routes to `path` atomically: a temp file in the same directory,
/// fsync, rename over the old file, fsync the directory.
pub fn save(path: &Path, routes: &Routes) -> io::Result<()> {
    let doc = Document {
        version: 1,
        routes: routes.list(),
    };
    let mut text = serde_json::to_vec_pretty(&doc).map_err(io::Error::other)?;
    text.push(b'\n');
    write_private(path, &text, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    fn spec(s: &str, t: &str) -> Route {
        Route {
            sourcetopic: s.into(),
            sinktopic: t.into(),
        }
    }

    #[test]
    fn save_then_load_round_trips_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/r.routes.json");
        assert!(load(&path).unwrap().is_empty());
        let routes = Routes::from_specs(vec![spec("a/", "x/{suffix}"), spec("b", "")]).unwrap();
        save(&path, &routes).unwrap();
        assert_eq!(load(&path).unwrap(), routes);
        let names: Vec<_> = fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("r.routes.json")]);
    }

    #[test]
    fn bare_arrays_are_accepted_and_garbage_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        fs::write(&path, r#"[{"sourcetopic":"a","sinktopic":"b"}]"#).unwrap();
        assert_eq!(load(&path).unwrap().list(), vec![spec("a", "b")]);
        fs::write(&path, "{not json").unwrap();
        assert!(load(&path)
            .unwrap_err()
            .contains("not a valid routes document"));
        fs::write(&path, r#"[{"sourcetopic":""}]"#).unwrap();
        assert!(load(&path).unwrap_err().contains("invalid route"));
    }

    #[test]
    fn the_file_is_private_in_a_private_directory() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new/sub/r.routes.json");
        save(&path, &Routes::default()).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        assert_eq!(mode(&dir.path().join("new")), 0o700);
    }

    #[test]
    fn special_files_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = load(&fifo).unwrap_err();
        assert!(e.contains("is a FIFO, not a regular file"), "{e}");
        let e = load(dir.path()).unwrap_err();
        assert!(e.contains("a directory"), "{e}");
        let e = load(Path::new("/dev/zero")).unwrap_err();
        assert!(e.contains("a device"), "{e}");
    }
}
