//! What a load test does to each request beyond sending it: its own `max_tokens`
//! (`--output-tokens`, a trace's `GeneratedTokens`), cancelling a share of streamed requests
//! mid-stream (`--cancel-rate`, as users closing a tab), and counting tokens with a real
//! tokenizer when the endpoint reports no usage (`--tokenizer`).
//!
//! [`Shaper`] sits between the [`Probe`](crate::Probe) and the endpoint's client, so the probe
//! records what the shaped call did. It is only put there when one of these is asked for: the
//! default workload's calls go straight to the client, at no cost.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use planwave_llm::{
    AgentRole, CallTiming, ChatCall, ChatRequest, ChatResponse, DeltaSink, LlmError, LlmProvider,
    StreamEvent, estimate_tokens,
};
use planwave_plan::ValidatedPlan;
use planwave_record::Usage;
use tokio::sync::Notify;

use crate::workload::sessions::SessionMap;
use crate::workload::tokenizer::TokenCounter;

/// The `finish_reason` of a call the load test cancelled: its record's outcome is
/// `cancelled`, neither `ok` nor an error.
pub(crate) const CANCELLED: &str = "cancelled_by_client";

/// Most content chunks a cancelled request reads before it is cancelled (drawn from 1 to
/// this, per request): early in the answer, as most closed tabs are.
const MAX_CHUNKS_BEFORE_CANCEL: u64 = 8;

/// Per-request settings of a load test's requests (tasks are requests, by plan index).
#[derive(Clone, Default)]
pub struct Shaping {
    /// Per request (task index, cycled): the `max_tokens` it is sent with.
    pub max_tokens: Option<Arc<[u32]>>,
    /// The share of streamed requests cancelled mid-stream, 0 to 1.
    pub cancel_rate: f64,
    /// Seeds which requests are cancelled, and when.
    pub seed: u64,
    /// Counts the tokens of calls whose endpoint reported no usage.
    pub tokenizer: Option<Arc<TokenCounter>>,
    /// Multi-turn sessions: each task's turn and think time.
    pub sessions: Option<Arc<SessionMap>>,
}

impl std::fmt::Debug for Shaping {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shaping")
            .field("max_tokens", &self.max_tokens.as_ref().map(|m| m.len()))
            .field("cancel_rate", &self.cancel_rate)
            .field("tokenizer", &self.tokenizer.is_some())
            .field("sessions", &self.sessions.is_some())
            .finish()
    }
}

impl Shaping {
    /// Whether any call is changed (else no `Shaper` is needed).
    pub fn shapes_calls(&self) -> bool {
        self.max_tokens.as_ref().is_some_and(|m| !m.is_empty())
            || self.cancel_rate > 0.0
            || self.tokenizer.is_some()
    }

    /// `inner` wrapped in a [`Shaper`] when any call is changed.
    pub(crate) fn wrap(
        self: &Arc<Self>,
        inner: Arc<dyn LlmProvider>,
        plan: Arc<ValidatedPlan>,
    ) -> Arc<dyn LlmProvider> {
        if !self.shapes_calls() {
            return inner;
        }
        Arc::new(Shaper {
            inner,
            plan,
            shaping: self.clone(),
        })
    }

    /// Whether the request of task `id` is cancelled, and after how many content chunks.
    fn cancel_after(&self, id: &str) -> Option<u32> {
        if self.cancel_rate <= 0.0 {
            return None;
        }
        // "cancel" in ASCII: a stream of draws apart from the simulator's own.
        let h = planwave_record::stable_hash(self.seed, id, 0x6361_6e63);
        let unit = (h >> 11) as f64 / (1u64 << 53) as f64;
        (unit < self.cancel_rate).then(|| 1 + (h % MAX_CHUNKS_BEFORE_CANCEL) as u32)
    }
}

/// The provider of a shaped load test (see the module).
pub(crate) struct Shaper {
    inner: Arc<dyn LlmProvider>,
    plan: Arc<ValidatedPlan>,
    shaping: Arc<Shaping>,
}

#[async_trait]
impl LlmProvider for Shaper {
    planwave_llm::pass_provider_info_to!(inner);

    fn chat<'life0, 'async_trait>(&'life0 self, mut request: ChatRequest) -> ChatCall<'async_trait>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        // Only the workload's requests are shaped, not the report's integrator call.
        if request.role != AgentRole::Subagent {
            return self.inner.chat(request);
        }
        let s = &self.shaping;
        if let Some(bounds) = s.max_tokens.as_ref().filter(|b| !b.is_empty())
            && let Some(i) = request
                .context
                .task_id
                .as_deref()
                .and_then(|id| self.plan.index_of_key(id))
        {
            request.max_tokens = Some(bounds[i % bounds.len()]);
        }
        let cancel = request
            .context
            .task_id
            .as_deref()
            .and_then(|id| s.cancel_after(id));
        // Kept only to count it again, should the endpoint report no usage.
        let prompt: Option<Vec<String>> = s
            .tokenizer
            .as_ref()
            .map(|_| request.messages.iter().map(|m| m.content.clone()).collect());
        if cancel.is_none() && prompt.is_none() {
            return self.inner.chat(request);
        }
        Box::pin(async move {
            let answer = match cancel {
                Some(after) => self.cancelling(request, after).await,
                None => self.inner.chat(request).await,
            };
            match (answer, &s.tokenizer, prompt) {
                (Ok(a), Some(t), Some(p)) => Ok(counted(a, t, &p)),
                (answer, ..) => answer,
            }
        })
    }
}

