//! A fresh start's first checkpoint, on disk before the first event is
//! accepted.
//!
//! Without it, a repeater killed before [`crate::checkpoint::keep`] first
//! wrote (the broker not up yet, so nothing was done) started again from
//! the source's live events: what it had accepted, and what the source sent
//! meanwhile, was gone, and no counter showed it (issue 19's chaos run).
//!
//! So on a start with nothing to resume from, the router hands the first
//! event with an id here before the buffer takes it, and waits until the
//! checkpoint is written and synced: the id in force before it, when an
//! earlier event (not routed, invalid, refused) gave one; otherwise the
//! event's own id together with the event itself, since `Last-Event-ID:
//! <its id>` asks for what comes *after* it. The next start relays that
//! event again, then resumes after its id. The checkpoint keeps the event
//! until it is done ([`crate::ledger::Ledger`] has no id to write while
//! it is pending), and its size limit grows by the largest event.
//!
//! Before that, before the first subscription, [`FirstCheckpoint::mark`]
//! writes a checkpoint holding no id: a start that cannot write its
//! checkpoint (a full disk) does not subscribe at all, so it receives
//! nothing a crash could lose without a trace. A start that wrote the mark
//! and then died before its first event's checkpoint leaves the mark, and
//! the next start says that events since were missed (issue 30: a full
//! disk at the first start, `kill -9`, and 3,019 events gone unsaid).
//!
//! Afterwards the router's only cost is one relaxed load of a flag.

use app_plugin::log::{error, info};
use std::sync::atomic::{AtomicBool, Ordering};

use app_plugin::daemon::Shutdown;

use crate::checkpoint::{CheckpointFile, Held, INTERVAL};
use crate::event_key::EventKey;

pub struct FirstCheckpoint {
    file: CheckpointFile,
    needed: AtomicBool,
}

impl FirstCheckpoint {
    pub fn new(file: CheckpointFile) -> FirstCheckpoint {
        FirstCheckpoint {
            file,
            needed: AtomicBool::new(true),
        }
    }

    /// Whether no checkpoint is on disk yet.
    pub fn needed(&self) -> bool {
        self.needed.load(Ordering::Relaxed)
    }

