//! `planwave serve`'s web view in a real headless Chromium, driven over WebDriver
//! (chromedriver, through fantoccini): the run page follows a run live without reloading,
//! shows a failed task and the tasks it blocked, shows a task's section on click, and its
//! cancel button stops the run. Screenshots go to the test's temp dir; the page must log no
//! error. Skipped (with a message) only when /usr/bin/chromedriver is missing; CI installs
//! it through .ci/peers.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use futures::FutureExt;
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Value, json};

use super::serve::{Serve, get_json, post_json, wait_done, wait_until};
use crate::support::{ChildGuard, tempdir};

const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// chromedriver on a free loopback port, ready when it says so on stdout.
pub(super) fn chromedriver(log: &Path) -> Option<(ChildGuard, String)> {
    if !Path::new(CHROMEDRIVER).exists() {
        eprintln!(
            "SKIPPED: {CHROMEDRIVER} is missing (install Debian's chromium-driver, as .ci/peers does)"
        );
        return None;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let child = Command::new(CHROMEDRIVER)
        .arg(format!("--port={port}"))
        .arg(format!("--log-path={}", log.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromedriver");
    // Guarded first, so a driver that never gets ready is still killed.
    let mut child = ChildGuard(child);
    wait_ready(&mut child.0);
    Some((child, format!("http://127.0.0.1:{port}")))
}

/// Reads chromedriver's stdout until it says it listens (at most 30 s), then drains it.
fn wait_ready(child: &mut std::process::Child) {
    use std::io::BufRead;
    let stdout = child.stdout.take().expect("stdout piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if line.contains("started successfully") {
                let _ = tx.send(line);
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("chromedriver said it started");
}

pub(super) async fn browser(driver: &str, profile: &Path) -> Client {
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": "/usr/bin/chromium",
            "args": [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--window-size=1400,1000",
                format!("--user-data-dir={}", profile.display()),
            ]
        }),
    );
    // chromedriver speaks plain HTTP on loopback: no TLS connector needed.
    ClientBuilder::new(HttpConnector::new())
        .capabilities(caps)
        .connect(driver)
        .await
        .expect("a WebDriver session")
}

/// Records errors thrown or logged by the page from now on, and marks the document so a
/// reload would show (the mark would be gone).
const WATCH: &str = "window.__errors = []; window.__mark = 'no-reload';
    window.addEventListener('error', (e) => window.__errors.push(String(e.message)));
    window.addEventListener('unhandledrejection', (e) => window.__errors.push(String(e.reason)));
    const original = console.error;
    console.error = (...args) => { window.__errors.push(args.map(String).join(' ')); original(...args); };";

pub(super) async fn js(c: &Client, script: &str) -> Value {
    c.execute(script, vec![]).await.expect("script")
}

/// The class list of task `id`'s node.
async fn node_class(c: &Client, id: &str) -> String {
    let v = js(
        c,
        &format!("const g = document.querySelector('#dag g.node[data-task=\"{id}\"]'); return g ? g.getAttribute('class') : '';"),
    )
    .await;
    v.as_str().unwrap_or("").to_owned()
}

async fn node_label(c: &Client, id: &str) -> String {
    let v = js(
        c,
        &format!("return document.querySelector('#dag g.node[data-task=\"{id}\"] text.status').textContent;"),
    )
    .await;
    v.as_str().unwrap_or("").to_owned()
}

/// Waits (bounded) until task `id`'s node has `status`, checking it is a status the node
/// may pass through on the way; returns the statuses seen, in order.
async fn wait_status(c: &Client, id: &str, status: &str, seen: &mut Vec<String>) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let class = node_class(c, id).await;
        let now = class
            .split_whitespace()
            .find(|w| *w != "node" && *w != "selected")
            .unwrap_or("")
            .to_owned();
        if seen.last() != Some(&now) {
            seen.push(now.clone());
        }
        if now == status {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "task {id} never showed {status}: {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn screenshot(c: &Client, dir: &Path, name: &str) -> PathBuf {
    let png = c.screenshot().await.expect("screenshot");
    assert!(png.starts_with(b"\x89PNG"), "a PNG");
    let path = dir.join(name);
    std::fs::write(&path, png).expect("write screenshot");
    path
}

async fn no_errors(c: &Client) {
    let errors = js(c, "return window.__errors;").await;
    assert_eq!(errors, json!([]), "the page logged errors");
    assert_eq!(
        js(c, "return window.__mark;").await,
        "no-reload",
        "the page was reloaded"
    );
    assert_eq!(
        js(c, "return document.body.dataset.ready;").await,
        "1",
        "run.js started"
    );
}

fn plan() -> Value {
    // 1 → 2, 1 → 3 → 4: task 3 fails, so 4 is blocked; 2 completes.
    json!({"topic": "Acme review", "tasks": [
        {"id": 1, "description": "Business model", "dependencies": []},
        {"id": 2, "description": "Finances", "dependencies": [1]},
        {"id": 3, "description": "Competitors", "dependencies": [1]},
        {"id": 4, "description": "Outlook", "dependencies": [3]}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_run_page_follows_a_run_live_and_shows_failures_sections_and_cancel() {
    let tmp = tempdir();
    let Some((_driver, driver_url)) = chromedriver(&tmp.path().join("chromedriver.log")) else {
        return;
    };
    // Priced, so the totals show the running cost.
    let cfg = super::serve::priced_config(tmp.path());
    let s = Serve::start(&["--config", cfg.to_str().unwrap()], &[]);
    let c = browser(&driver_url, &tmp.path().join("profile")).await;
    // The browser is closed even when a check fails (killing the driver would leave
    // Chromium behind); then the failure is re-raised.
    let result = std::panic::AssertUnwindSafe(page_checks(&s, &c, tmp.path()))
        .catch_unwind()
        .await;
    c.close().await.expect("close the browser");
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}

async fn page_checks(s: &Serve, c: &Client, shots: &Path) {
    // A run slow enough to watch: every call takes 4 s, task 3 always fails. Task 2 is seen
    // pending only if the page opens within task 1's call: 2 s was too short for a loaded
    // two-core machine running the whole suite (Chromium opening the page took longer).
    let (code, created) = post_json(
        &s.at("api/runs"),
        &json!({"plan": plan(), "options": {"sim_latency_ms": 4000, "sim_sigma": 0, "sim_fail": "3", "retries": 0}}),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    c.goto(&s.at(&format!("runs/{id}")))
        .await
        .expect("open the run page");
    js(c, WATCH).await;
    // Task 2 waits for task 1 (4 s): it is seen pending, then running, then completed.
    let mut seen = Vec::new();
    wait_status(c, "2", "running", &mut seen).await;
    assert_eq!(
        seen.first().map(String::as_str),
        Some("pending"),
        "{seen:?}"
    );
    // Task 1's call is priced: the totals show a cost above zero while the run goes on.
    let cost = wait_until("the running cost in the totals", || async {
        let v = js(c, "return [document.getElementById('t-cost').textContent, document.getElementById('status').dataset.status];").await;
        let text = v[0].as_str().unwrap_or("").to_owned();
        let amount: f64 = text.trim_end_matches(" USD").parse().unwrap_or(0.0);
        (v[1] == "running" && text.ends_with(" USD") && amount > 0.0).then_some(text)
    })
    .await;
    assert!(cost.ends_with(" USD"), "{cost}");
    screenshot(c, shots, "running.png").await;
    wait_status(c, "2", "completed", &mut seen).await;
    assert_eq!(seen, ["pending", "running", "completed"]);
    assert_eq!(node_label(c, "2").await, "✓ completed");
    let mut seen3 = Vec::new();
    wait_status(c, "3", "failed", &mut seen3).await;
    assert_eq!(node_label(c, "3").await, "✗ failed");
    let mut seen4 = Vec::new();
    wait_status(c, "4", "blocked", &mut seen4).await;
    assert_eq!(node_label(c, "4").await, "⊘ blocked");
    assert!(
        !seen4.contains(&"running".to_owned()),
        "a blocked task never ran: {seen4:?}"
    );

    // Clicking a node shows its section (the file the run wrote) and its calls.
    c.find(Locator::Css("#dag g.node[data-task=\"2\"]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let section = wait_until("the section of task 2", || async {
        let panel = js(c, "const d = document.getElementById('detail'); return d.dataset.task === '2' ? d.querySelector('pre.section').textContent : null;").await;
        panel.as_str().map(str::to_owned)
    })
    .await;
    let file = std::fs::read_to_string(s.data.join(&id).join("sections/2.md")).unwrap();
    assert_eq!(section, file);
    let detail = c
        .find(Locator::Id("detail"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(detail.contains("Model calls (1)"), "{detail}");
    // The failed task says why; the blocked one says by which.
    c.find(Locator::Css("#dag g.node[data-task=\"4\"]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_until("the details of task 4", || async {
        let t = js(c, "const d = document.getElementById('detail'); return d.dataset.task === '4' ? d.textContent : null;").await;
        t.as_str().filter(|t| t.contains("Blocked by") && t.contains("task 3")).map(|_| ())
    })
    .await;
    // Done: the report is shown, the cancel button gone.
    wait_until("the report", || async {
        let shown = js(c, "return !document.getElementById('report').hidden && document.getElementById('cancel').hidden;").await;
        (shown == true).then_some(())
    })
    .await;
    screenshot(c, shots, "finished.png").await;
    no_errors(c).await;
    cancel_checks(s, c, shots).await;
}

async fn cancel_checks(s: &Serve, c: &Client, shots: &Path) {
    let (code, created) = post_json(
        &s.at("api/runs"),
        &json!({"plan": super::serve::chain(3), "options": {"sim_latency_ms": 1500, "sim_sigma": 0}}),
    )
    .await;
    assert_eq!(code, 201);
    let id = created["id"].as_str().unwrap().to_owned();
    c.goto(&s.at(&format!("runs/{id}"))).await.unwrap();
    js(c, WATCH).await;
    let mut seen = Vec::new();
    wait_status(c, "1", "running", &mut seen).await;
    let button = c.find(Locator::Id("cancel")).await.unwrap();
    button.click().await.unwrap();
    let state = wait_done(s, &id).await;
    assert_eq!(state["status"], "cancelled", "{state}");
    assert_ne!(state["tasks"][2]["status"], "completed");
    wait_until("the page to show the run cancelled", || async {
        let st = js(
            c,
            "return document.getElementById('status').dataset.status;",
        )
        .await;
        (st == "cancelled").then_some(())
    })
    .await;
    let (_, list) = get_json(&s.at("api/runs")).await;
    assert_eq!(list["runs"].as_array().unwrap().len(), 2);
    screenshot(c, shots, "cancelled.png").await;
    no_errors(c).await;
}
