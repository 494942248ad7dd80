//! The serving model that makes the simulator behave like a loaded inference server: a
//! concurrency limit with a queue in front of it (so saturation shows as queueing delay), a
//! prefill cost per prompt token, and the server's own measurements of every answer (queue
//! wait, time to first token) so a client's figures can be checked against it.
//!
//! Output pacing (tokens per second, jitter) is the simulator's own `TokenRate`: the server
//! streams whatever the simulator's delta sink hands it, so pacing lives in one place.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use planwave_sim::ServingStats;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServingConfig {
    /// Answers generated at once; further requests wait in arrival order. `None`: no limit.
    pub max_concurrency: Option<usize>,
    /// Time per prompt token before the first output token (prefill), added to the
    /// simulator's latency.
    pub prefill_per_token: Duration,
}

/// The slots of the concurrency limit and the count of answers in flight.
pub(crate) struct Slots {
    limit: Option<Arc<Semaphore>>,
    in_flight: Arc<AtomicU64>,
    max_in_flight: AtomicU64,
    /// Answers that took a slot so far.
    admitted: AtomicU64,
    /// Requests waiting for a slot now (`vllm:num_requests_waiting`).
    waiting: AtomicU64,
}

/// One answer's slot: released (and the in-flight count lowered) when dropped, which is when
/// the answer's stream has ended.
pub(crate) struct Slot {
    _permit: Option<OwnedSemaphorePermit>,
    in_flight: Arc<AtomicU64>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Slots {
    pub(crate) fn new(cfg: &ServingConfig) -> Slots {
        Slots {
            limit: cfg
                .max_concurrency
                .map(|n| Arc::new(Semaphore::new(n.max(1)))),
            in_flight: Arc::new(AtomicU64::new(0)),
            max_in_flight: AtomicU64::new(0),
            admitted: AtomicU64::new(0),
            waiting: AtomicU64::new(0),
        }
    }

    /// Waits for a slot (FIFO: tokio's semaphore is fair).
    pub(crate) async fn admit(&self) -> Slot {
        let permit = match &self.limit {
            Some(s) => {
                let _waiting = crate::metrics::Waiting::enter(&self.waiting);
                s.clone().acquire_owned().await.ok()
            }
            None => None,
        };
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        self.admitted.fetch_add(1, Ordering::SeqCst);
        Slot {
            _permit: permit,
            in_flight: self.in_flight.clone(),
        }
    }

    /// Answers generating now.
    pub(crate) fn running(&self) -> u64 {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// Requests waiting for a slot now.
    pub(crate) fn waiting(&self) -> u64 {
        self.waiting.load(Ordering::Relaxed)
    }

    pub(crate) fn max_in_flight(&self) -> u64 {
        self.max_in_flight.load(Ordering::SeqCst)
    }

    pub(crate) fn admitted(&self) -> u64 {
        self.admitted.load(Ordering::SeqCst)
    }
}

/// One answer's server-side timestamps.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AnswerTiming {
    /// The request's number (arrivals.rs).
    pub request: u64,
    pub received: Instant,
    pub admitted: Instant,
    pub first_token: Option<Instant>,
    pub prompt_tokens: u64,
    /// Of `prompt_tokens`, those found in the prefix cache (prefill skips them).
    pub cached_tokens: u64,
    pub output_tokens: u64,
    pub role: &'static str,
}

impl AnswerTiming {
    /// The answer as `/metrics` counts it, complete at `done`.
    pub(crate) fn as_answered(&self, done: Instant) -> crate::metrics::Answered {
        let s = |a: Instant| a.saturating_duration_since(self.received).as_secs_f64();
        crate::metrics::Answered {
            prompt_tokens: self.prompt_tokens,
            output_tokens: self.output_tokens,
            queue_s: s(self.admitted),
            ttft_s: s(self.first_token.unwrap_or(done)),
            e2e_s: s(done),
        }
    }
}

impl AnswerTiming {
    /// The answer in the server's own figures (`/planwave/stats` → `serving`), complete at
    /// `done`.
    pub(crate) fn record(&self, stats: &mut ServingStats, done: Instant) {
        let ms = |a: Instant| a.saturating_duration_since(self.received).as_secs_f64() * 1000.0;
        stats.completed += 1;
        stats.queue_ms.push(ms(self.admitted));
        stats.ttft_ms.push(ms(self.first_token.unwrap_or(done)));
        stats.e2e_ms.push(ms(done));
        stats.role.push(self.role.to_owned());
        stats.prompt_tokens += self.prompt_tokens;
        stats.cached_tokens += self.cached_tokens;
        stats.output_tokens += self.output_tokens;
        *stats
            .output_tokens_by_role
            .entry(self.role.to_owned())
            .or_default() += self.output_tokens;
    }
}

/// The prefill wait of a prompt of `prompt_tokens`.
pub(crate) fn prefill(cfg: &ServingConfig, prompt_tokens: u64) -> Duration {
    cfg.prefill_per_token
        .saturating_mul(prompt_tokens.min(u32::MAX as u64) as u32)
}
