//! `planwave sim-llm serve` as an endpoint other load testers can test against (issue 37):
//! content given as parts, `max_tokens`, vLLM's `/health`, `/v1/models` and `/metrics`, and
//! `stream_options.include_usage`. Plain HTTP/1.0 from the test, so nothing of planwave's own
//! client stands between the request and the server.

use std::io::{Read, Write};

use serde_json::{Value, json};

use crate::support::SimLlm;

/// One HTTP/1.0 exchange on loopback: the status and the body.
pub(crate) fn http(
    base_url: &str,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> (u16, String) {
    let host = base_url
        .strip_prefix("http://")
        .and_then(|r| r.split('/').next())
        .expect("http url");
    let mut s = std::net::TcpStream::connect(host).expect("connect");
    let body = body.map(Value::to_string).unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.0\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    let mut text = String::new();
    s.read_to_string(&mut text).expect("read");
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status in {head}"));
    (status, body.to_owned())
}

fn chat(base: &str, body: Value) -> Value {
    let (status, text) = http(base, "POST", "/v1/chat/completions", Some(&body));
    assert_eq!(status, 200, "{text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// The `data:` events of an SSE body, `[DONE]` left out.
fn events(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap_or_else(|e| panic!("{e}: {d}")))
        .collect()
}

#[test]
fn content_parts_are_answered_and_max_tokens_bounds_the_answer() {
    let server = SimLlm::start(&[], &[]);
    let base = &server.base_url;
    let parts = json!([{"type": "text", "text": "Tesla revenue"},
                       {"type": "text", "text": "in 2024"}]);
    let unbounded = chat(
        base,
        json!({"model": "m", "messages": [{"role": "user", "content": parts}]}),
    );
    let full = unbounded["usage"]["completion_tokens"]
        .as_u64()
        .expect("usage");
    assert!(full > 20, "the simulator's answer is long: {unbounded}");

    for key in ["max_tokens", "max_completion_tokens"] {
        let v = chat(
            base,
            json!({"messages": [{"role": "user", "content": parts}], key: 7}),
        );
        assert_eq!(v["usage"]["completion_tokens"], 7, "{key}: {v}");
        assert_eq!(v["choices"][0]["finish_reason"], "length", "{v}");
    }
    // vLLM's ignore_eos: exactly the bound, longer than the written answer.
    let exact = full + 100;
    let v = chat(
        base,
        json!({"messages": [{"role": "user", "content": "x"}], "max_tokens": exact, "ignore_eos": true}),
    );
    assert_eq!(v["usage"]["completion_tokens"].as_u64(), Some(exact), "{v}");
}

#[test]
fn include_usage_adds_the_usage_chunk_only_when_asked() {
    let server = SimLlm::start(&["--tokens-per-sec", "20000"], &[]);
    let body = |include: bool| {
        json!({"messages": [{"role": "user", "content": "hi"}], "stream": true, "max_tokens": 9,
               "stream_options": {"include_usage": include}})
    };
    let (status, with) = http(
        &server.base_url,
        "POST",
        "/v1/chat/completions",
        Some(&body(true)),
    );
    assert_eq!(status, 200);
    let with = events(&with);
    let last = with.last().expect("events");
    assert_eq!(last["usage"]["completion_tokens"], 9, "{last}");
    assert_eq!(last["choices"], json!([]));
    let text: String = with
        .iter()
        .filter_map(|e| e["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(
        text.chars().count(),
        27,
        "9 tokens of 3 characters: {text:?}"
    );

    let (_, without) = http(
        &server.base_url,
        "POST",
        "/v1/chat/completions",
        Some(&body(false)),
    );
    assert!(
        events(&without).iter().all(|e| e.get("usage").is_none()),
        "{without}"
    );
}

#[test]
fn health_models_and_metrics_answer_as_vllm_does() {
    let server = SimLlm::start(
        // Slow enough that a 20-token answer goes out in several pieces (the simulator
        // merges tokens less than 1 ms apart).
        &["--tokens-per-sec", "2000", "--max-concurrency", "4"],
        &[],
    );
    let base = &server.base_url;
    let (status, body) = http(base, "GET", "/health", None);
    assert_eq!((status, body.as_str()), (200, ""));
    let (status, models) = http(base, "GET", "/v1/models", None);
    assert_eq!(status, 200);
    let models: Value = serde_json::from_str(&models).expect("json");
    assert_eq!(models["object"], "list");
    assert!(
        models["data"][0]["max_model_len"].as_u64().unwrap_or(0) > 0,
        "{models}"
    );

    let mut prompt = 0;
    for n in 1..=3u64 {
        let body = json!({"messages": [{"role": "user", "content": "q".repeat(30 * n as usize)}],
                          "max_tokens": 10 * n, "stream": n == 2,
                          "stream_options": {"include_usage": true}});
        let (status, text) = http(base, "POST", "/v1/chat/completions", Some(&body));
        assert_eq!(status, 200, "{text}");
        let usage = if n == 2 {
            events(&text).last().expect("events")["usage"].clone()
        } else {
            serde_json::from_str::<Value>(&text).expect("json")["usage"].clone()
        };
        prompt += usage["prompt_tokens"].as_u64().expect("prompt tokens");
    }
    let (status, text) = http(base, "GET", "/metrics", None);
    assert_eq!(status, 200);
    let value = |series: &str| -> f64 {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{series}{{")))
            .unwrap_or_else(|| panic!("no {series} in\n{text}"));
        line.rsplit(' ')
            .next()
            .and_then(|v| v.parse().ok())
            .expect("value")
    };
    assert_eq!(
        value("vllm:generation_tokens_total"),
        60.0,
        "10 + 20 + 30 tokens"
    );
    assert_eq!(value("vllm:prompt_tokens_total"), prompt as f64);
    assert_eq!(value("vllm:time_to_first_token_seconds_count"), 3.0);
    assert_eq!(value("vllm:num_requests_running"), 0.0);
    assert_eq!(value("vllm:num_requests_waiting"), 0.0);
    // The streamed answer's 20 tokens left gaps between them.
    assert!(
        value("vllm:inter_token_latency_seconds_count") >= 1.0,
        "{text}"
    );
    assert!(
        text.contains("# TYPE vllm:time_to_first_token_seconds histogram"),
        "{text}"
    );
}

/// Regression (issue 37): a load test against an endpoint sent the report's integrator call
/// after the measured tasks, unasked and uncounted.
#[test]
fn an_endpoint_load_test_sends_no_integrator_call_unless_asked() {
    let server = SimLlm::start(&[], &[]);
    let run = |extra: &[&str]| -> Value {
        let out = crate::support::planwave(["loadtest", "--shape", "wide", "--json"])
            .opt("--tasks", "5")
            .opt("--llm-url", &server.base_url)
            .args(extra)
            .run();
        out.expect_ok();
        serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
    };
    let v = run(&[]);
    let r = &v["runs"][0];
    assert_eq!(
        (
            &r["model_calls"],
            &r["integrator_calls"],
            &r["integrator_answered_locally"]
        ),
        (&json!(5), &json!(0), &json!(1)),
        "{r}"
    );
    let roles = &server.stats()["roles"];
    assert!(roles.get("integrator").is_none(), "nothing sent: {roles}");
    assert_eq!(roles["subagent"], 5, "{roles}");

    let v = run(&["--integrator"]);
    let r = &v["runs"][0];
    assert_eq!(
        (
            &r["model_calls"],
            &r["integrator_calls"],
            &r["integrator_answered_locally"]
        ),
        (&json!(6), &json!(1), &json!(0)),
        "{r}"
    );
    assert_eq!(server.stats()["roles"]["integrator"], 1);
}

#[test]
fn scraped_metrics_end_with_the_run_s_totals() {
    let server = SimLlm::start(&["--max-concurrency", "4"], &[]);
    let metrics_url = server.base_url.replace("/v1", "/metrics");
    let out = crate::support::planwave(["loadtest", "--json"])
        .opt("--requests", "12")
        .opt("--llm-url", &server.base_url)
        .opt("--scrape-metrics", &metrics_url)
        .run();
    out.expect_ok();
    let v: Value = serde_json::from_str(&out.stdout).expect("json");
    let run = &v["runs"][0];
    let samples = run["server_metrics"].as_array().expect("server_metrics");
    assert!(
        samples.len() >= 2,
        "one at the start, one at the end: {samples:?}"
    );
    let times: Vec<f64> = samples.iter().filter_map(|s| s["t_s"].as_f64()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    let last = &samples[samples.len() - 1]["series"];
    let series = |name: &str| last[format!("{name}{{model_name=\"planwave-sim-1\"}}")].as_f64();
    assert_eq!(
        series("vllm:generation_tokens_total"),
        run["serving"]["output_tokens"].as_f64(),
        "the last scrape holds every answer's tokens: {last}"
    );
    assert_eq!(series("vllm:num_requests_running"), Some(0.0), "{last}");
    assert!(
        last.as_object()
            .expect("series")
            .keys()
            .all(|k| !k.contains("_bucket")),
        "{last}"
    );
}

#[test]
fn embeddings_answer_one_vector_per_input_with_usage() {
    let server = SimLlm::start(&[], &[]);
    let (status, text) = http(
        &server.base_url,
        "POST",
        "/v1/embeddings",
        Some(&json!({"model": "e", "input": ["abcdef", "abc", "abcdef"]})),
    );
    assert_eq!(status, 200, "{text}");
    let v: Value = serde_json::from_str(&text).expect("json");
    let data = v["data"].as_array().expect("data");
    assert_eq!(data.len(), 3);
    assert_eq!(v["usage"]["prompt_tokens"], 2 + 1 + 2);
    assert_eq!(
        data[0]["embedding"], data[2]["embedding"],
        "same text, same vector"
    );
    assert_ne!(data[0]["embedding"], data[1]["embedding"]);
    let (status, _) = http(
        &server.base_url,
        "POST",
        "/v1/embeddings",
        Some(&json!({"input": 3})),
    );
    assert_eq!(status, 400);
}
