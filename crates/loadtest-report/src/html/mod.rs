//! `loadtest --html`: one self-contained page (inline SVG, inline CSS, no script, no
//! network) with what people compare runs by: latency CDFs, multi-turn sessions' figures
//! by turn, throughput and in-flight over time (with the target's scraped queue, KV-cache
//! and running series on the same axis), the sweep curve and its saturation point, the
//! dispatch-latency histogram and the task timeline. The charts are `svg`'s; the target's
//! scraped series are drawn by `server`, the figures per turn by `turns`.

mod server;
pub(crate) mod svg;
mod turns;

use std::fmt::Write;

use planwave_loadtest::{CallRecord, LoadReport, SaturationReport, SweepOutcome, WorkloadInfo};
use planwave_plan::ValidatedPlan;

use crate::text::{render_load_table, render_saturation, render_serving_table};
use server::{first_call_s, server_lines, server_tables};
use svg::{Axes, Series, esc};

/// The self-contained HTML report of the sweep (`--html`).
pub fn render_sweep_html(outcome: &SweepOutcome, w: &WorkloadInfo) -> String {
    render_html(&HtmlInput {
        title: format!("planwave loadtest: {}, model {}", w.source, w.model),
        runs: &outcome.runs,
        plan: Some(&w.plan),
        saturation: outcome.saturation.as_ref(),
    })
}

struct HtmlInput<'a> {
    title: String,
    runs: &'a [LoadReport],
    plan: Option<&'a ValidatedPlan>,
    /// A rate sweep's saturation check.
    saturation: Option<&'a SaturationReport>,
}

/// Buckets of the over-time charts.
const TIME_BINS: usize = 100;
/// Most tasks drawn in the timeline (evenly sampled beyond).
const TIMELINE_ROWS: usize = 400;

fn name(r: &LoadReport, i: usize) -> String {
    r.label
        .clone()
        .unwrap_or_else(|| format!("run {} ({})", i + 1, r.schedule))
}

