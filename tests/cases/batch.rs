//! `planwave batch`: bad job files, a shared subagent cap, and `kill -9` then `--resume`.

use std::collections::BTreeMap;
use std::path::Path;

use crate::support::{SimLlm, events, id_text, plan, planwave, read_json, tempdir, write_json};

/// A chain of `n` tasks with ids `<prefix>1..<prefix>n`, so task ids are unique in a batch.
pub(crate) fn chain(prefix: &str, n: usize) -> serde_json::Value {
    let ids: Vec<String> = (1..=n).map(|i| format!("{prefix}{i}")).collect();
    let deps: Vec<Vec<&str>> = (0..n)
        .map(|i| {
            if i == 0 {
                vec![]
            } else {
                vec![ids[i - 1].as_str()]
            }
        })
        .collect();
    let tasks: Vec<(&str, &str, &[&str])> = (0..n)
        .map(|i| (ids[i].as_str(), "part", deps[i].as_slice()))
        .collect();
    plan(&format!("Company {prefix}"), &tasks)
}

/// Job `id`'s summary in a `batch.json`.
pub(crate) fn job_in(summary: &serde_json::Value, id: &str) -> serde_json::Value {
    summary["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .find(|j| j["id"] == id)
        .unwrap_or_else(|| panic!("no job {id}: {summary}"))
        .clone()
}

pub(crate) fn jsonl(dir: &Path, name: &str, lines: &[String]) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, lines.join("\n") + "\n").expect("write jobs");
    p
}

