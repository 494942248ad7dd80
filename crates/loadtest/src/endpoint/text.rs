//! The endpoints besides chat a load test can send its requests to (`--endpoint`):
//! `POST /v1/completions` (a prompt string; streamed or not; `max_tokens`, usage) and
//! `POST /v1/embeddings` (the prompt as `input`). Each request's messages become one prompt
//! (their texts joined by blank lines: a completions server applies no chat template).
//!
//! A small client of its own, as the chat client (planwave's model client) speaks only Chat
//! Completions: no transport retries (a failed request is the figure; the engine's task
//! retries still apply), the same TLS provider, the same `-H` headers and key, and the same
//! client-side timing ([`CallTiming`]) the serving figures are made of.

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use planwave_llm::openai::sse::SseDecoder;
use planwave_llm::{
    AgentRole, ApiKey, CallTiming, ChatRequest, ChatResponse, LlmError, LlmProvider, StreamEvent,
    estimate_tokens,
};
use planwave_record::{ProviderInfo, Usage};
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use serde_json::{Value, json};

/// Which API the requests go to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndpointKind {
    Chat,
    Completions,
    Embeddings,
}

impl EndpointKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            EndpointKind::Chat => "chat",
            EndpointKind::Completions => "completions",
            EndpointKind::Embeddings => "embeddings",
        }
    }
}

/// How a text endpoint client is set up.
#[derive(Clone, Debug)]
pub struct TextEndpointConfig {
    pub kind: EndpointKind,
    /// Up to and including `/v1`.
    pub base_url: String,
    pub model: String,
    /// Completions only: an SSE stream, or one JSON body.
    pub stream: bool,
    pub api_key: Option<ApiKey>,
    /// Sent with every request (`-H`), after the key: they may replace it.
    pub headers: HeaderMap,
    /// Connect, and the whole exchange of one request.
    pub connect_timeout: Duration,
    pub request_timeout: Duration,
}

/// The client of `/v1/completions` or `/v1/embeddings`.
pub struct TextEndpoint {
    cfg: TextEndpointConfig,
    url: String,
    http: reqwest::Client,
}

impl TextEndpoint {
    pub fn new(cfg: TextEndpointConfig) -> Result<TextEndpoint, LlmError> {
        let http = planwave_tls::http_client()
            .connect_timeout(cfg.connect_timeout)
            .user_agent(concat!("planwave/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| LlmError::Fatal {
                provider: "openai-compatible".into(),
                model: cfg.model.clone(),
                message: format!("cannot build the HTTP client: {e}"),
            })?;
        let path = match cfg.kind {
            EndpointKind::Embeddings => "embeddings",
            _ => "completions",
        };
        let base = cfg.base_url.trim_end_matches('/');
        let url = format!("{base}/{path}");
        Ok(TextEndpoint { cfg, url, http })
    }

    fn error(&self, message: String, transient: bool) -> LlmError {
        let message = format!(
            "at {}: {message}",
            planwave_redact::redact_url(&self.cfg.base_url)
        );
        if transient {
            LlmError::Transient {
                provider: "openai-compatible".into(),
                model: self.cfg.model.clone(),
                message,
                retry_after: None,
            }
        } else {
            LlmError::Fatal {
                provider: "openai-compatible".into(),
                model: self.cfg.model.clone(),
                message,
            }
        }
    }

