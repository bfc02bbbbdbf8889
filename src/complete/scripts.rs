//! The completion scripts `app completion <shell>` prints. They are thin: all
//! the knowledge is in `app __complete`. The source of truth is `completions/`
//! (where packagers take them from); a test checks that what `app` prints is
//! exactly those files.

use crate::cli::Shell;

/// bash: `source <(app completion bash)`.
pub const BASH: &str = include_str!("../../completions/app.bash");
/// zsh: `source <(app completion zsh)` (it runs `compinit` if no one has), or `_app` on `$fpath`.
pub const ZSH: &str = include_str!("../../completions/_app");
/// fish: `app completion fish | source`.
pub const FISH: &str = include_str!("../../completions/app.fish");

/// The script for `shell`.
pub fn script(shell: Shell) -> &'static str {
    match shell {
        Shell::Bash => BASH,
        Shell::Zsh => ZSH,
        Shell::Fish => FISH,
    }
}

/// The file name the script has in `completions/` (and where shells look for it).
pub fn file_name(shell: Shell) -> &'static str {
    match shell {
        Shell::Bash => "app.bash",
        Shell::Zsh => "_app",
        Shell::Fish => "app.fish",
    }
}
