//! `POST /v1/completions`: the legacy text completion API that vLLM, SGLang and TGI still
//! serve and benchmark clients still use. A prompt string in, the simulator's text out, one
//! JSON body or an SSE stream of `text_completion` chunks, `max_tokens` (16 when not given,
//! as OpenAI and vLLM default) and `ignore_eos`, with usage (in a stream only when
//! `stream_options.include_usage` asks, as for chat).
//!
//! The answer goes through the same concurrency limit, prefill, prefix cache and figures
//! (`/planwave/stats`, `/metrics`) as a chat answer. Scripted faults are for chat only.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use planwave_llm::openai::context_header;
use planwave_llm::{
    AgentRole, ChatMessage, ChatRequest, ChatResponse, DeltaSink, LlmError, StreamEvent,
};
use planwave_sim::{AnswerLength, SIM_MODEL};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::faults::Fault;
use crate::server::{AppState, check_auth, count_request, error, error_response, header_str};
use crate::serving::AnswerTiming;

/// Numbers the answers' ids.
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

/// `max_tokens` when a request gives none (OpenAI's and vLLM's default for completions).
const DEFAULT_MAX_TOKENS: u64 = 16;

#[derive(Debug, Deserialize)]
struct TextRequest {
    #[serde(default)]
    model: Option<String>,
    /// A string, or an array holding one string.
    prompt: Value,
    #[serde(default)]
    max_tokens: Option<u64>,
    #[serde(default)]
    ignore_eos: bool,
    #[serde(default)]
    stream: bool,
    #[serde(default)]
    stream_options: Option<Value>,
}

impl TextRequest {
    fn prompt(&self) -> Result<&str, &'static str> {
        match &self.prompt {
            Value::String(s) => Ok(s),
            Value::Array(items) if items.len() == 1 && items[0].is_string() => {
                Ok(items[0].as_str().unwrap_or_default())
            }
            _ => Err("prompt must be a string (or an array of one string)"),
        }
    }

    fn include_usage(&self) -> bool {
        self.stream_options
            .as_ref()
            .and_then(|o| o.get("include_usage"))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }
}

pub(crate) async fn completions(
    State(st): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let received = Instant::now();
    // Numbered and logged as a chat request is: a provider's limits count every request.
    let n = st.counter.fetch_add(1, Ordering::Relaxed);
    let role = crate::server::header_str(&headers, context_header::ROLE_HEADER).unwrap_or("none");
    st.arrivals.arrived(n, received, role, "ok");
    let _in_flight = count_request(&st, &headers, Fault::Ok);
    if let Some(refused) = check_auth(&st, &headers, Fault::Ok) {
        return refused;
    }
    let bad = |m: &str| error(StatusCode::BAD_REQUEST, m, "invalid_request_error");
    let req: TextRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return bad(&format!("invalid JSON body: {e}")),
    };
    let prompt = match req.prompt() {
        Ok(p) => p.to_owned(),
        Err(m) => return bad(m),
    };
    if let Some(problem) = planwave_sim::max_tokens_problem(req.max_tokens) {
        return bad(&problem);
    }
    let chat = chat_request(&headers, prompt);
    let model = req.model.clone().unwrap_or_else(|| SIM_MODEL.to_owned());
    let length = AnswerLength {
        max_tokens: Some(req.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
        exact: req.ignore_eos,
    };
    let slot = st.slots.admit().await;
    let admitted = Instant::now();
    let prompt_chars = chat.messages[0].content.chars().count();
    let prompt_tokens = (prompt_chars as u64).div_ceil(3).max(1);
    let cache = st.prefix.lookup(&chat.messages);
    let uncached = (prompt_chars.saturating_sub(cache.cached_chars) as u64).div_ceil(3);
    let prefill = crate::serving::prefill(&st.cfg.serving, uncached);
    if !prefill.is_zero() {
        planwave_sim::timer::sleep_until(admitted + prefill).await;
    }
    let timing = AnswerTiming {
        request: n,
        received,
        admitted,
        first_token: None,
        prompt_tokens,
        cached_tokens: cache.cached_tokens.min(prompt_tokens),
        output_tokens: 0,
        role: chat.role.as_str(),
    };
    let id = format!("cmpl-sim-{}", NEXT_ID.fetch_add(1, Ordering::Relaxed));
    let usage = req.include_usage() && !st.cfg.no_usage;
    if req.stream {
        return stream(
            st.clone(),
            chat,
            length,
            Frame { id, model, usage },
            slot,
            timing,
        )
        .await;
    }
    let answer = match crate::prefix::with_cached(
        st.sim.chat_bounded(chat, length).await,
        timing.cached_tokens,
    ) {
        Ok(a) => a,
        Err(e) => return error_response(e),
    };
    st.answered(
        &AnswerTiming {
            output_tokens: answer.usage.completion_tokens,
            ..timing
        },
        Instant::now(),
    );
    drop(slot);
    let mut body = json!({
        "id": id, "object": "text_completion", "created": 0, "model": model,
        "choices": [{"index": 0, "text": answer.content, "logprobs": null,
                     "finish_reason": finish(&answer)}],
        "usage": usage_json(&answer),
    });
    if st.cfg.no_usage
        && let Some(o) = body.as_object_mut()
    {
        o.remove("usage");
    }
    axum::Json(body).into_response()
}

