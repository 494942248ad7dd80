//! The `model` label of `planwave_model_*` is bounded, against the real binary: `planwave
//! serve` runs a plan on a model server that answers a new model name each time (a tiny HTTP
//! server here), and its `/metrics` holds at most 16 model names plus `other`, with every call
//! counted.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;

use super::serve::{Serve, chain, client, create, wait_done};

/// An OpenAI-compatible chat server whose every answer names another model (`m-1`, `m-2`,
/// ...); its base URL.
fn renaming_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let answered = Arc::new(AtomicUsize::new(0));
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let answered = answered.clone();
            std::thread::spawn(move || answer(stream, &answered));
        }
    });
    format!("http://{addr}/v1")
}

fn answer(stream: TcpStream, answered: &AtomicUsize) {
    let mut reader = BufReader::new(stream);
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0u8; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let n = answered.fetch_add(1, Ordering::SeqCst) + 1;
    let model = format!("m-{n}");
    let content = format!("Finding {n}: the figures hold.");
    let usage = json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15});
    let streamed =
        serde_json::from_slice::<serde_json::Value>(&body).is_ok_and(|b| b["stream"] == true);
    let (kind, answer) = if streamed {
        let chunk = |delta: serde_json::Value, finish: serde_json::Value, usage| {
            json!({"id": format!("chatcmpl-{n}"), "object": "chat.completion.chunk",
                   "created": 0, "model": model,
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                   "usage": usage})
        };
        let first = chunk(
            json!({"role": "assistant", "content": content}),
            serde_json::Value::Null,
            serde_json::Value::Null,
        );
        let last = chunk(json!({}), json!("stop"), usage);
        (
            "text/event-stream",
            format!("data: {first}\n\ndata: {last}\n\ndata: [DONE]\n\n"),
        )
    } else {
        let whole = json!({
            "id": format!("chatcmpl-{n}"), "object": "chat.completion", "created": 0,
            "model": model,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": usage,
        });
        ("application/json", whole.to_string())
    };
    let mut stream = reader.into_inner();
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
        answer.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_labels_stay_bounded_when_every_answer_names_a_new_model() {
    let base = renaming_server();
    let s = Serve::start(
        &[],
        &[
            ("PLANWAVE_LLM_BASE_URL", base.as_str()),
            ("PLANWAVE_LLM_MODEL", "configured-model"),
        ],
    );
    let id = create(&s, &json!({"plan": chain(30)})).await;
    let done = wait_done(&s, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    let text = client()
        .get(s.at("metrics"))
        .send()
        .await
        .expect("GET /metrics")
        .text()
        .await
        .expect("metrics text");
    let calls: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("planwave_model_calls_total{"))
        .collect();
    let models: BTreeSet<&str> = calls
        .iter()
        .filter_map(|l| l.split("model=\"").nth(1)?.split('"').next())
        .collect();
    // Calls are labelled by the model planwave asked for (issue 49: llama.cpp answers with
    // a file path), so a server naming a new model each time adds no label at all; the
    // 16-label fold stays for runs configured with many models.
    assert_eq!(
        models,
        BTreeSet::from(["configured-model"]),
        "{} model labels: {models:?}",
        models.len()
    );
    let counted: f64 = calls
        .iter()
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    // 30 tasks and the summary, each one call: all counted, whatever their label.
    assert_eq!(counted, 31.0, "{text}");
}
