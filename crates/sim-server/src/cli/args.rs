//! `planwave sim-llm serve`'s flags: address, seed, latency, faults, streaming rate, prefix
//! cache, and the Batch API's (`batch_flags`).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;
use planwave_sim::{PlannerFault, TokenRate};

use super::batch_flags::BatchServeArgs;
use crate::Fault;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to bind; port 0 picks a free port. Loopback by default.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub addr: SocketAddr,
    /// Seed of the simulated text, latencies and fault draws.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Mean simulated latency per answer (lognormal); 0 = none.
    #[arg(long, value_name = "MS", default_value_t = 0.0, value_parser = planwave_config::parse_millis)]
    pub latency_ms: f64,
    /// Sigma of the lognormal latency (0 = exactly the mean).
    #[arg(long, value_name = "S", default_value_t = 1.0, value_parser = planwave_config::parse_sigma)]
    pub sigma: f64,
    /// JSON map of task id to latency in ms (`{"1": 250}`), overriding the random latency:
    /// replays a `planwave loadtest` workload over HTTP.
    #[arg(long, value_name = "FILE")]
    pub latency_file: Option<PathBuf>,
    /// Planner faults on attempts 1, 2, ...: truncated, cycle, unknown-dep, prose, no-tasks.
    #[arg(long, value_name = "FAULTS", value_delimiter = ',')]
    pub planner_faults: Vec<PlannerFault>,
    /// Faults of the first requests in arrival order: ok, 429, 500, slow, stall, malformed,
    /// truncated, reset, 401.
    #[arg(long, value_name = "FAULTS", value_delimiter = ',')]
    pub fault_script: Vec<Fault>,
    /// Share of requests answered 429 with Retry-After (after the script).
    #[arg(long, value_name = "P", default_value_t = 0.0, value_parser = planwave_config::parse_share)]
    pub rate_429: f64,
    /// Share of requests answered 500.
    #[arg(long, value_name = "P", default_value_t = 0.0, value_parser = planwave_config::parse_share)]
    pub rate_500: f64,
    /// Share of requests whose headers come after --first-byte-delay-ms.
    #[arg(long, value_name = "P", default_value_t = 0.0, value_parser = planwave_config::parse_share)]
    pub rate_slow: f64,
    /// Share of streams that stall half way for --stall-ms.
    #[arg(long, value_name = "P", default_value_t = 0.0, value_parser = planwave_config::parse_share)]
    pub rate_stall: f64,
    /// Share of answers with a malformed JSON body or chunk.
    #[arg(long, value_name = "P", default_value_t = 0.0, value_parser = planwave_config::parse_share)]
    pub rate_malformed: f64,
    /// Share of streams cut off half way.
    #[arg(long, value_name = "P", default_value_t = 0.0, value_parser = planwave_config::parse_share)]
    pub rate_truncated: f64,
    /// Share of answers whose connection is dropped after the headers (a reset mid-answer).
    #[arg(long, value_name = "P", default_value_t = 0.0, value_parser = planwave_config::parse_share)]
    pub rate_reset: f64,
    /// Retry-After sent with each 429.
    #[arg(long, value_name = "SECS", default_value_t = 1.0, value_parser = planwave_config::parse_secs)]
    pub retry_after_secs: f64,
    /// How long a `slow` answer (--rate-slow, the script's `slow`) holds back its headers.
    #[arg(long, value_name = "MS", default_value_t = 2000)]
    pub first_byte_delay_ms: u64,
    /// How long a `stall` (--rate-stall, the script's `stall`) pauses its stream half way.
    #[arg(long, value_name = "MS", default_value_t = 3_600_000)]
    pub stall_ms: u64,
    /// Stream answers at this many output tokens per second, for every role (`40`) or per
    /// role (`planner=40,subagent=20`); --latency-ms is then the time to the first token.
    /// 0 (default): each answer at once.
    #[arg(long, value_name = "RATE", value_parser = TokenRate::parse, default_value = "0")]
    pub tokens_per_sec: TokenRate,
    /// Per-token jitter as a share of the token interval (0.3: each gap 0.7x to 1.3x).
    #[arg(long, value_name = "SHARE", default_value_t = 0.0, value_parser = planwave_config::parse_share)]
    pub token_jitter: f64,
    /// Prefill cost per prompt token, in microseconds, before the first output token.
    #[arg(long, value_name = "US", default_value_t = 0.0, value_parser = planwave_config::parse_micros_per_token)]
    pub prefill_us_per_token: f64,
    /// Answers generated at once; further requests queue (so saturation shows). Default:
    /// no limit.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_concurrency: Option<u64>,
    /// Require `Authorization: Bearer <key>` with the key in this environment variable.
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// Cache repeated prompt prefixes as providers do (by token blocks, each keyed by its
    /// whole prefix): usage reports `prompt_tokens_details.cached_tokens`, and prefill
    /// (--prefill-us-per-token) is charged for the uncached tokens only.
    #[arg(long)]
    pub prefix_cache: bool,
    /// Tokens per cached block (with --prefix-cache).
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub prefix_cache_block_tokens: u64,
    /// Tokens the prefix cache holds; the least recently used blocks make room.
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    pub prefix_cache_capacity_tokens: u64,
    /// Seconds an unused block stays in the prefix cache.
    #[arg(long, value_name = "SECS", default_value_t = 300.0)]
    pub prefix_cache_ttl_secs: f64,
    /// Answer without `usage` (streamed or not), as some servers and gateways do: for
    /// testing clients that count tokens themselves (`loadtest --tokenizer`).
    #[arg(long)]
    pub no_usage: bool,
    #[command(flatten)]
    pub reflect: planwave_config::spec::SimReflectOptions,
    #[command(flatten)]
    pub batch: BatchServeArgs,
}
