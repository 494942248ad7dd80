//! `planwave loadtest` through the real binary: the figures are present and consistent,
//! workloads replay from a latency file, and the same workload runs over real HTTP against
//! `planwave sim-llm serve`. Sizes are small and no figure is compared with a wall-clock limit.

use serde_json::Value;

use crate::support::{Planwave, SimLlm, plan, planwave, read_json, tempdir, write_json};

/// Runs `loadtest --json` and parses what it printed.
fn loadtest_json(loadtest: Planwave) -> Value {
    let out = loadtest.arg("--json").run();
    out.expect_ok();
    serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("loadtest --json printed no JSON ({e}): {}", out.stdout))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// The invariants every completed run's figures must satisfy.
fn assert_consistent(r: &Value, tasks: u64) {
    assert_eq!(r["tasks"], tasks, "{r}");
    assert_eq!(r["completed"], tasks, "{r}");
    assert_eq!(
        (r["failed"].as_u64(), r["blocked"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(
        (r["errors"].as_u64(), r["retries"].as_u64()),
        (Some(0), Some(0))
    );
    // One call per task plus the integrator's executive summary, when it was sent (with an
    // endpoint only on --integrator; otherwise answered locally, and counted apart).
    assert_eq!(
        r["integrator_calls"].as_u64().unwrap_or(0)
            + r["integrator_answered_locally"].as_u64().unwrap_or(0),
        1,
        "{r}"
    );
    assert_eq!(
        r["model_calls"],
        tasks + r["integrator_calls"].as_u64().unwrap_or(0),
        "{r}"
    );
    let makespan = f(&r["makespan_ms"]);
    assert!(f(&r["total_ms"]) >= makespan, "{r}");
    // No schedule beats its longest chain: the simulator never answers early.
    assert!(makespan >= f(&r["critical_path_bound_ms"]), "{r}");
    assert!(f(&r["critical_path_ratio"]) >= 1.0, "{r}");
    assert!(f(&r["tasks_per_sec"]) > 0.0 && f(&r["model_calls_per_sec"]) > 0.0);
    let d = &r["dispatch_ms"];
    if d["samples"].as_u64().expect("samples") > 0 {
        assert!(
            f(&d["p50"]) >= 0.0 && f(&d["p50"]) <= f(&d["p99"]) && f(&d["p99"]) <= f(&d["max"])
        );
    } else {
        // Only tasks with prerequisites have a dispatch latency.
        assert!(d["p50"].is_null() && d["max"].is_null(), "{r}");
    }
    let in_flight = r["max_in_flight"].as_u64().expect("max_in_flight");
    assert!((1..=tasks).contains(&in_flight), "{r}");
    if cfg!(target_os = "linux") {
        assert!(r["peak_rss_bytes"].as_u64().expect("peak rss") > 0, "{r}");
    }
}

#[test]
fn loadtest_json_figures_are_consistent_for_both_schedules() {
    let v = loadtest_json(
        planwave(["loadtest"])
            .opt("--shape", "random")
            .opt("--tasks", "60")
            .opt("--fan-in", "3")
            .opt("--latency", "fixed:2")
            .opt("--schedule", "dataflow,waves"),
    );
    let waves = v["workload"]["waves"].as_u64().expect("waves");
    assert_eq!(v["workload"]["tasks"], 60);
    assert!(waves > 1, "{v}");
    let runs = v["runs"].as_array().expect("runs");
    assert_eq!(
        runs.iter()
            .map(|r| r["schedule"].clone())
            .collect::<Vec<_>>(),
        vec!["dataflow", "waves"]
    );
    for r in runs {
        assert_consistent(r, 60);
        assert!(r["dispatch_ms"]["samples"].as_u64() > Some(0), "{r}");
        assert_eq!(r["bound_source"], "planned");
        // Equal latencies: the longest chain is one task per wave, and so is the barrier.
        assert_eq!(f(&r["critical_path_bound_ms"]), 2.0 * waves as f64, "{r}");
        assert_eq!(f(&r["wave_barrier_bound_ms"]), 2.0 * waves as f64, "{r}");
    }
    // The barrier schedule cannot beat the barrier bound.
    assert!(f(&runs[1]["wave_barrier_ratio"]) >= 1.0, "{}", runs[1]);
}

/// 1 -> 3 and 2 -> 4 with latencies 5, 30, 30, 5 ms (plan file, latency file): wave 1 is
/// {1, 2}, wave 2 is {3, 4}. Dataflow needs max(5+30, 30+5) = 35 ms; the barrier needs
/// max(5, 30) + max(30, 5) = 60 ms.
fn two_chains(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let p = write_json(
        dir,
        "two.json",
        &plan(
            "Two chains",
            &[
                ("1", "one", &[]),
                ("2", "two", &[]),
                ("3", "three", &["1"]),
                ("4", "four", &["2"]),
            ],
        ),
    );
    let lat = write_json(
        dir,
        "lat.json",
        &serde_json::json!({"1": 5, "2": 30, "3": 30, "4": 5}),
    );
    (p, lat)
}

#[test]
fn loadtest_waves_schedule_pays_for_the_slowest_task_of_each_wave() {
    let dir = tempdir();
    let (p, lat) = two_chains(dir.path());
    let v = loadtest_json(
        planwave(["loadtest"])
            .opt("--plan", &p)
            .opt("--latency-file", &lat)
            .opt("--schedule", "waves,dataflow"),
    );
    for r in v["runs"].as_array().expect("runs") {
        assert_consistent(r, 4);
        assert_eq!(f(&r["critical_path_bound_ms"]), 35.0);
        assert_eq!(f(&r["wave_barrier_bound_ms"]), 60.0);
    }
    let waves = &v["runs"][0];
    assert_eq!(waves["schedule"], "waves");
    assert!(f(&waves["makespan_ms"]) >= 60.0, "{waves}");
    assert!(f(&waves["wave_barrier_ratio"]) >= 1.0, "{waves}");
}

#[test]
fn loadtest_timeline_has_every_task_of_every_run_and_agrees_with_the_figures() {
    let dir = tempdir();
    let (p, lat) = two_chains(dir.path());
    let timeline = dir.path().join("timeline.jsonl");
    let v = loadtest_json(
        planwave(["loadtest"])
            .opt("--plan", &p)
            .opt("--latency-file", &lat)
            .opt("--schedule", "dataflow,waves")
            .opt("--timeline", &timeline),
    );
    let text = std::fs::read_to_string(&timeline).expect("timeline written");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(lines.len(), 2 * 5, "a header and 4 tasks per run:\n{text}");
    for (run, chunk) in v["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .zip(lines.chunks(5))
    {
        let (header, tasks) = (&chunk[0], &chunk[1..]);
        assert_eq!(header["schedule"], run["schedule"]);
        if cfg!(target_os = "linux") {
            assert!(header["epoch_monotonic_ns"].as_u64() > Some(0), "{header}");
        }
        let by_id = |id: &str| {
            tasks
                .iter()
                .find(|t| t["task"] == id)
                .unwrap_or_else(|| panic!("task {id} in {text}"))
        };
        for (id, dep, ms) in [("3", "1", 30.0), ("4", "2", 5.0)] {
            let (t, d) = (by_id(id), by_id(dep));
            assert_eq!(t["last_prerequisite"], dep, "{t}");
            assert_eq!(t["ready_ms"], d["call_end_ms"], "{t}");
            assert!(f(&t["call_start_ms"]) >= f(&t["ready_ms"]), "{t}");
            let took = f(&t["call_end_ms"]) - f(&t["call_start_ms"]);
            assert!(took >= ms, "the simulator never answers early: {t}");
            let gap = f(&t["call_start_ms"]) - f(&t["ready_ms"]);
            assert!((f(&t["dispatch_ms"]) - gap).abs() < 1e-6, "{t}");
        }
        // The figures come from the same timestamps as the timeline.
        let slowest = tasks
            .iter()
            .filter_map(|t| t["dispatch_ms"].as_f64())
            .fold(0.0, f64::max);
        assert!(
            (slowest - f(&run["dispatch_ms"]["max"])).abs() < 1e-6,
            "{run}"
        );
        if run["schedule"] == "waves" {
            // The barrier: task 3 needs only task 1, but waits for all of wave 1 (task 2).
            assert!(f(&by_id("3")["call_start_ms"]) >= f(&by_id("2")["call_end_ms"]));
        }
    }
}

#[test]
fn loadtest_latency_file_replays_the_saved_workload() {
    let dir = tempdir();
    let saved = dir.path().join("latencies.json");
    let first = loadtest_json(
        planwave(["loadtest"])
            .opt("--shape", "layered")
            .opt("--tasks", "40")
            .opt("--width", "8")
            .opt("--latency", "lognormal:3:1.0")
            .opt("--seed", "7")
            .opt("--save-latencies", &saved),
    );
    let map = read_json(&saved);
    assert_eq!(map.as_object().expect("object").len(), 40);
    // Same plan, other seed for latency draws: only the file decides latency now.
    let replay = loadtest_json(
        planwave(["loadtest"])
            .opt("--shape", "layered")
            .opt("--tasks", "40")
            .opt("--width", "8")
            .opt("--seed", "7")
            .opt("--latency", "fixed:0")
            .opt("--latency-file", &saved),
    );
    assert_consistent(&first["runs"][0], 40);
    assert_consistent(&replay["runs"][0], 40);
    assert_eq!(
        first["runs"][0]["critical_path_bound_ms"],
        replay["runs"][0]["critical_path_bound_ms"]
    );
    assert_eq!(
        replay["workload"]["latency_file"],
        saved.to_str().expect("path")
    );
}

#[test]
fn loadtest_over_http_against_sim_llm_serve() {
    let dir = tempdir();
    let lat: serde_json::Map<String, Value> = (1..=30)
        .map(|k| (k.to_string(), Value::from(1 + k % 4)))
        .collect();
    let lat = write_json(dir.path(), "lat.json", &Value::Object(lat));
    let server = SimLlm::start(&["--latency-file", lat.to_str().expect("path")], &[]);
    let common = || {
        planwave(["loadtest"])
            .opt("--shape", "random")
            .opt("--tasks", "30")
            .opt("--llm-url", &server.base_url)
    };
    let v = loadtest_json(common().opt("--latency-file", &lat));
    let r = &v["runs"][0];
    assert_consistent(r, 30);
    assert_eq!(r["bound_source"], "planned");
    assert_eq!(v["workload"]["model"], server.base_url.as_str());

    // Without the file the bound comes from the calls' measured durations.
    let v = loadtest_json(common().arg("--no-stream"));
    let r = &v["runs"][0];
    assert_consistent(r, 30);
    assert_eq!(r["bound_source"], "observed");

    let stats = server.stats();
    assert_eq!(stats["roles"]["subagent"], 60, "{stats}");
    assert!(
        stats["roles"].get("integrator").is_none(),
        "no executive summary sent unasked: {stats}"
    );
}

#[test]
fn loadtest_rejects_bad_workloads_with_exit_2() {
    let dir = tempdir();
    let lat = write_json(
        dir.path(),
        "lat.json",
        &serde_json::json!({"1": 1, "99": 2}),
    );
    let out = planwave(["loadtest"])
        .opt("--tasks", "5")
        .opt("--latency-file", &lat)
        .run();
    out.expect_code(2);
    assert!(
        out.stderr
            .contains(&format!("{}: task 99 is not in the plan", lat.display())),
        "{}",
        out.stderr
    );

    let out = planwave(["loadtest"]).opt("--latency", "uniform:3").run();
    out.expect_code(2);
    assert!(out.stderr.contains("unknown model"), "{}", out.stderr);

    let out = planwave(["loadtest"])
        .opt("--llm-url", "http://127.0.0.1:9/v1")
        .opt("--latency", "fixed:1")
        .run();
    out.expect_code(2);
    assert!(
        out.stderr.contains("the server decides latency"),
        "{}",
        out.stderr
    );
}

#[test]
fn loadtest_prints_a_table_by_default() {
    let out = planwave(["loadtest"])
        .opt("--shape", "chain")
        .opt("--tasks", "5")
        .opt("--latency", "fixed:1")
        .run();
    out.expect_ok();
    assert!(
        out.stdout
            .starts_with("workload: chain (seed 0), 5 tasks in 5 waves, latency fixed:1"),
        "{}",
        out.stdout
    );
    for row in [
        "critical-path bound       5.0 ms (planned)",
        "makespan / critical path",
        "dispatch p99",
        "model calls/s",
        "errors                    0",
    ] {
        assert!(out.stdout.contains(row), "{row:?} missing:\n{}", out.stdout);
    }
}

#[test]
fn loadtest_journal_records_every_task_durably() {
    let dir = tempdir();
    let journal = dir.path().join("journal.jsonl");
    let v = loadtest_json(
        planwave(["loadtest"])
            .opt("--shape", "wide")
            .opt("--tasks", "25")
            .opt("--latency", "fixed:0")
            .opt("--journal", &journal),
    );
    assert_eq!(v["runs"][0]["completed"], 25);
    let completed = std::fs::read_to_string(&journal)
        .expect("journal written")
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("JSON line"))
        .filter(|e| e["type"] == "task_completed")
        .count();
    assert_eq!(completed, 25);
}

#[test]
fn summary_prompt_of_thousands_of_sections_stays_bounded_over_http() {
    // Unbounded, 4,000 sections made a summary request of several MB, which the server
    // refused (413) and the run reported as an error.
    let server = SimLlm::start(&[], &[]);
    let v = loadtest_json(
        planwave(["loadtest"])
            .opt("--shape", "wide")
            .opt("--tasks", "4000")
            .opt("--llm-url", server.base_url.as_str())
            .arg("--no-stream")
            .arg("--integrator"),
    );
    assert_consistent(&v["runs"][0], 4000);
    let stats = server.stats();
    assert_eq!(stats["roles"]["integrator"], 1, "{stats}");
}
