//! `app` is on every plugin call's path: it must not carry the MQTT, server,
//! async runtime, HTTP client or archive code that plugins and `app_fetch` use.

use crate::common;

use std::collections::BTreeSet;
use std::process::Command;

/// The crates whose functions `bin` defines (`tokio::runtime::…` or
/// `<tokio::…>`), by `nm`; `None` (after the skip line) without binutils.
fn linked_crates(bin: &std::path::Path) -> Option<BTreeSet<String>> {
    let nm = common::require_tool("nm", "binutils")?;
    let out = Command::new(nm)
        .args(["-C", "--defined-only"])
        .arg(bin)
        .output()
        .expect("nm (binutils) lists the binary's symbols");
    assert!(out.status.success(), "nm {}", bin.display());
    let symbols = String::from_utf8_lossy(&out.stdout);
    let crate_of = |line: &str| -> Option<String> {
        let name = line.splitn(3, ' ').nth(2)?.trim_start_matches('<');
        name.split_once("::").map(|(k, _)| k.to_string())
    };
    Some(symbols.lines().filter_map(crate_of).collect())
}

#[test]
fn the_app_binary_links_no_runtime_server_mqtt_or_http_crates() {
    let Some(linked) = linked_crates(&common::app_bin()) else {
        return;
    };
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

/// The crates `Cargo.toml` compiles unoptimised in the `source` profile
/// (`[profile.source.package.NAME]`), as Rust names them in symbols.
fn unoptimised_in_source_profile() -> Vec<String> {
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).expect("read the workspace's Cargo.toml");
    text.lines()
        .filter_map(|l| {
            l.strip_prefix("[profile.source.package.")?
                .strip_suffix(']')
        })
        .map(|name| name.trim_matches('"').replace('-', "_"))
        .collect()
}

/// A crate at opt-level 0 shares its generic instances with the crates
/// that use it (docs/benchmarks.md, "Compiling less"), so the repeater must
/// link none of those the source profile leaves unoptimised.
#[test]
fn the_repeater_links_no_crate_the_source_profile_leaves_unoptimised() {
    let cold = unoptimised_in_source_profile();
    assert!(cold.contains(&"ratatui".to_string()), "{cold:?}");
    let Some(linked) = linked_crates(&common::plugin_bin("app-event-repeater")) else {
        return;
    };
    for krate in &cold {
        assert!(
            !linked.contains(krate),
            "app-event-repeater links {krate}, which Cargo.toml's source profile compiles at opt-level 0"
        );
    }
    // The check sees crates: the ones the repeater does use are there.
    assert!(linked.contains("tokio"), "{linked:?}");
    assert!(linked.contains("rumqttc"), "{linked:?}");
}
