//! `app plugin apply -f plugins.json` against two signed indexes served on
//! 127.0.0.1 (issue 35): a fresh machine reaches the declared set; a second
//! apply changes nothing and says so; a version bump upgrades one plugin;
//! `--dry-run`, `--prune`, `-o json`; `--locked` on a second home installs
//! the same bytes, refuses a lock that disagrees with the file, and a
//! tampered archive under it changes nothing.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};

use common::index::{archive, sha256, World, FUTURE};
use common::run::{Ran, Run};
use common::{snapshot, Sandbox};
use serde_json::{json, Value};

/// Publishes main (hello 1.0.0 and 1.1.0, world 1.0.0) and extra (tool
/// 2.0.0), not added; returns their URLs.
fn publish(w: &World) -> (String, String) {
    let main = w.plugins(&[("hello", "1.0.0"), ("hello", "1.1.0"), ("world", "1.0.0")]);
    let extra = w.plugins(&[("tool", "2.0.0")]);
    (
        w.publish("main.json", 1, FUTURE, main, &w.key),
        w.publish("extra.json", 1, FUTURE, extra, &w.key),
    )
}

/// Writes `dir/plugins.json` declaring both indexes (the key as a file
/// beside it) and `plugins`; returns its path.
fn write_set(dir: &Path, w: &World, urls: &(String, String), plugins: Value) -> PathBuf {
    fs::create_dir_all(dir).unwrap();
    fs::copy(&w.key.public, dir.join("publisher.pub")).unwrap();
    let set = json!({
        "indexes": {"main": {"url": urls.0, "key_file": "publisher.pub"},
                    "extra": {"url": urls.1, "key_file": "publisher.pub"}},
        "plugins": plugins,
    });
    let path = dir.join("plugins.json");
    fs::write(&path, serde_json::to_vec_pretty(&set).unwrap()).unwrap();
    path
}

fn declared() -> Value {
    json!({"hello": "1.0.0", "world": "*", "tool": {"version": "^2", "index": "extra", "pin": true}})
}

/// `app ARGS` in home `sb`.
fn run(sb: &Sandbox, args: &[&str]) -> Ran {
    let mut cmd = sb.app_without_proxy();
    cmd.args(args);
    Run::new(cmd).assert()
}

/// Every file of a directory, with its mode and contents.
type Files = Option<std::collections::BTreeMap<PathBuf, (u32, Vec<u8>)>>;

/// The plugin directory, the cached indexes and the config of home `sb`.
fn state(sb: &Sandbox) -> Vec<Files> {
    [
        sb.data_dir().join("plugins"),
        sb.path().join("cache"),
        sb.config_dir(),
    ]
    .iter()
    .map(|d| snapshot(d))
    .collect()
}

fn receipt(sb: &Sandbox, name: &str) -> Value {
    let text = fs::read_to_string(sb.data_dir().join("plugins/.receipts.json")).unwrap();
    serde_json::from_str::<Value>(&text).unwrap()["plugins"][name].clone()
}

