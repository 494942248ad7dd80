//! The fleet's runs on the page, with real parts (a real `nats-server`, `planwave worker`
//! against `sim-llm serve`, `serve --nats` or an embedded `serve`, headless Chromium): a goal
//! (research) run on a worker is followed live, over SSE and on its page, as a plan run is;
//! and a cancelled run is resumed from its page, embedded and over the queue.

use std::path::Path;
use std::time::Duration;

use fantoccini::Client;
use futures::{FutureExt, StreamExt};
use serde_json::{Value, json};

use super::serve::{Serve, client, get_json, post_json};
use super::serve_browser::{browser, chromedriver, js};
use super::serve_nats::{
    MARK, chain, node_status, run_state, serve_nats, text_of, wait_page, wait_state,
};
use crate::support::nats::{Nats, start_worker};
use crate::support::{SimLlm, tempdir};

/// Runs `checks` with a browser, closing it whatever happens (killing the driver would leave
/// Chromium behind), then re-raises a failure.
async fn with_browser<F, Fut>(dir: &Path, checks: F)
where
    F: FnOnce(Client) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let Some((_driver, driver_url)) = chromedriver(&dir.join("chromedriver.log")) else {
        return;
    };
    let c = browser(&driver_url, &dir.join("profile")).await;
    let result = std::panic::AssertUnwindSafe(checks(c.clone()))
        .catch_unwind()
        .await;
    c.close().await.expect("close the browser");
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}

