//! The state file: the routes, written atomically after every accepted change
//! and read at start, so neither a restart nor `kill -9` loses a route.
//!
//! Format: `{"version":1,"routes":[{"sourcetopic":…,"sinktopic":…},…]}`; a bare
//! array of routes is accepted too, for hand-written files.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::routes::{RouteSpec, Routes};

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Document {
    version: u32,
    routes: Vec<RouteSpec>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum AnyDocument {
    Doc(Document),
    Bare(Vec<RouteSpec>),
}

/// Reads the routes from `path`; a missing file means no routes.
pub fn load(path: &Path) -> Result<Routes, String> {
    let text = match fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Routes::default()),
        Err(e) => {
            return Err(format!(
                "cannot read the state file {}: {e}",
                path.display()
            ))
        }
    };
    if text.trim().is_empty() {
        return Ok(Routes::default());
    }
    let specs = match serde_json::from_str::<AnyDocument>(&text) {
        Ok(AnyDocument::Doc(d)) if d.version == 1 => d.routes,
        Ok(AnyDocument::Doc(d)) => {
            return Err(format!(
                "the state file {} has version {}; this repeater reads version 1",
                path.display(),
                d.version
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
            "the state file {} holds an invalid route: {}",
            path.display(),
            e.message
        )
    })
}

/// Writes the routes to `path` atomically: a temp file in the same directory,
/// fsync, rename over the old file, fsync the directory.
pub fn save(path: &Path, routes: &Routes) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    let doc = Document {
        version: 1,
        routes: routes.list(),
    };
    let mut text = serde_json::to_vec_pretty(&doc).map_err(io::Error::other)?;
    text.push(b'\n');
    let tmp = temp_path(path);
    let result = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        f.write_all(&text)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, path)?;
        File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "routes.json".into());
    path.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: &str, t: &str) -> RouteSpec {
        RouteSpec {
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
}
