//! Where a sweep saturates: the knee, the point after which goodput (or, without an SLO,
//! request throughput) stops rising.

use serde::Serialize;

use super::load_report::LoadReport;

/// The knee of a sweep: the first point after which the values rise by less than 5 %; the
/// last point when they never stop rising.
pub(crate) fn knee(values: &[f64]) -> Option<usize> {
    if values.is_empty() {
        return None;
    }
    Some(
        values
            .windows(2)
            .position(|w| w[1] < w[0] * 1.05)
            .unwrap_or(values.len() - 1),
    )
}

/// What the knee is measured on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KneeMetric {
    /// Good requests per second (every run had an SLO).
    Goodput,
    /// Successful requests per second.
    RequestThroughput,
}

impl KneeMetric {
    pub fn as_str(self) -> &'static str {
        match self {
            KneeMetric::Goodput => "goodput",
            KneeMetric::RequestThroughput => "request_throughput",
        }
    }
}

/// One run of the sweep and its value of the metric.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SweepPoint {
    /// The run's label (`concurrency=16`).
    pub point: Option<String>,
    pub value: f64,
}

/// A sweep's summary (`"sweep"` in `--json`). Fields in the order the JSON has always had
/// them (sorted), so saved outputs compare line by line.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SweepSummary {
    /// Index of the knee among the runs.
    pub knee: usize,
    pub knee_point: Option<String>,
    pub knee_value: f64,
    pub metric: KneeMetric,
    pub points: Vec<SweepPoint>,
    /// The knee is the last point: throughput was still rising, the knee is further out.
    /// Never set when the sweep ended at its saturation point (`stopped_at_saturation`).
    pub rising_at_end: bool,
    /// The saturation point, when the sweep's last point is it (a rate sweep stops rising
    /// there): the target stopped keeping up, so the knee is not further out.
    pub stopped_at_saturation: Option<String>,
}

impl SweepSummary {
    /// The summary of a sweep: `None` for a single run, or when a run has no serving
    /// metrics.
    pub(crate) fn of(runs: &[LoadReport]) -> Option<SweepSummary> {
        if runs.len() < 2 {
            return None;
        }
        let served: Vec<_> = runs.iter().filter_map(|r| r.serving.as_ref()).collect();
        if served.len() != runs.len() {
            return None;
        }
        let by_goodput = served.iter().all(|s| s.goodput.is_some());
        let values: Vec<f64> = served
            .iter()
            .map(|s| s.goodput.unwrap_or(s.request_throughput))
            .collect();
        let k = knee(&values)?;
        Some(SweepSummary {
            knee: k,
            knee_point: runs[k].label.clone(),
            knee_value: values[k],
            metric: if by_goodput {
                KneeMetric::Goodput
            } else {
                KneeMetric::RequestThroughput
            },
            points: runs
                .iter()
                .zip(&values)
                .map(|(r, v)| SweepPoint {
                    point: r.label.clone(),
                    value: *v,
                })
                .collect(),
            rising_at_end: k == values.len() - 1,
            stopped_at_saturation: None,
        })
    }

    /// The summary of a rate sweep whose saturation point is `point`: when the sweep ended
    /// there (it stops rising at that point, or it was the last rate anyway), throughput
    /// still rising up to it does not put the knee further out.
    pub(crate) fn ended_at_saturation(mut self, point: Option<&str>, runs: &[LoadReport]) -> Self {
        let last = runs.last().and_then(|r| r.label.as_deref());
        if let Some(p) = point.filter(|p| Some(*p) == last) {
            self.rising_at_end = false;
            self.stopped_at_saturation = Some(p.to_owned());
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::serving::ServingReport;

    fn run(label: &str, throughput: f64, goodput: Option<f64>) -> LoadReport {
        LoadReport {
            label: Some(label.into()),
            serving: Some(ServingReport {
                request_throughput: throughput,
                goodput,
                ..ServingReport::default()
            }),
            ..LoadReport::default()
        }
    }

    #[test]
    fn knee_is_where_the_rise_stops() {
        assert_eq!(knee(&[10.0, 20.0, 40.0, 41.0, 39.0]), Some(2));
        assert_eq!(knee(&[10.0, 20.0, 40.0]), Some(2));
        assert_eq!(knee(&[]), None);
    }

    #[test]
    fn a_sweep_names_its_knee_by_throughput_without_an_slo() {
        let runs = [
            run("concurrency=1", 10.0, None),
            run("concurrency=4", 38.0, None),
            run("concurrency=16", 39.0, None),
            run("concurrency=64", 30.0, None),
        ];
        let s = SweepSummary::of(&runs).expect("a sweep");
        assert_eq!(s.metric, KneeMetric::RequestThroughput);
        assert_eq!(
            (s.knee, s.knee_point.as_deref()),
            (1, Some("concurrency=4"))
        );
        assert_eq!(s.knee_value, 38.0);
        assert!(!s.rising_at_end);
        let json = serde_json::to_value(&s).expect("json");
        assert_eq!(json["metric"], "request_throughput");
        assert_eq!(json["knee_point"], "concurrency=4");
        assert_eq!(
            json["points"][3],
            serde_json::json!({"point": "concurrency=64", "value": 30.0})
        );
    }

    #[test]
    fn goodput_is_the_metric_only_when_every_run_has_it() {
        let rising = [run("rate=1", 1.0, Some(1.0)), run("rate=2", 2.0, Some(2.0))];
        let s = SweepSummary::of(&rising).expect("a sweep");
        assert_eq!((s.metric, s.knee), (KneeMetric::Goodput, 1));
        assert!(s.rising_at_end);
        // The same sweep stopped at its saturation point: not "further out".
        let stopped = s.clone().ended_at_saturation(Some("rate=2"), &rising);
        assert!(!stopped.rising_at_end);
        assert_eq!(stopped.stopped_at_saturation.as_deref(), Some("rate=2"));
        let earlier = s.clone().ended_at_saturation(Some("rate=1"), &rising);
        assert_eq!(
            earlier, s,
            "saturated earlier, ran past it: the data still rises"
        );
        let mixed = [run("rate=1", 1.0, Some(1.0)), run("rate=2", 2.0, None)];
        assert_eq!(
            SweepSummary::of(&mixed).expect("a sweep").metric,
            KneeMetric::RequestThroughput
        );
    }

    #[test]
    fn one_run_or_a_run_without_serving_metrics_is_no_sweep() {
        assert_eq!(SweepSummary::of(&[run("rate=1", 1.0, None)]), None);
        let unserved = [run("rate=1", 1.0, None), LoadReport::default()];
        assert_eq!(SweepSummary::of(&unserved), None);
    }
}
