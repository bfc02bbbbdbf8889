//! Plugins from indexes: `app plugin install NAME|NAME@VERSION|INDEX/NAME`,
//! `upgrade --all`, and builds from source (`install --git`, an index's
//! source entry) with the real `cargo` and `git`, against a local HTTP
//! server and indexes signed at test time (see `common::index`); and the
//! size limits of the files the index commands read (`--key-file`,
//! `indexes.json`, a cached index, a `.minisig`).

use crate::common;

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
    let url = w.main_index(1, &[("aaa", "1.0.0"), ("bbb", "1.0.0"), ("ccc", "1.0.0")]);
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

/// How long a run that builds a plugin with cargo may take: a build from a
/// cold shared target dir on a loaded 2-core CI machine, with the suite beside it.
const BUILD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

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
    let ran = common::run::Run::new(cmd).timeout(BUILD_TIMEOUT).assert();
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
        .timeout(BUILD_TIMEOUT)
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

    // --path DIR: a plugin in a subdirectory of a larger repository.
    let mono = w.sb.path().join("mono");
    let sub = mono.join("tools/gitsub");
    w.app(&[
        "plugin",
        "new",
        "gitsub",
        "--lang",
        "rust",
        "--dir",
        sub.to_str().unwrap(),
    ])
    .code(0);
    let mut lock = Command::new("cargo");
    lock.args(["generate-lockfile"])
        .current_dir(&sub)
        .stdin(Stdio::null());
    offline(&mut lock);
    assert!(lock
        .output()
        .expect("cargo generate-lockfile")
        .status
        .success());
    git(&mono, &["init", "--quiet"]);
    git(&mono, &["add", "-A"]);
    git(&mono, &["commit", "--quiet", "-m", "first"]);
    let mono_url = format!("file://{}", mono.display());
    // Outside the repository: refused before anything is built.
    let mut cmd = w.sb.app();
    cmd.args(["plugin", "install", "--git", &mono_url, "--path", "../x"]);
    offline(&mut cmd);
    let ran = common::run::Run::new(cmd).timeout(BUILD_TIMEOUT).assert();
    let ran = ran.code(2);
    assert!(
        ran.stderr.contains("must stay inside the repository"),
        "{ran:?}"
    );
    let mut cmd = w.sb.app();
    cmd.args([
        "plugin",
        "install",
        "--git",
        &mono_url,
        "--path",
        "tools/gitsub",
    ]);
    offline(&mut cmd);
    common::run::Run::new(cmd)
        .timeout(BUILD_TIMEOUT)
        .assert()
        .code(0)
        .stdout_has("installed plugin 'gitsub' 0.1.0");
    w.app(&["gitsub", "hello", "subdirectory"])
        .code(0)
        .stdout_has("subdirectory");
    let record: Value =
        serde_json::from_str(&fs::read_to_string(w.plugin_dir().join(".index.json")).unwrap())
            .unwrap();
    assert_eq!(
        record["plugins"]["gitsub"]["git"]["path"], "tools/gitsub",
        "{record}"
    );
}

/// `bytes` padded with newlines (which every reader of these files skips)
/// to exactly `len` bytes: the same content, only its size changes.
fn padded(bytes: &[u8], len: usize) -> Vec<u8> {
    let mut out = bytes.to_vec();
    out.resize(len, b'\n');
    out
}

#[test]
fn local_files_over_their_limit_are_refused_and_a_bad_cached_index_is_fetched_again() {
    let Some(w) = World::new() else { return };
    let url = w.signed_index(3, &[("hello", "1.0.0")]);
    let add = |key_file: &Path| {
        [
            "plugin",
            "index",
            "add",
            "main",
            &url,
            "--key-file",
            key_file.to_str().unwrap(),
        ]
        .map(String::from)
    };
    // --key-file: the publisher's minisign.pub padded to 64 KiB + 1 is
    // refused (exit 2, nothing written); at exactly 64 KiB it is taken.
    let public = fs::read(&w.key.public).unwrap();
    let over = w.sb.path().join("over.pub");
    fs::write(&over, padded(&public, 64 * 1024 + 1)).unwrap();
    let args = add(&over);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    w.refused(
        &args,
        2,
        &["--key-file", "is 65537 bytes, over the limit of 65536"],
    );
    let at = w.sb.path().join("at.pub");
    fs::write(&at, padded(&public, 64 * 1024)).unwrap();
    let args = add(&at);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    w.app(&args).code(0).stdout_has("added index 'main'");
    w.app(&["plugin", "info", "hello"]).ok();

    // indexes.json: the same list padded to 1 MiB + 1 is refused by every
    // command reading it (exit 2, naming the file); at 1 MiB it is read.
    let list = w.sb.config_dir().join("indexes.json");
    let written = fs::read(&list).unwrap();
    fs::write(&list, padded(&written, 1 << 20)).unwrap();
    w.app(&["plugin", "info", "hello"]).ok();
    fs::write(&list, padded(&written, (1 << 20) + 1)).unwrap();
    for args in [
        &["plugin", "info", "hello"][..],
        &["plugin", "index", "list"],
        &["plugin", "install", "hello"],
    ] {
        w.refused(
            args,
            2,
            &["indexes.json is 1048577 bytes, over the limit of 1048576"],
        );
    }
    assert!(!w.plugin_dir().join("app-hello").exists());
    fs::write(&list, &written).unwrap();

    // A cached index over 32 MiB (sparse) is not read: `install NAME` warns
    // naming it and what to do, and finds nothing there (exit 7); `index
    // update` fetches it again, and then the install works.
    let cached = w.cache_dir().join("indexes/main.json");
    fs::File::options()
        .write(true)
        .open(&cached)
        .unwrap()
        .set_len((32 << 20) + 1)
        .unwrap();
    w.refused(
        &["plugin", "install", "hello"],
        7,
        &[
            "warning: index 'main'",
            "main.json is 33554433 bytes, over the limit of 33554432; 'app plugin index update' fetches it again",
            "no plugin 'hello' in the indexes",
        ],
    );
    w.app(&["plugin", "index", "update"])
        .ok()
        .stdout_is("main: serial 3, unchanged, 1 plugin versions");
    assert!(fs::metadata(&cached).unwrap().len() < 1 << 20);
    w.app(&["plugin", "install", "hello"]).code(0);
    w.app(&["hello"]).ok().stdout_is("hello 1.0.0");
}

