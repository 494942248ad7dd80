//! The HTTP server: routing, authentication, fault injection and the OpenAI wire format.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use planwave_llm::openai::context_header;
use planwave_llm::{
    AgentRole, ApiKey, ChatMessage, ChatRequest, LlmError, MessageRole, RequestContext,
};
use planwave_plan::Lang;
use planwave_sim::{SIM_MODEL, ServerStats, SimConfig, SimProvider};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::faults::{Fault, FaultConfig};
use crate::serving::{ServingConfig, Slots};
use crate::stream::{paced_stream, stream_response};

#[derive(Clone, Debug, Default)]
pub struct SimServerConfig {
    pub sim: SimConfig,
    pub faults: FaultConfig,
    /// Concurrency limit and prefill cost (pacing is `sim.token_rate`).
    pub serving: ServingConfig,
    /// When set, requests must carry `Authorization: Bearer <key>`.
    pub api_key: Option<ApiKey>,
    /// The simulated Batch API (`/v1/files`, `/v1/batches`).
    pub batch: crate::batch::BatchSimConfig,
    /// Answer without `usage`, as some servers and gateways do (clients count themselves).
    pub no_usage: bool,
}

pub(crate) struct AppState {
    pub(crate) cfg: SimServerConfig,
    pub(crate) sim: SimProvider,
    pub(crate) counter: AtomicU64,
    pub(crate) stats: Mutex<ServerStats>,
    subagents_in_flight: AtomicU64,
    pub(crate) slots: Slots,
    /// `GET /metrics` (metrics.rs).
    pub(crate) metrics: crate::metrics::Metrics,
    pub(crate) prefix: crate::prefix::ServerCache,
    /// `GET /planwave/arrivals` (arrivals.rs).
    pub(crate) arrivals: crate::arrivals::Arrivals,
}

impl AppState {
    fn new(cfg: SimServerConfig) -> AppState {
        // The server looks prompts up itself, before prefill: not again in the simulator.
        let mut sim = cfg.sim.clone();
        let prefix = crate::prefix::ServerCache::new(sim.prefix_cache.take());
        AppState {
            sim: SimProvider::new(sim),
            prefix,
            slots: Slots::new(&cfg.serving),
            metrics: crate::metrics::Metrics::new(SIM_MODEL, cfg.serving.max_concurrency),
            cfg,
            counter: AtomicU64::new(0),
            stats: Mutex::new(ServerStats::default()),
            subagents_in_flight: AtomicU64::new(0),
            arrivals: crate::arrivals::Arrivals::new(),
        }
    }

    /// A completed answer, in `/planwave/stats` and `/metrics`.
    pub(crate) fn answered(&self, t: &crate::serving::AnswerTiming, done: Instant) {
        self.metrics.answered(&t.as_answered(done));
        self.arrivals
            .answered(t.request, t.prompt_tokens + t.output_tokens);
        if let Ok(mut s) = self.stats.lock() {
            t.record(&mut s.serving, done);
        }
    }

    fn snapshot(&self) -> ServerStats {
        let mut s = self.stats.lock().map(|s| s.clone()).unwrap_or_default();
        s.serving.max_in_flight = self.slots.max_in_flight();
        s.serving.admitted = self.slots.admitted();
        s.prefix_cache = self.prefix.stats();
        s
    }
}

/// Counts a subagent request as in flight until dropped.
pub(crate) struct InFlight<'a>(&'a AtomicU64);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

pub fn router(cfg: SimServerConfig) -> Router {
    router_with_state(Arc::new(AppState::new(cfg)))
}

fn router_with_state(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/chat/completions", post(chat))
        .route("/v1/models", get(models))
        .route("/planwave/stats", get(stats))
        .route("/planwave/arrivals", get(crate::arrivals::serve))
        .route("/health", get(crate::metrics::health))
        .route("/v1/embeddings", post(crate::embeddings::embeddings))
        .route("/v1/completions", post(crate::completions::completions))
        .route("/metrics", get(crate::metrics::serve))
        .merge(crate::batch::routes(state.clone()))
        .with_state(state)
}

