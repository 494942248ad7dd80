//! `batch fetch NAME --out DIR` writes only into a new or empty
//! directory or an earlier fetch of the same batch, never over a user's files.

use std::path::Path;

use serde_json::json;

use crate::support::nats::{Nats, start_worker};
use crate::support::{SimLlm, planwave, read_json, tempdir};

/// `batch JOBS --nats URL --batch NAME --wait` with one one-task plan job.
fn submit_and_wait(url: &str, dir: &Path, name: &str) {
    let jobs = dir.join(format!("{name}.jsonl"));
    let job = json!({"id": format!("{name}1"), "plan": {"topic": name, "tasks": [
        {"id": format!("{name}t1"), "description": "one part", "dependencies": []}
    ]}});
    std::fs::write(&jobs, format!("{job}\n")).expect("jobs");
    planwave(["batch"])
        .arg(&jobs)
        .opt("--nats", url)
        .opt("--batch", name)
        .arg("--wait")
        .run()
        .expect_ok();
}

fn fetch(url: &str, name: &str, out: &Path) -> crate::support::Output {
    planwave(["batch", "fetch", name, "--nats", url])
        .out(out)
        .run()
}

#[test]
fn batch_fetch_never_writes_over_a_users_files_or_another_batch() {
    let dir = tempdir();
    let Some(nats) = Nats::start(&dir.path().join("js"), &[]) else {
        return;
    };
    let url = nats.url();
    let sim = SimLlm::start(&["--latency-ms", "0"], &[]);
    let _w = start_worker(&url, &sim, &dir.path().join("w"), &["--jobs", "1"]);
    submit_and_wait(&url, dir.path(), "alpha");
    submit_and_wait(&url, dir.path(), "beta");

    // A user's directory with their own batch.json and a report where a job's would go.
    let mine = dir.path().join("mine");
    std::fs::create_dir_all(mine.join("jobs/alpha1")).expect("dirs");
    std::fs::write(mine.join("batch.json"), "my own\n").expect("mine");
    std::fs::write(mine.join("jobs/alpha1/report.md"), "my notes\n").expect("mine");
    let r = fetch(&url, "alpha", &mine);
    r.expect_code(2);
    assert!(r.stderr.contains("is not empty"), "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(mine.join("batch.json")).expect("kept"),
        "my own\n"
    );
    assert_eq!(
        std::fs::read_to_string(mine.join("jobs/alpha1/report.md")).expect("kept"),
        "my notes\n"
    );

    // New, then again into its own earlier fetch: both fine.
    let out = dir.path().join("fetched");
    fetch(&url, "alpha", &out).expect_ok();
    assert_eq!(read_json(&out.join("batch.json"))["completed"], 1);
    fetch(&url, "alpha", &out).expect_ok();
    // An empty directory is fine too.
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).expect("empty");
    fetch(&url, "beta", &empty).expect_ok();
    // Another batch's fetch is not written over.
    let r = fetch(&url, "beta", &out);
    r.expect_code(2);
    assert!(
        r.stderr.contains("holds a fetch of batch \"alpha\""),
        "{}",
        r.stderr
    );
    assert!(out.join("jobs/alpha1/report.md").is_file());
    assert!(!out.join("jobs/beta1").exists());
}
