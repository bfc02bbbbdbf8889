//! The checkpoint: the id of the newest source event such that it and every
//! event before it (in arrival order) are done — acknowledged by the sink,
//! counted as dropped or refused, or not routed.
//!
//! [`crate::ledger::Ledger`] computes it in memory (the buffer updates it
//! under its lock); [`CheckpointFile`] keeps it beside the routes file,
//! written atomically (temp file + rename) at most every [`INTERVAL`] while
//! it moves and once at a clean shutdown, so a restart after `kill -9`
//! subscribes with `Last-Event-ID: <checkpoint>` and the source replays
//! what was in flight, buffered, or sent while the repeater was down.
//!
//! Events not yet delivered at shutdown are not done: the checkpoint stays
//! before them, so the next start asks the source for them again.
//!
//! A fresh start has no id to resume after until an event arrives, and
//! `Last-Event-ID` means "after this id": the first event's own id would
//! skip it. So the first checkpoint also holds that first event (see
//! [`crate::first_checkpoint`]); the next start relays it again, then
//! resumes after its id.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::event_key::EventKey;

/// How often the checkpoint is written while it moves.
pub const INTERVAL: Duration = Duration::from_millis(100);

/// The largest checkpoint file read (an id is one SSE line; this is
/// generous), plus the largest event when it holds a fresh start's first
/// event ([`CheckpointFile::holding_events_of`]).
const MAX_FILE: u64 = 64 * 1024;

#[derive(Debug, Serialize, Deserialize)]
struct Document {
    version: u32,
    /// The source the checkpoint belongs to, as `--source` resolved it.
    source: String,
    /// The sink protocol of the run that wrote it (`mqtt`, `nats`,
    /// `stderr`); absent in files written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sink: Option<String>,
    /// The SSE id to resume after (`Last-Event-ID`); `null` when the
    /// source cleared it with an empty `id:` (then none is sent).
    last_event_id: Option<String>,
    /// The position's dedup key, when it is not the id's own (an event
    /// without an id of its own: see [`crate::event_key`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    key: Option<String>,
    /// A fresh start's first event (its id is `last_event_id`), written
    /// before it was accepted and kept until it is done: relayed again at
    /// the next start, before resuming after its id. Older releases wrote
    /// the JSON object here; this one writes `data` and `event_name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    event: Option<Box<RawValue>>,
    /// That event's SSE data, as it came (any text: `--payload text`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    data: Option<String>,
    /// That event's SSE `event:` name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    event_name: Option<String>,
}

/// A fresh start's first event, held in the checkpoint until it is done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// Its SSE data.
    pub data: String,
    /// Its SSE `event:` name.
    pub name: Option<String>,
}

/// The checkpoint file of one repeater.
#[derive(Debug, Clone)]
pub struct CheckpointFile {
    path: PathBuf,
    source: String,
    sink: &'static str,
    /// The largest file read.
    max_file: u64,
    /// Held while writing: the first checkpoint and [`keep`] write through
    /// the same temp file.
    writing: Arc<Mutex<()>>,
}

/// What was found at start.
#[derive(Debug, PartialEq, Eq)]
pub enum Loaded {
    /// No file (first start, or a source that never sent an id). An empty
    /// file is an error, not this.
    None,
    /// The position to resume after.
    Resume(EventKey),
    /// The source cleared its id (an empty `id:`) and sent no id since:
    /// there is nothing to resume after.
    NoId,
    /// A fresh start's first event, not done when the repeater stopped: to
    /// relay again (its key `after`), then resume after its id.
    Replay { after: EventKey, event: Held },
    /// An id written by an older release that cannot be sent as a
    /// `Last-Event-ID` header (issue 30): not used.
    Unusable(String),
    /// A checkpoint for another source: not used.
    OtherSource(String),
    /// A checkpoint written by a run into another sink (the stderr demo
    /// before the first MQTT run): not used, since the events it counts as
    /// done never reached this sink.
    OtherSink(String),
}

/// The checkpoint's path for `state_file` (see [`CheckpointFile::beside`]).
pub fn path_beside(state_file: &Path) -> PathBuf {
    let name = state_file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "event-repeater".into());
    let base = name.strip_suffix(".routes.json").unwrap_or(&name);
    state_file.with_file_name(format!("{base}.checkpoint"))
}

