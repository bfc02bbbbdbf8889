//! What a newcomer's first hour found (issue 35): the receipts' name and
//! their migration, `remove`'s "did you mean", `plugin new`'s advice,
//! `plugin list`'s exit code and one warning prefix, and completion of
//! `-H` and `remove`.

use crate::common;

use std::fs;

use common::write_executable;

use super::{ok, script_plugin, stdout, T};

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Installs `app-NAME` (version 1.0.0) from a file.
fn install(t: &T, name: &str) {
    let src = write_executable(
        &t.src(&format!("app-{name}")),
        &script_plugin("1.0.0", name),
    );
    ok(t.app(&["plugin", "install", src.to_str().unwrap()]));
}

#[test]
fn an_old_index_json_record_is_read_and_migrated_to_receipts_once() {
    let t = T::new();
    install(&t, "hello");
    let new = t.plugin_dir().join(".receipts.json");
    let old = t.plugin_dir().join(".index.json");
    assert!(new.exists() && !old.exists());
    // As an older app left it.
    fs::rename(&new, &old).unwrap();
    let record = fs::read(&old).unwrap();

    let list = ok(t.app(&["plugin", "list"]));
    assert!(list.contains("[installed 1.0.0 from "), "{list}");
    assert_eq!(fs::read(&new).unwrap(), record);
    assert!(!old.exists(), "the old record stays beside the new one");
    // The migrated record is the one remove acts on.
    let out = ok(t.app(&["plugin", "remove", "hello"]));
    assert!(out.contains("removed plugin 'hello'"), "{out}");
    assert!(t.index()["plugins"].get("hello").is_none());
}

#[test]
fn remove_suggests_the_installed_name_a_typo_meant() {
    let t = T::new();
    install(&t, "jsonfmt");
    t.refused(
        &["plugin", "remove", "jsonfm"],
        4,
        "plugin 'jsonfm' was not installed with 'app plugin install' (it has no install receipt); did you mean 'jsonfmt'?",
    );
    // Nothing near it: no suggestion (the same refusal otherwise).
    let out = t.app(&["plugin", "remove", "zzz"]);
    assert_eq!(out.status.code(), Some(4));
    assert!(
        stderr(&out).contains("it has no install receipt"),
        "{out:?}"
    );
    assert!(!stderr(&out).contains("did you mean"), "{out:?}");
    ok(t.app(&["plugin", "remove", "jsonfmt"]));
}

