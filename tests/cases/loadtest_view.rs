//! What the load tester shows (issue 37), through the real binary against the real
//! `sim-llm serve`: the saturation point of a rate sweep (table, JSON, HTML), the scraped
//! server series on the HTML report's time axis, and the live view, on a pipe and on a
//! terminal.

use serde_json::Value;

use crate::support::{SimLlm, planwave, tempdir};

/// `planwave loadtest --requests 20 --rate RATES` against `server`, regular gaps (so each
/// point sends at its rate), with `extra` flags.
fn rate_sweep(server: &SimLlm, rates: &str, extra: &[&str]) -> crate::support::Output {
    let out = planwave(["loadtest", "--burstiness", "100"])
        .opt("--requests", "20")
        .opt("--rate", rates)
        .opt("--llm-url", &server.base_url)
        .args(extra)
        .run();
    out.expect_ok();
    out
}

fn json(out: &crate::support::Output) -> Value {
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

/// Text between `open` and the next `close` after it.
fn between<'a>(text: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let start = text.find(open)? + open.len();
    let len = text[start..].find(close)?;
    Some(&text[start..start + len])
}

fn unescape(s: &str) -> String {
    s.replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

#[test]
fn a_rate_sweep_stops_at_the_rate_the_server_cannot_serve_and_names_it() {
    // One answer at a time, 20 ms each: 50 answers/s at the most.
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
    // A generous tolerance: 10/s is served whatever the machine's load, 1000/s never is.
    let flags = ["--saturation-tolerance", "0.5"];
    let v = json(&rate_sweep(
        &server,
        "10,1000,2000",
        &[&flags[..], &["--json"]].concat(),
    ));
    let runs = v["runs"].as_array().expect("runs");
    let labels: Vec<&str> = runs.iter().filter_map(|r| r["label"].as_str()).collect();
    assert_eq!(labels, ["rate=10", "rate=1000"], "stopped rising: {v}");
    let s = &v["saturation"];
    assert_eq!(s["point"], "rate=1000", "{s}");
    assert_eq!(s["skipped"], serde_json::json!(["rate=2000"]), "{s}");
    assert_eq!(s["tolerance"], 0.5);
    let checked = s["checked"].as_array().expect("checked");
    assert_eq!(checked[0]["reasons"], serde_json::json!([]), "{s}");
    assert_eq!(checked[1]["reasons"][0], "achieved_below_sent", "{s}");
    let rate = |c: &Value, k: &str| c[k].as_f64().unwrap_or_else(|| panic!("{k}: {c}"));
    assert!(
        rate(&checked[1], "achieved_rate") < 0.5 * rate(&checked[1], "sent_rate"),
        "{s}"
    );
    assert_eq!(
        server.stats()["roles"]["subagent"],
        40,
        "no request of the skipped rate was sent"
    );
    // Throughput rose up to the last rate run, but the sweep stopped there on purpose: the
    // knee is not "further out".
    assert_eq!(v["sweep"]["stopped_at_saturation"], "rate=1000", "{v}");
    assert_eq!(v["sweep"]["rising_at_end"], false, "{v}");

    // The table and the HTML report name the same point.
    let dir = tempdir();
    let html = dir.path().join("report.html");
    let html_flag = html.to_str().expect("utf-8 path");
    let table = rate_sweep(
        &server,
        "10,1000,2000",
        &[&flags[..], &["--html", html_flag]].concat(),
    );
    assert!(
        table
            .stdout
            .contains("saturation point: rate=1000; not run: rate=2000\n"),
        "{}",
        table.stdout
    );
    let knee = table
        .stdout
        .lines()
        .find(|l| l.starts_with("knee: "))
        .unwrap_or_else(|| panic!("a knee line: {}", table.stdout));
    assert!(
        knee.ends_with("; the sweep stopped at its saturation point, rate=1000"),
        "{knee}"
    );
    assert!(!table.stdout.contains("still rising"), "{}", table.stdout);
    let page = std::fs::read_to_string(&html).expect("html");
    let section = between(
        &page,
        "<h2>Saturation</h2><pre class=\"saturation\">",
        "</pre>",
    )
    .expect("a saturation section");
    let last = section.lines().last().expect("lines");
    assert_eq!(last, "saturation point: rate=1000; not run: rate=2000");
}

#[test]
fn a_rate_sweep_the_server_keeps_up_with_names_no_saturation_point() {
    let server = SimLlm::start(&["--latency-ms", "20", "--sigma", "0"], &[]);
    let v = json(&rate_sweep(
        &server,
        "10,20",
        &[
            "--saturation-tolerance",
            "0.5",
            "--slo",
            "ttft=10s",
            "--json",
        ],
    ));
    assert_eq!(
        v["runs"].as_array().map(Vec::len),
        Some(2),
        "every rate ran"
    );
    let s = &v["saturation"];
    assert_eq!(s["point"], Value::Null, "{s}");
    assert_eq!(v["sweep"]["stopped_at_saturation"], Value::Null, "{v}");
    assert_eq!(s["skipped"], serde_json::json!([]));
    assert_eq!(s["ttft_slo_ms"], 10_000.0);
    for c in s["checked"].as_array().expect("checked") {
        assert_eq!(c["reasons"], serde_json::json!([]), "{c}");
        assert!(
            c["sent_rate"].as_f64().is_some() && c["ttft_p99_ms"].as_f64().is_some(),
            "{c}"
        );
    }
    // Not a rate sweep: no saturation check at all.
    let one = json(&rate_sweep(&server, "10", &["--json"]));
    assert_eq!(one["saturation"], Value::Null);
}

/// The header and rows of the HTML report's table of scraped values for one run.
fn scraped_table(page: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let table = between(page, "<table class=\"server-metrics\"", "</table>").expect("a table");
    let head = between(table, "<thead>", "</thead>").expect("head");
    let cells = |row: &str, tag: &str| -> Vec<String> {
        row.split(&format!("<{tag}>"))
            .skip(1)
            .map(|c| unescape(c.split(&format!("</{tag}>")).next().unwrap_or("")))
            .collect()
    };
    let header = cells(head, "th");
    let body = between(table, "<tbody>", "</tbody>").expect("body");
    let rows = body.split("<tr>").skip(1).map(|r| cells(r, "td")).collect();
    (header, rows)
}

/// The x-axis tick labels of the chart titled `title` (the first five centred texts).
fn x_ticks(page: &str, title: &str) -> Vec<String> {
    let svg = between(page, &format!("<title>{title}</title>"), "</svg>")
        .unwrap_or_else(|| panic!("no chart {title}"));
    svg.split("text-anchor=\"middle\">")
        .skip(1)
        .take(5)
        .map(|t| t.split('<').next().unwrap_or("").to_owned())
        .collect()
}

#[test]
fn the_html_report_draws_the_scraped_series_with_the_values_of_the_json() {
    // Two slots for six clients: requests queue, so the series move during the run.
    let server = SimLlm::start(
        &[
            "--max-concurrency",
            "2",
            "--latency-ms",
            "400",
            "--sigma",
            "0",
        ],
        &[],
    );
    let dir = tempdir();
    let html = dir.path().join("report.html");
    let out = planwave(["loadtest", "--json"])
        .opt("--requests", "12")
        .opt("--concurrency", "6")
        .opt("--llm-url", &server.base_url)
        .opt(
            "--scrape-metrics",
            server.base_url.replace("/v1", "/metrics"),
        )
        .opt("--html", &html)
        .run();
    out.expect_ok();
    let v = json(&out);
    let samples = v["runs"][0]["server_metrics"]
        .as_array()
        .expect("server_metrics");
    let page = std::fs::read_to_string(&html).expect("html");
    let (header, rows) = scraped_table(&page);
    let label = "{model_name=\"planwave-sim-1\"}";
    for name in [
        "vllm:num_requests_waiting",
        "vllm:kv_cache_usage_perc",
        "vllm:num_requests_running",
    ] {
        assert!(
            header.contains(&format!("{name}{label}")),
            "{name}: {header:?}"
        );
    }
    assert_eq!(rows.len(), samples.len(), "one row per scrape");
    let mut t_html = Vec::new();
    for (row, sample) in rows.iter().zip(samples) {
        t_html.push(row[0].parse::<f64>().expect("t"));
        for (key, cell) in header.iter().zip(row).skip(1) {
            let value: f64 = cell
                .parse()
                .unwrap_or_else(|e| panic!("{key}: {cell:?}: {e}"));
            assert_eq!(
                Some(value),
                sample["series"][key].as_f64(),
                "{key} in {sample}"
            );
        }
    }
    // The same instants: the HTML's times are the JSON's, shifted to the first call.
    let t_json: Vec<f64> = samples.iter().filter_map(|s| s["t_s"].as_f64()).collect();
    let shift = t_json[0] - t_html[0];
    for (h, j) in t_html.iter().zip(&t_json) {
        assert!((j - h - shift).abs() < 0.002, "{t_html:?} vs {t_json:?}");
    }
    assert!(
        shift >= 0.0,
        "the first call goes out after the run starts: {shift}"
    );
    // Drawn on the client charts' time axis: the same ticks.
    let client = x_ticks(&page, "Throughput (model calls completed per second)");
    for title in [
        "Server queue length (requests waiting)",
        "Server KV-cache usage",
        "Server running requests",
    ] {
        assert_eq!(x_ticks(&page, title), client, "{title}");
    }
}

/// The live view's fields: elapsed s, rate, in flight, done, total, errors, and TTFT and ITL
/// p50/p99 in ms (`None` for `-`).
#[derive(Debug)]
struct Live {
    in_flight: u64,
    done: u64,
    total: u64,
    errors: u64,
    ms: [Option<f64>; 4],
}

fn parse_live(line: &str) -> Live {
    let parts: Vec<&str> = line.split(" | ").collect();
    assert_eq!(parts.len(), 7, "{line}");
    let first = |p: &str| -> u64 {
        p.split_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{p} in {line}"))
    };
    let (done, total) = parts[3]
        .trim_end_matches(" done")
        .split_once('/')
        .unwrap_or_else(|| panic!("{line}"));
    let num = |w: &str| (w != "-").then(|| w.parse::<f64>().unwrap_or_else(|_| panic!("{line}")));
    let words = |p: &str| p.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
    let (ttft, itl) = (words(parts[5]), words(parts[6]));
    Live {
        in_flight: first(parts[2]),
        done: done.parse().expect("done"),
        total: total.parse().expect("total"),
        errors: first(parts[4]),
        ms: [num(&ttft[2]), num(&ttft[4]), num(&itl[2]), num(&itl[4])],
    }
}

#[test]
fn the_live_view_prints_lines_on_a_pipe_when_asked_and_they_agree_with_the_json() {
    // 290-token answers at 500 tokens/s: about 0.6 s each, five at a time, 30 in all, so
    // the run lasts several seconds whatever the machine.
    let server = SimLlm::start(
        &[
            "--tokens-per-sec",
            "500",
            "--latency-ms",
            "50",
            "--sigma",
            "0",
        ],
        &[],
    );
    let run = |extra: &[&str]| {
        let out = planwave(["loadtest", "--json"])
            .opt("--requests", "30")
            .opt("--concurrency", "5")
            .opt("--llm-url", &server.base_url)
            .args(extra)
            .run();
        out.expect_ok();
        out
    };
    let out = run(&["--live"]);
    let v = json(&out);
    let r = &v["runs"][0];
    let prefix = "planwave loadtest: live ";
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter_map(|l| l.strip_prefix(prefix))
        .collect();
    let (finals, ticks): (Vec<&str>, Vec<&str>) =
        lines.iter().partition(|l| l.starts_with("final "));
    assert_eq!(finals.len(), 1, "{}", out.stderr);
    assert!(ticks.len() >= 2, "a line a second: {}", out.stderr);
    let mut done = 0;
    for t in &ticks {
        let l = parse_live(t);
        assert!(l.done >= done && l.done <= 30, "{t}");
        assert!(l.in_flight <= 5, "never above --concurrency: {t}");
        assert_eq!((l.total, l.errors), (30, 0), "{t}");
        done = l.done;
    }
    let last = parse_live(finals[0].trim_start_matches("final "));
    assert_eq!(Some(last.done), r["model_calls"].as_u64(), "{}", finals[0]);
    assert_eq!(Some(last.errors), r["errors"].as_u64());
    assert_eq!(last.in_flight, 0);
    let s = &r["serving"];
    let exact = [
        &s["ttft_ms"]["p50"],
        &s["ttft_ms"]["p99"],
        &s["itl_ms"]["p50"],
        &s["itl_ms"]["p99"],
    ];
    for (live, exact) in last.ms.iter().zip(exact) {
        let (live, exact) = (
            live.expect("a figure"),
            exact.as_f64().expect("in the JSON"),
        );
        // The view's histograms keep 32 buckets per power of two; it prints 2 decimals.
        assert!(
            (live - exact).abs() <= exact / 64.0 + 0.006,
            "{live} vs {exact}: {}",
            finals[0]
        );
    }

    // On a pipe the view is off unless asked, and --quiet keeps it off.
    for extra in [&[][..], &["--quiet"][..]] {
        let out = run(extra);
        assert!(!out.stderr.contains(prefix), "{extra:?}: {}", out.stderr);
    }
}

/// On a terminal the live view is one line redrawn in place: the erase-line sequence reaches
/// the terminal as it is (it used to be escaped like text from a model, and showed as
/// `\x1b[2K`). `script` (util-linux) runs the real binary on a pseudo-terminal; the final
/// line is drawn whatever the run's length, so nothing here depends on timing.
#[test]
fn on_a_terminal_the_live_line_is_redrawn_in_place() {
    let command = format!(
        "{} loadtest --shape wide --tasks 20 --latency fixed:5",
        env!("CARGO_BIN_EXE_planwave")
    );
    let out = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("script (util-linux) runs");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{:?}: {shown}", out.status);
    let redrawn: Vec<&str> = shown.split("\r\x1b[2K").skip(1).collect();
    assert!(!redrawn.is_empty(), "no line redrawn in place: {shown:?}");
    let last = redrawn.last().and_then(|l| l.lines().next()).unwrap_or("");
    // Twenty tasks and the report's summary, which the in-process simulator answers.
    assert!(last.contains(" 21/21 done | 0 errors"), "{shown:?}");
    assert!(
        !shown.contains("\\x1b"),
        "an escaped ESC was shown: {shown:?}"
    );
}
