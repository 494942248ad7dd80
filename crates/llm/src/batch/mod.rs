//! The Batch API behind the same [`LlmProvider`] trait as a normal client: [`BatchProvider`].
//!
//! Calls that are ready are collected for a short linger into one JSONL file of requests,
//! uploaded (`POST /v1/files`, purpose `batch`), submitted (`POST /v1/batches`, 24 h
//! window), polled with a growing interval, and each line's answer (or error) resolves its
//! own call as a normal call would: the same [`ChatResponse`], usage with its cached tokens,
//! the same errors for the caller's retry policy. Callers (the engine and its actors) do not
//! know their calls went through a batch; a call whose prerequisites are still running is
//! simply not ready yet, so dependent tasks go in later submissions.
//!
//! Each job a client serves opens its share, a [`BatchScope`] ([`BatchProvider::scope`]),
//! and makes its calls through [`BatchScope::wrap`]. A line's `custom_id` is
//! content-addressed: the job's key, the hash of its request body and how many times the job
//! asked that body, so the same call after a restart (or on another worker) has the same id.
//! With a [`Ledger`] (`provider-batches.jsonl` in the job's run directory, opened by the
//! runner), every submitted file and batch holding the job's calls is recorded before it is
//! relied on; read back when the job opens its scope again, a call whose id was already
//! submitted waits for that batch instead of being sent again. An expired or cancelled
//! batch's unfinished lines are sent again; a failed line is the call's error.
//!
//! A line holds only the fields OpenAI documents (`custom_id`, `method`, `url`, `body`).
//! What a normal call's `x-planwave-*` headers say goes, per `custom_id`, only to a server
//! that says it is planwave's simulator when the file is uploaded.

mod api;
mod dispatch;
mod ledger;
mod scope;
mod wire;

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use planwave_record::{ProviderInfo, Usage};
use serde::Serialize;
use serde_json::{Value, json};

pub use ledger::{Ledger, LedgerWrite, Recorded};
pub use scope::BatchScope;
pub use wire::{
    BatchObject, CONTEXTS_PATH, LineOutcome, RequestCounts, SIMULATOR_HEADER, parse_result_line,
};

use crate::openai::wire::{ChatBody, Completion};
use crate::openai::{OpenAiConfig, context_header};
use crate::tokens::estimate_tokens;
use crate::{AgentRole, CallTiming, ChatRequest, ChatResponse, LlmError, LlmProvider, StreamEvent};

/// How calls are batched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BatchConfig {
    /// The longest the first ready call waits for others before their batch is submitted
    /// (sooner once every job is waiting on the Batch API).
    pub linger: Duration,
    /// The first poll's interval; each next one is 1.5 times longer, up to `poll_max`.
    pub poll: Duration,
    pub poll_max: Duration,
    /// Most lines in one batch (OpenAI's limit is 50,000).
    pub max_lines: usize,
}

impl Default for BatchConfig {
    fn default() -> Self {
        BatchConfig {
            linger: Duration::from_secs(2),
            poll: Duration::from_secs(5),
            poll_max: Duration::from_secs(300),
            max_lines: 50_000,
        }
    }
}

/// A provider batch's state as last seen (`validating`, `in_progress`, `finalizing`,
/// `completed`, `failed`, `expired`, `cancelling`, `cancelled`) with its request counts, and
/// how many of its requests are the calls of the job told.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BatchStatus {
    pub batch_id: String,
    pub state: String,
    pub total: u64,
    pub completed: u64,
    pub failed: u64,
    pub calls: u64,
}

/// Told of the state of every batch holding a job's calls as it changes (a run's events, a
/// progress display).
pub trait BatchObserver: Send + Sync {
    fn batch_state(&self, status: &BatchStatus);
}

/// Chat completions through the provider's Batch API. Cheap to share; every caller's calls
/// go into the same batches.
pub struct BatchProvider {
    dispatch: Arc<dispatch::Dispatch>,
}

/// The longest a call waits for its batch: the 24 h window and an hour to collect results.
const CALL_LIMIT: Duration = Duration::from_secs(25 * 3600);

impl BatchProvider {
    pub fn new(cfg: OpenAiConfig, batch: BatchConfig) -> Result<BatchProvider, LlmError> {
        let (provider, model) = (cfg.provider.clone(), cfg.models.default.clone());
        let api = api::Api::new(cfg).map_err(|message| LlmError::Fatal {
            provider,
            model,
            message,
        })?;
        Ok(BatchProvider {
            dispatch: Arc::new(dispatch::Dispatch::new(api, batch)),
        })
    }

    /// A job's share of this client, live until [`BatchScope::close`]. `ledger`: where the
    /// job records the batches holding its calls, with what an earlier process of the job
    /// recorded there (its key, and its calls that wait for their batch rather than being
    /// sent again; files recorded without their batch are looked up at the provider, and a
    /// look-up that fails is an error). `observer` hears of every batch holding the job's calls.
    pub async fn scope(
        &self,
        ledger: Option<(Box<dyn LedgerWrite>, &str)>,
        observer: Option<Arc<dyn BatchObserver>>,
    ) -> std::io::Result<Arc<BatchScope>> {
        let (mut ledger, recorded) = match ledger {
            Some((out, text)) => (Some(Ledger::new(out)), Recorded::parse(text)),
            None => (None, Recorded::default()),
        };
        let key = match recorded.scope.as_deref() {
            Some(k) if scope::valid_key(k) => k.to_owned(),
            // Written before keys: its ids have none, and keep having none.
            None if !recorded.files.is_empty() => String::new(),
            _ => {
                let k = scope::new_key();
                if let Some(l) = &mut ledger {
                    l.record_scope(&k)?;
                }
                k
            }
        };
        self.dispatch
            .recover(&recorded)
            .await
            .map_err(|e| std::io::Error::other(e.message().to_owned()))?;
        let scope = Arc::new(BatchScope::new(
            key,
            ledger,
            observer,
            self.dispatch.changes.clone(),
        ));
        self.dispatch.register(&scope);
        Ok(scope)
    }

