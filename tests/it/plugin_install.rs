//! `app plugin install`, `remove`, `upgrade`, `list` and `new`, run through
//! the real `app` binary in a sandbox, against files, a compiled binary, and
//! a local HTTP server.

use crate::common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::http_server::Server;
use common::{snapshot, write_executable, Sandbox};
use sha2::{Digest, Sha256};

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A script plugin that answers `__app_metadata` with `version` and prints `greeting`.
fn script_plugin(version: &str, greeting: &str) -> String {
    format!(
        "#!/bin/sh\n\
         if [ \"${{1-}}\" = __app_metadata ]; then\n\
         echo '{{\"apiVersion\":\"app.plugin/v1\",\"version\":\"{version}\",\"description\":\"test plugin\"}}'\n\
         exit 0\n\
         fi\n\
         echo \"{greeting} $*\"\n"
    )
}

/// A `.tar.gz` with the given (path, mode, contents) members.
fn targz(files: &[(&str, u32, &[u8])]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut builder = tar::Builder::new(gz);
    for (path, mode, body) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(body.len() as u64);
        header.set_mode(*mode);
        header.set_cksum();
        builder.append_data(&mut header, path, *body).unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap()
}

struct T {
    sb: Sandbox,
}

impl T {
    fn new() -> T {
        let sb = Sandbox::new();
        fs::create_dir_all(sb.path().join("src")).unwrap();
        T { sb }
    }

    fn plugin_dir(&self) -> PathBuf {
        self.sb.data_dir().join("plugins")
    }

    fn src(&self, name: &str) -> PathBuf {
        self.sb.path().join("src").join(name)
    }

    fn app(&self, args: &[&str]) -> Output {
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
        cmd.args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run app")
    }

    fn index(&self) -> serde_json::Value {
        let text = fs::read_to_string(self.plugin_dir().join(".index.json")).expect("index exists");
        serde_json::from_str(&text).unwrap()
    }

