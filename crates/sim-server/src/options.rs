//! The server's options as a front end receives them: the simulated model's configuration
//! (built by the job spec's `SimOptions::sim_config`, as a job's simulator is) and the
//! serving's plain numbers (shares, milliseconds), checked and turned into a
//! [`SimServerConfig`].

use std::time::Duration;

use planwave_llm::ApiKey;
use planwave_sim::{PrefixCacheConfig, SimConfig};

use crate::faults::{Fault, FaultConfig, FaultRates};
use crate::server::SimServerConfig;
use crate::serving::ServingConfig;

/// Everything `planwave sim-llm serve` can set, unchecked.
#[derive(Clone, Debug, Default)]
pub struct ServeOptions {
    /// The simulated model, as a job's is configured from its options
    /// (`planwave_config::spec::SimOptions::sim_config`); its seed also seeds the fault draws.
    pub sim: SimConfig,
    pub fault_script: Vec<Fault>,
    /// Shares of requests per fault, each between 0 and 1.
    pub rates: FaultRates,
    pub retry_after_secs: f64,
    pub first_byte_delay_ms: u64,
    pub stall_ms: u64,
    /// Per-token jitter as a share of the token interval, between 0 and 1.
    pub token_jitter: f64,
    pub prefill_us_per_token: f64,
    pub max_concurrency: Option<u64>,
    pub api_key: Option<ApiKey>,
    /// The sizes of the prefix cache, when `sim` has one.
    pub prefix_cache: PrefixCacheOptions,
    /// The simulated Batch API (its shares checked by `config`).
    pub batch: crate::BatchSimConfig,
    /// Answer without `usage`.
    pub no_usage: bool,
}

/// The prefix cache as a front end sets it.
#[derive(Clone, Copy, Debug)]
pub struct PrefixCacheOptions {
    /// Tokens per cached block (at least 1).
    pub block_tokens: u64,
    /// Tokens the cache holds (rounded down to whole blocks, at least one block).
    pub capacity_tokens: u64,
    /// Seconds an unused block stays cached.
    pub ttl_secs: f64,
}

impl Default for PrefixCacheOptions {
    fn default() -> Self {
        let d = PrefixCacheConfig::default();
        PrefixCacheOptions {
            block_tokens: d.block_tokens,
            capacity_tokens: d.block_tokens * d.capacity_blocks as u64,
            ttl_secs: d.ttl.as_secs_f64(),
        }
    }
}

impl PrefixCacheOptions {
    fn config(self) -> Result<PrefixCacheConfig, OptionError> {
        let ttl = non_negative("prefix_cache_ttl_secs", self.ttl_secs, " of seconds")?;
        if self.block_tokens == 0 || self.capacity_tokens < self.block_tokens {
            return Err(OptionError {
                option: "prefix_cache_capacity_tokens",
                problem: format!(
                    "{} tokens do not hold one block of {} tokens",
                    self.capacity_tokens, self.block_tokens
                ),
            });
        }
        Ok(PrefixCacheConfig {
            block_tokens: self.block_tokens,
            capacity_blocks: (self.capacity_tokens / self.block_tokens) as usize,
            ttl: Duration::from_secs_f64(ttl),
        })
    }
}

/// An option out of range, named as in [`ServeOptions`] (`rates.rate_limit`, `token_jitter`).
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{option}: {problem}")]
pub struct OptionError {
    pub option: &'static str,
    pub problem: String,
}

fn share(option: &'static str, p: f64) -> Result<f64, OptionError> {
    if (0.0..=1.0).contains(&p) {
        Ok(p)
    } else {
        Err(OptionError {
            option,
            problem: format!("{p} is not a probability between 0 and 1"),
        })
    }
}

fn non_negative(option: &'static str, x: f64, unit: &str) -> Result<f64, OptionError> {
    if x.is_finite() && x >= 0.0 {
        Ok(x)
    } else {
        Err(OptionError {
            option,
            problem: format!("expected a non-negative number{unit}"),
        })
    }
}

