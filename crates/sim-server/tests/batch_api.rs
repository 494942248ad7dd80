//! The Batch API client (`planwave_llm::batch::BatchProvider`) against the simulated Batch
//! API over real HTTP on 127.0.0.1: calls lingered into one batch, answered as normal calls
//! are, failed lines handed back as errors; and the server's checks of what it is sent.

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

use planwave_llm::batch::{BatchConfig, BatchProvider};
use planwave_llm::openai::OpenAiConfig;
use planwave_llm::{AgentRole, ChatMessage, ChatRequest, LlmProvider, RequestContext};
use planwave_plan::Lang;
use planwave_sim_server::{BatchSimConfig, SimServer, SimServerConfig};
use serde_json::Value;

async fn server(batch: BatchSimConfig) -> SimServer {
    SimServer::start(
        "127.0.0.1:0".parse().expect("addr"),
        SimServerConfig {
            batch,
            ..SimServerConfig::default()
        },
    )
    .await
    .expect("start sim server")
}

fn provider(base: &str) -> Arc<BatchProvider> {
    let cfg = OpenAiConfig::new(base, "sim-model");
    let batch = BatchConfig {
        linger: Duration::from_millis(100),
        poll: Duration::from_millis(20),
        poll_max: Duration::from_millis(50),
        ..BatchConfig::default()
    };
    Arc::new(BatchProvider::new(cfg, batch).expect("client"))
}

fn request(task: &str) -> ChatRequest {
    ChatRequest {
        role: AgentRole::Subagent,
        messages: vec![ChatMessage::user(format!("Write section {task}."))],
        attempt: 1,
        context: RequestContext {
            lang: Lang::En,
            topic: "Tesla".into(),
            task_id: Some(task.into()),
            task_title: format!("Section {task}"),
            ..RequestContext::default()
        },
        traceparent: None,
        max_tokens: None,
        tools: Vec::new(),
        on_delta: None,
    }
}