    /// Runs `app args` expecting a refusal with `code` whose stderr contains
    /// `needle`, and checks the plugin dir did not change.
    fn refused(&self, args: &[&str], code: i32, needle: &str) {
        let before = snapshot(&self.plugin_dir());
        let out = self.app(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
        assert!(
            stderr.contains(needle),
            "{args:?}: expected {needle:?} in {stderr}"
        );
        assert!(stderr.starts_with("app: "), "{stderr}");
        assert_eq!(
            snapshot(&self.plugin_dir()),
            before,
            "{args:?} changed the plugin dir"
        );
    }
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        stdout(&out),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout(&out)
}

#[test]
fn install_a_script_from_a_path_records_it_and_it_runs_and_lists() {
    let t = T::new();
    let src = write_executable(&t.src("app-hello"), &script_plugin("1.2.3", "hi"));
    let out = ok(t.app(&["plugin", "install", src.to_str().unwrap()]));
    assert!(out.contains("installed plugin 'hello' 1.2.3"), "{out}");

    let installed = t.plugin_dir().join("app-hello");
    assert_eq!(fs::read(&installed).unwrap(), fs::read(&src).unwrap());
    assert_eq!(
        fs::metadata(&installed).unwrap().permissions().mode() & 0o777,
        0o755
    );
    let index = t.index();
    let entry = &index["plugins"]["hello"];
    assert_eq!(entry["source"], src.to_str().unwrap());
    assert_eq!(entry["version"], "1.2.3");
    assert_eq!(entry["sha256"], sha256(&fs::read(&src).unwrap()));
    assert!(entry["installed_at"].as_str().unwrap().ends_with('Z'));
    // No temp file left behind.
    let names: Vec<_> = fs::read_dir(t.plugin_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with(".app-tmp"))
        .collect();
    assert!(names.is_empty(), "{names:?}");

    assert_eq!(ok(t.app(&["hello", "there"])), "hi there\n");
    let list = ok(t.app(&["plugin", "list"]));
    let line = list.lines().find(|l| l.starts_with("hello ")).expect(&list);
    assert!(line.contains(installed.to_str().unwrap()), "{line}");
    assert!(line.contains("test plugin"), "{line}");
    assert!(
        line.contains(&format!("[installed 1.2.3 from {}]", src.display())),
        "{line}"
    );
}

#[test]
fn install_a_compiled_binary_under_another_name() {
    let t = T::new();
    let c = t.src("hello.c");
    fs::write(
        &c,
        "#include <stdio.h>\n#include <string.h>\n\
         int main(int argc, char **argv) {\n\
           if (argc > 1 && strcmp(argv[1], \"__app_metadata\") == 0) {\n\
             puts(\"{\\\"apiVersion\\\":\\\"app.plugin/v1\\\",\\\"version\\\":\\\"0.9.0\\\"}\");\n\
             return 0;\n\
           }\n\
           printf(\"compiled %d\\n\", argc - 1);\n\
           return 7;\n\
         }\n",
    )
    .unwrap();
    let bin = t.src("hello-bin");
    let status = Command::new("cc")
        .arg("-o")
        .arg(&bin)
        .arg(&c)
        .status()
        .expect("a C compiler (cc) is needed for this test");
    assert!(status.success());
    // Not named app-*: the name must be given.
    t.refused(
        &["plugin", "install", bin.to_str().unwrap()],
        2,
        "pass --name NAME",
    );
    let out = ok(t.app(&["plugin", "install", bin.to_str().unwrap(), "--name", "cbin"]));
    assert!(out.contains("'cbin' 0.9.0"), "{out}");
    let run = t.app(&["cbin", "a", "b"]);
    assert_eq!(stdout(&run), "compiled 2\n");
    assert_eq!(run.status.code(), Some(7));
    assert_eq!(t.index()["plugins"]["cbin"]["version"], "0.9.0");
}

#[test]
fn install_from_urls_single_file_and_targz() {
    let t = T::new();
    let server = Server::start();
    let single = script_plugin("2.0.0", "web").into_bytes();
    server.serve("/dl/app-web", &single);
    let archive = targz(&[
        ("pkg-1.0/README.md", 0o644, b"read me"),
        (
            "pkg-1.0/app-packed",
            0o755,
            script_plugin("3.1.0", "packed").as_bytes(),
        ),
    ]);
    server.serve("/dl/pkg-1.0.tar.gz", &archive);

    let url = server.url("/dl/app-web");
    let out = ok(t.app(&["plugin", "install", &url, "--sha256", &sha256(&single)]));
    assert!(out.contains("installed plugin 'web' 2.0.0"), "{out}");
    assert_eq!(ok(t.app(&["web", "x"])), "web x\n");
    assert_eq!(t.index()["plugins"]["web"]["source"], url.as_str());

    let url = server.url("/dl/pkg-1.0.tar.gz");
    // Upper-case hex with a prefix is accepted too.
    let sum = format!("sha256:{}", sha256(&archive).to_uppercase());
    ok(t.app(&["plugin", "install", &url, "--sha256", &sum]));
    assert_eq!(ok(t.app(&["packed"])), "packed \n");
    let entry = &t.index()["plugins"]["packed"];
    assert_eq!(entry["version"], "3.1.0");
    assert_eq!(entry["archive_sha256"], sha256(&archive));
    let list = ok(t.app(&["plugin", "list"]));
    assert!(
        list.contains(&format!("[installed 3.1.0 from {url}]")),
        "{list}"
    );
}

#[test]
fn every_refusal_leaves_the_plugin_dir_unchanged() {
    let t = T::new();
    let server = Server::start();
    // First on an empty data dir: the plugin dir is not even created.
    let body = script_plugin("1.0.0", "x").into_bytes();
    server.serve("/app-good", &body);
    t.refused(
        &[
            "plugin",
            "install",
            &server.url("/app-good"),
            "--sha256",
            &sha256(b"other"),
        ],
        5,
        "checksum mismatch",
    );
    assert!(!t.plugin_dir().exists());

    // Then with something installed, so the index and a plugin exist.
    ok(t.app(&[
        "plugin",
        "install",
        &server.url("/app-good"),
        "--sha256",
        &sha256(&body),
    ]));
    let good = sha256(&body);

    // A URL without --sha256; a malformed one.
    t.refused(
        &[
            "plugin",
            "install",
            &server.url("/app-good"),
            "--name",
            "g2",
        ],
        2,
        "needs its checksum",
    );
    t.refused(
        &[
            "plugin",
            "install",
            &server.url("/app-good"),
            "--sha256",
            "abc",
        ],
        2,
        "not a SHA-256",
    );
    // HTTP 404 and 500.
    t.refused(
        &[
            "plugin",
            "install",
            &server.url("/app-missing"),
            "--sha256",
            &good,
        ],
        3,
        "HTTP 404",
    );
    server.serve_status("/app-broken", 500, b"oops");
    t.refused(
        &[
            "plugin",
            "install",
            &server.url("/app-broken"),
            "--sha256",
            &good,
        ],
        3,
        "HTTP 500",
    );
    // Nothing listening.
    let closed = format!("http://127.0.0.1:{}/app-x", common::free_port());
    t.refused(
        &["plugin", "install", &closed, "--sha256", &good],
        3,
        "cannot download",
    );
    // Right checksum, but an HTML page, not an executable.
    let html = b"<html>hello</html>".to_vec();
    server.serve("/app-page", &html);
    t.refused(
        &[
            "plugin",
            "install",
            &server.url("/app-page"),
            "--sha256",
            &sha256(&html),
        ],
        5,
        "neither a script",
    );
    // Archives: member not executable, two members, none.
    for (path, archive, needle) in [
        (
            "/plain.tar.gz",
            targz(&[("app-plain", 0o644, body.as_slice())]),
            "not executable",
        ),
        (
            "/two.tar.gz",
            targz(&[
                ("app-a", 0o755, body.as_slice()),
                ("app-b", 0o755, body.as_slice()),
            ]),
            "several app-* files",
        ),
        (
            "/none.tar.gz",
            targz(&[("README", 0o644, b"x")]),
            "no file named app-<name>",
        ),
    ] {
        server.serve(path, &archive);
        t.refused(
            &[
                "plugin",
                "install",
                &server.url(path),
                "--sha256",
                &sha256(&archive),
            ],
            5,
            needle,
        );
    }
    // A download larger than the cap.
    let mut cmd_env_big = t.sb.app();
    cmd_env_big
        .env("APP_INSTALL_MAX_BYTES", "10")
        .args([
            "plugin",
            "install",
            &server.url("/app-good"),
            "--sha256",
            &good,
        ])
        .stdin(Stdio::null());
    let before = snapshot(&t.plugin_dir());
    let out = cmd_env_big.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(5),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("larger than 10 bytes"));
    assert_eq!(snapshot(&t.plugin_dir()), before);

