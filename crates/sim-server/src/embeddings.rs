//! `POST /v1/embeddings`: a deterministic vector per input (a hash of its text), with the
//! usage an embedding server reports, so a load tester's embeddings endpoint has something
//! real to talk to. The vectors mean nothing; their length and count do.
//!
//! Bounded as OpenAI bounds it: at most [`MAX_INPUTS`] inputs, each at most the model's
//! context (a 1.8 MB body of one-character inputs once made a 170 MB answer).

use axum::body::Bytes;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use planwave_sim::SIM_MODEL;
use serde_json::{Value, json};

use crate::server::error;

/// Numbers per vector.
const DIMENSIONS: usize = 16;

/// The most inputs one request may embed (OpenAI's limit).
pub const MAX_INPUTS: usize = 2048;

pub(crate) async fn embeddings(body: Bytes) -> Response {
    let req: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                &format!("invalid JSON body: {e}"),
                "invalid_request_error",
            );
        }
    };
    let inputs: Vec<String> = match &req["input"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) if items.iter().all(Value::is_string) => items
            .iter()
            .filter_map(|i| i.as_str().map(str::to_owned))
            .collect(),
        _ => {
            return error(
                StatusCode::BAD_REQUEST,
                "input must be a string or an array of strings",
                "invalid_request_error",
            );
        }
    };
    if let Some(problem) = too_much(&inputs) {
        return error(StatusCode::BAD_REQUEST, &problem, "invalid_request_error");
    }
    let tokens: u64 = inputs.iter().map(|t| tokens_of(t)).sum();
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, text)| json!({"object": "embedding", "index": i, "embedding": vector(text)}))
        .collect();
    let model = req["model"].as_str().unwrap_or(SIM_MODEL);
    axum::Json(json!({
        "object": "list",
        "data": data,
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens}
    }))
    .into_response()
}

/// The simulator's tokens of one input (three characters a token).
fn tokens_of(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(3).max(1)
}

/// Why the inputs are refused: too many, or one longer than the model's context.
fn too_much(inputs: &[String]) -> Option<String> {
    if inputs.len() > MAX_INPUTS {
        return Some(format!(
            "{} inputs: an embeddings request takes at most {MAX_INPUTS}",
            inputs.len()
        ));
    }
    let max = planwave_sim::MAX_MODEL_LEN;
    inputs.iter().enumerate().find_map(|(i, t)| {
        let n = tokens_of(t);
        (n > max).then(|| format!("input {i} is {n} tokens long: this model takes at most {max}"))
    })
}

/// A unit vector drawn from the text's hash: the same text always gets the same vector.
fn vector(text: &str) -> Vec<f64> {
    let v: Vec<f64> = (0..DIMENSIONS)
        .map(|k| {
            let h = planwave_record::stable_hash(0, text, k as u32);
            (h >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        })
        .collect();
    let norm = v
        .iter()
        .map(|x| x * x)
        .sum::<f64>()
        .sqrt()
        .max(f64::MIN_POSITIVE);
    v.into_iter().map(|x| x / norm).collect()
}
