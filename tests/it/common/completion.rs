//! Driving real shells with app's completion scripts loaded, and reading what
//! TAB offers. One call per question, so a test against any plugin is one line:
//!
//! ```ignore
//! let sb = Sandbox::new();
//! common::completion::assert_offers(&sb, Shell::Bash, "app event-repeater ", &["run", "manage"]);
//! ```
//!
//! Non-interactive entry points ([`Shell`]): bash calling the completion
//! function with `COMP_WORDS` set (plain, or with the bash-completion package
//! loaded), fish's own `complete -C`. Interactive ones ([`Tmux`]): bash or
//! zsh in a tmux pane, typing the line and pressing TAB. Every wait is bounded.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use super::{app_bin, wait_for, Sandbox};

/// The bash-completion package's loader, when installed.
pub const BASH_COMPLETION: &str = "/usr/share/bash-completion/bash_completion";

/// The committed completion scripts.
pub fn script_path(file_name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("completions")
        .join(file_name)
}

/// A non-interactive way to ask a shell what TAB offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shell {
    /// `bash --norc`: the script sourced, `_app` called with `COMP_WORDS` set.
    Bash,
    /// The same with the bash-completion package loaded first.
    BashWithBashCompletion,
    /// `fish --no-config`: the script sourced, then `complete -C`.
    Fish,
}

impl Shell {
    /// Whether this machine has what the shell needs; when not, prints the
    /// skip line (see `tests/it/common/tools.rs`) and the test should return.
    pub fn available(self) -> bool {
        match self {
            Shell::Bash => super::require_tools(&[("bash", "bash")]),
            Shell::BashWithBashCompletion => {
                super::require_tools(&[("bash", "bash"), (BASH_COMPLETION, "bash-completion")])
            }
            Shell::Fish => super::require_tools(&[("fish", "fish")]),
        }
    }
}

/// The shells' view of one sandbox: its environment plus extra variables.
pub struct Completer<'a> {
    sb: &'a Sandbox,
    env: Vec<(OsString, OsString)>,
}

impl<'a> Completer<'a> {
    /// Puts `app` (a link to the binary under test) first on the sandbox PATH.
    pub fn new(sb: &'a Sandbox) -> Completer<'a> {
        let link = sb.bin_dir().join("app");
        if !link.exists() {
            std::os::unix::fs::symlink(app_bin(), &link).expect("link app into the sandbox");
        }
        Completer {
            sb,
            env: Vec::new(),
        }
    }

    /// Adds an environment variable for the shells (and so for `app`).
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.env
            .push((key.as_ref().to_os_string(), value.as_ref().to_os_string()));
        self
    }

    /// A command in the sandbox with the extra variables, bounded by `timeout(1)`.
    pub fn command(&self, program: &str, limit: Duration) -> Command {
        let mut cmd = self.sb.command("timeout");
        cmd.arg("-s")
            .arg("KILL")
            .arg(limit.as_secs().to_string())
            .arg(program);
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd
    }

    /// What TAB offers for `line` (the cursor at its end), candidates only.
    pub fn offers(&self, shell: Shell, line: &str) -> Vec<String> {
        let out = match shell {
            Shell::Bash | Shell::BashWithBashCompletion => {
                let mut words: Vec<&str> = line.split_whitespace().collect();
                if line.ends_with(' ') || words.is_empty() {
                    words.push("");
                }
                let load = if shell == Shell::BashWithBashCompletion {
                    format!("source {}\n", shell_words::quote(BASH_COMPLETION))
                } else {
                    String::new()
                };
                let program = format!(
                    "{load}source {script}\n\
                     COMP_LINE={line}; COMP_POINT=${{#COMP_LINE}}\n\
                     COMP_WORDS=({words}); COMP_CWORD={cword}\n\
                     _app\n\
                     printf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
                    script = shell_words::quote(&script_path("app.bash").to_string_lossy()),
                    line = shell_words::quote(line),
                    words = shell_words::join(&words),
                    cword = words.len() - 1,
                );
                self.run("bash", &["--norc", "--noprofile", "-c", &program])
            }
            Shell::Fish => {
                let program = format!(
                    "source {}; complete -C {}",
                    shell_words::quote(&script_path("app.fish").to_string_lossy()),
                    shell_words::quote(line)
                );
                self.run("fish", &["--no-config", "-c", &program])
            }
        };
        let text = String::from_utf8_lossy(&out.stdout);
        text.lines()
            .filter(|l| !l.is_empty())
            .map(|l| l.split('\t').next().unwrap_or(l).to_string())
            .collect()
    }

