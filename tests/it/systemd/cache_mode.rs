//! The dispatcher's metadata cache follows the umask, as a unit's
//! `UMask=0027` expects of the files in its `CacheDirectory=` (they were
//! 0644 whatever the umask: the cache set its mode explicitly).

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;

use crate::common::{app_bin, Sandbox};

/// The modes of the metadata cache's files after `app plugin list` run
/// under `umask`.
fn cache_modes(umask: &str) -> Vec<u32> {
    let sb = Sandbox::new();
    let out = sb
        .command("sh")
        .args(["-c", &format!("umask {umask}; exec \"$0\" plugin list")])
        .arg(app_bin())
        .stdin(Stdio::null())
        .output()
        .expect("run app plugin list");
    assert!(out.status.success(), "{out:?}");
    let dir = sb.path().join("cache/metadata");
    let entries = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("no metadata cache in {}: {e}", dir.display()));
    let modes: Vec<u32> = entries
        .map(|e| {
            let meta = e.expect("cache entry").metadata().expect("stat");
            meta.permissions().mode() & 0o777
        })
        .collect();
    assert!(!modes.is_empty(), "nothing cached in {}", dir.display());
    modes
}

#[test]
fn the_metadata_cache_files_follow_the_umask() {
    let octal = |modes: &[u32]| {
        format!(
            "{:?}",
            modes.iter().map(|m| format!("{m:o}")).collect::<Vec<_>>()
        )
    };
    let under_unit = cache_modes("027");
    assert!(
        under_unit.iter().all(|&m| m == 0o640),
        "{}",
        octal(&under_unit)
    );
    // The control: another umask gives another mode.
    let usual = cache_modes("022");
    assert!(usual.iter().all(|&m| m == 0o644), "{}", octal(&usual));
}
