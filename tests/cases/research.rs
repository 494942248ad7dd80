//! `planwave research` and `planwave plan` through the real binary, offline with the
//! in-process simulator (its planner faults drive the repair loop deterministically).

use std::path::Path;

use crate::support::{Planwave, events, planwave, read_json, task, tempdir, write_json};

/// `research GOAL --out OUT` on the instant simulator, quietly.
fn research(goal: &str, out: &Path) -> Planwave {
    planwave(["research", goal]).out(out).instant().quiet()
}

fn sum_calls(run: &serde_json::Value) -> u64 {
    run["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .map(|c| {
            c["prompt_tokens"].as_u64().unwrap_or(0)
                + c["completion_tokens"].as_u64().unwrap_or(0)
                + c["reasoning_tokens"].as_u64().unwrap_or(0)
        })
        .sum()
}

fn usage_total(u: &serde_json::Value) -> u64 {
    ["prompt_tokens", "completion_tokens", "reasoning_tokens"]
        .iter()
        .map(|k| u[k].as_u64().unwrap_or(0))
        .sum()
}

#[test]
fn research_offline_plans_runs_and_integrates_with_the_simulator() {
    let dir = tempdir();
    let out = dir.path().join("tesla");
    let res = research("深度分析特斯拉公司", &out).run();
    res.expect_ok();
    assert!(res.stderr.contains("simulated LLM"), "{}", res.stderr);
    assert!(
        res.stdout
            .starts_with("planned in 1 attempt(s): 5 tasks\ncompleted: 5 completed"),
        "{}",
        res.stdout
    );

    // The run directory contract of `run`, plus planner/.
    for f in [
        "report.md",
        "plan.json",
        "run.json",
        "events.jsonl",
        "planner/attempt-1.txt",
        "planner/attempts.json",
    ] {
        assert!(out.join(f).is_file(), "missing {f}");
    }
    let attempts = read_json(&out.join("planner/attempts.json"));
    assert_eq!(attempts[0]["valid"], true);
    assert_eq!(attempts[0]["raw_file"], "planner/attempt-1.txt");
    let raw = std::fs::read_to_string(out.join("planner/attempt-1.txt")).expect("raw");
    assert!(raw.contains("\"topic\": \"特斯拉公司深度分析\""), "{raw}");

    let run = read_json(&out.join("run.json"));
    assert_eq!(run["status"], "completed");
    assert_eq!(run["tasks"].as_array().map(Vec::len), Some(5));
    let calls = run["calls"].as_array().expect("calls");
    assert_eq!(calls[0]["role"], "planner");
    assert_eq!(calls.iter().filter(|c| c["role"] == "subagent").count(), 5);
    // Then the summary, then the reflective loop's evaluation; correct enough, the loop
    // ends by its own rule without a reflection call.
    let roles: Vec<&str> = calls.iter().filter_map(|c| c["role"].as_str()).collect();
    assert_eq!(roles[roles.len() - 2..], ["integrator", "evaluator"]);
    assert!(!roles.contains(&"reflector"), "{roles:?}");
    assert_eq!(
        usage_total(&run["stats"]["usage"]),
        sum_calls(&run),
        "run usage = sum of calls"
    );
    assert_eq!(task(&run, "5")["context_from"], serde_json::json!([3, 4]));

    let report = std::fs::read_to_string(out.join("report.md")).expect("report");
    assert!(report.starts_with("# 特斯拉公司深度分析\n"), "{report}");
    assert!(report.contains("## 执行摘要") && report.contains("## 综合评估与投资建议"));

    // The plan streams: each task arrives, and the planner's call ends with the answer,
    // before `plan_completed` (with the instant simulator the whole answer comes at once).
    let ev = events(&out);
    assert_eq!(ev[0]["type"], "round_started");
    let received = ev
        .iter()
        .filter(|e| e["type"] == "plan_task_received")
        .count();
    assert_eq!(received, 5);
    let at = |ty: &str| ev.iter().position(|e| e["type"] == ty).expect(ty);
    let planner = ev
        .iter()
        .position(|e| e["type"] == "llm_call" && e["role"] == "planner")
        .expect("planner call");
    assert!(at("run_started") < at("task_started"));
    assert!(planner < at("plan_completed"));
}

