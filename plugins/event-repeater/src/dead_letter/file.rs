//! The dead-letter file and its one rotated `.1`: appended to, read,
//! rewritten without some letters. Only the writer thread
//! ([`super::writer`]) calls these, so nothing here locks.
//!
//! Each file holds at most half of `--dead-letter-max`: when a letter
//! would take the file past that, it becomes `.1` (the letters of the old
//! `.1` are cut and counted) and a new file begins. The two together stay
//! under the limit.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use app_event_repeater_api::dead_letter::Letter;

/// The file and what is known of it without reading it again.
pub struct Files {
    path: PathBuf,
    /// Each file's limit: half of `--dead-letter-max`.
    half: u64,
    file: Option<File>,
    size: u64,
    /// Letters in the current file and in `.1`.
    count: u64,
    rotated_size: u64,
    rotated_count: u64,
    /// The last `seq` written, so the next one is larger.
    pub last_seq: u64,
}

/// What reading the files found.
pub struct Read {
    pub letters: Vec<Letter>,
    /// Lines that are not letters (cut by a crash or a full disk).
    pub unreadable: u64,
}

impl Files {
    /// Opens (or creates, 0600) the file at `path`, and reads what is
    /// there to learn its sizes, counts and last `seq`.
    pub fn open(path: &Path, max: u64) -> io::Result<Files> {
        let mut files = Files {
            path: path.to_path_buf(),
            half: (max / 2).max(1),
            file: None,
            size: 0,
            count: 0,
            rotated_size: 0,
            rotated_count: 0,
            last_seq: 0,
        };
        let rotated = files.read_one(&files.rotated_path())?;
        let current = files.read_one(&files.path)?;
        files.rotated_size = rotated.1;
        files.rotated_count = rotated.0.letters.len() as u64;
        files.size = current.1;
        files.count = current.0.letters.len() as u64;
        files.last_seq = (rotated.0.letters.iter())
            .chain(current.0.letters.iter())
            .map(|l| l.seq)
            .max()
            .unwrap_or(0);
        files.reopen()?;
        Ok(files)
    }

    fn rotated_path(&self) -> PathBuf {
        let mut p = self.path.clone().into_os_string();
        p.push(".1");
        PathBuf::from(p)
    }

    fn reopen(&mut self) -> io::Result<()> {
        let file = OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&self.path)?;
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(io::Error::other(format!(
                "{} is not a regular file",
                self.path.display()
            )));
        }
        self.size = meta.len();
        self.file = Some(file);
        Ok(())
    }

    /// Bytes in both files.
    pub fn bytes(&self) -> u64 {
        self.size + self.rotated_size
    }

    /// Appends one line (a letter and its `\n`); returns the letters cut
    /// by a rotation it caused. A failed write is undone (the file cut
    /// back to where it was), so a full disk leaves no half line.
    pub fn append(&mut self, line: &[u8]) -> io::Result<u64> {
        if line.len() as u64 > self.half {
            return Err(io::Error::other(format!(
                "a letter of {} bytes is over half of --dead-letter-max ({} bytes)",
                line.len(),
                self.half
            )));
        }
        let mut cut = 0;
        if self.size > 0 && self.size + line.len() as u64 > self.half {
            cut = self.rotate()?;
        }
        let file = match &mut self.file {
            Some(f) => f,
            None => {
                self.reopen()?;
                self.file
                    .as_mut()
                    .ok_or_else(|| io::Error::other("not open"))?
            }
        };
        if let Err(e) = file.write_all(line) {
            let _ = file.set_len(self.size);
            return Err(e);
        }
        self.size += line.len() as u64;
        self.count += 1;
        Ok(cut)
    }

    /// The file becomes `.1`; returns how many letters the old `.1` held.
    fn rotate(&mut self) -> io::Result<u64> {
        self.file = None;
        fs::rename(&self.path, self.rotated_path())?;
        let cut = self.rotated_count;
        self.rotated_size = self.size;
        self.rotated_count = self.count;
        self.size = 0;
        self.count = 0;
        self.reopen()?;
        Ok(cut)
    }

    /// Every letter, oldest first (`.1`, then the file).
    pub fn read(&self) -> io::Result<Read> {
        let (mut a, _) = self.read_one(&self.rotated_path())?;
        let (b, _) = self.read_one(&self.path)?;
        a.letters.extend(b.letters);
        a.unreadable += b.unreadable;
        Ok(a)
    }

    /// One file's letters and size; a missing file is empty. The file must
    /// be regular and within its half of the limit (no letter is longer),
    /// or the whole limit if `--dead-letter-max` was lowered since.
    fn read_one(&self, path: &Path) -> io::Result<(Read, u64)> {
        let bytes = match app_plugin::file::read_limited(path, self.half.saturating_mul(2)) {
            Ok(b) => b,
            Err(app_plugin::file::ReadError::NotFound) => {
                return Ok((
                    Read {
                        letters: Vec::new(),
                        unreadable: 0,
                    },
                    0,
                ))
            }
            Err(e) => return Err(io::Error::other(format!("{}: {e}", path.display()))),
        };
        let mut read = Read {
            letters: Vec::new(),
            unreadable: 0,
        };
        for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            match serde_json::from_slice::<Letter>(line) {
                Ok(l) => read.letters.push(l),
                Err(_) => read.unreadable += 1,
            }
        }
        Ok((read, bytes.len() as u64))
    }

    /// Rewrites the files holding only `keep` (oldest first): one file,
    /// written atomically (0600), and no `.1`.
    pub fn rewrite(&mut self, keep: &[Letter]) -> io::Result<()> {
        let mut text = Vec::new();
        for l in keep {
            serde_json::to_writer(&mut text, l).map_err(io::Error::other)?;
            text.push(b'\n');
        }
        self.file = None;
        app_plugin::file::write_atomic(&self.path, &text, 0o600)?;
        match fs::remove_file(self.rotated_path()) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        self.rotated_size = 0;
        self.rotated_count = 0;
        self.count = keep.len() as u64;
        self.reopen()
    }
}
