//! What is counted across jobs and runs: a batch job whose planning failed still counts its
//! planner tokens, and `show` and the server's `/api/metrics` give the same success metrics
//! over a set of runs.

use serde_json::json;

use crate::support::{planwave, read_json, tempdir, write_json};

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