#[test]
fn research_repairs_a_truncated_then_cyclic_plan_and_keeps_every_attempt() {
    let dir = tempdir();
    let out = dir.path().join("r");
    let res = research("深度分析特斯拉公司", &out)
        .opt("--sim-planner-faults", "truncated,cycle")
        .run();
    res.expect_ok();
    assert!(
        res.stdout.starts_with("planned in 3 attempt(s)"),
        "{}",
        res.stdout
    );
    let a = read_json(&out.join("planner/attempts.json"));
    assert!(
        a[0]["problems"][0]
            .as_str()
            .expect("problem")
            .starts_with("JSON is truncated at line"),
        "{a}"
    );
    assert_eq!(
        a[1]["problems"],
        serde_json::json!(["cycle: 1 -> 4 -> 5 -> 1"])
    );
    assert_eq!(
        (a[1]["kind"].as_str(), a[2]["valid"].as_bool()),
        (Some("repair"), Some(true))
    );
    let first = std::fs::read_to_string(out.join("planner/attempt-1.txt")).expect("attempt 1");
    assert!(planwave_plan_is_truncated(&first));
    let run = read_json(&out.join("run.json"));
    let planner_calls: Vec<u64> = run["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .filter(|c| c["role"] == "planner")
        .map(|c| c["attempt"].as_u64().unwrap_or(0))
        .collect();
    assert_eq!(planner_calls, vec![1, 2, 3]);
}

fn planwave_plan_is_truncated(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text).is_err() && text.trim_start().starts_with('{')
}

#[test]
fn plan_that_never_becomes_valid_exits_2_listing_every_problem() {
    let dir = tempdir();
    let out = dir.path().join("p.json");
    let res = planwave(["plan", "深度分析特斯拉公司"])
        .out(&out)
        .opt("--sim-planner-faults", "truncated,cycle,unknown-dep")
        .run();
    res.expect_code(2);
    let lines: Vec<&str> = res
        .stderr
        .lines()
        .filter(|l| l.starts_with("planner: "))
        .collect();
    assert_eq!(lines.len(), 4, "{}", res.stderr);
    assert!(
        lines[0].starts_with("planner: attempt 1: JSON is truncated at line"),
        "{}",
        lines[0]
    );
    assert_eq!(lines[1], "planner: attempt 2: cycle: 1 -> 4 -> 5 -> 1");
    assert_eq!(
        lines[2],
        "planner: attempt 3: task 3: dependency 9 does not match any task"
    );
    assert_eq!(lines[3], "planner: no valid plan after 3 attempt(s)");
    assert!(!out.exists(), "no plan file for an invalid plan");
}

#[test]
fn plan_prints_the_plan_and_its_waves_and_writes_a_valid_plan_file() {
    let dir = tempdir();
    let out = dir.path().join("p.json");
    let res = planwave(["plan", "Deep analysis of Tesla"])
        .out(&out)
        .opt("--planner-attempts", "2")
        .opt("--sim-planner-faults", "prose")
        .run();
    res.expect_ok();
    assert!(
        res.stdout.starts_with(
            "plan: 5 tasks, 3 waves, longest chain 3 (1 -> 4 -> 5) after 2 attempt(s)"
        ),
        "{}",
        res.stdout
    );
    assert!(res.stdout.contains("topic: In-depth analysis of Tesla"));
    assert!(
        res.stdout
            .contains("  task 5: Overall assessment and investment view (after: 3, 4)")
    );
    assert!(
        res.stdout
            .contains("wave 0: 1, 2, 3\nwave 1: 4\nwave 2: 5\ncritical path: 1 -> 4 -> 5\n")
    );
    assert!(
        res.stderr
            .contains("planning attempt 1 (plan): 1 problem(s): no JSON object found"),
        "{}",
        res.stderr
    );
    let v = planwave(["validate"]).arg(&out).run();
    v.expect_ok();
    assert_eq!(
        v.stdout.trim(),
        "valid: 5 tasks, 3 waves, longest chain 3 (1 -> 4 -> 5)"
    );

    let json = planwave(["plan", "Deep analysis of Tesla"])
        .arg("--json")
        .quiet()
        .run();
    let plan: serde_json::Value = serde_json::from_str(&json.stdout).expect("plan JSON on stdout");
    assert_eq!(plan["tasks"].as_array().map(Vec::len), Some(5));
}