    // Names: invalid, a built-in, a built-in's first word; from the archive too.
    let src = write_executable(&t.src("app-ok"), &script_plugin("1", "ok"));
    let src = src.to_str().unwrap();
    t.refused(
        &["plugin", "install", src, "--name", "Bad"],
        2,
        "cannot be a plugin name",
    );
    t.refused(
        &["plugin", "install", src, "--name=-x"],
        2,
        "cannot be a plugin name",
    );
    t.refused(
        &["plugin", "install", src, "--name", "help"],
        2,
        "built-in command 'help'",
    );
    t.refused(
        &["plugin", "install", src, "--name", "plugin-x"],
        2,
        "built-in command 'plugin'",
    );
    let builtin = targz(&[("app-version", 0o755, body.as_slice())]);
    server.serve("/builtin.tar.gz", &builtin);
    t.refused(
        &[
            "plugin",
            "install",
            &server.url("/builtin.tar.gz"),
            "--sha256",
            &sha256(&builtin),
        ],
        2,
        "built-in command 'version'",
    );
    // An existing plugin, without --force.
    let dup = write_executable(&t.src("app-good"), &script_plugin("9", "dup"));
    t.refused(
        &["plugin", "install", dup.to_str().unwrap()],
        4,
        "already installed",
    );
    // A local file without the run bit; a missing file; a directory.
    let plain = t.src("app-plain");
    fs::write(&plain, "#!/bin/sh\n").unwrap();
    t.refused(
        &["plugin", "install", plain.to_str().unwrap()],
        5,
        "not executable",
    );
    t.refused(
        &["plugin", "install", t.src("app-nope").to_str().unwrap()],
        1,
        "cannot read",
    );
    t.refused(
        &[
            "plugin",
            "install",
            t.sb.path().to_str().unwrap(),
            "--name",
            "d",
        ],
        5,
        "not a regular file",
    );
    // A local file with a wrong --sha256.
    t.refused(
        &["plugin", "install", src, "--sha256", &good],
        5,
        "checksum mismatch",
    );

    // And the one installed plugin is still the first one.
    assert_eq!(ok(t.app(&["good", "1"])), "x 1\n");
}

