//! `planwave serve --write-timeout` through the real binary (issue 33, slow clients): a client
//! that asks for a chatty run's event stream and never reads fills the socket's buffers; the
//! server's write then waits for it, and after `--write-timeout` the server drops it, so it
//! does not keep its place under `--max-connections` for ever.

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::serve::{Serve, wait_until};

/// Independent tasks with long titles: every task puts a few KB of events on the stream.
const TASKS: usize = 3000;

fn chatty() -> Value {
    let tasks: Vec<Value> = (1..=TASKS)
        .map(|i| {
            json!({"id": format!("t{i}"),
                   "description": format!("Part {i} of the survey: {}", "every detail ".repeat(16)),
                   "dependencies": []})
        })
        .collect();
    json!({"plan": {"topic": "A chatty run", "tasks": tasks},
           "options": {"sim_latency_ms": 0, "sim_sigma": 0, "concurrency": 16}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_drops_a_client_that_never_reads_its_event_stream_and_frees_its_place() {
    let s = Serve::start(
        &[
            "--max-connections",
            "1",
            "--write-timeout",
            "2s",
            // Only the write timeout may end the reader's connection.
            "--header-timeout",
            "1h",
            "--max-tasks",
            &TASKS.to_string(),
        ],
        &[],
    );
    // One request per connection, closed after it: the one place is free between them.
    let once = planwave_tls::http_client()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let health = || async {
        let r = once.get(s.at("healthz")).send().await.ok()?;
        Some(r.status().as_u16())
    };
    let created: Value = once
        .post(s.at("api/runs"))
        .json(&chatty())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["id"].as_str().expect("run id").to_owned();
    // A reader with a small receive window that asks for the stream and, past the answer's
    // head, never reads it. (A connection the server has not yet seen closed may still hold
    // the place: the reader is then answered 503 and tries again.)
    let addr = s.url.trim_start_matches("http://").trim_end_matches('/');
    let mut tries = 0;
    let mut reader = loop {
        wait_until("the place to be free", || async {
            (health().await == Some(200)).then_some(())
        })
        .await;
        let (reader, head) = open_stream(addr, &id).await;
        if head.starts_with("HTTP/1.1 200") {
            break reader;
        }
        assert!(head.starts_with("HTTP/1.1 503"), "{head}");
        tries += 1;
        assert!(tries < 20, "never got the place: {head}");
    };
    // It holds the one place...
    assert_eq!(health().await, Some(503), "the reader holds the only place");
    // ...until its stream has filled the buffers and a write has waited 2 s for it.
    wait_until("the server to drop the reader", || async {
        (health().await == Some(200)).then_some(())
    })
    .await;
    // What it was sent before the drop: the stream's start, then the end of the connection.
    let mut got = Vec::new();
    reader.read_to_end(&mut got).await.ok();
    let got = String::from_utf8_lossy(&got);
    assert!(
        got.contains("\"task_started\""),
        "{}",
        &got[..got.len().min(300)]
    );
}

/// Connects with a small receive buffer, asks for run `id`'s events and reads the answer's
/// head only (status line and headers).
async fn open_stream(addr: &str, id: &str) -> (tokio::net::TcpStream, String) {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket.connect(addr.parse().unwrap()).await.unwrap();
    let request = format!("GET /api/runs/{id}/events HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte).await {
            Ok(1) => head.push(byte[0]),
            _ => break,
        }
    }
    (stream, String::from_utf8_lossy(&head).into_owned())
}
