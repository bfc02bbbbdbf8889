//! Command lines and search-path entries that are unusual but legal: `--`
//! before the command, plugins that are broken symbolic links.

mod common;

use std::os::unix::fs::symlink;
use std::process::{Output, Stdio};

use common::Sandbox;

fn run(sb: &Sandbox, args: &[&str]) -> Output {
    sb.app().args(args).stdin(Stdio::null()).output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_separator_before_the_command_ends_the_global_flags() {
    let sb = Sandbox::new();
    let out = run(&sb, &["--", "version"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("app "));
    sb.script("app-echo", "#!/bin/sh\necho \"$@\"\n");
    let out = run(&sb, &["--log", "3", "--", "echo", "--", "a"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Only the separator before the command is app's; the plugin's stay.
    assert_eq!(String::from_utf8_lossy(&out.stdout), "-- a\n");
}

#[test]
fn a_plugin_that_is_a_broken_link_cannot_run_and_is_listed_as_a_problem() {
    let sb = Sandbox::new();
    let bin = sb.bin_dir();
    symlink(bin.join("nowhere"), bin.join("app-dangling")).unwrap();
    symlink(bin.join("app-loop"), bin.join("app-loop")).unwrap();
    let out = run(&sb, &["dangling"]);
    assert_eq!(out.status.code(), Some(126), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "cannot run plugin {}: it is a symbolic link to {}, which does not exist; fix or remove the link",
            bin.join("app-dangling").display(),
            bin.join("nowhere").display()
        )),
        "{}",
        stderr(&out)
    );
    let out = run(&sb, &["loop", "x"]);
    assert_eq!(out.status.code(), Some(126), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("it is a symbolic link loop"),
        "{}",
        stderr(&out)
    );
    let out = run(&sb, &["plugin", "list"]);
    assert_eq!(out.status.code(), Some(1));
    let warnings = stderr(&out);
    assert!(
        warnings.contains(&format!(
            "warning: {} cannot run: it is a symbolic link to",
            bin.join("app-dangling").display()
        )) && warnings.contains(&format!(
            "warning: {} cannot run: it is a symbolic link loop",
            bin.join("app-loop").display()
        )),
        "{warnings}"
    );
}
