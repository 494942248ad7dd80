//! Provider errors, classified so callers know whether a retry can help.

use std::time::Duration;

/// Why a model call failed. Messages name the provider and model, never credentials.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// Worth retrying: rate limits, 5xx, timeouts, dropped connections, injected faults.
    #[error("{provider} ({model}): {message}")]
    Transient {
        provider: String,
        model: String,
        message: String,
        /// The server's `Retry-After`, when it sent one.
        retry_after: Option<Duration>,
    },
    /// Retrying cannot help: bad request, authentication, unknown model.
    #[error("{provider} ({model}): {message}")]
    Fatal {
        provider: String,
        model: String,
        message: String,
    },
    /// Refused before it was sent: the run's budget (`--max-tokens-total`, `--max-cost`)
    /// is spent. Not retried; the task waits for a resume with a larger budget.
    #[error("budget reached: {message}")]
    Budget { message: String },
}

impl LlmError {
    pub fn is_retryable(&self) -> bool {
        matches!(self, LlmError::Transient { .. })
    }

    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::Transient { retry_after, .. } => *retry_after,
            LlmError::Fatal { .. } | LlmError::Budget { .. } => None,
        }
    }
}
