//! Smaller things a user of step plans meets (issue 36), through the real binary: the
//! summary's own heading, the plan cache's goal matching, estimated durations, and metrics
//! across runs.

use serde_json::json;

use crate::cases::aimock::aimock_with;
use crate::support::{planwave, read_json, tempdir, write_json};

#[test]
fn a_summary_with_its_own_heading_is_not_headed_twice() {
    let dir = tempdir();
    let Some((base, _server)) = aimock_with(
        dir.path(),
        json!([
            {"match": {"userMessage": "You are the editor integrating"},
             "response": {"content": "## Executive Summary\n\nSUMMARY-ONCE: the audit found nothing amiss."}},
            {"match": {}, "response": {"content": "## Finding\n\nThe audit ran (2024: 12%)."}}
        ]),
    ) else {
        return;
    };
    let plan = write_json(
        dir.path(),
        "plan.json",
        &crate::support::plan("Audit", &[("1", "Check the books", &[])]),
    );
    let out = dir.path().join("out");
    planwave(["run"])
        .arg(&plan)
        .out(&out)
        .opt("--llm-base-url", &base)
        .opt("--model", "gpt-4o")
        .quiet()
        .run()
        .expect_ok();
    let report = std::fs::read_to_string(out.join("report.md")).expect("report");
    assert!(report.contains("SUMMARY-ONCE"), "{report}");
    assert_eq!(
        report
            .to_lowercase()
            .matches("## executive summary")
            .count(),
        1,
        "{report}"
    );
}

#[test]
fn the_plan_cache_matches_goals_up_to_case_punctuation_and_spacing() {
    let dir = tempdir();
    let cache = dir.path().join("cache");
    let research = |goal: &str, out: &std::path::Path| {
        planwave(["research", goal])
            .out(out)
            .opt("--plan-cache", &cache)
            .opt("--max-rounds", "1")
            .instant()
            .quiet()
            .run()
    };
    let first = dir.path().join("first");
    research("分析特斯拉", &first).expect_ok();
    assert_eq!(read_json(&first.join("run.json"))["plan_source"], "planner");
    let second = dir.path().join("second");
    research("  分析特斯拉。 ", &second).expect_ok();
    assert_eq!(read_json(&second.join("run.json"))["plan_source"], "cache");
    let third = dir.path().join("third");
    research("Analyse Tesla", &third).expect_ok();
    let fourth = dir.path().join("fourth");
    research("analyse   TESLA!", &fourth).expect_ok();
    assert_eq!(read_json(&fourth.join("run.json"))["plan_source"], "cache");
    // The entries keep the goals as first written.
    let goals: Vec<String> = std::fs::read_dir(&cache)
        .expect("cache")
        .map(|e| e.expect("entry").path())
        .filter(|p| !p.ends_with("call-times.json"))
        .map(|p| read_json(&p)["goal"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(goals.len(), 2, "{goals:?}");
    assert!(
        goals.contains(&"分析特斯拉".to_owned()) && goals.contains(&"Analyse Tesla".to_owned())
    );
}

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

#[test]
fn a_batch_job_whose_planning_failed_counts_its_planner_tokens() {
    let dir = tempdir();
    let jobs = crate::cases::batch::jsonl(
        dir.path(),
        "jobs.jsonl",
        &[json!({"id": "unplannable", "goal": "Deep analysis of Tesla"}).to_string()],
    );
    let out = dir.path().join("b");
    let r = planwave(["batch"])
        .arg(&jobs)
        .out(&out)
        .instant()
        .quiet()
        .opt("--planner-attempts", "3")
        .opt("--sim-planner-faults", "prose,prose,prose")
        .run();
    assert_ne!(r.code, 0, "{}", r.stderr);
    let batch = read_json(&out.join("batch.json"));
    let job = &batch["jobs"][0];
    assert_eq!(job["state"], "failed", "{batch}");
    assert_eq!(job["planning"]["attempts"], 3, "{batch}");
    let tokens = job["tokens"].as_u64().expect("tokens");
    assert!(tokens > 0, "three planner calls were made: {batch}");
    assert_eq!(batch["tokens"].as_u64(), Some(tokens));
}

#[test]
fn show_and_the_server_give_success_metrics_across_runs() {
    let dir = tempdir();
    let data = dir.path().join("data");
    let plan = write_json(
        dir.path(),
        "plan.json",
        &crate::support::plan("Audit", &[("1", "One", &[]), ("2", "Two", &["1"])]),
    );
    // A run that completed, one whose task failed, a goal that planned and completed, and
    // a goal whose planning failed.
    crate::support::run_plan(&plan, data.join("ok"))
        .quiet()
        .run()
        .expect_ok();
    crate::support::run_plan(&plan, data.join("partial"))
        .quiet()
        .opt("--sim-fail", "2")
        .run()
        .expect_code(3);
    let research = |goal: &str, out: &str, faults: Option<&str>| {
        planwave(["research", goal])
            .out(data.join(out))
            .opt("--max-rounds", "1")
            .opt("--planner-attempts", "2")
            .instant()
            .quiet()
            .args(
                faults
                    .map(|f| ["--sim-planner-faults", f])
                    .into_iter()
                    .flatten(),
            )
            .run()
    };
    research("Deep analysis of Tesla", "planned", None).expect_ok();
    research("Deep analysis of BYD", "unplanned", Some("prose,prose")).expect_code(2);
    // A step plan: its answer is in the API's view of the run.
    let steps = write_json(
        dir.path(),
        "steps.json",
        &json!({"goal": "Say hello", "steps": [{"step_id": "hi", "description": "Greet",
                 "tool": "llm_call", "params": {"prompt": "Say hello"}}]}),
    );
    crate::support::run_plan(&steps, data.join("steps"))
        .quiet()
        .run()
        .expect_ok();

    let expected =
        "runs: 5\nplanning: 1/2 goal job(s) got a valid plan (50.0%), mean planning time ";
    let some = planwave(["show"])
        .arg(data.join("ok"))
        .arg(data.join("partial"))
        .arg(data.join("planned"))
        .arg(data.join("unplanned"))
        .arg(data.join("steps"))
        .run();
    some.expect_ok();
    assert!(some.stdout.starts_with(expected), "{}", some.stdout);
    assert!(
        some.stdout
            .ends_with("\nexecution: 3/4 executed job(s) completed (75.0%)\n"),
        "{}",
        some.stdout
    );
    // The data directory itself: the same figures.
    let all = planwave(["show"]).arg(&data).run();
    all.expect_ok();
    assert_eq!(all.stdout, some.stdout);

    // The server's API gives them for its data directory.
    let server = crate::cases::serve::Serve::start_in(&data, "127.0.0.1:0", &[], &[]);
    let m = crate::support::http_get_json(&server.at("api/metrics"));
    assert_eq!(m["runs"], 5, "{m}");
    assert_eq!(m["planning_success_rate"], 0.5, "{m}");
    assert_eq!(
        (m["executed"].as_u64(), m["executed_completed"].as_u64()),
        (Some(4), Some(3)),
        "{m}"
    );
    assert!(m["mean_planning_ms"].as_f64().is_some(), "{m}");
    let run = crate::support::http_get_json(&server.at("api/runs/steps"));
    let section = std::fs::read_to_string(data.join("steps/sections/hi.md")).expect("section");
    assert_eq!(run["answer"].as_str(), Some(section.trim()), "{run}");
}
