//! Success metrics across run directories (`planwave show DIR DIR...`, `planwave show
//! DATA_DIR`, the server's `GET /api/metrics`): planning success rate and mean planning time
//! over the runs that planned (their `planner/attempts.json`), execution success rate over
//! the runs that executed a plan (their `run.json`). Each run counts as a batch job would,
//! so the figures mean what `batch.json`'s `metrics` mean.

use std::path::{Path, PathBuf};

use planwave_batch::{BatchMetrics, JobPlanning, JobState, JobSummary};
use serde::Serialize;

/// The metrics of a set of run directories, and how many there were.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RunsMetrics {
    pub runs: usize,
    #[serde(flatten)]
    pub metrics: BatchMetrics,
}

impl RunsMetrics {
    /// The lines `planwave show` prints.
    pub fn lines(&self) -> String {
        format!("runs: {}\n{}", self.runs, self.metrics.lines())
    }
}

/// Whether `dir` holds a run (finished, or one whose planning ended).
pub fn is_run_dir(dir: &Path) -> bool {
    dir.join("run.json").is_file() || dir.join("planner/attempts.json").is_file()
}

/// The run directories directly under `data` (a server's data directory, a batch's `jobs/`),
/// in name order.
pub fn runs_under(data: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(data)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir() && is_run_dir(p))
        .collect();
    dirs.sort();
    dirs
}

/// The metrics over `dirs`; a directory that is not a run counts for nothing.
pub fn runs_metrics(dirs: &[PathBuf]) -> RunsMetrics {
    let jobs: Vec<JobSummary> = dirs.iter().filter_map(|d| as_job(d)).collect();
    RunsMetrics {
        runs: jobs.len(),
        metrics: BatchMetrics::of(&jobs),
    }
}

/// One run directory as a batch job's summary: its planning, and its verdict or why it has
/// none (planning failed, or the run did not finish).
fn as_job(dir: &Path) -> Option<JobSummary> {
    let planning = planning(dir);
    let run: Option<serde_json::Value> = std::fs::read_to_string(dir.join("run.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    if run.is_none() && planning.is_none() {
        return None;
    }
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
    let mut job = JobSummary::failed(name.as_deref().unwrap_or(""), 0, "run", "", None);
    match run.as_ref().and_then(|r| r["status"].as_str()) {
        Some("completed") => job.state = JobState::Completed,
        Some("partial") => job.state = JobState::Partial,
        Some("cancelled") => job.state = JobState::Cancelled,
        Some(_) => {}
        // No verdict: it never executed (planning failed, or it is still running).
        None => job.error = Some("no run.json".into()),
    }
    job.planning = planning;
    Some(job)
}

fn planning(dir: &Path) -> Option<JobPlanning> {
    #[derive(serde::Deserialize)]
    struct Attempt {
        duration_ms: f64,
        valid: bool,
    }
    let text = std::fs::read_to_string(dir.join("planner/attempts.json")).ok()?;
    let attempts: Vec<Attempt> = serde_json::from_str(&text).ok()?;
    (!attempts.is_empty()).then(|| JobPlanning {
        valid: attempts.iter().any(|a| a.valid),
        attempts: attempts.len(),
        ms: attempts.iter().map(|a| a.duration_ms).sum(),
    })
}
