//! Routes: which source topics are relayed, and under which sink topic.
//!
//! A route is `{"sourcetopic":"timer/sec/1","sinktopic":"/time/1s"}`. A
//! source topic ending in `/` covers every topic under it (`.` covers all);
//! otherwise it matches exactly. An exact route wins over a prefix and the
//! longest prefix wins. The sink topic may be empty, missing or `.` (the
//! event's own topic) and may use `{topic}` (the whole source topic) and
//! `{suffix}` (the part after the matched prefix; empty for exact routes).
//!
//! [`Routes`] is the canonical, sorted set (what the API lists and the state
//! file holds); [`Table`] is its compiled form, swapped in whole after every
//! accepted change, so an event is routed by the table in force when it
//! arrived.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::api_error::ApiError;

/// A route as the API and the state file spell it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteSpec {
    pub sourcetopic: String,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub sinktopic: String,
}

/// The body of `DELETE /events`: only the source topic matters.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteKey {
    pub sourcetopic: String,
    /// Accepted (so a listed route can be sent back as is) and ignored.
    #[serde(default, deserialize_with = "null_as_empty")]
    #[allow(dead_code)]
    pub sinktopic: String,
}

fn null_as_empty<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
}

/// The longest topic MQTT allows, in bytes.
pub const MAX_TOPIC_LEN: usize = 65_535;

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

    fn parse(text: &str) -> Result<Template, String> {
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

    fn only_suffix(&self) -> bool {
        self.0.iter().all(|p| *p == Part::Suffix)
    }
}

/// Whether a source topic is a prefix (subtree) route.
fn is_prefix(sourcetopic: &str) -> bool {
    sourcetopic == "." || sourcetopic.ends_with('/')
}

/// Checks one route; the message says what is wrong with it.
pub fn validate(spec: &RouteSpec) -> Result<Template, String> {
    let st = &spec.sourcetopic;
    if st.is_empty() {
        return Err("sourcetopic must not be empty (use \".\" for every topic)".into());
    }
    if st.len() > MAX_TOPIC_LEN {
        return Err(format!(
            "sourcetopic is {} bytes long; the limit is {MAX_TOPIC_LEN}",
            st.len()
        ));
    }
    if st.chars().any(char::is_control) {
        return Err(format!("sourcetopic {st:?} contains a control character"));
    }
    if spec.sinktopic.len() > MAX_TOPIC_LEN {
        return Err(format!(
            "sinktopic is {} bytes long; the limit is {MAX_TOPIC_LEN}",
            spec.sinktopic.len()
        ));
    }
    if spec.sinktopic.chars().any(char::is_control) {
        return Err(format!(
            "sinktopic {:?} contains a control character",
            spec.sinktopic
        ));
    }
    let template = Template::parse(&spec.sinktopic)?;
    if !is_prefix(st) && template.only_suffix() {
        return Err(format!(
            "sinktopic {:?} would be empty: {{suffix}} is empty for the exact route {st:?} (end sourcetopic with / for a subtree)",
            spec.sinktopic
        ));
    }
    Ok(template)
}

/// The canonical set of routes, keyed and sorted by source topic.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Routes {
    map: BTreeMap<String, RouteSpec>,
}

fn check_batch<'a>(items: impl IntoIterator<Item = &'a RouteSpec>) -> Result<(), ApiError> {
    let mut seen = std::collections::HashSet::new();
    for (i, spec) in items.into_iter().enumerate() {
        validate(spec).map_err(|m| ApiError::bad_request(format!("route {i}: {m}")))?;
        if !seen.insert(spec.sourcetopic.as_str()) {
            return Err(ApiError::bad_request(format!(
                "route {i}: sourcetopic {:?} appears more than once in the request",
                spec.sourcetopic
            )));
        }
    }
    Ok(())
}

