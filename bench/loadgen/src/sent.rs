//! The record of what `loadgen sse --sent-file` sent, kept across its own
//! restarts: the wall-clock time event 1 was due (`start UNIX_NS`), then a
//! `FIRST LAST` line per run of numbers written to a reader. A restarted
//! source reads it back so that its numbering goes on where the clock says
//! (a reader without `Last-Event-ID` never gets event 1 again), and a
//! checker reads it to count against what was really sent.
//!
//! A run is recorded before it is written to the socket: a source killed in
//! between recorded a number no reader got, which a reader that resumes by
//! `Last-Event-ID` is sent again (this source holds every event).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What a sent file holds.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Sent {
    /// When event 1 was due, in ns since the Unix epoch.
    pub start_unix_ns: Option<u128>,
    /// Runs of numbers sent, as recorded (overlapping, in any order).
    pub runs: Vec<(u64, u64)>,
}

impl Sent {
    /// Reads `path`; a missing file is an empty record.
    pub fn read(path: &Path) -> Result<Sent, String> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Sent::default()),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        let mut sent = Sent::default();
        // A line cut by a kill mid-write has no newline: not counted.
        let whole = match text.rfind('\n') {
            Some(end) => &text[..end],
            None => "",
        };
        for (n, line) in whole.lines().enumerate() {
            let bad = || {
                format!(
                    "{}:{}: not `start NS` or `FIRST LAST`",
                    path.display(),
                    n + 1
                )
            };
            let mut words = line.split_whitespace();
            match (words.next(), words.next(), words.next()) {
                (Some("start"), Some(ns), None) => {
                    sent.start_unix_ns = Some(ns.parse().map_err(|_| bad())?)
                }
                (Some(a), Some(b), None) => {
                    let (a, b) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
                    sent.runs.push((a, b));
                }
                _ => return Err(bad()),
            }
        }
        Ok(sent)
    }

    /// One more than the highest number sent.
    pub fn next(&self) -> u64 {
        self.runs.iter().map(|&(_, b)| b + 1).max().unwrap_or(1)
    }

    /// How many distinct numbers in `1..=n` were sent.
    pub fn distinct_up_to(&self, n: u64) -> u64 {
        let mut runs: Vec<(u64, u64)> = self
            .runs
            .iter()
            .map(|&(a, b)| (a.max(1), b.min(n)))
            .filter(|(a, b)| a <= b)
            .collect();
        runs.sort_unstable();
        let (mut total, mut covered) = (0, 0);
        for (a, b) in runs {
            let from = a.max(covered + 1);
            if from <= b {
                total += b - from + 1;
                covered = b;
            }
        }
        total
    }

    /// How long ago event 1 was due, if the record says.
    pub fn since_start(&self) -> Option<Duration> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .ok()?
            .as_nanos();
        let ago = now.checked_sub(self.start_unix_ns?)?;
        Some(Duration::from_nanos(u64::try_from(ago).ok()?))
    }
}

/// Appends to a sent file.
pub struct Recorder {
    path: PathBuf,
    file: Mutex<File>,
}

impl Recorder {
    pub fn open(path: &Path) -> Result<Recorder, String> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Recorder {
            path: path.to_path_buf(),
            file: Mutex::new(file),
        })
    }

    /// Records that event 1 was due `ago`.
    pub fn start(&self, ago: Duration) -> Result<(), String> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_err(|e| e.to_string())?
            .as_nanos();
        self.line(&format!("start {}\n", now.saturating_sub(ago.as_nanos())))
    }

    /// Records that `first..=last` are about to be written to a reader.
    pub fn sent(&self, first: u64, last: u64) -> Result<(), String> {
        self.line(&format!("{first} {last}\n"))
    }

    fn line(&self, line: &str) -> Result<(), String> {
        let mut file = self.file.lock().map_err(|_| "sent file lock poisoned")?;
        // One write(2) of a short line on an O_APPEND file: whole or, after
        // a kill, cut at the end only.
        file.write_all(line.as_bytes())
            .map_err(|e| format!("{}: {e}", self.path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_count_once_however_they_overlap() {
        let s = Sent {
            start_unix_ns: None,
            runs: vec![(5, 9), (1, 3), (2, 4), (8, 12), (20, 25)],
        };
        assert_eq!(s.distinct_up_to(100), 12 + 6);
        assert_eq!(s.distinct_up_to(10), 10);
        assert_eq!(s.next(), 26);
        assert_eq!(Sent::default().next(), 1);
    }

    #[test]
    fn a_record_reads_back_and_a_cut_last_line_is_ignored() {
        let dir = std::env::temp_dir().join(format!("loadgen-sent-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("sent");
        let _ = std::fs::remove_file(&path);
        let r = Recorder::open(&path).unwrap();
        r.start(Duration::ZERO).unwrap();
        r.sent(1, 10).unwrap();
        r.sent(11, 11).unwrap();
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("12 1");
        std::fs::write(&path, &text).unwrap();
        let s = Sent::read(&path).unwrap();
        assert!(s.start_unix_ns.is_some());
        assert_eq!(s.runs, vec![(1, 10), (11, 11)]);
        assert!(s.since_start().unwrap() < Duration::from_secs(60));
        std::fs::write(&path, "start x\n").unwrap();
        assert!(Sent::read(&path).unwrap_err().contains(":1:"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
