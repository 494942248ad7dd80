//! `planwave loadtest` as a serving benchmark through the real binary, against a real
//! `planwave sim-llm serve` on 127.0.0.1: client-measured serving metrics checked against the
//! server's own, the server's concurrency limit, SLO goodput, open-loop arrivals, sweeps,
//! the HTML report and --compare. Behaviour only: no figure is held to a wall-clock limit.

use serde_json::Value;

use crate::support::{Planwave, SimLlm, planwave, read_json, tempdir, write_json};

fn loadtest_json(loadtest: Planwave) -> Value {
    let out = loadtest.arg("--json").run();
    out.expect_ok();
    serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("loadtest --json printed no JSON ({e}): {}", out.stdout))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn serving_metrics_are_consistent_and_agree_with_the_server() {
    let limit = 4;
    let server = SimLlm::start(
        &[
            "--latency-ms",
            "5",
            "--sigma",
            "0",
            "--tokens-per-sec",
            "4000",
            "--token-jitter",
            "0.3",
            "--max-concurrency",
            &limit.to_string(),
        ],
        &[],
    );
    let v = loadtest_json(
        planwave(["loadtest"])
            .opt("--requests", "40")
            .opt("--concurrency", "8")
            .opt("--llm-url", &server.base_url),
    );
    let s = &v["runs"][0]["serving"];
    assert_eq!(
        (s["requests"].as_u64(), s["ok"].as_u64()),
        (Some(40), Some(40)),
        "{s}"
    );
    assert_eq!(s["outcomes"]["ok"], 40);
    for m in ["ttft_ms", "itl_ms", "tpot_ms", "e2e_ms"] {
        assert!(s[m]["samples"].as_u64().unwrap_or(0) > 0, "{m}: {s}");
        let p = &s[m];
        assert!(f(&p["p50"]) <= f(&p["p90"]) && f(&p["p90"]) <= f(&p["p99"]));
        assert!(f(&p["p99"]) <= f(&p["max"]), "{m}: {p}");
    }
    // TTFT comes before the end, for every percentile.
    for q in ["p50", "p90", "p99", "max"] {
        assert!(f(&s["ttft_ms"][q]) <= f(&s["e2e_ms"][q]), "{q}: {s}");
    }
    // Streamed token by token: many inter-token gaps per request.
    assert!(s["itl_ms"]["samples"].as_u64().unwrap() > 40 * 10, "{s}");
    assert!(f(&s["request_throughput"]) > 0.0 && f(&s["output_tokens_per_sec"]) > 0.0);

    // The server's own figures for the same requests.
    let stats = server.stats();
    let serving = &stats["serving"];
    assert_eq!(
        s["output_tokens"], serving["output_tokens_by_role"]["subagent"],
        "client and server count the same output tokens: {serving}"
    );
    assert_eq!(
        serving["max_in_flight"].as_u64(),
        Some(limit),
        "8 clients through 4 slots: the limit is reached and never passed"
    );
    let side = &s["server"];
    assert_eq!(side["max_in_flight"].as_u64(), Some(limit));
    assert_eq!(
        side["answers"], 40,
        "the 40 requests, not the report: {side}"
    );
    assert_eq!(
        serving["completed"], 40,
        "the report's integrator call is not sent unless asked (--integrator)"
    );
    // The server's first token is sent before the client reads it.
    assert!(f(&side["ttft_ms"]["p50"]) <= f(&s["ttft_ms"]["p50"]), "{s}");
}

#[test]
fn goodput_counts_the_requests_that_meet_the_slo() {
    let dir = tempdir();
    // Tasks 1-6 answer after 3 s, 7-20 at once: only 14 can meet ttft=1500ms. The margins
    // are wide on both sides (an answer at once takes milliseconds, even on a loaded machine
    // where 150 ms was once passed), so the count depends on the latencies, not the machine.
    let lat: serde_json::Map<String, Value> = (1..=20)
        .map(|k| (k.to_string(), Value::from(if k <= 6 { 3000 } else { 0 })))
        .collect();
    let lat = write_json(dir.path(), "lat.json", &Value::Object(lat));
    let server = SimLlm::start(&["--latency-file", lat.to_str().expect("path")], &[]);
    let v = loadtest_json(
        planwave(["loadtest"])
            .opt("--requests", "20")
            .opt("--llm-url", &server.base_url)
            .opt("--slo", "ttft=1500ms,e2e=30s"),
    );
    let s = &v["runs"][0]["serving"];
    assert_eq!(s["slo"], "ttft=1500ms,e2e=30s");
    assert_eq!(s["good"], 14, "{s}");
    let expected = 14.0 / f(&s["duration_s"]);
    assert!((f(&s["goodput"]) - expected).abs() < 1e-9, "{s}");
    assert!(f(&s["goodput"]) < f(&s["request_throughput"]));

    // A bad SLO is invalid input.
    planwave(["loadtest"])
        .opt("--requests", "2")
        .opt("--slo", "itl=5ms")
        .run()
        .expect_code(2);
}

