//! `/metrics`, `/healthz` and `/readyz` of `planwave serve` and `planwave worker
//! --metrics-addr`, scraped by a real Prometheus (Debian's `prometheus`, started here on
//! loopback with a scrape config for both): after a run on each, Prometheus's query API
//! gives the same task and token counts as the run's `run.json`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::cases::serve::{Serve, chain, client, get_json, post_json, wait_done};
use crate::support::nats::{Nats, free_port, start_worker, wait_status};
use crate::support::{ChildGuard, SimLlm, peers_dir, planwave, read_json, tempdir};

/// The `prometheus` binary: linked under the peers directory by `.ci/peers`, else on PATH.
/// Missing, the test fails saying how to install it (or is skipped with
/// `PLANWAVE_SKIP_PEER_TESTS=1`).
fn prometheus() -> Option<PathBuf> {
    let linked = peers_dir().join("bin/prometheus");
    if linked.exists() {
        return Some(linked);
    }
    let system = Path::new("/usr/bin/prometheus");
    if system.exists() {
        return Some(system.to_path_buf());
    }
    if std::env::var("PLANWAVE_SKIP_PEER_TESTS").as_deref() == Ok("1") {
        eprintln!("skipping: prometheus is not installed");
        return None;
    }
    panic!(
        "prometheus is missing: install Debian's package (`apt-get install -y prometheus` as root, \
         as `.ci/peers` does), or set PLANWAVE_SKIP_PEER_TESTS=1 to skip peer tests"
    );
}

/// Prometheus on a free loopback port, scraping `targets` (job name, `host:port`) every
/// second; killed when dropped.
struct Prometheus {
    url: String,
    _child: ChildGuard,
}

impl Prometheus {
    fn start(bin: &Path, dir: &Path, targets: &[(&str, &str)]) -> Prometheus {
        let mut config = String::from("global:\n  scrape_interval: 1s\nscrape_configs:\n");
        for (job, target) in targets {
            config.push_str(&format!(
                "  - job_name: {job}\n    static_configs:\n      - targets: ['{target}']\n"
            ));
        }
        let file = dir.join("prometheus.yml");
        std::fs::write(&file, config).expect("write prometheus.yml");
        let port = free_port();
        let child = std::process::Command::new(bin)
            .arg(format!("--config.file={}", file.display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("tsdb").display()
            ))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start prometheus");
        Prometheus {
            url: format!("http://127.0.0.1:{port}"),
            _child: ChildGuard(child),
        }
    }

    /// The value of an instant query that returns one number, if it has one yet.
    async fn number(&self, query: &str) -> Option<f64> {
        let r = client()
            .get(format!("{}/api/v1/query?query={}", self.url, encode(query)))
            .send()
            .await
            .ok()?;
        let v: Value = r.json().await.ok()?;
        v["data"]["result"][0]["value"][1].as_str()?.parse().ok()
    }

