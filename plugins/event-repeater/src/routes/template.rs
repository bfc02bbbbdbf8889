//! A sink topic compiled: literal parts, the `{topic}` and `{suffix}`
//! placeholders, and fields of the event (`{/device/id}`: a JSON pointer).
//!
//! A field's value must be a non-empty string or a number, with no `/`
//! (a payload may not add topic levels); the topic it makes is then checked
//! by the sink's rules like any other, so no wildcard or control character
//! from a payload reaches a broker.

/// The longest JSON pointer in a placeholder.
const MAX_POINTER: usize = 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Lit(String),
    Topic,
    Suffix,
    /// A JSON pointer into the event's data.
    Field(String),
}

/// A compiled sink topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template(Vec<Part>);

impl Template {
    /// The event's own topic.
    pub fn own_topic() -> Template {
        Template(vec![Part::Topic])
    }

    pub(super) fn parse(text: &str) -> Result<Template, String> {
        if text.is_empty() || text == "." {
            return Ok(Template::own_topic());
        }
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Lit(rest[..open].to_string()));
            }
            let after = &rest[open..];
            if let Some(r) = after.strip_prefix("{topic}") {
                parts.push(Part::Topic);
                rest = r;
            } else if let Some(r) = after.strip_prefix("{suffix}") {
                parts.push(Part::Suffix);
                rest = r;
            } else if let Some((pointer, r)) = after
                .strip_prefix("{/")
                .and_then(|a| a.split_once('}'))
                .filter(|(p, _)| p.len() < MAX_POINTER && !p.contains('{'))
            {
                parts.push(Part::Field(format!("/{pointer}")));
                rest = r;
            } else {
                let shown: String = after.chars().take(20).collect();
                return Err(format!(
                    "sinktopic {text:?} has an unknown placeholder at {shown:?}; only {{topic}}, {{suffix}} and fields of the event ({{/json/pointer}}) are allowed"
                ));
            }
        }
        if !rest.is_empty() {
            parts.push(Part::Lit(rest.to_string()));
        }
        for part in &parts {
            if let Part::Lit(lit) = part {
                if let Some(c) = lit.chars().find(|c| matches!(c, '+' | '#' | '\0')) {
                    return Err(format!(
                        "sinktopic {text:?} contains {c:?}, which MQTT does not allow in a topic to publish to"
                    ));
                }
            }
        }
        Ok(Template(parts))
    }

    /// The sink topic for an event on `topic`, matched with `suffix` left over.
    pub fn render(&self, topic: &str, suffix: &str) -> String {
        if let [Part::Topic] = self.0.as_slice() {
            return topic.to_string();
        }
        let mut out = String::with_capacity(topic.len() + 16);
        for part in &self.0 {
            match part {
                Part::Lit(l) => out.push_str(l),
                Part::Topic => out.push_str(topic),
                Part::Suffix => out.push_str(suffix),
                // Rendered per event by `render_fields`.
                Part::Field(_) => {}
            }
        }
        out
    }

    /// Whether it names fields of the event (rendered per event).
    pub fn has_fields(&self) -> bool {
        self.0.iter().any(|p| matches!(p, Part::Field(_)))
    }

    /// The sink topic with the fields taken from `data` (the event's JSON);
    /// an `Err` says which field is missing or unusable.
    pub fn render_fields(&self, topic: &str, suffix: &str, data: &str) -> Result<String, String> {
        let value: serde_json::Value =
            serde_json::from_str(data).map_err(|_| "the event is not JSON".to_string())?;
        let mut out = String::with_capacity(topic.len() + 32);
        for part in &self.0 {
            match part {
                Part::Lit(l) => out.push_str(l),
                Part::Topic => out.push_str(topic),
                Part::Suffix => out.push_str(suffix),
                Part::Field(pointer) => match value.pointer(pointer) {
                    Some(serde_json::Value::String(s)) if !s.is_empty() && !s.contains('/') => {
                        out.push_str(s)
                    }
                    Some(serde_json::Value::Number(n)) => out.push_str(&n.to_string()),
                    Some(serde_json::Value::String(s)) if s.contains('/') => {
                        return Err(format!(
                            "the field {pointer} holds a '/', which would add topic levels"
                        ))
                    }
                    _ => return Err(format!("the event has no string or number at {pointer}")),
                },
            }
        }
        Ok(out)
    }

    pub(super) fn only_suffix(&self) -> bool {
        self.0.iter().all(|p| *p == Part::Suffix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_of_the_event_fill_their_placeholders() {
        let t = Template::parse("site/{/device/id}/{suffix}").unwrap();
        assert!(t.has_fields());
        let data = r#"{"device":{"id":"d7","n":3}}"#;
        assert_eq!(t.render_fields("a/b", "b", data).unwrap(), "site/d7/b");
        let n = Template::parse("n/{/device/n}").unwrap();
        assert_eq!(n.render_fields("a", "", data).unwrap(), "n/3");
        let e = t.render_fields("a", "", r#"{"device":{}}"#).unwrap_err();
        assert!(e.contains("/device/id"), "{e}");
        let e = t
            .render_fields("a", "", r#"{"device":{"id":"x/y"}}"#)
            .unwrap_err();
        assert!(e.contains("topic levels"), "{e}");
        assert!(t
            .render_fields("a", "", r#"{"device":{"id":true}}"#)
            .is_err());
        assert!(!Template::parse("x/{topic}").unwrap().has_fields());
        assert!(Template::parse("x/{nope}")
            .unwrap_err()
            .contains("{/json/pointer}"));
    }
}
