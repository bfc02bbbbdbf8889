//! Counting what arrives: missing, duplicated and out-of-order sequence
//! numbers, and latency percentiles from the embedded send time.

use serde_json::{json, Value};

/// What a subscriber has seen of the sequence `1..=expect`.
#[derive(Debug, Default)]
pub struct Tally {
    /// Bit `n` set once sequence number `n` arrived.
    seen: Vec<u64>,
    /// Messages counted (sequence number ≥ 1).
    pub received: u64,
    /// Distinct sequence numbers among them.
    pub distinct: u64,
    /// Messages whose number had arrived before.
    pub duplicates: u64,
    /// First arrivals of a number lower than one seen before.
    pub out_of_order: u64,
    /// The highest number seen.
    pub max_seq: u64,
    /// The lowest number seen (0 = none yet).
    pub min_seq: u64,
    /// Count missing numbers from `min_seq` rather than from 1.
    pub from_first: bool,
    /// Warm-up messages (sequence number 0).
    pub warmup: u64,
    /// Messages without a readable sequence number.
    pub unreadable: u64,
    /// Smallest and largest payload, in bytes.
    pub min_bytes: usize,
    pub max_bytes: usize,
    /// Receive time of the first and the latest counted message, ns.
    pub first_ns: u64,
    pub last_ns: u64,
    /// Latency of each counted first arrival that carried a send time, ns.
    latencies: Vec<u64>,
}

impl Tally {
    /// A tally expecting about `expect` numbers (it grows past that).
    pub fn with_capacity(expect: u64) -> Tally {
        let words = usize::try_from(expect / 64 + 1).unwrap_or(1);
        Tally {
            seen: vec![0; words],
            latencies: Vec::with_capacity(usize::try_from(expect).unwrap_or(0).min(10_000_000)),
            min_bytes: usize::MAX,
            ..Tally::default()
        }
    }

    /// Records message `seq` (0 = warm-up) of `bytes` bytes, sent at `t_ns`
    /// (if known) and received at `now_ns`.
    pub fn record(&mut self, seq: u64, t_ns: Option<u64>, bytes: usize, now_ns: u64) {
        self.min_bytes = self.min_bytes.min(bytes);
        self.max_bytes = self.max_bytes.max(bytes);
        if seq == 0 {
            self.warmup += 1;
            return;
        }
        self.received += 1;
        if self.first_ns == 0 {
            self.first_ns = now_ns;
        }
        self.last_ns = now_ns;
        let Ok(word) = usize::try_from(seq / 64) else {
            self.unreadable += 1;
            return;
        };
        if word >= self.seen.len() {
            self.seen.resize((word + 1).max(self.seen.len() * 2), 0);
        }
        let bit = 1u64 << (seq % 64);
        if self.seen[word] & bit != 0 {
            self.duplicates += 1;
            return;
        }
        self.seen[word] |= bit;
        self.distinct += 1;
        if seq < self.max_seq {
            self.out_of_order += 1;
        }
        self.max_seq = self.max_seq.max(seq);
        if self.min_seq == 0 || seq < self.min_seq {
            self.min_seq = seq;
        }
        if let Some(t) = t_ns {
            self.latencies.push(now_ns.saturating_sub(t));
        }
    }

    /// A message whose sequence number could not be read.
    pub fn record_unreadable(&mut self) {
        self.unreadable += 1;
    }

    /// The first number counted: 1, or the lowest seen with `from_first`.
    fn first(&self) -> u64 {
        if self.from_first {
            self.min_seq.max(1)
        } else {
            1
        }
    }

    /// Whether every number of `first..=expect` has arrived.
    pub fn complete(&self, expect: u64) -> bool {
        self.distinct > expect.saturating_sub(self.first()) && self.missing(expect) == 0
    }

    /// How many numbers of `first..=expect` have not arrived.
    pub fn missing(&self, expect: u64) -> u64 {
        let first = self.first();
        if expect < first {
            return 0;
        }
        let mut have = 0u64;
        for seq in first..=expect {
            let word = usize::try_from(seq / 64).unwrap_or(usize::MAX);
            if self
                .seen
                .get(word)
                .is_some_and(|w| w & (1 << (seq % 64)) != 0)
            {
                have += 1;
            }
        }
        expect - first + 1 - have
    }

