//! Applies the plan to the running world, step by step on the clock, and
//! samples the repeaters meanwhile (acknowledged events, RSS): what the
//! duplicate bound and the RSS check need.

use std::time::{Duration, Instant};

use app_event_repeater_api::metric;

use crate::api;
use crate::record::Record;
use crate::routes;
use crate::schedule::{Fault, Step};
use crate::world::World;

struct Sampler {
    every: Duration,
    next: Instant,
    /// Per repeater: (when, acked) of its last sample, this life.
    last: Vec<Option<(Instant, f64)>>,
    /// Acknowledged events since the disk filled, when it is full.
    since_full: Option<u64>,
}

/// Runs the plan; returns early (Err) when the driver is interrupted.
pub fn run(
    world: &mut World,
    plan: &[(Duration, Step)],
    seconds: u64,
    interrupted: &dyn Fn() -> bool,
) -> Result<Record, String> {
    let start = Instant::now();
    let mut rec = Record::default();
    let mut sampler = Sampler {
        every: Duration::from_millis(250),
        next: start,
        last: vec![None; world.repeaters.len()],
        since_full: None,
    };
    for &(at, step) in plan {
        wait_until(world, start + at, &mut sampler, &mut rec, interrupted)?;
        let t = start.elapsed().as_secs_f64();
        match step {
            Step::Apply(fault, hold) => apply(world, fault, hold, t, &mut rec, &mut sampler),
            Step::Heal(fault) => heal(world, fault, t, &mut rec, &mut sampler),
            Step::Route { repeater, pick } => routes::change(world, repeater, pick, t, &mut rec),
        }
    }
    let end = start + Duration::from_secs(seconds);
    wait_until(world, end, &mut sampler, &mut rec, interrupted)?;
    Ok(rec)
}

/// Sleeps until `at`, sampling the repeaters on the way.
fn wait_until(
    world: &mut World,
    at: Instant,
    sampler: &mut Sampler,
    rec: &mut Record,
    interrupted: &dyn Fn() -> bool,
) -> Result<(), String> {
    loop {
        if interrupted() {
            return Err("interrupted".into());
        }
        let now = Instant::now();
        if now >= at {
            return Ok(());
        }
        if now >= sampler.next {
            sample(world, sampler, rec);
            sampler.next = now + sampler.every;
        }
        let until_sample = sampler.next.saturating_duration_since(Instant::now());
        std::thread::sleep(
            at.saturating_duration_since(Instant::now())
                .min(until_sample)
                .min(Duration::from_millis(100)),
        );
    }
}

fn sample(world: &mut World, s: &mut Sampler, rec: &mut Record) {
    let now = Instant::now();
    for (i, r) in world.repeaters.iter().enumerate() {
        if !r.answering() {
            continue;
        }
        if let Some(rss) = r.proc.rss_kib() {
            rec.peak_rss_kib = rec.peak_rss_kib.max(rss);
        }
        let Ok(m) = api::metrics(&r.socket) else {
            continue;
        };
        let acked = api::sum(&m, metric::EVENTS_ACKED);
        if let Some((then, before)) = s.last[i] {
            let dt = now.duration_since(then).as_secs_f64();
            if dt >= 0.2 && acked >= before {
                rec.peak_ack_rate = rec.peak_ack_rate.max((acked - before) / dt);
                if let Some(n) = s.since_full.as_mut() {
                    *n += (acked - before) as u64;
                }
            }
        }
        s.last[i] = Some((now, acked));
    }
}

/// Counts one more `what` in `tally`.
fn bump(tally: &mut Vec<(String, u64)>, what: &str) {
    match tally.iter_mut().find(|(w, _)| w == what) {
        Some((_, n)) => *n += 1,
        None => tally.push((what.to_string(), 1)),
    }
}

fn skip(rec: &mut Record, why: &str) {
    bump(&mut rec.skipped, why);
}

/// The fault's kind, for the summary.
fn kind(fault: Fault) -> &'static str {
    match fault {
        Fault::KillRepeater(_) => "repeater killed",
        Fault::PauseRepeater(_) => "repeater frozen",
        Fault::KillSource => "source killed",
        Fault::PauseSource => "source frozen",
        Fault::KillBroker(_) => "broker node down",
        Fault::PauseBroker(_) => "broker node frozen",
        Fault::Partition(_) => "partition",
        Fault::Loss(_) => "packet loss",
        Fault::DiskFull => "disk full",
    }
}

