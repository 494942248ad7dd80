//! A run that failed says so everywhere a person looks: the exit code of `research` whose
//! loop ended on a failure, a batch goal job that ran the planner's fallback, `show` and the
//! server's list, which tell a batch directory and a run that ended in an error for what they
//! are instead of a "stopped" row with empty columns.

use serde_json::{Value, json};

use super::aimock::{PLAN, aimock_with};
use super::batch::jsonl;
use super::serve::{Serve, create, get_json, wait_until};
use crate::support::{plan, planwave, read_json, tempdir};

#[test]
fn research_whose_evaluation_failed_exits_3_and_show_says_why() {
    let dir = tempdir();
    let Some((base, _server)) = aimock_with(
        dir.path(),
        json!([
            {"match": {"userMessage": "Evaluate the round above"}, "response": {"content": "I cannot say."}},
            {"match": {"userMessage": "plan-acme-aimock"}, "response": {"content": PLAN}},
            {"match": {}, "response": {"content": "## Section\n\nAcme sold 12 units in 2024 (source: annual report)."}}
        ]),
    ) else {
        return;
    };
    let out = dir.path().join("r");
    let res = planwave(["research", "plan-acme-aimock: review Acme"])
        .out(&out)
        .opt("--llm-base-url", &base)
        .opt("--model", "gpt-4o")
        .quiet()
        .run();
    // Every task completed, but nothing judged the answer.
    res.expect_code(3);
    assert!(
        res.stdout
            .contains("the loop ended on a failure (evaluation_failed), not on its verdict"),
        "{}",
        res.stdout
    );
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["loop_stop_reason"], "evaluation_failed");
    assert_eq!(run["status"], "completed");
    let shown = planwave(["show"]).arg(&out).run();
    shown.expect_ok();
    assert!(
        shown.stdout.contains("\nstopped: evaluation_failed\n"),
        "{}",
        shown.stdout
    );
}

/// A batch of a plan job and a goal job whose every planning attempt fails, the planner
/// configured to fall back on one task.
fn batch_with_a_fallback_job(dir: &std::path::Path) -> std::path::PathBuf {
    let config = dir.join("planwave.toml");
    std::fs::write(
        &config,
        "[planner]\nfallback = \"single_task\"\nattempts = 2\n",
    )
    .expect("config");
    let jobs = jsonl(
        dir,
        "jobs.jsonl",
        &[
            format!(
                r#"{{"id": "p", "plan": {}}}"#,
                plan("P", &[("p1", "part", &[])])
            ),
            r#"{"id": "g", "goal": "Deep analysis of Tesla"}"#.into(),
        ],
    );
    let out = dir.join("data/b");
    let res = planwave(["batch"])
        .arg(&jobs)
        .out(&out)
        .opt("--config", &config)
        .opt("--sim-planner-faults", "prose,prose")
        .opt("--max-rounds", "1")
        .instant()
        .quiet()
        .run();
    res.expect_code(3);
    assert!(
        res.stdout
            .contains("2 job(s): 1 completed, 0 partial, 1 failed"),
        "{}",
        res.stdout
    );
    out
}

#[test]
fn a_batch_goal_job_that_ran_the_fallback_plan_is_failed_and_listed_as_a_batch() {
    let dir = tempdir();
    let out = batch_with_a_fallback_job(dir.path());
    let batch = read_json(&out.join("batch.json"));
    let g = batch["jobs"]
        .as_array()
        .and_then(|j| j.iter().find(|j| j["id"] == "g"))
        .expect("job g");
    assert_eq!(g["state"], "failed", "{g}");
    assert_eq!(
        g["error"],
        "planning failed, so the planner's one-task fallback plan ran: no valid plan after 2 attempt(s)"
    );
    let shown = planwave(["show"]).arg(out.join("jobs/g")).run();
    assert!(
        shown.stdout.contains(
            "planning failed (the one-task fallback plan ran): no valid plan after 2 attempt(s)"
        ),
        "{}",
        shown.stdout
    );

    // The server over the directory holding the batch lists it as a batch, with its jobs.
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let s = Serve::start_in(&dir.path().join("data"), "127.0.0.1:0", &[], &[]);
        let (_, list) = get_json(&s.at("api/runs")).await;
        let row = &list["runs"][0];
        assert_eq!(row["id"], "b", "{list}");
        assert_eq!(row["kind"], "batch", "{row}");
        assert_eq!(row["status"], "partial", "{row}");
        assert_eq!(
            (&row["tasks"], &row["completed"], &row["failed"]),
            (&json!(2), &json!(1), &json!(1)),
            "{row}"
        );
        assert!(row["tokens"].as_u64() > Some(0), "{row}");
    });
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_lists_a_run_that_ended_in_an_error_as_an_error() {
    let s = Serve::start(&[], &[]);
    // Every planning attempt fails and there is no fallback: the job ends in an error,
    // leaving a journal and no run.json.
    let id = create(
        &s,
        &json!({"goal": "Deep analysis of Tesla", "options": {"sim_planner_faults": ["prose", "prose", "prose", "prose"], "sim_latency_ms": 0}}),
    )
    .await;
    let row: Value = wait_until("the run's row", || async {
        let (_, list) = get_json(&s.at("api/runs")).await;
        list["runs"]
            .as_array()
            .and_then(|r| r.iter().find(|r| r["id"] == id.as_str()).cloned())
            .filter(|r| r["live"] == false)
    })
    .await;
    assert_eq!(row["status"], "error", "{row}");
}