    fn run(&self, shell: &str, args: &[&str]) -> Output {
        assert_installed(shell);
        let out = self
            .command(shell, Duration::from_secs(20))
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("run {shell}: {e}"));
        assert!(
            out.status.success(),
            "{shell} failed: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// `app __complete <words…>` as the scripts call it.
    pub fn protocol(&self, words: &[&str]) -> String {
        let out = self
            .command(&app_bin().to_string_lossy(), Duration::from_secs(20))
            .arg("__complete")
            .args(words)
            .output()
            .expect("run app __complete");
        assert!(out.status.success(), "app __complete failed: {out:?}");
        String::from_utf8(out.stdout).expect("utf-8 answer")
    }

    /// An interactive shell in tmux with the completion script loaded.
    pub fn tmux(&self, shell: Interactive) -> Tmux {
        Tmux::start(self, shell)
    }
}

/// Asserts that TAB after `line` offers at least `expected`.
pub fn assert_offers(sb: &Sandbox, shell: Shell, line: &str, expected: &[&str]) {
    let offered = Completer::new(sb).offers(shell, line);
    for e in expected {
        assert!(
            offered.iter().any(|o| o == e),
            "{shell:?}: `{line}<TAB>` should offer {e:?}; it offered {offered:?}"
        );
    }
}

/// Guards against a test that forgot to ask `available()` first.
fn assert_installed(program: &str) {
    assert!(
        super::tools::find_program(program).is_some(),
        "{program} is not installed: the test must check `available()` first and return"
    );
}

/// A shell to drive interactively.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interactive {
    /// Plain bash (`--norc`), script sourced.
    Bash,
    /// bash with the bash-completion package loaded first.
    BashWithBashCompletion,
    /// zsh (`-f`), `compinit`, script sourced.
    Zsh,
}

impl Interactive {
    /// Whether this machine has tmux and the shell; when not, prints the
    /// skip line and the test should return.
    pub fn available(self) -> bool {
        let mut tools = vec![("tmux", "tmux")];
        match self {
            Interactive::Bash => tools.push(("bash", "bash")),
            Interactive::BashWithBashCompletion => {
                tools.extend([("bash", "bash"), (BASH_COMPLETION, "bash-completion")])
            }
            Interactive::Zsh => tools.push(("zsh", "zsh")),
        }
        super::require_tools(&tools)
    }
}

/// A shell in a private tmux server; killed on drop.
pub struct Tmux {
    socket: PathBuf,
    base: Command,
}

