//! The repeater's SSE parser on arbitrary bytes: it never panics, never
//! returns an event over its limit, and finds the same items however the
//! network splits the stream. Each event's data then goes through the event
//! decoder, as in the repeater.
#![no_main]

use app_event_repeater::event::Event;
use app_event_repeater::sse::{Item, Parser};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let Some((&knob, stream)) = input.split_first() else {
        return;
    };
    let max_line = 8 + usize::from(knob) * 2;
    let max_event = max_line * 2;

    let mut whole = Parser::new(max_line, max_event);
    let mut at_once = Vec::new();
    whole.feed(stream, &mut at_once);

    let step = 1 + usize::from(knob % 7);
    let mut split = Parser::new(max_line, max_event);
    let mut in_chunks = Vec::new();
    for chunk in stream.chunks(step) {
        split.feed(chunk, &mut in_chunks);
    }
    assert_eq!(
        at_once, in_chunks,
        "items depend on how the stream was split"
    );
    assert_eq!(whole.last_id(), split.last_id());

    for item in &at_once {
        if let Item::Event(e) = item {
            assert!(e.data.len() <= max_event, "event over the limit");
            if let Ok(ev) = Event::parse(&e.data) {
                assert!(!ev.topic.is_empty());
                assert!(!ev.json.as_str().contains('\n'), "relayed JSON is not one line");
            }
        }
    }
});
