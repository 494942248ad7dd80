//! Issue 33 (amplification): `--max-tasks` bounds the plans the model writes for a goal, not
//! only the plans people post. A plan over the limit is sent back to the model for repair;
//! if no attempt fits, planning fails with the limit named and no task of it runs. Through
//! the real binary: `plan`, `research` (streamed or not), a local batch's goal job, the
//! server's goal job and a worker's goal job (real `nats-server`), with the simulated planner
//! (its plans have 5 tasks) and, for a repair that fits, a mock model written by others.

use serde_json::{Value, json};

use super::aimock::aimock_with;
use super::serve::{Serve, post_json, wait_done};
use crate::support::nats::{Nats, start_worker, wait_status};
use crate::support::{SimLlm, all_files, id_text, planwave, read_json, tempdir};

const GOAL: &str = "Deep analysis of Tesla";

/// What the planner said of each attempt: the simulator's five tasks, over a limit of 4.
fn over_four(attempt: u32) -> String {
    format!(
        "attempt {attempt}: the plan has 5 tasks; at most 4 are allowed (--max-tasks 4): write fewer, broader tasks"
    )
}

/// `task_started` events of every journal under `dir` (the rounds' included).
fn started_tasks(dir: &std::path::Path) -> Vec<Value> {
    all_files(dir)
        .into_iter()
        .filter(|(path, _)| path.ends_with("events.jsonl"))
        .flat_map(|(_, text)| {
            text.lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .collect::<Vec<_>>()
        })
        .filter(|e| e["type"] == "task_started")
        .collect()
}

#[test]
fn plan_and_research_send_a_plan_over_max_tasks_back_and_fail_naming_the_limit() {
    let dir = tempdir();
    let res = planwave(["plan", GOAL]).opt("--max-tasks", "4").run();
    res.expect_code(2);
    let lines: Vec<&str> = res
        .stderr
        .lines()
        .filter_map(|l| l.strip_prefix("planner: "))
        .collect();
    assert_eq!(
        lines,
        [
            over_four(1),
            over_four(2),
            over_four(3),
            "no valid plan after 3 attempt(s)".into()
        ],
        "{}",
        res.stderr
    );
    // At the limit, the same plan is fine.
    let res = planwave(["plan", GOAL]).opt("--max-tasks", "5").run();
    res.expect_ok();
    assert!(res.stdout.starts_with("plan: 5 tasks"), "{}", res.stdout);

    // research, its plan whole at once or streamed in piece by piece: no task beyond the
    // limit starts (a streamed plan stops growing at it), and the job fails naming it.
    for (name, extra) in [
        ("whole", vec!["--no-stream-plan"]),
        ("streamed", vec!["--sim-tokens-per-sec", "planner=4000"]),
    ] {
        let out = dir.path().join(name);
        let res = planwave(["research", GOAL])
            .out(&out)
            .instant()
            .quiet()
            .opt("--max-tasks", "4")
            .args(&extra)
            .run();
        assert_ne!(res.code, 0, "{name}: {}", res.stdout);
        assert!(
            res.stderr.contains("at most 4 are allowed (--max-tasks 4)"),
            "{name}: {}",
            res.stderr
        );
        let attempts = read_json(&out.join("planner/attempts.json"));
        assert_eq!(attempts.as_array().map(Vec::len), Some(3), "{attempts:#}");
        // Distinct tasks (a round's journal is also copied to the top of the directory).
        let started: std::collections::BTreeSet<String> = started_tasks(&out)
            .iter()
            .map(|e| id_text(&e["task"]))
            .collect();
        assert!(started.len() <= 4, "{name}: {started:?}");
        assert!(
            !started.contains("5"),
            "{name}: task 5 started: {started:?}"
        );
        if name == "whole" {
            assert!(
                started.is_empty(),
                "no task of an invalid plan: {started:?}"
            );
        }
    }
}

