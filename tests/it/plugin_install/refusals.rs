//! Every refusal leaves the plugin directory as it was; a missing fetch
//! helper and URLs other than http(s) are said clearly.

use crate::common;

use std::fs;
use std::process::Stdio;

use common::http_server::Server;
use common::{snapshot, write_executable};

use super::{ok, script_plugin, sha256, targz, T};

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
        2,
        "holds no plugin (no executable app-<name> file in it)",
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
