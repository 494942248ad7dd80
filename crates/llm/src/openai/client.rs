//! The OpenAI-compatible Chat Completions client: one provider for OpenAI, DeepSeek,
//! Qwen/DashScope, Ollama, vLLM, llama.cpp's server and `planwave sim-llm serve`.
//!
//! One `chat()` is: wait for the shared [`Limiter`] (and the config's `gate`), send (streaming SSE by default), read
//! the answer under the idle and request timeouts, and on a retryable failure (408, 409, 429,
//! 5xx, connection errors, timeouts, a stalled, truncated or malformed body) wait (backoff with
//! full jitter, or `Retry-After`) and go again, up to `retry.max_retries` times and while the
//! shared [`RetryBudget`] allows. 400/401/403/404 fail at once. Errors name the provider, the
//! base URL and the model; the key is never logged, and server text is scrubbed of it.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use async_trait::async_trait;
use futures::StreamExt;
use planwave_record::{ProviderInfo, Usage};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue, RETRY_AFTER};
use serde_json::json;

use super::config::{OpenAiConfig, ResponseFormatMode};
use super::context_header;
use super::limiter::Limiter;
use super::retry::{RetryBudget, backoff_delay, parse_retry_after};
use super::sse::{ChunkError, SseDecoder, StreamAnswer};
use super::wire::{self, ChatBody, Completion};
use crate::secret::scrub;
use crate::tokens::estimate_tokens;
use crate::{
    AgentRole, CallTiming, ChatRequest, ChatResponse, DeltaSink, LlmError, LlmProvider, StreamEvent,
};

/// Largest error body read (the message is in the first bytes anyway).
const MAX_ERROR_BODY: usize = 16 * 1024;
/// Completion tokens assumed for the TPM budget when `max_tokens` is not set.
const DEFAULT_COMPLETION_ESTIMATE: u64 = 1024;

/// Counters of one client, for load tests and summaries.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ClientStats {
    /// HTTP attempts sent.
    pub requests: u64,
    /// Attempts that were retries.
    pub retries: u64,
}

pub struct OpenAiProvider {
    cfg: OpenAiConfig,
    http: reqwest::Client,
    url: String,
    limiter: Arc<Limiter>,
    /// The server's slots (llama.cpp's `/props`), when no in-flight cap is configured.
    slots: super::server_slots::ServerSlots,
    budget: Arc<RetryBudget>,
    rng: Mutex<StdRng>,
    /// 0: as configured; 1: `json_object`; 2: no `response_format` (after a 400 naming it).
    format_downgrade: AtomicU8,
    requests: AtomicU64,
    retries: AtomicU64,
    /// Retries per [`RetryCause`], in `RetryCause::ALL` order.
    retry_causes: [AtomicU64; 6],
}

/// Why an attempt is retried, counted per client for run summaries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryCause {
    /// 429.
    RateLimited,
    /// 5xx, 408, 409, or an error event inside a stream.
    ServerError,
    /// The connection failed or dropped (refused, reset).
    Connection,
    /// Nothing arrived in time (headers, body or stream chunks).
    Stalled,
    /// The body or a stream chunk was not the JSON it should be.
    Malformed,
    /// A stream ended before the answer was complete.
    Truncated,
}

impl RetryCause {
    pub const ALL: [RetryCause; 6] = [
        RetryCause::RateLimited,
        RetryCause::ServerError,
        RetryCause::Connection,
        RetryCause::Stalled,
        RetryCause::Malformed,
        RetryCause::Truncated,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RetryCause::RateLimited => "rate_limited",
            RetryCause::ServerError => "server_error",
            RetryCause::Connection => "connection",
            RetryCause::Stalled => "stalled",
            RetryCause::Malformed => "malformed",
            RetryCause::Truncated => "truncated",
        }
    }
}

/// How one HTTP attempt failed.
#[derive(Debug)]
enum Failure {
    Retryable {
        message: String,
        retry_after: Option<Duration>,
        status: Option<u16>,
        cause: RetryCause,
    },
    Fatal(String),
    /// The server rejected `response_format`: go again with a simpler one.
    Downgrade,
}

fn retryable(cause: RetryCause, message: impl Into<String>) -> Failure {
    Failure::Retryable {
        message: message.into(),
        retry_after: None,
        status: None,
        cause,
    }
}

