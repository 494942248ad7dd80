//! [`TracedProvider`]: a `chat` span (OpenTelemetry GenAI semantic conventions) around every
//! model call, whichever provider answers.

use std::sync::Arc;

use async_trait::async_trait;
use planwave_telemetry::spans;
use tracing::Instrument;
use tracing::field::Empty;

use crate::{ChatRequest, ChatResponse, LlmError, LlmProvider};

// Integers go into span fields as i64: tracing-opentelemetry exports u64 fields as strings.

/// Wraps a provider; the span's parent is the caller's current span (a task, `plan` or
/// `integrate` span). The request carries the span's `traceparent` so an HTTP model gateway
/// can join the trace. Prompt and completion text go on the span only with `trace_content`.
pub struct TracedProvider {
    inner: Arc<dyn LlmProvider>,
    trace_content: bool,
}

impl TracedProvider {
    pub fn wrap(inner: Arc<dyn LlmProvider>, trace_content: bool) -> Arc<dyn LlmProvider> {
        Arc::new(TracedProvider {
            inner,
            trace_content,
        })
    }
}

#[async_trait]
impl LlmProvider for TracedProvider {
    crate::pass_provider_info_to!(inner);

    async fn chat(&self, mut request: ChatRequest) -> Result<ChatResponse, LlmError> {
        let info = self.inner.info();
        let model = self.inner.model_for(request.role);
        let span = tracing::info_span!(
            target: "planwave::llm",
            "chat",
            otel.name = format!("chat {model}"),
            otel.kind = "client",
            gen_ai.operation.name = "chat",
            gen_ai.provider.name = info.provider.as_str(),
            gen_ai.request.model = model.as_str(),
            gen_ai.response.model = Empty,
            gen_ai.usage.input_tokens = Empty,
            gen_ai.usage.output_tokens = Empty,
            gen_ai.usage.cache_read.input_tokens = Empty,
            gen_ai.usage.cache_creation.input_tokens = Empty,
            planwave.role = request.role.as_str(),
            planwave.attempt = i64::from(request.attempt),
            planwave.task.id = Empty,
            error.type = Empty,
        );
        if let Some(task) = &request.context.task_id {
            span.record("planwave.task.id", task.as_str());
        }
        if request.traceparent.is_none() {
            request.traceparent = spans::traceparent(&span);
        }
        if self.trace_content
            && let Ok(json) = serde_json::to_string(&request.messages)
        {
            spans::set_string(&span, "gen_ai.input.messages", json);
        }
        let result = self.inner.chat(request).instrument(span.clone()).await;
        match &result {
            Ok(r) => {
                span.record("gen_ai.response.model", r.model.as_str());
                span.record("gen_ai.usage.input_tokens", r.usage.prompt_tokens as i64);
                span.record(
                    "gen_ai.usage.output_tokens",
                    (r.usage.completion_tokens + r.usage.reasoning_tokens) as i64,
                );
                // Set only when the provider reported a cache: absent means unknown, not 0.
                if r.usage.cached_tokens > 0 {
                    span.record(
                        "gen_ai.usage.cache_read.input_tokens",
                        r.usage.cached_tokens as i64,
                    );
                }
                if r.usage.cache_write_tokens > 0 {
                    span.record(
                        "gen_ai.usage.cache_creation.input_tokens",
                        r.usage.cache_write_tokens as i64,
                    );
                }
                if let Some(reason) = &r.finish_reason {
                    spans::set_strings(
                        &span,
                        "gen_ai.response.finish_reasons",
                        std::slice::from_ref(reason),
                    );
                }
                if self.trace_content {
                    let out = serde_json::json!([{"role": "assistant", "content": r.content}]);
                    spans::set_string(&span, "gen_ai.output.messages", out.to_string());
                }
            }
            Err(e) => {
                span.record("error.type", error_type(e));
                // LlmError's text is already scrubbed of credentials (crate::secret).
                spans::set_error(&span, &e.to_string());
            }
        }
        result
    }
}

fn error_type(e: &LlmError) -> &'static str {
    if e.is_retryable() {
        "transient"
    } else {
        "fatal"
    }
}
