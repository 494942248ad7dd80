//! The JSON API's handlers (see docs/api.md; the OpenAPI document is built from the
//! `#[utoipa::path]` annotations here).

use std::path::PathBuf;
use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use planwave_config::spec::RequestOptions;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use utoipa::{IntoParams, ToSchema};

use crate::error::{ApiError, ErrorBody, no_run};
use crate::ids::safe_name;
use crate::jobs::{self, Start};
use crate::listing::{self, RunSummary, read_run_json};
use crate::run_files;
use crate::sse;
use crate::state::AppState;

type S = State<Arc<AppState>>;

/// `POST /api/runs`: a plan to run, or a goal to research (exactly one).
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateRun {
    /// A plan in any form `planwave run` accepts (as JSON).
    #[schema(value_type = Object)]
    pub plan: Option<Value>,
    /// A goal: the reflective loop (`planwave research`).
    pub goal: Option<String>,
    /// The job's options, named as the flags are with `-` written `_`
    /// (`{"sim_latency_ms": 300, "sim_fail": "4"}`); read as the spec's [`RequestOptions`],
    /// every problem reported under its name.
    #[serde(default)]
    #[schema(value_type = Option<RequestOptions>)]
    pub options: Map<String, Value>,
}

/// Where to find a run.
#[derive(Serialize, ToSchema)]
pub struct RunLinks {
    #[serde(rename = "self")]
    pub this: String,
    pub events: String,
    pub report: String,
    pub cancel: String,
    pub resume: String,
    pub page: String,
}

impl RunLinks {
    pub(crate) fn of(id: &str) -> RunLinks {
        let api = format!("/api/runs/{id}");
        RunLinks {
            events: format!("{api}/events"),
            report: format!("{api}/report"),
            cancel: format!("{api}/cancel"),
            resume: format!("{api}/resume"),
            page: format!("/runs/{id}"),
            this: api,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct Created {
    pub id: String,
    pub links: RunLinks,
}

#[derive(Serialize, ToSchema)]
pub struct RunList {
    pub runs: Vec<RunSummary>,
}

pub(crate) fn parse_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::BadRequest(format!("invalid JSON body: {e}")))
}

/// The directory of an existing run (`id` checked before any path is built; a link in
/// its place is no run).
pub(crate) fn existing(state: &AppState, id: &str) -> Result<PathBuf, ApiError> {
    let dir = state
        .run_dir(id)
        .ok_or_else(|| ApiError::BadRequest(format!("invalid run id {id:?}")))?;
    if run_files::is_run_dir(&dir) {
        Ok(dir)
    } else {
        Err(no_run(id))
    }
}

#[utoipa::path(post, path = "/api/runs", request_body = CreateRun,
    responses((status = 201, body = Created), (status = 400, body = ErrorBody),
              (status = 403, description = "a foreign Host or Origin", body = ErrorBody),
              (status = 413, description = "body over --max-body", body = ErrorBody),
              (status = 415, description = "Content-Type is not application/json", body = ErrorBody),
              (status = 422, description = "invalid plan or options (or over --max-tasks): every problem", body = ErrorBody)))]
pub async fn create_run(State(state): S, body: Bytes) -> Result<Response, ApiError> {
    let req: CreateRun = parse_json(&body)?;
    let start = match (req.plan, req.goal) {
        (Some(p), None) => Start::Plan(p),
        (None, Some(g)) => Start::Goal(g),
        _ => {
            return Err(ApiError::Unprocessable(
                "invalid request".into(),
                vec!["give exactly one of \"plan\" and \"goal\"".into()],
            ));
        }
    };
    if state.remote.is_some() {
        crate::remote::only_meta(&req.options)?;
    }
    let options = RequestOptions::from_map(&req.options)
        .map_err(|p| ApiError::Unprocessable("invalid options".into(), p))?;
    let id = start_job(&state, start, options, "").await?;
    Ok(created(id))
}

/// Starts a job here, or submits it to the queue under `--nats`.
async fn start_job(
    state: &Arc<AppState>,
    start: Start,
    options: RequestOptions,
    prefix: &str,
) -> Result<String, ApiError> {
    match &state.remote {
        Some(remote) => crate::remote::create(state, remote, start, options, prefix).await,
        None => jobs::create(state, start, options, prefix),
    }
}

fn created(id: String) -> Response {
    let links = RunLinks::of(&id);
    let location = links.this.clone();
    (
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(Created { id, links }),
    )
        .into_response()
}