    /// Batches submitted by this process.
    pub fn batches_submitted(&self) -> u64 {
        self.dispatch.submitted()
    }

    fn config(&self) -> &OpenAiConfig {
        self.dispatch.api.config()
    }

    /// The request body, as a normal call would send it but not streamed.
    fn body(&self, request: &ChatRequest, model: &str) -> Result<String, LlmError> {
        let cfg = self.config();
        let body = ChatBody {
            model,
            messages: &request.messages,
            stream: false,
            stream_options: None,
            temperature: cfg.temperature,
            max_tokens: cfg.max_tokens,
            response_format: crate::openai::response_format(
                cfg.response_format,
                cfg.plan_schema.as_ref(),
                request,
            ),
            tools: crate::openai::wire::tools(&request.tools),
        };
        serde_json::to_string(&body).map_err(|e| self.fatal(model, format!("encoding: {e}")))
    }

    fn fatal(&self, model: &str, message: String) -> LlmError {
        LlmError::Fatal {
            provider: self.config().provider.clone(),
            model: model.to_owned(),
            message,
        }
    }

    /// The request line, with OpenAI's documented fields only.
    fn line(custom_id: &str, body: &str) -> String {
        format!(
            "{{\"custom_id\":{},\"method\":\"POST\",\"url\":\"/v1/chat/completions\",\"body\":{body}}}",
            Value::String(custom_id.to_owned())
        )
    }

    /// With context headers on, what the headers of a normal call would say, for a server
    /// that answers from them (`sim-llm serve`).
    fn context(&self, request: &ChatRequest) -> Option<Value> {
        self.config().context_headers.then(|| {
            json!({
                "role": request.role.as_str(),
                "attempt": request.attempt,
                "context": context_header::encode(&request.context),
            })
        })
    }

    /// A line's response body as the call's answer.
    fn answer(
        &self,
        body: Value,
        model: &str,
        request: &ChatRequest,
        started: Instant,
    ) -> Result<ChatResponse, LlmError> {
        let malformed = |e: String| LlmError::Transient {
            provider: self.config().provider.clone(),
            model: model.to_owned(),
            message: format!("malformed batch answer: {e}"),
            retry_after: None,
        };
        let c: Completion = serde_json::from_value(body).map_err(|e| malformed(e.to_string()))?;
        let choice = c
            .choices
            .into_iter()
            .next()
            .ok_or_else(|| malformed("no choices".into()))?;
        let (content, reasoning, tool_calls) = match choice.message {
            Some(m) => (
                m.content.unwrap_or_default(),
                m.reasoning_content.or(m.reasoning).unwrap_or_default(),
                m.tool_calls,
            ),
            None => Default::default(),
        };
        let usage = match c.usage {
            Some(u) => {
                let mut usage = u.to_usage();
                if usage.reasoning_tokens == 0 && !reasoning.is_empty() {
                    let r = estimate_tokens(&reasoning).min(usage.completion_tokens);
                    usage.reasoning_tokens = r;
                    usage.completion_tokens -= r;
                }
                usage
            }
            None => Usage::new(
                request
                    .messages
                    .iter()
                    .map(|m| estimate_tokens(&m.content))
                    .sum(),
                estimate_tokens(&content),
                estimate_tokens(&reasoning),
            ),
        };
        if let Some(sink) = &request.on_delta
            && !content.is_empty()
        {
            sink.emit(StreamEvent::Delta(&content));
        }
        let at = started.elapsed();
        Ok(ChatResponse {
            content,
            usage,
            model: c.model.unwrap_or_else(|| model.to_owned()),
            finish_reason: choice.finish_reason,
            tool_calls,
            timing: Some(CallTiming {
                ttft: at,
                e2e: at,
                ..CallTiming::default()
            }),
        })
    }
}

#[async_trait]
impl LlmProvider for BatchProvider {
    fn info(&self) -> ProviderInfo {
        let cfg = self.config();
        ProviderInfo {
            provider: cfg.provider.clone(),
            model: cfg.models.for_role(AgentRole::Subagent).to_owned(),
            simulated: false,
            base_url: Some(planwave_redact::redact_url(&cfg.base_url).into_owned()),
            response_format: Some(cfg.response_format.as_str().to_owned()),
        }
    }

    fn model_for(&self, role: AgentRole) -> String {
        self.config().models.for_role(role).to_owned()
    }

    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        let started = Instant::now();
        let model = self.config().models.for_role(request.role).to_owned();
        let body = self.body(&request, &model)?;
        // The job the call is for, when made through its scope.
        let job = scope::SCOPE.try_with(Arc::clone).ok();
        let custom_id = self.dispatch.custom_id(&body, job.as_deref());
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.dispatch.enqueue(dispatch::Line {
            json: Self::line(&custom_id, &body),
            custom_id,
            model: model.clone(),
            context: self.context(&request),
            owner: job.map(scope::Owner::new),
            reply,
        });
        let transient = |message: &str| LlmError::Transient {
            provider: self.config().provider.clone(),
            model: model.clone(),
            message: message.to_owned(),
            retry_after: None,
        };
        let body = match tokio::time::timeout(CALL_LIMIT, answer).await {
            Err(_) => return Err(transient("no answer from the batch within 25 hours")),
            Ok(Err(_)) => return Err(transient("the batch client stopped")),
            Ok(Ok(result)) => result?,
        };
        self.answer(body, &model, &request, started)
    }
}
