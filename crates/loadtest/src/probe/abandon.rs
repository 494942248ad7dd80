//! Stopping a load test promptly: the engine drains its in-flight model calls when it is
//! stopped, which against a slow endpoint meant minutes (14 with a long latency) before the
//! load tester exited on SIGTERM or Ctrl-C. A load test measures; it has nothing to keep, so
//! once stopped every call still waiting is abandoned and the run ends with what it measured.

use std::sync::Arc;

use async_trait::async_trait;
use planwave_llm::{ChatCall, ChatRequest, LlmError, LlmProvider};
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
    planwave_llm::pass_provider_info_to!(inner);

    /// Written out rather than `async fn`, as the probe's and the simulator's are:
    /// async_trait's future kept the request (336 B) for the whole call beside the inner
    /// call's own future, about 500 B per call in flight, 5 % of a subagent's memory at
    /// 100,000 in flight. Here the inner call is made at once and only its boxed future and
    /// the stop's wait are kept.
    fn chat<'life0, 'async_trait>(&'life0 self, request: ChatRequest) -> ChatCall<'async_trait>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        // A call asked for after the stop never starts.
        if self.stop.is_cancelled() {
            let abandoned = self.abandoned();
            return Box::pin(async move { Err(abandoned) });
        }
        let call = self.inner.chat(request);
        Box::pin(async move {
            tokio::select! {
                biased;
                () = self.stop.cancelled() => Err(self.abandoned()),
                answer = call => answer,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use planwave_llm::{AgentRole, ChatMessage, RequestContext};
    use std::time::Duration;

    use planwave_sim::{Latency, SimConfig, SimProvider};

    use super::*;

    fn request() -> ChatRequest {
        ChatRequest {
            role: AgentRole::Subagent,
            messages: vec![ChatMessage::user("write the section")],
            attempt: 1,
            context: RequestContext {
                task_id: Some("1".into()),
                task_title: "One".into(),
                ..RequestContext::default()
            },
            traceparent: None,
            tools: Vec::new(),
            max_tokens: None,
            on_delta: None,
        }
    }

    fn slow_sim() -> Arc<dyn LlmProvider> {
        Arc::new(SimProvider::new(SimConfig {
            latency: Latency::Fixed(Duration::from_secs(3600)),
            ..SimConfig::default()
        }))
    }

    #[tokio::test]
    async fn a_stop_ends_a_waiting_call_and_no_call_starts_after_it() {
        let stop = CancellationToken::new();
        let provider = Abandoning::wrap(slow_sim(), stop.clone());
        let waiting = provider.chat(request());
        stop.cancel();
        let err = waiting.await.expect_err("abandoned");
        assert!(err.to_string().contains("abandoned"), "{err}");
        let later = provider.chat(request()).await.expect_err("never started");
        assert!(later.to_string().contains("abandoned"), "{later}");
    }

    /// Every call in flight holds this future for its whole wait: it must not keep the
    /// request (over 300 B) beside the inner call's future, as an `async fn` would.
    #[test]
    fn a_waiting_call_holds_little_beside_the_inner_call() {
        let provider = Abandoning {
            inner: slow_sim(),
            stop: CancellationToken::new(),
        };
        let call = provider.chat(request());
        let size = std::mem::size_of_val(&*call);
        assert!(
            size <= 160,
            "the abandonable call's future is {size} B (a ChatRequest is {} B)",
            std::mem::size_of::<ChatRequest>()
        );
    }
}
