//! The Debian package that `packaging/deb.sh` builds: what it holds, that
//! lintian finds no errors, that its units verify, that the unpacked tree
//! runs the tour (plugins from its libexec, man pages, bash completion), and
//! (in `packaging_cycle`) a real install / upgrade / remove / purge cycle in
//! a throwaway overlay of the root filesystem.
//!
//! The package needs a release build, so these tests do not make it: they
//! use the one named by `APP_TEST_DEB` (`.ci/run` builds it first and sets
//! it) and skip with one line when it is unset, except under
//! `APP_TEST_REQUIRE_ALL=1`, where that is a failure.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::common::process::Proc;
use crate::common::tools::{skip, REQUIRE_ALL};
use crate::common::{require_tool, wait_for, Sandbox};

/// The package under test, or `None` (after one line) when none was built.
pub fn package() -> Option<PathBuf> {
    match std::env::var_os("APP_TEST_DEB") {
        Some(p) if Path::new(&p).is_file() => Some(PathBuf::from(p)),
        Some(p) => panic!("APP_TEST_DEB={} is not a file", Path::new(&p).display()),
        None if std::env::var(REQUIRE_ALL).as_deref() == Ok("1") => {
            panic!("APP_TEST_DEB is unset but {REQUIRE_ALL}=1: build it with packaging/deb.sh and set APP_TEST_DEB to the path it prints")
        }
        None => {
            skip("no package: run packaging/deb.sh and set APP_TEST_DEB to the path it prints");
            None
        }
    }
}

pub fn run(cmd: &mut Command) -> Output {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run {cmd:?}: {e}"));
    out
}

pub fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `dpkg-deb -x DEB DIR`: the package's files under `DIR`.
pub fn unpack(deb: &Path, dir: &Path) {
    let out = run(Command::new("dpkg-deb").arg("-x").arg(deb).arg(dir));
    assert!(out.status.success(), "dpkg-deb -x: {}", text(&out));
}

/// What the package must hold for an operator (issue 22, point 2).
const EXPECTED: &[&str] = &[
    "./usr/bin/app",
    "./usr/libexec/app/app_fetch",
    "./usr/libexec/app/app-event-repeater",
    "./usr/libexec/app/app-event-repeater-manage",
    "./usr/libexec/app/app-event-time",
    "./usr/libexec/app/app-listener-tracer",
    "./usr/share/man/man1/app.1.gz",
    "./usr/share/man/man1/app-event-repeater.1.gz",
    "./usr/share/man/man1/app-event-repeater-run.1.gz",
    "./usr/share/man/man1/app-event-repeater-manage.1.gz",
    "./usr/share/man/man1/app-event-time.1.gz",
    "./usr/share/man/man1/app-plugin-install.1.gz",
    "./usr/share/bash-completion/completions/app",
    "./usr/share/zsh/vendor-completions/_app",
    "./usr/share/fish/vendor_completions.d/app.fish",
    "./usr/lib/systemd/system/app-event-repeater@.service",
    "./usr/lib/systemd/system/app-event-time.service",
    "./usr/lib/sysusers.d/app.conf",
    "./etc/app/event-repeater/example.env",
    "./usr/share/doc/app/copyright",
    "./usr/share/doc/app/changelog.gz",
    "./usr/share/doc/app/operations.md",
];

