//! The API's actions on the queue: a new run submitted, the runs listed from KV, a run
//! cancelled or resumed through the queue.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use planwave_batch::{JobInput, ResolvedJob};
use planwave_config::spec::{RequestOptions, Work};
use planwave_queue::{QueueState, RemoteRun, Requeued};
use serde_json::{Map, Value, json};

use super::{Remote, unavailable};
use crate::error::{ApiError, no_run};
use crate::jobs::{self, Start};
use crate::listing::{self, RunSummary};
use crate::state::AppState;

/// Under `--nats` a job runs with its worker's options: of a request's options only `meta`
/// travels with it (as with `batch --nats`), so any other is refused rather than ignored.
pub fn only_meta(options: &Map<String, Value>) -> Result<(), ApiError> {
    let problems: Vec<String> = options
        .keys()
        .filter(|k| k.as_str() != "meta")
        .map(|k| {
            format!(
                "options.{k}: this server runs jobs on its workers (--nats), with their own \
                 options; only `meta` travels with a job"
            )
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(ApiError::Unprocessable("invalid options".into(), problems))
    }
}

/// Checks the request as a local run's, then submits it to the queue; returns its id.
pub async fn create(
    state: &Arc<AppState>,
    remote: &Remote,
    start: Start,
    options: RequestOptions,
    prefix: &str,
) -> Result<String, ApiError> {
    let p = jobs::prepare(state, start, options, prefix)?;
    let metadata: BTreeMap<String, String> = p.spec.options.run.meta.meta.iter().cloned().collect();
    let (kind, input) = match (p.plan, &p.spec.work) {
        (Some(plan), _) => ("plan", JobInput::Plan(Box::new(plan))),
        (None, Work::Goal { goal, .. }) => ("goal", JobInput::Goal(goal.clone())),
        (None, Work::Plan { .. }) => {
            return Err(ApiError::Internal("a plan run without its plan".into()));
        }
    };
    let job = ResolvedJob {
        id: p.id.clone(),
        line: 1,
        dir: p.id.clone(),
        kind,
        input,
        metadata,
        answers: Vec::new(),
    };
    planwave_queue::submit_run(&remote.queue, &job)
        .await
        .map_err(unavailable)?;
    Ok(p.id)
}

/// `POST /api/runs/{id}/cancel` for a run on the queue: its batch cancelled (a worker running
/// it stops it as on Ctrl-C; a queued one never starts).
pub async fn cancel(remote: &Remote, id: &str) -> Result<Response, ApiError> {
    let run = remote.record(id).ok_or_else(|| no_run(id))?;
    if run.record.state.is_finished() {
        return Err(ApiError::Conflict(format!("run {id:?} is not running")));
    }
    planwave_queue::cancel(&remote.queue, id)
        .await
        .map_err(unavailable)?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"id": id, "status": "cancelling"})),
    )
        .into_response())
}

/// `POST /api/runs/{id}/resume` for a run on the queue: queued again, a worker takes it over
/// with its journal (completed tasks kept). `Ok(())` when queued.
pub async fn resume(remote: &Remote, id: &str) -> Result<(), ApiError> {
    match planwave_queue::requeue(&remote.queue, id)
        .await
        .map_err(unavailable)?
    {
        Requeued::Queued => Ok(()),
        Requeued::Completed => Err(ApiError::Conflict(format!(
            "run {id:?} completed: nothing to resume"
        ))),
        Requeued::NotEnded(s) => Err(ApiError::Conflict(format!("run {id:?} is {}", s.as_str()))),
        Requeued::Missing => Err(no_run(id)),
    }
}

/// A run's row from its record alone (its verdict's counts, once it ended).
fn from_record(id: &str, run: &RemoteRun) -> RunSummary {
    let r = &run.record;
    let mut sum = listing::missing(id);
    sum.status = r.state.as_str().into();
    sum.kind = if r.kind == "goal" { "research" } else { "run" }.into();
    sum.live = !r.state.is_finished();
    if let Some(s) = &r.summary {
        sum.tasks = s.tasks as u64;
        sum.completed = s.completed as u64;
        sum.failed = s.failed as u64;
        sum.blocked = s.blocked as u64;
        sum.tokens = s.tokens;
        sum.cost = s.cost;
        sum.currency.clone_from(&s.currency);
        sum.unpriced = s.unpriced;
        sum.duration_ms = Some(s.wall_ms);
    }
    sum
}

/// The row of run `id`: live while this server follows it, else its directory's (written
/// when it ended), else its record's; with the worker and its deliveries.
fn row(state: &AppState, id: &str, run: &RemoteRun) -> RunSummary {
    let mut sum = match state.live(id) {
        Some(live) if !live.is_done() => listing::summarize(id, &live.summary(), true),
        _ if run.record.state.is_finished() => state
            .run_dir(id)
            .filter(|d| d.join("run.json").is_file())
            .and_then(|d| listing::stored(state, id, &d))
            .unwrap_or_else(|| from_record(id, run)),
        _ => from_record(id, run),
    };
    if run.record.state == QueueState::Queued {
        sum.status = crate::queue::QUEUED.into();
    }
    sum.worker.clone_from(&run.record.worker);
    sum.deliveries = Some(run.record.deliveries);
    sum
}

/// Every run on the queue, newest first, each read from its record (a running one also
/// followed, for its counts; a finished one's counts are its verdict's, or its directory's
/// when a request has written it).
pub async fn list(
    state: &Arc<AppState>,
    remote: &Arc<Remote>,
) -> Result<Vec<RunSummary>, ApiError> {
    let names = planwave_queue::run_names(&remote.queue)
        .await
        .map_err(unavailable)?;
    Ok(rows(state, remote, names).await)
}

/// The rows of runs `ids` that the queue has, in the order given.
pub async fn rows(
    state: &Arc<AppState>,
    remote: &Arc<Remote>,
    ids: Vec<String>,
) -> Vec<RunSummary> {
    let synced: Vec<(String, Result<Option<RemoteRun>, ApiError>)> = futures::stream::iter(ids)
        .map(|id| async move {
            let r = super::sync(state, remote, &id, false).await;
            (id, r)
        })
        .buffered(16)
        .collect()
        .await;
    let mut out = Vec::new();
    for (id, r) in synced {
        match r {
            Ok(Some(run)) => out.push(row(state, &id, &run)),
            Ok(None) => {}
            Err(e) => tracing::warn!(run = %id, error = ?e, "reading a run"),
        }
    }
    out
}
