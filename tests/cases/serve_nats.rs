//! `planwave serve --nats`: the server over the queue, with real parts: a real `nats-server`,
//! `planwave worker` processes running the jobs against `sim-llm serve`, `serve --nats`
//! processes (restarted, and a second one) and headless Chromium. What is POSTed runs on the
//! workers; the page follows it live through a worker killed with SIGKILL and a server
//! killed and started again; a second server shows the same run; junk published on a run's
//! journal subject breaks neither server nor page; cancel and resume go through the queue.

use std::path::Path;
use std::time::{Duration, Instant};

use fantoccini::Client;
use futures::{FutureExt, StreamExt};
use serde_json::{Value, json};

use super::serve::{Serve, client, get_json, post_json, wait_until};
use super::serve_browser::{browser, chromedriver, js};
use crate::support::nats::{Nats, WorkerProc, free_port, start_worker};
use crate::support::{SimLlm, tempdir};

/// `serve --nats URL` on `addr` with its own cache directory.
pub(super) fn serve_nats(data: &Path, addr: &str, url: &str) -> Serve {
    Serve::start_in(data, addr, &["--nats", url], &[])
}

/// A chain of `n` tasks with ids `{p}1..{p}n` (unique across tests: the simulator counts
/// requests per task id).
pub(super) fn chain(p: &str, n: usize) -> Value {
    let tasks: Vec<Value> = (1..=n)
        .map(|i| {
            let deps: Vec<String> = if i > 1 {
                vec![format!("{p}{}", i - 1)]
            } else {
                vec![]
            };
            json!({"id": format!("{p}{i}"), "description": format!("Part {i} of the review"),
                   "dependencies": deps})
        })
        .collect();
    json!({"topic": "Fleet review", "tasks": tasks})
}

pub(super) async fn run_state(s: &Serve, id: &str) -> Value {
    get_json(&s.at(&format!("api/runs/{id}"))).await.1
}

/// The run's state once `check` holds (polled, at most 60 s).
pub(super) async fn wait_state(
    s: &Serve,
    id: &str,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    wait_until(what, || async {
        let v = run_state(s, id).await;
        check(&v).then_some(v)
    })
    .await
}

