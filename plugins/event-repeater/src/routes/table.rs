//! The compiled routes: exact topics, prefixes and the `--allowall`
//! fallback, each with its event counter.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::template::Template;
use super::{validate, Route, Routes};

/// One compiled route with its event counter.
#[derive(Debug)]
pub struct Entry {
    pub spec: Route,
    template: Template,
    pub events: Arc<AtomicU64>,
}

/// Where an event goes: its sink topic, and the route taken (kept so that
/// [`super::LastRoute`] can count a repeat on it).
#[derive(Debug, Clone)]
pub struct Decision {
    pub sink_topic: Arc<str>,
    taken: Taken,
    /// The suffix, when the route's sink topic has fields of the event
    /// to fill in (see [`Decision::for_event`]).
    fields: Option<Arc<str>>,
}

#[derive(Debug, Clone)]
enum Taken {
    Route(Arc<Entry>),
    /// `--allowall`, with its counter.
    AllowAll(Arc<AtomicU64>),
}

impl Decision {
    /// Counts one more event on the route taken.
    pub fn count(&self) {
        let events = match &self.taken {
            Taken::Route(e) => &e.events,
            Taken::AllowAll(events) => events,
        };
        events.fetch_add(1, Ordering::Relaxed);
    }

    /// The sink topic for an event whose JSON is `data`: `None` when it
    /// is `sink_topic` (no fields of the event in it), else rendered from
    /// the event; an `Err` says why it cannot be.
    pub fn for_event(&self, topic: &str, data: &str) -> Result<Option<Arc<str>>, String> {
        let (Some(suffix), Taken::Route(e)) = (&self.fields, &self.taken) else {
            return Ok(None);
        };
        e.template
            .render_fields(topic, suffix, data)
            .map(|t| Some(Arc::from(t)))
    }

    /// The matched route's source topic, or `None` for `--allowall`.
    pub fn route(&self) -> Option<&str> {
        match &self.taken {
            Taken::Route(e) => Some(&e.spec.sourcetopic),
            Taken::AllowAll(_) => None,
        }
    }
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
            let d = Decision {
                sink_topic: Arc::from(topic),
                taken: Taken::AllowAll(self.allowall_events.clone()),
                fields: None,
            };
            d.count();
            return Some(d);
        }
        None
    }

    fn take(e: &Arc<Entry>, topic: &str, suffix: &str) -> Decision {
        let d = Decision {
            sink_topic: Arc::from(e.template.render(topic, suffix)),
            taken: Taken::Route(e.clone()),
            fields: e.template.has_fields().then(|| Arc::from(suffix)),
        };
        d.count();
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: &str, t: &str) -> Route {
        Route::new(s, t)
    }

    fn table(specs: &[(&str, &str)], allowall: bool) -> Table {
        let routes = Routes::from_specs(specs.iter().map(|(s, t)| spec(s, t)).collect()).unwrap();
        Table::build(&routes, allowall, None)
    }

    fn sink(t: &Table, topic: &str) -> Option<String> {
        t.route(topic).map(|d| d.sink_topic.to_string())
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
        let parsed: Route = serde_json::from_str(r#"{"sourcetopic":"x"}"#).unwrap();
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
        assert_eq!(t.route("b/y").unwrap().route(), None);
        assert_eq!(t.allowall_events.load(Ordering::Relaxed), 2);
        assert_eq!(t.route("a/x").unwrap().route(), Some("a/"));
        assert_eq!(sink(&t, "a/x").as_deref(), Some("A/x"));
        assert_eq!(
            t.allowall_events.load(Ordering::Relaxed),
            2,
            "a route took a/x"
        );
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
}
