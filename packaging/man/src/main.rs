//! `mangen DIR`: writes the man pages of `app` and of each shipped plugin
//! command into `DIR` (section 1, uncompressed), from the same clap
//! definitions that make their `--help`, so the pages cannot drift from the
//! flags. One page per command and per visible subcommand, named as git
//! names its pages: `app.1`, `app-plugin-install.1`, `app-event-repeater.1`,
//! `app-event-repeater-run.1`, `app-event-repeater-manage.1`, … It prints
//! the name of each file it wrote.
//!
//! A separate program, run by `packaging/deb.sh`, so that clap_mangen is
//! not in the `app` binary.

use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(dir) = std::env::args_os().nth(1) else {
        eprintln!("usage: mangen DIR (writes the man pages of app and its plugins into DIR)");
        return ExitCode::from(2);
    };
    let dir = Path::new(&dir);
    if let Err(e) = std::fs::create_dir_all(dir) {
        eprintln!("mangen: cannot create {}: {e}", dir.display());
        return ExitCode::FAILURE;
    }
    let commands = [
        ("app", app::cli::command()),
        ("app-event-repeater", app_event_repeater::cli::command()),
        (
            "app-event-repeater-manage",
            app_event_repeater_manage::cli::command(),
        ),
        ("app-event-time", app_event_time::cli::command()),
    ];
    for (page, cmd) in commands {
        if let Err(e) = write_pages(dir, page, cmd) {
            eprintln!("mangen: {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

/// Writes `DIR/PAGE.1` for `cmd`, then one page per visible subcommand,
/// `PAGE-SUB.1`, recursively.
fn write_pages(dir: &Path, page: &str, cmd: clap::Command) -> Result<(), String> {
    // clap takes a 'static name without its `string` feature, which would
    // reach the `app` binary through feature unification; a few short
    // names leaked once in a one-shot tool cost nothing.
    let name: &'static str = Box::leak(page.to_string().into_boxed_str());
    let cmd = cmd.name(name);
    let mut text = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .render(&mut text)
        .map_err(|e| format!("cannot render {page}.1: {e}"))?;
    let file = dir.join(format!("{page}.1"));
    std::fs::write(&file, text).map_err(|e| format!("cannot write {}: {e}", file.display()))?;
    println!("{}", file.display());
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("{page}-{}", sub.get_name());
        write_pages(dir, &name, sub.clone())?;
    }
    Ok(())
}
