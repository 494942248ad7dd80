//! `--csv FILE`: one row per run with the main figures, beside the JSON, for spreadsheets
//! and plotting scripts. Empty cells where a figure does not apply (no serving metrics).

use crate::percentiles::Percentiles;
use crate::report::LoadReport;

const HEADER: &str = "label,schedule,tasks,completed,makespan_ms,tasks_per_sec,model_calls,errors,\
requests,ok,request_throughput,output_tokens_per_sec,prompt_tokens,output_tokens,\
ttft_p50_ms,ttft_p99_ms,itl_p50_ms,itl_p99_ms,tpot_p50_ms,e2e_p50_ms,e2e_p99_ms,goodput";

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
                let p = |v: &Percentiles, q: fn(&Percentiles) -> Option<f64>| opt(q(v));
                cells.extend([
                    s.requests.to_string(),
                    s.ok.to_string(),
                    s.request_throughput.to_string(),
                    s.output_tokens_per_sec.to_string(),
                    s.prompt_tokens.to_string(),
                    s.output_tokens.to_string(),
                    p(&s.ttft_ms, |v| v.p50),
                    p(&s.ttft_ms, |v| v.p99),
                    p(&s.itl_ms, |v| v.p50),
                    p(&s.itl_ms, |v| v.p99),
                    p(&s.tpot_ms, |v| v.p50),
                    p(&s.e2e_ms, |v| v.p50),
                    p(&s.e2e_ms, |v| v.p99),
                    opt(s.goodput),
                ]);
            }
            None => cells.extend(std::iter::repeat_n(String::new(), 14)),
        }
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

fn opt(v: Option<f64>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

/// A text cell, quoted when it holds a comma, quote or newline (RFC 4180).
fn quoted(s: &str) -> String {
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
                serving: Some(crate::serving::ServingReport::default()),
                ..LoadReport::default()
            },
        ];
        let text = render_csv(&runs);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        let columns = HEADER.split(',').count();
        assert_eq!(lines[2].split(',').count(), columns);
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