/// How a call that the client stops retrying fails: worth a task-level retry later (with
/// the server's `Retry-After`, if it gave one), or not at all.
#[derive(Clone, Copy, Debug)]
enum GiveUp {
    Transient { retry_after: Option<Duration> },
    Fatal,
}

impl OpenAiProvider {
    /// A client with its own limiter.
    pub fn new(cfg: OpenAiConfig) -> Result<OpenAiProvider, LlmError> {
        let limiter = Arc::new(Limiter::new(cfg.limits));
        OpenAiProvider::with_limiter(cfg, limiter)
    }

    /// A client sharing `limiter` (and so its in-flight, RPM and TPM budgets) with others.
    pub fn with_limiter(
        cfg: OpenAiConfig,
        limiter: Arc<Limiter>,
    ) -> Result<OpenAiProvider, LlmError> {
        let http = planwave_tls::http_client()
            .connect_timeout(cfg.timeouts.connect)
            .pool_idle_timeout(Duration::from_secs(60))
            .user_agent(concat!("planwave/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| LlmError::Fatal {
                provider: cfg.provider.clone(),
                model: cfg.models.default.clone(),
                message: format!("cannot build the HTTP client: {e}"),
            })?;
        let url = super::endpoint::endpoint(&cfg.base_url, "chat/completions");
        let slots = super::server_slots::ServerSlots::new(
            &cfg.base_url,
            limiter.config().max_in_flight.is_none(),
        );
        Ok(OpenAiProvider {
            slots,
            rng: Mutex::new(StdRng::seed_from_u64(cfg.seed)),
            cfg,
            http,
            url,
            limiter,
            budget: Arc::new(RetryBudget::default()),
            format_downgrade: AtomicU8::new(0),
            requests: AtomicU64::new(0),
            retries: AtomicU64::new(0),
            retry_causes: Default::default(),
        })
    }

    pub fn limiter(&self) -> &Arc<Limiter> {
        &self.limiter
    }

    pub fn config(&self) -> &OpenAiConfig {
        &self.cfg
    }

    pub fn stats(&self) -> ClientStats {
        ClientStats {
            requests: self.requests.load(Ordering::Relaxed),
            retries: self.retries.load(Ordering::Relaxed),
        }
    }

    fn unit(&self) -> f64 {
        self.rng
            .lock()
            .map(|mut r| r.random::<f64>())
            .unwrap_or(0.5)
    }

    fn error(&self, model: &str, message: String, class: GiveUp) -> LlmError {
        let message = format!(
            "at {}: {message}",
            planwave_redact::redact_url(&self.cfg.base_url)
        );
        match class {
            GiveUp::Transient { retry_after } => LlmError::Transient {
                provider: self.cfg.provider.clone(),
                model: model.to_owned(),
                message,
                retry_after,
            },
            GiveUp::Fatal => LlmError::Fatal {
                provider: self.cfg.provider.clone(),
                model: model.to_owned(),
                message,
            },
        }
    }

    /// The mode answers are asked in now: as configured, or simpler after the server
    /// rejected it (the probe: the first structured request finds what the server takes).
    pub fn response_format_in_use(&self) -> ResponseFormatMode {
        match (
            self.cfg.response_format,
            self.format_downgrade.load(Ordering::Relaxed),
        ) {
            (m, 0) => m,
            (ResponseFormatMode::JsonSchema, 1) => ResponseFormatMode::JsonObject,
            _ => ResponseFormatMode::None,
        }
    }

    fn response_format(&self, request: &ChatRequest) -> Option<serde_json::Value> {
        super::format::response_format(
            self.response_format_in_use(),
            self.cfg.plan_schema.as_ref(),
            request,
        )
    }

