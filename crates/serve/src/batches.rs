//! Batches made by `POST /api/batches`: each is recorded as `DATA/.batches/<batch>.json`
//! (its jobs and their run ids, its refused lines), a name the runs list never shows (run
//! ids cannot start with `.`), so a batch is listed again after a restart. Its state is
//! read from its runs' summaries: live while any runs here, else from their `run.json`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use axum::Json;
use axum::extract::{Path as UrlPath, State};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::ids::safe_name;
use crate::listing::{self, RunSummary};
use crate::state::AppState;

type S = State<std::sync::Arc<AppState>>;

/// What is stored for a batch when it is created.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct BatchRecord {
    pub batch: String,
    pub created_at: String,
    /// Job id and run id, in job-file order.
    pub jobs: Vec<BatchJob>,
    pub bad_lines: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct BatchJob {
    pub job: String,
    pub id: String,
}

/// A batch with its runs' states: `GET /api/batches/{id}` (and, without `runs`, a row of
/// `GET /api/batches`).
#[derive(Debug, Serialize, ToSchema)]
pub struct BatchView {
    pub batch: String,
    pub created_at: String,
    /// `running` while any of its runs is live, `completed` when all completed, else
    /// `partial`.
    pub status: String,
    /// Runs by status (`running`, `completed`, `partial`, `failed`, `cancelled`, `stopped`...).
    pub counts: BTreeMap<String, usize>,
    pub runs_total: usize,
    pub tokens: u64,
    /// Sum of the runs' costs (so far, for live ones), when prices are configured.
    pub cost: Option<f64>,
    pub bad_lines: Vec<String>,
    /// Each run's summary with its job id (left out of the list).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs: Option<Vec<BatchRunState>>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct BatchRunState {
    pub job: String,
    #[serde(flatten)]
    pub run: RunSummary,
}

#[derive(Serialize, ToSchema)]
pub struct BatchList {
    /// Newest first.
    pub batches: Vec<BatchView>,
}

fn dir(state: &AppState) -> PathBuf {
    state.data.join(".batches")
}

/// Records a new batch: under `--nats` in the queue's bucket (`serve.batch.<id>`, so every
/// server lists it), else as a file.
pub async fn record(state: &AppState, rec: &BatchRecord) -> Result<(), String> {
    match &state.remote {
        Some(remote) => {
            let json = serde_json::to_vec(rec).map_err(|e| e.to_string())?;
            planwave_queue::put_serve_record(&remote.queue, &format!("batch.{}", rec.batch), &json)
                .await
                .map_err(|e| e.to_string())
        }
        None => record_file(state, rec).map_err(|e| e.to_string()),
    }
}

/// A batch's file (written to a temporary name, then renamed: never half a file).
fn record_file(state: &AppState, rec: &BatchRecord) -> std::io::Result<()> {
    let dir = dir(state);
    std::fs::create_dir_all(&dir)?;
    let tmp = dir.join(format!(".{}.tmp", rec.batch));
    std::fs::write(&tmp, serde_json::to_vec_pretty(rec)?)?;
    std::fs::rename(tmp, dir.join(format!("{}.json", rec.batch)))
}

/// The batch file `name` under `.batches` (a regular file, no link: `run_files`).
fn read(state: &AppState, name: &str) -> Option<BatchRecord> {
    serde_json::from_slice(&crate::run_files::read(&dir(state), name).ok()?).ok()
}

/// The summary of run `id` (a run whose directory is gone shows as `missing`).
fn run_summary(state: &AppState, id: &str) -> RunSummary {
    let found = state.run_dir(id).and_then(|d| match state.live(id) {
        Some(live) if !live.is_done() => Some(listing::summarize(id, &live.summary(), true)),
        _ => listing::stored(state, id, &d),
    });
    found.unwrap_or_else(|| listing::missing(id))
}

fn view(state: &AppState, rec: BatchRecord, with_runs: bool) -> BatchView {
    view_with(rec, with_runs, |id| run_summary(state, id))
}

