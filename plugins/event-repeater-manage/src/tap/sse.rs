//! The little of Server-Sent Events a tap needs: lines in, events
//! (`event:` and `data:`) and comments (`: …`) out.

/// One frame of the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// An event: its `event:` name ("" when none) and its `data:` lines
    /// joined by newlines.
    Event { name: String, data: String },
    /// A comment, without the `:` and one space after it.
    Comment(String),
}

/// Turns lines into frames.
#[derive(Debug, Default)]
pub struct Parser {
    name: String,
    data: Option<String>,
}

impl Parser {
    /// Takes one line (without its `\n`); a frame when the line ends one.
    pub fn line(&mut self, line: &str) -> Option<Frame> {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            let name = std::mem::take(&mut self.name);
            return self.data.take().map(|data| Frame::Event { name, data });
        }
        if let Some(text) = line.strip_prefix(':') {
            return Some(Frame::Comment(
                text.strip_prefix(' ').unwrap_or(text).to_string(),
            ));
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => value.clone_into(&mut self.name),
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_string()),
            },
            // `id:`, `retry:` and unknown fields mean nothing to a tap.
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_and_comments_come_out_whole() {
        let mut p = Parser::default();
        let frames: Vec<Frame> = [
            ": tap open",
            "",
            "event: delivered",
            "data: {\"a\":1}",
            "",
            ":skipped 3 events",
            "data: x",
            "data: y\r",
            "id: 4",
            "",
        ]
        .iter()
        .filter_map(|l| p.line(l))
        .collect();
        assert_eq!(
            frames,
            [
                Frame::Comment("tap open".into()),
                Frame::Event {
                    name: "delivered".into(),
                    data: "{\"a\":1}".into()
                },
                Frame::Comment("skipped 3 events".into()),
                Frame::Event {
                    name: String::new(),
                    data: "x\ny".into()
                },
            ]
        );
    }
}
