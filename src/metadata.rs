//! What a trusted plugin says about itself: `app-<name> __app_metadata`.
//!
//! Only plugins in trusted places (see [`crate::discovery::Origin::is_trusted`])
//! or named trusted in the config are ever asked: running an unknown binary
//! with an argument it does not expect could do anything. Answers are cached
//! per file, keyed by path, size and modification time, so dispatch does not
//! start the plugin twice; a plugin without a valid answer is cached as plain.
//! The document itself is the SDK's ([`app_plugin::metadata`]).

use std::fs;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

pub use app_plugin::metadata::{Metadata, METADATA_ARG};

/// How long a plugin gets to answer.
pub const METADATA_TIMEOUT: Duration = Duration::from_secs(1);

#[derive(Serialize, Deserialize)]
struct CacheEntry {
    path: PathBuf,
    size: u64,
    mtime_ns: i128,
    metadata: Option<Metadata>,
}

/// Metadata answers cached on disk, one small file per plugin path.
#[derive(Debug, Clone)]
pub struct Cache {
    dir: PathBuf,
}

impl Cache {
    /// A cache stored in `dir` (created when first written).
    pub fn new(dir: PathBuf) -> Cache {
        Cache { dir }
    }

    /// The plugin's metadata: from the cache when the file is unchanged,
    /// otherwise by asking the plugin (and caching the answer, or its absence).
    pub fn get(&self, plugin: &Path) -> Option<Metadata> {
        let stat = fs::metadata(plugin).ok()?;
        let (size, mtime_ns) = (stat.size(), mtime_ns(&stat));
        let file = self.entry_file(plugin);
        // A cache entry is a few hundred bytes; anything odd is a miss.
        if let Some(entry) = app_plugin::file::read_limited(&file, 1 << 20)
            .ok()
            .and_then(|b| serde_json::from_slice::<CacheEntry>(&b).ok())
        {
            if entry.path == plugin && entry.size == size && entry.mtime_ns == mtime_ns {
                return entry.metadata;
            }
        }
        let metadata = query(plugin, METADATA_TIMEOUT);
        let entry = CacheEntry {
            path: plugin.to_path_buf(),
            size,
            mtime_ns,
            metadata,
        };
        // The cache is an optimisation: failing to write it must not fail the command.
        let _ = self.store(&file, &entry);
        entry.metadata
    }

    fn entry_file(&self, plugin: &Path) -> PathBuf {
        self.dir.join(format!(
            "{:016x}.json",
            fnv1a(plugin.as_os_str().as_encoded_bytes())
        ))
    }

    fn store(&self, file: &Path, entry: &CacheEntry) -> std::io::Result<()> {
        fs::create_dir_all(&self.dir)?;
        let tmp = file.with_extension(format!("tmp{}", std::process::id()));
        // Flushed before the rename (a power loss leaves the old entry or the
        // new one, never an empty file); the directory is not: a lost entry
        // is only queried again.
        // As any file the process makes: 0666 less the umask, so a unit's
        // UMask=0027 gives 0640 in its CacheDirectory= (an explicit 0644
        // would override it: write_atomic_via sets the mode it is given).
        let mode = 0o666 & !umask();
        app_plugin::file::write_atomic_via(file, &tmp, &serde_json::to_vec(entry)?, mode, false)
    }
}

/// The process's umask, from /proc/self/status (reading it with umask(2)
/// means changing it, racing any thread that creates a file meanwhile);
/// 022, the usual one, where /proc does not say.
fn umask() -> u32 {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Umask:"))
        .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        .map_or(0o022, |m| m & 0o777)
}

fn mtime_ns(stat: &fs::Metadata) -> i128 {
    i128::from(stat.mtime()) * 1_000_000_000 + i128::from(stat.mtime_nsec())
}

/// Runs `plugin __app_metadata` and parses its answer, giving up after `timeout`.
pub fn query(plugin: &Path, timeout: Duration) -> Option<Metadata> {
    let mut cmd = crate::keeper::command(plugin);
    cmd.arg(METADATA_ARG)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    // Under a keeper that kills it and all it started when the query ends
    // (or app does): a plugin that sleeps, forks or setsids instead of
    // answering leaves nothing.
    let mut child = crate::exec::OwnChild::spawn(&mut cmd, true).ok()?;
    let mut stdout = child.child().stdout.take()?;
    let (tx, rx) = mpsc::channel();
    // A reader thread, so that a plugin which never answers (or never closes
    // stdout) costs at most `timeout`.
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stdout.by_ref().take(64 * 1024).read_to_end(&mut buf);
        let _ = tx.send(buf);
    });
    let deadline = Instant::now() + timeout;
    let answer = rx.recv_timeout(timeout).ok();
    if answer.is_some() {
        // Let the reader thread end now: a thread still alive later could
        // take a signal meant for a supervised plugin (see exec::spawn).
        let _ = reader.join();
    }
    // Closing stdout is not exiting: give the plugin what is left of its
    // time, then make sure it and its group are gone.
    child.exited_within(deadline.saturating_duration_since(Instant::now()));
    let _ = child.finish();
    Metadata::parse(std::str::from_utf8(&answer?).ok()?)
}

/// 64-bit FNV-1a: a stable file name for a path, no dependency needed.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}
