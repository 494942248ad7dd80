//! The reflective loop through the real binary: each stop condition and each recovery
//! strategy, driven deterministically by the simulator's per-round script, and the repair of
//! invalid evaluator and reflector answers.

use std::path::Path;

use crate::support::{Planwave, SimLlm, planwave, read_json, tempdir};

/// `research` of one English goal on the instant simulator, quietly.
fn research(out: &Path) -> Planwave {
    planwave(["research", "Deep analysis of Tesla"])
        .out(out)
        .instant()
        .quiet()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `(round, correctness, overall)` of every round in `run.json`.
fn rounds(run: &serde_json::Value) -> Vec<(u64, f64, f64)> {
    run["rounds"]
        .as_array()
        .expect("rounds")
        .iter()
        .map(|r| {
            (
                r["round"].as_u64().unwrap_or(0),
                r["correctness"].as_f64().unwrap_or(-1.0),
                r["overall_score"].as_f64().unwrap_or(-1.0),
            )
        })
        .collect()
}

fn ids(plan: &serde_json::Value) -> Vec<String> {
    plan["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| t["id"].to_string())
        .collect()
}

/// Subagent calls per task id in a round's `run.json`.
pub(crate) fn subagent_calls(run: &serde_json::Value, id: &str) -> usize {
    run["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .filter(|c| c["role"] == "subagent" && c["task"].to_string().trim_matches('"') == id)
        .count()
}

#[test]
fn correctness_of_95_stops_the_loop_and_the_reflection_reaches_the_next_round() {
    let dir = tempdir();
    let out = dir.path().join("r");
    let res = research(&out).opt("--sim-scores", "40,70,96").run();
    res.expect_ok();
    assert!(
        res.stdout.contains("stopped: correctness; best round 3"),
        "{}",
        res.stdout
    );
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["loop_stop_reason"], "correctness");
    assert_eq!(run["best_round"], 3);
    assert_eq!(
        rounds(&run),
        [(1, 40.0, 30.0), (2, 70.0, 60.0), (3, 96.0, 86.0)]
    );
    // The round that reached the threshold is not reflected on: the loop's rule ends it.
    assert!(!out.join("rounds/3/reflection.json").exists());
    for k in 1..=3 {
        let r = out.join("rounds").join(k.to_string());
        for f in ["plan.json", "run.json", "report.md", "evaluation.json"] {
            assert!(r.join(f).is_file(), "round {k} lacks {f}");
        }
        if k == 3 {
            continue;
        }
        let reflection = read_json(&r.join("reflection.json"));
        assert_eq!(
            reflection["reflection"]["reflection_id"],
            format!("sim-refl-{k}")
        );
    }
    // Round 1's reflection summary is what round 2's planner was told.
    let summary = read_json(&out.join("rounds/1/reflection-summary.json"));
    let summary = summary["summary"].as_str().expect("summary");
    assert!(
        summary.starts_with("Previous evaluation:\n- overall 30, correctness 40"),
        "{summary}"
    );
    // A round's run.json counts every call it made, the loop's own included.
    let round1 = read_json(&out.join("rounds/1/run.json"));
    let roles: Vec<&str> = round1["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .filter_map(|c| c["role"].as_str())
        .collect();
    assert_eq!(
        roles[roles.len() - 3..],
        ["integrator", "evaluator", "reflector"]
    );
    let sum: u64 = round1["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .map(|c| {
            c["prompt_tokens"].as_u64().unwrap_or(0) + c["completion_tokens"].as_u64().unwrap_or(0)
        })
        .sum();
    let u = &round1["stats"]["usage"];
    assert_eq!(
        u["prompt_tokens"].as_u64().unwrap_or(0) + u["completion_tokens"].as_u64().unwrap_or(0),
        sum
    );
    let reflection = read_json(&out.join("rounds/1/reflection.json"));
    assert_eq!(reflection["reflection"]["should_replan"], true);
    // The final report is the best round's, and says which round wrote each section.
    let report = read(&out.join("report.md"));
    assert_eq!(report, read(&out.join("rounds/3/report.md")));
    assert_eq!(
        report.matches("*(Section written in round 3)*").count(),
        5,
        "{report}"
    );
    assert_eq!(run["tasks"][0]["round"]["round"], 3);
}

#[test]
fn a_successful_round_over_the_threshold_stops_the_loop() {
    let dir = tempdir();
    let out = dir.path().join("r");
    let res = research(&out)
        .opt("--sim-scores", "50,90")
        .opt("--sim-overall", "50,85")
        .run();
    res.expect_ok();
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["loop_stop_reason"], "success_threshold");
    assert_eq!(rounds(&run), [(1, 50.0, 50.0), (2, 90.0, 85.0)]);
    assert_eq!(run["rounds"][1]["is_successful"], true);

    // The threshold comes from planwave.toml: at 90, 85 is not enough.
    let cfg = dir.path().join("planwave.toml");
    std::fs::write(
        &cfg,
        "[orchestrator]\nsuccess_threshold = 90.0\nmax_reflection_rounds = 3\n",
    )
    .expect("config");
    let out2 = dir.path().join("r2");
    let res = research(&out2)
        .opt("--sim-scores", "50,90")
        .opt("--sim-overall", "50,85")
        .opt("--config", &cfg)
        .run();
    res.expect_ok();
    let run = read_json(&out2.join("run.json"));
    assert_eq!(run["loop_stop_reason"], "max_rounds");
    assert_eq!(rounds(&run).len(), 3);
}

#[test]
fn a_reflection_without_replan_stops_the_loop() {
    let dir = tempdir();
    let out = dir.path().join("r");
    let res = research(&out)
        .opt("--sim-scores", "50")
        .opt("--sim-replan", "true,false")
        .run();
    res.expect_ok();
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["loop_stop_reason"], "no_replan");
    assert_eq!(rounds(&run).len(), 2);
    assert_eq!(run["rounds"][0]["should_replan"], true);
    assert_eq!(run["rounds"][1]["should_replan"], false);
    // Equal scores: the later round, which had the reflection, is the best.
    assert_eq!(run["best_round"], 2);
}

