//! The brokers, nodes and repeaters the tests start die with the test that
//! started them, even when it is killed without unwinding (a CI timeout,
//! Ctrl-C), so nothing is left listening on the machine: every fixture
//! spawns through `common::process::dies_with_test`, whose signal the kernel
//! sends when the spawning thread ends.

use crate::common;

use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use common::process::{alive, dies_with_test};

/// `sleep 60` spawned from a thread of its own, through `dies_with_test`
/// when `guarded`; the thread then waits for `release` before it ends.
/// Returns the thread (whose result says it was released, not timed out)
/// and the child's pid (reaped by a thread of its own).
fn sleeper_in_thread(
    guarded: bool,
    release: mpsc::Receiver<()>,
) -> (thread::JoinHandle<bool>, i32) {
    let (tx, rx) = mpsc::channel();
    let handle = thread::spawn(move || {
        let mut cmd = Command::new("sleep");
        cmd.arg("60").stdin(Stdio::null());
        if guarded {
            dies_with_test(&mut cmd);
        }
        let child = cmd.spawn().expect("spawn sleep");
        tx.send(child).expect("send child");
        // Ends the thread (not the child) once released, or after 30 s if
        // the test itself goes away.
        release.recv_timeout(Duration::from_secs(30)).is_ok()
    });
    let mut child = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the thread spawned sleep");
    let pid = child.id() as i32;
    // Reap it from here whenever it ends, so it never lingers as a zombie.
    thread::spawn(move || {
        let _ = child.wait();
    });
    (handle, pid)
}

#[test]
fn a_fixture_process_dies_when_the_thread_that_started_it_ends() {
    let (release_guarded, rx) = mpsc::channel();
    let (guarded_thread, guarded) = sleeper_in_thread(true, rx);
    let (release_plain, rx) = mpsc::channel();
    let (plain_thread, plain) = sleeper_in_thread(false, rx);
    let kill_both = || {
        for pid in [guarded, plain] {
            // SAFETY: kill(2) on a sleep this test spawned.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    };
    let running = common::wait_for(Duration::from_secs(5), || {
        (alive(guarded) && alive(plain)).then_some(())
    });
    if running.is_none() {
        kill_both();
    }
    assert!(running.is_some(), "the two sleeps never both ran");

    for release in [release_guarded, release_plain] {
        release.send(()).expect("release a spawning thread");
    }
    let released = [guarded_thread, plain_thread].map(|t| t.join().unwrap_or(false));
    let gone = common::wait_for(Duration::from_secs(5), || (!alive(guarded)).then_some(()));
    // The control: without the guard, the end of the spawning thread leaves
    // the child running, so `alive` would have seen the guarded one survive.
    let plain_survived = alive(plain);
    kill_both();
    assert_eq!(released, [true, true], "a spawning thread was not released");
    assert!(
        gone.is_some(),
        "sleep {guarded} outlived the thread that spawned it"
    );
    assert!(
        plain_survived,
        "the unguarded sleep {plain} died with its thread too: the test proves nothing"
    );
}
