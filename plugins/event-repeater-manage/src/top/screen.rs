//! The full-screen view: the alternate screen in raw mode, redrawn every
//! `--interval` and whenever a host answers, until `q`, Esc, Ctrl-C,
//! SIGTERM or SIGHUP. The terminal is put back as it was on every way out:
//! the [`Screen`] guard's drop (a return, an error, an unwinding panic)
//! and a panic hook that restores it before the panic message is printed.

use std::io::Stdout;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::crossterm::{cursor, execute, terminal};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph, Row, Table};
use ratatui::{Frame, Terminal};

use crate::error::Error;
use crate::interrupt;
use crate::status::table::widths;
use crate::target::Target;

use super::poll::{Board, Poller};
use super::view::{self, Host};

/// Whether the terminal is ours (raw, alternate screen) and must be put back.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// How often keys and signals are looked at between redraws.
const TICK: Duration = Duration::from_millis(100);

/// The terminal while `top` runs; dropping it puts the terminal back.
struct Screen {
    terminal: Terminal<CrosstermBackend<Stdout>>,
}

impl Screen {
    fn enter() -> std::io::Result<Screen> {
        // A panic restores the terminal first, so that its message is
        // readable on the normal screen and the shell is usable after.
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
        ACTIVE.store(true, Ordering::SeqCst);
        terminal::enable_raw_mode()?;
        execute!(
            std::io::stdout(),
            terminal::EnterAlternateScreen,
            cursor::Hide
        )?;
        let terminal = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
        Ok(Screen { terminal })
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        restore();
    }
}

/// Puts the terminal back (once: the panic hook and the guard both call it).
fn restore() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        let _ = execute!(
            std::io::stdout(),
            terminal::LeaveAlternateScreen,
            cursor::Show
        );
        let _ = terminal::disable_raw_mode();
    }
}

/// Runs the view until asked to stop.
pub fn run(targets: &[Target], interval: Duration) -> Result<(), Error> {
    // In raw mode Ctrl-C is a key; these come from elsewhere (kill, a
    // closed terminal) and end the view the same tidy way.
    interrupt::catch(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP]);
    let labels: Vec<String> = targets.iter().map(Target::label).collect();
    let mut board = Board::new(labels);
    let poller = Poller::start(targets, interval);
    let failed = |e: std::io::Error| Error::Failed(format!("cannot draw on the terminal: {e}"));
    let mut screen = Screen::enter().map_err(failed)?;
    let mut next_draw = Instant::now();
    let mut changed = true;
    while !interrupt::requested() {
        for update in poller.take() {
            board.update(update);
            changed = true;
        }
        if changed || Instant::now() >= next_draw {
            let mut hosts = board.hosts();
            view::sort(&mut hosts);
            screen
                .terminal
                .draw(|f| draw(f, &hosts, interval))
                .map_err(failed)?;
            next_draw = Instant::now() + interval;
            changed = false;
        }
        if event::poll(TICK).map_err(failed)? {
            match event::read().map_err(failed)? {
                Event::Key(k) if k.kind != KeyEventKind::Release => {
                    let ctrl_c =
                        k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
                    if ctrl_c || matches!(k.code, KeyCode::Char('q') | KeyCode::Esc) {
                        break;
                    }
                }
                Event::Resize(..) => changed = true,
                _ => {}
            }
        }
    }
    Ok(())
}

/// The title line, then the hosts, the routes and the reasons.
fn draw(f: &mut Frame, hosts: &[Host], interval: Duration) {
    let host_rows = view::host_cells(hosts);
    let route_rows = view::route_cells(hosts);
    let reason_rows = view::reason_cells(hosts);
    let lines = |rows: usize| u16::try_from(rows + 3).unwrap_or(u16::MAX);
    let [title, top, middle, bottom] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(lines(host_rows.len().max(1))),
        Constraint::Fill(1),
        // An empty box says "none" in one line, without a header.
        Constraint::Length(if reason_rows.is_empty() {
            3
        } else {
            lines(reason_rows.len()).min(12)
        }),
    ])
    .areas(f.area());
    let plural = if hosts.len() == 1 { "" } else { "s" };
    f.render_widget(
        Paragraph::new(Line::from(format!(
            "app event-repeater manage top: {} host{plural}, every {}s; q to quit",
            hosts.len(),
            interval.as_secs_f64()
        ))),
        title,
    );
    grid(f, top, "hosts", &view::HOSTS, &host_rows, "");
    grid(f, middle, "routes", &view::ROUTES, &route_rows, "no routes");
    grid(
        f,
        bottom,
        "refused, dropped, dead-lettered",
        &view::REASONS,
        &reason_rows,
        "none",
    );
}

/// Blanks between two columns.
const SPACING: u16 = 2;

/// One table in a box: columns as wide as their widest cell (the last one
/// takes the rest), or `empty` when there are no rows. The cells are
/// already made safe to show.
fn grid(
    f: &mut Frame,
    area: Rect,
    title: &str,
    header: &[&str],
    rows: &[Vec<String>],
    empty: &str,
) {
    let block = Block::bordered().title(format!(" {title} "));
    if rows.is_empty() && !empty.is_empty() {
        f.render_widget(Paragraph::new(empty.to_string()).block(block), area);
        return;
    }
    let inside = area.width.saturating_sub(2);
    let constraints = fit(&widths(header, rows), inside, SPACING);
    let shown = constraints.len();
    let cut = |cells: &[String]| Row::new(cells.iter().take(shown).cloned().collect::<Vec<_>>());
    let header: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    let table = Table::new(rows.iter().map(|r| cut(r)), constraints)
        .header(cut(&header).style(Style::new().add_modifier(Modifier::BOLD)))
        .column_spacing(SPACING)
        .block(block);
    f.render_widget(table, area);
}

/// Column widths in `inside` cells: each column as wide as it needs, left
/// to right, until the room runs out; the columns past the edge are left
/// out (as `top` does), never the first ones squeezed. The last column
/// shown takes what is left.
fn fit(widths: &[usize], inside: u16, spacing: u16) -> Vec<Constraint> {
    let mut left = inside;
    let mut out = Vec::new();
    for (i, w) in widths.iter().enumerate() {
        if left == 0 {
            break;
        }
        let w = u16::try_from(*w).unwrap_or(u16::MAX);
        let take = if i + 1 == widths.len() {
            left
        } else {
            w.min(left)
        };
        left = left.saturating_sub(take).saturating_sub(spacing);
        out.push(take);
    }
    out.into_iter().map(Constraint::Length).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_past_the_edge_are_cut_not_the_first_squeezed() {
        let len = |c: &[Constraint]| -> Vec<u16> {
            c.iter()
                .map(|c| match c {
                    Constraint::Length(n) => *n,
                    other => panic!("{other:?}"),
                })
                .collect()
        };
        assert_eq!(len(&fit(&[10, 4, 6], 40, 2)), [10, 4, 22]);
        assert_eq!(len(&fit(&[10, 4, 6], 15, 2)), [10, 3]);
        assert_eq!(len(&fit(&[10, 4, 6], 5, 2)), [5]);
        assert_eq!(len(&fit(&[10, 4, 6], 0, 2)), [] as [u16; 0]);
    }
}
