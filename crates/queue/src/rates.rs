//! The provider's requests- and tokens-per-minute limits held across every worker: one
//! record per endpoint in a KV bucket, the log of what was admitted in the last minute
//! (`{at_ms, id, tokens}` per request), changed only with revision-checked writes (`create`
//! for the first, `update` after), so two workers never both take the last request.
//!
//! Why a sliding log rather than a fixed window or a token bucket: a provider's limit is what
//! its 429s come from, and it counts any 60 s. A fixed window lets twice the limit through
//! across its edge, and a token bucket of the limit's size, refilling over a minute, admits
//! its full bucket plus what refills within the same 60 s. The log admits a request only when
//! the last 60 s hold fewer than the limit's requests (and tokens), so no 60 s ever holds more
//! ([`admit`], property-tested), while a burst up to the limit still goes at once. It costs a
//! record of at most the limit's entries (requests per minute are hundreds to thousands), one
//! compare-and-swap per call. A charge is permanent for its minute whether or not its worker
//! lives on (a dead worker's requests did reach the provider).
//!
//! Tokens are charged with the same estimate as the client's limiter and settled with the
//! response's usage afterwards. Transport retries inside the client's `chat()` reached the
//! provider too: they are charged (as requests, after the call, from the answer's
//! `timing.retries`) so the next callers wait for them; the client's own limiter paces them
//! within a worker.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_nats::jetstream::kv;
use planwave_llm::openai::LimitConfig;
use planwave_llm::{AgentRole, ChatRequest, ChatResponse, LlmError, LlmProvider, ProviderInfo};
use serde::{Deserialize, Serialize};

use crate::Queue;

const BUCKET: &str = "planwave_rates";
const WINDOW: Duration = Duration::from_secs(60);
/// The client's own completion estimate when no `max_tokens` is set.
const COMPLETION_ESTIMATE: u64 = 1024;

/// Called with a line when this worker waits for the shared window (shown on its stderr).
pub type OnWait = Arc<dyn Fn(&str) + Send + Sync>;

/// One admitted request of the last minute.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Entry {
    at_ms: u64,
    /// Which charge it is, so its tokens can be settled.
    id: u64,
    tokens: u64,
}

/// What the endpoint admitted in the last minute, oldest first.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Log {
    entries: Vec<Entry>,
}

/// Whether a request of `tokens` may go at `now` after what `log` admitted, given the
/// limits; `Err(ms)` is when to look again (the oldest entry in the way leaves the minute).
/// Entries older than a minute are dropped first.
fn admit(
    log: &mut Log,
    now: u64,
    rpm: Option<u64>,
    tpm: Option<u64>,
    tokens: u64,
) -> Result<(), u64> {
    let window = WINDOW.as_millis() as u64;
    log.entries.retain(|e| e.at_ms + window > now);
    if let Some(rpm) = rpm {
        let rpm = rpm.max(1) as usize;
        if log.entries.len() >= rpm {
            // The request that must leave for one more to fit.
            let oldest = log.entries[log.entries.len() - rpm];
            return Err(oldest.at_ms + window);
        }
    }
    if let Some(tpm) = tpm {
        let used: u64 = log.entries.iter().map(|e| e.tokens).sum();
        // One request larger than the whole limit still goes alone in an empty minute.
        if used > 0 && used + tokens > tpm.max(1) {
            let mut left = used;
            for e in &log.entries {
                left -= e.tokens;
                if left + tokens <= tpm.max(1) || left == 0 {
                    return Err(e.at_ms + window);
                }
            }
        }
    }
    Ok(())
}

