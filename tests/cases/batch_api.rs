//! `--batch-api` through the real binary against `sim-llm serve`'s Batch API: the same
//! sections and report as normal calls, dependents in later provider batches, injected line
//! errors retried, an expired batch's unfinished lines sent again, and a `kill -9` while
//! waiting on a batch resumed without submitting anything twice (the simulator counts every
//! `custom_id` it was sent).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::support::{
    Planwave, SimLlm, events, http_get_json, http_get_text, planwave, read_json, repo_file,
    tempdir, wait_for_in_file,
};

const PRICES: &str = r#"
[prices]
batch_discount = 0.5

[prices.models."planwave-sim-1"]
input_per_mtok = 2.0
output_per_mtok = 8.0
"#;

/// `run PLAN` against `server`, through its Batch API when `batch`.
pub(crate) fn run_on(
    server: &SimLlm,
    plan: &Path,
    out: &Path,
    config: &Path,
    batch: bool,
) -> Planwave {
    let p = planwave(["run"])
        .arg(plan)
        .out(out)
        .opt("--llm-base-url", &server.base_url)
        .opt("--model", "planwave-sim-1")
        .opt("--config", config)
        .fast_retries();
    if batch {
        p.arg("--batch-api")
            .opt("--batch-linger", "500ms")
            .opt("--batch-poll", "50ms")
            .opt("--batch-poll-max", "200ms")
    } else {
        p
    }
}

pub(crate) fn batch_stats(server: &SimLlm) -> Value {
    http_get_json(&server.base_url.replace("/v1", "/planwave/batch-stats"))
}

pub(crate) fn config(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("planwave.toml");
    std::fs::write(&path, PRICES).expect("config");
    path
}

/// Every section file of a run, by name.
fn sections(dir: &Path) -> BTreeMap<String, String> {
    std::fs::read_dir(dir.join("sections"))
        .expect("sections/")
        .flatten()
        .map(|e| {
            let text = std::fs::read_to_string(e.path()).expect("section");
            (e.file_name().to_string_lossy().into_owned(), text)
        })
        .collect()
}

/// The report's headings (its text around them holds timings).
fn headings(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("report.md"))
        .expect("report.md")
        .lines()
        .filter(|l| l.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// The provider batch (index in creation order) each line label (`subagent:3`) went in.
fn batch_of(stats: &Value) -> BTreeMap<String, usize> {
    let mut at = BTreeMap::new();
    for (i, b) in stats["batches"]
        .as_array()
        .expect("batches")
        .iter()
        .enumerate()
    {
        for label in b.as_array().expect("labels") {
            at.entry(label.as_str().unwrap_or_default().to_owned())
                .or_insert(i);
        }
    }
    at
}

#[test]
fn a_plan_through_the_batch_api_writes_the_same_report_with_dependents_in_later_batches() {
    let server = SimLlm::start(&["--batch-delay-ms", "100"], &[]);
    let dir = tempdir();
    let cfg = config(dir.path());
    let plan = crate::cases::durable::nine_tasks(dir.path());
    let (normal, batched) = (dir.path().join("normal"), dir.path().join("batched"));
    run_on(&server, &plan, &normal, &cfg, false)
        .quiet()
        .run()
        .expect_ok();
    let out = run_on(&server, &plan, &batched, &cfg, true).run();
    out.expect_ok();
    assert!(
        out.stderr.contains("waiting on provider batch batch_sim_"),
        "{}",
        out.stderr
    );
    assert_eq!(sections(&normal), sections(&batched));
    assert_eq!(headings(&normal), headings(&batched));
    let (a, b) = (
        read_json(&normal.join("run.json")),
        read_json(&batched.join("run.json")),
    );
    assert_eq!(b["status"], "completed");
    assert_eq!(
        a["stats"]["usage"], b["stats"]["usage"],
        "the same answers, the same usage"
    );
    // Priced at the batch price: half of the normal path's estimate.
    let (ca, cb) = (&a["stats"]["cost"], &b["stats"]["cost"]);
    assert_eq!(cb["batch_api"], true, "{cb}");
    let ratio = cb["total"].as_f64().unwrap_or(0.0) / ca["total"].as_f64().unwrap_or(1.0);
    assert!((ratio - 0.5).abs() < 1e-9, "{ca} {cb}");

    let stats = batch_stats(&server);
    assert_eq!(stats["duplicates"], serde_json::json!([]), "{stats}");
    let at = batch_of(&stats);
    // Every task's call went in a later batch than each of its prerequisites' calls.
    let p = read_json(&plan);
    for t in p["tasks"].as_array().expect("tasks") {
        let id = crate::support::id_text(&t["id"]);
        let mine = at[&format!("subagent:{id}")];
        for d in t["dependencies"].as_array().expect("deps") {
            let theirs = at[&format!("subagent:{}", crate::support::id_text(d))];
            assert!(
                mine > theirs,
                "task {id} in batch {mine}, prerequisite {d} in {theirs}"
            );
        }
    }
    assert!(at["integrator"] > at["subagent:9"], "{at:?}");
    // One batch per step of the plan's dataflow, and the integrator's.
    assert_eq!(u(&stats["batches_created"]), 6, "{stats}");
    the_uploaded_lines_hold_only_the_documented_fields(&server, 6);
    // The journal says which batches the run waited on, up to their completion.
    let batch_events: Vec<Value> = events(&batched)
        .into_iter()
        .filter(|e| e["type"] == "provider_batch")
        .collect();
    assert!(
        batch_events
            .iter()
            .any(|e| e["state"] == "completed" && e["batch_id"] == "batch_sim_2"),
        "{batch_events:?}"
    );
}

/// Every line of every file uploaded to `server` (`batches` of them) holds OpenAI's
/// documented fields and nothing else: what the simulator answers from (the labels above
/// name each line's task) came another way.
fn the_uploaded_lines_hold_only_the_documented_fields(server: &SimLlm, batches: usize) {
    let list = http_get_json(&format!("{}/batches?limit=100", server.base_url));
    let files: Vec<&str> = list["data"]
        .as_array()
        .expect("batches")
        .iter()
        .filter_map(|b| b["input_file_id"].as_str())
        .collect();
    assert_eq!(files.len(), batches, "{list}");
    for file in files {
        let text = http_get_text(&format!("{}/files/{file}/content", server.base_url));
        for line in text.lines() {
            let v: Value = serde_json::from_str(line).expect("a JSON line");
            let mut keys: Vec<&str> = v
                .as_object()
                .expect("an object")
                .keys()
                .map(String::as_str)
                .collect();
            keys.sort_unstable();
            assert_eq!(keys, ["body", "custom_id", "method", "url"], "{line}");
        }
    }
}

#[test]
fn injected_line_errors_are_retried_under_the_retry_policy() {
    // The server draws line errors from its seed and each line's body, so the same lines
    // fail on every run (with seed 3, a subagent's).
    let server = SimLlm::start(&["--batch-line-error-rate", "0.4", "--seed", "3"], &[]);
    let dir = tempdir();
    let cfg = config(dir.path());
    let out = dir.path().join("run");
    run_on(&server, &repo_file("examples/tesla.json"), &out, &cfg, true)
        .opt("--retries", "6")
        .quiet()
        .run()
        .expect_ok();
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["status"], "completed");
    let stats = batch_stats(&server);
    assert!(u(&stats["line_errors"]) > 0, "{stats}");
    let retries: Vec<Value> = events(&out)
        .into_iter()
        .filter(|e| e["type"] == "task_retry")
        .collect();
    assert!(
        !retries.is_empty(),
        "a failed line is retried like a failed call"
    );
    assert!(
        retries.iter().all(|e| e["error"]
            .as_str()
            .unwrap_or("")
            .contains("batch batch_sim_")),
        "{retries:?}"
    );
    // A retry is a new request: a new custom_id, nothing submitted twice.
    assert_eq!(stats["duplicates"], serde_json::json!([]), "{stats}");
}