#[test]
fn open_loop_arrivals_send_exactly_the_requests_asked() {
    let v = loadtest_json(
        planwave(["loadtest"])
            .opt("--requests", "50")
            .opt("--rate", "400")
            .opt("--latency", "fixed:1"),
    );
    let r = &v["runs"][0];
    assert_eq!(r["completed"], 50);
    assert_eq!(r["label"], "rate=400");
    assert_eq!(r["serving"]["requests"], 50, "{r}");
    // --duration: rate x duration requests; the warmup leaves out the first ones.
    let v = loadtest_json(
        planwave(["loadtest"])
            .opt("--rate", "200")
            .opt("--duration", "150ms")
            .opt("--warmup", "50ms")
            .opt("--latency", "fixed:1"),
    );
    let s = &v["runs"][0]["serving"];
    assert_eq!(v["runs"][0]["completed"], 30);
    let (counted, left_out) = (
        s["requests"].as_u64().unwrap(),
        s["warmup_excluded"].as_u64().unwrap(),
    );
    assert_eq!(counted + left_out, 30, "{s}");
    assert!(left_out >= 1 && counted >= 1, "{s}");
    // A rate without a size is refused.
    planwave(["loadtest"])
        .opt("--rate", "5")
        .run()
        .expect_code(2);
}

#[test]
fn plans_started_at_a_rate_each_run_by_their_dataflow() {
    let v = loadtest_json(
        planwave(["loadtest"])
            .opt("--shape", "layered")
            .opt("--tasks", "12")
            .opt("--width", "4")
            .opt("--plan-rate", "50")
            .opt("--plans", "5")
            .opt("--latency", "fixed:2"),
    );
    let r = &v["runs"][0];
    assert_eq!(r["tasks"], 60, "5 copies of 12 tasks");
    assert_eq!(r["completed"], 60);
    assert_eq!(r["serving"]["requests"], 60);
    // Each copy still runs by its own dependencies: tasks past the first layer dispatch
    // when their prerequisites finish.
    assert_eq!(r["dispatch_ms"]["samples"], 5 * 8, "{r}");
}

