//! The `planwave sim-llm` command (the `cli` feature, which only the binary enables): its
//! flags ([`ServeArgs`]) checked into a [`SimServerConfig`], each problem named by its flag
//! (a [`SettingsError`] the binary reports as bad input), and the server run until stopped.

mod args;
mod batch_flags;

use std::future::Future;
use std::io::Write;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};
use planwave_config::SettingsError;
use planwave_config::spec::SimTaskOptions;
use planwave_llm::ApiKey;
use planwave_sim::SIM_MODEL;

use crate::{FaultRates, PrefixCacheOptions, ServeOptions, SimServer, SimServerConfig};
pub use args::ServeArgs;
pub use batch_flags::BatchServeArgs;

#[derive(Debug, Args)]
pub struct SimLlmArgs {
    #[command(subcommand)]
    pub command: SimLlmCommand,
}

#[derive(Debug, Subcommand)]
pub enum SimLlmCommand {
    /// Serve POST /v1/chat/completions and GET /v1/models until interrupted; prints the
    /// base URL (http://ADDR/v1) on stdout first.
    Serve(ServeArgs),
}

/// Runs the command until `stop` resolves (the binary's Ctrl-C or SIGTERM).
pub async fn sim_llm(args: SimLlmArgs, stop: impl Future<Output = ()>) -> anyhow::Result<()> {
    match args.command {
        SimLlmCommand::Serve(a) => serve(a, stop).await,
    }
}

/// The flags as the server's options; an option out of range is named by its flag.
fn config(a: &ServeArgs) -> anyhow::Result<SimServerConfig> {
    let api_key = match &a.api_key_env {
        None => None,
        Some(var) => Some(
            std::env::var(var)
                .ok()
                .and_then(ApiKey::new)
                .ok_or_else(|| {
                    SettingsError::setting("--api-key-env", format!("{var} is not set"))
                })?,
        ),
    };
    // As a job's simulator is configured, without failures by task (a served model fails
    // by request: the fault flags).
    let sim = a.sim.sim_config(
        &SimTaskOptions::default(),
        &a.reflect,
        a.latency_file.as_deref(),
        a.seed,
    )?;
    let options = ServeOptions {
        sim,
        fault_script: a.fault_script.clone(),
        rates: FaultRates {
            rate_limit: a.rate_429,
            server_error: a.rate_500,
            slow_first_byte: a.rate_slow,
            stall: a.rate_stall,
            malformed: a.rate_malformed,
            truncated: a.rate_truncated,
            reset: a.rate_reset,
        },
        retry_after_secs: a.retry_after_secs,
        first_byte_delay_ms: a.first_byte_delay_ms,
        stall_ms: a.stall_ms,
        token_jitter: a.token_jitter,
        prefill_us_per_token: a.prefill_us_per_token,
        max_concurrency: a.max_concurrency,
        api_key,
        prefix_cache: PrefixCacheOptions {
            block_tokens: a.prefix_cache_block_tokens,
            capacity_tokens: a.prefix_cache_capacity_tokens,
            ttl_secs: a.prefix_cache_ttl_secs,
        },
        batch: a.batch.config(),
        no_usage: a.no_usage,
    };
    options.config().map_err(|e| {
        let flag = match e.option {
            "rates.rate_limit" => "--rate-429".to_owned(),
            "rates.server_error" => "--rate-500".to_owned(),
            "rates.slow_first_byte" => "--rate-slow".to_owned(),
            rate if rate.starts_with("rates.") => format!("--rate-{}", &rate[6..]),
            other => format!("--{}", other.replace('_', "-")),
        };
        SettingsError::setting(&flag, e.problem).into()
    })
}

async fn serve(a: ServeArgs, stop: impl Future<Output = ()>) -> anyhow::Result<()> {
    let cfg = config(&a)?;
    if !a.addr.ip().is_loopback() {
        eprintln!(
            "warning: sim-llm is listening on {}, not loopback: other machines can reach it",
            a.addr.ip()
        );
    }
    let server = SimServer::start(a.addr, cfg)
        .await
        .with_context(|| format!("binding {}", a.addr))?;
    {
        // The first stdout line is the base URL; tests and scripts read it.
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{}", server.base_url())?;
        stdout.flush()?;
    }
    eprintln!(
        "planwave sim-llm: serving the simulated LLM; use --llm openai --llm-base-url {} --model {SIM_MODEL}",
        server.base_url()
    );
    stop.await;
    let stats = server.stats();
    server.shutdown(Duration::from_secs(2)).await;
    eprintln!(
        "planwave sim-llm: stopped after {} request(s)",
        stats.requests
    );
    Ok(())
}