#[test]
fn force_replaces_and_remove_removes_only_what_install_put_there() {
    let t = T::new();
    let src = write_executable(&t.src("app-tool"), &script_plugin("1.0.0", "one"));
    ok(t.app(&["plugin", "install", src.to_str().unwrap()]));
    write_executable(&src, &script_plugin("1.1.0", "two"));
    let out = ok(t.app(&["plugin", "install", src.to_str().unwrap(), "--force"]));
    assert!(out.contains("1.1.0"), "{out}");
    assert_eq!(ok(t.app(&["tool"])), "two \n");

    // A plugin on PATH that install did not put there.
    let other = t.sb.script("app-other", "#!/bin/sh\necho other\n");
    t.refused(
        &["plugin", "remove", "other"],
        4,
        &other.display().to_string(),
    );
    t.refused(
        &["plugin", "remove", "nothing"],
        4,
        "not in the plugin index",
    );
    // A file dropped into the plugin dir by hand is not install's either.
    fs::copy(&src, t.plugin_dir().join("app-manual")).unwrap();
    t.refused(
        &["plugin", "remove", "manual"],
        4,
        "not in the plugin index",
    );
    // An installed plugin edited by hand is left alone.
    let installed = t.plugin_dir().join("app-tool");
    let original = fs::read(&installed).unwrap();
    fs::write(&installed, "#!/bin/sh\necho edited\n").unwrap();
    t.refused(&["plugin", "remove", "tool"], 4, "was changed since");
    fs::write(&installed, &original).unwrap();

    let out = ok(t.app(&["plugin", "remove", "tool"]));
    assert!(out.contains("removed plugin 'tool'"), "{out}");
    assert!(!installed.exists());
    assert!(t.index()["plugins"].get("tool").is_none());
    assert!(t.plugin_dir().join("app-manual").exists());
    t.refused(&["plugin", "remove", "tool"], 4, "not in the plugin index");
    let out = t.app(&["tool"]);
    assert_eq!(out.status.code(), Some(127));
}

#[test]
fn upgrade_reinstalls_from_the_recorded_source() {
    let t = T::new();
    let src = write_executable(&t.src("app-up"), &script_plugin("1.0.0", "old"));
    ok(t.app(&["plugin", "install", src.to_str().unwrap()]));
    write_executable(&src, &script_plugin("2.0.0", "new"));
    let out = ok(t.app(&["plugin", "upgrade", "up"]));
    assert!(out.contains("upgraded plugin 'up' 2.0.0"), "{out}");
    assert_eq!(ok(t.app(&["up"])), "new \n");
    assert_eq!(t.index()["plugins"]["up"]["version"], "2.0.0");

    let server = Server::start();
    let v1 = script_plugin("1.0.0", "web-old").into_bytes();
    server.serve("/app-net", &v1);
    let url = server.url("/app-net");
    ok(t.app(&["plugin", "install", &url, "--sha256", &sha256(&v1)]));
    let v2 = script_plugin("1.5.0", "web-new").into_bytes();
    server.serve("/app-net", &v2);
    t.refused(&["plugin", "upgrade", "net"], 2, "--sha256");
    t.refused(
        &["plugin", "upgrade", "net", "--sha256", &sha256(&v1)],
        5,
        "checksum mismatch",
    );
    let out = ok(t.app(&["plugin", "upgrade", "net", "--sha256", &sha256(&v2)]));
    assert!(out.contains("1.5.0"), "{out}");
    assert_eq!(ok(t.app(&["net"])), "web-new \n");

    t.sb.script("app-pathonly", "#!/bin/sh\n");
    t.refused(
        &["plugin", "upgrade", "pathonly"],
        4,
        "not in the plugin index",
    );
}

