//! One limiter shared by every call of a client (so by all subagents): requests in flight,
//! requests per minute and tokens per minute, plus a cool-down after a 429 with `Retry-After`.
//!
//! Rates are token buckets that start full and refill continuously. Waiters are served in
//! arrival order (a fair async mutex guards the wait), so a large request is not starved by
//! small ones. Time is tokio's, so `tokio::time::pause()` tests it exactly.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LimitConfig {
    /// Most requests in flight at once.
    pub max_in_flight: Option<usize>,
    pub requests_per_minute: Option<u32>,
    pub tokens_per_minute: Option<u64>,
    /// The period the per-minute limits count over: a minute unless set (tests shorten it
    /// so a limit's edge is reached in seconds; providers count per minute).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<Duration>,
}

impl LimitConfig {
    /// The period `requests_per_minute` and `tokens_per_minute` count over.
    pub fn period(&self) -> Duration {
        self.window
            .filter(|w| !w.is_zero())
            .unwrap_or(Duration::from_secs(60))
    }
}

#[derive(Debug)]
struct Buckets {
    requests: f64,
    tokens: f64,
    last: Instant,
    cool_down_until: Option<Instant>,
}

#[derive(Debug)]
pub struct Limiter {
    cfg: LimitConfig,
    in_flight: Option<Arc<Semaphore>>,
    turn: tokio::sync::Mutex<()>,
    buckets: Mutex<Buckets>,
}

/// Held for the duration of one HTTP attempt.
#[derive(Debug)]
pub struct LimitPermit {
    _slot: Option<OwnedSemaphorePermit>,
    /// Tokens charged up front (an estimate); [`Limiter::settle`] corrects it.
    pub charged: u64,
}

impl Limiter {
    pub fn new(cfg: LimitConfig) -> Limiter {
        Limiter {
            in_flight: cfg
                .max_in_flight
                .map(|n| Arc::new(Semaphore::new(n.max(1)))),
            turn: tokio::sync::Mutex::new(()),
            buckets: Mutex::new(Buckets {
                requests: cfg.requests_per_minute.map(f64::from).unwrap_or(0.0),
                tokens: cfg.tokens_per_minute.map(|t| t as f64).unwrap_or(0.0),
                last: Instant::now(),
                cool_down_until: None,
            }),
            cfg,
        }
    }

    pub fn config(&self) -> LimitConfig {
        self.cfg
    }

    /// Waits for a slot, a request and `tokens` (capped at the per-minute size, so one huge
    /// request can still go), in arrival order.
    pub async fn acquire(&self, tokens: u64) -> LimitPermit {
        let slot = match &self.in_flight {
            Some(sem) => sem.clone().acquire_owned().await.ok(),
            None => None,
        };
        let charged = self
            .cfg
            .tokens_per_minute
            .map(|cap| tokens.min(cap))
            .unwrap_or(tokens);
        let _turn = self.turn.lock().await;
        loop {
            let wait = self.try_take(charged);
            match wait {
                None => break,
                Some(d) => tokio::time::sleep(d).await,
            }
        }
        LimitPermit {
            _slot: slot,
            charged,
        }
    }

    /// Takes a request and `tokens` now, or says how long until that is possible.
    fn try_take(&self, tokens: u64) -> Option<Duration> {
        let Ok(mut b) = self.buckets.lock() else {
            return None;
        };
        let now = Instant::now();
        let elapsed = now.saturating_duration_since(b.last).as_secs_f64();
        b.last = now;
        let period = self.cfg.period().as_secs_f64();
        if let Some(rpm) = self.cfg.requests_per_minute {
            let cap = f64::from(rpm.max(1));
            b.requests = (b.requests + elapsed * cap / period).min(cap);
        }
        if let Some(tpm) = self.cfg.tokens_per_minute {
            let cap = tpm.max(1) as f64;
            b.tokens = (b.tokens + elapsed * cap / period).min(cap);
        }
        if let Some(until) = b.cool_down_until {
            if until > now {
                return Some(until - now);
            }
            b.cool_down_until = None;
        }
        let mut wait = 0.0f64;
        if let Some(rpm) = self.cfg.requests_per_minute
            && b.requests < 1.0
        {
            wait = wait.max((1.0 - b.requests) * period / f64::from(rpm.max(1)));
        }
        if let Some(tpm) = self.cfg.tokens_per_minute
            && b.tokens < tokens as f64
        {
            wait = wait.max((tokens as f64 - b.tokens) * period / tpm.max(1) as f64);
        }
        if wait > 0.0 {
            // Round up to a whole microsecond so the next look surely finds enough.
            return Some(Duration::from_micros((wait * 1e6).ceil() as u64));
        }
        if self.cfg.requests_per_minute.is_some() {
            b.requests -= 1.0;
        }
        if self.cfg.tokens_per_minute.is_some() {
            b.tokens -= tokens as f64;
        }
        None
    }