/// One HTTP/1.0 exchange: the status and the body as JSON.
fn http(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    ct: &str,
    body: &[u8],
) -> (u16, Value) {
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    write!(
        s,
        "{method} {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Type: {ct}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .expect("send");
    s.write_all(body).expect("body");
    let mut text = String::new();
    s.read_to_string(&mut text).expect("read");
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

async fn get(addr: std::net::SocketAddr, path: &str) -> (u16, Value) {
    let path = path.to_owned();
    tokio::task::spawn_blocking(move || http(addr, "GET", &path, "application/json", b""))
        .await
        .expect("join")
}

async fn post(addr: std::net::SocketAddr, path: &str, ct: &str, body: Vec<u8>) -> (u16, Value) {
    let (path, ct) = (path.to_owned(), ct.to_owned());
    tokio::task::spawn_blocking(move || http(addr, "POST", &path, &ct, &body))
        .await
        .expect("join")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ready_calls_go_in_one_batch_and_each_gets_its_own_answer() {
    let srv = server(BatchSimConfig::default()).await;
    let p = provider(&srv.base_url());
    let calls: Vec<_> = ["1", "2", "3"]
        .into_iter()
        .map(|t| {
            let p = p.clone();
            tokio::spawn(async move { p.chat(request(t)).await })
        })
        .collect();
    for (t, c) in ["1", "2", "3"].iter().zip(calls) {
        let answer = c.await.expect("join").expect("answer");
        assert!(
            answer.content.starts_with(&format!("## Section {t}")),
            "{}",
            answer.content
        );
        assert!(answer.usage.prompt_tokens > 0 && answer.usage.completion_tokens > 0);
    }
    assert_eq!(p.batches_submitted(), 1);
    let (_, stats) = get(srv.addr(), "/planwave/batch-stats").await;
    assert_eq!(stats["batches_created"], 1, "{stats}");
    assert_eq!(stats["lines_submitted"], 3, "{stats}");
    let mut labels: Vec<&str> = stats["batches"][0]
        .as_array()
        .expect("batch labels")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    labels.sort_unstable();
    assert_eq!(
        labels,
        ["subagent:1", "subagent:2", "subagent:3"],
        "{stats}"
    );
    // The same body asked again is a new request: occurrence 2, a new custom id.
    p.chat(request("1")).await.expect("again");
    let (_, stats) = get(srv.addr(), "/planwave/batch-stats").await;
    assert_eq!(stats["duplicates"], serde_json::json!([]), "{stats}");
    assert_eq!(stats["lines_submitted"], 4, "{stats}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_line_is_the_calls_retryable_error() {
    let srv = server(BatchSimConfig {
        line_error_rate: 1.0,
        ..BatchSimConfig::default()
    })
    .await;
    let p = provider(&srv.base_url());
    let e = p.chat(request("1")).await.expect_err("the line failed");
    assert!(e.is_retryable(), "{e}");
    assert!(e.to_string().contains("HTTP 500"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_batch_sends_its_unfinished_lines_again() {
    let srv = server(BatchSimConfig {
        expire_first: 1,
        partial: 0.5,
        ..BatchSimConfig::default()
    })
    .await;
    let p = provider(&srv.base_url());
    let calls: Vec<_> = ["1", "2", "3", "4"]
        .into_iter()
        .map(|t| {
            let p = p.clone();
            tokio::spawn(async move { p.chat(request(t)).await })
        })
        .collect();
    for c in calls {
        c.await.expect("join").expect("answered in the end");
    }
    let (_, stats) = get(srv.addr(), "/planwave/batch-stats").await;
    assert_eq!(stats["expired"], 1, "{stats}");
    assert_eq!(stats["batches_created"], 2, "{stats}");
    assert_eq!(
        stats["batches"][1].as_array().map(Vec::len),
        Some(2),
        "{stats}"
    );
    assert_eq!(
        stats["duplicates"].as_array().map(Vec::len),
        Some(2),
        "{stats}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_checks_uploads_batches_and_ids() {
    let srv = server(BatchSimConfig {
        max_file_bytes: 1024,
        ..BatchSimConfig::default()
    })
    .await;
    let addr = srv.addr();
    let form = |purpose: &str, file: &str| {
        format!(
            "--b\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\n{purpose}\r\n--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.jsonl\"\r\n\r\n{file}\r\n--b--\r\n"
        )
        .into_bytes()
    };
    let mp = "multipart/form-data; boundary=b";
    let (s, _) = post(addr, "/v1/files", "application/json", b"{}".to_vec()).await;
    assert_eq!(s, 400, "not multipart");
    let (s, _) = post(addr, "/v1/files", mp, form("fine-tune", "{}")).await;
    assert_eq!(s, 400, "another purpose");
    let (s, _) = post(addr, "/v1/files", mp, form("batch", &"x".repeat(2000))).await;
    assert_eq!(s, 413, "too large");
    // A file whose lines are not requests: the batch fails validation, naming the lines.
    let (s, f) = post(
        addr,
        "/v1/files",
        mp,
        form("batch", "{\"custom_id\": \"a\"}\nnope\n"),
    )
    .await;
    assert_eq!(s, 200, "{f}");
    let file = f["id"].as_str().expect("file id").to_owned();
    let create = |input: &str, window: &str| {
        serde_json::json!({"input_file_id": input, "endpoint": "/v1/chat/completions", "completion_window": window})
            .to_string()
            .into_bytes()
    };
    let (s, _) = post(addr, "/v1/batches", "application/json", create(&file, "1h")).await;
    assert_eq!(s, 400, "only 24h");
    let (s, _) = post(
        addr,
        "/v1/batches",
        "application/json",
        create("file-nope", "24h"),
    )
    .await;
    assert_eq!(s, 404);
    let (s, b) = post(
        addr,
        "/v1/batches",
        "application/json",
        create(&file, "24h"),
    )
    .await;
    assert_eq!((s, b["status"].as_str()), (200, Some("validating")), "{b}");
    let id = b["id"].as_str().expect("batch id").to_owned();
    let mut state = Value::Null;
    for _ in 0..500 {
        state = get(addr, &format!("/v1/batches/{id}")).await.1;
        if state["status"] != "validating" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(state["status"], "failed", "{state}");
    let lines: Vec<u64> = state["errors"]["data"]
        .as_array()
        .expect("errors")
        .iter()
        .filter_map(|e| e["line"].as_u64())
        .collect();
    assert_eq!(lines, vec![1, 2], "{state}");
    let (s, _) = get(addr, "/v1/batches/..%2Fetc").await;
    assert_eq!(s, 404);
    let (s, _) = post(
        addr,
        &format!("/v1/batches/{id}/cancel"),
        "application/json",
        Vec::new(),
    )
    .await;
    assert_eq!(s, 409, "a failed batch cannot be cancelled");
}
