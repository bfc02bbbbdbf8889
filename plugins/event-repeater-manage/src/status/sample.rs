//! What one repeater says at one moment: its `/healthz` and the samples
//! of its `/metrics`.

use std::collections::BTreeMap;

use app_event_repeater_api::metric::Metric;
use app_event_repeater_api::{path, Health};

use crate::error::Error;
use crate::remote::Remote;
use crate::request::Method;

/// What one host said at one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sample {
    /// Why it could not be read (then it is down).
    pub error: Option<String>,
    /// `/healthz`, when it was read.
    pub health: Option<Health>,
    /// The counters and gauges of `/metrics`, by full name with labels.
    pub metrics: BTreeMap<String, f64>,
    /// The `--timeout`, in seconds, when the host did not answer within it.
    pub timed_out: Option<f64>,
}

/// A series' labels, as written.
pub type Labels = Vec<(String, String)>;

impl Sample {
    /// The value of a family's one series without labels.
    pub fn metric(&self, m: &Metric) -> Option<f64> {
        self.metrics.get(&m.sample()).copied()
    }

    /// Sum of every series of a family (every label set).
    pub fn family(&self, m: &Metric) -> Option<f64> {
        let full = m.sample();
        let labelled = format!("{full}{{");
        let mut found = None;
        for (k, v) in &self.metrics {
            if k == &full || k.starts_with(&labelled) {
                *found.get_or_insert(0.0) += v;
            }
        }
        found
    }

    /// Every series whose sample name is `name` (as
    /// `app_event_repeater_route_events_total`), with its labels; a series
    /// whose labels cannot be read is left out.
    pub fn series(&self, name: &str) -> Vec<(Labels, f64)> {
        self.metrics
            .iter()
            .filter_map(|(k, v)| {
                let rest = k.strip_prefix(name)?;
                if rest.is_empty() {
                    return Some((Labels::new(), *v));
                }
                let inner = rest.strip_prefix('{')?.strip_suffix('}')?;
                Some((labels(inner)?, *v))
            })
            .collect()
    }
}

/// A sample for a host that could not be asked.
pub fn failed(e: &Error) -> Sample {
    Sample {
        error: Some(e.to_string()),
        timed_out: match e {
            Error::Timeout { seconds, .. } => Some(*seconds),
            _ => None,
        },
        ..Sample::default()
    }
}

/// Reads `/healthz` and `/metrics` of one repeater.
pub fn sample(remote: &Remote) -> Sample {
    // A body that is not JSON at all was refused by the request already.
    let health = remote
        .request(Method::Get, path::HEALTHZ, None)
        .and_then(|r| {
            serde_json::from_str::<Health>(&r.body).map_err(|e| {
                Error::Failed(format!("/healthz is not an event repeater's health ({e})"))
            })
        });
    let health = match health {
        Ok(h) => Some(h),
        Err(e) => return failed(&e),
    };
    let metrics = match remote.request(Method::Get, path::METRICS, None) {
        Ok(r) => parse_metrics(&r.body),
        Err(e) => {
            return Sample {
                health,
                ..failed(&e)
            }
        }
    };
    Sample {
        health,
        metrics,
        ..Sample::default()
    }
}

/// The sample lines, `name{labels} value`, of OpenMetrics or Prometheus text
/// (the `#` lines, `# EOF` included, are skipped).
pub fn parse_metrics(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.rsplit_once(' '))
        .filter_map(|(k, v)| Some((k.trim().to_string(), v.trim().parse().ok()?)))
        .collect()
}

/// The labels inside `{…}`: `k="v",k2="v2"`, the values unescaped
/// (OpenMetrics writes `\\`, `\"` and `\n` in them); `None` when it is not
/// that shape.
pub fn labels(text: &str) -> Option<Labels> {
    let mut out = Labels::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.next_if(|c| *c == ',' || *c == ' ').is_some() {}
        if chars.peek().is_none() {
            return Some(out);
        }
        let mut key = String::new();
        loop {
            match chars.next()? {
                '=' => break,
                c => key.push(c),
            }
        }
        if chars.next()? != '"' {
            return None;
        }
        let mut value = String::new();
        loop {
            match chars.next()? {
                '"' => break,
                '\\' => match chars.next()? {
                    'n' => value.push('\n'),
                    c => value.push(c),
                },
                c => value.push(c),
            }
        }
        out.push((key.trim().to_string(), value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_unescaped() {
        let l = labels(r#"sourcetopic="a \"b\" c\\d\ne",sinktopic="{x}, y""#).expect("labels");
        assert_eq!(
            l,
            [
                ("sourcetopic".to_string(), "a \"b\" c\\d\ne".to_string()),
                ("sinktopic".to_string(), "{x}, y".to_string()),
            ]
        );
        assert_eq!(labels(""), Some(Labels::new()));
        assert_eq!(labels("a=b"), None);
        assert_eq!(labels(r#"a="unterminated"#), None);
    }

    #[test]
    fn series_of_one_family_only() {
        let s = Sample {
            metrics: parse_metrics(
                "x_total{reason=\"a\"} 1\nx_total{reason=\"b\"} 2\nx_totals 9\nx_total 3\n",
            ),
            ..Sample::default()
        };
        let got = s.series("x_total");
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(got.contains(&(vec![("reason".into(), "b".into())], 2.0)));
        assert!(got.contains(&(Labels::new(), 3.0)));
    }
}
