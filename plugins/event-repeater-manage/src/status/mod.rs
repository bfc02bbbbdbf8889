//! `status [--watch]`: one line per repeater, from its `/healthz` and
//! `/metrics`, sampled twice `--interval` apart so that the rates are over
//! that interval. `--watch` keeps sampling and redraws the table in place
//! until Ctrl-C.
//!
//! - [`mod@sample`]: what one repeater says at one moment
//! - [`mod@table`]: rows from two samples, and the table of them

pub mod sample;
pub mod table;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::error::Error;
use crate::fleet;
use crate::io::{print, Io};
use crate::output::Format;
use crate::target::Target;
use sample::{sample, Sample};
use table::{row, table, Row};

/// Set by the SIGINT handler: `--watch` stops at the next check.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Catches Ctrl-C so that `--watch` (and `tap`) can leave the screen tidy
/// and exit 0.
pub(crate) fn catch_sigint() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(
            libc::SIGINT,
            on_sigint as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
    }
}

/// Whether Ctrl-C came (after [`catch_sigint`]).
pub(crate) fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Sleeps `d`, waking early on Ctrl-C; false when interrupted.
fn pause(d: Duration) -> bool {
    let end = Instant::now() + d;
    while Instant::now() < end {
        if INTERRUPTED.load(Ordering::SeqCst) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50).min(end - Instant::now()));
    }
    !INTERRUPTED.load(Ordering::SeqCst)
}

fn render(rows: &[Row], format: Format, pretty: bool) -> String {
    match format {
        Format::Table => table(rows),
        Format::Json => {
            let text = serde_json::to_string(rows).unwrap_or_else(|_| "[]".into());
            crate::output::reformat(&text, pretty)
        }
    }
}

/// Runs `status`: a table, or a JSON array of rows (with `--watch`, one
/// array per line per interval).
pub fn run(
    targets: &[Target],
    format: Format,
    watch: bool,
    interval: Duration,
    io: &mut Io<'_>,
) -> Result<(), Error> {
    if watch {
        catch_sigint();
    }
    let labels: Vec<String> = targets.iter().map(Target::label).collect();
    let mut before = fleet_samples(targets);
    let mut at = Instant::now();
    let mut first = true;
    loop {
        if !pause(interval) {
            // Ctrl-C: leave the cursor below the table.
            return print(io, "\n");
        }
        let now = fleet_samples(targets);
        let elapsed = at.elapsed();
        at = Instant::now();
        let rows: Vec<Row> = labels
            .iter()
            .zip(before.iter().zip(&now))
            .map(|(l, (b, n))| row(l, Some(b), n, elapsed))
            .collect();
        let text = render(&rows, format, io.pretty && !watch);
        if !watch {
            print(io, &text)?;
            return outcome(targets, &rows);
        }
        if format == Format::Json {
            // A stream of arrays, one per interval, one per line.
            print(io, &text)?;
        } else if !io.pretty {
            // Not a terminal (a pipe, a file, `watch`'s log): no cursor
            // escapes, one plain table per interval, a blank line between.
            print(io, &format!("{text}\n"))?;
        } else {
            // Home, then each line cleared to its end, then the rest of the
            // screen: redraws in place without flicker.
            let mut screen = String::from(if first { "\x1b[H\x1b[2J" } else { "\x1b[H" });
            for l in text.lines() {
                screen.push_str(l);
                screen.push_str("\x1b[K\n");
            }
            screen.push_str(&format!(
                "every {}s, Ctrl-C to stop\x1b[K\n\x1b[J",
                interval.as_secs_f64()
            ));
            print(io, &screen)?;
        }
        first = false;
        before = now;
    }
}

fn fleet_samples(targets: &[Target]) -> Vec<Sample> {
    fleet::each(targets, |r| Ok(sample(r)))
        .into_iter()
        .map(|s| {
            s.unwrap_or_else(|e| Sample {
                error: Some(e.to_string()),
                ..Sample::default()
            })
        })
        .collect()
}

/// A down host makes the exit code non-zero (3 for one host, 4 for several).
/// Its row already says why, so the message only names it: the reason is
/// printed once.
fn outcome(targets: &[Target], rows: &[Row]) -> Result<(), Error> {
    let down: Vec<String> = targets
        .iter()
        .zip(rows)
        .filter(|(_, r)| r.state == "down")
        .map(|(t, _)| t.described())
        .collect();
    match (down.as_slice(), rows.len()) {
        ([], _) => Ok(()),
        ([one], 1) => Err(Error::Down(format!(
            "{one} is down (its row above says why)"
        ))),
        (_, all) => Err(Error::HostsDown(format!(
            "{} of {all} hosts are down (their rows above say why): {}",
            down.len(),
            down.join(", ")
        ))),
    }
}
