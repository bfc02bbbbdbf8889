//! Installing from a path, a compiled binary and URLs; `--force`, `remove`
//! and `upgrade` from the recorded source.

use crate::common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use common::http_server::Server;
use common::write_executable;

use super::{ok, script_plugin, sha256, stdout, targz, T};

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
        "it has no install receipt",
    );
    // A file dropped into the plugin dir by hand is not install's either.
    fs::copy(&src, t.plugin_dir().join("app-manual")).unwrap();
    t.refused(
        &["plugin", "remove", "manual"],
        4,
        "it has no install receipt",
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
    t.refused(
        &["plugin", "remove", "tool"],
        4,
        "it has no install receipt",
    );
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
        "it has no install receipt",
    );
}
