//! `app-event-repeater-manage`: see the library for how it works.

use std::process::ExitCode;

fn main() -> ExitCode {
    app_event_repeater_manage::run(std::env::args_os().skip(1).collect())
}
