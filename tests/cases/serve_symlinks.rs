//! `planwave serve` serves only regular files inside `--data`: a link planted in a run
//! directory (its report, a section, its journal, its `run.json`, a round's evaluation), a
//! run directory that is itself a link, and a FIFO in place of a file are all answered as
//! missing, and nothing they point to is sent.

use std::os::unix::fs::symlink;
use std::path::Path;

use serde_json::{Value, json};

use super::serve::{Serve, client, runs};
use crate::support::{plan, read_json, run_plan, tempdir, write_json};

const SECRET: &str = "OUTSIDE-FILE-SECRET";

/// A finished run of two tasks in `dir`, about `topic`.
fn finished_run(dir: &Path, topic: &str, scratch: &Path) {
    let p = write_json(
        scratch,
        &format!("{topic}.json"),
        &plan(topic, &[("1", "a", &[]), ("2", "b", &["1"])]),
    );
    run_plan(&p, dir).run().expect_ok();
}

fn replace_with_link(path: &Path, target: &Path) {
    std::fs::remove_file(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    symlink(target, path).expect("symlink");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_follows_no_link_and_serves_no_file_outside_data() {
    let dir = tempdir();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let secret = dir.path().join("secret.txt");
    std::fs::write(&secret, format!("{SECRET}\n")).unwrap();
    let secret_json = dir.path().join("secret.json");
    std::fs::write(
        &secret_json,
        json!({"status": "completed", "topic": SECRET, "evaluation": SECRET, "tasks": []})
            .to_string(),
    )
    .unwrap();

    // Links in place of a run's report, a section and the journal.
    let victim = data.join("victim");
    finished_run(&victim, "victim", dir.path());
    let section = read_json(&victim.join("run.json"))["tasks"][0]["section_file"]
        .as_str()
        .expect("section_file")
        .to_owned();
    for rel in ["report.md", "report.html", section.as_str(), "events.jsonl"] {
        replace_with_link(&victim.join(rel), &secret);
    }
    // A link in place of run.json (and a round's evaluation).
    let other = data.join("other");
    finished_run(&other, "other", dir.path());
    replace_with_link(&other.join("run.json"), &secret_json);
    std::fs::create_dir_all(other.join("rounds/1")).unwrap();
    symlink(&secret_json, other.join("rounds/1/evaluation.json")).unwrap();
    // A run directory that is a link to one outside.
    let outside = dir.path().join("outside");
    finished_run(&outside, SECRET, dir.path());
    symlink(&outside, data.join("linked")).unwrap();
    // A FIFO in place of a report: opening it must not wait for a writer.
    let fifo = data.join("fifo");
    finished_run(&fifo, "fifo", dir.path());
    std::fs::remove_file(fifo.join("report.md")).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(fifo.join("report.md"))
        .status()
        .expect("mkfifo");
    assert!(made.success());

    let s = Serve::start_in(&data, "127.0.0.1:0", &[], &[]);
    let c = client();
    let get = |path: String, html: bool| {
        let c = c.clone();
        let url = s.at(&path);
        async move {
            let mut req = c.get(&url);
            if html {
                req = req.header("Accept", "text/html");
            }
            let r = req.send().await.expect("GET");
            (r.status().as_u16(), r.text().await.expect("body"))
        }
    };
    let mut answers: Vec<(String, u16, String)> = Vec::new();
    for (path, html) in [
        ("api/runs/victim/report", false),
        ("api/runs/victim/report", true),
        ("api/runs/victim/sections/1", false),
        ("api/runs/victim/events", false),
        ("api/runs/other", false),
        ("api/runs/other/sections/1", false),
        ("api/runs/other/rounds", false),
        ("api/runs/linked", false),
        ("api/runs/linked/report", false),
        ("api/runs/linked/events", false),
        ("runs/linked", false),
        ("runs/linked/dag.svg", false),
        ("api/runs/fifo/report", false),
        ("api/runs", false),
    ] {
        let (code, body) = get(path.to_owned(), html).await;
        answers.push((path.to_owned(), code, body));
    }
    let leaked: Vec<&str> = answers
        .iter()
        .filter(|(_, _, body)| body.contains(SECRET))
        .map(|(p, _, _)| p.as_str())
        .collect();
    assert_eq!(leaked, Vec::<&str>::new(), "{answers:#?}");
    let code = |p: &str| answers.iter().find(|a| a.0 == p).map(|a| a.1);
    for p in [
        "api/runs/victim/report",
        "api/runs/linked",
        "api/runs/linked/report",
        "api/runs/linked/events",
        "runs/linked",
        "api/runs/fifo/report",
    ] {
        assert_eq!(code(p), Some(404), "{p}: {answers:#?}");
    }
    let section: Value = serde_json::from_str(&answers[2].2).expect("the section's answer is JSON");
    assert_eq!(section["section"], Value::Null, "{section}");
    let ids: Vec<Value> = runs(&s).await.iter().map(|r| r["id"].clone()).collect();
    assert!(!ids.contains(&json!("linked")), "{ids:?}");
}
