//! `loadtest --compare A.json B.json`: two saved runs side by side, with the ratio B/A of
//! every figure both have.

use std::fmt::Write;

use serde::Serialize;
use serde_json::Value;

use crate::html::svg::{self, esc};

/// The figures compared, as JSON pointers into one run of `--json` output.
const FIGURES: [(&str, &str); 20] = [
    ("makespan ms", "/makespan_ms"),
    ("tasks/s", "/tasks_per_sec"),
    ("model calls/s", "/model_calls_per_sec"),
    ("dispatch p50 ms", "/dispatch_ms/p50"),
    ("dispatch p99 ms", "/dispatch_ms/p99"),
    ("peak RSS bytes", "/peak_rss_bytes"),
    ("RSS per in-flight call", "/rss_per_in_flight_bytes"),
    ("errors", "/errors"),
    ("request throughput", "/serving/request_throughput"),
    ("output tokens/s", "/serving/output_tokens_per_sec"),
    ("goodput", "/serving/goodput"),
    ("TTFT p50 ms", "/serving/ttft_ms/p50"),
    ("TTFT p99 ms", "/serving/ttft_ms/p99"),
    ("ITL p50 ms", "/serving/itl_ms/p50"),
    ("ITL p99 ms", "/serving/itl_ms/p99"),
    ("TPOT p50 ms", "/serving/tpot_ms/p50"),
    ("TPOT p99 ms", "/serving/tpot_ms/p99"),
    ("e2e p50 ms", "/serving/e2e_ms/p50"),
    ("e2e p99 ms", "/serving/e2e_ms/p99"),
    ("server TTFT p50 ms", "/serving/server/ttft_ms/p50"),
];

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CompareRow {
    /// Which run of each file (by position) and its label.
    pub run: usize,
    pub point: Option<String>,
    pub figure: String,
    pub a: f64,
    pub b: f64,
    /// b / a (`None` when a is 0).
    pub ratio: Option<f64>,
}

/// Why a file is not a saved `--json` output.
#[derive(Debug, thiserror::Error)]
pub enum SavedError {
    #[error("{0}")]
    Read(#[source] std::io::Error),
    #[error("not the JSON of `planwave loadtest --json`: {0}")]
    Parse(#[source] serde_json::Error),
    #[error("no \"runs\": not the output of `planwave loadtest --json`")]
    NoRuns,
}

/// A saved `--json` output, checked to have its runs.
pub fn read_saved(path: &std::path::Path) -> Result<Value, SavedError> {
    let text = std::fs::read_to_string(path).map_err(SavedError::Read)?;
    let v: Value = serde_json::from_str(&text).map_err(SavedError::Parse)?;
    if !v["runs"].is_array() {
        return Err(SavedError::NoRuns);
    }
    Ok(v)
}

/// Every figure present in both, run by run (runs paired by position).
pub fn compare(a: &Value, b: &Value) -> Vec<CompareRow> {
    let runs = |v: &Value| v["runs"].as_array().cloned().unwrap_or_default();
    let (ra, rb) = (runs(a), runs(b));
    let mut rows = Vec::new();
    for (k, (x, y)) in ra.iter().zip(&rb).enumerate() {
        for (figure, pointer) in FIGURES {
            let (Some(va), Some(vb)) = (
                x.pointer(pointer).and_then(Value::as_f64),
                y.pointer(pointer).and_then(Value::as_f64),
            ) else {
                continue;
            };
            rows.push(CompareRow {
                run: k,
                point: x["label"].as_str().map(str::to_owned),
                figure: figure.to_owned(),
                a: va,
                b: vb,
                ratio: (va != 0.0).then(|| vb / va),
            });
        }
    }
    rows
}

/// The rows as a table: figure, A, B, B/A.
pub fn render_compare_table(rows: &[CompareRow], a_name: &str, b_name: &str) -> String {
    let mut table: Vec<(String, Vec<String>)> = vec![(
        "figure".into(),
        vec![a_name.to_owned(), b_name.to_owned(), "B/A".into()],
    )];
    for r in rows {
        let label = match &r.point {
            Some(p) => format!("[{}] {}", p, r.figure),
            None if rows.iter().any(|x| x.run > 0) => format!("[run {}] {}", r.run + 1, r.figure),
            None => r.figure.clone(),
        };
        table.push((
            label,
            vec![
                fmt(r.a),
                fmt(r.b),
                r.ratio.map_or("-".into(), |x| format!("{x:.3}")),
            ],
        ));
    }
    let refs: Vec<(&str, Vec<String>)> =
        table.iter().map(|(l, v)| (l.as_str(), v.clone())).collect();
    crate::text::layout(&refs)
}

fn fmt(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
}

/// A page with the table and a bar per ratio (1.0 marked).
pub fn render_compare_html(rows: &[CompareRow], a_name: &str, b_name: &str) -> String {
    let bars: Vec<(String, f64)> = rows
        .iter()
        .filter_map(|r| {
            let label = match &r.point {
                Some(p) => format!("[{p}] {}", r.figure),
                None => r.figure.clone(),
            };
            Some((label, r.ratio?))
        })
        .collect();
    let mut body = String::new();
    let _ = write!(
        body,
        "<h1>{} vs {}</h1><pre>{}</pre>{}",
        esc(a_name),
        esc(b_name),
        esc(&render_compare_table(rows, a_name, b_name)),
        svg::ratio_bars("B / A", &bars)
    );
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{} vs {}</title><style>body{{font-family:sans-serif;margin:2em}}pre{{background:#f6f6f6;padding:1em}}</style></head><body>{body}</body></html>\n",
        esc(a_name),
        esc(b_name)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ratios_are_b_over_a_for_figures_in_both() {
        let a = json!({"runs": [{"makespan_ms": 200.0, "tasks_per_sec": 0.0,
                                  "serving": {"ttft_ms": {"p50": 10.0}}}]});
        let b = json!({"runs": [{"makespan_ms": 100.0, "tasks_per_sec": 5.0,
                                  "serving": {"ttft_ms": {"p50": 12.5}}},
                                 {"makespan_ms": 1.0}]});
        let rows = compare(&a, &b);
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].ratio, Some(0.5));
        assert_eq!(rows[1].ratio, None, "a zero A has no ratio");
        assert_eq!(rows[2].figure, "TTFT p50 ms");
        assert_eq!(rows[2].ratio, Some(1.25));
        let t = render_compare_table(&rows, "A", "B");
        assert!(t.contains("0.500") && t.contains("1.250"), "{t}");
        let h = render_compare_html(&rows, "A", "B");
        assert!(h.contains("<svg") && !h.contains("http"));
    }

    #[test]
    fn a_saved_output_must_be_json_with_runs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let write = |name: &str, text: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).expect("write");
            p
        };
        let good = write("good.json", r#"{"runs": [{"makespan_ms": 1.0}]}"#);
        assert_eq!(
            read_saved(&good).expect("saved")["runs"][0]["makespan_ms"],
            1.0
        );
        let text = read_saved(&write("bad.json", "{")).unwrap_err().to_string();
        assert!(
            text.starts_with("not the JSON of `planwave loadtest --json`: "),
            "{text}"
        );
        let none = read_saved(&write("none.json", "{}")).unwrap_err();
        assert_eq!(
            none.to_string(),
            "no \"runs\": not the output of `planwave loadtest --json`"
        );
        assert!(matches!(
            read_saved(&dir.path().join("absent")),
            Err(SavedError::Read(_))
        ));
    }
}