#[utoipa::path(get, path = "/api/runs", responses((status = 200, body = RunList)))]
pub async fn list_runs(State(state): S) -> Result<Json<RunList>, ApiError> {
    if let Some(remote) = &state.remote {
        let runs = crate::remote::list(&state, remote).await?;
        return Ok(Json(RunList { runs }));
    }
    let runs = tokio::task::spawn_blocking(move || listing::list(&state))
        .await
        .unwrap_or_default();
    Ok(Json(RunList { runs }))
}

/// The run's state: live (from its events) while it runs, else its `run.json`.
pub fn run_state(state: &AppState, id: &str) -> Result<Value, ApiError> {
    let dir = existing(state, id)?;
    if let Some(live) = state.live(id)
        && (!live.is_done() || !dir.join("run.json").is_file())
    {
        return Ok(live.snapshot());
    }
    match read_run_json(&dir) {
        Some(Value::Object(mut m)) => {
            m.insert("id".into(), json!(id));
            m.insert("live".into(), json!(false));
            let research = m.contains_key("rounds");
            m.insert(
                "kind".into(),
                json!(if research { "research" } else { "run" }),
            );
            Ok(Value::Object(m))
        }
        _ => match listing::stored(state, id, &dir) {
            Some(sum) => {
                Ok(json!({"id": id, "live": false, "status": sum.status, "kind": sum.kind}))
            }
            None => crate::remote::state_from_record(state, id).ok_or_else(|| no_run(id)),
        },
    }
}

#[utoipa::path(get, path = "/api/runs/{id}", params(("id" = String, Path), StateQuery),
    responses((status = 200, description = "the run.json shape, plus id, live, kind (and elapsed_ms, eta_ms while live)"),
              (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn get_run(
    State(state): S,
    Path(id): Path<String>,
    Query(q): Query<StateQuery>,
) -> Result<Json<Value>, ApiError> {
    let with_queue = |v| crate::remote::with_queue(&state, &id, v);
    if q.tasks == Some(false) {
        if let Some(live) = state.live(&id).filter(|l| !l.is_done()) {
            return Ok(Json(with_queue(live.summary())));
        }
        let mut v = run_state(&state, &id)?;
        if let Some(m) = v.as_object_mut() {
            m.remove("tasks");
            m.remove("calls");
        }
        return Ok(Json(with_queue(v)));
    }
    Ok(Json(with_queue(run_state(&state, &id)?)))
}

#[derive(Deserialize, IntoParams)]
pub struct StateQuery {
    /// `false`: leave out `tasks[]` and `calls[]` (the totals only; cheap for a big run).
    pub tasks: Option<bool>,
}

#[derive(Deserialize, IntoParams)]
pub struct EventsQuery {
    /// Start after this event (as `Last-Event-ID`).
    pub after: Option<usize>,
}

#[utoipa::path(get, path = "/api/runs/{id}/events", params(("id" = String, Path), EventsQuery),
    responses((status = 200, description = "text/event-stream: one event per line of the run's events (docs/events.md), `id` its position; `event: end` last")))]
pub async fn run_events(
    State(state): S,
    Path(id): Path<String>,
    Query(q): Query<EventsQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let dir = existing(&state, &id)?;
    let after = match headers.get("last-event-id") {
        Some(v) => v
            .to_str()
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok())
            .ok_or_else(|| ApiError::BadRequest("Last-Event-ID: not an event id".into()))?,
        None => q.after.unwrap_or(0),
    };
    if let Some(live) = state.live(&id) {
        let stop = state.remote.is_some().then(|| state.shutdown.clone());
        return Ok(sse::follow(live, after, state.limits.sse_keep_alive, stop));
    }
    Ok(sse::replay(dir, after).await)
}

#[utoipa::path(get, path = "/api/runs/{id}/report", params(("id" = String, Path)),
    responses((status = 200, description = "report.md (text/markdown), or report.html when Accept asks for text/html"),
              (status = 404, body = ErrorBody)))]
pub async fn run_report(
    State(state): S,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let dir = existing(&state, &id)?;
    let html = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("text/html"));
    let (file, kind) = if html {
        ("report.html", "text/html; charset=utf-8")
    } else {
        ("report.md", "text/markdown; charset=utf-8")
    };
    let body = run_files::read_async(dir, file.to_owned())
        .await
        .map_err(|_| ApiError::NotFound(format!("run {id:?} has no {file} (yet)")))?;
    Ok((
        [
            (header::CONTENT_TYPE, kind),
            // The report is self-contained: nothing in it may run or fetch.
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; style-src 'unsafe-inline'; img-src data:",
            ),
        ],
        body,
    )
        .into_response())
}

