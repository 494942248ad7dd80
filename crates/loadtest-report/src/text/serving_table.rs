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
        rows.push(row("server max in flight", &|s| {
            s.server
                .as_ref()
                .map_or_else(|| "-".into(), |v| v.max_in_flight.to_string())
        }));
    }
    rows.extend(cache_and_clock_rows(runs));
    super::layout(&rows)
}

/// A row's cell of each run (`-` for a run without serving figures).
fn cells(runs: &[LoadReport], cell: &Cell) -> Vec<String> {
    runs.iter()
        .map(|r| r.serving.as_ref().map_or_else(|| "-".into(), cell))
        .collect()
}

/// TTFT split by cache hit, time to first content when reasoning came first, and the
/// client's figures against the server's own clock (llama.cpp's timings, or the
/// simulator's stats): each only when some run has it.
fn cache_and_clock_rows(runs: &[LoadReport]) -> Vec<(&'static str, Vec<String>)> {
    let any =
        |f: &dyn Fn(&ServingReport) -> bool| runs.iter().any(|r| r.serving.as_ref().is_some_and(f));
    let mut rows = Vec::new();
    if any(&|s| s.cache.hits > 0) {
        rows.push((
            "TTFT p50 cache hit / miss",
            cells(runs, &|s| {
                format!(
                    "{} / {} ms ({} hits)",
                    ms(s.cache.ttft_hit_ms.p50),
                    ms(s.cache.ttft_miss_ms.p50),
                    s.cache.hits
                )
            }),
        ));
    }
    if any(&|s| s.first_content_ms.p50.is_some() && s.first_content_ms.p50 != s.ttft_ms.p50) {
        rows.push((
            "first content p50/p99",
            cells(runs, &|s| {
                format!(
                    "{} / {} ms",
                    ms(s.first_content_ms.p50),
                    ms(s.first_content_ms.p99)
                )
            }),
        ));
    }
    if any(&|s| s.server_clock.is_some()) {
        rows.push((
            "server prompt time p50/p99",
            cells(runs, &|s| {
                s.server_clock.as_ref().map_or_else(
                    || "-".into(),
                    |c| format!("{} / {} ms", ms(c.prompt_ms.p50), ms(c.prompt_ms.p99)),
                )
            }),
        ));
        rows.push((
            "server time/token p50",
            cells(runs, &|s| {
                s.server_clock
                    .as_ref()
                    .map_or_else(|| "-".into(), |c| format!("{} ms", ms(c.per_token_ms.p50)))
            }),
        ));
    }
    if any(&|s| s.server_clock.is_some() || s.server.is_some()) {
        rows.push((
            "client - server TTFT p50",
            cells(runs, &|s| {
                let sim = || Some(s.ttft_ms.p50? - s.server.as_ref()?.ttft_ms.p50?);
                let clock = s
                    .server_clock
                    .as_ref()
                    .and_then(|c| c.client_minus_server_ttft_ms.p50);
                clock
                    .or_else(sim)
                    .map_or_else(|| "-".into(), |v| format!("{v:.3} ms"))
            }),
        ));
    }
    if any(&|s| s.server_clock.is_some()) {
        rows.push((
            "client - server ITL p50",
            cells(runs, &|s| {
                let v = s
                    .server_clock
                    .as_ref()
                    .and_then(|c| c.client_minus_server_itl_ms.p50);
                v.map_or_else(|| "-".into(), |v| format!("{v:.3} ms"))
            }),
        ));
    }
    rows
}
