//! A system instance keeps its files in systemd's directories, and the app
//! group manages it.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use crate::common::process::Proc;
use crate::common::{plugin_bin, Sandbox};

use super::{append, healthz};

/// Makes `dir` (and its parents) with `owner:group` and `mode`, as systemd
/// makes a unit's `StateDirectory=`/`RuntimeDirectory=`.
fn systemd_dir(dir: &Path, uid: u32, gid: u32, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    fs::create_dir_all(dir).expect("create the directory");
    std::os::unix::fs::chown(dir, Some(uid), Some(gid)).expect("chown");
    fs::set_permissions(dir, fs::Permissions::from_mode(mode)).expect("chmod");
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).map(|m| m.mode() & 0o777).unwrap_or(0)
}

/// `app event-repeater manage ARGS` as uid `uid` with the supplementary
/// group `group` (none when `None`), looking for system instances in
/// `system_run`.
fn manage_as(
    sb: &Sandbox,
    uid: u32,
    group: Option<u32>,
    system_run: &Path,
    args: &[&str],
) -> std::process::Output {
    let mut cmd = sb.command("setpriv");
    cmd.arg(format!("--reuid={uid}"))
        .arg(format!("--regid={uid}"));
    match group {
        Some(g) => cmd.arg(format!("--groups={g}")),
        None => cmd.arg("--clear-groups"),
    };
    cmd.arg(crate::common::app_bin())
        .args(["event-repeater", "manage"])
        .args(args)
        // The user's own runtime dir holds no repeater.
        .env("APP_RUNTIME_DIR", sb.path().join("user-run"))
        .env("APP_SYSTEM_RUNTIME_DIR", system_run)
        .stdin(Stdio::null())
        .output()
        .expect("run manage")
}

#[test]
fn a_system_instance_keeps_its_files_in_systemds_directories_and_the_app_group_manages_it() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        crate::common::tools::skip(
            "needs root to run the repeater and manage as other users (setpriv)",
        );
        return;
    }
    let Some(_) = crate::common::require_tool("setpriv", "util-linux") else {
        return;
    };
    // The service user, its group, a member of it and someone else.
    let (service, group, member, stranger) = (64990, 64991, 64992, 64993);
    let sb = Sandbox::new();
    fs::set_permissions(
        sb.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod the sandbox");
    let state = sb.path().join("var/lib/app");
    let run = sb.path().join("sysrun/app");
    systemd_dir(&state, service, group, 0o750);
    systemd_dir(&run, service, group, 0o750);
    let mut cmd = sb.command("setpriv");
    cmd.args([
        format!("--reuid={service}"),
        format!("--regid={group}"),
        "--clear-groups".into(),
    ])
    .arg(plugin_bin("app-event-repeater"))
    .args(["run", "--name", "edge", "--sinkprotocol", "stderr"])
    .args([
        "--source",
        &sb.path().join("nothing.sock").to_string_lossy(),
    ])
    .env_remove("APP_DATA_DIR")
    .env_remove("APP_RUNTIME_DIR")
    .env("STATE_DIRECTORY", &state)
    .env("RUNTIME_DIRECTORY", &run)
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(append(&sb.path().join("edge.log")));
    let mut proc = Proc::spawn("app-event-repeater", &mut cmd);
    let socket = run.join("plugins/edge.sock");
    let up = crate::common::wait_for(Duration::from_secs(15), || healthz(&socket));
    let log = || fs::read_to_string(sb.path().join("edge.log")).unwrap_or_default();
    assert_eq!(up, Some(200), "no API on {}: {}", socket.display(), log());
    assert_eq!(mode(&run.join("plugins")), 0o750);
    assert_eq!(mode(&socket), 0o660);

    // A member of the group finds it by name and changes its routes...
    let out = manage_as(
        &sb,
        member,
        Some(group),
        &run,
        &["--name", "edge", "put", "timer/sec/1", "/t/1"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = manage_as(&sb, member, Some(group), &run, &["--name", "edge", "get"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("/t/1"),
        "{out:?}"
    );
    // ...which the repeater keeps in STATE_DIRECTORY (its checkpoint goes
    // beside them).
    let routes = state.join("event-repeater/edge.routes.json");
    let kept = fs::read_to_string(&routes).unwrap_or_default();
    assert!(kept.contains("/t/1"), "{}: {kept:?}", routes.display());
    // Someone outside the group cannot reach it.
    let out = manage_as(&sb, stranger, None, &run, &["--name", "edge", "get"]);
    assert!(
        !out.status.success(),
        "a stranger reached the repeater: {out:?}"
    );
    // ...and is told why: the socket, and the group to join (this one has
    // no name in /etc/group, so its number).
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{said}");
    assert!(
        said.contains(&format!(
            "socket {} is open only to the group {group}, which you are not in",
            socket.display()
        )) && said.contains(&format!("sudo usermod -aG {group} $USER")),
        "{said}"
    );
    proc.signal(libc::SIGTERM);
    assert_eq!(
        proc.wait_exit(Duration::from_secs(20))
            .and_then(|s| s.code()),
        Some(0),
        "{}",
        log()
    );
}
