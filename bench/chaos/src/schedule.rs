//! The nemesis' plan: a list of faults and route changes drawn from one
//! seed, so a failing run can be replayed with `CHAOS_SEED`. The plan does
//! not depend on what the machine allows (a fault kind the machine cannot
//! apply is skipped when it comes up), so one seed names one plan everywhere.

use std::time::Duration;

/// What a fault does, and to which component.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// SIGKILL repeater `i`; it is started again when the fault ends.
    KillRepeater(usize),
    /// SIGSTOP repeater `i`; SIGCONT when the fault ends.
    PauseRepeater(usize),
    /// SIGKILL the source; started again (same socket) when the fault ends.
    KillSource,
    PauseSource,
    /// SIGKILL broker node `n` (MQTT: SIGTERM, see `brokers.rs`); restarted
    /// with its store when the fault ends.
    KillBroker(usize),
    PauseBroker(usize),
    /// Repeater `i`'s link to the brokers goes down: packets vanish, nothing
    /// is refused (a partition, not a reset).
    Partition(usize),
    /// 30% packet loss on repeater `i`'s link (`tc netem`, or nftables).
    Loss(usize),
    /// The file system under the checkpoints and routes files is full.
    DiskFull,
}

impl Fault {
    /// Faults on one slot never overlap: one component is not killed while
    /// it is paused, and at most one broker node is down at a time (so a
    /// majority of a 3-node cluster stays up).
    fn slot(self) -> (u8, usize) {
        match self {
            Fault::KillRepeater(i) | Fault::PauseRepeater(i) => (0, i),
            Fault::KillSource | Fault::PauseSource => (1, 0),
            Fault::KillBroker(_) | Fault::PauseBroker(_) => (2, 0),
            Fault::Partition(i) | Fault::Loss(i) => (3, i),
            Fault::DiskFull => (4, 0),
        }
    }

    /// How long the fault lasts, in ms (a kill: how long the process stays
    /// down).
    fn hold_ms(self, rng: &mut fastrand::Rng) -> u64 {
        match self {
            Fault::KillRepeater(_) | Fault::KillSource | Fault::KillBroker(_) => rng.u64(0..=2_000),
            Fault::PauseRepeater(_) | Fault::PauseSource | Fault::PauseBroker(_) => {
                rng.u64(500..=6_000)
            }
            Fault::Partition(_) => rng.u64(1_000..=8_000),
            Fault::Loss(_) => rng.u64(2_000..=10_000),
            Fault::DiskFull => rng.u64(1_000..=8_000),
        }
    }
}

/// One step of the plan, `at` from the start of the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    Apply(Fault, Duration),
    Heal(Fault),
    /// Change repeater `repeater`'s routes; `pick` chooses the change.
    Route {
        repeater: usize,
        pick: u32,
    },
}

/// What the plan covers.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub seconds: u64,
    pub repeaters: usize,
    pub broker_nodes: usize,
}

/// The plan of `seed`: `(at, step)` in time order. Faults start 2 s in (the
/// traffic flows first), 0.2 to 2.5 s apart; each is healed before the end.
pub fn plan(seed: u64, shape: Shape) -> Vec<(Duration, Step)> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let end = shape.seconds * 1000;
    let mut steps: Vec<(u64, Step)> = Vec::new();
    let mut busy: Vec<((u8, usize), u64)> = Vec::new();
    // Every kind once first, in a seeded order, so that a run long enough
    // for KINDS faults applies each kind (a kind whose slot is busy waits
    // for a later tick); then kinds at random.
    let mut first: Vec<u8> = (0..KINDS).collect();
    rng.shuffle(&mut first);
    let mut t = 2_000;
    loop {
        t += rng.u64(200..=2_500);
        if t + 500 >= end {
            break;
        }
        let free = |f: Fault| !busy.iter().any(|&(s, until)| s == f.slot() && until > t);
        let (r, n) = (
            rng.usize(0..shape.repeaters),
            rng.usize(0..shape.broker_nodes),
        );
        let fault = if first.is_empty() {
            kind(rng.u8(0..KINDS), r, n)
        } else {
            match first.iter().position(|&k| free(kind(k, r, n))) {
                Some(i) => kind(first.remove(i), r, n),
                None => continue,
            }
        };
        if !free(fault) {
            continue;
        }
        let slot = fault.slot();
        let hold = fault.hold_ms(&mut rng).min(end - t);
        busy.retain(|&(s, _)| s != slot);
        // A little calm on the slot after a fault (the restarted process
        // comes up before the next blow).
        busy.push((slot, t + hold + 500));
        steps.push((t, Step::Apply(fault, Duration::from_millis(hold))));
        steps.push((t + hold, Step::Heal(fault)));
    }
    let mut t = 1_000;
    loop {
        t += rng.u64(1_500..=5_000);
        if t >= end {
            break;
        }
        let repeater = rng.usize(0..shape.repeaters);
        steps.push((
            t,
            Step::Route {
                repeater,
                pick: rng.u32(..),
            },
        ));
    }
    // Stable: a heal at the same ms as an apply keeps its order.
    steps.sort_by_key(|&(t, _)| t);
    steps
        .into_iter()
        .map(|(t, s)| (Duration::from_millis(t), s))
        .collect()
}

