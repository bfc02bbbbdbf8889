//! `chaos`: a Jepsen-style run around the event repeater (bench/chaos.sh).
//!
//! Starts the brokers, a numbered source and the repeaters, applies a
//! seeded random plan of faults for CHAOS_SECONDS while routes change
//! through the API, lets everything through, and counts what the broker
//! holds. The seed is printed first; the last line is
//! `chaos: seed S, F faults, sent N, missing M, duplicates D (bound B)`.
//!
//! Exit codes: 0 nothing lost and every check held; 1 a loss or a failed
//! check; 2 a bad setting; 3 the run could not be set up; 130 interrupted.

mod api;
mod brokers;
mod check;
mod config;
mod disk;
mod nemesis;
mod net;
mod port;
mod proc;
mod rabbitmq;
mod record;
mod routes;
mod schedule;
mod tansu;
mod world;

use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// SIGINT and SIGTERM end the run in order (children killed, namespaces
/// and mount removed) instead of killing the driver outright.
fn catch_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to an atomic (async-signal-safe).
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as *const () as usize;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
    }
}

fn main() {
    catch_signals();
    let cfg = match config::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("chaos: {e}");
            std::process::exit(2);
        }
    };
    let replay = if cfg.seed_given {
        ""
    } else {
        " (fresh; replay with CHAOS_SEED)"
    };
    println!("chaos: seed {}{replay}", cfg.seed);
    if cfg.work.exists() {
        eprintln!(
            "chaos: {} exists; give CHAOS_WORK a new directory",
            cfg.work.display()
        );
        std::process::exit(2);
    }
    let code = run(&cfg);
    std::process::exit(code);
}

fn run(cfg: &config::Config) -> i32 {
    println!(
        "chaos: {} s, sink {:?}, {} repeater(s), {} events/s, --buffer {}; work dir {}",
        cfg.seconds,
        cfg.sink,
        cfg.repeaters,
        cfg.rate,
        cfg.buffer,
        cfg.work.display()
    );
    let mut world = match world::World::start(cfg) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("chaos: cannot set the run up: {e}");
            return 3;
        }
    };
    for note in &world.notes {
        println!("chaos: {note}");
    }
    let shape = schedule::Shape {
        seconds: cfg.seconds,
        repeaters: cfg.repeaters,
        broker_nodes: world.brokers.nodes.len(),
    };
    let plan = schedule::plan(cfg.seed, shape);
    let interrupted = || INTERRUPTED.load(Ordering::SeqCst);
    let mut rec = match nemesis::run(&mut world, &plan, cfg.seconds, &interrupted) {
        Ok(rec) => rec,
        Err(e) => {
            eprintln!("chaos: {e}; stopping everything");
            return 130;
        }
    };
    let kinds: Vec<String> = rec
        .applied
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    println!("chaos: faults applied: {}", kinds.join(", "));
    for (why, n) in &rec.skipped {
        println!("chaos: skipped {n} fault(s) ({why})");
    }
    // CI (CHAOS_REQUIRE_ALL=1): every kind of fault ran, none was skipped.
    if cfg.require_all {
        let kinds = usize::from(schedule::KINDS);
        if !rec.skipped.is_empty() || rec.applied.len() < kinds {
            rec.failures.push(format!(
                "CHAOS_REQUIRE_ALL=1: {} of {kinds} kinds of fault applied, {} skipped",
                rec.applied.len(),
                rec.skipped.len()
            ));
        }
    }
    println!(
        "chaos: faults over ({} applied, {} route changes); letting everything through (CHAOS_SETTLE={} s at most)",
        rec.faults, rec.route_changes, cfg.settle
    );
    let out = check::run(&mut world, cfg, &rec);
    drop(world);
    let lost = out.missing > 0;
    let over = out.duplicates > out.bound;
    if over {
        println!(
            "chaos: FAILED: {} duplicates, over the bound of {}",
            out.duplicates, out.bound
        );
    }
    for f in &out.failures {
        println!("chaos: FAILED: {f}");
    }
    let ok = !lost && !over && out.failures.is_empty();
    if ok {
        if let Err(e) = std::fs::remove_dir_all(&cfg.work) {
            println!("chaos: cannot remove {}: {e}", cfg.work.display());
        }
    } else {
        println!("chaos: logs kept in {}", cfg.work.display());
    }
    println!(
        "chaos: seed {}, {} faults, sent {}, missing {}, duplicates {} (bound {})",
        cfg.seed, rec.faults, out.sent, out.missing, out.duplicates, out.bound
    );
    i32::from(!ok)
}
