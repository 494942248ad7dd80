//! Budgets (`--max-tokens-total`, `--max-cost`, `[run]`): once spent no model request is
//! sent, the tasks left end `blocked` with the reason, the run says so (summary, run.json,
//! report, `show`, exit 6), and a resume with a larger budget goes on. A batch shares one.

use serde_json::Value;

use super::batch::{chain, jsonl};
use crate::support::{SimLlm, planwave, read_json, repo_file, task, tempdir, write_json};

/// Calls of run.json whose request was answered (a refused call is recorded, not sent).
fn answered(run: &Value) -> usize {
    run["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .filter(|c| c["outcome"] == "ok")
        .count()
}

#[test]
fn a_run_stops_calling_the_model_at_its_token_budget_and_resumes_with_a_larger_one() {
    let server = SimLlm::start(&[], &[]);
    let dir = tempdir();
    let out = dir.path().join("r");
    // One task at a time: the first three tasks spend more than 800 tokens.
    let res = planwave(["run"])
        .arg(repo_file("examples/tesla.json"))
        .out(&out)
        .opt("--llm-base-url", &server.base_url)
        .opt("--model", "planwave-sim-1")
        .opt("--concurrency", "1")
        .opt("--max-tokens-total", "800")
        .quiet()
        .run();
    res.expect_code(6);
    assert!(
        res.stdout
            .contains("\nbudget reached: the tasks left are blocked;"),
        "{}",
        res.stdout
    );
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["status"], "partial");
    assert_eq!(run["stop_reason"], "budget");
    let t4 = task(&run, "4");
    assert_eq!(t4["status"], "blocked", "{t4}");
    let why = t4["error"].as_str().expect("a reason");
    assert!(
        why.starts_with("budget reached: ")
            && why.ends_with("of --max-tokens-total 800 tokens spent"),
        "{why}"
    );
    // Nothing was sent once the budget was spent: the server saw only the answered calls.
    let sent = server.stats()["requests"].as_u64().expect("requests");
    assert_eq!(sent as usize, answered(&run), "{run}");
    let report = std::fs::read_to_string(out.join("report.md")).expect("report");
    assert!(
        report.contains("[未执行：预算已用完（budget reached: "),
        "{report}"
    );
    let shown = planwave(["show"]).arg(&out).run();
    assert!(
        shown.stdout.contains("\nstopped: budget\n"),
        "{}",
        shown.stdout
    );

    // The same budget counts what was spent: nothing more is sent.
    planwave(["resume"]).arg(&out).quiet().run().expect_code(6);
    assert_eq!(server.stats()["requests"].as_u64(), Some(sent));
    // A larger one goes on from the completed tasks.
    planwave(["resume"])
        .arg(&out)
        .opt("--max-tokens-total", "100000")
        .quiet()
        .run()
        .expect_ok();
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["status"], "completed", "{run}");
    assert!(run.get("stop_reason").is_none(), "{run}");
}

#[test]
fn a_batch_shares_one_budget_from_the_config_and_its_resume_takes_a_larger_one() {
    let dir = tempdir();
    write_json(dir.path(), "a.json", &chain("a", 2));
    write_json(dir.path(), "b.json", &chain("b", 2));
    let jobs = jsonl(
        dir.path(),
        "jobs.jsonl",
        &[
            r#"{"id": "a", "plan_file": "a.json"}"#.into(),
            r#"{"id": "b", "plan_file": "b.json"}"#.into(),
        ],
    );
    let config = dir.path().join("planwave.toml");
    std::fs::write(&config, "[run]\nmax_tokens_total = 100\n").expect("config");
    let out = dir.path().join("batch");
    let res = planwave(["batch"])
        .arg(&jobs)
        .out(&out)
        .opt("--config", &config)
        .opt("--jobs", "1")
        .opt("--llm", "sim")
        .instant()
        .quiet()
        .run();
    res.expect_code(6);
    assert!(
        res.stdout.contains("budget reached (") && res.stdout.contains("planwave batch --resume"),
        "{}",
        res.stdout
    );
    let batch = read_json(&out.join("batch.json"));
    let jobs_done = batch["jobs"].as_array().expect("jobs");
    // The first job spent the budget in its first task, and stopped (as an interrupted job
    // does, to be resumed); the second never started.
    assert_eq!(jobs_done[0]["state"], "cancelled", "{batch}");
    assert_eq!(jobs_done[0]["completed"], 1, "{batch}");
    assert_eq!(jobs_done[1]["state"], "cancelled", "{batch}");
    assert!(
        jobs_done[1]["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("not started: budget reached: ")),
        "{batch}"
    );
    let res = planwave(["batch"])
        .opt("--resume", &out)
        .opt("--max-tokens-total", "100000")
        .quiet()
        .run();
    res.expect_ok();
    assert!(
        res.stdout.contains("2 job(s): 2 completed"),
        "{}",
        res.stdout
    );
}

#[test]
fn a_cost_budget_needs_a_price_for_the_model() {
    let dir = tempdir();
    let plan = write_json(dir.path(), "p.json", &chain("p", 1));
    let res = planwave(["run"])
        .arg(&plan)
        .out(dir.path().join("r"))
        .opt("--llm-base-url", "http://127.0.0.1:9/v1")
        .opt("--model", "local-model")
        .opt("--max-cost", "0.5")
        .run();
    res.expect_code(2);
    assert!(
        res.stderr.contains(
            "--max-cost: no price for model local-model in [prices.models] (or [prices] aliases)"
        ),
        "{}",
        res.stderr
    );
    let res = planwave(["run"])
        .arg(&plan)
        .out(dir.path().join("s"))
        .opt("--max-cost", "0")
        .run();
    res.expect_code(2);
}
