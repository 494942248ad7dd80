//! `planwave serve`'s limits, against the real binary on 127.0.0.1:0: jobs queue beyond
//! `--max-running` and plans over `--max-tasks` are refused, slow clients are cut off
//! (headers, bodies) without stopping the others, connections over `--max-connections` get
//! a 503, and idle event streams get keep-alives.

use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::serve::{
    Serve, authority, chain, client, create, get_json, json_error, post_json, runs, status,
    wait_done, wait_until,
};
use crate::support::read_json;

/// A run whose one model call takes an hour: its event stream stays idle.
fn stuck() -> Value {
    json!({"plan": chain(1), "options": {"sim_latency_ms": 3_600_000, "sim_sigma": 0}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_queues_jobs_beyond_max_running_and_refuses_plans_over_max_tasks() {
    let s = Serve::start(&["--max-running", "1", "--max-tasks", "5"], &[]);
    let (code, body) = post_json(&s.at("api/runs"), &json!({"plan": chain(6)})).await;
    assert_eq!(code, 422, "{body}");
    assert!(
        body["problems"][0]
            .as_str()
            .unwrap()
            .contains("--max-tasks 5"),
        "{body}"
    );
    let jobs = (1..=6)
        .map(|i| json!({"id": format!("j{i}"), "plan": chain(1)}).to_string())
        .collect::<Vec<_>>()
        .join("\n");
    let r = client()
        .post(s.at("api/batches?options=%7B%22sim_latency_ms%22%3A0%7D"))
        .header("Content-Type", "application/x-ndjson")
        .body(format!(
            "{jobs}\n{}\n",
            json!({"id": "big", "plan": chain(6)})
        ))
        .send()
        .await
        .unwrap();
    let batch: Value = r.json().await.unwrap();
    assert_eq!(batch["runs"].as_array().unwrap().len(), 6, "{batch}");
    let bad = batch["bad_lines"].to_string();
    assert!(
        bad.contains("line 7") && bad.contains("--max-tasks 5"),
        "{bad}"
    );
    for run in batch["runs"].as_array().unwrap() {
        wait_done(&s, run["id"].as_str().unwrap()).await;
    }

    // A job that takes a while (a cancel would wait for its model call as well).
    let a = create(
        &s,
        &json!({"plan": chain(1), "options": {"sim_latency_ms": 15_000, "sim_sigma": 0}}),
    )
    .await;
    wait_until("run a to start", || async {
        (status(&s, &a).await == "running").then_some(())
    })
    .await;
    let b = create(
        &s,
        &json!({"plan": chain(1), "options": {"sim_latency_ms": 0}}),
    )
    .await;
    let c = create(&s, &json!({"plan": chain(1)})).await;
    assert_eq!(status(&s, &b).await, "queued");
    // A queued job can be cancelled before it starts.
    let (code, _) = post_json(&s.at(&format!("api/runs/{c}/cancel")), &json!({})).await;
    assert_eq!(code, 202);
    assert_eq!(wait_done(&s, &c).await["status"], "cancelled");
    assert_eq!(status(&s, &b).await, "queued", "b waits for a");
    assert_eq!(wait_done(&s, &a).await["status"], "completed");
    assert_eq!(wait_done(&s, &b).await["status"], "completed");
    // b ran only once a had finished.
    let ra = read_json(&s.data.join(&a).join("run.json"));
    let rb = read_json(&s.data.join(&b).join("run.json"));
    let (finished, started) = (ra["finished_at"].as_str(), rb["started_at"].as_str());
    assert!(finished.is_some() && started.is_some(), "{ra} {rb}");
    assert!(
        started >= finished,
        "b started {started:?}, a finished {finished:?}"
    );
}

/// Reads until the server closes the connection; what it sent.
pub(crate) async fn until_closed(stream: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(60), async {
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => out.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    assert!(read.is_ok(), "the server never closed the connection");
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_closes_connections_whose_headers_or_body_never_arrive_and_serves_others() {
    let s = Serve::start(
        &["--header-timeout", "300ms", "--body-timeout", "300ms"],
        &[],
    );
    let addr = authority(&s);
    let mut partial = TcpStream::connect(&addr).await.unwrap();
    partial
        .write_all(format!("GET /api/runs HTTP/1.1\r\nHost: {addr}\r\nX-Slow: ").as_bytes())
        .await
        .unwrap();
    let mut body = TcpStream::connect(&addr).await.unwrap();
    body.write_all(
        format!(
            "POST /api/runs HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Content-Length: 1000\r\n\r\n{{\"plan\": "
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    // Others are served meanwhile.
    let (code, _) = get_json(&s.at("api/runs")).await;
    assert_eq!(code, 200);
    until_closed(&mut partial).await;
    let answer = until_closed(&mut body).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("\"error\""), "{answer}");
    let (code, _) = get_json(&s.at("api/runs")).await;
    assert_eq!(code, 200);
    assert_eq!(runs(&s).await, Vec::<Value>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_answers_503_over_max_connections_and_serves_again_when_one_closes() {
    let s = Serve::start(&["--max-connections", "2"], &[]);
    let addr = authority(&s);
    // Accepted in order: these two hold both places.
    let first = TcpStream::connect(&addr).await.unwrap();
    let _second = TcpStream::connect(&addr).await.unwrap();
    let over = planwave_tls::http_client()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let (code, error) = json_error(over.get(s.at("api/runs")).send().await.unwrap()).await;
    assert_eq!(code, 503);
    assert!(error.contains("--max-connections"), "{error}");
    drop(first);
    wait_until("a place to free up", || async {
        let r = over.get(s.at("api/runs")).send().await.ok()?;
        (r.status().as_u16() == 200).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_sends_keep_alives_on_an_idle_event_stream() {
    let s = Serve::start(&["--sse-keep-alive", "100ms"], &[]);
    let id = create(&s, &stuck()).await;
    let resp = client()
        .get(s.at(&format!("api/runs/{id}/events")))
        .send()
        .await
        .unwrap();
    let mut body = resp.bytes_stream();
    let mut seen = String::new();
    while let Some(chunk) = body.next().await {
        seen.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        if seen.contains(": keep-alive") {
            break;
        }
    }
    assert!(seen.contains(": keep-alive"), "{seen}");
    let (code, _) = post_json(&s.at(&format!("api/runs/{id}/cancel")), &json!({})).await;
    assert_eq!(code, 202);
}