#[test]
fn the_round_limit_stops_the_loop_and_the_best_round_need_not_be_the_last() {
    let dir = tempdir();
    let out = dir.path().join("r");
    let res = research(&out)
        .opt("--sim-scores", "60,50")
        .opt("--sim-overall", "70,40")
        .opt("--max-rounds", "2")
        .run();
    res.expect_ok();
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["loop_stop_reason"], "max_rounds");
    assert_eq!(run["best_round"], 1);
    assert!(
        res.stdout.contains("stopped: max_rounds; best round 1"),
        "{}",
        res.stdout
    );
    assert_eq!(
        read(&out.join("report.md")),
        read(&out.join("rounds/1/report.md"))
    );
    assert_eq!(
        read(&out.join("plan.json")),
        read(&out.join("rounds/1/plan.json"))
    );
    // The last round is reflected on too, though no round follows to be told.
    assert!(out.join("rounds/2/reflection.json").is_file());

    // Research again in the same directory: refused, it holds the earlier research...
    let again = research(&out).opt("--sim-scores", "97").run();
    again.expect_code(2);
    assert!(
        again.stderr.contains("--force replaces it"),
        "{}",
        again.stderr
    );
    // ...unless replaced: one round now, and no stale round 2 left.
    let res = research(&out)
        .opt("--sim-scores", "97")
        .arg("--force")
        .run();
    res.expect_ok();
    assert!(out.join("rounds/1").is_dir() && !out.join("rounds/2").exists());
    let run = read_json(&out.join("run.json"));
    assert_eq!(rounds(&run).len(), 1);
    let journal = read(&out.join("rounds/1/events.jsonl"));
    assert_eq!(journal.matches("\"type\":\"run_started\"").count(), 1);
}

#[test]
fn consecutive_rounds_with_failed_tasks_stop_the_loop() {
    let dir = tempdir();
    let cfg = dir.path().join("planwave.toml");
    // No recovery inside a round, so the failure stands and counts.
    std::fs::write(
        &cfg,
        "[orchestrator]\nmax_consecutive_failures = 2\n[reflection]\nmax_step_retries = 0\nmax_task_replanning_attempts = 0\n",
    )
    .expect("config");
    let out = dir.path().join("r");
    let res = research(&out)
        .opt("--sim-fail", "2")
        .opt("--config", &cfg)
        .run();
    res.expect_code(3);
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["loop_stop_reason"], "consecutive_failures");
    // 2 failed, 4 and 5 blocked: 2 of 5 completed, correctness 60 + 36 * 0.4.
    assert_eq!(rounds(&run), [(1, 74.0, 64.0), (2, 74.0, 64.0)]);
    assert_eq!(run["rounds"][0]["passes"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        run["rounds"][0]["passes"][0]["failed_tasks"][0]["failure_kind"],
        "transient"
    );
    assert_eq!(run["status"], "partial");
}

