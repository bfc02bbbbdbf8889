//! `app` is on every plugin call's path: it must not carry the MQTT, server,
//! async runtime, HTTP client or archive code that plugins and `app_fetch` use.

use crate::common;

use std::process::Command;

#[test]
fn the_app_binary_links_no_runtime_server_mqtt_or_http_crates() {
    let Some(nm) = common::require_tool("nm", "binutils") else {
        return;
    };
    let out = Command::new(nm)
        .args(["-C", "--defined-only"])
        .arg(common::app_bin())
        .output()
        .expect("nm (binutils) lists the binary's symbols");
    assert!(out.status.success());
    let symbols = String::from_utf8_lossy(&out.stdout);
    // The crate that owns each function: `tokio::runtime::…` or `<tokio::…>`.
    let crate_of = |line: &str| -> Option<String> {
        let name = line.splitn(3, ' ').nth(2)?.trim_start_matches('<');
        name.split_once("::").map(|(k, _)| k.to_string())
    };
    let linked: std::collections::BTreeSet<String> = symbols.lines().filter_map(crate_of).collect();
    for krate in [
        "tokio", "rumqttc", "axum", "hyper", "ureq", "rustls", "ring", "flate2", "tar",
    ] {
        assert!(
            !linked.contains(krate),
            "the app binary links the {krate} crate"
        );
    }
    // The check sees crates: the ones app does use are there.
    assert!(linked.contains("clap_builder"), "{linked:?}");
    assert!(linked.contains("serde_json"), "{linked:?}");
}
