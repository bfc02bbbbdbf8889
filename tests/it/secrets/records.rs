//! Records and secret files: no install or index record holds a URL's
//! secret, and a secret file others can read is warned about once.

use crate::common;

use common::{plugin_bin, Sandbox};

use super::{assert_clean, files_under, REPEATER};

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
    let record = std::fs::read_to_string(w.plugin_dir().join(".receipts.json")).unwrap();
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
