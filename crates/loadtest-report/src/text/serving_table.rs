//! The serving metrics of runs side by side, as a plain-text table.

use planwave_loadtest::{LoadReport, Percentiles, ServingReport};

fn ms(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.2}")).unwrap_or_else(|| "-".into())
}

/// `p50 / p90 / p99 / max` in ms.
fn spread(p: &Percentiles) -> String {
    if p.samples == 0 {
        return "-".into();
    }
    format!(
        "{} / {} / {} / {} ms",
        ms(p.p50),
        ms(p.p90),
        ms(p.p99),
        ms(p.max)
    )
}

type Cell = dyn Fn(&ServingReport) -> String;

/// One column per run with serving metrics; runs without them show `-`.
pub(crate) fn render_serving_table(runs: &[LoadReport]) -> String {
    let row = |label: &'static str, cell: &Cell| {
        let values = runs
            .iter()
            .map(|r| r.serving.as_ref().map_or_else(|| "-".into(), cell))
            .collect::<Vec<String>>();
        (label, values)
    };
    let mut rows: Vec<(&str, Vec<String>)> = vec![
        (
            "point",
            runs.iter()
                .map(|r| r.label.clone().unwrap_or_else(|| r.schedule.clone()))
                .collect(),
        ),
        row("requests (ok)", &|s| format!("{} ({})", s.requests, s.ok)),
        row("outcomes", &|s| {
            s.outcomes
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        }),
        row("client retries", &|s| s.retries.to_string()),
        row("duration", &|s| format!("{:.2} s", s.duration_s)),
        row("request throughput", &|s| {
            format!("{:.1} req/s", s.request_throughput)
        }),
        row("output tokens/s", &|s| {
            format!("{:.0}", s.output_tokens_per_sec)
        }),
        row("goodput", &|s| match (s.goodput, s.good, &s.slo) {
            (Some(g), Some(n), Some(slo)) => format!("{g:.1} req/s ({n} within {slo})"),
            _ => "- (no --slo)".into(),
        }),
        row("TTFT p50/p90/p99/max", &|s| spread(&s.ttft_ms)),
        row("ITL p50/p90/p99/max", &|s| spread(&s.itl_ms)),
        row("TPOT p50/p90/p99/max", &|s| spread(&s.tpot_ms)),
        row("e2e p50/p90/p99/max", &|s| spread(&s.e2e_ms)),
        row("prompt tokens p50/max", &|s| {
            format!(
                "{} / {}",
                ms(s.prompt_tokens_per_request.p50),
                ms(s.prompt_tokens_per_request.max)
            )
        }),
        row("output tokens p50/max", &|s| {
            format!(
                "{} / {}",
                ms(s.output_tokens_per_request.p50),
                ms(s.output_tokens_per_request.max)
            )
        }),
    ];
    // Only endpoints with a prompt cache report cached tokens; without, the row is noise.
    if runs
        .iter()
        .any(|r| r.serving.as_ref().is_some_and(|s| s.cached_tokens > 0))
    {
        rows.push(row("cached prompt tokens", &|s| {
            let share = if s.prompt_tokens > 0 {
                s.cached_tokens as f64 * 100.0 / s.prompt_tokens as f64
            } else {
                0.0
            };
            format!("{} of {} ({share:.0} %)", s.cached_tokens, s.prompt_tokens)
        }));
    }
    if runs
        .iter()
        .any(|r| r.serving.as_ref().is_some_and(|s| s.server.is_some()))
    {
        rows.push(row("server TTFT p50/p90/p99/max", &|s| {
            s.server
                .as_ref()
                .map_or_else(|| "-".into(), |v| spread(&v.ttft_ms))
        }));
        rows.push(row("server queue p50/p99", &|s| {
            s.server.as_ref().map_or_else(
                || "-".into(),
                |v| format!("{} / {} ms", ms(v.queue_ms.p50), ms(v.queue_ms.p99)),
            )
        }));
        rows.push(row("client - server TTFT p50", &|s| match (
            s.ttft_ms.p50,
            s.server.as_ref().and_then(|v| v.ttft_ms.p50),
        ) {
            (Some(c), Some(v)) => format!("{:.3} ms", c - v),
            _ => "-".into(),
        }));
        rows.push(row("server max in flight", &|s| {
            s.server
                .as_ref()
                .map_or_else(|| "-".into(), |v| v.max_in_flight.to_string())
        }));
    }
    super::layout(&rows)
}