    /// Waits until `query` gives `want` (scrapes come every second).
    async fn until_equal(&self, query: &str, want: f64) {
        let mut last = None;
        let deadline = Instant::now() + Duration::from_secs(90);
        while Instant::now() < deadline {
            last = self.number(query).await;
            if last == Some(want) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        panic!("{query}: Prometheus says {last:?}, run.json says {want}");
    }
}

/// `query` percent-encoded for a URL's query string.
fn encode(query: &str) -> String {
    query
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn usage(run: &Value, kind: &str) -> f64 {
    let n = &run["stats"]["usage"][kind];
    // `cached_tokens` is left out of run.json when it is zero.
    if n.is_null() && kind == "cached_tokens" {
        return 0.0;
    }
    n.as_f64().expect("usage")
}

fn completed(run: &Value) -> f64 {
    run["stats"]["completed"].as_f64().expect("completed")
}

/// Where the worker said its metrics are (`host:port`).
pub(crate) fn metrics_addr(lines: &[String]) -> String {
    lines
        .iter()
        .find_map(|l| {
            let rest = l.split("metrics on http://").nth(1)?;
            rest.strip_suffix("/metrics").map(str::to_owned)
        })
        .unwrap_or_else(|| panic!("no metrics address in {lines:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_scrapes_serve_and_a_worker_and_their_counts_equal_run_json() {
    let Some(bin) = prometheus() else { return };
    let dir = tempdir();
    let Some(nats) = Nats::start(&dir.path().join("js"), &[]) else {
        return;
    };
    let url = nats.url();
    let sim = SimLlm::start(&["--latency-ms", "5", "--sigma", "0"], &[]);
    let mut worker = start_worker(
        &url,
        &sim,
        &dir.path().join("cache"),
        &["--name", "w1", "--metrics-addr", "0"],
    );
    worker.running().wait_for("metrics on http://", 1);
    let worker_addr = metrics_addr(worker.running().seen());
    let serve = Serve::start(&[], &[]);
    let serve_addr = serve
        .url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();

    // Alive and ready, both.
    for base in [serve.url.clone(), format!("http://{worker_addr}/")] {
        let (code, _) = get_json(&format!("{base}healthz")).await;
        assert_eq!(code, 200, "{base}healthz");
        let (code, ready) = get_json(&format!("{base}readyz")).await;
        assert_eq!(code, 200, "{base}readyz: {ready}");
        assert_eq!(ready["ready"], true, "{ready}");
    }
    let (_, ready) = get_json(&format!("http://{worker_addr}/readyz")).await;
    assert_eq!(ready["checks"]["nats"], "ok", "{ready}");

    let prom = Prometheus::start(
        &bin,
        dir.path(),
        &[("serve", &serve_addr), ("worker", &worker_addr)],
    );

    // A run on the server...
    let (code, created) = post_json(
        &serve.at("api/runs"),
        &json!({"plan": chain(4), "options": {"sim_latency_ms": 5, "sim_sigma": 0,
            "sim_prefix_cache": true}}),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    let id = created["id"].as_str().expect("id").to_owned();
    wait_done(&serve, &id).await;
    let served = read_json(&serve.data.join(&id).join("run.json"));
    // The prompts share their instructions, so the simulator's prefix cache served some:
    // the cached series below is checked against a count that is not zero.
    assert!(usage(&served, "cached_tokens") > 0.0, "{served}");

    // ... and a job on the worker.
    let plan = json!({"topic": "fleet", "tasks": [
        {"id": "f1", "description": "first"},
        {"id": "f2", "description": "second", "dependencies": ["f1"]},
        {"id": "f3", "description": "third", "dependencies": ["f1"]}]});
    let jobs = dir.path().join("jobs.jsonl");
    std::fs::write(&jobs, format!("{}\n", json!({"id": "j1", "plan": plan}))).expect("jobs");
    planwave(["batch"])
        .arg(&jobs)
        .opt("--nats", &url)
        .opt("--batch", "metrics")
        .run()
        .expect_ok();
    let u = url.clone();
    tokio::task::spawn_blocking(move || {
        wait_status(&u, "metrics", 120, |s| s["counts"]["completed"] == 1)
    })
    .await
    .expect("status");
    let fetched = dir.path().join("fetched");
    planwave(["batch", "fetch", "metrics", "--nats", &url])
        .out(&fetched)
        .run()
        .expect_ok();
    let queued = read_json(&fetched.join("jobs/j1/run.json"));

    for (job, run) in [("serve", &served), ("worker", &queued)] {
        prom.until_equal(
            &format!("sum(planwave_tasks_total{{job=\"{job}\",outcome=\"completed\"}})"),
            completed(run),
        )
        .await;
        for kind in ["prompt", "completion", "cached"] {
            prom.until_equal(
                &format!(
                    "sum(planwave_model_tokens_total{{job=\"{job}\",type=\"{}\"}})",
                    kind.trim_end_matches("_tokens")
                ),
                usage(run, &format!("{kind}_tokens")),
            )
            .await;
        }
        prom.until_equal(
            &format!("sum(planwave_jobs_finished_total{{job=\"{job}\",state=\"completed\"}})"),
            1.0,
        )
        .await;
    }
    // The worker's journal commits went to JetStream and were timed; the queue is drained.
    let commits = prom
        .number("sum(planwave_journal_commit_seconds_count{job=\"worker\"})")
        .await
        .unwrap_or(0.0);
    assert!(commits > 0.0, "no journal commit was counted");
    prom.until_equal(
        "sum(planwave_queue_jobs{job=\"worker\",state=\"pending\"})",
        0.0,
    )
    .await;
    // Not one of the fleet's series is missing from a scrape, even those still at zero.
    let text = client()
        .get(format!("http://{worker_addr}/metrics"))
        .send()
        .await
        .expect("scrape")
        .text()
        .await
        .expect("text");
    for series in [
        "planwave_model_time_to_first_token_seconds_count",
        "planwave_task_dispatch_latency_seconds_count",
        "planwave_limiter_wait_seconds_count",
        "planwave_subagents_in_flight",
        "planwave_queue_redelivered_jobs",
    ] {
        assert!(text.contains(series), "{series} missing:\n{text}");
    }
    let (code, _) = worker.terminate();
    assert_eq!(code, 0);
}