fn render_html(input: &HtmlInput) -> String {
    let mut body = String::new();
    let runs = input.runs;
    let _ = write!(
        body,
        "<h1>{}</h1><pre>{}</pre>",
        esc(&input.title),
        esc(&render_load_table(runs))
    );
    if runs.iter().any(|r| r.serving.is_some()) {
        let _ = write!(
            body,
            "<h2>Serving</h2><pre>{}</pre>",
            esc(&render_serving_table(runs))
        );
        latency_cdfs(&mut body, runs);
    }
    let names: Vec<String> = runs.iter().enumerate().map(|(i, r)| name(r, i)).collect();
    turns::turns_section(&mut body, runs, &names);
    over_time(&mut body, runs);
    sweep_curve(&mut body, runs);
    if let Some(s) = input.saturation {
        let _ = write!(
            body,
            "<h2>Saturation</h2><pre class=\"saturation\">{}</pre>",
            esc(&render_saturation(s))
        );
    }
    dispatch_histogram(&mut body, runs);
    task_timeline(&mut body, runs, input.plan);
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>body{{font-family:sans-serif;margin:2em;max-width:1400px}}pre{{background:#f6f6f6;padding:1em;overflow-x:auto}}.charts{{display:flex;flex-wrap:wrap;gap:1em}}</style></head><body>{body}</body></html>\n",
        esc(&input.title)
    )
}

fn requests(r: &LoadReport) -> impl Iterator<Item = &CallRecord> {
    r.calls.iter().filter(|c| c.role == "subagent")
}

fn latency_cdfs(body: &mut String, runs: &[LoadReport]) {
    body.push_str("<h2>Latency CDFs</h2><div class=\"charts\">");
    type Pick = fn(&CallRecord) -> Vec<f64>;
    let metrics: [(&str, Pick); 4] = [
        ("TTFT", |c| c.ttft_ms.into_iter().collect()),
        ("ITL", |c| c.itl_ms.clone()),
        ("TPOT", |c| c.tpot_ms.into_iter().collect()),
        ("end-to-end latency", |c| vec![c.e2e_ms]),
    ];
    for (title, pick) in metrics {
        let series: Vec<Series> = runs
            .iter()
            .enumerate()
            .map(|(i, r)| Series {
                name: name(r, i),
                points: svg::cdf(
                    requests(r)
                        .filter(|c| c.outcome == "ok")
                        .flat_map(pick)
                        .collect(),
                ),
            })
            .filter(|s| !s.points.is_empty())
            .collect();
        if series.is_empty() {
            continue;
        }
        let title = format!("{title} CDF");
        body.push_str(&svg::lines(
            &Axes {
                title: &title,
                x: "ms",
                y: "share of requests",
            },
            &series,
        ));
    }
    body.push_str("</div>");
}

/// Completions per second and calls in flight, per time bucket, from the calls' records;
/// and the target's scraped series, on the same time axis (s since each run's first call).
fn over_time(body: &mut String, runs: &[LoadReport]) {
    let (throughput, in_flight) = client_series(runs);
    let names: Vec<String> = runs.iter().enumerate().map(|(i, r)| name(r, i)).collect();
    let server = server_lines(runs, &names);
    if throughput.is_empty() && server.is_empty() {
        return;
    }
    let all = throughput
        .iter()
        .chain(&in_flight)
        .chain(server.iter().flat_map(|(_, l)| l))
        .flat_map(|s| s.points.iter().map(|p| p.0));
    let span = all.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    let x = "s since the first call";
    body.push_str("<h2>Over time</h2><div class=\"charts\">");
    if !throughput.is_empty() {
        let axes = Axes {
            title: "Throughput (model calls completed per second)",
            x,
            y: "calls/s",
        };
        body.push_str(&svg::lines_in(&axes, &throughput, Some(span)));
        let axes = Axes {
            title: "Model calls in flight",
            x,
            y: "in flight",
        };
        body.push_str(&svg::lines_in(&axes, &in_flight, Some(span)));
    }
    for (kind, lines) in &server {
        let axes = Axes {
            title: kind.title,
            x,
            y: kind.y,
        };
        body.push_str(&svg::lines_in(&axes, lines, Some(span)));
    }
    body.push_str("</div>");
    server_tables(body, runs, &names);
}

/// Per run: completions per second and calls in flight over time.
fn client_series(runs: &[LoadReport]) -> (Vec<Series>, Vec<Series>) {
    let mut throughput = Vec::new();
    let mut in_flight = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        let spans: Vec<(f64, f64)> = r
            .calls
            .iter()
            .map(|c| (c.start_ms, c.start_ms + c.e2e_ms))
            .collect();
        if spans.is_empty() {
            continue;
        }
        let t0 = first_call_s(r) * 1000.0;
        let t1 = spans.iter().map(|s| s.1).fold(f64::NEG_INFINITY, f64::max);
        let bin = ((t1 - t0) / TIME_BINS as f64).max(1e-3);
        let mut done = vec![0u64; TIME_BINS];
        let mut live = vec![0i64; TIME_BINS + 1];
        for &(a, b) in &spans {
            let ia = (((a - t0) / bin) as usize).min(TIME_BINS);
            let ib = (((b - t0) / bin) as usize).min(TIME_BINS);
            done[ib.min(TIME_BINS - 1)] += 1;
            live[ia] += 1;
            live[ib] -= 1;
        }
        let mut level = 0i64;
        let live: Vec<(f64, f64)> = live
            .iter()
            .enumerate()
            .map(|(k, d)| {
                level += d;
                ((k as f64 * bin) / 1000.0, level.max(0) as f64)
            })
            .collect();
        throughput.push(Series {
            name: name(r, i),
            points: done
                .iter()
                .enumerate()
                .map(|(k, &n)| ((k as f64 + 0.5) * bin / 1000.0, n as f64 / (bin / 1000.0)))
                .collect(),
        });
        in_flight.push(Series {
            name: name(r, i),
            points: live,
        });
    }
    (throughput, in_flight)
}