/// The simulator's request: the prompt as one user message; what it is about from the
/// `x-planwave-*` headers when sent, else from the prompt.
fn chat_request(headers: &HeaderMap, prompt: String) -> ChatRequest {
    let role = header_str(headers, context_header::ROLE_HEADER)
        .and_then(context_header::parse_role)
        .unwrap_or(AgentRole::Subagent);
    let context = crate::server::request_context(headers, &prompt);
    ChatRequest {
        role,
        messages: vec![ChatMessage::user(prompt)],
        attempt: 1,
        context,
        traceparent: header_str(headers, "traceparent").map(str::to_owned),
        tools: Vec::new(),
        on_delta: None,
        max_tokens: None,
    }
}

fn finish(answer: &ChatResponse) -> &str {
    answer.finish_reason.as_deref().unwrap_or("stop")
}

fn usage_json(answer: &ChatResponse) -> Value {
    let completion = answer.usage.completion_tokens + answer.usage.reasoning_tokens;
    json!({
        "prompt_tokens": answer.usage.prompt_tokens,
        "completion_tokens": completion,
        "total_tokens": answer.usage.prompt_tokens + completion,
        "prompt_tokens_details": {"cached_tokens": answer.usage.cached_tokens},
    })
}

/// What every chunk of one stream shares.
struct Frame {
    id: String,
    model: String,
    /// Send a usage chunk at the end.
    usage: bool,
}

impl Frame {
    fn chunk(&self, text: &str, finish: Option<&str>) -> Bytes {
        let c = json!({"id": self.id, "object": "text_completion", "created": 0,
                       "model": self.model,
                       "choices": [{"index": 0, "text": text, "logprobs": null,
                                    "finish_reason": finish}]});
        Bytes::from(format!("data: {c}\n\n"))
    }
}

enum Piece {
    Delta(String),
    // Boxed: an answer (with its timing) is far larger than a delta.
    Done(Result<Box<ChatResponse>, LlmError>),
}

/// A stream between two body writes.
struct Streaming {
    rx: mpsc::UnboundedReceiver<Piece>,
    pending: Option<Piece>,
    st: Arc<AppState>,
    frame: Frame,
    timing: AnswerTiming,
    /// Held until the answer ends; `None` once it has.
    slot: Option<crate::serving::Slot>,
}

impl Streaming {
    fn render(&mut self, piece: Piece, out: &mut Vec<u8>) {
        match piece {
            Piece::Delta(d) => {
                self.timing.first_token.get_or_insert_with(Instant::now);
                out.extend_from_slice(&self.frame.chunk(&d, None));
            }
            Piece::Done(Ok(answer)) => {
                out.extend_from_slice(&self.frame.chunk("", Some(finish(&answer))));
                if self.frame.usage {
                    let c = json!({"id": self.frame.id, "object": "text_completion",
                                   "created": 0, "model": self.frame.model, "choices": [],
                                   "usage": usage_json(&answer)});
                    out.extend_from_slice(format!("data: {c}\n\n").as_bytes());
                }
                out.extend_from_slice(b"data: [DONE]\n\n");
                self.timing.output_tokens = answer.usage.completion_tokens;
                self.st.answered(&self.timing, Instant::now());
                self.slot = None;
            }
            // The simulator refused after content had gone out: the stream ends short.
            Piece::Done(Err(_)) => self.slot = None,
        }
    }
}

/// The answer streamed as the simulator generates it (its token pacing), the slot held
/// until the end. A client that goes away drops the stream: the answer is not counted as
/// completed.
async fn stream(
    st: Arc<AppState>,
    mut chat: ChatRequest,
    length: AnswerLength,
    frame: Frame,
    slot: crate::serving::Slot,
    timing: AnswerTiming,
) -> Response {
    let (tx, mut rx) = mpsc::unbounded_channel::<Piece>();
    let sink_tx = tx.clone();
    chat.on_delta = Some(DeltaSink::new(move |e| {
        if let StreamEvent::Delta(d) = e {
            let _ = sink_tx.send(Piece::Delta(d.to_owned()));
        }
    }));
    let sim = st.clone();
    let cached = timing.cached_tokens;
    tokio::spawn(async move {
        let answer = crate::prefix::with_cached(sim.sim.chat_bounded(chat, length).await, cached);
        let _ = tx.send(Piece::Done(answer.map(Box::new)));
    });
    // Headers go out with the first piece, or the refusal as a status.
    let first = match rx.recv().await {
        Some(Piece::Done(Err(e))) => return error_response(e),
        Some(p) => p,
        None => return StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    };
    let state = Streaming {
        rx,
        pending: Some(first),
        st,
        frame,
        timing,
        slot: Some(slot),
    };
    let body = futures::stream::unfold(state, |mut s| async move {
        s.slot.as_ref()?;
        let piece = match s.pending.take() {
            Some(p) => p,
            None => s.rx.recv().await?,
        };
        let mut out = Vec::new();
        s.render(piece, &mut out);
        // Pieces already waiting go out in the same write.
        while s.slot.is_some()
            && let Ok(next) = s.rx.try_recv()
        {
            s.render(next, &mut out);
        }
        Some((Ok::<Bytes, Infallible>(Bytes::from(out)), s))
    });
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(body))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}
