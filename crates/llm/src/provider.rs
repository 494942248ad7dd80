//! The provider trait.

use async_trait::async_trait;
use planwave_record::ProviderInfo;

use crate::{AgentRole, ChatRequest, ChatResponse, LlmError};

/// A provider's call as `LlmProvider::chat` returns it (async_trait's boxed future), for
/// wrappers that write `chat` out: they make the inner call at once and keep only its
/// future, not the request beside it.
pub type ChatCall<'a> = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<ChatResponse, LlmError>> + Send + 'a>,
>;

/// A chat model. Implementations must be cheap to share (`Arc<dyn LlmProvider>`) across
/// thousands of concurrent subagents.
#[async_trait]
pub trait LlmProvider: Send + Sync + 'static {
    fn info(&self) -> ProviderInfo;

    /// The model a request of `role` is sent to (per-role models); for traces and records.
    fn model_for(&self, _role: AgentRole) -> String {
        self.info().model
    }

    /// One chat completion. Implementations do their own transport-level retries (if any);
    /// the caller decides about task-level retries from [`LlmError::is_retryable`].
    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, LlmError>;

    /// Transport-level retries so far, per cause (`rate_limited`, `server_error`,
    /// `connection`, `stalled`, `malformed`, `truncated`), for run summaries. Wrappers must
    /// forward it; providers without transport retries have none.
    fn retry_counts(&self) -> std::collections::BTreeMap<String, u64> {
        std::collections::BTreeMap::new()
    }
}

/// Inside `impl LlmProvider for Wrapper`, the methods a wrapper passes on to its field
/// `inner` unchanged: `info`, `model_for` and `retry_counts`. One list, so no wrapper forgets
/// one (a wrapper that kept the default `retry_counts` would hide its client's retries from
/// `run.json`).
#[macro_export]
macro_rules! pass_provider_info_to {
    ($inner:ident) => {
        fn info(&self) -> $crate::__private::ProviderInfo {
            self.$inner.info()
        }

        fn model_for(&self, role: $crate::AgentRole) -> String {
            self.$inner.model_for(role)
        }

        fn retry_counts(&self) -> std::collections::BTreeMap<String, u64> {
            self.$inner.retry_counts()
        }
    };
}