/// SSE messages of `url` up to and including the first whose `type` is `kind`, as (id, data).
async fn sse_until(url: &str, kind: &str) -> Vec<(usize, Value)> {
    let resp = client().get(url).send().await.expect("GET events");
    assert_eq!(resp.status().as_u16(), 200);
    let mut body = resp.bytes_stream();
    let (mut buf, mut out) = (String::new(), Vec::new());
    let read = async {
        loop {
            let chunk = body
                .next()
                .await
                .expect("the stream goes on")
                .expect("chunk");
            buf.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(at) = buf.find("\n\n") {
                let block: String = buf.drain(..at + 2).collect();
                assert!(
                    !block.starts_with("event: end"),
                    "the run ended first: {out:?}"
                );
                let id = block.lines().find_map(|l| l.strip_prefix("id: "));
                let data = block.lines().find_map(|l| l.strip_prefix("data: "));
                if let (Some(id), Some(data)) = (id, data) {
                    let v: Value = serde_json::from_str(data).expect("every event is JSON");
                    let done = v["type"] == kind;
                    out.push((id.parse().expect("a numeric id"), v));
                    if done {
                        return;
                    }
                }
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(90), read)
        .await
        .expect("the event came");
    out
}

/// Whether a node of the page's DAG shows `status`.
async fn any_node(c: &Client, status: &str) -> bool {
    js(
        c,
        &format!(
            "return document.querySelector('#dag g.node[data-status=\"{status}\"]') !== null;"
        ),
    )
    .await
        == true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_nats_follows_a_goal_run_on_a_worker_live_over_sse_and_on_its_page() {
    let tmp = tempdir();
    let Some(nats) = Nats::start(&tmp.path().join("js"), &[]) else {
        return;
    };
    let url = nats.url();
    // Every model call takes a second: planning, each task and the evaluation are seen.
    let sim = SimLlm::start(&["--latency-ms", "1000", "--sigma", "0"], &[]);
    let _worker = start_worker(
        &url,
        &sim,
        &tmp.path().join("cache"),
        &["--jobs", "1", "--name", "wg", "--max-rounds", "1", "-q"],
    );
    let a = serve_nats(&tmp.path().join("data"), "127.0.0.1:0", &url);
    let shot_path = tmp.path().join("goal-live.png");
    with_browser(tmp.path(), |c| async move {
        let (code, created) = post_json(
            &a.at("api/runs"),
            &json!({"goal": "Review the solar panel makers of Europe"}),
        )
        .await;
        assert_eq!(code, 201, "{created}");
        let id = created["id"].as_str().expect("id").to_owned();
        // SSE from the start: the planner's calls, then the round's tasks starting; the run's
        // state read as the first task_started arrives.
        let (events_url, state_url) = (
            a.at(&format!("api/runs/{id}/events")),
            a.at(&format!("api/runs/{id}")),
        );
        let sse = tokio::spawn(async move {
            let events = sse_until(&events_url, "task_started").await;
            (events, get_json(&state_url).await.1)
        });
        c.goto(&a.at(&format!("runs/{id}"))).await.expect("open");
        js(&c, MARK).await;
        // The page: a task running on the worker, without a reload.
        wait_page("a task running", || any_node(&c, "running")).await;
        let (events, now) = sse.await.expect("the SSE reader");
        assert_eq!(now["live"], true, "{now}");
        assert_eq!(now["kind"], "research", "{now}");
        assert_eq!(now["queue"]["worker"], "wg", "{now}");
        // The live state follows the round's plan: its tasks, the one started running.
        assert!(
            now["stats"]["running"].as_u64().is_some_and(|n| n >= 1),
            "{now}"
        );
        assert!(
            now["stats"]["tasks"].as_u64().is_some_and(|n| n >= 2),
            "{now}"
        );
        let kinds: Vec<&str> = events
            .iter()
            .filter_map(|(_, v)| v["type"].as_str())
            .collect();
        let ids: Vec<usize> = events.iter().map(|(i, _)| *i).collect();
        assert_eq!(
            ids,
            (1..=ids.len()).collect::<Vec<_>>(),
            "positions from 1: {kinds:?}"
        );
        assert!(
            events
                .iter()
                .any(|(_, v)| v["type"] == "llm_call" && v["role"] == "planner"),
            "the planner's call: {kinds:?}"
        );
        assert!(kinds.contains(&"run_started"), "{kinds:?}");
        wait_page("the run completed", || async {
            text_of(&c, "status").await == "completed"
        })
        .await;
        wait_page("the report", || async {
            js(&c, "return !document.getElementById('report').hidden;").await == true
        })
        .await;
        assert!(!any_node(&c, "running").await);
        assert_eq!(js(&c, "return window.__errors;").await, json!([]));
        assert_eq!(js(&c, "return window.__mark;").await, "no-reload");
        let shot = c.screenshot().await.expect("screenshot");
        std::fs::write(&shot_path, shot).expect("write screenshot");
    })
    .await;
    drop(nats);
}

/// Opens run `id`'s page once it is cancelled, clicks Resume, and waits for the page to show
/// it completed, every task completed.
async fn resume_from_the_page(c: &Client, s: &Serve, id: &str, tasks: usize, p: &str) {
    c.goto(&s.at(&format!("runs/{id}"))).await.expect("open");
    wait_page("the resume button", || async {
        js(c, "return !document.getElementById('resume').hidden;").await == true
    })
    .await;
    assert_eq!(text_of(c, "status").await, "cancelled");
    assert_eq!(
        js(c, "return document.getElementById('cancel').hidden;").await,
        true
    );
    js(c, "document.getElementById('resume').click();").await;
    wait_page("the run completed", || async {
        text_of(c, "status").await == "completed"
    })
    .await;
    // The status comes from the run's record and the tasks from its event stream, which the
    // page may still be replaying after its reload: every task shows completed in the end.
    for i in 1..=tasks {
        let task = format!("{p}{i}");
        wait_page(&format!("task {task} completed"), || async {
            node_status(c, &task).await == "completed"
        })
        .await;
    }
    assert_eq!(
        js(c, "return document.getElementById('resume').hidden;").await,
        true,
        "a completed run has nothing to resume"
    );
    assert_eq!(text_of(c, "error").await, "");
}

/// Creates a chain run, waits for a completed task and cancels it through the API.
async fn cancelled_run(s: &Serve, body: Value, tasks: u64) -> (String, u64) {
    let (code, created) = post_json(&s.at("api/runs"), &body).await;
    assert_eq!(code, 201, "{created}");
    let id = created["id"].as_str().expect("id").to_owned();
    wait_state(s, &id, "a completed task", |v| {
        v["stats"]["completed"].as_u64().is_some_and(|n| n >= 1)
    })
    .await;
    let (code, _) = post_json(&s.at(&format!("api/runs/{id}/cancel")), &json!({})).await;
    assert_eq!(code, 202);
    let stopped = wait_state(s, &id, "cancelled", |v| v["live"] == false).await;
    assert_eq!(stopped["status"], "cancelled", "{stopped}");
    let kept = stopped["stats"]["completed"].as_u64().expect("completed");
    assert!(kept < tasks, "{stopped}");
    (id, kept)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_page_resumes_a_cancelled_run_embedded_and_over_the_queue() {
    let tmp = tempdir();
    let Some(nats) = Nats::start(&tmp.path().join("js"), &[]) else {
        return;
    };
    let url = nats.url();
    let sim = SimLlm::start(&["--latency-ms", "600", "--sigma", "0"], &[]);
    let _worker = start_worker(
        &url,
        &sim,
        &tmp.path().join("cache"),
        &["--jobs", "1", "--name", "wr", "-q"],
    );
    let embedded = Serve::start(&[], &[]);
    let remote = serve_nats(&tmp.path().join("data"), "127.0.0.1:0", &url);
    with_browser(tmp.path(), |c| async move {
        // Embedded: the run is the server's own, resumed from its directory.
        let body = json!({"plan": chain("e", 6),
                          "options": {"sim_latency_ms": 600, "sim_sigma": 0}});
        let (id, _) = cancelled_run(&embedded, body, 6).await;
        resume_from_the_page(&c, &embedded, &id, 6, "e").await;
        let done = run_state(&embedded, &id).await;
        assert_eq!(done["stats"]["completed"], 6, "{done}");
        // Over the queue: queued again, a worker takes it over with its journal.
        let (id, kept) = cancelled_run(&remote, json!({"plan": chain("q", 6)}), 6).await;
        resume_from_the_page(&c, &remote, &id, 6, "q").await;
        let done = run_state(&remote, &id).await;
        assert_eq!(done["stats"]["completed"], 6, "{done}");
        assert_eq!(done["queue"]["state"], "completed", "{done}");
        // What was completed before the cancel was kept: each sent to the model once.
        let calls: std::collections::BTreeMap<String, u64> =
            serde_json::from_value(sim.stats()["tasks"].clone()).expect("tasks");
        for i in 1..=kept {
            assert_eq!(calls.get(&format!("q{i}")), Some(&1), "{calls:?}");
        }
    })
    .await;
    drop(nats);
}
