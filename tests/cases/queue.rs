//! Batches on NATS JetStream through the real binary: a real `nats-server` (one node, a
//! restarted one, a cluster of three), `sim-llm serve` counting what each task sent to the
//! model, and worker processes killed with SIGKILL or stopped with SIGTERM.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::nats::{Nats, WorkerProc, cluster3, start_worker, status, wait_status};
use crate::support::{SimLlm, all_files, events, planwave, read_json, tempdir};

/// A chain of `n` tasks `{p}1 -> {p}2 -> ...` (ids unique across jobs: the sim server
/// counts requests per task id).
fn chain(p: &str, n: usize) -> Value {
    let tasks: Vec<Value> = (1..=n)
        .map(|i| {
            let deps: Vec<String> = if i > 1 {
                vec![format!("{p}{}", i - 1)]
            } else {
                vec![]
            };
            json!({"id": format!("{p}{i}"), "description": format!("part {i} of {p}"),
                   "dependencies": deps, "hints": {"key_questions": ["what?"]}})
        })
        .collect();
    json!({"research_type": "company", "topic": p, "objectives": ["know it"], "tasks": tasks})
}

fn jobs_file(dir: &Path, lines: &[String]) -> PathBuf {
    let p = dir.join("jobs.jsonl");
    std::fs::write(&p, lines.join("\n") + "\n").expect("write jobs");
    p
}

/// Jobs `{prefix}{j}` for j in 0..n, each a chain of `tasks` tasks named `{prefix}{j}t{i}`.
fn chain_jobs(prefix: &str, n: usize, tasks: usize) -> Vec<String> {
    (0..n)
        .map(|j| {
            let id = format!("{prefix}{j}");
            json!({"id": id, "plan": chain(&format!("{id}t"), tasks)}).to_string()
        })
        .collect()
}

fn completed(n: u64) -> impl Fn(&Value) -> bool {
    move |s| s["counts"]["completed"] == n
}

fn task_calls(sim: &SimLlm) -> BTreeMap<String, u64> {
    serde_json::from_value(sim.stats()["tasks"].clone()).expect("tasks")
}

/// Task ids a worker printed as completed (`job J: task T completed`): printed only once
/// durable, here in JetStream.
fn completed_tasks(lines: &[String]) -> BTreeSet<String> {
    lines
        .iter()
        .filter_map(|l| {
            let rest = l.split(": task ").nth(1)?;
            rest.strip_suffix(" completed").map(str::to_owned)
        })
        .collect()
}

fn submit(url: &str, file: &Path, batch: &str) -> crate::support::Output {
    planwave(["batch"])
        .arg(file)
        .opt("--nats", url)
        .opt("--batch", batch)
        .run()
}

