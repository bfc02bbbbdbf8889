//! What an index must be to be trusted: every refusal names the index and
//! changes nothing, an unsigned index needs the flag, and the token goes to
//! the index's host only.

use crate::common;

use std::fs;
use std::path::Path;

use common::http_server::Server;
use common::index::{archive, here, sha256, Key, World, FUTURE};
use common::snapshot;
use serde_json::json;

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
    w.refused(&update, 5, &[&format!("app: index 'main' ({url}) failed signature verification: the signature does not match what was served: the index's bytes, or the trusted comment of its .minisig, were changed after signing")]);
    // Signed by another key.
    w.publish(
        "index.json",
        6,
        FUTURE,
        vec![w.plugin("hello", "1.0.0")],
        &other,
    );
    // Said once, and not contradicted by "or the bytes were changed".
    let ran = w.refused(
        &update,
        5,
        &[&format!("app: index 'main' ({url}) is signed by another key than the one it was added with, so it is refused; nothing was changed; if its publisher really changed keys, get the new public key from them, then 'app plugin index remove main' and add it again with it")],
    );
    assert_eq!(ran.stderr.matches("another key").count(), 1, "{ran:?}");
    assert!(!ran.stderr.contains("changed after"), "{ran:?}");
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
