//! The route of the last topic, kept for the next event.
//!
//! Events of one topic come in runs. Looking the topic up, rendering its
//! sink topic and copying both into the record cost more, per event, than
//! the rest of the router's work; a repeat now costs a comparison and two
//! reference counts. The table in force is part of the key, so a route
//! change (a new table) is seen by the very next event.

use std::sync::Arc;

use super::{Decision, Table};

/// The last topic routed, the table it was routed by, and the outcome.
#[derive(Default)]
pub struct LastRoute {
    last: Option<Last>,
}

struct Last {
    table: Arc<Table>,
    topic: Arc<str>,
    decision: Option<Decision>,
}

impl LastRoute {
    /// Routes an event on `topic` by `table`, counting it on the route
    /// taken as [`Table::route`] does; returns the topic, shared, and where
    /// it goes (`None`: no route).
    pub fn route(&mut self, table: &Arc<Table>, topic: &str) -> (Arc<str>, Option<Decision>) {
        if let Some(last) = &self.last {
            if Arc::ptr_eq(&last.table, table) && *last.topic == *topic {
                if let Some(d) = &last.decision {
                    d.count();
                }
                return (last.topic.clone(), last.decision.clone());
            }
        }
        let last = Last {
            table: table.clone(),
            topic: Arc::from(topic),
            decision: table.route(topic),
        };
        let routed = (last.topic.clone(), last.decision.clone());
        self.last = Some(last);
        routed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routes::{Route, Routes};
    use std::sync::atomic::Ordering;

    fn table(specs: &[(&str, &str)]) -> Arc<Table> {
        let routes =
            Routes::from_specs(specs.iter().map(|&(s, t)| Route::new(s, t)).collect()).unwrap();
        Arc::new(Table::build(&routes, false, None))
    }

    fn count(t: &Table, sourcetopic: &str) -> u64 {
        let e = t.entries().find(|e| e.spec.sourcetopic == sourcetopic);
        e.map_or(0, |e| e.events.load(Ordering::Relaxed))
    }

    #[test]
    fn repeats_are_counted_and_shared_and_a_new_table_is_seen_at_once() {
        let mut last = LastRoute::default();
        let t1 = table(&[("a/", "A/{suffix}")]);
        let (topic, d) = last.route(&t1, "a/x");
        assert_eq!(
            (&*topic, d.map(|d| d.sink_topic)),
            ("a/x", Some("A/x".into()))
        );
        let (again, d) = last.route(&t1, "a/x");
        assert!(Arc::ptr_eq(&topic, &again), "the repeat made a new topic");
        let first = d.unwrap().sink_topic;
        let (_, d) = last.route(&t1, "a/x");
        assert!(Arc::ptr_eq(&first, &d.unwrap().sink_topic));
        assert_eq!(count(&t1, "a/"), 3);
        // Unrouted topics are kept too, and say so every time.
        assert!(last.route(&t1, "b").1.is_none());
        assert!(last.route(&t1, "b").1.is_none());
        assert_eq!(count(&t1, "a/"), 3);
        // A new table (a route changed) routes the same topic anew.
        let t2 = Arc::new(Table::build(
            &Routes::from_specs(vec![Route::new("b", "B")]).unwrap(),
            false,
            Some(&t1),
        ));
        assert_eq!(
            last.route(&t2, "b").1.map(|d| d.sink_topic),
            Some("B".into())
        );
        assert_eq!(count(&t2, "b"), 1);
    }
}