#[test]
fn invalid_evaluations_and_reflections_are_repaired() {
    let dir = tempdir();
    let out = dir.path().join("r");
    let res = research(&out)
        .opt("--sim-scores", "50,96")
        .opt("--sim-invalid", "evaluator,reflector")
        .run();
    res.expect_ok();
    let eval = read_json(&out.join("rounds/1/evaluation.json"));
    let attempts = eval["attempts"].as_array().expect("attempts");
    assert_eq!(attempts.len(), 2);
    assert_eq!(attempts[0]["valid"], false);
    assert_eq!(
        attempts[0]["problems"],
        serde_json::json!([
            "overall_score: 150 is not between 0 and 100",
            "is_successful: \"maybe\" is not true or false",
            "dimensions.correctness: \"high\" is not a score from 0 to 100",
            "dimensions.efficiency: missing; expected a score from 0 to 100",
            "dimensions.reliability: missing; expected a score from 0 to 100",
        ])
    );
    assert_eq!(
        (attempts[1]["kind"].clone(), attempts[1]["valid"].clone()),
        ("repair".into(), true.into())
    );
    assert_eq!(eval["evaluation"]["dimensions"]["correctness"], 50.0);
    let refl = read_json(&out.join("rounds/1/reflection.json"));
    let attempts = refl["attempts"].as_array().expect("attempts");
    assert_eq!(attempts.len(), 2);
    assert_eq!(
        attempts[0]["problems"],
        serde_json::json!([
            "optimization_suggestions[0].aspect: expected a string, got a number",
            "should_replan: \"perhaps\" is not true or false",
        ])
    );
    assert_eq!(refl["reflection"]["should_replan"], true);
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["loop_stop_reason"], "correctness");
}

#[test]
fn transient_failures_are_retried_keeping_completed_sections() {
    let dir = tempdir();
    let out = dir.path().join("r");
    let res = research(&out)
        .opt("--sim-task-fail", "1:2:transient")
        .opt("--retries", "0")
        .run();
    res.expect_ok();
    assert!(
        res.stdout.contains("recovered by retry_step"),
        "{}",
        res.stdout
    );
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["loop_stop_reason"], "correctness");
    assert_eq!(rounds(&run).len(), 1);
    let passes = run["rounds"][0]["passes"].as_array().expect("passes");
    assert_eq!(passes.len(), 2);
    assert_eq!(passes[0]["recovery"], "retry_step");
    assert_eq!(passes[0]["failed_tasks"][0]["failure_kind"], "transient");
    assert_eq!(passes[1]["status"], "completed");
    // Completed tasks were not run again; the failed one and what it blocked were.
    let round = read_json(&out.join("rounds/1/run.json"));
    assert_eq!(subagent_calls(&round, "1"), 1);
    assert_eq!(subagent_calls(&round, "2"), 2);
    assert_eq!(subagent_calls(&round, "4"), 1);
    let report = read(&out.join("report.md"));
    assert_eq!(
        report.matches("*(Section written in round 1)*").count(),
        2,
        "{report}"
    );
    assert_eq!(
        report
            .matches("*(Section written in round 1, pass 2)*")
            .count(),
        3,
        "{report}"
    );
    // One journal per round, every pass appending to it.
    let journal = read(&out.join("rounds/1/events.jsonl"));
    assert_eq!(
        journal.matches("\"type\":\"run_started\"").count(),
        2,
        "{journal}"
    );
}