#[test]
fn lang_flag_overrides_the_goals_language() {
    let dir = tempdir();
    let out = dir.path().join("en");
    let res = research("深度分析特斯拉公司", &out)
        .opt("--lang", "en")
        .run();
    res.expect_ok();
    let report = std::fs::read_to_string(out.join("report.md")).expect("report");
    assert!(report.contains("## Executive summary"), "{report}");
    let s1 = std::fs::read_to_string(out.join("sections/1.md")).expect("section");
    assert!(s1.contains("This section (task 1)"), "{s1}");
}

#[test]
fn context_budget_cuts_prerequisites_and_records_the_cut() {
    let dir = tempdir();
    let out = dir.path().join("cut");
    let res = research("深度分析特斯拉公司", &out)
        .opt("--context-budget", "300")
        .run();
    res.expect_ok();
    let run = read_json(&out.join("run.json"));
    let cut = task(&run, "4")["context_cut"]
        .as_array()
        .expect("task 4 was cut")
        .clone();
    let from: Vec<String> = cut.iter().map(|c| c["from"].to_string()).collect();
    assert_eq!(from, vec!["1", "2"]);
    for c in &cut {
        assert!(
            c["kept_tokens"].as_u64() < c["original_tokens"].as_u64(),
            "{c}"
        );
        assert!(
            c["kept_tokens"].as_u64().unwrap_or(u64::MAX) <= 150,
            "share of 300 between two: {c}"
        );
    }
    assert!(
        task(&run, "1").get("context_cut").is_none(),
        "no prerequisites, nothing cut"
    );
}

#[test]
fn prices_in_the_config_give_a_cost_estimate() {
    let dir = tempdir();
    let cfg = dir.path().join("planwave.toml");
    std::fs::write(
        &cfg,
        "[llm]\nprovider = \"sim\"\n[prices]\ncurrency = \"USD\"\n[prices.models.\"planwave-sim-1\"]\ninput_per_mtok = 1.0\noutput_per_mtok = 2.0\n",
    )
    .expect("write config");
    let out = dir.path().join("cost");
    let res = research("Deep analysis of Tesla", &out)
        .opt("--config", &cfg)
        .run();
    res.expect_ok();
    let run = read_json(&out.join("run.json"));
    let u = &run["stats"]["usage"];
    let expect = (u["prompt_tokens"].as_f64().unwrap_or(0.0)
        + 2.0
            * (u["completion_tokens"].as_f64().unwrap_or(0.0)
                + u["reasoning_tokens"].as_f64().unwrap_or(0.0)))
        / 1e6;
    let total = run["stats"]["cost"]["total"].as_f64().expect("cost");
    assert!(
        expect > 0.0 && (total - expect).abs() < 1e-12,
        "{total} vs {expect}"
    );
    assert!(res.stdout.contains("estimated cost: "), "{}", res.stdout);
}

#[test]
fn bad_config_and_empty_goal_are_invalid_input() {
    let dir = tempdir();
    let cfg = write_json(dir.path(), "x.toml", &serde_json::json!("not toml"));
    let res = planwave(["plan", "goal"]).opt("--config", &cfg).run();
    res.expect_code(2);
    assert!(
        res.stderr.starts_with("config: config file "),
        "{}",
        res.stderr
    );
    let res = planwave(["plan", "  "]).run();
    res.expect_code(2);
    assert_eq!(res.stderr.lines().last(), Some("goal: the goal is empty"));
    let res = planwave(["plan", "goal"]).opt("--llm", "openai").run();
    res.expect_code(2);
    assert!(res.stderr.contains("no model configured"), "{}", res.stderr);
}
