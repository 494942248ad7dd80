//! `POST /v1/batches` and its life: validating, in progress (every line answered by the
//! simulator, some with an injected error), then after the completion delay finalizing and
//! completed; or expired or cancelled with only part of its lines done.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use planwave_llm::openai::context_header;
use planwave_llm::{AgentRole, ChatMessage, ChatRequest, MessageRole};
use planwave_sim::{AnswerLength, SIM_MODEL};
use serde::Deserialize;
use serde_json::{Value, json};

use super::lines::{InputLine, check};
use super::{Batch, BatchState, Counts, StoredFile, find, find_mut, not_found, now, refused};
use crate::server::{error, usage_json};

const ENDPOINT: &str = "/v1/chat/completions";
const WINDOW_SECS: u64 = 24 * 3600;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateBody {
    input_file_id: String,
    endpoint: String,
    completion_window: String,
    #[serde(default)]
    metadata: Option<serde_json::Map<String, Value>>,
}

fn bad(message: &str) -> Response {
    error(StatusCode::BAD_REQUEST, message, "invalid_request_error")
}

/// OpenAI's limits on `metadata`: 16 string values, keys up to 64 and values up to 512
/// characters.
fn check_metadata(m: &serde_json::Map<String, Value>) -> Result<(), String> {
    if m.len() > 16 {
        return Err("metadata holds at most 16 keys".into());
    }
    for (k, v) in m {
        let ok = k.chars().count() <= 64 && v.as_str().is_some_and(|s| s.chars().count() <= 512);
        if !ok {
            return Err(format!(
                "metadata {k:?}: keys up to 64 characters, string values up to 512"
            ));
        }
    }
    Ok(())
}

pub(crate) async fn create(
    State(st): State<Arc<BatchState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(r) = refused(&st, &headers) {
        return r;
    }
    let req: CreateBody = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return bad(&format!("invalid JSON body: {e}")),
    };
    if req.endpoint != ENDPOINT {
        return bad(&format!(
            "endpoint must be {ENDPOINT:?} (the simulator batches chat completions)"
        ));
    }
    if req.completion_window != "24h" {
        return bad("completion_window must be \"24h\"");
    }
    if let Some(Err(e)) = req.metadata.as_ref().map(check_metadata) {
        return bad(&e);
    }
    let (input, contexts) = {
        let s = st.store();
        (
            find(&s.files, &req.input_file_id)
                .map(|f: &StoredFile| (f.purpose.clone(), f.bytes.clone())),
            s.contexts.get(&req.input_file_id).cloned(),
        )
    };
    let Some((purpose, bytes)) = input else {
        return not_found("file: input_file_id");
    };
    if purpose != "batch" {
        return bad("the input file's purpose is not \"batch\"");
    }
    // Batches are numbered on their own (batch_sim_1, _2, ...) in order of creation.
    let seq = {
        let mut s = st.store();
        s.stats.batches_created += 1;
        s.stats.batches_created
    };
    let created = now();
    let batch = Batch {
        id: format!("batch_sim_{seq}"),
        object: "batch",
        endpoint: ENDPOINT.into(),
        errors: None,
        input_file_id: req.input_file_id,
        completion_window: "24h".into(),
        status: "validating",
        output_file_id: None,
        error_file_id: None,
        created_at: created,
        in_progress_at: None,
        expires_at: created + WINDOW_SECS,
        finalizing_at: None,
        completed_at: None,
        failed_at: None,
        expired_at: None,
        cancelling_at: None,
        cancelled_at: None,
        request_counts: Counts::default(),
        metadata: req.metadata.map(Value::Object).unwrap_or(Value::Null),
    };
    let answer = json!(batch);
    {
        let mut s = st.store();
        s.cancels
            .insert(batch.id.clone(), Arc::new(tokio::sync::Notify::new()));
        s.order.push(batch.id.clone());
        s.batches.insert(batch.id.clone(), batch);
    }
    let id = answer["id"].as_str().unwrap_or_default().to_owned();
    tokio::spawn(run(st.clone(), id, bytes, contexts, seq));
    (StatusCode::OK, axum::Json(answer)).into_response()
}

