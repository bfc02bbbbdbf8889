//! Tools a test drives that a developer's machine may lack (shells, tmux,
//! mosquitto, nats-server, python3, nm, …).
//!
//! `cargo test --workspace` must pass on a machine with only Rust and a C
//! compiler, so a test that needs such a tool asks [`require_tool`] first and
//! returns when it answers `None`: one line on the terminal names the test,
//! the tool and the Debian package to install. With `APP_TEST_REQUIRE_ALL=1`
//! (as `.ci/run` sets it) a missing tool fails the test instead, so CI never
//! skips silently.
//!
//! ```ignore
//! let Some(fish) = common::require_tool("fish", "fish") else { return };
//! ```

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The variable that turns every skip into a failure.
pub const REQUIRE_ALL: &str = "APP_TEST_REQUIRE_ALL";

/// Where `program` is: an absolute path as it is, otherwise the first
/// executable file of that name on PATH or in the sbin directories Debian
/// puts daemons in (mosquitto is `/usr/sbin/mosquitto`).
pub fn find_program(program: &str) -> Option<PathBuf> {
    let executable = |p: &Path| {
        p.metadata()
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    if program.contains('/') {
        let p = Path::new(program);
        // A data file (bash-completion's loader) only has to be a file.
        return p.is_file().then(|| p.to_path_buf());
    }
    let path = std::env::var("PATH").unwrap_or_default();
    let found = path
        .split(':')
        .filter(|d| !d.is_empty())
        .chain(["/usr/sbin", "/usr/local/sbin", "/sbin"])
        .map(|d| Path::new(d).join(program))
        .find(|p| executable(p));
    found
}

/// `Some(path)` when `program` (a name, or an absolute path for a file a
/// package installs) is there. Otherwise prints one line naming the Debian
/// `package` and returns `None`, so the test returns; panics instead under
/// `APP_TEST_REQUIRE_ALL=1`.
pub fn require_tool(program: &str, package: &str) -> Option<PathBuf> {
    if let Some(p) = find_program(program) {
        return Some(p);
    }
    if std::env::var(REQUIRE_ALL).as_deref() == Ok("1") {
        panic!("{program} is not installed but {REQUIRE_ALL}=1: apt-get install {package}");
    }
    skip(&format!(
        "{program} is not installed (apt-get install {package})"
    ));
    None
}

/// [`require_tool`] for several tools at once: `true` when all are there,
/// otherwise one line for the first one missing.
pub fn require_tools(tools: &[(&str, &str)]) -> bool {
    tools
        .iter()
        .all(|(program, package)| require_tool(program, package).is_some())
}

/// Prints `skipping <test>: <why>` where the user sees it. libtest captures
/// `println!`/`eprintln!` of passing tests; a direct write to stderr is not
/// captured, so the line shows in `cargo test` output.
pub fn skip(why: &str) {
    let thread = std::thread::current();
    let line = match thread.name() {
        Some(name) if name != "main" => format!("skipping {name}: {why}\n"),
        _ => format!("skipping: {why}\n"),
    };
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// Makes the network namespace `name` with `ip netns add` and returns the
/// path of `ip`; `None` (after one line saying why) where namespaces cannot
/// be made, unless `APP_TEST_REQUIRE_NETNS=1`, which makes that a failure.
pub fn netns_add(name: &str) -> Option<std::path::PathBuf> {
    let why = match find_program("ip") {
        None => "ip is not installed (apt-get install iproute2)".to_string(),
        Some(ip) => match std::process::Command::new(&ip)
            .args(["netns", "add", name])
            .stderr(std::process::Stdio::piped())
            .output()
        {
            Ok(out) if out.status.success() => return Some(ip),
            Ok(out) => format!(
                "cannot make a network namespace (needs root): {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ),
            Err(e) => format!("cannot run ip: {e}"),
        },
    };
    if std::env::var("APP_TEST_REQUIRE_NETNS").as_deref() == Ok("1") {
        panic!("APP_TEST_REQUIRE_NETNS=1 but {why}");
    }
    skip(&why);
    None
}