fn view_with(rec: BatchRecord, with_runs: bool, summary: impl Fn(&str) -> RunSummary) -> BatchView {
    let runs: Vec<BatchRunState> = rec
        .jobs
        .into_iter()
        .map(|j| BatchRunState {
            run: summary(&j.id),
            job: j.job,
        })
        .collect();
    let mut counts = BTreeMap::new();
    for r in &runs {
        *counts.entry(r.run.status.clone()).or_insert(0) += 1;
    }
    let status = if runs.iter().any(|r| r.run.live) {
        "running"
    } else if runs.iter().all(|r| r.run.status == "completed") {
        "completed"
    } else {
        "partial"
    };
    let costs: Vec<f64> = runs.iter().filter_map(|r| r.run.cost).collect();
    BatchView {
        batch: rec.batch,
        created_at: rec.created_at,
        status: status.into(),
        counts,
        runs_total: runs.len(),
        tokens: runs.iter().map(|r| r.run.tokens).sum(),
        cost: (!costs.is_empty()).then(|| costs.iter().sum()),
        bad_lines: rec.bad_lines,
        runs: with_runs.then_some(runs),
    }
}

fn list(state: &AppState) -> Vec<BatchView> {
    let Ok(entries) = std::fs::read_dir(dir(state)) else {
        return Vec::new();
    };
    let mut recs: Vec<BatchRecord> = entries
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.ends_with(".json")))
        .filter_map(|e| read(state, e.file_name().to_str()?))
        .collect();
    recs.sort_by(|a, b| b.batch.cmp(&a.batch));
    recs.into_iter().map(|r| view(state, r, false)).collect()
}

#[utoipa::path(get, path = "/api/batches",
    responses((status = 200, body = BatchList, description = "every batch made here, newest first, with its runs counted by status")))]
pub async fn list_batches(State(state): S) -> Result<Json<BatchList>, ApiError> {
    if let Some(remote) = &state.remote {
        let found = planwave_queue::serve_records(&remote.queue, "batch.")
            .await
            .map_err(crate::remote::unavailable)?;
        let mut recs: Vec<BatchRecord> = found
            .iter()
            .filter_map(|(_, v)| serde_json::from_slice(v).ok())
            .collect();
        recs.sort_by(|a, b| b.batch.cmp(&a.batch));
        let mut batches = Vec::new();
        for rec in recs {
            batches.push(remote_view(&state, remote, rec, false).await);
        }
        return Ok(Json(BatchList { batches }));
    }
    let batches = tokio::task::spawn_blocking(move || list(&state))
        .await
        .unwrap_or_default();
    Ok(Json(BatchList { batches }))
}

/// A batch of runs on the queue, each run's row read from it.
async fn remote_view(
    state: &std::sync::Arc<AppState>,
    remote: &std::sync::Arc<crate::remote::Remote>,
    rec: BatchRecord,
    with_runs: bool,
) -> BatchView {
    let ids = rec.jobs.iter().map(|j| j.id.clone()).collect();
    let rows: std::collections::HashMap<String, RunSummary> =
        crate::remote::rows(state, remote, ids)
            .await
            .into_iter()
            .map(|r| (r.id.clone(), r))
            .collect();
    view_with(rec, with_runs, |id| {
        rows.get(id)
            .cloned()
            .unwrap_or_else(|| listing::missing(id))
    })
}

#[utoipa::path(get, path = "/api/batches/{id}", params(("id" = String, Path)),
    responses((status = 200, body = BatchView, description = "the batch and each run's state"),
              (status = 400, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody)))]
pub async fn get_batch(
    State(state): S,
    UrlPath(id): UrlPath<String>,
) -> Result<Json<BatchView>, ApiError> {
    let name =
        safe_name(&id).ok_or_else(|| ApiError::BadRequest(format!("invalid batch id {id:?}")))?;
    if let Some(remote) = &state.remote {
        let rec: BatchRecord =
            planwave_queue::serve_record(&remote.queue, &format!("batch.{name}"))
                .await
                .map_err(crate::remote::unavailable)?
                .and_then(|v| serde_json::from_slice(&v).ok())
                .ok_or_else(|| ApiError::NotFound(format!("no batch {id:?}")))?;
        return Ok(Json(remote_view(&state, remote, rec, true).await));
    }
    let rec = read(&state, &format!("{name}.json"))
        .ok_or_else(|| ApiError::NotFound(format!("no batch {id:?}")))?;
    let v = tokio::task::spawn_blocking(move || view(&state, rec, true))
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok(Json(v))
}
