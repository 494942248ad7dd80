//! `planwave sim-llm serve`'s flags: address, seed, the simulated model (the job spec's
//! simulator options, as `run` has them), faults, serving realism, prefix cache sizes, and
//! the Batch API's (`batch_flags`).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;
use planwave_config::spec::{SimOptions, SimReflectOptions};

use super::batch_flags::BatchServeArgs;
use crate::Fault;

/// The simulated model's options are `run`'s (`--sim-latency-ms`, ...): a served model starts
/// without latency, and the names these flags had before they were `run`'s stay accepted.
#[derive(Debug, Args)]
#[command(
    mut_arg("sim_latency_ms", |a| a.default_value("0").alias("latency-ms")),
    mut_arg("sim_sigma", |a| a.alias("sigma")),
    mut_arg("sim_tokens_per_sec", |a| a.alias("tokens-per-sec")),
    mut_arg("sim_planner_faults", |a| a.alias("planner-faults")),
    mut_arg("sim_prefix_cache", |a| a.alias("prefix-cache").help(
        "Cache repeated prompt prefixes as providers do (by token blocks, each keyed by its \
         whole prefix): usage reports `prompt_tokens_details.cached_tokens`, and prefill \
         (--prefill-us-per-token) is charged for the uncached tokens only"
    )),
)]
pub struct ServeArgs {
    /// Address to bind; port 0 picks a free port. Loopback by default.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub addr: SocketAddr,
    /// Seed of the simulated text, latencies and fault draws.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[command(flatten)]
    pub sim: SimOptions,
    /// JSON map of task id to latency in ms (`{"1": 250}`), overriding the random latency:
    /// replays a `planwave loadtest` workload over HTTP.
    #[arg(long, value_name = "FILE")]
    pub latency_file: Option<PathBuf>,
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
    /// Tokens per cached block (with --sim-prefix-cache).
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
    pub reflect: SimReflectOptions,
    #[command(flatten)]
    pub batch: BatchServeArgs,
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::ServeArgs;

    #[derive(Parser)]
    struct Cmd {
        #[command(flatten)]
        serve: ServeArgs,
    }

    fn parse(args: &[&str]) -> ServeArgs {
        Cmd::try_parse_from(std::iter::once("serve").chain(args.iter().copied()))
            .unwrap()
            .serve
    }

    #[test]
    fn the_simulated_models_options_are_runs_with_no_latency_by_default_and_old_names_kept() {
        let a = parse(&[]);
        assert_eq!(
            a.sim.sim_latency_ms, 0.0,
            "a served model starts without latency"
        );
        assert_eq!(a.sim.sim_sigma, 1.0);
        let new = parse(&[
            "--sim-latency-ms=5",
            "--sim-sigma=0",
            "--sim-tokens-per-sec=40",
            "--sim-planner-faults=cycle",
            "--sim-prefix-cache",
        ]);
        let old = parse(&[
            "--latency-ms=5",
            "--sigma=0",
            "--tokens-per-sec=40",
            "--planner-faults=cycle",
            "--prefix-cache",
        ]);
        assert_eq!(new.sim, old.sim);
        assert_eq!(new.sim.sim_planner_faults, ["cycle"]);
        assert!(
            Cmd::try_parse_from(["serve", "--sim-latency-ms=-1"]).is_err(),
            "checked by the flag's parser"
        );
    }
}
