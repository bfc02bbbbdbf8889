//! A sink topic compiled: literal parts and the `{topic}` and `{suffix}`
//! placeholders.

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Lit(String),
    Topic,
    Suffix,
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
            } else {
                let shown: String = after.chars().take(20).collect();
                return Err(format!(
                    "sinktopic {text:?} has an unknown placeholder at {shown:?}; only {{topic}} and {{suffix}} are allowed"
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
            }
        }
        out
    }

    pub(super) fn only_suffix(&self) -> bool {
        self.0.iter().all(|p| *p == Part::Suffix)
    }
}
