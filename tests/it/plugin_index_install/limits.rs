//! The size limits of the files the index commands read (`--key-file`,
//! `indexes.json`, a cached index, a `.minisig`) and the fetch timeout.

use crate::common;

use std::fs;
use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use common::index::{World, FUTURE};
use serde_json::{json, Value};

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
    w.main_index(1, &[("hello", "1.0.0")]);
    // A new serial whose real signature is padded past 64 KiB: refused
    // (exit 5) naming the .minisig, the cached copy (serial 1) kept.
    let bytes = serde_json::to_vec(&json!({"apiVersion": "app.index/v1", "serial": 2,
        "index": w.server.url("/index.json"), "expires": FUTURE,
        "plugins": [w.plugin("hello", "1.0.0"), w.plugin("hello", "2.0.0")]}))
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

/// `app ARGS` with the environment `env`, and how long it took.
fn with_env(w: &World, env: &[(&str, &str)], args: &[&str]) -> (common::run::Ran, Duration) {
    let mut cmd = w.sb.app_without_proxy();
    cmd.envs(env.iter().copied()).args(args);
    let start = Instant::now();
    let ran = common::run::Run::new(cmd).assert();
    (ran, start.elapsed())
}

/// `app ARGS` with `APP_FETCH_TIMEOUT=SECS`, and how long it took.
fn with_fetch_timeout(w: &World, secs: &str, args: &[&str]) -> (common::run::Ran, Duration) {
    with_env(w, &[("APP_FETCH_TIMEOUT", secs)], args)
}

#[test]
fn an_index_server_that_stalls_is_cut_off_at_the_silence_limit_and_one_that_trickles_at_the_total()
{
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
    let cached = |name: &str| w.cache_dir().join(format!("indexes/{name}.json"));
    // The silent one is cut after 2 s of silence; the trickle, after 2 s in all.
    for (name, url, env, limits) in [
        (
            "silent",
            &silent_url,
            ("APP_FETCH_TIMEOUT", "2"),
            "2 s to connect, 2 s of silence, 300 s in all",
        ),
        (
            "slow",
            &slow_url,
            ("APP_FETCH_TOTAL_TIMEOUT", "2"),
            "15 s to connect, 60 s of silence, 2 s in all",
        ),
    ] {
        let args = add(name, url);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (ran, took) = with_env(&w, &[env], &args);
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
        // Whether it ran out waiting for the answer (silent) or while
        // reading the body (slow), the message says the limits and the knobs.
        assert!(
            ran.stderr.contains(&format!(
                "(limits: {limits}; see APP_FETCH_TIMEOUT and APP_FETCH_TOTAL_TIMEOUT)"
            )),
            "{name}: {ran:?}"
        );
        assert!(!cached(name).exists());
    }
    w.app(&["plugin", "index", "list"])
        .ok()
        .stdout_has("No plugin indexes.");
    // The trickle never falls silent for 2 s: the silence limit lets it
    // through, whole, though it takes longer than that limit.
    let args = add("slow", &slow_url);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (ran, took) = with_fetch_timeout(&w, "2", &args);
    ran.code(0).stdout_has("added index 'slow'");
    assert!(took >= Duration::from_secs(3), "{took:?}");
    assert_eq!(fs::read(cached("slow")).unwrap(), bytes);
    // A value that is not a number of seconds is refused, naming it.
    let (ran, _) = with_fetch_timeout(&w, "0", &["plugin", "index", "update"]);
    ran.code(3)
        .stderr_has("APP_FETCH_TIMEOUT=\"0\" is not a whole number of seconds from 1 to 3600");
    let (ran, _) = with_env(
        &w,
        &[("APP_FETCH_TOTAL_TIMEOUT", "x")],
        &["plugin", "index", "update"],
    );
    ran.code(3).stderr_has(
        "APP_FETCH_TOTAL_TIMEOUT=\"x\" is not a whole number of seconds from 1 to 86400",
    );
}

#[test]
fn a_plugin_download_that_keeps_progressing_is_not_cut_by_the_silence_limit() {
    let Some(w) = World::new() else { return };
    // A 20 KiB script served in 4 KiB chunks 0.6 s apart: never 1 s of
    // silence, about 3 s in all.
    let mut script = b"#!/bin/sh\necho trickled\n".to_vec();
    script.extend(std::iter::repeat_n(b"# padding\n".as_slice(), 2048).flatten());
    w.server
        .serve_slowly("/app-trickle", &script, Duration::from_millis(600));
    let url = w.server.url("/app-trickle");
    let sum = common::index::sha256(&script);
    let install = ["plugin", "install", &url, "--sha256", &sum];
    let plugin = w.plugin_dir().join("app-trickle");
    // Cut at 2 s in all, the limits named, nothing written.
    let (ran, took) = with_env(&w, &[("APP_FETCH_TOTAL_TIMEOUT", "2")], &install);
    ran.code(3).stderr_has(
        "(limits: 15 s to connect, 60 s of silence, 2 s in all; see APP_FETCH_TIMEOUT and APP_FETCH_TOTAL_TIMEOUT)",
    );
    assert!(took < Duration::from_secs(15), "{took:?}");
    assert!(!plugin.exists());
    // With 1 s of silence allowed, it goes on for its 3 s and installs.
    let (ran, took) = with_fetch_timeout(&w, "1", &install);
    ran.code(0).stdout_has("installed plugin 'trickle'");
    assert!(took >= Duration::from_secs(2), "{took:?}");
    assert_eq!(fs::read(&plugin).unwrap(), script);
}
