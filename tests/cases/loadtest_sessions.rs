//! Multi-turn sessions in the load tester's outputs and sweeps (issue 37), through the real
//! binary against a real `sim-llm serve` on 127.0.0.1: the per-turn figures of the HTML
//! report and the CSV are the JSON's, and sessions sweep over rate (saturation judged in
//! conversations) and over concurrency.

use serde_json::Value;

use crate::support::{SimLlm, planwave, tempdir};

fn json(out: &crate::support::Output) -> Value {
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

/// Text between `open` and the next `close` after it.
fn between<'a>(text: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let start = text.find(open)? + open.len();
    let len = text[start..].find(close)?;
    Some(&text[start..start + len])
}

/// The cells of each `<tr>` of the HTML report's per-turn table (header row first).
fn turns_table(page: &str) -> Vec<Vec<String>> {
    let table = between(page, "<table class=\"turns\"", "</table>").expect("a per-turn table");
    let cells = |row: &str, tag: &str| -> Vec<String> {
        row.split(&format!("<{tag}>"))
            .skip(1)
            .map(|c| {
                c.split(&format!("</{tag}>"))
                    .next()
                    .unwrap_or("")
                    .to_owned()
            })
            .collect()
    };
    let mut rows = vec![cells(
        between(table, "<thead>", "</thead>").expect("head"),
        "th",
    )];
    let body = between(table, "<tbody>", "</tbody>").expect("body");
    rows.extend(body.split("<tr>").skip(1).map(|r| cells(r, "td")));
    rows
}

/// Whether two figures are the same number: equal but for the last bit, which serde_json's
/// float parsing may get wrong (it does not promise exact round trips by default).
fn same(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() <= 1e-12 * a.abs().max(b.abs()),
        (a, b) => a == b,
    }
}

fn all_same(a: &[Option<f64>], b: &[Option<f64>]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same(*a, *b))
}

/// A cell as the number it shows (`-` is no figure).
fn number(cell: &str) -> Option<f64> {
    (cell != "-" && !cell.is_empty())
        .then(|| cell.parse().unwrap_or_else(|e| panic!("{cell:?}: {e}")))
}

#[test]
fn per_turn_figures_in_the_html_and_the_csv_are_the_json_s() {
    // Streamed at 2,000 tokens/s, so every answer has gaps between its chunks (ITL).
    let server = SimLlm::start(
        &[
            "--tokens-per-sec",
            "2000",
            "--latency-ms",
            "5",
            "--sigma",
            "0",
        ],
        &[],
    );
    let dir = tempdir();
    let (html, csv) = (dir.path().join("r.html"), dir.path().join("r.csv"));
    let out = planwave(["loadtest", "--json"])
        .opt("--turns", "3")
        .opt("--input-tokens", "40")
        .opt("--sessions", "4")
        .opt("--output-tokens", "20")
        .opt("--llm-url", &server.base_url)
        .opt("--html", &html)
        .opt("--csv", &csv)
        .run();
    out.expect_ok();
    let v = json(&out);
    let turns = v["runs"][0]["turns"].as_array().expect("turns").clone();
    assert_eq!(turns.len(), 3, "{v}");
    // The JSON's per-turn percentiles, in the HTML table's column order.
    let figures = ["prompt_tokens", "ttft_ms", "itl_ms", "e2e_ms"];
    let want = |t: &Value| -> Vec<Option<f64>> {
        figures
            .iter()
            .flat_map(|f| [t[f]["p50"].as_f64(), t[f]["p99"].as_f64()])
            .collect()
    };
    for t in &turns {
        assert_eq!(t["requests"], 4, "{t}");
        assert!(
            want(t).iter().all(Option::is_some),
            "every figure measured: {t}"
        );
    }
    let prompt: Vec<f64> = turns
        .iter()
        .filter_map(|t| t["prompt_tokens"]["p50"].as_f64())
        .collect();
    assert!(
        prompt[0] < prompt[1] && prompt[1] < prompt[2],
        "the context grows: {prompt:?}"
    );

    // HTML: a row per turn, the same numbers (written so they read back exactly).
    let page = std::fs::read_to_string(&html).expect("html");
    assert!(
        page.contains("<title>ITL by turn</title>"),
        "a chart by turn"
    );
    let rows = turns_table(&page);
    assert_eq!(rows[0][..4], ["turn", "requests", "ok", "cancelled"]);
    assert_eq!(rows[0][6], "TTFT ms p50");
    assert_eq!(rows.len(), 1 + turns.len(), "{rows:?}");
    for (row, t) in rows[1..].iter().zip(&turns) {
        let counts: Vec<Option<f64>> = row[..4].iter().map(|c| number(c)).collect();
        let json_counts: Vec<Option<f64>> = ["turn", "requests", "ok", "cancelled"]
            .iter()
            .map(|k| t[k].as_f64())
            .collect();
        assert_eq!(counts, json_counts, "{row:?}");
        let html: Vec<Option<f64>> = row[4..].iter().map(|c| number(c)).collect();
        assert!(
            all_same(&html, &want(t)),
            "turn {}: {row:?} vs {t}",
            t["turn"]
        );
    }

    // CSV: the run's row, then a row per turn with its `turn` set.
    let text = std::fs::read_to_string(&csv).expect("csv");
    let lines: Vec<&str> = text.lines().collect();
    let header: Vec<&str> = lines[0].split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).expect(name);
    assert_eq!(lines.len(), 2 + turns.len(), "{text}");
    let run: Vec<&str> = lines[1].split(',').collect();
    assert_eq!((run.len(), run[col("turn")]), (header.len(), ""), "{text}");
    assert_eq!(run[col("requests")], "12");
    let columns = [
        ("prompt_tokens_p50", "prompt_tokens", "p50"),
        ("prompt_tokens_p99", "prompt_tokens", "p99"),
        ("ttft_p50_ms", "ttft_ms", "p50"),
        ("ttft_p99_ms", "ttft_ms", "p99"),
        ("itl_p50_ms", "itl_ms", "p50"),
        ("itl_p99_ms", "itl_ms", "p99"),
        ("e2e_p50_ms", "e2e_ms", "p50"),
        ("e2e_p99_ms", "e2e_ms", "p99"),
    ];
    for (line, t) in lines[2..].iter().zip(&turns) {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells.len(), header.len(), "{line}");
        assert_eq!(number(cells[col("turn")]), t["turn"].as_f64(), "{line}");
        assert_eq!(number(cells[col("requests")]), t["requests"].as_f64());
        assert_eq!(number(cells[col("ok")]), t["ok"].as_f64());
        for (name, figure, q) in columns {
            assert!(
                same(number(cells[col(name)]), t[figure][q].as_f64()),
                "{name} of turn {}: {line} vs {t}",
                t["turn"]
            );
        }
        assert_eq!(cells[col("makespan_ms")], "", "a run's own figure: {line}");
    }
}

