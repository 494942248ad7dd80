//! One request must not cost `sim-llm serve` without bound: `max_tokens` past the model's
//! context is refused with a 400 naming it (as OpenAI and vLLM refuse it), whatever
//! `ignore_eos` asks, and an embeddings body of too many or too long inputs is refused; the
//! server keeps answering after each.

use serde_json::{Value, json};

use crate::cases::loadtest_endpoint::http;
use crate::support::SimLlm;

/// Asserts a 400 whose error message says each of `says`.
#[track_caller]
fn bad_request((status, text): (u16, String), says: &[&str]) {
    assert_eq!(status, 400, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    let message = v["error"]["message"].as_str().unwrap_or_default();
    for s in says {
        assert!(message.contains(s), "expected {s:?} in {message:?}");
    }
    assert_eq!(v["error"]["type"], "invalid_request_error", "{text}");
}

#[test]
fn max_tokens_past_the_context_is_refused_and_the_server_lives_on() {
    let server = SimLlm::start(&[], &[]);
    let base = &server.base_url;
    let user = json!([{"role": "user", "content": "hi"}]);
    for max in [json!(18_446_744_073_709_551_615u64), json!(131_073)] {
        for body in [
            json!({"messages": user, "max_tokens": max, "ignore_eos": true}),
            json!({"messages": user, "max_completion_tokens": max, "ignore_eos": true, "stream": true}),
        ] {
            bad_request(
                http(base, "POST", "/v1/chat/completions", Some(&body)),
                &[
                    &format!("max_tokens is too large: {max}"),
                    "at most 131072 completion tokens",
                ],
            );
        }
        let body = json!({"prompt": "hi", "max_tokens": max, "ignore_eos": true});
        bad_request(
            http(base, "POST", "/v1/completions", Some(&body)),
            &[&format!("max_tokens is too large: {max}")],
        );
    }
    // At the context, an exact answer is still written, and the server is alive.
    let body = json!({"messages": user, "max_tokens": 131_072, "ignore_eos": true});
    let (status, text) = http(base, "POST", "/v1/chat/completions", Some(&body));
    assert_eq!(status, 200, "{text}");
    let v: Value = serde_json::from_str(&text).expect("json");
    assert_eq!(
        v["usage"]["completion_tokens"], 131_072,
        "exactly the bound"
    );
    assert_eq!(server.stats()["requests"], 7);
}

#[test]
fn embeddings_of_too_many_or_too_long_inputs_are_refused() {
    let server = SimLlm::start(&[], &[]);
    let base = &server.base_url;
    // A 1.8 MB body of one-character inputs once made a 170 MB answer.
    let many: Vec<&str> = vec!["a"; 2049];
    bad_request(
        http(
            base,
            "POST",
            "/v1/embeddings",
            Some(&json!({"input": many})),
        ),
        &["2049 inputs", "at most 2048"],
    );
    let long = "abc".repeat(131_073);
    bad_request(
        http(
            base,
            "POST",
            "/v1/embeddings",
            Some(&json!({"input": ["ok", long]})),
        ),
        &["input 1", "131073 tokens", "at most 131072"],
    );
    let (status, text) = http(
        base,
        "POST",
        "/v1/embeddings",
        Some(&json!({"input": vec!["a"; 2048]})),
    );
    assert_eq!(status, 200, "{text}");
    let v: Value = serde_json::from_str(&text).expect("json");
    assert_eq!(v["data"].as_array().map(Vec::len), Some(2048));
}
