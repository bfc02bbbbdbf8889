//! No upgrade is offered from an index past its `expires`: `plugin list`
//! shows `[upgrade available]` only while `upgrade` would take it.

use crate::common;

use std::time::{Duration, Instant};

use common::index::{utc, World};

#[test]
fn no_upgrade_is_offered_from_an_expired_index() {
    let Some(w) = World::new() else { return };
    let plugins = vec![w.plugin("hello", "1.0.0")];
    let url = w.publish("index.json", 1, &utc(3600), plugins, &w.key);
    w.add("main", &url).code(0);
    w.app(&["plugin", "install", "hello"]).code(0);
    // Serial 2 lists 1.1.0 and expires in a few seconds.
    let expires = utc(4);
    let plugins = vec![w.plugin("hello", "1.0.0"), w.plugin("hello", "1.1.0")];
    w.publish("index.json", 2, &expires, plugins, &w.key);
    w.app(&["plugin", "index", "update"]).ok();
    // Positive control: while it is valid, the upgrade is offered.
    w.app(&["plugin", "list"])
        .code(0)
        .stdout_has("[upgrade available: 1.1.0]");
    // Once it has expired (bounded wait), it is not, and upgrade refuses.
    let end = Instant::now() + Duration::from_secs(10);
    while utc(0) <= expires {
        assert!(Instant::now() < end, "{expires} never passed");
        std::thread::sleep(Duration::from_millis(200));
    }
    let list = w.app(&["plugin", "list"]).code(0);
    assert!(
        list.stdout.contains("[installed 1.0.0 from index main]"),
        "{list:?}"
    );
    assert!(!list.stdout.contains("upgrade available"), "{list:?}");
    w.app(&["plugin", "upgrade", "hello"])
        .code(6)
        .stderr_has(format!("expired on {expires}"));
}

#[test]
fn a_cached_copy_older_than_max_age_is_not_installed_from_nor_offered() {
    let Some(w) = World::new() else { return };
    let url = w.server.url("/index.json");
    let publish = |serial: u64, plugins: Vec<serde_json::Value>| {
        let doc = serde_json::json!({"apiVersion": "app.index/v1", "index": url, "serial": serial,
            "expires": common::index::FUTURE, "signed_at": utc(0), "plugins": plugins});
        w.publish_bytes("index.json", &serde_json::to_vec(&doc).unwrap(), &w.key);
    };
    publish(1, vec![w.plugin("hello", "1.0.0")]);
    let key = w.key.public.to_str().unwrap();
    let add = [
        "plugin",
        "index",
        "add",
        "main",
        &url,
        "--key-file",
        key,
        "--max-age",
        "10s",
    ];
    w.app(&add).code(0);
    w.app(&["plugin", "install", "hello"]).code(0);
    // signed_at has whole seconds: the copy may be up to 1 s older than this.
    let signed = Instant::now();
    publish(
        2,
        vec![w.plugin("hello", "1.0.0"), w.plugin("hello", "1.1.0")],
    );
    w.app(&["plugin", "index", "update"]).ok();
    // Positive control: while the copy is young, the upgrade is offered.
    w.app(&["plugin", "list"])
        .code(0)
        .stdout_has("[upgrade available: 1.1.0]");
    assert!(
        signed.elapsed() < Duration::from_secs(9),
        "too slow to see it young"
    );
    // Once it is older than 10 s, it is not, and neither upgrade nor
    // install takes it.
    std::thread::sleep(Duration::from_secs(12).saturating_sub(signed.elapsed()));
    let list = w.app(&["plugin", "list"]).code(0);
    assert!(!list.stdout.contains("upgrade available"), "{list:?}");
    for args in [
        &["plugin", "upgrade", "hello"][..],
        &["plugin", "install", "hello@1.1.0", "--force"],
    ] {
        w.app(args)
            .code(6)
            .stderr_has("longer ago than the --max-age of 10s it was added with");
    }
}
