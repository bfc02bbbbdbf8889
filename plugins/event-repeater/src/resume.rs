//! Where a start resumes: the checkpoint file read once at start, turned
//! into the position to subscribe after, the event to relay again, and a
//! sentence saying how the run began (the log and `/healthz`), so that a
//! start from live events is never silent about it (issue 30).

use crate::checkpoint::{CheckpointFile, Held, Loaded};
use crate::event_key::EventKey;

const LIVE_OFF: &str = "from the source's live events (--checkpoint off)";
const LIVE_NEW: &str = "from the source's live events: no checkpoint yet";
const LIVE_NO_ID: &str =
    "from the source's live events: the checkpoint held no event id (events sent while the repeater was down are missed)";
const LIVE_UNUSABLE: &str =
    "from the source's live events: the checkpoint could not be resumed from (events sent since it are missed)";
const LIVE_OTHER: &str =
    "from the source's live events: the checkpoint belongs to another source or sink";

/// Where a start resumes: see [`open`].
#[derive(Debug, Default)]
pub struct Start {
    /// How this start began, in words, for the log and `/healthz`
    /// (`resumed after event id 17`, `from the source's live events: …`).
    pub how: String,
    /// The checkpoint file (none with `--checkpoint off`).
    pub file: Option<CheckpointFile>,
    /// The position to resume after (`Last-Event-ID`: its id).
    pub resume_after: Option<EventKey>,
    /// The earlier run's first event, to relay again before resuming.
    pub replay: Option<Held>,
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
        return Ok(Start {
            how: LIVE_OFF.into(),
            ..Start::default()
        });
    }
    let file = CheckpointFile::beside(
        &cfg.state_file,
        cfg.source.config.to_string(),
        cfg.sink_protocol,
    )
    .holding_events_of(cfg.max_source_event());
    let mut replay = None;
    let mut how = None;
    let resume = match file.load()? {
        Loaded::None => {
            app_plugin::info!(
                "no checkpoint ({}): starting from the source's live events",
                file.path().display()
            );
            how = Some(LIVE_NEW);
            None
        }
        Loaded::Resume(id) => {
            app_plugin::info!(
                "resuming after event id {} (checkpoint {})",
                app_plugin::text::escape_for_terminal(id.last_event_id()),
                file.path().display()
            );
            Some(id)
        }
        Loaded::NoId => {
            app_plugin::warn!(
                "the checkpoint {} holds no event id (the source cleared it with an empty id:, or sends none, or the last run stopped before its first event's checkpoint was written): starting from the source's live events, so events it sent while the repeater was down are missed",
                file.path().display()
            );
            how = Some(LIVE_NO_ID);
            None
        }
        Loaded::Unusable(why) => {
            app_plugin::warn!(
                "the checkpoint {} cannot be resumed from: {why} (written by an older release); starting from the source's live events, so events sent since that checkpoint are missed. The next checkpoint replaces it",
                file.path().display()
            );
            how = Some(LIVE_UNUSABLE);
            None
        }
        Loaded::Replay { after, event } => {
            app_plugin::info!(
                "resuming after event id {} (checkpoint {}), first relaying again that event, which the checkpoint holds: the earlier run had not delivered it",
                app_plugin::text::escape_for_terminal(after.last_event_id()),
                file.path().display()
            );
            replay = Some(event);
            Some(after)
        }
        Loaded::OtherSource(other) => {
            app_plugin::warn!(
                "the checkpoint {} is for the source {other}, not {}; starting from the source's live events",
                file.path().display(),
                cfg.source.config
            );
            how = Some(LIVE_OTHER);
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
                cfg.sink_protocol
            );
            if other == "stderr" {
                app_plugin::info!("{text}");
            } else {
                app_plugin::warn!("{text}");
            }
            how = Some(LIVE_OTHER);
            None
        }
    };
    let how = match (&resume, how) {
        (_, Some(live)) => live.to_string(),
        (Some(after), None) => format!(
            "resumed after event id {}",
            app_plugin::text::escape_for_terminal(after.last_event_id())
        ),
        (None, None) => LIVE_NEW.to_string(),
    };
    Ok(Start {
        how,
        file: Some(file),
        resume_after: resume,
        replay,
    })
}
