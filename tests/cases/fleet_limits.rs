//! The provider's limits and a batch's subagent cap, held across three real `planwave worker`
//! processes on a real `nats-server`, checked from outside: `sim-llm serve` records when it
//! received each request (`/planwave/arrivals`, on its own clock) and how many subagent
//! requests it handled at once.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::nats::{Nats, WorkerProc, start_worker, wait_status};
use crate::support::{SimLlm, http_get_json, planwave, tempdir};

/// Jobs of `width` independent tasks each (all runnable at once).
fn wide_jobs(dir: &Path, prefix: &str, n: usize, width: usize) -> PathBuf {
    let lines: Vec<String> = (0..n)
        .map(|j| {
            let id = format!("{prefix}{j}");
            let tasks: Vec<Value> = (1..=width)
                .map(|i| {
                    json!({"id": format!("{id}t{i}"), "description": format!("第{i}部分：{id}的市场与财务"),
                           "dependencies": [], "hints": {"key_questions": ["增长多少？"]}})
                })
                .collect();
            json!({"id": id, "plan": {"research_type": "company", "topic": id,
                   "objectives": ["了解它"], "tasks": tasks}})
            .to_string()
        })
        .collect();
    let p = dir.join("jobs.jsonl");
    std::fs::write(&p, lines.join("\n") + "\n").expect("write jobs");
    p
}

fn config(dir: &Path, text: &str) -> String {
    let p = dir.join("planwave.toml");
    std::fs::write(&p, text).expect("config");
    p.to_str().expect("path").to_owned()
}

fn workers(url: &str, sim: &SimLlm, dir: &Path, extra: &[&str]) -> Vec<WorkerProc> {
    (0..3)
        .map(|i| {
            let cache = dir.join(format!("cache-{i}"));
            let name = format!("w{i}");
            let mut args = vec!["--jobs", "2", "--name", &name];
            args.extend_from_slice(extra);
            start_worker(url, sim, &cache, &args)
        })
        .collect()
}

fn completed(n: u64) -> impl Fn(&Value) -> bool {
    move |s| s["counts"]["completed"] == n
}

/// `(at_us, tokens)` of every request the server received.
fn arrivals(sim: &SimLlm) -> Vec<(u64, u64)> {
    let log = http_get_json(&sim.base_url.replace("/v1", "/planwave/arrivals"));
    let mut out: Vec<(u64, u64)> = log["arrivals"]
        .as_array()
        .expect("arrivals")
        .iter()
        .map(|a| {
            (
                a["at_us"].as_u64().expect("at_us"),
                a["tokens"].as_u64().expect("tokens"),
            )
        })
        .collect();
    out.sort_unstable();
    out
}

/// The most requests and tokens that any `window` of the server's clock holds.
fn worst_window(received: &[(u64, u64)], window: Duration) -> (usize, u64) {
    let w = window.as_micros() as u64;
    received
        .iter()
        .map(|(start, _)| {
            let inside: Vec<&(u64, u64)> = received
                .iter()
                .filter(|(t, _)| *t >= *start && *t < start + w)
                .collect();
            (inside.len(), inside.iter().map(|(_, k)| *k).sum())
        })
        .fold((0, 0), |(n, k), (a, b)| (n.max(a), k.max(b)))
}

fn submit(url: &str, file: &Path, batch: &str, extra: &[&str]) {
    planwave(["batch"])
        .arg(file)
        .opt("--nats", url)
        .opt("--batch", batch)
        .args(extra)
        .run()
        .expect_ok();
}

/// Requests the sim server received, polled until it reports `n` (an attempt admitted by the
/// shared log may still be on its way when the workers start waiting).
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

/// The requests of the shared window a waiting worker reports (`(N requests, ...`).
fn reported_requests(lines: &[String]) -> Vec<u64> {
    lines
        .iter()
        .filter_map(|l| {
            let rest = l.split("shared rate limit reached (").nth(1)?;
            rest.split(' ').next()?.parse().ok()
        })
        .collect()
}

#[test]
fn every_attempt_of_a_failing_call_is_admitted_and_charged_by_the_shared_limit() {
    let dir = tempdir();
    let Some(nats) = Nats::start(&dir.path().join("js"), &[]) else {
        return;
    };
    let url = nats.url();
    // The first four requests fail: two calls of two attempts each (one retry), both given
    // up; the calls' retries and the failed calls' attempts all reached the server.
    let sim = SimLlm::start(
        &["--latency-ms", "0", "--fault-script", "500,500,500,500"],
        &[],
    );
    let config = config(
        dir.path(),
        "[llm.retry]\nmax_retries = 1\nbase_ms = 1\nmax_ms = 5\n\
         [llm.limits]\nrequests_per_minute = 6\n",
    );
    submit(&url, &wide_jobs(dir.path(), "f", 6, 4), "fail", &[]);
    let mut ws = workers(&url, &sim, dir.path(), &["--config", &config]);
    // Every worker comes to wait for the shared minute (this test ends well within it).
    for w in &mut ws {
        w.running().wait_for("shared rate limit reached", 1);
    }
    assert_eq!(wait_requests(&sim, 6), 6, "{}", sim.stats());
    let stats = sim.stats();
    assert_eq!(stats["faults"]["servererror"], 4, "{stats}");
    // What the shared log admitted is what the server received.
    for w in &mut ws {
        let seen = reported_requests(w.running().seen());
        assert!(seen.iter().all(|&n| n == 6), "{seen:?}");
    }
    assert_eq!(sim.stats()["requests"], 6, "{}", sim.stats());
}

/// `[llm.limits]` with a two-second window, so a limit's edge is crossed many times in a
/// short test.
const WINDOW: Duration = Duration::from_secs(2);

