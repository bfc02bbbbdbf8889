//! `top`: a live full-screen view of one repeater or a fleet (per host and
//! per route events per second, the buffer's fill, refused, dropped and
//! dead-lettered events by reason, source and sink state), built on
//! `status`'s samples and rows. When stdout is not a terminal (or with
//! `-o json`) it prints the same figures once, from two samples
//! `--interval` apart, as plain tables without escape codes.
//!
//! - [`mod@view`]: one host's figures and the cells of the tables
//! - [`mod@poll`]: a sampling thread per host, and the last two samples of each
//! - [`mod@screen`]: the terminal: drawing, keys, signals, putting it back

pub mod poll;
pub mod screen;
pub mod view;

use std::time::Duration;

use crate::error::Error;
use crate::io::{print, Io};
use crate::output::Format;
use crate::status::{self, table::aligned};
use crate::target::Target;
use poll::{Board, Poller};
use view::Host;

/// Runs `top`: the live view on a terminal, else one plain table (or one
/// JSON array of hosts).
pub fn run(
    targets: &[Target],
    format: Format,
    interval: Duration,
    io: &mut Io<'_>,
) -> Result<(), Error> {
    if io.pretty && format == Format::Table {
        return screen::run(targets, interval);
    }
    // The same sampling as the screen's: each host's rates are over the
    // time between its own two answers, and a host that hangs costs its
    // own timeout (twice), not the others'.
    let labels: Vec<String> = targets.iter().map(Target::label).collect();
    let mut board = Board::new(labels);
    let poller = Poller::start(targets, interval);
    while !board.complete() {
        std::thread::sleep(Duration::from_millis(20));
        for update in poller.take() {
            board.update(update);
        }
    }
    let mut hosts = board.hosts();
    // The exit code follows the targets' order, the table the busiest first.
    let rows: Vec<status::table::Row> = hosts.iter().map(|h| h.status.clone()).collect();
    view::sort(&mut hosts);
    let text = match format {
        Format::Json => {
            let text = serde_json::to_string(&hosts).unwrap_or_else(|_| "[]".into());
            crate::output::reformat(&text, io.pretty)
        }
        Format::Table => plain(&hosts),
    };
    print(io, &text)?;
    status::outcome(targets, &rows)
}

/// The three tables, a blank line between them.
pub fn plain(hosts: &[Host]) -> String {
    let mut out = aligned(&view::HOSTS, &view::host_cells(hosts));
    out.push('\n');
    out.push_str(&aligned(&view::ROUTES, &view::route_cells(hosts)));
    out.push('\n');
    let reasons = view::reason_cells(hosts);
    if reasons.is_empty() {
        out.push_str("no refused, dropped or dead-lettered events\n");
    } else {
        out.push_str(&aligned(&view::REASONS, &reasons));
    }
    out
}