/// `app plugin new NAME --lang LANG`, then what the brief promises of it.
fn check_skeleton(t: &T, name: &str, executable: &Path) {
    // It answers the protocol directly …
    let meta = Command::new(executable)
        .arg("__app_metadata")
        .output()
        .unwrap();
    let meta: serde_json::Value = serde_json::from_slice(&meta.stdout).expect("metadata JSON");
    assert_eq!(meta["apiVersion"], "app.plugin/v1");
    assert_eq!(meta["name"], name);
    assert_eq!(meta["context"], "stdin");
    assert_eq!(meta["completion"], true);
    // … installs as is …
    ok(t.app(&["plugin", "install", executable.to_str().unwrap()]));
    // … runs through app, reading the JSON context from stdin …
    let hello = ok(t.app(&["--log", "4", name, "hello", "bob"]));
    assert!(
        hello.starts_with(&format!(
            "hello bob from {name} 0.1.0 (app 0.1.0, log level 4)"
        )),
        "{hello}"
    );
    // … logs as `app --log` and `--log-format` say, on stderr …
    let text = t.app(&["--log", "4", name, "hello"]);
    let stderr = String::from_utf8_lossy(&text.stderr);
    assert!(
        stderr.starts_with(&format!("app-{name}: debug: context from ")),
        "{stderr}"
    );
    let quiet = t.app(&["--log", "3", name, "hello"]);
    assert_eq!(String::from_utf8_lossy(&quiet.stderr), "");
    for (args, code, level, says) in [
        (
            &["--log", "debug", "--log-format", "json", name, "hello"][..],
            0,
            "debug",
            "context from ",
        ),
        (
            &["--log-format", "json", name, "frobnicate"],
            2,
            "error",
            "unknown command 'frobnicate'",
        ),
    ] {
        let out = t.app(args);
        assert_eq!(out.status.code(), Some(code), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<serde_json::Value> = stderr
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
            .collect();
        assert_eq!(lines.len(), 1, "{stderr}");
        let v = &lines[0];
        assert_eq!(v["level"], level, "{v}");
        assert_eq!(v["plugin"], name, "{v}");
        assert!(
            v["message"].as_str().is_some_and(|m| m.starts_with(says)),
            "{v}"
        );
        let time = v["time"].as_str().unwrap_or_default();
        assert!(
            time.len() == 24 && time.ends_with('Z'),
            "RFC 3339 with milliseconds: {v}"
        );
    }
    let ctx = ok(t.app(&["-H", "unix:///x.sock", name, "context"]));
    assert!(ctx.contains("unix:///x.sock"), "{ctx}");
    assert!(ctx.contains("\"plugin_name\""), "{ctx}");
    // … completes …
    let complete = ok(t.app(&[name, "__complete", "he"]));
    let lines: Vec<&str> = complete.lines().collect();
    assert_eq!(lines.len(), 3, "{complete}");
    assert!(lines[0].starts_with("hello"), "{complete}");
    assert!(lines[1].starts_with("help"), "{complete}");
    assert_eq!(lines[2], ":4");
    let none = ok(t.app(&[name, "__complete", "hello", ""]));
    assert_eq!(none, ":4\n");
    // … reports usage errors with exit 2 …
    let bad = t.app(&[name, "frobnicate"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&bad.stderr).starts_with(&format!("app-{name}: unknown command"))
    );
    // … and is listed with its description, version and source.
    let list = ok(t.app(&["plugin", "list"]));
    let line = list
        .lines()
        .find(|l| l.starts_with(&format!("{name} ")))
        .expect(&list);
    assert!(line.contains("A plugin for app"), "{line}");
    assert!(line.contains("[installed 0.1.0 from"), "{line}");
}

fn new_skeleton(t: &T, name: &str, lang: &str) -> PathBuf {
    let dir = t.sb.path().join(format!("new-{lang}"));
    let out = ok(t.app(&[
        "plugin",
        "new",
        name,
        "--lang",
        lang,
        "--dir",
        dir.to_str().unwrap(),
    ]));
    assert!(out.contains("app plugin install"), "{out}");
    assert!(dir.join("README.md").is_file());
    // A second time into the same, now busy, directory is refused.
    let again = t.app(&[
        "plugin",
        "new",
        name,
        "--lang",
        lang,
        "--dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(again.status.code(), Some(2));
    dir
}

#[test]
fn plugin_new_sh_makes_a_working_plugin() {
    let t = T::new();
    let dir = new_skeleton(&t, "shdemo", "sh");
    check_skeleton(&t, "shdemo", &dir.join("app-shdemo"));
}

#[test]
fn plugin_new_python_makes_a_working_plugin() {
    if common::require_tool("python3", "python3").is_none() {
        return;
    }
    let t = T::new();
    let dir = new_skeleton(&t, "pydemo", "python");
    check_skeleton(&t, "pydemo", &dir.join("app-pydemo"));
}

#[test]
fn plugin_new_refuses_bad_names() {
    let t = T::new();
    let out = t.app(&["plugin", "new", "plugin-x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("built-in command 'plugin'"));
    assert!(!t.sb.path().join("app-plugin-x").exists());
}

/// Builds the generated Rust project exactly as `plugin new` prints it
/// (`cd DIR && cargo build --release`), in a shell, with cargo offline: the
/// skeleton's `[patch.crates-io]` points at this checkout's `sdk/` (an
/// `app` run from a cargo build directory does that; an installed one
/// points at `<prefix>/share/app/sdk`), and its other dependencies are
/// those this workspace already fetched. One test: a build takes a while.
/// Set APP_TEST_SKIP_RUST_SKELETON=1 to skip it where no cargo is available.
#[test]
fn plugin_new_rust_builds_as_printed_and_works() {
    if std::env::var_os("APP_TEST_SKIP_RUST_SKELETON").is_some() {
        // A run that promised every test (CI) may not skip one quietly.
        assert!(
            std::env::var(common::tools::REQUIRE_ALL).as_deref() != Ok("1"),
            "APP_TEST_SKIP_RUST_SKELETON is set but {}=1 requires every test",
            common::tools::REQUIRE_ALL
        );
        eprintln!("skipped: APP_TEST_SKIP_RUST_SKELETON is set");
        return;
    }
    let t = T::new();
    let dir = t.sb.path().join("new-rust");
    let printed = ok(t.app(&[
        "plugin",
        "new",
        "rsdemo",
        "--lang",
        "rust",
        "--dir",
        dir.to_str().unwrap(),
    ]));
    let cargo_toml = fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    let version = fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
        .unwrap()
        .lines()
        .find_map(|l| {
            l.strip_prefix("version = \"")?
                .strip_suffix('"')
                .map(String::from)
        })
        .expect("the workspace version");
    // The SDK by version, as on crates.io, patched to the checkout's sdk/
    // with a comment saying when to delete the patch.
    assert!(
        cargo_toml.contains(&format!("\napp-plugin = \"{version}\"\n")),
        "{cargo_toml}"
    );
    assert!(
        cargo_toml.contains(&format!(
            "[patch.crates-io]\napp-plugin = {{ path = \"{}/sdk\" }}",
            env!("CARGO_MANIFEST_DIR")
        )) && cargo_toml.contains("once app-plugin is on crates.io"),
        "{cargo_toml}"
    );
    let steps: Vec<&str> = printed
        .lines()
        .map(|l| l.trim_start_matches("next:").trim())
        .filter(|l| !l.is_empty() && !l.starts_with("created"))
        .collect();
    assert_eq!(
        steps,
        [
            format!("cd {} && cargo build --release", dir.display()),
            "app plugin install target/release/app-rsdemo".to_string(),
            "app rsdemo hello".to_string()
        ],
        "{printed}"
    );
    // The build's target/ is a link to one that outlives the sandbox, so
    // later runs are quick; the commands are the printed ones, as typed.
    let shared = common::app_bin()
        .parent()
        .and_then(Path::parent)
        .expect("target dir")
        .join("skeleton-test");
    fs::create_dir_all(&shared).unwrap();
    std::os::unix::fs::symlink(&shared, dir.join("target")).unwrap();
    let cargo = std::env::var_os("CARGO")
        .map(PathBuf::from)
        .expect("cargo runs the tests");
    let path = format!(
        "{}:{}",
        cargo.parent().expect("cargo's directory").display(),
        t.sb.path_var()
    );
    let mut child = Command::new("sh")
        .args(["-c", steps[0]])
        .env("PATH", &path)
        .env("CARGO_NET_OFFLINE", "true")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET_DIR")
        .current_dir(t.sb.path())
        .stdin(Stdio::null())
        .spawn()
        .expect("run sh");
    let status = common::wait_for(std::time::Duration::from_secs(900), || {
        child.try_wait().unwrap()
    })
    .unwrap_or_else(|| {
        let _ = child.kill();
        panic!("cargo build of the Rust skeleton took more than 15 minutes")
    });
    assert!(status.success(), "{} failed", steps[0]);
    let mut install = t.sb.app();
    install
        .args(["plugin", "install", "target/release/app-rsdemo"])
        .current_dir(&dir);
    let installed = common::run::Run::new(install).assert().code(0);
    assert!(
        installed.stdout.contains("installed plugin 'rsdemo' 0.1.0"),
        "{installed:?}"
    );
    fs::remove_file(t.plugin_dir().join("app-rsdemo")).unwrap();
    fs::remove_file(t.plugin_dir().join(".index.json")).unwrap();
    check_skeleton(&t, "rsdemo", &dir.join("target/release/app-rsdemo"));
}

#[test]
fn a_missing_fetch_helper_is_a_clear_error_and_changes_nothing() {
    let t = T::new();
    // `app` alone, with no `app_fetch` beside it or on PATH.
    let alone = t.sb.path().join("alone");
    fs::create_dir_all(&alone).unwrap();
    let app = alone.join("app");
    fs::copy(common::app_bin(), &app).unwrap();
    let src = write_executable(&t.src("app-x"), &script_plugin("1", "x"));
    let out =
        t.sb.command(&app)
            .args(["plugin", "install", src.to_str().unwrap()])
            .stdin(Stdio::null())
            .output()
            .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("app_fetch") && stderr.contains("not installed"),
        "{stderr}"
    );
    assert!(!t.plugin_dir().exists());
}

/// A slow download shows a progress line on a terminal (here a pseudo-terminal
/// from util-linux `script`), and none when stderr is not a terminal.
#[test]
fn slow_downloads_show_progress_on_a_terminal_only() {
    if common::require_tool("script", "bsdutils").is_none() {
        return;
    }
    let t = T::new();
    let server = Server::start();
    let mut body = script_plugin("1.0.0", "slow").into_bytes();
    body.extend(vec![b'#'; 40 * 1024]);
    // 11 chunks, 100 ms apart: about a second.
    server.serve_slowly("/app-slow", &body, std::time::Duration::from_millis(100));
    let url = server.url("/app-slow");
    let sum = sha256(&body);

    let plain = t.app(&[
        "plugin", "install", &url, "--sha256", &sum, "--name", "slow1",
    ]);
    assert!(plain.status.success());
    assert!(!String::from_utf8_lossy(&plain.stderr).contains("downloading"));

    let line = format!(
        "{} plugin install {url} --sha256 {sum} --name slow2",
        common::app_bin().display()
    );
    let tty =
        t.sb.command("script")
            .args(["-qec", &line, "/dev/null"])
            .stdin(Stdio::null())
            .output()
            .expect("script (util-linux) runs a command on a pseudo-terminal");
    let screen = String::from_utf8_lossy(&tty.stdout);
    assert!(tty.status.success(), "{screen}");
    assert!(screen.contains(&format!("downloading {url}:")), "{screen}");
    assert!(screen.contains('%'), "{screen}");
    assert!(screen.contains("installed plugin 'slow2'"), "{screen}");
}

/// A server on 127.0.0.1 that answers every request with `302 Location: location`.
fn redirecting_server(location: &'static str) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            use std::io::{BufRead, Write};
            let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(5)));
            let mut reader = std::io::BufReader::new(&stream);
            let mut line = String::new();
            while reader.read_line(&mut line).map(|n| n > 2).unwrap_or(false) {
                line.clear();
            }
            let _ = write!(
                &stream,
                "HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
        }
    });
    format!("http://{addr}/dl/app-x")
}

