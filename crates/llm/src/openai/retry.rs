//! Transport-level retries: which failures are retried, how long to wait (exponential backoff
//! with full jitter, or the server's `Retry-After`), and a shared retry budget.
//!
//! Retries here happen inside one `chat()` call, i.e. inside one task attempt of the engine.
//! The engine's own task-level retry (default once) wraps them, so the requests one task can
//! make are bounded by `(max_retries + 1) * (task retries + 1)`. The [`RetryBudget`] shared by
//! every call of a client stops a 429 storm from multiplying further: once retries exceed
//! a fraction of recent successes, failures are returned at once instead of retried.

use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RetryConfig {
    /// Retries after the first HTTP attempt of a call.
    pub max_retries: u32,
    /// Backoff before retry k is uniform in `[0, min(max, base * 2^(k-1))]`.
    pub base: Duration,
    pub max: Duration,
    /// A `Retry-After` longer than this is not waited for: the call fails (transient) and the
    /// engine's task-level policy decides.
    pub max_retry_after: Duration,
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            max_retries: 3,
            base: Duration::from_millis(500),
            max: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(120),
        }
    }
}

/// The delay before retry number `retry` (1-based). `unit` is a uniform draw in `[0, 1)`.
/// A server's `Retry-After` wins when present: it says when capacity returns.
pub fn backoff_delay(
    cfg: &RetryConfig,
    retry: u32,
    unit: f64,
    retry_after: Option<Duration>,
) -> Duration {
    if let Some(ra) = retry_after {
        return ra;
    }
    let exp = cfg
        .base
        .saturating_mul(1u32 << retry.saturating_sub(1).min(20));
    exp.min(cfg.max).mul_f64(unit.clamp(0.0, 1.0))
}

/// `Retry-After` as delay-seconds (`"2"`, `"1.5"`) or an HTTP date relative to `now`.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let date = chrono::DateTime::parse_from_rfc2822(v).ok()?;
    let at: SystemTime = date.with_timezone(&chrono::Utc).into();
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// How the client waits. Production sleeps on tokio's clock; tests record and skip.
pub trait Sleeper: Send + Sync + 'static {
    fn sleep(&self, d: Duration) -> BoxFuture<'static, ()>;
}

#[derive(Debug, Default, Clone, Copy)]
pub struct TokioSleeper;

impl Sleeper for TokioSleeper {
    fn sleep(&self, d: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(d))
    }
}

/// Records every requested delay and returns at once: lets tests over real HTTP assert the
/// exact waits (e.g. that `Retry-After: 1` made the client wait 1 s) without waiting.
#[derive(Debug, Default)]
pub struct RecordingSleeper {
    pub delays: Mutex<Vec<Duration>>,
}

impl RecordingSleeper {
    pub fn recorded(&self) -> Vec<Duration> {
        self.delays.lock().map(|d| d.clone()).unwrap_or_default()
    }
}

impl Sleeper for RecordingSleeper {
    fn sleep(&self, d: Duration) -> BoxFuture<'static, ()> {
        if let Ok(mut v) = self.delays.lock() {
            v.push(d);
        }
        Box::pin(std::future::ready(()))
    }
}

/// A token bucket of retries shared by all calls (after gRPC's retry throttling): each retry
/// costs one token, each success earns `refill` tokens, up to `capacity`. Under a storm the
/// bucket empties and calls fail fast instead of multiplying load.
#[derive(Debug)]
pub struct RetryBudget {
    tokens: Mutex<f64>,
    capacity: f64,
    refill: f64,
}

impl RetryBudget {
    pub fn new(capacity: f64, refill: f64) -> Self {
        RetryBudget {
            tokens: Mutex::new(capacity),
            capacity,
            refill,
        }
    }

    /// Takes one retry token; false when the budget is spent.
    pub fn try_spend(&self) -> bool {
        let Ok(mut t) = self.tokens.lock() else {
            return true;
        };
        if *t >= 1.0 {
            *t -= 1.0;
            true
        } else {
            false
        }
    }

    pub fn on_success(&self) {
        if let Ok(mut t) = self.tokens.lock() {
            *t = (*t + self.refill).min(self.capacity);
        }
    }
}

impl Default for RetryBudget {
    /// 50 retries in reserve, one more per five successes.
    fn default() -> Self {
        RetryBudget::new(50.0, 0.2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_is_capped_and_jittered() {
        let cfg = RetryConfig {
            max_retries: 5,
            base: Duration::from_millis(100),
            max: Duration::from_millis(350),
            ..RetryConfig::default()
        };
        assert_eq!(backoff_delay(&cfg, 1, 0.5, None), Duration::from_millis(50));
        assert_eq!(
            backoff_delay(&cfg, 2, 0.5, None),
            Duration::from_millis(100)
        );
        assert_eq!(
            backoff_delay(&cfg, 3, 0.5, None),
            Duration::from_millis(175)
        );
        assert_eq!(
            backoff_delay(&cfg, 9, 1.0, None),
            Duration::from_millis(350)
        );
        assert_eq!(backoff_delay(&cfg, 1, 0.0, None), Duration::ZERO);
        assert_eq!(
            backoff_delay(&cfg, 1, 0.3, Some(Duration::from_secs(7))),
            Duration::from_secs(7)
        );
    }

    #[test]
    fn retry_after_seconds_and_http_date() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777); // 1994-11-06 08:49:37Z
        assert_eq!(parse_retry_after("3", now), Some(Duration::from_secs(3)));
        assert_eq!(
            parse_retry_after(" 1.5 ", now),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:47 GMT", now),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:00 GMT", now),
            Some(Duration::ZERO),
            "a date in the past means now"
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-1", now), None);
    }

    #[test]
    fn budget_empties_under_a_storm_and_refills_on_success() {
        let b = RetryBudget::new(2.0, 0.5);
        assert!(b.try_spend() && b.try_spend());
        assert!(!b.try_spend(), "spent");
        b.on_success();
        assert!(!b.try_spend(), "half a token is not a retry");
        b.on_success();
        assert!(b.try_spend());
    }
}