#[test]
fn apply_reaches_the_set_keeps_it_upgrades_one_and_prunes() {
    let Some(w) = World::new() else { return };
    let urls = publish(&w);
    let dir = w.sb.path().join("fleet");
    let file = write_set(&dir, &w, &urls, declared());
    let file = file.to_str().unwrap();

    // --dry-run: the plan, and nothing written (not even the indexes).
    let before = state(&w.sb);
    let ran = w.app(&["plugin", "apply", "-f", file, "--dry-run"]).code(0);
    for line in [
        "index 'main' would be added",
        "hello: install 1.0.0 (index main)",
        "tool: install 2.0.0 (index extra, pinned)",
        "world: install 1.0.0 (index main)",
        "dry run: nothing was changed (3 of 3 plugins would change)",
    ] {
        assert!(ran.stdout.contains(line), "{line:?} in {ran:?}");
    }
    assert!(state(&w.sb) == before, "--dry-run changed a file");
    assert!(!dir.join("plugins.lock").exists());

    // A fresh machine reaches the declared set.
    let ran = w.app(&["plugin", "apply", "-f", file]).code(0);
    assert!(
        ran.stdout.contains("added index 'main'") && ran.stdout.contains("added index 'extra'"),
        "{ran:?}"
    );
    assert!(
        ran.stdout.contains(&format!(
            "applied {file}: 3 changed, 0 as they were; wrote "
        )),
        "{ran:?}"
    );
    assert!(state(&w.sb) != before, "the control: apply writes");
    w.app(&["hello"]).ok().stdout_is("hello 1.0.0");
    w.app(&["tool"]).ok().stdout_is("tool 2.0.0");
    assert_eq!(receipt(&w.sb, "tool")["pinned"], true);
    let lock: Value = serde_json::from_slice(&fs::read(dir.join("plugins.lock")).unwrap()).unwrap();
    assert_eq!(
        lock["plugins"]["hello"],
        json!({"version": "1.0.0", "index": "main", "url": w.server.url("/hello-1.0.0.tar.gz"),
               "sha256": sha256(&archive("hello", "1.0.0"))})
    );
    assert_eq!(lock["plugins"]["tool"]["index"], "extra");

    // A second apply changes nothing, and says so.
    let installed = state(&w.sb);
    let ran = w.app(&["plugin", "apply", "-f", file]).code(0);
    assert_eq!(
        ran.lines().last().copied(),
        Some(
            format!(
                "nothing to do: the 3 plugins of {file} are installed as declared; {} unchanged",
                dir.join("plugins.lock").display()
            )
            .as_str()
        ),
        "{ran:?}"
    );
    assert!(state(&w.sb) == installed, "a second apply changed a file");
    let doc: Value = serde_json::from_str(
        &w.app(&["plugin", "apply", "-f", file, "-o", "json"])
            .code(0)
            .stdout,
    )
    .unwrap();
    assert_eq!(
        (doc["changed"].clone(), doc["failed"].clone()),
        (json!(0), json!(0))
    );
    let actions: Vec<&str> = doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["keep", "keep", "keep"]);

    // A version bump in the file upgrades that plugin only.
    let mut bumped = declared();
    bumped["hello"] = json!("1.1.0");
    write_set(&dir, &w, &urls, bumped.clone());
    let ran = w.app(&["plugin", "apply", "-f", file]).code(0);
    assert!(
        ran.stdout
            .contains("hello: upgrade 1.0.0 → 1.1.0 (index main)"),
        "{ran:?}"
    );
    assert!(
        ran.stdout.contains("world: keep 1.0.0 (index main)"),
        "{ran:?}"
    );
    assert!(ran.stdout.contains("1 changed, 2 as they were"), "{ran:?}");
    w.app(&["hello"]).ok().stdout_is("hello 1.1.0");

    // A plugin installed by hand is left, unless --prune; never one on PATH
    // or a shipped one.
    let stray = w.sb.path().join("app-stray");
    common::write_executable(&stray, "#!/bin/sh\necho stray\n");
    w.app(&["plugin", "install", stray.to_str().unwrap()])
        .code(0);
    w.sb.script("app-onpath", "#!/bin/sh\necho onpath\n");
    w.app(&["plugin", "apply", "-f", file])
        .code(0)
        .stdout_has("stray: not in the plugin set, left installed (--prune removes it)");
    w.app(&["stray"]).ok().stdout_is("stray");
    w.app(&["plugin", "apply", "-f", file, "--prune"])
        .code(0)
        .stdout_has("stray: remove");
    assert!(!w.plugin_dir().join("app-stray").exists());
    w.app(&["onpath"]).ok().stdout_is("onpath");
    w.app(&["plugin", "path", "event-time"]).code(0);
    w.app(&["hello"]).ok().stdout_is("hello 1.1.0");

    // A file of the wrong shape: refused, nothing changed.
    fs::write(
        dir.join("bad.json"),
        r#"{"plugins": {"hello": {"verison": "1"}}}"#,
    )
    .unwrap();
    let bad = dir.join("bad.json");
    w.refused(
        &["plugin", "apply", "-f", bad.to_str().unwrap()],
        2,
        &["is not a plugin set"],
    );
}

