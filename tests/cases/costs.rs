//! What a run costs: the cached part of prompts, as `sim-llm serve --prefix-cache` reports it
//! over real HTTP, read by the real binary (streamed and not) into run.json, events, `show`,
//! a batch's summary and the cost estimate at the cached-input price.

use std::path::Path;

use serde_json::Value;

use crate::support::{SimLlm, events, planwave, read_json, repo_file, tempdir};

const PRICES: &str = r#"
[prices]
batch_discount = 0.5

[prices.models."planwave-sim-1"]
input_per_mtok = 2.0
cached_input_per_mtok = 0.5
output_per_mtok = 8.0
"#;

fn u(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// `run` of the Tesla example against `server`, streamed or not; its run.json.
fn run_tesla(server: &SimLlm, out: &Path, config: &Path, stream: bool) -> Value {
    let mut p = planwave(["run"])
        .arg(repo_file("examples/tesla.json"))
        .out(out)
        .opt("--llm-base-url", &server.base_url)
        .opt("--model", "planwave-sim-1")
        .opt("--config", config)
        .quiet();
    if !stream {
        p = p.arg("--no-stream");
    }
    p.run().expect_ok();
    read_json(&out.join("run.json"))
}

#[test]
fn cached_tokens_reach_run_json_events_show_and_the_cost() {
    let server = SimLlm::start(
        &["--prefix-cache", "--prefix-cache-block-tokens", "16"],
        &[],
    );
    let dir = tempdir();
    let config = dir.path().join("planwave.toml");
    std::fs::write(&config, PRICES).expect("config");
    let first = run_tesla(&server, &dir.path().join("a"), &config, true);
    let second = run_tesla(&server, &dir.path().join("b"), &config, true);
    let third = run_tesla(&server, &dir.path().join("c"), &config, false);
    let mut client_cached = 0;
    for (name, run) in [("a", &first), ("b", &second), ("c", &third)] {
        let usage = &run["stats"]["usage"];
        let calls = run["calls"].as_array().expect("calls");
        let by_calls: u64 = calls.iter().map(|c| u(c, "cached_tokens")).sum();
        let by_tasks: u64 = run["tasks"]
            .as_array()
            .expect("tasks")
            .iter()
            .map(|t| u(&t["usage"], "cached_tokens"))
            .sum();
        // Every call's cached part adds up to the run's, and the tasks' part of it.
        assert_eq!(u(usage, "cached_tokens"), by_calls, "{name}");
        assert!(by_tasks <= by_calls && by_tasks > 0, "{name}: {by_tasks}");
        // The events say the same per call.
        let by_events: u64 = events(&dir.path().join(name))
            .iter()
            .filter(|e| e["type"] == "llm_call")
            .map(|e| u(&e["usage"], "cached_tokens"))
            .sum();
        assert_eq!(by_events, by_calls, "{name}");
        let cost = &run["stats"]["cost"];
        let (total, uncached) = (cost["total"].as_f64(), cost["uncached_total"].as_f64());
        assert!(
            total < uncached,
            "{name}: caching lowers the estimate: {cost}"
        );
        let batch = cost["batch_api_total"].as_f64().expect("batch estimate");
        assert!((batch - total.unwrap_or(0.0) / 2.0).abs() < 1e-12, "{cost}");
        client_cached += by_calls;
    }
    // A repeated run finds its whole prompts cached, streamed or not: far more than the first.
    let cached = |r: &Value| u(&r["stats"]["usage"], "cached_tokens");
    let prompt = |r: &Value| u(&r["stats"]["usage"], "prompt_tokens");
    assert!(
        cached(&second) * 10 > prompt(&second) * 9,
        "{}",
        second["stats"]
    );
    assert!(
        cached(&third) * 10 > prompt(&third) * 9,
        "{}",
        third["stats"]
    );
    assert!(cached(&first) < cached(&second));
    // What the client recorded is what the server reported.
    let stats = server.stats();
    assert_eq!(
        u(&stats["serving"], "cached_tokens"),
        client_cached,
        "{stats}"
    );
    assert_eq!(u(&stats["prefix_cache"], "lookups"), u(&stats, "requests"));

    let shown = planwave(["show"]).arg(dir.path().join("b")).run();
    shown.expect_ok();
    let tokens = shown
        .stdout
        .lines()
        .find(|l| l.starts_with("tokens: "))
        .expect("tokens line");
    assert!(
        tokens.contains(&format!(", {} cached (", cached(&second))),
        "{tokens}"
    );
    assert!(
        shown.stdout.contains("without the prompt cache)"),
        "{}",
        shown.stdout
    );
}

#[test]
fn without_a_prefix_cache_nothing_is_reported_cached() {
    let server = SimLlm::start(&[], &[]);
    let dir = tempdir();
    let config = dir.path().join("planwave.toml");
    std::fs::write(&config, PRICES).expect("config");
    let run = run_tesla(&server, &dir.path().join("a"), &config, true);
    run_tesla(&server, &dir.path().join("b"), &config, true);
    let usage = &run["stats"]["usage"];
    assert!(usage.get("cached_tokens").is_none(), "{usage}");
    let cost = &run["stats"]["cost"];
    assert_eq!(cost["total"], cost["uncached_total"]);
    assert!(server.stats().get("prefix_cache").is_none());
}
