//! The config file when it is broken: invalid JSON, missing although named by
//! `--config`/`APP_CONFIG`, a FIFO, a device, too large. Commands that need
//! the config fail with exit 1 and a message naming the file and the problem;
//! `help`, `version`, `completion`, `plugin list` and `plugin path` still run,
//! after one warning.

use crate::common;

use std::fs;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::Sandbox;

/// Runs `cmd` with no stdin; kills it (and fails) after 10 s.
fn run(cmd: &mut Command) -> Output {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start app");
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(10)) {
        Ok(out) => out.expect("wait for app"),
        Err(_) => {
            // SAFETY: kill with a pid we spawned and a valid signal number.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("app did not finish within 10 s: {cmd:?}");
        }
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A sandbox with a plugin that leaves a marker when it runs.
fn sandbox() -> Sandbox {
    let sb = Sandbox::new();
    sb.script(
        "app-hello",
        "#!/bin/sh\ntouch \"$APP_RUNTIME_DIR/ran-hello\"\necho hello\n",
    );
    sb
}

fn hello_ran(sb: &Sandbox) -> bool {
    sb.runtime_dir().join("ran-hello").exists()
}

/// The built-ins that must work whatever the config: (args, what stdout shows).
const WITHOUT_CONFIG: &[(&[&str], &str)] = &[
    (&["version"], "app 0."),
    (&["--version"], "app 0."),
    (&["help"], "completion"),
    (&["--help"], "completion"),
    (&[], "completion"),
    (&["completion", "bash"], "# bash completion for app"),
    (&["plugin", "list"], "hello"),
    (&["plugin", "path", "hello"], "app-hello"),
];

/// Every built-in of WITHOUT_CONFIG runs, with one warning containing
/// `problem`; the plugin and the alias do not run, exit 1 with that message.
fn check_broken(sb: &Sandbox, configure: impl Fn(&mut Command), problem: &str) {
    for (args, shows) in WITHOUT_CONFIG {
        let mut cmd = sb.app();
        configure(&mut cmd);
        let out = run(cmd.args(*args));
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert!(
            out.status.code() == Some(0)
                || (args == &["plugin", "list"] && out.status.code() == Some(1)),
            "app {args:?}: {:?}\n{stderr}",
            out.status
        );
        assert!(stdout.contains(shows), "app {args:?}: {stdout}");
        assert!(
            stderr.starts_with("app: warning: this command runs without the config: config file")
                && stderr.contains(problem),
            "app {args:?}: {stderr}"
        );
    }
    for args in [&["hello"][..], &["hi"], &["plugin", "remove", "hello"]] {
        let mut cmd = sb.app();
        configure(&mut cmd);
        let out = run(cmd.args(args));
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "app {args:?}: {stderr}");
        assert!(
            stderr.starts_with("app: config file") && stderr.contains(problem),
            "app {args:?}: {stderr}"
        );
        assert!(!hello_ran(sb), "app {args:?} ran the plugin");
    }
    assert!(sb.bin_dir().join("app-hello").exists());
    // TAB stays quiet and still completes.
    let mut cmd = sb.app();
    configure(&mut cmd);
    let out = run(cmd.args(["__complete", "ver"]));
    assert!(out.status.success());
    assert_eq!(text(&out.stderr), "");
    assert!(
        text(&out.stdout).contains("version"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn a_config_with_a_syntax_error_still_lets_help_and_version_run() {
    let sb = sandbox();
    sb.write_config("{\"aliases\": {\"hi\": \"hello\"},\n  \"plugins\": }\n");
    let path = sb.config_dir().join("config.json");
    check_broken(&sb, |_| {}, "is not valid: expected value at line 2");
    // The warning names the file, and says what to do.
    let out = run(sb.app().arg("version"));
    let stderr = text(&out.stderr);
    assert!(stderr.contains(&path.display().to_string()), "{stderr}");
    assert!(stderr.contains("fix the file"), "{stderr}");
    // Below the warning level (--log 1: errors only), no warning.
    let out = run(sb.app().args(["--log", "1", "version"]));
    assert!(out.status.success());
    assert_eq!(text(&out.stderr), "");
    // Fixed, the alias works again.
    sb.write_config("{\"aliases\": {\"hi\": \"hello\"}}");
    let out = run(sb.app().arg("hi"));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "hello\n");
}

#[test]
fn a_config_named_by_flag_or_env_must_exist() {
    let sb = sandbox();
    let nope = sb.path().join("nope.json");
    let flag = nope.clone();
    check_broken(
        &sb,
        |c| {
            c.arg("--config").arg(&flag);
        },
        "does not exist (named by --config)",
    );
    let env = nope.clone();
    check_broken(
        &sb,
        |c| {
            c.env("APP_CONFIG", &env);
        },
        "does not exist (named by APP_CONFIG)",
    );
    // The default file may be absent: an empty config, no warning.
    let out = run(sb.app().arg("hello"));
    assert!(out.status.success());
    assert_eq!(text(&out.stderr), "");
}

#[test]
fn app_run_by_a_plugin_accepts_the_default_config_path_it_inherits() {
    // The plugin gets APP_CONFIG = the default path, which does not exist.
    let sb = sandbox();
    sb.script(
        "app-outer",
        "#!/bin/sh\necho \"config=$APP_CONFIG\"\nexec \"$APP_BIN\" hello\n",
    );
    let out = run(sb.app().arg("outer"));
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        stdout.contains(&format!(
            "config={}",
            sb.config_dir().join("config.json").display()
        )),
        "{stdout}"
    );
    assert!(stdout.ends_with("hello\n"), "{stdout}");
}

#[test]
fn a_fifo_as_config_is_refused_at_once_instead_of_hanging() {
    let sb = sandbox();
    let fifo = sb.path().join("config.fifo");
    common::mkfifo(&fifo);
    let flag = fifo.clone();
    check_broken(
        &sb,
        |c| {
            c.arg("--config").arg(&flag);
        },
        "is a FIFO, not a regular file",
    );
    let env = fifo.clone();
    check_broken(
        &sb,
        |c| {
            c.env("APP_CONFIG", &env);
        },
        "is a FIFO, not a regular file",
    );
    // The default config file as a FIFO: the same.
    common::mkfifo(&sb.config_dir().join("config.json"));
    check_broken(&sb, |_| {}, "is a FIFO, not a regular file");
}

#[test]
fn devices_directories_and_huge_files_are_refused_without_reading_them() {
    let sb = sandbox();
    check_broken(
        &sb,
        |c| {
            c.arg("--config").arg("/dev/zero");
        },
        "is a character device, not a regular file",
    );
    let dir = sb.path().to_path_buf();
    check_broken(
        &sb,
        |c| {
            c.env("APP_CONFIG", &dir);
        },
        "is a directory, not a regular file",
    );
    // Valid JSON, but over the 1 MiB cap.
    let big = sb.path().join("big.json");
    let mut json = String::from("{\"aliases\": {\"hi\": \"hello\"}}");
    json.push_str(&"\n".repeat(2 * 1024 * 1024));
    fs::write(&big, json).unwrap();
    check_broken(
        &sb,
        |c| {
            c.arg("--config").arg(&big);
        },
        "is larger than 1048576 bytes (the most a config file may have): 2097180 bytes",
    );
}