    fn headers(&self) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(key) = &self.cfg.api_key
            && let Ok(mut v) = HeaderValue::from_str(&format!("Bearer {}", key.expose()))
        {
            v.set_sensitive(true);
            h.insert(AUTHORIZATION, v);
        }
        for (name, value) in &self.cfg.headers {
            h.insert(name.clone(), value.clone());
        }
        h
    }

    /// The body of one request for `prompt`.
    fn body(&self, prompt: &str, max_tokens: Option<u32>) -> Value {
        match self.cfg.kind {
            EndpointKind::Embeddings => json!({"model": self.cfg.model, "input": prompt}),
            _ => {
                let mut b = json!({"model": self.cfg.model, "prompt": prompt,
                                   "stream": self.cfg.stream});
                if self.cfg.stream {
                    b["stream_options"] = json!({"include_usage": true});
                }
                if let Some(m) = max_tokens {
                    b["max_tokens"] = m.into();
                }
                b
            }
        }
    }

    async fn send(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let prompt = request
            .messages
            .iter()
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>()
            .join("\n\n");
        let sent = Instant::now();
        let resp = self
            .http
            .post(&self.url)
            .headers(self.headers())
            .json(&self.body(&prompt, request.max_tokens))
            .send()
            .await
            .map_err(|e| self.error(format!("request failed: {}", transport(&e)), true))?;
        let status = resp.status();
        if !status.is_success() {
            let text = resp.text().await.unwrap_or_default();
            let detail: String = text.chars().take(300).collect();
            let code = status.as_u16();
            return Err(self.error(
                format!(
                    "HTTP {code} {}: {}",
                    status.canonical_reason().unwrap_or(""),
                    planwave_redact::redact_urls_in(&detail)
                ),
                code == 408 || code == 429 || code >= 500,
            ));
        }
        let streamed = self.cfg.kind == EndpointKind::Completions
            && self.cfg.stream
            && resp
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|ct| ct.starts_with("text/event-stream"));
        let mut answer = if streamed {
            self.read_stream(resp, sent, request).await?
        } else {
            self.read_body(resp, sent, request).await?
        };
        if answer.usage_missing {
            answer.usage = Usage::new(estimate_tokens(&prompt), estimate_tokens(&answer.text), 0);
        }
        answer.timing.e2e = sent.elapsed();
        answer.timing.usage_estimated = answer.usage_missing;
        Ok(ChatResponse {
            content: answer.text,
            usage: answer.usage,
            model: answer.model.unwrap_or_else(|| self.cfg.model.clone()),
            finish_reason: answer.finish_reason,
            tool_calls: Vec::new(),
            timing: Some(answer.timing),
        })
    }

    async fn read_body(
        &self,
        resp: reqwest::Response,
        sent: Instant,
        request: &ChatRequest,
    ) -> Result<Answer, LlmError> {
        let bytes = resp
            .bytes()
            .await
            .map_err(|e| self.error(format!("reading the body failed: {}", transport(&e)), true))?;
        let at = sent.elapsed();
        let v: Value = serde_json::from_slice(&bytes)
            .map_err(|e| self.error(format!("malformed JSON body ({e})"), true))?;
        let mut a = Answer::new(at, false);
        a.read_usage(&v);
        a.model = v["model"].as_str().map(str::to_owned);
        match self.cfg.kind {
            EndpointKind::Embeddings => {
                let data = v["data"].as_array().map_or(&[][..], Vec::as_slice);
                let width = data
                    .first()
                    .and_then(|d| d["embedding"].as_array())
                    .map_or(0, Vec::len);
                if data.is_empty() {
                    return Err(self.error("the reply has no embeddings".into(), true));
                }
                // The engine's section: what came back, in words (an empty one is a failure).
                a.text = format!("{} embedding(s) of {width} numbers", data.len());
                a.finish_reason = Some("stop".into());
                // Embeddings produce no output tokens.
                a.usage.completion_tokens = 0;
            }
            _ => {
                let choice = &v["choices"][0];
                a.text = choice["text"].as_str().unwrap_or_default().to_owned();
                a.finish_reason = choice["finish_reason"].as_str().map(str::to_owned);
                if let Some(sink) = &request.on_delta
                    && !a.text.is_empty()
                {
                    sink.emit(StreamEvent::Delta(&a.text));
                }
            }
        }
        Ok(a)
    }

    async fn read_stream(
        &self,
        mut resp: reqwest::Response,
        sent: Instant,
        request: &ChatRequest,
    ) -> Result<Answer, LlmError> {
        let mut dec = SseDecoder::default();
        let mut a = Answer::new(Duration::ZERO, true);
        let mut first = true;
        let mut done = false;
        while !done {
            let chunk = resp
                .chunk()
                .await
                .map_err(|e| self.error(format!("stream broke: {}", transport(&e)), true))?;
            let Some(bytes) = chunk else { break };
            let flow = dec.feed(&bytes, |data| {
                if data.trim() == "[DONE]" {
                    return ControlFlow::Break(Ok(()));
                }
                let v: Value = match serde_json::from_str(data) {
                    Ok(v) => v,
                    Err(e) => return ControlFlow::Break(Err(format!("malformed stream: {e}"))),
                };
                a.read_usage(&v);
                if a.model.is_none() {
                    a.model = v["model"].as_str().map(str::to_owned);
                }
                let choice = &v["choices"][0];
                if let Some(t) = choice["text"].as_str().filter(|t| !t.is_empty()) {
                    let at = sent.elapsed();
                    if std::mem::take(&mut first) {
                        a.timing.ttft = at;
                    } else {
                        a.timing.chunks.push(at);
                    }
                    a.text.push_str(t);
                    if let Some(sink) = &request.on_delta {
                        sink.emit(StreamEvent::Delta(t));
                    }
                }
                if let Some(f) = choice["finish_reason"].as_str() {
                    a.finish_reason = Some(f.to_owned());
                }
                ControlFlow::Continue(())
            });
            match flow {
                ControlFlow::Break(Ok(())) => done = true,
                ControlFlow::Break(Err(m)) => return Err(self.error(m, true)),
                ControlFlow::Continue(()) => {}
            }
        }
        if !done && a.finish_reason.is_none() {
            return Err(self.error(
                "stream ended before the answer was complete (no finish_reason, no [DONE])".into(),
                true,
            ));
        }
        Ok(a)
    }
}