#[test]
fn a_signature_over_64_kib_is_refused_and_changes_nothing() {
    let Some(w) = World::new() else { return };
    let url = w.main_index(1, &[("hello", "1.0.0")]);
    // A new serial whose real signature is padded past 64 KiB: refused
    // (exit 5) naming the .minisig, the cached copy (serial 1) kept.
    let bytes = serde_json::to_vec(&json!({"apiVersion": "app.index/v1", "serial": 2,
        "expires": FUTURE, "plugins": [w.plugin("hello", "1.0.0"), w.plugin("hello", "2.0.0")]}))
    .unwrap();
    let signature = w.key.sign(&bytes);
    w.server.serve("/index.json", &bytes);
    w.server
        .serve("/index.json.minisig", &padded(&signature, 64 * 1024 + 1));
    w.refused(
        &["plugin", "index", "update"],
        5,
        &[
            "index 'main'",
            "the .minisig file is larger than 65536 bytes",
        ],
    );
    w.app(&["plugin", "info", "hello"])
        .ok()
        .stdout_has("1.0.0      index main");
    // Positive control: the same signature unpadded is taken.
    w.server.serve("/index.json.minisig", &signature);
    w.app(&["plugin", "index", "update"])
        .ok()
        .stdout_is("main: serial 1 → 2, 2 plugin versions");
    w.app(&["plugin", "info", "hello"])
        .ok()
        .stdout_has("2.0.0      index main");
}

/// `app ARGS` with `APP_FETCH_TIMEOUT=SECS`, and how long it took.
fn with_fetch_timeout(w: &World, secs: &str, args: &[&str]) -> (common::run::Ran, Duration) {
    let mut cmd = w.sb.app();
    cmd.env("APP_FETCH_TIMEOUT", secs).args(args);
    let start = Instant::now();
    let ran = common::run::Run::new(cmd).assert();
    (ran, start.elapsed())
}

#[test]
fn an_index_server_that_stalls_or_trickles_is_cut_off_at_the_fetch_timeout() {
    let Some(w) = World::new() else { return };
    // A server that accepts connections and never answers (held 30 s at most).
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_url = format!("http://{}/index.json", silent.local_addr().unwrap());
    silent.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        let end = Instant::now() + Duration::from_secs(30);
        while Instant::now() < end {
            if let Ok((stream, _)) = silent.accept() {
                held.push(stream);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    // An index trickled in 4 KiB chunks a second apart: never 2 s of
    // silence, but about 5 s in all.
    let plugins: Vec<Value> = (0..5)
        .map(|i| json!({"name": format!("p{i}"), "version": "1.0.0", "description": "x".repeat(4000),
            "platforms": [{"os": "linux", "arch": "x86_64", "url": "p.tar.gz", "sha256": "00".repeat(32)}]}))
        .collect();
    let bytes = serde_json::to_vec(&json!({"apiVersion": "app.index/v1", "serial": 1,
        "expires": FUTURE, "plugins": plugins}))
    .unwrap();
    assert!(bytes.len() > 16 * 1024);
    w.server
        .serve_slowly("/slow.json", &bytes, Duration::from_secs(1));
    let slow_url = w.server.url("/slow.json");
    let add = |name: &'static str, url: &str| {
        [
            "plugin",
            "index",
            "add",
            name,
            url,
            "--insecure-no-signature",
        ]
        .map(str::to_string)
    };
    for (name, url) in [("silent", &silent_url), ("slow", &slow_url)] {
        let args = add(name, url);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (ran, took) = with_fetch_timeout(&w, "2", &args);
        let ran = ran.code(3);
        assert!(
            ran.stderr
                .contains(&format!("index '{name}' ({url}) cannot be fetched")),
            "{ran:?}"
        );
        assert!(
            took >= Duration::from_secs(2) && took < Duration::from_secs(20),
            "{name}: {took:?} {ran:?}"
        );
    }
    w.app(&["plugin", "index", "list"])
        .ok()
        .stdout_has("No plugin indexes.");
    let cached = |name: &str| w.cache_dir().join(format!("indexes/{name}.json"));
    assert!(!cached("silent").exists() && !cached("slow").exists());
    // Positive control: with 20 s, the same trickle is taken whole.
    let args = add("slow", &slow_url);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (ran, took) = with_fetch_timeout(&w, "20", &args);
    ran.code(0).stdout_has("added index 'slow'");
    assert!(took >= Duration::from_secs(3), "{took:?}");
    assert_eq!(fs::read(cached("slow")).unwrap(), bytes);
    // A value that is not a number of seconds is refused, naming it.
    let (ran, _) = with_fetch_timeout(&w, "0", &["plugin", "index", "update"]);
    ran.code(3)
        .stderr_has("APP_FETCH_TIMEOUT=\"0\" is not a whole number of seconds from 1 to 3600");
}