/// The first `n` SSE messages of `url` (after `Last-Event-ID: after`), as (id, data).
pub(super) async fn sse_take(url: &str, after: Option<usize>, n: usize) -> Vec<(usize, Value)> {
    let mut req = client().get(url);
    if let Some(a) = after {
        req = req.header("Last-Event-ID", a.to_string());
    }
    let resp = req.send().await.expect("GET events");
    assert_eq!(resp.status().as_u16(), 200);
    let mut body = resp.bytes_stream();
    let (mut buf, mut out) = (String::new(), Vec::new());
    let read = async {
        while out.len() < n {
            let Some(chunk) = body.next().await else {
                break;
            };
            buf.push_str(&String::from_utf8_lossy(&chunk.expect("chunk")));
            while let Some(at) = buf.find("\n\n") {
                let block: String = buf.drain(..at + 2).collect();
                let id = block
                    .lines()
                    .find_map(|l| l.strip_prefix("id: "))
                    .and_then(|v| v.parse().ok());
                let data = block.lines().find_map(|l| l.strip_prefix("data: "));
                if let (Some(id), Some(data)) = (id, data) {
                    out.push((id, serde_json::from_str(data).expect("every event is JSON")));
                }
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(60), read)
        .await
        .expect("the events came");
    out
}

/// The class of task `id`'s node in the page's DAG.
pub(super) async fn node_status(c: &Client, id: &str) -> String {
    let v = js(
        c,
        &format!("const g = document.querySelector('#dag g.node[data-task=\"{id}\"]'); return g ? (g.dataset.status || '') : '';"),
    )
    .await;
    v.as_str().unwrap_or("").to_owned()
}

pub(super) async fn text_of(c: &Client, element: &str) -> String {
    js(
        c,
        &format!("const e = document.getElementById('{element}'); return e ? e.textContent : '';"),
    )
    .await
    .as_str()
    .unwrap_or("")
    .to_owned()
}

/// Polls the page (every 50 ms, at most 90 s) until `check` holds.
pub(super) async fn wait_page<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(90);
    while !check().await {
        assert!(Instant::now() < deadline, "the page never showed {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Tasks of the run the page follows (a chain: one runs at a time).
const TASKS: usize = 8;

pub(super) const MARK: &str = "window.__errors = []; window.__mark = 'no-reload';
    window.addEventListener('error', (e) => window.__errors.push(String(e.message)));
    window.addEventListener('unhandledrejection', (e) => window.__errors.push(String(e.reason)));";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_nats_page_follows_a_run_on_workers_through_a_killed_worker_and_a_restarted_server() {
    let tmp = tempdir();
    let Some(nats) = Nats::start(&tmp.path().join("js"), &[]) else {
        return;
    };
    let Some((_driver, driver_url)) = chromedriver(&tmp.path().join("chromedriver.log")) else {
        return;
    };
    let url = nats.url();
    // Every model call takes 2 s: a task is running long enough to be seen and killed.
    let sim = SimLlm::start(&["--latency-ms", "2000", "--sigma", "0"], &[]);
    let workers: Vec<WorkerProc> = ["wa", "wb"]
        .iter()
        .map(|name| {
            let cache = tmp.path().join(format!("cache-{name}"));
            start_worker(
                &url,
                &sim,
                &cache,
                &["--jobs", "1", "--name", name, "--ack-wait", "2s", "-q"],
            )
        })
        .collect();
    let addr = format!("127.0.0.1:{}", free_port());
    let a = serve_nats(&tmp.path().join("data-a"), &addr, &url);
    let c = browser(&driver_url, &tmp.path().join("profile")).await;
    let result =
        std::panic::AssertUnwindSafe(fleet_checks(a, &addr, &url, &c, workers, tmp.path()))
            .catch_unwind()
            .await;
    c.close().await.expect("close the browser");
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
    drop(nats);
}

async fn fleet_checks(
    a: Serve,
    addr: &str,
    url: &str,
    c: &Client,
    mut workers: Vec<WorkerProc>,
    dir: &Path,
) {
    let (code, created) = post_json(&a.at("api/runs"), &json!({"plan": chain("f", TASKS)})).await;
    assert_eq!(code, 201, "{created}");
    let id = created["id"].as_str().expect("id").to_owned();
    c.goto(&a.at(&format!("runs/{id}"))).await.expect("open");
    js(c, MARK).await;
    // A task starts on a worker: the page shows it running, then completed, no reload.
    let deadline = Instant::now() + Duration::from_secs(90);
    let seen = 'found: loop {
        for i in 1..=TASKS {
            let t = format!("f{i}");
            if node_status(c, &t).await == "running" {
                break 'found t;
            }
        }
        if Instant::now() > deadline {
            let page = js(c, "return [document.body.dataset.ready, document.getElementById('status').textContent, JSON.stringify(window.__errors), document.getElementById('dag').innerHTML.slice(0, 600), document.getElementById('t-worker').textContent];").await;
            panic!("the page never showed a task running: {page}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    wait_page("that task completed", || async {
        node_status(c, &seen).await == "completed"
    })
    .await;
    // The worker running it is killed: the other one takes it over, and the page says so.
    let first = run_state(&a, &id).await["queue"]["worker"]
        .as_str()
        .expect("a worker has the run")
        .to_owned();
    let victim = if first == "wa" { 0 } else { 1 };
    workers[victim].kill_9();
    wait_page("the hand-over", || async {
        let w = text_of(c, "t-worker").await;
        w.contains(&format!("{first} → "))
    })
    .await;
    // The server is killed mid-run and started again on the same address: the page's
    // events resume from where they were.
    let before = run_state(&a, &id).await;
    assert_eq!(before["live"], true, "still running: {before}");
    let data = a.data.clone();
    drop(a);
    let a = serve_nats(&data, addr, url);
    wait_page("the run completed", || async {
        text_of(c, "status").await == "completed"
    })
    .await;
    for i in 1..=TASKS {
        assert_eq!(
            node_status(c, &format!("f{i}")).await,
            "completed",
            "task f{i}"
        );
    }
    wait_page("the report", || async {
        js(c, "return !document.getElementById('report').hidden;").await == true
    })
    .await;
    assert_eq!(js(c, "return window.__errors;").await, json!([]));
    assert_eq!(js(c, "return window.__mark;").await, "no-reload");
    let shot = c.screenshot().await.expect("screenshot");
    std::fs::write(dir.join("serve-nats.png"), shot).expect("write screenshot");
    same_run_on_a_second_server(&a, &id, &first, url, dir).await;
}

/// Every section is there, and a second server shows the same run and the same events.
async fn same_run_on_a_second_server(a: &Serve, id: &str, first: &str, url: &str, dir: &Path) {
    let done = run_state(a, id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["queue"]["workers"][0], first, "{done}");
    assert_eq!(done["queue"]["deliveries"], 2, "{done}");
    for i in 1..=TASKS {
        let (code, s) = get_json(&a.at(&format!("api/runs/{id}/sections/f{i}"))).await;
        assert_eq!(code, 200, "{s}");
        assert!(s["section"].as_str().is_some_and(|t| !t.is_empty()), "{s}");
    }
    let b = serve_nats(&dir.join("data-b"), "127.0.0.1:0", url);
    let (_, list) = get_json(&b.at("api/runs")).await;
    let row = list["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .find(|r| r["id"] == id)
        .cloned()
        .expect("the second server lists the run");
    assert_eq!(row["status"], "completed", "{row}");
    assert_ne!(row["worker"], first, "{row}");
    let on_b = run_state(&b, id).await;
    assert_eq!(on_b["stats"], done["stats"]);
    let all_a = sse_take(&a.at(&format!("api/runs/{id}/events")), None, usize::MAX).await;
    let from_b = sse_take(&b.at(&format!("api/runs/{id}/events")), Some(5), usize::MAX).await;
    assert!(all_a.len() > 10, "{}", all_a.len());
    assert_eq!(
        from_b.first().map(|e| e.0),
        Some(6),
        "after Last-Event-ID 5"
    );
    assert_eq!(
        &all_a[5..],
        &from_b[..],
        "the same events with the same ids"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_nats_junk_on_a_runs_journal_subject_breaks_neither_server_nor_page_and_the_page_cancels()
 {
    let tmp = tempdir();
    let Some(nats) = Nats::start(&tmp.path().join("js"), &[]) else {
        return;
    };
    let Some((_driver, driver_url)) = chromedriver(&tmp.path().join("chromedriver.log")) else {
        return;
    };
    let url = nats.url();
    // No worker: the run stays queued while junk arrives on its subject.
    let a = serve_nats(&tmp.path().join("data-a"), "127.0.0.1:0", &url);
    let c = browser(&driver_url, &tmp.path().join("profile")).await;
    let result = std::panic::AssertUnwindSafe(junk_checks(&a, &url, &c, tmp.path()))
        .catch_unwind()
        .await;
    c.close().await.expect("close the browser");
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}

/// Junk a publisher may put on a run's journal subject: not JSON, not UTF-8, not an object,
/// 700 kB, and JSON that is no event (5 messages, 6 lines).
fn junk() -> Vec<Vec<u8>> {
    let big = format!(
        "{{\"type\":\"task_started\",\"pad\":\"{}\"}}\n",
        "x".repeat(700_000)
    );
    vec![
        b"not json at all\n".to_vec(),
        b"\xff\xfe\xfd\n[1,2,3]\n".to_vec(),
        big.into_bytes(),
        b"{\"type\":\"task_started\",\"task\":{\"nested\":[]}}\n".to_vec(),
        b"{\"type\":\"run_finished\"}".to_vec(),
    ]
}

async fn junk_checks(a: &Serve, url: &str, c: &Client, dir: &Path) {
    let (code, created) = post_json(&a.at("api/runs"), &json!({"plan": chain("j", 2)})).await;
    assert_eq!(code, 201, "{created}");
    let id = created["id"].as_str().expect("id").to_owned();
    let queued = run_state(a, &id).await;
    assert_eq!(queued["status"], "queued", "{queued}");
    c.goto(&a.at(&format!("runs/{id}"))).await.expect("open");
    wait_page("the page ready", || async {
        js(c, "return document.body.dataset.ready;").await == "1"
    })
    .await;
    js(c, MARK).await;
    let subject = format!(
        "planwave.journal.{id}.{}",
        id.bytes().map(|b| format!("{b:02x}")).collect::<String>()
    );
    let jet = async_nats::jetstream::new(async_nats::connect(url).await.expect("connect"));
    for j in junk() {
        jet.publish(subject.clone(), j.into())
            .await
            .expect("publish")
            .await
            .expect("stored");
    }
    // The server following the run and a new one show the junk at the same positions, as
    // `unreadable` where it is no JSON object, and keep answering.
    let events_a = sse_take(&a.at(&format!("api/runs/{id}/events")), None, 6).await;
    let b = serve_nats(&dir.join("data-b"), "127.0.0.1:0", url);
    let events_b = sse_take(&b.at(&format!("api/runs/{id}/events")), None, 6).await;
    assert_eq!(events_a, events_b);
    let kinds: Vec<&str> = events_a
        .iter()
        .map(|(_, v)| v["type"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        kinds,
        [
            "unreadable",
            "unreadable",
            "unreadable",
            "unreadable",
            "task_started",
            "run_finished"
        ],
        "{events_a:?}"
    );
    assert_eq!(events_a[3].1["bytes"].as_u64(), Some(700_032));
    for s in [a, &b] {
        let (code, _) = get_json(&s.at("healthz")).await;
        assert_eq!(code, 200);
        assert_eq!(run_state(s, &id).await["status"], "queued");
    }
    // Options a worker keeps for itself are refused, not ignored.
    let (code, refused) = post_json(
        &a.at("api/runs"),
        &json!({"plan": chain("k", 1), "options": {"sim_latency_ms": 5}}),
    )
    .await;
    assert_eq!(code, 422, "{refused}");
    // The page took the junk without an error, and its cancel goes through the queue: both
    // servers see the run cancelled.
    assert_eq!(js(c, "return window.__errors;").await, json!([]));
    js(c, "document.getElementById('cancel').click();").await;
    wait_page("cancelled", || async {
        text_of(c, "status").await == "cancelled"
    })
    .await;
    assert_eq!(js(c, "return window.__errors;").await, json!([]));
    assert_eq!(js(c, "return window.__mark;").await, "no-reload");
    wait_state(&b, &id, "cancelled on the other server", |v| {
        v["status"] == "cancelled"
    })
    .await;
    let (code, again) = post_json(&b.at(&format!("api/runs/{id}/cancel")), &json!({})).await;
    assert_eq!(code, 409, "{again}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_nats_cancel_stops_a_running_run_and_resume_finishes_it_keeping_completed_tasks() {
    let tmp = tempdir();
    let Some(nats) = Nats::start(&tmp.path().join("js"), &[]) else {
        return;
    };
    let url = nats.url();
    let sim = SimLlm::start(&["--latency-ms", "700", "--sigma", "0"], &[]);
    let _worker = start_worker(
        &url,
        &sim,
        &tmp.path().join("cache"),
        &["--jobs", "1", "--name", "wr", "-q"],
    );
    let a = serve_nats(&tmp.path().join("data"), "127.0.0.1:0", &url);
    let (code, created) = post_json(&a.at("api/runs"), &json!({"plan": chain("r", 5)})).await;
    assert_eq!(code, 201, "{created}");
    let id = created["id"].as_str().expect("id").to_owned();
    wait_state(&a, &id, "a completed task", |v| {
        v["stats"]["completed"].as_u64().is_some_and(|n| n >= 1)
    })
    .await;
    let (code, _) = post_json(&a.at(&format!("api/runs/{id}/cancel")), &json!({})).await;
    assert_eq!(code, 202);
    let stopped = wait_state(&a, &id, "cancelled", |v| v["live"] == false).await;
    assert_eq!(stopped["status"], "cancelled", "{stopped}");
    let kept = stopped["stats"]["completed"].as_u64().expect("completed");
    assert!(kept < 5, "{stopped}");
    let (code, resumed) = post_json(&a.at(&format!("api/runs/{id}/resume")), &json!({})).await;
    assert_eq!(code, 202, "{resumed}");
    let done = wait_state(&a, &id, "completed after resume", |v| {
        v["status"] == "completed"
    })
    .await;
    assert_eq!(done["stats"]["completed"], 5, "{done}");
    // Completed tasks were kept: each was sent to the model once.
    let calls: std::collections::BTreeMap<String, u64> =
        serde_json::from_value(sim.stats()["tasks"].clone()).expect("tasks");
    for i in 1..=kept {
        assert_eq!(calls.get(&format!("r{i}")), Some(&1), "{calls:?}");
    }
    let (code, again) = post_json(&a.at(&format!("api/runs/{id}/resume")), &json!({})).await;
    assert_eq!(code, 409, "{again}");
}

/// The figure in docs/benchmarks.md (not a check: `--ignored`): the latency from an event
/// published on a run's journal subject, as a worker's journal commit publishes it (one
/// acknowledged JetStream message), to its arrival at an SSE client of `serve --nats`. Both
/// ends are in this process, on one clock. `docs/bench/event_latency.sh` runs it with
/// everything built in release (`cargo test --release`); `PLANWAVE_BENCH_BIN` picks another
/// binary; `PLANWAVE_BENCH_EVENTS` and `PLANWAVE_BENCH_GAP_US` the count and the pause
/// between events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: run with --ignored --nocapture"]
async fn bench_serve_nats_event_latency() {
    let tmp = tempdir();
    let Some(nats) = Nats::start(&tmp.path().join("js"), &[]) else {
        return;
    };
    let url = nats.url();
    let n: usize = std::env::var("PLANWAVE_BENCH_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let gap = Duration::from_micros(
        std::env::var("PLANWAVE_BENCH_GAP_US")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1000),
    );
    let bin = std::env::var("PLANWAVE_BENCH_BIN")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_planwave").to_owned());
    let mut child = std::process::Command::new(&bin)
        .args(["serve", "--addr", "127.0.0.1:0", "--nats", &url, "--data"])
        .arg(tmp.path().join("data"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("serve");
    let base = crate::support::first_line(&mut child);
    let _guard = crate::support::ChildGuard(child);
    let (code, created) =
        post_json(&format!("{base}api/runs"), &json!({"plan": chain("b", 1)})).await;
    assert_eq!(code, 201, "{created}");
    let id = created["id"].as_str().expect("id").to_owned();
    let subject = format!(
        "planwave.journal.{id}.{}",
        id.bytes().map(|b| format!("{b:02x}")).collect::<String>()
    );
    let resp = client()
        .get(format!("{base}api/runs/{id}/events"))
        .send()
        .await
        .expect("events");
    let mut body = resp.bytes_stream();
    let js = async_nats::jetstream::new(async_nats::connect(&url).await.expect("connect"));
    let start = Instant::now();
    let publisher = tokio::spawn(async move {
        let mut sent = Vec::with_capacity(n);
        for i in 0..n {
            let at = start + gap * i as u32;
            tokio::time::sleep_until(at.into()).await;
            sent.push(start.elapsed());
            let line = format!("{{\"type\":\"bench\",\"n\":{i}}}\n");
            js.publish(subject.clone(), line.into())
                .await
                .expect("publish")
                .await
                .expect("stored");
        }
        sent
    });
    let mut got = vec![Duration::ZERO; n];
    let (mut seen, mut buf) = (0, String::new());
    while seen < n {
        let chunk = tokio::time::timeout(Duration::from_secs(60), body.next())
            .await
            .expect("events keep coming")
            .expect("stream open")
            .expect("chunk");
        let now = start.elapsed();
        buf.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(at) = buf.find("\n\n") {
            let block: String = buf.drain(..at + 2).collect();
            let Some(data) = block.lines().find_map(|l| l.strip_prefix("data: ")) else {
                continue;
            };
            let v: Value = serde_json::from_str(data).expect("JSON");
            if let Some(i) = v["n"].as_u64() {
                got[i as usize] = now;
                seen += 1;
            }
        }
    }
    let sent = publisher.await.expect("publisher");
    let mut lat: Vec<f64> = sent
        .iter()
        .zip(&got)
        .map(|(s, g)| g.saturating_sub(*s).as_secs_f64() * 1000.0)
        .collect();
    lat.sort_by(f64::total_cmp);
    let pct = |p: f64| lat[((lat.len() as f64 * p) as usize).min(lat.len() - 1)];
    println!(
        "events {n}, gap {:?}: p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        gap,
        pct(0.50),
        pct(0.90),
        pct(0.99),
        lat[lat.len() - 1]
    );
}
