//! `apply`: the difference between the repeater's routes and a file's, shown
//! as `+` (added), `-` (removed) and `~` (sink topic changed) lines.

use std::collections::BTreeMap;
use std::fmt;

use crate::routes::Route;

/// One difference between the current and the desired route table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// In the file, not on the repeater.
    Add(Route),
    /// On the repeater, not in the file.
    Remove(Route),
    /// On both, with different sink topics.
    Modify {
        /// The route's source topic.
        sourcetopic: String,
        /// The sink topic on the repeater now.
        from: String,
        /// The sink topic in the file.
        to: String,
    },
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The current routes come from the repeater: shown escaped.
        use app_plugin::text::escape_for_terminal as shown;
        match self {
            Change::Add(r) => write!(
                f,
                "+ {} -> {}",
                shown(&r.sourcetopic),
                shown(r.sink_shown())
            ),
            Change::Remove(r) => write!(
                f,
                "- {} -> {}",
                shown(&r.sourcetopic),
                shown(r.sink_shown())
            ),
            Change::Modify {
                sourcetopic,
                from,
                to,
            } => write!(
                f,
                "~ {} -> {} => {}",
                shown(sourcetopic),
                shown(from),
                shown(to)
            ),
        }
    }
}

/// The source topics that `changes` add.
pub fn added(changes: &[Change]) -> Vec<String> {
    changes
        .iter()
        .filter_map(|c| match c {
            Change::Add(r) => Some(r.sourcetopic.clone()),
            _ => None,
        })
        .collect()
}

/// What it takes to turn `current` into `desired`, ordered by source topic.
/// Sink topics that both mean "the event's own topic" (missing, `""`, `"."`)
/// are equal.
pub fn diff(current: &[Route], desired: &[Route]) -> Vec<Change> {
    let now: BTreeMap<&str, &Route> = current
        .iter()
        .map(|r| (r.sourcetopic.as_str(), r))
        .collect();
    let want: BTreeMap<&str, &Route> = desired
        .iter()
        .map(|r| (r.sourcetopic.as_str(), r))
        .collect();
    let mut topics: Vec<&str> = now.keys().chain(want.keys()).copied().collect();
    topics.sort_unstable();
    topics.dedup();
    topics
        .into_iter()
        .filter_map(|topic| match (now.get(topic), want.get(topic)) {
            (None, Some(w)) => Some(Change::Add((*w).clone())),
            (Some(n), None) => Some(Change::Remove((*n).clone())),
            (Some(n), Some(w)) if n.sink_shown() != w.sink_shown() => Some(Change::Modify {
                sourcetopic: topic.to_string(),
                from: n.sink_shown().to_string(),
                to: w.sink_shown().to_string(),
            }),
            _ => None,
        })
        .collect()
}

/// Counts of each kind of change, for the closing line.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    /// Routes added.
    pub added: usize,
    /// Routes whose sink topic changes.
    pub changed: usize,
    /// Routes removed.
    pub removed: usize,
}

impl Summary {
    /// Counts `changes`.
    pub fn of(changes: &[Change]) -> Summary {
        let mut s = Summary::default();
        for c in changes {
            match c {
                Change::Add(_) => s.added += 1,
                Change::Modify { .. } => s.changed += 1,
                Change::Remove(_) => s.removed += 1,
            }
        }
        s
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} added, {} changed, {} removed",
            self.added, self.changed, self.removed
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own(source: &str) -> Route {
        Route::new(source, "")
    }

    #[test]
    fn adds_changes_and_removals_in_topic_order() {
        let current = vec![
            Route::new("timer/sec/5", "/old"),
            Route::new("timer/min/1", "/m"),
            Route::new("timer/sec/30", "/same"),
        ];
        let desired = vec![
            Route::new("timer/sec/1", "/time/1s"),
            Route::new("timer/sec/30", "/same"),
            Route::new("timer/sec/5", "/new"),
        ];
        let lines: Vec<String> = diff(&current, &desired)
            .iter()
            .map(|c| c.to_string())
            .collect();
        assert_eq!(
            lines,
            [
                "- timer/min/1 -> /m",
                "+ timer/sec/1 -> /time/1s",
                "~ timer/sec/5 -> /old => /new",
            ]
        );
        let s = Summary::of(&diff(&current, &desired));
        assert_eq!(s.to_string(), "1 added, 1 changed, 1 removed");
    }

    #[test]
    fn equal_tables_have_no_changes() {
        let a = vec![Route::new("a", "b"), own("c")];
        let mut b = a.clone();
        b.reverse();
        assert!(diff(&a, &b).is_empty());
    }

    #[test]
    fn own_topic_spellings_are_equal() {
        let current = vec![Route::new("a", ""), Route::new("b", ".")];
        let desired = vec![own("a"), Route::new("b", "")];
        assert!(diff(&current, &desired).is_empty());
    }

    #[test]
    fn own_topic_shows_as_dot() {
        let changes = diff(&[], &[own("timer/")]);
        assert_eq!(changes[0].to_string(), "+ timer/ -> .");
        let changes = diff(&[Route::new("x", "/a")], &[own("x")]);
        assert_eq!(changes[0].to_string(), "~ x -> /a => .");
    }

    #[test]
    fn emptying_the_table_removes_everything() {
        let changes = diff(&[Route::new("a", "b"), own("c")], &[]);
        assert_eq!(Summary::of(&changes).removed, 2);
    }
}
