//! `install NAME|NAME@VERSION|INDEX/NAME` and `upgrade --all` from signed
//! indexes.

use crate::common;

use std::fs;

use common::index::{archive, sha256, World, FUTURE};
use serde_json::{json, Value};

#[test]
fn install_by_name_version_and_index_and_ambiguity() {
    let Some(w) = World::new() else { return };
    w.main_and_extra(
        &[("hello", "1.0.0"), ("hello", "1.1.0"), ("dup", "1.0.0")],
        &[("dup", "2.0.0")],
    );

    w.app(&["plugin", "install", "hello"])
        .code(0)
        .stdout_has("installed plugin 'hello' 1.1.0");
    w.app(&["hello"]).ok().stdout_is("hello 1.1.0");
    let record: Value =
        serde_json::from_str(&fs::read_to_string(w.plugin_dir().join(".receipts.json")).unwrap())
            .unwrap();
    let hello = &record["plugins"]["hello"];
    assert_eq!(hello["index"], "main");
    assert_eq!(hello["version"], "1.1.0");
    assert_eq!(hello["archive_sha256"], sha256(&archive("hello", "1.1.0")));
    assert_eq!(hello["source"], w.server.url("/hello-1.1.0.tar.gz"));

    // Already there: --force, as for any install; NAME@VERSION picks that one.
    w.refused(
        &["plugin", "install", "hello@1.0.0"],
        4,
        &["already installed"],
    );
    w.app(&["plugin", "install", "hello@1.0.0", "--force"])
        .code(0);
    w.app(&["hello"]).ok().stdout_is("hello 1.0.0");
    // plugin list says an upgrade is there.
    let list = w.app(&["plugin", "list"]).code(0);
    let line = list
        .lines()
        .into_iter()
        .find(|l| l.starts_with("hello "))
        .map(String::from)
        .expect("hello listed");
    assert!(
        line.contains("[installed 1.0.0 from index main] [pinned] [upgrade available: 1.1.0]"),
        "{line}"
    );
    w.refused(
        &["plugin", "install", "hello@9.9.9"],
        7,
        &["index 'main' has no version 9.9.9 of plugin 'hello' (it has 1.1.0, 1.0.0)"],
    );

    // A name in two indexes needs INDEX/.
    w.refused(
        &["plugin", "install", "dup"],
        2,
        &[
            "plugin 'dup' is in several indexes (extra, main)",
            "app plugin install extra/dup or app plugin install main/dup",
        ],
    );
    w.app(&["plugin", "install", "extra/dup"])
        .code(0)
        .stdout_has("installed plugin 'dup' 2.0.0");
    w.app(&["dup"]).ok().stdout_is("dup 2.0.0");
    w.refused(
        &["plugin", "install", "nosuch/dup"],
        7,
        &["there is no index named 'nosuch'"],
    );
    w.refused(
        &["plugin", "install", "helo"],
        7,
        &["no plugin 'helo' in the indexes (main, extra) (did you mean 'hello'?)"],
    );
    // remove works as today.
    w.app(&["plugin", "remove", "dup"]).code(0);
    assert!(!w.plugin_dir().join("app-dup").exists());
}

#[test]
fn upgrade_all_goes_on_past_one_failure() {
    let Some(w) = World::new() else { return };
    w.main_index(1, &[("aaa", "1.0.0"), ("bbb", "1.0.0"), ("ccc", "1.0.0")]);
    for name in ["aaa", "bbb", "ccc"] {
        w.app(&["plugin", "install", name]).code(0);
    }
    // aaa and ccc get a new version; bbb's new archive does not match its sha256.
    let mut bbb = w.plugin("bbb", "1.1.0");
    bbb["platforms"][0]["sha256"] = json!("ab".repeat(32));
    w.publish(
        "index.json",
        2,
        FUTURE,
        vec![
            w.plugin("aaa", "1.1.0"),
            bbb,
            w.plugin("ccc", "1.0.0"),
            w.plugin("aaa", "1.0.0"),
        ],
        &w.key,
    );
    w.app(&["plugin", "index", "update"]).ok();
    let bbb_before = fs::read(w.plugin_dir().join("app-bbb")).unwrap();
    let ran = w.app(&["plugin", "upgrade", "--all"]).code(5);
    assert_eq!(
        ran.lines(),
        [
            "aaa 1.0.0 → 1.1.0",
            "bbb 1.0.0: failed (below)",
            "ccc 1.0.0: up to date"
        ],
        "{ran:?}"
    );
    let ran = ran.stderr_has("app: upgrade of 'bbb' failed: plugin 'bbb' 1.1.0 of index 'main' was refused: checksum mismatch");
    assert_eq!(ran.stderr.lines().count(), 1, "{ran:?}");
    w.app(&["aaa"]).ok().stdout_is("aaa 1.1.0");
    assert_eq!(
        fs::read(w.plugin_dir().join("app-bbb")).unwrap(),
        bbb_before
    );
    w.app(&["plugin", "upgrade", "aaa"])
        .ok()
        .stdout_is("plugin 'aaa' 1.1.0 is up to date");
}
