//! Multi-turn sessions in the HTML report: how TTFT, ITL, end-to-end latency and the prompt
//! grow with the turn number. Charts of the p50 and p99 by turn, and per run a table of the
//! figures the JSON's `turns` has, each value written as Rust's shortest form that reads
//! back as the same number.

use std::fmt::Write;

use planwave_loadtest::{LoadReport, Percentiles, TurnFigures};

use super::svg::{self, Axes, Series, esc};

/// One percentile of a figure.
type Quantile = fn(&Percentiles) -> Option<f64>;

/// The table's percentile columns: a heading and the figure.
type Pick = fn(&TurnFigures) -> &Percentiles;
const COLUMNS: [(&str, Pick); 4] = [
    ("prompt tokens", |t| &t.prompt_tokens),
    ("TTFT ms", |t| &t.ttft_ms),
    ("ITL ms", |t| &t.itl_ms),
    ("e2e ms", |t| &t.e2e_ms),
];

/// The per-turn section, when any run is of sessions (`names`: each run's name).
pub(crate) fn turns_section(body: &mut String, runs: &[LoadReport], names: &[String]) {
    let with: Vec<(&[TurnFigures], &String)> = runs
        .iter()
        .zip(names)
        .filter_map(|(r, n)| Some((r.turns.as_deref()?, n)))
        .collect();
    if with.is_empty() {
        return;
    }
    body.push_str("<h2>Per turn</h2><div class=\"charts\">");
    for (title, y, pick) in [
        ("TTFT by turn", "ms", COLUMNS[1].1),
        ("ITL by turn", "ms", COLUMNS[2].1),
        ("End-to-end latency by turn", "ms", COLUMNS[3].1),
        ("Prompt tokens by turn", "tokens", COLUMNS[0].1),
    ] {
        let series = by_turn(&with, pick);
        if series.is_empty() {
            continue;
        }
        body.push_str(&svg::lines(
            &Axes {
                title,
                x: "turn",
                y,
            },
            &series,
        ));
    }
    body.push_str("</div>");
    for (turns, name) in with {
        table(body, turns, name);
    }
}

/// p50 and p99 of a figure by turn, per run (the run's name first when there are several).
fn by_turn(with: &[(&[TurnFigures], &String)], pick: Pick) -> Vec<Series> {
    let quantiles: [(&str, Quantile); 2] = [("p50", |p| p.p50), ("p99", |p| p.p99)];
    let mut series = Vec::new();
    for (turns, name) in with {
        for (q, value) in quantiles {
            let points: Vec<(f64, f64)> = turns
                .iter()
                .filter_map(|t| Some((f64::from(t.turn), value(pick(t))?)))
                .collect();
            if points.is_empty() {
                continue;
            }
            series.push(Series {
                name: if with.len() > 1 {
                    format!("{name}: {q}")
                } else {
                    q.to_owned()
                },
                points,
            });
        }
    }
    series
}

/// One run's figures per turn: requests, ok, cancelled, then p50 and p99 of each column.
fn table(body: &mut String, turns: &[TurnFigures], name: &str) {
    let _ = write!(
        body,
        "<table class=\"turns\" data-run=\"{}\"><caption>{}</caption><thead><tr><th>turn</th><th>requests</th><th>ok</th><th>cancelled</th>",
        esc(name),
        esc(name)
    );
    for (heading, _) in COLUMNS {
        let _ = write!(body, "<th>{heading} p50</th><th>{heading} p99</th>");
    }
    body.push_str("</tr></thead><tbody>");
    let cell = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_else(|| "-".into());
    for t in turns {
        let _ = write!(
            body,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
            t.turn, t.requests, t.ok, t.cancelled
        );
        for (_, pick) in COLUMNS {
            let p = pick(t);
            let _ = write!(body, "<td>{}</td><td>{}</td>", cell(p.p50), cell(p.p99));
        }
        body.push_str("</tr>");
    }
    body.push_str("</tbody></table>");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A turn of `n` requests whose TTFT had these p50 and p99.
    fn turn(k: u32, n: usize, (p50, p99): (f64, f64)) -> TurnFigures {
        TurnFigures {
            turn: k,
            requests: n,
            ok: n,
            ttft_ms: Percentiles {
                samples: n,
                p50: Some(p50),
                p99: Some(p99),
                ..Percentiles::default()
            },
            ..TurnFigures::default()
        }
    }

    #[test]
    fn sessions_get_a_table_per_run_and_charts_by_turn() {
        let runs = [
            LoadReport {
                turns: Some(vec![turn(1, 2, (10.0, 30.0)), turn(2, 1, (40.5, 40.5))]),
                ..LoadReport::default()
            },
            LoadReport::default(),
        ];
        let names = ["rate=1".to_owned(), "rate=2".to_owned()];
        let mut body = String::new();
        turns_section(&mut body, &runs, &names);
        assert_eq!(body.matches("<table").count(), 1, "only the sessions' run");
        assert!(body.contains("<title>TTFT by turn</title>"), "{body}");
        assert!(
            !body.contains("<title>ITL by turn</title>"),
            "no figure, no chart"
        );
        assert!(
            body.contains("<tr><td>2</td><td>1</td><td>1</td><td>0</td><td>-</td><td>-</td><td>40.5</td><td>40.5</td>"),
            "{body}"
        );
        let mut none = String::new();
        turns_section(&mut none, &runs[1..], &names[1..]);
        assert!(none.is_empty());
    }
}