#[test]
fn plugin_new_with_a_builtin_name_says_how_to_choose_another() {
    let t = T::new();
    let out = t.app(&["plugin", "new", "plugin"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = stderr(&out);
    assert!(
        err.starts_with("app: 'plugin' cannot be a plugin name: "),
        "{err}"
    );
    assert!(
        err.contains("choose another NAME: app plugin new NAME"),
        "{err}"
    );
    assert!(!err.contains("--name"), "plugin new has no --name: {err}");
    assert!(!t.sb.path().join("app-plugin").exists());
    // install does have --name, and says so.
    let src = write_executable(&t.src("app-version"), &script_plugin("1.0.0", "v"));
    t.refused(
        &["plugin", "install", src.to_str().unwrap()],
        2,
        "choose another name (--name NAME)",
    );
}

#[test]
fn plugin_list_exits_1_on_every_warning_and_all_warnings_say_app_warning() {
    let t = T::new();
    install(&t, "hello");
    let out = t.app(&["plugin", "list"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(stderr(&out), "");

    // An alias a built-in shadows, then a typo in the config: both warned
    // about, both exit 1 as the README says.
    for config in [
        r#"{"aliases": {"help": "hello"}}"#,
        r#"{"aliasses": {"hi": "hello"}}"#,
    ] {
        t.sb.write_config(config);
        let out = t.app(&["plugin", "list"]);
        assert_eq!(out.status.code(), Some(1), "{config}: {out:?}");
        let err = stderr(&out);
        assert!(!err.is_empty());
        for line in err.lines() {
            assert!(line.starts_with("app: warning: "), "{config}: {line}");
        }
        assert!(stdout(&out).contains("hello"), "{out:?}");
    }
    // A search-path problem (a dangling link): the same prefix, exit 1.
    t.sb.write_config("{}");
    std::os::unix::fs::symlink("/nonexistent", t.sb.bin_dir().join("app-dangling")).unwrap();
    let out = t.app(&["plugin", "list"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        stderr(&out).starts_with("app: warning: ") && stderr(&out).contains("app-dangling"),
        "{out:?}"
    );
}

/// `app __complete WORDS…`: the candidates' values and the directive.
fn complete(t: &T, words: &[&str]) -> (Vec<String>, String) {
    let mut args = vec!["__complete"];
    args.extend_from_slice(words);
    let answer = ok(t.app(&args));
    let mut lines: Vec<String> = answer
        .lines()
        .map(|l| l.split('\t').next().unwrap_or("").to_string())
        .collect();
    let directive = lines.pop().unwrap_or_default();
    (lines, directive)
}

#[test]
fn global_host_flag_completes_the_configs_hosts_and_groups() {
    let t = T::new();
    t.sb.write_config(
        r#"{"hosts": {"edge1": {"url": "http://127.0.0.1:1"}, "edge2": {"url": "http://127.0.0.1:2"}},
            "groups": {"edges": ["edge1", "edge2"]}}"#,
    );
    // A file that file-name completion would offer.
    fs::write(t.sb.path().join("edge-notes.txt"), "").unwrap();
    assert_eq!(
        complete(&t, &["-H", ""]),
        (
            vec!["edge1".into(), "edge2".into(), "@edges".into()],
            ":4".into()
        )
    );
    assert_eq!(complete(&t, &["-H", "@"]).0, ["@edges"]);
    assert_eq!(
        complete(&t, &["--host=e"]).0,
        ["--host=edge1", "--host=edge2"]
    );
    assert_eq!(
        complete(&t, &["--log", "2", "-H", "edge1", "-H", "e"]).0,
        ["edge1", "edge2"]
    );
    // The same config, as manage completes it.
    let manage = complete(&t, &["event-repeater", "manage", "get", "-H", ""]).0;
    assert!(manage.contains(&"@edges".to_string()), "{manage:?}");
}

#[test]
fn remove_and_upgrade_complete_only_plugins_with_a_receipt() {
    let t = T::new();
    install(&t, "hello");
    t.sb.script("app-onpath", "#!/bin/sh\n");
    // plugin path offers every plugin, shipped and on PATH (the control).
    let all = complete(&t, &["plugin", "path", ""]).0;
    for name in ["hello", "onpath", "event-time"] {
        assert!(all.contains(&name.to_string()), "{name} in {all:?}");
    }
    for cmd in ["remove", "upgrade"] {
        assert_eq!(
            complete(&t, &["plugin", cmd, ""]),
            (vec!["hello".to_string()], ":4".to_string()),
            "plugin {cmd}"
        );
    }
    let described = ok(t.app(&["__complete", "plugin", "remove", "h"]));
    assert!(described.starts_with("hello\t1.0.0 from "), "{described}");
}

#[test]
fn shipped_plugins_suggest_a_mistyped_flag() {
    let t = T::new();
    let out = t.app(&["event-time", "--lisen", "127.0.0.1:0"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        stderr(&out).contains("tip: a similar argument exists: '--listen'"),
        "{out:?}"
    );
    let out = t.app(&["event-repeater", "manage", "gte"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        stderr(&out).contains("tip: a similar subcommand exists: 'get'"),
        "{out:?}"
    );
    // app's own: clap's suggestion for a built-in's flag.
    let out = t.app(&["plugin", "install", "x", "--forse"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        stderr(&out).contains("a similar argument exists: '--force'"),
        "{out:?}"
    );
}
