//! What `cargo deny` cannot hold by itself: crates we replaced stay out of
//! Cargo.lock from crates.io (a ban in deny.toml matches a name whatever
//! its source, so it cannot tell our stand-in from the crate).

use std::collections::BTreeMap;

/// Each locked package's name and version → its source (`None` for a
/// path crate of the workspace).
fn locked() -> BTreeMap<(String, String), Option<String>> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).expect("Cargo.lock");
    let mut packages = BTreeMap::new();
    for block in lock.split("[[package]]").skip(1) {
        let field = |key: &str| {
            block.lines().find_map(|l| {
                l.strip_prefix(key)
                    .and_then(|v| v.strip_prefix(" = "))
                    .map(|v| v.trim_matches('"').to_string())
            })
        };
        let name = field("name").expect("every locked package has a name");
        let version = field("version").expect("and a version");
        packages.insert((name, version), field("source"));
    }
    packages
}

#[test]
fn rustls_pemfile_is_the_workspace_stand_in_never_the_unmaintained_crate() {
    let packages = locked();
    let pemfile: Vec<_> = packages
        .iter()
        .filter(|((name, _), _)| name == "rustls-pemfile")
        .collect();
    // RUSTSEC-2025-0134: only vendor/rustls-pemfile, which has no source.
    for ((_, version), source) in &pemfile {
        assert_eq!(
            **source, None,
            "rustls-pemfile {version} comes from {source:?} (unmaintained, RUSTSEC-2025-0134); see [patch.crates-io] in Cargo.toml"
        );
    }
    // The reading sees sources: the PEM reader it stands on is crates.io's.
    let pki = packages
        .iter()
        .find(|((name, _), _)| name == "rustls-pki-types")
        .expect("rustls-pki-types is locked");
    assert!(
        pki.1.as_deref().is_some_and(|s| s.starts_with("registry+")),
        "{pki:?}"
    );
}
