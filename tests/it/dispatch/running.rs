//! Running a plugin: shell, Python and compiled; arguments, stdin, context
//! and global flags passed through; exit codes and signals; exec and
//! supervised modes.

use crate::common;

use std::fs;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::Sandbox;

use super::{stdin_context_plugin, ECHO_PLUGIN};

#[test]
fn runs_a_shell_plugin_with_args_untouched_and_context_in_env() {
    let sb = Sandbox::new();
    let plugin = sb.script("app-hello", ECHO_PLUGIN);
    let out = sb
        .run(["hello", "two words", "ünïcødé ✓", "--flag", ""])
        .assert()
        .code(0);
    let l = out.lines();
    assert_eq!(
        &l[..4],
        ["arg=two words", "arg=ünïcødé ✓", "arg=--flag", "arg="]
    );
    let has = |line: String| assert!(l.contains(&line.as_str()), "no {line:?} in {l:?}");
    has("name=hello".into());
    has("log=2".into());
    has("context=env".into());
    has("version=1".into());
    has(format!("exe={}", plugin.display()));
    has(format!("bin={}", common::app_bin().display()));
    has(format!("runtime={}", sb.runtime_dir().display()));
    assert!(
        l.contains(&"command=app hello 'two words' 'ünïcødé ✓' --flag ''")
            || l.iter()
                .any(|x| x.starts_with("command=") && x.contains("'two words'")),
        "{l:?}"
    );
}

#[test]
fn runs_a_python_plugin() {
    if common::require_tool("python3", "python3").is_none() {
        return;
    }
    let sb = Sandbox::new();
    sb.script(
        "app-py",
        "#!/usr/bin/env python3\nimport os, sys\nprint(sys.argv[1:], os.environ['APP_PLUGIN_NAME'])\n",
    );
    sb.run(["py", "a b", "c"])
        .assert()
        .code(0)
        .stdout_is("['a b', 'c'] py");
}

#[test]
fn runs_a_compiled_plugin() {
    let sb = Sandbox::new();
    let src = sb.path().join("bin.c");
    fs::write(
        &src,
        "#include <stdio.h>\nint main(int c, char **v){ for(int i=1;i<c;i++) printf(\"[%s]\", v[i]); puts(\"\"); return 7; }\n",
    )
    .unwrap();
    let status = Command::new("cc")
        .arg("-o")
        .arg(sb.bin_dir().join("app-compiled"))
        .arg(&src)
        .status()
        .expect("cc is needed to build a compiled test plugin");
    assert!(status.success());
    sb.run(["compiled", "x y", "-z"])
        .assert()
        .code(7)
        .stdout_is("[x y][-z]");
}

#[test]
fn a_file_without_the_run_bit_gets_a_clear_message() {
    let sb = Sandbox::new();
    let path = sb.bin_dir().join("app-noexec");
    fs::write(&path, "#!/bin/sh\necho hi\n").unwrap();
    sb.run(["noexec"])
        .assert()
        .code(126)
        .stderr_has(path.display().to_string())
        .stderr_has("chmod +x");
    // Data beside a plugin (cargo's .d files, man pages) is not a broken plugin.
    fs::write(sb.bin_dir().join("app-other.d"), "deps").unwrap();
    sb.run(["plugin", "list"])
        .assert()
        .stderr_has("is not executable")
        .stderr_lacks("app-other.d")
        .code(1);
}

#[test]
fn a_bad_interpreter_names_the_file_and_the_interpreter() {
    let sb = Sandbox::new();
    let path = sb.script("app-badinterp", "#!/nonexistent/bash\necho hi\n");
    sb.run(["badinterp"])
        .assert()
        .code(126)
        .stderr_has(path.display().to_string())
        .stderr_has("'/nonexistent/bash'");
}

#[test]
fn exit_codes_pass_through() {
    let sb = Sandbox::new();
    sb.script("app-fail", "#!/bin/sh\nexit 42\n");
    sb.run(["fail"]).assert().code(42);
}

#[test]
fn a_plugin_killed_by_sigterm_ends_app_the_same_way() {
    let sb = Sandbox::new();
    sb.script("app-selfkill", "#!/bin/sh\nkill -TERM $$\nsleep 5\n");
    // exec mode: the process *is* the plugin, so it dies of the signal;
    // a shell reports that as 143.
    sb.run(["selfkill"]).assert().signal(15);
    let shell = sb
        .command("/bin/sh")
        .args([
            "-c",
            &format!("{} selfkill; echo $?", common::app_bin().display()),
        ])
        .stdin(Stdio::null())
        .output()
        .expect("run sh");
    assert_eq!(String::from_utf8_lossy(&shell.stdout).trim(), "143");
}

