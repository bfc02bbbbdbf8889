//! A Debian system booted under systemd for one test, by
//! `packaging/systemd-guest.sh`: the root made once per target directory,
//! a fresh overlay over it per guest, gone with the [`Guest`] (machine,
//! processes, cgroups, the overlay's mount and layer) even when a check
//! panics.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::common::process::Proc;
use crate::common::tools::{skip, REQUIRE_ALL};
use crate::common::{require_tools, wait_for};

/// The script that makes, boots, enters and removes guests.
fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging/systemd-guest.sh")
}

/// The target directory the binaries were built in (`…/debug/app`'s
/// grandparent), where the script keeps the root.
fn target_dir() -> PathBuf {
    let app = crate::common::app_bin();
    app.parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("target"))
}

fn script_command() -> Command {
    let mut cmd = Command::new(script());
    cmd.env("CARGO_TARGET_DIR", target_dir())
        .stdin(Stdio::null());
    cmd
}

/// A skip, or under `APP_TEST_REQUIRE_ALL=1` a failure, saying `why`.
fn cannot(why: &str) {
    if std::env::var(REQUIRE_ALL).as_deref() == Ok("1") {
        panic!("{why}, but {REQUIRE_ALL}=1");
    }
    skip(why);
}

/// The root (made on the first call of the run, which every later call
/// waits for), or why there is none.
fn root() -> Result<PathBuf, String> {
    static ROOT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    ROOT.get_or_init(|| {
        let t = Instant::now();
        let out = script_command()
            .arg("root")
            .output()
            .map_err(|e| format!("cannot run {}: {e}", script().display()))?;
        let said = String::from_utf8_lossy(&out.stderr).trim().to_string();
        match out.status.code() {
            Some(0) => {
                let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
                eprintln!(
                    "guest root {path} ready in {:.1} s {said}",
                    t.elapsed().as_secs_f64()
                );
                Ok(PathBuf::from(path))
            }
            Some(3) => Err(format!(
                "no Debian archive reachable to make the guest's root: {said}"
            )),
            _ => panic!("packaging/systemd-guest.sh root failed: {said}"),
        }
    })
    .clone()
}

/// A booted guest.
pub struct Guest {
    dir: tempfile::TempDir,
    nspawn: Option<Proc>,
}

impl Guest {
    /// Boots a fresh guest and waits until its systemd is up; `None` (after
    /// one line naming what is missing) where that cannot be done.
    pub fn boot() -> Option<Guest> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            cannot("needs root to boot a guest system (systemd-nspawn, debootstrap)");
            return None;
        }
        if !require_tools(&[
            ("systemd-nspawn", "systemd-container"),
            ("debootstrap", "debootstrap"),
            ("nsenter", "util-linux"),
            ("unshare", "util-linux"),
            ("curl", "curl"),
        ]) {
            return None;
        }
        if let Err(why) = root() {
            cannot(&why);
            return None;
        }
        let runs = target_dir().join("systemd-guest/runs");
        std::fs::create_dir_all(&runs).expect("create the guests' directory");
        let dir = tempfile::Builder::new()
            .prefix("g")
            .tempdir_in(&runs)
            .expect("create the guest's directory");
        let t = Instant::now();
        let mut cmd = script_command();
        // Gone with this process even if it dies before the Drop runs.
        cmd.arg("boot")
            .arg(dir.path())
            .env("APP_GUEST_OWNER", std::process::id().to_string())
            .stdout(Stdio::null());
        let mut guest = Guest {
            nspawn: Some(Proc::spawn("systemd-nspawn", &mut cmd)),
            dir,
        };
        // `running`, or `degraded` when a unit of the minimal system fails
        // (which the state's own output shows if the test then fails).
        let state = wait_for(Duration::from_secs(60), || {
            if !guest.nspawn.as_mut().is_some_and(Proc::alive) {
                return Some(String::new());
            }
            let out = guest.try_run(&["systemctl", "is-system-running", "--wait"], 30);
            let state = String::from_utf8_lossy(&out.stdout).trim().to_string();
            (state == "running" || state == "degraded").then_some(state)
        });
        let console = guest.console();
        match state.as_deref() {
            Some("running") => {}
            Some("degraded") => eprintln!(
                "guest degraded: {}",
                guest.sh("systemctl --failed --no-legend")
            ),
            _ => panic!("the guest did not boot within 60 s:\n{console}"),
        }
        eprintln!("guest booted in {:.2} s", t.elapsed().as_secs_f64());
        Some(guest)
    }

    /// What nspawn and the guest's console printed.
    pub fn console(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("console.log")).unwrap_or_default()
    }

    /// `ARGS` in the guest, bounded by `timeout_s` (coreutils' `timeout`
    /// in the guest, then SIGKILL).
    fn try_run(&self, args: &[&str], timeout_s: u32) -> Output {
        script_command()
            .arg("run")
            .arg(self.dir.path())
            .args(["timeout", "-k", "2", &timeout_s.to_string()])
            .args(args)
            .output()
            .expect("run packaging/systemd-guest.sh run")
    }

    /// `sh -c SCRIPT` in the guest (60 s at most): its exit code and
    /// stdout + stderr.
    pub fn sh_status(&self, script: &str) -> (Option<i32>, String) {
        let out = self.try_run(&["sh", "-c", script], 60);
        (out.status.code(), text(&out))
    }

    /// `sh -c SCRIPT` in the guest, which must succeed: its stdout + stderr.
    pub fn sh(&self, script: &str) -> String {
        let (code, said) = self.sh_status(script);
        assert_eq!(code, Some(0), "in the guest: {script}\n{said}");
        said
    }

    /// Copies `file` into the guest as `to`.
    pub fn copy_in(&self, file: &Path, to: &str) {
        let out = script_command()
            .arg("run")
            .arg(self.dir.path())
            .args(["sh", "-c", "cat > \"$1\"", "copy", to])
            .stdin(std::fs::File::open(file).expect("open the file to copy"))
            .output()
            .expect("run packaging/systemd-guest.sh run");
        assert!(
            out.status.success(),
            "copy {}: {}",
            file.display(),
            text(&out)
        );
    }

    /// Waits up to `timeout` for `check` (a shell script in the guest) to
    /// succeed; its output, or `None`.
    #[must_use]
    pub fn wait(&self, timeout: Duration, check: &str) -> Option<String> {
        wait_for(timeout, || {
            let (code, said) = self.sh_status(check);
            if code == Some(0) {
                return Some(said);
            }
            std::thread::sleep(Duration::from_millis(200));
            None
        })
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

impl Drop for Guest {
    fn drop(&mut self) {
        let t = Instant::now();
        let out = script_command().arg("down").arg(self.dir.path()).output();
        if let Some(mut nspawn) = self.nspawn.take() {
            if nspawn.wait_exit(Duration::from_secs(5)).is_none() {
                nspawn.kill9();
            }
        }
        match out {
            Ok(out) if out.status.success() => {}
            Ok(out) => eprintln!("systemd-guest.sh down: {}", text(&out)),
            Err(e) => eprintln!("cannot run systemd-guest.sh down: {e}"),
        }
        // The overlay's mount lived in nspawn's private mount namespace and
        // went with it; the layer it wrote is removed with the directory.
        eprintln!("guest removed in {:.2} s", t.elapsed().as_secs_f64());
    }
}
