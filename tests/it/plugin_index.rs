//! Plugin indexes (`app plugin index`, `search`, `info`, `install NAME`,
//! `upgrade --all`) against a local HTTP server started by each test, with
//! indexes signed at test time by the real `minisign` tool.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::http_server::Server;
use common::run::Ran;
use common::{snapshot, Sandbox};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A `.tar.gz` holding `app-NAME`, a script that answers `__app_metadata`
/// with `version` and prints "NAME VERSION".
fn archive(name: &str, version: &str) -> Vec<u8> {
    let script = format!(
        "#!/bin/sh\nif [ \"${{1-}}\" = __app_metadata ]; then echo '{{\"apiVersion\":\"app.plugin/v1\",\"version\":\"{version}\"}}'; exit 0; fi\necho \"{name} {version}\"\n"
    );
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut builder = tar::Builder::new(gz);
    let mut header = tar::Header::new_gnu();
    header.set_size(script.len() as u64);
    header.set_mode(0o755);
    header.set_cksum();
    builder
        .append_data(
            &mut header,
            format!("{name}-{version}/app-{name}"),
            script.as_bytes(),
        )
        .unwrap();
    builder.into_inner().unwrap().finish().unwrap()
}

/// A minisign key pair made by the real tool.
struct Key {
    public: PathBuf,
    secret: PathBuf,
}

impl Key {
    fn new(dir: &Path, name: &str) -> Key {
        let key = Key {
            public: dir.join(format!("{name}.pub")),
            secret: dir.join(format!("{name}.key")),
        };
        let out = Command::new("minisign")
            .args(["-G", "-W", "-p"])
            .arg(&key.public)
            .arg("-s")
            .arg(&key.secret)
            .stdin(Stdio::null())
            .output()
            .expect("run minisign -G");
        assert!(out.status.success(), "minisign -G: {out:?}");
        key
    }

    /// The `.minisig` of `bytes`, made by `minisign -S`.
    fn sign(&self, bytes: &[u8]) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("index.json");
        fs::write(&file, bytes).unwrap();
        let out = Command::new("minisign")
            .arg("-S")
            .arg("-s")
            .arg(&self.secret)
            .arg("-m")
            .arg(&file)
            .stdin(Stdio::null())
            .output()
            .expect("run minisign -S");
        assert!(out.status.success(), "minisign -S: {out:?}");
        fs::read(dir.path().join("index.json.minisig")).unwrap()
    }
}

/// A sandbox, an HTTP server, and a key to sign indexes with.
struct World {
    sb: Sandbox,
    server: Server,
    key: Key,
}

const FUTURE: &str = "2999-01-01T00:00:00Z";

fn here() -> (&'static str, &'static str) {
    (std::env::consts::OS, std::env::consts::ARCH)
}

impl World {
    /// `None` (after one line naming the package) where minisign is missing.
    fn new() -> Option<World> {
        common::require_tool("minisign", "minisign")?;
        let sb = Sandbox::new();
        let key = Key::new(sb.path(), "publisher");
        Some(World {
            sb,
            server: Server::start(),
            key,
        })
    }

    fn app(&self, args: &[&str]) -> Ran {
        let mut cmd = self.sb.app();
        for var in [
            "http_proxy",
            "HTTP_PROXY",
            "https_proxy",
            "HTTPS_PROXY",
            "ALL_PROXY",
            "all_proxy",
        ] {
            cmd.env_remove(var);
        }
        cmd.args(args);
        common::run::Run::new(cmd).assert()
    }

    fn plugin_dir(&self) -> PathBuf {
        self.sb.data_dir().join("plugins")
    }

    fn cache_dir(&self) -> PathBuf {
        self.sb.path().join("cache")
    }

    /// Serves `name`'s archive of `version` at `/NAME-VERSION.tar.gz` and
    /// returns its index entry (a build for this machine).
    fn plugin(&self, name: &str, version: &str) -> Value {
        let bytes = archive(name, version);
        let file = format!("{name}-{version}.tar.gz");
        self.server.serve(&format!("/{file}"), &bytes);
        let (os, arch) = here();
        json!({"name": name, "version": version, "description": format!("the {name} plugin"),
               "homepage": format!("https://example.org/{name}"),
               "platforms": [{"os": os, "arch": arch, "url": file, "sha256": sha256(&bytes)}]})
    }

    /// Publishes an index at `/PATH` with its signature by `key` beside it.
    fn publish(
        &self,
        path: &str,
        serial: u64,
        expires: &str,
        plugins: Vec<Value>,
        key: &Key,
    ) -> String {
        let bytes = serde_json::to_vec_pretty(&json!({
            "apiVersion": "app.index/v1", "serial": serial, "expires": expires, "plugins": plugins
        }))
        .unwrap();
        self.publish_bytes(path, &bytes, key);
        self.server.url(&format!("/{path}"))
    }

