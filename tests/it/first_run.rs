//! The first ten minutes of a new user: the README's commands, taken from
//! README.md itself and run as typed (in `sh`, on an empty home directory
//! where the tour says so), with what the README shows as their output
//! compared to what they print. Plus the small things a new user trips over:
//! the wording of `plugin new`, the source `plugin install ./app-foo` records.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::repeater::Repeater;
use common::{app_bin, Sandbox};

pub(crate) fn readme() -> String {
    fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("read README.md")
}

/// The text under the heading `title` (any level), up to the next heading
/// of the same or a higher level.
pub(crate) fn section(readme: &str, title: &str) -> String {
    let mut lines = readme.lines();
    let level = lines
        .by_ref()
        .find_map(|l| {
            let hashes = l.len() - l.trim_start_matches('#').len();
            (hashes > 0 && l[hashes..].trim() == title).then_some(hashes)
        })
        .unwrap_or_else(|| panic!("README.md has no heading {title:?}"));
    let mut out = String::new();
    let mut in_code = false;
    for line in lines {
        if line.starts_with("```") {
            in_code = !in_code;
        }
        let hashes = line.len() - line.trim_start_matches('#').len();
        if !in_code && hashes > 0 && hashes <= level && line[hashes..].starts_with(' ') {
            break;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The fenced blocks tagged `sh` in `text`.
pub(crate) fn sh_blocks(text: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match (&mut current, line) {
            (None, "```sh") => current = Some(String::new()),
            (Some(_), "```") => blocks.push(current.take().unwrap_or_default()),
            (Some(block), line) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

/// One `$ command` of a transcript and the output the README shows for it.
#[derive(Debug)]
pub(crate) struct Step {
    pub(crate) command: String,
    pub(crate) shown: Vec<String>,
}

/// Splits a `$ …` transcript into steps; a here-document belongs to its command.
pub(crate) fn transcript(block: &str) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    let mut heredoc_end: Option<String> = None;
    for line in block.lines() {
        if let Some(end) = &heredoc_end {
            let step = steps.last_mut().expect("a here-document after a command");
            step.command.push('\n');
            step.command.push_str(line);
            if line == end {
                heredoc_end = None;
            }
        } else if let Some(command) = line.strip_prefix("$ ") {
            heredoc_end = command.split_once("<<").map(|(_, rest)| {
                rest.trim()
                    .trim_matches(|c| c == '\'' || c == '"')
                    .to_string()
            });
            steps.push(Step {
                command: command.to_string(),
                shown: Vec::new(),
            });
        } else {
            let step = steps.last_mut().expect("output after a command");
            step.shown.push(line.to_string());
        }
    }
    steps
}

/// Runs the steps one after the other in one `sh` (so `export` and `cd`
/// carry over), each with stderr into stdout, and checks that each step
/// whose output the README shows prints exactly that.
pub(crate) fn run_transcript(steps: &[Step], mut sh: Command) {
    let mut script = String::new();
    for (i, step) in steps.iter().enumerate() {
        script.push_str(&format!(
            "printf '@@step {i}\\n'\n{{ {}\n}} 2>&1\n",
            step.command
        ));
    }
    let out = sh
        .arg("-c")
        .arg(&script)
        .stdin(Stdio::null())
        .output()
        .expect("run sh");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let printed = printed_by_step(&text, steps.len());
    let stderr = format!(" (stderr: {})", String::from_utf8_lossy(&out.stderr));
    for (step, printed) in steps.iter().zip(printed) {
        assert_printed_as_shown(step, printed, &stderr);
    }
}

/// The lines each of `n` steps printed, from output where each step's
/// begins with a line `@@step I`.
pub(crate) fn printed_by_step(text: &str, n: usize) -> Vec<Vec<String>> {
    let mut printed: Vec<Vec<String>> = vec![Vec::new(); n];
    let mut current = None;
    for line in text.lines() {
        if let Some(i) = line.strip_prefix("@@step ") {
            current = i.parse::<usize>().ok();
        } else if let Some(i) = current {
            printed[i].push(line.trim_end().to_string());
        }
    }
    printed
}

/// A step whose output the README shows printed exactly that, trailing
/// blank lines aside; `note` ends the failure message.
pub(crate) fn assert_printed_as_shown(step: &Step, mut printed: Vec<String>, note: &str) {
    if step.shown.is_empty() {
        return;
    }
    while printed.last().is_some_and(|l| l.is_empty()) {
        printed.pop();
    }
    let shown: Vec<String> = step
        .shown
        .iter()
        .map(|l| l.trim_end().to_string())
        .collect();
    assert_eq!(
        printed, shown,
        "`{}` printed something else than the README shows{note}",
        step.command
    );
}

/// A new account: an empty home, `app` on PATH (as `./install.sh` leaves
/// it), nothing else of app's or XDG's in the environment.
pub(crate) struct FreshAccount {
    dir: tempfile::TempDir,
}

impl FreshAccount {
    pub(crate) fn new() -> FreshAccount {
        let dir = tempfile::Builder::new()
            .prefix("app-fresh-home-")
            .tempdir()
            .expect("temp dir");
        fs::create_dir(dir.path().join("home")).unwrap();
        fs::create_dir(dir.path().join("installed")).unwrap();
        let run = dir.path().join("run");
        fs::create_dir(&run).unwrap();
        fs::set_permissions(&run, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
        std::os::unix::fs::symlink(app_bin(), dir.path().join("installed/app")).unwrap();
        FreshAccount { dir }
    }

    pub(crate) fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    pub(crate) fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .env("HOME", self.home())
            .env(
                "PATH",
                format!(
                    "{}:/usr/bin:/bin",
                    self.dir.path().join("installed").display()
                ),
            )
            .env("LANG", "C.UTF-8")
            // What a login session gives (/run/user/UID): sockets and pid
            // files of the plugins go there, not to a /tmp/app-UID that
            // other tests on the machine share.
            .env("XDG_RUNTIME_DIR", self.dir.path().join("run"))
            .current_dir(self.home());
        cmd
    }

    pub(crate) fn sh(&self) -> Command {
        self.command("sh")
    }
}

#[test]
fn the_tours_first_plugin_works_as_typed_on_a_fresh_account() {
    let account = FreshAccount::new();
    assert!(!account.home().join(".local").exists());
    let text = section(&readme(), "Plugins are just executables");
    let blocks = sh_blocks(&text);
    assert!(blocks.len() >= 2, "{text}");
    let mut steps = transcript(&blocks[0]);
    steps.extend(transcript(&blocks[1]));
    // The plugin's own output and "did you mean 'hello'?" are both shown.
    assert!(steps
        .iter()
        .any(|s| s.command.contains("hello world") && !s.shown.is_empty()));
    assert!(steps
        .iter()
        .any(|s| s.command == "app helo" && !s.shown.is_empty()));
    run_transcript(&steps, account.sh());
}

#[test]
fn the_completion_lines_work_on_a_fresh_home() {
    let account = FreshAccount::new();
    let text = section(&readme(), "Shell completion");
    let block = sh_blocks(&text).pop().expect("a sh block");
    let lines: Vec<&str> = block
        .lines()
        .filter(|l| l.contains("app completion"))
        .collect();
    assert_eq!(lines.len(), 3, "{block}");
    for line in &lines {
        let out = account.sh().arg("-c").arg(line).output().unwrap();
        assert!(
            out.status.success(),
            "`{line}` failed on a fresh home: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let fish_file = account.home().join(".config/fish/completions/app.fish");
    let script = account
        .command("app")
        .args(["completion", "fish"])
        .output()
        .unwrap()
        .stdout;
    assert_eq!(
        fs::read(&fish_file).expect("the fish line wrote the file"),
        script
    );
    for (rc, shell) in [(".bashrc", "bash"), (".zshrc", "zsh")] {
        let written = fs::read_to_string(account.home().join(rc)).unwrap();
        assert!(
            written.contains(&format!("source <(app completion {shell})")),
            "{written}"
        );
    }
    // zsh: the line alone, on a ~/.zshrc that never ran compinit, registers
    // the completion (it was "command not found: compdef").
    if common::require_tool("zsh", "zsh").is_some() {
        let out = account
            .command("zsh")
            .args([
                "-i",
                "-c",
                "print -r -- \"registered: ${_comps[app]-none}\"",
            ])
            .output()
            .unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(
            stdout.contains("registered: _app") && !stderr.contains("compdef"),
            "stdout: {stdout}\nstderr: {stderr}"
        );
    }
    // fish loads it from there by itself.
    if common::require_tool("fish", "fish").is_some() {
        let out = account
            .command("fish")
            .args(["-c", "complete -C 'app vers'"])
            .output()
            .unwrap();
        let offered = String::from_utf8_lossy(&out.stdout);
        assert!(
            offered.lines().any(|l| l.starts_with("version")),
            "{offered}"
        );
    }
}

#[test]
fn the_routes_file_example_applies_as_shown() {
    let sb = Sandbox::new();
    // `app` on the sandbox's PATH, as installed.
    std::os::unix::fs::symlink(app_bin(), sb.bin_dir().join("app")).unwrap();
    let _repeater = Repeater::builder(&sb, "event-repeater")
        .through_app()
        .sinkprotocol("stderr")
        .no_source()
        .start();
    let readme = readme();
    let text = section(&readme, "Relay events into MQTT: `app event-repeater`");
    // The routes posted earlier in the tour: `manage post --value '[…,\n …]'`.
    let tour = sh_blocks(&text).remove(0);
    let start = tour
        .find("app event-repeater manage post")
        .expect("the tour posts routes");
    let post_end = tour[start..].find("]'").expect("the end of --value") + start + 2;
    let post = &tour[start..post_end];
    let out = sb.command("sh").arg("-c").arg(post).output().unwrap();
    assert!(
        out.status.success(),
        "{post}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The transcript: it writes the file (`cat > routes.json <<'EOF'`), then applies it.
    let blocks = sh_blocks(&text);
    let apply = blocks
        .iter()
        .find(|b| b.contains("apply -f routes.json"))
        .expect("the apply example");
    let steps = transcript(apply);
    assert!(steps
        .iter()
        .any(|s| s.command.starts_with("cat > routes.json <<'EOF'\n[")));
    assert!(steps.iter().filter(|s| !s.shown.is_empty()).count() >= 3);
    run_transcript(&steps, sb.command("sh"));
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

#[test]
fn plugin_new_names_the_language_as_users_write_it() {
    let sb = Sandbox::new();
    for (lang, name, said) in [
        (
            "sh",
            "shdemo",
            "created a shell (sh) plugin skeleton for 'app shdemo'",
        ),
        (
            "python",
            "pydemo",
            "created a Python plugin skeleton for 'app pydemo'",
        ),
    ] {
        let out = sb
            .app()
            .args(["plugin", "new", name, "--lang", lang])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        assert!(text(&out).starts_with(said), "{}", text(&out));
    }
}

#[test]
fn a_plugin_installed_from_a_relative_path_records_a_clean_absolute_source() {
    let sb = Sandbox::new();
    let src = sb.path().join("src");
    fs::create_dir_all(src.join("sub")).unwrap();
    common::write_executable(&src.join("app-rel"), "#!/bin/sh\necho rel\n");
    let out = sb
        .app()
        .args(["plugin", "install", "./sub/../app-rel"])
        .current_dir(&src)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let clean = fs::canonicalize(&src).unwrap().join("app-rel");
    let index = fs::read_to_string(sb.data_dir().join("plugins/.receipts.json")).unwrap();
    let index: serde_json::Value = serde_json::from_str(&index).unwrap();
    let recorded = index.to_string();
    assert!(
        recorded.contains(&format!("\"{}\"", clean.display())),
        "{recorded}"
    );
    let list = sb.app().args(["plugin", "list"]).output().unwrap();
    let listed = text(&list);
    assert!(listed.contains(&clean.display().to_string()), "{listed}");
    assert!(
        !listed.contains("/./") && !listed.contains("/../"),
        "{listed}"
    );
    // And upgrade finds it there again.
    let up = sb
        .app()
        .args(["plugin", "upgrade", "rel"])
        .output()
        .unwrap();
    assert!(up.status.success(), "{}", text(&up));
}