#[test]
fn a_batch_goal_job_over_max_tasks_fails_and_the_others_run() {
    let dir = tempdir();
    let jobs = dir.path().join("jobs.jsonl");
    let lines = [
        json!({"id": "big", "goal": GOAL}),
        json!({"id": "small", "plan": {"topic": "t", "tasks": [
            {"id": 1, "description": "one part", "dependencies": []}]}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&jobs, text).expect("jobs");
    let out = dir.path().join("batch");
    let res = planwave(["batch"])
        .arg(&jobs)
        .out(&out)
        .instant()
        .quiet()
        .opt("--max-tasks", "4")
        .run();
    assert_ne!(res.code, 0, "{}", res.stdout);
    let batch = read_json(&out.join("batch.json"));
    let job = |id: &str| {
        batch["jobs"]
            .as_array()
            .and_then(|j| j.iter().find(|j| j["id"] == id))
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert_eq!(job("small")["state"], "completed", "{batch:#}");
    assert_eq!(job("big")["state"], "failed", "{batch:#}");
    assert!(
        job("big")["error"]
            .as_str()
            .is_some_and(|e| e.contains("at most 4 are allowed")),
        "{batch:#}"
    );
    assert_eq!(job("big")["completed"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_holds_a_goals_plan_to_its_max_tasks_as_a_posted_one() {
    let s = Serve::start(&["--max-tasks", "4"], &[]);
    let (code, created) = post_json(
        &s.at("api/runs"),
        &json!({"goal": GOAL, "options": {"sim_latency_ms": 0}}),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    let id = created["id"].as_str().expect("id");
    let done = wait_done(&s, id).await;
    assert_eq!(done["status"], "error", "{done:#}");
    assert!(
        done["error"]
            .as_str()
            .is_some_and(|e| e.contains("at most 4 are allowed (--max-tasks 4)")),
        "{done:#}"
    );
    assert_eq!(done["stats"]["completed"], 0, "{done:#}");
}

#[test]
fn a_worker_holds_a_goal_jobs_plan_to_its_max_tasks() {
    let dir = tempdir();
    let Some(nats) = Nats::start(&dir.path().join("js"), &[]) else {
        return;
    };
    let url = nats.url();
    let sim = SimLlm::start(&["--latency-ms", "0"], &[]);
    // The limit from the worker's config file ([planner] task_limit), as a flag would give it.
    let config = dir.path().join("planwave.toml");
    std::fs::write(&config, "[planner]\ntask_limit = 4\n").expect("config");
    let mut w = start_worker(
        &url,
        &sim,
        &dir.path().join("w"),
        &["--jobs", "1", "--config", config.to_str().expect("utf-8")],
    );
    let jobs = dir.path().join("jobs.jsonl");
    std::fs::write(&jobs, format!("{}\n", json!({"id": "g", "goal": GOAL}))).expect("jobs");
    planwave(["batch"])
        .arg(&jobs)
        .opt("--nats", &url)
        .opt("--batch", "limited")
        .run()
        .expect_ok();
    let s = wait_status(&url, "limited", 120, |s| s["counts"]["failed"] == 1);
    let reason = s["jobs"][0]["summary"]["error"]
        .as_str()
        .unwrap_or_default();
    assert!(reason.contains("at most 4 are allowed"), "{s:#}");
    assert_eq!(s["jobs"][0]["summary"]["completed"], 0, "{s:#}");
    let (code, _) = w.terminate();
    assert_eq!(code, 0);
}

/// A three-task plan, and the two-task plan a model writes when told the limit.
fn acme_plan(n: usize) -> String {
    let tasks: Vec<Value> = (1..=n)
        .map(|i| json!({"id": i, "description": format!("Acme part {i}"), "dependencies": []}))
        .collect();
    json!({"research_type": "company", "topic": "Acme review", "objectives": ["know Acme"],
           "tasks": tasks})
    .to_string()
}

#[test]
fn a_model_told_the_limit_in_the_repair_prompt_writes_a_plan_that_fits() {
    let dir = tempdir();
    let Some((base, _mock)) = aimock_with(
        dir.path(),
        json!([
            // The repair prompt carries the problem, limit included.
            {"match": {"userMessage": "at most 2 are allowed"}, "response": {"content": acme_plan(2)}},
            {"match": {"userMessage": "plan-limit-aimock"}, "response": {"content": acme_plan(3)}}
        ]),
    ) else {
        return;
    };
    let res = planwave(["plan", "plan-limit-aimock: review Acme"])
        .opt("--llm-base-url", &base)
        .opt("--model", "gpt-4o")
        .opt("--max-tasks", "2")
        .run();
    res.expect_ok();
    assert!(
        res.stdout.starts_with("plan: 2 tasks") && res.stdout.contains("after 2 attempt(s)"),
        "{}",
        res.stdout
    );
}
