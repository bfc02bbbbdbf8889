//! An instance without its options file fails at once, saying which file
//! to create, with exit 2 (the status its unit does not restart on,
//! `RestartPreventExitStatus=2`), instead of restarting every 2 s forever.

use std::fs;
use std::process::Stdio;
use std::time::Duration;

use crate::common::process::Proc;
use crate::common::{plugin_bin, Sandbox};

use super::{append, healthz};

/// `app-event-repeater run --name edge1` as its unit runs it, with
/// `APP_OPTIONS_FILE` naming `options`.
fn repeater(
    sb: &Sandbox,
    options: &std::path::Path,
    log: &std::path::Path,
) -> std::process::Command {
    let mut cmd = sb.command(plugin_bin("app-event-repeater"));
    cmd.args(["run", "--name", "edge1", "--sinkprotocol", "stderr"])
        .env("APP_OPTIONS_FILE", options)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(append(log));
    cmd
}

#[test]
fn a_missing_options_file_is_named_and_exits_2_and_a_present_one_starts() {
    let sb = Sandbox::new();
    let options = sb.path().join("etc/edge1.env");
    let log = sb.path().join("missing.log");
    let status = repeater(&sb, &options, &log)
        .status()
        .expect("run the repeater");
    let said = fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(status.code(), Some(2), "{said}");
    assert!(
        said.contains(&format!(
            "the options file {} (APP_OPTIONS_FILE) does not exist: create it, e.g. cp {} {}",
            options.display(),
            sb.path().join("etc/example.env").display(),
            options.display()
        )),
        "{said}"
    );
    // The control: with the file there, the same command starts and serves.
    fs::create_dir_all(options.parent().expect("parent")).expect("mkdir");
    fs::write(&options, "REPEATER_OPTIONS=\n").expect("write the options file");
    let log = sb.path().join("present.log");
    let mut proc = Proc::spawn("app-event-repeater", &mut repeater(&sb, &options, &log));
    let socket = sb.plugin_runtime_dir().join("edge1.sock");
    let up = crate::common::wait_for(Duration::from_secs(15), || healthz(&socket));
    assert_eq!(
        up,
        Some(200),
        "{}",
        fs::read_to_string(&log).unwrap_or_default()
    );
    proc.signal(libc::SIGTERM);
    assert!(proc.wait_exit(Duration::from_secs(20)).is_some());
}