    fn publish_bytes(&self, path: &str, bytes: &[u8], key: &Key) {
        self.server.serve(&format!("/{path}"), bytes);
        self.server
            .serve(&format!("/{path}.minisig"), &key.sign(bytes));
    }

    fn add(&self, name: &str, url: &str) -> Ran {
        self.app(&[
            "plugin",
            "index",
            "add",
            name,
            url,
            "--key-file",
            self.key.public.to_str().unwrap(),
        ])
    }

    /// Runs `args`, expecting exit `code` and `needles` on stderr, with the
    /// plugin directory, the cached indexes and the index list unchanged.
    #[track_caller]
    fn refused(&self, args: &[&str], code: i32, needles: &[&str]) -> Ran {
        let dirs = [self.plugin_dir(), self.cache_dir(), self.sb.config_dir()];
        let before: Vec<_> = dirs.iter().map(|d| snapshot(d)).collect();
        let ran = self.app(args).code(code);
        for needle in needles {
            assert!(
                ran.stderr.contains(needle),
                "expected {needle:?} in stderr: {ran:?}"
            );
        }
        let after: Vec<_> = dirs.iter().map(|d| snapshot(d)).collect();
        assert!(before == after, "{args:?} changed a file: {ran:?}");
        ran
    }
}

#[test]
fn index_add_list_update_and_remove() {
    let Some(w) = World::new() else { return };
    let url = w.publish(
        "index.json",
        7,
        FUTURE,
        vec![w.plugin("hello", "1.0.0")],
        &w.key,
    );
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
    let main = w.publish(
        "main.json",
        1,
        FUTURE,
        vec![
            w.plugin("hello", "1.0.0"),
            w.plugin("hello", "1.1.0"),
            w.plugin("jsonfmt", "0.3.0"),
        ],
        &w.key,
    );
    let extra = w.publish(
        "extra.json",
        1,
        FUTURE,
        vec![w.plugin("world", "2.0.0")],
        &w.key,
    );
    w.add("main", &main).code(0);
    w.add("extra", &extra).code(0);
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
fn install_by_name_version_and_index_and_ambiguity() {
    let Some(w) = World::new() else { return };
    let main = w.publish(
        "main.json",
        1,
        FUTURE,
        vec![
            w.plugin("hello", "1.0.0"),
            w.plugin("hello", "1.1.0"),
            w.plugin("dup", "1.0.0"),
        ],
        &w.key,
    );
    let extra = w.publish(
        "extra.json",
        1,
        FUTURE,
        vec![w.plugin("dup", "2.0.0")],
        &w.key,
    );
    w.add("main", &main).code(0);
    w.add("extra", &extra).code(0);

    w.app(&["plugin", "install", "hello"])
        .code(0)
        .stdout_has("installed plugin 'hello' 1.1.0");
    w.app(&["hello"]).ok().stdout_is("hello 1.1.0");
    let record: Value =
        serde_json::from_str(&fs::read_to_string(w.plugin_dir().join(".index.json")).unwrap())
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
        line.contains("[installed 1.0.0 from index main] [upgrade available: 1.1.0]"),
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
    let url = w.publish(
        "index.json",
        1,
        FUTURE,
        vec![
            w.plugin("aaa", "1.0.0"),
            w.plugin("bbb", "1.0.0"),
            w.plugin("ccc", "1.0.0"),
        ],
        &w.key,
    );
    w.add("main", &url).code(0);
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

#[test]
fn every_refusal_names_the_index_and_changes_nothing() {
    let Some(w) = World::new() else { return };
    let good = w.publish(
        "index.json",
        5,
        FUTURE,
        vec![w.plugin("hello", "1.0.0")],
        &w.key,
    );
    w.add("main", &good).code(0);
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
    let url = w.publish(
        "index.json",
        1,
        FUTURE,
        vec![w.plugin("hello", "1.0.0")],
        &w.key,
    );
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

/// The target directory shared by the tests that build a Rust plugin, so
/// the SDK and its dependencies are built once.
fn shared_rust_target() -> PathBuf {
    common::app_bin()
        .parent()
        .and_then(Path::parent)
        .expect("target dir")
        .join("skeleton-test")
}

/// Where `cargo` is, for a PATH that has it.
fn cargo_dir() -> PathBuf {
    let cargo = std::env::var_os("CARGO")
        .map(PathBuf::from)
        .unwrap_or_else(|| common::tools::find_program("cargo").expect("cargo"));
    cargo.parent().expect("cargo's directory").to_path_buf()
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.org",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("run git");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

#[test]
fn install_git_builds_a_rust_plugin_with_cargo() {
    let Some(w) = World::new() else { return };
    if common::require_tool("git", "git").is_none() {
        return;
    }
    // A repository holding a plugin made by `app plugin new --lang rust`,
    // with its lock file committed (what `--locked` uses).
    let repo = w.sb.path().join("repo");
    w.app(&[
        "plugin",
        "new",
        "gitdemo",
        "--lang",
        "rust",
        "--dir",
        repo.to_str().unwrap(),
    ])
    .code(0);
    let path_var = format!("{}:{}", cargo_dir().display(), w.sb.path_var());
    let offline = |cmd: &mut Command| {
        cmd.env("PATH", &path_var)
            .env("CARGO_NET_OFFLINE", "true")
            .env("CARGO_TARGET_DIR", shared_rust_target());
    };
    let mut lock = Command::new("cargo");
    lock.args(["generate-lockfile"])
        .current_dir(&repo)
        .stdin(Stdio::null());
    offline(&mut lock);
    let out = lock.output().expect("cargo generate-lockfile");
    assert!(out.status.success(), "{out:?}");
    git(&repo, &["init", "--quiet"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "--quiet", "-m", "first"]);
    let url = format!("file://{}", repo.display());

    // Without cargo on PATH: a clear error naming rustup, nothing written.
    w.refused(
        &["plugin", "install", "--git", &url],
        8,
        &["needs cargo, which is not on PATH; install Rust with rustup"],
    );

    let mut cmd = w.sb.app();
    cmd.args(["plugin", "install", "--git", &url]);
    offline(&mut cmd);
    let ran = common::run::Run::new(cmd).assert();
    let ran = ran.code(0).stdout_has("installed plugin 'gitdemo' 0.1.0");
    assert!(ran.stdout.contains(&format!("from git+{url}")), "{ran:?}");
    w.app(&["gitdemo", "hello", "there"])
        .code(0)
        .stdout_has("there");
    let record: Value =
        serde_json::from_str(&fs::read_to_string(w.plugin_dir().join(".index.json")).unwrap())
            .unwrap();
    let git_record = &record["plugins"]["gitdemo"]["git"];
    assert_eq!(git_record["url"], url);
    assert_eq!(
        git_record["commit"].as_str().map(str::len),
        Some(40),
        "{record}"
    );
    // Nothing of the build is left behind.
    let builds = w.cache_dir().join("builds");
    assert!(
        fs::read_dir(&builds).map(|d| d.count()).unwrap_or(0) == 0,
        "{builds:?}"
    );
    // The repository has not moved: upgrade builds nothing.
    let mut cmd = w.sb.app();
    cmd.args(["plugin", "upgrade", "--all"]);
    offline(&mut cmd);
    common::run::Run::new(cmd)
        .assert()
        .code(0)
        .stdout_is("gitdemo 0.1.0: up to date");

    // An index entry whose platform is a source is built the same way.
    w.app(&["plugin", "remove", "gitdemo"]).code(0);
    let entry = json!({"name": "gitdemo", "version": "0.1.0", "description": "built here",
                       "platforms": [{"source": {"git": url, "rev": "main"}}]});
    let index = w.publish("index.json", 1, FUTURE, vec![entry], &w.key);
    w.add("src", &index).code(0);
    let mut cmd = w.sb.app();
    cmd.args(["plugin", "install", "gitdemo"]);
    offline(&mut cmd);
    common::run::Run::new(cmd)
        .assert()
        .code(0)
        .stdout_has("installed plugin 'gitdemo' 0.1.0");
    let record: Value =
        serde_json::from_str(&fs::read_to_string(w.plugin_dir().join(".index.json")).unwrap())
            .unwrap();
    let gitdemo = &record["plugins"]["gitdemo"];
    assert_eq!(gitdemo["index"], "src", "{record}");
    assert_eq!(gitdemo["git"]["rev"], "main", "{record}");
    w.app(&["gitdemo", "hello", "again"])
        .code(0)
        .stdout_has("again");
}

/// `app __complete WORDS…`: the candidates' values, without descriptions,
/// and the directive line.
fn complete(w: &World, words: &[&str]) -> (Vec<String>, String) {
    let mut args = vec!["__complete"];
    args.extend_from_slice(words);
    let ran = w.app(&args).code(0);
    let mut lines: Vec<String> = ran
        .stdout
        .lines()
        .map(|l| l.split('\t').next().unwrap_or("").to_string())
        .collect();
    let directive = lines.pop().unwrap_or_default();
    (lines, directive)
}

#[test]
fn completion_offers_indexes_plugins_and_versions() {
    let Some(w) = World::new() else { return };
    let main = w.publish(
        "main.json",
        1,
        FUTURE,
        vec![
            w.plugin("hello", "1.0.0"),
            w.plugin("hello", "1.1.0"),
            w.plugin("helpful", "0.1.0"),
        ],
        &w.key,
    );
    let extra = w.publish(
        "extra.json",
        1,
        FUTURE,
        vec![w.plugin("world", "2.0.0")],
        &w.key,
    );
    w.add("main", &main).code(0);
    w.add("extra", &extra).code(0);
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
