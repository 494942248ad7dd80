//! The timings of a model call its event does not carry (time to first token, the wait at
//! the client's limiter), taken from the answer the client measured.

use std::sync::Arc;

use async_trait::async_trait;
use planwave_llm::{ChatCall, ChatRequest, LlmProvider};

use super::Metrics;

/// A model client whose answers' timings are counted; everything else is the inner one's.
pub struct MeteredProvider {
    pub inner: Arc<dyn LlmProvider>,
    pub metrics: Arc<Metrics>,
}

impl MeteredProvider {
    pub fn wrap(inner: Arc<dyn LlmProvider>, metrics: Arc<Metrics>) -> Arc<dyn LlmProvider> {
        Arc::new(MeteredProvider { inner, metrics })
    }
}

#[async_trait]
impl LlmProvider for MeteredProvider {
    planwave_llm::pass_provider_info_to!(inner);

    /// Written out rather than `async fn` (as the load tester's `Abandoning` is): the inner
    /// call is made at once, and only its future is kept, not the request beside it (a
    /// copy of 336 B per call, and 0.5 KB per call in flight).
    fn chat<'life0, 'async_trait>(&'life0 self, request: ChatRequest) -> ChatCall<'async_trait>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        let call = self.inner.chat(request);
        Box::pin(async move {
            let answer = call.await;
            if let Ok(r) = &answer
                && let Some(t) = &r.timing
            {
                let series = &self.metrics.series;
                series.ttft.observe(t.ttft.as_secs_f64());
                series.limiter_wait.observe(t.queued.as_secs_f64());
            }
            answer
        })
    }
}
