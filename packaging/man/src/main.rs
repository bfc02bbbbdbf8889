//! `mangen DIR`: writes the man pages of `app` and of each shipped plugin
//! into `DIR` (uncompressed): one page per command and per visible
//! subcommand, named as git names its pages (`app.1`,
//! `app-plugin-install.1`, `app-event-repeater-run.1`,
//! `app-event-repeater-manage.1`, …), from the same clap definitions that
//! make their `--help`, so the options cannot drift from the flags; plus
//! `app-listener-tracer.1` and `app-event-repeater@.service.8`, the units.
//! Each page has EXIT STATUS and SEE ALSO, and refers only to pages
//! written here or to systemd's. It prints the name of each file it wrote.
//!
//! A separate program, run by `packaging/deb.sh`, so that clap_mangen is
//! not in the `app` binary.

mod extra;
mod render;
mod tracer;
mod units;

use std::path::Path;
use std::process::ExitCode;

use render::Page;

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
    match write_all(dir) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mangen: {e}");
            ExitCode::FAILURE
        }
    }
}

fn write_all(dir: &Path) -> Result<(), String> {
    // (page, as typed, command, parent page)
    let roots = [
        ("app", "app", app::cli::command(), None),
        (
            "app-event-repeater",
            "app event-repeater",
            app_event_repeater::cli::command(),
            Some("app"),
        ),
        (
            "app-event-repeater-manage",
            "app event-repeater manage",
            app_event_repeater_manage::cli::command(),
            Some("app-event-repeater"),
        ),
        (
            "app-event-time",
            "app event-time",
            app_event_time::cli::command(),
            Some("app"),
        ),
        (
            "app-listener-tracer",
            "app-listener-tracer",
            tracer::command(),
            Some("app"),
        ),
    ];
    let mut pages = Vec::new();
    for (file, spelled, cmd, parent) in roots {
        collect(&mut pages, file, spelled, cmd, parent, &[]);
    }
    for page in &pages {
        let text = render::render(page, &extra::extra(&page.file))?;
        write(dir, &format!("{}.1", page.file), &text)?;
    }
    write(
        dir,
        units::FILE,
        units::page(env!("CARGO_PKG_VERSION")).as_bytes(),
    )
}

fn write(dir: &Path, name: &str, text: &[u8]) -> Result<(), String> {
    let file = dir.join(name);
    std::fs::write(&file, text).map_err(|e| format!("cannot write {}: {e}", file.display()))?;
    println!("{}", file.display());
    Ok(())
}

/// Adds the page of `cmd` and, recursively, of its visible subcommands;
/// `inherited` are the parent's exit codes, for a subcommand whose help
/// gives none of its own.
fn collect(
    pages: &mut Vec<Page>,
    file: &str,
    spelled: &str,
    cmd: clap::Command,
    parent: Option<&str>,
    inherited: &[String],
) {
    // clap takes a 'static name without its `string` feature, which would
    // reach the `app` binary through feature unification; a few short
    // names leaked once in a one-shot tool cost nothing.
    let name: &'static str = Box::leak(file.to_string().into_boxed_str());
    let cmd = cmd
        .name(name)
        .bin_name(spelled.to_string())
        .disable_help_subcommand(true);
    let extra = extra::extra(file);
    let (_, own_exit) = render::after_help(&cmd);
    let exit = if !own_exit.is_empty() {
        own_exit
    } else if !extra.exit.is_empty() {
        extra.exit.iter().map(|s| s.to_string()).collect()
    } else {
        inherited.to_vec()
    };
    let subs: Vec<clap::Command> = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .cloned()
        .collect();
    let mut commands: Vec<(String, String, String)> = subs
        .iter()
        .map(|s| {
            let about = s.get_about().map(|a| a.to_string()).unwrap_or_default();
            (
                s.get_name().to_string(),
                format!("{file}-{}", s.get_name()),
                about,
            )
        })
        .collect();
    commands.extend(
        extra
            .commands
            .iter()
            .map(|(n, p, a)| (n.to_string(), p.to_string(), a.to_string())),
    );
    let mut see_also: Vec<String> = parent.map(|p| format!("{p}(1)")).into_iter().collect();
    see_also.extend(commands.iter().map(|(_, p, _)| format!("{p}(1)")));
    for s in extra.see_also {
        if !see_also.iter().any(|x| x == s) {
            see_also.push(s.to_string());
        }
    }
    if parent.is_some() && !see_also.iter().any(|x| x == "app(1)") {
        see_also.push("app(1)".to_string());
    }
    pages.push(Page {
        file: file.to_string(),
        spelled: spelled.to_string(),
        cmd,
        commands,
        exit: exit.clone(),
        see_also,
    });
    for sub in subs {
        let sub_file = format!("{file}-{}", sub.get_name());
        let sub_spelled = format!("{spelled} {}", sub.get_name());
        collect(pages, &sub_file, &sub_spelled, sub, Some(file), &exit);
    }
}