fn id_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The section file a record names, if it is `sections/<plain name>`.
fn section_path(record: &Value) -> Option<String> {
    let rel = record.get("section_file")?.as_str()?;
    let name = safe_name(rel.strip_prefix("sections/")?)?;
    Some(format!("sections/{name}"))
}

#[utoipa::path(get, path = "/api/runs/{id}/sections/{task}",
    params(("id" = String, Path), ("task" = String, Path)),
    responses((status = 200, description = "the task's record (status, attempts, error, blocked_by, usage, tool_calls), its model calls and its section text"),
              (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn run_section(
    State(state): S,
    Path((id, task)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    let dir = existing(&state, &id)?;
    safe_name(&task).ok_or_else(|| ApiError::BadRequest(format!("invalid task id {task:?}")))?;
    let run = run_state(&state, &id)?;
    let record = run
        .get("tasks")
        .and_then(Value::as_array)
        .and_then(|ts| {
            ts.iter()
                .find(|t| t.get("id").map(id_text).as_deref() == Some(&task))
        })
        .cloned()
        .ok_or_else(|| ApiError::NotFound(format!("run {id:?} has no task {task:?}")))?;
    let calls: Vec<Value> = match state.live(&id) {
        Some(live) if !live.is_done() => live
            .state()
            .calls
            .iter()
            .find(|(t, _)| t.to_string() == task)
            .map(|(_, c)| c.clone())
            .unwrap_or_default(),
        _ => run
            .get("calls")
            .and_then(Value::as_array)
            .map(|cs| {
                cs.iter()
                    .filter(|c| c.get("task").map(id_text).as_deref() == Some(&task))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default(),
    };
    let section = match section_path(&record) {
        Some(rel) => run_files::read_async(dir, rel)
            .await
            .ok()
            .and_then(|b| String::from_utf8(b).ok()),
        None => None,
    };
    Ok(Json(
        json!({"task": record, "model_calls": calls, "section": section}),
    ))
}

#[utoipa::path(post, path = "/api/runs/{id}/cancel", params(("id" = String, Path)),
    responses((status = 202, description = "cancelling: the run stops as on Ctrl-C (journal flushed, resumable)"),
              (status = 409, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn cancel_run(State(state): S, Path(id): Path<String>) -> Result<Response, ApiError> {
    existing(&state, &id)?;
    if let Some(remote) = &state.remote {
        return crate::remote::cancel(remote, &id).await;
    }
    match state.live(&id) {
        Some(live) if !live.is_done() => {
            live.cancel.cancel();
            Ok((
                StatusCode::ACCEPTED,
                Json(json!({"id": id, "status": "cancelling"})),
            )
                .into_response())
        }
        _ => Err(ApiError::Conflict(format!("run {id:?} is not running"))),
    }
}

#[utoipa::path(post, path = "/api/runs/{id}/resume", params(("id" = String, Path)),
    responses((status = 202, body = Created), (status = 409, body = ErrorBody),
              (status = 422, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn resume_run(State(state): S, Path(id): Path<String>) -> Result<Response, ApiError> {
    let dir = existing(&state, &id)?;
    if let Some(remote) = &state.remote {
        crate::remote::resume(remote, &id).await?;
        let links = RunLinks::of(&id);
        return Ok((StatusCode::ACCEPTED, Json(Created { id, links })).into_response());
    }
    if state.live(&id).is_some_and(|l| !l.is_done()) {
        return Err(ApiError::Conflict(format!("run {id:?} is running")));
    }
    if read_run_json(&dir).is_some_and(|v| v["status"] == "completed") {
        return Err(ApiError::Conflict(format!(
            "run {id:?} completed: nothing to resume"
        )));
    }
    jobs::resume(&state, &id, &dir)?;
    let links = RunLinks::of(&id);
    Ok((StatusCode::ACCEPTED, Json(Created { id, links })).into_response())
}

/// One round of a `research` run: its evaluation and reflection as stored.
#[derive(Serialize, ToSchema)]
pub struct RoundView {
    pub round: u32,
    #[schema(value_type = Object)]
    pub evaluation: Option<Value>,
    #[schema(value_type = Object)]
    pub reflection: Option<Value>,
}

#[utoipa::path(get, path = "/api/runs/{id}/rounds", params(("id" = String, Path)),
    responses((status = 200, body = [RoundView])))]
pub async fn run_rounds(
    State(state): S,
    Path(id): Path<String>,
) -> Result<Json<Vec<RoundView>>, ApiError> {
    let dir = existing(&state, &id)?;
    let mut rounds: Vec<RoundView> = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir.join("rounds")) else {
        return Ok(Json(rounds));
    };
    let read = |k: u32, file: &str, key: &str| -> Option<Value> {
        let bytes = run_files::read(&dir, &format!("rounds/{k}/{file}")).ok()?;
        let v: Value = serde_json::from_slice(&bytes).ok()?;
        v.get(key).cloned()
    };
    for e in entries.flatten() {
        let Some(k) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        rounds.push(RoundView {
            round: k,
            evaluation: read(k, "evaluation.json", "evaluation"),
            reflection: read(k, "reflection.json", "reflection"),
        });
    }
    rounds.sort_by_key(|r| r.round);
    Ok(Json(rounds))
}

/// `POST /api/batches`: the job file's runs.
#[derive(Serialize, ToSchema)]
pub struct BatchCreated {
    pub batch: String,
    pub runs: Vec<BatchRun>,
    /// Lines that are not jobs (or jobs a request may not give), with their line numbers.
    pub bad_lines: Vec<String>,
}

#[derive(Serialize, ToSchema)]
pub struct BatchRun {
    pub job: String,
    pub id: String,
    pub links: RunLinks,
}

#[derive(Deserialize, IntoParams)]
pub struct BatchQuery {
    /// The batch's options as one JSON object (as `"options"` of `POST /api/runs`).
    pub options: Option<String>,
}

#[utoipa::path(post, path = "/api/batches", params(BatchQuery),
    request_body(content = String, content_type = "application/x-ndjson",
                 description = "a job file: one JSON object per line (`goal` or `plan`, `id`, `metadata`)"),
    responses((status = 201, body = BatchCreated), (status = 403, body = ErrorBody),
              (status = 413, body = ErrorBody),
              (status = 415, description = "Content-Type is not a job-file type", body = ErrorBody),
              (status = 422, body = ErrorBody)))]
pub async fn create_batch(
    State(state): S,
    Query(q): Query<BatchQuery>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let options: Map<String, Value> = match q.options {
        Some(text) => parse_json(text.as_bytes())?,
        None => Map::new(),
    };
    if state.remote.is_some() {
        crate::remote::only_meta(&options)?;
    }
    let options = RequestOptions::from_map(&options)
        .map_err(|p| ApiError::Unprocessable("invalid options".into(), p))?;
    let file = planwave_batch::parse_jobs(&body);
    let mut bad_lines: Vec<String> = file.bad.iter().map(ToString::to_string).collect();
    let batch = crate::ids::new_run_id("b");
    let mut runs = Vec::new();
    for job in file.jobs {
        let start = match job.source {
            planwave_batch::JobSource::Goal(g) => Start::Goal(g),
            planwave_batch::JobSource::Plan(p) => Start::Plan(p),
            other => {
                bad_lines.push(format!(
                    "line {}: {} jobs read files on the server; give the plan inline",
                    job.line,
                    other.kind()
                ));
                continue;
            }
        };
        let mut opts = options.clone();
        if !job.metadata.is_empty() {
            // A job's own metadata replaces the batch's, as a job file's does on the CLI.
            opts.run.meta.meta = job
                .metadata
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
        }
        let mut job_part = sanitize_job(&job.id);
        if state.remote.is_some() {
            // A run on the queue is a batch of its own, whose name has at most 64 characters.
            job_part.truncate(16);
        }
        let prefix = format!("{batch}-{job_part}-");
        match start_job(&state, start, opts, &prefix).await {
            Ok(id) => runs.push(BatchRun {
                job: job.id,
                links: RunLinks::of(&id),
                id,
            }),
            Err(ApiError::Unprocessable(e, p)) => {
                bad_lines.push(format!("line {}: {e}: {}", job.line, p.join("; ")));
            }
            Err(e) => return Err(e),
        }
    }
    if runs.is_empty() {
        return Err(ApiError::Unprocessable(
            "no line of the job file is a job this server can run".into(),
            bad_lines,
        ));
    }
    let rec = crate::batches::BatchRecord {
        batch: batch.clone(),
        created_at: planwave_record::timefmt::format(&chrono::Utc::now()),
        jobs: runs
            .iter()
            .map(|r| crate::batches::BatchJob {
                job: r.job.clone(),
                id: r.id.clone(),
            })
            .collect(),
        bad_lines: bad_lines.clone(),
    };
    // The runs are started: a batch that cannot be recorded still runs, it is only not
    // listed under /api/batches.
    if let Err(e) = crate::batches::record(&state, &rec).await {
        tracing::warn!("batch {batch}: cannot record it: {e}");
    }
    Ok((
        StatusCode::CREATED,
        Json(BatchCreated {
            batch,
            runs,
            bad_lines,
        }),
    )
        .into_response())
}

/// A job id as part of a run id: plain characters only, short.
fn sanitize_job(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect()
}