impl Routes {
    /// Builds the set from stored routes, checking each.
    pub fn from_specs(specs: Vec<RouteSpec>) -> Result<Routes, ApiError> {
        check_batch(&specs)?;
        Ok(Routes {
            map: specs
                .into_iter()
                .map(|s| (s.sourcetopic.clone(), s))
                .collect(),
        })
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn list(&self) -> Vec<RouteSpec> {
        self.map.values().cloned().collect()
    }

    pub fn get(&self, sourcetopic: &str) -> Option<&RouteSpec> {
        self.map.get(sourcetopic)
    }

    /// `POST`: adds every route or none; an existing source topic is a conflict.
    pub fn with_added(&self, items: &[RouteSpec]) -> Result<Routes, ApiError> {
        check_batch(items)?;
        let existing: Vec<&str> = items
            .iter()
            .filter(|s| self.map.contains_key(&s.sourcetopic))
            .map(|s| s.sourcetopic.as_str())
            .collect();
        if !existing.is_empty() {
            return Err(ApiError::conflict(format!(
                "a route already exists for sourcetopic {}; use PUT to change it (app event-repeater manage put SOURCETOPIC SINKTOPIC)",
                quote_list(&existing)
            )));
        }
        let mut next = self.clone();
        for s in items {
            next.map.insert(s.sourcetopic.clone(), s.clone());
        }
        Ok(next)
    }

    /// `PUT`: adds or replaces the given routes.
    pub fn with_upserted(&self, items: &[RouteSpec]) -> Result<Routes, ApiError> {
        check_batch(items)?;
        let mut next = self.clone();
        for s in items {
            next.map.insert(s.sourcetopic.clone(), s.clone());
        }
        Ok(next)
    }

    /// `PUT ?replace=true`: exactly the given routes.
    pub fn replaced_by(items: &[RouteSpec]) -> Result<Routes, ApiError> {
        Routes::from_specs(items.to_vec())
    }

    /// `DELETE`: removes every named route or none; an unknown one is 404.
    pub fn with_removed(&self, keys: &[String]) -> Result<(Routes, Vec<RouteSpec>), ApiError> {
        let mut seen = std::collections::HashSet::new();
        for (i, k) in keys.iter().enumerate() {
            if k.is_empty() {
                return Err(ApiError::bad_request(format!(
                    "route {i}: sourcetopic must not be empty"
                )));
            }
            if !seen.insert(k.as_str()) {
                return Err(ApiError::bad_request(format!(
                    "route {i}: sourcetopic {k:?} appears more than once in the request"
                )));
            }
        }
        let missing: Vec<&str> = keys
            .iter()
            .filter(|k| !self.map.contains_key(k.as_str()))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            return Err(ApiError::not_found(format!(
                "no route for sourcetopic {}; nothing was removed",
                quote_list(&missing)
            )));
        }
        let mut next = self.clone();
        let removed = keys.iter().filter_map(|k| next.map.remove(k)).collect();
        Ok((next, removed))
    }
}

