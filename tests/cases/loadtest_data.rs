//! Workloads from data (issue 37) through the real binary against a real `sim-llm serve` on
//! 127.0.0.1: the prompts of a JSONL dataset, or synthetic prompts of drawn lengths, are what
//! the server receives.

use serde_json::Value;

use crate::support::{SimLlm, planwave, tempdir};

fn loadtest_json(args: &[&str]) -> Value {
    let out = planwave(["loadtest", "--json"]).args(args).run();
    out.expect_ok();
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

/// The simulator's prompt tokens of one request: its messages' characters, three a token.
fn sim_tokens(texts: &[&str]) -> u64 {
    let chars: usize = texts.iter().map(|t| t.chars().count()).sum();
    (chars as u64).div_ceil(3).max(1)
}

#[test]
fn a_dataset_s_prompts_are_what_the_server_receives() {
    let dir = tempdir();
    let path = dir.path().join("prompts.jsonl");
    std::fs::write(
        &path,
        concat!(
            "{\"prompt\": \"What is the capital of France? Answer briefly.\"}\n",
            "{\"messages\": [{\"role\": \"system\", \"content\": \"You are terse.\"}, {\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"Explain TCP slow start.\"}]}]}\n",
            "{\"conversations\": [{\"from\": \"human\", \"value\": \"Write a haiku about load tests\"}, {\"from\": \"gpt\", \"value\": \"...\"}]}\n",
        ),
    )
    .expect("write");
    let server = SimLlm::start(&[], &[]);
    let v = loadtest_json(&[
        "--dataset",
        path.to_str().expect("path"),
        "--llm-url",
        &server.base_url,
    ]);
    let s = &v["runs"][0]["serving"];
    assert_eq!(
        (s["requests"].as_u64(), s["ok"].as_u64()),
        (Some(3), Some(3)),
        "one request a line: {s}"
    );
    let expected = sim_tokens(&["What is the capital of France? Answer briefly."])
        + sim_tokens(&["You are terse.", "Explain TCP slow start."])
        + sim_tokens(&["Write a haiku about load tests"]);
    assert_eq!(
        s["prompt_tokens"].as_u64(),
        Some(expected),
        "the dataset's text, verbatim: {s}"
    );
    assert_eq!(
        server.stats()["serving"]["prompt_tokens"].as_u64(),
        Some(expected)
    );

    // A bad line is invalid input, named with its line.
    std::fs::write(&path, "{\"prompt\": \"x\"}\n{\"nope\": 1}\n").expect("write");
    let out = planwave(["loadtest", "--dataset", path.to_str().expect("path")]).run();
    out.expect_code(2);
    assert!(out.stderr.contains("line 2"), "{}", out.stderr);
}

#[test]
fn synthetic_prompts_have_the_input_tokens_asked() {
    let server = SimLlm::start(&[], &[]);
    let v = loadtest_json(&[
        "--input-tokens",
        "300,0",
        "--requests",
        "6",
        "--llm-url",
        &server.base_url,
    ]);
    let s = &v["runs"][0]["serving"];
    assert_eq!(s["requests"], 6, "{s}");
    let per = &s["prompt_tokens_per_request"];
    assert_eq!(
        (per["p50"].as_f64(), per["max"].as_f64()),
        (Some(300.0), Some(300.0)),
        "{s}"
    );
    assert_eq!(s["prompt_tokens"], 1800);
}

#[test]
fn synthetic_prompt_lengths_are_drawn_per_request_around_the_mean_asked() {
    let server = SimLlm::start(&[], &[]);
    let v = loadtest_json(&[
        "--input-tokens",
        "200,50",
        "--requests",
        "40",
        "--output-tokens",
        "4",
        "--llm-url",
        &server.base_url,
    ]);
    let s = &v["runs"][0]["serving"];
    let per = &s["prompt_tokens_per_request"];
    let f = |k: &str| per[k].as_f64().unwrap_or_else(|| panic!("{k}: {s}"));
    assert_ne!(f("p50"), f("max"), "lengths drawn per request: {s}");
    // 40 draws of a normal of spread 50 (seed 0): their mean is near 200, some far from it.
    assert!((f("mean") - 200.0).abs() < 25.0, "{s}");
    assert!(f("max") - f("p50") > 25.0, "{s}");
    assert_eq!(
        server.stats()["serving"]["prompt_tokens"],
        s["prompt_tokens"],
        "the server counted the prompts the client sized"
    );
}

#[test]
fn a_trace_is_replayed_at_its_times_with_its_input_lengths() {
    let dir = tempdir();
    let path = dir.path().join("trace.csv");
    // Azure LLM inference trace columns; 2 s of trace, replayed 4 times faster.
    std::fs::write(
        &path,
        "TIMESTAMP,ContextTokens,GeneratedTokens\n\
         2023-11-16 18:15:46.0000000,120,10\n\
         2023-11-16 18:15:47.0000000,30,10\n\
         2023-11-16 18:15:48.0000000,60,10\n",
    )
    .expect("write");
    let server = SimLlm::start(&[], &[]);
    let timeline = dir.path().join("timeline.jsonl");
    let v = loadtest_json(&[
        "--trace",
        path.to_str().expect("path"),
        "--speed",
        "4",
        "--llm-url",
        &server.base_url,
        "--timeline",
        timeline.to_str().expect("path"),
    ]);
    let s = &v["runs"][0]["serving"];
    assert_eq!(s["requests"], 3, "one request per row: {s}");
    assert_eq!(s["prompt_tokens"], 210, "each row's ContextTokens: {s}");
    // Rows 1 s apart replayed 4 times faster: no request is sent before its time (0, 250,
    // 500 ms after the run's start); later is allowed, the machine may be busy.
    let text = std::fs::read_to_string(&timeline).expect("timeline");
    let starts: Vec<(String, f64)> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|t| Some((t["task"].as_str()?.to_owned(), t["call_start_ms"].as_f64()?)))
        .collect();
    assert_eq!(starts.len(), 3, "{text}");
    for (task, at) in &starts {
        let due = match task.as_str() {
            "1" => 0.0,
            "2" => 250.0,
            _ => 500.0,
        };
        assert!(
            *at >= due,
            "task {task} sent at {at} ms, due at {due}: {text}"
        );
    }

    let out = planwave(["loadtest", "--trace", path.to_str().expect("path")])
        .opt("--requests", "2")
        .run();
    out.expect_code(2);
}

