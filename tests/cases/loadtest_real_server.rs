//! `planwave loadtest` against a real server (issue 51): llama.cpp serving SmolLM2-135M
//! (tests/support/llama.rs), through the real binary. What is asserted is what the server
//! reports of its prefix cache and its own clock, never latency figures: distinct synthetic
//! prompts are not served from the cache (only the chat template's tokens are, a few of
//! every prompt's 175), a `--shared-prefix` is, a dataset of one repeated prompt warns, two
//! sweep points do not share a cache, and the server's per-request timings are recorded and
//! set against the client's. Requests are few and short: the CPU is shared.
//!
//! Each test gives its own `--seed`: the server (and its cache) is shared by the test binary.

use std::path::Path;

use serde_json::Value;

use crate::support::llama::{self, Llama};
use crate::support::{Output, planwave, tempdir};

/// `planwave loadtest` of `requests` synthetic-or-given requests, one at a time (llama.cpp
/// puts a prompt on the slot whose cached prompt is most like it), 4 output tokens each.
fn loadtest(server: &Llama, seed: &str, args: &[&str]) -> Output {
    planwave(["loadtest"])
        .opt("--llm-url", &server.base_url)
        .opt("--model", "smollm2")
        .opt("--output-tokens", "4,0")
        .opt("--seed", seed)
        .args(args)
        .run()
}

fn json(out: &Output) -> Value {
    out.expect_ok();
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

/// The share of prompt tokens the server reported cached, per run.
fn cached_shares(doc: &Value) -> Vec<f64> {
    doc["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| {
            r["serving"]["cache"]["cached_share"]
                .as_f64()
                .unwrap_or_else(|| panic!("no cached share: {r:#}"))
        })
        .collect()
}

#[test]
fn distinct_prompts_are_not_served_from_the_cache_and_the_server_clock_is_the_reference() {
    let Some(server) = llama::shared() else {
        return;
    };
    let args = [
        "--requests",
        "3",
        "--concurrency",
        "1",
        "--input-tokens",
        "150,0",
        "--json",
    ];
    let out = loadtest(server, "51001", &args);
    let doc = json(&out);
    let share = cached_shares(&doc)[0];
    assert!(share < 0.2, "{share}: {:#}", doc["runs"][0]["serving"]);
    assert!(!out.stderr.contains("warning"), "{}", out.stderr);
    // llama.cpp's own timings, per request, against the client's.
    let clock = &doc["runs"][0]["serving"]["server_clock"];
    assert_eq!(clock["requests"], 3, "{clock:#}");
    assert!(
        clock["client_minus_server_ttft_ms"]["p50"].is_number(),
        "{clock:#}"
    );
    assert!(
        clock["client_minus_server_itl_ms"]["p50"].is_number(),
        "{clock:#}"
    );
    // The model's line is said once.
    assert_eq!(out.stderr.matches(" via ").count(), 1, "{}", out.stderr);
}

#[test]
fn the_server_clock_is_printed_and_every_request_exported_with_its_timings() {
    let Some(server) = llama::shared() else {
        return;
    };
    let dir = tempdir();
    let per_request = dir.path().join("requests.jsonl");
    let out = loadtest(
        server,
        "51002",
        &[
            "--requests",
            "2",
            "--concurrency",
            "1",
            "--input-tokens",
            "150,0",
            "--requests-out",
            per_request.to_str().expect("utf-8"),
        ],
    );
    out.expect_ok();
    for row in [
        "client - server TTFT p50",
        "client - server ITL p50",
        "server prompt time",
    ] {
        assert!(out.stdout.contains(row), "{row}: {}", out.stdout);
    }
    let rows = read_rows(&per_request);
    assert_eq!(rows.len(), 2, "{rows:#?}");
    for r in &rows {
        assert_eq!(r["status"], "ok", "{r:#}");
        assert!(r["prompt_tokens"].as_u64() > Some(150), "{r:#}");
        assert!(r["server"]["prompt_ms"].is_number(), "{r:#}");
        assert_eq!(r["server"]["predicted_n"], r["output_tokens"], "{r:#}");
        assert_eq!(r["server"]["cache_n"], r["cached_tokens"], "{r:#}");
    }
}

