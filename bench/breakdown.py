#!/usr/bin/env python3
"""Where the repeater's instructions go, per event, from callgrind profiles.

Reads profiles kept by `KEEP=DIR bench/instructions.sh` (callgrind.SINK.out)
and prints one Markdown table, a column per profile: the reader task and its
parts, the JSON pass, the allocator, the checkpoint ledger, the sink task,
and for NATS the async-nats connection task. Rows are inclusive costs of a
function (with what it calls) unless marked "self"; they overlap, so they do
not add up to the total.

Usage: bench/breakdown.py PROFILE... (EVENTS: events in each run, 102000 =
instructions.sh's COUNT + WARMUP)
"""
import os
import re
import subprocess
import sys

EVENTS = int(os.environ.get("EVENTS", "102000"))

# (label, kind, pattern): kind "incl" takes the first matching function's
# inclusive cost, "self" sums the exclusive cost of every matching function.
ROWS = [
    ("total", "total", None),
    ("reader task (`Source::run`)", "incl", r"source::Source::run::\{\{closure\}\}"),
    ("· SSE read and parse (`Parser::push_bytes`)", "incl", r"sse::Parser::push_bytes"),
    ("· router (`Relay::handle`: JSON pass, route, topic rules, buffer push)", "incl", r"relay::Relay::handle::\{\{closure\}\}"),
    ("JSON pass (serde_json, self)", "self", r"serde_json::|serde_core::|IgnoredAny|PhantomData<T> as serde"),
    ("allocator (malloc and free, self)", "self", r"malloc\.c|arena\.c|\?\?\?:_?mi_"),
    ("memcpy (self)", "self", r"memmove|memcpy"),
    ("checkpoint ledger (`Ledger::done`)", "incl", r"ledger::Ledger::done"),
    ("MQTT sink task (`MqttSink::run`)", "incl", r"MqttSink>::run::\{\{closure\}\}"),
    ("· rumqttc encode and write", "incl", r"rumqttc::framed::Network::write"),
    ("NATS sink task (`StartedNats::run`)", "incl", r"StartedNats::run::\{\{closure\}\}"),
    ("· acknowledgements (`Acks::arrived`)", "incl", r"acks::Acks<T>::arrived"),
    ("async-nats connection task", "incl", r"ConnectionHandler::process::\{\{closure\}\}::ProcessFut as core::future::future::Future>::poll"),
    ("· `HPUB` encoding (`enqueue_write_op`)", "incl", r"Connection::enqueue_write_op"),
]


def costs(path, inclusive):
    out = subprocess.run(
        ["callgrind_annotate", "--inclusive=" + ("yes" if inclusive else "no"), "--threshold=100", path],
        capture_output=True, text=True, check=True,
    ).stdout
    rows = []
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)", line)
        if m:
            rows.append((int(m.group(1).replace(",", "")), m.group(2)))
    return rows


def figure(inc, exc, kind, pattern):
    if kind == "total":
        return next(n for n, name in exc if "PROGRAM TOTALS" in name)
    if kind == "incl":
        return next((n for n, name in inc if re.search(pattern, name)), 0)
    return sum(n for n, name in exc if re.search(pattern, name) and "PROGRAM TOTALS" not in name)


def main():
    paths = sys.argv[1:]
    if not paths:
        print("usage: bench/breakdown.py PROFILE... (callgrind.SINK.out from KEEP=DIR bench/instructions.sh)", file=sys.stderr)
        return 2
    columns = [(costs(p, True), costs(p, False)) for p in paths]
    print("| instructions per event | " + " | ".join(paths) + " |")
    print("| --- |" + " ---: |" * len(paths))
    for label, kind, pattern in ROWS:
        cells = [figure(inc, exc, kind, pattern) / EVENTS for inc, exc in columns]
        if any(cells):
            print(f"| {label} | " + " | ".join(f"{c:,.0f}" if c else "–" for c in cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
