//! `app-event-repeater`: relays events from an event source to MQTT, NATS or stderr.
//! Everything lives in the library; see `lib.rs`.

fn main() -> std::process::ExitCode {
    app_event_repeater::main_with_args(std::env::args_os().skip(1).collect())
}
