//! Pins (`install NAME@VERSION`, `pin`, `unpin`, `upgrade NAME@VERSION`)
//! across `upgrade --all`, and `plugin outdated` with its exit codes.

use crate::common;

use common::index::{World, FUTURE};
use serde_json::Value;

fn receipt(w: &World, name: &str) -> Value {
    let text = std::fs::read_to_string(w.plugin_dir().join(".receipts.json")).unwrap();
    let all: Value = serde_json::from_str(&text).unwrap();
    all["plugins"][name].clone()
}

/// Publishes `/index.json` at `serial` with these versions, and updates.
fn publish(w: &World, serial: u64, plugins: &[(&str, &str)]) {
    let entries = w.plugins(plugins);
    w.publish("index.json", serial, FUTURE, entries, &w.key);
}

#[test]
fn pins_hold_across_upgrade_all_and_outdated_lists_them() {
    let Some(w) = World::new() else { return };
    w.main_index(1, &[("hello", "1.0.0"), ("world", "1.0.0")]);
    w.app(&["plugin", "install", "hello@1.0.0"])
        .code(0)
        .stdout_has("installed plugin 'hello' 1.0.0")
        .stdout_has("pinned at 1.0.0: 'app plugin upgrade --all' leaves it");
    let ran = w.app(&["plugin", "install", "world"]).code(0);
    assert!(!ran.stdout.contains("pinned"), "{ran:?}");
    assert_eq!(receipt(&w, "hello")["pinned"], true);
    assert_eq!(receipt(&w, "world")["pinned"], Value::Null);
    w.app(&["plugin", "outdated"])
        .code(0)
        .stdout_is("2 plugins installed from an index, none outdated.");

    let newer = [
        ("hello", "1.0.0"),
        ("hello", "1.1.0"),
        ("world", "1.0.0"),
        ("world", "1.1.0"),
    ];
    publish(&w, 2, &newer);
    // Cached copies only: nothing is outdated until they are refreshed.
    w.app(&["plugin", "outdated"]).code(0);
    let ran = w.app(&["plugin", "outdated", "--refresh"]).code(9);
    assert!(ran.stdout.contains("main: serial 1 → 2"), "{ran:?}");
    let rows: Vec<&str> = ran
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("NAME"))
        .collect();
    let cells = |l: &str| l.split_whitespace().map(String::from).collect::<Vec<_>>();
    assert_eq!(
        cells(rows[0]),
        ["NAME", "INSTALLED", "NEWEST", "INDEX", "PINNED"]
    );
    assert_eq!(
        cells(rows[1]),
        ["hello", "1.0.0", "1.1.0", "main", "pinned"]
    );
    assert_eq!(cells(rows[2]), ["world", "1.0.0", "1.1.0", "main", "-"]);
    let json = w.app(&["plugin", "outdated", "-o", "json"]).code(9);
    let list: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(
        list,
        serde_json::json!([
            {"name": "hello", "installed": "1.0.0", "newest": "1.1.0", "index": "main", "pinned": true},
            {"name": "world", "installed": "1.0.0", "newest": "1.1.0", "index": "main", "pinned": false}
        ])
    );

    let line = |ran: &common::run::Ran, name: &str| {
        ran.lines()
            .into_iter()
            .find(|l| l.starts_with(&format!("{name} ")))
            .map(String::from)
            .unwrap_or_default()
    };
    let list = w.app(&["plugin", "list"]).code(0);
    assert!(
        line(&list, "hello")
            .ends_with("[installed 1.0.0 from index main] [pinned] [upgrade available: 1.1.0]"),
        "{list:?}"
    );
    assert!(!line(&list, "world").contains("[pinned]"), "{list:?}");

    // upgrade --all moves world (the control) and says why hello stays.
    let ran = w.app(&["plugin", "upgrade", "--all"]).code(0);
    assert_eq!(
        ran.lines(),
        [
            "hello 1.0.0: pinned, skipped ('app plugin upgrade hello@VERSION' moves the pin, 'app plugin unpin hello' releases it)",
            "world 1.0.0 → 1.1.0",
        ],
        "{ran:?}"
    );
    w.app(&["hello"]).ok().stdout_is("hello 1.0.0");
    w.app(&["world"]).ok().stdout_is("world 1.1.0");
    w.refused(
        &["plugin", "upgrade", "hello"],
        4,
        &["app: plugin 'hello' is pinned at 1.0.0, so it was left as it is; 'app plugin upgrade hello@VERSION' moves the pin, 'app plugin unpin hello' releases it"],
    );

    // upgrade NAME@VERSION moves the pin, up or down.
    w.app(&["plugin", "upgrade", "hello@1.1.0"])
        .code(0)
        .stdout_has("upgraded plugin 'hello' 1.1.0")
        .stdout_has("pinned at 1.1.0");
    w.app(&["hello"]).ok().stdout_is("hello 1.1.0");
    assert_eq!(receipt(&w, "hello")["pinned"], true);
    w.app(&["plugin", "upgrade", "hello@1.0.0"]).code(0);
    w.app(&["hello"]).ok().stdout_is("hello 1.0.0");
    w.refused(
        &["plugin", "upgrade", "hello@9.9.9"],
        7,
        &["index 'main' has no version 9.9.9 of plugin 'hello'"],
    );

    // unpin: upgrade --all takes it again; pin: it stops.
    w.app(&["plugin", "unpin", "hello"])
        .code(0)
        .stdout_is("unpinned plugin 'hello' (1.0.0): 'app plugin upgrade --all' upgrades it again");
    assert_eq!(receipt(&w, "hello")["pinned"], Value::Null);
    w.app(&["plugin", "pin", "world"])
        .code(0)
        .stdout_has("pinned plugin 'world' at 1.1.0");
    w.app(&["plugin", "pin", "world"])
        .code(0)
        .stdout_is("plugin 'world' was already pinned at 1.1.0");
    let ran = w.app(&["plugin", "upgrade", "--all"]).code(0);
    assert_eq!(ran.lines()[0], "hello 1.0.0 → 1.1.0", "{ran:?}");
    assert!(
        ran.lines()[1].starts_with("world 1.1.0: pinned, skipped"),
        "{ran:?}"
    );
    w.app(&["plugin", "outdated"])
        .code(0)
        .stdout_is("2 plugins installed from an index, none outdated.");
    w.refused(
        &["plugin", "pin", "nothing"],
        4,
        &["it has no install receipt"],
    );
}
