//! `planwave serve` as a trust boundary (issue 33), against the real binary on 127.0.0.1:0:
//! foreign `Host` and `Origin` headers and non-JSON bodies are refused, the token of the
//! address bar becomes a strict cookie and leaves the address by a redirect, jobs queue
//! beyond `--max-running` and plans over `--max-tasks` are refused, slow clients are cut off
//! (headers, bodies) without stopping the others, connections over `--max-connections` get
//! a 503, idle event streams get keep-alives, and every API error is JSON.

use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::serve::{Serve, chain, client, get_json, post_json, wait_done, wait_until};
use crate::support::read_json;

/// `host:port` of the server.
fn authority(s: &Serve) -> String {
    s.url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned()
}

fn port(s: &Serve) -> String {
    authority(s).rsplit(':').next().unwrap().to_owned()
}

async fn runs(s: &Serve) -> Vec<Value> {
    let (_, list) = get_json(&s.at("api/runs")).await;
    list["runs"].as_array().cloned().unwrap_or_default()
}

/// The status and JSON body of an answer, checking it is JSON with an `error`.
async fn json_error(r: reqwest::Response) -> (u16, String) {
    let code = r.status().as_u16();
    let kind = r
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let text = r.text().await.unwrap();
    assert!(
        kind.starts_with("application/json"),
        "{code}: {kind}: {text}"
    );
    let v: Value = serde_json::from_str(&text).expect("a JSON error");
    let error = v["error"].as_str().expect("error").to_owned();
    assert!(!error.is_empty(), "{text}");
    (code, error)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_refuses_foreign_hosts_foreign_origins_and_bodies_that_are_not_json() {
    let s = Serve::start(&["--allowed-host", "planwave.test"], &[]);
    let c = client();
    // DNS rebinding: a name that resolves here, but is not this server's.
    let r = c
        .get(s.at("api/runs"))
        .header("Host", format!("attacker.example:{}", port(&s)))
        .send()
        .await
        .unwrap();
    let (code, error) = json_error(r).await;
    assert_eq!(code, 403);
    assert!(error.contains("attacker.example"), "{error}");
    for host in [
        format!("planwave.test:{}", port(&s)),
        "planwave.test".to_owned(),
        format!("localhost:{}", port(&s)),
        authority(&s),
    ] {
        let r = c
            .get(s.at("api/runs"))
            .header("Host", &host)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200, "Host: {host}");
    }
    let body = json!({"plan": chain(1), "options": {"sim_latency_ms": 0}}).to_string();
    // What a page can send without a preflight: no JSON content type.
    for kind in [
        Some("text/plain;charset=UTF-8"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        None,
    ] {
        let mut req = c.post(s.at("api/runs")).body(body.clone());
        if let Some(k) = kind {
            req = req.header("Content-Type", k);
        }
        let (code, error) = json_error(req.send().await.unwrap()).await;
        assert_eq!(code, 415, "{kind:?}");
        assert!(error.contains("application/json"), "{error}");
    }
    let r = c
        .post(s.at("api/batches"))
        .header("Content-Type", "text/plain")
        .body(format!("{}\n", json!({"id": "a", "plan": chain(1)})))
        .send()
        .await
        .unwrap();
    assert_eq!(json_error(r).await.0, 415);
    // A JSON request from another origin (or an opaque one) changes nothing.
    for origin in [
        "http://attacker.example".to_owned(),
        "null".to_owned(),
        format!("http://127.0.0.1:{}", port(&s).parse::<u32>().unwrap() + 1),
    ] {
        let r = c
            .post(s.at("api/runs"))
            .header("Content-Type", "application/json")
            .header("Origin", &origin)
            .body(body.clone())
            .send()
            .await
            .unwrap();
        let (code, error) = json_error(r).await;
        assert_eq!(code, 403, "Origin: {origin}");
        assert!(error.contains("Origin"), "{error}");
    }
    assert_eq!(runs(&s).await, Vec::<Value>::new(), "nothing was created");
    // The server's own page may.
    let r = c
        .post(s.at("api/runs"))
        .header("Content-Type", "application/json; charset=utf-8")
        .header("Origin", s.url.trim_end_matches('/'))
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 201);
    let id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    wait_done(&s, &id).await;
    // Cancel and resume are state-changing too.
    let r = c
        .post(s.at(&format!("api/runs/{id}/resume")))
        .header("Origin", "http://attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(json_error(r).await.0, 403);
    assert_eq!(runs(&s).await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_token_from_the_address_is_decoded_set_as_a_strict_cookie_and_redirected_away() {
    let token = "t0k en/+&=;%";
    let s = Serve::start(&[], &[("PLANWAVE_SERVE_TOKEN", token)]);
    let c = planwave_tls::http_client()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let encoded = "t0k%20en%2F%2B%26%3D%3B%25";
    let r = c
        .get(s.at(&format!("runs/x?a=1&token={encoded}&b=2")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 303);
    assert_eq!(r.headers()["location"], "/runs/x?a=1&b=2");
    let cookie = r.headers()["set-cookie"].to_str().unwrap().to_owned();
    for attr in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(cookie.split("; ").any(|a| a == attr), "{attr}: {cookie}");
    }
    assert!(!cookie.contains(token), "{cookie}");
    let pair = cookie.split(';').next().unwrap().to_owned();
    let r = c
        .get(s.at("api/runs"))
        .header("Cookie", &pair)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    // The page it lands on needs no token in the address.
    let r = c
        .get(s.at(""))
        .header("Cookie", &pair)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    // The raw (undecoded) text is not the token; nor is a wrong one.
    for q in [
        format!("token={}", token.replace(' ', "+")),
        "token=t0k".into(),
    ] {
        let r = c.get(s.at(&format!("?{q}"))).send().await.unwrap();
        assert_eq!(json_error(r).await.0, 401, "{q}");
    }
    let r = c.get(s.at("?token=t0k+en%2F%2B%26%3D%3B%25")).send().await;
    assert_eq!(r.unwrap().status().as_u16(), 303, "`+` is a space");
}

/// A run whose one model call takes an hour: its event stream stays idle.
fn stuck() -> Value {
    json!({"plan": chain(1), "options": {"sim_latency_ms": 3_600_000, "sim_sigma": 0}})
}

async fn create(s: &Serve, body: &Value) -> String {
    let (code, created) = post_json(&s.at("api/runs"), body).await;
    assert_eq!(code, 201, "{created}");
    created["id"].as_str().unwrap().to_owned()
}

async fn status(s: &Serve, id: &str) -> Value {
    get_json(&s.at(&format!("api/runs/{id}"))).await.1["status"].clone()
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
async fn until_closed(stream: &mut TcpStream) -> String {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_answers_413_bad_queries_and_wrong_methods_as_json() {
    let s = Serve::start(&["--max-body", "1KiB"], &[]);
    let c = client();
    let r = c
        .post(s.at("api/runs"))
        .json(&json!({"goal": "x".repeat(4096)}))
        .send()
        .await
        .unwrap();
    let (code, error) = json_error(r).await;
    assert_eq!(code, 413);
    assert!(error.contains("1024"), "{error}");
    let id = create(
        &s,
        &json!({"plan": chain(1), "options": {"sim_latency_ms": 0}}),
    )
    .await;
    wait_done(&s, &id).await;
    for path in [
        format!("api/runs/{id}?tasks=maybe"),
        format!("api/runs/{id}/events?after=-1"),
    ] {
        let (code, error) = json_error(c.get(s.at(&path)).send().await.unwrap()).await;
        assert_eq!(code, 400, "{path}: {error}");
    }
    let r = c
        .post(s.at("api/batches?options=%7Bnot"))
        .header("Content-Type", "application/x-ndjson")
        .body("{}\n")
        .send()
        .await
        .unwrap();
    assert_eq!(json_error(r).await.0, 400);
    let r = c.delete(s.at("api/runs")).send().await.unwrap();
    assert_eq!(json_error(r).await.0, 405);
}
