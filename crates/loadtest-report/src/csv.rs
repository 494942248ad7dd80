//! `--csv FILE`: one row per run with the main figures, beside the JSON, for spreadsheets
//! and plotting scripts. Empty cells where a figure does not apply (no serving metrics).
//!
//! A run of multi-turn sessions is followed by one row per turn number (its `turn` cell set,
//! empty in run rows) with that turn's requests, latencies and prompt tokens: how the
//! figures move as the context grows. A reader that wants runs only keeps the rows whose
//! `turn` is empty.

use planwave_loadtest::{LoadReport, Percentiles, TurnFigures};

const HEADER: &str = "label,schedule,tasks,completed,makespan_ms,tasks_per_sec,model_calls,errors,\
requests,ok,request_throughput,output_tokens_per_sec,prompt_tokens,output_tokens,\
ttft_p50_ms,ttft_p99_ms,itl_p50_ms,itl_p99_ms,tpot_p50_ms,e2e_p50_ms,e2e_p99_ms,goodput,\
turn,prompt_tokens_p50,prompt_tokens_p99,cached_tokens,cached_share,ttft_hit_p50_ms,\
ttft_miss_p50_ms,client_minus_server_ttft_p50_ms,client_minus_server_itl_p50_ms";

/// The cache and server-clock cells at the end of a row.
const CACHE_CELLS: usize = 6;

/// Cells of the run's own figures before the serving ones.
const RUN_CELLS: usize = 6;
/// Serving cells (from `requests` to `goodput`).
const SERVING_CELLS: usize = 14;

/// The runs as CSV, a header line first.
pub fn render_csv(runs: &[LoadReport]) -> String {
    let mut out = String::from(HEADER);
    out.push('\n');
    for r in runs {
        let mut cells = vec![
            quoted(r.label.as_deref().unwrap_or("")),
            quoted(&r.schedule),
            r.tasks.to_string(),
            r.completed.to_string(),
            r.makespan_ms.to_string(),
            r.tasks_per_sec.to_string(),
            r.model_calls.to_string(),
            r.errors.to_string(),
        ];
        match &r.serving {
            Some(s) => {
                cells.extend([
                    s.requests.to_string(),
                    s.ok.to_string(),
                    s.request_throughput.to_string(),
                    s.output_tokens_per_sec.to_string(),
                    s.prompt_tokens.to_string(),
                    s.output_tokens.to_string(),
                    p50(&s.ttft_ms),
                    p99(&s.ttft_ms),
                    p50(&s.itl_ms),
                    p99(&s.itl_ms),
                    p50(&s.tpot_ms),
                    p50(&s.e2e_ms),
                    p99(&s.e2e_ms),
                    opt(s.goodput),
                    String::new(),
                    p50(&s.prompt_tokens_per_request),
                    p99(&s.prompt_tokens_per_request),
                ]);
                let clock = s.server_clock.as_ref();
                cells.extend([
                    s.cached_tokens.to_string(),
                    opt(s.cache.cached_share),
                    p50(&s.cache.ttft_hit_ms),
                    p50(&s.cache.ttft_miss_ms),
                    opt(clock.and_then(|c| c.client_minus_server_ttft_ms.p50)),
                    opt(clock.and_then(|c| c.client_minus_server_itl_ms.p50)),
                ]);
            }
            None => cells.extend(std::iter::repeat_n(
                String::new(),
                SERVING_CELLS + 3 + CACHE_CELLS,
            )),
        }
        out.push_str(&cells.join(","));
        out.push('\n');
        for t in r.turns.iter().flatten() {
            out.push_str(&turn_row(r, t));
            out.push('\n');
        }
    }
    out
}

/// One turn number's row: the run's label and schedule, the turn's figures in the columns
/// they share with a run, the rest empty.
fn turn_row(r: &LoadReport, t: &TurnFigures) -> String {
    let mut cells = vec![
        quoted(r.label.as_deref().unwrap_or("")),
        quoted(&r.schedule),
    ];
    cells.extend(std::iter::repeat_n(String::new(), RUN_CELLS));
    cells.extend([
        t.requests.to_string(),
        t.ok.to_string(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        p50(&t.ttft_ms),
        p99(&t.ttft_ms),
        p50(&t.itl_ms),
        p99(&t.itl_ms),
        String::new(),
        p50(&t.e2e_ms),
        p99(&t.e2e_ms),
        String::new(),
        t.turn.to_string(),
        p50(&t.prompt_tokens),
        p99(&t.prompt_tokens),
    ]);
    cells.extend(std::iter::repeat_n(String::new(), CACHE_CELLS));
    cells.join(",")
}

fn p50(p: &Percentiles) -> String {
    opt(p.p50)
}

fn p99(p: &Percentiles) -> String {
    opt(p.p99)
}

fn opt(v: Option<f64>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

/// A text cell, quoted when it holds a comma, quote or newline (RFC 4180).
pub(crate) fn quoted(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_has_the_header_s_columns() {
        let runs = vec![
            LoadReport {
                label: Some("rate=2,x".into()),
                schedule: "dataflow".into(),
                ..LoadReport::default()
            },
            LoadReport {
                serving: Some(planwave_loadtest::ServingReport::default()),
                turns: Some(vec![TurnFigures {
                    turn: 1,
                    ..TurnFigures::default()
                }]),
                ..LoadReport::default()
            },
        ];
        let text = render_csv(&runs);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        let columns = HEADER.split(',').count();
        assert_eq!(lines[2].split(',').count(), columns);
        let turn: Vec<&str> = lines[3].split(',').collect();
        assert_eq!(turn.len(), columns, "{}", lines[3]);
        let turn_col = HEADER.split(',').position(|h| h == "turn").expect("turn");
        assert_eq!(
            (turn[turn_col], lines[2].split(',').nth(turn_col)),
            ("1", Some(""))
        );
        assert!(
            lines[1].starts_with("\"rate=2,x\",dataflow,"),
            "{}",
            lines[1]
        );
        assert_eq!(
            lines[1].split(',').count(),
            columns + 1,
            "one comma is inside quotes"
        );
    }
}