    fn headers(&self, request: &ChatRequest) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(key) = &self.cfg.api_key
            && let Ok(mut v) = HeaderValue::from_str(&format!("Bearer {}", key.expose()))
        {
            // Sensitive values are hidden from every Debug print of the request.
            v.set_sensitive(true);
            h.insert(AUTHORIZATION, v);
        }
        if let Some(tp) = request
            .traceparent
            .as_deref()
            .and_then(|t| HeaderValue::from_str(t).ok())
        {
            h.insert("traceparent", tp);
        }
        // The user's own headers (`loadtest -H`) go last: they may replace any of the above.
        for (name, value) in &self.cfg.extra_headers {
            h.insert(name.clone(), value.clone());
        }
        if self.cfg.context_headers {
            if let Ok(v) = HeaderValue::from_str(request.role.as_str()) {
                h.insert(context_header::ROLE_HEADER, v);
            }
            h.insert(
                context_header::ATTEMPT_HEADER,
                HeaderValue::from(request.attempt),
            );
            if let Some(v) = context_header::encode(&request.context)
                .and_then(|v| HeaderValue::from_str(&v).ok())
            {
                h.insert(context_header::CONTEXT_HEADER, v);
            }
        }
        h
    }

    /// One attempt within the limiter (its estimate settled with what was used) and the
    /// whole-request timeout.
    async fn limited_attempt(
        &self,
        request: &ChatRequest,
        model: &str,
        estimate: u64,
        retry: u32,
    ) -> Result<ChatResponse, Failure> {
        let t0 = Instant::now();
        // Waiting for a server slot is queueing, not a stall: it happens before the request
        // is sent, so neither the idle nor the request timeout runs.
        let _slot = self
            .slots
            .acquire(
                &self.http,
                self.cfg.timeouts.connect.max(Duration::from_secs(5)),
            )
            .await;
        let permit = self.limiter.acquire(estimate).await;
        // Every attempt, retries included, is admitted by the shared limits too: the
        // provider counts each one.
        let admitted = match &self.cfg.gate {
            Some(gate) => Some(gate.admit(estimate).await),
            None => None,
        };
        let queued = t0.elapsed();
        self.requests.fetch_add(1, Ordering::Relaxed);
        let outcome = tokio::time::timeout(self.cfg.timeouts.request, self.attempt(request, model))
            .await
            .unwrap_or_else(|_| {
                Err(retryable(
                    RetryCause::Stalled,
                    format!(
                        "request timed out after {}s",
                        self.cfg.timeouts.request.as_secs_f64()
                    ),
                ))
            });
        let mut outcome = outcome;
        if let Ok(r) = &mut outcome
            && let Some(t) = &mut r.timing
        {
            t.queued = queued;
            t.retries = retry;
        }
        let used = outcome.as_ref().map(|r| r.usage.total()).unwrap_or(0);
        self.limiter.settle(permit.charged, used);
        drop(permit);
        if let Some(admitted) = admitted {
            admitted
                .settle(outcome.as_ref().ok().map(|r| r.usage.total()))
                .await;
        }
        tracing::debug!(
            provider = %self.cfg.provider,
            model = %model,
            role = request.role.as_str(),
            retry,
            ok = outcome.is_ok(),
            ms = t0.elapsed().as_millis() as u64,
            "chat completion attempt"
        );
        outcome
    }

    /// One HTTP attempt, start to end.
    async fn attempt(&self, request: &ChatRequest, model: &str) -> Result<ChatResponse, Failure> {
        let stream = self.cfg.stream;
        let body = ChatBody {
            model,
            messages: &request.messages,
            stream,
            stream_options: stream.then(|| json!({"include_usage": true})),
            temperature: self.cfg.temperature,
            max_tokens: request.max_tokens.or(self.cfg.max_tokens),
            response_format: self.response_format(request),
            tools: wire::tools(&request.tools),
        };
        let sent = Instant::now();
        let resp = self.send(request, &body).await?;
        // A stream unless the server says it sent one JSON body (some servers ignore
        // `stream: true`; some stream without a content type).
        let is_sse = stream
            && !resp
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|ct| ct.starts_with("application/json"));
        let sink = request.on_delta.as_ref();
        let (a, mut timing) = if is_sse {
            self.read_stream(resp, sent, sink).await?
        } else {
            let a = self.read_body(resp).await?;
            if let Some(sink) = sink
                && !a.content.is_empty()
            {
                sink.emit(StreamEvent::Delta(&a.content));
            }
            let at = sent.elapsed();
            let timing = CallTiming {
                ttft: at,
                e2e: at,
                ..CallTiming::default()
            };
            (a, timing)
        };
        timing.e2e = sent.elapsed();
        timing.usage_estimated = a.usage.is_none();
        timing.server = a.timings.clone().map(Box::new);
        let usage = usage_of(request, a.usage, &a.content, &a.reasoning);
        // The model is the one asked for, not the name the server answers with: llama.cpp
        // answers with its model file's path, which no price table or alias would name.
        if let Some(served) = a.model.as_deref().filter(|m| *m != model) {
            tracing::debug!(
                model,
                served,
                "the server answered under another model name"
            );
        }
        Ok(ChatResponse {
            content: a.content,
            usage,
            model: model.to_owned(),
            finish_reason: a.finish_reason,
            tool_calls: a.tool_calls,
            timing: Some(timing),
        })
    }

    /// The request sent and its response headers, when the status is a success.
    async fn send(
        &self,
        request: &ChatRequest,
        body: &ChatBody<'_>,
    ) -> Result<reqwest::Response, Failure> {
        let send = self
            .http
            .post(&self.url)
            .headers(self.headers(request))
            .json(body)
            .send();
        let idle = self.cfg.timeouts.idle;
        let resp = if body.stream {
            tokio::time::timeout(idle, send).await.map_err(|_| {
                retryable(
                    RetryCause::Stalled,
                    format!("no response headers within {}s", idle.as_secs_f64()),
                )
            })?
        } else {
            send.await
        }
        .map_err(|e| {
            retryable(
                RetryCause::Connection,
                format!("request failed: {}", transport_error(&e)),
            )
        })?;
        if !resp.status().is_success() {
            return Err(self
                .status_failure(resp, body.response_format.is_some())
                .await);
        }
        Ok(resp)
    }

    /// One JSON body: non-streaming, or a server that ignored `stream: true`.
    async fn read_body(&self, resp: reqwest::Response) -> Result<StreamAnswer, Failure> {
        let idle = self.cfg.timeouts.idle;
        let bytes = tokio::time::timeout(idle.max(self.cfg.timeouts.request), resp.bytes())
            .await
            .map_err(|_| retryable(RetryCause::Stalled, "response body timed out"))?
            .map_err(|e| {
                retryable(
                    RetryCause::Connection,
                    format!("reading the body failed: {}", transport_error(&e)),
                )
            })?;
        let c: Completion = serde_json::from_slice(&bytes)
            .map_err(|e| retryable(RetryCause::Malformed, format!("malformed JSON body ({e})")))?;
        let choice = c
            .choices
            .into_iter()
            .next()
            .ok_or_else(|| retryable(RetryCause::Malformed, "the reply has no choices"))?;
        let msg = choice.message.unwrap_or(wire::Message {
            content: None,
            reasoning_content: None,
            reasoning: None,
            tool_calls: Vec::new(),
        });
        Ok(StreamAnswer {
            content: msg.content.unwrap_or_default(),
            reasoning: msg.reasoning_content.or(msg.reasoning).unwrap_or_default(),
            finish_reason: choice.finish_reason,
            usage: c.usage,
            model: c.model,
            done: true,
            tool_calls: msg.tool_calls,
            timings: c.timings,
        })
    }

    /// Reads an SSE answer, passing new content to `sink` and timing every chunk that
    /// carried output (content, reasoning or tool-call fragments) from `sent`.
    async fn read_stream(
        &self,
        resp: reqwest::Response,
        sent: Instant,
        sink: Option<&DeltaSink>,
    ) -> Result<(StreamAnswer, CallTiming), Failure> {
        let idle = self.cfg.timeouts.idle;
        let mut body = resp.bytes_stream();
        let mut dec = SseDecoder::default();
        let mut ans = StreamAnswer::default();
        let mut timing = CallTiming {
            streamed: true,
            ..CallTiming::default()
        };
        let mut first = true;
        let mut apply = |ans: &mut StreamAnswer, data: &str| {
            let (content_before, output_before) = (ans.content.len(), output_len(ans));
            let applied = ans.apply(data);
            if ans.content.len() > content_before && timing.first_content.is_none() {
                timing.first_content = Some(sent.elapsed());
            }
            if output_len(ans) > output_before {
                let at = sent.elapsed();
                if std::mem::take(&mut first) {
                    timing.ttft = at;
                } else {
                    timing.chunks.push(at);
                }
            }
            if let Some(sink) = sink
                && ans.content.len() > content_before
            {
                sink.emit(StreamEvent::Delta(&ans.content[content_before..]));
            }
            applied.map_err(|e| match e {
                ChunkError::Malformed(m) => {
                    retryable(RetryCause::Malformed, format!("malformed stream: {m}"))
                }
                ChunkError::Server(m) => retryable(
                    RetryCause::ServerError,
                    format!(
                        "server error in stream: {}",
                        scrub(&m, self.cfg.api_key.as_ref())
                    ),
                ),
            })
        };
        'read: loop {
            let next = tokio::time::timeout(idle, body.next()).await.map_err(|_| {
                retryable(
                    RetryCause::Stalled,
                    format!(
                        "stream stalled: nothing received for {}s",
                        idle.as_secs_f64()
                    ),
                )
            })?;
            match next {
                None => break,
                Some(Err(e)) => {
                    return Err(retryable(
                        RetryCause::Connection,
                        format!("stream broke: {}", transport_error(&e)),
                    ));
                }
                Some(Ok(bytes)) => {
                    // Each event is applied as the decoder finds it, borrowed from the read.
                    let flow = dec.feed(&bytes, |data| match apply(&mut ans, data) {
                        Err(e) => ControlFlow::Break(Err(e)),
                        Ok(()) if ans.done => ControlFlow::Break(Ok(())),
                        Ok(()) => ControlFlow::Continue(()),
                    });
                    match flow {
                        ControlFlow::Break(Err(e)) => return Err(e),
                        ControlFlow::Break(Ok(())) => break 'read,
                        ControlFlow::Continue(()) => {}
                    }
                }
            }
        }
        if !ans.done
            && let ControlFlow::Break(e) = dec.end(|data| match apply(&mut ans, data) {
                Err(e) => ControlFlow::Break(e),
                Ok(()) => ControlFlow::Continue(()),
            })
        {
            return Err(e);
        }
        if !ans.complete() {
            return Err(retryable(
                RetryCause::Truncated,
                "stream ended before the answer was complete (no finish_reason, no [DONE])",
            ));
        }
        Ok((ans, timing))
    }

    async fn status_failure(&self, resp: reqwest::Response, sent_format: bool) -> Failure {
        let status = resp.status();
        let retry_after = resp
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, SystemTime::now()));
        let body = match tokio::time::timeout(self.cfg.timeouts.idle, resp.bytes()).await {
            Ok(Ok(b)) => String::from_utf8_lossy(&b[..b.len().min(MAX_ERROR_BODY)]).into_owned(),
            _ => String::new(),
        };
        let detail = scrub(&wire::body_message(&body), self.cfg.api_key.as_ref());
        let code = status.as_u16();
        let message = format!(
            "HTTP {} {}: {detail}",
            code,
            status.canonical_reason().unwrap_or("")
        );
        match code {
            408 | 409 | 429 | 500..=599 => Failure::Retryable {
                message,
                retry_after,
                status: Some(code),
                cause: if code == 429 {
                    RetryCause::RateLimited
                } else {
                    RetryCause::ServerError
                },
            },
            400 if sent_format
                && (detail.contains("response_format") || detail.contains("json_schema"))
                && self.format_downgrade.load(Ordering::Relaxed) < 2 =>
            {
                let was = self.format_downgrade.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(
                    provider = %self.cfg.provider,
                    level = was + 1,
                    "the server rejected response_format; asking for a simpler one"
                );
                Failure::Downgrade
            }
            400 | 413 if crate::error::names_context_overflow(&detail) => {
                Failure::Fatal(crate::error::context_overflow_message(&message))
            }
            401 => Failure::Fatal(format!(
                "{message} (check the API key: PLANWAVE_LLM_API_KEY, OPENAI_API_KEY or [llm] api_key_env)"
            )),
            404 => Failure::Fatal(format!(
                "{message} (check the base URL, which should end in /v1, and the model name)"
            )),
            _ => Failure::Fatal(message),
        }
    }
}

