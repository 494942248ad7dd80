//! Fault injection: which fault (if any) a request gets, from a script consumed in arrival
//! order and then from seeded rates, so a test can say "the first request gets a 429" and a
//! load test can say "5 % of requests get a 500".

use std::time::Duration;

use planwave_record::stable_hash;
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Fault {
    /// No fault.
    Ok,
    /// 429 with `Retry-After`.
    RateLimit,
    /// 500.
    ServerError,
    /// Headers only after `first_byte_delay`.
    SlowFirstByte,
    /// A streamed answer stops sending after its first chunks (for `stall`).
    Stall,
    /// A 200 whose body (or a stream chunk) is not JSON.
    Malformed,
    /// A streamed answer that ends half way, without `finish_reason` or `[DONE]`.
    Truncated,
    /// 401 whatever the key (to test that it is not retried).
    Unauthorized,
    /// The connection is dropped after the headers and a few bytes of the answer (the body
    /// fails, so the server aborts the connection): a reset mid-answer.
    Reset,
}

impl std::str::FromStr for Fault {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "ok" | "none" => Ok(Fault::Ok),
            "429" | "rate-limit" => Ok(Fault::RateLimit),
            "500" | "server-error" => Ok(Fault::ServerError),
            "slow" | "slow-first-byte" => Ok(Fault::SlowFirstByte),
            "stall" => Ok(Fault::Stall),
            "malformed" => Ok(Fault::Malformed),
            "truncated" => Ok(Fault::Truncated),
            "401" | "unauthorized" => Ok(Fault::Unauthorized),
            "reset" => Ok(Fault::Reset),
            o => Err(format!(
                "unknown fault {o:?} (expected ok, 429, 500, slow, stall, malformed, truncated, reset or 401)"
            )),
        }
    }
}

/// Probability of each fault per request (checked in this order; the rest are `Ok`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FaultRates {
    pub rate_limit: f64,
    pub server_error: f64,
    pub slow_first_byte: f64,
    pub stall: f64,
    pub malformed: f64,
    pub truncated: f64,
    pub reset: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FaultConfig {
    /// Faults of the first requests, in arrival order.
    pub script: Vec<Fault>,
    pub rates: FaultRates,
    pub seed: u64,
    /// Sent with every injected 429.
    pub retry_after: Duration,
    pub first_byte_delay: Duration,
    /// How long a stalled stream stays silent before it goes on.
    pub stall: Duration,
}

impl Default for FaultConfig {
    fn default() -> Self {
        FaultConfig {
            script: Vec::new(),
            rates: FaultRates::default(),
            seed: 0,
            retry_after: Duration::from_secs(1),
            first_byte_delay: Duration::from_secs(2),
            stall: Duration::from_secs(3600),
        }
    }
}

impl FaultConfig {
    /// The fault of the `n`-th request (0-based, arrival order).
    pub fn pick(&self, n: u64) -> Fault {
        if let Some(f) = self.script.get(n as usize) {
            return *f;
        }
        let r = &self.rates;
        let u = (stable_hash(self.seed, "fault", n as u32) >> 11) as f64 / (1u64 << 53) as f64;
        let mut acc = 0.0;
        for (rate, fault) in [
            (r.rate_limit, Fault::RateLimit),
            (r.server_error, Fault::ServerError),
            (r.slow_first_byte, Fault::SlowFirstByte),
            (r.stall, Fault::Stall),
            (r.malformed, Fault::Malformed),
            (r.truncated, Fault::Truncated),
            (r.reset, Fault::Reset),
        ] {
            acc += rate.max(0.0);
            if u < acc {
                return fault;
            }
        }
        Fault::Ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_first_then_rates() {
        let cfg = FaultConfig {
            script: vec![Fault::RateLimit, Fault::Ok],
            rates: FaultRates {
                server_error: 0.25,
                ..FaultRates::default()
            },
            ..FaultConfig::default()
        };
        assert_eq!(cfg.pick(0), Fault::RateLimit);
        assert_eq!(cfg.pick(1), Fault::Ok);
        let n = 4000;
        let errors = (2..n)
            .filter(|&i| cfg.pick(i) == Fault::ServerError)
            .count();
        let share = errors as f64 / (n - 2) as f64;
        assert!((share - 0.25).abs() < 0.03, "{share}");
        assert_eq!(cfg.pick(77), cfg.pick(77), "deterministic");
    }
}
