//! `planwave worker --batch-api` on a real `nats-server`, against `sim-llm serve`'s Batch
//! API: a worker killed (`kill -9`) while its jobs' calls wait in a provider batch is taken
//! over by another, which polls the same provider batch (the jobs' records of their batches
//! travel with their run directories through JetStream): every `custom_id` is submitted
//! exactly once, as the simulator counts them.

use serde_json::{Value, json};

use crate::support::nats::{Nats, start_worker, wait_status};
use crate::support::{SimLlm, events, http_get_json, planwave, tempdir};

/// A plan job: a chain of two tasks `{id}1 -> {id}2` (ids unique across jobs).
fn job(id: &str) -> String {
    let tasks = json!([
        {"id": format!("{id}1"), "description": format!("first part of {id}"), "dependencies": []},
        {"id": format!("{id}2"), "description": format!("second part of {id}"),
         "dependencies": [format!("{id}1")]},
    ]);
    json!({"id": id, "plan": {"topic": format!("{id} review"), "tasks": tasks}}).to_string()
}

const BATCH_API: [&str; 7] = [
    "--batch-api",
    "--batch-linger",
    "300ms",
    "--batch-poll",
    "100ms",
    "--batch-poll-max",
    "300ms",
];

#[test]
fn a_worker_killed_while_waiting_on_a_provider_batch_is_taken_over_without_resubmitting() {
    let dir = tempdir();
    let Some(nats) = Nats::start(&dir.path().join("js"), &[]) else {
        return;
    };
    let url = nats.url();
    // Long enough that the first batch is still running when worker a dies.
    let sim = SimLlm::start(&["--batch-delay-ms", "4000"], &[]);
    let jobs = dir.path().join("jobs.jsonl");
    std::fs::write(&jobs, format!("{}\n{}\n", job("p"), job("q"))).unwrap();
    planwave(["batch"])
        .arg(&jobs)
        .opt("--nats", &url)
        .opt("--batch", "waiting")
        .run()
        .expect_ok();
    let flags = |name: &'static str| -> Vec<&'static str> {
        [
            &["--ack-wait", "2s", "--jobs", "2", "--name", name][..],
            &BATCH_API[..],
        ]
        .concat()
    };
    let mut a = start_worker(&url, &sim, &dir.path().join("a"), &flags("a"));
    // The first calls are in a provider batch, recorded before it was created.
    a.running()
        .wait_for("waiting on provider batch batch_sim_1", 1);
    a.kill_9();

    let mut b = start_worker(&url, &sim, &dir.path().join("b"), &flags("b"));
    let s = wait_status(&url, "waiting", 90, |s: &Value| {
        s["counts"]["completed"] == 2
    });
    let seen = b.terminate().1;
    for j in s["jobs"].as_array().expect("jobs") {
        assert_eq!(j["worker"], "b", "{j}");
    }
    // b went on polling the batch a had submitted, to its end.
    assert!(
        seen.iter()
            .any(|l| l.contains("provider batch batch_sim_1: completed")),
        "{seen:#?}"
    );
    let stats = http_get_json(&sim.base_url.replace("/v1", "/planwave/batch-stats"));
    assert_eq!(stats["duplicates"], json!([]), "{stats}");
    // Two tasks and a summary per job, each submitted once.
    let ids = stats["custom_ids"].as_object().expect("custom ids");
    assert_eq!(ids.len(), 6, "{stats}");
    assert!(ids.values().all(|n| n == 1), "{stats}");

    let out = dir.path().join("fetched");
    planwave(["batch", "fetch", "waiting", "--nats", &url])
        .out(&out)
        .run()
        .expect_ok();
    // The jobs whose calls a's batch held (one or both: a may have died before the other
    // job's first call was ready).
    let first = stats["batches"][0].to_string();
    let held: Vec<&str> = ["p", "q"]
        .into_iter()
        .filter(|j| first.contains(&format!("subagent:{j}1")))
        .collect();
    assert!(!held.is_empty(), "{stats}");
    for j in held {
        let job_dir = out.join(format!("jobs/{j}"));
        assert!(
            events(&job_dir)
                .iter()
                .any(|e| e["type"] == "provider_batch"
                    && e["batch_id"] == "batch_sim_1"
                    && e["state"] == "completed"),
            "job {j}"
        );
        let ledger = std::fs::read_to_string(job_dir.join("provider-batches.jsonl"))
            .expect("the job's record of its batches");
        assert!(ledger.contains("batch_sim_1"), "{ledger}");
    }
}
