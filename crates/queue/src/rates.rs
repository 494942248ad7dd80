//! The provider's requests- and tokens-per-minute limits held across every worker: one
//! record per endpoint in a KV bucket, `{start_ms, requests, tokens}` of the current window,
//! changed only with revision-checked writes (`create` for the first, `update` after), so two
//! workers never both take the last request of a minute.
//!
//! Why a window counter rather than leases or a token bucket in KV: a charge is permanent for
//! its minute whether or not its worker lives on (a dead worker's requests did reach the
//! provider), so nothing needs to expire but the window itself; one compare-and-swap per call
//! is the whole cost. The window opens at the first request after the previous one closed
//! (not on minute boundaries), so it needs no clock agreement beyond the length of a minute;
//! like any fixed window it lets up to twice the limit through across a window's edge, which
//! the client's own token bucket (still in place in every worker) smooths within a worker.
//! Tokens are charged with the same estimate as the client's limiter and settled with the
//! response's usage afterwards.

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

#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
struct Window {
    start_ms: u64,
    requests: u64,
    tokens: u64,
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
    /// The current window and its revision (`None`: no record yet).
    async fn read(&self) -> Option<(Window, Option<u64>)> {
        match self.kv.entry(&self.key).await {
            Ok(Some(e)) if e.operation == kv::Operation::Put => {
                let w = serde_json::from_slice(&e.value).unwrap_or_default();
                Some((w, Some(e.revision)))
            }
            Ok(_) => Some((Window::default(), None)),
            Err(_) => None,
        }
    }

    async fn write(&self, w: &Window, revision: Option<u64>) -> bool {
        let body: bytes::Bytes = serde_json::to_vec(w).unwrap_or_default().into();
        match revision {
            Some(r) => self.kv.update(&self.key, body, r).await.is_ok(),
            None => self.kv.create(&self.key, body).await.is_ok(),
        }
    }

    /// Charges one request and `tokens` to the shared window, waiting for the next window
    /// while this one is spent. Returns the window's start the charge went to.
    async fn charge(&self, tokens: u64) -> Option<u64> {
        let tokens = self.tpm.map(|cap| tokens.min(cap)).unwrap_or(tokens);
        let mut told = 0u64;
        loop {
            let Some((mut w, revision)) = self.read().await else {
                // The server is away: the client's own limiter still holds this worker.
                return None;
            };
            let now = now_ms();
            if now >= w.start_ms + WINDOW.as_millis() as u64 {
                w = Window {
                    start_ms: now,
                    ..Window::default()
                };
            }
            let full_requests = self.rpm.is_some_and(|rpm| w.requests >= rpm.max(1));
            // One request larger than what is left still goes alone in a fresh window.
            let full_tokens = self
                .tpm
                .is_some_and(|tpm| w.tokens > 0 && w.tokens + tokens > tpm.max(1));
            if !full_requests && !full_tokens {
                w.requests += 1;
                w.tokens += tokens;
                if self.write(&w, revision).await {
                    return Some(w.start_ms);
                }
                // Another worker wrote first: look again.
                continue;
            }
            let until = w.start_ms + WINDOW.as_millis() as u64;
            if told != w.start_ms {
                told = w.start_ms;
                (self.on_wait)(&format!(
                    "worker: shared rate limit reached ({} requests, {} tokens this minute \
                     across workers); waiting {}s",
                    w.requests,
                    w.tokens,
                    until.saturating_sub(now).div_ceil(1000)
                ));
            }
            // The limiter's own wait (until the window closes), bounded so a window another
            // worker reset is seen within a second.
            let wait = Duration::from_millis(until.saturating_sub(now).clamp(10, 1000));
            tokio::time::sleep(wait).await;
        }
    }

    /// Corrects the window's token count with what the call really used.
    async fn settle(&self, window: u64, charged: u64, actual: u64) {
        if self.tpm.is_none() || charged == actual {
            return;
        }
        for _ in 0..10 {
            let Some((mut w, Some(revision))) = self.read().await else {
                return;
            };
            if w.start_ms != window {
                return; // that window is over
            }
            w.tokens = (w.tokens + actual).saturating_sub(charged);
            if self.write(&w, Some(revision)).await {
                return;
            }
        }
    }
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
        let window = self.charge(estimate).await;
        let charged = self.tpm.map(|cap| estimate.min(cap)).unwrap_or(estimate);
        let r = self.inner.chat(request).await;
        if let (Some(window), Ok(resp)) = (window, &r) {
            self.settle(window, charged, resp.usage.total()).await;
        }
        r
    }

    fn retry_counts(&self) -> std::collections::BTreeMap<String, u64> {
        self.inner.retry_counts()
    }
}
