//! Runs found under `--data`: every directory that looks like a run (its `run.json`, or a
//! journal or `invocation.json` of a run that has not finished), summarised for the list.
//! Summaries of finished runs are cached by `run.json`'s modification time, so a list of a
//! thousand runs reads only what changed.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use dashmap::DashMap;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::ids::safe_name;
use crate::state::AppState;

/// One row of the runs list.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct RunSummary {
    pub id: String,
    /// `running`, `planning`, `completed`, `partial`, `cancelled`, `error`, or `stopped` (a
    /// run directory without `run.json` and no job here: interrupted, resumable).
    pub status: String,
    /// `run`, `research`, or `batch` (a `planwave batch` directory under the data
    /// directory: its jobs counted in the task columns).
    pub kind: String,
    pub live: bool,
    pub topic: Option<String>,
    pub tasks: u64,
    pub completed: u64,
    pub failed: u64,
    pub blocked: u64,
    pub tokens: u64,
    /// Estimated cost (`stats.cost.total`), when prices are configured and some call had one.
    pub cost: Option<f64>,
    pub currency: Option<String>,
    /// Some calls had no price (`stats.cost.unpriced_models`): the cost leaves them out, and
    /// with no cost the run is unpriced rather than free.
    pub unpriced: bool,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub duration_ms: Option<f64>,
    /// Under `--nats`: the worker running the run, or the last one that did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worker: Option<String>,
    /// Under `--nats`: times the run was handed to a worker (more than one: taken over).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deliveries: Option<u32>,
}

/// Summaries of finished runs by directory, with the `run.json` modification time each was
/// read at. Many list requests read it at once; no entry is held while a file is read.
#[derive(Default)]
pub struct SummaryCache(DashMap<PathBuf, (SystemTime, RunSummary)>);

/// `DIR/run.json`, if present (a regular file, no link: `run_files`) and JSON.
pub fn read_run_json(dir: &Path) -> Option<Value> {
    let text = crate::run_files::read(dir, "run.json").ok()?;
    serde_json::from_slice(&text).ok()
}

fn u(v: &Value, path: &[&str]) -> u64 {
    let mut v = v;
    for p in path {
        match v.get(p) {
            Some(x) => v = x,
            None => return 0,
        }
    }
    v.as_u64().unwrap_or(0)
}