#[test]
fn locked_installs_the_same_bytes_elsewhere_and_a_tampered_archive_changes_nothing() {
    let Some(w) = World::new() else { return };
    let urls = publish(&w);
    let dir = w.sb.path().join("fleet");
    let file = write_set(&dir, &w, &urls, declared());
    w.app(&["plugin", "apply", "-f", file.to_str().unwrap()])
        .code(0);

    // A second home with the file and its lock.
    let b = Sandbox::new();
    let b_dir = b.path().join("fleet");
    write_set(&b_dir, &w, &urls, declared());
    fs::copy(dir.join("plugins.lock"), b_dir.join("plugins.lock")).unwrap();
    let b_file = b_dir.join("plugins.json");
    let b_file = b_file.to_str().unwrap();
    run(&b, &["plugin", "apply", "-f", b_file, "--locked"])
        .code(0)
        .stdout_has("3 changed");
    for name in ["app-hello", "app-world", "app-tool"] {
        assert_eq!(
            fs::read(b.data_dir().join("plugins").join(name)).unwrap(),
            fs::read(w.plugin_dir().join(name)).unwrap(),
            "{name}"
        );
    }
    assert_eq!(
        receipt(&b, "hello")["sha256"],
        receipt(&w.sb, "hello")["sha256"]
    );
    assert_eq!(
        fs::read(b_dir.join("plugins.lock")).unwrap(),
        fs::read(dir.join("plugins.lock")).unwrap()
    );

    // The file and the lock disagree: refused (exit 10), nothing changed.
    let mut bumped = declared();
    bumped["hello"] = json!("1.1.0");
    write_set(&b_dir, &w, &urls, bumped);
    let before = state(&b);
    run(&b, &["plugin", "apply", "-f", b_file, "--locked"])
        .code(10)
        .stderr_has("plugin 'hello': the file asks for '1.1.0', the lock has 1.0.0");
    assert!(state(&b) == before);
    write_set(&b_dir, &w, &urls, declared());

    // A third, fresh home; the server's hello archive tampered with.
    let c = Sandbox::new();
    let c_dir = c.path().join("fleet");
    write_set(&c_dir, &w, &urls, declared());
    fs::copy(dir.join("plugins.lock"), c_dir.join("plugins.lock")).unwrap();
    let c_file = c_dir.join("plugins.json");
    let c_file = c_file.to_str().unwrap();
    let good = archive("hello", "1.0.0");
    let mut bad = good.clone();
    let at = bad.len() / 2;
    bad[at] ^= 0xff;
    w.server.serve("/hello-1.0.0.tar.gz", &bad);
    let before = state(&c);
    let ran = run(&c, &["plugin", "apply", "-f", c_file, "--locked"]).code(5);
    assert!(
        ran.stderr
            .contains("plugin 'hello' 1.0.0 of index 'main' was refused, so nothing was changed"),
        "{ran:?}"
    );
    assert!(ran.stderr.contains("checksum mismatch"), "{ran:?}");
    assert!(
        state(&c) == before,
        "a tampered archive changed the plugin dir, the caches or the config"
    );
    // The control: the right archive again, and the same home applies.
    w.server.serve("/hello-1.0.0.tar.gz", &good);
    run(&c, &["plugin", "apply", "-f", c_file, "--locked"]).code(0);
    assert!(state(&c) != before);
    // No lock at all: exit 10.
    fs::remove_file(c_dir.join("plugins.lock")).unwrap();
    run(&c, &["plugin", "apply", "-f", c_file, "--locked"])
        .code(10)
        .stderr_has("--locked needs");
}
