//! Durable runs: `kill -9` in the middle of a run, then `planwave resume`, against the
//! simulator over real HTTP (which counts the model calls per task independently of us).

use std::collections::BTreeMap;
use std::path::Path;

use crate::support::{
    Planwave, SimLlm, events, id_text, plan, planwave, read_json, run_plan, tempdir, write_json,
};

/// A plan with fan-out, fan-in and independent tasks; with `--concurrency 2` it runs in
/// several steps, so a kill lands in the middle.
pub(crate) fn nine_tasks(dir: &Path) -> std::path::PathBuf {
    let p = plan(
        "Durable Co",
        &[
            ("1", "market", &[]),
            ("2", "products", &["1"]),
            ("3", "finance", &["1"]),
            ("4", "risks", &["2", "3"]),
            ("5", "people", &[]),
            ("6", "supply", &["5"]),
            ("7", "rivals", &[]),
            ("8", "outlook", &["4", "6", "7"]),
            ("9", "valuation", &["8"]),
        ],
    );
    write_json(dir, "plan.json", &p)
}

/// `run` against the simulator over HTTP, two tasks at a time.
fn on_server(plan: &Path, out: &Path, server: &SimLlm) -> Planwave {
    planwave(["run"])
        .arg(plan)
        .out(out)
        .opt("--llm-base-url", &server.base_url)
        .opt("--model", "planwave-sim-1")
        .opt("--concurrency", "2")
}

