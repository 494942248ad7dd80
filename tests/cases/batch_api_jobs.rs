//! `batch JOBS --batch-api` through the real binary against `sim-llm serve`'s Batch API:
//! provider batches shared by several jobs, each job's journal naming only the batches that
//! hold its own calls (with its count of calls in each), and a batch submitted as soon as
//! every job waits on the Batch API, so a batch of jobs takes one provider batch per step of
//! its deepest job (with a linger of an hour, nothing would be submitted otherwise).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};

use crate::support::{SimLlm, events, http_get_json, planwave, tempdir};

/// A job whose plan is a chain of `n` tasks `{id}1 -> {id}2 -> ...` (task ids unique across
/// jobs: the server's batch stats name each line by its task).
fn chain_job(id: &str, n: usize) -> String {
    let tasks: Vec<Value> = (1..=n)
        .map(|i| {
            let deps: Vec<String> = if i > 1 {
                vec![format!("{id}{}", i - 1)]
            } else {
                vec![]
            };
            json!({"id": format!("{id}{i}"), "description": format!("part {i} of {id}"),
                   "dependencies": deps, "hints": {"key_questions": ["what?"]}})
        })
        .collect();
    let plan = json!({"topic": format!("{id} review"), "objectives": ["know it"], "tasks": tasks});
    json!({"id": id, "plan": plan}).to_string()
}

/// Each provider batch a job's journal names, with the job's count of calls in it (the last
/// event of each batch).
fn batches_heard(dir: &Path) -> BTreeMap<String, u64> {
    events(dir)
        .into_iter()
        .filter(|e| e["type"] == "provider_batch")
        .map(|e| {
            (
                e["batch_id"].as_str().unwrap_or_default().to_owned(),
                e["calls"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

#[test]
fn each_job_hears_only_its_own_provider_batches_and_every_step_is_one_batch() {
    let server = SimLlm::start(&["--batch-delay-ms", "200"], &[]);
    let dir = tempdir();
    let jobs = dir.path().join("jobs.jsonl");
    // "s": one task, then its summary (two steps); "l": three tasks in a chain, then its
    // summary (four steps). Their first two steps share provider batches.
    std::fs::write(
        &jobs,
        format!("{}\n{}\n", chain_job("s", 1), chain_job("l", 3)),
    )
    .unwrap();
    let out = dir.path().join("out");
    let mut running = planwave(["batch"])
        .arg(&jobs)
        .out(&out)
        .opt("--jobs", "2")
        .opt("--llm-base-url", &server.base_url)
        .opt("--model", "planwave-sim-1")
        .arg("--batch-api")
        // Never reached: each batch goes once both jobs wait on the Batch API.
        .opt("--batch-linger", "1h")
        .opt("--batch-poll", "50ms")
        .opt("--batch-poll-max", "200ms")
        .spawn();
    running.wait_for(" finished: completed", 2);
    let (code, _) = running.wait();
    assert_eq!(code, 0);

    let stats = http_get_json(&server.base_url.replace("/v1", "/planwave/batch-stats"));
    let labels: Vec<Vec<String>> = serde_json::from_value(stats["batches"].clone()).unwrap();
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    let batches: Vec<Vec<String>> = labels.into_iter().map(sorted).collect();
    assert_eq!(
        batches,
        [
            vec!["subagent:l1", "subagent:s1"],
            vec!["integrator", "subagent:l2"],
            vec!["subagent:l3"],
            vec!["integrator"],
        ],
        "{stats}"
    );
    assert_eq!(stats["duplicates"], json!([]), "{stats}");

    let one = |ids: &[&str]| -> BTreeMap<String, u64> {
        ids.iter().map(|b| ((*b).to_owned(), 1)).collect()
    };
    assert_eq!(
        batches_heard(&out.join("jobs/s")),
        one(&["batch_sim_1", "batch_sim_2"]),
        "job s hears only of the batches with its calls"
    );
    assert_eq!(
        batches_heard(&out.join("jobs/l")),
        one(&["batch_sim_1", "batch_sim_2", "batch_sim_3", "batch_sim_4"])
    );
    // Each job keeps the record of its own calls; the batch directory none.
    for job in ["s", "l"] {
        let ledger =
            std::fs::read_to_string(out.join(format!("jobs/{job}/provider-batches.jsonl")))
                .expect("the job's ledger");
        assert!(ledger.contains("batch_sim_1"), "{ledger}");
    }
    assert!(!out.join("provider-batches.jsonl").exists());
}
