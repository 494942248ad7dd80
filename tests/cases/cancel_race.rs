//! Issue 33, item 14, through the real binary: `batch cancel` racing a job's completion, on a
//! real `nats-server` with a real worker process. A finished job's state is final: `batch
//! status` and `batch fetch` agree, and a job that completed never reads `cancelled`.
//!
//! The race is made to happen every time, not hoped for: the worker talks to the server
//! through a proxy ([`NatsProxy`]) that holds chosen protocol frames until the test lets them
//! go. The worker runs the job to its end and its upload (before the verdict) is held; the
//! cancel runs then, and its news reaches the worker before the verdict is stored. A worker
//! keeps a completed run's verdict.

use serde_json::{Value, json};

use crate::support::nats::{Nats, start_worker, status, wait_status};
use crate::support::nats_proxy::NatsProxy;
use crate::support::{SimLlm, planwave, read_json, tempdir};

const BATCH_RECORD: &str = "$KV.planwave_jobs.batch.race";
const RUN_UPLOADS: &str = "$O.planwave_runs.C.";

fn job(s: &Value) -> &Value {
    &s["jobs"][0]
}

#[test]
fn a_job_that_completes_while_batch_cancel_runs_stays_completed_in_status_and_fetch() {
    let dir = tempdir();
    let Some(nats) = Nats::start(&dir.path().join("js"), &[]) else {
        return;
    };
    let url = nats.url();
    let sim = SimLlm::start(&["--latency-ms", "0", "--sigma", "0"], &[]);
    let jobs = dir.path().join("jobs.jsonl");
    let line = json!({"id": "r1", "plan": {"topic": "race", "tasks": [
        {"id": "r1t1", "description": "the one part", "dependencies": []}]}});
    std::fs::write(&jobs, format!("{line}\n")).expect("jobs");
    planwave(["batch"])
        .arg(&jobs)
        .opt("--nats", &url)
        .opt("--batch", "race")
        .run()
        .expect_ok();

    // The worker runs the job to its end; the run's upload, which comes before its verdict
    // is stored, is held, and so is the news of a cancel. (A cancel that lands before the
    // worker has registered the job cancels it at its start: the worker reads the batch's
    // record again after registering it, so a job can no longer run to its end while a
    // cancel reads it `queued`; the compare-and-set behind that is unit-tested in
    // `crates/queue/src/cancel.rs`.)
    let to_worker = NatsProxy::start(nats.port);
    to_worker.hold("cancel news", |f| {
        f.delivers(BATCH_RECORD, "\"cancelled\":true")
    });
    to_worker.hold("upload", |f| f.publishes(RUN_UPLOADS));
    let mut worker = start_worker(
        &to_worker.url(),
        &sim,
        &dir.path().join("w"),
        &["--jobs", "1"],
    );
    to_worker.wait_held("upload");

    // The cancel comes between the run's end and its verdict: it finds the job running and
    // drops nothing; its news reaches the worker before the verdict is stored.
    let (code, out) = planwave(["batch", "cancel", "race", "--nats", &url])
        .spawn()
        .wait();
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("0 queued job(s) dropped"), "{out}");
    to_worker.wait_held("cancel news");
    to_worker.release("cancel news");
    to_worker.release("upload");
    let s = wait_status(&url, "race", 60, |s| {
        job(s)["state"] != "queued" && job(s)["state"] != "running"
    });
    assert_eq!(job(&s)["state"], "completed", "{s:#}");

    let s = status(&url, "race");
    assert_eq!(job(&s)["state"], "completed", "{s:#}");
    assert_eq!(job(&s)["summary"]["state"], "completed", "{s:#}");
    assert_eq!(s["counts"]["cancelled"], 0, "{s:#}");
    let fetched = dir.path().join("fetched");
    planwave(["batch", "fetch", "race", "--nats", &url])
        .out(&fetched)
        .run()
        .expect_ok();
    let batch = read_json(&fetched.join("batch.json"));
    assert_eq!(batch["completed"], 1, "{batch:#}");
    assert_eq!(batch["jobs"][0]["state"], "completed", "{batch:#}");
    let run = read_json(&fetched.join("jobs/r1/run.json"));
    assert_eq!(run["status"], "completed");
    let (code, _) = worker.terminate();
    assert_eq!(code, 0);
}