/// A reqwest error as text with its causes (connection refused, timed out, ...).
fn transport_error(e: &reqwest::Error) -> String {
    use std::error::Error;
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(cause) = src {
        s.push_str(": ");
        s.push_str(&cause.to_string());
        src = cause.source();
    }
    // reqwest names the URL it was sending to, credentials included.
    planwave_redact::redact_urls_in(&s).into_owned()
}

#[async_trait]
impl LlmProvider for OpenAiProvider {
    fn model_for(&self, role: AgentRole) -> String {
        self.cfg.models.for_role(role).to_owned()
    }

    fn info(&self) -> ProviderInfo {
        ProviderInfo {
            provider: self.cfg.provider.clone(),
            model: self.cfg.models.for_role(AgentRole::Subagent).to_owned(),
            simulated: false,
            base_url: Some(planwave_redact::redact_url(&self.cfg.base_url).into_owned()),
            response_format: Some(self.response_format_in_use().as_str().to_owned()),
        }
    }

    fn retry_counts(&self) -> std::collections::BTreeMap<String, u64> {
        RetryCause::ALL
            .iter()
            .zip(&self.retry_causes)
            .map(|(c, n)| (c.as_str().to_owned(), n.load(Ordering::Relaxed)))
            .filter(|(_, n)| *n > 0)
            .collect()
    }

    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        let model = self.cfg.models.for_role(request.role).to_owned();
        let estimate = request
            .messages
            .iter()
            .map(|m| estimate_tokens(&m.content))
            .sum::<u64>()
            + request
                .max_tokens
                .or(self.cfg.max_tokens)
                .map(u64::from)
                .unwrap_or(DEFAULT_COMPLETION_ESTIMATE);
        let mut retry = 0u32;
        let mut downgrades = 0u32;
        loop {
            let outcome = self
                .limited_attempt(&request, &model, estimate, retry)
                .await;
            let (message, retry_after, status, cause) = match outcome {
                Ok(r) => {
                    self.budget.on_success();
                    return Ok(r);
                }
                Err(Failure::Downgrade) if downgrades < 2 => {
                    downgrades += 1;
                    continue;
                }
                Err(Failure::Downgrade) => {
                    return Err(self.error(
                        &model,
                        "the server rejected response_format".into(),
                        GiveUp::Fatal,
                    ));
                }
                Err(Failure::Fatal(m)) => return Err(self.error(&model, m, GiveUp::Fatal)),
                Err(Failure::Retryable {
                    message,
                    retry_after,
                    status,
                    cause,
                }) => (message, retry_after, status, cause),
            };
            if let Some(ra) = retry_after
                && ra > self.cfg.retry.max_retry_after
            {
                return Err(self.error(
                    &model,
                    format!(
                        "{message}; Retry-After {}s is longer than this client waits",
                        ra.as_secs()
                    ),
                    GiveUp::Transient {
                        retry_after: Some(ra),
                    },
                ));
            }
            if retry >= self.cfg.retry.max_retries {
                let tries = retry + 1;
                return Err(self.error(
                    &model,
                    format!("{message} (gave up after {tries} attempt(s))"),
                    GiveUp::Transient { retry_after },
                ));
            }
            if !self.budget.try_spend() {
                return Err(self.error(
                    &model,
                    format!("{message} (not retried: the client's retry budget is spent)"),
                    GiveUp::Transient { retry_after },
                ));
            }
            retry += 1;
            self.retries.fetch_add(1, Ordering::Relaxed);
            // Whatever the failed attempt streamed is void.
            if let Some(sink) = &request.on_delta {
                sink.emit(StreamEvent::Restart);
            }
            if let Some(i) = RetryCause::ALL.iter().position(|c| *c == cause) {
                self.retry_causes[i].fetch_add(1, Ordering::Relaxed);
            }
            if status == Some(429)
                && let Some(ra) = retry_after
            {
                self.limiter.cool_down(ra);
            }
            let delay = backoff_delay(&self.cfg.retry, retry, self.unit(), retry_after);
            tracing::info!(
                provider = %self.cfg.provider,
                model = %model,
                retry,
                delay_ms = delay.as_millis() as u64,
                "retrying: {message}"
            );
            self.cfg.sleeper.sleep(delay).await;
        }
    }
}

/// How much output an answer holds so far, to tell chunks that carried tokens from
/// bookkeeping chunks (role, finish, usage).
fn output_len(a: &StreamAnswer) -> usize {
    a.content.len()
        + a.reasoning.len()
        + a.tool_calls
            .iter()
            .map(|c| c.id.len() + c.function.name.len() + c.function.arguments.len())
            .sum::<usize>()
}

/// The usage the server reported (reasoning split out of completion when it gave no
/// breakdown), else estimated from the text.
fn usage_of(
    request: &ChatRequest,
    reported: Option<wire::WireUsage>,
    content: &str,
    reasoning: &str,
) -> Usage {
    match reported {
        Some(u) => {
            let mut usage = u.to_usage();
            if usage.reasoning_tokens == 0 && !reasoning.is_empty() {
                // Reported usage without a breakdown: the reasoning is inside completion.
                let r = estimate_tokens(reasoning).min(usage.completion_tokens);
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
            estimate_tokens(content),
            estimate_tokens(reasoning),
        ),
    }
}
