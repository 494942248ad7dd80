//! Stopping a load test promptly: the engine drains its in-flight model calls when it is
//! stopped, which against a slow endpoint meant minutes (14 with a long latency) before the
//! load tester exited on SIGTERM or Ctrl-C. A load test measures; it has nothing to keep, so
//! once stopped every call still waiting is abandoned and the run ends with what it measured.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use planwave_llm::{AgentRole, ChatRequest, ChatResponse, LlmError, LlmProvider, ProviderInfo};
use tokio_util::sync::CancellationToken;

/// `inner`, whose calls end at once (a fatal error) when `stop` is cancelled.
pub(crate) struct Abandoning {
    inner: Arc<dyn LlmProvider>,
    stop: CancellationToken,
}

impl Abandoning {
    pub(crate) fn wrap(
        inner: Arc<dyn LlmProvider>,
        stop: CancellationToken,
    ) -> Arc<dyn LlmProvider> {
        Arc::new(Abandoning { inner, stop })
    }

    fn abandoned(&self) -> LlmError {
        let info = self.inner.info();
        LlmError::Fatal {
            provider: info.provider,
            model: info.model,
            message: "abandoned: the load test was stopped".into(),
        }
    }
}

#[async_trait]
impl LlmProvider for Abandoning {
    fn info(&self) -> ProviderInfo {
        self.inner.info()
    }

    fn model_for(&self, role: AgentRole) -> String {
        self.inner.model_for(role)
    }

    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        tokio::select! {
            // A call asked for after the stop never starts.
            biased;
            () = self.stop.cancelled() => Err(self.abandoned()),
            answer = self.inner.chat(request) => answer,
        }
    }

    fn retry_counts(&self) -> BTreeMap<String, u64> {
        self.inner.retry_counts()
    }
}