fn apply(
    world: &mut World,
    fault: Fault,
    hold: Duration,
    t: f64,
    rec: &mut Record,
    s: &mut Sampler,
) {
    let hold_s = hold.as_secs_f64();
    let what = match fault {
        Fault::KillRepeater(i) => {
            world.repeaters[i].proc.kill();
            s.last[i] = None;
            rec.repeater_kills += 1;
            rec.stale_checkpoint_events += s.since_full.unwrap_or(0);
            format!("SIGKILL repeater {i}, down {hold_s:.1} s")
        }
        Fault::PauseRepeater(i) => {
            world.repeaters[i].proc.pause();
            s.last[i] = None;
            rec.reconnects += 1;
            format!("SIGSTOP repeater {i} for {hold_s:.1} s")
        }
        Fault::KillSource => {
            world.source.kill();
            format!("SIGKILL source, down {hold_s:.1} s")
        }
        Fault::PauseSource => {
            world.source.pause();
            format!("SIGSTOP source for {hold_s:.1} s")
        }
        Fault::KillBroker(n) => {
            world.brokers.take_down(n);
            rec.reconnects += 1;
            rec.broker_faults += 1;
            format!(
                "{} broker node {n}, down {hold_s:.1} s",
                world.brokers.down_word()
            )
        }
        Fault::PauseBroker(n) => {
            world.brokers.nodes[n].pause();
            rec.reconnects += 1;
            rec.broker_faults += 1;
            format!("SIGSTOP broker node {n} for {hold_s:.1} s")
        }
        Fault::Partition(i) => {
            let Some(net) = &world.net else {
                return skip(rec, "partition: no network namespaces");
            };
            if let Err(e) = net.partition(i, true) {
                rec.failures
                    .push(format!("t={t:.1}s: cannot cut the link: {e}"));
                return;
            }
            rec.reconnects += 1;
            format!("partition repeater {i} from the brokers for {hold_s:.1} s")
        }
        Fault::Loss(i) => {
            let Some(net) = world.net.as_ref().filter(|n| n.loss_by.is_some()) else {
                return skip(rec, "30% packet loss: neither tc netem nor nft works here");
            };
            if let Err(e) = net.loss(i, true) {
                rec.failures
                    .push(format!("t={t:.1}s: cannot add packet loss: {e}"));
                return;
            }
            rec.reconnects += 1;
            format!("30% packet loss on repeater {i}'s link for {hold_s:.1} s")
        }
        Fault::DiskFull => {
            if !world.disk.mounted() {
                return skip(rec, "disk full: no tmpfs");
            }
            if let Err(e) = world.disk.fill() {
                rec.failures.push(format!("t={t:.1}s: {e}"));
                return;
            }
            s.since_full = Some(0);
            format!("disk full under the checkpoints for {hold_s:.1} s")
        }
    };
    rec.faults += 1;
    bump(&mut rec.applied, kind(fault));
    println!("chaos: t={t:6.1}s {what}");
}

fn heal(world: &mut World, fault: Fault, t: f64, rec: &mut Record, s: &mut Sampler) {
    let result = match fault {
        Fault::KillRepeater(i) => {
            let r = &mut world.repeaters[i];
            r.proc.spawn().and_then(|()| r.wait_api())
        }
        Fault::PauseRepeater(i) => {
            world.repeaters[i].proc.resume();
            Ok(())
        }
        Fault::KillSource => world.source.spawn(),
        Fault::PauseSource => {
            world.source.resume();
            Ok(())
        }
        Fault::KillBroker(n) => world.brokers.bring_up(n),
        Fault::PauseBroker(n) => {
            world.brokers.nodes[n].resume();
            Ok(())
        }
        Fault::Partition(i) => match &world.net {
            Some(net) => net.partition(i, false),
            None => return,
        },
        Fault::Loss(i) => match world.net.as_ref().filter(|n| n.loss_by.is_some()) {
            Some(net) => net.loss(i, false),
            None => return,
        },
        Fault::DiskFull => {
            if !world.disk.mounted() {
                return;
            }
            s.since_full = None;
            world.disk.clear()
        }
    };
    if let Err(e) = result {
        rec.failures
            .push(format!("t={t:.1}s: after {fault:?}: {e}"));
        println!("chaos: t={t:6.1}s FAILED to end {fault:?}: {e}");
    }
}