impl ServeOptions {
    /// The server's configuration, or the first option out of range (checked in the order
    /// the fields are declared, `retry_after_secs` first).
    pub fn config(self) -> Result<SimServerConfig, OptionError> {
        let retry_after = non_negative("retry_after_secs", self.retry_after_secs, "")?;
        let jitter = share("token_jitter", self.token_jitter)?;
        let prefill_us = non_negative(
            "prefill_us_per_token",
            self.prefill_us_per_token,
            " of microseconds",
        )?;
        let r = &self.rates;
        let rates = FaultRates {
            rate_limit: share("rates.rate_limit", r.rate_limit)?,
            server_error: share("rates.server_error", r.server_error)?,
            slow_first_byte: share("rates.slow_first_byte", r.slow_first_byte)?,
            stall: share("rates.stall", r.stall)?,
            malformed: share("rates.malformed", r.malformed)?,
            truncated: share("rates.truncated", r.truncated)?,
            reset: share("rates.reset", r.reset)?,
        };
        let mut sim = self.sim;
        if sim.prefix_cache.is_some() {
            sim.prefix_cache = Some(self.prefix_cache.config()?);
        }
        sim.token_rate.jitter = jitter;
        let seed = sim.seed;
        Ok(SimServerConfig {
            sim,
            serving: ServingConfig {
                max_concurrency: self.max_concurrency.map(|n| n as usize),
                prefill_per_token: Duration::from_secs_f64(prefill_us / 1e6),
            },
            faults: FaultConfig {
                script: self.fault_script,
                rates,
                seed,
                retry_after: Duration::from_secs_f64(retry_after),
                first_byte_delay: Duration::from_millis(self.first_byte_delay_ms),
                stall: Duration::from_millis(self.stall_ms),
            },
            api_key: self.api_key,
            batch: self.batch.checked()?,
            no_usage: self.no_usage,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> ServeOptions {
        ServeOptions {
            sim: SimConfig {
                seed: 7,
                ..SimConfig::default()
            },
            retry_after_secs: 1.5,
            first_byte_delay_ms: 2000,
            stall_ms: 50,
            token_jitter: 0.3,
            prefill_us_per_token: 250.0,
            max_concurrency: Some(4),
            rates: FaultRates {
                rate_limit: 0.25,
                reset: 1.0,
                ..FaultRates::default()
            },
            ..ServeOptions::default()
        }
    }

    #[test]
    fn options_in_range_become_the_config() {
        let Ok(cfg) = options().config() else {
            panic!("valid options refused")
        };
        assert_eq!(cfg.sim.seed, 7);
        assert_eq!(cfg.faults.seed, 7);
        assert_eq!(cfg.sim.token_rate.jitter, 0.3);
        assert_eq!(cfg.serving.prefill_per_token, Duration::from_micros(250));
        assert_eq!(cfg.serving.max_concurrency, Some(4));
        assert_eq!(cfg.faults.retry_after, Duration::from_millis(1500));
        assert_eq!(cfg.faults.first_byte_delay, Duration::from_secs(2));
        assert_eq!(cfg.faults.stall, Duration::from_millis(50));
        assert_eq!(cfg.faults.rates.rate_limit, 0.25);
        assert_eq!(cfg.faults.rates.reset, 1.0);
    }

    #[test]
    fn each_option_out_of_range_is_named() {
        let bad = |edit: fn(&mut ServeOptions)| {
            let mut o = options();
            edit(&mut o);
            o.config().err()
        };
        let named = |option, problem: &str| {
            Some(OptionError {
                option,
                problem: problem.into(),
            })
        };
        assert_eq!(
            bad(|o| o.rates.server_error = 1.5),
            named(
                "rates.server_error",
                "1.5 is not a probability between 0 and 1"
            )
        );
        assert_eq!(
            bad(|o| o.token_jitter = -0.1),
            named("token_jitter", "-0.1 is not a probability between 0 and 1")
        );
        assert_eq!(
            bad(|o| o.retry_after_secs = f64::NAN),
            named("retry_after_secs", "expected a non-negative number")
        );
        assert_eq!(
            bad(|o| o.prefill_us_per_token = f64::INFINITY),
            named(
                "prefill_us_per_token",
                "expected a non-negative number of microseconds"
            )
        );
        // The first problem wins: retry-after is checked before the rates.
        assert_eq!(
            bad(|o| {
                o.rates.stall = 2.0;
                o.retry_after_secs = -1.0;
            })
            .map(|e| e.option),
            Some("retry_after_secs")
        );
    }
}
