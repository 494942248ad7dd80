//! `provider-batches.jsonl` damaged by a crash, then `resume`, against `sim-llm serve`'s Batch
//! API: nothing is submitted twice when the ledger lost a batch's line and the provider holds
//! more than a page of newer batches (the look-up pages through the provider's list), and a
//! torn last line does not swallow the record appended after it.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::batch_api::{batch_stats, config, run_on};
use crate::support::{SimLlm, planwave, read_json, repo_file, tempdir, wait_for_in_file};

const LEDGER: &str = "provider-batches.jsonl";

/// The tesla plan run through `sim-llm serve`'s Batch API and killed (`kill -9`) while it
/// waits on its first batch, once that batch's line is in the ledger: the server, the
/// temporary directory and the run directory.
fn killed_while_waiting() -> (SimLlm, tempfile::TempDir, PathBuf) {
    // The first batch takes long enough to be waited on when the process dies.
    let server = SimLlm::start(&["--batch-delay-ms", "4000"], &[]);
    let dir = tempdir();
    let cfg = config(dir.path());
    let out = dir.path().join("run");
    let running = run_on(&server, &repo_file("examples/tesla.json"), &out, &cfg, true)
        .quiet()
        .spawn();
    wait_for_in_file(&out.join(LEDGER), "batch_id");
    wait_for_in_file(&out.join("events.jsonl"), "provider_batch");
    running.kill_9();
    (server, dir, out)
}

/// Every custom id the run's ledger records (each a call the run submitted).
fn recorded_ids(out: &Path) -> Vec<String> {
    std::fs::read_to_string(out.join(LEDGER))
        .expect("ledger")
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .flat_map(|v| {
            v["custom_ids"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter_map(|id| id.as_str().map(str::to_owned))
        })
        .collect()
}

fn assert_each_submitted_once(server: &SimLlm, ids: &[String]) {
    let stats = batch_stats(server);
    assert!(!ids.is_empty(), "the ledger records the run's calls");
    for id in ids {
        assert_eq!(
            stats["custom_ids"][id].as_u64(),
            Some(1),
            "{id} submitted once: {stats}"
        );
    }
}

/// `count` more batches at the provider, made by another client after the run's.
async fn newer_batches(server: &SimLlm, count: usize) {
    let http = planwave_tls::http_client().build().expect("client");
    let line = json!({
        "custom_id": "another-client-1", "method": "POST", "url": "/v1/chat/completions",
        "body": {"model": "planwave-sim-1", "messages": [{"role": "user", "content": "hi"}]},
    });
    let boundary = "another-client-boundary";
    let body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"other.jsonl\"\r\n\
         Content-Type: application/jsonl\r\n\r\n{line}\n\r\n--{boundary}--\r\n"
    );
    let file: Value = http
        .post(format!("{}/files", server.base_url))
        .header(
            "Content-Type",
            format!("multipart/form-data; boundary={boundary}"),
        )
        .body(body)
        .send()
        .await
        .expect("upload")
        .json()
        .await
        .expect("file object");
    let file_id = file["id"].as_str().expect("file id");
    for _ in 0..count {
        let r = http
            .post(format!("{}/batches", server.base_url))
            .json(
                &json!({"input_file_id": file_id, "endpoint": "/v1/chat/completions",
                          "completion_window": "24h"}),
            )
            .send()
            .await
            .expect("create");
        assert!(r.status().is_success(), "{:?}", r.text().await);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_batch_line_is_found_past_the_first_page_of_the_providers_batches() {
    let (server, _dir, out) = killed_while_waiting();
    // The crash came between the provider creating the batch and the ledger's sync.
    let ledger = out.join(LEDGER);
    let kept: String = std::fs::read_to_string(&ledger)
        .expect("ledger")
        .lines()
        .filter(|l| !l.contains("batch_id"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&ledger, kept).expect("write the ledger");
    // More than one page (100) of newer batches: the run's is on the second.
    newer_batches(&server, 120).await;
    let out2 = out.clone();
    tokio::task::spawn_blocking(move || {
        planwave(["resume"]).arg(&out2).quiet().run().expect_ok();
    })
    .await
    .expect("resume");
    assert_eq!(read_json(&out.join("run.json"))["status"], "completed");
    assert_each_submitted_once(&server, &recorded_ids(&out));
}

#[test]
fn a_torn_last_ledger_line_does_not_swallow_the_next_record() {
    let (server, _dir, out) = killed_while_waiting();
    // A crash in the middle of writing a line leaves it without its end.
    let ledger = out.join(LEDGER);
    let mut text = std::fs::read_to_string(&ledger).expect("ledger");
    let lines_before = text.lines().count();
    text.push_str("{\"file_id\":\"file-sim-9\",\"custom_ids\":[\"sub");
    std::fs::write(&ledger, text).expect("write the ledger");
    planwave(["resume"]).arg(&out).quiet().run().expect_ok();
    assert_eq!(read_json(&out.join("run.json"))["status"], "completed");
    // Every line stands alone: the torn one is gone, the resumed process's records whole.
    let text = std::fs::read_to_string(&ledger).expect("ledger");
    for (n, line) in text.lines().enumerate() {
        assert!(
            serde_json::from_str::<Value>(line).is_ok(),
            "line {} is not a record: {line}\n{text}",
            n + 1
        );
    }
    assert!(!text.contains("file-sim-9"), "{text}");
    // Task 4's batch and the summary's: their files and batches recorded.
    assert_eq!(text.lines().count(), lines_before + 4, "{text}");
    assert_each_submitted_once(&server, &recorded_ids(&out));
}
