//! planwave against a real model on a real inference server: llama.cpp serving
//! SmolLM2-135M-Instruct (tests/support/llama.rs), through the real binary. The tests assert
//! what planwave does with the model's answers (it ends, every task ends with a status and a
//! reason a person can act on, the report assembles, usage is recorded, the exit code tells
//! the truth), never what the model says. Output caps are small so the file runs in minutes
//! on two busy cores.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::llama::{self, Llama};
use crate::support::{Planwave, planwave, read_json, repo_file, tempdir};

/// Plans of two or three tasks: few model tokens per test.
fn small_plans(dir: &Path) -> PathBuf {
    let p = dir.join("planwave.toml");
    std::fs::write(&p, "[planner]\nmin_tasks = 2\nmax_tasks = 3\n").expect("config");
    p
}

/// `planwave ARGS` against the server, with small caps for every role.
fn against(server: &Llama, args: &[&str], config: &Path) -> Planwave {
    let p = planwave(args);
    // SmolLM2 under the plan-or-questions grammar asks about clear goals too (seen: "...");
    // these tests are about planning and running, so the planner is not offered questions.
    let p = if matches!(args.first(), Some(&"plan") | Some(&"research")) {
        p.arg("--no-questions")
    } else {
        p
    };
    p.opt("--llm-base-url", &server.base_url)
        .opt("--model", "smollm2")
        .opt("--config", config)
        .opt(
            "--max-output",
            "planner=300,subagent=32,integrator=32,evaluator=120,reflector=120,llm_call=32",
        )
}

#[test]
fn the_fixture_serves_a_real_model() {
    let Some(server) = llama::shared() else {
        return;
    };
    // 16384 tokens of context over 4 slots: 4096 per request, as /props reports.
    let (status, props) = server.get("/props");
    assert_eq!(status, 200, "{props}");
    let props: Value = serde_json::from_str(&props).expect("/props JSON");
    assert_eq!(
        props["default_generation_settings"]["n_ctx"], 4096,
        "{props:#}"
    );
    let (status, metrics) = server.get("/metrics");
    assert_eq!(status, 200);
    assert!(metrics.contains("llamacpp:"), "{metrics}");
    assert!(server.base_url.ends_with("/v1"), "{}", server.log.display());
}

#[test]
fn plan_gives_a_plan_that_parses_for_a_chinese_and_an_english_goal() {
    let Some(server) = llama::shared() else {
        return;
    };
    let dir = tempdir();
    let config = small_plans(dir.path());
    // Both at once: the server has slots for both, and its batches decode them together.
    let goals = ["分析特斯拉的电池业务", "Analyse Tesla's battery business"];
    let outputs: Vec<_> = std::thread::scope(|s| {
        let running: Vec<_> = goals
            .iter()
            .map(|goal| {
                let p = against(server, &["plan", goal, "--json"], &config)
                    .opt("--planner-attempts", "2");
                s.spawn(move || p.run())
            })
            .collect();
        running
            .into_iter()
            .map(|h| h.join().expect("plan"))
            .collect()
    });
    for r in outputs {
        match r.code {
            // A plan planwave validated: one to three tasks, as configured.
            0 => {
                let plan: Value = serde_json::from_str(&r.stdout).expect("the plan as JSON");
                let tasks = plan["tasks"].as_array().expect("tasks");
                assert!((1..=3).contains(&tasks.len()), "{plan:#}");
            }
            // The model may still write a plan that does not validate (a task depending on
            // itself...): planning fails as bad input, naming each problem. The schema's
            // grammar leaves no syntax error (parse errors name a line), and a cut answer
            // is named as cut.
            2 => {
                assert!(r.stderr.contains("planner: "), "{}", r.stderr);
                assert!(!r.stderr.contains(" at line "), "{}", r.stderr);
            }
            other => panic!("plan exited {other}: {}", r.stderr),
        }
    }
}

#[test]
fn a_plan_cut_by_the_cap_is_asked_again_shorter_without_overflowing_the_context() {
    let Some(server) = llama::shared() else {
        return;
    };
    let dir = tempdir();
    let config = small_plans(dir.path());
    let r = against(server, &["plan", "Analyse Tesla"], &config)
        .opt("--max-output", "planner=24")
        .opt("--planner-attempts", "2")
        .run();
    // 24 tokens hold no plan: both attempts are cut, planning fails as bad input, and says
    // why in words a person can act on.
    r.expect_code(2);
    assert!(
        r.stderr.contains("cut by the output limit (24 tokens)"),
        "{}",
        r.stderr
    );
    // The second attempt asked again; it did not send the cut answer back.
    assert!(!r.stderr.contains("truncated at line"), "{}", r.stderr);
    assert!(!r.stderr.contains("context"), "{}", r.stderr);
}

