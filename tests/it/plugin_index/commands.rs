//! `plugin index add|list|update|remove`, `search`, `info` and completion
//! over signed indexes.

use crate::common;

use std::fs;

use common::index::{complete, here, World, FUTURE};
use serde_json::Value;

#[test]
fn index_add_list_update_and_remove() {
    let Some(w) = World::new() else { return };
    let url = w.signed_index(7, &[("hello", "1.0.0")]);
    w.add("main", &url).code(0).stdout_has(format!(
        "added index 'main' ({url}): serial 7, 1 plugin versions"
    ));
    let public = fs::read_to_string(&w.key.public).unwrap();
    let key_line = public.lines().nth(1).unwrap();
    let list = w.app(&["plugin", "index", "list"]).ok();
    let line = list
        .lines()
        .into_iter()
        .find(|l| l.starts_with("main "))
        .expect("a line for main");
    for part in [url.as_str(), " 7 ", FUTURE, &format!("minisign {key_line}")] {
        assert!(line.contains(part), "{part:?} missing from {line:?}");
    }
    // The config records the key and URL; the cache holds the verified bytes.
    let config: Value =
        serde_json::from_str(&fs::read_to_string(w.sb.config_dir().join("indexes.json")).unwrap())
            .unwrap();
    assert_eq!(config["indexes"][0]["key"], key_line);
    assert!(w.cache_dir().join("indexes/main.json").is_file());

    // A second index under the same name is refused.
    w.refused(
        &["plugin", "index", "add", "main", &url, "--key", key_line],
        4,
        &["index 'main' is already added"],
    );

    // A new serial replaces the cached copy; the same serial again is "unchanged".
    w.publish(
        "index.json",
        8,
        FUTURE,
        vec![w.plugin("hello", "1.0.0"), w.plugin("hello", "1.1.0")],
        &w.key,
    );
    w.app(&["plugin", "index", "update"])
        .ok()
        .stdout_is("main: serial 7 → 8, 2 plugin versions");
    w.app(&["plugin", "index", "update", "main"])
        .ok()
        .stdout_is("main: serial 8, unchanged, 2 plugin versions");

    w.app(&["plugin", "index", "remove", "main"])
        .ok()
        .stdout_has("removed index 'main'");
    assert!(!w.cache_dir().join("indexes/main.json").exists());
    w.app(&["plugin", "index", "list"])
        .ok()
        .stdout_has("No plugin indexes.");
    w.refused(
        &["plugin", "index", "remove", "main"],
        2,
        &["there is no index named 'main'"],
    );
}