fn s(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// A summary from a `run.json`-shaped value (the file, or a live snapshot).
pub fn summarize(id: &str, v: &Value, live: bool) -> RunSummary {
    let stats = v.get("stats").cloned().unwrap_or(Value::Null);
    let tokens = u(&stats, &["usage", "prompt_tokens"])
        + u(&stats, &["usage", "completion_tokens"])
        + u(&stats, &["usage", "reasoning_tokens"]);
    let started = s(v, "started_at");
    let finished = s(v, "finished_at");
    let duration_ms = match (&started, &finished) {
        (Some(a), Some(b)) => {
            let a = chrono::DateTime::parse_from_rfc3339(a).ok();
            let b = chrono::DateTime::parse_from_rfc3339(b).ok();
            a.zip(b)
                .map(|(a, b)| (b - a).num_microseconds().unwrap_or(0) as f64 / 1000.0)
        }
        _ => v.get("elapsed_ms").and_then(Value::as_f64),
    };
    let research = v.get("rounds").is_some() || s(v, "kind").as_deref() == Some("research");
    RunSummary {
        id: id.to_owned(),
        status: s(v, "status").unwrap_or_else(|| "unknown".into()),
        kind: if research { "research" } else { "run" }.into(),
        live,
        topic: s(v, "topic").filter(|t| !t.is_empty()),
        tasks: u(&stats, &["tasks"]),
        completed: u(&stats, &["completed"]),
        failed: u(&stats, &["failed"]),
        blocked: u(&stats, &["blocked"]),
        tokens,
        cost: priced_cost(&stats),
        unpriced: stats
            .pointer("/cost/unpriced_models")
            .and_then(Value::as_array)
            .is_some_and(|m| !m.is_empty()),
        currency: stats
            .pointer("/cost/currency")
            .and_then(Value::as_str)
            .map(str::to_owned),
        started_at: started,
        finished_at: finished,
        duration_ms,
        worker: None,
        deliveries: None,
    }
}

/// `stats.cost.total`, unless no call had a price (then the total is 0 for want of one).
fn priced_cost(stats: &Value) -> Option<f64> {
    let cost: planwave_record::CostEstimate =
        serde_json::from_value(stats.get("cost")?.clone()).ok()?;
    cost.priced().then_some(cost.total)
}

/// The summary of a run directory not executing here (cached by `run.json`'s mtime).
pub fn stored(state: &AppState, id: &str, dir: &Path) -> Option<RunSummary> {
    let run_json = dir.join("run.json");
    if let Ok(mtime) = std::fs::symlink_metadata(&run_json).and_then(|m| m.modified()) {
        let cache = &state.summaries.0;
        let known = cache
            .get(dir)
            .filter(|entry| entry.0 == mtime)
            .map(|entry| entry.1.clone());
        if known.is_some() {
            return known;
        }
        // Read without holding the entry: two requests for a run that changed may both read
        // it, and store the same summary.
        let v = read_run_json(dir)?;
        let sum = summarize(id, &v, false);
        cache.insert(dir.to_path_buf(), (mtime, sum.clone()));
        return Some(sum);
    }
    // A batch directory (`planwave batch --out` under the data directory) is no run: a row
    // of its jobs, not a "stopped" run with empty columns.
    if let Some(sum) = batch_row(id, dir) {
        return Some(sum);
    }
    // A run that never finished: stopped mid-way (resumable) if it left a journal or its
    // command line.
    if dir.join("events.jsonl").is_file() || dir.join("invocation.json").is_file() {
        let research = dir.join("rounds").is_dir();
        return Some(RunSummary {
            status: "stopped".into(),
            kind: if research { "research" } else { "run" }.into(),
            ..missing(id)
        });
    }
    None
}

/// A batch directory's row, kind `batch`, its jobs counted as the tasks columns count
/// tasks: from its `batch.json`, or `stopped` while it has none yet. `None` for any other
/// directory.
fn batch_row(id: &str, dir: &Path) -> Option<RunSummary> {
    let record = dir.join("batch.json");
    if !record.is_file() && !dir.join("jobs").is_dir() {
        return None;
    }
    let mut sum = RunSummary {
        status: "stopped".into(),
        kind: "batch".into(),
        ..missing(id)
    };
    let Some(b) = std::fs::read(&record)
        .ok()
        .and_then(|t| serde_json::from_slice::<planwave_batch::BatchSummary>(&t).ok())
    else {
        return Some(sum);
    };
    sum.status = if b.completed == b.jobs.len() && b.bad_lines.is_empty() {
        "completed"
    } else if b.completed + b.partial > 0 {
        "partial"
    } else if b.cancelled > 0 {
        "cancelled"
    } else {
        "failed"
    }
    .into();
    sum.tasks = b.jobs.len() as u64;
    sum.completed = b.completed as u64;
    sum.failed = b.failed as u64;
    sum.blocked = b.cancelled as u64;
    sum.tokens = b.tokens;
    sum.cost = b.cost;
    sum.currency = b.jobs.iter().find_map(|j| j.currency.clone());
    sum.unpriced = b.jobs.iter().any(|j| j.unpriced);
    sum.duration_ms = Some(b.wall_ms);
    Some(sum)
}

/// A run known by id whose directory holds no run (deleted): status `missing`.
pub fn missing(id: &str) -> RunSummary {
    RunSummary {
        id: id.to_owned(),
        status: "missing".into(),
        kind: "run".into(),
        live: false,
        topic: None,
        tasks: 0,
        completed: 0,
        failed: 0,
        blocked: 0,
        tokens: 0,
        cost: None,
        unpriced: false,
        currency: None,
        started_at: None,
        finished_at: None,
        duration_ms: None,
        worker: None,
        deliveries: None,
    }
}

/// Every run under the data directory, newest first (by start time, then id).
pub fn list(state: &AppState) -> Vec<RunSummary> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(&state.data) else {
        return out;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(id) = name.to_str().and_then(safe_name) else {
            continue;
        };
        if !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        // A run this server ran that ended without a run.json (it failed) is told by what
        // it saw, its error included, as its page tells it; not as a bare "stopped".
        let sum = match state.live(id) {
            Some(live) if !live.is_done() || !e.path().join("run.json").is_file() => {
                Some(summarize(id, &live.summary(), !live.is_done()))
            }
            _ => stored(state, id, &e.path()),
        };
        out.extend(sum);
    }
    out.sort_by(|a, b| {
        b.started_at
            .cmp(&a.started_at)
            .then_with(|| b.id.cmp(&a.id))
    });
    out
}
