//! Plugin indexes (`app plugin index`, `search`, `info`, completion, and
//! every refusal) against a local HTTP server started by each test, with
//! indexes signed at test time by the real `minisign` tool (see
//! `common::index`). Installing by name, upgrading and building from
//! source are in `plugin_index_install`.

use crate::common;

use std::fs;
use std::path::Path;

use common::http_server::Server;
use common::index::{archive, complete, here, sha256, Key, World, FUTURE};
use common::snapshot;
use serde_json::{json, Value};

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
fn every_refusal_names_the_index_and_changes_nothing() {
    let Some(w) = World::new() else { return };
    w.main_index(5, &[("hello", "1.0.0")]);
    let other = Key::new(w.sb.path(), "other");
    let url = w.server.url("/index.json");
    let update = ["plugin", "index", "update"];

    // Bytes changed after signing.
    let mut bytes = fs::read(w.cache_dir().join("indexes/main.json")).unwrap();
    let signature = w.key.sign(&bytes);
    bytes.extend_from_slice(b" ");
    w.server.serve("/index.json", &bytes);
    w.server.serve("/index.json.minisig", &signature);
    w.refused(&update, 5, &[&format!("app: index 'main' ({url}) failed signature verification: the signature does not match the bytes served")]);
    // Signed by another key.
    w.publish(
        "index.json",
        6,
        FUTURE,
        vec![w.plugin("hello", "1.0.0")],
        &other,
    );
    w.refused(
        &update,
        5,
        &[
            "index 'main'",
            "signed by another key than the one this index was added with",
        ],
    );
    // No signature at all.
    w.server
        .serve_status("/index.json.minisig", 404, b"not found");
    w.refused(
        &update,
        5,
        &["index 'main'", "has no signature", "HTTP 404"],
    );
    // A lower serial: a rollback.
    w.publish(
        "index.json",
        4,
        FUTURE,
        vec![w.plugin("hello", "1.0.0")],
        &w.key,
    );
    w.refused(
        &update,
        6,
        &[
            "index 'main'",
            "has serial 4, lower than the 5 of the copy already verified (a rollback)",
        ],
    );
    // Expired.
    w.publish(
        "index.json",
        9,
        "2020-01-01T00:00:00Z",
        vec![w.plugin("hello", "1.0.0")],
        &w.key,
    );
    w.refused(
        &update,
        6,
        &[
            "index 'main'",
            "expired on 2020-01-01T00:00:00Z",
            "stale or frozen mirror",
        ],
    );
    // Signed, but not JSON, or not an index.
    w.publish_bytes("index.json", b"{\"apiVersion\": \"app.index/v1\", ", &w.key);
    w.refused(
        &update,
        5,
        &["index 'main'", "is not a valid app.index/v1 index: EOF"],
    );
    // An HTML page (a portal) where the index should be.
    w.server.serve(
        "/index.json",
        b"<!DOCTYPE html><html><body>Please log in</body></html>",
    );
    w.refused(
        &update,
        5,
        &["index 'main'", "is an HTML page, not a JSON index"],
    );
    // Unreachable: nothing listens there.
    let closed = format!("http://127.0.0.1:{}/index.json", common::free_port());
    w.refused(
        &[
            "plugin",
            "index",
            "add",
            "gone",
            &closed,
            "--key-file",
            w.key.public.to_str().unwrap(),
        ],
        3,
        &[
            "index 'gone'",
            "cannot be fetched",
            "Connection refused (os error 111); check the URL and your connection; the last verified copy of 'gone' (if any) is still used\n",
        ],
    );
    // Too large: refused from its size alone (a sparse 33 MiB local file).
    let big = w.sb.path().join("big.json");
    fs::File::create(&big).unwrap().set_len(33 << 20).unwrap();
    w.refused(
        &[
            "plugin",
            "index",
            "add",
            "big",
            big.to_str().unwrap(),
            "--insecure-no-signature",
        ],
        5,
        &["index 'big'", "is larger than 33554432 bytes"],
    );
    // A token file that is not a regular file is refused before anything is fetched.
    w.refused(
        &[
            "plugin",
            "index",
            "add",
            "tok",
            &url,
            "--key-file",
            w.key.public.to_str().unwrap(),
            "--token-file",
            "/dev/zero",
        ],
        2,
        &["--token-file /dev/zero", "character device"],
    );
    // An update that fails for one index still updates the others.
    let second = w.publish(
        "second.json",
        1,
        FUTURE,
        vec![w.plugin("world", "1.0.0")],
        &w.key,
    );
    w.add("second", &second).code(0);
    w.publish(
        "second.json",
        2,
        FUTURE,
        vec![w.plugin("world", "1.0.0")],
        &w.key,
    );
    let ran = w
        .app(&update)
        .code(5)
        .stdout_is("second: serial 1 → 2, 1 plugin versions");
    ran.stderr_has("index 'main'");

    // The last good copy is still used: install by name works.
    // Wrong sha256 in the signed index: nothing is written.
    w.publish(
        "index.json",
        10,
        FUTURE,
        vec![w.plugin("hello", "1.0.0")],
        &w.key,
    );
    w.app(&["plugin", "index", "update", "main"]).ok();
    let mut bad = w.plugin("hello", "1.0.0");
    bad["platforms"][0]["sha256"] = json!("cd".repeat(32));
    let (os, arch) = here();
    let elsewhere = json!({"name": "other-os", "version": "1.0.0", "platforms": [{"os": "plan9", "arch": arch, "url": "x.tar.gz", "sha256": "00".repeat(32)}]});
    w.publish("index.json", 11, FUTURE, vec![bad, elsewhere], &w.key);
    w.app(&["plugin", "index", "update", "main"]).ok();
    w.refused(
        &["plugin", "install", "hello"],
        5,
        &[
            "plugin 'hello' 1.0.0 of index 'main' was refused: checksum mismatch",
            &format!("expected sha256 {}", "cd".repeat(32)),
        ],
    );
    w.refused(&["plugin", "install", "other-os"], 7, &[&format!("plugin 'other-os' 1.0.0 in index 'main' has no build for this machine ({os}/{arch}); it has: plan9/{arch}")]);
    assert!(!w.plugin_dir().join("app-hello").exists());
}

