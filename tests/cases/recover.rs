//! `run --recover` (adaptive recovery for any plan, not only a goal's): failed tasks of a plan
//! file are recovered with the same policy `research` uses, the plan's topic as the goal.

use crate::cases::reflect::subagent_calls;
use crate::support::{planwave, read_json, tempdir, write_json};

fn plan(dir: &std::path::Path) -> std::path::PathBuf {
    write_json(
        dir,
        "plan.json",
        &serde_json::json!({"topic": "Acme review", "tasks": [
            {"id": 1, "description": "Business", "dependencies": []},
            {"id": 2, "description": "Finances", "dependencies": []},
            {"id": 3, "description": "Outlook", "dependencies": [1, 2]}
        ]}),
    )
}

#[test]
fn run_recover_retries_a_failed_task_keeping_completed_sections() {
    let dir = tempdir();
    let plan = plan(dir.path());
    let out = dir.path().join("r");
    let r = planwave(["run"])
        .arg(&plan)
        .out(&out)
        .instant()
        .quiet()
        .opt("--recover", "")
        .run();
    // `--recover` is a switch: an empty value is an error, so this is the wrong call.
    r.expect_code(2);

    let r = planwave(["run", "--recover"])
        .arg(&plan)
        .out(&out)
        .instant()
        .quiet()
        .opt("--sim-task-fail", "1:2:transient")
        .opt("--retries", "0")
        .run();
    r.expect_ok();
    assert!(r.stdout.contains("recovered by retry_step"), "{}", r.stdout);
    assert!(!r.stdout.contains("planned in"), "{}", r.stdout);
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["loop_stop_reason"], "run_finished");
    let passes = run["rounds"][0]["passes"].as_array().expect("passes");
    assert_eq!(passes.len(), 2);
    assert_eq!(passes[0]["recovery"], "retry_step");
    // No evaluation or reflection: recovery only.
    assert!(run["rounds"][0].get("overall_score").is_none(), "{run}");
    assert!(!out.join("rounds/1/evaluation.json").exists());
    let round = read_json(&out.join("rounds/1/run.json"));
    assert_eq!(subagent_calls(&round, "1"), 1, "completed tasks are kept");
    assert_eq!(subagent_calls(&round, "2"), 2);
    assert!(
        round["calls"]
            .as_array()
            .expect("calls")
            .iter()
            .all(|c| c["role"] == "subagent" || c["role"] == "integrator"),
        "no planner, evaluator or reflector call: {round}"
    );
}

#[test]
fn run_recover_replans_around_a_fatal_failure_with_the_topic_as_goal() {
    let dir = tempdir();
    let plan = plan(dir.path());
    let out = dir.path().join("r");
    let r = planwave(["run", "--recover"])
        .arg(&plan)
        .out(&out)
        .instant()
        .quiet()
        .opt("--sim-task-fail", "1:2:fatal")
        .run();
    r.expect_ok();
    let run = read_json(&out.join("run.json"));
    let passes = run["rounds"][0]["passes"].as_array().expect("passes");
    assert_eq!(passes[0]["recovery"], "replan_from_failure", "{run}");
    assert_eq!(run["status"], "completed", "{run}");
    // The replanner was asked about the plan's topic.
    let round = read_json(&out.join("rounds/1/run.json"));
    assert!(
        round["calls"]
            .as_array()
            .expect("calls")
            .iter()
            .any(|c| c["role"] == "planner"),
        "{round}"
    );
}

/// A `run --recover` into `out` killed (-9) while task 3 hangs, after task 1 completed in
/// the first pass and task 2 in the retry_step pass; its latency file is then emptied, so a
/// resume finishes.
pub(crate) fn killed_recover(dir: &std::path::Path, out: &std::path::Path) {
    let plan = plan(dir);
    // Task 3 never ends while the first process runs.
    let latency = write_json(dir, "latency.json", &serde_json::json!({"3": 600000}));
    let mut child = planwave(["run", "--recover"])
        .arg(&plan)
        .out(out)
        .opt("--llm", "sim")
        .opt("--sim-latency-ms", "0")
        .opt("--sim-latency-file", &latency)
        .opt("--sim-task-fail", "1:2:transient")
        .opt("--retries", "0")
        .spawn();
    child.wait_for(" completed in ", 2);
    child.kill_9();
    std::fs::write(&latency, "{}").expect("latency");
}

#[test]
fn resume_of_a_killed_run_recover_goes_on_recovering_without_a_loop() {
    let dir = tempdir();
    let out = dir.path().join("r");
    killed_recover(dir.path(), &out);

    let r = planwave(["resume"]).arg(&out).run();
    r.expect_ok();
    assert!(
        r.stderr
            .contains("resuming round 1: 2 of 3 tasks already completed"),
        "{}",
        r.stderr
    );
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["loop_stop_reason"], "run_finished");
    assert!(
        !out.join("rounds/1/evaluation.json").exists(),
        "no evaluation"
    );
    let round = out.join("rounds/1");
    let calls = |id: &str| crate::support::journal_subagent_calls(&round, id);
    assert_eq!((calls("1"), calls("2"), calls("3")), (1, 2, 1));
}

#[test]
fn resume_refuses_a_run_directory_recorded_only_as_a_command_line_saying_what_to_do() {
    let dir = tempdir();
    let out = dir.path().join("r");
    killed_recover(dir.path(), &out);
    let inv = read_json(&out.join("invocation.json"));
    assert_eq!(inv["spec"]["work"]["plan"]["recover"], true, "{inv}");
    // Unreleased builds recorded only the command line; it is not read any more.
    let old = serde_json::json!({"argv": ["run", "plan.json", "--recover", "--out", "r"],
                                 "cwd": inv["cwd"]});
    write_json(&out, "invocation.json", &old);
    let r = planwave(["resume"]).arg(&out).run();
    r.expect_code(2);
    let canonical = out.canonicalize().unwrap();
    assert!(
        r.stderr.contains(&format!(
            "{}: invocation.json records only a command line (\"argv\"), as unreleased builds \
             wrote it; this version cannot resume it: start the job again with `planwave run \
             PLAN --out DIR` or `planwave research GOAL --out DIR` (`--force` replaces this \
             directory)",
            canonical.display()
        )),
        "{}",
        r.stderr
    );
}