#[test]
fn sessions_sweep_over_rate_and_stop_where_conversations_fall_behind() {
    // One answer at a time, 20 ms each: 50 answers/s, 25 two-turn conversations/s at most.
    let server = SimLlm::start(
        &[
            "--max-concurrency",
            "1",
            "--latency-ms",
            "20",
            "--sigma",
            "0",
        ],
        &[],
    );
    let sessions = |extra: &[&str]| {
        let out = planwave(["loadtest", "--json"])
            .opt("--turns", "2")
            .opt("--input-tokens", "10")
            .opt("--output-tokens", "5")
            .opt("--llm-url", &server.base_url)
            .args(extra)
            .run();
        out.expect_ok();
        json(&out)
    };
    // 10 conversations/s (20 answers/s) is served whatever the machine's load, 1000/s never
    // is.
    let v = sessions(&[
        "--sessions",
        "20",
        "--rate",
        "10,1000,2000",
        "--burstiness",
        "100",
        "--saturation-tolerance",
        "0.5",
    ]);
    let runs = v["runs"].as_array().expect("runs");
    let labels: Vec<&str> = runs.iter().filter_map(|r| r["label"].as_str()).collect();
    assert_eq!(labels, ["rate=10", "rate=1000"], "stopped rising: {v}");
    for r in runs {
        let turns = r["turns"]
            .as_array()
            .expect("per-turn figures at each rate");
        let requests: Vec<u64> = turns
            .iter()
            .filter_map(|t| t["requests"].as_u64())
            .collect();
        assert_eq!(
            requests,
            [20, 20],
            "the same conversations at each rate: {r}"
        );
    }
    let s = &v["saturation"];
    assert_eq!(s["point"], "rate=1000", "{s}");
    assert_eq!(s["skipped"], serde_json::json!(["rate=2000"]), "{s}");
    let checked = s["checked"].as_array().expect("checked");
    assert!(checked.iter().all(|c| c["unit"] == "conversations"), "{s}");
    assert_eq!(checked[0]["reasons"], serde_json::json!([]), "{s}");
    assert_eq!(checked[1]["reasons"][0], "achieved_below_sent", "{s}");
    let rate = |c: &Value, k: &str| c[k].as_f64().unwrap_or_else(|| panic!("{k}: {c}"));
    // The rate asked is of conversation starts (not of every turn's send).
    assert!(
        (rate(&checked[0], "offered_rate") - 10.0).abs() < 1.0,
        "{s}"
    );
    assert!(
        rate(&checked[1], "achieved_rate") < 0.5 * rate(&checked[1], "sent_rate"),
        "{s}"
    );
    assert_eq!(v["sweep"]["stopped_at_saturation"], "rate=1000", "{v}");
    assert_eq!(
        server.stats()["roles"]["subagent"],
        80,
        "two rates of 20 two-turn conversations; none of the skipped rate"
    );

    // A concurrency sweep: every conversation at once, the turns in flight capped.
    let v = sessions(&["--sessions", "4", "--concurrency", "1,3"]);
    let runs = v["runs"].as_array().expect("runs");
    let seen: Vec<(Option<&str>, Option<u64>)> = runs
        .iter()
        .map(|r| (r["label"].as_str(), r["max_in_flight"].as_u64()))
        .collect();
    assert_eq!(seen[0], (Some("concurrency=1"), Some(1)), "{v}");
    assert_eq!(seen[1].0, Some("concurrency=3"));
    assert!(seen[1].1.is_some_and(|m| (1..=3).contains(&m)), "{v}");
    assert!(
        runs.iter()
            .all(|r| r["turns"].as_array().is_some_and(|t| t.len() == 2))
    );
    assert_eq!(v["saturation"], Value::Null, "judged for rate sweeps only");
}
