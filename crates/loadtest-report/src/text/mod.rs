//! A sweep's results as `planwave loadtest` prints them: the workload line, the figures'
//! table of every run (`load_table`), the endpoint's (`serving_table`), the knee of a sweep,
//! the saturation check of a rate sweep (`saturation`), and a session workload's figures per
//! turn (`turns`).

mod load_table;
mod saturation;
mod serving_table;
mod turns;

use std::fmt::Write as _;

use planwave_loadtest::{SweepOutcome, SweepSummary, WorkloadInfo};

pub(crate) use load_table::{layout, render_load_table};
pub(crate) use saturation::render_saturation;
pub(crate) use serving_table::render_serving_table;
pub use turns::render_turns;

/// `workload: random (seed 0, fan-in 3), 500 tasks in 12 waves, latency ..., model: ...`
pub(crate) fn render_workload_line(w: &WorkloadInfo) -> String {
    format!(
        "workload: {}, {} tasks in {} waves, latency {}{}, model: {}",
        w.source,
        w.plan.len(),
        w.plan.waves().len(),
        if w.latency_by_server {
            "decided by the server".to_string()
        } else {
            w.latency.to_string()
        },
        w.latency_file
            .as_ref()
            .map(|p| format!(" (per-task from {})", p.display()))
            .unwrap_or_default(),
        w.model,
    )
}

/// The workload line, the table of every run, the endpoint's own table when it reported
/// one, and the sweep's knee when the runs were a sweep.
pub fn render_sweep_text(outcome: &SweepOutcome, w: &WorkloadInfo) -> String {
    let runs = &outcome.runs;
    let mut out = render_workload_line(w);
    out.push('\n');
    out.push_str(&render_load_table(runs));
    if runs.iter().any(|r| r.serving.is_some()) {
        out.push('\n');
        out.push_str(&render_serving_table(runs));
    }
    if let Some(sweep) = outcome.summary() {
        let _ = writeln!(out, "{}", render_sweep_line(&sweep));
    }
    if let Some(s) = &outcome.saturation {
        out.push('\n');
        out.push_str(&render_saturation(s));
    }
    out
}

/// The line printed under a sweep's table.
pub(crate) fn render_sweep_line(s: &SweepSummary) -> String {
    format!(
        "knee: {} ({} {:.1} req/s){}",
        s.knee_point.as_deref().unwrap_or("-"),
        s.metric.as_str(),
        s.knee_value,
        match (&s.stopped_at_saturation, s.rising_at_end) {
            (Some(p), _) => format!("; the sweep stopped at its saturation point, {p}"),
            (None, true) => "; still rising at the last point: the knee is further out".into(),
            (None, false) => String::new(),
        }
    )
}

#[cfg(test)]
mod tests {
    use planwave_loadtest::{
        KneeMetric, LoadReport, PointCheck, RateUnit, SaturationReason, SaturationReport,
        ServingReport,
    };

    use super::*;
    use crate::test_data;

    fn workload() -> WorkloadInfo {
        test_data::workload("6 independent requests", planwave_plan::generate::wide(6))
    }

    fn served(label: &str, throughput: f64) -> LoadReport {
        LoadReport {
            label: Some(label.into()),
            schedule: "dataflow".into(),
            serving: Some(ServingReport {
                request_throughput: throughput,
                ..ServingReport::default()
            }),
            ..LoadReport::default()
        }
    }

    fn outcome(runs: Vec<LoadReport>, saturation: Option<SaturationReport>) -> SweepOutcome {
        test_data::outcome(&workload(), runs, saturation)
    }

    #[test]
    fn the_text_shows_the_workload_then_the_tables_and_a_sweep_its_knee() {
        let mut w = workload();
        let line = "workload: 6 independent requests, 6 tasks in 1 waves, latency lognormal:100:1, model: in-process simulator";
        assert_eq!(render_workload_line(&w), line);
        let out = outcome(
            vec![served("concurrency=1", 10.0), served("concurrency=3", 30.0)],
            None,
        );
        let text = render_sweep_text(&out, &w);
        let expected_start = format!(
            "{line}\n{}\n{}",
            render_load_table(&out.runs),
            render_serving_table(&out.runs)
        );
        assert!(text.starts_with(&expected_start), "{text}");
        let last = text.lines().last().unwrap_or_default();
        assert!(last.starts_with("knee: "), "{text}");
        w.latency_by_server = true;
        w.latency_file = Some("lat.json".into());
        assert!(
            render_workload_line(&w)
                .contains("latency decided by the server (per-task from lat.json), model:")
        );
        // One run, no endpoint figures, no sweep: the line and the table only.
        let one = outcome(vec![LoadReport::default()], None);
        assert_eq!(
            render_sweep_text(&one, &w),
            format!(
                "{}\n{}",
                render_workload_line(&w),
                render_load_table(&one.runs)
            )
        );
    }

    #[test]
    fn a_rate_sweep_ends_with_its_saturation_check() {
        let check = |point: &str, reasons| PointCheck {
            point: Some(point.into()),
            unit: RateUnit::Requests,
            offered_rate: None,
            sent_rate: None,
            achieved_rate: None,
            ttft_p99_ms: None,
            reasons,
        };
        let saturation = SaturationReport {
            tolerance: 0.5,
            ttft_slo_ms: None,
            checked: vec![
                check("rate=20", vec![]),
                check("rate=100000", vec![SaturationReason::SentBelowOffered]),
            ],
            point: Some("rate=100000".into()),
            skipped: vec!["rate=200000".into()],
        };
        let out = outcome(
            vec![served("rate=20", 20.0), served("rate=100000", 50.0)],
            Some(saturation),
        );
        let text = render_sweep_text(&out, &workload());
        assert!(
            text.ends_with("saturation point: rate=100000; not run: rate=200000\n"),
            "{text}"
        );
        assert!(
            text.contains("; the sweep stopped at its saturation point, rate=100000\n"),
            "{text}"
        );
    }

    #[test]
    fn the_knee_line_says_where_the_sweep_stopped_rising() {
        let s = SweepSummary {
            knee: 1,
            knee_point: Some("concurrency=4".into()),
            knee_value: 38.0,
            metric: KneeMetric::RequestThroughput,
            points: Vec::new(),
            rising_at_end: false,
            stopped_at_saturation: None,
        };
        assert_eq!(
            render_sweep_line(&s),
            "knee: concurrency=4 (request_throughput 38.0 req/s)"
        );
        let rising = SweepSummary {
            rising_at_end: true,
            ..s.clone()
        };
        assert!(
            render_sweep_line(&rising)
                .ends_with("; still rising at the last point: the knee is further out")
        );
        let stopped = SweepSummary {
            knee_point: Some("rate=2".into()),
            knee_value: 2.0,
            metric: KneeMetric::Goodput,
            stopped_at_saturation: Some("rate=2".into()),
            ..s
        };
        assert_eq!(
            render_sweep_line(&stopped),
            "knee: rate=2 (goodput 2.0 req/s); the sweep stopped at its saturation point, rate=2"
        );
    }
}
