//! `tap [--route R | --topic T]`: the events flowing through the repeaters
//! as they come (`GET /tap`), one line each ([`mod@line`]), until Ctrl-C (exit
//! 0), a closed stdout (exit 0) or the repeater going away (a message, exit
//! 3; with several hosts, each one's on stderr as it goes, exit 4 once all
//! went).
//!
//! Each repeater is read by a thread of its own, so one that hangs costs
//! only its own `--timeout` to open and then the idle limit; the lines come
//! to the main thread, which prints them and watches for Ctrl-C.
//!
//! - [`mod@sse`]: the stream's frames; [`mod@line`]: how they are printed

pub mod line;
pub mod sse;

use std::io::{BufRead, BufReader, Read};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::time::Duration;

use app_event_repeater_api::tap::{skipped, TapEvent, KEEP_ALIVE_SECS, STOPPING_COMMENT};

use crate::error::Error;
use crate::interrupt;
use crate::io::Io;
use crate::output::Format;
use crate::remote::Remote;
use crate::target::Target;
use sse::{Frame, Parser};

/// How long a tap may bring nothing, not even a keep-alive comment, before
/// the repeater counts as gone.
pub const IDLE: Duration = Duration::from_secs(3 * KEEP_ALIVE_SECS);

/// The longest line read (an event's data as JSON, escaped).
const MAX_LINE: u64 = 64 << 20;

/// What a reader thread tells the main thread.
enum Msg {
    Event(usize, Box<TapEvent>),
    Skipped(usize, u64),
    /// The tap of this repeater ended, or never opened.
    End(usize, Error),
}

/// Runs the tap on `targets` (path: `/tap` with its query).
pub fn run(targets: &[Target], path: &str, format: Format, io: &mut Io<'_>) -> Result<(), Error> {
    interrupt::catch(&[libc::SIGINT]);
    let labels: Vec<String> = targets.iter().map(Target::label).collect();
    let several = targets.len() > 1;
    let (tx, rx) = mpsc::channel();
    for (i, target) in targets.iter().enumerate() {
        let (tx, target, path) = (tx.clone(), target.clone(), path.to_string());
        std::thread::spawn(move || {
            let ended = match Remote::new(&target).and_then(|r| r.stream(&path, IDLE)) {
                Ok(body) => read(i, body, &target, &tx),
                Err(e) => e,
            };
            let _ = tx.send(Msg::End(i, ended));
        });
    }
    drop(tx);
    let mut ended: Vec<(String, Option<Error>)> = Vec::new();
    while !interrupt::requested() {
        let host = |i: usize| several.then(|| labels[i].as_str());
        let text = match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(Msg::Event(i, e)) => line::event(&e, format, host(i)),
            Ok(Msg::Skipped(i, n)) => line::skipped(n, format, host(i)),
            Ok(Msg::End(i, e)) => {
                if !several {
                    return Err(e);
                }
                app_plugin::warn!("{}: {e}", labels[i]);
                ended.push((labels[i].clone(), Some(e)));
                if ended.len() < targets.len() {
                    continue;
                }
                return Err(Error::Hosts(ended));
            }
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        if !write(io, &text)? {
            break;
        }
    }
    Ok(())
}

/// Prints `text`; `false` when stdout was closed (`| head`: the reader's
/// choice, the tap ends quietly).
fn write(io: &mut Io<'_>, text: &str) -> Result<bool, Error> {
    match io
        .stdout
        .write_all(text.as_bytes())
        .and_then(|()| io.stdout.flush())
    {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(Error::Failed(format!("cannot write the tap's events: {e}"))),
    }
}

/// Reads one repeater's tap until it ends; what ended it.
fn read(i: usize, body: Box<dyn Read + Send>, target: &Target, tx: &Sender<Msg>) -> Error {
    let at = target.described();
    let mut body = BufReader::new(body);
    let mut parser = Parser::default();
    let mut stopping = false;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let read = (&mut body).take(MAX_LINE).read_until(b'\n', &mut buf);
        match read {
            Ok(0) if stopping => {
                return Error::Down(format!(
                    "the event repeater at {at} is stopping; the tap ended"
                ))
            }
            Ok(0) => {
                return Error::Down(format!(
                    "the event repeater at {at} closed the tap (it stopped, restarted, or dropped this client for not reading for --request-timeout)"
                ))
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                return Error::Down(format!(
                    "the event repeater at {at} sent nothing for {}s, not even a keep-alive; the tap ended",
                    IDLE.as_secs()
                ))
            }
            Err(e) => {
                return Error::Down(format!(
                    "lost the tap of the event repeater at {at}: {e}"
                ))
            }
        }
        let text = String::from_utf8_lossy(&buf);
        let msg = match parser.line(text.trim_end_matches('\n')) {
            None => continue,
            Some(Frame::Comment(c)) => {
                stopping |= c == STOPPING_COMMENT;
                match skipped(&c) {
                    Some(n) => Msg::Skipped(i, n),
                    None => continue,
                }
            }
            Some(Frame::Event { data, .. }) => match serde_json::from_str::<TapEvent>(&data) {
                Ok(e) => Msg::Event(i, Box::new(e)),
                Err(e) => {
                    return Error::Failed(format!(
                        "{at} sent a tap event that is not one ({e}); is it an event repeater?"
                    ))
                }
            },
        };
        if tx.send(msg).is_err() {
            return Error::Failed("the tap was closed".into());
        }
    }
}
