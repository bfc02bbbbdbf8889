//! `app-event-time`: see the library for what it does.

fn main() -> std::process::ExitCode {
    app_event_time::run(std::env::args_os().collect())
}
