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
}

impl Sample {
    /// The value of a family's one series without labels.
    pub(super) fn metric(&self, m: &Metric) -> Option<f64> {
        self.metrics.get(&m.sample()).copied()
    }

    /// Sum of every series of a family (every label set).
    pub(super) fn family(&self, m: &Metric) -> Option<f64> {
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
        Err(e) => {
            return Sample {
                error: Some(e.to_string()),
                ..Sample::default()
            }
        }
    };
    let metrics = match remote.request(Method::Get, path::METRICS, None) {
        Ok(r) => parse_metrics(&r.body),
        Err(e) => {
            return Sample {
                error: Some(e.to_string()),
                health,
                ..Sample::default()
            }
        }
    };
    Sample {
        error: None,
        health,
        metrics,
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