pub(crate) async fn list(
    State(st): State<Arc<BatchState>>,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    if let Some(r) = refused(&st, &headers) {
        return r;
    }
    // `?limit=N` (1 to 100, default 20) and `after=ID` (the page after that batch, as
    // OpenAI's cursor); anything else in the query is ignored. Newest first.
    let query = uri.query().unwrap_or("");
    let param = |name: &str| {
        query
            .split('&')
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
    };
    let limit = param("limit")
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(20)
        .clamp(1, 100);
    let s = st.store();
    let newest_first: Vec<&String> = s.order.iter().rev().collect();
    let start = match param("after") {
        Some(after) => match newest_first.iter().position(|id| *id == after) {
            Some(at) => at + 1,
            None => return not_found("batch: after"),
        },
        None => 0,
    };
    let page = newest_first.get(start..).unwrap_or_default();
    let data: Vec<Value> = page
        .iter()
        .take(limit)
        .filter_map(|id| s.batches.get(*id))
        .map(|b| json!(b))
        .collect();
    let (first, last) = (data.first(), data.last());
    axum::Json(json!({
        "object": "list",
        "data": &data,
        "first_id": first.map(|b| b["id"].clone()),
        "last_id": last.map(|b| b["id"].clone()),
        "has_more": page.len() > limit,
    }))
    .into_response()
}

pub(crate) async fn get(
    State(st): State<Arc<BatchState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if let Some(r) = refused(&st, &headers) {
        return r;
    }
    match find(&st.store().batches, &id) {
        Some(b) => axum::Json(json!(b)).into_response(),
        None => not_found("batch"),
    }
}

pub(crate) async fn cancel(
    State(st): State<Arc<BatchState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if let Some(r) = refused(&st, &headers) {
        return r;
    }
    let mut s = st.store();
    let notify = s.cancels.get(&id).cloned();
    let Some(b) = find_mut(&mut s.batches, &id) else {
        return not_found("batch");
    };
    if matches!(b.status, "validating" | "in_progress") {
        b.status = "cancelling";
        b.cancelling_at = Some(now());
        if let Some(n) = notify {
            n.notify_one();
        }
    } else if b.status != "cancelling" {
        return error(
            StatusCode::CONFLICT,
            &format!("Cannot cancel a batch with status {:?}.", b.status),
            "invalid_request_error",
        );
    }
    axum::Json(json!(b)).into_response()
}

/// Sets fields of batch `id`.
fn update(st: &BatchState, id: &str, f: impl FnOnce(&mut Batch)) {
    if let Some(b) = st.store().batches.get_mut(id) {
        f(b);
    }
}

/// A batch from validation to its end; `contexts`: what each line is about, by `custom_id`.
async fn run(
    st: Arc<BatchState>,
    id: String,
    input: Arc<Vec<u8>>,
    contexts: Option<Arc<serde_json::Map<String, Value>>>,
    seq: u64,
) {
    let started = Instant::now();
    let lines = match check(&input, ENDPOINT) {
        Ok(mut l) => {
            for line in &mut l {
                line.planwave = contexts
                    .as_ref()
                    .and_then(|c| c.get(&line.custom_id).cloned());
            }
            l
        }
        Err(problems) => {
            st.store().stats.failed += 1;
            return update(&st, &id, |b| {
                b.status = "failed";
                b.failed_at = Some(now());
                b.errors = Some(json!({"object": "list", "data": problems}));
            });
        }
    };
    {
        let mut s = st.store();
        s.stats.batches.push(lines.iter().map(label).collect());
        s.stats.lines_submitted += lines.len() as u64;
        for l in &lines {
            *s.stats.custom_ids.entry(l.custom_id.clone()).or_default() += 1;
        }
    }
    let total = lines.len() as u64;
    update(&st, &id, |b| {
        b.status = "in_progress";
        b.in_progress_at = Some(now());
        b.request_counts.total = total;
    });
    let expires = seq <= st.cfg.expire_first;
    let kept = ((lines.len() as f64) * st.cfg.partial).ceil() as usize;
    let answering = if expires { kept } else { lines.len() };
    let answers =
        futures::future::join_all(lines.iter().take(answering).map(|l| answer_line(&st, l))).await;
    let cancel = st.store().cancels.get(&id).cloned();
    let remaining = st.cfg.delay.saturating_sub(started.elapsed());
    let cancelled = match cancel {
        Some(n) => tokio::select! {
            _ = n.notified() => true,
            _ = tokio::time::sleep(remaining) => false,
        },
        None => false,
    };
    let done = if expires || cancelled {
        kept
    } else {
        lines.len()
    };
    finish(&st, &id, &lines, answers, done, expires, cancelled);
}