    /// The numbers of `1..=expect` that have not arrived, as ranges
    /// `[first, last]`, at most `limit` of them.
    pub fn missing_ranges(&self, expect: u64, limit: usize) -> Vec<(u64, u64)> {
        let mut out: Vec<(u64, u64)> = Vec::new();
        for seq in self.first()..=expect {
            let word = usize::try_from(seq / 64).unwrap_or(usize::MAX);
            if self
                .seen
                .get(word)
                .is_some_and(|w| w & (1 << (seq % 64)) != 0)
            {
                continue;
            }
            let full = out.len() == limit;
            match out.last_mut() {
                Some(last) if last.1 + 1 == seq => last.1 = seq,
                _ if full => break,
                _ => out.push((seq, seq)),
            }
        }
        out
    }

    /// The summary line: counts, rate over the counted span, latency
    /// percentiles in microseconds. `expect` = 0 means "up to the highest
    /// number seen".
    pub fn summary(&mut self, expect: u64) -> Value {
        let expect = if expect == 0 { self.max_seq } else { expect };
        self.latencies.sort_unstable();
        let span_ns = self.last_ns.saturating_sub(self.first_ns);
        let rate = if span_ns > 0 && self.distinct > 1 {
            (self.distinct - 1) as f64 * 1e9 / span_ns as f64
        } else {
            0.0
        };
        // Nearest rank, in integers: `permille` = 999 is p99.9.
        let pct = |permille: usize| -> Value {
            if self.latencies.is_empty() {
                return Value::Null;
            }
            let rank = (permille * self.latencies.len()).div_ceil(1000);
            let v = self.latencies[rank.clamp(1, self.latencies.len()) - 1];
            json!((v as f64 / 1000.0 * 10.0).round() / 10.0)
        };
        json!({
            "expected": expect,
            "received": self.received,
            "distinct": self.distinct,
            "missing": self.missing(expect),
            "missing_ranges": self.missing_ranges(expect, 10),
            "duplicates": self.duplicates,
            "out_of_order": self.out_of_order,
            "max_seq": self.max_seq,
            "min_seq": self.min_seq,
            "warmup": self.warmup,
            "unreadable": self.unreadable,
            "payload_bytes": [if self.min_bytes == usize::MAX { 0 } else { self.min_bytes }, self.max_bytes],
            "span_s": span_ns as f64 / 1e9,
            "rate": rate.round(),
            "latency_us": {
                "samples": self.latencies.len(),
                "p50": pct(500),
                "p99": pct(990),
                "p999": pct(999),
                "max": pct(1000),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_missing_duplicates_and_reordering() {
        let mut t = Tally::with_capacity(10);
        for (i, seq) in [0, 1, 2, 4, 3, 3, 7, 200].into_iter().enumerate() {
            t.record(seq, Some(0), 10, i as u64 * 1000);
        }
        assert_eq!(t.warmup, 1);
        assert_eq!(t.received, 7);
        assert_eq!(t.distinct, 6);
        assert_eq!(t.duplicates, 1);
        assert_eq!(t.out_of_order, 1);
        assert_eq!(t.missing(8), 3); // 5, 6, 8
        assert_eq!(t.missing_ranges(8, 10), vec![(5, 6), (8, 8)]);
        assert!(!t.complete(8));
        assert!(t.complete(4));
        let s = t.summary(8);
        assert_eq!(s["missing"], 3);
        assert_eq!(s["max_seq"], 200);
    }

    #[test]
    fn from_first_ignores_what_came_before_the_first_number() {
        let mut t = Tally::with_capacity(10);
        t.from_first = true;
        for seq in [5, 6, 8] {
            t.record(seq, None, 1, 1);
        }
        assert_eq!(t.missing(8), 1);
        assert!(!t.complete(8));
        t.record(7, None, 1, 2);
        assert!(t.complete(8));
        assert_eq!(t.summary(8)["min_seq"], 5);
    }

    #[test]
    fn percentiles_use_nearest_rank() {
        let mut t = Tally::with_capacity(1000);
        for seq in 1..=1000u64 {
            // latency seq µs
            t.record(seq, Some(0), 1, seq * 1000);
        }
        let s = t.summary(1000);
        assert_eq!(s["latency_us"]["p50"], 500.0);
        assert_eq!(s["latency_us"]["p99"], 990.0);
        assert_eq!(s["latency_us"]["p999"], 999.0);
        assert_eq!(s["latency_us"]["max"], 1000.0);
    }
}