#[test]
fn stdin_reaches_a_plain_plugin_untouched() {
    let sb = Sandbox::new();
    sb.script("app-cat", "#!/bin/sh\nexec cat\n");
    let data: Vec<u8> = (0..=255u8).cycle().take(200_000).collect();
    let mut child = sb
        .app()
        .arg("cat")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = data.clone();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success());
    assert!(out.stdout == data, "stdin must arrive byte for byte");
}

#[test]
fn global_flags_before_the_plugin_reach_it_and_flags_after_are_its_own() {
    let sb = Sandbox::new();
    sb.script("app-hello", ECHO_PLUGIN);
    let out = sb
        .run([
            "--log",
            "5",
            "-H",
            "unix:///x.sock",
            "-H",
            "http://127.0.0.1:1",
            "hello",
            "--log",
            "1",
        ])
        .assert()
        .code(0);
    let l = out.lines();
    assert_eq!(&l[..2], ["arg=--log", "arg=1"]);
    assert!(l.contains(&"log=5"), "{l:?}");
    assert!(
        l.contains(&"hosts=unix:///x.sock,http://127.0.0.1:1"),
        "{l:?}"
    );
}

#[test]
fn a_bad_global_flag_is_a_usage_error() {
    let sb = Sandbox::new();
    sb.run(["--log", "9", "hello"])
        .assert()
        .code(2)
        .stderr_has("--log");
}

#[test]
fn the_json_context_comes_first_on_stdin_then_the_users_stdin() {
    let sb = Sandbox::new();
    let dir = stdin_context_plugin(
        &sb,
        "IFS= read -r ctx\nprintf '%s\\n' \"$ctx\"\necho ---\ncat\n",
    );
    sb.write_config(r#"{"plugins": {"ctx": {"config": {"colour": "blue"}}}}"#);
    let out = sb
        .run(["--log", "4", "ctx", "x y"])
        .env("APP_PLUGIN_PATH", &dir)
        .stdin("user line 1\nuser line 2\n")
        .assert()
        .code(0);
    let (ctx_line, rest) = out.stdout.split_once("\n---\n").expect("separator");
    let ctx: serde_json::Value = serde_json::from_str(ctx_line).expect("context is JSON");
    assert_eq!(ctx["context_version"], 1);
    assert_eq!(ctx["plugin_name"], "ctx");
    assert_eq!(ctx["log"], 4);
    assert_eq!(ctx["args"], serde_json::json!(["x y"]));
    assert_eq!(ctx["global_args"], serde_json::json!(["--log", "4"]));
    assert_eq!(ctx["plugin_config"], serde_json::json!({"colour": "blue"}));
    assert_eq!(rest, "user line 1\nuser line 2\n");
}

#[test]
fn in_exec_mode_the_plugin_replaces_app() {
    let sb = Sandbox::new();
    sb.script("app-ppid", "#!/bin/sh\necho $PPID\n");
    sb.run(["ppid"])
        .assert()
        .stdout_is(std::process::id().to_string());
}

#[test]
fn supervised_mode_forwards_sigterm_and_reports_the_childs_status() {
    let sb = Sandbox::new();
    let marker = sb.path().join("got-term");
    let dir = stdin_context_plugin(
        &sb,
        &format!(
            "trap 'echo term > {}; exit 3' TERM\necho ready\nwhile :; do sleep 0.05; done\n",
            marker.display()
        ),
    );
    let mut child = sb
        .app()
        .env("APP_PLUGIN_PATH", &dir)
        .arg("ctx")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut buf = [0u8; 6];
    std::io::Read::read_exact(&mut out, &mut buf).unwrap();
    assert_eq!(&buf, b"ready\n");
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = wait_timeout(&mut child, Duration::from_secs(5)).expect("app exits");
    assert_eq!(status.code(), Some(3), "app exits with the child's code");
    assert_eq!(fs::read_to_string(&marker).unwrap().trim(), "term");
}

#[test]
fn supervised_mode_leaves_no_orphan_when_app_is_killed() {
    let sb = Sandbox::new();
    let pidfile = sb.path().join("child.pid");
    let dir = stdin_context_plugin(
        &sb,
        &format!("echo $$ > {}\nexec sleep 30\n", pidfile.display()),
    );
    let mut child = sb
        .app()
        .env("APP_PLUGIN_PATH", &dir)
        .arg("ctx")
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let pid: i32 = common::wait_for(Duration::from_secs(5), || {
        fs::read_to_string(&pidfile).ok()?.trim().parse().ok()
    })
    .expect("plugin started");
    child.kill().unwrap();
    child.wait().unwrap();
    let gone = common::wait_for(Duration::from_secs(5), || {
        (!common::process::alive(pid)).then_some(())
    });
    assert!(gone.is_some(), "plugin {pid} outlived app");
}

fn wait_timeout(
    child: &mut std::process::Child,
    timeout: Duration,
) -> Option<std::process::ExitStatus> {
    common::wait_for(timeout, || child.try_wait().ok().flatten())
}