#[test]
fn search_and_info_read_the_cached_indexes() {
    let Some(w) = World::new() else { return };
    w.main_and_extra(
        &[("hello", "1.0.0"), ("hello", "1.1.0"), ("jsonfmt", "0.3.0")],
        &[("world", "2.0.0")],
    );
    w.app(&["plugin", "install", "hello@1.0.0"]).code(0);

    let table = w.app(&["plugin", "search"]).ok();
    let lines = table.lines();
    assert!(
        lines[0].starts_with("NAME")
            && lines[0].contains("VERSION")
            && lines[0].contains("INDEX")
            && lines[0].contains("INSTALLED")
            && lines[0].contains("DESCRIPTION"),
        "{table:?}"
    );
    let hello = lines
        .iter()
        .find(|l| l.starts_with("hello "))
        .expect("hello listed");
    let cells: Vec<&str> = hello.split_whitespace().collect();
    assert_eq!(&cells[..4], ["hello", "1.1.0", "main", "1.0.0"], "{hello}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("world ") && l.contains("extra")),
        "{table:?}"
    );
    // A word matches names and descriptions, any case.
    let json = w
        .app(&["plugin", "search", "JSON", "-o", "json"])
        .ok()
        .json();
    assert_eq!(json.as_array().map(Vec::len), Some(1), "{json}");
    assert_eq!(json[0]["name"], "jsonfmt");
    assert_eq!(json[0]["index"], "main");
    assert_eq!(json[0]["installed"], Value::Null);
    let json = w
        .app(&["plugin", "search", "the world", "-o", "json"])
        .ok()
        .json();
    assert_eq!(json[0]["name"], "world");
    // Search reads each index's summary; without one, the cached index itself.
    fs::remove_file(w.cache_dir().join("indexes/main.summary.json")).unwrap();
    let json = w
        .app(&["plugin", "search", "jsonfmt", "-o", "json"])
        .ok()
        .json();
    assert_eq!(json[0]["version"], "0.3.0", "{json}");
    w.app(&["plugin", "search", "nothing-like-it"])
        .ok()
        .stdout_has("No plugin in the indexes matches");

    let (os, arch) = here();
    let info = w.app(&["plugin", "info", "hello"]).ok();
    assert!(
        info.stdout.contains("homepage: https://example.org/hello"),
        "{info:?}"
    );
    let info = info
        .stdout_has("installed: 1.0.0 from index 'main'")
        .stdout_has(format!("1.1.0      index main       {os}/{arch}"));
    assert!(info.stdout.contains("1.0.0      index main"), "{info:?}");
    w.refused(
        &["plugin", "info", "nope"],
        7,
        &["no plugin 'nope' in the indexes"],
    );
}

#[test]
fn completion_offers_indexes_plugins_and_versions() {
    let Some(w) = World::new() else { return };
    w.main_and_extra(
        &[("hello", "1.0.0"), ("hello", "1.1.0"), ("helpful", "0.1.0")],
        &[("world", "2.0.0")],
    );
    assert_eq!(
        complete(&w, &["plugin", "index", "remove", ""]),
        (vec!["main".into(), "extra".into()], ":4".into())
    );
    assert_eq!(
        complete(&w, &["plugin", "index", "update", "m"]).0,
        ["main"]
    );
    assert_eq!(
        complete(&w, &["plugin", "install", "he"]),
        (vec!["hello".into(), "helpful".into()], ":4".into())
    );
    assert_eq!(complete(&w, &["plugin", "info", "w"]).0, ["world"]);
    assert_eq!(
        complete(&w, &["plugin", "install", "extra/"]).0,
        ["extra/world"]
    );
    assert_eq!(
        complete(&w, &["plugin", "install", "hello@"]).0,
        ["hello@1.1.0", "hello@1.0.0"]
    );
    assert_eq!(
        complete(&w, &["plugin", "install", "main/hello@1.0"]).0,
        ["main/hello@1.0.0"]
    );
    // Nothing of the indexes matches: file names, for `install ./app-foo`.
    assert_eq!(
        complete(&w, &["plugin", "install", "./ap"]),
        (vec![], ":0".into())
    );
    assert_eq!(
        complete(&w, &["plugin", "info", "./ap"]),
        (vec![], ":4".into())
    );
}

#[test]
fn search_and_info_without_an_index_say_so_and_how_to_add_one() {
    let Some(w) = World::new() else { return };
    for args in [
        &["plugin", "search", "json"][..],
        &["plugin", "search"],
        &["plugin", "search", "-o", "json"],
        &["plugin", "info", "hello"],
    ] {
        let ran = w.refused(
            args,
            7,
            &["app: no plugin index is added, so there is nothing to search; add your team's with 'app plugin index add NAME URL --key-file PUBLISHER.pub'"],
        );
        assert_eq!(ran.stdout, "", "{args:?}");
    }
    // With one added, the same search answers (exit 0).
    w.main_index(1, &[("jsonfmt", "1.0.0")]);
    w.app(&["plugin", "search", "json"])
        .code(0)
        .stdout_has("jsonfmt");
    w.app(&["plugin", "search", "zzz"])
        .code(0)
        .stdout_has("No plugin in the indexes matches 'zzz'.");
}
