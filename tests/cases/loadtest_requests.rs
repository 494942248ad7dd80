//! The load tester's request features (issue 37), through the real binary against a real
//! `sim-llm serve` on 127.0.0.1: per-request `max_tokens`, a tokenizer.json, multi-turn
//! sessions with think time, `-H` headers, cancelled streams, and the completions and
//! embeddings endpoints.

use serde_json::{Value, json};

use super::loadtest_endpoint::http;
use crate::support::{SimLlm, planwave, tempdir};

fn loadtest_json(args: &[&str]) -> Value {
    let out = planwave(["loadtest", "--json"]).args(args).run();
    out.expect_ok();
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

/// The simulator's prompt tokens of one request: its messages' characters, three a token.
fn sim_tokens(texts: &[&str]) -> u64 {
    let chars: usize = texts.iter().map(|t| t.chars().count()).sum();
    (chars as u64).div_ceil(3).max(1)
}

#[test]
fn output_tokens_bound_each_request_with_its_own_max_tokens() {
    let server = SimLlm::start(&[], &[]);
    // All alike: every answer is cut at the bound (the simulator writes ~290 tokens).
    let v = loadtest_json(&[
        "--requests",
        "8",
        "--output-tokens",
        "12",
        "--llm-url",
        &server.base_url,
    ]);
    let s = &v["runs"][0]["serving"];
    assert_eq!(s["ok"], 8, "{s}");
    assert_eq!(s["output_tokens_per_request"]["max"], 12.0, "{s}");
    assert_eq!(s["output_tokens_per_request"]["mean"], 12.0, "{s}");
    assert_eq!(
        server.stats()["serving"]["output_tokens"],
        96,
        "the server wrote 12 tokens for each"
    );

    // Drawn per request: the answers differ, and the server wrote what the client counted.
    let server = SimLlm::start(&[], &[]);
    let v = loadtest_json(&[
        "--requests",
        "12",
        "--output-tokens",
        "20,6",
        "--seed",
        "3",
        "--llm-url",
        &server.base_url,
    ]);
    let s = &v["runs"][0]["serving"];
    let per = &s["output_tokens_per_request"];
    assert_ne!(per["p50"], per["max"], "bounds drawn per request: {s}");
    assert!(per["max"].as_f64().expect("max") < 100.0, "{s}");
    assert_eq!(
        server.stats()["serving"]["output_tokens"],
        s["output_tokens"]
    );

    // A trace's GeneratedTokens are its requests' bounds.
    let dir = tempdir();
    let trace = dir.path().join("trace.csv");
    std::fs::write(
        &trace,
        "TIMESTAMP,ContextTokens,GeneratedTokens\n0,30,5\n0.01,30,9\n",
    )
    .expect("write");
    let v = loadtest_json(&[
        "--trace",
        trace.to_str().expect("path"),
        "--llm-url",
        &server.base_url,
    ]);
    assert_eq!(v["runs"][0]["serving"]["output_tokens"], 14, "5 + 9");
}

/// A tokenizer.json in which every character is one token: a BPE model without merges or
/// pre-tokenizer, unknown characters as `[UNK]`.
fn char_tokenizer(dir: &std::path::Path) -> std::path::PathBuf {
    bpe_tokenizer(dir, "abcdefghijklmnopqrstuvwxyz ", false)
}

/// A tokenizer.json of a BPE model without merges or pre-tokenizer: each character of
/// `letters` a token, any other `[UNK]` (consecutive ones fused into one when `fuse_unk`).
pub(crate) fn bpe_tokenizer(
    dir: &std::path::Path,
    letters: &str,
    fuse_unk: bool,
) -> std::path::PathBuf {
    let mut vocab = serde_json::Map::new();
    vocab.insert("[UNK]".into(), 0.into());
    for (i, c) in letters.chars().enumerate() {
        vocab.insert(c.to_string(), (i + 1).into());
    }
    let doc = json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
        "normalizer": null, "pre_tokenizer": null, "post_processor": null, "decoder": null,
        "model": {"type": "BPE", "dropout": null, "unk_token": "[UNK]",
                  "continuing_subword_prefix": null, "end_of_word_suffix": null,
                  "fuse_unk": fuse_unk, "byte_fallback": false, "vocab": vocab, "merges": []}
    });
    let path = dir.join("tokenizer.json");
    std::fs::write(&path, doc.to_string()).expect("write");
    path
}

