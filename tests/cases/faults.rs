//! Every transport fault at once through `planwave sim-llm serve`: nothing is lost or hangs,
//! every task ends completed or failed with a reason, and the run counts its retries per cause.

use crate::support::{SimLlm, plan, planwave, read_json, tempdir, write_json};

#[test]
fn every_fault_at_once_ends_every_task_and_counts_retries_per_cause() {
    // The first five requests get one fault each (so each cause surely occurs), then every
    // request has a 40 % chance of one of them.
    let server = SimLlm::start(
        &[
            "--seed",
            "7",
            "--fault-script",
            "429,500,reset,stall,malformed",
            "--rate-429",
            "0.08",
            "--rate-500",
            "0.08",
            "--rate-reset",
            "0.08",
            "--rate-stall",
            "0.08",
            "--rate-malformed",
            "0.08",
            "--retry-after-secs",
            "0.05",
            "--stall-ms",
            "600000",
        ],
        &[],
    );
    let dir = tempdir();
    let ids: Vec<String> = (1..=24).map(|i| format!("t{i}")).collect();
    let tasks: Vec<(&str, &str, &[&str])> =
        ids.iter().map(|i| (i.as_str(), "part", &[][..])).collect();
    let plan_path = write_json(dir.path(), "plan.json", &plan("Faulty Co", &tasks));
    // A stalled stream is given up after half a second; backoff stays short.
    let config = dir.path().join("planwave.toml");
    std::fs::write(
        &config,
        "[llm.timeouts]\nidle_secs = 0.5\n[llm.retry]\nmax_retries = 3\nbase_ms = 1\nmax_ms = 20\n",
    )
    .expect("write config");
    let out = dir.path().join("out");
    let res = planwave(["run"])
        .arg(&plan_path)
        .out(&out)
        .opt("--config", &config)
        .opt("--llm-base-url", &server.base_url)
        .opt("--model", "planwave-sim-1")
        .opt("--concurrency", "8")
        .opt("--retries", "2")
        .fast_retries()
        .quiet()
        .run();
    assert!(
        res.code == 0 || res.code == 3,
        "stdout:{}\nstderr:{}",
        res.stdout,
        res.stderr
    );
    let run_json = read_json(&out.join("run.json"));
    let tasks = run_json["tasks"].as_array().expect("tasks");
    assert_eq!(tasks.len(), 24);
    for t in tasks {
        match t["status"].as_str() {
            Some("completed") => {
                let file = t["section_file"].as_str().expect("section_file");
                assert!(out.join(file).is_file(), "{t}");
            }
            Some("failed") => {
                assert!(!t["error"].as_str().unwrap_or("").is_empty(), "{t}")
            }
            other => panic!("task ended {other:?}: {t}"),
        }
    }
    // Each cause was retried at least once, and never more often than the server injected it.
    let stats = server.stats();
    let retried = &run_json["stats"]["transport_retries"];
    for (cause, fault) in [
        ("rate_limited", "ratelimit"),
        ("server_error", "servererror"),
        ("connection", "reset"),
        ("stalled", "stall"),
        ("malformed", "malformed"),
    ] {
        let n = retried[cause].as_u64().unwrap_or(0);
        let injected = stats["faults"][fault].as_u64().unwrap_or(0);
        assert!(
            n >= 1 && n <= injected,
            "{cause}: {n} retries, {injected} injected; {retried} {stats}"
        );
    }
    assert!(
        res.stdout.contains("transport retries: connection "),
        "{}",
        res.stdout
    );
}