/// `provider` whose requests and tokens per minute, counted over every worker wrapped the
/// same way for the same endpoint (`scope`), stay within `limits`.
pub async fn share_rate_limits(
    q: &Queue,
    provider: Arc<dyn LlmProvider>,
    scope: &str,
    limits: LimitConfig,
    max_tokens: Option<u32>,
    on_wait: OnWait,
) -> crate::Result<Arc<dyn LlmProvider>> {
    // A window nobody touched for this long is over anyway.
    let kv =
        crate::connect::shared_bucket(q, BUCKET, WINDOW * 5, "opening the rate bucket").await?;
    let key = crate::connect::endpoint_key("rate", scope);
    Ok(Arc::new(SharedRates {
        inner: provider,
        kv,
        key,
        rpm: limits.requests_per_minute.map(u64::from),
        tpm: limits.tokens_per_minute,
        completion_estimate: max_tokens.map(u64::from).unwrap_or(COMPLETION_ESTIMATE),
        on_wait,
    }))
}

struct SharedRates {
    inner: Arc<dyn LlmProvider>,
    kv: kv::Store,
    key: String,
    rpm: Option<u64>,
    tpm: Option<u64>,
    completion_estimate: u64,
    on_wait: OnWait,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl SharedRates {
    /// The log and its revision (`None`: no record yet); `None` when the server is away.
    async fn read(&self) -> Option<(Log, Option<u64>)> {
        match self.kv.entry(&self.key).await {
            Ok(Some(e)) if e.operation == kv::Operation::Put => {
                let log = serde_json::from_slice(&e.value).unwrap_or_default();
                Some((log, Some(e.revision)))
            }
            Ok(_) => Some((Log::default(), None)),
            Err(_) => None,
        }
    }

    async fn write(&self, log: &Log, revision: Option<u64>) -> bool {
        let body: bytes::Bytes = serde_json::to_vec(log).unwrap_or_default().into();
        match revision {
            Some(r) => self.kv.update(&self.key, body, r).await.is_ok(),
            None => self.kv.create(&self.key, body).await.is_ok(),
        }
    }

    /// Charges `requests` requests and `tokens` to the shared log, waiting while the last
    /// minute is full (`wait`: false charges at once, for retries that already happened).
    /// Returns the charge's id (`None`: the server is away, the client's limiter holds).
    async fn charge(&self, requests: u64, tokens: u64, wait: bool) -> Option<u64> {
        let tokens = self.tpm.map(|cap| tokens.min(cap)).unwrap_or(tokens);
        let id = rand_id();
        let mut told = false;
        loop {
            let (mut log, revision) = self.read().await?;
            let now = now_ms();
            match admit(&mut log, now, self.rpm, self.tpm, tokens) {
                Err(until) if wait => {
                    if !told {
                        told = true;
                        let used: u64 = log.entries.iter().map(|e| e.tokens).sum();
                        (self.on_wait)(&format!(
                            "worker: shared rate limit reached ({} requests, {used} tokens in \
                             the last minute across workers); waiting {}s",
                            log.entries.len(),
                            until.saturating_sub(now).div_ceil(1000)
                        ));
                    }
                    // Until the entry in the way leaves the minute, bounded so a log another
                    // worker changed is seen within a second.
                    let pause = Duration::from_millis(until.saturating_sub(now).clamp(10, 1000));
                    tokio::time::sleep(pause).await;
                    continue;
                }
                _ => {}
            }
            for n in 0..requests.max(1) {
                let tokens = if n == 0 { tokens } else { 0 };
                log.entries.push(Entry {
                    at_ms: now,
                    id,
                    tokens,
                });
            }
            if self.write(&log, revision).await {
                return Some(id);
            }
            // Another worker wrote first: look again.
        }
    }

    /// Corrects the charge's tokens with what the call really used.
    async fn settle(&self, id: u64, actual: u64) {
        if self.tpm.is_none() {
            return;
        }
        for _ in 0..10 {
            let Some((mut log, Some(revision))) = self.read().await else {
                return;
            };
            let Some(e) = log.entries.iter_mut().find(|e| e.id == id && e.tokens > 0) else {
                return; // out of the minute already
            };
            if e.tokens == actual {
                return;
            }
            e.tokens = actual.max(1);
            if self.write(&log, Some(revision)).await {
                return;
            }
        }
    }
}

fn rand_id() -> u64 {
    let b = *uuid::Uuid::new_v4().as_bytes();
    u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
}

#[async_trait::async_trait]
impl LlmProvider for SharedRates {
    fn info(&self) -> ProviderInfo {
        self.inner.info()
    }

