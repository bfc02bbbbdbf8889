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
    last_event_id: String,
    /// A fresh start's first event (its id is `last_event_id`), written
    /// before it was accepted and kept until it is done: relayed again at
    /// the next start, before resuming after its id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    event: Option<Box<RawValue>>,
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
    /// The id to resume after.
    Resume(String),
    /// A fresh start's first event, not done when the repeater stopped: to
    /// relay again, then resume after its id `after`.
    Replay { after: String, event: String },
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

    /// Reads files holding a first event of up to `max_event` bytes.
    pub fn holding_events_of(mut self, max_event: usize) -> CheckpointFile {
        self.max_file = MAX_FILE.saturating_add(max_event as u64);
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the checkpoint; an `Err` is a file that exists and cannot be
    /// used (not a regular file, too large, not a checkpoint).
    pub fn load(&self) -> Result<Loaded, String> {
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
                "the checkpoint file {} is not valid ({e}); remove it to start from the source's live events",
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
        Ok(match doc.event {
            Some(event) => Loaded::Replay {
                after: doc.last_event_id,
                event: event.get().to_string(),
            },
            None => Loaded::Resume(doc.last_event_id),
        })
    }

    /// Writes `id` atomically (temp file, rename), mode 0600; the file's
    /// data always reaches the disk before the rename, so not even a power
    /// loss leaves it empty or partly written. `sync` also flushes the
    /// directory (at shutdown); without it a power loss can take the file
    /// back to an earlier checkpoint, which means more duplicates, not
    /// losses.
    pub fn save(&self, id: &str, sync: bool) -> io::Result<()> {
        self.write(id, None, sync)
    }

    /// Writes the first checkpoint of a fresh start, synced: `id`, and the
    /// event (one line of JSON) that bears it, when there is no earlier id
    /// to resume after.
    pub fn save_first(&self, id: &str, event: Option<&str>) -> io::Result<()> {
        let event = event
            .map(|e| RawValue::from_string(e.to_string()))
            .transpose()
            .map_err(io::Error::other)?;
        self.write(id, event, true)
    }

    fn write(&self, id: &str, event: Option<Box<RawValue>>, sync: bool) -> io::Result<()> {
        let doc = Document {
            version: 1,
            source: self.source.clone(),
            sink: Some(self.sink.to_string()),
            last_event_id: id.to_string(),
            event,
        };
        let mut text = serde_json::to_vec(&doc).map_err(io::Error::other)?;
        text.push(b'\n');
        let _writing = self.writing.lock().unwrap_or_else(|e| e.into_inner());
        crate::files::write_private(&self.path, &text, sync)
    }
}

/// Where a start resumes: see [`open`].
#[derive(Debug, Default)]
pub struct Start {
    /// The checkpoint file (none with `--checkpoint off`).
    pub file: Option<CheckpointFile>,
    /// The id to resume after (`Last-Event-ID`).
    pub resume_after: Option<String>,
    /// The earlier run's first event, to relay again before resuming.
    pub replay: Option<String>,
}

impl Start {
    /// A start with nothing to resume from: the first checkpoint must be
    /// written before the first event is accepted.
    pub fn is_fresh(&self) -> bool {
        self.file.is_some() && self.resume_after.is_none()
    }
}

/// The checkpoint file for `cfg` and where to resume; an `Err` is a
/// checkpoint file that cannot be used.
pub fn open(cfg: &crate::config::Config) -> Result<Start, String> {
    if !cfg.checkpoint {
        return Ok(Start::default());
    }
    let file = CheckpointFile::beside(&cfg.state_file, cfg.source.to_string(), cfg.sink.protocol())
        .holding_events_of(cfg.max_source_event());
    let mut replay = None;
    let resume = match file.load()? {
        Loaded::None => None,
        Loaded::Resume(id) => {
            app_plugin::info!(
                "resuming after event id {id} (checkpoint {})",
                file.path().display()
            );
            Some(id)
        }
        Loaded::Replay { after, event } => {
            app_plugin::info!(
                "resuming after event id {after} (checkpoint {}), first relaying again that event, which the checkpoint holds: the earlier run had not delivered it",
                file.path().display()
            );
            replay = Some(event);
            Some(after)
        }
        Loaded::OtherSource(other) => {
            app_plugin::warn!(
                "the checkpoint {} is for the source {other}, not {}; starting from the source's live events",
                file.path().display(),
                cfg.source
            );
            None
        }
        Loaded::OtherSink(other) => {
            // Not resumed: otherwise the source's "events … are no longer
            // held" about the earlier run's ids is all the user sees. After
            // the stderr demo that is expected (info); after a real sink
            // the user may have meant to resume (warning).
            let text = format!(
                "the checkpoint {} was left by an earlier run of '{}' into {other}, not {}; the events it counts as done never reached this sink, so this run starts from the source's live events (give each setup its own --name to keep their checkpoints apart)",
                file.path().display(),
                cfg.name,
                cfg.sink.protocol()
            );
            if other == "stderr" {
                app_plugin::info!("{text}");
            } else {
                app_plugin::warn!("{text}");
            }
            None
        }
    };
    Ok(Start {
        file: Some(file),
        resume_after: resume,
        replay,
    })
}

/// Writes the checkpoint `current()` returns every [`INTERVAL`] while its
/// version moves, until `stop` fires; then once more, synced to disk. A
/// failed write (a full disk) is logged once and tried again every
/// [`INTERVAL`] until it succeeds, whether or not the checkpoint moves: a
/// repeater that went idle with the disk full must not keep the old id on
/// disk once space returns (a later crash would replay all since then).
pub async fn keep<F>(file: CheckpointFile, current: F, stop: app_plugin::daemon::Shutdown)
where
    F: Fn() -> (Option<Arc<str>>, u64) + Send + 'static,
{
    let mut saved: Option<Arc<str>> = None;
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
        let Some(id) = id else {
            if last {
                return;
            }
            continue;
        };
        if !last && saved.as_deref() == Some(&*id) {
            continue;
        }
        let f = file.clone();
        let write = id.clone();
        let result = tokio::task::spawn_blocking(move || f.save(&write, last))
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
        let task = tokio::spawn(keep(f.clone(), || (Some(Arc::from("9")), 1), stop.clone()));
        tokio::time::sleep(INTERVAL * 3).await;
        assert!(!f.path().exists());
        // Space again: written within a few ticks although nothing moved.
        fs::remove_file(&missing).unwrap();
        fs::create_dir(&missing).unwrap();
        let mut written = false;
        for _ in 0..50 {
            tokio::time::sleep(INTERVAL).await;
            if f.load() == Ok(Loaded::Resume("9".into())) {
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
        f.save("42", false).unwrap();
        f.save("43", true).unwrap();
        assert_eq!(f.load(), Ok(Loaded::Resume("43".into())));
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
        assert_eq!(other.load(), Ok(Loaded::Resume("7".into())));
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "a temp file was left behind");
        fs::write(f.path(), "{").unwrap();
        assert!(f.load().unwrap_err().contains("remove it"));
        for empty in ["", "\n", "  \n"] {
            fs::write(f.path(), empty).unwrap();
            let e = f.load().unwrap_err();
            assert!(e.contains("is empty") && e.contains("remove it"), "{e}");
        }
        let custom = CheckpointFile::beside(Path::new("/x/routes"), String::new(), "mqtt");
        assert_eq!(custom.path(), Path::new("/x/routes.checkpoint"));
    }
}