#[test]
fn a_tokenizer_sizes_prompts_and_counts_what_the_server_does_not_report() {
    let dir = tempdir();
    let tok = char_tokenizer(dir.path());
    let tok = tok.to_str().expect("path");
    let args = |url: &str| -> Vec<String> {
        [
            "--requests",
            "4",
            "--input-tokens",
            "90",
            "--output-tokens",
            "10",
            "--tokenizer",
            tok,
            "--llm-url",
            url,
        ]
        .map(str::to_owned)
        .to_vec()
    };
    let server = SimLlm::start(&["--no-usage"], &[]);
    let a = args(&server.base_url);
    let v = loadtest_json(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let s = &v["runs"][0]["serving"];
    // 90 of the tokenizer's tokens are 90 characters: 30 of the simulator's.
    assert_eq!(server.stats()["serving"]["prompt_tokens"], 4 * 30);
    assert_eq!(
        s["prompt_tokens_per_request"]["max"], 90.0,
        "counted by the tokenizer: {s}"
    );
    // 10 of the simulator's tokens are 30 characters: 30 of the tokenizer's.
    assert_eq!(server.stats()["serving"]["output_tokens"], 4 * 10);
    assert_eq!(s["output_tokens"], 4 * 30, "{s}");

    // A server that reports usage is believed.
    let server = SimLlm::start(&[], &[]);
    let a = args(&server.base_url);
    let v = loadtest_json(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let s = &v["runs"][0]["serving"];
    assert_eq!(s["prompt_tokens_per_request"]["max"], 30.0, "{s}");
    assert_eq!(s["output_tokens"], 40, "{s}");

    std::fs::write(dir.path().join("bad.json"), "{\"model\": 1}").expect("write");
    let out = planwave([
        "loadtest",
        "--requests",
        "1",
        "--tokenizer",
        dir.path().join("bad.json").to_str().expect("path"),
    ])
    .run();
    out.expect_code(2);
    assert!(out.stderr.contains("--tokenizer"), "{}", out.stderr);
}

#[test]
fn multi_turn_sessions_carry_the_earlier_answers_and_wait_between_turns() {
    let dir = tempdir();
    let data = dir.path().join("chats.jsonl");
    std::fs::write(
        &data,
        concat!(
            "{\"conversations\": [{\"from\": \"human\", \"value\": \"first question\"}, {\"from\": \"gpt\", \"value\": \"(left out)\"}, {\"from\": \"human\", \"value\": \"second\"}, {\"from\": \"gpt\", \"value\": \"x\"}, {\"from\": \"human\", \"value\": \"and a third one\"}]}\n",
            "{\"messages\": [{\"role\": \"system\", \"content\": \"be brief\"}, {\"role\": \"user\", \"content\": \"hello there\"}, {\"role\": \"assistant\", \"content\": \"y\"}, {\"role\": \"user\", \"content\": \"bye\"}]}\n",
        ),
    )
    .expect("write");
    let server = SimLlm::start(&[], &[]);
    let timeline = dir.path().join("timeline.jsonl");
    // Answers of 10 tokens are 30 characters: each later turn carries them.
    let v = loadtest_json(&[
        "--dataset",
        data.to_str().expect("path"),
        "--multi-turn",
        "--output-tokens",
        "10",
        "--think-time",
        "fixed:300",
        "--llm-url",
        &server.base_url,
        "--timeline",
        timeline.to_str().expect("path"),
    ]);
    let a = "a".repeat(30);
    let expected = [
        // Conversation 1: each turn with the earlier turns and their answers.
        vec![
            sim_tokens(&["first question"]),
            sim_tokens(&["be brief", "hello there"]),
        ],
        vec![
            sim_tokens(&["first question", &a, "second"]),
            sim_tokens(&["be brief", "hello there", &a, "bye"]),
        ],
        vec![sim_tokens(&[
            "first question",
            &a,
            "second",
            &a,
            "and a third one",
        ])],
    ];
    let run = &v["runs"][0];
    assert_eq!(run["serving"]["requests"], 5, "{run}");
    let turns = run["turns"].as_array().expect("per-turn figures");
    assert_eq!(turns.len(), 3, "{run}");
    for (t, want) in turns.iter().zip(&expected) {
        assert_eq!(t["requests"].as_u64(), Some(want.len() as u64), "{t}");
        let mean = want.iter().sum::<u64>() as f64 / want.len() as f64;
        assert_eq!(
            t["prompt_tokens"]["mean"].as_f64(),
            Some(mean),
            "turn {}: {t}",
            t["turn"]
        );
    }
    let total: u64 = expected.iter().flatten().sum();
    assert_eq!(server.stats()["serving"]["prompt_tokens"], total);
    // Every later turn waited its think time after the answer before it.
    let text = std::fs::read_to_string(&timeline).expect("timeline");
    let waits: Vec<f64> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|t| t["last_prerequisite"].is_string())
        .filter_map(|t| t["dispatch_ms"].as_f64())
        .collect();
    assert_eq!(waits.len(), 3, "{text}");
    assert!(waits.iter().all(|w| *w >= 300.0), "{waits:?}");

    // Synthetic sessions: --turns of --input-tokens prompts.
    let v = loadtest_json(&[
        "--turns",
        "3",
        "--input-tokens",
        "20",
        "--sessions",
        "2",
        "--output-tokens",
        "5",
        "--llm-url",
        &server.base_url,
    ]);
    let turns = v["runs"][0]["turns"].as_array().expect("turns").clone();
    let means: Vec<f64> = turns
        .iter()
        .filter_map(|t| t["prompt_tokens"]["mean"].as_f64())
        .collect();
    assert_eq!(
        means,
        [20.0, 45.0, 70.0],
        "20 more and a 5-token answer a turn"
    );
}

#[test]
fn headers_reach_the_server_and_credential_values_are_never_shown() {
    let key = "pw-s3cret-0123456789";
    let server = SimLlm::start(&["--api-key-env", "SIM_KEY"], &[("SIM_KEY", key)]);
    let auth = format!("Authorization: Bearer {key}");
    let out = planwave(["loadtest", "--json", "--requests", "3"])
        .args(["--llm-url", &server.base_url])
        .args(["-H", &auth])
        .args([
            "-H",
            "traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        ])
        .run();
    out.expect_ok();
    let v: Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(
        v["runs"][0]["serving"]["ok"], 3,
        "the key in -H was accepted"
    );
    let stats = server.stats();
    assert_eq!(
        (stats["authorized"].as_u64(), stats["traced"].as_u64()),
        (Some(3), Some(3))
    );
    // Names only: no header's value is shown.
    assert!(
        out.stderr.contains("headers authorization, traceparent"),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("s3cret") && !out.stdout.contains("s3cret"),
        "{}",
        out.stderr
    );

    for bad in [
        "X-Api-Key s3cret",
        "Content-Length: 3",
        "X-Api-Key: s3cret\u{1}",
    ] {
        let out = planwave(["loadtest", "--requests", "1"])
            .args(["--llm-url", &server.base_url, "-H", bad])
            .run();
        out.expect_code(2);
        assert!(out.stderr.contains("--header"), "{bad}: {}", out.stderr);
        assert!(!out.stderr.contains("s3cret"), "{}", out.stderr);
    }
}

#[test]
fn cancel_rate_closes_that_share_of_streams_mid_answer() {
    // Paced answers of 200 tokens (1 s): a request cancelled after at most 8 chunks is
    // mid-stream unless its client is starved for most of that second.
    let server = SimLlm::start(&["--tokens-per-sec", "200"], &[]);
    let v = loadtest_json(&[
        "--requests",
        "20",
        "--output-tokens",
        "200",
        "--cancel-rate",
        "0.5",
        "--llm-url",
        &server.base_url,
    ]);
    let run = &v["runs"][0];
    let s = &run["serving"];
    let (ok, cancelled) = (
        s["ok"].as_u64().expect("ok"),
        s["cancelled"].as_u64().expect("cancelled"),
    );
    assert!((1..20).contains(&cancelled), "{s}");
    assert_eq!(ok + cancelled, 20, "cancelled are not errors: {s}");
    assert_eq!(run["errors"], 0, "{run}");
    assert_eq!(s["outcomes"]["cancelled"], cancelled, "{s}");
    // The server saw every request begin and finished at least those answered whole (a
    // server starved long enough may finish a cancelled answer before it sees the close).
    let stats = server.stats();
    assert_eq!(stats["requests"], 20, "{stats}");
    let completed = stats["serving"]["completed"].as_u64().expect("completed");
    assert!((ok..=20).contains(&completed), "{stats}");

    let out = planwave(["loadtest", "--requests", "1", "--cancel-rate", "0.1"])
        .args(["--llm-url", &server.base_url, "--no-stream"])
        .run();
    out.expect_code(2);
}

#[test]
fn the_completions_endpoint_answers_prompts_streamed_or_not() {
    let server = SimLlm::start(&[], &[]);
    let base = &server.base_url;
    let (status, body) = http(
        base,
        "POST",
        "/v1/completions",
        Some(&json!({"model": "m", "prompt": "Tesla revenue", "max_tokens": 5})),
    );
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(v["object"], "text_completion");
    assert_eq!(v["usage"]["completion_tokens"], 5, "{v}");
    assert_eq!(v["usage"]["prompt_tokens"], sim_tokens(&["Tesla revenue"]));
    assert_eq!(v["choices"][0]["finish_reason"], "length");
    let (_, body) = http(
        base,
        "POST",
        "/v1/completions",
        Some(&json!({"prompt": ["one prompt"]})),
    );
    let v: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(
        v["usage"]["completion_tokens"], 16,
        "OpenAI's default bound: {v}"
    );

    let (status, body) = http(
        base,
        "POST",
        "/v1/completions",
        Some(&json!({"prompt": "Tesla", "max_tokens": 4, "stream": true,
                     "stream_options": {"include_usage": true}})),
    );
    assert_eq!(status, 200, "{body}");
    let events: Vec<Value> = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).expect("chunk"))
        .collect();
    let text: String = events
        .iter()
        .filter_map(|e| e["choices"][0]["text"].as_str())
        .collect();
    assert_eq!(text.chars().count(), 12, "4 tokens of 3 characters: {body}");
    assert_eq!(
        events.last().expect("usage")["usage"]["completion_tokens"],
        4
    );
    assert!(body.trim_end().ends_with("data: [DONE]"), "{body}");
    let (status, _) = http(base, "POST", "/v1/completions", Some(&json!({"prompt": 3})));
    assert_eq!(status, 400);

    // The load tester sends its requests there, and to /v1/embeddings.
    let v = loadtest_json(&[
        "--endpoint",
        "completions",
        "--requests",
        "5",
        "--input-tokens",
        "30",
        "--output-tokens",
        "7",
        "--llm-url",
        base,
    ]);
    let s = &v["runs"][0]["serving"];
    assert_eq!(
        (s["ok"].as_u64(), s["output_tokens"].as_u64()),
        (Some(5), Some(35)),
        "{s}"
    );
    assert_eq!(s["prompt_tokens"], 150, "{s}");
    assert_eq!(server.stats()["serving"]["output_tokens"], 35 + 5 + 16 + 4);
    assert!(s["ttft_ms"]["samples"].as_u64() == Some(5), "{s}");
    let v = loadtest_json(&[
        "--endpoint",
        "embeddings",
        "--requests",
        "3",
        "--input-tokens",
        "30",
        "--llm-url",
        base,
    ]);
    let s = &v["runs"][0]["serving"];
    assert_eq!(
        (
            s["ok"].as_u64(),
            s["prompt_tokens"].as_u64(),
            s["output_tokens"].as_u64()
        ),
        (Some(3), Some(90), Some(0)),
        "{s}"
    );
}
