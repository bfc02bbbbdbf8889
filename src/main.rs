//! `app`: the dispatcher binary. All the work happens in [`app::run`].

fn main() {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // `app` started again to watch one of its own children (see app::keeper).
    if app::keeper::is_keeper(argv.first().map(|a| a.as_os_str())) {
        std::process::exit(app::keeper::main(&argv[1..]));
    }
    std::process::exit(app::run::run(argv));
}
