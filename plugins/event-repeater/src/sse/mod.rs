//! A Server-Sent Events parser (the WHATWG `text/event-stream` rules), fed
//! with whatever chunks the network delivers.
//!
//! Lines end with CRLF, LF or CR (a CRLF split across two chunks counts once);
//! `data:` lines accumulate, joined by `\n`; `id:` sets the last event id
//! (kept for `Last-Event-ID` on reconnect) and an empty `id:` clears it;
//! each event gets its dedup key ([`EventKey`]: its own id, or its position
//! after the last one); `event:` and `retry:` are kept;
//! lines starting with `:` are comments (handed on, as a source may say
//! something in them: event-time names events it skipped); a blank line
//! dispatches the event.
//! Every line and every event is bounded: an overlong one is discarded whole
//! and reported, so a hostile source cannot make the reader grow without
//! bound or lose track of where the next event starts. An `id:` over
//! [`MAX_ID`] bytes, or one that could not be sent back as a
//! `Last-Event-ID` header (a control character, not UTF-8), is not kept
//! (reported as [`Item::IdRefused`]): the last event id stays what it was,
//! as the standard does for an id with NUL. An id with a control character
//! once made every reconnection fail, for good (issue 30). Ids end up in the checkpoint file, in
//! `Last-Event-ID` and in `Nats-Msg-Id`; an unbounded one made the
//! checkpoint too large to read at the next start (issue 19). Keeping the
//! previous id means a restart asks for a little more again (duplicates),
//! where a truncated id would name an event the source never sent.

use std::sync::Arc;

use bytes::Bytes;

use crate::event::EventData;
use crate::event_key::EventKey;

mod id;
pub use id::{refuse_id, IdRefusal};

/// The longest SSE id kept, in bytes: far above any real id (a number, a
/// UUID, a timestamp and an offset), far below the checkpoint's 64 KiB
/// read limit even when every byte is JSON-escaped six times over.
pub const MAX_ID: usize = 1024;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` type, if any.
    pub event: Option<String>,
    /// The data lines joined by `\n` (UTF-8: checked here).
    pub data: EventData,
    /// Its dedup key and the last event id in force; `None` before any id
    /// or after an empty `id:`.
    pub id: Option<EventKey>,
}

/// What the parser found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    Event(SseEvent),
    /// An event was discarded: a line or the event was longer than the
    /// limit. Its key, as it would have had.
    Oversized(Option<EventKey>),
    /// An event was discarded: its data was not UTF-8.
    InvalidUtf8(Option<EventKey>),
    /// An `id:` was not kept; the last event id stays what it was.
    IdRefused(IdRefusal),
    /// The source asked for this reconnection delay (`retry:`), in ms.
    Retry(u64),
    /// A comment line, without the leading `:` and one space.
    Comment(String),
}

#[derive(Debug)]
pub struct Parser {
    max_line: usize,
    max_event: usize,
    line: Vec<u8>,
    /// The current line is being skipped because it grew past `max_line`.
    skipping_line: bool,
    /// The current event is broken (an overlong line or data); drop it at dispatch.
    broken: bool,
    after_cr: bool,
    at_start: bool,
    data: Vec<u8>,
    has_data: bool,
    event: Option<String>,
    last_id: Option<Arc<str>>,
    /// Events dispatched since `last_id` was set (on this connection).
    since: u64,
    /// The current event's block has an `id:` of its own.
    own_id: bool,
    /// `last_id` holds a `#`.
    id_hash: bool,
}

impl Parser {
    /// A parser that accepts lines up to `max_line` bytes and events whose
    /// data adds up to at most `max_event` bytes.
    pub fn new(max_line: usize, max_event: usize) -> Parser {
        Parser {
            max_line,
            max_event,
            line: Vec::new(),
            skipping_line: false,
            broken: false,
            after_cr: false,
            at_start: true,
            data: Vec::new(),
            has_data: false,
            event: None,
            last_id: None,
            since: 0,
            own_id: false,
            id_hash: false,
        }
    }

    /// The last event id seen (`id:`), to send as `Last-Event-ID`.
    pub fn last_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// Sets the last event id, e.g. kept from an earlier connection.
    pub fn set_last_id(&mut self, id: Option<Arc<str>>) {
        self.id_hash = id.as_deref().is_some_and(|i| i.contains('#'));
        self.last_id = id;
        self.since = 0;
    }

    /// Starts over for a new connection, keeping the last event id; the
    /// positions after it count from 0 again, since a resume after it
    /// replays what follows it.
    pub fn reset(&mut self) {
        let id = self.last_id.take();
        *self = Parser::new(self.max_line, self.max_event);
        self.last_id = id;
    }

    /// Feeds a chunk; complete items are appended to `out`.
    pub fn feed(&mut self, mut chunk: &[u8], out: &mut Vec<Item>) {
        if self.at_start && !chunk.is_empty() {
            // A UTF-8 byte order mark may start the stream; it is not content.
            const BOM: &[u8] = b"\xEF\xBB\xBF";
            let n = self.line.len();
            if n < 3 {
                let want = &BOM[n..];
                let take = want.len().min(chunk.len());
                if chunk[..take] == want[..take] {
                    self.line.extend_from_slice(&chunk[..take]);
                    chunk = &chunk[take..];
                    if self.line.len() < 3 {
                        return;
                    }
                    self.line.clear();
                    self.at_start = false;
                } else {
                    // Not a BOM after all: what was held back is content.
                    let held = std::mem::take(&mut self.line);
                    self.at_start = false;
                    self.push_bytes(&held, out);
                }
            }
            self.at_start = false;
        }
        self.push_bytes(chunk, out);
    }