    fn model_for(&self, role: AgentRole) -> String {
        self.inner.model_for(role)
    }

    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        let estimate = request
            .messages
            .iter()
            .map(|m| planwave_llm::estimate_tokens(&m.content))
            .sum::<u64>()
            + self.completion_estimate;
        let charge = self.charge(1, estimate, true).await;
        let r = self.inner.chat(request).await;
        if let (Some(id), Ok(resp)) = (charge, &r) {
            self.settle(id, resp.usage.total()).await;
            // The client's own retries of this call reached the provider as well.
            let retries = resp.timing.as_ref().map_or(0, |t| u64::from(t.retries));
            if retries > 0 {
                self.charge(retries, 0, false).await;
            }
        }
        r
    }

    fn retry_counts(&self) -> std::collections::BTreeMap<String, u64> {
        self.inner.retry_counts()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Admits requests arriving at `arrivals` (ms, sorted), each retried at the time
    /// [`admit`] names until it goes; returns when each went.
    fn run(
        arrivals: &[u64],
        rpm: Option<u64>,
        tpm: Option<u64>,
        tokens: &[u64],
    ) -> Vec<(u64, u64)> {
        let mut log = Log::default();
        let mut sent = Vec::new();
        for (i, &at) in arrivals.iter().enumerate() {
            let mut now = at.max(sent.last().map_or(0, |(t, _)| *t));
            // Capped at the limit, as `charge` caps a request larger than it.
            let t = tpm.map_or(tokens[i % tokens.len()], |c| {
                tokens[i % tokens.len()].min(c)
            });
            while let Err(until) = admit(&mut log, now, rpm, tpm, t) {
                assert!(until > now, "a wait must move time on");
                now = until;
            }
            log.entries.push(Entry {
                at_ms: now,
                id: i as u64,
                tokens: t,
            });
            sent.push((now, t));
        }
        sent
    }

    fn worst_minute(sent: &[(u64, u64)]) -> (usize, u64) {
        let window = WINDOW.as_millis() as u64;
        sent.iter()
            .map(|(start, _)| {
                let inside = sent
                    .iter()
                    .filter(|(t, _)| *t >= *start && *t < start + window);
                let v: Vec<_> = inside.collect();
                (v.len(), v.iter().map(|(_, k)| *k).sum())
            })
            .fold((0, 0), |(n, k), (a, b)| (n.max(a), k.max(b)))
    }

    #[test]
    fn a_burst_at_a_minutes_end_waits_for_the_next_minute_not_the_next_window() {
        // 1 request at 0, 3 at 59 s: a fixed window opened at 0 would let 4 more through at
        // 60 s (7 within two seconds); the log lets the next go only as each leaves.
        let sent = run(
            &[0, 59_000, 59_000, 59_000, 60_000, 60_000, 60_000],
            Some(4),
            None,
            &[1],
        );
        let times: Vec<u64> = sent.iter().map(|(t, _)| *t).collect();
        assert_eq!(times, [0, 59_000, 59_000, 59_000, 60_000, 119_000, 119_000]);
        assert_eq!(worst_minute(&sent).0, 4);
    }

    proptest! {
        #[test]
        fn no_minute_ever_holds_more_than_the_limits(
            mut arrivals in prop::collection::vec(0u64..300_000, 1..60),
            rpm in 1u64..10,
            tpm in 100u64..2_000,
            tokens in prop::collection::vec(1u64..400, 1..5),
        ) {
            arrivals.sort_unstable();
            let sent = run(&arrivals, Some(rpm), Some(tpm), &tokens);
            let (n, k) = worst_minute(&sent);
            prop_assert!(n as u64 <= rpm, "{n} requests in a minute, limit {rpm}");
            prop_assert!(k <= tpm, "{k} tokens in a minute, limit {tpm}");
        }
    }
}
