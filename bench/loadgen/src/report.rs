//! `loadgen report`: bench/relay.sh's JSON lines → the Markdown table and the
//! check against issue 6's targets.
//!
//! Each line: `{"path":"direct|bridge|repeater|repeater-text","qos":0,"kind":"saturate|latency","lat_rate":1000,
//! "run":1,"sub":{subscriber summary},"relay":{"rss_kb":…,"cpu_s":…,"events":…},
//! "path_cpu_s":…,"cores":2}`: `path_cpu_s` is what every process of the path (generator,
//! relay, brokers, subscriber) spent over its life, null where one could not be read;
//! `cores` is the machine's.

use std::fmt::Write as _;

use serde_json::Value;

/// `repeater-text`: the repeater on a plain-SSE feed (`--topic-from event
/// --payload text`: the topic from `event:`, the data relayed as text
/// with no JSON pass).
const PATHS: [&str; 4] = ["direct", "bridge", "repeater", "repeater-text"];

pub fn run(path: &std::path::Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let rows: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{}: not JSON lines: {e}", path.display()))?;
    print!("{}", render(&rows));
    Ok(())
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.retain(|x| !x.is_nan());
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

/// Figures of one path at one QoS.
#[derive(Debug, Default, Clone, Copy)]
struct Figures {
    rate: f64,
    runs: usize,
    p50: f64,
    p99: f64,
    p999: f64,
    lost: u64,
    dup: u64,
    rss_kb: f64,
    cpu_us: f64,
    /// Every process of the path, per event (saturation runs).
    path_cpu_us: f64,
    /// The machine's cores.
    cores: f64,
}

fn figures(rows: &[Value], path: &str, qos: u64) -> Option<Figures> {
    let of = |kind: &str| -> Vec<&Value> {
        rows.iter()
            .filter(|r| r["path"] == path && r["qos"] == qos && r["kind"] == kind)
            .collect()
    };
    let sat = of("saturate");
    let lat = of("latency");
    if sat.is_empty() && lat.is_empty() {
        return None;
    }
    let all: Vec<&Value> = sat.iter().chain(lat.iter()).copied().collect();
    let lat_pick = |k: &str| {
        median(
            lat.iter()
                .map(|r| f(&r["sub"]["latency_us"][k]) / 1000.0)
                .collect(),
        )
    };
    Some(Figures {
        rate: median(sat.iter().map(|r| f(&r["sub"]["rate"])).collect()),
        runs: sat.len(),
        p50: lat_pick("p50"),
        p99: lat_pick("p99"),
        p999: lat_pick("p999"),
        lost: all
            .iter()
            .map(|r| r["sub"]["missing"].as_u64().unwrap_or(0))
            .sum(),
        dup: all
            .iter()
            .map(|r| r["sub"]["duplicates"].as_u64().unwrap_or(0))
            .sum(),
        rss_kb: all
            .iter()
            .map(|r| f(&r["relay"]["rss_kb"]))
            .fold(f64::NAN, f64::max),
        cpu_us: median(
            sat.iter()
                .map(|r| f(&r["relay"]["cpu_s"]) * 1e6 / f(&r["relay"]["events"]))
                .collect(),
        ),
        path_cpu_us: median(
            sat.iter()
                .map(|r| f(&r["path_cpu_s"]) * 1e6 / f(&r["relay"]["events"]))
                .collect(),
        ),
        cores: median(sat.iter().map(|r| f(&r["cores"])).collect()),
    })
}

fn render(rows: &[Value]) -> String {
    let mut out = String::new();
    let bytes = rows
        .iter()
        .find_map(|r| r["sub"]["payload_bytes"].get(1).and_then(Value::as_u64))
        .unwrap_or(0);
    // The latency runs' rate (lines without one are from before it was
    // recorded: 1,000/s).
    let lat_rate = rows
        .iter()
        .find(|r| r["kind"] == "latency")
        .map_or(1000, |r| r["lat_rate"].as_u64().unwrap_or(1000));
    let _ = writeln!(out, "Payload: {bytes} bytes on every hop.\n");
    let _ = writeln!(
        out,
        "| QoS | path | events/s (median) | vs direct | latency at {lat_rate}/s p50 / p99 / p99.9 (ms) | p99 added vs direct (ms) | lost | duplicated | relay peak RSS (MB) | relay CPU per event (µs) | all processes' CPU per event (µs) |"
    );
    let _ = writeln!(
        out,
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    let mut checks = Vec::new();
    let mut ceilings = Vec::new();
    for qos in [0u64, 1] {
        let direct = figures(rows, "direct", qos);
        let bridge = figures(rows, "bridge", qos);
        let repeater = figures(rows, "repeater", qos);
        let text = figures(rows, "repeater-text", qos);
        for (name, fig) in PATHS.iter().zip([direct, bridge, repeater, text]) {
            let Some(x) = fig else { continue };
            let vs = direct.map_or(f64::NAN, |d| x.rate / d.rate * 100.0);
            let added = direct.map_or(f64::NAN, |d| x.p99 - d.p99);
            let label = match *name {
                "direct" => "direct (broker alone)",
                "bridge" => "mosquitto bridge",
                "repeater-text" => "app event-repeater, text payload",
                _ => "app event-repeater",
            };
            let relay_note = if *name == "direct" { " (broker)" } else { "" };
            // Large payloads: the payload bytes per second too.
            let mbps = if bytes >= 1024 {
                format!(", {:.1} MB/s", x.rate * bytes as f64 / 1e6)
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "| {qos} | {label} | {:.0}{mbps} ({} runs) | {vs:.0}% | {:.2} / {:.2} / {:.2} | {added:+.2} | {} | {} | {:.1}{relay_note} | {:.1}{relay_note} | {:.1} |",
                x.rate, x.runs, x.p50, x.p99, x.p999, x.lost, x.dup, x.rss_kb / 1024.0, x.cpu_us,
                x.path_cpu_us
            );
            // However the work is scheduled, a path cannot relay more
            // events per second than its cores' time over the CPU its
            // processes spend per event.
            if let Some(d) = direct.filter(|_| *name != "direct") {
                let most = x.cores * 1e6 / x.path_cpu_us;
                if most.is_finite() {
                    ceilings.push(format!(
                        "- QoS {qos}, {label}: {:.1} µs of CPU per event in all (direct: {:.1}); with all {} cores busy at most {most:.0}/s, {:.0}% of direct's measured rate (measured {vs:.0}%; direct kept {:.1} cores busy, this path {:.1})",
                        x.path_cpu_us,
                        d.path_cpu_us,
                        x.cores,
                        most / d.rate * 100.0,
                        d.rate * d.path_cpu_us / 1e6,
                        x.rate * x.path_cpu_us / 1e6
                    ));
                }
            }
        }
        if let (Some(d), Some(b), Some(r)) = (direct, bridge, repeater) {
            checks.push((
                format!(
                    "QoS {qos}: repeater rate ≥ bridge rate ({:.0} vs {:.0}/s, {:.0}%)",
                    r.rate,
                    b.rate,
                    r.rate / b.rate * 100.0
                ),
                r.rate >= b.rate,
            ));
            if qos == 0 {
                checks.push((
                    format!(
                        "QoS 0: repeater rate ≥ 80% of direct ({:.0}%)",
                        r.rate / d.rate * 100.0
                    ),
                    r.rate >= 0.8 * d.rate,
                ));
            }
            checks.push((
                format!(
                    "QoS {qos}: p99 added latency at {lat_rate}/s ≤ bridge's ({:+.2} vs {:+.2} ms)",
                    r.p99 - d.p99,
                    b.p99 - d.p99
                ),
                r.p99 - d.p99 <= b.p99 - d.p99,
            ));
            checks.push((
                format!("QoS {qos}: repeater lost 0 ({})", r.lost),
                r.lost == 0,
            ));
            checks.push((
                format!(
                    "QoS {qos}: repeater peak RSS < 20 MB ({:.1} MB)",
                    r.rss_kb / 1024.0
                ),
                r.rss_kb < 20.0 * 1024.0,
            ));
        }
        if let (Some(r), Some(t)) = (repeater, text) {
            checks.push((
                format!(
                    "QoS {qos}: the text payload at least as fast as JSON ({:.0} vs {:.0}/s, {:.0}%)",
                    t.rate,
                    r.rate,
                    t.rate / r.rate * 100.0
                ),
                t.rate >= r.rate,
            ));
        }
    }
    if !ceilings.is_empty() {
        let _ = writeln!(out, "\nWhat the CPU allows:\n");
        for line in ceilings {
            let _ = writeln!(out, "{line}");
        }
    }
    if !checks.is_empty() {
        let _ = writeln!(out, "\nTargets (issues 6 and 29):\n");
        for (what, ok) in checks {
            let _ = writeln!(out, "- {} {what}", if ok { "met:" } else { "MISSED:" });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(path: &str, qos: u64, kind: &str, rate: f64, p99: f64, missing: u64) -> Value {
        json!({"path": path, "qos": qos, "kind": kind, "run": 1,
            "sub": {"rate": rate, "missing": missing, "duplicates": 0, "payload_bytes": [150, 150],
                    "latency_us": {"p50": 100.0, "p99": p99, "p999": p99 * 2.0}},
            "relay": {"rss_kb": 8192.0, "cpu_s": 1.0, "events": 100000.0},
            "path_cpu_s": if path == "direct" { 3.0 } else { 4.0 }, "cores": 2})
    }

    #[test]
    fn renders_medians_and_checks_targets() {
        let rows = vec![
            row("direct", 0, "saturate", 100.0, 0.0, 0),
            row("direct", 0, "saturate", 90.0, 0.0, 0),
            row("direct", 0, "saturate", 110.0, 0.0, 0),
            row("direct", 0, "latency", 0.0, 1000.0, 0),
            row("bridge", 0, "saturate", 70.0, 0.0, 0),
            row("bridge", 0, "latency", 0.0, 2000.0, 0),
            row("repeater", 0, "saturate", 85.0, 0.0, 0),
            row("repeater", 0, "latency", 0.0, 1500.0, 3),
            row("repeater-text", 0, "saturate", 95.0, 0.0, 0),
        ];
        let text = render(&rows);
        assert!(text.contains("Payload: 150 bytes"), "{text}");
        assert!(
            text.contains("| 0 | direct (broker alone) | 100 (3 runs) | 100% |"),
            "{text}"
        );
        assert!(
            text.contains("met: QoS 0: repeater rate ≥ bridge rate"),
            "{text}"
        );
        assert!(
            text.contains("met: QoS 0: repeater rate ≥ 80% of direct (85%)"),
            "{text}"
        );
        assert!(text.contains("met: QoS 0: p99 added latency"), "{text}");
        assert!(
            text.contains("MISSED: QoS 0: repeater lost 0 (3)"),
            "{text}"
        );
        assert!(
            text.contains("met: QoS 0: repeater peak RSS < 20 MB (8.0 MB)"),
            "{text}"
        );
        assert!(text.contains("| 10.0 |"), "cpu µs/event: {text}");
        assert!(
            text.contains("| 10.0 | 40.0 |"),
            "path cpu µs/event: {text}"
        );
        assert!(
            text.contains("- QoS 0, app event-repeater: 40.0 µs of CPU per event in all (direct: 30.0); with all 2 cores busy at most 50000/s, 50000% of direct's measured rate (measured 85%; direct kept 0.0 cores busy, this path 0.0)"),
            "{text}"
        );
        assert!(text.contains("latency at 1000/s"), "{text}");
        assert!(!text.contains("MB/s"), "{text}");
        assert!(
            text.contains("| 0 | app event-repeater, text payload | 95 (1 runs) | 95% |"),
            "{text}"
        );
        assert!(
            text.contains(
                "met: QoS 0: the text payload at least as fast as JSON (95 vs 85/s, 112%)"
            ),
            "{text}"
        );
    }

    #[test]
    fn large_payloads_get_mb_per_s_and_the_latency_rate_is_named() {
        let mut rows = vec![
            row("direct", 0, "saturate", 1000.0, 0.0, 0),
            row("direct", 0, "latency", 0.0, 1000.0, 0),
        ];
        rows[0]["sub"]["payload_bytes"] = json!([16384, 16384]);
        rows[1]["lat_rate"] = json!(10000);
        let text = render(&rows);
        assert!(text.contains("| 1000, 16.4 MB/s (1 runs) |"), "{text}");
        assert!(text.contains("latency at 10000/s"), "{text}");
    }
}