    /// Writes a checkpoint holding no id before the first subscription,
    /// retried every [`INTERVAL`] until it is on disk; `problem` is told
    /// what fails (and `None` once written), for `/healthz`. `false`:
    /// `cancel` fired first.
    pub async fn mark(&self, problem: impl Fn(Option<&str>), cancel: &Shutdown) -> bool {
        let mut failing = false;
        loop {
            let file = self.file.clone();
            let result = tokio::task::spawn_blocking(move || file.save(None, true))
                .await
                .unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())));
            match result {
                Ok(()) => {
                    if failing {
                        problem(None);
                        info!(
                            "wrote the checkpoint {}; subscribing to the source",
                            self.file.path().display()
                        );
                    }
                    return true;
                }
                Err(e) if !failing => {
                    failing = true;
                    let text = format!(
                        "cannot write the checkpoint {}: {e}; not subscribing to the source until it can (retrying every {INTERVAL:?}), so that nothing is received that a restart could not ask for again",
                        self.file.path().display()
                    );
                    error!("{text}");
                    problem(Some(&text));
                }
                Err(_) => {}
            }
            tokio::select! {
                _ = tokio::time::sleep(INTERVAL) => {}
                _ = cancel.recv() => return false,
            }
        }
    }

    /// Writes the first checkpoint before the event (its SSE `data` and
    /// `name`, key `id`) is accepted: `before`, the checkpoint in memory,
    /// or else `id` with the event. A write that fails is retried every [`INTERVAL`], taking no
    /// event meanwhile (the source waits; nothing is accepted that a kill
    /// could lose). `false`: `cancel` fired first; the event is not taken.
    pub async fn write(
        &self,
        before: Option<EventKey>,
        id: &EventKey,
        data: &str,
        name: Option<&str>,
        cancel: &Shutdown,
    ) -> bool {
        let (after, event) = match before {
            Some(before) => (before, None),
            None => (
                id.clone(),
                Some(Held {
                    data: data.to_string(),
                    name: name.map(str::to_string),
                }),
            ),
        };
        let mut failing = false;
        loop {
            let (file, a, e) = (self.file.clone(), after.clone(), event.clone());
            let result = tokio::task::spawn_blocking(move || file.save_first(&a, e.as_ref()))
                .await
                .unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())));
            match result {
                Ok(()) => {
                    self.needed.store(false, Ordering::Relaxed);
                    if failing {
                        info!(
                            "wrote the first checkpoint {}; taking events again",
                            self.file.path().display()
                        );
                    }
                    return true;
                }
                Err(e) if !failing => {
                    failing = true;
                    error!(
                        "cannot write the first checkpoint {}: {e}; no event is taken from the source until it is written (retrying every {INTERVAL:?}), so that a restart can ask for them again",
                        self.file.path().display()
                    );
                }
                Err(_) => {}
            }
            tokio::select! {
                _ = tokio::time::sleep(INTERVAL) => {}
                _ = cancel.recv() => return false,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::Loaded;
    use std::sync::Arc;

    fn key(id: &str) -> EventKey {
        EventKey::own(Arc::from(id))
    }

    #[tokio::test]
    async fn the_first_event_is_kept_unless_an_earlier_id_is_known() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("r.routes.json");
        let file = CheckpointFile::beside(&state, "http://a".into(), "mqtt");
        let first = FirstCheckpoint::new(file.clone());
        let cancel = Shutdown::new();
        assert!(first.needed());
        let event = r#"{"topic":"t","data":"x\"y"}"#;
        assert!(first.write(None, &key("7"), event, None, &cancel).await);
        assert!(!first.needed());
        assert_eq!(
            file.load(),
            Ok(Loaded::Replay {
                after: key("7"),
                event: Held {
                    data: event.into(),
                    name: None
                }
            })
        );
        // A later checkpoint drops the event.
        file.save(Some(&key("8")), false).unwrap();
        assert_eq!(file.load(), Ok(Loaded::Resume(key("8"))));
        // With an earlier id (a skipped event), that id alone.
        let first = FirstCheckpoint::new(file.clone());
        assert!(
            first
                .write(Some(key("5")), &key("7"), event, None, &cancel)
                .await
        );
        assert_eq!(file.load(), Ok(Loaded::Resume(key("5"))));
        // An event over the plain checkpoint's 64 KiB: the limit grows with
        // the largest event, and only then is the file read.
        let big = format!(r#"{{"topic":"t","data":"{}"}}"#, "x".repeat(100_000));
        let first = FirstCheckpoint::new(file.clone());
        assert!(
            first
                .write(None, &key("9"), &big, Some("tick"), &cancel)
                .await
        );
        let e = file.load().unwrap_err();
        assert!(
            e.contains("--max-packet-size") && e.contains("remove the file"),
            "{e}"
        );
        let sized = file.clone().holding_events_of(big.len());
        assert_eq!(
            sized.load(),
            Ok(Loaded::Replay {
                after: key("9"),
                event: Held {
                    data: big,
                    name: Some("tick".into())
                }
            })
        );
    }

    #[tokio::test]
    async fn a_failing_write_takes_nothing_until_cancelled() {
        let dir = tempfile::tempdir().unwrap();
        // The checkpoint's directory is a file: every write fails.
        let blocker = dir.path().join("blocker");
        std::fs::write(&blocker, "").unwrap();
        let file = CheckpointFile::beside(&blocker.join("r.routes.json"), "s".into(), "mqtt");
        let first = FirstCheckpoint::new(file);
        let cancel = Shutdown::new();
        let c = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(INTERVAL * 3).await;
            c.trigger(app_plugin::daemon::Reason::Terminate);
        });
        let started = std::time::Instant::now();
        assert!(
            !first
                .write(None, &key("1"), r#"{"topic":"t"}"#, None, &cancel)
                .await
        );
        assert!(started.elapsed() >= INTERVAL * 3, "gave up before cancel");
        assert!(first.needed());
    }

    #[tokio::test]
    async fn the_mark_is_written_before_subscribing_and_waits_for_the_disk() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("later");
        std::fs::write(&blocker, "").unwrap();
        let file = CheckpointFile::beside(&blocker.join("r.routes.json"), "s".into(), "mqtt");
        let first = FirstCheckpoint::new(file.clone());
        let said = std::sync::Mutex::new(Vec::new());
        let cancel = Shutdown::new();
        let mark = first.mark(
            |p| said.lock().unwrap().push(p.map(str::to_string)),
            &cancel,
        );
        let free = async {
            tokio::time::sleep(INTERVAL * 3).await;
            std::fs::remove_file(&blocker).unwrap();
            std::fs::create_dir(&blocker).unwrap();
        };
        let (marked, ()) = tokio::join!(mark, free);
        assert!(marked);
        assert_eq!(file.load(), Ok(Loaded::NoId));
        let said = said.into_inner().unwrap();
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(said[0].as_deref().unwrap_or("").contains("not subscribing"));
        assert_eq!(said[1], None);
        assert!(first.needed(), "the first event still has to be written");
    }
}
