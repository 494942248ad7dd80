//! A worker riding out a queue that misbehaves, through the real binary with a real
//! `nats-server` and `sim-llm serve`: its watch on batch cancels outlives a hung and
//! restarted server (so `batch cancel` still reaches its running job), and a job whose
//! journal subject holds bytes that are not UTF-8 is still taken over where it was.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::nats::{Nats, start_worker, wait_status};
use crate::support::{SimLlm, planwave, tempdir};

/// A chain of `n` tasks `{p}1 -> {p}2 -> ...` (ids unique across tests: the simulator counts
/// requests per task id).
fn chain(p: &str, n: usize) -> Value {
    let tasks: Vec<Value> = (1..=n)
        .map(|i| {
            let deps: Vec<String> = if i > 1 {
                vec![format!("{p}{}", i - 1)]
            } else {
                vec![]
            };
            json!({"id": format!("{p}{i}"), "description": format!("part {i} of {p}"),
                   "dependencies": deps})
        })
        .collect();
    json!({"topic": p, "tasks": tasks})
}

/// A batch `batch` of one job `id`, a chain of `tasks` tasks `{id}t1...`, submitted.
fn submit_one(url: &str, dir: &Path, batch: &str, id: &str, tasks: usize) {
    let file: PathBuf = dir.join(format!("{batch}.jsonl"));
    let line = json!({"id": id, "plan": chain(&format!("{id}t"), tasks)}).to_string();
    std::fs::write(&file, line + "\n").expect("write jobs");
    planwave(["batch"])
        .arg(&file)
        .opt("--nats", url)
        .opt("--batch", batch)
        .run()
        .expect_ok();
}

fn task_calls(sim: &SimLlm) -> BTreeMap<String, u64> {
    serde_json::from_value(sim.stats()["tasks"].clone()).expect("tasks")
}

/// Task ids a worker printed as completed (`job J: task T completed`, printed once durable).
fn completed_tasks(lines: &[String]) -> BTreeSet<String> {
    lines
        .iter()
        .filter_map(|l| l.split(": task ").nth(1)?.strip_suffix(" completed"))
        .map(str::to_owned)
        .collect()
}

/// The journal subject of job `id` of `batch` (ids are hex-encoded in subjects).
fn journal_subject(batch: &str, id: &str) -> String {
    let key: String = id.bytes().map(|b| format!("{b:02x}")).collect();
    format!("planwave.journal.{batch}.{key}")
}

/// The server hangs (SIGSTOP) long enough for the worker's watch on batch records to miss
/// its heartbeats, then is killed and started again on its store: the watch, which once
/// ended for good on its first error, is opened again, and `batch cancel` stops the job
/// that kept running through all of it.
#[test]
fn batch_cancel_reaches_a_running_job_after_the_server_hung_and_restarted() {
    let dir = tempdir();
    let Some(mut nats) = Nats::start(&dir.path().join("js"), &[]) else {
        return;
    };
    let url = nats.url();
    let sim = SimLlm::start(&["--latency-ms", "400", "--sigma", "0"], &[]);
    // An ack-wait longer than the outage: the job stays this worker's throughout.
    let mut w = start_worker(
        &url,
        &sim,
        &dir.path().join("w"),
        &["--jobs", "1", "--name", "w", "--ack-wait", "120s"],
    );
    submit_one(&url, dir.path(), "hung", "h0", 40);
    w.running().wait_for("task h0t1 completed", 1);
    nats.pause();
    // The client's heartbeat window passes with the server silent: the watch fails.
    w.running().wait_for("the watch on batch cancels failed", 1);
    nats.restart();
    // Working again after the restart: a task completes (its journal stored on the server).
    let done = |w: &mut crate::support::nats::WorkerProc| {
        w.running()
            .seen()
            .iter()
            .filter(|l| l.contains(" completed"))
            .count()
    };
    let before = done(&mut w);
    w.running().wait_for(" completed", before + 1);
    let c = planwave(["batch", "cancel", "hung", "--nats", &url]).run();
    c.expect_ok();
    let s = wait_status(&url, "hung", 60, |s| s["counts"]["cancelled"] == 1);
    assert_eq!(s["jobs"][0]["worker"], "w", "{s}");
    let calls = task_calls(&sim);
    assert!(calls.len() < 40, "the job was stopped: {calls:?}");
    let (code, _) = w.terminate();
    assert_eq!(code, 0);
}

/// Bytes that are not UTF-8 on a job's journal subject (anyone allowed to publish can put
/// them there) once made the journal unreadable to the worker taking the job over, which
/// then ran the job again from nothing. The damaged line is skipped: the job goes on as the
/// same run, and no task completed before is sent to the model again.
#[test]
fn bytes_that_are_not_utf8_on_a_jobs_journal_do_not_stop_its_takeover() {
    let dir = tempdir();
    let Some(nats) = Nats::start(&dir.path().join("js"), &[]) else {
        return;
    };
    let url = nats.url();
    let sim = SimLlm::start(&["--latency-ms", "300", "--sigma", "0"], &[]);
    submit_one(&url, dir.path(), "utf", "u0", 6);
    let fast = ["--ack-wait", "2s", "--jobs", "1"];
    let mut a = start_worker(
        &url,
        &sim,
        &dir.path().join("a"),
        &[&fast[..], &["--name", "a"]].concat(),
    );
    a.running().wait_for(" completed", 2);
    let before = completed_tasks(&a.kill_9());
    assert!(!before.is_empty());
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let js = async_nats::jetstream::new(async_nats::connect(&url).await.expect("connect"));
        js.publish(
            journal_subject("utf", "u0"),
            b"\xff\xfe{\"type\":\"task_completed\"}\xc3\n"
                .to_vec()
                .into(),
        )
        .await
        .expect("publish")
        .await
        .expect("stored");
    });
    let mut b = start_worker(
        &url,
        &sim,
        &dir.path().join("b"),
        &[&fast[..], &["--name", "b"]].concat(),
    );
    let s = wait_status(&url, "utf", 90, |s| s["counts"]["completed"] == 1);
    assert_eq!(s["jobs"][0]["worker"], "b", "{s}");
    let calls = task_calls(&sim);
    assert_eq!(calls.len(), 6, "{calls:?}");
    for t in &before {
        assert_eq!(calls.get(t), Some(&1), "task {t} was sent again: {calls:?}");
    }
    b.terminate();
    // One run, resumed once: the takeover went on from the journal.
    let out = dir.path().join("fetched");
    planwave(["batch", "fetch", "utf", "--nats", &url])
        .out(&out)
        .run()
        .expect_ok();
    let journal = std::fs::read(out.join("jobs/u0/events.jsonl")).expect("journal");
    let events: Vec<Value> = journal
        .split(|&b| b == b'\n')
        .filter_map(|l| serde_json::from_slice(l).ok())
        .collect();
    let runs: BTreeSet<&str> = events.iter().filter_map(|e| e["run_id"].as_str()).collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let resumed = events.iter().filter(|e| e["type"] == "run_resumed").count();
    assert_eq!(resumed, 1);
}