/// An answer as it is read.
struct Answer {
    text: String,
    usage: Usage,
    usage_missing: bool,
    model: Option<String>,
    finish_reason: Option<String>,
    timing: CallTiming,
}

impl Answer {
    fn new(ttft: Duration, streamed: bool) -> Answer {
        Answer {
            text: String::new(),
            usage: Usage::default(),
            usage_missing: true,
            model: None,
            finish_reason: None,
            timing: CallTiming {
                ttft,
                streamed,
                ..CallTiming::default()
            },
        }
    }

    /// `usage` of a body or chunk, when it has one.
    fn read_usage(&mut self, v: &Value) {
        let u = &v["usage"];
        if let Some(prompt) = u["prompt_tokens"].as_u64() {
            self.usage = Usage::new(prompt, u["completion_tokens"].as_u64().unwrap_or(0), 0);
            self.usage_missing = false;
        }
    }
}

fn transport(e: &reqwest::Error) -> String {
    use std::error::Error;
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(cause) = src {
        s.push_str(": ");
        s.push_str(&cause.to_string());
        src = cause.source();
    }
    planwave_redact::redact_urls_in(&s).into_owned()
}

#[async_trait]
impl LlmProvider for TextEndpoint {
    fn info(&self) -> ProviderInfo {
        ProviderInfo {
            provider: format!("openai-compatible {}", self.cfg.kind.as_str()),
            model: self.cfg.model.clone(),
            simulated: false,
            base_url: Some(planwave_redact::redact_url(&self.cfg.base_url).into_owned()),
            response_format: None,
        }
    }

    fn model_for(&self, _role: AgentRole) -> String {
        self.cfg.model.clone()
    }

    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        match tokio::time::timeout(self.cfg.request_timeout, self.send(&request)).await {
            Ok(answer) => answer,
            Err(_) => Err(self.error(
                format!(
                    "request timed out after {}s",
                    self.cfg.request_timeout.as_secs_f64()
                ),
                true,
            )),
        }
    }
}