#[test]
fn urls_other_than_http_are_refused_clearly_and_file_urls_are_paths() {
    let t = T::new();
    let src = t.src("app-local");
    common::write_executable(&src, &script_plugin("1.0.0", "local"));
    let sum = "ab".repeat(32);
    for url in ["ftp://h/app-x", "gopher://h/app-x", "HTTPX://h/app-x"] {
        t.refused(
            &["plugin", "install", url, "--sha256", &sum],
            2,
            "URLs are not supported; app plugin install takes a local path, a file:///path, or an http:// or https:// URL",
        );
    }
    t.refused(
        &["plugin", "install", "file://elsewhere/tmp/app-x"],
        2,
        "does not name a file on this machine; write a file URL as file:///absolute/path",
    );
    // A redirect to a file is refused, naming it (not "HTTP 404").
    let url = redirecting_server("file:///etc/passwd");
    t.refused(
        &["plugin", "install", &url, "--sha256", &sum],
        3,
        "the server redirected to file:///etc/passwd, a file: URL; only redirects to http:// and https:// URLs are followed",
    );
    let file_url = format!("file://{}", src.display());
    let out = ok(t.app(&["plugin", "install", &file_url]));
    assert!(out.contains("installed plugin 'local' 1.0.0"), "{out}");
    assert_eq!(ok(t.app(&["local", "x"])), "local x\n");
}

