//! Publishing an index in one command each (issue 35): the walk-through of
//! docs/plugin-index.md, "Publishing an index", top to bottom: `index init`,
//! `index publish` of two versions, the folder served on 127.0.0.1, then
//! `index add`, `install`, `index update`, `upgrade`; with the `minisign`
//! tool verifying what `app` signed, and signing with a key it made.

use crate::common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use common::http_server::Server;
use common::run::{Ran, Run};
use common::{snapshot, write_executable, Sandbox};

struct Publisher {
    sb: Sandbox,
    minisign: std::path::PathBuf,
    team: std::path::PathBuf,
}

impl Publisher {
    fn new() -> Option<Publisher> {
        let minisign = common::require_tool("minisign", "minisign")?;
        let sb = Sandbox::new();
        let team = sb.path().join("team-index");
        Some(Publisher { sb, minisign, team })
    }

    /// `app ARGS` in the sandbox, with minisign's default key place in its HOME.
    fn app(&self, args: &[&str]) -> Ran {
        let mut cmd = self.sb.app_without_proxy();
        cmd.env_remove("MINISIGN_CONFIG_DIR").args(args);
        Run::new(cmd).assert()
    }

    fn team(&self) -> &str {
        self.team.to_str().unwrap()
    }

    /// `app-hello`, answering its metadata with `version`.
    fn plugin(&self, version: &str) -> String {
        let path = self.sb.path().join("src/app-hello");
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        write_executable(
            &path,
            &format!(
                "#!/bin/sh\nif [ \"${{1-}}\" = __app_metadata ]; then echo '{{\"apiVersion\":\"app.plugin/v1\",\"version\":\"{version}\"}}'; exit 0; fi\necho \"hello {version}\"\n"
            ),
        );
        path.to_str().unwrap().to_string()
    }

    /// `minisign -V` of the index with its public key: what a user of the tool checks.
    #[track_caller]
    fn minisign_verifies(&self) {
        let out = Command::new(&self.minisign)
            .arg("-V")
            .arg("-p")
            .arg(self.team.join("index.pub"))
            .arg("-m")
            .arg(self.team.join("index.json"))
            .output()
            .unwrap();
        assert!(out.status.success(), "minisign -V: {out:?}");
    }
}

/// Serves every file of `dir` at its path below `/`.
fn serve_dir(server: &Server, dir: &Path, prefix: &str) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = format!("{prefix}/{}", path.file_name().unwrap().to_str().unwrap());
        if path.is_dir() {
            serve_dir(server, &path, &name);
        } else {
            server.serve(&name, &fs::read(&path).unwrap());
        }
    }
}

#[test]
fn the_publishing_walk_through_runs_top_to_bottom() {
    let Some(p) = Publisher::new() else { return };
    let server = Server::start();
    let url = server.url("/index.json");
    let team = p.team();

    // 1. init: the index, its signature and public key; the secret key at
    //    minisign's place, outside the folder.
    p.app(&[
        "plugin",
        "index",
        "init",
        team,
        "--url",
        &url,
        "--no-password",
    ])
    .code(0)
    .stdout_has(format!(
        "created the index {team}/index.json (serial 1, no plugins) naming itself \"{url}\""
    ));
    let secret = p.sb.path().join(".minisign/minisign.key");
    let mode = fs::metadata(&secret).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{}", secret.display());
    let mut files: Vec<String> = fs::read_dir(&p.team)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    assert_eq!(files, ["index.json", "index.json.minisig", "index.pub"]);
    p.minisign_verifies();

    // 2. publish 1.0.0, serve, add, install.
    let plugin = p.plugin("1.0.0");
    p.app(&[
        "plugin",
        "index",
        "publish",
        team,
        &plugin,
        "--version",
        "1.0.0",
        "--description",
        "Says hello",
    ])
    .code(0)
    .stdout_has("published hello 1.0.0 for ")
    .stdout_has("(serial 2)");
    p.minisign_verifies();
    serve_dir(&server, &p.team, "");
    let public = p.team.join("index.pub");
    p.app(&[
        "plugin",
        "index",
        "add",
        "team",
        &url,
        "--key-file",
        public.to_str().unwrap(),
    ])
    .code(0)
    .stdout_has("serial 2, 1 plugin versions");
    p.app(&["plugin", "search", "hello"])
        .code(0)
        .stdout_has("Says hello");
    p.app(&["plugin", "install", "hello"])
        .code(0)
        .stdout_has("installed plugin 'hello' 1.0.0");
    p.app(&["hello"]).code(0).stdout_is("hello 1.0.0");

    // 3. publish 1.1.0; users update and upgrade.
    let plugin = p.plugin("1.1.0");
    p.app(&[
        "plugin",
        "index",
        "publish",
        team,
        &plugin,
        "--version",
        "1.1.0",
    ])
    .code(0)
    .stdout_has("(serial 3)");
    p.minisign_verifies();
    serve_dir(&server, &p.team, "");
    p.app(&["plugin", "index", "update"])
        .code(0)
        .stdout_has("team: serial 2 → 3, 2 plugin versions");
    p.app(&["plugin", "upgrade", "hello"])
        .code(0)
        .stdout_has("upgraded plugin 'hello' 1.1.0");
    p.app(&["hello"]).code(0).stdout_is("hello 1.1.0");
    let doc: serde_json::Value =
        serde_json::from_slice(&fs::read(p.team.join("index.json")).unwrap()).unwrap();
    assert_eq!(doc["plugins"][0]["version"], "1.1.0");
    // The earlier version's description carries over.
    assert_eq!(doc["plugins"][0]["description"], "Says hello");

    // The same build again replaces its entry with the same bytes.
    let sum = |d: &serde_json::Value| d["plugins"][0]["platforms"][0]["sha256"].clone();
    p.app(&[
        "plugin",
        "index",
        "publish",
        team,
        &plugin,
        "--version",
        "1.1.0",
    ])
    .code(0)
    .stdout_has("replaced hello 1.1.0");
    let again: serde_json::Value =
        serde_json::from_slice(&fs::read(p.team.join("index.json")).unwrap()).unwrap();
    assert_eq!(sum(&again), sum(&doc));
    assert_eq!(again["serial"], 4);
}

