//! Routes: which source topics are relayed, and under which sink topic.
//!
//! A route ([`Route`], the API's type) is
//! `{"sourcetopic":"timer/sec/1","sinktopic":"/time/1s"}`. A source topic
//! ending in `/` covers every topic under it (`.` covers all); otherwise it
//! matches exactly. An exact route wins over a prefix and the longest prefix
//! wins. The sink topic may be empty, missing or `.` (the event's own topic)
//! and may use `{topic}` (the whole source topic) and `{suffix}` (the part
//! after the matched prefix; empty for exact routes).
//!
//! [`Routes`] is the canonical, sorted set (what the API lists and the state
//! file holds); [`Table`] (in `table`) is its compiled form, swapped in whole
//! after every accepted change, so an event is routed by the table in force
//! when it arrived; `template` compiles a sink topic; `last` keeps the
//! last topic's route for the next event.

/// The routing table shared by the API (writer) and the router (reader).
pub type SharedTable = std::sync::Arc<std::sync::RwLock<std::sync::Arc<Table>>>;

/// Reads the current table; a poisoned lock still holds a whole table
/// (writers only swap an `Arc`), so it is used as is.
pub fn current(table: &SharedTable) -> std::sync::Arc<Table> {
    table.read().unwrap_or_else(|e| e.into_inner()).clone()
}

mod last;
pub mod state;
mod store;
mod table;
mod template;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

pub use app_event_repeater_api::Route;
pub use last::LastRoute;
pub use store::RouteStore;
pub use table::{Decision, Entry, Table};
pub use template::Template;

/// Why a route change was refused; nothing changed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RouteError {
    /// A route of the request is not valid.
    #[error("route {index}: {message}")]
    Invalid { index: usize, message: String },
    /// A source topic named twice in one request.
    #[error("route {index}: sourcetopic {topic:?} appears more than once in the request")]
    Repeated { index: usize, topic: String },
    /// `POST` of a source topic that has a route.
    #[error("a route already exists for sourcetopic {0}; use PUT to change it (app event-repeater manage put SOURCETOPIC SINKTOPIC)")]
    Exists(String),
    /// `DELETE` of a source topic that has none.
    #[error("no route for sourcetopic {0}; nothing was removed")]
    Missing(String),
    /// The change would grow the table past `--max-routes`.
    #[error("the change would make {wanted} routes; the limit is {limit} (--max-routes); nothing was changed")]
    TooMany { wanted: usize, limit: usize },
    /// The state file could not be written.
    #[error("cannot write the state file {}: {source}; nothing was changed", path.display())]
    Save {
        path: PathBuf,
        source: Arc<std::io::Error>,
    },
    /// A task of the change failed (a bug).
    #[error("{0}")]
    Internal(String),
}

/// The longest topic MQTT allows, in bytes.
pub const MAX_TOPIC_LEN: usize = 65_535;

/// Whether a source topic is a prefix (subtree) route.
fn is_prefix(sourcetopic: &str) -> bool {
    sourcetopic == "." || sourcetopic.ends_with('/')
}

/// Checks one route; the message says what is wrong with it.
pub fn validate(spec: &Route) -> Result<Template, String> {
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
    map: BTreeMap<String, Route>,
}

fn check_batch<'a>(items: impl IntoIterator<Item = &'a Route>) -> Result<(), RouteError> {
    let mut seen = std::collections::HashSet::new();
    // Counted from 1, as a person counts (and `manage apply` does).
    for (index, spec) in (1..).zip(items) {
        validate(spec).map_err(|message| RouteError::Invalid { index, message })?;
        if !seen.insert(spec.sourcetopic.as_str()) {
            return Err(RouteError::Repeated {
                index,
                topic: spec.sourcetopic.clone(),
            });
        }
    }
    Ok(())
}

impl Routes {
    /// Builds the set from stored routes, checking each.
    pub fn from_specs(specs: Vec<Route>) -> Result<Routes, RouteError> {
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

    pub fn list(&self) -> Vec<Route> {
        self.map.values().cloned().collect()
    }

    pub fn get(&self, sourcetopic: &str) -> Option<&Route> {
        self.map.get(sourcetopic)
    }

    /// `POST`: adds every route or none; an existing source topic is a conflict.
    pub fn with_added(&self, items: &[Route]) -> Result<Routes, RouteError> {
        check_batch(items)?;
        let existing: Vec<&str> = items
            .iter()
            .filter(|s| self.map.contains_key(&s.sourcetopic))
            .map(|s| s.sourcetopic.as_str())
            .collect();
        if !existing.is_empty() {
            return Err(RouteError::Exists(quote_list(&existing)));
        }
        let mut next = self.clone();
        for s in items {
            next.map.insert(s.sourcetopic.clone(), s.clone());
        }
        Ok(next)
    }

    /// `PUT`: adds or replaces the given routes.
    pub fn with_upserted(&self, items: &[Route]) -> Result<Routes, RouteError> {
        check_batch(items)?;
        let mut next = self.clone();
        for s in items {
            next.map.insert(s.sourcetopic.clone(), s.clone());
        }
        Ok(next)
    }

    /// `PUT ?replace=true`: exactly the given routes.
    pub fn replaced_by(items: &[Route]) -> Result<Routes, RouteError> {
        Routes::from_specs(items.to_vec())
    }

    /// `DELETE`: removes every named route or none; an unknown one is 404.
    pub fn with_removed(&self, keys: &[String]) -> Result<(Routes, Vec<Route>), RouteError> {
        let mut seen = std::collections::HashSet::new();
        for (index, k) in (1..).zip(keys) {
            if k.is_empty() {
                return Err(RouteError::Invalid {
                    index,
                    message: "sourcetopic must not be empty".into(),
                });
            }
            if !seen.insert(k.as_str()) {
                return Err(RouteError::Repeated {
                    index,
                    topic: k.clone(),
                });
            }
        }
        let missing: Vec<&str> = keys
            .iter()
            .filter(|k| !self.map.contains_key(k.as_str()))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            return Err(RouteError::Missing(quote_list(&missing)));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: &str, t: &str) -> Route {
        Route::new(s, t)
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
        assert!(matches!(err, RouteError::Exists(_)), "{err}");
        let err = r.with_added(&[spec("b", ""), spec("b", "x")]).unwrap_err();
        assert!(
            matches!(err, RouteError::Repeated { index: 2, .. }),
            "{err}"
        );
        // Counted from 1: the second route of the request is route 2.
        let err = r.with_added(&[spec("b", ""), spec("", "x")]).unwrap_err();
        assert!(err.to_string().starts_with("route 2: "), "{err}");
        let err = r.with_removed(&["a".into(), "a".into()]).unwrap_err();
        assert!(err.to_string().starts_with("route 2: "), "{err}");
        let err = r.with_removed(&["a".into(), "zz".into()]).unwrap_err();
        assert!(matches!(err, RouteError::Missing(_)), "{err}");
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
        assert!(serde_json::from_str::<Route>(r#"{"sourcetopic":"a","x":1}"#).is_err());
        assert!(serde_json::from_str::<Route>(r#"{"sourcetopic":1}"#).is_err());
        assert!(serde_json::from_str::<Route>(r#"{"sinktopic":"a"}"#).is_err());
        let n: Route = serde_json::from_str(r#"{"sourcetopic":"a","sinktopic":null}"#).unwrap();
        assert_eq!(n.sinktopic, "");
    }
}