#[test]
fn a_password_in_the_url_is_never_printed_nor_recorded() {
    let t = T::new();
    let server = Server::start();
    let body = script_plugin("2.0.0", "web").into_bytes();
    server.serve("/dl/app-web", &body);
    let url = server
        .url("/dl/app-web")
        .replacen("http://", "http://user:s3cret@", 1);
    let out = t.app(&["plugin", "install", &url, "--sha256", &sha256(&body)]);
    let all = format!("{}{}", stdout(&out), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{all}");
    assert!(
        !all.contains("s3cret") && all.contains("user:***@"),
        "{all}"
    );
    let index = fs::read_to_string(t.plugin_dir().join(".index.json")).unwrap();
    assert!(
        !index.contains("s3cret") && index.contains("user:***@"),
        "{index}"
    );
    let list = ok(t.app(&["plugin", "list"]));
    assert!(!list.contains("s3cret"), "{list}");
    // A failed download does not show it either.
    let missing = url.replace("/dl/app-web", "/dl/app-gone");
    t.refused(
        &["plugin", "install", &missing, "--sha256", &sha256(&body)],
        3,
        "user:***@",
    );
    // Upgrading cannot use a password it does not have: it says so.
    t.refused(
        &["plugin", "upgrade", "web", "--sha256", &sha256(&body)],
        2,
        "was not recorded; install it again with the whole URL",
    );
}

#[test]
fn a_token_in_the_url_query_is_never_printed_nor_recorded() {
    let t = T::new();
    let server = Server::start();
    let body = script_plugin("2.0.0", "tok").into_bytes();
    // The server sees the token (the download needs it); nothing else does.
    server.serve("/dl/app-tok?token=hunter7&v=2", &body);
    let url = server.url("/dl/app-tok?token=hunter7&v=2");
    let out = t.app(&["plugin", "install", &url, "--sha256", &sha256(&body)]);
    let all = format!("{}{}", stdout(&out), String::from_utf8_lossy(&out.stderr));
    // Positive control: the install worked and names the URL, token masked.
    assert!(out.status.success(), "{all}");
    assert!(
        !all.contains("hunter7") && all.contains("?token=***&v=2"),
        "{all}"
    );
    let index = fs::read_to_string(t.plugin_dir().join(".index.json")).unwrap();
    assert!(
        !index.contains("hunter7") && index.contains("?token=***&v=2"),
        "{index}"
    );
    let list = ok(t.app(&["plugin", "list"]));
    assert!(!list.contains("hunter7"), "{list}");
    t.refused(
        &["plugin", "upgrade", "tok", "--sha256", &sha256(&body)],
        2,
        "was not recorded; install it again with the whole URL",
    );
}

#[test]
fn control_characters_in_a_plugins_metadata_are_printed_escaped() {
    let t = T::new();
    let src = t.src("app-evil");
    common::write_executable(
        &src,
        "#!/bin/sh\nif [ \"$1\" = __app_metadata ]; then\n  printf '%s\\n' '{\"apiVersion\":\"app.plugin/v1\",\"version\":\"1\\u001b[31m\",\"description\":\"hi\\u001b]0;owned\\u0007\\nforged\\r\\u009b2K\"}'\nfi\n",
    );
    let out = ok(t.app(&["plugin", "install", src.to_str().unwrap()]));
    assert!(
        out.contains(r"installed plugin 'evil' 1\x1b[31m"),
        "{out:?}"
    );
    let help = ok(t.app(&["help"]));
    let list = ok(t.app(&["plugin", "list"]));
    for text in [&help, &list, &out] {
        assert!(
            !text.contains(['\x1b', '\x07', '\r', '\u{9b}']),
            "raw control characters in {text:?}"
        );
    }
    assert!(
        help.contains(r"hi\x1b]0;owned\x07\nforged\r\u{9b}2K"),
        "{help}"
    );
    assert!(
        list.contains(r"hi\x1b]0;owned\x07\nforged\r\u{9b}2K"),
        "{list}"
    );
    assert!(list.contains(r"[installed 1\x1b[31m from"), "{list}");
}

/// An `app` installed by `./install.sh` (in `PREFIX/bin`, the SDK's source
/// in `PREFIX/share/app/sdk`) points a Rust skeleton at that SDK; one that
/// finds no SDK writes no patch, only the dependency by version.
#[test]
fn plugin_new_rust_points_at_the_sdk_install_sh_installed() {
    let t = T::new();
    let prefix = t.sb.path().join("prefix");
    fs::create_dir_all(prefix.join("bin")).unwrap();
    let app = prefix.join("bin/app");
    fs::copy(common::app_bin(), &app).unwrap();
    let new = |dir: &Path| {
        let mut cmd = t.sb.command(&app);
        cmd.args(["plugin", "new", "demo", "--lang", "rust", "--dir"])
            .arg(dir);
        common::run::Run::new(cmd).assert().code(0);
        fs::read_to_string(dir.join("Cargo.toml")).unwrap()
    };
    // No SDK there (and not a cargo build directory): no patch.
    let plain = new(&t.sb.path().join("plain"));
    assert!(!plain.lines().any(|l| l.starts_with("[patch")), "{plain}");
    // The SDK as install.sh leaves it.
    let sdk = prefix.join("share/app/sdk");
    fs::create_dir_all(&sdk).unwrap();
    fs::write(sdk.join("Cargo.toml"), "[package]\nname = \"app-plugin\"\n").unwrap();
    let patched = new(&t.sb.path().join("patched"));
    assert!(
        patched.contains(&format!(
            "# with app. Delete this section once app-plugin is on crates.io.\n[patch.crates-io]\napp-plugin = {{ path = \"{}\" }}\n",
            sdk.display()
        )),
        "{patched}"
    );
}
