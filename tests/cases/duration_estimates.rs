//! The duration `plan` and `waves` estimate: a stated default with nothing to measure, the
//! model calls of the run directory a plan is in, or the call times a run left beside the
//! plan cache.

use serde_json::Value;

use crate::support::{planwave, read_json, tempdir, write_json};

#[test]
fn plan_and_waves_print_an_estimated_duration() {
    let dir = tempdir();
    // Without a run to measure: the stated default.
    let r = planwave(["plan", "Deep analysis of Tesla"])
        .instant()
        .quiet()
        .run();
    r.expect_ok();
    assert!(
        r.stdout
            .contains(" per wave, a default: no recent model calls to measure)\n")
            && r.stdout.contains("estimated duration: "),
        "{}",
        r.stdout
    );
    // A plan inside a run directory: that run's model calls give the per-wave time.
    let plan = write_json(
        dir.path(),
        "plan.json",
        &crate::support::plan("Audit", &[("1", "One", &[]), ("2", "Two", &["1"])]),
    );
    let out = dir.path().join("out");
    crate::support::run_plan(&plan, &out)
        .quiet()
        .run()
        .expect_ok();
    let w = planwave(["waves"]).arg(out.join("plan.json")).run();
    w.expect_ok();
    let expected = format!(
        " per wave, the median of 2 recent model calls in {})\n",
        out.join("run.json").display()
    );
    assert!(
        w.stdout.contains("estimated duration: ")
            && w.stdout.contains("(2 waves × ")
            && w.stdout.ends_with(&expected),
        "{}",
        w.stdout
    );
}

/// The per-wave figure and its source in an `estimated duration` line.
fn per_wave(stdout: &str) -> &str {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("estimated duration: "))
        .unwrap_or_else(|| panic!("no estimate in:\n{stdout}"));
    line.split_once(" waves × ")
        .map(|(_, rest)| rest)
        .unwrap_or(line)
}

#[test]
fn plan_and_waves_estimate_from_the_call_times_a_run_left_in_the_plan_cache() {
    let dir = tempdir();
    let config = dir.path().join("planwave.toml");
    std::fs::write(&config, "[planner]\nplan_cache = \"cache\"\n").expect("config");
    let fresh = dir.path().join("fresh");
    std::fs::create_dir_all(&fresh).expect("mkdir");
    let plan_goal = || {
        planwave(["plan", "Deep analysis of Tesla"])
            .instant()
            .quiet()
            .opt("--config", &config)
            .opt("--out", fresh.join("plan.json"))
            .run()
    };
    // Nothing recorded yet: the stated default.
    let before = plan_goal();
    before.expect_ok();
    assert_eq!(
        per_wave(&before.stdout),
        "30.0 s per wave, a default: no recent model calls to measure)"
    );

    // A run against the simulator with a set latency records its calls in the cache.
    let plan = write_json(
        dir.path(),
        "two.json",
        &crate::support::plan("Audit", &[("1", "One", &[]), ("2", "Two", &["1"])]),
    );
    planwave(["run"])
        .arg(&plan)
        .out(dir.path().join("run"))
        .quiet()
        .opt("--config", &config)
        .opt("--sim-latency-ms", "250")
        .opt("--sim-sigma", "0")
        .run()
        .expect_ok();
    let times_file = dir.path().join("cache").join("call-times.json");
    let times = read_json(&times_file);
    let mut ms: Vec<f64> = times["models"]["planwave-sim-1"]
        .as_array()
        .expect("the simulator's call times")
        .iter()
        .filter_map(Value::as_f64)
        .collect();
    assert_eq!(ms.len(), 2, "{times}");
    // Each call took at least the simulator's set latency.
    assert!(ms.iter().all(|&d| d >= 250.0), "{times}");
    ms.sort_by(f64::total_cmp);
    let expected = format!(
        "{:.1} s per wave, the median of 2 recent calls of planwave-sim-1 in the plan cache's {})",
        ms[1] / 1000.0,
        times_file.display()
    );

    // A fresh plan (no run directory beside it) now goes by those calls, and says so.
    let after = plan_goal();
    after.expect_ok();
    assert_eq!(per_wave(&after.stdout), expected, "{}", after.stdout);
    // So does `waves`, with the plan cache from planwave.toml.
    let waves = planwave(["waves"])
        .arg(fresh.join("plan.json"))
        .env("PLANWAVE_CONFIG", &config)
        .run();
    waves.expect_ok();
    assert_eq!(per_wave(&waves.stdout), expected, "{}", waves.stdout);
}
