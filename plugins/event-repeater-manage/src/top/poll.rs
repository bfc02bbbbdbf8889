//! Sampling every host on its own, so that none waits for another: a
//! thread per host samples it every `--interval` and hands each sample to
//! the screen ([`Poller`]); the screen keeps the last two of each host
//! ([`Board`]) and draws whatever it has, so a host that hangs costs its
//! own `--timeout` and holds up no other host and no redraw.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::remote::Remote;
use crate::status::sample::{self, Sample};
use crate::target::Target;

use super::view::{self, Host};

/// One sample of the host at this index, and when it came.
pub struct Update {
    /// The host's place in the targets.
    pub index: usize,
    /// When the answer came (rates are over the time between two).
    pub at: Instant,
    /// What it said.
    pub sample: Sample,
}

/// The sampling threads; dropping it asks them to stop.
pub struct Poller {
    updates: Receiver<Update>,
    stop: Arc<AtomicBool>,
}

impl Poller {
    /// Starts a thread per target, each sampling its host every `interval`
    /// (or as soon as the last answer came, when it took longer).
    pub fn start(targets: &[Target], interval: Duration) -> Poller {
        let (tx, updates) = channel();
        let stop = Arc::new(AtomicBool::new(false));
        for (index, target) in targets.iter().enumerate() {
            let (tx, stop, target) = (tx.clone(), Arc::clone(&stop), target.clone());
            // Not joined: a thread waiting on a host that hangs ends at its
            // timeout, or with the process, and quitting never waits for it.
            std::thread::spawn(move || {
                let remote = Remote::new(&target);
                while !stop.load(Ordering::SeqCst) {
                    let begun = Instant::now();
                    let sample = match &remote {
                        Ok(r) => sample::sample(r),
                        Err(e) => sample::failed(e),
                    };
                    let update = Update {
                        index,
                        at: Instant::now(),
                        sample,
                    };
                    if tx.send(update).is_err() {
                        return;
                    }
                    let next = begun + interval;
                    while !stop.load(Ordering::SeqCst) && Instant::now() < next {
                        let left = next.saturating_duration_since(Instant::now());
                        std::thread::sleep(left.min(Duration::from_millis(50)));
                    }
                }
            });
        }
        Poller { updates, stop }
    }

    /// The samples that came since the last call, without waiting.
    pub fn take(&self) -> Vec<Update> {
        self.updates.try_iter().collect()
    }
}

impl Drop for Poller {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// The last two samples of each host.
pub struct Board {
    slots: Vec<Slot>,
}

struct Slot {
    label: String,
    before: Option<(Instant, Sample)>,
    now: Option<(Instant, Sample)>,
}

impl Board {
    /// Nothing heard yet from the hosts `labels`.
    pub fn new(labels: Vec<String>) -> Board {
        Board {
            slots: labels
                .into_iter()
                .map(|label| Slot {
                    label,
                    before: None,
                    now: None,
                })
                .collect(),
        }
    }

    /// Takes a sample in.
    pub fn update(&mut self, u: Update) {
        if let Some(slot) = self.slots.get_mut(u.index) {
            slot.before = slot.now.replace((u.at, u.sample));
        }
    }

    /// Whether every host has answered (or failed) twice, so that each has
    /// its rates.
    pub fn complete(&self) -> bool {
        self.slots.iter().all(|s| s.before.is_some())
    }

    /// Every host as it stands, in the order given; a host not heard from
    /// yet is `waiting`.
    pub fn hosts(&self) -> Vec<Host> {
        self.slots
            .iter()
            .map(|slot| match &slot.now {
                Some((at, now)) => {
                    let before = slot.before.as_ref();
                    let elapsed = before.map_or(Duration::ZERO, |(t, _)| *at - *t);
                    view::host(&slot.label, before.map(|(_, s)| s), now, elapsed)
                }
                None => {
                    let waiting = Sample {
                        error: Some("no answer yet".into()),
                        ..Sample::default()
                    };
                    let mut host = view::host(&slot.label, None, &waiting, Duration::ZERO);
                    host.status.state = "waiting".into();
                    host
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(received: u64) -> Sample {
        Sample {
            health: Some(Default::default()),
            metrics: crate::status::sample::parse_metrics(&format!(
                "app_event_repeater_events_received_total {received}\n"
            )),
            ..Sample::default()
        }
    }

    #[test]
    fn a_host_not_heard_from_waits_at_the_bottom_and_the_others_have_rates() {
        let mut board = Board::new(vec!["slow".into(), "a".into(), "b".into()]);
        let t = Instant::now();
        for (index, at, received) in [(1, 0, 10), (2, 0, 10), (1, 2, 30), (2, 2, 110)] {
            board.update(Update {
                index,
                at: t + Duration::from_secs(at),
                sample: sample(received),
            });
        }
        assert!(!board.complete(), "slow has not answered");
        let mut hosts = board.hosts();
        view::sort(&mut hosts);
        let order: Vec<(&str, &str)> = hosts
            .iter()
            .map(|h| (h.status.host.as_str(), h.status.state.as_str()))
            .collect();
        assert_eq!(
            order,
            [("b", "degraded"), ("a", "degraded"), ("slow", "waiting")]
        );
        assert_eq!(hosts[0].status.received_per_sec, Some(50.0));
        assert_eq!(hosts[1].status.received_per_sec, Some(10.0));
    }
}
