//! Issue 33, item 14, through the real binary: `batch cancel` racing a job's completion, on a
//! real `nats-server` with a real worker process. A finished job's state is final: `batch
//! status` and `batch fetch` agree, and a job that completed never reads `cancelled`.
//!
//! The race is made to happen every time, not hoped for: each process talks to the server
//! through a proxy ([`NatsProxy`]) that holds chosen protocol frames until the test lets them
//! go. The cancel reads the job while it is still `queued` and its write of `cancelled` is
//! held; meanwhile the worker runs the job to its end, and hears of the cancel only after its
//! run ended and before it stores its verdict. Then the cancel's write is let through.
//! `batch cancel` writes the job only by compare-and-set on what it read, so its write of a
//! record that changed meanwhile is refused; a worker keeps a completed run's verdict.

use serde_json::{Value, json};

use crate::support::nats::{Nats, start_worker, status, wait_status};
use crate::support::nats_proxy::NatsProxy;
use crate::support::{SimLlm, planwave, read_json, tempdir};

const JOB_RECORDS: &str = "$KV.planwave_jobs.job.race.";
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

    // The worker takes the job; its write of `running` is held, so the job still reads
    // `queued`. The cancel's news and the run's upload will be held too.
    let to_worker = NatsProxy::start(nats.port);
    to_worker.hold("running", |f| f.publishes(JOB_RECORDS));
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
    to_worker.wait_held("running");
    assert_eq!(job(&status(&url, "race"))["state"], "queued");

    // The cancel marks the batch, reads the job `queued`, and its write of it is held.
    let to_cancel = NatsProxy::start(nats.port);
    to_cancel.hold("cancel write", |f| f.publishes(JOB_RECORDS));
    let cancel = planwave(["batch", "cancel", "race", "--nats", &to_cancel.url()]).spawn();
    to_cancel.wait_held("cancel write");
    to_worker.wait_held("cancel news");

    // The job runs to its end; the worker hears of the cancel after its run ended, before
    // its verdict is stored.
    to_worker.release("running");
    to_worker.wait_held("upload");
    to_worker.release("cancel news");
    to_worker.release("upload");
    let s = wait_status(&url, "race", 60, |s| {
        job(s)["state"] != "queued" && job(s)["state"] != "running"
    });
    assert_eq!(job(&s)["state"], "completed", "{s:#}");

    // Now the cancel's write of what it read lands.
    to_cancel.release("cancel write");
    let (code, out) = cancel.wait();
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("0 queued job(s) dropped"), "{out}");

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
