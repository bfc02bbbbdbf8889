//! What `plugin apply` says: one line per plugin and a last line, or with
//! `-o json` one JSON document (for fleets: every step, whether it worked,
//! and why not).

use serde_json::{json, Value};

use crate::plugin_set::plan::{Action, Step};
use app_plugin::text::escape_for_terminal as printable;

/// One step as done.
pub struct Done<'a> {
    pub step: &'a Step,
    /// The refusal's message, when it failed.
    pub error: Option<String>,
}

/// The line for `step`.
pub fn line(step: &Step) -> String {
    let to = step.to.as_ref();
    let version = |v: &str| printable(v).into_owned();
    let what = match (step.action, &step.from, to) {
        (Action::Remove, Some(from), _) => format!("remove {}", version(from)),
        (Action::Install, _, Some(t)) => format!("install {}", version(&t.version)),
        (Action::Keep, _, Some(t)) => format!("keep {}", version(&t.version)),
        (action, Some(from), Some(t)) => {
            format!(
                "{} {} → {}",
                action.word(),
                version(from),
                version(&t.version)
            )
        }
        (action, _, _) => action.word().to_string(),
    };
    let mut notes = Vec::new();
    if let Some(t) = to {
        notes.push(format!("index {}", t.index));
    }
    match (step.pin, step.pin_changes) {
        (true, false) => notes.push("pinned".into()),
        (true, true) => notes.push("pinned now".into()),
        (false, true) => notes.push("unpinned now".into()),
        (false, false) => {}
    }
    if notes.is_empty() {
        format!("{}: {what}", step.name)
    } else {
        format!("{}: {what} ({})", step.name, notes.join(", "))
    }
}

/// Whether `step` changes anything.
pub fn changes(step: &Step) -> bool {
    step.action != Action::Keep || step.pin_changes
}

/// The `-o json` document.
pub fn json(file: &str, lock: &str, dry_run: bool, done: &[Done]) -> Value {
    let steps: Vec<Value> = done
        .iter()
        .map(|d| {
            let s = d.step;
            json!({
                "name": s.name,
                "action": s.action.word(),
                "from": s.from,
                "to": s.to.as_ref().map(|t| &t.version),
                "index": s.to.as_ref().map(|t| &t.index),
                "sha256": s.to.as_ref().map(|t| &t.sha256),
                "pinned": s.pin,
                "changes": changes(s),
                "ok": d.error.is_none(),
                "error": d.error,
            })
        })
        .collect();
    json!({
        "file": file,
        "lock": lock,
        "dry_run": dry_run,
        "changed": done.iter().filter(|d| changes(d.step) && d.error.is_none()).count(),
        "failed": done.iter().filter(|d| d.error.is_some()).count(),
        "steps": steps,
    })
}