/// How many kinds of fault there are.
pub const KINDS: u8 = 9;

/// Fault kind `k` (0 to KINDS-1) on repeater `r` or broker node `n`.
fn kind(k: u8, r: usize, n: usize) -> Fault {
    match k {
        0 => Fault::KillRepeater(r),
        1 => Fault::PauseRepeater(r),
        2 => Fault::KillSource,
        3 => Fault::PauseSource,
        4 => Fault::KillBroker(n),
        5 => Fault::PauseBroker(n),
        6 => Fault::Partition(r),
        7 => Fault::Loss(r),
        _ => Fault::DiskFull,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHAPE: Shape = Shape {
        seconds: 120,
        repeaters: 2,
        broker_nodes: 3,
    };

    #[test]
    fn one_seed_one_plan_another_seed_another() {
        assert_eq!(plan(42, SHAPE), plan(42, SHAPE));
        assert_ne!(plan(42, SHAPE), plan(43, SHAPE));
    }

    #[test]
    fn every_fault_is_healed_in_time_and_slots_never_overlap() {
        for seed in 0..50 {
            let steps = plan(seed, SHAPE);
            let mut open: Vec<Fault> = Vec::new();
            let mut kinds = std::collections::HashSet::new();
            for (at, step) in &steps {
                assert!(
                    *at <= Duration::from_secs(SHAPE.seconds),
                    "{step:?} at {at:?}"
                );
                match *step {
                    Step::Apply(f, _) => {
                        assert!(
                            open.iter().all(|o| o.slot() != f.slot()),
                            "seed {seed}: {f:?} while {open:?}"
                        );
                        kinds.insert(std::mem::discriminant(&f));
                        open.push(f);
                    }
                    Step::Heal(f) => {
                        let i = open.iter().position(|&o| o == f).expect("healed once");
                        open.remove(i);
                    }
                    Step::Route { repeater, .. } => assert!(repeater < SHAPE.repeaters),
                }
            }
            assert!(open.is_empty(), "seed {seed}: never healed: {open:?}");
            // Two minutes draw every kind (nine kinds, about 60 faults).
            assert_eq!(kinds.len(), usize::from(KINDS), "seed {seed}");
        }
    }

    #[test]
    fn a_thirty_second_run_applies_every_kind() {
        // What CI runs (50 s) and shorter: each kind comes first, once.
        let shape = Shape {
            seconds: 30,
            repeaters: 1,
            broker_nodes: 1,
        };
        for seed in 0..300 {
            let kinds: std::collections::HashSet<_> = plan(seed, shape)
                .iter()
                .filter_map(|(_, s)| match s {
                    Step::Apply(f, _) => Some(std::mem::discriminant(f)),
                    _ => None,
                })
                .collect();
            assert_eq!(kinds.len(), usize::from(KINDS), "seed {seed}");
        }
    }

    #[test]
    fn a_two_second_run_has_no_fault() {
        let shape = Shape {
            seconds: 2,
            ..SHAPE
        };
        assert!(plan(7, shape)
            .iter()
            .all(|(_, s)| matches!(s, Step::Route { .. })));
    }
}