#[test]
fn three_workers_drain_thirty_jobs_each_task_sent_once_and_fetch_writes_a_batch_directory() {
    let dir = tempdir();
    let Some(nats) = Nats::start(&dir.path().join("js"), &[]) else {
        return;
    };
    let url = nats.url();
    let sim = SimLlm::start(&["--latency-ms", "20", "--sigma", "0"], &[]);
    let mut lines = chain_jobs("d", 30, 2);
    lines.push("not json".into());
    let file = jobs_file(dir.path(), &lines);
    let first = submit(&url, &file, "drain");
    // Bad lines as a local batch reports them; the batch is queued without them.
    first.expect_code(3);
    assert!(
        first.stderr.contains("line 31: invalid JSON"),
        "{}",
        first.stderr
    );
    assert!(
        first.stdout.contains("30 job(s) queued, 0 already"),
        "{}",
        first.stdout
    );

    let mut workers: Vec<WorkerProc> = (0..3)
        .map(|i| {
            let name = format!("w{i}");
            let cache = dir.path().join(format!("cache-{i}"));
            start_worker(&url, &sim, &cache, &["--jobs", "2", "--name", &name, "-q"])
        })
        .collect();
    // Submitting the same file again adds nothing.
    let again = submit(&url, &file, "drain");
    assert!(
        again.stdout.contains("0 job(s) queued, 30 already"),
        "{}",
        again.stdout
    );

    let s = wait_status(&url, "drain", 120, completed(30));
    let calls = task_calls(&sim);
    assert_eq!(calls.len(), 60, "{calls:?}");
    assert!(
        calls.values().all(|&n| n == 1),
        "a task was sent twice: {calls:?}"
    );
    let ran_on: BTreeSet<&str> = s["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .filter_map(|j| j["worker"].as_str())
        .collect();
    assert!(ran_on.len() >= 2, "one worker did everything: {ran_on:?}");
    for w in &mut workers {
        let (code, _) = w.terminate();
        assert_eq!(code, 0);
    }

    let out = dir.path().join("fetched");
    let f = planwave(["batch", "fetch", "drain", "--nats", &url])
        .out(&out)
        .run();
    f.expect_ok();
    let batch = read_json(&out.join("batch.json"));
    assert_eq!(batch["completed"], 30, "{batch}");
    assert_eq!(batch["bad_lines"].as_array().map(Vec::len), Some(1));
    for j in ["d0", "d29"] {
        let run = out.join("jobs").join(j);
        for file in ["report.md", "run.json", "events.jsonl", "plan.json"] {
            assert!(run.join(file).is_file(), "{j}/{file}");
        }
        assert!(run.join("sections").is_dir());
        let shown = planwave(["show"]).arg(&run).run();
        shown.expect_ok();
        assert!(
            shown.stdout.contains("status completed"),
            "{}",
            shown.stdout
        );
    }
}

#[test]
fn kill_9_of_a_worker_mid_batch_another_resumes_its_jobs_without_resending_completed_tasks() {
    let dir = tempdir();
    let Some(nats) = Nats::start(&dir.path().join("js"), &[]) else {
        return;
    };
    let url = nats.url();
    let sim = SimLlm::start(&["--latency-ms", "150", "--sigma", "0"], &[]);
    let file = jobs_file(dir.path(), &chain_jobs("k", 3, 5));
    submit(&url, &file, "crash").expect_ok();
    let fast = ["--ack-wait", "2s", "--jobs", "3"];
    let mut a = start_worker(
        &url,
        &sim,
        &dir.path().join("a"),
        &[&fast[..], &["--name", "a"]].concat(),
    );
    // Several tasks of every job done, none of the jobs finished.
    a.running().wait_for(" completed", 5);
    let before = completed_tasks(&a.kill_9());
    let calls_before = task_calls(&sim);

    let mut b = start_worker(
        &url,
        &sim,
        &dir.path().join("b"),
        &[&fast[..], &["--name", "b"]].concat(),
    );
    let s = wait_status(&url, "crash", 90, completed(3));
    for j in s["jobs"].as_array().expect("jobs") {
        assert_eq!(j["worker"], "b", "{j}");
        assert_eq!(j["deliveries"], 2, "{j}");
    }
    let calls = task_calls(&sim);
    assert_eq!(calls.len(), 15, "{calls:?}");
    assert!(!before.is_empty());
    for t in &before {
        assert_eq!(calls.get(t), Some(&1), "task {t} was sent again: {calls:?}");
    }
    for (t, n) in &calls {
        let was = calls_before.get(t).copied().unwrap_or(0);
        assert!(n - was <= 1, "task {t} sent {n} times");
    }
    b.terminate();
    // Each job went on as the same run, resumed once (the one resume records it), keeping
    // every task worker a had completed.
    let out = dir.path().join("fetched");
    planwave(["batch", "fetch", "crash", "--nats", &url])
        .out(&out)
        .run()
        .expect_ok();
    for j in 0..3 {
        let evs = events(&out.join(format!("jobs/k{j}")));
        let runs: BTreeSet<&str> = evs.iter().filter_map(|e| e["run_id"].as_str()).collect();
        assert_eq!(runs.len(), 1, "job k{j}: {runs:?}");
        let resumed: Vec<&Value> = evs.iter().filter(|e| e["type"] == "run_resumed").collect();
        assert_eq!(resumed.len(), 1, "job k{j}: {resumed:?}");
        let kept = before
            .iter()
            .filter(|t| t.starts_with(&format!("k{j}t")))
            .count();
        let completed = resumed[0]["completed"].as_u64().expect("completed") as usize;
        assert!(completed >= kept, "job k{j}: {completed} kept of {kept}");
    }
}

#[test]
fn kill_9_mid_goal_job_another_worker_resumes_its_round_without_resending_completed_tasks() {
    let dir = tempdir();
    let Some(nats) = Nats::start(&dir.path().join("js"), &[]) else {
        return;
    };
    let url = nats.url();
    let sim = SimLlm::start(&["--latency-ms", "150", "--sigma", "0"], &[]);
    // One round: the sim planner's task ids are then unique to the job.
    let goal = json!({"id": "goal", "goal": "深度分析特斯拉公司"}).to_string();
    submit(&url, &jobs_file(dir.path(), &[goal]), "goalcrash").expect_ok();
    let fast = ["--ack-wait", "2s", "--jobs", "1", "--max-rounds", "1"];
    let mut a = start_worker(
        &url,
        &sim,
        &dir.path().join("a"),
        &[&fast[..], &["--name", "a"]].concat(),
    );
    a.running().wait_for(" completed", 2);
    let before = completed_tasks(&a.kill_9());
    let calls_before = task_calls(&sim);
    let planner_before = sim.stats()["roles"]["planner"].clone();

    let mut b = start_worker(
        &url,
        &sim,
        &dir.path().join("b"),
        &[&fast[..], &["--name", "b"]].concat(),
    );
    let s = wait_status(&url, "goalcrash", 90, completed(1));
    let seen = b.terminate().1;
    assert_eq!(s["jobs"][0]["worker"], "b", "{s}");
    assert!(seen.iter().any(|l| l.contains("restored")), "{seen:#?}");
    // The plan came from the mirrored round: not planned again.
    assert_eq!(
        sim.stats()["roles"]["planner"],
        planner_before,
        "{}",
        sim.stats()
    );
    let calls = task_calls(&sim);
    assert!(before.len() >= 2, "{before:?}");
    for t in &before {
        assert_eq!(calls.get(t), Some(&1), "task {t} was sent again: {calls:?}");
    }
    for (t, n) in &calls {
        let was = calls_before.get(t).copied().unwrap_or(0);
        assert!(n - was <= 1, "task {t} sent {n} times");
    }
    let out = dir.path().join("fetched");
    planwave(["batch", "fetch", "goalcrash", "--nats", &url])
        .out(&out)
        .run()
        .expect_ok();
    assert!(out.join("jobs/goal/rounds/1/run.json").is_file());
}

#[test]
fn sigterm_hands_jobs_back_at_once_without_using_up_deliveries_and_a_poison_job_ends_failed() {
    let dir = tempdir();
    let Some(nats) = Nats::start(&dir.path().join("js"), &[]) else {
        return;
    };
    let url = nats.url();
    let sim = SimLlm::start(&["--latency-ms", "200", "--sigma", "0"], &[]);
    // A tool no worker has: the job cannot start anywhere.
    let poison = json!({"id": "poison", "plan": {"goal": "Use a missing tool", "steps": [
        {"step_id": "x", "description": "Calls nothing real", "tool": "nosuch__tool", "params": {}}
    ]}});
    let mut lines = chain_jobs("s", 1, 6);
    lines.push(poison.to_string());
    let file = jobs_file(dir.path(), &lines);
    submit(&url, &file, "stop").expect_ok();
    // A long ack-wait: the job must come back by the nak, not by a timeout.
    let slow = ["--ack-wait", "60s", "--jobs", "2"];
    let mut a = start_worker(
        &url,
        &sim,
        &dir.path().join("a"),
        &[&slow[..], &["--name", "a"]].concat(),
    );
    a.running().wait_for("task s0t1 completed", 1);
    let (code, seen) = a.terminate();
    assert_eq!(code, 0, "{seen:#?}");
    assert!(
        seen.iter().any(|l| l.contains("job s0 handed back")),
        "{seen:#?}"
    );
    let mut kept = completed_tasks(&seen);
    assert!(kept.contains("s0t1"), "{kept:?}");
    let s = status(&url, "stop");
    let s0 = &s["jobs"][0];
    assert_eq!(s0["state"], "queued", "{s0}");
    assert!(
        s0["reason"]
            .as_str()
            .unwrap_or("")
            .contains("handed back by a"),
        "{s0}"
    );

    // Handed back by stopping workers as often as max_deliver allows deliveries: hand-backs
    // are no failures, so the job is not given up.
    // The consumer's ack-wait is shared: c changes it (and says so), d keeps what it finds.
    for (name, ack_wait) in [("c", Some("50s")), ("d", None)] {
        let mut args = vec!["--jobs", "2", "--name", name];
        args.extend(ack_wait.map(|a| ["--ack-wait", a]).into_iter().flatten());
        let mut w = start_worker(&url, &sim, &dir.path().join(name), &args);
        w.running().wait_for("running job s0 of batch stop", 1);
        let (code, seen) = w.terminate();
        assert_eq!(code, 0, "{seen:#?}");
        let changed = seen.iter().any(|l| {
            l.contains("ack-wait of the consumer all workers share changed from 60s to 50s")
        });
        assert_eq!(changed, ack_wait.is_some(), "{seen:#?}");
        assert!(
            seen.iter().any(|l| l.contains("job s0 handed back")),
            "{seen:#?}"
        );
        kept.extend(completed_tasks(&seen));
    }
    assert_eq!(status(&url, "stop")["jobs"][0]["state"], "queued");

    let mut b = start_worker(
        &url,
        &sim,
        &dir.path().join("b"),
        &[&slow[..], &["--name", "b"]].concat(),
    );
    let s = wait_status(&url, "stop", 60, |s| {
        s["counts"]["completed"] == 1 && s["counts"]["failed"] == 1
    });
    b.terminate();
    let poison = &s["jobs"][1];
    assert_eq!(poison["state"], "failed", "{poison}");
    let reason = poison["reason"].as_str().unwrap_or("");
    assert!(reason.contains("gave up after 3 deliveries"), "{reason}");
    assert!(reason.contains("unknown tool nosuch__tool"), "{reason}");
    // The handed-back job went on from its journal: what was done is not sent again.
    let calls = task_calls(&sim);
    for t in &kept {
        assert_eq!(calls.get(t), Some(&1), "task {t} was sent again: {calls:?}");
    }
    assert_eq!(calls.len(), 6, "{calls:?}");
    let s0 = &s["jobs"][0];
    assert!(s0["deliveries"].as_u64().unwrap_or(0) >= 4, "{s0}");
}

#[test]
fn credentials_in_the_nats_url_and_the_model_key_appear_in_no_output_file_or_queue() {
    let dir = tempdir();
    let secret = "n4ts-s3cret-pw";
    let store = dir.path().join("js");
    let Some(nats) = Nats::start(&store, &["--user", "planwave", "--pass", secret]) else {
        return;
    };
    let url = format!("nats://planwave:{secret}@127.0.0.1:{}", nats.port);
    let key = "sk-model-key-never-queued";
    let sim = SimLlm::start(&["--latency-ms", "5", "--sigma", "0"], &[]);
    let file = jobs_file(dir.path(), &chain_jobs("c", 2, 2));
    let mut outputs = Vec::new();
    let sub = submit(&url, &file, "creds");
    sub.expect_ok();
    outputs.push(sub.stdout + &sub.stderr);
    let cache = dir.path().join("cache");
    let mut w = WorkerProc(Some(
        planwave(["worker", "--nats", &url])
            .opt("--llm-base-url", &sim.base_url)
            .opt("--model", "planwave-sim-1")
            .arg("--no-stream")
            .opt("--cache", &cache)
            .env("PLANWAVE_LLM_API_KEY", key)
            .spawn(),
    ));
    let s = wait_status(&url, "creds", 60, completed(2));
    outputs.push(s.to_string());
    let (_, seen) = w.terminate();
    outputs.push(seen.join("\n"));
    let table = planwave(["batch", "status", "creds", "--nats", &url]).run();
    outputs.push(table.stdout + &table.stderr);
    let out = dir.path().join("fetched");
    let f = planwave(["batch", "fetch", "creds", "--nats", &url])
        .out(&out)
        .run();
    f.expect_ok();
    outputs.push(f.stdout + &f.stderr);
    // The workers really used the key (the model saw it) ...
    assert_eq!(sim.stats()["authorized"], sim.stats()["requests"]);
    // ... and a wrong password is a clear error that shows no password either.
    let wrong = format!("nats://planwave:wrong-{secret}@127.0.0.1:{}", nats.port);
    let bad = planwave(["batch", "status", "creds", "--nats", &wrong]).run();
    assert_ne!(bad.code, 0);
    assert!(
        bad.stderr.contains("nats://***@127.0.0.1"),
        "{}",
        bad.stderr
    );
    outputs.push(bad.stdout + &bad.stderr);
    for text in &outputs {
        assert!(!text.contains(secret), "{text}");
        assert!(!text.contains(key), "{text}");
    }
    for (path, text) in all_files(&out) {
        assert!(
            !text.contains(secret) && !text.contains(key),
            "{}",
            path.display()
        );
    }
    // The queue itself (the server's file store) never holds the model key.
    for (path, text) in all_files(&store) {
        assert!(!text.contains(key), "{}", path.display());
    }
}

#[test]
fn restarting_the_server_mid_batch_loses_nothing() {
    let dir = tempdir();
    let Some(mut nats) = Nats::start(&dir.path().join("js"), &[]) else {
        return;
    };
    let url = nats.url();
    let sim = SimLlm::start(&["--latency-ms", "150", "--sigma", "0"], &[]);
    let file = jobs_file(dir.path(), &chain_jobs("r", 4, 4));
    submit(&url, &file, "restart").expect_ok();
    let mut w = start_worker(
        &url,
        &sim,
        &dir.path().join("w"),
        &["--jobs", "2", "--ack-wait", "20s"],
    );
    w.running().wait_for(" completed", 3);
    nats.restart();
    let s = wait_status(&url, "restart", 120, completed(4));
    assert_eq!(s["counts"]["failed"], 0, "{s}");
    let calls = task_calls(&sim);
    assert_eq!(calls.len(), 16, "{calls:?}");
    w.terminate();
    let out = dir.path().join("fetched");
    planwave(["batch", "fetch", "restart", "--nats", &url])
        .out(&out)
        .run()
        .expect_ok();
    assert_eq!(read_json(&out.join("batch.json"))["completed"], 4);
}

#[test]
fn a_three_node_cluster_losing_one_node_mid_batch_loses_nothing() {
    let dir = tempdir();
    let Some((mut nodes, url)) = cluster3(dir.path()) else {
        return;
    };
    let sim = SimLlm::start(&["--latency-ms", "150", "--sigma", "0"], &[]);
    let file = jobs_file(dir.path(), &chain_jobs("n", 4, 4));
    planwave(["batch"])
        .arg(&file)
        .opt("--nats", &url)
        .opt("--batch", "cluster")
        .opt("--replicas", "3")
        .run()
        .expect_ok();
    let mut w = start_worker(
        &url,
        &sim,
        &dir.path().join("w"),
        &["--jobs", "2", "--ack-wait", "20s"],
    );
    w.running().wait_for(" completed", 3);
    nodes[0].kill_9();
    let alive = format!("{},{}", nodes[1].url(), nodes[2].url());
    let s = wait_status(&alive, "cluster", 120, completed(4));
    assert_eq!(s["counts"]["failed"], 0, "{s}");
    assert_eq!(task_calls(&sim).len(), 16);
    w.terminate();
}

/// Jobs of `width` independent tasks each (all runnable at once).
fn wide_jobs(prefix: &str, n: usize, width: usize) -> Vec<String> {
    (0..n)
        .map(|j| {
            let id = format!("{prefix}{j}");
            let tasks: Vec<Value> = (1..=width)
                .map(|i| {
                    json!({"id": format!("{id}t{i}"), "description": format!("part {i}"),
                           "dependencies": [], "hints": {"key_questions": ["what?"]}})
                })
                .collect();
            json!({"id": id, "plan": {"research_type": "company", "topic": id,
                   "objectives": ["know it"], "tasks": tasks}})
            .to_string()
        })
        .collect()
}

#[test]
fn the_providers_in_flight_limit_holds_across_three_workers() {
    let dir = tempdir();
    let Some(nats) = Nats::start(&dir.path().join("js"), &[]) else {
        return;
    };
    let url = nats.url();
    let sim = SimLlm::start(&["--latency-ms", "80", "--sigma", "0"], &[]);
    let config = dir.path().join("planwave.toml");
    std::fs::write(&config, "[llm.limits]\nmax_in_flight = 2\n").expect("config");
    submit(
        &url,
        &jobs_file(dir.path(), &wide_jobs("l", 6, 4)),
        "limits",
    )
    .expect_ok();
    let mut workers: Vec<WorkerProc> = (0..3)
        .map(|i| {
            let cache = dir.path().join(format!("cache-{i}"));
            let config = config.to_str().expect("path");
            start_worker(
                &url,
                &sim,
                &cache,
                &["--jobs", "2", "--config", config, "-q"],
            )
        })
        .collect();
    let s = wait_status(&url, "limits", 120, completed(6));
    let stats = sim.stats();
    // Each worker alone could send 2 at once; together they still send at most 2.
    assert_eq!(stats["max_subagents_in_flight"], 2, "{stats}");
    assert_eq!(stats["roles"]["subagent"], 24, "{stats}");
    let ran_on: BTreeSet<&str> = s["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .filter_map(|j| j["worker"].as_str())
        .collect();
    assert!(ran_on.len() >= 2, "one worker did everything: {ran_on:?}");
    for w in &mut workers {
        w.terminate();
    }
}

/// Requests the sim server received, polled until it reports `n` (a request charged to the
/// shared window may still be on its way when its worker starts waiting).
fn wait_requests(sim: &SimLlm, n: u64) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let seen = sim.stats()["requests"].as_u64().expect("requests");
        if seen >= n || Instant::now() > deadline {
            return seen;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_providers_requests_per_minute_hold_across_three_workers() {
    let dir = tempdir();
    let Some(nats) = Nats::start(&dir.path().join("js"), &[]) else {
        return;
    };
    let url = nats.url();
    let sim = SimLlm::start(&["--latency-ms", "0"], &[]);
    let config = dir.path().join("planwave.toml");
    std::fs::write(&config, "[llm.limits]\nrequests_per_minute = 4\n").expect("config");
    submit(&url, &jobs_file(dir.path(), &wide_jobs("r", 6, 4)), "rpm").expect_ok();
    let mut workers: Vec<WorkerProc> = (0..3)
        .map(|i| {
            let cache = dir.path().join(format!("cache-{i}"));
            let config = config.to_str().expect("path");
            start_worker(&url, &sim, &cache, &["--jobs", "2", "--config", config])
        })
        .collect();
    // Each worker alone may send 4 this minute (its own limiter): 12 together. Every worker
    // stops at the shared window's 4th request, which opened at the first request (this test
    // ends well within its minute).
    for w in &mut workers {
        w.running()
            .wait_for("shared rate limit reached (4 requests", 1);
    }
    assert_eq!(wait_requests(&sim, 4), 4, "{}", sim.stats());
    let s = status(&url, "rpm");
    // 4 requests finish one job at most.
    assert!(s["counts"]["completed"].as_u64().unwrap_or(0) <= 1, "{s}");
    assert_eq!(sim.stats()["requests"], 4, "{}", sim.stats());
}

/// The tokens of the last minute a waiting worker reports (`..., M tokens in the last
/// minute ...`), from each such line.
fn reported_tokens(lines: &[String]) -> Vec<u64> {
    lines
        .iter()
        .filter_map(|l| {
            let rest = l.split("shared rate limit reached (").nth(1)?;
            let tokens = rest.split(" requests, ").nth(1)?.split(' ').next()?;
            tokens.parse().ok()
        })
        .collect()
}

#[test]
fn the_providers_tokens_per_minute_hold_across_three_workers() {
    let dir = tempdir();
    let Some(nats) = Nats::start(&dir.path().join("js"), &[]) else {
        return;
    };
    let url = nats.url();
    let sim = SimLlm::start(&["--latency-ms", "0"], &[]);
    let config = dir.path().join("planwave.toml");
    // Each call is charged its estimate (prompt + max_tokens) before it goes and settled
    // with its usage after: a few calls fill the minute.
    std::fs::write(
        &config,
        "[llm]\nmax_tokens = 600\n[llm.limits]\ntokens_per_minute = 3000\n",
    )
    .expect("config");
    submit(&url, &jobs_file(dir.path(), &wide_jobs("k", 6, 4)), "tpm").expect_ok();
    let mut workers: Vec<WorkerProc> = (0..3)
        .map(|i| {
            let cache = dir.path().join(format!("cache-{i}"));
            let config = config.to_str().expect("path");
            start_worker(&url, &sim, &cache, &["--jobs", "2", "--config", config])
        })
        .collect();
    // Every worker comes to wait for the shared minute, and what it saw there never went
    // over the limit.
    for w in &mut workers {
        w.running().wait_for("shared rate limit reached", 1);
        let seen = reported_tokens(w.running().seen());
        assert!(!seen.is_empty(), "{:?}", w.running().seen());
        assert!(seen.iter().all(|&t| t <= 3000), "{seen:?}");
    }
    // 24 tasks wanted a call each; the minute let far fewer through.
    let sent = sim.stats()["requests"].as_u64().expect("requests");
    assert!((1..24).contains(&sent), "{}", sim.stats());
}

#[test]
fn wait_shows_the_batch_to_its_end_and_cancel_drops_queued_jobs_and_stops_running_ones() {
    let dir = tempdir();
    let Some(nats) = Nats::start(&dir.path().join("js"), &[]) else {
        return;
    };
    let url = nats.url();
    let sim = SimLlm::start(&["--latency-ms", "150", "--sigma", "0"], &[]);
    let mut w = start_worker(
        &url,
        &sim,
        &dir.path().join("w"),
        &["--jobs", "1", "--max-rounds", "1"],
    );
    // --wait: progress until every job has a verdict, then the table; exit 0.
    let small = dir.path().join("small");
    std::fs::create_dir_all(&small).expect("dir");
    let mut lines = chain_jobs("wt", 2, 1);
    // A goal job: planned and run by the worker, its rounds nested in its run directory.
    lines.push(json!({"id": "goal", "goal": "深度分析特斯拉公司"}).to_string());
    let waited = planwave(["batch"])
        .arg(jobs_file(&small, &lines))
        .opt("--nats", &url)
        .opt("--batch", "waited")
        .arg("--wait")
        .run();
    waited.expect_ok();
    assert!(
        waited
            .stdout
            .contains("3 jobs: 0 queued, 0 running, 3 completed"),
        "{}",
        waited.stdout
    );
    let out = dir.path().join("fetched");
    planwave(["batch", "fetch", "waited", "--nats", &url])
        .out(&out)
        .run()
        .expect_ok();
    let goal = out.join("jobs/goal");
    assert!(goal.join("rounds/1/run.json").is_file() && goal.join("report.md").is_file());
    planwave(["show"]).arg(&goal).run().expect_ok();

    submit(
        &url,
        &jobs_file(dir.path(), &chain_jobs("x", 3, 6)),
        "cancelme",
    )
    .expect_ok();
    w.running().wait_for("task x0t1 completed", 1);
    let c = planwave(["batch", "cancel", "cancelme", "--nats", &url]).run();
    c.expect_ok();
    assert!(c.stdout.contains("2 queued job(s) dropped"), "{}", c.stdout);
    let s = wait_status(&url, "cancelme", 60, |s| s["counts"]["cancelled"] == 3);
    assert!(s["cancelled"].as_bool().unwrap_or(false), "{s}");
    // The running job stopped like Ctrl-C: not every task of it was sent.
    let calls = task_calls(&sim);
    assert!(
        calls.keys().filter(|t| t.starts_with("x0")).count() < 6,
        "{calls:?}"
    );
    assert!(
        !calls
            .keys()
            .any(|t| t.starts_with("x1") || t.starts_with("x2")),
        "{calls:?}"
    );
    let again = submit(
        &url,
        &jobs_file(dir.path(), &chain_jobs("x", 3, 6)),
        "cancelme",
    );
    assert_ne!(again.code, 0);
    assert!(again.stderr.contains("was cancelled"), "{}", again.stderr);
    let (code, _) = w.terminate();
    assert_eq!(code, 0);
}