/// The report without its timing: the makespan line and the timeline's bars (wall-clock
/// times differ between any two runs).
fn report_without_timing(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("report.md"))
        .expect("report.md")
        .lines()
        .filter(|l| !l.contains("| 耗时 |") && !l.contains("| Makespan |"))
        .filter(|l| {
            ![":done, t", ":crit, t", ":active, t"]
                .iter()
                .any(|bar| l.contains(bar))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn completed_in_journal(dir: &Path) -> Vec<String> {
    events(dir)
        .iter()
        .filter(|e| e["type"] == "task_completed")
        .map(|e| id_text(&e["task"]))
        .collect()
}

#[test]
fn kill_9_mid_run_then_resume_runs_no_completed_task_twice_and_reports_the_same() {
    let dir = tempdir();
    let plan_path = nine_tasks(dir.path());

    // The reference: the same plan, uninterrupted, against its own fresh server.
    let reference_server = SimLlm::start(&["--latency-ms", "20", "--sigma", "0"], &[]);
    let reference = dir.path().join("reference");
    on_server(&plan_path, &reference, &reference_server)
        .quiet()
        .run()
        .expect_ok();

    let server = SimLlm::start(&["--latency-ms", "150", "--sigma", "0"], &[]);
    let out = dir.path().join("killed");
    let mut child = on_server(&plan_path, &out, &server).spawn();
    // A completion is printed only once it is durable; kill right after the third.
    child.wait_for(" completed in ", 3);
    child.kill_9();

    let before = completed_in_journal(&out);
    assert!(before.len() >= 3, "{before:?}");
    assert!(
        before.len() < 9,
        "the run finished before the kill: {before:?}"
    );
    assert!(
        !out.join("run.json").exists(),
        "a killed run writes no run.json"
    );
    let calls_before: BTreeMap<String, u64> =
        serde_json::from_value(server.stats()["tasks"].clone()).expect("task counts");

    let res = planwave(["resume"]).arg(&out).quiet().run();
    res.expect_ok();
    assert!(
        res.stdout
            .contains(&format!("{} of 9 tasks already completed", before.len())),
        "{}",
        res.stdout
    );

    // Counted by the server: a task completed before the kill was never sent again.
    let calls: BTreeMap<String, u64> =
        serde_json::from_value(server.stats()["tasks"].clone()).expect("task counts");
    for id in &before {
        assert_eq!(calls.get(id), Some(&1), "task {id}: {calls:?}");
    }
    for id in 1..=9 {
        let id = id.to_string();
        assert!(calls.get(&id).copied().unwrap_or(0) >= 1, "task {id}");
        // Only tasks in flight at the kill may have been sent twice.
        if !before.contains(&id) {
            assert!(
                calls[&id] - calls_before.get(&id).copied().unwrap_or(0) == 1,
                "task {id} was sent more than once by the resume: {calls:?}"
            );
        }
    }

    let run_json = read_json(&out.join("run.json"));
    assert_eq!(run_json["status"], "completed");
    assert_eq!(run_json["stats"]["completed"], 9);
    let all = completed_in_journal(&out);
    assert_eq!(
        all.len(),
        9,
        "each task completed once in the journal: {all:?}"
    );
    let evs = events(&out);
    assert_eq!(evs.iter().filter(|e| e["type"] == "run_resumed").count(), 1);
    assert_eq!(
        report_without_timing(&out),
        report_without_timing(&reference)
    );
}

#[test]
fn resume_of_a_finished_run_calls_no_subagent() {
    let dir = tempdir();
    let plan_path = nine_tasks(dir.path());
    let server = SimLlm::start(&[], &[]);
    let out = dir.path().join("done");
    on_server(&plan_path, &out, &server)
        .quiet()
        .run()
        .expect_ok();
    let first = report_without_timing(&out);
    let res = planwave(["resume"]).arg(&out).quiet().run();
    res.expect_ok();
    assert!(
        res.stdout.contains("9 of 9 tasks already completed"),
        "{}",
        res.stdout
    );
    let calls: BTreeMap<String, u64> =
        serde_json::from_value(server.stats()["tasks"].clone()).expect("task counts");
    assert!(calls.values().all(|&n| n == 1), "{calls:?}");
    assert_eq!(report_without_timing(&out), first);
}

/// Drops the journal's `task_completed` line of `task`, as if a crash came before it was
/// committed.
pub(crate) fn forget_completion(out: &Path, task: &str) {
    crate::support::edit_journal(out, |lines| {
        lines
            .into_iter()
            .filter(|l| {
                let e: serde_json::Value = serde_json::from_str(l).expect("event");
                !(e["type"] == "task_completed" && crate::support::id_text(&e["task"]) == task)
            })
            .collect()
    });
}

#[test]
fn a_changed_section_file_is_restored_from_the_journal_and_a_lost_completion_runs_again() {
    let dir = tempdir();
    let plan_path = nine_tasks(dir.path());
    let out = dir.path().join("tampered");
    let res = run_plan(&plan_path, &out).opt("--llm", "sim").quiet().run();
    res.expect_ok();
    let reference = report_without_timing(&out);
    // Damage (a crash after an unsynced write, or a hand edit): the journal's copy wins.
    std::fs::write(out.join("sections/9.md"), "edited by hand").expect("write");
    // A completion that never reached the journal: the task runs again.
    forget_completion(&out, "8");
    let res = planwave(["resume"]).arg(&out).quiet().run();
    res.expect_ok();
    assert!(
        res.stderr
            .contains("task 9: sections/9.md restored from the journal"),
        "{}",
        res.stderr
    );
    assert!(
        res.stdout.contains("8 of 9 tasks already completed"),
        "{}",
        res.stdout
    );
    assert_eq!(report_without_timing(&out), reference);
}

#[test]
fn a_second_process_on_one_run_dir_is_refused() {
    let dir = tempdir();
    let plan_path = nine_tasks(dir.path());
    let out = dir.path().join("busy");
    let mut first = planwave(["run"])
        .arg(&plan_path)
        .out(&out)
        .opt("--llm", "sim")
        .opt("--sim-latency-ms", "200")
        .opt("--sim-sigma", "0")
        .opt("--concurrency", "1")
        .spawn();
    first.wait_for(" started ", 1);
    let res = planwave(["resume"]).arg(&out).quiet().run();
    res.expect_code(1);
    assert!(
        res.stderr.contains("is in use by another planwave process"),
        "{}",
        res.stderr
    );
    first.kill_9();
}

/// `run` on the in-process simulator with a fixed latency, two tasks at a time.
pub(crate) fn on_sim(plan: &Path, out: &Path, latency_ms: &str) -> Planwave {
    planwave(["run"])
        .arg(plan)
        .out(out)
        .opt("--llm", "sim")
        .opt("--sim-latency-ms", latency_ms)
        .opt("--sim-sigma", "0")
        .opt("--concurrency", "2")
}

#[test]
fn ctrl_c_stops_gracefully_says_how_to_resume_and_resume_finishes_the_same_report() {
    let dir = tempdir();
    let plan_path = nine_tasks(dir.path());
    let reference = dir.path().join("reference");
    on_sim(&plan_path, &reference, "0")
        .quiet()
        .run()
        .expect_ok();

    let out = dir.path().join("interrupted");
    let mut child = on_sim(&plan_path, &out, "150").spawn();
    child.wait_for(" completed in ", 2);
    child.interrupt();
    let (code, stdout) = child.wait();
    assert_eq!(code, 130, "{stdout}");
    assert!(
        stdout.contains(&format!("Continue with: planwave resume {}", out.display())),
        "{stdout}"
    );
    let run_json = read_json(&out.join("run.json"));
    assert_eq!(run_json["status"], "cancelled");
    assert_eq!(run_json["stop_reason"], "interrupted");
    let finished: Vec<_> = events(&out)
        .into_iter()
        .filter(|e| e["type"] == "run_finished")
        .collect();
    assert_eq!(finished.len(), 1);
    assert_eq!(finished[0]["reason"], "interrupted");
    // Nothing completed is missing from disk.
    for id in completed_in_journal(&out) {
        assert!(out.join(format!("sections/{id}.md")).is_file(), "task {id}");
    }

    let res = planwave(["resume"]).arg(&out).quiet().run();
    res.expect_ok();
    assert_eq!(read_json(&out.join("run.json"))["status"], "completed");
    assert_eq!(
        report_without_timing(&out),
        report_without_timing(&reference)
    );
}

#[test]
fn deadline_stops_the_run_with_exit_4_and_task_timeout_fails_slow_tasks() {
    let dir = tempdir();
    let plan_path = nine_tasks(dir.path());
    // Tasks 1, 5 and 7 (the only ones without prerequisites) take 60 s: nothing can finish
    // before a 0.3 s deadline. The executive summary answers at once.
    let slow = write_json(
        dir.path(),
        "slow.json",
        &serde_json::json!({"1": 60000, "5": 60000, "7": 60000}),
    );
    let out = dir.path().join("deadline");
    let res = on_sim(&plan_path, &out, "0")
        .opt("--sim-latency-file", &slow)
        .opt("--deadline", "0.3")
        .quiet()
        .run();
    res.expect_code(4);
    assert!(res.stdout.contains("deadline reached"), "{}", res.stdout);
    let run_json = read_json(&out.join("run.json"));
    assert_eq!(run_json["stop_reason"], "deadline");
    assert_eq!(run_json["stats"]["completed"], 0);

    let out = dir.path().join("timeout");
    let res = on_sim(&plan_path, &out, "0")
        .opt("--sim-latency-file", &slow)
        .opt("--task-timeout", "0.2")
        .quiet()
        .run();
    res.expect_code(3);
    let run_json = read_json(&out.join("run.json"));
    let tasks = run_json["tasks"].as_array().expect("tasks");
    let failed: Vec<_> = tasks.iter().filter(|t| t["status"] == "failed").collect();
    assert_eq!(failed.len(), 3, "1, 5 and 7 have no prerequisites");
    for t in failed {
        assert_eq!(
            t["error"], "task timed out after 0.2 s (--task-timeout)",
            "{t}"
        );
    }
    assert!(tasks.iter().all(|t| t["status"] != "completed"));
}
