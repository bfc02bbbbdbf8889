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
    let out = parse_chunks(&[b":hello\nid: 1\nfoo: bar\ndata: x\n\ndata: y\n\nid\ndata: z\n\n"]);
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
