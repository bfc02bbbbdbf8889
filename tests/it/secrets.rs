//! Passwords in URLs (issue 19, item 10): parsed where supported (a source
//! URL's user and password become HTTP Basic authentication), refused
//! clearly where not (a sink URL), and shown or stored nowhere in clear:
//! not in messages, not in the log at `--log 5`, not in `/healthz`, not in
//! the state or checkpoint files.

use std::time::Duration;

use crate::common;

use common::repeater::Repeater;
use common::sse_source::ScriptedSource;
use common::{plugin_bin, wait_for, Sandbox};

const REPEATER: &str = "app-event-repeater";

/// Every file under `dir`, read as text (lossy), with its path.
fn files_under(dir: &std::path::Path) -> Vec<(std::path::PathBuf, String)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else if let Ok(bytes) = std::fs::read(&path) {
            out.push((path, String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
    out
}

#[test]
fn a_source_password_is_sent_as_basic_auth_and_shown_nowhere() {
    let sb = Sandbox::new();
    let source = ScriptedSource::start();
    let url = source.url().replacen("http://", "http://u:hunter5@", 1);
    let mut r = Repeater::builder(&sb, "sec")
        .source(&url)
        .sinkprotocol("stderr")
        .args(["--allowall", "--log", "5"])
        .start();
    source.push_topic(1, "a/b");
    // Positive control: the password reached the source, in the header.
    // base64("u:hunter5")
    let sent = wait_for(Duration::from_secs(10), || {
        source.authorizations().into_iter().flatten().next()
    });
    assert_eq!(sent.as_deref(), Some("Basic dTpodW50ZXI1"), "{}", r.log());
    assert!(
        wait_for(Duration::from_secs(10), || r
            .sink_topics()
            .contains(&"a/b".to_string())
            .then_some(()))
        .is_some(),
        "the event was not relayed: {}",
        r.log()
    );
    let (status, health) = r.get("/healthz");
    assert_eq!(status, 200, "{health}");
    let health: serde_json::Value = serde_json::from_str(&health).expect("JSON");
    assert_eq!(
        health["source"]["url"],
        url.replace("u:hunter5", "***:***"),
        "{health}"
    );
    r.signal(libc::SIGTERM);
    let log = r.log();
    assert!(
        log.contains("***:***@127.0.0.1"),
        "the log names the source: {log}"
    );
    assert!(!log.contains("hunter5"), "{log}");
    for (path, text) in files_under(sb.path()) {
        assert!(
            !text.contains("hunter5"),
            "{} holds it: {text}",
            path.display()
        );
    }
}

#[test]
fn credentials_in_a_sink_url_are_refused_without_showing_them() {
    let sb = Sandbox::new();
    for (protocol, sink, secret, flags) in [
        (
            "nats",
            "nats://u:hunter3@127.0.0.1:4222",
            "hunter3",
            "--creds",
        ),
        (
            "mqtt",
            "mqtt://u:hunter4@127.0.0.1:1883",
            "hunter4",
            "--password-file",
        ),
    ] {
        let mut cmd = sb.command(plugin_bin(REPEATER));
        cmd.args([
            "run",
            "--name",
            "s",
            "--source",
            "none",
            "--sinkprotocol",
            protocol,
            "--sink",
            sink,
            "--log",
            "5",
        ]);
        let ran = common::run::Run::new(cmd).assert();
        assert_eq!(ran.exit(), 2, "{ran:?}");
        let all = format!("{}{}", ran.stdout, ran.stderr);
        // It names the URL (masked) and the flags to use instead.
        assert!(
            all.contains(&sink.replace(&format!("u:{secret}"), "***:***")) && all.contains(flags),
            "{ran:?}"
        );
        assert!(!all.contains(secret), "{ran:?}");
    }
    for (path, text) in files_under(sb.path()) {
        assert!(
            !text.contains("hunter"),
            "{} holds it: {text}",
            path.display()
        );
    }
}

#[test]
fn credentials_in_a_manage_host_are_refused_without_showing_them() {
    let sb = Sandbox::new();
    let mut cmd = sb.command(plugin_bin("app-event-repeater-manage"));
    cmd.args(["get", "--host", "http://u:hunter9@127.0.0.1:1"]);
    let ran = common::run::Run::new(cmd).assert();
    assert_eq!(ran.exit(), 2, "{ran:?}");
    // It names the address (masked) and what to use instead.
    assert!(
        ran.stderr.contains("'http://***:***@127.0.0.1:1'") && ran.stderr.contains("--token"),
        "{ran:?}"
    );
    assert!(
        !ran.stderr.contains("hunter9") && !ran.stdout.contains("hunter9"),
        "{ran:?}"
    );
}

/// Every output and file of a run, for the greps: none may hold `SECRET`.
#[track_caller]
fn assert_clean(what: &str, text: &str) {
    assert!(!text.contains("SECRET"), "{what} shows a secret: {text}");
}

#[test]
fn the_tracer_and_messages_mask_every_secret_form() {
    let sb = Sandbox::new();
    sb.script("app-work", "#!/bin/sh\nexit 0\n");
    sb.write_config(r#"{"listeners": [{"name": "tracer"}]}"#);
    let argv = [
        "-H",
        "http://u:SECRETa@hosta.example:1",
        "work",
        "--token",
        "SECRETb",
        "--nats-token=SECRETc",
        "--password",
        "SECRETd",
        "--password-file",
        "/etc/app/pass",
        "--source-header",
        "Authorization: Bearer SECRETe",
        "--sink",
        "mqtt://SECRETf@hostf.example:1",
        "--source",
        "http://u:pa/SECRETg#?@hostg.example:2",
        "--sink=nats://SECRETh@hosth.example:4222",
        "u:SECRETi@hosti.example:3",
        "https://hostj.example/x?private_token=SECRETj&X-Goog-Signature=SECRETk",
        "https://hostl.example/y?to%6Ben=SECRETl&client_secret=SECRETm",
        "unix://u:SECRETn@/run/hostn.sock",
        "http://ghp_SECRETo@hosto.example/r.git",
    ];
    sb.run(argv).assert().code(0);
    let mut outputs = String::new();
    for url in [
        "http://127.0.0.1:1/app-x?token=SECRETp",
        "http://u:SECRETq@127.0.0.1:1/app-x",
    ] {
        let ran = sb.run(["plugin", "install", url]).assert().code(2);
        assert!(
            ran.stderr.contains("needs its checksum") && ran.stderr.contains("127.0.0.1:1/app-x"),
            "{ran:?}"
        );
        outputs += &format!("{}{}", ran.stdout, ran.stderr);
    }
    let list = sb.run(["plugin", "list"]).assert().code(0);
    assert!(list.stdout.contains("app-listener-tracer"), "{list:?}");
    outputs += &format!("{}{}", list.stdout, list.stderr);
    assert_clean("the messages", &outputs);

    let log_path = sb.data_dir().join("tracer.log");
    let log = std::fs::read_to_string(&log_path).expect("tracer.log");
    assert_clean("tracer.log", &log);
    // Positive control: the line is there, with what is not secret.
    for part in [
        "hosta.example:1",
        " work ",
        "--password-file /etc/app/pass",
        "hostf.example:1",
        "hostg.example:2",
        "hosth.example:4222",
        "hosti.example:3",
        "hostj.example/x?private_token=",
        "to%6Ben=",
        "/run/hostn.sock",
        "hosto.example/r.git",
        "plugin install",
        "127.0.0.1:1/app-x",
    ] {
        assert!(log.contains(part), "{part:?} not in {log}");
    }
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&log_path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    for (path, text) in files_under(sb.path()) {
        assert_clean(&path.display().to_string(), &text);
    }
}

#[test]
fn an_older_world_readable_tracer_log_is_narrowed() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    sb.write_config(r#"{"listeners": [{"name": "tracer"}]}"#);
    let log_path = sb.data_dir().join("tracer.log");
    std::fs::write(&log_path, "old line\n").unwrap();
    std::fs::set_permissions(&log_path, std::fs::Permissions::from_mode(0o644)).unwrap();
    sb.run(["version"]).assert().code(0);
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(
        log.starts_with("old line\n") && log.contains("app version"),
        "{log}"
    );
    let mode = std::fs::metadata(&log_path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
}

#[test]
fn repeater_and_manage_addresses_with_secrets_are_refused_masked() {
    let sb = Sandbox::new();
    let repeater = |args: &[&str]| {
        let mut cmd = sb.command(plugin_bin(REPEATER));
        cmd.args(["run", "--name", "s"]).args(args);
        common::run::Run::new(cmd).assert()
    };
    for (args, shown) in [
        (
            &[
                "--source",
                "none",
                "--sinkprotocol",
                "nats",
                "--sink",
                "nats://SECRET1@127.0.0.1:4222",
            ][..],
            "127.0.0.1:4222",
        ),
        (
            &[
                "--source",
                "none",
                "--sinkprotocol",
                "mqtt",
                "--sink",
                "mqtt://SECRET2@127.0.0.1:1883",
            ],
            "127.0.0.1:1883",
        ),
        (
            &[
                "--source",
                "none",
                "--sinkprotocol",
                "mqtt",
                "--sink",
                "u:SECRET3@127.0.0.1:1883",
            ],
            "127.0.0.1:1883",
        ),
        (
            &[
                "--source",
                "none",
                "--sinkprotocol",
                "nats",
                "--sink",
                "u:SECRET4@127.0.0.1:4222",
            ],
            "127.0.0.1:4222",
        ),
        (
            &[
                "--source",
                "http://u:pa/SECRET5#?@127.0.0.1:9",
                "--sinkprotocol",
                "stderr",
            ],
            "127.0.0.1:9",
        ),
        (
            &[
                "--source",
                "http://u:pa?SECRET6@127.0.0.1:9",
                "--sinkprotocol",
                "stderr",
            ],
            "127.0.0.1:9",
        ),
        (
            &[
                "--source",
                "user:SECRET7@127.0.0.1:9",
                "--sinkprotocol",
                "stderr",
            ],
            "127.0.0.1:9",
        ),
        (
            &[
                "--source",
                "unix://user:SECRET8@/run/x.sock",
                "--sinkprotocol",
                "stderr",
            ],
            "/run/x.sock",
        ),
    ] {
        let ran = repeater(args);
        assert_eq!(ran.exit(), 2, "{args:?}: {ran:?}");
        assert_clean(
            &format!("{args:?}"),
            &format!("{}{}", ran.stdout, ran.stderr),
        );
        assert!(ran.stderr.contains(shown), "{args:?}: {ran:?}");
    }
    for host in [
        "http://SECRET1@127.0.0.1:1",
        "u:SECRET2@127.0.0.1:1",
        "http://u:pw/SECRET3@127.0.0.1:1",
        "http://127.0.0.1:1/?token=SECRET4",
        "unix://u:SECRET5@/run/m.sock",
    ] {
        for cmd_args in [&["get", "--host", host][..], &["status", "--host", host]] {
            let mut cmd = sb.command(plugin_bin("app-event-repeater-manage"));
            cmd.args(cmd_args);
            let ran = common::run::Run::new(cmd).assert();
            assert_eq!(ran.exit(), 2, "{host}: {ran:?}");
            assert_clean(host, &format!("{}{}", ran.stdout, ran.stderr));
            let place = if host.starts_with("unix") {
                "/run/m.sock"
            } else {
                "127.0.0.1:1"
            };
            assert!(ran.stderr.contains(place), "{host}: {ran:?}");
        }
    }
}

/// A git repository served over git's "dumb" HTTP protocol by the test
/// server: every file of a bare clone at `/repo.git/…`.
fn serve_git_repo(sb: &Sandbox, server: &common::http_server::Server) {
    let git = |dir: &std::path::Path, args: &[&str]| {
        let out = std::process::Command::new("git")
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
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run git");
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    let work = sb.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("README"), "a plugin\n").unwrap();
    git(&work, &["init", "--quiet"]);
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "--quiet", "-m", "first"]);
    let bare = sb.path().join("repo.git");
    git(
        sb.path(),
        &["clone", "--quiet", "--bare", "work", "repo.git"],
    );
    git(&bare, &["update-server-info"]);
    for (path, _) in files_under(&bare) {
        let rel = path.strip_prefix(&bare).unwrap().display().to_string();
        server.serve(&format!("/repo.git/{rel}"), &std::fs::read(&path).unwrap());
    }
    // git asks for the smart protocol first; a plain answer means "dumb".
    let refs = std::fs::read(bare.join("info/refs")).unwrap();
    server.serve("/repo.git/info/refs?service=git-upload-pack", &refs);
}

#[test]
fn records_never_hold_a_url_secret() {
    let Some(w) = common::index::World::new() else {
        return;
    };
    if common::require_tool("git", "git").is_none() {
        return;
    }
    serve_git_repo(&w.sb, &w.server);
    // A stand-in for cargo: what it builds is not the point here, the
    // record of where it came from is.
    let tools = w.sb.path().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    common::write_executable(
        &tools.join("cargo"),
        "#!/bin/sh\nwhile [ $# -gt 0 ]; do [ \"$1\" = --root ] && root=$2; shift; done\nmkdir -p \"$root/bin\"\nprintf '#!/bin/sh\\necho built\\n' > \"$root/bin/app-gitsec\"\nchmod +x \"$root/bin/app-gitsec\"\n",
    );
    let url = w
        .server
        .url("/repo.git")
        .replacen("http://", "http://u:SECRETgit@", 1);
    let mut cmd = w.sb.app_without_proxy();
    cmd.args(["plugin", "install", "--git", &url])
        .env("PATH", format!("{}:{}", tools.display(), w.sb.path_var()));
    let ran = common::run::Run::new(cmd).assert().code(0);
    assert!(ran.stdout.contains("installed plugin 'gitsec'"), "{ran:?}");
    let mut outputs = format!("{}{}", ran.stdout, ran.stderr);
    w.app(&["gitsec"]).code(0).stdout_has("built");
    let record = std::fs::read_to_string(w.plugin_dir().join(".index.json")).unwrap();
    assert!(
        record.contains("/repo.git") && record.contains("\"commit\""),
        "{record}"
    );
    // Upgrading needs the URL again: said, not tried with a masked one.
    let up = w.app(&["plugin", "upgrade", "gitsec"]).code(2);
    assert!(up.stderr.contains("install --git"), "{up:?}");
    outputs += &format!("{}{}", up.stdout, up.stderr);

    // An index URL with a token as user, or in its query: refused, not stored.
    for index_url in [
        w.server
            .url("/index.json")
            .replacen("http://", "http://SECRETidx@", 1),
        w.server.url("/index.json?private_token=SECRETq"),
    ] {
        let add = w.add("main", &index_url).code(2);
        assert!(
            add.stderr.contains("/index.json") && add.stderr.contains("--token-file"),
            "{add:?}"
        );
        outputs += &format!("{}{}", add.stdout, add.stderr);
    }
    // Positive control: a signed index without them is added.
    w.main_index(1, &[]);
    let list = w.app(&["plugin", "list"]).code(0);
    outputs += &format!("{}{}", list.stdout, list.stderr);
    assert!(list.stdout.contains("gitsec"), "{list:?}");
    assert_clean("the messages", &outputs);
    let indexes = std::fs::read_to_string(w.sb.config_dir().join("indexes.json")).unwrap();
    assert!(indexes.contains("127.0.0.1"), "{indexes}");
    for (path, text) in files_under(w.sb.path()) {
        assert_clean(&path.display().to_string(), &text);
    }
}

fn chmod(path: &std::path::Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn a_token_file_others_can_read_is_warned_about_once() {
    let Some(w) = common::index::World::new() else {
        return;
    };
    let url = w.signed_index(1, &[]);
    let token = w.sb.path().join("index.token");
    std::fs::write(&token, "T0KENSECRET\n").unwrap();
    chmod(&token, 0o644);
    let fix = format!("chmod 600 {}", token.display());
    let key = w.key.public.to_str().unwrap().to_string();
    let (token_arg, add) = (token.to_str().unwrap(), ["plugin", "index", "add", "main"]);
    let added = w
        .app(
            &[
                &add[..],
                &[&url, "--key-file", &key, "--token-file", token_arg],
            ]
            .concat(),
        )
        .code(0);
    // Once, though app reads it and app_fetch reads it for the index and
    // its signature.
    assert_eq!(added.stderr.matches(&fix).count(), 1, "{added:?}");
    assert!(
        added
            .stderr
            .contains("group and every other user (mode 0644)"),
        "{added:?}"
    );
    let updated = w.app(&["plugin", "index", "update"]).code(0);
    assert_eq!(updated.stderr.matches(&fix).count(), 1, "{updated:?}");
    chmod(&token, 0o600);
    let private = w.app(&["plugin", "index", "update"]).code(0);
    assert!(!private.stderr.contains("chmod"), "{private:?}");
    for ran in [&added, &updated, &private] {
        assert_clean("index commands", &format!("{}{}", ran.stdout, ran.stderr));
    }

    // The repeater's --password-file: warned at start, before the usage error.
    let pass = w.sb.path().join("mqtt.pass");
    std::fs::write(&pass, "SECRETpass\n").unwrap();
    for (mode, warned) in [(0o640, true), (0o600, false)] {
        chmod(&pass, mode);
        let mut cmd = w.sb.command(plugin_bin(REPEATER));
        cmd.args([
            "run",
            "--name",
            "s",
            "--source",
            "none",
            "--sinkprotocol",
            "mqtt",
        ])
        .arg("--password-file")
        .arg(&pass);
        let ran = common::run::Run::new(cmd).assert();
        assert_eq!(ran.exit(), 2, "{ran:?}");
        assert!(ran.stderr.contains("no --username"), "{ran:?}");
        let fix = format!("chmod 600 {}", pass.display());
        assert_eq!(
            ran.stderr.matches(&fix).count(),
            usize::from(warned),
            "{mode:o}: {ran:?}"
        );
        assert_clean("the repeater", &ran.stderr);
    }
}