fn quote_list(items: &[&str]) -> String {
    items
        .iter()
        .map(|s| format!("{s:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One compiled route with its event counter.
#[derive(Debug)]
pub struct Entry {
    pub spec: RouteSpec,
    template: Template,
    pub events: Arc<AtomicU64>,
}

/// Where an event goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub sink_topic: String,
    /// The matched route's source topic, or `None` for `--allowall`.
    pub route: Option<String>,
}

/// The compiled routes: exact topics, prefixes and the `--allowall` fallback.
#[derive(Debug, Default)]
pub struct Table {
    exact: HashMap<String, Arc<Entry>>,
    prefixes: HashMap<String, Arc<Entry>>,
    root: Option<Arc<Entry>>,
    allowall: bool,
    /// Counts events taken by `--allowall`.
    pub allowall_events: Arc<AtomicU64>,
}

impl Table {
    /// Compiles `routes`, keeping the counters of routes that `previous` had.
    pub fn build(routes: &Routes, allowall: bool, previous: Option<&Table>) -> Table {
        let mut table = Table {
            allowall,
            allowall_events: previous
                .map(|p| p.allowall_events.clone())
                .unwrap_or_default(),
            ..Table::default()
        };
        for spec in routes.map.values() {
            // Every stored route was validated on the way in.
            let template = validate(spec).unwrap_or_else(|_| Template::own_topic());
            let events = previous
                .and_then(|p| p.entry(&spec.sourcetopic))
                .map(|e| e.events.clone())
                .unwrap_or_default();
            let entry = Arc::new(Entry {
                spec: spec.clone(),
                template,
                events,
            });
            let st = spec.sourcetopic.clone();
            if st == "." {
                table.root = Some(entry);
            } else if st.ends_with('/') {
                table.prefixes.insert(st, entry);
            } else {
                table.exact.insert(st, entry);
            }
        }
        table
    }

    fn entry(&self, sourcetopic: &str) -> Option<&Arc<Entry>> {
        if sourcetopic == "." {
            return self.root.as_ref();
        }
        self.exact
            .get(sourcetopic)
            .or_else(|| self.prefixes.get(sourcetopic))
    }

    /// Every route with its counter, for `/metrics`.
    pub fn entries(&self) -> impl Iterator<Item = &Arc<Entry>> {
        self.exact
            .values()
            .chain(self.prefixes.values())
            .chain(self.root.iter())
    }

    pub fn allowall(&self) -> bool {
        self.allowall
    }

    /// Routes an event on `topic`: exact first, then the longest prefix, then
    /// `.`, then `--allowall`. Counts the event on the route taken.
    pub fn route(&self, topic: &str) -> Option<Decision> {
        if let Some(e) = self.exact.get(topic) {
            return Some(Self::take(e, topic, ""));
        }
        if !self.prefixes.is_empty() {
            let mut end = topic.len();
            while let Some(i) = topic[..end].rfind('/') {
                let prefix = &topic[..=i];
                if let Some(e) = self.prefixes.get(prefix) {
                    return Some(Self::take(e, topic, &topic[i + 1..]));
                }
                end = i;
            }
        }
        if let Some(e) = &self.root {
            return Some(Self::take(e, topic, topic));
        }
        if self.allowall {
            self.allowall_events.fetch_add(1, Ordering::Relaxed);
            return Some(Decision {
                sink_topic: topic.to_string(),
                route: None,
            });
        }
        None
    }

    fn take(e: &Entry, topic: &str, suffix: &str) -> Decision {
        e.events.fetch_add(1, Ordering::Relaxed);
        Decision {
            sink_topic: e.template.render(topic, suffix),
            route: Some(e.spec.sourcetopic.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: &str, t: &str) -> RouteSpec {
        RouteSpec {
            sourcetopic: s.into(),
            sinktopic: t.into(),
        }
    }

    fn table(specs: &[(&str, &str)], allowall: bool) -> Table {
        let routes = Routes::from_specs(specs.iter().map(|(s, t)| spec(s, t)).collect()).unwrap();
        Table::build(&routes, allowall, None)
    }

    fn sink(t: &Table, topic: &str) -> Option<String> {
        t.route(topic).map(|d| d.sink_topic)
    }

    #[test]
    fn exact_routes_match_exactly() {
        let t = table(&[("timer/sec/1", "/time/1s")], false);
        assert_eq!(sink(&t, "timer/sec/1").as_deref(), Some("/time/1s"));
        assert_eq!(sink(&t, "timer/sec/10"), None);
        assert_eq!(sink(&t, "timer/sec"), None);
    }

    #[test]
    fn empty_missing_or_dot_sinktopic_is_the_events_own_topic() {
        let t = table(&[("a/b", ""), ("c/d", "."), ("e/", "")], false);
        assert_eq!(sink(&t, "a/b").as_deref(), Some("a/b"));
        assert_eq!(sink(&t, "c/d").as_deref(), Some("c/d"));
        assert_eq!(sink(&t, "e/f/g").as_deref(), Some("e/f/g"));
        let parsed: RouteSpec = serde_json::from_str(r#"{"sourcetopic":"x"}"#).unwrap();
        assert_eq!(parsed.sinktopic, "");
    }

    #[test]
    fn prefixes_suffix_and_topic_templates() {
        let t = table(
            &[
                ("timer/", "site1/{suffix}"),
                ("timer/sec/", "fast/{suffix}/of/{topic}"),
                ("timer/sec/5", "five"),
            ],
            false,
        );
        assert_eq!(sink(&t, "timer/min/1").as_deref(), Some("site1/min/1"));
        assert_eq!(
            sink(&t, "timer/sec/1").as_deref(),
            Some("fast/1/of/timer/sec/1")
        );
        assert_eq!(sink(&t, "timer/sec/5").as_deref(), Some("five"));
        assert_eq!(sink(&t, "timers/x"), None);
    }

    #[test]
    fn suffix_alone_on_the_prefix_itself_renders_empty_and_mqtt_refuses_it() {
        // Found by fuzzing (route_json): the route is valid (other topics
        // under "a/" have a suffix), the event on "a/" itself has none.
        let t = table(&[("a/", "{suffix}")], false);
        assert_eq!(sink(&t, "a/b").as_deref(), Some("b"));
        assert_eq!(sink(&t, "a/").as_deref(), Some(""));
        assert!(matches!(
            crate::sink::mqtt::refuse("", 10, 1 << 20),
            Some(crate::sink::Refusal::InvalidTopic(_))
        ));
    }

    #[test]
    fn root_route_then_allowall_come_last() {
        let t = table(&[("a/", "A/{suffix}"), (".", "all/{suffix}")], false);
        assert_eq!(sink(&t, "a/x").as_deref(), Some("A/x"));
        assert_eq!(sink(&t, "b/y").as_deref(), Some("all/b/y"));
        let t = table(&[("a/", "A/{suffix}")], true);
        assert_eq!(sink(&t, "b/y").as_deref(), Some("b/y"));
        assert_eq!(t.route("b/y").unwrap().route, None);
        assert_eq!(sink(&t, "a/x").as_deref(), Some("A/x"));
    }

    #[test]
    fn counters_survive_a_rebuild() {
        let t1 = table(&[("a", "x")], false);
        t1.route("a");
        t1.route("a");
        let routes = Routes::from_specs(vec![spec("a", "y"), spec("b", "")]).unwrap();
        let t2 = Table::build(&routes, false, Some(&t1));
        t2.route("a");
        assert_eq!(t2.entry("a").unwrap().events.load(Ordering::Relaxed), 3);
        assert_eq!(t2.entry("b").unwrap().events.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn validation_messages() {
        let bad = [
            (spec("", "x"), "must not be empty"),
            (spec("a", "b/{nope}"), "unknown placeholder"),
            (spec("a", "b/+"), "'+'"),
            (spec("a", "#"), "'#'"),
            (spec("a", "{suffix}"), "would be empty"),
            (spec("a\n", "x"), "control character"),
        ];
        for (s, want) in bad {
            let err = validate(&s).unwrap_err();
            assert!(err.contains(want), "{s:?}: {err}");
        }
        assert!(validate(&spec("a/", "{suffix}")).is_ok());
        assert!(validate(&spec("a", "pre/{topic}/post")).is_ok());
    }

    #[test]
    fn batches_are_all_or_nothing() {
        let r = Routes::from_specs(vec![spec("a", "")]).unwrap();
        let err = r.with_added(&[spec("b", ""), spec("a", "x")]).unwrap_err();
        assert_eq!(err.status.as_u16(), 409);
        let err = r.with_added(&[spec("b", ""), spec("b", "x")]).unwrap_err();
        assert_eq!(err.status.as_u16(), 400);
        let err = r.with_added(&[spec("b", ""), spec("", "x")]).unwrap_err();
        assert!(err.message.contains("route 1"), "{}", err.message);
        let err = r.with_removed(&["a".into(), "zz".into()]).unwrap_err();
        assert_eq!(err.status.as_u16(), 404);
        let (after, removed) = r.with_removed(&["a".into()]).unwrap();
        assert!(after.is_empty());
        assert_eq!(removed, vec![spec("a", "")]);
        let up = r.with_upserted(&[spec("a", "new"), spec("c", "")]).unwrap();
        assert_eq!(up.list(), vec![spec("a", "new"), spec("c", "")]);
        let rep = Routes::replaced_by(&[spec("z", "")]).unwrap();
        assert_eq!(rep.list(), vec![spec("z", "")]);
    }

    #[test]
    fn unknown_fields_and_wrong_types_are_refused() {
        assert!(serde_json::from_str::<RouteSpec>(r#"{"sourcetopic":"a","x":1}"#).is_err());
        assert!(serde_json::from_str::<RouteSpec>(r#"{"sourcetopic":1}"#).is_err());
        assert!(serde_json::from_str::<RouteSpec>(r#"{"sinktopic":"a"}"#).is_err());
        let n: RouteSpec = serde_json::from_str(r#"{"sourcetopic":"a","sinktopic":null}"#).unwrap();
        assert_eq!(n.sinktopic, "");
    }
}
