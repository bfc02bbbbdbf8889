//! The package carries the plugin SDK's source in /usr/share/app/sdk, so a
//! Rust skeleton made by the packaged `app plugin new --lang rust` builds
//! as printed (`cd DIR && cargo build --release`). Built offline: cargo's
//! registry already holds the SDK's dependencies (this workspace fetched
//! them), so the test needs no network and shows that the SDK's own source
//! came from the package, not from crates.io (where app-plugin is not).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::{self, Sandbox};
use crate::packaging::{package, run, text, unpack};

#[test]
fn a_rust_skeleton_from_the_packaged_app_builds_against_the_packaged_sdk() {
    let Some(deb) = package() else { return };
    let Some(_) = common::require_tool("dpkg-deb", "dpkg") else {
        return;
    };
    let sb = Sandbox::new();
    let root = sb.path().join("root");
    unpack(&deb, &root);
    let sdk = root.join("usr/share/app/sdk");
    let manifest = fs::read_to_string(sdk.join("Cargo.toml")).unwrap_or_default();
    // The crate as published: its own version, no workspace inheritance.
    assert!(
        manifest.contains("name = \"app-plugin\"")
            && manifest.contains(&format!("version = \"{}\"", env!("CARGO_PKG_VERSION")))
            && !manifest.contains("workspace = true"),
        "{}: {manifest}",
        sdk.display()
    );
    assert!(sdk.join("src/lib.rs").is_file());

    let dir = sb.path().join("sdkdemo");
    let out = run(sb
        .command(root.join("usr/bin/app"))
        .args(["plugin", "new", "sdkdemo", "--lang", "rust", "--dir"])
        .arg(&dir));
    let printed = text(&out);
    assert!(out.status.success(), "{printed}");
    let cargo_toml = fs::read_to_string(dir.join("Cargo.toml")).expect("the skeleton's Cargo.toml");
    assert!(
        cargo_toml.contains(&format!(
            "[patch.crates-io]\napp-plugin = {{ path = \"{}\" }}",
            sdk.display()
        )),
        "{cargo_toml}"
    );
    let build = format!("cd {} && cargo build --release", dir.display());
    assert!(printed.contains(&build), "{printed}");

    // The printed command, typed into a shell; target/ links to a directory
    // that outlives the sandbox, so that later runs are quick.
    let shared = common::app_bin()
        .parent()
        .and_then(Path::parent)
        .expect("target dir")
        .join("skeleton-test-deb");
    fs::create_dir_all(&shared).expect("mkdir");
    std::os::unix::fs::symlink(&shared, dir.join("target")).expect("link target/");
    let cargo = std::env::var_os("CARGO")
        .map(PathBuf::from)
        .expect("cargo runs the tests");
    let path = format!(
        "{}:{}",
        cargo.parent().expect("cargo's directory").display(),
        sb.path_var()
    );
    let log = sb.path().join("build.log");
    let mut child = Command::new("sh")
        .args(["-c", &build])
        .env("PATH", &path)
        .env("CARGO_NET_OFFLINE", "true")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET_DIR")
        .current_dir(sb.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(fs::File::create(&log).expect("create the log"))
        .spawn()
        .expect("run sh");
    let status = common::wait_for(Duration::from_secs(900), || child.try_wait().ok().flatten())
        .unwrap_or_else(|| {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{build} took more than 15 minutes")
        });
    let built = fs::read_to_string(&log).unwrap_or_default();
    assert!(status.success(), "{build} failed:\n{built}");
    // It compiled the packaged SDK (its path is new in every run, so cargo
    // compiles it every time).
    assert!(
        built.contains(&format!(
            "Compiling app-plugin v{} ({})",
            env!("CARGO_PKG_VERSION"),
            sdk.display()
        )),
        "{built}"
    );
    let exe = dir.join("target/release/app-sdkdemo");
    let meta = run(Command::new(&exe).arg("__app_metadata"));
    let meta: serde_json::Value = serde_json::from_slice(&meta.stdout).expect("metadata JSON");
    assert_eq!(meta["name"], "sdkdemo");
}