#[test]
fn a_prompt_larger_than_the_context_is_exit_2_without_retries() {
    let Some(server) = llama::shared() else {
        return;
    };
    let dir = tempdir();
    let config = small_plans(dir.path());
    let goal = format!("Analyse {}", "the battery supply chain ".repeat(1000));
    let r = against(server, &["plan", &goal], &config).run();
    r.expect_code(2);
    assert!(r.stderr.contains("context overflow"), "{}", r.stderr);
    assert_eq!(
        r.stderr.matches("planning attempt").count(),
        1,
        "one attempt, not retried: {}",
        r.stderr
    );
}

/// Every task ended with a status a person can act on: a reason for each that is not
/// completed.
fn assert_tasks_end_with_reasons(run: &Value) {
    for t in run["tasks"].as_array().expect("tasks") {
        match t["status"].as_str() {
            Some("completed") => {}
            Some("failed") => assert!(t["error"].as_str().is_some_and(|e| !e.is_empty()), "{t:#}"),
            Some("blocked") => assert!(!t["blocked_by"].is_null(), "{t:#}"),
            Some("truncated") => assert!(
                t["warnings"]
                    .to_string()
                    .contains("cut by the output limit")
                    || t["warnings"].to_string().contains("truncated"),
                "{t:#}"
            ),
            other => panic!("task ended {other:?}: {t:#}"),
        }
    }
}

/// The exit code and run.json agree: 0 exactly when every task completed.
fn assert_exit_code_is_truthful(code: i32, run: &Value) {
    let all = run["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .all(|t| t["status"] == "completed");
    assert_eq!(code == 0, all, "exit {code} for {:#}", run["tasks"]);
    assert!(code == 0 || code == 3, "exit {code}");
}

#[test]
fn run_tesla_ends_and_says_how_each_task_ended() {
    let Some(server) = llama::shared() else {
        return;
    };
    let dir = tempdir();
    let config = small_plans(dir.path());
    let out = dir.path().join("out");
    let r = against(server, &["run"], &config)
        .arg(repo_file("examples/tesla.json"))
        .out(&out)
        .quiet()
        .fast_retries()
        .run();
    let run = read_json(&out.join("run.json"));
    assert_tasks_end_with_reasons(&run);
    assert_exit_code_is_truthful(r.code, &run);
    // With 48 tokens a section is cut more often than not; whichever it was, it says so.
    let report = std::fs::read_to_string(out.join("report.md")).expect("the report assembles");
    assert!(
        report.contains("特斯拉") || report.contains("Tesla"),
        "{report}"
    );
    let usage = &run["stats"]["usage"];
    assert!(
        usage["prompt_tokens"].as_u64().is_some_and(|n| n > 0),
        "{usage:#}"
    );
    assert!(
        usage["completion_tokens"].as_u64().is_some_and(|n| n > 0),
        "{usage:#}"
    );
    assert!(usage["cached_tokens"].is_u64(), "{usage:#}");
    assert_eq!(run["llm"]["response_format"], "json_schema", "{run:#}");
}

#[test]
fn research_runs_its_loop_judged_by_the_same_model() {
    let Some(server) = llama::shared() else {
        return;
    };
    let dir = tempdir();
    let config = small_plans(dir.path());
    let out = dir.path().join("out");
    let r = against(
        server,
        &["research", "Analyse Tesla's battery business"],
        &config,
    )
    .out(&out)
    .opt("--max-rounds", "1")
    .quiet()
    .fast_retries()
    .run();
    // Planning may fail (exit 2, with every problem); otherwise the round ran, and the
    // evaluator's answer, valid or not, is on record with its attempts.
    if r.code == 2 {
        assert!(r.stderr.contains("planner:"), "{}", r.stderr);
        return;
    }
    let run = read_json(&out.join("run.json"));
    assert_tasks_end_with_reasons(&run);
    let evaluation = read_json(&out.join("rounds/1/evaluation.json"));
    let attempts = evaluation["attempts"].as_array().expect("attempts");
    assert!(!attempts.is_empty(), "{evaluation:#}");
    for a in attempts {
        assert!(
            a["valid"] == true
                || a["problems"].as_array().is_some_and(|p| !p.is_empty())
                || a["error"].is_string(),
            "an invalid answer says why: {a:#}"
        );
    }
    assert!(r.code == 0 || r.code == 3, "exit {}: {}", r.code, r.stderr);
    assert!(out.join("report.md").is_file());
}
