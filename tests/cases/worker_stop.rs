//! A worker's stop is bounded (issue 33, signals): given SIGTERM while its `nats-server` is
//! dead, a worker used to retry its journal publishes for minutes. Now, while stopping, a
//! publish is tried once and the jobs get `STOP_GRACE` (10 s) to be handed back; what could
//! not be is left to the ack-wait, and the worker says so and exits 0. Real binary, real
//! `nats-server` killed with SIGKILL.

use serde_json::json;

use crate::support::nats::{Nats, start_worker};
use crate::support::{SimLlm, planwave, tempdir};

#[test]
fn a_worker_stopped_while_its_server_is_dead_exits_leaving_its_job_to_the_ack_wait() {
    let dir = tempdir();
    let Some(mut nats) = Nats::start(&dir.path().join("js"), &[]) else {
        return;
    };
    let url = nats.url();
    // A model call that outlasts the test: the job is running when the server dies.
    let sim = SimLlm::start(&["--latency-ms", "600000", "--sigma", "0"], &[]);
    let mut worker = start_worker(&url, &sim, &dir.path().join("w"), &["--jobs", "1"]);
    let jobs = dir.path().join("jobs.jsonl");
    let job = json!({"id": "s1", "plan": {"topic": "stop", "tasks": [
        {"id": "s1t1", "description": "a long part", "dependencies": []}]}});
    std::fs::write(&jobs, format!("{job}\n")).expect("jobs");
    planwave(["batch"])
        .arg(&jobs)
        .opt("--nats", &url)
        .opt("--batch", "stopping")
        .run()
        .expect_ok();
    worker.running().wait_for("worker: running job s1", 1);
    nats.kill_9();
    // `terminate` allows the worker 30 s to exit (it used to take minutes).
    let (code, seen) = worker.terminate();
    assert_eq!(code, 0, "{seen:#?}");
    let stopped = seen
        .iter()
        .find(|l| l.contains(": stopped ("))
        .unwrap_or_else(|| panic!("no stop line: {seen:#?}"));
    assert!(
        stopped.contains("1 left to come back after the ack-wait"),
        "{stopped}"
    );
    assert!(
        seen.iter()
            .any(|l| l.contains("not handed back within 10s")),
        "{seen:#?}"
    );
}