    /// Corrects the token charge once the real usage is known (may go below zero, which
    /// delays later requests: the minute's budget was overspent).
    pub fn settle(&self, charged: u64, actual: u64) {
        if self.cfg.tokens_per_minute.is_none() {
            return;
        }
        if let Ok(mut b) = self.buckets.lock() {
            b.tokens += charged as f64 - actual as f64;
        }
    }

    /// Holds every new request until `d` from now: the server said it is out of capacity.
    pub fn cool_down(&self, d: Duration) {
        if let Ok(mut b) = self.buckets.lock() {
            let until = Instant::now() + d;
            if b.cool_down_until.is_none_or(|u| u < until) {
                b.cool_down_until = Some(until);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grants(config: LimitConfig, n: usize, tokens: u64) -> Vec<Duration> {
        grants_after(config, n, tokens, |_| {})
    }

    /// As [`grants`], with `first` done to the limiter as the test starts. The limiter is
    /// made on the paused clock too: made before the runtime, its buckets and a cool-down
    /// were measured on the real clock and ran out early by the time the runtime took to
    /// start (a cool-down of 2 s once ended after 1.999 s under load).
    fn grants_after(
        config: LimitConfig,
        n: usize,
        tokens: u64,
        first: impl FnOnce(&Limiter) + Send + 'static,
    ) -> Vec<Duration> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let t0 = Instant::now();
            let limiter = Arc::new(Limiter::new(config));
            first(&limiter);
            let mut handles = Vec::new();
            for _ in 0..n {
                let l = limiter.clone();
                handles.push(tokio::spawn(async move {
                    let _p = l.acquire(tokens).await;
                    Instant::now() - t0
                }));
                // Spawn order is arrival order.
                tokio::task::yield_now().await;
            }
            let mut out = Vec::new();
            for h in handles {
                out.push(h.await.expect("join"));
            }
            out
        })
    }

    #[test]
    fn requests_per_minute_spaces_requests_after_the_burst() {
        let config = LimitConfig {
            requests_per_minute: Some(2),
            ..LimitConfig::default()
        };
        let g = grants(config, 4, 1);
        assert_eq!(
            g,
            vec![
                Duration::ZERO,
                Duration::ZERO,
                Duration::from_secs(30),
                Duration::from_secs(60)
            ]
        );
    }

    #[test]
    fn a_shorter_window_refills_within_it() {
        let config = LimitConfig {
            requests_per_minute: Some(2),
            window: Some(Duration::from_secs(2)),
            ..LimitConfig::default()
        };
        let g = grants(config, 4, 1);
        assert_eq!(
            g,
            vec![
                Duration::ZERO,
                Duration::ZERO,
                Duration::from_secs(1),
                Duration::from_secs(2)
            ]
        );
    }

    #[test]
    fn tokens_per_minute_waits_for_refill_in_arrival_order() {
        let config = LimitConfig {
            tokens_per_minute: Some(600),
            ..LimitConfig::default()
        };
        // 600 tokens in the bucket: two requests of 300 now, the third after 30 s.
        let g = grants(config, 3, 300);
        assert_eq!(
            g,
            vec![Duration::ZERO, Duration::ZERO, Duration::from_secs(30)]
        );
    }

    #[test]
    fn cool_down_holds_new_requests() {
        let g = grants_after(LimitConfig::default(), 2, 1, |l| {
            l.cool_down(Duration::from_secs(2))
        });
        assert_eq!(g, vec![Duration::from_secs(2), Duration::from_secs(2)]);
    }

    #[test]
    fn in_flight_cap_holds_the_third_until_one_ends() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .expect("runtime");
        rt.block_on(async {
            let l = Arc::new(Limiter::new(LimitConfig {
                max_in_flight: Some(2),
                ..LimitConfig::default()
            }));
            let t0 = Instant::now();
            let mut hs = Vec::new();
            for hold in [10u64, 20, 5] {
                let l = l.clone();
                hs.push(tokio::spawn(async move {
                    let p = l.acquire(1).await;
                    let start = Instant::now() - t0;
                    tokio::time::sleep(Duration::from_secs(hold)).await;
                    drop(p);
                    start
                }));
                tokio::task::yield_now().await;
            }
            let mut starts = Vec::new();
            for h in hs {
                starts.push(h.await.expect("join"));
            }
            assert_eq!(
                starts,
                vec![Duration::ZERO, Duration::ZERO, Duration::from_secs(10)]
            );
        });
    }

    #[test]
    fn settle_refunds_an_overestimate() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .expect("runtime");
        rt.block_on(async {
            let l = Limiter::new(LimitConfig {
                tokens_per_minute: Some(100),
                ..LimitConfig::default()
            });
            let t0 = Instant::now();
            let p = l.acquire(100).await;
            l.settle(p.charged, 10); // only 10 were used: 90 come back
            let _q = l.acquire(90).await;
            assert_eq!(Instant::now() - t0, Duration::ZERO);
        });
    }
}
