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

/// Why an `id:` was not kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdRefusal {
    /// Over [`MAX_ID`] bytes: this many.
    TooLong(usize),
    /// A control character (other than tab), which no HTTP header may hold.
    Control,
    /// Not UTF-8.
    NotUtf8,
}

impl std::fmt::Display for IdRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IdRefusal::TooLong(n) => write!(f, "of {n} bytes, over the limit of {MAX_ID} bytes"),
            IdRefusal::Control => f.write_str(
                "holding a control character, which cannot be sent back as a Last-Event-ID header",
            ),
            IdRefusal::NotUtf8 => f.write_str("that is not UTF-8"),
        }
    }
}

/// Why `id` cannot be kept as the last event id, if it cannot: also asked
/// of an id read from an older release's checkpoint.
pub fn refuse_id(id: &[u8]) -> Option<IdRefusal> {
    if id.len() > MAX_ID {
        return Some(IdRefusal::TooLong(id.len()));
    }
    if id.iter().any(|&b| (b < 0x20 && b != b'\t') || b == 0x7f) {
        return Some(IdRefusal::Control);
    }
    if std::str::from_utf8(id).is_err() {
        return Some(IdRefusal::NotUtf8);
    }
    None
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
        }
    }

    /// The last event id seen (`id:`), to send as `Last-Event-ID`.
    pub fn last_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// Sets the last event id, e.g. kept from an earlier connection.
    pub fn set_last_id(&mut self, id: Option<Arc<str>>) {
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
            b"id" => match refuse_id(value) {
                Some(why) => out.push(Item::IdRefused(why)),
                None => {
                    // refuse_id checked UTF-8.
                    let id = std::str::from_utf8(value).unwrap_or_default();
                    if self.last_id.as_deref() != Some(id) {
                        self.last_id = Some(Arc::from(id));
                    }
                    self.since = 0;
                    self.own_id = true;
                }
            },
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
            return Some(EventKey::own(id.clone()));
        }
        self.since += 1;
        Some(EventKey::after(id, self.since, data))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_chunks(chunks: &[&[u8]]) -> Vec<Item> {
        let mut p = Parser::new(64, 128);
        let mut out = Vec::new();
        for c in chunks {
            p.feed(c, &mut out);
        }
        out
    }

    /// An event with its own id (or none).
    fn ev(data: &str, id: Option<&str>) -> Item {
        Item::Event(SseEvent {
            event: None,
            data: data.into(),
            id: id.map(|id| EventKey::own(Arc::from(id))),
        })
    }

    /// The `n`-th event after the one that set `id`.
    fn after(data: &str, id: &str, n: u64) -> Item {
        Item::Event(SseEvent {
            event: None,
            data: data.into(),
            id: Some(EventKey::after(&Arc::from(id), n, data.as_bytes())),
        })
    }

    #[test]
    fn lf_crlf_and_cr_all_end_lines() {
        let out = parse_chunks(&[b"data: a\n\ndata: b\r\n\r\ndata: c\r\rdata:d\n\n"]);
        assert_eq!(
            out,
            vec![ev("a", None), ev("b", None), ev("c", None), ev("d", None)]
        );
    }

    #[test]
    fn crlf_split_across_chunks_counts_once() {
        let out = parse_chunks(&[b"data: a\r", b"\n", b"data: b\r", b"\n\r", b"\n"]);
        assert_eq!(out, vec![ev("a\nb", None)]);
    }

    #[test]
    fn every_byte_in_its_own_chunk() {
        let text = b"id: 7\r\ndata: {\"x\":1}\r\n: comment\r\ndata: two\r\n\r\n";
        let chunks: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(
            parse_chunks(&chunks),
            vec![
                Item::Comment("comment".into()),
                ev("{\"x\":1}\ntwo", Some("7"))
            ]
        );
    }

    #[test]
    fn ids_persist_comments_are_reported_and_unknown_fields_are_ignored() {
        let out =
            parse_chunks(&[b":hello\nid: 1\nfoo: bar\ndata: x\n\ndata: y\n\nid\ndata: z\n\n"]);
        assert_eq!(
            out,
            vec![
                Item::Comment("hello".into()),
                ev("x", Some("1")),
                after("y", "1", 1),
                ev("z", None)
            ]
        );
    }

    /// Issue 29's stream: ids on some events only, and an empty id.
    #[test]
    fn every_event_gets_its_own_key_and_an_empty_id_clears_the_last() {
        let text = b"id: 1\ndata: e1\n\ndata: e2\n\ndata: e3\n\nid:\ndata: e4\n\ndata: e5\n\ndata: e6\n\nid: 7\ndata: e7\n\ndata: e8\n\n";
        let mut p = Parser::new(64, 128);
        let mut out = Vec::new();
        p.feed(&text[..40], &mut out);
        p.feed(&text[40..], &mut out);
        assert_eq!(
            out,
            vec![
                ev("e1", Some("1")),
                after("e2", "1", 1),
                after("e3", "1", 2),
                ev("e4", None),
                ev("e5", None),
                ev("e6", None),
                ev("e7", Some("7")),
                after("e8", "7", 1),
            ]
        );
        let keys: std::collections::HashSet<_> = out
            .iter()
            .filter_map(|i| match i {
                Item::Event(e) => e.id.as_ref().map(|k| k.as_str().to_string()),
                _ => None,
            })
            .collect();
        assert_eq!(keys.len(), 5, "every keyed event has a key of its own");
        assert_eq!(p.last_id(), Some("7"));
        // An empty id last: no Last-Event-ID at all.
        p.feed(b"id:\n\n", &mut out);
        assert_eq!(p.last_id(), None);
    }

    #[test]
    fn a_resume_replays_the_same_keys() {
        let mut first = Parser::new(64, 128);
        let mut out = Vec::new();
        first.feed(b"id: 5\ndata: a\n\ndata: b\n\ndata: c\n\n", &mut out);
        // The connection breaks after c; the resume (Last-Event-ID: 5)
        // replays b and c, then d.
        first.reset();
        let mut replayed = Vec::new();
        first.feed(b"data: b\n\ndata: c\n\ndata: d\n\n", &mut replayed);
        assert_eq!(replayed[..2], out[1..]);
        assert_eq!(replayed[2], after("d", "5", 3));
        // A restart from the checkpoint gives the same keys too.
        let mut restarted = Parser::new(64, 128);
        restarted.set_last_id(Some(Arc::from("5")));
        let mut again = Vec::new();
        restarted.feed(b"data: b\n\ndata: c\n\n", &mut again);
        assert_eq!(again[..], out[1..]);
        // An id set in a block without data counts as the id before the
        // next event, which is then the first after it.
        let got = parse_chunks(&[b"id: 9\n\ndata: x\n\n"]);
        assert_eq!(got, vec![after("x", "9", 1)]);
    }

    #[test]
    fn ids_that_cannot_be_headers_are_refused_and_the_last_id_kept() {
        let out = parse_chunks(&[
            b"id: 1\ndata: a\n\nid: 2\x01x\ndata: b\n\nid: t\tab\xc3\xa9\ndata: c\n\nid: \xff\ndata: d\n\nid: n\0ul\ndata: e\n\n",
        ]);
        assert_eq!(
            out,
            vec![
                ev("a", Some("1")),
                Item::IdRefused(IdRefusal::Control),
                after("b", "1", 1),
                ev("c", Some("t\tab\u{e9}")),
                Item::IdRefused(IdRefusal::NotUtf8),
                after("d", "t\tab\u{e9}", 1),
                // NUL: ignored without a word, as the standard says.
                after("e", "t\tab\u{e9}", 2),
            ]
        );
        assert_eq!(refuse_id(b"\x7f"), Some(IdRefusal::Control));
        assert_eq!(refuse_id(b"urn:uuid:1"), None);
    }

    #[test]
    fn an_overlong_id_is_not_kept_and_its_event_still_dispatched() {
        let mut p = Parser::new(128 * 1024, 128);
        let mut out = Vec::new();
        let at_limit = "i".repeat(MAX_ID);
        let over = "o".repeat(70_005);
        let text = format!("id: 1\ndata: a\n\nid: {over}\ndata: b\n\nid: {at_limit}\ndata: c\n\n");
        p.feed(text.as_bytes(), &mut out);
        assert_eq!(
            out,
            vec![
                ev("a", Some("1")),
                Item::IdRefused(IdRefusal::TooLong(70_005)),
                after("b", "1", 1),
                ev("c", Some(&at_limit)),
            ]
        );
    }

    #[test]
    fn event_type_retry_and_no_space_after_colon() {
        let out = parse_chunks(&[b"event: tick\nretry: 250\ndata:raw\n\n"]);
        assert_eq!(
            out,
            vec![
                Item::Retry(250),
                Item::Event(SseEvent {
                    event: Some("tick".into()),
                    data: "raw".into(),
                    id: None
                })
            ]
        );
    }

    #[test]
    fn blank_events_without_data_are_not_dispatched() {
        assert_eq!(parse_chunks(&[b"\n\nid: 3\n\n"]), vec![]);
    }

    #[test]
    fn an_overlong_line_discards_its_event_only() {
        let long = vec![b'x'; 100];
        let out = parse_chunks(&[b"data: ", &long, b"\ndata: more\n\ndata: ok\n\n"]);
        assert_eq!(out, vec![Item::Oversized(None), ev("ok", None)]);
    }

    #[test]
    fn an_overlong_event_is_discarded() {
        let line = format!("data: {}\n", "y".repeat(50));
        let text = line.repeat(3) + "\ndata: fine\n\n";
        assert_eq!(
            parse_chunks(&[text.as_bytes()]),
            vec![Item::Oversized(None), ev("fine", None)]
        );
    }

    #[test]
    fn invalid_utf8_is_reported() {
        assert_eq!(
            parse_chunks(&[b"data: \xff\xfe\n\ndata: ok\n\n"]),
            vec![Item::InvalidUtf8(None), ev("ok", None)]
        );
    }

    #[test]
    fn a_leading_bom_is_skipped_even_when_split() {
        assert_eq!(
            parse_chunks(&[b"\xEF", b"\xBB\xBFdata: a\n\n"]),
            vec![ev("a", None)]
        );
        assert_eq!(parse_chunks(&[b"da", b"ta: b\n\n"]), vec![ev("b", None)]);
    }

    #[test]
    fn reset_keeps_the_last_id_and_drops_a_partial_event() {
        let mut p = Parser::new(64, 128);
        let mut out = Vec::new();
        p.feed(b"id: 9\ndata: a\n\ndata: partial", &mut out);
        p.reset();
        p.feed(b"data: b\n\n", &mut out);
        assert_eq!(out, vec![ev("a", Some("9")), after("b", "9", 1)]);
        assert_eq!(p.last_id(), Some("9"));
    }

    #[test]
    fn random_chunking_gives_the_same_events() {
        let mut text = Vec::new();
        for i in 0..200 {
            text.extend_from_slice(format!("id: {i}\r\ndata: {{\"n\":{i}}}\r\n\r\n").as_bytes());
        }
        let whole = parse_chunks(&[&text]);
        assert_eq!(whole.len(), 200);
        for seed in 0..20 {
            let mut rng = fastrand::Rng::with_seed(seed);
            let mut chunks = Vec::new();
            let mut rest: &[u8] = &text;
            while !rest.is_empty() {
                let n = rng.usize(1..=rest.len().min(17));
                chunks.push(&rest[..n]);
                rest = &rest[n..];
            }
            assert_eq!(parse_chunks(&chunks), whole);
        }
    }
}