#[test]
fn a_refused_task_is_replaced_with_its_blocked_descendants_only() {
    let dir = tempdir();
    let out = dir.path().join("r");
    let res = research(&out).opt("--sim-task-fail", "1:2:fatal").run();
    res.expect_ok();
    let run = read_json(&out.join("run.json"));
    let passes = run["rounds"][0]["passes"].as_array().expect("passes");
    assert_eq!(passes[0]["recovery"], "replan_from_failure");
    assert_eq!(passes[0]["failed_tasks"][0]["failure_kind"], "fatal");
    let replan = read_json(&out.join("rounds/1/replan-pass-2.json"));
    let round = read_json(&out.join("rounds/1/run.json"));
    let planner_calls = round["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .filter(|c| c["role"] == "planner")
        .count();
    assert_eq!(planner_calls, 2, "the plan and the replacement");
    assert_eq!(replan["kept"], serde_json::json!(["1", "3"]));
    assert_eq!(replan["replaced"], serde_json::json!(["2", "4", "5"]));
    // The kept tasks plus replacements with fresh ids, validated together.
    let plan = read_json(&out.join("plan.json"));
    assert_eq!(ids(&plan), ["1", "3", "6", "7", "8"]);
    assert_eq!(plan["tasks"][3]["dependencies"], serde_json::json!([6]));
    assert_eq!(run["status"], "completed");
    let round = read_json(&out.join("rounds/1/run.json"));
    assert_eq!(
        subagent_calls(&round, "1"),
        1,
        "kept sections are not rewritten"
    );
    let report = read(&out.join("report.md"));
    assert!(report.contains("(another approach)"), "{report}");
    assert_eq!(report.matches("*(Section written in round 1)*").count(), 2);
    assert_eq!(
        report
            .matches("*(Section written in round 1, pass 2)*")
            .count(),
        3
    );
}

#[test]
fn a_wrecked_plan_is_replaced_completely() {
    let dir = tempdir();
    let out = dir.path().join("r");
    let res = research(&out)
        .opt("--sim-task-fail", "1:1:fatal,1:2:fatal,1:3:fatal")
        .run();
    res.expect_ok();
    let run = read_json(&out.join("run.json"));
    let passes = run["rounds"][0]["passes"].as_array().expect("passes");
    assert_eq!(passes[0]["recovery"], "complete_replan");
    assert_eq!(passes[0]["completed"], 0);
    assert_eq!(passes[1]["completed"], 5);
    // A fresh plan was asked for, told why the first one failed.
    let attempts = read_json(&out.join("rounds/1/planner-pass-2/attempts.json"));
    assert_eq!(attempts[0]["valid"], true);
    let round = read_json(&out.join("rounds/1/run.json"));
    assert_eq!(subagent_calls(&round, "1"), 2, "everything ran again");
    assert_eq!(
        read(&out.join("report.md"))
            .matches("*(Section written in round 1, pass 2)*")
            .count(),
        5
    );
}

#[test]
fn the_script_also_drives_sim_llm_serve_over_http() {
    let server = SimLlm::start(
        &["--sim-scores", "60,96", "--sim-invalid", "evaluator"],
        &[],
    );
    let dir = tempdir();
    let out = dir.path().join("r");
    let res = planwave(["research", "Deep analysis of Tesla"])
        .out(&out)
        .opt("--llm", "openai")
        .opt("--llm-base-url", &server.base_url)
        .opt("--model", "planwave-sim-1")
        .quiet()
        .run();
    res.expect_ok();
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["loop_stop_reason"], "correctness");
    assert_eq!(rounds(&run).len(), 2);
    let stats = server.stats();
    // Each round: one invalid evaluation and its repair; one reflection, on round 1 only
    // (round 2's correctness ends the loop without one).
    assert_eq!(stats["roles"]["evaluator"], 4, "{stats}");
    assert_eq!(stats["roles"]["reflector"], 1, "{stats}");
}

#[test]
fn bad_loop_settings_are_invalid_input() {
    let dir = tempdir();
    let out = dir.path().join("r");
    let res = research(&out).opt("--max-rounds", "0").run();
    res.expect_code(2);
    let res = research(&out).opt("--sim-scores", "120").run();
    res.expect_code(2);
    assert!(
        res.stderr.contains("120 is not a score from 0 to 100"),
        "{}",
        res.stderr
    );
    let res = research(&out).opt("--sim-task-fail", "1:2").run();
    res.expect_code(2);
}

#[test]
fn a_deadline_stops_the_whole_loop_leaving_the_round_in_progress_resumable() {
    let dir = tempdir();
    // The three tasks without prerequisites take a minute: nothing finishes before 0.3 s.
    let slow = crate::support::write_json(
        dir.path(),
        "slow.json",
        &serde_json::json!({"1": 60000, "2": 60000, "3": 60000}),
    );
    let out = dir.path().join("r");
    let res = research(&out)
        .opt("--sim-latency-file", &slow)
        .opt("--deadline", "0.3")
        .run();
    res.expect_code(4);
    assert!(res.stdout.contains("`planwave resume"), "{}", res.stdout);
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["loop_stop_reason"], "timeout");
    assert_eq!(run["stop_reason"], "deadline");
    assert_eq!(rounds(&run).len(), 1);
    // What `planwave resume DIR` needs is at the top: the round's plan and journal.
    assert_eq!(
        read(&out.join("plan.json")),
        read(&out.join("rounds/1/plan.json"))
    );
    assert!(out.join("invocation.json").is_file());
    assert!(
        !out.join("rounds/1/evaluation.json").exists(),
        "nothing to evaluate"
    );
}
