//! Dead letters as a table (`dead-letters list`, the default output):
//! one line each, every field from the repeater escaped for the terminal
//! and cut to a width a line can hold; `-o json` shows them whole.

use app_event_repeater_api::dead_letter::{Letter, Letters};
use app_plugin::text::{escape_for_terminal as shown, shorten};

/// The longest topic, id or reason shown in a cell.
const CELL: usize = 40;
/// The longest `why` shown.
const WHY: usize = 60;

/// The table for an answer of `GET /dead-letters`, if `body` is one.
pub fn table(body: &serde_json::Value) -> Option<String> {
    let letters: Letters = serde_json::from_value(body.clone()).ok()?;
    let header = [
        "TIME",
        "REASON",
        "SOURCE TOPIC",
        "ID",
        "SINK TOPIC",
        "BYTES",
        "WHY",
    ];
    let rows: Vec<[String; 7]> = letters.letters.iter().map(row).collect();
    let mut widths = header.map(str::len);
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut out = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == cells.len() {
                out.push_str(cell);
            } else {
                let pad = w - cell.chars().count();
                out.push_str(cell);
                out.push_str(&" ".repeat(pad + 2));
            }
        }
        out.trim_end().to_string() + "\n"
    };
    let mut out = line(&header.map(String::from));
    for r in &rows {
        out.push_str(&line(r));
    }
    out.push_str(&format!(
        "{} shown, {} matched, {} in the file{}\n",
        letters.letters.len(),
        letters.matched,
        letters.total,
        match letters.unreadable {
            0 => String::new(),
            n => format!(", {n} unreadable line(s) skipped"),
        }
    ));
    Some(out)
}

fn cell(text: Option<&str>, max: usize) -> String {
    match text {
        Some(t) if !t.is_empty() => shorten(&shown(t), max).into_owned(),
        _ => "-".into(),
    }
}

fn row(l: &Letter) -> [String; 7] {
    [
        cell(Some(&l.time), CELL),
        cell(Some(&l.reason), CELL),
        cell(l.source_topic.as_deref(), CELL),
        cell(l.key.as_deref().or(l.id.as_deref()), CELL),
        cell(l.sink_topic.as_deref(), CELL),
        l.data.len().to_string(),
        cell(Some(&l.why), WHY),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn letters_are_one_escaped_line_each_with_the_counts() {
        let body = serde_json::json!({
            "letters": [{
                "seq": 1, "time": "2026-12-03T08:00:00.000Z", "reason": "invalid_topic",
                "why": "a\u{1b}[31mred", "source_topic": "dev/\u{7}x", "id": "7",
                "data": "{}"
            }],
            "matched": 1, "total": 3
        });
        let t = table(&body).expect("a letters answer");
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3, "{t}");
        assert!(lines[0].starts_with("TIME"), "{t}");
        assert!(lines[1].contains("invalid_topic"), "{t}");
        assert!(
            !t.contains('\u{1b}') && !t.contains('\u{7}'),
            "not escaped: {t:?}"
        );
        assert_eq!(lines[2], "1 shown, 1 matched, 3 in the file");
        // Routes are not letters.
        assert!(table(&serde_json::json!([{"sourcetopic": "a"}])).is_none());
    }
}