#[test]
fn bad_lines_are_reported_with_their_numbers_and_the_other_jobs_run() {
    let dir = tempdir();
    write_json(dir.path(), "a.json", &chain("a", 2));
    let jobs = jsonl(
        dir.path(),
        "jobs.jsonl",
        &[
            r#"{"id": "a", "plan_file": "a.json"}"#.into(),
            r#"{"id": "broken" "goal": 1}"#.into(),
            r#"{"id": "g", "goal": "深度分析特斯拉公司"}"#.into(),
            r#"{"id": "x", "goal": "y", "priority": 1}"#.into(),
            r#"{"id": "a", "goal": "again"}"#.into(),
            r#"{"id": "m", "plan_file": "missing.json"}"#.into(),
            format!(r#"{{"id": "p", "plan": {}}}"#, chain("p", 1)),
            r#"{"id": "cyc", "plan": {"topic": "t", "tasks": [{"id": 1, "description": "d", "dependencies": [1]}]}}"#.into(),
        ],
    );
    let out = dir.path().join("batch");
    let res = planwave(["batch"])
        .arg(&jobs)
        .out(&out)
        .opt("--llm", "sim")
        .instant()
        .quiet()
        .run();
    res.expect_code(3);
    let name = jobs.display().to_string();
    for expected in [
        format!("{name}: line 2: invalid JSON at column 17: expected `,` or `}}` (skipped)"),
        format!(
            "{name}: line 4: unknown field \"priority\" (expected id, goal, plan, plan_file, template, vars, metadata, answers) (skipped)"
        ),
        format!("{name}: line 5: duplicate job id \"a\" (first on line 1) (skipped)"),
        format!("{name}: line 6: job \"m\": plan file missing.json: "),
        format!("{name}: line 8: job \"cyc\": invalid plan: "),
    ] {
        assert!(res.stderr.contains(&expected), "{expected}\n{}", res.stderr);
    }
    let summary = read_json(&out.join("batch.json"));
    let states: Vec<(String, String)> = summary["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .map(|j| (id_text(&j["id"]), id_text(&j["state"])))
        .collect();
    assert_eq!(
        states,
        vec![
            ("a".into(), "completed".into()),
            ("g".into(), "completed".into()),
            ("p".into(), "completed".into())
        ]
    );
    let bad: Vec<u64> = summary["bad_lines"]
        .as_array()
        .expect("bad_lines")
        .iter()
        .map(|b| b["line"].as_u64().expect("line"))
        .collect();
    assert_eq!(bad, vec![2, 4, 5, 6, 8]);
    for d in ["a", "g", "p"] {
        assert!(out.join("jobs").join(d).join("report.md").is_file(), "{d}");
    }
    assert!(
        res.stdout
            .contains("3 job(s): 3 completed, 0 partial, 0 failed; 5 bad line(s) skipped"),
        "{}",
        res.stdout
    );

    // Nothing runnable at all: invalid input.
    let all_bad = jsonl(dir.path(), "bad.jsonl", &["not json".into(), "{}".into()]);
    let res = planwave(["batch"])
        .arg(&all_bad)
        .out(dir.path().join("none"))
        .opt("--llm", "sim")
        .run();
    res.expect_code(2);
    assert!(
        res.stderr.contains("line 1: invalid JSON"),
        "{}",
        res.stderr
    );
    assert!(
        res.stderr.contains("line 2: missing \"id\""),
        "{}",
        res.stderr
    );
    assert!(res.stderr.contains("no job to run"), "{}", res.stderr);
}

#[test]
fn max_subagents_caps_subagents_across_all_jobs_of_a_batch() {
    let server = SimLlm::start(&["--latency-ms", "30", "--sigma", "0"], &[]);
    let dir = tempdir();
    // Three jobs of four independent tasks each, all running at once.
    let wide = |p: &str| {
        let ids: Vec<String> = (1..=4).map(|i| format!("{p}{i}")).collect();
        let tasks: Vec<(&str, &str, &[&str])> =
            ids.iter().map(|i| (i.as_str(), "part", &[][..])).collect();
        plan(p, &tasks)
    };
    let lines: Vec<String> = ["x", "y", "z"]
        .iter()
        .map(|p| format!(r#"{{"id": "{p}", "plan": {}}}"#, wide(p)))
        .collect();
    let jobs = jsonl(dir.path(), "jobs.jsonl", &lines);
    let out = dir.path().join("capped");
    let res = planwave(["batch"])
        .arg(&jobs)
        .out(&out)
        .opt("--llm-base-url", &server.base_url)
        .opt("--model", "planwave-sim-1")
        .arg("--no-stream")
        .opt("--jobs", "3")
        .opt("--max-subagents", "2")
        .quiet()
        .run();
    res.expect_ok();
    let stats = server.stats();
    assert_eq!(stats["max_subagents_in_flight"], 2, "{stats}");
    assert_eq!(stats["roles"]["subagent"], 12, "{stats}");
}

#[test]
fn kill_9_mid_batch_then_resume_redoes_no_finished_task_or_job() {
    let server = SimLlm::start(&["--latency-ms", "120", "--sigma", "0"], &[]);
    let dir = tempdir();
    let lines: Vec<String> = [("j1", "a", 2), ("j2", "b", 5), ("j3", "c", 5)]
        .iter()
        .map(|(id, p, n)| format!(r#"{{"id": "{id}", "plan": {}}}"#, chain(p, *n)))
        .collect();
    let jobs = jsonl(dir.path(), "jobs.jsonl", &lines);
    let out = dir.path().join("killed");
    let out_s = out.to_str().expect("path");
    let mut child = planwave(["batch"])
        .arg(&jobs)
        .out(out_s)
        .opt("--llm-base-url", &server.base_url)
        .opt("--model", "planwave-sim-1")
        .opt("--jobs", "2")
        .spawn();
    // j1 is short: once it has finished, j2 is under way and j3 has started or is queued.
    child.wait_for("job j2: task b1 completed", 1);
    child.wait_for("job j1 finished: completed", 1);
    child.kill_9();

    let at_kill = read_json(&out.join("batch.json"));
    let finished: Vec<String> = at_kill["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .map(|j| id_text(&j["id"]))
        .collect();
    assert!(finished.contains(&"j1".to_owned()), "{at_kill}");
    assert!(
        finished.len() < 3,
        "the batch ended before the kill: {at_kill}"
    );
    let completed_before: Vec<String> = ["j1", "j2", "j3"]
        .iter()
        .filter(|j| out.join("jobs").join(j).join("events.jsonl").is_file())
        .flat_map(|j| events(&out.join("jobs").join(j)))
        .filter(|e| e["type"] == "task_completed")
        .map(|e| id_text(&e["task"]))
        .collect();
    let stats_before = server.stats();
    let calls_before: BTreeMap<String, u64> =
        serde_json::from_value(stats_before["tasks"].clone()).expect("tasks");

    let res = planwave(["batch"]).opt("--resume", out_s).quiet().run();
    res.expect_ok();
    assert!(
        res.stdout.contains("3 job(s): 3 completed"),
        "{}",
        res.stdout
    );
    let stats = server.stats();
    let calls: BTreeMap<String, u64> =
        serde_json::from_value(stats["tasks"].clone()).expect("tasks");
    for id in &completed_before {
        assert_eq!(calls.get(id), Some(&1), "task {id} ran twice: {calls:?}");
    }
    assert_eq!(calls.len(), 12, "{calls:?}");
    for (id, n) in &calls {
        let before = calls_before.get(id).copied().unwrap_or(0);
        assert!(n - before <= 1, "task {id} was sent {n} times");
    }
    // A finished job is not integrated again: at most one summary per unfinished job.
    let summaries = |s: &serde_json::Value| s["roles"]["integrator"].as_u64().unwrap_or(0);
    assert!(
        summaries(&stats) - summaries(&stats_before) <= (3 - finished.len()) as u64,
        "{stats}"
    );
    let summary = read_json(&out.join("batch.json"));
    assert_eq!(summary["completed"], 3);
    for j in ["j1", "j2", "j3"] {
        let r = read_json(&out.join("jobs").join(j).join("run.json"));
        assert_eq!(r["status"], "completed", "{j}");
    }
}

#[test]
fn an_unwritable_batch_directory_is_a_clear_error() {
    let dir = tempdir();
    write_json(dir.path(), "a.json", &chain("a", 1));
    let jobs = jsonl(
        dir.path(),
        "jobs.jsonl",
        &[r#"{"id": "a", "plan_file": "a.json"}"#.into()],
    );
    // A regular file where the directory should be: no permission tricks needed (tests
    // may run as root).
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "x").expect("write");
    let res = planwave(["batch"])
        .arg(&jobs)
        .out(blocker.join("out"))
        .opt("--llm", "sim")
        .run();
    // Said once, before anything starts.
    res.expect_code(2);
    assert_eq!(
        res.stderr.trim(),
        format!(
            "{}: cannot use it as the output directory: Not a directory (os error 20)",
            blocker.join("out").display()
        ),
    );
}

#[test]
fn one_set_of_mcp_servers_serves_every_job_of_a_batch() {
    let Some(js) = crate::support::peer(
        "npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    ) else {
        return;
    };
    let dir = tempdir();
    let cfg = write_json(
        dir.path(),
        "mcp.json",
        &serde_json::json!({"mcpServers": {"everything": {"command": "node", "args": [js, "stdio"]}}}),
    );
    let job = |id: &str| {
        let plan = serde_json::json!({"topic": format!("Audit {id}"), "tasks": [
            {"id": format!("{id}1"), "description": "Add two figures", "dependencies": [],
             "hints": {"suggested_tools": ["get-sum"]}}
        ]});
        format!(r#"{{"id": "{id}", "plan": {plan}}}"#)
    };
    let jobs = jsonl(dir.path(), "jobs.jsonl", &[job("m"), job("n"), job("o")]);
    let out = dir.path().join("tools");
    let res = planwave(["batch"])
        .arg(&jobs)
        .out(&out)
        .opt("--llm", "sim")
        .instant()
        .opt("--mcp-config", &cfg)
        .opt("--jobs", "3")
        .run();
    res.expect_ok();
    // Started once for the batch, not once per job.
    assert_eq!(res.stderr.matches("mcp: ").count(), 1, "{}", res.stderr);
    for id in ["m", "n", "o"] {
        let r = read_json(&out.join("jobs").join(id).join("run.json"));
        let calls = r["tasks"][0]["tool_calls"].as_array().expect("tool calls");
        assert_eq!(calls[0]["tool"], "get-sum", "{id}: {calls:?}");
        assert!(calls[0]["output"].as_str().is_some_and(|o| !o.is_empty()));
    }
}

#[test]
fn ctrl_c_stops_a_batch_gracefully_and_batch_resume_finishes_it() {
    let dir = tempdir();
    let lines: Vec<String> = [("k1", "k", 4), ("l1", "l", 4)]
        .iter()
        .map(|(id, p, n)| format!(r#"{{"id": "{id}", "plan": {}}}"#, chain(p, *n)))
        .collect();
    let jobs = jsonl(dir.path(), "jobs.jsonl", &lines);
    let out = dir.path().join("interrupted");
    let out_s = out.to_str().expect("path");
    let mut child = planwave(["batch"])
        .arg(&jobs)
        .out(out_s)
        .opt("--llm", "sim")
        .opt("--sim-latency-ms", "150")
        .opt("--sim-sigma", "0")
        .spawn();
    child.wait_for("job k1: task k1 completed", 1);
    child.interrupt();
    let (code, stdout) = child.wait();
    assert_eq!(code, 130, "{stdout}");
    assert!(
        stdout.contains(&format!("Continue with: planwave batch --resume {out_s}")),
        "{stdout}"
    );
    let summary = read_json(&out.join("batch.json"));
    assert!(summary["cancelled"].as_u64().unwrap_or(0) >= 1, "{summary}");

    let res = planwave(["batch"]).opt("--resume", out_s).quiet().run();
    res.expect_ok();
    let summary = read_json(&out.join("batch.json"));
    assert_eq!(summary["completed"], 2, "{summary}");
    // k1 was completed before Ctrl-C, so the resumed job kept it.
    let ev = events(&out.join("jobs").join("k1"));
    let k1_done = ev
        .iter()
        .filter(|e| e["type"] == "task_completed" && id_text(&e["task"]) == "k1")
        .count();
    assert_eq!(k1_done, 1, "k1 completed once");
    assert!(ev.iter().any(|e| e["type"] == "run_resumed"));
}

/// The sum of a goal job's planning attempts' model time, from its `planner/attempts.json`.
fn planning_ms(out: &Path, job: &str) -> f64 {
    read_json(&out.join("jobs").join(job).join("planner/attempts.json"))
        .as_array()
        .expect("attempts")
        .iter()
        .map(|a| a["duration_ms"].as_f64().expect("duration_ms"))
        .sum()
}

/// The batch's metrics: planning success rate, mean planning time and plan execution
/// success rate, in batch.json and in `planwave show BATCH_DIR`.
#[test]
fn batch_json_and_show_give_planning_and_execution_success_rates() {
    let dir = tempdir();
    let jobs = jsonl(
        dir.path(),
        "jobs.jsonl",
        &[
            r#"{"id": "g1", "goal": "Analyze Acme"}"#.into(),
            r#"{"id": "g2", "goal": "Analyze Beta"}"#.into(),
            format!(r#"{{"id": "p", "plan": {}}}"#, chain("p", 2)),
        ],
    );
    let out = dir.path().join("planned");
    // p2 fails every attempt: job p executes but only partially.
    planwave(["batch"])
        .arg(&jobs)
        .out(&out)
        .opt("--llm", "sim")
        .instant()
        .fast_retries()
        .opt("--sim-fail", "p2")
        .quiet()
        .run()
        .expect_code(3);
    let summary = read_json(&out.join("batch.json"));
    let job = |id: &str| job_in(&summary, id);
    let (ms1, ms2) = (planning_ms(&out, "g1"), planning_ms(&out, "g2"));
    assert_eq!(
        job("g1")["planning"],
        serde_json::json!({"valid": true, "attempts": 1, "ms": ms1})
    );
    assert!(
        job("p").get("planning").is_none(),
        "a given plan is not planned"
    );
    let m = &summary["metrics"];
    assert_eq!(
        (m["planned"].as_u64(), m["plans_valid"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(m["planning_success_rate"], 1.0);
    let mean = m["mean_planning_ms"].as_f64().expect("mean");
    assert!((mean - (ms1 + ms2) / 2.0).abs() < 1e-9, "{m}");
    assert_eq!(
        (m["executed"].as_u64(), m["executed_completed"].as_u64()),
        (Some(3), Some(2))
    );
    assert!((m["execution_success_rate"].as_f64().expect("rate") - 2.0 / 3.0).abs() < 1e-12);
    let shown = planwave(["show"]).arg(&out).run();
    shown.expect_ok();
    assert!(
        shown.stdout.contains(&format!(
            "planning: 2/2 goal job(s) got a valid plan (100.0%), mean planning time {mean:.1} ms\nexecution: 2/3 executed job(s) completed (66.7%)\n"
        )),
        "{}",
        shown.stdout
    );

    // Planning that never yields a valid plan: the goal job fails without executing.
    let jobs = jsonl(
        dir.path(),
        "failing.jsonl",
        &[
            r#"{"id": "g", "goal": "Analyze Gamma"}"#.into(),
            format!(r#"{{"id": "q", "plan": {}}}"#, chain("q", 1)),
        ],
    );
    let out = dir.path().join("unplanned");
    planwave(["batch"])
        .arg(&jobs)
        .out(&out)
        .opt("--llm", "sim")
        .instant()
        .opt("--sim-planner-faults", "prose")
        .opt("--planner-attempts", "1")
        .quiet()
        .run()
        .expect_code(3);
    let summary = read_json(&out.join("batch.json"));
    let g = &summary["jobs"][0];
    assert_eq!(
        (g["id"].as_str(), g["state"].as_str()),
        (Some("g"), Some("failed"))
    );
    assert_eq!(g["planning"]["valid"], false, "{g}");
    let m = &summary["metrics"];
    assert_eq!(m["planning_success_rate"], 0.0, "{m}");
    assert_eq!(m["mean_planning_ms"].as_f64(), Some(planning_ms(&out, "g")));
    assert_eq!(
        (m["executed"].as_u64(), m["executed_completed"].as_u64()),
        (Some(1), Some(1))
    );
    let shown = planwave(["show"]).arg(&out).run();
    shown.expect_ok();
    assert!(
        shown
            .stdout
            .contains("planning: 0/1 goal job(s) got a valid plan (0.0%)")
            && shown
                .stdout
                .contains("execution: 1/1 executed job(s) completed (100.0%)")
            && shown.stdout.contains("job g failed: planning failed"),
        "{}",
        shown.stdout
    );
}

#[test]
fn goal_jobs_run_the_reflective_loop_each_under_its_own_run_directory() {
    let dir = tempdir();
    let jobs = jsonl(
        dir.path(),
        "jobs.jsonl",
        &[
            r#"{"id": "tesla", "goal": "Deep analysis of Tesla"}"#.into(),
            r#"{"id": "byd", "goal": "深度分析比亚迪"}"#.into(),
            format!(r#"{{"id": "p", "plan": {}}}"#, chain("p", 2)),
        ],
    );
    let out = dir.path().join("b");
    planwave(["batch"])
        .arg(&jobs)
        .out(&out)
        .opt("--llm", "sim")
        .instant()
        .opt("--sim-scores", "40,96")
        .quiet()
        .run()
        .expect_ok();
    for id in ["tesla", "byd"] {
        let job = out.join("jobs").join(id);
        let run = read_json(&job.join("run.json"));
        assert_eq!(run["loop_stop_reason"], "correctness", "{id}: {run}");
        assert_eq!(run["best_round"], 2, "{id}");
        for k in ["1", "2"] {
            assert!(
                job.join("rounds").join(k).join("evaluation.json").is_file(),
                "{id}: round {k} evaluated"
            );
        }
    }
    // A given plan is run as it is: no rounds.
    assert!(!out.join("jobs/p/rounds").exists());

    // --max-rounds bounds each goal job's loop.
    let one = dir.path().join("one");
    planwave(["batch"])
        .arg(&jobs)
        .out(&one)
        .opt("--llm", "sim")
        .instant()
        .opt("--sim-scores", "40,96")
        .opt("--max-rounds", "1")
        .quiet()
        .run()
        .expect_ok();
    let run = read_json(&one.join("jobs/tesla/run.json"));
    assert_eq!(run["loop_stop_reason"], "max_rounds", "{run}");
    assert!(!one.join("jobs/tesla/rounds/2").exists());
}