/// What a line asks for, for the stats: `role:task`, or the role alone.
fn label(l: &InputLine) -> String {
    let p = l.planwave.as_ref();
    let role = p
        .and_then(|p| p.get("role"))
        .and_then(Value::as_str)
        .unwrap_or("none");
    let task = p
        .and_then(|p| p.get("context"))
        .and_then(Value::as_str)
        .and_then(context_header::decode)
        .and_then(|c| c.task_id);
    match task {
        Some(t) => format!("{role}:{t}"),
        None => role.to_owned(),
    }
}

/// Writes the output and error files and ends the batch.
fn finish(
    st: &BatchState,
    id: &str,
    lines: &[InputLine],
    answers: Vec<Result<Value, Value>>,
    done: usize,
    expires: bool,
    cancelled: bool,
) {
    update(st, id, |b| {
        b.status = "finalizing";
        b.finalizing_at = Some(now());
    });
    let (mut output, mut errors) = (String::new(), String::new());
    let (mut ok, mut failed) = (0u64, 0u64);
    let mut answers = answers.into_iter();
    for (i, l) in lines.iter().enumerate() {
        let rid = format!("batch_req_{id}_{i}");
        let answer = answers.next();
        let (code, message) = if cancelled {
            (
                "batch_cancelled",
                "This request was not run: the batch was cancelled.",
            )
        } else {
            (
                "batch_expired",
                "This request could not be executed before the completion window expired.",
            )
        };
        let line = match answer.filter(|_| i < done) {
            Some(Ok(body)) => {
                ok += 1;
                output.push_str(&json!({"id": rid, "custom_id": l.custom_id, "response": {"status_code": 200, "request_id": rid, "body": body}, "error": null}).to_string());
                output.push('\n');
                continue;
            }
            Some(Err(body)) => {
                json!({"id": rid, "custom_id": l.custom_id, "response": {"status_code": 500, "request_id": rid, "body": body}, "error": null})
            }
            None => {
                json!({"id": rid, "custom_id": l.custom_id, "response": null, "error": {"code": code, "message": message}})
            }
        };
        failed += 1;
        errors.push_str(&line.to_string());
        errors.push('\n');
    }
    let mut s = st.store();
    let mut file = |text: String, purpose: &str| -> Option<String> {
        if text.is_empty() {
            return None;
        }
        let n = st.next.fetch_add(1, Ordering::Relaxed);
        let fid = format!("file-sim-{n}");
        s.files.insert(
            fid.clone(),
            StoredFile {
                id: fid.clone(),
                purpose: purpose.into(),
                filename: format!("{id}_{purpose}.jsonl"),
                bytes: Arc::new(text.into_bytes()),
                created_at: now(),
            },
        );
        Some(fid)
    };
    let output_id = file(output, "batch_output");
    let error_id = file(errors, "batch_error");
    s.stats.expired += u64::from(expires && !cancelled);
    s.stats.cancelled += u64::from(cancelled);
    s.cancels.remove(id);
    if let Some(b) = s.batches.get_mut(id) {
        b.output_file_id = output_id;
        b.error_file_id = error_id;
        b.request_counts.completed = ok;
        b.request_counts.failed = failed;
        let t = Some(now());
        if cancelled {
            b.status = "cancelled";
            b.cancelled_at = t;
        } else if expires {
            b.status = "expired";
            b.expired_at = t;
        } else {
            b.status = "completed";
            b.completed_at = t;
        }
    }
}

#[derive(Debug, Deserialize)]
struct LineBody {
    #[serde(default)]
    model: Option<String>,
    #[serde(default, deserialize_with = "crate::wire::messages")]
    messages: Vec<ChatMessage>,
    #[serde(default)]
    max_tokens: Option<u64>,
    #[serde(default)]
    max_completion_tokens: Option<u64>,
    #[serde(default)]
    response_format: Option<Value>,
    #[serde(default)]
    tools: Vec<Value>,
}

