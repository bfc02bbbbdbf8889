//! Load generator and counting subscriber for the relay benchmark
//! (`bench/relay.sh`) and the reliability tests (`tests/it/reliability/`).
//!
//! - [`payload`]: the benchmark event and reading its number and send time back;
//! - [`tally`]: missing, duplicated, out-of-order counts and latency percentiles;
//! - [`publish`], [`sse`], [`subscribe`]: the three traffic modes;
//! - [`nats`]: reading a JetStream stream back, and the direct JetStream publisher;
//! - [`report`]: the Markdown table from the benchmark's JSON lines.

pub mod cli;
pub mod kafka;
pub mod nats;
pub mod payload;
pub mod pipelined;
pub mod publish;
pub mod report;
pub mod rmq;
pub mod sent;
pub mod sse;
pub mod subscribe;
pub mod tally;

use clap::Parser;

/// The CPU time (user + system, every thread) this process has used so
/// far, from `/proc/self/stat`; `None` where that cannot be read. For
/// bench/relay.sh, which adds up what every process of a path spent
/// (a process that has exited can no longer be read from outside).
pub fn own_cpu_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name, in parentheses, may hold spaces: count fields
    // from after its closing one (utime and stime are fields 14 and 15).
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut fields = rest.split(' ').skip(11);
    let utime: f64 = fields.next()?.parse().ok()?;
    let stime: f64 = fields.next()?.parse().ok()?;
    // /proc counts in USER_HZ, which Linux fixes at 100 for user space.
    Some((utime + stime) / 100.0)
}

/// Runs the command line `args`; returns the exit code.
pub fn run(args: impl IntoIterator<Item = std::ffi::OsString>) -> i32 {
    let cli = match cli::Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("loadgen: cannot start the runtime: {e}");
            return 1;
        }
    };
    let result = runtime.block_on(async {
        match cli.mode {
            cli::Mode::Publish(a) => publish::run(a).await,
            cli::Mode::Sse(a) => sse::run(a).await,
            cli::Mode::Subscribe(a) => subscribe::run(a).await,
            cli::Mode::Report(a) => report::run(&a.results),
            cli::Mode::NatsRead(a) => nats::read(a).await,
            cli::Mode::RmqRead(a) => rmq::read(a).await,
            cli::Mode::RmqPublish(a) => rmq::publish(a).await,
            cli::Mode::NatsPublish(a) => nats::publish(a).await,
            cli::Mode::KafkaRead(a) => kafka::read(a).await,
            cli::Mode::KafkaPublish(a) => kafka::publish(a).await,
            cli::Mode::Port => std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map(|a| println!("{}", a.port()))
                .map_err(|e| format!("no free port: {e}")),
        }
    });
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("loadgen: {e}");
            1
        }
    }
}