/// What a cancelled call's sink saw.
#[derive(Default)]
struct Seen {
    chunks: AtomicU32,
    text: Mutex<String>,
    first: OnceLock<Duration>,
    cancel: Notify,
}

impl Shaper {
    /// The call, dropped (its connection closed) once `after` content chunks have arrived,
    /// answered with what had arrived. An answer complete before that is returned whole.
    async fn cancelling(
        &self,
        mut request: ChatRequest,
        after: u32,
    ) -> Result<ChatResponse, LlmError> {
        let seen = Arc::new(Seen::default());
        let sent = Instant::now();
        let earlier = request.on_delta.take();
        let sink_seen = seen.clone();
        request.on_delta = Some(DeltaSink::new(move |e| {
            if let Some(s) = &earlier {
                s.emit(e);
            }
            match e {
                StreamEvent::Delta(d) => {
                    let _ = sink_seen.first.set(sent.elapsed());
                    if let Ok(mut t) = sink_seen.text.lock() {
                        t.push_str(d);
                    }
                    if sink_seen.chunks.fetch_add(1, Ordering::AcqRel) + 1 == after {
                        // A permit if nobody waits yet: the select below sees it.
                        sink_seen.cancel.notify_one();
                    }
                }
                StreamEvent::Restart => {
                    sink_seen.chunks.store(0, Ordering::Release);
                    if let Ok(mut t) = sink_seen.text.lock() {
                        t.clear();
                    }
                }
            }
        }));
        let model = self.inner.model_for(AgentRole::Subagent);
        tokio::select! {
            // An answer that completed in the same read as the cancelling chunk is whole.
            biased;
            answer = self.inner.chat(request) => answer,
            () = seen.cancel.notified() => Ok(cancelled(&seen, sent, model, self.shaping.tokenizer.as_deref())),
        }
    }
}

/// The answer of a cancelled call: the text received, marked [`CANCELLED`].
fn cancelled(
    seen: &Seen,
    sent: Instant,
    model: String,
    tokenizer: Option<&TokenCounter>,
) -> ChatResponse {
    let text = seen.text.lock().map(|t| t.clone()).unwrap_or_default();
    let output = match tokenizer {
        Some(t) => t.count(&text),
        None => estimate_tokens(&text),
    };
    let e2e = sent.elapsed();
    ChatResponse {
        // The engine takes an empty answer for a failure; a cancelled one is not.
        content: if text.trim().is_empty() {
            "(cancelled by the load test)".into()
        } else {
            text
        },
        usage: Usage::new(0, output, 0),
        model,
        finish_reason: Some(CANCELLED.into()),
        tool_calls: Vec::new(),
        timing: Some(CallTiming {
            ttft: seen.first.get().copied().unwrap_or(e2e),
            e2e,
            streamed: true,
            usage_estimated: true,
            ..CallTiming::default()
        }),
    }
}

/// `answer` with its tokens counted by `tokenizer` when the endpoint reported none.
fn counted(mut answer: ChatResponse, tokenizer: &TokenCounter, prompt: &[String]) -> ChatResponse {
    if answer.timing.as_ref().is_some_and(|t| t.usage_estimated) {
        answer.usage.prompt_tokens = prompt.iter().map(|m| tokenizer.count(m)).sum();
        if answer.finish_reason.as_deref() != Some(CANCELLED) {
            answer.usage.completion_tokens = tokenizer.count(&answer.content);
        }
        answer.usage.reasoning_tokens = 0;
        answer.usage.cached_tokens = 0;
    }
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn about_the_asked_share_of_requests_is_cancelled_early_in_the_answer() {
        let s = Shaping {
            cancel_rate: 0.25,
            seed: 3,
            ..Shaping::default()
        };
        let draws: Vec<Option<u32>> = (0..4000).map(|i| s.cancel_after(&i.to_string())).collect();
        let share = draws.iter().flatten().count() as f64 / 4000.0;
        assert!((share - 0.25).abs() < 0.03, "{share}");
        assert!(draws.iter().flatten().all(|k| (1..=8).contains(k)));
        assert_eq!(s.cancel_after("17"), s.cancel_after("17"), "seeded");
        assert!(Shaping::default().cancel_after("1").is_none());
        assert!(!Shaping::default().shapes_calls());
    }
}
