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
}

impl LlmError {
    pub fn is_retryable(&self) -> bool {
        matches!(self, LlmError::Transient { .. })
    }

    /// The prompt and the output cap did not fit the model's context (HTTP 400
    /// `exceed_context_size` on llama.cpp, `context_length_exceeded` on OpenAI, vLLM's
    /// "maximum context length"): the request as it stands can never succeed, so it is not
    /// retried, and a command stopped by it exits 2 (its settings or input must change).
    pub fn is_context_overflow(&self) -> bool {
        match self {
            LlmError::Fatal { message, .. } => message.contains(CONTEXT_OVERFLOW),
            LlmError::Transient { .. } => false,
        }
    }

    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::Transient { retry_after, .. } => *retry_after,
            LlmError::Fatal { .. } => None,
        }
    }
}

/// What a context overflow's message starts with (see [`LlmError::is_context_overflow`]).
const CONTEXT_OVERFLOW: &str = "context overflow:";

/// Whether a server's error text says the request did not fit the model's context.
pub(crate) fn names_context_overflow(detail: &str) -> bool {
    let d = detail.to_ascii_lowercase();
    [
        "exceed_context_size",
        "exceeds the available context size",
        "context_length_exceeded",
        "maximum context length",
        "context window",
    ]
    .iter()
    .any(|m| d.contains(m))
}

/// A context overflow's message: the server's words and what to change.
pub(crate) fn context_overflow_message(server: &str) -> String {
    format!(
        "{CONTEXT_OVERFLOW} {server} (the prompt plus the output cap is larger than the model's context: lower the cap with --max-output ROLE=TOKENS, shorten the input, or give the server a larger context)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_context_overflow_is_fatal_and_named() {
        let server = "HTTP 400 Bad Request: request (2151 tokens) exceeds the available context size (2048 tokens), try increasing it (exceed_context_size_error)";
        assert!(names_context_overflow(server));
        let e = LlmError::Fatal {
            provider: "llama.cpp".into(),
            model: "m".into(),
            message: context_overflow_message(server),
        };
        assert!(e.is_context_overflow() && !e.is_retryable());
        assert!(!names_context_overflow(
            "HTTP 400 Bad Request: unknown field"
        ));
    }
}
