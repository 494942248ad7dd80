//! What `planwave sim-llm serve` reports about itself at `GET /planwave/stats`: plain data
//! the server fills in and a load tester reads back, so its client-side figures can be
//! checked against the server's for the same requests. Both sides share these types; neither
//! needs the other's crate.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::PrefixCacheStats;

/// What the server has seen, served at `GET /planwave/stats`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerStats {
    pub requests: u64,
    /// Requests per injected fault (`ok` for none).
    pub faults: BTreeMap<String, u64>,
    /// Requests per `x-planwave-role` (`none` when absent).
    pub roles: BTreeMap<String, u64>,
    /// Requests that had an `Authorization` header.
    pub authorized: u64,
    /// Requests that had a `traceparent` header.
    pub traced: u64,
    /// Requests per task id (subagent requests, from the context header), faults included:
    /// how often each task was really sent to the model.
    #[serde(default)]
    pub tasks: BTreeMap<String, u64>,
    /// The most subagent requests handled at once (until the answer's headers are sent).
    #[serde(default)]
    pub max_subagents_in_flight: u64,
    /// The server's own measurements of every answer (queue wait, TTFT, tokens).
    #[serde(default)]
    pub serving: ServingStats,
    /// The prefix cache's counts, when the server has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_cache: Option<PrefixCacheStats>,
}

/// What the server measured, per answer, served inside `/planwave/stats` as `serving`.
/// Times in ms from the moment the request's body was read.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServingStats {
    /// Answers that began generating (held a slot).
    pub admitted: u64,
    /// Answers sent to the end.
    pub completed: u64,
    /// The most answers generating at once (never above the limit).
    pub max_in_flight: u64,
    /// Per completed answer, in completion order: waiting for a slot.
    pub queue_ms: Vec<f64>,
    /// Per completed answer: to the first content token handed to the connection (for an
    /// unstreamed answer, to the whole body).
    pub ttft_ms: Vec<f64>,
    /// Per completed answer: to the last byte of the answer handed to the connection.
    pub e2e_ms: Vec<f64>,
    /// Per completed answer: the role it was for (`subagent`, `integrator`, ...), so a client
    /// can compare its own requests with the server's figures for the same ones.
    #[serde(default)]
    pub role: Vec<String>,
    pub prompt_tokens: u64,
    /// Of `prompt_tokens`, those found in the prefix cache.
    #[serde(default)]
    pub cached_tokens: u64,
    pub output_tokens: u64,
    /// Output tokens per role (`x-planwave-role`, or the role guessed from the request).
    #[serde(default)]
    pub output_tokens_by_role: BTreeMap<String, u64>,
}
