//! Upgrades keep state: the routes file and the checkpoint written by an
//! earlier release (`tests/fixtures/state/`, see its README) load in this
//! one, and a file of a newer format than this release knows is refused at
//! start with a clear message and left exactly as it was.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::repeater::Repeater;
use crate::common::Sandbox;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/state")
        .join(name)
}

/// The source the v1 checkpoint was written for (see the fixtures' README);
/// nothing needs to listen there for the checkpoint to load.
const V1_SOURCE: &str = "http://127.0.0.1:47999";

#[test]
fn routes_and_checkpoint_written_by_release_0_1_0_load() {
    let sb = Sandbox::new();
    let dir = sb.path().join("state");
    fs::create_dir_all(&dir).expect("create the state dir");
    let state = dir.join("edge.routes.json");
    fs::copy(fixture("v1.routes.json"), &state).expect("copy the routes");
    fs::copy(fixture("v1.checkpoint"), dir.join("edge.checkpoint")).expect("copy the checkpoint");
    let mut r = Repeater::builder(&sb, "edge")
        .source(V1_SOURCE)
        .sinkprotocol("stderr")
        .args([
            "--state",
            &state.to_string_lossy(),
            "--checkpoint",
            "on",
            "--log",
            "info",
        ])
        .start();
    let (status, body) = r.get("/events");
    assert_eq!(status, 200, "{body}");
    let routes: serde_json::Value = serde_json::from_str(&body).expect("JSON routes");
    let pairs: Vec<(String, String)> = routes
        .as_array()
        .or_else(|| routes["routes"].as_array())
        .expect("a list of routes")
        .iter()
        .map(|r| {
            (
                r["sourcetopic"].as_str().unwrap_or("").to_string(),
                r["sinktopic"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    for (source, sink) in [
        ("timer/sec/1", "site/a/{topic}"),
        ("timer/min/", "site/b/{suffix}"),
        ("timer/msec/100", "fast"),
    ] {
        assert!(
            pairs.contains(&(source.to_string(), sink.to_string())),
            "{source} -> {sink} not loaded: {pairs:?}"
        );
    }
    assert_eq!(pairs.len(), 3, "{pairs:?}");
    assert!(
        r.log().contains("resuming after event id 1796135584357273"),
        "the checkpoint was not used: {}",
        r.log()
    );
    assert_eq!(r.signal(libc::SIGTERM).code(), Some(0), "{}", r.log());
}

/// Starts a repeater on `file` (as `--state`, or a checkpoint beside the
/// state) holding `text`; returns its stderr after checking it refused to
/// start (exit 1) and left `file` byte for byte and untouched in time.
fn refused(sb: &Sandbox, file: &Path, state: &Path, text: &str) -> String {
    fs::write(file, text).expect("write the newer file");
    let before = fs::metadata(file)
        .and_then(|m| m.modified())
        .expect("mtime");
    std::thread::sleep(Duration::from_millis(20));
    let state = state.to_string_lossy();
    let ran = sb
        .run([
            "event-repeater",
            "run",
            "--name",
            "edge",
            "--sinkprotocol",
            "stderr",
            "--source",
            V1_SOURCE,
            "--checkpoint",
            "on",
            "--state",
            &state,
        ])
        .assert()
        .code(1);
    assert_eq!(
        fs::read_to_string(file).expect("read back"),
        text,
        "the file was changed"
    );
    let after = fs::metadata(file)
        .and_then(|m| m.modified())
        .expect("mtime");
    assert_eq!(before, after, "the file was rewritten");
    assert!(
        !sb.plugin_runtime_dir().join("edge.sock").exists(),
        "a refused repeater left its socket"
    );
    ran.stderr
}

#[test]
fn a_routes_file_or_checkpoint_of_a_newer_format_is_refused_and_left_alone() {
    let sb = Sandbox::new();
    let dir = sb.path().join("state");
    fs::create_dir_all(&dir).expect("create the state dir");
    let state = dir.join("edge.routes.json");
    let newer_routes = fs::read_to_string(fixture("v1.routes.json"))
        .expect("read the fixture")
        .replace("\"version\": 1", "\"version\": 2");
    let err = refused(&sb, &state, &state, &newer_routes);
    assert!(err.contains("version 2") && err.contains("newer"), "{err}");
    assert!(err.contains(&state.display().to_string()), "{err}");

    // The v1 routes start (the control), and then a newer checkpoint is refused.
    fs::copy(fixture("v1.routes.json"), &state).expect("copy the routes");
    let checkpoint = dir.join("edge.checkpoint");
    let newer_checkpoint = fs::read_to_string(fixture("v1.checkpoint"))
        .expect("read the fixture")
        .replace("\"version\":1", "\"version\":2");
    assert_ne!(
        newer_checkpoint,
        fs::read_to_string(fixture("v1.checkpoint")).unwrap_or_default()
    );
    let err = refused(&sb, &checkpoint, &state, &newer_checkpoint);
    assert!(err.contains("version 2") && err.contains("newer"), "{err}");
    fs::copy(fixture("v1.checkpoint"), &checkpoint).expect("copy the checkpoint");
    let mut r = Repeater::builder(&sb, "edge")
        .source(V1_SOURCE)
        .sinkprotocol("stderr")
        .args(["--state", &state.to_string_lossy(), "--checkpoint", "on"])
        .start();
    assert_eq!(r.signal(libc::SIGTERM).code(), Some(0), "{}", r.log());
}