impl Tmux {
    fn start(completer: &Completer, shell: Interactive) -> Tmux {
        assert_installed("tmux");
        let (program, setup): (&str, Vec<String>) = match shell {
            Interactive::Bash | Interactive::BashWithBashCompletion => {
                let mut setup = Vec::new();
                if shell == Interactive::BashWithBashCompletion {
                    setup.push(format!("source {BASH_COMPLETION}"));
                }
                setup.push(format!("source {}", script_path("app.bash").display()));
                setup.extend(
                    [
                        "bind 'set show-all-if-ambiguous on'",
                        "bind 'set completion-query-items 0'",
                        "bind 'set page-completions off'",
                        "bind 'set bell-style none'",
                    ]
                    .map(String::from),
                );
                ("bash --norc --noprofile -i", setup)
            }
            Interactive::Zsh => {
                assert_installed("zsh");
                (
                    "zsh -f -i",
                    vec![
                        "autoload -Uz compinit && compinit -u -D".to_string(),
                        format!("source {}", script_path("_app").display()),
                        "unsetopt beep".to_string(),
                        "LISTMAX=1000".to_string(),
                    ],
                )
            }
        };
        let socket = completer.sb.path().join(format!("tmux-{shell:?}.sock"));
        let mut base = completer.command("tmux", Duration::from_secs(10));
        base.arg("-S").arg(&socket).arg("-f").arg("/dev/null");
        let tmux = Tmux { socket, base };
        tmux.tmux(&["new-session", "-d", "-x", "200", "-y", "60", program]);
        // A fixed prompt, then the setup, each line typed as a user would.
        tmux.type_line("PS1='$ '; PROMPT='$ '");
        for line in &setup {
            tmux.type_line(line);
        }
        tmux.type_line("clear");
        tmux.wait_screen("the shell's prompt", |s| s.trim() == "$");
        tmux
    }

    fn tmux(&self, args: &[&str]) -> String {
        let mut cmd = Command::new(self.base.get_program());
        cmd.args(self.base.get_args()).args(args);
        for (k, v) in self.base.get_envs() {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        if let Some(dir) = self.base.get_current_dir() {
            cmd.current_dir(dir);
        }
        let out = cmd.output().expect("run tmux");
        assert!(out.status.success(), "tmux {args:?} failed: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Types `line` and presses Enter.
    pub fn type_line(&self, line: &str) {
        self.tmux(&["send-keys", "-l", line]);
        self.tmux(&["send-keys", "Enter"]);
    }

    /// Presses `key` (tmux's names: `q`, `C-c`, `Escape`).
    pub fn key(&self, key: &str) {
        self.tmux(&["send-keys", key]);
    }

    /// One of tmux's formats for the pane, such as `#{alternate_on}`.
    pub fn pane(&self, format: &str) -> String {
        self.tmux(&["display-message", "-p", format])
            .trim_end()
            .to_string()
    }

    /// The visible pane.
    pub fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p"])
    }

    /// Waits (at most 10 s) until `check` holds for the screen; returns the screen.
    pub fn wait_screen(&self, what: &str, check: impl Fn(&str) -> bool) -> String {
        wait_for(Duration::from_secs(10), || {
            let s = self.screen();
            check(&s).then_some(s)
        })
        .unwrap_or_else(|| panic!("waiting for {what}; the screen is:\n{}", self.screen()))
    }

    /// Types `line` on an empty prompt, presses TAB, and returns the screen
    /// once every word of `expected` appears on it as a word of its own.
    pub fn tab(&self, line: &str, expected: &[&str]) -> String {
        self.tmux(&["send-keys", "C-u", "C-l"]);
        self.wait_screen("an empty prompt", |s| s.trim() == "$");
        self.tmux(&["send-keys", "-l", line]);
        self.tmux(&["send-keys", "Tab"]);
        self.wait_screen(&format!("`{line}<TAB>` to offer {expected:?}"), |s| {
            let words: Vec<&str> = s.split_whitespace().collect();
            expected.iter().all(|e| words.contains(e))
        })
    }

    /// Like [`Tmux::tab`], for a single completion: waits until the command
    /// line reads `completed` (the prompt's line, trailing blanks ignored).
    pub fn tab_completes(&self, line: &str, completed: &str) -> String {
        self.tmux(&["send-keys", "C-u", "C-l"]);
        self.wait_screen("an empty prompt", |s| s.trim() == "$");
        self.tmux(&["send-keys", "-l", line]);
        self.tmux(&["send-keys", "Tab"]);
        let want = format!("$ {}", completed.trim_end());
        self.wait_screen(&format!("`{line}<TAB>` to become `{completed}`"), |s| {
            s.lines().any(|l| l.trim_end() == want)
        })
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}