impl CheckpointFile {
    /// The file beside `state_file`: `NAME.routes.json` → `NAME.checkpoint`,
    /// any other name gets `.checkpoint` appended.
    pub fn beside(state_file: &Path, source: String, sink: &'static str) -> CheckpointFile {
        CheckpointFile {
            path: path_beside(state_file),
            source,
            sink,
            max_file: MAX_FILE,
            writing: Arc::default(),
        }
    }

    /// Reads files holding a first event of up to `max_event` bytes, which
    /// the file holds as a JSON string: at most 6 bytes for each (`\u001f`).
    pub fn holding_events_of(mut self, max_event: usize) -> CheckpointFile {
        self.max_file = MAX_FILE.saturating_add((max_event as u64).saturating_mul(6));
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the checkpoint; an `Err` is a file that exists and cannot be
    /// used (not a regular file, too large, not a checkpoint).
    pub fn load(&self) -> Result<Loaded, String> {
        if let Ok(meta) = std::fs::metadata(&self.path) {
            if meta.is_file() && meta.len() > self.max_file {
                // Only a fresh start's held first event makes it large: one
                // from a run that took larger events than this one does.
                return Err(format!(
                    "the checkpoint file {} is {} bytes, over the {} this run reads (64 KiB plus room for the largest event it takes, which --max-packet-size sets): it holds the first event of a run that took larger events. Start with that run's --max-packet-size to relay it and resume, or remove the file to start from the source's live events (events sent since the last checkpoint are then missed)",
                    self.path.display(),
                    meta.len(),
                    self.max_file
                ));
            }
        }
        let Some(text) = crate::files::read_regular(&self.path, self.max_file)? else {
            return Ok(Loaded::None);
        };
        if text.trim().is_empty() {
            // The repeater writes the file whole (fsynced temp file, rename),
            // so an empty one was emptied by something else; reading it as
            // "no checkpoint" would skip every event sent while the repeater
            // was down, without a word.
            return Err(format!(
                "the checkpoint file {} is empty, so the repeater cannot tell which events it already delivered (it writes the file whole: something else emptied it). Restore it, or remove it to start from the source's live events (events sent since the last checkpoint are then missed)",
                self.path.display()
            ));
        }
        let doc: Document = serde_json::from_str(&text).map_err(|e| {
            format!(
                "the checkpoint file {} is not valid ({e}); restore it, or remove it to start from the source's live events (events sent since the last checkpoint are then missed)",
                self.path.display()
            )
        })?;
        if doc.version != 1 {
            return Err(format!(
                "the checkpoint file {} has version {}{}; this repeater reads version 1 and leaves the file alone: install that release again, or move the file aside to start without it",
                self.path.display(),
                doc.version,
                if doc.version > 1 { ", from a newer release of app" } else { "" }
            ));
        }
        // Older releases wrote a source's user in clear (`http://u:***@…`);
        // masked the same way now, it is the same source.
        if doc.source != self.source && app_plugin::redact::url(&doc.source) != self.source {
            return Ok(Loaded::OtherSource(doc.source));
        }
        if let Some(sink) = doc.sink.filter(|s| s != self.sink) {
            return Ok(Loaded::OtherSink(sink));
        }
        // An empty id (an older release kept `id:` with no value as the
        // id "") is no id: a resume would send an empty Last-Event-ID.
        let Some(id) = doc.last_event_id.filter(|id| !id.is_empty()) else {
            return Ok(Loaded::NoId);
        };
        if let Some(why) = crate::sse::refuse_id(id.as_bytes()) {
            return Ok(Loaded::Unusable(format!(
                "it holds the event id {} {why}",
                app_plugin::text::escape_for_terminal(&id)
            )));
        }
        let after = EventKey::restored(&id, doc.key.as_deref());
        let held = match (doc.data, doc.event) {
            (Some(data), _) => Some(Held {
                data,
                name: doc.event_name,
            }),
            (None, Some(json)) => Some(Held {
                data: json.get().to_string(),
                name: None,
            }),
            (None, None) => None,
        };
        Ok(match held {
            Some(event) => Loaded::Replay { after, event },
            None => Loaded::Resume(after),
        })
    }

    /// Writes `id` atomically (temp file, rename), mode 0600; the file's
    /// data always reaches the disk before the rename, so not even a power
    /// loss leaves it empty or partly written. `sync` also flushes the
    /// directory (at shutdown); without it a power loss can take the file
    /// back to an earlier checkpoint, which means more duplicates, not
    /// losses.
    pub fn save(&self, id: Option<&EventKey>, sync: bool) -> io::Result<()> {
        self.write(id, None, sync)
    }

    /// Writes the first checkpoint of a fresh start, synced: `id`, and the
    /// event (one line of JSON) that bears it, when there is no earlier id
    /// to resume after.
    pub fn save_first(&self, id: &EventKey, event: Option<&Held>) -> io::Result<()> {
        self.write(Some(id), event, true)
    }

    fn write(&self, id: Option<&EventKey>, event: Option<&Held>, sync: bool) -> io::Result<()> {
        let doc = Document {
            version: 1,
            source: self.source.clone(),
            sink: Some(self.sink.to_string()),
            last_event_id: id.map(|k| k.last_event_id().to_string()),
            key: id.filter(|k| !k.is_own()).map(|k| k.as_str().to_string()),
            event: None,
            data: event.map(|e| e.data.clone()),
            event_name: event.and_then(|e| e.name.clone()),
        };
        let mut text = serde_json::to_vec(&doc).map_err(io::Error::other)?;
        text.push(b'\n');
        let _writing = self.writing.lock().unwrap_or_else(|e| e.into_inner());
        crate::files::write_private(&self.path, &text, sync)
    }
}

/// Writes the checkpoint `current()` returns every [`INTERVAL`] while its
/// version moves, until `stop` fires; then once more, synced to disk. A
/// failed write (a full disk) is logged once and tried again every
/// [`INTERVAL`] until it succeeds, whether or not the checkpoint moves: a
/// repeater that went idle with the disk full must not keep the old id on
/// disk once space returns (a later crash would replay all since then).
///
/// `on_disk` is the position the file holds at the start (what was loaded):
/// a position that becomes "no id" (the source cleared its id) is written
/// as such, but a fresh start that never saw an id writes nothing.
pub async fn keep<F>(
    file: CheckpointFile,
    on_disk: Option<EventKey>,
    current: F,
    stop: app_plugin::daemon::Shutdown,
) where
    F: Fn() -> (Option<EventKey>, u64) + Send + 'static,
{
    let mut saved: Option<Option<EventKey>> = Some(on_disk);
    let mut seen_version = None;
    let mut warned = false;
    let mut ticks = tokio::time::interval(INTERVAL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let last = tokio::select! {
            _ = ticks.tick() => false,
            _ = stop.recv() => true,
        };
        let (id, version) = current();
        if !last && seen_version == Some(version) {
            continue;
        }
        seen_version = Some(version);
        if saved.as_ref() == Some(&id) && (!last || id.is_none()) {
            if last {
                return;
            }
            continue;
        }
        let f = file.clone();
        let write = id.clone();
        let result = tokio::task::spawn_blocking(move || f.save(write.as_ref(), last))
            .await
            .unwrap_or_else(|e| Err(io::Error::other(e.to_string())));
        match result {
            Ok(()) => {
                if warned {
                    app_plugin::info!("the checkpoint {} is written again", file.path().display());
                    warned = false;
                }
                saved = Some(id);
            }
            // Not seen: the next tick tries again even if nothing moves.
            Err(_) if !last && warned => seen_version = None,
            Err(e) => {
                seen_version = None;
                warned = true;
                app_plugin::error!(
                    "cannot write the checkpoint {}: {e}; a restart may replay more events than necessary, or none if it is never written",
                    file.path().display()
                );
            }
        }
        if last {
            return;
        }
    }
}

/// The whole text of `path` (tests only).
#[cfg(test)]
fn read_all(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    fn key(id: &str) -> EventKey {
        EventKey::own(Arc::from(id))
    }

    #[tokio::test]
    async fn a_failed_write_is_tried_again_when_nothing_moves() {
        let dir = tempfile::tempdir().unwrap();
        // A file where the directory should be: every write fails, as on
        // a full disk.
        let missing = dir.path().join("later");
        fs::write(&missing, "").unwrap();
        let f = CheckpointFile::beside(&missing.join("r.routes.json"), "http://a".into(), "mqtt");
        let stop = app_plugin::daemon::Shutdown::new();
        // One checkpoint that never moves after the failed write.
        let task = tokio::spawn(keep(f.clone(), None, || (Some(key("9")), 1), stop.clone()));
        tokio::time::sleep(INTERVAL * 3).await;
        assert!(!f.path().exists());
        // Space again: written within a few ticks although nothing moved.
        fs::remove_file(&missing).unwrap();
        fs::create_dir(&missing).unwrap();
        let mut written = false;
        for _ in 0..50 {
            tokio::time::sleep(INTERVAL).await;
            if f.load() == Ok(Loaded::Resume(key("9"))) {
                written = true;
                break;
            }
        }
        stop.trigger(app_plugin::daemon::Reason::Terminate);
        task.await.unwrap();
        assert!(
            written,
            "the checkpoint was not written once the write could succeed"
        );
    }

    #[test]
    fn file_round_trip_is_private_and_source_bound() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("r.routes.json");
        let f = CheckpointFile::beside(&state, "http://a".into(), "mqtt");
        assert_eq!(f.path(), dir.path().join("r.checkpoint"));
        assert_eq!(f.load(), Ok(Loaded::None));
        f.save(Some(&key("42")), false).unwrap();
        f.save(Some(&key("43")), true).unwrap();
        assert_eq!(f.load(), Ok(Loaded::Resume(key("43"))));
        let mode = fs::metadata(f.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(read_all(f.path()).contains("\"last_event_id\":\"43\""));
        let other = CheckpointFile::beside(&state, "http://b".into(), "mqtt");
        assert_eq!(other.load(), Ok(Loaded::OtherSource("http://a".into())));
        // The same source into another sink (the stderr demo, then MQTT).
        let other = CheckpointFile::beside(&state, "http://a".into(), "stderr");
        assert_eq!(other.load(), Ok(Loaded::OtherSink("mqtt".into())));
        // A file from before the sink was recorded still resumes.
        std::fs::write(
            f.path(),
            r#"{"version":1,"source":"http://a","last_event_id":"7"}"#,
        )
        .unwrap();
        assert_eq!(other.load(), Ok(Loaded::Resume(key("7"))));
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "a temp file was left behind");
        fs::write(f.path(), "{").unwrap();
        assert!(f.load().unwrap_err().contains("remove it"));
        for empty in ["", "\n", "  \n"] {
            fs::write(f.path(), empty).unwrap();
            let e = f.load().unwrap_err();
            assert!(e.contains("is empty") && e.contains("remove it"), "{e}");
        }
        // A position after an id, and "no id".
        let derived = EventKey::after(&Arc::from("7"), 2, b"e");
        f.save(Some(&derived), false).unwrap();
        assert_eq!(f.load(), Ok(Loaded::Resume(derived)));
        f.save(None, false).unwrap();
        assert_eq!(f.load(), Ok(Loaded::NoId));
        assert!(read_all(f.path()).contains("\"last_event_id\":null"));
        let custom = CheckpointFile::beside(Path::new("/x/routes"), String::new(), "mqtt");
        assert_eq!(custom.path(), Path::new("/x/routes.checkpoint"));
    }

    /// Files an older release wrote: an empty id, an id with a control
    /// character (which made every reconnection fail, issue 30).
    #[test]
    fn ids_an_older_release_kept_are_repaired() {
        let dir = tempfile::tempdir().unwrap();
        let f = CheckpointFile::beside(&dir.path().join("r.routes.json"), "s".into(), "mqtt");
        let write = |id: &str| {
            let doc = serde_json::json!({"version": 1, "source": "s", "last_event_id": id});
            fs::write(f.path(), doc.to_string()).unwrap();
        };
        write("");
        assert_eq!(f.load(), Ok(Loaded::NoId));
        write("a\u{1}b");
        match f.load() {
            Ok(Loaded::Unusable(why)) => assert!(why.contains("control character"), "{why}"),
            other => panic!("{other:?}"),
        }
        // The positive control: a plain id with a tab still resumes.
        write("a\tb");
        assert_eq!(f.load(), Ok(Loaded::Resume(key("a\tb"))));
    }
}