/// One line's answer body, or the error body it got (injected, or the simulator's refusal).
async fn answer_line(st: &BatchState, line: &InputLine) -> Result<Value, Value> {
    let fail = |message: &str, kind: &str| json!({"error": {"message": message, "type": kind, "code": Value::Null}});
    let rate = st.cfg.line_error_rate;
    // Drawn from the body and how many lines of it came before, not from the custom_id: a
    // client's ids may carry a key of its own (planwave's name the job, new every run), and a
    // seeded server should fail the same lines of a workload on every run.
    let body = line.body.to_string();
    let seen = {
        let mut s = st.store();
        let n = s
            .bodies_seen
            .entry(planwave_record::stable_hash(0, &body, 0))
            .or_insert(0);
        *n += 1;
        *n
    };
    let draw = planwave_record::stable_hash(st.app.cfg.sim.seed, &body, seen) % 1_000_000;
    if (draw as f64) < rate * 1e6 {
        st.store().stats.line_errors += 1;
        return Err(fail(
            "The server had an error processing this request (simulated).",
            "server_error",
        ));
    }
    let body: LineBody = serde_json::from_value(line.body.clone())
        .map_err(|e| fail(&format!("invalid body: {e}"), "invalid_request_error"))?;
    if let Some(problem) =
        planwave_sim::max_tokens_problem(body.max_completion_tokens.or(body.max_tokens))
    {
        return Err(fail(&problem, "invalid_request_error"));
    }
    let chat = chat_request(&body, line.planwave.as_ref());
    let app = &st.app;
    let prompt_chars: usize = chat
        .messages
        .iter()
        .map(|m| m.content.chars().count())
        .sum();
    let prompt_tokens = (prompt_chars as u64).div_ceil(3).max(1);
    let cache = app.prefix.lookup(&chat.messages);
    let length = AnswerLength {
        max_tokens: body.max_completion_tokens.or(body.max_tokens),
        exact: false,
    };
    let answer = crate::prefix::with_cached(
        app.sim.chat_bounded(chat, length).await,
        cache.cached_tokens.min(prompt_tokens),
    )
    .map_err(|e| fail(&e.to_string(), "server_error"))?;
    let mut message = json!({"role": "assistant", "content": answer.content});
    if !answer.tool_calls.is_empty() {
        message["tool_calls"] = json!(answer.tool_calls);
    }
    Ok(json!({
        "id": format!("chatcmpl-sim-{}", line.custom_id),
        "object": "chat.completion",
        "created": now(),
        "model": body.model.clone().unwrap_or_else(|| SIM_MODEL.to_owned()),
        "choices": [{
            "index": 0,
            "message": message,
            "finish_reason": answer.finish_reason.as_deref().unwrap_or("stop"),
        }],
        "usage": usage_json(&answer),
    }))
}

/// The request as the simulator sees it: from the line's `x_planwave` when present, else
/// guessed as for a normal call without headers.
fn chat_request(body: &LineBody, planwave: Option<&Value>) -> ChatRequest {
    let field = |k: &str| planwave.and_then(|p| p.get(k));
    let last_user = body
        .messages
        .iter()
        .rev()
        .find(|m| m.role == MessageRole::User)
        .map_or("", |m| m.content.as_str());
    let role = field("role")
        .and_then(Value::as_str)
        .and_then(context_header::parse_role)
        .unwrap_or(if body.response_format.is_some() {
            AgentRole::Planner
        } else {
            AgentRole::Subagent
        });
    let context = field("context")
        .and_then(Value::as_str)
        .and_then(context_header::decode)
        .unwrap_or_else(|| crate::server::guessed_context(last_user));
    ChatRequest {
        role,
        messages: body.messages.clone(),
        attempt: field("attempt")
            .and_then(Value::as_u64)
            .and_then(|a| u32::try_from(a).ok())
            .unwrap_or(1),
        context,
        traceparent: None,
        max_tokens: body
            .max_completion_tokens
            .or(body.max_tokens)
            .map(|t| u32::try_from(t).unwrap_or(u32::MAX)),
        tools: body
            .tools
            .iter()
            .filter_map(|t| serde_json::from_value(t.get("function")?.clone()).ok())
            .collect(),
        on_delta: None,
    }
}