#[test]
fn the_package_holds_the_programs_man_pages_completions_units_and_docs() {
    let Some(deb) = package() else { return };
    let Some(_) = require_tool("dpkg-deb", "dpkg") else {
        return;
    };
    let out = run(Command::new("dpkg-deb").arg("-c").arg(&deb));
    assert!(out.status.success(), "{}", text(&out));
    let listing = String::from_utf8_lossy(&out.stdout);
    let files: Vec<&str> = listing
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .collect();
    for want in EXPECTED {
        assert!(
            files.contains(want),
            "{want} is not in the package:\n{listing}"
        );
    }
    // Programs are executable, the rest is not.
    for line in listing.lines() {
        let (mode, path) = (&line[..10], line.split_whitespace().nth(5).unwrap_or(""));
        let program = path.starts_with("./usr/bin/") || path.starts_with("./usr/libexec/app/");
        if mode.starts_with('-') {
            assert_eq!(mode == "-rwxr-xr-x", program, "{line}");
            assert!(line.contains("root/root"), "not owned by root: {line}");
        }
    }
    // Named app_<version>_<arch>.deb after its own control fields.
    let field = |f: &str| {
        let out = run(Command::new("dpkg-deb").arg("-f").arg(&deb).arg(f));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let name = format!("app_{}_{}.deb", field("Version"), field("Architecture"));
    assert_eq!(
        deb.file_name().and_then(|n| n.to_str()),
        Some(name.as_str())
    );
    assert_eq!(field("Version"), env!("CARGO_PKG_VERSION"));
    let depends = field("Depends");
    assert!(
        depends.contains("libc6") && depends.contains("adduser"),
        "{depends}"
    );
    // The example options file is a conffile: kept over upgrades.
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = run(Command::new("dpkg-deb").arg("-e").arg(&deb).arg(tmp.path()));
    assert!(out.status.success(), "{}", text(&out));
    let conffiles = fs::read_to_string(tmp.path().join("conffiles")).unwrap_or_default();
    assert_eq!(conffiles.trim(), "/etc/app/event-repeater/example.env");
}

/// `lintian DEB`: its exit code and the tag lines.
fn lintian(lintian: &Path, deb: &Path) -> (bool, String) {
    let out = run(Command::new(lintian)
        .args(["--tag-display-limit", "0", "--display-level", ">=warning"])
        .arg(deb));
    (out.status.success(), text(&out))
}

#[test]
fn lintian_finds_no_errors_in_the_package() {
    let Some(deb) = package() else { return };
    let Some(lintian_bin) = require_tool("lintian", "lintian") else {
        return;
    };
    // A positive control, checked at the same time: the package without its
    // copyright file, which lintian must call an error.
    let tmp = tempfile::tempdir().expect("temp dir");
    let tree = tmp.path().join("tree");
    let out = run(Command::new("dpkg-deb").arg("-R").arg(&deb).arg(&tree));
    assert!(out.status.success(), "{}", text(&out));
    fs::remove_file(tree.join("usr/share/doc/app/copyright")).expect("remove copyright");
    let broken = tmp.path().join("broken.deb");
    let out = run(Command::new("dpkg-deb")
        .args(["--root-owner-group", "-Zgzip", "-z1", "-b"])
        .arg(&tree)
        .arg(&broken));
    assert!(out.status.success(), "{}", text(&out));
    let control = {
        let (l, b) = (lintian_bin.clone(), broken.clone());
        std::thread::spawn(move || lintian(&l, &b))
    };
    let (ok, report) = lintian(&lintian_bin, &deb);
    eprintln!("lintian {}:\n{report}", deb.display());
    let errors: Vec<&str> = report.lines().filter(|l| l.starts_with("E:")).collect();
    assert!(errors.is_empty() && ok, "lintian errors:\n{report}");
    let (broken_ok, broken_report) = control.join().expect("lintian thread");
    assert!(
        !broken_ok && broken_report.contains("E: app: no-copyright-file"),
        "lintian did not see a missing copyright file:\n{broken_report}"
    );
}

/// A root to verify units in: the package's files plus the host's own
/// units (the targets the package's units are ordered against).
pub fn unit_root(deb: &Path, dir: &Path) {
    unpack(deb, dir);
    let units = dir.join("usr/lib/systemd/system");
    let out = run(Command::new("cp")
        .args(["-rn", "/usr/lib/systemd/system/."])
        .arg(&units));
    assert!(out.status.success(), "{}", text(&out));
}

fn verify(root: &Path, units: &[&str]) -> Output {
    run(Command::new("systemd-analyze")
        .arg("verify")
        .arg(format!("--root={}", root.display()))
        .args(units)
        // Documentation=man:… is checked against the package's own pages.
        .env("MANPATH", root.join("usr/share/man")))
}

#[test]
fn every_unit_passes_systemd_analyze_verify() {
    let Some(deb) = package() else { return };
    let Some(_) = require_tool("systemd-analyze", "systemd") else {
        return;
    };
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = tmp.path().join("root");
    unit_root(&deb, &root);
    let out = verify(
        &root,
        &["app-event-time.service", "app-event-repeater@edge1.service"],
    );
    assert!(
        out.status.success(),
        "systemd-analyze verify: {}",
        text(&out)
    );
    assert!(text(&out).trim().is_empty(), "{}", text(&out));
    // Positive control: the same check on a unit whose program is missing.
    let units = root.join("usr/lib/systemd/system");
    let unit = fs::read_to_string(units.join("app-event-time.service")).expect("read the unit");
    fs::write(
        units.join("app-broken.service"),
        unit.replace("/usr/bin/app ", "/usr/bin/app-missing "),
    )
    .expect("write a broken unit");
    let out = verify(&root, &["app-broken.service"]);
    assert!(
        !out.status.success(),
        "a missing program verified: {}",
        text(&out)
    );
    assert!(text(&out).contains("app-missing"), "{}", text(&out));
}

/// The unpacked tree as a user runs it: its `usr/bin` first on PATH.
fn tree_command(sb: &Sandbox, root: &Path, program: &str) -> Command {
    let mut cmd = sb.command(program);
    cmd.env(
        "PATH",
        format!("{}:{}", root.join("usr/bin").display(), sb.path_var()),
    );
    cmd
}

#[test]
fn the_unpacked_package_runs_the_tour_with_its_plugins_man_pages_and_completion() {
    let Some(deb) = package() else { return };
    if !crate::common::require_tools(&[("man", "man-db"), ("bash", "bash")]) {
        return;
    }
    let sb = Sandbox::new();
    let root = sb.path().join("root");
    unpack(&deb, &root);
    let app = root.join("usr/bin/app");

    // app finds its shipped plugins in ../libexec/app, and only there.
    let out = run(tree_command(&sb, &root, "app").args(["plugin", "list"]));
    let list = text(&out);
    assert!(out.status.success(), "{list}");
    let libexec = root.join("usr/libexec/app");
    for plugin in ["event-repeater", "event-time", "listener-tracer"] {
        let line = list
            .lines()
            .find(|l| l.starts_with(&format!("{plugin} ")))
            .unwrap_or_else(|| panic!("{plugin} not listed:\n{list}"));
        assert!(
            line.contains(&libexec.display().to_string()) && line.contains("shipped"),
            "{line}"
        );
    }

    // The tour: a source, a repeater relaying it, manage talking to it.
    let log = sb.path().join("repeater.log");
    let mut source = Proc::spawn(
        "app event-time",
        tree_command(&sb, &root, "app")
            .args(["event-time", "--name", "src"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let mut repeater = Proc::spawn(
        "app event-repeater",
        tree_command(&sb, &root, "app")
            .args([
                "event-repeater",
                "run",
                "--name",
                "edge1",
                "--source",
                "src",
            ])
            .args(["--sinkprotocol", "stderr"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(fs::File::create(&log).expect("create the log")),
    );
    let put = wait_for(Duration::from_secs(20), || {
        let out = run(tree_command(&sb, &root, "app").args([
            "event-repeater",
            "manage",
            "--name",
            "edge1",
            "put",
            "timer/msec/100",
            "tour/{topic}",
        ]));
        out.status.success().then_some(())
    });
    assert!(
        put.is_some(),
        "manage could not reach the repeater: {}",
        fs::read_to_string(&log).unwrap_or_default()
    );
    let relayed = wait_for(Duration::from_secs(20), || {
        let log = fs::read_to_string(&log).unwrap_or_default();
        log.contains("\"sink_topic\":\"tour/timer/msec/100\"")
            .then_some(())
    });
    assert!(
        relayed.is_some(),
        "no event relayed: {}",
        fs::read_to_string(&log).unwrap_or_default()
    );
    let out = run(tree_command(&sb, &root, "app").args([
        "event-repeater",
        "manage",
        "--name",
        "edge1",
        "status",
    ]));
    assert!(out.status.success(), "{}", text(&out));
    repeater.signal(libc::SIGTERM);
    source.signal(libc::SIGTERM);
    assert!(repeater.wait_exit(Duration::from_secs(20)).is_some());
    assert!(source.wait_exit(Duration::from_secs(20)).is_some());

    // Man pages render from the package, with the flags clap knows.
    let man = root.join("usr/share/man/man1");
    for (page, must) in [
        ("app.1.gz", "plugin"),
        ("app-event-repeater-run.1.gz", "drain-timeout"),
        ("app-event-repeater-manage.1.gz", "status"),
        ("app-event-time.1.gz", "rate"),
    ] {
        let out = run(sb
            .command("man")
            .arg("-l")
            .arg(man.join(page))
            .env("MANWIDTH", "100"));
        let rendered = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && rendered.contains("NAME"),
            "man -l {page}: {}",
            text(&out)
        );
        assert!(
            rendered.contains(must),
            "man -l {page} lacks {must}:\n{rendered}"
        );
    }

    // The bash completion loads and completes plugins from the package.
    let script = root.join("usr/share/bash-completion/completions/app");
    let program = format!(
        "source {}\ncomplete -p app\nCOMP_LINE='app event-'; COMP_POINT=${{#COMP_LINE}}\n\
         COMP_WORDS=(app event-); COMP_CWORD=1\n_app\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        shell_words::quote(&script.to_string_lossy())
    );
    let out = run(tree_command(&sb, &root, "bash").args(["--norc", "--noprofile", "-c", &program]));
    let offered = text(&out);
    assert!(
        out.status.success() && offered.contains("-F _app app"),
        "{offered}"
    );
    assert!(
        offered.lines().any(|l| l.starts_with("event-repeater")),
        "{offered}"
    );
    assert!(
        offered.lines().any(|l| l.starts_with("event-time")),
        "{offered}"
    );
    assert!(app.exists());
}
