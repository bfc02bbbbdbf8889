//! `app-event-repeater`: relays events from an event source to MQTT, NATS, Kafka, RabbitMQ Streams or stderr.
//! Everything lives in the library; see `lib.rs`.

// Every event is allocated by the task that reads the source and freed by
// the sink's, often on the other worker thread: glibc's allocator takes its
// slow path for every such free (about an eighth of the instructions per
// event, docs/benchmarks.md), mimalloc's thread-free lists do not. Built
// with `no_thp`: its arenas advised as huge pages took the RSS under load
// from 15 to 40 MB.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    app_event_repeater::main_with_args(std::env::args_os().skip(1).collect())
}
