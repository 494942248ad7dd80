//! `GET /api/metrics`: the success metrics across the data directory's runs (planning
//! success rate, mean planning time, execution success rate), as `planwave show DATA_DIR`
//! prints them: `planwave_runner::ops::runs_metrics`, one definition for both.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use planwave_runner::ops::{RunsMetrics, runs_metrics, runs_under};

use crate::state::AppState;

/// Read from the run directories' files on a blocking thread (a data directory can hold
/// thousands of runs); the figures of runs still executing come once they finish.
pub async fn get_metrics(State(state): State<Arc<AppState>>) -> Json<RunsMetrics> {
    let data = state.data.clone();
    let metrics = tokio::task::spawn_blocking(move || runs_metrics(&runs_under(&data)))
        .await
        .unwrap_or_default();
    Json(metrics)
}