#[test]
fn an_unsigned_index_needs_the_flag_and_is_flagged() {
    let Some(w) = World::new() else { return };
    let url = w.signed_index(1, &[("hello", "1.0.0")]);
    w.refused(
        &["plugin", "index", "add", "open", &url],
        2,
        &["--key-file"],
    );
    w.app(&[
        "plugin",
        "index",
        "add",
        "open",
        &url,
        "--insecure-no-signature",
    ])
    .code(0)
    .stderr_has("warning: index 'open' is not signed");
    let list = w.app(&["plugin", "index", "list"]).ok();
    assert!(
        list.lines()
            .iter()
            .any(|l| l.starts_with("open ") && l.contains("UNSIGNED (--insecure-no-signature)")),
        "{list:?}"
    );
    w.app(&["plugin", "install", "hello"]).code(0);
    w.app(&["hello"]).ok().stdout_is("hello 1.0.0");
}

#[test]
fn the_token_goes_to_the_index_host_only_and_is_never_shown_or_stored() {
    let Some(w) = World::new() else { return };
    const TOKEN: &str = "s3cr3t-t0ken-5a7c";
    let token_file = w.sb.path().join("token");
    fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    // The archive of `far` is on another server (another origin), reached
    // through a redirect from the index's server.
    let far_server = Server::start();
    let far_bytes = archive("far", "1.0.0");
    far_server.serve("/far.tar.gz", &far_bytes);
    w.server
        .redirect("/far.tar.gz", &far_server.url("/far.tar.gz"));
    let (os, arch) = here();
    let far = json!({"name": "far", "version": "1.0.0", "platforms": [{"os": os, "arch": arch, "url": "far.tar.gz", "sha256": sha256(&far_bytes)}]});
    let url = w.publish(
        "index.json",
        1,
        FUTURE,
        vec![w.plugin("hello", "1.0.0"), far],
        &w.key,
    );
    let mut outputs = Vec::new();
    let args = [
        "--log",
        "5",
        "plugin",
        "index",
        "add",
        "private",
        &url,
        "--key-file",
        w.key.public.to_str().unwrap(),
        "--token-file",
        token_file.to_str().unwrap(),
    ];
    outputs.push(w.app(&args).code(0));
    outputs.push(w.app(&["--log", "5", "plugin", "index", "update"]).code(0));
    outputs.push(w.app(&["--log", "5", "plugin", "install", "hello"]).code(0));
    outputs.push(w.app(&["--log", "5", "plugin", "install", "far"]).code(0));
    outputs.push(w.app(&["--log", "5", "plugin", "index", "list"]).code(0));
    outputs.push(w.app(&["plugin", "search", "-o", "json"]).code(0));
    // Positive control: the index's server did get the token, for the
    // index, its signature and the archive on that host.
    let bearer = format!("Bearer {TOKEN}");
    let got = w.server.requests();
    for path in [
        "/index.json",
        "/index.json.minisig",
        "/hello-1.0.0.tar.gz",
        "/far.tar.gz",
    ] {
        assert!(
            got.iter()
                .any(|(p, a)| p == path && a.as_deref() == Some(bearer.as_str())),
            "{path}: {got:?}"
        );
    }
    // … and the other server, reached by redirect, did not.
    let far_got = far_server.requests();
    assert!(
        !far_got.is_empty() && far_got.iter().all(|(_, a)| a.is_none()),
        "{far_got:?}"
    );
    // Nothing printed it; the config holds the file's path, no file holds it.
    for ran in &outputs {
        assert!(
            !ran.stdout.contains(TOKEN) && !ran.stderr.contains(TOKEN),
            "{ran:?}"
        );
    }
    let config = fs::read_to_string(w.sb.config_dir().join("indexes.json")).unwrap();
    assert!(config.contains(token_file.to_str().unwrap()), "{config}");
    let files = snapshot(w.sb.path()).unwrap();
    let holding: Vec<_> = files
        .iter()
        .filter(|(path, (_, bytes))| {
            path.as_path() != Path::new("token")
                && bytes.windows(TOKEN.len()).any(|w| w == TOKEN.as_bytes())
        })
        .map(|(p, _)| p.clone())
        .collect();
    assert!(holding.is_empty(), "the token is in {holding:?}");
    // Positive control for that search: it does find the token file itself.
    assert!(files
        .get(Path::new("token"))
        .is_some_and(|(_, b)| b.starts_with(TOKEN.as_bytes())));
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