#[test]
fn a_sweep_has_a_run_per_point_and_names_the_knee() {
    let server = SimLlm::start(
        &[
            "--latency-ms",
            "40",
            "--sigma",
            "0",
            "--max-concurrency",
            "4",
        ],
        &[],
    );
    let v = loadtest_json(
        planwave(["loadtest"])
            .opt("--requests", "24")
            .opt("--concurrency", "1,4,16")
            .opt("--llm-url", &server.base_url),
    );
    let runs = v["runs"].as_array().expect("runs");
    let labels: Vec<&str> = runs.iter().map(|r| r["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["concurrency=1", "concurrency=4", "concurrency=16"]);
    let tput: Vec<f64> = runs
        .iter()
        .map(|r| f(&r["serving"]["request_throughput"]))
        .collect();
    // Four slots serve more than one client can use.
    assert!(tput[1] > 2.0 * tput[0], "{tput:?}");
    let sweep = &v["sweep"];
    assert_eq!(sweep["metric"], "request_throughput");
    let k = sweep["knee"].as_u64().expect("knee") as usize;
    assert_eq!(sweep["knee_point"], labels[k]);
    assert_eq!(f(&sweep["knee_value"]), tput[k]);
    assert!(k == 2 || tput[k + 1] < tput[k] * 1.05, "{sweep}");
    assert!(k >= 1, "throughput rose from 1 to 4 clients: {sweep}");

    // The table names the knee too.
    let out = planwave(["loadtest"])
        .opt("--requests", "8")
        .opt("--concurrency", "1,2")
        .opt("--latency", "fixed:1")
        .run();
    out.expect_ok();
    assert!(out.stdout.contains("knee: concurrency="), "{}", out.stdout);
    assert!(
        out.stdout.contains("TTFT p50/p90/p99/max"),
        "{}",
        out.stdout
    );
}

#[test]
fn the_html_report_is_self_contained_and_has_its_charts() {
    let dir = tempdir();
    let html = dir.path().join("report.html");
    planwave(["loadtest"])
        .opt("--shape", "layered")
        .opt("--tasks", "60")
        .opt("--latency", "fixed:2")
        .opt("--html", &html)
        .run()
        .expect_ok();
    let text = std::fs::read_to_string(&html).expect("html written");
    assert!(text.starts_with("<!DOCTYPE html>"));
    for needle in [
        "TTFT CDF",
        "end-to-end latency CDF",
        "Model calls in flight",
        "Throughput",
        "Dispatch latency",
        "Task timeline",
    ] {
        assert!(text.contains(needle), "missing {needle}");
    }
    assert!(text.matches("<svg").count() >= 6);
    assert_eq!(text.matches("<svg").count(), text.matches("</svg>").count());
    // Nothing to fetch: no URL, script, external stylesheet or image.
    for banned in [
        "http:", "https:", "<script", "<link", "<img", "src=", "url(",
    ] {
        assert!(!text.contains(banned), "found {banned}");
    }
}

#[test]
fn compare_reports_ratios_of_two_saved_runs() {
    let dir = tempdir();
    let save = |name: &str, ms: &str| {
        let out = planwave(["loadtest"])
            .opt("--requests", "20")
            .opt("--concurrency", "4")
            .opt("--latency", format!("fixed:{ms}"))
            .arg("--json")
            .run();
        out.expect_ok();
        let path = dir.path().join(name);
        std::fs::write(&path, &out.stdout).expect("save");
        path
    };
    let (a, b) = (save("a.json", "2"), save("b.json", "8"));
    let html = dir.path().join("cmp.html");
    let out = planwave(["loadtest", "--json"])
        .arg("--compare")
        .arg(&a)
        .arg(&b)
        .opt("--html", &html)
        .run();
    out.expect_ok();
    let v: Value = serde_json::from_str(&out.stdout).expect("json");
    let (ja, jb) = (read_json(&a), read_json(&b));
    let rows = v["rows"].as_array().expect("rows");
    let row = |fig: &str| {
        rows.iter()
            .find(|r| r["figure"] == fig)
            .unwrap_or_else(|| panic!("no {fig}: {v}"))
    };
    let mk = row("makespan ms");
    let (ma, mb) = (
        f(&ja["runs"][0]["makespan_ms"]),
        f(&jb["runs"][0]["makespan_ms"]),
    );
    assert_eq!((f(&mk["a"]), f(&mk["b"])), (ma, mb));
    assert!((f(&mk["ratio"]) - mb / ma).abs() < 1e-12);
    let e2e = row("e2e p50 ms");
    assert_eq!(f(&e2e["a"]), f(&ja["runs"][0]["serving"]["e2e_ms"]["p50"]));
    let page = std::fs::read_to_string(&html).expect("html");
    assert!(page.contains("<svg") && !page.contains("http:"));

    // The table form names both files.
    let out = planwave(["loadtest", "--compare"]).arg(&a).arg(&b).run();
    out.expect_ok();
    assert!(out.stdout.contains("B/A") && out.stdout.contains("makespan ms"));
    // Something that is not a loadtest output is invalid input.
    let bogus = write_json(dir.path(), "x.json", &serde_json::json!({"x": 1}));
    planwave(["loadtest", "--compare"])
        .arg(&a)
        .arg(&bogus)
        .run()
        .expect_code(2);
}

#[test]
fn sim_llm_serve_refuses_bad_serving_settings() {
    for (flag, value) in [
        ("--token-jitter", "2"),
        ("--tokens-per-sec", "writer=3"),
        ("--prefill-us-per-token", "-1"),
        ("--max-concurrency", "0"),
    ] {
        let out = planwave(["sim-llm", "serve"]).opt(flag, value).run();
        out.expect_code(2);
        assert!(
            out.stderr.contains(flag) || out.stderr.contains(value),
            "{flag}: {}",
            out.stderr
        );
    }
}