#[test]
fn an_expired_batch_sends_only_its_unfinished_lines_again() {
    let server = SimLlm::start(
        &["--batch-expire-first", "1", "--batch-partial", "0.5"],
        &[],
    );
    let dir = tempdir();
    let cfg = config(dir.path());
    let out = dir.path().join("run");
    run_on(&server, &repo_file("examples/tesla.json"), &out, &cfg, true)
        .quiet()
        .run()
        .expect_ok();
    assert_eq!(read_json(&out.join("run.json"))["status"], "completed");
    let stats = batch_stats(&server);
    assert_eq!(u(&stats["expired"]), 1, "{stats}");
    // The first batch held tasks 1-3; half of them (rounded up) completed before it
    // expired, the one left was sent again, once.
    let first = stats["batches"][0].as_array().expect("first batch").len();
    assert_eq!(first, 3, "{stats}");
    let dups = stats["duplicates"].as_array().expect("duplicates");
    assert_eq!(dups.len(), 1, "{stats}");
    assert_eq!(u(&stats["custom_ids"][dups[0].as_str().unwrap_or("")]), 2);
    assert!(
        events(&out)
            .iter()
            .any(|e| e["type"] == "provider_batch" && e["state"] == "expired"),
        "the journal records the expiry"
    );
}

#[test]
fn kill_9_while_waiting_on_a_batch_then_resume_submits_nothing_twice() {
    // The first batch takes long enough to be waited on when the process dies.
    let server = SimLlm::start(&["--batch-delay-ms", "4000"], &[]);
    let dir = tempdir();
    let cfg = config(dir.path());
    let out = dir.path().join("run");
    let tesla = repo_file("examples/tesla.json");
    let running = run_on(&server, &tesla, &out, &cfg, true).quiet().spawn();
    // The batch is recorded and the journal says the run waits on it.
    wait_for_in_file(&out.join("provider-batches.jsonl"), "batch_id");
    wait_for_in_file(&out.join("events.jsonl"), "provider_batch");
    running.kill_9();
    let shown = planwave(["show"]).arg(&out).run();
    assert!(
        shown
            .stderr
            .contains("waiting on provider batch batch_sim_1"),
        "{}",
        shown.stderr
    );
    planwave(["resume"]).arg(&out).quiet().run().expect_ok();
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["status"], "completed");
    assert_eq!(run["stats"]["completed"], 4);
    let stats = batch_stats(&server);
    assert_eq!(stats["duplicates"], serde_json::json!([]), "{stats}");
    // Tasks 1-3 in the batch the first process submitted, task 4, then the summary.
    assert_eq!(u(&stats["batches_created"]), 3, "{stats}");
    for (id, n) in stats["custom_ids"].as_object().expect("ids") {
        assert_eq!(u(n), 1, "{id} submitted {n} times");
    }
}