fn sweep_curve(body: &mut String, runs: &[LoadReport]) {
    if runs.len() < 2
        || runs
            .iter()
            .any(|r| r.serving.is_none() || r.label.is_none())
    {
        return;
    }
    let x = |r: &LoadReport| {
        r.label
            .as_deref()
            .and_then(|l| l.split_once('='))
            .and_then(|(_, v)| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    let axis = runs[0]
        .label
        .as_deref()
        .and_then(|l| l.split_once('='))
        .map_or("point", |(k, _)| k);
    let mut series = vec![Series {
        name: "request throughput".into(),
        points: runs
            .iter()
            .filter_map(|r| Some((x(r), r.serving.as_ref()?.request_throughput)))
            .collect(),
    }];
    if runs
        .iter()
        .all(|r| r.serving.as_ref().is_some_and(|s| s.goodput.is_some()))
    {
        series.push(Series {
            name: "goodput".into(),
            points: runs
                .iter()
                .filter_map(|r| Some((x(r), r.serving.as_ref()?.goodput?)))
                .collect(),
        });
    }
    body.push_str("<h2>Sweep</h2><div class=\"charts\">");
    body.push_str(&svg::lines(
        &Axes {
            title: "Sweep: throughput and goodput",
            x: axis,
            y: "requests/s",
        },
        &series,
    ));
    body.push_str("</div>");
}

fn dispatch_histogram(body: &mut String, runs: &[LoadReport]) {
    let Some(t) = runs.iter().find_map(|r| r.timeline.as_ref()) else {
        return;
    };
    let v: Vec<f64> = t.tasks.iter().filter_map(|t| t.dispatch_ms).collect();
    if v.is_empty() {
        return;
    }
    body.push_str("<h2>Dispatch latency</h2><div class=\"charts\">");
    body.push_str(&svg::histogram(
        &Axes {
            title: "Dispatch latency (last prerequisite returned -> call began)",
            x: "ms",
            y: "tasks",
        },
        &v,
        40,
    ));
    body.push_str("</div>");
}

fn task_timeline(body: &mut String, runs: &[LoadReport], plan: Option<&ValidatedPlan>) {
    let Some(t) = runs.iter().find_map(|r| r.timeline.as_ref()) else {
        return;
    };
    // Only DAG workloads: a wide plan's timeline is the in-flight chart.
    if plan.is_some_and(|p| p.waves().len() < 2) {
        return;
    }
    let mut rows: Vec<(f64, f64)> = t
        .tasks
        .iter()
        .filter_map(|t| Some((t.call_start_ms?, t.call_end_ms?)))
        .collect();
    rows.sort_by(|a, b| a.0.total_cmp(&b.0));
    let step = rows.len().div_ceil(TIMELINE_ROWS).max(1);
    let rows: Vec<(f64, f64)> = rows.into_iter().step_by(step).collect();
    let title = format!(
        "Task timeline ({} of {} tasks, by start)",
        rows.len(),
        t.tasks.len()
    );
    body.push_str("<h2>Task timeline</h2><div class=\"charts\">");
    body.push_str(&svg::spans(
        &Axes {
            title: &title,
            x: "ms since the run's start",
            y: "task",
        },
        &rows,
    ));
    body.push_str("</div>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_data;

    #[test]
    fn the_page_is_titled_by_the_workload_and_the_model_and_fetches_nothing() {
        let w = test_data::workload("6 independent requests", planwave_plan::generate::wide(6));
        let outcome = test_data::outcome(&w, vec![LoadReport::default()], None);
        let page = render_sweep_html(&outcome, &w);
        assert!(
            page.contains(
                "<title>planwave loadtest: 6 independent requests, model in-process simulator</title>"
            ),
            "{page}"
        );
        assert!(!page.contains("http"), "self-contained: {page}");
    }
}