#[test]
fn repeat_gives_each_figure_a_mean_and_an_interval() {
    let server = SimLlm::start(&["--latency-ms", "2", "--sigma", "0.5"], &[]);
    let v = loadtest_json(&[
        "--requests",
        "8",
        "--repeat",
        "3",
        "--llm-url",
        &server.base_url,
    ]);
    assert_eq!(v["repeat"]["n"], 3);
    let e = &v["repeat"]["runs"][0]["serving.ttft_ms.p50"];
    let values: Vec<f64> = e["values"]
        .as_array()
        .expect("values")
        .iter()
        .filter_map(Value::as_f64)
        .collect();
    assert_eq!(values.len(), 3, "{e}");
    let mean = values.iter().sum::<f64>() / 3.0;
    assert!(
        (e["mean"].as_f64().expect("mean") - mean).abs() < 1e-9,
        "{e}"
    );
    assert!(e["ci95"].as_f64().expect("ci95") >= 0.0);
    // Every repeat ran its 8 requests: 24 reached the server.
    assert_eq!(server.stats()["serving"]["completed"], 24);
    assert_eq!(v["repeat"]["runs"][0]["serving.requests"]["mean"], 8.0);
}

#[test]
fn csv_has_a_row_per_run_that_agrees_with_the_json() {
    let dir = tempdir();
    let csv = dir.path().join("runs.csv");
    let server = SimLlm::start(&[], &[]);
    let v = loadtest_json(&[
        "--requests",
        "6",
        "--concurrency",
        "1,3",
        "--llm-url",
        &server.base_url,
        "--csv",
        csv.to_str().expect("path"),
    ]);
    let text = std::fs::read_to_string(&csv).expect("csv written");
    let lines: Vec<&str> = text.lines().collect();
    let header: Vec<&str> = lines[0].split(',').collect();
    assert_eq!(
        lines.len(),
        3,
        "a header and one row per sweep point: {text}"
    );
    let col = |name: &str| header.iter().position(|h| *h == name).expect(name);
    for (i, line) in lines[1..].iter().enumerate() {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells.len(), header.len(), "{line}");
        let run = &v["runs"][i];
        assert_eq!(cells[col("label")], run["label"].as_str().expect("label"));
        assert_eq!(cells[col("requests")], "6");
        let ttft: f64 = cells[col("ttft_p50_ms")].parse().expect("number");
        let json = run["serving"]["ttft_ms"]["p50"].as_f64().expect("ttft p50");
        assert!(
            (ttft - json).abs() <= 1e-9 * json.abs(),
            "csv {ttft}, json {json}: {text}"
        );
    }
}