fn read_rows(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("the per-request file")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn a_shared_prefix_is_served_from_the_cache_without_a_warning() {
    let Some(server) = llama::shared() else {
        return;
    };
    let out = loadtest(
        server,
        "51003",
        &[
            "--requests",
            "3",
            "--concurrency",
            "1",
            "--input-tokens",
            "150,0",
            "--shared-prefix",
            "120",
            "--json",
        ],
    );
    let doc = json(&out);
    // The first request fills the cache; the two after it read 120 and more of 175.
    let share = cached_shares(&doc)[0];
    assert!(share > 0.4, "{share}: {:#}", doc["runs"][0]["serving"]);
    assert!(!out.stderr.contains("warning"), "{}", out.stderr);
}

#[test]
fn prompts_that_repeat_are_warned_about_with_their_likely_cause() {
    let Some(server) = llama::shared() else {
        return;
    };
    let dir = tempdir();
    let dataset = dir.path().join("one.jsonl");
    let prompt = "Explain in one word why the sky looks blue to people on a clear day. ".repeat(8);
    let line = serde_json::json!({ "prompt": prompt }).to_string();
    std::fs::write(&dataset, format!("{line}\n")).expect("dataset");
    let out = loadtest(
        server,
        "51004",
        &[
            "--requests",
            "3",
            "--concurrency",
            "1",
            "--dataset",
            dataset.to_str().expect("utf-8"),
            "--json",
        ],
    );
    let doc = json(&out);
    assert!(
        cached_shares(&doc)[0] > 0.2,
        "{:#}",
        doc["runs"][0]["serving"]
    );
    assert!(
        out.stderr.contains("warning") && out.stderr.contains("--dataset"),
        "{}",
        out.stderr
    );
    let warning = &doc["runs"][0]["serving"]["cache"]["warning"];
    assert!(
        warning.as_str().is_some_and(|w| w.contains("prefix cache")),
        "{warning}"
    );
}

#[test]
fn two_sweep_points_do_not_share_a_cache() {
    let Some(server) = llama::shared() else {
        return;
    };
    let out = loadtest(
        server,
        "51005",
        &[
            "--requests",
            "2",
            "--concurrency",
            "1,2",
            "--input-tokens",
            "150,0",
            "--json",
        ],
    );
    let doc = json(&out);
    let shares = cached_shares(&doc);
    assert_eq!(shares.len(), 2, "{doc:#}");
    // Without a fresh draw per point the second point's prompts were the first's.
    assert!(shares.iter().all(|s| *s < 0.2), "{shares:?}");
}

/// Offline, on the in-process simulator: what does not depend on a model.
#[test]
fn requests_are_exported_one_row_each_and_a_shared_prefix_needs_synthetic_prompts() {
    let dir = tempdir();
    let rows_file = dir.path().join("requests.csv");
    let out = planwave(["loadtest", "--requests", "5", "--latency", "fixed:1"])
        .opt("--input-tokens", "20,0")
        .opt("--requests-out", &rows_file)
        .run();
    out.expect_ok();
    let csv = std::fs::read_to_string(&rows_file).expect("the per-request file");
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 6, "a header and a row per request: {csv}");
    assert!(lines[0].starts_with("run,task,send_ms,ttft_ms"), "{csv}");
    assert!(lines[1..].iter().all(|l| l.contains(",ok,")), "{csv}");
    let out = planwave(["loadtest", "--requests", "2", "--shared-prefix", "10"]).run();
    out.expect_code(2);
    assert!(out.stderr.contains("--input-tokens"), "{}", out.stderr);
    let out = planwave(["loadtest", "--requests", "2", "--input-tokens", "20"])
        .opt("--shared-prefix", "10,2")
        .run();
    out.expect_code(2);
    assert!(out.stderr.contains("SHARE"), "{}", out.stderr);
}