/// A running server; dropping it does not stop it, [`SimServer::shutdown`] does.
pub struct SimServer {
    addr: SocketAddr,
    state: Arc<AppState>,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

/// Connections the kernel queues for the server before it accepts them (it caps this at
/// `net.core.somaxconn`). `TcpListener::bind` asks for 1,024: a load generator opening
/// 1,000 connections at once overflowed that queue, the kernel dropped hundreds of SYNs and
/// each was retried a second later (`oha -c 1000` measured ~9 k requests/s, and ~33 k in the
/// runs where nothing was dropped).
const ACCEPT_BACKLOG: u32 = 8192;

/// A listener on `addr` with [`ACCEPT_BACKLOG`], otherwise as `TcpListener::bind` makes it.
fn listen(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    // As `TcpListener::bind` does on Unix: a restarted server can take its port back.
    #[cfg(unix)]
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(ACCEPT_BACKLOG)
}

impl SimServer {
    /// Binds `addr` (use port 0 for a free port) and starts serving.
    pub async fn start(addr: SocketAddr, cfg: SimServerConfig) -> std::io::Result<SimServer> {
        let listener = listen(addr)?;
        let addr = listener.local_addr()?;
        let state = Arc::new(AppState::new(cfg));
        let app = router_with_state(state.clone());
        // Small SSE writes must not wait for Nagle + delayed ACK (40 ms a chunk otherwise).
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await
        });
        Ok(SimServer {
            addr,
            state,
            stop: Some(stop),
            task,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR/v1`, what `--llm-base-url` takes.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn stats(&self) -> ServerStats {
        self.state.snapshot()
    }

    /// Stops accepting connections and waits for open ones to finish. Stalled streams are
    /// not waited for: the task is aborted after `grace`.
    pub async fn shutdown(mut self, grace: Duration) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if tokio::time::timeout(grace, &mut self.task).await.is_err() {
            self.task.abort();
        }
    }
}

/// As vLLM lists its served model (clients read `max_model_len` to size prompts). The
/// simulator accepts any prompt, and refuses a `max_tokens` past this context.
async fn models() -> impl IntoResponse {
    axum::Json(json!({
        "object": "list",
        "data": [{
            "id": SIM_MODEL, "object": "model", "created": 0, "owned_by": "planwave",
            "root": SIM_MODEL, "parent": null, "max_model_len": planwave_sim::MAX_MODEL_LEN, "permission": []
        }]
    }))
}

async fn stats(State(st): State<Arc<AppState>>) -> impl IntoResponse {
    axum::Json(st.snapshot())
}

#[derive(Debug, Deserialize)]
pub(crate) struct CompletionRequest {
    #[serde(default)]
    model: Option<String>,
    /// Content as a string or an array of parts (wire.rs).
    #[serde(default, deserialize_with = "crate::wire::messages")]
    messages: Vec<ChatMessage>,
    /// The bound on the answer's tokens (`max_completion_tokens` is OpenAI's newer name).
    #[serde(default)]
    max_tokens: Option<u64>,
    #[serde(default)]
    max_completion_tokens: Option<u64>,
    /// vLLM's extension: write exactly the bound, as benchmark clients ask.
    #[serde(default)]
    ignore_eos: bool,
    #[serde(default)]
    stream: bool,
    #[serde(default)]
    stream_options: Option<Value>,
    #[serde(default)]
    response_format: Option<Value>,
    /// Native tool calling: `[{"type": "function", "function": {name, description, parameters}}]`.
    #[serde(default)]
    tools: Vec<Value>,
}

pub(crate) fn error(status: StatusCode, message: &str, kind: &str) -> Response {
    (
        status,
        axum::Json(json!({"error": {"message": message, "type": kind, "code": Value::Null}})),
    )
        .into_response()
}

/// OpenAI echoes a masked key in its 401; so does the simulator, so clients are tested
/// against scrubbing it.
fn masked(key: &str) -> String {
    let chars: Vec<char> = key.chars().collect();
    if chars.len() < 12 {
        return "****".into();
    }
    let head: String = chars[..8].iter().collect();
    let tail: String = chars[chars.len() - 4..].iter().collect();
    format!("{head}****{tail}")
}

pub(crate) fn header_str<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

async fn chat(State(st): State<Arc<AppState>>, headers: HeaderMap, body: Bytes) -> Response {
    let received = Instant::now();
    let n = st.counter.fetch_add(1, Ordering::Relaxed);
    let fault = st.cfg.faults.pick(n);
    let role = header_str(&headers, context_header::ROLE_HEADER).unwrap_or("none");
    st.arrivals
        .arrived(n, received, role, &format!("{fault:?}").to_lowercase());
    let _in_flight = count_request(&st, &headers, fault);
    if let Some(refused) = check_auth(&st, &headers, fault) {
        return refused;
    }
    let req: CompletionRequest = match serde_json::from_slice(&body) {
        Ok(b) => b,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                &format!("invalid JSON body: {e}"),
                "invalid_request_error",
            );
        }
    };
    if let Some(problem) = planwave_sim::max_tokens_problem(req.length().max_tokens) {
        return error(StatusCode::BAD_REQUEST, &problem, "invalid_request_error");
    }
    if let Some(faulted) = scripted_fault(&st, fault, req.stream).await {
        return faulted;
    }
    let chat = to_chat_request(&headers, &req);
    let model = req.model.clone().unwrap_or_else(|| SIM_MODEL.to_owned());
    let id = format!("chatcmpl-sim-{n}");
    // Queue for a slot, then prefill: both come before the first token, as on a real server.
    let slot = st.slots.admit().await;
    let admitted = Instant::now();
    let prompt_chars: usize = chat
        .messages
        .iter()
        .map(|m| m.content.chars().count())
        .sum();
    let prompt_tokens = (prompt_chars as u64).div_ceil(3).max(1);
    let cache = st.prefix.lookup(&chat.messages);
    let uncached = (prompt_chars.saturating_sub(cache.cached_chars) as u64).div_ceil(3);
    let prefill = crate::serving::prefill(&st.cfg.serving, uncached);
    if !prefill.is_zero() {
        planwave_sim::timer::sleep_until(admitted + prefill).await;
    }
    let timing = crate::serving::AnswerTiming {
        request: n,
        received,
        admitted,
        first_token: None,
        prompt_tokens,
        cached_tokens: cache.cached_tokens.min(prompt_tokens),
        output_tokens: 0,
        role: chat.role.as_str(),
    };
    // Streams without a mid-stream fault are sent as the simulator delivers them (paced).
    if req.stream && matches!(fault, Fault::Ok | Fault::SlowFirstByte) {
        return paced_stream(st.clone(), &req, chat, id, model, slot, timing).await;
    }
    let answer = match crate::prefix::with_cached(
        st.sim.chat_bounded(chat, req.length()).await,
        timing.cached_tokens,
    ) {
        Ok(a) => a,
        Err(e) => return error_response(e),
    };
    st.answered(
        &crate::serving::AnswerTiming {
            output_tokens: answer.usage.completion_tokens,
            ..timing
        },
        Instant::now(),
    );
    drop(slot);
    answer_response(&st, &req, id, model, answer, fault)
}

/// The simulator's refusal as an HTTP error.
pub(crate) fn error_response(e: LlmError) -> Response {
    match e {
        LlmError::Transient { message, .. } => {
            error(StatusCode::SERVICE_UNAVAILABLE, &message, "server_error")
        }
        LlmError::Fatal { message, .. } | LlmError::Budget { message } => {
            error(StatusCode::BAD_REQUEST, &message, "invalid_request_error")
        }
    }
}

/// Counts the request in `/planwave/stats`; the guard counts a subagent request in flight
/// for as long as it lives.
pub(crate) fn count_request<'a>(
    st: &'a AppState,
    headers: &HeaderMap,
    fault: Fault,
) -> Option<InFlight<'a>> {
    let role_header = header_str(headers, context_header::ROLE_HEADER);
    let task = header_str(headers, context_header::CONTEXT_HEADER)
        .and_then(context_header::decode)
        .and_then(|c| c.task_id);
    let in_flight = (role_header == Some("subagent")).then(|| {
        let now = st.subagents_in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        if let Ok(mut s) = st.stats.lock() {
            s.max_subagents_in_flight = s.max_subagents_in_flight.max(now);
        }
        InFlight(&st.subagents_in_flight)
    });
    if let Ok(mut s) = st.stats.lock() {
        if let Some(task) = task {
            *s.tasks.entry(task).or_default() += 1;
        }
        s.requests += 1;
        *s.faults
            .entry(format!("{fault:?}").to_lowercase())
            .or_default() += 1;
        *s.roles
            .entry(role_header.unwrap_or("none").to_owned())
            .or_default() += 1;
        s.authorized += u64::from(headers.contains_key(header::AUTHORIZATION));
        s.traced += u64::from(headers.contains_key("traceparent"));
    }
    in_flight
}

/// A refusal when the key is wrong (or an unauthorized answer is scripted).
pub(crate) fn check_auth(st: &AppState, headers: &HeaderMap, fault: Fault) -> Option<Response> {
    let bearer = header_str(headers, header::AUTHORIZATION.as_str())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    let wrong_key = st
        .cfg
        .api_key
        .as_ref()
        .is_some_and(|k| bearer != k.expose());
    (wrong_key || fault == Fault::Unauthorized).then(|| {
        error(
            StatusCode::UNAUTHORIZED,
            &format!("Incorrect API key provided: {}.", masked(bearer)),
            "invalid_request_error",
        )
    })
}

/// The scripted fault's answer, when it replaces the model's (after a slow first byte, the
/// model answers).
async fn scripted_fault(st: &AppState, fault: Fault, stream: bool) -> Option<Response> {
    match fault {
        Fault::RateLimit => {
            let mut r = error(
                StatusCode::TOO_MANY_REQUESTS,
                "Rate limit reached (simulated)",
                "rate_limit_exceeded",
            );
            let secs = st.cfg.faults.retry_after.as_secs_f64();
            if let Ok(v) = HeaderValue::from_str(&format!("{secs}")) {
                r.headers_mut().insert(header::RETRY_AFTER, v);
            }
            Some(r)
        }
        Fault::ServerError => Some(error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "The server had an error while processing your request (simulated)",
            "server_error",
        )),
        Fault::SlowFirstByte => {
            tokio::time::sleep(st.cfg.faults.first_byte_delay).await;
            None
        }
        Fault::Reset => Some(reset_response(stream)),
        _ => None,
    }
}

/// The model's answer in the OpenAI wire format: one JSON body, or an SSE stream.
fn answer_response(
    st: &AppState,
    req: &CompletionRequest,
    id: String,
    model: String,
    answer: planwave_llm::ChatResponse,
    fault: Fault,
) -> Response {
    let usage = usage_json(&answer);
    if !req.stream {
        if fault == Fault::Malformed {
            return (
                StatusCode::OK,
                [(header::CONTENT_TYPE, "application/json")],
                "{\"id\": \"broken\", \"choices\": [{\"message\": {\"content\": \"cut",
            )
                .into_response();
        }
        let mut body = json!({
            "id": id,
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{
                "index": 0,
                "message": message(&answer),
                "finish_reason": answer.finish_reason.as_deref().unwrap_or("stop")
            }],
            "usage": usage
        });
        if st.cfg.no_usage
            && let Some(o) = body.as_object_mut()
        {
            o.remove("usage");
        }
        return axum::Json(body).into_response();
    }
    let include_usage = req.include_usage() && !st.cfg.no_usage;
    let tool_calls = tool_call_deltas(&answer);
    stream_response(
        id,
        model,
        answer.content,
        tool_calls,
        include_usage.then_some(usage),
        fault,
        st.cfg.faults.stall,
    )
}

pub(crate) fn usage_json(answer: &planwave_llm::ChatResponse) -> Value {
    json!({
        "prompt_tokens": answer.usage.prompt_tokens,
        "completion_tokens": answer.usage.completion_tokens + answer.usage.reasoning_tokens,
        "total_tokens": answer.usage.total(),
        "prompt_tokens_details": {"cached_tokens": answer.usage.cached_tokens},
        "completion_tokens_details": {"reasoning_tokens": answer.usage.reasoning_tokens}
    })
}

pub(crate) fn tool_call_deltas(answer: &planwave_llm::ChatResponse) -> Vec<Value> {
    answer
        .tool_calls
        .iter()
        .enumerate()
        .map(|(i, c)| json!({"index": i, "id": c.id, "type": "function", "function": c.function}))
        .collect()
}

impl CompletionRequest {
    pub(crate) fn length(&self) -> planwave_sim::AnswerLength {
        let max_tokens = self.max_completion_tokens.or(self.max_tokens);
        planwave_sim::AnswerLength {
            max_tokens,
            exact: self.ignore_eos && max_tokens.is_some(),
        }
    }

    pub(crate) fn include_usage(&self) -> bool {
        self.stream_options
            .as_ref()
            .and_then(|o| o.get("include_usage"))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }
}

/// The request as the simulator sees it: from the `x-planwave-*` headers when present, else
/// guessed like a generic model would (JSON asked for: planner; otherwise a writer).
fn to_chat_request(headers: &HeaderMap, req: &CompletionRequest) -> ChatRequest {
    let last_user = req
        .messages
        .iter()
        .rev()
        .find(|m| m.role == MessageRole::User)
        .map(|m| m.content.clone())
        .unwrap_or_default();
    let role = header_str(headers, context_header::ROLE_HEADER)
        .and_then(context_header::parse_role)
        .unwrap_or(if req.response_format.is_some() {
            AgentRole::Planner
        } else {
            AgentRole::Subagent
        });
    let attempt = header_str(headers, context_header::ATTEMPT_HEADER)
        .and_then(|a| a.trim().parse().ok())
        .unwrap_or(1);
    let context = request_context(headers, &last_user);
    ChatRequest {
        role,
        messages: req.messages.clone(),
        attempt,
        context,
        traceparent: header_str(headers, "traceparent").map(str::to_owned),
        tools: req
            .tools
            .iter()
            .filter_map(|t| serde_json::from_value(t.get("function")?.clone()).ok())
            .collect(),
        on_delta: None,
        max_tokens: None,
    }
}

/// Headers and a first few bytes, then a body error: hyper aborts the connection, so the
/// client sees the connection drop in the middle of the answer.
fn reset_response(stream: bool) -> Response {
    let first: &'static str = if stream {
        ": keep-alive\n\n"
    } else {
        "{\"id\": \"chatcmpl-sim-reset\", "
    };
    let body = futures::stream::iter([
        Ok::<Bytes, std::io::Error>(Bytes::from_static(first.as_bytes())),
        Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "connection reset (simulated)",
        )),
    ]);
    Response::builder()
        .status(StatusCode::OK)
        .header(
            header::CONTENT_TYPE,
            if stream {
                "text/event-stream"
            } else {
                "application/json"
            },
        )
        .body(Body::from_stream(body))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// The non-streamed `message`: content, plus `tool_calls` when the model asked for any.
fn message(answer: &planwave_llm::ChatResponse) -> Value {
    let mut m = json!({"role": "assistant", "content": answer.content});
    if !answer.tool_calls.is_empty() {
        m["tool_calls"] = json!(answer.tool_calls);
    }
    m
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_request_without_context_headers_is_about_its_prompt_in_its_language() {
        let prompt = format!("分析特斯拉公司的商业模式。{}", "细节".repeat(200));
        let guessed = request_context(&HeaderMap::new(), &prompt);
        assert_eq!(guessed.lang, Lang::Zh);
        assert_eq!(guessed.topic, prompt.chars().take(200).collect::<String>());
        assert_eq!(
            guessed.task_title,
            prompt.chars().take(40).collect::<String>()
        );
        assert_eq!(guessed.task_id, None);
        // The header, when sent, is the whole answer: nothing is read from the prompt.
        let sent = RequestContext {
            topic: "Acme review".into(),
            task_id: Some("3".into()),
            ..RequestContext::default()
        };
        let mut headers = HeaderMap::new();
        let value = context_header::encode(&sent).expect("fits");
        headers.insert(
            context_header::CONTEXT_HEADER,
            value.parse().expect("header"),
        );
        assert_eq!(request_context(&headers, &prompt), sent);
    }

    /// A kernel setting or resource limit, when this machine reports it.
    fn limit(path: &str, key: Option<&str>) -> Option<u64> {
        let text = std::fs::read_to_string(path).ok()?;
        match key {
            None => text.trim().parse().ok(),
            Some(k) => text
                .lines()
                .find(|l| l.starts_with(k))?
                .split_whitespace()
                .nth(3)?
                .parse()
                .ok(),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_burst_of_connections_waits_in_the_accept_queue() {
        // More at once than `TcpListener::bind`'s queue of 1,024 holds.
        const BURST: usize = 1_500;
        let somaxconn = limit("/proc/sys/net/core/somaxconn", None).unwrap_or(0);
        let files = limit("/proc/self/limits", Some("Max open files")).unwrap_or(0);
        if somaxconn < BURST as u64 + 1 || files < 2 * BURST as u64 {
            eprintln!("skipped: somaxconn {somaxconn}, open files {files}");
            return;
        }
        let listener = listen("127.0.0.1:0".parse().expect("addr")).expect("listens");
        let addr = listener.local_addr().expect("addr");
        // Nothing accepts: every handshake must complete into the kernel's queue. A SYN the
        // queue has no room for is dropped, and its retries find the queue still full.
        let mut connects = tokio::task::JoinSet::new();
        for _ in 0..BURST {
            connects.spawn(tokio::net::TcpStream::connect(addr));
        }
        let mut open = Vec::with_capacity(BURST);
        // Only a guard against hanging: a dropped SYN is retried after 1 s, 3 s, 7 s...
        let all = tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(c) = connects.join_next().await {
                open.push(c.expect("task").expect("connects"));
            }
        })
        .await;
        assert!(
            all.is_ok(),
            "{} of {BURST} connections completed with nothing accepting",
            open.len()
        );
        drop(listener);
    }
}

/// What a request is about: the `x-planwave-*` context header when sent, else
/// [`guessed_context`] from its prompt.
pub(crate) fn request_context(headers: &HeaderMap, prompt: &str) -> RequestContext {
    header_str(headers, context_header::CONTEXT_HEADER)
        .and_then(context_header::decode)
        .unwrap_or_else(|| guessed_context(prompt))
}

/// What a request that names no context is about, read from its prompt as a model would:
/// the opening (200 characters) as its topic, the first 40 as its task's title, and the
/// language they are in. Kept because requests without the context are ordinary: other load
/// testers (aiperf, inference-perf, vLLM's benchmark) send no `x-planwave-*` headers, nor does
/// planwave with `context_headers = false` or a context too large for the header, nor a Batch
/// API line without `x_planwave`; each still gets an answer about its prompt, in its language.
pub(crate) fn guessed_context(prompt: &str) -> RequestContext {
    let topic: String = prompt.chars().take(200).collect();
    RequestContext {
        lang: Lang::detect(&topic),
        task_title: topic.chars().take(40).collect(),
        topic,
        ..RequestContext::default()
    }
}