    fn push_bytes(&mut self, mut chunk: &[u8], out: &mut Vec<Item>) {
        while !chunk.is_empty() {
            if self.after_cr {
                self.after_cr = false;
                if chunk[0] == b'\n' {
                    chunk = &chunk[1..];
                    continue;
                }
            }
            // memchr2 scans a word or a vector at a time; a byte loop here
            // cost 8 instructions per byte of every event.
            match memchr::memchr2(b'\n', b'\r', chunk) {
                Some(pos) => {
                    if self.line.is_empty() && !self.skipping_line {
                        // The whole line is in this chunk: read it in place,
                        // without copying it into `line` first.
                        if pos > self.max_line {
                            self.broken = true;
                        } else {
                            self.line_done(&chunk[..pos], out);
                        }
                    } else {
                        self.append(&chunk[..pos]);
                        self.end_line(out);
                    }
                    self.after_cr = chunk[pos] == b'\r';
                    chunk = &chunk[pos + 1..];
                }
                None => {
                    self.append(chunk);
                    chunk = &[];
                }
            }
        }
    }

    fn append(&mut self, bytes: &[u8]) {
        if self.skipping_line {
            return;
        }
        if self.line.len() + bytes.len() > self.max_line {
            self.skipping_line = true;
            self.broken = true;
            self.line.clear();
            return;
        }
        self.line.extend_from_slice(bytes);
    }

    fn end_line(&mut self, out: &mut Vec<Item>) {
        if self.skipping_line {
            self.skipping_line = false;
            return;
        }
        let line = std::mem::take(&mut self.line);
        self.line_done(&line, out);
        // Keep the allocation for the next line unless it grew large.
        if line.capacity() <= 64 * 1024 {
            self.line = line;
            self.line.clear();
        }
    }

    /// A complete line, without its end: a blank line dispatches the event.
    fn line_done(&mut self, line: &[u8], out: &mut Vec<Item>) {
        if line.is_empty() {
            self.dispatch(out);
        } else {
            self.field(line, out);
        }
    }

    fn field(&mut self, line: &[u8], out: &mut Vec<Item>) {
        if line[0] == b':' {
            let text = &line[1..];
            let text = text.strip_prefix(b" ").unwrap_or(text);
            out.push(Item::Comment(String::from_utf8_lossy(text).into_owned()));
            return;
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match name {
            b"data" => {
                if self.broken {
                    return;
                }
                if self.data.len() + value.len() + 1 > self.max_event {
                    self.broken = true;
                    self.data.clear();
                    return;
                }
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            // An id with NUL is ignored, as the standard says.
            b"id" if value.contains(&0) => {}
            b"id" if value.is_empty() => {
                self.last_id = None;
                self.since = 0;
                self.own_id = true;
            }
            b"id" => {
                let (printable, hash) = id::scan(value);
                if !printable || value.len() > MAX_ID {
                    if let Some(why) = refuse_id(value) {
                        out.push(Item::IdRefused(why));
                        return;
                    }
                }
                // Printable ASCII, or checked UTF-8 by refuse_id.
                let id = std::str::from_utf8(value).unwrap_or_default();
                if self.last_id.as_deref() != Some(id) {
                    self.last_id = Some(Arc::from(id));
                }
                self.since = 0;
                self.own_id = true;
                self.id_hash = hash;
            }
            b"event" => self.event = Some(String::from_utf8_lossy(value).into_owned()),
            b"retry" => {
                if let Some(ms) = std::str::from_utf8(value)
                    .ok()
                    .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                    .and_then(|v| v.parse().ok())
                {
                    out.push(Item::Retry(ms));
                }
            }
            _ => {} // unknown fields are ignored, as the standard says
        }
    }

    fn dispatch(&mut self, out: &mut Vec<Item>) {
        let event = self.event.take();
        let broken = std::mem::replace(&mut self.broken, false);
        let has_data = std::mem::replace(&mut self.has_data, false);
        let own_id = std::mem::replace(&mut self.own_id, false);
        let data = std::mem::take(&mut self.data);
        if !has_data && !broken {
            // Not an event: an `id:` here still moves the last id (done).
            return;
        }
        // Discarded events count too: a replay discards them again, and
        // the keys after them must come out the same.
        let key = self.key(own_id, &data);
        if broken {
            out.push(Item::Oversized(key));
            return;
        }
        match EventData::utf8(Bytes::from(data)) {
            Ok(data) => out.push(Item::Event(SseEvent {
                event,
                data,
                id: key,
            })),
            Err(_) => out.push(Item::InvalidUtf8(key)),
        }
    }

    /// The key of the event being dispatched (see [`EventKey`]).
    fn key(&mut self, own_id: bool, data: &[u8]) -> Option<EventKey> {
        let id = self.last_id.as_ref()?;
        if own_id {
            return Some(EventKey::own_scanned(id.clone(), self.id_hash));
        }
        self.since += 1;
        Some(EventKey::after(id, self.since, data))
    }
}

#[cfg(test)]
mod tests;