#[test]
fn no_window_of_what_the_provider_received_holds_more_requests_than_the_limit() {
    let dir = tempdir();
    let Some(nats) = Nats::start(&dir.path().join("js"), &[]) else {
        return;
    };
    let url = nats.url();
    let sim = SimLlm::start(&["--latency-ms", "30", "--sigma", "0.5"], &[]);
    let config = config(
        dir.path(),
        "[llm.limits]\nrequests_per_minute = 3\nwindow_secs = 2\n",
    );
    submit(&url, &wide_jobs(dir.path(), "r", 3, 3), "rpm", &[]);
    let mut ws = workers(&url, &sim, dir.path(), &["--config", &config]);
    wait_status(&url, "rpm", 120, completed(3));
    let received = arrivals(&sim);
    // Nine sections and three summaries, each sent once.
    assert_eq!(received.len(), 12, "{}", sim.stats());
    let (most, _) = worst_window(&received, WINDOW);
    assert_eq!(most, 3, "{received:?}");
    // Held by the shared log, not by each worker's own limiter (which allows 3 a window).
    assert!(waited_for_the_shared_window(&mut ws));
}

/// Stops the workers; whether any of them waited for the shared window.
fn waited_for_the_shared_window(ws: &mut [WorkerProc]) -> bool {
    let mut waited = false;
    for w in ws {
        let (_, lines) = w.terminate();
        waited |= lines
            .iter()
            .any(|l| l.contains("shared rate limit reached"));
    }
    waited
}

#[test]
fn no_window_of_what_the_provider_received_holds_more_tokens_than_the_limit() {
    let dir = tempdir();
    let Some(nats) = Nats::start(&dir.path().join("js"), &[]) else {
        return;
    };
    let url = nats.url();
    let sim = SimLlm::start(&["--latency-ms", "30", "--sigma", "0.5"], &[]);
    // A call is charged its estimate (the prompt, and 1024 for the answer) before it goes and
    // settled with its usage: two or three calls fill a window.
    let tpm = 3_000;
    let config = config(
        dir.path(),
        &format!("[llm.limits]\ntokens_per_minute = {tpm}\nwindow_secs = 2\n"),
    );
    submit(&url, &wide_jobs(dir.path(), "k", 3, 3), "tpm", &[]);
    let mut ws = workers(&url, &sim, dir.path(), &["--config", &config]);
    wait_status(&url, "tpm", 120, completed(3));
    let received = arrivals(&sim);
    assert_eq!(received.len(), 12, "{}", sim.stats());
    assert!(
        received.iter().all(|(_, t)| *t > 0),
        "every request was answered: {received:?}"
    );
    let (_, most) = worst_window(&received, WINDOW);
    assert!(most <= tpm, "{most} tokens in a window: {received:?}");
    let total: u64 = received.iter().map(|(_, t)| t).sum();
    assert!(total > tpm, "the batch fits in one window: {total}");
    assert!(waited_for_the_shared_window(&mut ws));
}

#[test]
fn a_batchs_cap_on_subagents_in_flight_holds_across_three_workers() {
    let dir = tempdir();
    let Some(nats) = Nats::start(&dir.path().join("js"), &[]) else {
        return;
    };
    let url = nats.url();
    let sim = SimLlm::start(&["--latency-ms", "100", "--sigma", "0"], &[]);
    submit(
        &url,
        &wide_jobs(dir.path(), "c", 6, 4),
        "capped",
        &["--max-subagents", "2"],
    );
    let mut ws = workers(&url, &sim, dir.path(), &["-q"]);
    let s = wait_status(&url, "capped", 120, completed(6));
    let stats = sim.stats();
    // Each worker alone runs 2 jobs of 4 subagents at once: 24 together without the cap.
    assert_eq!(stats["max_subagents_in_flight"], 2, "{stats}");
    assert_eq!(stats["roles"]["subagent"], 24, "{stats}");
    let ran_on: std::collections::BTreeSet<&str> = s["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .filter_map(|j| j["worker"].as_str())
        .collect();
    assert!(ran_on.len() >= 2, "one worker did everything: {ran_on:?}");
    for w in &mut ws {
        w.terminate();
    }
}

#[test]
fn a_dead_workers_subagent_leases_expire_and_the_batch_goes_on() {
    let dir = tempdir();
    let Some(nats) = Nats::start(&dir.path().join("js"), &[]) else {
        return;
    };
    let url = nats.url();
    // Long enough that the first worker surely dies holding the batch's one lease.
    let sim = SimLlm::start(&["--latency-ms", "3000", "--sigma", "0"], &[]);
    submit(
        &url,
        &wide_jobs(dir.path(), "d", 2, 2),
        "lease",
        &["--max-subagents", "1"],
    );
    let mut first = start_worker(
        &url,
        &sim,
        &dir.path().join("cache-first"),
        &["--jobs", "2", "--ack-wait", "2s"],
    );
    first.running().wait_for("running job", 2);
    // Its one subagent's request arrived: it holds the lease.
    let deadline = Instant::now() + Duration::from_secs(30);
    while sim.stats()["requests"] == 0 {
        assert!(Instant::now() < deadline, "no request arrived");
        std::thread::sleep(Duration::from_millis(20));
    }
    first.kill_9();
    let mut second = start_worker(&url, &sim, &dir.path().join("cache-second"), &["-q"]);
    let s = wait_status(&url, "lease", 120, completed(2));
    assert_eq!(s["counts"]["failed"], 0, "{s}");
    assert_eq!(sim.stats()["max_subagents_in_flight"], 1, "{}", sim.stats());
    second.terminate();
}
