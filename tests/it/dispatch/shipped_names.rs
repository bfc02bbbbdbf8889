//! Names under a shipped command (`app-event-repeater-run`) never take it
//! over: not from PATH, not from the user plugin directory; `plugin list`
//! warns about each, `install` refuses them, and the units search only
//! directories root owns.

use crate::common;

use std::fs;

use common::{write_executable, Sandbox};

const HIJACK: &str = "#!/bin/sh\necho \"HIJACKED $*\"\n";

/// The user plugin directory of the sandbox.
fn user_dir(sb: &Sandbox) -> std::path::PathBuf {
    let dir = sb.data_dir().join("plugins");
    fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_longer_name_on_path_or_in_the_user_dir_never_replaces_the_shipped_repeater() {
    let sb = Sandbox::new();
    sb.script("app-event-repeater-run", HIJACK);
    write_executable(&user_dir(&sb).join("app-event-repeater-run"), HIJACK);
    write_executable(&user_dir(&sb).join("app-event_time-x"), HIJACK);
    // Positive control: the same file under a name nothing ships does run.
    sb.script("app-other-cmd-run", HIJACK);
    sb.run(["other-cmd", "run", "--name", "x"])
        .assert()
        .code(0)
        .stdout_is("HIJACKED --name x");
    // The shipped repeater runs, given `run --help` as its arguments.
    let ran = sb
        .run(["event-repeater", "run", "--help"])
        .assert()
        .code(0)
        .stdout_has("Usage: app event-repeater run");
    assert!(!ran.stdout.contains("HIJACKED"), "{ran:?}");
    let ran = sb.run(["event-time", "x", "--help"]).assert();
    assert!(!ran.stdout.contains("HIJACKED"), "{ran:?}");
    // APP_PLUGIN_PATH is the user's own choice: a file there may add one.
    let chosen = sb.path().join("chosen");
    fs::create_dir_all(&chosen).unwrap();
    write_executable(&chosen.join("app-event-repeater-run"), HIJACK);
    sb.run(["event-repeater", "run", "--name", "x"])
        .env("APP_PLUGIN_PATH", &chosen)
        .assert()
        .code(0)
        .stdout_is("HIJACKED --name x");
}

#[test]
fn plugin_list_warns_about_every_name_under_a_shipped_command() {
    let sb = Sandbox::new();
    let on_path = sb.script("app-event-repeater-run", HIJACK);
    let in_user_dir = write_executable(&user_dir(&sb).join("app-event-time-now"), HIJACK);
    let ran = sb.run(["plugin", "list"]).assert().code(1);
    for path in [&on_path, &in_user_dir] {
        let line = ran
            .stderr
            .lines()
            .find(|l| l.contains(path.to_str().unwrap()))
            .unwrap_or_else(|| panic!("no warning about {}", path.display()));
        assert!(line.contains("under the shipped command"), "{line}");
    }
    // Neither is listed as a plugin; the shipped ones are.
    assert!(!ran.stdout.contains("event-repeater run"), "{ran:?}");
    assert!(!ran.stdout.contains("event-time now"), "{ran:?}");
    ran.stdout_has("event-repeater manage");
}

#[test]
fn install_refuses_a_name_under_a_shipped_command() {
    let sb = Sandbox::new();
    let src = write_executable(&sb.path().join("app-ok"), "#!/bin/sh\necho ok\n");
    let plugin_dir = user_dir(&sb);
    for name in [
        "event-repeater-run",
        "event_time-x",
        "event-repeater-manage-y",
    ] {
        sb.run(["plugin", "install", src.to_str().unwrap(), "--name", name])
            .assert()
            .code(2)
            .stderr_has("cannot be a plugin name")
            .stderr_has("under the shipped command");
    }
    assert!(fs::read_dir(&plugin_dir).unwrap().next().is_none());
    // Positive control: a name beside them installs.
    sb.run([
        "plugin",
        "install",
        src.to_str().unwrap(),
        "--name",
        "event-timer",
    ])
    .assert()
    .code(0);
    assert!(plugin_dir.join("app-event-timer").is_file());
}

#[test]
fn the_units_search_only_directories_root_owns() {
    let units = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging/debian");
    for unit in ["app-event-repeater@.service", "app-event-time.service"] {
        let text = fs::read_to_string(units.join(unit)).unwrap();
        let env: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("Environment="))
            .flat_map(str::split_whitespace)
            .collect();
        assert!(env.contains(&"APP_USER_PLUGINS=0"), "{unit}: {env:?}");
        let path = env
            .iter()
            .find_map(|e| e.strip_prefix("PATH="))
            .unwrap_or_else(|| panic!("{unit} sets no PATH"));
        for dir in path.split(':') {
            assert!(
                ["/usr/sbin", "/usr/bin", "/sbin", "/bin"].contains(&dir),
                "{unit}: {dir} on the search path"
            );
        }
        assert!(!text.contains("APP_PLUGIN_PATH"), "{unit}");
    }
    // What APP_USER_PLUGINS=0 does: a plugin in the user directory is found
    // without it and not with it.
    let sb = Sandbox::new();
    write_executable(&user_dir(&sb).join("app-mine"), "#!/bin/sh\necho mine\n");
    sb.run(["mine"]).assert().code(0).stdout_is("mine");
    sb.run(["mine"])
        .env("APP_USER_PLUGINS", "0")
        .assert()
        .code(127);
    sb.run(["mine"])
        .env("APP_USER_PLUGINS", "yes")
        .assert()
        .code(2)
        .stderr_has("APP_USER_PLUGINS");
}

/// Break 1's second half: a signed index entry named `event-repeater-run`
/// would install `app-event-repeater-run` into the user directory. The
/// index holding it is refused whole (every signature good), nothing
/// changed; the same index without it updates, and its plugin installs.
#[test]
fn a_signed_index_entry_under_a_shipped_command_is_refused() {
    let Some(w) = common::index::World::new() else {
        return;
    };
    w.main_index(1, &[("hello", "1.0.0")]);
    w.app(&["plugin", "install", "hello"]).code(0);
    w.signed_index(2, &[("hello", "1.0.0"), ("event-repeater-run", "1.0.0")]);
    w.refused(
        &["plugin", "index", "update", "main"],
        5,
        &[
            "event-repeater-run",
            "under the shipped command 'event-repeater'",
        ],
    );
    w.refused(
        &["plugin", "install", "event-repeater-run"],
        2,
        &["'event-repeater-run' cannot be a plugin name: it is under the shipped command 'event-repeater'", "no index may offer it"],
    );
    let ran = w.app(&["event-repeater", "run", "--help"]).code(0);
    assert!(
        ran.stdout.contains("Usage: app event-repeater run"),
        "{ran:?}"
    );
    // Positive control: the next index without that entry is taken.
    w.signed_index(3, &[("hello", "1.0.0"), ("hello-two", "1.0.0")]);
    w.app(&["plugin", "index", "update", "main"]).code(0);
    w.app(&["plugin", "install", "hello-two"]).code(0);
    let ran = w.app(&["hello-two"]).code(0);
    assert_eq!(ran.stdout.trim(), "hello-two 1.0.0", "{ran:?}");
}
