//! The provider's limits of a worker's settings, held across every worker on the queue: the
//! one place that decides which of the shared limiters (`limits.rs`, `rates.rs`) wrap the
//! model client, so a front end only hands over its provider and settings.

use std::sync::Arc;

use planwave_config::LlmChoice;
use planwave_llm::LlmProvider;

use crate::{OnWait, Queue};

/// `provider` wrapped so the configured limits of `llm` (an OpenAI-compatible endpoint's
/// `max_in_flight`, requests and tokens per minute) hold across every worker wrapped the same
/// way for the same endpoint; returned unchanged when none is set (or for the simulator,
/// which is per process). `on_wait` is told when this worker waits for the shared window.
pub async fn share_provider_limits(
    q: &Queue,
    provider: Arc<dyn LlmProvider>,
    llm: &LlmChoice,
    on_wait: OnWait,
) -> crate::Result<Arc<dyn LlmProvider>> {
    let LlmChoice::OpenAi { config, .. } = llm else {
        return Ok(provider);
    };
    let limits = config.limits;
    let mut provider = provider;
    if let Some(limit) = limits.max_in_flight {
        provider = crate::share_in_flight_limit(q, provider, &config.base_url, limit).await?;
    }
    if limits.requests_per_minute.is_some() || limits.tokens_per_minute.is_some() {
        provider = crate::share_rate_limits(
            q,
            provider,
            &config.base_url,
            limits,
            config.max_tokens,
            on_wait,
        )
        .await?;
    }
    Ok(provider)
}
