//! The target's own series, scraped during the run (`--scrape-metrics`), on the HTML
//! report's time axis: queue length, KV-cache usage and running requests, each at the
//! seconds since the run's first call as the client's throughput and in-flight charts are,
//! and the scraped values themselves in a table under the charts.

use std::collections::BTreeSet;
use std::fmt::Write;

use planwave_loadtest::{LoadReport, MetricsSample};

use super::svg::{Series, esc};

/// A chart of one kind of series: its title, its y axis, and the names vLLM, SGLang, TGI and
/// llama.cpp give it (any found is drawn).
pub(crate) struct Kind {
    pub title: &'static str,
    pub y: &'static str,
    names: &'static [&'static str],
}

pub(crate) static KINDS: [Kind; 3] = [
    Kind {
        title: "Server queue length (requests waiting)",
        y: "requests waiting",
        names: &[
            "vllm:num_requests_waiting",
            "sglang:num_queue_reqs",
            "tgi_queue_size",
            "llamacpp:requests_deferred",
        ],
    },
    Kind {
        title: "Server KV-cache usage",
        y: "share of the cache used",
        names: &[
            "vllm:kv_cache_usage_perc",
            "vllm:gpu_cache_usage_perc",
            "sglang:token_usage",
            "llamacpp:kv_cache_usage_ratio",
        ],
    },
    Kind {
        title: "Server running requests",
        y: "requests running",
        names: &[
            "vllm:num_requests_running",
            "sglang:num_running_reqs",
            "tgi_batch_current_size",
            "llamacpp:requests_processing",
        ],
    },
];

/// The series name without its labels (`vllm:num_requests_running`).
fn base(key: &str) -> &str {
    key.split('{').next().unwrap_or(key)
}

/// When the run's first call was sent, in s since the run's start: time zero of the
/// report's over-time charts (0 without calls).
pub(crate) fn first_call_s(r: &LoadReport) -> f64 {
    let t = r
        .calls
        .iter()
        .map(|c| c.start_ms)
        .fold(f64::INFINITY, f64::min);
    if t.is_finite() { t / 1000.0 } else { 0.0 }
}

/// The keys (with labels) of a kind found in a run's samples, in order.
fn keys_of<'a>(samples: &'a [MetricsSample], kind: &Kind) -> BTreeSet<&'a str> {
    samples
        .iter()
        .flat_map(|s| s.series.keys())
        .map(String::as_str)
        .filter(|k| kind.names.contains(&base(k)))
        .collect()
}

/// Per kind, one line per run and series found (the run's `name` first when there are
/// several runs; a series' labels only when it has several label sets).
pub(crate) fn server_lines(
    runs: &[LoadReport],
    names: &[String],
) -> Vec<(&'static Kind, Vec<Series>)> {
    KINDS
        .iter()
        .map(|kind| {
            let mut lines = Vec::new();
            for (r, run_name) in runs.iter().zip(names) {
                let Some(samples) = &r.server_metrics else {
                    continue;
                };
                let t0 = first_call_s(r);
                let keys = keys_of(samples, kind);
                let bases: BTreeSet<&str> = keys.iter().map(|k| base(k)).collect();
                for key in &keys {
                    let shown = if bases.len() == keys.len() {
                        base(key)
                    } else {
                        *key
                    };
                    let name = if runs.len() > 1 {
                        format!("{run_name}: {shown}")
                    } else {
                        shown.to_owned()
                    };
                    let points = samples
                        .iter()
                        .filter_map(|s| Some((s.t_s - t0, *s.series.get(*key)?)))
                        .collect();
                    lines.push(Series { name, points });
                }
            }
            (kind, lines)
        })
        .filter(|(_, lines)| !lines.is_empty())
        .collect()
}

/// Per run that scraped a series drawn, a table of the scraped values: `t` in s since the
/// run's first call (the charts' axis), then one column per series, each value as scraped.
pub(crate) fn server_tables(body: &mut String, runs: &[LoadReport], names: &[String]) {
    for (r, name) in runs.iter().zip(names) {
        let Some(samples) = &r.server_metrics else {
            continue;
        };
        // What the scrapes left out, said whether or not anything is drawn.
        if let Some(line) = r.server_metrics_dropped.as_ref().and_then(|d| d.describe()) {
            let _ = write!(
                body,
                "<p class=\"scrape-dropped\">{}: {}</p>",
                esc(name),
                esc(&line)
            );
        }
        let keys: Vec<&str> = KINDS.iter().flat_map(|k| keys_of(samples, k)).collect();
        if keys.is_empty() {
            continue;
        }
        let t0 = first_call_s(r);
        let _ = write!(
            body,
            "<details><summary>Scraped server series, {} ({} samples)</summary><table class=\"server-metrics\" data-run=\"{}\"><thead><tr><th>t (s since the first call)</th>",
            esc(name),
            samples.len(),
            esc(name)
        );
        for k in &keys {
            let _ = write!(body, "<th>{}</th>", esc(k));
        }
        body.push_str("</tr></thead><tbody>");
        for s in samples {
            let _ = write!(body, "<tr><td>{:.3}</td>", s.t_s - t0);
            for k in &keys {
                // Rust's shortest form that reads back as the same number.
                let v = s.series.get(*k).map(f64::to_string).unwrap_or_default();
                let _ = write!(body, "<td>{v}</td>");
            }
            body.push_str("</tr>");
        }
        body.push_str("</tbody></table></details>");
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn sample(t_s: f64, series: &[(&str, f64)]) -> MetricsSample {
        MetricsSample {
            t_s,
            series: series
                .iter()
                .map(|(k, v)| ((*k).to_owned(), *v))
                .collect::<BTreeMap<_, _>>(),
        }
    }

    fn run(label: &str, samples: Vec<MetricsSample>) -> LoadReport {
        LoadReport {
            label: Some(label.into()),
            server_metrics: Some(samples),
            ..LoadReport::default()
        }
    }

    #[test]
    fn each_kind_draws_the_series_found_under_any_server_s_name() {
        let runs = [
            run(
                "rate=1",
                vec![
                    sample(
                        0.0,
                        &[("vllm:num_requests_waiting{m=\"a\"}", 0.0), ("other", 1.0)],
                    ),
                    sample(1.0, &[("vllm:num_requests_waiting{m=\"a\"}", 4.0)]),
                ],
            ),
            run(
                "rate=2",
                vec![sample(0.5, &[("sglang:num_running_reqs", 2.0)])],
            ),
        ];
        let names = ["rate=1".to_owned(), "rate=2".to_owned()];
        let charts = server_lines(&runs, &names);
        let titles: Vec<&str> = charts.iter().map(|(k, _)| k.title).collect();
        assert_eq!(
            titles,
            [
                "Server queue length (requests waiting)",
                "Server running requests"
            ]
        );
        assert_eq!(charts[0].1[0].name, "rate=1: vllm:num_requests_waiting");
        assert_eq!(charts[0].1[0].points, [(0.0, 0.0), (1.0, 4.0)]);
        assert_eq!(charts[1].1[0].points, [(0.5, 2.0)]);

        let mut body = String::new();
        server_tables(&mut body, &runs, &names);
        assert_eq!(body.matches("<table").count(), 2);
        assert!(
            body.contains("<th>vllm:num_requests_waiting{m=&quot;a&quot;}</th></tr>"),
            "{body}"
        );
        assert!(body.contains("<tr><td>1.000</td><td>4</td></tr>"), "{body}");
        assert!(!body.contains("other"), "only the series drawn: {body}");
    }
}