#[test]
fn a_minisign_tool_key_signs_and_refusals_change_nothing() {
    let Some(p) = Publisher::new() else { return };
    let team = p.team();
    // A key pair made by the minisign tool, used as the index's key.
    let keys = p.sb.path().join("keys");
    fs::create_dir_all(&keys).unwrap();
    let tool_key = keys.join("tool.key");
    let made = Command::new(&p.minisign)
        .args(["-G", "-W", "-p"])
        .arg(keys.join("tool.pub"))
        .arg("-s")
        .arg(&tool_key)
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    let tool_key = tool_key.to_str().unwrap();
    p.app(&["plugin", "index", "init", team, "--secret-key", tool_key])
        .code(0)
        .stdout_has(format!("signed with the existing secret key {tool_key}"));
    assert_eq!(
        fs::read_to_string(p.team.join("index.pub"))
            .unwrap()
            .lines()
            .nth(1),
        fs::read_to_string(keys.join("tool.pub"))
            .unwrap()
            .lines()
            .nth(1)
    );
    p.minisign_verifies();

    // Each refusal leaves the folder as it was.
    let plugin = p.plugin("1.0.0");
    let other = p.sb.path().join("other");
    let before = snapshot(&p.team);
    let refused = |args: &[&str], code: i32, needle: &str| {
        let ran = p.app(args).code(code).stderr_has(needle);
        assert!(ran.stderr.starts_with("app: "), "{ran:?}");
        assert_eq!(snapshot(&p.team), before, "{args:?} changed {team}");
    };
    // Not this index's key (minisign's default place holds another).
    p.app(&[
        "plugin",
        "index",
        "init",
        other.to_str().unwrap(),
        "--no-password",
    ])
    .code(0);
    refused(
        &[
            "plugin",
            "index",
            "publish",
            team,
            &plugin,
            "--version",
            "1.0.0",
        ],
        5,
        "is not the key of",
    );
    refused(
        &[
            "plugin",
            "index",
            "publish",
            team,
            &plugin,
            "--version",
            "1.0",
            "--secret-key",
            tool_key,
        ],
        2,
        "--version '1.0' is not a semantic version",
    );
    let text = p.sb.path().join("src/app-notes");
    fs::write(&text, "just text\n").unwrap();
    refused(
        &[
            "plugin",
            "index",
            "publish",
            team,
            text.to_str().unwrap(),
            "--version",
            "1.0.0",
            "--secret-key",
            tool_key,
        ],
        2,
        "is not an executable plugin",
    );
    refused(
        &["plugin", "index", "init", team, "--no-password"],
        4,
        "already exists",
    );
    let inside = p.team.join("secret.key");
    refused(
        &[
            "plugin",
            "index",
            "publish",
            team,
            &plugin,
            "--version",
            "1.0.0",
            "--secret-key",
            inside.to_str().unwrap(),
        ],
        2,
        "is inside",
    );
    // The control: with the right key, it publishes.
    p.app(&[
        "plugin",
        "index",
        "publish",
        team,
        &plugin,
        "--version",
        "1.0.0",
        "--secret-key",
        tool_key,
    ])
    .code(0);
    assert_ne!(snapshot(&p.team), before);
    p.minisign_verifies();
}
